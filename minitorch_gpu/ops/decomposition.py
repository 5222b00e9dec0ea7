"""``torch.linalg`` beyond products: inverse, determinant, solve, Cholesky, QR, SVD, symmetric eigensolver,
pseudo-inverse, least squares, and the matrix norms.

The factorisations run on the backend's ``linalg_*`` primitives (NumPy's LAPACK on the CPU and the simulator,
cuSOLVER through CuPy on a GPU); their gradients are written with Tensor ops (products, solves, the
factorisations again), so ``create_graph=True`` differentiates them once more. ``pinv`` and ``lstsq`` are
expressions of the pseudo-inverse; the norms of matrices are reductions of ``abs`` or of the singular values.

Argument checks and failure messages follow PyTorch's; a factorisation that cannot complete (a singular
matrix, one that is not positive-definite) raises ``LinAlgError``, a RuntimeError, naming the batch element.
"""
import builtins
import math

from .. import _dtype
from .._typeinfo import finfo
from .._mode import _state
from ..autograd.node import Op
from ..tensor import Tensor
from ._autocast import autocast_op
from ._util import apply_outputs, check_out, check_same_device, check_tensor, sum_to, wrap_dim, write_out
from .reduction import _return_type, vector_norm
from .shape import cat

# the torch-level names; ``minitorch_gpu/linalg.py`` gathers the ``torch.linalg`` namespace
__all__ = ["det", "inverse", "logdet", "slogdet", "pinverse", "cholesky_solve", "norm"]


class LinAlgError(RuntimeError):
    """A factorisation could not complete: the matrix is singular, or not positive-definite
    (``torch.linalg.LinAlgError``)."""


_slogdet_result = _return_type("linalg_slogdet", ("sign", "logabsdet"))
_torch_slogdet_result = _return_type("slogdet", ("sign", "logabsdet"))
_qr_result = _return_type("linalg_qr", ("Q", "R"))
_svd_result = _return_type("linalg_svd", ("U", "S", "Vh"))
_eigh_result = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
_lstsq_result = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


# ---------------------------------------------------------------------- argument checks

def _check_float(A, fname):
    dt = A.dtype
    if not dt.is_floating_point:
        raise RuntimeError(f"{fname}: Expected a floating point or complex tensor as input. Got {dt._scalar_name}")
    if dt.itemsize == 2:
        raise RuntimeError(f"{fname}: Low precision dtypes not supported. Got {dt._scalar_name}")


def _check_matrix(A, fname, arg="A"):
    check_tensor(A, fname.rsplit(".", 1)[-1], arg, 1)
    if A._data.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor {arg} must have at least 2 dimensions.")
    _check_float(A, fname)


def _check_square(A, fname, arg="A"):
    _check_matrix(A, fname, arg)
    m, n = A._data.shape[-2:]
    if m != n:
        raise RuntimeError(f"{fname}: {arg} must be batches of square matrices, but they are {m} by {n} matrices")


def _raise_failure(A, failure, fname, what):
    """PyTorch's LinAlgError for the first matrix that failed: ``what(info)`` says why."""
    index, info = failure
    batch = f"(Batch element {index}): " if A._data.ndim > 2 else ""
    raise LinAlgError(f"{fname}: {batch}{what(info)}")


def _singular_inverse(info):
    return (f"The diagonal element {info} is zero, the inversion could not be completed because the input matrix "
            "is singular.")


def _singular_solve(info):
    return "The solver failed because the input matrix is singular."


def _not_positive_definite(info):
    return (f"The factorization could not be completed because the input is not positive-definite (the leading "
            f"minor of order {info} is not positive-definite).")


def _tensor(arr, be):
    return Tensor._make(arr, be)


def _eye_like(A, n):
    return _tensor(A._be.eye(n, n, A._data.dtype), A._be)


# ---------------------------------------------------------------------- inverse, determinant

class _Factorisation(Op):
    """An op on one primitive that may fail (``linalg_inv``, ``linalg_cholesky``): a failure raises PyTorch's
    LinAlgError, ``fname: (Batch element i): why(info)``."""
    save_output = True
    primitive = ""
    fname = ""
    why = staticmethod(_singular_inverse)

    def forward(self, A):
        r, failure = getattr(A._be, self.primitive)(A._data)
        if failure is not None:
            _raise_failure(A, failure, self.fname, self.why)
        return r


