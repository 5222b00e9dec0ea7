"""Reduction primitives: sum, mean, prod, max/min (with and without indices), var, logsumexp, vector norms,
any/all, count_nonzero, scans (cumsum/cumprod), and the softmax family's forward and backward.

``axis`` is None (every axis) or a tuple of non-negative ints already checked by the caller; the scans and
the softmax family take a single int. Every primitive returns an array of this backend (never a NumPy
scalar, which NumPy returns for full reductions). Half-precision inputs accumulate in float32 and are cast
back, as PyTorch's CPU and CUDA reductions do; float32 and float64 are never upcast.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from ._types import Array, Axes, AxisArg, NpDtype, PrimitiveHost, Shape

ReduceName = Literal["sum", "prod", "mean", "max", "min", "any", "all"]
"""The reductions ``reduce`` runs by name: each is a method of NumPy's and CuPy's arrays."""

ScanName = Literal["cumsum", "cumprod"]

_SCAN_IDENTITY: dict[ScanName, int] = {"cumsum": 0, "cumprod": 1}
"""Each scan by its array method's name, with the value an exclusive scan starts from."""


# sums over the last axis of rows this short (and at least this many rows) go through BLAS
_ROW_SUM_MAX = 1024
_ROW_SUM_MIN_ROWS = 8
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ONES: dict[tuple[int, NpDtype], Array] = {}  # (n, dtype) -> read-only ones(n), the row-sum vectors
# reductions along at most this many elements take the slice-by-slice path of max_dim / min_dim
_SHORT_AXIS = 16
# softmax rows shifted by the whole array's maximum (see ``_exp_rows``): each row's own maximum must lie within
# this many e-folds of it, else the row is shifted by its own. It bounds what the shared shift costs: exp's argument
# is rounded at the shift's magnitude (a relative error of at most ~16 ulp on the row's largest weights), and terms
# below exp(-(exponent range - 16)) of the row's largest may underflow
_SHIFT_SLACK = 16.0
# below this many elements the per-row maximum costs no more than the global one
_GLOBAL_SHIFT_MIN = 1024
_WIDER = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.float64): np.dtype(np.longdouble)}
# signed integers as wide as each dtype: bit-level selection
_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _ones(n: int, dt: NpDtype) -> Array:
    """A read-only NumPy ones(n) of ``dt``, made once: the vector of the BLAS row and column sums."""
    key = (n, dt)
    ones = _ONES.get(key)
    if ones is None:
        ones = np.ones(n, dtype=dt)
        ones.flags.writeable = False
        _ONES[key] = ones
    return ones


def _is_half(dt: NpDtype) -> bool:
    # float16, and bfloat16 from ml_dtypes (a 2-byte 'V' kind)
    return dt.itemsize == 2 and dt.kind in "fV"


def _nd(r: Any) -> Array:
    """A 0-d array for the NumPy scalar a full reduction returns (CuPy always returns arrays)."""
    return r.__array__() if isinstance(r, np.generic) else r


def _axis_tuple(axis: Axes, ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim)) if axis is None else axis


def _count(shape: Shape, axis: Axes) -> int:
    """How many elements each reduction over ``axis`` combines."""
    return math.prod(shape[a] for a in _axis_tuple(axis, len(shape)))


