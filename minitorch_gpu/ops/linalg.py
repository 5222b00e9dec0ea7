"""(filled in below)"""
__all__ = []

METHODS = {}
