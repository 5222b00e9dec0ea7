"""Property tests of ``x[index]`` and ``x[index] = v``: random combinations of ints, slices with steps,
None, Ellipsis, integer index arrays (broadcast together), boolean masks and Python bools, on random
shapes including 0-d and empty tensors and non-contiguous (strided) inputs.

Every result must match PyTorch (values, shape, gradient), and NumPy wherever NumPy and PyTorch agree
(they differ when an int and an index array are separated by a slice: NumPy moves the indexed dims to the
front, PyTorch applies the int first as a view). A purely basic index must give a view."""
import warnings

import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies
given = hypothesis.given

SETTINGS = hypothesis.settings(max_examples=50, deadline=None,
                               suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])


@st.composite
def index_cases(draw):
    """(array, layout, index spec): the spec is a list of (kind, value) with NumPy values."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    layout = draw(st.sampled_from(["contiguous", "strided"])) if ndim else "contiguous"

    # the kinds first (each consumes dims), then their values once each one's dim is known
    kinds = []
    used = 0
    has_ellipsis = False
    adv_mode = draw(st.sampled_from(["arrays", "mask", "none"]))
    mask_used = False
    for _ in range(draw(st.integers(0, ndim + 2))):
        options = ["none", "bool"]
        if used < ndim:
            options += ["int", "slice", "slice"]
            if adv_mode == "arrays":
                options.append("array")
            if adv_mode == "mask" and not mask_used:
                options.append("mask")
        if not has_ellipsis:
            options.append("ellipsis")
        kind = draw(st.sampled_from(options))
        if kind == "mask":
            k = draw(st.integers(1, ndim - used))
            kinds.append(("mask", k))
            used += k
            mask_used = True
        elif kind in ("int", "slice", "array"):
            kinds.append((kind, 1))
            used += 1
        else:
            if kind == "ellipsis":
                has_ellipsis = True
            kinds.append((kind, 0))
    # dims each item starts at: items after the Ellipsis index the trailing dims
    starts = []
    dim = 0
    for i, (kind, k) in enumerate(kinds):
        if kind == "ellipsis":
            dim += ndim - used
        starts.append(dim)
        dim += k
    bshape = draw(st.sampled_from([(2,), (1,), (3,), (2, 3), (0,)]))
    spec = []
    for (kind, k), d in zip(kinds, starts):
        if kind == "int":
            n = shape[d]
            if n == 0:
                spec.append(("slice", slice(None)))
                continue
            v = draw(st.integers(-n, n - 1))
            spec.append(("int", v) if draw(st.booleans()) else ("int0d", v))
        elif kind == "slice":
            n = shape[d]
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            spec.append(("slice", slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3])))))
        elif kind == "array":
            n = shape[d]
            ashape = tuple(1 if draw(st.booleans()) and i > 0 else s for i, s in enumerate(bshape))
            if draw(st.booleans()):
                ashape = ashape[1:] or ashape
            if n == 0:
                spec.append(("array", np.zeros((0,), dtype=np.int64)))
                continue
            spec.append(("array", rng.integers(-n, n, size=ashape)))
        elif kind == "mask":
            spec.append(("mask", rng.uniform(size=shape[d:d + k]) > 0.5))
        elif kind == "bool":
            spec.append(("bool", draw(st.booleans())))
        elif kind == "none":
            spec.append(("none", None))
        else:
            spec.append(("ellipsis", Ellipsis))
    a = rng.standard_normal(shape)
    return a, layout, spec


def _index(spec, lib, device=None):
    """The index for NumPy (lib None), torch or mt."""
    out = []
    for kind, v in spec:
        if kind in ("array", "mask"):
            if lib is None:
                out.append(v)
            elif lib is mt:
                out.append(mt.tensor(v, device=device))
            else:
                out.append(lib.tensor(v))
        elif kind == "int0d":
            out.append(v if lib is None else (mt.tensor(v, device=device) if lib is mt else lib.tensor(v)))
        elif kind == "none":
            out.append(None)
        else:
            out.append(v)
    return tuple(out)


def _mt_input(a, layout, device, requires_grad=False):
    if layout == "strided":
        base = np.repeat(a, 2, axis=-1)
        x = mt.tensor(base, device=device)[..., ::2]
        assert not x.is_contiguous() or a.shape[-1] <= 1 or a.size == 0
        if requires_grad:
            # a non-contiguous leaf: the strided view of a fresh leaf's storage, detached
            x = x.detach().requires_grad_()
        return x
    return mt.tensor(a, device=device, requires_grad=requires_grad)


def _numpy_result(a, spec):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return a[_index(spec, None)]
    except (IndexError, ValueError):
        return None


def _is_basic(spec):
    return all(kind in ("int", "int0d", "slice", "none", "ellipsis") for kind, _ in spec)


def _torch_result(torch, a, spec):
    try:
        return torch.tensor(a)[_index(spec, torch)]
    except (IndexError, RuntimeError):
        return None


@SETTINGS
@given(case=index_cases())
def test_getitem_matches_torch_and_numpy(device, torch, case):
    a, layout, spec = case
    t_res = _torch_result(torch, a, spec)
    x = _mt_input(a, layout, device)
    if t_res is None:
        # PyTorch refuses it (index arrays that do not broadcast together): so must we
        with pytest.raises((IndexError, RuntimeError)):
            x[_index(spec, mt, device)]
        return
    r = x[_index(spec, mt, device)]
    assert tuple(r.shape) == tuple(t_res.shape)
    assert_close(r, t_res.numpy(), rtol=0, atol=0)
    n_res = _numpy_result(a, spec)
    if n_res is not None and n_res.shape == tuple(t_res.shape) and np.array_equal(n_res, t_res.numpy()):
        assert_close(r, n_res, rtol=0, atol=0)
    if _is_basic(spec):
        root = x if x._base is None else x._base
        assert r._base is root
        if r.numel():
            # a write through the view reaches the input
            r.mul_(0)
            assert_close(x[_index(spec, mt, device)], np.zeros(r.shape))
    else:
        assert r._base is None


@SETTINGS
@given(case=index_cases())
def test_getitem_gradient_matches_torch(device, torch, case):
    a, layout, spec = case
    t_res = _torch_result(torch, a, spec)
    hypothesis.assume(t_res is not None)
    tx = torch.tensor(a, requires_grad=True)
    x = _mt_input(a, layout, device, requires_grad=True)
    w = np.random.default_rng(1).standard_normal(tuple(t_res.shape))
    (tx[_index(spec, torch)] * torch.tensor(w)).sum().backward()
    (x[_index(spec, mt, device)] * mt.tensor(w, device=device)).sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(case=index_cases(), leading_one=st.booleans(), scalar=st.booleans())
def test_setitem_matches_torch(device, torch, case, leading_one, scalar):
    a, layout, spec = case
    t_res = _torch_result(torch, a, spec)
    hypothesis.assume(t_res is not None)
    rng = np.random.default_rng(2)
    if scalar:
        v_t = v_m = 2.5
    else:
        shape = tuple(t_res.shape)
        # values broadcast: drop the leading dim, or add a leading 1
        if shape and not leading_one:
            shape = shape[1:]
        elif leading_one:
            shape = (1,) + shape
        v = rng.standard_normal(shape)
        v_t, v_m = torch.tensor(v), mt.tensor(v, device=device)
    tx = torch.tensor(a)
    x = _mt_input(a, layout, device)
    try:
        tx[_index(spec, torch)] = v_t
    except RuntimeError:
        with pytest.raises(RuntimeError):
            x[_index(spec, mt, device)] = v_m
        return
    version = x._version
    x[_index(spec, mt, device)] = v_m
    assert x._version == version + 1
    assert_close(x, tx.numpy(), rtol=0, atol=0)


@SETTINGS
@given(case=index_cases())
def test_setitem_gradients_match_torch(device, torch, case):
    a, layout, spec = case
    t_res = _torch_result(torch, a, spec)
    hypothesis.assume(t_res is not None)
    rng = np.random.default_rng(3)
    v = rng.standard_normal(tuple(t_res.shape))
    w = rng.standard_normal(a.shape)

    def run(lib, x, val, weight, index):
        y = x * 2
        y[index] = val * 3
        return (y * weight).sum()
    tx, tv = torch.tensor(a, requires_grad=True), torch.tensor(v, requires_grad=True)
    run(torch, tx, tv, torch.tensor(w), _index(spec, torch)).backward()
    x = _mt_input(a, layout, device, requires_grad=True)
    mv = mt.tensor(v, device=device, requires_grad=True)
    run(mt, x, mv, mt.tensor(w, device=device), _index(spec, mt, device)).backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert_close(mv.grad, tv.grad.numpy(), rtol=1e-12, atol=1e-12)
