"""torch.autocast against PyTorch's: the dtype of each listed op's result and its value within the low type's
tolerance (CPU lists: checked against the installed PyTorch on the CPU; CUDA lists: on the simulated device, against
PyTorch's CPU ops on the inputs cast the way PyTorch's CUDA autocast casts them), nesting, the weight cache,
gradients, the API's errors and warnings."""
import warnings

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt
import minitorch_gpu.nn.functional as F
from minitorch_gpu.ops import _autocast

R = np.random.default_rng(0)
X = R.standard_normal((4, 8)).astype(np.float32)
W = R.standard_normal((6, 8)).astype(np.float32)
B = R.standard_normal(6).astype(np.float32)
B3 = R.standard_normal((2, 8, 3)).astype(np.float32)
TGT = np.array([0, 1, 2, 3])


def _cases(lib, f):
    """(name, fn(x, w, b, b3)) pairs, written once for both libraries (``lib`` is torch or mt, ``f`` its
    functional module)."""
    return {
        "mm": lambda x, w, b, b3: lib.mm(x, w.t()),
        "matmul@": lambda x, w, b, b3: x @ w.t(),
        "matmul": lambda x, w, b, b3: lib.matmul(x.reshape(2, 2, 8), b3),
        "bmm": lambda x, w, b, b3: lib.bmm(x.reshape(2, 2, 8), b3),
        "linear": lambda x, w, b, b3: f.linear(x, w, b),
        "addmm": lambda x, w, b, b3: lib.addmm(b, x, w.t()),
        "baddbmm": lambda x, w, b, b3: lib.baddbmm(b3[:, :2, :], x.reshape(2, 2, 8), b3),
        "einsum": lambda x, w, b, b3: lib.einsum("ij,kj->ik", x, w),
        "conv1d": lambda x, w, b, b3: f.conv1d(x.reshape(1, 4, 8), w.reshape(-1)[:36].reshape(3, 4, 3)),
        "sdpa": lambda x, w, b, b3: f.scaled_dot_product_attention(x.reshape(1, 4, 8), x.reshape(1, 4, 8),
                                                                   x.reshape(1, 4, 8)),
        "softmax": lambda x, w, b, b3: f.softmax(x, -1),
        "log_softmax": lambda x, w, b, b3: f.log_softmax(x, -1),
        "layer_norm": lambda x, w, b, b3: f.layer_norm(x, (8,), w[0], b3[0, :, 0]),
        "cross_entropy": lambda x, w, b, b3: f.cross_entropy(x, lib.tensor(TGT)),
        "nll_loss": lambda x, w, b, b3: f.nll_loss(x, lib.tensor(TGT)),
        "mse_loss": lambda x, w, b, b3: f.mse_loss(x, w[:4]),
        "l1_loss": lambda x, w, b, b3: f.l1_loss(x, w[:4]),
        "bce_logits": lambda x, w, b, b3: f.binary_cross_entropy_with_logits(x, w[:4].sigmoid()),
        "sum": lambda x, w, b, b3: x.sum(),
        "prod": lambda x, w, b, b3: (x[0] * 0.5).prod(),
        "cumsum": lambda x, w, b, b3: x.cumsum(0),
        "exp": lambda x, w, b, b3: x.exp(),
        "log": lambda x, w, b, b3: x.abs().log(),
        "pow": lambda x, w, b, b3: x.pow(2),
        "pow**": lambda x, w, b, b3: x ** 2,
        "gelu": lambda x, w, b, b3: f.gelu(x),
        "relu": lambda x, w, b, b3: f.relu(x),
        "add_f32": lambda x, w, b, b3: x + w[:4],
        "cat": lambda x, w, b, b3: lib.cat([x, w[:4]]),
        "stack": lambda x, w, b, b3: lib.stack([x, w[:4]]),
        "cdist": lambda x, w, b, b3: lib.cdist(x, w),
        "dist": lambda x, w, b, b3: lib.dist(x, w[:4]),
        "cosine_similarity": lambda x, w, b, b3: f.cosine_similarity(x, w[:4]),
        "poisson_nll_loss": lambda x, w, b, b3: f.poisson_nll_loss(x, w[:4].abs()),
        "hinge_embedding_loss": lambda x, w, b, b3: f.hinge_embedding_loss(x, w[:4].sign()),
        "multi_margin_loss": lambda x, w, b, b3: f.multi_margin_loss(x, lib.tensor(TGT, device=x.device)),
    }


def _tol(dtype_name):
    return {"bfloat16": dict(rtol=2e-2, atol=2e-2), "float16": dict(rtol=2e-3, atol=2e-3)}.get(
        dtype_name, dict(rtol=1e-5, atol=1e-5))


