"""PyTorch parity at special values: NaN, +-inf, +-0.0, +-1, tiny and huge numbers and the bounds of piecewise
ops, for every elementwise op both namespaces share and for the reductions, in values and gradients (also for NaN
and infinite upstream gradients, where PyTorch's formula multiplies or selects).

Elementwise references are PyTorch applied one element at a time: its scalar formulas, which its CUDA kernels
share. Its CPU vector loops differ from them at some special values, so a whole-tensor reference would depend on
the tensor's length (hardtanh's gradient at NaN is 1 in a loop's scalar tail and 0 in its vector lanes)."""
import functools
import math

import numpy as np
import pytest
from helpers import assert_same_special, to_np, torch_elementwise_reference

import minitorch_gpu as mt

NAN, INF = math.nan, math.inf
VALUES = [NAN, -INF, INF, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, 1e-30, -1e-30, 1e30,
          -1e30]
# pairs of these for the binary ops: every combination of the special values with each other and a few finite ones
PAIR_VALUES = [NAN, -INF, INF, -0.0, 0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30]
FLOATS = ["float32", "float64"]

UNARY = ["abs", "absolute", "acos", "arccos", "acosh", "arccosh", "asin", "arcsin", "asinh", "arcsinh", "atan",
         "arctan", "atanh", "arctanh", "ceil", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc", "erfinv", "exp", "exp2",
         "expm1", "fix", "floor", "frac", "i0", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "lgamma", "log",
         "log10", "log1p", "log2", "logical_not", "logit", "nan_to_num", "neg", "negative", "positive", "rad2deg",
         "reciprocal", "relu", "round", "rsqrt", "sgn", "sigmoid", "sign", "signbit", "sin", "sinc", "sinh", "sqrt",
         "square", "tan", "tanh", "trunc"]
BINARY = ["add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
          "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "copysign", "hypot", "logaddexp",
          "logaddexp2", "maximum", "minimum", "max", "min", "fmax", "fmin", "clamp_min", "clamp_max", "eq", "ne",
          "not_equal", "lt", "less", "le", "less_equal", "gt", "greater", "ge", "greater_equal", "logical_and",
          "logical_or", "logical_xor", "heaviside", "ldexp", "xlogy"]
# shared names that are not elementwise maps of a float tensor, or that take other arguments
NOT_ELEMENTWISE = {"argsort", "asarray", "atleast_1d", "cartesian_prod", "clone", "flatten", "flipud", "msort",
                   "ones_like", "zeros_like", "ravel", "squeeze", "t", "clamp", "clip", "cumsum", "cumprod",
                   "softmax", "log_softmax", "sort", "dist", "cdist", "dot", "inner", "outer", "kron", "matmul",
                   "cross", "vdot", "tensordot", "stack", "cat", "concat", "concatenate", "hstack", "vstack",
                   "dstack", "column_stack", "row_stack", "broadcast_tensors", "meshgrid", "block_diag",
                   "atleast_2d", "atleast_3d", "ger", "chain_matmul", "mm", "einsum", "take", "masked_select",
                   "full_like", "index_select", "isin", "isclose", "equal", "allclose", "trapz", "trapezoid",
                   "cumulative_trapezoid", "histc", "bucketize", "searchsorted", "cov", "corrcoef", "polar",
                   "complex", "result_type", "promote_types", "can_cast", "where", "lerp", "tensor", "as_tensor",
                   "dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "rrelu", "bernoulli",
                   "poisson", "multinomial", "normal", "empty_like", "rand_like", "randn_like", "randint_like",
                   "save", "load", "compile", "from_dlpack", "unique", "unique_consecutive"}
# ops whose result at a tie of -0.0 and +0.0 is either zero: PyTorch's CPU and CUDA kernels differ there
SIGNLESS_TIES = {"maximum", "minimum", "max", "min", "fmax", "fmin", "clamp_min", "clamp_max"}


def _fn(lib, name):
    return getattr(lib, name)


@functools.lru_cache(maxsize=None)
def _reference(name, dtype, cols, upstream):
    import torch
    return torch_elementwise_reference(torch, _fn(torch, name), cols, dtype, upstream)


