"""The list operations in the top-level namespace (``mt._foreach_*``, PyTorch's ``torch._foreach_*``) give
PyTorch's values on every device, with a number, one number per tensor, a list of tensors or a 0-d tensor as
the other operand; the in-place forms write their first list and bump its version counters."""
import numpy as np
import pytest

import minitorch_gpu as mt
from helpers import assert_close

SHAPES = [(3, 4), (5,), ()]


def _lists(lib, device=None, seed=0, positive=False, k=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        arrays = [rng.standard_normal(s) for s in SHAPES]
        if positive:
            arrays = [np.abs(a) + 0.5 for a in arrays]
        out.append([lib.tensor(a, device=device) if device else lib.tensor(a) for a in arrays])
    return out


UNARY = ["neg", "sqrt", "sign", "abs", "reciprocal", "exp", "log"]
BINARY_SCALAR = [("add", 0.5), ("sub", 0.25), ("mul", -1.5), ("div", 4.0), ("maximum", 0.1), ("minimum", -0.1),
                 ("pow", 2.0)]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("inplace", [False, True])
def test_unary(device, torch, name, inplace):
    positive = name in ("sqrt", "log")
    (xs,) = _lists(mt, device, positive=positive)
    (txs,) = _lists(torch, positive=positive)
    fn = name + ("_" if inplace else "")
    versions = [x._version for x in xs]
    got = getattr(mt, "_foreach_" + fn)(xs)
    expected = getattr(torch, "_foreach_" + fn)(txs)
    if inplace:
        assert got is xs or got is None or list(got) == xs
        assert all(x._version > v for x, v in zip(xs, versions))
        got, expected = xs, txs
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,scalar", BINARY_SCALAR)
@pytest.mark.parametrize("other_kind", ["number", "numbers", "tensors", "0-d tensor"])
@pytest.mark.parametrize("inplace", [False, True])
def test_binary(device, torch, name, scalar, other_kind, inplace):
    xs, ys = _lists(mt, device, positive=name == "pow", k=2)
    txs, tys = _lists(torch, positive=name == "pow", k=2)
    others = {"number": (scalar, scalar), "numbers": ([scalar, -scalar, 2 * scalar],) * 2,
              "tensors": (ys, tys), "0-d tensor": (mt.tensor(scalar), torch.tensor(scalar))}[other_kind]
    fn = "_foreach_" + name + ("_" if inplace else "")
    got = getattr(mt, fn)(xs, others[0])
    expected = getattr(torch, fn)(txs, others[1])
    if inplace:
        got, expected = xs, txs
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha(device, torch, name):
    xs, ys = _lists(mt, device, k=2)
    txs, tys = _lists(torch, k=2)
    for g, e in zip(getattr(mt, f"_foreach_{name}")(xs, ys, alpha=-0.5),
                    getattr(torch, f"_foreach_{name}")(txs, tys, alpha=-0.5)):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


def test_pow_with_a_number_base(device, torch):
    (xs,) = _lists(mt, device)
    (txs,) = _lists(torch)
    for g, e in zip(mt._foreach_pow(0.9, xs), torch._foreach_pow(0.9, txs)):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", [0.5, [0.5, -1.0, 2.0]])
@pytest.mark.parametrize("inplace", [False, True])
def test_ternary(device, torch, name, value, inplace):
    xs, ys, zs = _lists(mt, device, positive=True, k=3)
    txs, tys, tzs = _lists(torch, positive=True, k=3)
    fn = "_foreach_" + name + ("_" if inplace else "")
    got = getattr(mt, fn)(xs, ys, zs, value)
    expected = getattr(torch, fn)(txs, tys, tzs, value)
    if inplace:
        got, expected = xs, txs
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("inplace", [False, True])
def test_lerp(device, torch, inplace):
    xs, ys = _lists(mt, device, k=2)
    txs, tys = _lists(torch, k=2)
    fn = "_foreach_lerp" + ("_" if inplace else "")
    got = getattr(mt, fn)(xs, ys, 0.3)
    expected = getattr(torch, fn)(txs, tys, 0.3)
    if inplace:
        got, expected = xs, txs
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


def test_copy_and_zero(device, torch):
    xs, ys = _lists(mt, device, k=2)
    mt._foreach_copy_(xs, [y.float() for y in ys])
    for x, y in zip(xs, ys):
        assert x.dtype == mt.float64
        assert_close(x, y.float().double(), rtol=0, atol=0)
    versions = [x._version for x in xs]
    mt._foreach_zero_(xs)
    assert all(x._version > v for x, v in zip(xs, versions))
    for x in xs:
        assert not x.abs().sum().item()


def test_norm(device, torch):
    (xs,) = _lists(mt, device)
    (txs,) = _lists(torch)
    for g, e in zip(mt._foreach_norm(xs), torch._foreach_norm(txs)):
        assert_close(g, e, rtol=1e-12, atol=1e-14)


def test_division_by_zero_is_silent_as_in_torch(device, torch):
    import warnings

    (xs,) = _lists(mt, device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = mt._foreach_div(xs, 0.0)
        mt._foreach_reciprocal_(out)
    for o in out:
        assert not o.abs().sum().item()  # 1 / (x / 0) is 0 (signed) everywhere


def test_the_namespace_holds_pytorchs_names(torch):
    names = ["_foreach_add_", "_foreach_mul_", "_foreach_addcmul_", "_foreach_addcdiv_", "_foreach_lerp_",
             "_foreach_sqrt", "_foreach_div_", "_foreach_maximum_", "_foreach_neg", "_foreach_sub_", "_foreach_pow",
             "_foreach_add", "_foreach_mul", "_foreach_sign_", "_foreach_zero_", "_foreach_abs_", "_foreach_copy_",
             "_foreach_reciprocal_", "_foreach_neg_", "_foreach_sub", "_foreach_sqrt_", "_foreach_norm"]
    for name in names:
        assert hasattr(torch, name) and callable(getattr(mt, name)), name
