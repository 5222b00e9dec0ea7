"""Assertions shared by the tests (importable as ``helpers``)."""
import numpy as np
import pytest

import minitorch_gpu as mt


def to_np(t):
    """A tensor's values as a NumPy array, from any device."""
    return t.detach().cpu().numpy()


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    """Compare a tensor (or array) with an expected array, checking shape as well as values."""
    a = to_np(actual) if isinstance(actual, mt.Tensor) else np.asarray(actual)
    if isinstance(expected, mt.Tensor):
        e = to_np(expected)  # expected values may live on the device under test too
    else:
        e = np.asarray(expected.detach().numpy() if hasattr(expected, "detach") else expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    np.testing.assert_allclose(a.astype(np.float64) if a.dtype != bool else a,
                               e.astype(np.float64) if e.dtype != bool else e, rtol=rtol, atol=atol)


def unordered_writes(device):
    """Whether parallel writes to one element land in an undefined order: a real GPU (the simulator runs blocks
    one after another, so it keeps the CPU's last-write-wins)."""
    return device == "cuda" and mt.cuda.is_available() and not mt.cuda.is_simulated()


def kernel_launches(monkeypatch, backend):
    """A list that receives (file, kernel) for every kernel ``backend`` (a CUDA backend) launches from now on:
    every launcher asks ``Launcher.fn`` for its kernel right before launching it."""
    kernels = backend.kernels
    if kernels is None:
        pytest.skip("kernels are switched off (MINITORCH_GPU_KERNELS=0)")
    calls = []
    real = kernels.fn

    def fn(fname, kernel):
        calls.append((fname, kernel))
        return real(fname, kernel)

    monkeypatch.setattr(kernels, "fn", fn)
    return calls


def backward_like_torch(ours, theirs, device, torch, rng, tol):
    """Check each of our output tensors against PyTorch's, then backpropagate one random weighting of all of them on
    both sides (``rng``: a NumPy Generator), so that the callers can compare the gradients."""
    loss_m = loss_t = 0
    for om, ot in zip(ours, theirs):
        assert_close(om, ot.detach().numpy(), **tol)
        g = rng.standard_normal(tuple(ot.shape)).astype(to_np(om).dtype)
        loss_m = loss_m + (om * mt.tensor(g, device=device)).sum()
        loss_t = loss_t + (ot * torch.tensor(g)).sum()
    loss_m.backward()
    loss_t.backward()


def grads_like_torch(fn_ours, fn_torch, arrays, device, torch, rng, tol=1e-12):
    """``fn_ours`` on tensors of ``arrays`` (on ``device``) against ``fn_torch`` on PyTorch's: the output, then
    the gradient of every input for one random output gradient (``rng``: a NumPy Generator). Returns our
    output."""
    xs = [mt.tensor(a, device=device, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ym, yt = fn_ours(*xs), fn_torch(*ts)
    assert_close(ym, yt.detach().numpy(), rtol=tol, atol=tol)
    g = rng.standard_normal(tuple(yt.shape))
    ym.backward(mt.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        assert_close(x.grad, t.grad.numpy(), rtol=tol, atol=tol)
    return ym


STORED_DTYPES = [mt.float32, mt.float64, mt.float16, mt.bfloat16, mt.int64, mt.int32, mt.int16, mt.int8, mt.uint8,
                 mt.bool]
"""Every dtype a checkpoint stores (the save/load round-trip tests walk them)."""


def sample_tensor(dtype, shape, device, seed=0):
    """A tensor of ``dtype`` and ``shape`` with values of its kind: random bools, normals, or integers in [0, 100)."""
    rng = np.random.default_rng(seed)
    if dtype is mt.bool:
        a = rng.random(shape) > 0.5
    elif dtype.is_floating_point:
        a = rng.standard_normal(shape).astype(np.float32)
    else:
        a = rng.integers(0, 100, shape)
    return mt.tensor(a, device=device).to(dtype)


def assert_same_tensor(a, b):
    """Two tensors equal to the bit: dtype, shape, device and values (a checkpoint round trip must be exact)."""
    assert isinstance(a, mt.Tensor) and isinstance(b, mt.Tensor)
    assert a.dtype is b.dtype and a.shape == b.shape and a.device == b.device
    np.testing.assert_array_equal(to_np(a.float() if a.dtype is mt.bfloat16 else a),
                                  to_np(b.float() if b.dtype is mt.bfloat16 else b))


def assert_requires_grad_survives(roundtrip, device):
    """``roundtrip(obj)`` (a save and load in one checkpoint format) keeps Parameters, requires_grad and leaves as
    PyTorch does."""
    a = mt.ones(2, device=device, requires_grad=True)
    obj = {"p": mt.nn.Parameter(mt.randn(3, device=device)),
           "frozen": mt.nn.Parameter(mt.randn(3, device=device), requires_grad=False),
           "leaf": a, "nonleaf": a * 2, "plain": mt.zeros(2, device=device)}
    out = roundtrip(obj)
    assert isinstance(out["p"], mt.nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], mt.nn.Parameter) and not out["frozen"].requires_grad
    assert out["leaf"].requires_grad and out["leaf"].is_leaf and not isinstance(out["leaf"], mt.nn.Parameter)
    # like PyTorch: a non-leaf comes back as a leaf that requires grad, with its values
    assert out["nonleaf"].requires_grad and out["nonleaf"].is_leaf
    assert_close(out["nonleaf"], [2.0, 2.0])
    assert not out["plain"].requires_grad
    for k in obj:
        assert out[k].device == obj[k].device


def assert_same_special(got, want, dtype, *, ulps=4, atol=0.0, signed_zeros=True, exact_zeros=True, what="",
                        inputs=()):
    """``got`` against PyTorch's ``want`` at special values: NaN exactly where ``want`` is NaN, the same infinities,
    zero exactly where ``want`` is zero (with ``signed_zeros``, of the same sign), and other finite values within
    ``ulps`` units in the last place of ``dtype`` (relative to the larger magnitude) plus ``atol``: an absolute
    tolerance on the scale of the inputs, for results that cancel (1 - tanh(x)^2), never one that lets a tiny
    value stand for an exact 0 (unless not ``exact_zeros``). ``inputs`` (arrays aligned with the values) go into the
    failure message."""
    g = np.asarray(got).astype(np.float64)
    w = np.asarray(want).astype(np.float64)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    eps = float(np.finfo(dtype).eps)
    bad = np.isnan(g) != np.isnan(w)
    both = ~np.isnan(g) & ~np.isnan(w)
    inf = both & (np.isinf(g) | np.isinf(w))
    bad |= inf & (g != w)
    fin = both & ~inf
    if exact_zeros:
        bad |= fin & ((g == 0) != (w == 0))
    with np.errstate(invalid="ignore", over="ignore"):
        tol = ulps * eps * np.maximum(np.abs(g), np.abs(w)) + atol
        bad |= fin & (np.abs(g - w) > tol)
    if signed_zeros:
        bad |= fin & (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))
    if bad.any():
        at = [np.broadcast_to(np.asarray(v, np.float64), bad.shape)[bad].tolist() for v in inputs]
        raise AssertionError(f"{what}: ours {g[bad].tolist()} != PyTorch's {w[bad].tolist()} at inputs {at}")


def torch_elementwise_reference(torch, fn, cols, dtype, upstream):
    """PyTorch's values and input gradients for ``fn`` applied to each element of the columns ``cols`` on its own
    (its scalar formula, which its CUDA kernels share; its CPU vector loops differ from it at some special values,
    so that a whole-tensor result would depend on the tensor's length), the gradient seeded with ``upstream``:
    (values as float64, [gradient per column] or None where PyTorch has no gradient)."""
    tdt = getattr(torch, dtype)
    values, grads = [], [[] for _ in cols]
    differentiable = True
    for row in zip(*cols):
        xs = [torch.tensor([v], dtype=tdt, requires_grad=True) for v in row]
        y = fn(*xs)
        values.append(y.detach().to(torch.float64).numpy()[0] if y.is_floating_point() else y.numpy()[0])
        if not y.requires_grad:
            differentiable = False
            continue
        try:
            y.backward(torch.full_like(y, upstream))
        except RuntimeError:  # floor_divide: "derivative for aten::floor_divide is not implemented"
            differentiable = False
            continue
        for i, x in enumerate(xs):
            # (sgn's gradient of a real input is an "efficient zero tensor", which wants force=True)
            grads[i].append(0.0 if x.grad is None else x.grad.to(torch.float64).numpy(force=True)[0])
    return np.array(values), ([np.array(g) for g in grads] if differentiable else None)