@pytest.mark.parametrize("low_input", [False, True], ids=["f32-in", "bf16-in"])
@pytest.mark.parametrize("name", list(_cases(mt, F)))
def test_cpu_lists_match_torch(torch, name, low_input):
    """Every listed op's result dtype and value under ``autocast("cpu")``, from float32 and from bfloat16
    activations (the weights stay float32)."""
    ours, theirs = _cases(mt, F)[name], _cases(torch, torch.nn.functional)[name]
    xs = [X, W, B, B3]
    tm = [mt.tensor(a) for a in xs]
    tt = [torch.tensor(a) for a in xs]
    if low_input:
        tm[0], tt[0] = tm[0].to(mt.bfloat16), tt[0].to(torch.bfloat16)
    with torch.autocast("cpu"):
        want = theirs(*tt)
    with mt.autocast("cpu"):
        got = ours(*tm)
    name_ = str(want.dtype).split(".")[1]
    assert got.dtype is getattr(mt, name_)
    assert_close(got.float(), want.float().numpy(), **_tol(name_))


# the CUDA lists (float16) on the device under test: the op and its expected dtype
_CUDA_EXPECT = {"mm": "float16", "matmul@": "float16", "bmm": "float16", "linear": "float16", "addmm": "float16",
                "softmax": "float32", "log_softmax": "float32", "layer_norm": "float32", "cross_entropy": "float32",
                "mse_loss": "float32", "sum": "float32", "cumsum": "float32", "exp": "float32", "log": "float32",
                "pow": "float32", "pow**": "float32", "gelu": "float16", "relu": "float16", "cat": "float32",
                "add_f32": "float32", "sdpa": "float16", "dist": "float32", "cosine_similarity": "float32",
                "poisson_nll_loss": "float32", "hinge_embedding_loss": "float32", "multi_margin_loss": "float32"}


@pytest.mark.parametrize("name", list(_CUDA_EXPECT))
def test_cuda_lists(device, torch, name):
    """``autocast("cuda")`` on the (simulated) GPU: the dtype PyTorch's CUDA lists give, and the value of PyTorch's
    op on the inputs cast the same way (float16 activations in, float32 weights)."""
    if device != "cuda":
        pytest.skip("the CUDA lists apply to CUDA tensors")
    ours, theirs = _cases(mt, F)[name], _cases(torch, torch.nn.functional)[name]
    xs = [X, W, B, B3]
    tm = [mt.tensor(a, device=device) for a in xs]
    tm[0] = tm[0].half()
    with mt.autocast("cuda"):
        got = ours(*tm)
    want_dt = _CUDA_EXPECT[name]
    assert got.dtype is getattr(mt, want_dt)
    # PyTorch's CPU op on what CUDA autocast would have fed it (float16 values, computed in float32)
    tt = [torch.tensor(a) for a in xs]
    tt[0] = tt[0].half().float()
    if want_dt == "float16":
        tt = [t.half().float() for t in tt]
    want = theirs(*tt)
    assert_close(got.float(), want.numpy(), **_tol(want_dt if want_dt == "float16" else "float16"))


def test_outside_a_region_nothing_changes(device):
    x, w = mt.tensor(X, device=device), mt.tensor(W, device=device)
    assert (x @ w.t()).dtype is mt.float32
    assert not mt.is_autocast_enabled("cpu") and not mt.is_autocast_enabled("cuda")
    assert not _autocast.state.on


def test_gradients_stay_float32_and_match_a_manual_cast(device, torch):
    """The casts are differentiable: a linear layer's float32 parameters get float32 gradients equal to those of
    an explicit bfloat16 forward (what autocast does), on every device."""
    dt = "cuda" if device == "cuda" else "cpu"
    low = mt.float16 if dt == "cuda" else mt.bfloat16
    lin = mt.nn.Linear(8, 6).to(device)
    x = mt.tensor(X, device=device)
    with mt.autocast(dt):
        y = lin(x)
        loss = F.mse_loss(y, mt.zeros(4, 6, device=device))
    assert y.dtype is low and loss.dtype is mt.float32
    loss.backward()
    assert lin.weight.grad.dtype is mt.float32 and lin.bias.grad.dtype is mt.float32
    # the same graph written by hand
    w2 = lin.weight.detach().clone().requires_grad_(True)
    b2 = lin.bias.detach().clone().requires_grad_(True)
    y2 = F.linear(x.to(low), w2.to(low), b2.to(low))
    F.mse_loss(y2.float(), mt.zeros(4, 6, device=device)).backward()
    assert_close(lin.weight.grad, to_np(w2.grad), rtol=0, atol=0)
    assert_close(lin.bias.grad, to_np(b2.grad), rtol=0, atol=0)


def test_nesting_and_enabled_false_inside():
    x, w = mt.tensor(X), mt.tensor(W)
    with mt.autocast("cpu"):
        assert (x @ w.t()).dtype is mt.bfloat16
        with mt.autocast("cpu", enabled=False):
            assert not mt.is_autocast_enabled("cpu")
            assert (x @ w.t()).dtype is mt.float32
        with mt.autocast("cpu", dtype=mt.float16):
            assert mt.get_autocast_dtype("cpu") is mt.float16
            assert (x @ w.t()).dtype is mt.float16
        assert mt.get_autocast_dtype("cpu") is mt.bfloat16
        assert (x @ w.t()).dtype is mt.bfloat16
    assert not mt.is_autocast_enabled("cpu")


