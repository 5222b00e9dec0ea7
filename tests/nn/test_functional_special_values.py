"""PyTorch parity of the nn.functional activations and losses at special values: NaN, +-inf, +-0.0, tiny and huge
numbers and the bounds of the piecewise functions, in values and gradients (also for NaN and infinite upstream
gradients). The activations are compared with PyTorch applied one element at a time (see
helpers.torch_elementwise_reference); the losses with PyTorch on the same tensors."""
import functools
import math

import numpy as np
import pytest
from helpers import assert_same_special, to_np, torch_elementwise_reference

import minitorch_gpu as mt

NAN, INF = math.nan, math.inf
VALUES = (NAN, -INF, INF, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, 6.0, -6.0, 20.0, -20.0,
          1e-30, -1e-30, 1e30, -1e30)
FLOATS = ["float32", "float64"]

ACTIVATIONS = {
    "relu": lambda F, x: F.relu(x), "relu6": lambda F, x: F.relu6(x),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2), "rrelu_eval": lambda F, x: F.rrelu(x, training=False),
    "prelu": lambda F, x: F.prelu(x, x.new_tensor([0.25])),
    "elu": lambda F, x: F.elu(x), "elu_alpha": lambda F, x: F.elu(x, alpha=0.5), "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, alpha=2.0), "hardtanh": lambda F, x: F.hardtanh(x, -2.0, 0.5),
    "softshrink": lambda F, x: F.softshrink(x), "hardshrink": lambda F, x: F.hardshrink(x, 1.0),
    "threshold": lambda F, x: F.threshold(x, 1.0, -5.0), "tanhshrink": lambda F, x: F.tanhshrink(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x), "hardswish": lambda F, x: F.hardswish(x),
    "silu": lambda F, x: F.silu(x), "mish": lambda F, x: F.mish(x), "gelu": lambda F, x: F.gelu(x),
    "gelu_tanh": lambda F, x: F.gelu(x, approximate="tanh"), "softplus": lambda F, x: F.softplus(x),
    "softplus_beta": lambda F, x: F.softplus(x, beta=2.0, threshold=5.0), "softsign": lambda F, x: F.softsign(x),
    "logsigmoid": lambda F, x: F.logsigmoid(x), "sigmoid": lambda F, x: F.sigmoid(x), "tanh": lambda F, x: F.tanh(x),
}
# the compiled CPU loops of silu and tanh-gelu (kernels/elementwise_cpu.cpp, every size): their sigmoid form keeps
# tanh-gelu's relative accuracy where PyTorch's 1 + tanh(u) rounds to 0 (from x = -6 in float32), so below -6 only
# the overflowing inputs are compared (the test after the next).
_CLAMPED_CPU_LOOPS = {"silu", "gelu_tanh"}
# relu6 and hardtanh clamp: at -0.0 PyTorch's CPU max keeps -0.0, CUDA's fmaxf (and the simulator) gives +0.0
_SIGNLESS_CLAMPS = {"relu6", "hardtanh"}


@functools.lru_cache(maxsize=None)
def _reference(name, dtype, values, upstream):
    import torch
    return torch_elementwise_reference(torch, functools.partial(ACTIVATIONS[name], torch.nn.functional), (values,),
                                       dtype, upstream)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations_match_torch_at_special_values(device, torch, name, dtype):
    values = VALUES
    if device == "cpu" and name in _CLAMPED_CPU_LOOPS:
        values = tuple(v for v in VALUES if not v <= -6)
    # a few ulp on the scale of the inputs where the formulas cancel (1 - tanh^2, PyTorch's gelu gradient)
    tol = {"ulps": 8, "atol": 16 * float(np.finfo(dtype).eps), "signed_zeros": name not in _SIGNLESS_CLAMPS}
    for upstream in (1.0, NAN, INF):
        want, (want_grad,) = _reference(name, dtype, values, upstream)
        x = mt.tensor(values, dtype=getattr(mt, dtype), device=device, requires_grad=True)
        y = ACTIVATIONS[name](mt.nn.functional, x)
        if upstream == 1.0:
            assert_same_special(to_np(y), want, dtype, what=name, inputs=[values], **tol)
        y.backward(mt.full_like(y, upstream))
        assert_same_special(to_np(x.grad), want_grad, dtype, what=f"{name} gradient (upstream {upstream})",
                            inputs=[values], **tol)


