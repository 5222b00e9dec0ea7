"""Every op, defined once: forward on arrays through the backend, backward written in Tensor ops (so it can be
differentiated again). Each module's ``METHODS`` table binds its ops onto Tensor.

This package sits above ``autograd`` (``Op``, in-place machinery) and ``tensor``, and reaches arrays only through
``backends``; everything user-facing above it (``nn``, ``optim``, ``cuda``...) calls these functions.
``_util`` holds the plumbing every op shares: argument and device checks, ``out=``, dims and broadcasting.
Elementwise ops are rows (``elementwise.py``: the unary table and the binary rows) over the primitive table
of ``backends/_elementwise_table.py``."""
from ..tensor import register_methods
from . import (bessel, binning, composite_math, conversion, cumulative, order_statistics, creation, decomposition, distance, dlpack, elementwise, indexing, linalg, random,
               reduction, shape)

_MODULES = (creation, conversion, elementwise, reduction, shape, indexing, linalg, decomposition, random, dlpack,
            binning, composite_math, cumulative, order_statistics, bessel)


for _mod in _MODULES:
    register_methods(getattr(_mod, "METHODS", {}))