def _ours(name, dtype, cols, upstream, device):
    xs = [mt.tensor(np.array(c), dtype=getattr(mt, dtype), device=device, requires_grad=True) for c in cols]
    y = _fn(mt, name)(*xs)
    values = to_np(y)
    if not y.requires_grad:
        return values, None
    y.backward(mt.full_like(y, upstream))
    return values, [np.zeros(len(cols[0])) if x.grad is None else to_np(x.grad) for x in xs]


def _check(name, dtype, cols, device, *, ulps=4, signed_zeros=True, exact_zeros=True, grad_where=None):
    # an absolute tolerance of a few ulp on the scale of the inputs, for results that cancel (1 - tanh(x)^2 near
    # 1, digamma near its zeros); a zero must still be an exact zero
    atol = 4 * float(np.finfo(dtype).eps)
    for upstream in (1.0, NAN, INF):
        want, want_grads = _reference(name, dtype, cols, upstream)
        got, got_grads = _ours(name, dtype, cols, upstream, device)
        if upstream == 1.0:
            assert got.dtype.kind == want.dtype.kind, f"{name}: dtype {got.dtype} != {want.dtype}"
            assert_same_special(got, want, dtype, ulps=ulps, atol=atol, signed_zeros=signed_zeros,
                                exact_zeros=exact_zeros, what=f"{name} {dtype}", inputs=cols)
        if want_grads is None:
            # not differentiable in PyTorch (comparisons, rounding to integers as bools): nor in ours, except
            # floor_divide, whose backward PyTorch refuses and ours gives 0
            assert got_grads is None or name == "floor_divide", f"{name}: differentiable in ours only"
            return
        assert got_grads is not None, f"{name}: not differentiable in ours"
        keep = np.ones(len(cols[0]), bool) if grad_where is None else grad_where(*map(np.array, cols))
        for i, (g, w) in enumerate(zip(got_grads, want_grads)):
            assert_same_special(g[keep], w[keep], dtype, ulps=ulps, atol=atol, signed_zeros=signed_zeros,
                                what=f"{name} {dtype} d/dinput{i} (upstream {upstream})",
                                inputs=[np.array(c)[keep] for c in cols])


def test_the_sweep_covers_every_shared_elementwise_op(torch):
    """Every function of both namespaces that maps a float tensor (or two) elementwise is in UNARY or BINARY."""
    x = torch.tensor([0.5, 0.25, 2.0])
    y = torch.tensor([1.5, 2.0, 0.75])
    # (set_*, use_*, seeds and sparse constructors are not called: they change global state or warn)
    shared = sorted(n for n in dir(torch) if not n.startswith(("_", "set_", "use_")) and not n.endswith("_")
                    and "seed" not in n and "sparse" not in n and hasattr(mt, n) and n not in NOT_ELEMENTWISE
                    and callable(getattr(torch, n)) and not isinstance(getattr(torch, n), type))
    missing = []
    for n in shared:
        for args, listed in (((x,), UNARY), ((x, y), BINARY)):
            try:
                r = getattr(torch, n)(*args)
            except Exception:  # not this arity
                continue
            if isinstance(r, torch.Tensor) and r.shape == x.shape and n not in listed:
                missing.append(n)
    assert not missing, f"add these to the special-value sweep (or NOT_ELEMENTWISE, with a reason): {missing}"


def _unary_grad_where(name):
    if name == "digamma":
        # trigamma at a pole: PyTorch evaluates sin(pi x) in the input's dtype, so its "infinity" is 1e15 in
        # float32 and 6.6e32 in float64; ours is always the float64 one
        return lambda x: ~((x <= 0) & (x == np.floor(x)))
    return None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch_at_special_values(device, torch, name, dtype):
    values = VALUES
    if name == "lgamma" and device == "cpu" and dtype == "float32":
        # its zeros at 1 and 2 in the compiled float32 loop: test_lgamma_is_exactly_zero_at_one_and_two
        values = [v for v in VALUES if v not in (1.0, 2.0)]
    _check(name, dtype, (tuple(values),), device, grad_where=_unary_grad_where(name))