class LinalgInvExBackward0(_Factorisation):
    primitive, fname, why = "linalg_inv", "linalg.inv", staticmethod(_singular_inverse)

    def backward(self, g):
        X = self.saved_output
        return -(X.mT @ g @ X.mT)


def inv(A, *, out=None):
    """The inverse of each square matrix of ``A`` (..., n, n); ``LinAlgError`` if one is singular.

    >>> mt.linalg.inv(mt.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _check_square(A, "linalg.inv")
    check_out(out, "linalg_inv", A)
    return write_out(LinalgInvExBackward0.apply(A), out, "linalg_inv", exact_dtype=True)


def inverse(input, *, out=None):
    """``torch.inverse``: the same as ``linalg.inv``."""
    return inv(input, out=out)


def _cofactors(A):
    """The cofactor matrix (the transposed adjugate) of each matrix, valid for singular ones too: from
    A = U S Vh it is det(U) det(Vh) U diag(prod_{j != i} s_j) Vh."""
    U, S, Vh = svd(A, full_matrices=False)
    n = S.shape[-1]
    ones = S.narrow(-1, 0, 1) * 0 + 1
    # left[i] = prod_{j < i} s_j and right[i] = prod_{j > i} s_j, as exclusive running products
    left = ones if n == 1 else _cat_last(ones, S.narrow(-1, 0, n - 1).cumprod(-1))
    right = ones if n == 1 else _cat_last(ones, S.flip(-1).narrow(-1, 0, n - 1).cumprod(-1)).flip(-1)
    sign = det(U) * det(Vh)
    return (U * (left * right).unsqueeze(-2)) @ Vh * sign.unsqueeze(-1).unsqueeze(-1)


def _cat_last(a, b):
    return cat([a, b], -1)


class LinalgDetBackward0(Op):
    save_output = True

    def forward(self, A):
        if self.needs_input_grad[0]:
            self.save_for_backward(A)
        return A._be.linalg_det(A._data)

    def backward(self, g):
        A, d = self.saved_tensors
        # a singular matrix has no inverse, but det still has a gradient: its cofactor matrix. "Singular" is
        # numerical: a determinant within rounding of zero (LAPACK's LU of an exactly singular matrix seldom gives
        # an exact 0, and det * inv(A) is then noise); Hadamard's bound (the product of the rows' norms) is the
        # scale that rounding works at
        n = A.shape[-1]
        bound = vector_norm(A.detach(), dim=-1).prod(-1) * (n * finfo(A.dtype).eps)
        if (d.detach().abs() <= bound).any().item():
            return g.unsqueeze(-1).unsqueeze(-1) * _cofactors(A)
        return (g * d).unsqueeze(-1).unsqueeze(-1) * inv(A).mT


def det(A, *, out=None):
    """The determinant of each square matrix of ``A`` (..., n, n).

    >>> mt.linalg.det(mt.tensor([[1., 2.], [3., 4.]]))
    tensor(-2.)
    """
    _check_square(A, "linalg.det")
    check_out(out, "linalg_det", A)
    return write_out(LinalgDetBackward0.apply(A), out, "linalg_det", exact_dtype=True)


class LinalgSlogdetBackward0(Op):
    def forward(self, A):
        if self.needs_input_grad[0]:
            self.save_for_backward(A)
        return A._be.linalg_slogdet(A._data)

    def backward(self, g_sign, g_logabs):
        A, = self.saved_tensors
        if g_logabs is None:
            return None
        # the sign of a real determinant is piecewise constant: no gradient flows through it
        return g_logabs.unsqueeze(-1).unsqueeze(-1) * inv(A).mT


def linalg_slogdet(A, *, out=None):
    """(sign, log |det|) of each square matrix: the determinant without overflow or underflow.

    >>> mt.linalg.slogdet(mt.tensor([[2., 0.], [0., -3.]])).logabsdet
    tensor(1.7918)
    """
    _check_square(A, "linalg.slogdet")
    check_out(out, "linalg_slogdet", A)
    sign, logabs = apply_outputs(LinalgSlogdetBackward0, A)
    return _slogdet_result(sign, logabs)


def slogdet(input):
    """``torch.slogdet``: ``linalg.slogdet`` under its older name."""
    return _torch_slogdet_result(*linalg_slogdet(input))


def logdet(input):
    """log det of each square matrix: NaN where the determinant is negative, -inf where it is zero."""
    sign, logabs = linalg_slogdet(input)
    return logabs + sign.log()


# ---------------------------------------------------------------------- solve, cholesky

class LinalgSolveExBackward0(Op):
    """X with A X = B for matrices B (..., n, k); batch dims broadcast."""
    save_output = True

    def forward(self, A, B):
        self.save_for_backward(A, None)
        self.shapes = (A._data.shape, B._data.shape)
        x, failure = A._be.linalg_solve(A._data, B._data)
        if failure is not None:
            _raise_failure(A if A._data.ndim >= B._data.ndim else B, failure, "torch.linalg.solve",
                           _singular_solve)
        return x

    def backward(self, g):
        A, _, X = self.saved_tensors
        na, nb = self.needs_input_grad
        gB = LinalgSolveExBackward0.apply(A.mT, g)
        gA = -(gB @ X.mT) if na else None
        return (sum_to(gA, self.shapes[0]) if na else None), (sum_to(gB, self.shapes[1]) if nb else None)


def solve(A, B, *, left=True, out=None):
    """X with A X = B (``left=False``: X A = B) for square ``A`` (..., n, n) and ``B`` (..., n, k) or a batch of
    vectors (..., n); batch dims broadcast. ``LinAlgError`` if a matrix of ``A`` is singular.

    >>> mt.linalg.solve(mt.tensor([[2., 0.], [0., 4.]]), mt.tensor([2., 2.]))
    tensor([1.0000, 0.5000])
    """
    _check_square(A, "linalg.solve")
    check_tensor(B, "solve", "B", 2)
    if B.dtype is not A.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype._scalar_name} and B of type {B.dtype._scalar_name} instead")
    check_same_device(A, B)
    check_out(out, "linalg_solve", A, B)
    sa, sb = A._data.shape, B._data.shape
    vector = B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1 and sb == sa[:-1])
    Bm = B.unsqueeze(-1) if vector else B
    if not left:
        Bm = Bm.mT
    n = sa[-1]
    if Bm._data.ndim < 2 or Bm._data.shape[-2] != n:
        rows, cols = (sb[-1], 1) if vector else sb[-2:]
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                           f"{rows}x{cols})")
    X = LinalgSolveExBackward0.apply(A if left else A.mT, Bm)
    if not left:
        X = X.mT
    if vector:
        X = X.squeeze(-1)
    return write_out(X, out, "linalg_solve", exact_dtype=True)


class LinalgCholeskyExBackward0(_Factorisation):
    primitive, fname, why = "linalg_cholesky", "linalg.cholesky", staticmethod(_not_positive_definite)

    def backward(self, gL):
        L = self.saved_output
        # Murray's formula: gA = L^-T Phi(L^T gL) L^-1, Phi taking the lower triangle with half the diagonal;
        # only the symmetric part of gA is meaningful (A is read as symmetric)
        phi = (L.mT @ gL).tril()
        phi = phi - phi.diagonal(0, -2, -1).diag_embed() * 0.5
        L_inv = inv(L)
        gA = L_inv.mT @ phi @ L_inv
        return (gA + gA.mT) * 0.5


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (lower, A = L L^T; ``upper=True``: U = L^T) of each symmetric positive-definite
    matrix; only the lower triangle of ``A`` is read. ``LinAlgError`` if a matrix is not positive-definite.

    >>> mt.linalg.cholesky(mt.tensor([[4., 2.], [2., 5.]]))
    tensor([[2., 0.],
            [1., 2.]])
    """
    _check_square(A, "linalg.cholesky")
    check_out(out, "linalg_cholesky", A)
    L = LinalgCholeskyExBackward0.apply(A)
    return write_out(L.mT if upper else L, out, "linalg_cholesky", exact_dtype=True)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B, given the Cholesky factor ``L`` of A (``torch.cholesky_solve``)."""
    check_tensor(B, "cholesky_solve", "input", 1)
    check_tensor(L, "cholesky_solve", "input2", 2)
    if B._data.ndim < 2 or L._data.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B._data.ndim} dimensions instead")
    if B.dtype is not L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {B.dtype._scalar_name} "
                           f"and A of type {L.dtype._scalar_name} instead.")
    Lo = L.mT if upper else L
    X = solve(Lo.mT, solve(Lo, B))
    return write_out(X, out, "cholesky_solve", exact_dtype=True)


# ---------------------------------------------------------------------- QR

def _copyltu(M):
    """The symmetric matrix whose lower triangle (diagonal included) is M's."""
    low = M.tril(-1)
    return low + low.mT + M.diagonal(0, -2, -1).diag_embed()