@pytest.mark.parametrize("name", sorted(_CLAMPED_CPU_LOOPS))
def test_compiled_cpu_loops_overflow_as_torch_at_large_negative_inputs(torch, name):
    """silu(-inf) and gelu(-inf, 'tanh') are NaN, at -1e30 -0.0: the sigmoid's exp overflows to inf, as PyTorch's."""
    values = (-INF, -1e30)
    want, _ = _reference(name, "float32", values, 1.0)
    got = to_np(ACTIVATIONS[name](mt.nn.functional, mt.tensor(values)))
    assert_same_special(got, want, "float32", what=name, inputs=[values])


# ---------------------------------------------------------------------- losses

X = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, 1e30, -1e30, 2.0, -3.0]  # predictions / logits
Y = [1.0, 1.0, 0.0, 0.0, 1.0, NAN, 1.0, INF, 1.0, 0.0, 2.0, -3.0]  # regression targets
P = [0.0, 1.0, 0.5, 1.0, 0.0, 0.3, 1e-30, 1.0, 0.0, 1 - 1e-7, 0.7, 1.0]  # probabilities, their bounds included
T = [0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 1.0, 1.0, 0.3, 0.0]  # probability targets
S = [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]  # +-1 labels
CLS = [0, 1, 2, 0]  # class targets of X viewed as (4, 3)
BOUNDS_A, BOUNDS_B = [1.0, -1.0, 0.5, 2.0, -0.5, 0.0], [0.0, 0.0, -0.5, 1.0, -0.5, 1.0]  # |a - b| at 1 and 0