_A, _B = (tuple(c) for c in np.array(np.meshgrid(PAIR_VALUES, PAIR_VALUES, indexing="ij")).reshape(2, -1))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_matches_torch_at_special_values(device, torch, name, dtype):
    # logaddexp2(-1, -1) is exactly 0 in ours, PyTorch's rounding leaves -1.1e-8 (float32)
    signed = name not in SIGNLESS_TIES
    _check(name, dtype, (_A, _B), device, signed_zeros=signed, exact_zeros=name != "logaddexp2")


SCALAR_CASES = {
    # tensor ** number: PyTorch's rows for 2, 3, 0.5, -0.5, -1, -2 (sqrt: -0.0 ** 0.5 is -0.0, -inf ** 0.5 NaN)
    # and pow for the rest, infinite exponents included
    **{f"pow_{e}": (lambda e: lambda lib, x: lib.pow(x, e))(e)
       for e in (2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 0.0, 1.0, 2.5, INF, -INF, NAN)},
    **{f"rpow_{b}": (lambda b: lambda lib, x: lib.pow(b, x))(b) for b in (2.0, 0.0, 1.0, -2.0, INF, NAN)},
    "clamp": lambda lib, x: lib.clamp(x, -1.0, 2.0),
    "clamp_inverted": lambda lib, x: lib.clamp(x, 2.0, -1.0),
    "clamp_nan_bound": lambda lib, x: lib.clamp(x, min=NAN),
    "clamp_tensor_bounds": lambda lib, x: lib.clamp(x, x * 0 - 1, lib.full_like(x, NAN)),
    "where": lambda lib, x: lib.where(x > 0, x, -x),
    "div_floor": lambda lib, x: lib.div(x, -2.5, rounding_mode="floor"),
    "div_trunc": lambda lib, x: lib.div(x, 0.0, rounding_mode="trunc"),
    "fmod_inf": lambda lib, x: lib.fmod(x, INF),
    "copysign_nan": lambda lib, x: lib.copysign(x, NAN),
    "copysign_neg_zero": lambda lib, x: lib.copysign(x, -0.0),
    "lerp": lambda lib, x: lib.lerp(lib.zeros_like(x), lib.ones_like(x), x),
    "addcdiv": lambda lib, x: lib.addcdiv(x, x, x.flip(0)),
    "round_decimals": lambda lib, x: lib.round(x * 1.5, decimals=1),
    "nan_to_num_args": lambda lib, x: lib.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
    "softplus": lambda lib, x: lib.nn.functional.softplus(x, beta=-2.0, threshold=1.0),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(SCALAR_CASES))
def test_ops_with_numbers_match_torch_at_special_values(device, torch, case, dtype):
    fn = SCALAR_CASES[case]
    signed = not case.startswith("clamp")
    for upstream in (1.0, NAN):
        xt = torch.tensor(VALUES, dtype=getattr(torch, dtype), requires_grad=True)
        x = mt.tensor(VALUES, dtype=getattr(mt, dtype), device=device, requires_grad=True)
        yt, y = fn(torch, xt), fn(mt, x)
        assert_same_special(to_np(y), yt.detach().numpy(), dtype, signed_zeros=signed, what=case, inputs=[VALUES])
        yt.backward(torch.full_like(yt, upstream))
        y.backward(mt.full_like(y, upstream))
        assert_same_special(to_np(x.grad), xt.grad.numpy(), dtype, signed_zeros=signed,
                            what=f"{case} gradient (upstream {upstream})", inputs=[VALUES])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_unary_in_half_precision_matches_torch(device, torch, dtype):
    """The 2-byte floats compute in float32 and round once, as PyTorch's kernels do. (Not erf: PyTorch's
    bfloat16 erf(1e-30) is 0, the float32 value rounded is 1.1e-30.)"""
    for name in ("abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "reciprocal", "sign", "nan_to_num",
                 "floor", "round", "expm1", "log1p", "sin", "relu"):
        want, _ = _reference(name, dtype, (tuple(VALUES),), 1.0)
        y = _fn(mt, name)(mt.tensor(VALUES, dtype=getattr(mt, dtype), device=device))
        assert y.dtype is getattr(mt, dtype), f"{name}: {y.dtype}"
        assert_same_special(to_np(y), want, dtype, ulps=1, what=f"{name} {dtype}", inputs=[VALUES])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["add", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2",
                                  "copysign", "hypot", "logaddexp", "maximum", "fmin", "lt"])
