"""``mt.onnx``: importable, so that scripts with an export step run up to it; exporting is not supported.

``is_in_onnx_export()`` is False (models branch on it); ``export`` and ``dynamo_export`` raise a
``NotImplementedError`` (a ``RuntimeError``) that says what to do instead.
"""
from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["export", "dynamo_export", "is_in_onnx_export"]

_NOT_SUPPORTED = ("ONNX export is not supported by minitorch_gpu. Save the weights with mt.save(model.state_dict(), "
                  "path) and export from PyTorch after loading them into the same model there.")


def is_in_onnx_export() -> bool:
    """False: no ONNX export ever runs here."""
    return False


def export(*args: Any, **kwargs: Any) -> NoReturn:
    """Not supported: raises NotImplementedError (a RuntimeError) saying how to export from PyTorch."""
    raise NotImplementedError(_NOT_SUPPORTED)


def dynamo_export(*args: Any, **kwargs: Any) -> NoReturn:
    """Not supported: see :func:`export`."""
    raise NotImplementedError(_NOT_SUPPORTED)
