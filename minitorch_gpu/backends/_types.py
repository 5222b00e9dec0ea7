"""Types at the dispatch layer's boundary, shared by every backend file.

One primitive body serves NumPy and CuPy arrays alike (the backend's ``xp``), so an array is typed as
``Array`` (``Any``): naming ``numpy.ndarray`` would be wrong for CuPy, and CuPy ships no type stubs.
"""
from typing import Any, TypeAlias

import numpy as np

Array: TypeAlias = Any
"""A NumPy or CuPy array owned by one backend."""

NpDtype: TypeAlias = "np.dtype[Any]"
"""An array library dtype (NumPy's dtype objects serve CuPy too)."""

Shape: TypeAlias = tuple[int, ...]