LOSSES = {
    "mse": (lambda F, a, b: F.mse_loss(a, b, reduction="none"), X, Y),
    "mse_mean": (lambda F, a, b: F.mse_loss(a, b), X[3:], Y[3:]),
    "l1": (lambda F, a, b: F.l1_loss(a, b, reduction="none"), X, Y),
    "smooth_l1": (lambda F, a, b: F.smooth_l1_loss(a, b, reduction="none"), X, Y),
    "smooth_l1_bounds": (lambda F, a, b: F.smooth_l1_loss(a, b, reduction="none", beta=1.0), BOUNDS_A, BOUNDS_B),
    "smooth_l1_beta0": (lambda F, a, b: F.smooth_l1_loss(a, b, reduction="none", beta=0.0), X, Y),
    "huber": (lambda F, a, b: F.huber_loss(a, b, reduction="none"), X, Y),
    "huber_bounds": (lambda F, a, b: F.huber_loss(a, b, reduction="none", delta=1.0), BOUNDS_A, BOUNDS_B),
    "bce": (lambda F, a, b: F.binary_cross_entropy(a, b, reduction="none"), P, T),
    "bce_with_logits": (lambda F, a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"), X, T),
    "bce_with_logits_pos_weight": (lambda F, a, b: F.binary_cross_entropy_with_logits(
        a, b, reduction="none", pos_weight=a.new_full((12,), 2.0)), X, T),
    "soft_margin": (lambda F, a, b: F.soft_margin_loss(a, b, reduction="none"), X, S),
    "margin_ranking": (lambda F, a, b: F.margin_ranking_loss(a, b.flip(0), b, reduction="none"), X, S),
    "margin_ranking_bounds": (lambda F, a, b: F.margin_ranking_loss(a, a * 0, b, margin=0.5, reduction="none"),
                              [-0.5, 0.5, 0.0, -0.5], [1.0, -1.0, 1.0, -1.0]),
    "kl_div": (lambda F, a, b: F.kl_div(a, b, reduction="none"), X, P),
    "kl_div_log_target": (lambda F, a, b: F.kl_div(a, b, reduction="none", log_target=True), X, Y),
    "cross_entropy": (lambda F, a, b: F.cross_entropy(a.reshape(4, 3), b.long(), reduction="none"), X, CLS),
    "cross_entropy_smoothing": (lambda F, a, b: F.cross_entropy(a.reshape(4, 3), b.long(), reduction="none",
                                                                label_smoothing=0.1), X, CLS),
    "cross_entropy_-inf_logits": (lambda F, a, b: F.cross_entropy(a.reshape(4, 3), b.long(), reduction="none"),
                                  [-INF, 0, 1, -INF, -INF, -INF, 0, -INF, 2, 1e30, -1e30, 0], CLS),
    "cross_entropy_probabilities": (lambda F, a, b: F.cross_entropy(a.reshape(4, 3), b.reshape(4, 3)),
                                    [-INF, 0, 1, 1, -INF, 3, 0, 2, 2, 1, 1, 0],
                                    [0, 0.5, 0.5, 0.5, 0, 0.5, 1, 0, 0, 0.2, 0.3, 0.5]),
    "nll": (lambda F, a, b: F.nll_loss(a.reshape(4, 3), b.long(), reduction="none"), X, CLS),
    "nll_ignore_index_none": (lambda F, a, b: F.nll_loss(a.reshape(4, 3), b.long(), ignore_index=1,
                                                         reduction="none"), X, [1, 0, 1, 2]),
    "nll_weight": (lambda F, a, b: F.nll_loss(a.reshape(4, 3), b.long(), weight=a.new_tensor([0.0, 2.0, 0.5]),
                                              ignore_index=2), X, [1, 0, 2, 0]),
    # (the ignored rows finite: PyTorch's log_softmax backward gives NaN to an ignored row holding NaN or +inf,
    # ours 0)
    "cross_entropy_ignore_index": (lambda F, a, b: F.cross_entropy(a.reshape(4, 3), b.long(), ignore_index=1),
                                   [1.0, 0.5, -1.0, -INF, 0.0, -INF, 0.0, -INF, 2.0, 3.0, 1.0, 0.0], [0, 1, 2, 1]),
    "nll_ignore_index": (lambda F, a, b: F.nll_loss(a.reshape(4, 3), b.long(), ignore_index=1), X, [1, 0, 1, 2]),
    "nll_all_ignored": (lambda F, a, b: F.nll_loss(a.reshape(4, 3), b.long(), ignore_index=1), X, [1, 1, 1, 1]),
    "cosine_embedding": (lambda F, a, b: F.cosine_embedding_loss(a.reshape(4, 3), b.reshape(4, 3),
                                                                 a.new_tensor([1.0, -1, 1, -1]), reduction="none"),
                         X, Y),
    "triplet_margin": (lambda F, a, b: F.triplet_margin_loss(a.reshape(4, 3), b.reshape(4, 3), b.reshape(4, 3) * 2,
                                                             reduction="none"), X, Y),
    "pairwise_distance": (lambda F, a, b: F.pairwise_distance(a.reshape(4, 3), b.reshape(4, 3)), X, Y),
    "pairwise_distance_inf": (lambda F, a, b: F.pairwise_distance(a.reshape(4, 3), b.reshape(4, 3), p=INF), X, Y),
    "pairwise_distance_equal": (lambda F, a, b: F.pairwise_distance(a.reshape(4, 3), a.reshape(4, 3) * 1),
                                [1.0, 2, 3, 0, 0, 0, -1, 1, 2, 5, 5, 5], Y),
    "normalize": (lambda F, a, b: F.normalize(a.reshape(4, 3), dim=1), X, Y),
    "normalize_zero_rows": (lambda F, a, b: F.normalize(a.reshape(4, 3) * 0, dim=1), X, Y),
}
# a zero loss is -0.0 in PyTorch's cross-entropy (the negated log-probability 0), ours +0.0; the gradient at a class
# of weight 0 is -0.0 or +0.0 by the order of PyTorch's product
_SIGNLESS_ZEROS = {"cross_entropy", "cross_entropy_smoothing", "cross_entropy_-inf_logits", "nll", "nll_weight"}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(LOSSES))
def test_losses_match_torch_at_special_values(device, torch, case, dtype):
    fn, a, b = LOSSES[case]
    tdt, mdt = getattr(torch, dtype), getattr(mt, dtype)
    tol = {"ulps": 16, "atol": 16 * float(np.finfo(dtype).eps), "signed_zeros": case not in _SIGNLESS_ZEROS}
    for upstream in ("random", NAN):
        at = torch.tensor(a, dtype=tdt, requires_grad=True)
        am = mt.tensor(a, dtype=mdt, device=device, requires_grad=True)
        rt = fn(torch.nn.functional, at, torch.tensor(b, dtype=tdt))
        r = fn(mt.nn.functional, am, mt.tensor(b, dtype=mdt, device=device))
        assert_same_special(to_np(r), rt.detach().numpy(), dtype, what=case, **tol)
        w = (np.random.default_rng(1).standard_normal(tuple(rt.shape)) if upstream == "random"
             else np.full(tuple(rt.shape), upstream))
        rt.backward(torch.tensor(w, dtype=tdt))
        r.backward(mt.tensor(w, dtype=mdt, device=device))
        assert_same_special(to_np(am.grad), at.grad.numpy(), dtype, what=f"{case} gradient (upstream {upstream})",
                            **tol)
