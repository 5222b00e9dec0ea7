"""Random primitives: a counter-based Philox4x32-10 stream and the distributions drawn from it.

Why Philox: block ``i`` of the stream is a pure function of (key, counter + i), so any thread can compute
any block in any order. Here the blocks come from vectorised array code (NumPy, or CuPy through ``xp``);
a CUDA kernel computing the same function per thread reproduces the integers and uniforms bit for bit,
which is what lets one seed give the same tensors on the CPU and on a GPU.

The stream. key = the generator's 64-bit seed (low 32 bits are key word 0); counter = a 128-bit block
number (low 32 bits are counter word 0). A draw starts at the generator's offset (in blocks) and uses
whole blocks; block ``b`` gives words ``4b .. 4b+3`` in the order Philox returns them. An output element
that needs ``k`` words takes the next ``k``; a 64-bit value is two words, low word first.

Conversions, every one exact so a port can match them:
  uniform with ``d`` mantissa digits (24 float32, 11 float16, 8 bfloat16): ``(word >> (32 - d)) * 2**-d``;
    float64: ``(u64 >> 11) * 2**-53``.
  normal: Box-Muller in float64 on pairs (u1 in (0, 1], u2 in [0, 1)), element 2j = r cos t and 2j+1 =
    r sin t, rounded once to the dtype. float64 takes its u's from 64-bit values (53 bits), the other dtypes
    from single words (32 bits). log/cos/sin may differ in the last float64 bit between libm and CUDA; after
    rounding to float32 that practically never shows.
  integers in [low, high): ``low + bits % (high - low)`` with one word when the span fits in 32 bits, else
    a 64-bit value.
  other distributions take float64 uniforms from one word (``word * 2**-32``) or, for float64 results,
    from a 64-bit value.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import TypeAlias

import numpy as np

from ._types import Array, NpDtype, PrimitiveHost, Shape, writable

Drawn: TypeAlias = tuple[Array, int]
"""What a draw returns: (the array, how many Philox blocks it used); the caller advances its generator by those."""
Index: TypeAlias = "tuple[int | slice, ...]"
"""Where a piece of a draw lies in the result: integers for the leading axes, then one slice."""
Piece: TypeAlias = "Callable[[int, int, Index], Array]"
"""``piece(first, n, index)``: the values of flat elements ``first .. first + n - 1`` (``result[index]``)."""

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9  # golden ratio
PHILOX_W1 = 0xBB67AE85  # sqrt(3) - 1
_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
# below this many blocks plain Python integers beat a dozen array calls per round
_SMALL_BLOCKS = 3
_CHUNK_BLOCKS = 1 << 14
# elements per piece of a draw: a piece's float64 temporaries (about ten arrays) stay within a core's L2 cache,
# which also spares the page faults of fresh full-size arrays; a GPU wants far fewer, larger launches
_CHUNK_ELEMENTS = 1 << 16
_DEVICE_CHUNK_ELEMENTS = 1 << 24
OVERLAP_ERROR = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")
# array operands are NumPy scalars of the array's type so that NumPy and CuPy (whatever its rules for
# Python scalars) keep every step in uint64
_M32 = np.uint64(_MASK32)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_MULT = np.array([[PHILOX_M0], [PHILOX_M1]], dtype=np.uint64)

_DIGITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
_DIGITS_BY_DTYPE: dict[NpDtype, int] = {}


def _digits(np_dtype: NpDtype) -> int:
    """Mantissa digits (with the implicit bit) of a float dtype; cached because ``dtype.name`` is slow."""
    d = _DIGITS_BY_DTYPE.get(np_dtype)
    if d is None:
        d = _DIGITS_BY_DTYPE[np_dtype] = _DIGITS[np_dtype.name]
    return d


def philox4x32_10_scalar(counter: int, key: int) -> tuple[int, int, int, int]:
    """One Philox4x32-10 block with Python integers: counter a 128-bit int, key a 64-bit int; returns four
    32-bit words. The reference the array version is checked against."""
    c0 = counter & _MASK32
    c1 = (counter >> 32) & _MASK32
    c2 = (counter >> 64) & _MASK32
    c3 = (counter >> 96) & _MASK32
    k0 = key & _MASK32
    k1 = (key >> 32) & _MASK32
    for r in range(10):
        if r:
            k0 = (k0 + PHILOX_W0) & _MASK32
            k1 = (k1 + PHILOX_W1) & _MASK32
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK32
    return c0, c1, c2, c3


_ROUND_KEYS: dict[int, Array] = {}


def _round_keys(key: int) -> Array:
    """The ten round keys of ``key`` as a (10, 2, 1) uint64 array (cached: a generator keeps its key)."""
    ks = _ROUND_KEYS.get(key)
    if ks is None:
        k0 = key & _MASK32
        k1 = (key >> 32) & _MASK32
        rows = []
        for _ in range(10):
            rows.append([[k0], [k1]])
            k0 = (k0 + PHILOX_W0) & _MASK32
            k1 = (k1 + PHILOX_W1) & _MASK32
        ks = np.array(rows, dtype=np.uint64)
        if len(_ROUND_KEYS) > 64:
            _ROUND_KEYS.clear()
        _ROUND_KEYS[key] = ks
    return ks


def _pieces(shape: Shape, chunk: int) -> Iterator[tuple[Index, int, int]]:
    """Split a C-order array of ``shape`` into runs of consecutive elements of at most ``chunk`` elements
    (a single element when ``chunk`` is smaller than that): yields (index, first flat element, count)."""
    n = math.prod(shape)
    if n == 0:
        return
    if not shape:
        yield (), 0, 1
        return
    # the outermost axis k whose trailing block fits in a chunk: a piece is a slice along k under fixed
    # leading indices
    inner = 1
    k = len(shape) - 1
    while k > 0 and inner * shape[k] <= chunk:
        inner *= shape[k]
        k -= 1
    step = max(1, chunk // inner)
    row = shape[k] * inner
    for lead_no, lead in enumerate(itertools.product(*(range(d) for d in shape[:k]))):
        for a in range(0, shape[k], step):
            b = min(a + step, shape[k])
            yield (*lead, slice(a, b)), lead_no * row + a * inner, (b - a) * inner


def _piece_shape(shape: Shape, index: Index) -> Shape:
    """The shape of ``result[index]`` for an index from ``_pieces``."""
    k = len(index) - 1
    if k < 0:
        return ()
    s = index[k]
    assert isinstance(s, slice)
    return (s.stop - s.start, *shape[k + 1:])


def refuse_device_state(rng_state: Array | None, what: str) -> None:
    """A draw that was handed a CUDA graph's device copy of its generator state (``rng_state``) but computes with
    the host's seed and offset (the array-library bodies): a replay would repeat the capture's numbers, so it
    raises instead. Only the Philox kernels read the state from device memory."""
    if rng_state is not None:
        raise RuntimeError(f"{what} cannot be captured in a CUDA graph here: only our kernels read the generator's "
                           "seed and offset from device memory, and they do not take this call (its dtype or "
                           "layout, or MINITORCH_GPU_KERNELS=0); draw the numbers outside the graph")


def dropout_threshold(p: float) -> int:
    """The integer ``t`` with ``word < t`` exactly when ``word * 2**-32 < 1 - p`` (the float64 comparison of the
    bernoulli draw; scaling by 2**32 is exact, so the bound is the ceiling of ``(1 - p) * 2**32``); at most 2**32."""
    return math.ceil((1.0 - p) * 4294967296.0)


class RandomMixin(PrimitiveHost):
    # ------------------------------------------------------------------ the raw stream
    def philox4x32_10(self, counter: int, key: int, n: int) -> Array:
        """``n`` Philox4x32-10 blocks for counters ``counter .. counter + n - 1`` (128-bit, wrapping) under a
        64-bit ``key``: a uint32 array of shape (n, 4)."""
        xp = self.xp
        counter &= (1 << 128) - 1
        if n <= _SMALL_BLOCKS:
            vals = [philox4x32_10_scalar((counter + i) & ((1 << 128) - 1), key) for i in range(n)]
            return xp.asarray(np.array(vals, dtype=np.uint32).reshape(n, 4))
        out = xp.empty((n, 4), dtype=xp.uint32)
        # chunks small enough for the working set to stay in cache; each is independent (counter-based)
        step = min(n, _CHUNK_BLOCKS)
        for start in range(0, n, step):
            m = min(step, n - start)
            self._philox_chunk(counter + start, key, m, out[start:start + m])
        return out

    def _philox_chunk(self, counter: int, key: int, n: int, out: Array) -> None:
        xp = self.xp
        u64 = xp.uint64
        counter &= (1 << 128) - 1
        lo = counter & _MASK64
        hi = counter >> 64
        c_lo = xp.arange(n, dtype=u64)
        c_lo += u64(lo)  # wraps modulo 2**64
        # the state as two (2, n) arrays so that one array op does a step for both halves of the block:
        # even = (c0, c2), the words that get multiplied; odd = (c1, c3), the words that get xored
        even = xp.empty((2, n), dtype=u64)
        odd_buf = xp.empty((2, n), dtype=u64)
        prod = xp.empty((2, n), dtype=u64)
        high = xp.empty((2, n), dtype=u64)
        xp.bitwise_and(c_lo, _M32, out=even[0])
        xp.right_shift(c_lo, _S32, out=odd_buf[0])
        if hi == 0 and lo + n <= _MASK64 + 1:
            even[1] = 0
            odd_buf[1] = 0
        else:
            c_hi = (c_lo < u64(lo)).astype(u64)  # carry out of the low half
            c_hi += u64(hi)
            xp.bitwise_and(c_hi, _M32, out=even[1])
            xp.right_shift(c_hi, _S32, out=odd_buf[1])
        odd = odd_buf
        mult = xp.asarray(_MULT)
        keys = xp.asarray(_round_keys(key))
        for r in range(10):
            xp.multiply(even, mult, out=prod)  # 32 x 32 -> 64 bits, exact in uint64
            xp.right_shift(prod, _S32, out=high)
            prod &= _M32
            # new c0 = hi(M1*c2) ^ c1 ^ k0, new c2 = hi(M0*c0) ^ c3 ^ k1; new c1 = lo(M1*c2), new c3 = lo(M0*c0)
            xp.bitwise_xor(high[::-1], odd, out=even)
            even ^= keys[r]
            # the low products become the odd words; swap buffers instead of copying
            prod, odd_buf = odd_buf, prod
            odd = odd_buf[::-1]
        out[:, 0::2] = even.T
        out[:, 1::2] = odd.T

    def random_words(self, seed: int, offset: int, n: int) -> Drawn:
        """``n`` 32-bit words of the stream of ``seed`` starting at block ``offset``: (uint32 array, blocks
        used)."""
        nb = (n + 3) // 4
        if nb == 0:
            return self.xp.empty(0, dtype=self.xp.uint32), 0
        w = self.philox4x32_10(offset, seed, nb).reshape(-1)
        return (w if 4 * nb == n else w[:n]), nb

    # ------------------------------------------------------------------ pieces of a draw
    # A draw of n elements is computed piece by piece (see ``_sample``): element i of a distribution that takes
    # k words per element reads words k*i .. k*i + k - 1 of the draw, so any run of elements can be computed on
    # its own and the pieces are bit-identical to one whole-array computation.
    def _words_at(self, seed: int, offset: int, first: int, n: int) -> Array:
        """Words ``first .. first + n - 1`` of the stream that starts at block ``offset``."""
        b, skip = divmod(first, 4)
        w, _ = self.random_words(seed, offset + b, n + skip)
        return w[skip:] if skip else w

    def _u64_at(self, seed: int, offset: int, first: int, n: int) -> Array:
        """64-bit values ``first .. first + n - 1``, each from two consecutive words (low word first)."""
        xp = self.xp
        w = self._words_at(seed, offset, 2 * first, 2 * n)
        v = w[1::2].astype(xp.uint64)
        v <<= _S32
        v |= w[0::2]
        return v

    def _unit_f64_at(self, seed: int, offset: int, first: int, n: int, wide: bool) -> Array:
        """Float64 uniforms in [0, 1) for elements ``first ..``: 53 bits from a 64-bit value when ``wide``,
        else 32 bits from a word."""
        xp = self.xp
        if wide:
            v = self._u64_at(seed, offset, first, n)
            v >>= _S11
            return v.astype(xp.float64) * (2.0 ** -53)
        return self._words_at(seed, offset, first, n).astype(xp.float64) * (2.0 ** -32)

    def _normal_f64_at(self, seed: int, offset: int, first: int, n: int, wide: bool) -> Array:
        """Standard normals in float64 by Box-Muller for elements ``first .. first + n - 1`` (see the module
        docstring): pair j (elements 2j, 2j+1) takes uniforms 2j and 2j+1."""
        xp = self.xp
        lead = first & 1  # a piece starting inside a pair computes the whole pair
        first -= lead
        pairs = (n + lead + 1) // 2
        if wide:
            v = self._u64_at(seed, offset, first, 2 * pairs)
            v >>= _S11
            u1 = v[0::2].astype(xp.float64)
            u1 += 1.0
            u1 *= 2.0 ** -53
            u2 = v[1::2].astype(xp.float64) * (2.0 ** -53)
        else:
            w = self._words_at(seed, offset, first, 2 * pairs)
            u1 = w[0::2].astype(xp.float64)
            u1 += 1.0
            u1 *= 2.0 ** -32
            u2 = w[1::2].astype(xp.float64) * (2.0 ** -32)
        r = xp.log(u1)
        r *= -2.0
        xp.sqrt(r, out=r)
        t = u2
        t *= 2.0 * math.pi
        z = xp.empty(2 * pairs, dtype=xp.float64)
        xp.multiply(r, xp.cos(t), out=z[0::2])
        xp.multiply(r, xp.sin(t), out=z[1::2])
        return z[lead:lead + n]

    def _sample(self, shape: Shape, np_dtype: NpDtype, out: Array | None, piece: Piece) -> Array:
        """An array of ``shape`` (``out`` when given, written in place) filled piece by piece:
        ``piece(first, n, index)`` returns the values of flat elements ``first .. first + n - 1``, which are
        ``result[index]`` in C order, shaped like it. Only one piece's temporaries exist at a time, so a draw
        needs little memory beyond its result."""
        xp = self.xp
        if out is None:
            out = self.empty(shape, np_dtype)
        elif not writable(out):
            # refused before drawing, so the generator stays where it was
            raise RuntimeError(OVERLAP_ERROR)
        chunk = _CHUNK_ELEMENTS if xp is np else _DEVICE_CHUNK_ELEMENTS
        for index, first, n in _pieces(shape, chunk):
            out[index] = piece(first, n, index)
        return out

    # ------------------------------------------------------------------ distributions
    # Each returns (array, blocks used); the caller advances its generator's offset by the blocks. Those that
    # take ``out`` write the sample into it (an array of ``shape`` and ``np_dtype``) instead of a new array.
    #
    # ``rng_state`` (rand_uniform, rand_normal, rand_int, rand_dropout): a CUDA graph's device array of the
    # generator's {seed, offset}, which the kernels read instead of the host's pair (``offset`` is then relative to
    # the stored offset); these bodies refuse it (``refuse_device_state``).
    def rand_uniform(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, low: float = 0.0,
                     high: float = 1.0, out: Array | None = None, *, rng_state: Array | None = None) -> Drawn:
        """Uniform floats in [low, high) of ``np_dtype``."""
        refuse_device_state(rng_state, "rand")
        xp = self.xp
        d = _digits(np_dtype)

        def piece(first: int, n: int, index: Index) -> Array:
            if d == 53:
                u = self._unit_f64_at(seed, offset, first, n, True)
            else:
                w = self._words_at(seed, offset, first, n)
                u = (w >> np.uint32(32 - d)).astype(xp.float32) * np.float32(2.0 ** -d)
            if low != 0.0 or high != 1.0:
                u *= high - low
                u += low
            return u.reshape(_piece_shape(shape, index)).astype(np_dtype, copy=False)

        words = math.prod(shape) * (2 if d == 53 else 1)
        return self._sample(shape, np_dtype, out, piece), (words + 3) // 4

    def _normal(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, out: Array | None,
                finish: Callable[[Array, Index], Array]) -> Drawn:
        """Normal samples ``finish(z, index)`` from float64 standard normals ``z`` shaped like the piece."""
        wide = np_dtype.itemsize == 8

        def piece(first: int, n: int, index: Index) -> Array:
            z = self._normal_f64_at(seed, offset, first, n, wide).reshape(_piece_shape(shape, index))
            return finish(z, index).astype(np_dtype, copy=False)

        n = math.prod(shape)
        words = (n + (n & 1)) * (2 if wide else 1)
        return self._sample(shape, np_dtype, out, piece), (words + 3) // 4

    def rand_normal(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, mean: float | Array = 0.0,
                    std: float | Array = 1.0, out: Array | None = None, *, rng_state: Array | None = None) -> Drawn:
        """Normal samples ``mean + std * z``; mean and std are scalars or arrays broadcasting to ``shape``."""
        refuse_device_state(rng_state, "randn")
        xp = self.xp
        unit_std = isinstance(std, (int, float)) and std == 1
        zero_mean = isinstance(mean, (int, float)) and mean == 0
        std_b = std if isinstance(std, (int, float)) else xp.broadcast_to(std, shape)
        mean_b = mean if isinstance(mean, (int, float)) else xp.broadcast_to(mean, shape)

        def finish(z: Array, index: Index) -> Array:
            if not unit_std:
                z = z * (std_b if isinstance(std_b, (int, float)) else std_b[index])
            if not zero_mean:
                z = z + (mean_b if isinstance(mean_b, (int, float)) else mean_b[index])
            return z

        return self._normal(seed, offset, shape, np_dtype, out, finish)

    def rand_log_normal(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, mean: float,
                        std: float, out: Array | None = None) -> Drawn:
        def finish(z: Array, index: Index) -> Array:
            z *= std
            z += mean
            return self.xp.exp(z)

        return self._normal(seed, offset, shape, np_dtype, out, finish)

    def rand_int(self, seed: int, offset: int, shape: Shape, low: int, high: int, np_dtype: NpDtype,
                 out: Array | None = None, *, rng_state: Array | None = None) -> Drawn:
        """Integers uniform in [low, high) (Python ints, any span up to 2**64), as ``np_dtype``."""
        refuse_device_state(rng_state, "randint")
        xp = self.xp
        span = high - low
        narrow = span <= 1 << 32

        def piece(first: int, n: int, index: Index) -> Array:
            if narrow:
                r = self._words_at(seed, offset, first, n).astype(xp.int64)
                if span != 1 << 32:
                    r %= span
                if low:
                    r += low
            else:
                v = self._u64_at(seed, offset, first, n)
                if span <= _MASK64:
                    v %= xp.uint64(span)
                # add in wrapping unsigned arithmetic: low may be negative and low + v may pass 2**63
                v += xp.uint64(low & _MASK64)
                r = v.view(xp.int64)
            return r.reshape(_piece_shape(shape, index)).astype(np_dtype, copy=False)

        words = math.prod(shape) * (1 if narrow else 2)
        return self._sample(shape, np_dtype, out, piece), (words + 3) // 4

    # ------------------------------------------------------------------ a CUDA graph's copy of a generator's state
    def graph_rng_state(self) -> Array:
        """A device array of two uint64 for a CUDA graph's copy of a generator's {seed, offset} (see
        ``refuse_device_state``); allocated before the capture, so that the graph does not own it."""
        return self.xp.zeros(2, dtype=np.uint64)

    def set_graph_rng_state(self, state: Array, seed: int, offset: int) -> None:
        """Write {seed, offset} into ``state`` (queued before a replay on a GPU)."""
        state[...] = self.xp.asarray(np.array([seed & _MASK64, offset & _MASK64], dtype=np.uint64))

    def rand_perm(self, seed: int, offset: int, n: int, np_dtype: NpDtype) -> Drawn:
        """A random permutation of 0..n-1: indices sorted by (random word, index). The index in the low bits
        makes every key distinct, so any sort gives the same permutation."""
        xp = self.xp
        w, nb = self.random_words(seed, offset, n)
        key = w.astype(xp.uint64)
        key <<= _S32
        key |= xp.arange(n, dtype=xp.uint64)
        return xp.argsort(key).astype(np_dtype, copy=False), nb

    def _from_unit(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, wide: bool, out: Array | None,
                   finish: Callable[[Array, Index], Array]) -> Drawn:
        """Samples ``finish(u, index)`` from float64 uniforms ``u`` shaped like the piece."""
        def piece(first: int, n: int, index: Index) -> Array:
            u = self._unit_f64_at(seed, offset, first, n, wide).reshape(_piece_shape(shape, index))
            return finish(u, index).astype(np_dtype, copy=False)

        words = math.prod(shape) * (2 if wide else 1)
        return self._sample(shape, np_dtype, out, piece), (words + 3) // 4

    def rand_bernoulli(self, seed: int, offset: int, shape: Shape, p: float | Array, np_dtype: NpDtype,
                       out: Array | None = None) -> Drawn:
        """1 where a uniform draw is below ``p`` (a scalar or an array broadcasting to ``shape``)."""
        p_b = p if isinstance(p, (int, float)) else self.xp.broadcast_to(p, shape)
        return self._from_unit(seed, offset, shape, np_dtype, False, out,
                               lambda u, index: u < (p_b if isinstance(p_b, (int, float)) else p_b[index]))

    def rand_dropout(self, seed: int, offset: int, x: Array, p: float, residual: Array | None = None, *,
                     rng_state: Array | None = None) -> Drawn:
        """``x * keep / (1 - p)`` (``+ residual``, an array of ``x``'s shape and dtype) for ``0 < p < 1``: element
        ``i`` is kept when word ``i`` of the stream is below ``dropout_threshold(p)``, the same draw as
        ``rand_bernoulli(..., 1 - p, ...)``. Applying it again with the same seed and offset (to a gradient)
        applies the same mask, which is how dropout's backward regenerates its mask instead of storing it."""
        refuse_device_state(rng_state, "dropout")
        xp = self.xp
        dt = x.dtype
        w, nb = self.random_words(seed, offset, x.size)
        t = dropout_threshold(p)
        keep = w < np.uint32(t) if t <= _MASK32 else xp.ones(x.size, dtype=bool)
        # the kept value is x * scale rounded in x's dtype, then the residual added: two roundings, as in
        # x + (x * mask) with the scaled mask of the unfused form
        noise = xp.where(keep, dt.type(1.0 / (1.0 - p)), dt.type(0)).reshape(x.shape)
        y = x * noise
        if residual is not None:
            y = residual + y
        return y, nb

    def rand_exponential(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, lambd: float,
                         out: Array | None = None) -> Drawn:
        def finish(u: Array, index: Index) -> Array:
            x = -self.xp.log1p(-u)
            x /= lambd
            return x

        return self._from_unit(seed, offset, shape, np_dtype, np_dtype.itemsize == 8, out, finish)

    def rand_cauchy(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, median: float,
                    sigma: float, out: Array | None = None) -> Drawn:
        def finish(u: Array, index: Index) -> Array:
            x = self.xp.tan((u - 0.5) * math.pi)
            x *= sigma
            x += median
            return x

        return self._from_unit(seed, offset, shape, np_dtype, np_dtype.itemsize == 8, out, finish)

    def rand_geometric(self, seed: int, offset: int, shape: Shape, np_dtype: NpDtype, p: float,
                       out: Array | None = None) -> Drawn:
        """Number of Bernoulli(p) trials up to the first success (>= 1)."""
        def finish(u: Array, index: Index) -> Array:
            xp = self.xp
            return xp.maximum(xp.ceil(xp.log1p(-u) / math.log1p(-p)), 1.0)

        return self._from_unit(seed, offset, shape, np_dtype, np_dtype.itemsize == 8, out, finish)

    def prob_check(self, p: Array) -> tuple[bool, bool]:
        """(any element negative/inf/nan, any row summing to <= 0) for a 2-d array of probabilities."""
        xp = self.xp
        bad = bool((~xp.isfinite(p) | (p < 0)).any())
        if bad:
            return True, False
        return False, bool((p.sum(axis=-1) <= 0).any())

    def rand_multinomial(self, seed: int, offset: int, probs: Array, num_samples: int, replacement: bool) -> Drawn:
        """Category indices (int64, shape (rows, num_samples)) for rows of non-negative weights.

        With replacement: inverse CDF, one 53-bit uniform per sample. Without: the exponential race (keep
        the ``num_samples`` smallest ``E_k / p_k`` with ``E_k ~ Exp(1)``), one 53-bit uniform per category;
        zero-weight categories come last, in index order."""
        xp = self.xp
        p = probs.astype(xp.float64, copy=False)
        rows, k = p.shape
        if replacement:
            u = self._unit_f64_at(seed, offset, 0, rows * num_samples, True)
            nb = (2 * rows * num_samples + 3) // 4
            cdf = xp.cumsum(p, axis=1)
            cdf /= cdf[:, -1:]
            cdf[:, -1] = 1.0
            # one sorted array for all rows: row r's CDF shifted to [r, r + 1]
            shift = xp.arange(rows, dtype=xp.float64)[:, None]
            flat = (cdf + shift).reshape(-1)
            q = (u.reshape(rows, num_samples) + shift).reshape(-1)
            idx = xp.searchsorted(flat, q, side="right").reshape(rows, num_samples)
            idx -= xp.arange(rows, dtype=idx.dtype)[:, None] * k
            # a draw rounding up past 1 must not land on trailing zero-weight categories
            last = (k - 1) - xp.argmax((p > 0)[:, ::-1], axis=1)
            idx = xp.minimum(idx, last[:, None].astype(idx.dtype))
            return idx.astype(xp.int64, copy=False), nb
        u = self._unit_f64_at(seed, offset, 0, rows * k, True)
        nb = (2 * rows * k + 3) // 4
        e = -xp.log1p(-u).reshape(rows, k)
        pos = p > 0
        keys = xp.where(pos, e / xp.where(pos, p, 1.0), xp.inf)
        order = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples]
        return order.astype(xp.int64, copy=False), nb

    def any_outside(self, x: Array, low: float, high: float) -> bool:
        """Whether any element of ``x`` is below ``low``, above ``high`` or NaN (one host sync)."""
        bad = (x < low) | (x > high)
        if x.dtype.kind == "f":
            bad |= self.xp.isnan(x)
        return bool(bad.any())
