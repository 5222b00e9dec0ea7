"""Indexing primitives: basic and advanced getitem/setitem, gather/scatter, accumulation with duplicate
indices, nonzero, sort/topk/kth-value, unique and one_hot.

Every body is written against ``self.xp`` (NumPy or CuPy). Accumulating writes (``add_at``) never rely on
``a[idx] += v``, which keeps only one contribution per repeated index: NumPy's ``ufunc.at`` and CuPy's
``scatter_add`` sum every contribution.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, TypeAlias

import numpy as _np

from ._types import Array, NpDtype, Operand, PrimitiveHost, Scalar, Shape, writable

AtReduce = Literal["multiply", "maximum", "minimum"]
"""The ufuncs ``reduce_at`` applies with every repeated index (``ufunc.at``)."""

AtUfunc = Literal["add", AtReduce]
"""Every ufunc a scatter may combine with: ``add`` goes through ``add_at``, the others through ``reduce_at``."""

ScatterMode = Literal["add", "multiply"]
"""``scatter_``'s ``reduce=`` (PyTorch's older spelling): the ufunc names themselves."""

ScatterReduce = Literal["sum", "prod", "mean", "amax", "amin"]
"""``scatter_reduce``'s reductions."""

SCATTER_REDUCE_UFUNC: dict[ScatterReduce, AtUfunc] = {
    "sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}
"""The ufunc that combines each ``scatter_reduce`` contribution (mean divides by the counts afterwards)."""

Unique: TypeAlias = "tuple[Array, Array | None, Array | None]"
"""(values, inverse indices or None, counts or None) of the ``unique`` primitives."""


class IndexMixin(PrimitiveHost):
    # ---------------------------------------------------------------- plain indexing
    def getitem(self, x: Array, index: Any) -> Array:
        return x[index]

    def setitem(self, x: Array, index: Any, value: Operand) -> None:
        x[index] = value

    def basic_index(self, x: Array, index: tuple[Any, ...]) -> Array:
        """A view for an index of ints, slices and None. The trailing Ellipsis keeps a full integer index
        from collapsing to a NumPy scalar (a scalar is not a view)."""
        return x[index + (Ellipsis,)]

    def writable(self, x: Array) -> bool:
        """False for arrays whose elements overlap in memory (broadcast views), which must not be written."""
        return writable(x)

    def index_range(self, idx: Array) -> tuple[int, int]:
        """(min, max) of a non-empty integer array as Python ints, in one device-to-host transfer."""
        xp = self.xp
        if xp is _np and not self.reads_wait:
            return int(idx.min()), int(idx.max())
        mm = self.to_numpy(xp.stack([idx.min(), idx.max()]))
        return int(mm[0]), int(mm[1])

    def check_index_range(self, idx: Array, size: int, error: Callable[[int], BaseException]) -> None:
        """Raise ``error(first element of idx outside [0, size))`` if there is one. A GPU backend reads the
        answer at its next synchronisation instead; the gather that follows wraps such indices there."""
        if idx.size:
            lo, hi = self.index_range(idx)
            if lo < 0 or hi >= size:
                raise error(self.first_outside(idx, 0, size))

    def first_outside(self, idx: Array, lo: int, hi: int) -> int:
        """The first element of ``idx`` outside ``[lo, hi)`` (only called once one is known to exist)."""
        bad = (idx < lo) | (idx >= hi)
        return int(idx.reshape(-1)[int(bad.reshape(-1).argmax())])

    def nonzero_tuple(self, x: Array) -> tuple[Array, ...]:
        """One int64 array per dim with the coordinates of the nonzero elements, in row-major order."""
        xp = self.xp
        if x.ndim == 0:
            return (xp.zeros(int(bool(x)), dtype=_np.int64),)
        return tuple(i.astype(_np.int64, copy=False) for i in xp.nonzero(x))

    def argwhere(self, x: Array) -> Array:
        xp = self.xp
        if x.ndim == 0:
            return xp.zeros((int(bool(x)), 0), dtype=_np.int64)
        return xp.stack(self.nonzero_tuple(x), axis=1) if x.size else xp.zeros((0, x.ndim), dtype=_np.int64)

    def count_nonzero(self, x: Array) -> int:
        return int(self.xp.count_nonzero(x))

    def arange_index(self, n: int) -> Array:
        return self.xp.arange(n, dtype=_np.int64)

    # ---------------------------------------------------------------- writes with repeated indices
    def add_at(self, a: Array, index: Any, values: Operand) -> None:
        """a[index] += values where every repeated index adds its own contribution; a 16-bit float ``a`` sums in
        float32 and rounds once per element (PyTorch's CUDA accumulation; an add in the 16-bit type would round
        at every repeated index)."""
        dt = a.dtype
        if dt.itemsize == 2 and dt.kind in "fV":
            buf = a.astype(_np.float32)
            self.add_at(buf, index, self.xp.asarray(values).astype(_np.float32))
            a[...] = buf.astype(dt)
            return
        if self.xp is _np:
            if _add_rows(a, index, values):
                return
            pos = _flat_positions(a, index)
            if pos is not None:
                try:
                    values = _np.broadcast_to(values, pos.shape)
                except ValueError:
                    pos = None  # let ufunc.at report the mismatch in its own words
            if pos is not None:
                # NOTE: ufunc.at has a fast loop only for one 1-D index into a 1-D array; a tuple of index
                # arrays (gather/scatter's along-dim index, a row index into a table) takes a general path
                # about 15x slower. The flat positions are visited in the same (C) order, so sums of
                # repeated positions round identically.
                _np.add.at(a.reshape(-1), pos.reshape(-1), values.reshape(-1))
            else:
                _np.add.at(a, index, values)
        else:
            self._add_at_device(a, index, values)

    def _add_at_device(self, a: Array, index: Any, values: Operand) -> None:
        # CuPy's scatter_add uses atomicAdd, which exists for float32/float64/int32/uint32/uint64. Other
        # dtypes go through a supported buffer: int64 as uint64 is the same two's-complement addition,
        # float16 / small ints / bool through float32 / int64.
        xp = self.xp
        # CuPy 14 deprecates cupyx.scatter_add (a DeprecationWarning per call) for the ufunc method
        add_at = getattr(xp.add, "at", None)
        if add_at is None:
            import cupyx
            add_at = cupyx.scatter_add
        values = xp.asarray(values)
        dt = a.dtype
        if dt in (_np.float32, _np.float64, _np.int32, _np.uint32, _np.uint64):
            add_at(a, index, values.astype(dt, copy=False))
        elif dt == _np.int64:
            add_at(a.view(_np.uint64), index, values.astype(_np.int64, copy=False).view(_np.uint64))
        else:
            buf_dt = _np.float32 if dt.kind == "f" else _np.int64
            buf = a.astype(buf_dt)
            self._add_at_device(buf, index, values.astype(buf_dt))
            a[...] = buf.astype(dt)

    def reduce_at(self, op: AtReduce, a: Array, index: Any, values: Operand) -> None:
        """a[index] = op(a[index], values) with repeated indices all applied; ``op`` is 'multiply',
        'maximum' or 'minimum'."""
        xp = self.xp
        ufunc = getattr(xp, op)
        if xp is _np:
            ufunc.at(a, index, values)
            return
        self._reduce_at_rounds(ufunc, a, index, values)

    def _reduce_at_rounds(self, ufunc: Any, a: Array, index: Any, values: Operand) -> None:
        # without ufunc.at: apply the contributions in rounds, each round taking one contribution per
        # target element, so no element is written twice in one assignment
        xp = self.xp
        pos = self.getitem(xp.arange(a.size, dtype=_np.int64).reshape(a.shape), index)
        vals = xp.broadcast_to(xp.asarray(values, dtype=a.dtype), pos.shape).reshape(-1)
        pos = pos.reshape(-1)
        flat = a.reshape(-1) if a.flags.c_contiguous else a.copy().reshape(-1)
        while pos.size:
            order = self.stable_argsort(pos)
            sp = pos[order]
            first = xp.ones(sp.shape, dtype=bool)
            first[1:] = sp[1:] != sp[:-1]
            take = order[first]
            flat[pos[take]] = ufunc(flat[pos[take]], vals[take])
            keep = xp.ones(pos.shape, dtype=bool)
            keep[take] = False
            pos, vals = pos[keep], vals[keep]
        if not a.flags.c_contiguous:
            a[...] = flat.reshape(a.shape)

    def index_put(self, a: Array, index: Any, values: Operand, accumulate: bool) -> None:
        if accumulate:
            self.add_at(a, index, values)
        else:
            a[index] = values

    # ---------------------------------------------------------------- along one dim
    def along_dim_index(self, index: Array, dim: int) -> tuple[Array, ...]:
        """The advanced-index tuple addressing ``out[i][index[i][j][k]][k]`` (for dim 1): the index array
        at ``dim`` and broadcastable aranges over every other dim of ``index``."""
        xp = self.xp
        nd = index.ndim
        out = []
        for d in range(nd):
            if d == dim:
                out.append(index)
            else:
                shape = [1] * nd
                shape[d] = index.shape[d]
                out.append(xp.arange(index.shape[d], dtype=_np.int64).reshape(shape))
        return tuple(out)

    def _along_dim(self, x: Array, dim: int, index: Array) -> tuple[Array, Array, tuple[Array, ...]]:
        """(x, index, the advanced index of ``x`` that ``index`` addresses along ``dim``); a 0-d ``x`` or
        ``index`` reads as one element along dim 0."""
        if x.ndim == 0:
            x = x.reshape(1)
        if index.ndim == 0:
            index = index.reshape(1)
        return x, index, self.along_dim_index(index, dim)

    def gather(self, x: Array, dim: int, index: Array) -> Array:
        shape = index.shape
        x, _, where = self._along_dim(x, dim, index)
        return x[where].reshape(shape)

    def _combine_at(self, op: AtUfunc, a: Array, index: Any, values: Operand) -> None:
        """a[index] = op(a[index], values) with every repeated index applied."""
        if op == "add":
            self.add_at(a, index, values)
        else:
            self.reduce_at(op, a, index, values)

    def scatter_into(self, out: Array, dim: int, index: Array, src: Operand,
                     reduce: ScatterMode | None = None) -> None:
        """out[... index ...] = src (or op= for ``reduce`` in 'add', 'multiply'), in place."""
        out, index, where = self._along_dim(out, dim, index)
        src = _cropped(src, index)
        if reduce is None:
            out[where] = src
        else:
            self._combine_at(reduce, out, where, src)

    def scatter_reduce_into(self, out: Array, dim: int, index: Array, src: Array, reduce: ScatterReduce,
                            include_self: bool) -> None:
        """In place: each ``src`` element combined into ``out`` at ``index`` along ``dim`` with ``reduce``
        (sum, prod, mean, amax, amin); without ``include_self`` the targeted elements start from the
        reduction's identity instead of their own value."""
        xp = self.xp
        out, index, where = self._along_dim(out, dim, index)
        src = _cropped(src, index)
        if not include_self:
            out[where] = self._reduce_identity(reduce, out.dtype)
        self._combine_at(SCATTER_REDUCE_UFUNC[reduce], out, where, src)
        if reduce == "mean":
            count = xp.full(out.shape, 1 if include_self else 0, dtype=_np.int64)
            self.add_at(count, where, xp.ones(index.shape, dtype=_np.int64))
            count = xp.maximum(count, 1)
            if out.dtype.kind == "f" or out.dtype.kind == "V":
                out[...] = out / count.astype(out.dtype)
            else:
                out[...] = xp.floor_divide(out, count)

    def _reduce_identity(self, reduce: ScatterReduce, dt: NpDtype) -> Scalar:
        if reduce in ("sum", "mean"):
            return 0
        if reduce == "prod":
            return 1
        if dt == _np.bool_:
            return reduce == "amin"
        if dt.kind in "iu":
            info = _np.iinfo(dt)
            return info.min if reduce == "amax" else info.max
        return -_np.inf if reduce == "amax" else _np.inf

    def scatter_mask(self, shape: Shape, dim: int, index: Array) -> Array:
        """A bool array of ``shape``, True where ``index`` along ``dim`` points."""
        m = self.xp.zeros(shape, dtype=bool)
        self.scatter_into(m, dim, index, True)
        return m

    def take(self, x: Array, index: Array) -> Array:
        return self.xp.take(x.reshape(-1), index)

    def index_select(self, x: Array, dim: int, index: Array) -> Array:
        if x.ndim == 0:
            return self.xp.take(x.reshape(1), index.reshape(-1)).reshape(())
        return self.xp.take(x, index, axis=dim)

    # ---------------------------------------------------------------- sorting
    def stable_argsort(self, x: Array, axis: int = -1) -> Array:
        # CuPy's sorts are always stable and accept no ``kind`` but None
        return self.xp.argsort(x, axis=axis, kind="stable" if self.xp is _np else None)

    def argsort(self, x: Array, axis: int, descending: bool = False) -> Array:
        """Stable argsort; descending keeps equal elements in their original order and puts NaN first
        (NaN sorts as the largest value, as in PyTorch)."""
        xp = self.xp
        if not descending:
            return self.stable_argsort(x, axis)
        n = x.shape[axis]
        rev = xp.flip(self.stable_argsort(xp.flip(x, axis), axis), axis)
        return (n - 1) - rev

    def sort(self, x: Array, axis: int, descending: bool = False) -> tuple[Array, Array]:
        if x.ndim == 0:
            return x.copy(), self.xp.zeros((), dtype=_np.int64)
        idx = self.argsort(x, axis, descending)
        return self.xp.take_along_axis(x, idx, axis), idx

    def topk(self, x: Array, k: int, axis: int, largest: bool) -> tuple[Array, Array]:
        xp = self.xp
        if x.ndim == 0:
            return x.copy(), xp.zeros((), dtype=_np.int64)
        n = x.shape[axis]
        if xp is _np and 0 < k < n and x.dtype.kind != "V":
            # partition first: only the k selected elements get sorted (NaN partitions as the largest)
            if largest:
                part = _np.take(_np.argpartition(x, n - k, axis=axis), _np.arange(n - k, n), axis=axis)
            else:
                part = _np.take(_np.argpartition(x, k - 1, axis=axis), _np.arange(k), axis=axis)
            order = self.argsort(_np.take_along_axis(x, part, axis), axis, descending=largest)
            idx = _np.take_along_axis(part, order, axis)
            return _np.take_along_axis(x, idx, axis), idx
        idx = self.argsort(x, axis, descending=largest)
        idx = self.xp.take(idx, self.xp.arange(k), axis=axis)
        return self.xp.take_along_axis(x, idx, axis), idx

    def kth_smallest(self, x: Array, k: int, axis: int, nan_first: bool = False) -> tuple[Array, Array]:
        """Values and indices of the k-th smallest element (0-based) along ``axis`` (kept as size 1).
        ``nan_first``: a slice holding NaN yields its first NaN instead (median's rule)."""
        xp = self.xp
        order = self.stable_argsort(x, axis)
        pos = xp.full(x.shape[:axis] + (1,) + x.shape[axis + 1:], k, dtype=_np.int64)
        if nan_first and x.dtype.kind == "f":
            nans = xp.isnan(x).sum(axis=axis, keepdims=True)
            # NaN sorts last, so the first NaN sits right after the numbers
            pos = xp.where(nans > 0, x.shape[axis] - nans, pos)
        idx = xp.take_along_axis(order, pos, axis)
        return xp.take_along_axis(x, idx, axis), idx

    # ---------------------------------------------------------------- binning
    def searchsorted(self, boundaries: Array, values: Array, right: bool, sorter: Array | None) -> Array:
        """For each value, where it would be inserted into its row of the ascending ``boundaries`` (1-D, or
        rows matching ``values``' leading dims; ``sorter`` sorts each row): before equal elements, or after them
        when ``right``. One vectorised binary search over every value at once, with PyTorch's comparisons
        (``!(b >= v)`` / ``!(b > v)``), so NaN sorts after every number."""
        xp = self.xp
        n = boundaries.shape[-1]
        if n == 0 or values.size == 0:
            return xp.zeros(values.shape, dtype=_np.int64)
        rows = boundaries.reshape(-1, n)
        vals = values.reshape(rows.shape[0], -1)
        order = None if sorter is None else sorter.reshape(rows.shape)
        lo = xp.zeros(vals.shape, dtype=_np.int64)
        hi = xp.full(vals.shape, n, dtype=_np.int64)
        for _ in range(n.bit_length() + 1):
            active = lo < hi
            mid = (lo + hi) // 2
            at = xp.minimum(mid, n - 1)
            if order is not None:
                at = xp.take_along_axis(order, at, axis=1)
            b = xp.take_along_axis(rows, at, axis=1)
            after = ~(b > vals) if right else ~(b >= vals)
            lo = xp.where(active & after, mid + 1, lo)
            hi = xp.where(active & ~after, mid, hi)
        return lo.reshape(values.shape)

    def bin_counts(self, index: Array, bins: int, weight: Array | None, np_dtype: NpDtype) -> Array:
        """How many entries of ``index`` (or how much of their ``weight``) fall in each of ``bins`` bins, as
        ``np_dtype``; negative entries count nowhere."""
        xp = self.xp
        keep = index >= 0
        w = None if weight is None else weight[keep].astype(_np.float64)
        counts = xp.bincount(index[keep], weights=w, minlength=bins)[:bins]
        return counts.astype(np_dtype)

    def isnan_mask(self, x: Array) -> Array:
        return self.xp.isnan(x) if x.dtype.kind == "f" else self.xp.zeros(x.shape, dtype=bool)

    # ---------------------------------------------------------------- unique / one_hot
    def unique(self, x: Array, return_inverse: bool, return_counts: bool) -> Unique:
        """Sorted distinct values of a flat array; NaNs stay distinct, as in PyTorch."""
        xp = self.xp
        flat = x.reshape(-1)
        order = self.stable_argsort(flat)
        s = flat[order]
        new = xp.ones(s.shape, dtype=bool)
        if s.size:
            new[1:] = s[1:] != s[:-1]
        values = s[new]
        inverse = counts = None
        if return_inverse:
            group = xp.cumsum(new) - 1
            inverse = xp.empty(flat.shape, dtype=_np.int64)
            inverse[order] = group
            inverse = inverse.reshape(x.shape)
        if return_counts:
            counts = self._run_lengths(new)
        return values, inverse, counts

    def unique_dim(self, x: Array, dim: int, return_inverse: bool, return_counts: bool) -> Unique:
        """Distinct slices along ``dim``, ordered lexicographically."""
        xp = self.xp
        moved = xp.moveaxis(x, dim, 0)
        n = moved.shape[0]
        rows = moved.reshape(n, -1)
        order = xp.arange(n, dtype=_np.int64)
        # least-significant column first: a stable sort per column leaves the rows in lexicographic order
        for c in range(rows.shape[1] - 1, -1, -1):
            order = order[self.stable_argsort(rows[order, c])]
        s = rows[order]
        new = xp.ones((n,), dtype=bool)
        if n > 1:
            new[1:] = (s[1:] != s[:-1]).any(axis=1)
        values = xp.moveaxis(moved[order[new]], 0, dim)
        inverse = counts = None
        if return_inverse:
            inverse = xp.empty((n,), dtype=_np.int64)
            inverse[order] = xp.cumsum(new) - 1
        if return_counts:
            counts = self._run_lengths(new)
        return values, inverse, counts

    def unique_consecutive(self, x: Array, dim: int | None, return_inverse: bool,
                           return_counts: bool) -> Unique:
        """Runs of equal consecutive elements (``dim`` None, read flat) or slices along ``dim``."""
        xp = self.xp
        if dim is None:
            rows = x.reshape(-1, 1)
        else:
            moved = xp.moveaxis(x, dim, 0)
            rows = moved.reshape(moved.shape[0], -1)
        n = rows.shape[0]
        new = xp.ones((n,), dtype=bool)
        if n > 1:
            new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        values = x.reshape(-1)[new] if dim is None else xp.moveaxis(moved[new], 0, dim)
        inverse = counts = None
        if return_inverse:
            inverse = (xp.cumsum(new) - 1).astype(_np.int64)
            if dim is None:
                inverse = inverse.reshape(x.shape)
        if return_counts:
            counts = self._run_lengths(new)
        return values, inverse, counts

    def _run_lengths(self, first: Array) -> Array:
        """The lengths (int64) of the runs that begin where the bool array ``first`` is True (``first[0]`` is)."""
        xp = self.xp
        starts = xp.nonzero(first)[0]
        return xp.diff(xp.concatenate([starts, xp.asarray([first.size])])).astype(_np.int64)

    def one_hot(self, x: Array, num_classes: int) -> Array:
        xp = self.xp
        out = xp.zeros(x.shape + (num_classes,), dtype=_np.int64)
        if x.size:
            self.scatter_into(out, x.ndim, x[..., None], 1)
        return out


def _cropped(src: Operand, index: Array) -> Operand:
    """An array ``src`` cut to ``index``'s extent (a scatter reads only that corner of it; 0-d reads as one
    element); a Python number as it is."""
    if getattr(src, "ndim", 1) == 0:
        src = src.reshape(1)
    if hasattr(src, "ndim") and src.ndim:
        src = src[tuple(slice(0, n) for n in index.shape)]
    return src


# rows at least this long, _ADD_ROWS_MIN_ELEMENTS elements in all, take _add_rows when no row repeats more than
# _ADD_ROWS_MAX_REPEAT times: below the first two the sort's fixed 20 us cost more than ufunc.at's 8 ns per
# element saves, past the third the rounds add up
_ADD_ROWS_MIN = 16
_ADD_ROWS_MIN_ELEMENTS = 4096
_ADD_ROWS_MAX_REPEAT = 8


def _add_rows(a: Array, index: Any, values: Any) -> bool:
    """``a[idx] += values`` for one 1-D in-range index over the first dim of a C-contiguous ``a`` of rows of
    ``_ADD_ROWS_MIN`` elements or more and ``values`` of ``a[idx]``'s shape (an embedding's weight gradient), in
    rounds: round r adds every row's r-th occurrence, a fancy-index add whose rows are all distinct. ufunc.at
    visits every element on its own (0.53 ms for 512 rows of 128 floats against about 0.08 ms here); each row
    receives its contributions in the order they come, as with ufunc.at, so the bits are the same. False, with
    nothing done, for any other case."""
    if not isinstance(index, tuple):
        index = (index,)
    if len(index) != 1 or a.ndim < 2 or not a.flags.c_contiguous:
        return False
    ix = index[0]
    if not isinstance(ix, _np.ndarray) or ix.ndim != 1 or ix.dtype.kind not in "iu" or ix.size < 2:
        return False
    inner = math.prod(a.shape[1:])
    if inner < _ADD_ROWS_MIN or ix.size * inner < _ADD_ROWS_MIN_ELEMENTS or not isinstance(values, _np.ndarray) \
            or values.dtype != a.dtype or values.shape != (ix.size,) + a.shape[1:]:
        return False
    if ix.min() < 0 or ix.max() >= a.shape[0]:
        return False  # negative or out of range: ufunc.at wraps or reports it
    order = _np.argsort(ix, kind="stable")
    keys = ix[order]
    first = _np.empty(ix.size, bool)
    first[0] = True
    _np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = _np.flatnonzero(first)
    # each position's rank among the occurrences of its row (0 for the first), in sorted order
    rank = _np.arange(ix.size) - _np.repeat(starts, _np.diff(_np.append(starts, ix.size)))
    repeats = int(rank.max()) + 1
    if repeats > _ADD_ROWS_MAX_REPEAT:
        return False
    rows, flat = values.reshape(ix.size, inner), a.reshape(a.shape[0], inner)
    for r in range(repeats):
        sel = order[rank == r] if repeats > 1 else order
        flat[ix[sel]] += rows[sel]
    return True


def _flat_positions(a: Array, index: Any) -> Array | None:
    """The flat positions in a C-contiguous ``a`` that ``a[index]`` addresses, shaped like ``a[index]``,
    when ``index`` is a tuple of in-range integer arrays over the leading dims of ``a`` (the trailing dims
    taken whole); otherwise None."""
    if not isinstance(index, tuple):
        index = (index,)
    k = len(index)
    if k == 0 or k > a.ndim or not a.flags.c_contiguous or 0 in a.shape:
        return None
    for ix in index:
        if not isinstance(ix, _np.ndarray) or ix.dtype.kind not in "iu":
            return None
    inner = math.prod(a.shape[k:])
    stride = inner
    pos: Array = None
    for d in range(k - 1, -1, -1):
        ix = index[d]
        n = a.shape[d]
        if ix.size and (ix.min() < 0 or ix.max() >= n):
            return None  # negative or out of range: ufunc.at wraps or reports it
        term = ix.astype(_np.intp, copy=False)
        if stride != 1:
            term = term * stride
        pos = term if pos is None else pos + term
        stride *= n
    if k < a.ndim:
        rest = a.shape[k:]
        pos = pos.reshape(pos.shape + (1,) * len(rest)) + _np.arange(inner).reshape(rest)
    return pos
