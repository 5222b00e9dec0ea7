"""torch.linalg's factorisations, solves and norms: values and gradients against PyTorch (float32 and float64,
batched), gradcheck / gradgradcheck in float64, and PyTorch's errors for bad shapes, dtypes, singular and
non-positive-definite input. Singular vectors and eigenvectors are unique only up to sign, so they are compared
through quantities that do not depend on the sign (|U|, U diag(S) Vh)."""
import math

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
from minitorch_gpu.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)
TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-9, atol=1e-10)}


def _arr(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _spd(*shape, dtype=np.float64):
    """Symmetric positive-definite matrices (..., n, n), well conditioned."""
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _run_both(torch, device, fn, arrays, grad=True):
    """``fn(lib, *tensors)`` on both libraries: the outputs (a tuple), compared, and the gradients of a random
    weighting of every output, compared."""
    dtype = arrays[0].dtype.type
    tol = TOL[dtype]
    ours_in = [mt.tensor(a, device=device, requires_grad=grad) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=grad) for a in arrays]
    ours = fn(mt, *ours_in)
    theirs = fn(torch, *theirs_in)
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    loss_m = loss_t = 0
    for om, ot in zip(ours, theirs):
        assert om.dtype is getattr(mt, str(ot.dtype).rsplit(".", 1)[-1])
        assert_close(om, ot.detach().numpy(), **tol)
        if grad and ot.requires_grad:
            w = RNG.standard_normal(tuple(ot.shape)).astype(dtype)
            loss_m = loss_m + (om * mt.tensor(w, device=device)).sum()
            loss_t = loss_t + (ot * torch.tensor(w)).sum()
    if grad:
        loss_m.backward()
        loss_t.backward()
        for im, it in zip(ours_in, theirs_in):
            assert_close(im.grad, it.grad.numpy(), rtol=tol["rtol"] * 20, atol=tol["atol"] * 20)


def _raises_like(torch, ours_fn, torch_fn):
    """Both raise: the same exception type (by name: PyTorch's LinAlgError is torch._C._LinAlgError) and message."""
    with pytest.raises(Exception) as t_err:
        torch_fn()
    with pytest.raises(Exception) as m_err:
        ours_fn()
    assert isinstance(m_err.value, RuntimeError) == isinstance(t_err.value, RuntimeError)
    assert type(m_err.value).__name__.strip("_") == type(t_err.value).__name__.strip("_"), (m_err.value, t_err.value)
    assert str(m_err.value) == str(t_err.value)
    return m_err.value


DTYPES = [np.float32, np.float64]


# ---------------------------------------------------------------------- values and gradients against PyTorch

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_inv_det_slogdet_like_torch(device, torch, dtype, shape):
    a = _arr(*shape, dtype=dtype) + 3 * np.eye(shape[-1], dtype=dtype)
    _run_both(torch, device, lambda L, x: L.linalg.inv(x), [a])
    _run_both(torch, device, lambda L, x: L.linalg.det(x), [a])
    _run_both(torch, device, lambda L, x: tuple(L.linalg.slogdet(x)), [a])
    _run_both(torch, device, lambda L, x: (L.det(x), L.inverse(x), x.det(), x.inverse(), L.slogdet(x)[1]), [a])
    _run_both(torch, device, lambda L, x: (L.logdet(x), x.logdet()), [_spd(*shape, dtype=dtype)])