def test_binary_in_half_precision_matches_torch(device, torch, name, dtype):
    want, want_grads = _reference(name, dtype, (_A, _B), 1.0)
    xs = [mt.tensor(np.array(c), dtype=getattr(mt, dtype), device=device, requires_grad=True) for c in (_A, _B)]
    y = _fn(mt, name)(*xs)
    signed = name not in SIGNLESS_TIES and name != "remainder"
    assert_same_special(to_np(y), want, dtype, ulps=1, signed_zeros=signed, what=f"{name} {dtype}", inputs=[_A, _B])
    if want_grads is not None:
        y.backward(mt.ones_like(y))
        for i, (x, w) in enumerate(zip(xs, want_grads)):
            assert_same_special(to_np(x.grad), w, dtype, ulps=1, signed_zeros=signed,
                                what=f"{name} {dtype} d/dinput{i}", inputs=[_A, _B])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["tanh", "sigmoid", "relu", "exp", "sqrt"])
def test_half_precision_gradients_round_once(device, torch, name, dtype):
    """g * (1 - y^2) and the other gradients of 2-byte floats in float32, rounded once, as PyTorch's kernels do."""
    want, (want_grad,) = _reference(name, dtype, (tuple(VALUES),), 1.0)
    x = mt.tensor(VALUES, dtype=getattr(mt, dtype), device=device, requires_grad=True)
    y = _fn(mt, name)(x)
    assert_same_special(to_np(y), want, dtype, ulps=1, what=f"{name} {dtype}", inputs=[VALUES])
    y.backward(mt.ones_like(y))
    assert_same_special(to_np(x.grad), want_grad, dtype, ulps=1, what=f"{name} {dtype} gradient", inputs=[VALUES])


def test_lgamma_is_exactly_zero_at_one_and_two(device, torch):
    x = np.array([1.0, 2.0])
    for dtype in FLOATS:
        if device == "cpu" and dtype == "float32":
            continue  # the compiled float32 loop, below
        assert_same_special(to_np(mt.lgamma(mt.tensor(x, dtype=getattr(mt, dtype), device=device))),
                            torch.lgamma(torch.tensor(x)).numpy(), dtype, ulps=0, what=f"lgamma {dtype}")


def test_lgamma_is_exactly_zero_at_one_and_two_in_compiled_float32():
    x = np.array([1.0, 2.0], np.float32)
    assert to_np(mt.lgamma(mt.tensor(x))).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("n", [5, 5000])  # the NumPy body, and on the CPU the compiled float32 loop