def _qr_backward_tall(gQ, gR, Q, R):
    """gA for A = Q R with Q (m, n), R (n, n) square upper triangular, m >= n."""
    M = None
    if gR is not None:
        M = R @ gR.mT
    if gQ is not None:
        M = -(gQ.mT @ Q) if M is None else M - gQ.mT @ Q
    b = Q @ _copyltu(M)
    if gQ is not None:
        b = b + gQ
    # b R^-T, as a solve with R
    return solve(R, b.mT).mT


class LinalgQrBackward0(Op):
    save_output = True

    def forward(self, A, mode="reduced"):
        self.mode = mode
        q, r = A._be.linalg_qr(A._data, mode)
        if q is None:
            q = A._be.empty((0,), A._data.dtype)
        self.shape = A._data.shape
        return q, r

    def backward(self, gQ, gR):
        m, n = self.shape[-2:]
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        Q, R = self.saved_tensors
        if m >= n:
            return _qr_backward_tall(gQ, gR, Q, R)
        # wide A = Q [X | Y]: the square part X = Q R1 carries Q; Y = Q R2 only moves along it
        R1, R2 = R.narrow(-1, 0, m), R.narrow(-1, m, n - m)
        gR1 = None if gR is None else gR.narrow(-1, 0, m)
        gR2 = None if gR is None else gR.narrow(-1, m, n - m)
        Y = Q @ R2
        gQ1 = gQ
        if gR2 is not None:
            gQ1 = Y @ gR2.mT if gQ is None else gQ + Y @ gR2.mT
        gX = _qr_backward_tall(gQ1, gR1, Q, R1)
        gY = Q @ gR2 if gR2 is not None else gX.new_zeros(self.shape[:-1] + (n - m,))
        return _cat_last(gX, gY)


