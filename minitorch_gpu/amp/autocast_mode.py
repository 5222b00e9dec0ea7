"""``torch.autocast``: regions (and decorated functions) in which the ops PyTorch lists run in a lower precision,
the precision-sensitive ones in float32, and ops with mixed inputs in the widest type.

The lists and the dispatch are in ``ops._autocast`` (they must sit below every op that consults them); this module
is PyTorch's public API over that state.

>>> with mt.autocast("cpu"):
...     y = mt.nn.functional.linear(mt.ones(2, 3), mt.ones(4, 3))
>>> y.dtype
minitorch_gpu.bfloat16
"""
from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _dtype
from .. import cuda as _cuda
from ..ops import _autocast as _ac

__all__ = ["autocast", "autocast_decorator", "is_autocast_available", "custom_fwd", "custom_bwd",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_enabled", "set_autocast_enabled",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting"]

F = TypeVar("F", bound=Callable[..., Any])

# PyTorch's device-type names: asking about one that is not a device type at all is a RuntimeError there
_KNOWN_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                       "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _check_known(device_type: str) -> None:
    if device_type not in _KNOWN_DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_KNOWN_DEVICE_TYPES)} device type at start of device "
                           f"string: {device_type}")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast works on ``device_type`` here: ``"cpu"`` and ``"cuda"``."""
    return device_type in _ac.DEVICE_TYPES


def get_autocast_dtype(device_type: str) -> _dtype.dtype:
    """The low-precision dtype autocast uses on ``device_type`` (bfloat16 on the CPU, float16 on CUDA)."""
    _check_known(device_type)
    return _ac.get_dtype(device_type) if device_type in _ac.DEVICE_TYPES else _dtype.float16


def set_autocast_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    _check_known(device_type)
    _ac.set_dtype(device_type, dtype)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (CUDA's when none is given, as in PyTorch)."""
    if device_type is None:
        device_type = "cuda"
    _check_known(device_type)
    return device_type in _ac.DEVICE_TYPES and _ac.is_enabled(device_type)


def set_autocast_enabled(*args: Any) -> None:
    """``set_autocast_enabled(device_type, enabled)``, or ``set_autocast_enabled(enabled)`` for CUDA."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = args
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 arguments ({len(args)} given)")
    _check_known(device_type)
    _ac.set_enabled(device_type, enabled)


def is_autocast_cache_enabled() -> bool:
    return _ac.is_cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    _ac.set_cache_enabled(enabled)


def clear_autocast_cache() -> None:
    """Drop the weight casts kept for the current region (done on leaving the outermost one)."""
    _ac.clear_cache()


def autocast_increment_nesting() -> int:
    return _ac.increment_nesting()


def autocast_decrement_nesting() -> int:
    return _ac.decrement_nesting()


def autocast_decorator(autocast_instance: autocast, func: F) -> F:
    @functools.wraps(func)
    def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
        with autocast_instance:
            return func(*args, **kwargs)
    return decorate_autocast  # type: ignore[return-value]


class autocast:
    """A region (``with``) or a function (decorator) in which ops run in mixed precision on ``device_type``.

    ``dtype`` defaults to ``get_autocast_dtype(device_type)``; ``enabled=False`` switches autocast off inside an
    enclosing region; ``cache_enabled`` keeps one cast of each weight per region (default: the global setting).

    >>> with mt.autocast("cpu", dtype=mt.bfloat16):
    ...     (mt.ones(2, 2) @ mt.ones(2, 2)).dtype
    minitorch_gpu.bfloat16
    """

    def __init__(self, device_type: str, dtype: _dtype.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                if not _cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                                  stacklevel=2)
                    enabled = False
                elif self.fast_dtype is _dtype.bfloat16 and not _cuda.is_bf16_supported():
                    raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to "
                                       "float16.")
            elif self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of minitorch_gpu.bfloat16, "
                              "minitorch_gpu.float16 currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        _ac.set_enabled(self.device, self._enabled)
        _ac.set_dtype(self.device, self.fast_dtype)
        _ac.increment_nesting()
        _ac.set_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        # the weight casts live as long as the outermost region
        if _ac.decrement_nesting() == 0:
            _ac.clear_cache()
        _ac.set_enabled(self.device, self.prev)
        _ac.set_dtype(self.device, self.prev_fastdtype)
        _ac.set_cache_enabled(self.prev_cache_enabled)

    def __call__(self, func: F) -> F:
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            "use autocast as a context manager? For example:\n"
                            "    with torch.autocast(device_type=...):\n"
                            "        output = model(input)")
        return autocast_decorator(self, func)


def custom_fwd(fwd: Callable[..., Any] | None = None, *, device_type: str,
               cast_inputs: _dtype.dtype | None = None) -> Any:
    """Decorate a custom ``Function.forward``: with ``cast_inputs``, inside an autocast region its floating tensor
    arguments are cast to that dtype and it runs with autocast off; :func:`custom_bwd` then runs ``backward`` in
    the autocast state ``forward`` saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_ac.cast_value(args, device_type, cast_inputs),
                       **_ac.cast_value(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str) -> Any:
    """Decorate a custom ``Function.backward`` so that it runs in the autocast state of its ``forward``."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