class ReduceMixin(PrimitiveHost):
    # Array methods (x.sum, x.max, ...) rather than xp.sum: NumPy's functions add a dispatch layer that
    # costs as much as the reduction itself on small tensors.

    def reduce(self, name: ReduceName, x: Array, axis: AxisArg = None, keepdims: bool = False,
               dtype: NpDtype | None = None) -> Array:
        """Generic ``x.<name>`` reduction (sum, prod, mean, max, min, any, all)."""
        fn = getattr(x, name)
        if dtype is not None:
            return _nd(fn(axis=axis, keepdims=keepdims, dtype=dtype))
        return _nd(fn(axis=axis, keepdims=keepdims))

    # ---------------------------------------------------------------- sums and products
    def _blas_sum_axis(self, x: Array, axis: AxisArg) -> int | None:
        """The one axis of ``axis`` (an int or a 1-tuple) when ``x`` is a C-contiguous float32/float64 NumPy array
        of at least 2 dims whose sums along it may go through BLAS, else None."""
        if self.xp is not np or x.ndim < 2 or x.dtype not in _BLAS_FLOATS or not x.flags.c_contiguous:
            return None
        if axis.__class__ is tuple:
            if len(axis) != 1:
                return None
            axis = axis[0]
        return None if axis is None else axis % x.ndim

    def _row_sums(self, x: Array, axis: AxisArg, keepdims: bool) -> Array | None:
        """Sums over the last axis of a C-contiguous float32/float64 array of short rows as one matrix-vector
        product (BLAS), or None where that path does not apply.

        NOTE: NumPy's ``sum(axis=-1)`` pays a per-row overhead: over rows of 64 it runs ~6x slower than
        ``rows @ ones``. Rows are capped at ``_ROW_SUM_MAX`` elements, where BLAS's accumulation in a few
        float lanes is as accurate as NumPy's pairwise sum."""
        if self._blas_sum_axis(x, axis) != x.ndim - 1:
            return None
        n = x.shape[-1]
        if not 2 <= n <= _ROW_SUM_MAX or x.size < _ROW_SUM_MIN_ROWS * n:
            return None
        r = np.matmul(x.reshape(-1, n), _ones(n, x.dtype))
        return r.reshape(x.shape[:-1] + ((1,) if keepdims else ()))

    def _col_sums(self, x: Array, axis: AxisArg, keepdims: bool) -> Array | None:
        """Sums over the first axis of a C-contiguous 2-d float32/float64 array of at most ``_ROW_SUM_MAX`` rows as
        one vector-matrix product (BLAS), or None where that path does not apply.

        NOTE: the gradients of biases and of normalisation weights sum over the batch: NumPy's ``sum(axis=0)``
        takes ~3.5x the time of ``ones @ x`` at (512, 128), and up to 1024 rows BLAS's accumulation is as
        accurate as NumPy's pairwise sum (see ``_row_sums``)."""
        if x.ndim != 2 or self._blas_sum_axis(x, axis) != 0:
            return None
        n = x.shape[0]
        if not 2 <= n <= _ROW_SUM_MAX or x.shape[1] < 2:
            return None
        r = np.matmul(_ones(n, x.dtype), x)
        return r.reshape(1, -1) if keepdims else r

    def sum(self, x: Array, axis: AxisArg = None, keepdims: bool = False, dtype: NpDtype | None = None) -> Array:
        if dtype is None:
            if axis is not None:
                r = self._row_sums(x, axis, keepdims)
                if r is None:
                    r = self._col_sums(x, axis, keepdims)
                if r is not None:
                    return r
            if _is_half(x.dtype):
                return _nd(x.sum(axis=axis, keepdims=keepdims, dtype=np.float32)).astype(x.dtype)
        elif x.dtype.kind in "fV" and np.dtype(dtype).kind in "biu":
            # NumPy refuses to accumulate floats in an integer type; PyTorch converts each element first
            x = x.astype(dtype)
        return _nd(x.sum(axis=axis, keepdims=keepdims, dtype=dtype))

    def mean(self, x: Array, axis: Axes = None, keepdims: bool = False) -> Array:
        """Mean of a floating array; NaN (without a warning) where the reduced extent is empty."""
        n = _count(x.shape, axis)
        if n == 0:
            return self.xp.full(x.sum(axis=axis, keepdims=keepdims).shape, np.nan, dtype=x.dtype)
        if _is_half(x.dtype):
            r = _nd(x.sum(axis=axis, keepdims=keepdims, dtype=np.float32))
            r /= n
            return r.astype(x.dtype)
        # sum then divide in place: what x.mean does, without its bookkeeping (half the time on small inputs)
        r = self._row_sums(x, axis, keepdims) if axis is not None else None
        if r is None:
            r = _nd(x.sum(axis=axis, keepdims=keepdims))
        r /= n
        return r

    def prod(self, x: Array, axis: AxisArg = None, keepdims: bool = False, dtype: NpDtype | None = None) -> Array:
        if dtype is None and _is_half(x.dtype):
            # a float32 product rounded once (NumPy would round every partial product to the 2-byte type)
            with np.errstate(over="ignore"):
                return _nd(x.prod(axis=axis, keepdims=keepdims, dtype=np.float32)).astype(x.dtype)
        return _nd(x.prod(axis=axis, keepdims=keepdims, dtype=dtype))

    def count_nonzero_dims(self, x: Array, axis: AxisArg = None) -> Array:
        """Non-zero count over ``axis`` as an int64 array (IndexMixin.count_nonzero gives a Python int)."""
        return self.xp.asarray(self.xp.count_nonzero(x, axis=axis), dtype=np.int64)

    def any(self, x: Array, axis: AxisArg = None, keepdims: bool = False) -> Array:
        return _nd(x.any(axis=axis, keepdims=keepdims))

    def all(self, x: Array, axis: AxisArg = None, keepdims: bool = False) -> Array:
        return _nd(x.all(axis=axis, keepdims=keepdims))

    # ---------------------------------------------------------------- extrema
    def amax(self, x: Array, axis: AxisArg = None, keepdims: bool = False) -> Array:
        """Maximum over ``axis`` (NaN propagates). The caller rules out empty reduced extents."""
        return _nd(x.max(axis=axis, keepdims=keepdims))

    def amin(self, x: Array, axis: AxisArg = None, keepdims: bool = False) -> Array:
        return _nd(x.min(axis=axis, keepdims=keepdims))

    def argmax(self, x: Array, axis: int | None = None, keepdims: bool = False) -> Array:
        """Index of the first maximum (of the first NaN, if any) along one axis, or of the flattened array."""
        return _nd(x.argmax(axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)

    def argmin(self, x: Array, axis: int | None = None, keepdims: bool = False) -> Array:
        return _nd(x.argmin(axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)

    def max_dim(self, x: Array, axis: int, keepdims: bool = False) -> tuple[Array, Array]:
        """(values, int64 indices) of the maximum along one axis, first index among ties."""
        return self._extreme_dim(x, axis, keepdims, self.xp.argmax)

    def min_dim(self, x: Array, axis: int, keepdims: bool = False) -> tuple[Array, Array]:
        return self._extreme_dim(x, axis, keepdims, self.xp.argmin)

    def _extreme_dim(self, x: Array, axis: int, keepdims: bool,
                     argfn: Callable[..., Array]) -> tuple[Array, Array]:
        xp = self.xp
        n = x.shape[axis] if x.ndim else 1
        if xp is np and 1 < n <= _SHORT_AXIS and x.size >= 64 * n and x.dtype.kind in "fiu" \
                and x.dtype.itemsize in _INT_OF_SIZE:
            r = self._extreme_short_axis(x, axis, argfn is xp.argmax)
            if r is not None:
                vals, idx = r
                if keepdims:
                    vals, idx = xp.expand_dims(vals, axis), xp.expand_dims(idx, axis)
                return vals, idx
        idx = xp.asarray(argfn(x, axis=axis, keepdims=True), dtype=np.int64)
        vals = xp.take_along_axis(x, idx, axis=axis)
        if not keepdims:
            idx = xp.squeeze(idx, axis=axis)
            vals = xp.squeeze(vals, axis=axis)
        return vals, idx

    def _extreme_short_axis(self, x: Array, axis: int, is_max: bool) -> tuple[Array, Array] | None:
        """(values, first indices) of the maximum (``is_max``) or minimum along a short ``axis``, one slice at a
        time; None when ``x`` holds a NaN (argmax's NaN rules then apply).

        NOTE: NumPy's argmax/argmin pay a per-row overhead that dominates short rows (a max-pooling window of
        4 costs ~10 ns per element); comparing whole slices is branch-free and vectorised. Values are taken
        by bit selection rather than ``maximum``, so that ties between -0.0 and +0.0 keep the first one, as
        argmax followed by a gather does.
        """
        if x.dtype.kind == "f" and np.isnan(x).any():
            return None
        lead = (slice(None),) * (axis % x.ndim)
        better = np.greater if is_max else np.less
        bits_t = _INT_OF_SIZE[x.dtype.itemsize]
        best = x[lead + (0,)].copy()
        bits = best.view(bits_t)
        cur = np.empty_like(best)
        take = np.empty(best.shape, dtype=bits_t)
        diff = np.empty(best.shape, dtype=bits_t)
        idx = np.zeros(best.shape, dtype=np.int8)  # the axis is short: int8 passes are the cheapest
        step = np.empty(best.shape, dtype=np.int8)
        for j in range(1, x.shape[axis]):
            # one strided read; every pass below is then contiguous (strided ufunc loops are ~10x slower)
            np.copyto(cur, x[lead + (j,)])
            upd = better(cur, best).view(np.int8)
            # best ^= (best ^ cur) & -upd: cur's bits where upd, best's elsewhere
            np.negative(upd, out=take, casting="unsafe")
            np.bitwise_xor(bits, cur.view(bits_t), out=diff)
            diff &= take
            bits ^= diff
            # indices grow with j, so the latest update is the largest
            np.multiply(upd, np.int8(j), out=step)
            np.maximum(idx, step, out=idx)
        return best, idx.astype(np.int64)

    def tie_weights(self, x: Array, value: Array, axis: AxisArg = None, nan_is_tie: bool = True) -> Array:
        """1/count where ``x`` equals the reduced ``value`` (keepdims shape), 0 elsewhere: the gradient
        of max/min shared evenly among ties, as PyTorch does. A NaN result sends the gradient to the NaN
        inputs (PyTorch's max()), or with ``nan_is_tie=False`` makes the slice's weights NaN (its amax)."""
        xp = self.xp
        if x.ndim == 0:
            return self.tie_weights(x.reshape(1), xp.reshape(value, (1,)), None, nan_is_tie).reshape(())
        mask = x == value
        if nan_is_tie and x.dtype.kind in "fV":
            mask |= xp.isnan(x) & xp.isnan(value)
        count = mask.sum(axis=axis, keepdims=True)
        w = mask.astype(x.dtype)
        if nan_is_tie:
            w /= xp.maximum(count, 1).astype(x.dtype)
        else:
            with np.errstate(invalid="ignore"):
                w /= count.astype(x.dtype)
        return w

    def index_mask(self, indices: Array, shape: Shape, axis: int, np_dtype: NpDtype) -> Array:
        """An array of ``shape``: 1 where the position along ``axis`` equals ``indices`` (with or without
        that axis kept), else 0. The gradient pattern of max/min with a dim, which send everything to the
        index they returned."""
        xp = self.xp
        if indices.ndim < len(shape):
            indices = xp.expand_dims(indices, axis)
        pos_shape = [1] * len(shape)
        pos_shape[axis] = shape[axis]
        pos = xp.arange(shape[axis], dtype=np.int64).reshape(pos_shape)
        return (pos == indices).astype(np_dtype)

    # ---------------------------------------------------------------- moments
    def var_mean(self, x: Array, axis: Axes = None, correction: float = 1,
                 keepdims: bool = False) -> tuple[Array, Array]:
        """(var, mean) by two passes; divides by max(0, N - correction) like PyTorch (inf/NaN when <= 0)."""
        xp = self.xp
        n = _count(x.shape, axis)
        out_dtype = x.dtype
        if n == 0:
            shape = x.sum(axis=axis, keepdims=keepdims).shape
            nan = xp.full(shape, np.nan, dtype=out_dtype)
            return nan, nan.copy()
        acc = np.float32 if _is_half(x.dtype) else None
        xa = x if acc is None else x.astype(acc)
        mean = xa.mean(axis=axis, keepdims=True)
        d = xa - mean
        d *= d
        ss = d.sum(axis=axis, keepdims=keepdims)
        dof = n - correction
        if dof > 0:
            var = ss / dof
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                var = ss / xp.asarray(0.0, dtype=ss.dtype)
        if not keepdims:
            mean = mean.reshape(var.shape)
        return xp.asarray(var).astype(out_dtype, copy=False), xp.asarray(mean).astype(out_dtype, copy=False)

    def var(self, x: Array, axis: Axes = None, correction: float = 1, keepdims: bool = False) -> Array:
        return self.var_mean(x, axis, correction, keepdims)[0]

    def std(self, x: Array, axis: Axes = None, correction: float = 1, keepdims: bool = False) -> Array:
        return _nd(self.xp.sqrt(self.var_mean(x, axis, correction, keepdims)[0]))

    # ---------------------------------------------------------------- log-sum-exp and norms
    def logsumexp(self, x: Array, axis: Axes = None, keepdims: bool = False) -> Array:
        """log(sum(exp(x))) shifted by the maximum so that nothing overflows; -inf over empty extents."""
        xp = self.xp
        if x.ndim == 0:
            return self.logsumexp(x.reshape(1), None, False).reshape(())
        out_dtype = x.dtype
        if _is_half(x.dtype):
            x = x.astype(np.float32)
        if _count(x.shape, axis) == 0:
            shape = x.sum(axis=axis, keepdims=keepdims).shape
            return xp.full(shape, -np.inf, dtype=out_dtype)
        m = x.max(axis=axis, keepdims=True)
        # an all -inf (or inf, or NaN) slice must not produce inf - inf; shifting by 0 there is exact
        m = xp.where(xp.isfinite(m), m, 0)
        e = x - m
        xp.exp(e, out=e)
        s = e.sum(axis=axis, keepdims=True)
        with np.errstate(divide="ignore"):
            r = xp.log(s)
        r += m
        if not keepdims:
            r = xp.squeeze(r, axis=axis)
        return xp.asarray(r).astype(out_dtype, copy=False)

    def vector_norm(self, x: Array, ord: float = 2.0, axis: Axes = None, keepdims: bool = False) -> Array:
        """(sum |x|^ord)^(1/ord), with ord = inf / -inf (max / min of |x|) and 0 (count of non-zeros)."""
        xp = self.xp
        out_dtype = x.dtype
        if _is_half(x.dtype):
            x = x.astype(np.float32)
        if ord == 2:
            r = xp.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
        elif ord == np.inf:
            r = xp.abs(x).max(axis=axis, keepdims=keepdims)
        elif ord == -np.inf:
            r = xp.abs(x).min(axis=axis, keepdims=keepdims)
        elif ord == 0:
            r = (x != 0).sum(axis=axis, keepdims=keepdims, dtype=x.dtype)
        elif ord == 1:
            r = xp.abs(x).sum(axis=axis, keepdims=keepdims)
        else:
            # negative orders send 0 to inf and back to 0, which is the right limit
            with np.errstate(divide="ignore"):
                r = (xp.abs(x) ** ord).sum(axis=axis, keepdims=keepdims) ** (1.0 / ord)
        return xp.asarray(r).astype(out_dtype, copy=False)

    # ---------------------------------------------------------------- scans
    def cumsum(self, x: Array, axis: int, dtype: NpDtype | None = None, reverse: bool = False,
               exclusive: bool = False) -> Array:
        """Running sum along ``axis``; ``reverse`` scans from the end, ``exclusive`` leaves out the element
        itself (the backward of cumsum is a reverse scan, and prod's backward uses exclusive products)."""
        return self._scan("cumsum", x, axis, dtype, reverse, exclusive)

    def cumprod(self, x: Array, axis: int, dtype: NpDtype | None = None, reverse: bool = False,
                exclusive: bool = False) -> Array:
        return self._scan("cumprod", x, axis, dtype, reverse, exclusive)

    def _scan(self, name: ScanName, x: Array, axis: int, dtype: NpDtype | None, reverse: bool,
              exclusive: bool) -> Array:
        xp = self.xp
        shape = x.shape
        if x.ndim == 0:
            x = x.reshape(1)
            axis = 0
        elif not x.flags.c_contiguous:
            # NumPy keeps a transposed layout in the result; PyTorch's scans return contiguous tensors
            x = xp.ascontiguousarray(x)
        cast_back = None
        if dtype is None and _is_half(x.dtype):
            cast_back, dtype = x.dtype, np.dtype(np.float32)
        if reverse:
            x = xp.flip(x, axis)
        r = getattr(x, name)(axis=axis, dtype=dtype)
        if name == "cumsum" and not exclusive and r.dtype.kind == "f":
            # PyTorch's running sums start from +0.0, so none is -0.0 (NumPy's copy a leading -0.0 on)
            r += 0
        if exclusive:
            shifted = xp.empty_like(r)
            lead = (slice(None),) * axis
            shifted[lead + (slice(0, 1),)] = _SCAN_IDENTITY[name]
            shifted[lead + (slice(1, None),)] = r[lead + (slice(0, -1),)]
            r = shifted
        if reverse:
            r = xp.ascontiguousarray(xp.flip(r, axis))
        if cast_back is not None:
            r = r.astype(cast_back)
        # CuPy scans a non-last axis through a transposed buffer and returns that layout
        return xp.ascontiguousarray(r).reshape(shape)

    def scan_masks(self, n: int, np_dtype: NpDtype, reverse: bool = False,
                   exclusive: bool = False) -> tuple[Array, Array, Array]:
        """(eye, 1 - eye, includes) as (n, n) arrays of ``np_dtype``: includes[i, k] = 1 when position i is
        inside the scan prefix that ends at k (the pattern of cumprod's twice-differentiable backward)."""
        xp = self.xp
        i = xp.arange(n).reshape(n, 1)
        k = xp.arange(n).reshape(1, n)
        if reverse:
            inc = k < i if exclusive else k <= i
        else:
            inc = k > i if exclusive else k >= i
        return (i == k).astype(np_dtype), (i != k).astype(np_dtype), inc.astype(np_dtype)

    # ---------------------------------------------------------------- softmax family
    def _shifted(self, x: Array, axis: int) -> tuple[Array, NpDtype]:
        """(x - its maximum along ``axis``, x's dtype) for a non-empty ``x`` of at least one dim: a new C-contiguous
        array (the softmax family's results are contiguous, as PyTorch's are), in float32 for half inputs."""
        if not x.flags.c_contiguous:
            x = self.xp.ascontiguousarray(x)
        out_dtype = x.dtype
        if _is_half(out_dtype):
            x = x.astype(np.float32)
        return x - x.max(axis=axis, keepdims=True), out_dtype

    def _exp_rows(self, x: Array, axis: int, safe: bool = False,
                  least_size: int = _GLOBAL_SHIFT_MIN) -> tuple[Array, Array, Any] | None:
        """(e, s, c): e = exp(x - c) as a new array, c a shift per row (a float for every row, or an array shaped
        like s) and s the sums of e along the last axis (kept), for a C-contiguous float32/float64 NumPy array
        reduced along its last axis. ``safe``: a row of -inf gives e = 0 and s = 1 (the zeros of attention's
        safe softmax) rather than NaN. None where this path does not apply (an array smaller than
        ``least_size``, another layout, an inf or NaN anywhere, a device whose values the host would wait for):
        the caller's per-row path handles those.

        NOTE: NumPy's maximum along short rows is as slow as the softmax's arithmetic put together (190 us for
        2048 rows of 64, where the whole array's maximum takes 7 us). Any per-row shift gives the same softmax,
        so rows are shifted by the array's maximum; a row whose own maximum lies far below it (its sum is small)
        would lose its small terms to underflow, and only those rows are shifted by their own maximum."""
        if self.xp is not np or self.reads_wait or x.dtype not in _BLAS_FLOATS or x.size < least_size or \
                axis % x.ndim != x.ndim - 1 or not x.flags.c_contiguous:
            return None
        n = x.shape[-1]
        top = float(x.max())
        if n < 2 or not math.isfinite(top):
            return None
        e = np.subtract(x, x.dtype.type(top))
        np.exp(e, out=e)
        s = self._row_sums(e, axis, True)
        if s is None:
            s = e.sum(axis=-1, keepdims=True)
        c: Any = top
        least = n * math.exp(-_SHIFT_SLACK)
        if float(s.min()) < least:
            low = (s < least).reshape(-1)
            rows = x.reshape(-1, n)[low]
            m = rows.max(axis=-1, keepdims=True)
            if safe:
                m[m == -np.inf] = 0.0
            with np.errstate(invalid="ignore"):  # a row of -inf: -inf - -inf gives the NaN softmax gives it
                own = np.exp(rows - m)
            sums = own.sum(axis=-1)
            if safe:
                sums[sums == 0.0] = 1.0  # only a row of -inf sums to 0 once shifted by its own maximum
            e.reshape(-1, n)[low] = own
            s.reshape(-1)[low] = sums
            c = np.full(s.shape, top, dtype=x.dtype)
            c.reshape(-1)[low] = m.reshape(-1)
        return e, s, c

    def softmax_forward(self, x: Array, axis: int) -> Array:
        """exp(x - max) / sum(exp(x - max)) along ``axis`` (None for a 0-d array)."""
        xp = self.xp
        if x.size == 0:
            return xp.empty_like(x)
        if x.ndim == 0:
            return self.softmax_forward(x.reshape(1), 0).reshape(())
        parts = self._exp_rows(x, axis)
        if parts is not None:
            e, s, _ = parts
            e /= s
            return e
        e, out_dtype = self._shifted(x, axis)
        xp.exp(e, out=e)
        e /= self.sum(e, axis=axis, keepdims=True)
        return e.astype(out_dtype, copy=False)

    def _row_dots(self, a: Array, b: Array, axis: int) -> Array:
        """sum(a * b) along ``axis`` (kept): along the last axis of two arrays of one shape, without the product's
        temporary."""
        if a.shape == b.shape and axis % a.ndim == a.ndim - 1 and self.xp is np and a.dtype in _BLAS_FLOATS \
                and a.dtype == b.dtype:
            return np.vecdot(a, b)[..., None]
        return self.sum(a * b, axis=axis, keepdims=True)

    def softmax_backward(self, y: Array, g: Array, axis: int) -> Array:
        """Input gradient of softmax from its output y: y * (g - sum(g * y))."""
        xp = self.xp
        if y.size == 0:
            return xp.empty_like(y)
        if y.ndim == 0:
            return self.softmax_backward(y.reshape(1), g.reshape(1), 0).reshape(())
        # y * (g - sum(g * y)), PyTorch's grouping: two passes after the sum instead of three
        out = g - self._row_dots(g, y, axis)
        out *= y
        return out

    def log_softmax_forward(self, x: Array, axis: int) -> Array:
        """x - max - log(sum(exp(x - max))) along ``axis``."""
        xp = self.xp
        if x.size == 0:
            return xp.empty_like(x)
        if x.ndim == 0:
            return self.log_softmax_forward(x.reshape(1), 0).reshape(())
        parts = self._exp_rows(x, axis)
        if parts is not None:
            e, s, c = parts
            # log-sum-exp per row in a wider type, rounded once (as a per-row shift's m + log(sum) is): the shift
            # is up to tens of e-folds from the row's own, and log(s) rounded in x's type would carry that error
            wide = _WIDER[x.dtype]
            lse = np.log(s.astype(wide))
            lse += c
            return np.subtract(x, lse.astype(x.dtype), out=e)
        d, out_dtype = self._shifted(x, axis)
        lse = xp.log(self.sum(xp.exp(d), axis=axis, keepdims=True))
        d -= lse
        return d.astype(out_dtype, copy=False)

    def log_softmax_backward(self, y: Array, g: Array, axis: int) -> Array:
        """Input gradient of log_softmax from its output y: g - exp(y) * sum(g)."""
        xp = self.xp
        if y.size == 0:
            return xp.empty_like(y)
        if y.ndim == 0:
            return self.log_softmax_backward(y.reshape(1), g.reshape(1), 0).reshape(())
        return g - xp.exp(y) * self.sum(g, axis=axis, keepdims=True)