def qr(A, mode="reduced", *, out=None):
    """Q R of each matrix (..., m, n): ``mode`` "reduced" (Q (m, k), R (k, n), k = min(m, n)), "complete"
    (Q (m, m)) or "r" (R only; Q is empty).

    >>> Q, R = mt.linalg.qr(mt.tensor([[3., 0.], [4., 1.]]))
    """
    _check_matrix(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    check_out(out, "linalg_qr", A)
    Q, R = apply_outputs(LinalgQrBackward0, A, mode=mode)
    return _qr_result(Q, R)


# ---------------------------------------------------------------------- SVD, symmetric eigensolver

def _svd_backward(gU, gS, gVh, U, S, Vh):
    """gA for A = U diag(S) Vh (reduced: k = min(m, n) columns of U and rows of Vh), after Townsend's
    "Differentiating the singular value decomposition"."""
    if gU is None and gVh is None:
        return (U * gS.unsqueeze(-2)) @ Vh
    m, k, n = U.shape[-2], S.shape[-1], Vh.shape[-1]
    S2 = S * S
    # E[i, j] = s_j^2 - s_i^2, with 1 on the diagonal, where the skew-symmetric numerators vanish
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_like(S, k)
    inner = None
    if gU is not None:
        J = U.mT @ gU
        inner = (J - J.mT) / E * S.unsqueeze(-2)
    gV = None
    if gVh is not None:
        gV, V = gVh.mT, Vh.mT
        K = V.mT @ gV
        term = S.unsqueeze(-1) * ((K - K.mT) / E)
        inner = term if inner is None else inner + term
    if gS is not None:
        inner = inner + gS.diag_embed()
    gA = U @ inner @ Vh
    if m > k and gU is not None:
        # the part of gU outside U's column space
        gA = gA + ((gU - U @ (U.mT @ gU)) / S.unsqueeze(-2)) @ Vh
    if n > k and gV is not None:
        gA = gA + U @ ((gV - V @ (V.mT @ gV)) / S.unsqueeze(-2)).mT
    return gA


class LinalgSvdBackward0(Op):
    save_output = True

    def forward(self, A, full_matrices=True):
        return A._be.linalg_svd(A._data, full_matrices)

    def backward(self, gU, gS, gVh):
        U, S, Vh = self.saved_tensors
        k = S.shape[-1]
        if U.shape[-1] != k:
            # full_matrices: the columns beyond min(m, n) are any orthonormal completion, so only the first k
            # carry a gradient
            U = U.narrow(-1, 0, k)
            gU = None if gU is None else gU.narrow(-1, 0, k)
        if Vh.shape[-2] != k:
            Vh = Vh.narrow(-2, 0, k)
            gVh = None if gVh is None else gVh.narrow(-2, 0, k)
        if gS is None and gU is None and gVh is None:
            return None
        if gS is None and (gU is None or gVh is None):
            gS = S * 0
        return _svd_backward(gU, gS, gVh, U, S, Vh)


def _check_svd_driver(A, driver):
    if driver is not None and A.device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    if driver is not None and driver not in ("gesvd", "gesvdj", "gesvda"):
        raise RuntimeError(f"torch.linalg.svd: unknown svd driver {driver} in svd_cusolver computation. Available "
                           "options are gesvd, gesvdj, and gesvda")


def svd(A, full_matrices=True, *, driver=None, out=None):
    """A = U diag(S) Vh for each matrix (..., m, n), singular values descending; ``full_matrices=False`` keeps
    min(m, n) columns of U and rows of Vh. The signs of singular vectors are not unique.

    >>> U, S, Vh = mt.linalg.svd(mt.tensor([[3., 0.], [0., -2.]]))
    """
    _check_matrix(A, "linalg.svd")
    _check_svd_driver(A, driver)
    check_out(out, "linalg_svd", A)
    U, S, Vh = apply_outputs(LinalgSvdBackward0, A, full_matrices=builtins.bool(full_matrices))
    return _svd_result(U, S, Vh)


def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix, descending.

    >>> mt.linalg.svdvals(mt.tensor([[3., 0.], [0., -2.]]))
    tensor([3., 2.])
    """
    _check_matrix(A, "linalg.svd")
    _check_svd_driver(A, driver)
    check_out(out, "linalg_svdvals", A)
    if A.requires_grad and _state.grad:
        # the gradient needs the singular vectors: U diag(gS) Vh
        S = svd(A, full_matrices=False).S
    else:
        S = _tensor(A._be.linalg_svdvals(A._data), A._be)
    return write_out(S, out, "linalg_svdvals", exact_dtype=True)


def _check_eigh(A, UPLO, fname):
    check_tensor(A, fname.rsplit(".", 1)[-1], "A", 1)
    if A._data.ndim >= 2 and not A.dtype.is_floating_point:
        raise NotImplementedError(f"\"linalg_eigh_{A.device.type}\" not implemented for '{A.dtype._scalar_name}'")
    _check_square(A, fname)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


class LinalgEighBackward0(Op):
    save_output = True

    def forward(self, A, upper=False):
        return A._be.linalg_eigh(A._data, upper)

    def backward(self, gL, gV):
        L, V = self.saved_tensors
        if gV is None:
            if gL is None:
                return None
            return (V * gL.unsqueeze(-2)) @ V.mT
        # only the skew-symmetric part of V^T gV moves the eigenvectors (they stay orthonormal)
        VgV = V.mT @ gV
        VgV = (VgV - VgV.mT) * 0.5
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye_like(L, L.shape[-1])
        inner = VgV / E
        if gL is not None:
            inner = inner + gL.diag_embed()
        return V @ inner @ V.mT


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of each symmetric matrix, read from its
    lower (``UPLO="L"``) or upper triangle. The signs of eigenvectors are not unique.

    >>> mt.linalg.eigh(mt.tensor([[2., 1.], [1., 2.]])).eigenvalues
    tensor([1., 3.])
    """
    _check_eigh(A, UPLO, "linalg.eigh")
    check_out(out, "linalg_eigh", A)
    L, V = apply_outputs(LinalgEighBackward0, A, upper=UPLO == "U")
    return _eigh_result(L, V)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of each symmetric matrix, read from its lower or upper triangle."""
    _check_eigh(A, UPLO, "linalg.eigh")
    check_out(out, "linalg_eigvalsh", A)
    if A.requires_grad and _state.grad:
        L = eigh(A, UPLO).eigenvalues
    else:
        L = _tensor(A._be.linalg_eigvalsh(A._data, UPLO == "U"), A._be)
    return write_out(L, out, "linalg_eigvalsh", exact_dtype=True)


# ---------------------------------------------------------------------- pseudo-inverse, least squares

class LinalgPinvBackward0(Op):
    save_output = True

    def forward(self, A, atol=0.0, rtol=0.0, hermitian=False):
        self.save_for_backward(A)
        return A._be.linalg_pinv(A._data, atol, rtol, hermitian)

    def backward(self, g):
        A, P = self.saved_tensors
        # Golub and Pereyra's derivative of the pseudo-inverse (of constant rank):
        # dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, transposed into gA term by term
        gt = g.mT
        through_range = gt @ (P @ P.mT)
        through_range = through_range - A @ (P @ through_range)
        through_domain = (P.mT @ P) @ gt
        through_domain = through_domain - (through_domain @ P) @ A
        return through_range + through_domain - P.mT @ g @ P.mT


def _eps(dt):
    """Machine epsilon of float32 or float64 (the dtypes linear algebra takes)."""
    return 2.0 ** -23 if dt.itemsize == 4 else 2.0 ** -52


def _tolerance(value, name):
    if value is None:
        return None
    if isinstance(value, Tensor):
        if value._data.size != 1:
            raise NotImplementedError(f"linalg.pinv: a tensor {name} with more than one element is not supported")
        return builtins.float(value.item())
    return builtins.float(value)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None, rcond=None):
    """The Moore-Penrose pseudo-inverse (..., n, m) of each matrix (..., m, n). Singular values at or below
    max(atol, rtol * the largest) count as zero; by default rtol = eps * max(m, n) (0 when only ``atol`` is
    given). ``hermitian=True`` uses the symmetric eigensolver on the lower triangle.

    >>> mt.linalg.pinv(mt.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    check_tensor(A, "linalg_pinv", "A", 1)
    if A._data.ndim < 2 or not A.dtype.is_floating_point or A.dtype.itemsize == 2:
        raise RuntimeError(f"linalg.pinv({A.dtype._scalar_name}{{{list(A._data.shape)}}}): expected a tensor with 2 "
                           "or more dimensions of float, double, cfloat or cdouble types")
    if rcond is not None:
        rtol = rcond
    atol, rtol = _tolerance(atol, "atol"), _tolerance(rtol, "rtol")
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else _eps(A.dtype) * max(A._data.shape[-2:])
    check_out(out, "linalg_pinv", A)
    r = LinalgPinvBackward0.apply(A, atol=atol or 0.0, rtol=rtol, hermitian=builtins.bool(hermitian))
    return write_out(r, out, "linalg_pinv", exact_dtype=True)


def pinverse(input, rcond=1e-15):
    """``torch.pinverse``: the pseudo-inverse with a relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X of A X = B (minimum norm where A is rank deficient) for A (..., m, n) and
    B (..., m, k) or (..., m): a named tuple (solution, residuals, rank, singular_values) filled as PyTorch's
    ``driver`` fills it ("gelsy" by default on the CPU, "gels", the only one on CUDA).

    >>> mt.linalg.lstsq(mt.tensor([[1., 0.], [0., 1.], [0., 0.]]), mt.tensor([[1.], [2.], [3.]])).solution
    tensor([[1.],
            [2.]])
    """
    check_tensor(A, "linalg_lstsq", "self", 1)
    check_tensor(B, "linalg_lstsq", "b", 2)
    if A._data.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B._data.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if not A.dtype.is_floating_point or A.dtype.itemsize == 2:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if B.dtype is not A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {A.dtype._scalar_name} and other's dtype {B.dtype._scalar_name}")
    check_same_device(A, B)
    vector = B._data.ndim == A._data.ndim - 1
    m, n = A._data.shape[-2:]
    if vector and B._data.shape[-1] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-1)")
    if not vector and B._data.shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    cuda = A.device.type == "cuda"
    if driver is None:
        driver = "gels" if cuda else "gelsy"
    elif cuda and driver != "gels":
        raise RuntimeError("torch.linalg.lstsq: `driver` other than `gels` is not supported on CUDA")
    elif driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    eps = _eps(A.dtype)
    rcond = eps * max(m, n) if rcond is None or rcond < 0 else builtins.float(rcond)
    be = A._be
    Bm = B.unsqueeze(-1) if vector else B
    X = pinv(A, rtol=rcond) @ Bm
    empty = _tensor(be.empty((0,), A._data.dtype), be)
    S = _tensor(be.linalg_svdvals(A._data), be)
    rank = empty.to(_dtype.int64)
    if driver != "gels":
        if S._data.shape[-1]:
            rank = (S > S.narrow(-1, 0, 1) * rcond).sum(-1)
        else:
            rank = _tensor(be.zeros(S._data.shape[:-1], _dtype.int64.np_dtype), be)
    residuals = empty
    full_rank = driver == "gels" or builtins.bool((rank == n).all().item())
    if m > n and driver != "gelsy" and full_rank:
        # for a vector B too, one residual per (single) column, as PyTorch returns it
        residuals = (A @ X - Bm).pow(2).sum(-2)
    singular_values = S if driver in ("gelsd", "gelss") else empty
    return _lstsq_result(X.squeeze(-1) if vector else X, residuals, rank, singular_values)


# ---------------------------------------------------------------------- norms

_MATRIX_ORDS = (1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm of ``A`` over the two dims ``dim``: ``ord`` "fro" (default), "nuc" (sum of singular
    values), 2 / -2 (largest / smallest singular value), 1 / -1 (max / min column sum of |A|), inf / -inf
    (max / min row sum).

    >>> mt.linalg.matrix_norm(mt.tensor([[1., -2.], [3., 4.]]), ord=1)
    tensor(6.)
    """
    _check_matrix(A, "linalg.matrix_norm")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        got = " ".join(map(str, dim)) if isinstance(dim, (tuple, list)) else str(dim)
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
    nd = A._data.ndim
    d0, d1 = wrap_dim(dim[0], nd), wrap_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    spectral = ord in ("nuc", 2, -2)
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_fmt_order(ord)} not supported.")
    check_out(out, "linalg_matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        r = vector_norm(A, 2, (d0, d1), keepdim)
    elif spectral:
        S = svdvals(A.movedim((d0, d1), (-2, -1)))
        r = S.sum(-1) if ord == "nuc" else S.amax(-1) if ord == 2 else S.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    else:
        # 1: the largest column sum (sum over rows, d0); inf: the largest row sum (sum over columns, d1)
        inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = A.abs().sum(inner, keepdim=True)
        r = sums.amax(outer, keepdim=True) if ord > 0 else sums.amin(outer, keepdim=True)
        if not keepdim:
            r = r.squeeze((d0, d1))
    return write_out(r, out, "linalg_matrix_norm", exact_dtype=True)


def _fmt_order(ord):
    return str(int(ord)) if isinstance(ord, float) and ord.is_integer() else str(ord)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """``torch.linalg.norm``: a vector norm over one dim (or over everything), a matrix norm over two dims (or a
    2-D input when ``ord`` is given); ``ord=None`` is the 2-norm / Frobenius norm.

    >>> mt.linalg.norm(mt.tensor([[3., 4.]]))
    tensor(5.)
    """
    check_tensor(A, "linalg_norm", "input", 1)
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    elif ord is not None and A._data.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A._data.ndim}D.")
    if ord is not None and (len(dim) == 2 if dim is not None else A._data.ndim == 2):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype, out=out)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


@autocast_op("norm")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``torch.norm``: the vector p-norm over ``dim`` (all dims by default), the Frobenius norm for
    p="fro", the nuclear norm of a matrix (or of two dims) for p="nuc".

    >>> mt.tensor([[3., 4.], [0., 0.]]).norm(dim=1)
    tensor([5., 0.])
    """
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(p, str):
        if p == "fro" and (dim is None or len(dim) <= 2):
            return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        # the nuclear norm, or a matrix norm call that raises PyTorch's error for these arguments
        return matrix_norm(input, p, list(range(input._data.ndim)) if dim is None else dim, keepdim, dtype=dtype,
                           out=out)
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype, out=out)


METHODS = {
    "det": det, "inverse": inverse, "logdet": logdet, "slogdet": slogdet,
    "pinverse": pinverse, "cholesky_solve": cholesky_solve, "norm": norm,
}