@pytest.mark.parametrize("dtype", FLOATS)
def test_remainder_keeps_the_sign_of_fmods_zero(device, torch, dtype, n):
    """PyTorch keeps fmod's zero (the dividend's sign): remainder(-0.0, 1.0) is -0.0, remainder(3.0, -1.0) 0.0."""
    a = np.resize(np.array([-0.0, 0.0, 3.0, -3.0, -0.0, 6.0, -6.0]), n).astype(dtype)
    b = np.resize(np.array([1.0, -1.0, -1.0, 1.0, INF, 2.0, -3.0]), n).astype(dtype)
    got = to_np(mt.remainder(mt.tensor(a, device=device), mt.tensor(b, device=device)))
    assert_same_special(got, torch.remainder(torch.tensor(a), torch.tensor(b)).numpy(), dtype, ulps=0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sigmoid_of_minus_inf_is_zero_in_the_compiled_cpu_loop(dtype):
    x = np.zeros(5000, dtype)
    x[0] = -INF
    assert to_np(mt.sigmoid(mt.tensor(x)))[0] == 0.0


# ---------------------------------------------------------------------- reductions

# rows: plain, NaNs, +inf, -inf, all -inf, +inf and -inf, ties, signed zeros, zeros with ties
TIES = np.array([[1.0, 3.0, -2.0, 3.0, 0.5],
                 [1.0, NAN, -2.0, 3.0, NAN],
                 [1.0, INF, -2.0, INF, 0.5],
                 [-INF, 1.0, -INF, 2.0, 0.5],
                 [-INF, -INF, -INF, -INF, -INF],
                 [INF, -INF, 1.0, 2.0, 0.5],
                 [2.0, 2.0, 2.0, 2.0, 2.0],
                 [-0.0, 0.0, -0.0, 0.0, -0.0],
                 [0.0, 1.0, 0.0, 2.0, 0.0]])
# the same specials without ties, where an index (and so a gradient) is unambiguous
DISTINCT = np.array([[1.0, 3.0, -2.0, 4.0, 0.5],
                     [1.0, NAN, -2.0, 3.0, 0.0],
                     [1.0, INF, -2.0, 5.0, 0.5],
                     [-INF, 1.0, 7.0, 2.0, 0.5],
                     [INF, -INF, 1.0, 2.0, 0.5],
                     [-0.0, 1.0, 3.0, -1.0, 2.0]])

# (function, input): values and gradients (upstream random, then NaN) compared with PyTorch's on the same tensor
REDUCTIONS = {
    "sum": (lambda lib, x: x.sum(1), TIES), "sum_all": (lambda lib, x: x.sum(), TIES),
    "mean": (lambda lib, x: x.mean(1), TIES), "prod": (lambda lib, x: x.prod(1), TIES),
    "prod_dim0": (lambda lib, x: x.prod(0), TIES),
    "amax": (lambda lib, x: x.amax(1), TIES), "amin": (lambda lib, x: x.amin(1), TIES),
    "amax_dim0": (lambda lib, x: x.amax(0), TIES), "amax_all": (lambda lib, x: x[6:].amax(), TIES),
    "max_dim": (lambda lib, x: x.max(1), DISTINCT), "min_dim": (lambda lib, x: x.min(1), DISTINCT),
    "max_keepdim": (lambda lib, x: lib.max(x, 0, keepdim=True), DISTINCT),
    "argmax": (lambda lib, x: x.argmax(1), DISTINCT), "argmin": (lambda lib, x: x.argmin(1), DISTINCT),
    "argmax_all": (lambda lib, x: x.argmax(), DISTINCT),
    "median": (lambda lib, x: x.median(1), DISTINCT),
    "std": (lambda lib, x: x.std(1), TIES), "var": (lambda lib, x: x.var(1, correction=0), TIES),
    "std_all": (lambda lib, x: x.std(), TIES),
    "logsumexp": (lambda lib, x: x.logsumexp(1), TIES), "logsumexp_dim0": (lambda lib, x: x.logsumexp(0), TIES),
    "norm_0": (lambda lib, x: x.norm(p=0, dim=1), TIES), "norm_1": (lambda lib, x: x.norm(p=1, dim=1), TIES),
    "norm_2": (lambda lib, x: x.norm(dim=1), TIES), "norm_3": (lambda lib, x: x.norm(p=3, dim=1), TIES),
    "norm_inf": (lambda lib, x: x.norm(p=INF, dim=1), TIES), "norm_-inf": (lambda lib, x: x.norm(p=-INF, dim=1), TIES),
    "norm_1.5": (lambda lib, x: x.norm(p=1.5, dim=1), TIES), "norm_0.5": (lambda lib, x: x.norm(p=0.5, dim=1), TIES),
    "vector_norm": (lambda lib, x: lib.linalg.vector_norm(x, dim=1), TIES),
    "cumsum": (lambda lib, x: x.cumsum(1), TIES), "cumprod": (lambda lib, x: x.cumprod(1), TIES),
    "sort": (lambda lib, x: x.sort(1), DISTINCT), "sort_descending": (lambda lib, x: x.sort(1, descending=True), DISTINCT),
    "argsort": (lambda lib, x: x.argsort(1), DISTINCT),
    "topk": (lambda lib, x: x.topk(2, 1), DISTINCT), "topk_smallest": (lambda lib, x: x.topk(2, 1, largest=False), DISTINCT),
    "kthvalue": (lambda lib, x: x.kthvalue(2, 1), DISTINCT),
    "softmax": (lambda lib, x: x.softmax(1), TIES), "log_softmax": (lambda lib, x: x.log_softmax(1), TIES),
    "softmax_dim0": (lambda lib, x: x.softmax(0), TIES),
    "any": (lambda lib, x: x.any(1), TIES), "all": (lambda lib, x: x.all(1), TIES),
    "count_nonzero": (lambda lib, x: lib.count_nonzero(x, dim=1), TIES),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(REDUCTIONS))
def test_reductions_match_torch_at_special_values(device, torch, case, dtype):
    fn, a = REDUCTIONS[case]
    tdt, mdt = getattr(torch, dtype), getattr(mt, dtype)
    for upstream in ("random", NAN):
        xt = torch.tensor(a, dtype=tdt, requires_grad=True)
        x = mt.tensor(a, dtype=mdt, device=device, requires_grad=True)
        rt, r = fn(torch, xt), fn(mt, x)
        rts, rs = (list(rt), list(r)) if isinstance(rt, tuple) else ([rt], [r])
        assert len(rs) == len(rts)
        # a few ulp per element summed, relative and on the scale of 1 (the sums' order differs from PyTorch's)
        tol = {"ulps": 4 * a.shape[1], "atol": 4 * a.shape[1] * float(np.finfo(dtype).eps)}
        for o, t in zip(rs, rts):
            assert_same_special(to_np(o), t.detach().numpy(), dtype, what=case, **tol)
        if not rts[0].requires_grad:
            return
        w = (np.random.default_rng(0).standard_normal(tuple(rts[0].shape)) if upstream == "random"
             else np.full(tuple(rts[0].shape), upstream))
        rts[0].backward(torch.tensor(w, dtype=tdt))
        rs[0].backward(mt.tensor(w, dtype=mdt, device=device))
        # (PyTorch leaves the gradient of the 0-norm undefined: zeros)
        want = np.zeros(a.shape) if xt.grad is None else xt.grad.numpy()
        assert_same_special(to_np(x.grad), want, dtype, what=f"{case} gradient (upstream {upstream})", **tol)


@pytest.mark.parametrize("case", ["max_all", "min_all", "median_all"])
def test_reductions_to_one_value_split_the_gradient_among_ties(device, torch, case):
    """max(), min() and median() without a dim: the gradient is shared by every element equal to the result (NaN
    included). With a NaN, infinite or negative upstream gradient PyTorch's CPU and CUDA kernels differ (its CPU
    fills zeros around the ties, CUDA multiplies a mask), so the upstream gradient here is positive."""
    op = case.split("_")[0]
    for a in (TIES[6:], TIES[1:2], TIES[3:5], TIES[:3]):
        xt = torch.tensor(a, requires_grad=True)
        x = mt.tensor(a, device=device, requires_grad=True)
        rt, r = getattr(xt, op)(), getattr(x, op)()
        assert_same_special(to_np(r), rt.detach().numpy(), "float64", signed_zeros=False, what=case)
        (rt * 3.0).backward()
        (r * 3.0).backward()
        assert_same_special(to_np(x.grad), xt.grad.numpy(), "float64", what=f"{case} gradient")


@pytest.mark.parametrize("case", ["sort", "topk", "kthvalue", "max_dim", "median"])
def test_values_and_indices_at_ties_and_nans(device, torch, case):
    """Which of equal elements an index names is not specified in PyTorch (its CPU and CUDA kernels differ); the
    values must agree, NaN ordered as the largest, and each index must name an element with its value."""
    fns = {"sort": lambda x: x.sort(1), "topk": lambda x: x.topk(3, 1), "kthvalue": lambda x: x.kthvalue(3, 1),
           "max_dim": lambda x: x.max(1), "median": lambda x: x.median(1)}
    values, indices = fns[case](mt.tensor(TIES, device=device))
    want = fns[case](torch.tensor(TIES))[0].numpy()
    assert_same_special(to_np(values), want, "float64", signed_zeros=False, what=case)
    idx = to_np(indices)
    picked = np.take_along_axis(TIES, idx if idx.ndim == 2 else idx[:, None], 1).reshape(want.shape)
    assert_same_special(picked, want, "float64", signed_zeros=False, what=f"{case} indices")