def test_decorator_and_amp_namespace():
    @mt.amp.autocast("cpu")
    def f(a, b):
        return a @ b

    assert f(mt.ones(2, 2), mt.ones(2, 2)).dtype is mt.bfloat16
    assert not mt.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        mt.autocast("cpu")(3)


def test_weight_cast_is_cached_within_a_region_and_dropped_after():
    w = mt.nn.Parameter(mt.tensor(W))
    x = mt.tensor(X)
    with mt.autocast("cpu"):
        y1 = x @ w.t()
        y2 = F.linear(x, w)
        # both products cast the same weight: one cast node feeds both
        n1 = y1.grad_fn.next_functions[1][0]
        cached = _autocast.state.cache
        assert cached is not None and id(w) in cached
        with mt.autocast("cpu"):
            F.linear(x, w)
        assert _autocast.state.cache is cached  # an inner region keeps the outer one's casts
    assert _autocast.state.cache is None
    assert n1 is not None and y2.dtype is mt.bfloat16
    with mt.autocast("cpu", cache_enabled=False):
        F.linear(x, w)
        assert _autocast.state.cache is None


def test_set_and_get_functions():
    assert mt.get_autocast_dtype("cpu") is mt.bfloat16
    assert mt.get_autocast_dtype("cuda") is mt.float16
    mt.set_autocast_enabled("cpu", True)
    try:
        assert mt.is_autocast_enabled("cpu")
        assert (mt.ones(2, 2) @ mt.ones(2, 2)).dtype is mt.bfloat16
    finally:
        mt.set_autocast_enabled("cpu", False)
    assert mt.is_autocast_enabled() is False  # no argument: CUDA's, as in PyTorch
    mt.set_autocast_dtype("cpu", mt.float16)
    try:
        assert mt.get_autocast_dtype("cpu") is mt.float16
    finally:
        mt.set_autocast_dtype("cpu", mt.bfloat16)
    assert mt.amp.is_autocast_available("cpu") and mt.amp.is_autocast_available("cuda")
    assert not mt.amp.is_autocast_available("xla")


def test_bad_arguments_like_torch(torch):
    for lib in (torch, mt):
        with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
            lib.autocast(3)
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
            lib.get_autocast_dtype("foo")
        with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
            a = lib.autocast("cpu", dtype=lib.float32)
        with a:
            assert not lib.is_autocast_enabled("cpu")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xla'"):
        mt.autocast("xla")


def test_cuda_region_without_cuda_warns_and_disables(monkeypatch):
    monkeypatch.setattr(mt.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        a = mt.autocast("cuda")
    with a:
        assert not mt.is_autocast_enabled("cuda")


def test_deprecated_aliases(torch):
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        a = mt.cpu.amp.autocast()
    with a:
        assert mt.is_autocast_enabled("cpu") and mt.get_autocast_dtype("cpu") is mt.bfloat16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
            mt.cuda.amp.autocast()
        with pytest.warns(FutureWarning, match=r"torch.cuda.amp.GradScaler\(args...\)` is deprecated"):
            mt.cuda.amp.GradScaler()
    import importlib
    assert importlib.import_module("minitorch_gpu.cuda.amp").autocast is mt.cuda.amp.autocast


def test_binary_cross_entropy_is_banned_on_cuda(device):
    if device != "cuda":
        pytest.skip("PyTorch bans it under CUDA autocast only")
    p = mt.full((3,), 0.5, device=device)
    with mt.autocast("cuda"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, p)


def test_custom_fwd_casts_inputs_and_bwd_restores_the_state():
    seen = {}

    class Mul(mt.autograd.Function):
        @staticmethod
        @mt.amp.custom_fwd(device_type="cpu", cast_inputs=mt.float32)
        def forward(ctx, a, b):
            seen["fwd"] = (a.dtype, mt.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        @mt.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["bwd"] = mt.is_autocast_enabled("cpu")
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = mt.ones(3, dtype=mt.bfloat16, requires_grad=True)
    with mt.autocast("cpu"):
        y = Mul.apply(a, mt.ones(3))
    assert seen["fwd"] == (mt.float32, False) and y.dtype is mt.float32
    y.sum().backward()
    assert seen["bwd"] is False and a.grad.dtype is mt.bfloat16


def test_autocast_state_is_per_thread():
    import threading
    out = {}
    with mt.autocast("cpu"):
        t = threading.Thread(target=lambda: out.setdefault("dt", (mt.ones(2, 2) @ mt.ones(2, 2)).dtype))
        t.start()
        t.join()
    assert out["dt"] is mt.float32
