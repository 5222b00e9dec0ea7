"""Linear-algebra primitives: matmul (with batch broadcasting), einsum, and the factorisations and solves of
``torch.linalg`` (``linalg_*``, on the array library's own ``linalg``).

``matmul`` is the one entry point every product in ``ops/linalg.py`` goes through (mm, bmm, mv, dot,
addmm, the backward passes), so a backend with its own GEMM kernel overrides this one method. Its
``transpose_a`` / ``transpose_b`` flags ask for the product with the last two dims of an operand
swapped; here that is a strided view, which BLAS (NumPy) and cuBLAS (CuPy) consume without a copy,
and a custom kernel can read them as GEMM's transpose flags.

``einsum`` takes an explicit equation over letters only (no ellipsis, an output after ``->``) whose
operands agree on every letter's size or have size 1 there (broadcast).
"""
from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

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
        if bias is not None:
            # before the rounding to a half type, as the GEMMs' epilogues on CUDA add it: one rounding, not two
            r = xp.add(r, bias, out=r) if r.ndim else xp.asarray(r + bias)
        if r.dtype != out_dtype:
            r = r.astype(out_dtype)
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

    # ------------------------------------------------------------------ decompositions and solves
    # The bodies below are NumPy's ``linalg`` on the CPU and on the simulator, CuPy's (cuSOLVER) on a GPU. The
    # factorisations that can fail (inv, solve, cholesky) return the failure alongside the result, as PyTorch's
    # ``*_ex`` functions return their LAPACK ``info``: ``(batch index, info)`` of the first matrix that failed,
    # or None. The ops layer turns it into PyTorch's message.

    def _linalg_raising(self) -> contextlib.AbstractContextManager[Any]:
        """CuPy reports a failed factorisation only when asked to (otherwise the result holds NaN or garbage);
        NumPy always raises."""
        if self.xp is np:
            return contextlib.nullcontext()
        import cupyx
        ctx: contextlib.AbstractContextManager[Any] = cupyx.errstate(linalg="raise")
        return ctx

    def _first_failure(self, a: Array, fn: Callable[[Array], object],
                       info: Callable[[Array], int]) -> tuple[int, int]:
        """(flat batch index, info) of the first matrix of ``a`` on which ``fn`` fails."""
        mats = a.reshape((-1,) + a.shape[-2:])
        for i in range(mats.shape[0]):
            try:
                with self._linalg_raising():
                    fn(mats[i])
            except np.linalg.LinAlgError:
                return i, info(mats[i])
        # the batched call failed but no single matrix does: report the first, as LAPACK would have
        return 0, info(mats[0])

    def _zero_pivot(self, m: Array) -> int:
        """LAPACK getrf's ``info`` for one square matrix: the 1-based index of the first exactly zero
        diagonal element of U in the LU factorisation with partial pivoting, or ``n`` when rounding hid it."""
        xp = self.xp
        a = m.copy()
        n = int(a.shape[-1])
        for k in range(n):
            p = k + int(xp.argmax(xp.abs(a[k:, k])))
            if float(a[p, k]) == 0.0:
                return k + 1
            if p != k:
                a[[k, p]] = a[[p, k]]
            a[k + 1:, k:] -= xp.outer(a[k + 1:, k] / a[k, k], a[k, k:])
        return n

    def _not_pd_order(self, m: Array) -> int:
        """LAPACK potrf's ``info`` for one matrix: the order of the first leading minor that is not positive
        definite."""
        n = int(m.shape[-1])
        for k in range(1, n + 1):
            try:
                with self._linalg_raising():
                    self.xp.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                return k
        return n

    def linalg_inv(self, a: Array) -> tuple[Array, tuple[int, int] | None]:
        """The inverse of each matrix of ``a`` (..., n, n), and the first failure (a zero pivot) or None."""
        try:
            with self._linalg_raising():
                return self.xp.linalg.inv(a), None
        except np.linalg.LinAlgError:
            return a, self._first_failure(a, self.xp.linalg.inv, self._zero_pivot)

    def linalg_solve(self, a: Array, b: Array) -> tuple[Array, tuple[int, int] | None]:
        """X with A X = B for matrices B (..., n, k) whose batch dims broadcast with A's, and the first
        failure or None."""
        xp = self.xp
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        a = xp.broadcast_to(a, batch + a.shape[-2:])
        b = xp.broadcast_to(b, batch + b.shape[-2:])
        try:
            with self._linalg_raising():
                return xp.linalg.solve(a, b), None
        except np.linalg.LinAlgError:
            return b, self._first_failure(a, xp.linalg.inv, self._zero_pivot)

    def linalg_cholesky(self, a: Array) -> tuple[Array, tuple[int, int] | None]:
        """The lower Cholesky factor of each matrix (only its lower triangle is read), and the first failure
        (the order of a leading minor that is not positive definite) or None."""
        try:
            with self._linalg_raising():
                return self.xp.linalg.cholesky(a), None
        except np.linalg.LinAlgError:
            return a, self._first_failure(a, self.xp.linalg.cholesky, self._not_pd_order)

    def linalg_det(self, a: Array) -> Array:
        return self.xp.asarray(self.xp.linalg.det(a))

    def linalg_slogdet(self, a: Array) -> tuple[Array, Array]:
        """(sign, log |det|) of each matrix: the log stays finite where the determinant underflows."""
        sign, logabs = self.xp.linalg.slogdet(a)
        return self.xp.asarray(sign), self.xp.asarray(logabs)

    def linalg_qr(self, a: Array, mode: str) -> tuple[Array | None, Array]:
        """(Q, R) of each matrix; mode "reduced", "complete" or "r" (Q is None)."""
        xp = self.xp
        if mode == "r":
            return None, xp.linalg.qr(a, mode="r")
        q, r = xp.linalg.qr(a, mode=mode)
        return q, r

    def linalg_svd(self, a: Array, full_matrices: bool) -> tuple[Array, Array, Array]:
        """(U, S, Vh) of each matrix, singular values in descending order."""
        u, s, vh = self.xp.linalg.svd(a, full_matrices=full_matrices)
        return u, s, vh

    def linalg_svdvals(self, a: Array) -> Array:
        s: Array = self.xp.linalg.svd(a, compute_uv=False)
        return s

    def linalg_eigh(self, a: Array, upper: bool) -> tuple[Array, Array]:
        """(eigenvalues ascending, eigenvectors as columns) of each symmetric matrix, read from the lower
        (or upper) triangle."""
        w, v = self.xp.linalg.eigh(a, UPLO="U" if upper else "L")
        return w, v

    def linalg_eigvalsh(self, a: Array, upper: bool) -> Array:
        w: Array = self.xp.linalg.eigvalsh(a, UPLO="U" if upper else "L")
        return w

    def linalg_pinv(self, a: Array, atol: float, rtol: float, hermitian: bool) -> Array:
        """The Moore-Penrose pseudo-inverse (..., n, m) of each matrix: singular values (for ``hermitian``, the
        absolute eigenvalues) at or below max(atol, rtol * the largest) count as zero."""
        xp = self.xp
        m, n = a.shape[-2:]
        if m == 0 or n == 0:
            return xp.zeros(a.shape[:-2] + (n, m), dtype=a.dtype)
        if hermitian:
            w, v = xp.linalg.eigh(a)
            size = xp.abs(w)
            left, right = v, v.swapaxes(-1, -2)
        else:
            u, size, vh = xp.linalg.svd(a, full_matrices=False)
            w = size
            left, right = vh.swapaxes(-1, -2), u.swapaxes(-1, -2)
        cutoff = xp.maximum(atol, rtol * size.max(axis=-1, keepdims=True))
        keep = size > cutoff
        inv_w = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(a.dtype)
        r: Array = xp.matmul(left * inv_w[..., None, :], right)
        return r
