"""Linear-algebra primitives: matmul (with batch broadcasting) and einsum.

``matmul`` is the one entry point every product in ``ops/linalg.py`` goes through (mm, bmm, mv, dot,
addmm, the backward passes), so a backend with its own GEMM kernel overrides this one method. Its
``transpose_a`` / ``transpose_b`` flags ask for the product with the last two dims of an operand
swapped; here that is a strided view, which BLAS (NumPy) and cuBLAS (CuPy) consume without a copy,
and a custom kernel can read them as GEMM's transpose flags.

``einsum`` takes an explicit equation over letters only (no ellipsis, an output after ``->``) whose
operands agree on every letter's size or have size 1 there (broadcast).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ._types import Array, PrimitiveHost, Shape


@functools.lru_cache(maxsize=1024)
def _einsum_is_small(equation: str, shapes: tuple[Shape, ...], limit: int) -> bool:
    """Whether the contraction's multiply-add count (the product of every letter's size) is at most
    ``limit``, or there is a single operand (no product to hand to BLAS)."""
    if len(shapes) == 1:
        return True
    sizes: dict[str, int] = {}
    for s, shape in zip(equation.split("->")[0].split(","), shapes):
        for c, n in zip(s, shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
    return math.prod(sizes.values()) <= limit


class LinalgMixin(PrimitiveHost):
    # below this many multiply-adds the C einsum loop beats the fixed cost of reshaping operands for
    # a BLAS product (a few microseconds of Python)
    _EINSUM_DIRECT_MAX = 1 << 15

    def _upcast_for_product(self, arr: Array) -> Array:
        """Half-precision operands are multiplied in float32 with NumPy: it has no BLAS path for them
        (and no einsum at all for bfloat16), and PyTorch accumulates them in float32 too."""
        if arr.dtype.itemsize == 2 and arr.dtype.kind in "fV" and self.xp is np:
            return arr.astype("float32")
        return arr

    def matmul(self, a: Array, b: Array, transpose_a: bool = False, transpose_b: bool = False,
               bias: Array | None = None) -> Array:
        """``op(a) @ op(b)`` (+ ``bias``, one value per output column) with NumPy/PyTorch semantics for 1-D
        operands and broadcast batch dims; ``op`` swaps the last two dims when the flag is set (only meaningful
        for >=2-D operands). CUDA adds the bias in the GEMM's epilogue; here it is one more pass.
        Always returns an array (a 0-d one for vector @ vector) of the operands' dtype."""
        xp = self.xp
        if transpose_a:
            a = a.swapaxes(-1, -2)
        if transpose_b:
            b = b.swapaxes(-1, -2)
        out_dtype = a.dtype
        if out_dtype.itemsize == 2:
            a = self._upcast_for_product(a)
            b = self._upcast_for_product(b)
        if a.ndim > 2 and b.ndim == 2 and a.flags.c_contiguous:
            # one large GEMM instead of one per batch entry
            r = xp.matmul(a.reshape(-1, a.shape[-1]), b).reshape(a.shape[:-1] + (b.shape[-1],))
        else:
            r = xp.matmul(a, b)
            if r.ndim == 0:
                r = xp.asarray(r)
        if r.dtype != out_dtype:
            r = r.astype(out_dtype)
        if bias is not None:
            r = xp.add(r, bias, out=r) if r.ndim else xp.asarray(r + bias)
        return r

    # ------------------------------------------------------------------ einsum
    def einsum(self, equation: str, *operands: Array) -> Array:
        """Evaluate an explicit letters-only einsum equation (see the module docstring)."""
        xp = self.xp
        out_dtype = operands[0].dtype
        ops: Sequence[Array] = operands
        if out_dtype.itemsize == 2:
            ops = [self._upcast_for_product(x) for x in operands]
        if _einsum_is_small(equation, tuple(x.shape for x in ops), self._EINSUM_DIRECT_MAX):
            r = xp.asarray(xp.einsum(equation, *ops))
            # for one operand NumPy returns views (permutations, diagonals): a result must own its memory
            if len(ops) == 1 and xp.may_share_memory(r, operands[0]):
                r = r.copy()
        else:
            lhs, out = equation.split("->")
            r = self._einsum_pairwise(lhs.split(","), out, ops)
        if r.dtype != out_dtype:
            r = r.astype(out_dtype)
        return r

    def _einsum_reduce_single(self, s: str, x: Array, keep: set[str]) -> tuple[str, Array]:
        """Take the diagonal of repeated letters and sum out letters not in ``keep``: returns
        (letters, array) with each letter once."""
        uniq = "".join(dict.fromkeys(s))
        if len(uniq) != len(s):
            x = self.xp.einsum(f"{s}->{uniq}", x)
            s = uniq
        drop = tuple(i for i, c in enumerate(s) if c not in keep)
        if drop:
            x = x.sum(axis=drop)
            s = "".join(c for c in s if c in keep)
        return s, x

    def _einsum_pairwise(self, subs: list[str], out: str, ops: Sequence[Array]) -> Array:
        """Contract operands left to right, each pair as one batched matrix product (BLAS)."""
        n = len(ops)
        # needed[i]: letters that the output or an operand after i still uses
        needed = [set(out)] * n
        for i in range(n - 2, -1, -1):
            needed[i] = needed[i + 1] | set(subs[i + 1])
        cur_s, cur = self._einsum_reduce_single(subs[0], ops[0], needed[0])
        for i in range(1, n):
            s, x = self._einsum_reduce_single(subs[i], ops[i], needed[i] | set(cur_s))
            cur_s, cur = self._einsum_pair(cur_s, cur, s, x, needed[i])
        if cur_s != out:
            cur = cur.transpose(tuple(cur_s.index(c) for c in out))
        return cur

    def _einsum_pair(self, sa: str, a: Array, sb: str, b: Array, keep: set[str]) -> tuple[str, Array]:
        """Contract two operands (distinct letters within each) keeping letters in ``keep``."""
        xp = self.xp
        # letters of one operand only that nobody needs any more are summed out first
        sa, a = self._einsum_reduce_single(sa, a, keep | set(sb))
        sb, b = self._einsum_reduce_single(sb, b, keep | set(sa))
        batch = [c for c in sa if c in sb and c in keep]
        contr = [c for c in sa if c in sb and c not in keep]
        left = [c for c in sa if c not in sb]
        right = [c for c in sb if c not in sa]
        # a contracted letter broadcast on one side (size 1) factors out of the sum on the other side
        for c in contr:
            na, nb = a.shape[sa.index(c)], b.shape[sb.index(c)]
            if na != nb:
                if na == 1:
                    b = b.sum(axis=sb.index(c), keepdims=True)
                else:
                    a = a.sum(axis=sa.index(c), keepdims=True)
        a = a.transpose(tuple(sa.index(c) for c in batch + left + contr))
        b = b.transpose(tuple(sb.index(c) for c in batch + contr + right))
        nbat = len(batch)
        bat_a, bat_b = a.shape[:nbat], b.shape[:nbat]
        left_shape = a.shape[nbat:nbat + len(left)]
        right_shape = b.shape[nbat + len(contr):]
        k = math.prod(a.shape[nbat + len(left):])
        lsz = math.prod(left_shape)
        rsz = math.prod(right_shape)
        a = a.reshape(bat_a + (lsz, k))
        b = b.reshape(bat_b + (k, rsz))
        r = xp.matmul(a, b)
        bat = r.shape[:nbat]
        r = r.reshape(bat + left_shape + right_shape)
        return "".join(batch + left + right), r
