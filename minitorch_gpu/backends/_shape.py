"""Shape primitives: the views behind reshape, transpose, slicing, expand and as_strided, and the copying shape
ops (cat, flip, roll, tril/triu, repeat) with PyTorch's result layouts. Those named ``*_view`` must return a view
of their input (never a copy): ``ops/shape.py`` relies on it for PyTorch's aliasing rules.

Strides passed to or returned by these primitives are in elements, as PyTorch counts them; the
conversion to the array library's byte strides happens here and nowhere else.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ._types import Array, NpDtype, PrimitiveHost, Scalar, Shape


_CONTIGUOUS_STRIDES: dict[tuple[Shape, int], Shape] = {}
_CONTIGUOUS_STRIDES_MAX = 4096


def _contiguous_strides(shape: Shape, item: int) -> Shape:
    """Byte strides of a C-contiguous array of ``shape`` (PyTorch's convention for size-1 dims).

    NOTE: every view and reshape asks this twice, for the shapes a model repeats every step: remembered."""
    key = (shape, item)
    r = _CONTIGUOUS_STRIDES.get(key)
    if r is None:
        out: list[int] = []
        acc = item
        for n in reversed(shape):
            out.append(acc)
            acc *= n if n else 1
        r = tuple(reversed(out))
        if len(_CONTIGUOUS_STRIDES) >= _CONTIGUOUS_STRIDES_MAX:
            _CONTIGUOUS_STRIDES.clear()
        _CONTIGUOUS_STRIDES[key] = r
    return r


def view_strides(old_shape: Sequence[int], old_strides: Sequence[int],
                 new_shape: Sequence[int]) -> Shape | None:
    """The element strides PyTorch gives ``view(new_shape)`` of a tensor with ``old_shape`` and
    ``old_strides``, or None when no view exists. Dims are grouped into runs that are contiguous
    with each other; each run must be split exactly by consecutive new dims."""
    n_new = len(new_shape)
    if not old_shape:
        return (1,) * n_new
    if math.prod(old_shape) == 0:
        if tuple(old_shape) == tuple(new_shape):
            return tuple(old_strides)
        out = [1] * n_new
        for d in range(n_new - 2, -1, -1):
            out[d] = max(new_shape[d + 1], 1) * out[d + 1]
        return tuple(out)
    out = [0] * n_new
    nd = n_new - 1
    base = old_strides[-1]
    run_numel = 1
    view_numel = 1
    for od in range(len(old_shape) - 1, -1, -1):
        run_numel *= old_shape[od]
        # the run ends here unless the next-outer dim continues it in memory (size-1 dims always do)
        if od == 0 or (old_shape[od - 1] != 1 and old_strides[od - 1] != run_numel * base):
            while nd >= 0 and (view_numel < run_numel or new_shape[nd] == 1):
                out[nd] = view_numel * base
                view_numel *= new_shape[nd]
                nd -= 1
            if view_numel != run_numel:
                return None
            if od > 0:
                base = old_strides[od - 1]
                run_numel = 1
                view_numel = 1
    if nd != -1:
        return None
    return tuple(out)


# a copy whose innermost dims hold at most this many elements is done one trailing position at a time
_SHORT_TAIL = 16
# ... when each of those slices has at least this many elements (else the per-slice call costs more)
_SHORT_TAIL_MIN_SLICE = 4096
# ... and NumPy's inner loop would cover fewer elements than this
_SHORT_TAIL_RUN = 8


def _short_tail(shape: Shape, strides: Shape) -> int:
    """How many trailing dims of an array to copy position by position: the most whose product is at most
    ``_SHORT_TAIL``; 0 when NumPy's own copy is fine (its inner loop, the trailing dims that follow each
    other in memory, covers at least ``_SHORT_TAIL_RUN`` elements), no tail fits, or the slices are small."""
    nd = len(shape)
    run, d = 1, nd - 1
    while d >= 0 and (d == nd - 1 or strides[d] == strides[d + 1] * shape[d + 1]):
        run *= shape[d]
        d -= 1
    if run >= _SHORT_TAIL_RUN:
        return 0
    m, tail = 0, 1
    for n in reversed(shape):
        if tail * n > _SHORT_TAIL:
            break
        tail *= n
        m += 1
    if m == 0 or m == nd or tail < 2:
        return 0
    return m if math.prod(shape) // tail >= _SHORT_TAIL_MIN_SLICE else 0


def _resolve_shape(shape: int | Sequence[int], size: int) -> Shape:
    """``shape`` (an int or a sequence) as a tuple with a -1 entry worked out from ``size``."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if -1 in dims:
        known = math.prod(n for n in dims if n != -1)
        dims = tuple(size // known if n == -1 and known else n for n in dims)
    return dims


class ShapeMixin(PrimitiveHost):
    # ------------------------------------------------------------------ views
    def reshape(self, x: Array, shape: int | Sequence[int]) -> Array:
        """``x`` with a new shape: a view when one exists, else a C-order copy."""
        if self.xp is np and not x.flags.c_contiguous:
            m = _short_tail(x.shape, x.strides)
            # (no ``v.shape = shape`` probe: NumPy makes the copy before refusing it)
            if m and view_strides(x.shape, self.strides(x), _resolve_shape(shape, x.size)) is None:
                return self._copy_short_tail(x, m).reshape(shape)
        # the method, not xp.reshape: NumPy's function wrapper costs as much as the reshape itself
        return x.reshape(shape)

    def _copy_short_tail(self, x: Array, m: int) -> Array:
        """A C-contiguous copy of ``x``, one position of its ``m`` trailing dims at a time.

        NOTE: NumPy copies with the last dim as its inner loop; when that dim is tiny and strided (windows of
        a pooling or convolution seen through ``as_strided``: 2x2 or 3x3), the per-loop overhead dominates
        and a whole-array copy runs ~4x slower than these few copies of large, regularly strided slices."""
        out = np.empty(x.shape, dtype=x.dtype)
        lead = (Ellipsis,)
        for pos in np.ndindex(*x.shape[-m:]):
            out[lead + pos] = x[lead + pos]
        return out

    def reshape_view(self, x: Array, shape: Sequence[int]) -> Array | None:
        """A view with a new shape and PyTorch's strides, or None when PyTorch would need a copy."""
        shape = tuple(shape)
        item = x.itemsize
        if x.strides == _contiguous_strides(x.shape, item):
            # the common case: contiguous in, contiguous out, and NumPy agrees with PyTorch
            v = x.view()
            v.shape = shape
            if v.strides == _contiguous_strides(shape, item):
                return v
        strides = view_strides(x.shape, self.strides(x), shape)
        if strides is None:
            return None
        return self._with_strides(x, shape, strides)

    def _with_strides(self, x: Array, shape: Shape, strides: Shape) -> Array:
        """A view of ``x`` (same first element) with ``shape`` and element ``strides``."""
        v = x.view()
        try:
            v.shape = shape
        except (AttributeError, ValueError):
            return self.as_strided_view(x, shape, strides)
        item = x.itemsize
        # NumPy picks its own strides for size-1 and empty dims; PyTorch's are kept when they differ
        if v.strides != tuple(s * item for s in strides):
            return self.as_strided_view(x, shape, strides)
        return v

    def dtype_view(self, x: Array, dtype: NpDtype) -> Array:
        """``x``'s memory read as ``dtype``. With another item size the last dim, which the caller has checked
        is contiguous, grows or shrinks by the ratio of the sizes; the other strides stay the same in bytes."""
        return x.view(dtype)

    def transpose_view(self, x: Array, axes: Sequence[int]) -> Array:
        return x.transpose(axes)

    def swapaxes_view(self, x: Array, a: int, b: int) -> Array:
        # a 0-d tensor has the one dim 0 (or -1) to PyTorch and none to NumPy
        return x.swapaxes(a, b) if x.ndim else x.view()

    def broadcast_to(self, x: Array, shape: Shape) -> Array:
        return self.xp.broadcast_to(x, shape)

    def expand_view(self, x: Array, shape: Shape, strides: Shape) -> Array:
        """A broadcast view with PyTorch's element ``strides``. When elements repeat (a stride-0 dim of
        size > 1) NumPy marks it read-only, so an in-place write through it is refused."""
        if shape == x.shape:
            return x.view()
        v = self.as_strided_view(x, shape, strides)
        if any(s == 0 and n > 1 for s, n in zip(strides, shape)):
            try:
                v.flags.writeable = False
            except AttributeError:
                pass  # CuPy arrays have no such flag; copy_into checks for repeated elements itself
        return v

    def squeeze_view(self, x: Array, axes: tuple[int, ...]) -> Array:
        """Drop the size-1 dims ``axes`` (a tuple)."""
        if not axes:
            return x.view()
        return x.squeeze(axis=axes)

    def unsqueeze_view(self, x: Array, axis: int) -> Array:
        # PyTorch gives the new dim the stride size * stride of the dim it lands before (1 at the end)
        st = x.strides
        new = x.shape[axis] * st[axis] if axis < x.ndim else x.itemsize
        strides = st[:axis] + (new,) + st[axis:]
        shape = x.shape[:axis] + (1,) + x.shape[axis:]
        v = x.view()
        v.shape = shape
        if v.strides == strides:
            return v
        item = x.itemsize
        return self.as_strided_view(x, shape, tuple(s // item for s in strides))

    def slice_view(self, x: Array, dim: int, start: int | None, stop: int | None, step: int = 1) -> Array:
        """``x[..., start:stop:step, ...]`` along ``dim``."""
        return x[(slice(None),) * dim + (slice(start, stop, step),)]

    def select_view(self, x: Array, dim: int, index: int) -> Array:
        # the trailing Ellipsis keeps NumPy from returning a scalar (a copy) when the result is 0-d
        return x[(slice(None),) * dim + (index, Ellipsis)]

    def as_strided_view(self, x: Array, shape: Sequence[int], strides: Sequence[int],
                        start: Sequence[int] | None = None) -> Array:
        """A view of ``x``'s memory with ``shape`` and element ``strides``, starting at the element of
        ``x`` indexed by ``start`` (a tuple of non-negative indices; None: the first element)."""
        if start is not None and any(start):
            x = x[tuple(slice(i, None) for i in start)]
        item = x.itemsize
        byte_strides = tuple(s * item for s in strides)
        if self.xp is np and x.flags.c_contiguous:
            # an ndarray over x's buffer costs a fifth of as_strided (which goes through
            # __array_interface__); it keeps x alive as its base and is writable when x is
            try:
                return np.ndarray(tuple(shape), x.dtype, buffer=x, strides=byte_strides)
            except (TypeError, ValueError, BufferError):
                pass
        return self.xp.lib.stride_tricks.as_strided(x, tuple(shape), byte_strides)

    # ------------------------------------------------------------------ copies
    # PyTorch's copying shape ops return C-contiguous tensors whatever the inputs' layout, while NumPy
    # keeps the inputs' memory order; hence the explicit outputs and ascontiguousarray below

    def concatenate(self, arrays: Sequence[Array], axis: int) -> Array:
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        out = self.xp.empty(tuple(shape), arrays[0].dtype)
        return self.xp.concatenate(arrays, axis=axis, out=out)

    def flip(self, x: Array, axes: int | tuple[int, ...]) -> Array:
        # the flipped view has negative strides; PyTorch's flip is a contiguous copy
        if not x.ndim:
            return x.copy()
        return self.xp.ascontiguousarray(self.xp.flip(x, axes))

    def roll(self, x: Array, shifts: int | tuple[int, ...], axes: int | tuple[int, ...] | None) -> Array:
        """``axes`` None rolls the flattened array and restores the shape."""
        return self.xp.ascontiguousarray(self.xp.roll(x, shifts, axes))

    def tri_mask(self, rows: int, cols: int, k: int, fill: Scalar | None = None,
                 np_dtype: NpDtype | None = None) -> Array:
        """A read-only (rows, cols) array that is True on and below diagonal ``k`` and False above (a causal
        attention mask); with ``fill``, of ``np_dtype``: 0 on and below, ``fill`` above (an additive mask).
        Cached per shape: attention asks for the same one in every layer of every step."""
        cache = self.__dict__.setdefault("_tri_masks", {})
        key = (rows, cols, k, fill, None if np_dtype is None else np.dtype(np_dtype).str)
        m = cache.get(key)
        if m is None:
            xp = self.xp
            m = xp.tri(rows, cols, k, dtype=bool)
            if fill is not None:
                m = xp.where(m, xp.zeros((), np_dtype), xp.asarray(fill, dtype=np_dtype))
            if xp is np:
                m.flags.writeable = False
            if len(cache) >= 64:
                cache.clear()
            cache[key] = m
        return m

    def tril(self, x: Array, k: int) -> Array:
        """Keep elements on and below diagonal ``k`` of the last two dims, zero the rest."""
        xp = self.xp
        mask = xp.tri(x.shape[-2], x.shape[-1], k, dtype=bool)
        return xp.ascontiguousarray(xp.where(mask, x, xp.zeros((), x.dtype)))

    def triu(self, x: Array, k: int) -> Array:
        xp = self.xp
        mask = xp.tri(x.shape[-2], x.shape[-1], k - 1, dtype=bool)
        return xp.ascontiguousarray(xp.where(mask, xp.zeros((), x.dtype), x))

    def tile(self, x: Array, reps: Sequence[int]) -> Array:
        return self.xp.ascontiguousarray(self.xp.tile(x, reps))

    def repeat(self, x: Array, repeats: int | Sequence[int], axis: int | None) -> Array:
        """Each element of ``x`` along ``axis`` repeated ``repeats`` times (an int or a host list);
        ``axis`` None works on the flattened array."""
        return self.xp.ascontiguousarray(self.xp.repeat(x, repeats, axis=axis))

    def repeat_index(self, counts: Sequence[int], np_dtype: NpDtype) -> Array:
        """``0 .. len(counts)-1``, each ``i`` repeated ``counts[i]`` times (a host tuple)."""
        xp = self.xp
        return xp.repeat(xp.arange(len(counts), dtype=np_dtype), counts)

    def segment_sum(self, x: Array, counts: Sequence[int], axis: int) -> Array:
        """Sums of consecutive runs of ``counts[i]`` elements along ``axis`` (the adjoint of ``repeat``);
        ``counts`` is a host tuple whose total is ``x.shape[axis]``."""
        xp = self.xp
        starts, nonzero, pos = [], [], 0
        for i, c in enumerate(counts):
            if c:
                starts.append(pos)
                nonzero.append(i)
            pos += c
        shape = x.shape[:axis] + (len(counts),) + x.shape[axis + 1:]
        if not starts:
            return xp.zeros(shape, x.dtype)
        # reduceat only sees the non-empty runs: on an empty run it would return an element, not 0
        sums = xp.add.reduceat(x, xp.asarray(starts), axis=axis)
        if len(starts) == len(counts):
            return xp.ascontiguousarray(sums)
        out = xp.zeros(shape, x.dtype)
        out[(slice(None),) * axis + (xp.asarray(nonzero),)] = sums
        return out

    def embed(self, region_fn: Callable[[Array], Array], shape: Shape, src: Array) -> Array:
        """Zeros of ``shape`` with ``src`` written into the view ``region_fn(zeros)`` (the adjoint of
        taking that view, when the view does not overlap itself)."""
        out = self.xp.zeros(shape, src.dtype)
        self.xp.copyto(region_fn(out), src)
        return out

    def unfold_backward(self, g: Array, shape: Shape, dim: int, size: int, step: int) -> Array:
        """The adjoint of unfold: windows that overlap add up."""
        xp = self.xp
        out = xp.zeros(shape, g.dtype)
        if len(shape) == 0:
            if size:
                out[...] = g[0]
            return out
        n = g.shape[dim]
        lead = (slice(None),) * dim
        for i in range(size):
            region = out[lead + (slice(i, i + step * (n - 1) + 1, step),)]
            xp.add(region, g[..., i], out=region)
        return out