def test_det_gradient_of_a_singular_matrix(device, torch):
    # rank n-1: the gradient is the cofactor matrix (row i is the cross product of the other two rows, in
    # cyclic order), whatever the rounding of the LU leaves of the determinant. PyTorch's depends on its LAPACK:
    # the cofactors with MKL on Intel, zeros with an exact-zero pivot
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    x = mt.tensor(a, device=device, requires_grad=True)
    d = mt.linalg.det(x)
    assert_close(d, torch.linalg.det(torch.tensor(a)).numpy(), atol=1e-12)
    d.backward()
    assert_close(x.grad, np.stack([np.cross(a[(i + 1) % 3], a[(i + 2) % 3]) for i in range(3)]), atol=1e-12)
    # NOTE: for diag(1, 0, 2) PyTorch's gradient is all zeros; the cofactor matrix has a 2 at [1, 1] (det is
    # 2 * a11 along that entry), which finite differences confirm
    x = mt.tensor(np.diag([1.0, 0.0, 2.0]), device=device, requires_grad=True)
    mt.linalg.det(x).backward()
    assert_close(x.grad, np.diag([0.0, 2.0, 0.0]), atol=1e-12)
    assert gradcheck(mt.linalg.det, (x,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve_like_torch(device, torch, dtype):
    a = _arr(2, 3, 3, dtype=dtype) + 3 * np.eye(3, dtype=dtype)
    _run_both(torch, device, lambda L, x, y: L.linalg.solve(x, y), [a, _arr(2, 3, 2, dtype=dtype)])
    # a batch of vectors, a broadcast right-hand side, and X A = B
    _run_both(torch, device, lambda L, x, y: L.linalg.solve(x, y), [a, _arr(2, 3, dtype=dtype)])
    _run_both(torch, device, lambda L, x, y: L.linalg.solve(x, y), [a, _arr(3, 4, dtype=dtype)])
    _run_both(torch, device, lambda L, x, y: L.linalg.solve(x, y, left=False), [a, _arr(2, 5, 3, dtype=dtype)])
    _run_both(torch, device, lambda L, x, y: L.linalg.solve(x, y), [a[0], _arr(4, 3, 1, dtype=dtype)])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_like_torch(device, torch, dtype, upper):
    a = _spd(2, 4, 4, dtype=dtype)
    _run_both(torch, device, lambda L, x: L.linalg.cholesky(x, upper=upper), [a])
    factor = np.linalg.cholesky(a.astype(np.float64)).astype(dtype)
    if upper:
        factor = np.swapaxes(factor, -1, -2)
    _run_both(torch, device, lambda L, b, f: L.cholesky_solve(b, f, upper=upper), [_arr(2, 4, 3, dtype=dtype),
                                                                                   factor])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_like_torch(device, torch, dtype, shape, mode):
    a = _arr(*shape, dtype=dtype)
    differentiable = mode == "reduced" or (mode == "complete" and shape[-2] <= shape[-1])
    _run_both(torch, device, lambda L, x: tuple(L.linalg.qr(x, mode=mode)), [a], grad=differentiable)


def test_qr_backward_errors(device, torch):
    a = _arr(4, 3)
    for mode in ["r", "complete"]:
        _raises_like(torch, lambda: mt.linalg.qr(mt.tensor(a, device=device, requires_grad=True), mode)[1].sum()
                     .backward(), lambda: torch.linalg.qr(torch.tensor(a, requires_grad=True), mode)[1].sum()
                     .backward())


def _svd_invariants(L, x, full_matrices):
    U, S, Vh = L.linalg.svd(x, full_matrices=full_matrices)
    k = S.shape[-1]
    # the first k singular vectors up to sign, and the product (the completion beyond k is arbitrary)
    return S, U[..., :k].abs(), Vh[..., :k, :].abs(), (U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd_like_torch(device, torch, dtype, shape, full_matrices):
    a = _arr(*shape, dtype=dtype)
    _run_both(torch, device, lambda L, x: _svd_invariants(L, x, full_matrices), [a])
    _run_both(torch, device, lambda L, x: L.linalg.svdvals(x), [a])
    U, S, Vh = mt.linalg.svd(mt.tensor(a, device=device), full_matrices=full_matrices)
    m, n = shape[-2:]
    k = min(m, n)
    assert U.shape[-2:] == ((m, m) if full_matrices else (m, k))
    assert Vh.shape[-2:] == ((n, n) if full_matrices else (k, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_like_torch(device, torch, dtype, uplo):
    a = _arr(2, 4, 4, dtype=dtype)  # not symmetric: only the named triangle may be read

    def fn(L, x):
        w, v = L.linalg.eigh(x, UPLO=uplo)
        return w, v.abs(), L.linalg.eigvalsh(x, UPLO=uplo)

    _run_both(torch, device, fn, [a])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv_like_torch(device, torch, dtype, shape):
    a = _arr(*shape, dtype=dtype)
    _run_both(torch, device, lambda L, x: L.linalg.pinv(x), [a])
    _run_both(torch, device, lambda L, x: L.pinverse(x), [a])
    s = _spd(3, 3, dtype=dtype)
    _run_both(torch, device, lambda L, x: L.linalg.pinv(x, hermitian=True), [s])
    # a rank-deficient matrix: the cut-off singular value counts as zero
    low = (_arr(4, 2) @ _arr(2, 3)).astype(dtype)
    _run_both(torch, device, lambda L, x: L.linalg.pinv(x, atol=1e-3), [low], grad=False)
    _run_both(torch, device, lambda L, x: L.linalg.pinv(x, rtol=0.5), [a], grad=False)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_like_torch(device, torch, dtype, driver):
    if device == "cuda" and driver not in (None, "gels"):
        pytest.skip("CUDA has only the gels driver")
    for a_shape, b_shape in [((5, 3), (5, 2)), ((2, 6, 3), (2, 6, 4)), ((5, 3), (5,))]:
        a, b = _arr(*a_shape, dtype=dtype), _arr(*b_shape, dtype=dtype)

        def fn(L, x, y):
            # CUDA's only driver is gels, its default
            r = L.linalg.lstsq(x, y, driver="gels" if device == "cuda" and L is torch else driver)
            return r.solution, r.residuals, r.singular_values

        _run_both(torch, device, fn, [a, b])
        r_m = mt.linalg.lstsq(mt.tensor(a, device=device), mt.tensor(b, device=device), driver=driver)
        r_t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gels" if device == "cuda" else driver)
        assert type(r_m).__name__ == type(r_t).__name__ == "linalg_lstsq"
        assert r_m._fields == ("solution", "residuals", "rank", "singular_values")
        assert r_m.rank.dtype is mt.int64 and to_np(r_m.rank).tolist() == r_t.rank.tolist()


def test_lstsq_rank_deficient_is_minimum_norm(device, torch):
    if device == "cuda":
        pytest.skip("CUDA's one driver, gels, assumes full rank (as in PyTorch)")
    a = _arr(5, 2) @ _arr(2, 4)
    b = _arr(5, 2)
    for driver in ["gelsy", "gelsd"]:
        r_m = mt.linalg.lstsq(mt.tensor(a, device=device), mt.tensor(b, device=device), driver=driver)
        r_t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        assert_close(r_m.solution, r_t.solution.numpy(), rtol=1e-8, atol=1e-9)
        assert int(r_m.rank.item()) == int(r_t.rank) == 2
        assert r_m.residuals.shape == r_t.residuals.shape == (0,)


ORDS = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ORDS)
def test_matrix_norm_like_torch(device, torch, dtype, ord):
    a = _arr(2, 3, 4, dtype=dtype)
    _run_both(torch, device, lambda L, x: L.linalg.matrix_norm(x, ord), [a])
    _run_both(torch, device, lambda L, x: L.linalg.matrix_norm(x, ord, dim=(2, 0), keepdim=True), [a])
    _run_both(torch, device, lambda L, x: L.linalg.norm(x, ord, dim=(-1, -2)), [a])
    _run_both(torch, device, lambda L, x: L.linalg.norm(x[0], ord), [a])


@pytest.mark.parametrize("dtype", DTYPES)
def test_linalg_norm_and_torch_norm_like_torch(device, torch, dtype):
    a = _arr(2, 3, 4, dtype=dtype)
    for fn in [lambda L, x: L.linalg.norm(x), lambda L, x: L.linalg.norm(x, dim=1), lambda L, x: L.linalg.norm(x[0, 0], 3),
               lambda L, x: L.linalg.norm(x, dim=(0, 2), keepdim=True), lambda L, x: L.linalg.vector_norm(x, 1, (0, 1)),
               lambda L, x: L.norm(x[0], "nuc"), lambda L, x: x.norm("nuc", dim=(0, 2)), lambda L, x: x.norm(p="fro"),
               lambda L, x: L.norm(x, 1.5, dim=2)]:
        _run_both(torch, device, fn, [a])


# ---------------------------------------------------------------------- finite differences

GRADCHECKS = {
    "inv": lambda x: mt.linalg.inv(x),
    "det": lambda x: mt.linalg.det(x),
    "slogdet": lambda x: mt.linalg.slogdet(x).logabsdet,
    "solve": lambda x: mt.linalg.solve(x, x[..., :1] * 2 + 1),
    "cholesky": lambda x: mt.linalg.cholesky(x @ x.mT + 3 * mt.eye(3, dtype=x.dtype, device=x.device)),
    "qr": lambda x: tuple(mt.linalg.qr(x)),
    "qr_wide": lambda x: tuple(mt.linalg.qr(x[..., :2, :])),
    "svd": lambda x: _svd_invariants(mt, x, False),
    "svd_tall": lambda x: _svd_invariants(mt, x[..., :2], True),
    "svdvals": lambda x: mt.linalg.svdvals(x),
    "eigh": lambda x: (lambda w, v: (w, v.abs()))(*mt.linalg.eigh(x + x.mT)),
    "pinv": lambda x: mt.linalg.pinv(x[..., :2]),
    "lstsq": lambda x: mt.linalg.lstsq(x[..., :2], x[..., 2:] + 1).solution,
    "nuc": lambda x: mt.linalg.matrix_norm(x, "nuc"),
    "spectral": lambda x: mt.linalg.matrix_norm(x, -2),
    "one": lambda x: mt.linalg.matrix_norm(x, 1),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
def test_gradcheck(device, name):
    fn = GRADCHECKS[name]
    x = mt.tensor(_arr(2, 3, 3) + 2 * np.eye(3), device=device, requires_grad=True)
    assert gradcheck(fn, (x,), eps=1e-6, atol=1e-6)
    if name in ("inv", "det", "solve", "cholesky", "qr", "svd", "eigh", "pinv"):
        assert gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5)


# ---------------------------------------------------------------------- errors

def test_singular_and_not_positive_definite_errors(device, torch):
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    batch = np.stack([np.eye(2), singular])
    cases = [
        (lambda L, a: L.linalg.inv(a), singular), (lambda L, a: L.linalg.inv(a), batch),
        (lambda L, a: L.inverse(a), batch),
        (lambda L, a: L.linalg.solve(a, L.ones(2, dtype=a.dtype, device=a.device)), singular),
        (lambda L, a: L.linalg.solve(a, L.ones(2, 2, dtype=a.dtype, device=a.device)), batch),
        (lambda L, a: L.linalg.cholesky(a), singular), (lambda L, a: L.linalg.cholesky(a), batch),
        (lambda L, a: L.linalg.cholesky(a, upper=True), -np.eye(3)),
    ]
    for fn, a in cases:
        x = mt.tensor(a, device=device)
        err = _raises_like(torch, lambda: fn(mt, x), lambda: fn(torch, torch.tensor(a)))
        assert isinstance(err, mt.linalg.LinAlgError) and isinstance(err, RuntimeError)
        assert_close(x, a)


def test_argument_errors(device, torch):
    def both(fn, *arrays):
        _raises_like(torch, lambda: fn(mt, *[mt.tensor(a, device=device) for a in arrays]),
                     lambda: fn(torch, *[torch.tensor(a) for a in arrays]))

    f, f32 = np.ones((2, 3)), np.ones((2, 2), np.float32)
    for name in ["inv", "det", "slogdet", "cholesky", "eigh"]:
        both(lambda L, a: getattr(L.linalg, name)(a), f)
    for name in ["inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "matrix_norm"]:
        both(lambda L, a: getattr(L.linalg, name)(a), np.ones((2, 2), np.int64))
    for name in ["inv", "svd", "svdvals", "matrix_norm", "solve"]:
        both(lambda L, a: getattr(L.linalg, name)(a, a) if name == "solve" else getattr(L.linalg, name)(a), np.ones(3))
    both(lambda L, a: L.linalg.inv(a), np.ones((2, 2), np.float16))
    both(lambda L, a: L.linalg.eigh(a, UPLO="X"), f32)
    if device == "cpu":  # the message names the device's kernel
        both(lambda L, a: L.linalg.eigh(a), np.ones((2, 2), np.int64))
    both(lambda L, a: L.linalg.qr(a, mode="x"), f32)
    both(lambda L, a: L.linalg.pinv(a), np.ones(2, np.float32))
    both(lambda L, a, b: L.linalg.solve(a, b), f32, np.ones(3, np.float32))
    both(lambda L, a, b: L.linalg.solve(a, b), f32, np.ones((3, 3), np.float32))
    both(lambda L, a, b: L.linalg.solve(a, b), np.ones((2, 2)), np.ones(2, np.float32))
    both(lambda L, a, b: L.linalg.lstsq(a, b), np.ones((3, 2), np.float32), np.ones((2, 2), np.float32))
    both(lambda L, a, b: L.linalg.lstsq(a, b), np.ones((3, 2), np.float32), np.ones(2, np.float32))
    both(lambda L, a, b: L.linalg.lstsq(a, b), np.ones(3, np.float32), np.ones(3, np.float32))
    both(lambda L, a, b: L.linalg.lstsq(a, b), np.ones((3, 2), np.float32), np.ones((3, 2)))
    if device == "cpu":
        both(lambda L, a, b: L.linalg.lstsq(a, b, driver="gelsx"), np.ones((3, 2)), np.ones((3, 2)))
        both(lambda L, a: L.linalg.svd(a, driver="gesvd"), f32)
    for ord in [3, "abc"]:
        both(lambda L, a: L.linalg.matrix_norm(a, ord), f32)
    both(lambda L, a: L.linalg.matrix_norm(a, dim=(0, 0)), f32)
    both(lambda L, a: L.linalg.norm(a, 2), np.ones((2, 2, 2)))
    both(lambda L, a: L.linalg.norm(a, "fro", dim=(0, 1, 2)), np.ones((2, 2, 2)))
    both(lambda L, a: L.norm(a, "fro", dim=(0, 1, 2)), np.ones((2, 2, 2)))


def test_namespace():
    assert issubclass(mt.linalg.LinAlgError, RuntimeError)
    for name in ["matmul", "vector_norm", "einsum"]:
        assert callable(getattr(mt.linalg, name))
    x = mt.tensor([[4.0, 2.0], [2.0, 3.0]])
    assert type(mt.linalg.slogdet(x)).__name__ == "linalg_slogdet"
    assert type(mt.slogdet(x)).__name__ == "slogdet" and type(x.slogdet()).__name__ == "slogdet"
    assert type(mt.linalg.qr(x)).__name__ == "linalg_qr" and mt.linalg.qr(x, "r").Q.shape == (0,)
