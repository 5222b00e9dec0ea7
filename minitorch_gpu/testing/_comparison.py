"""``torch.testing.assert_close``: tensors, scalars and (nested) sequences and mappings of them, compared with
PyTorch's default tolerances per dtype and its failure messages."""
from __future__ import annotations

import cmath
import collections.abc
from collections.abc import Callable
from typing import Any

from .. import _dtype
from .._dtype import dtype as DType
from ..tensor import Tensor

__all__ = ["assert_close"]

# (rtol, atol) per dtype; every other dtype (integers, bool) compares exactly
_DTYPE_PRECISIONS: dict[DType, tuple[float, float]] = {
    _dtype.float16: (0.001, 1e-5),
    _dtype.bfloat16: (0.016, 1e-5),
    _dtype.float32: (1.3e-6, 1e-5),
    _dtype.float64: (1e-7, 1e-7),
}
# Python numbers take the tolerances of the dtype PyTorch gives them
_NUMBER_DTYPES: dict[type, DType] = {int: _dtype.int64, float: _dtype.float64}

Msg = str | Callable[[str], str] | None


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message, and where in the inputs it happened."""

    def __init__(self, kind: type[Exception], msg: str, where: tuple[Any, ...] = ()) -> None:
        super().__init__(msg)
        self.kind = kind
        self.msg = msg
        self.where = where


def _tolerances(dtypes: list[DType], rtol: float | None, atol: float | None) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    if rtol is not None and atol is not None:
        return rtol, atol
    pairs = [_DTYPE_PRECISIONS.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_msg(identifier: str, extra: str | None, abs_diff: Any, abs_idx: tuple[int, ...] | None,
                  atol: float, rel_diff: Any, rel_idx: tuple[int, ...] | None, rtol: float) -> str:
    equality = rtol == 0 and atol == 0

    def diff(kind: str, value: Any, idx: tuple[int, ...] | None, tol: float) -> str:
        line = f"{kind.title()} difference: {value}" if idx is None else \
            f"Greatest {kind} difference: {value} at index {idx}"
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff("absolute", abs_diff, abs_idx, atol) + diff("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for size in reversed(shape):
        flat, mod = divmod(flat, size)
        idx.append(mod)
    return tuple(reversed(idx))


def _tensor_msg(actual: Tensor, expected: Tensor, matches: Tensor, rtol: float, atol: float) -> str:
    n = matches.numel()
    mismatches = n - int(matches.sum().item())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a, e, ok = actual.flatten(), expected.flatten(), matches.flatten()
    if not a.dtype.is_floating_point:
        a, e = a.to(_dtype.int64), e.to(_dtype.int64)
    abs_diff = (a - e).abs().masked_fill(ok, 0)
    max_abs, abs_at = abs_diff.max(0)
    # x / 0 is inf, as PyTorch divides; dividing by 1 there keeps NumPy's divide-by-zero warning away
    zero = e == 0
    rel_diff = (abs_diff / e.abs().masked_fill(zero, 1)).masked_fill(zero & (abs_diff > 0), float("inf"))
    rel_diff = rel_diff.masked_fill(ok, 0)
    max_rel, rel_at = rel_diff.max(0)
    shape = tuple(matches.shape)
    return _mismatch_msg("Tensor-likes", extra, max_abs.item(), _unravel(int(abs_at.item()), shape), atol,
                         max_rel.item(), _unravel(int(rel_at.item()), shape), rtol)


def _compare_tensors(actual: Tensor, expected: Tensor, rtol: float | None, atol: float | None, equal_nan: bool,
                     check_device: bool, check_dtype: bool, check_stride: bool) -> None:
    def differ(attr: str, a: Any, e: Any) -> _Mismatch:
        return _Mismatch(AssertionError, f"The values for attribute '{attr}' do not match: {a} != {e}.")

    if actual.shape != expected.shape:
        raise differ("shape", actual.shape, expected.shape)
    if check_stride and actual.stride() != expected.stride():
        raise differ("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        raise differ("device", actual.device, expected.device)
    if check_dtype and actual.dtype is not expected.dtype:
        raise differ("dtype", actual.dtype, expected.dtype)
    rtol, atol = _tolerances([actual.dtype, expected.dtype], rtol, atol)
    actual, expected = actual.detach(), expected.detach()
    if actual.device != expected.device:
        actual, expected = actual.cpu(), expected.cpu()
    if actual.dtype is not expected.dtype:
        common = _dtype.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(common), expected.to(common)
    if actual.dtype is _dtype.bool:
        # booleans compare as integers (exactly)
        actual, expected = actual.to(_dtype.uint8), expected.to(_dtype.uint8)
    matches = actual.isclose(expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all().item()):
        return
    if actual.dim() == 0:
        raise _Mismatch(AssertionError, _scalar_msg(actual.item(), expected.item(), rtol, atol))
    raise _Mismatch(AssertionError, _tensor_msg(actual, expected, matches, rtol, atol))


def _compare_numbers(actual: Any, expected: Any, rtol: float | None, atol: float | None, equal_nan: bool,
                     check_dtype: bool) -> None:
    rtol, atol = _tolerances([_NUMBER_DTYPES.get(type(x), _dtype.float64) for x in (actual, expected)], rtol, atol)
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    if actual == expected:
        return
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_msg(actual, expected, rtol, atol))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _compare(actual: Any, expected: Any, where: tuple[Any, ...], options: dict[str, Any]) -> None:
    """Compare one pair, descending into sequences and mappings; a mismatch names its place."""
    try:
        if isinstance(actual, str) or isinstance(expected, str):
            pass
        elif isinstance(actual, collections.abc.Sequence) and isinstance(expected, collections.abc.Sequence):
            if len(actual) != len(expected):
                raise _Mismatch(AssertionError,
                                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
            for i, (a, e) in enumerate(zip(actual, expected)):
                _compare(a, e, where + (i,), options)
            return
        elif isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
            if set(actual) != set(expected):
                missing = sorted(set(expected) - set(actual), key=repr)
                extra = sorted(set(actual) - set(expected), key=repr)
                raise _Mismatch(AssertionError, f"The keys of the mappings do not match:\nMissing keys in the actual "
                                f"mapping: {missing}\nAdditional keys in the actual mapping: {extra}")
            for k in actual:
                _compare(actual[k], expected[k], where + (k,), options)
            return
        if actual is None or expected is None:
            if actual is not expected:
                raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
            return
        if isinstance(actual, bool) and isinstance(expected, bool):
            if actual is not expected:
                raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
            return
        if _is_number(actual) and _is_number(expected):
            _compare_numbers(actual, expected, options["rtol"], options["atol"], options["equal_nan"],
                             options["check_dtype"])
            return
        if isinstance(actual, Tensor) and isinstance(expected, Tensor):
            _compare_tensors(actual, expected, options["rtol"], options["atol"], options["equal_nan"],
                             options["check_device"], options["check_dtype"], options["check_stride"])
            return
    except _Mismatch as m:
        if not m.where:
            m.where = where
        raise
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: Msg = None) -> None:
    """Raise an AssertionError unless ``actual`` and ``expected`` are close: tensors (same shape, device and dtype
    unless told otherwise, then ``|actual - expected| <= atol + rtol * |expected|`` elementwise), Python numbers, or
    sequences and mappings of them. Without ``rtol`` / ``atol`` the tolerances come from the dtype (float32:
    1.3e-6 / 1e-5, float64: 1e-7 / 1e-7, exact for integers). ``msg`` replaces the message, or (a callable)
    rewrites it.

    >>> assert_close(mt.tensor([1.0, 2.0]), mt.tensor([1.0, 2.0 + 1e-7]))
    """
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_stride=check_stride)
    _tolerances([_dtype.float64], rtol, atol)  # refuses one tolerance without the other, before comparing
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as m:
        text = m.msg
        if m.where:
            text += "\n\nThe failure occurred for item " + "".join(f"[{w!r}]" for w in m.where)
        if callable(msg):
            text = msg(text)
        elif msg is not None:
            text = msg
        raise m.kind(text) from None
