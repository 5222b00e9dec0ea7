"""Shape ops: views and copies against PyTorch (values, shapes, strides, contiguity, whether the result
is a view), gradients by finite differences (gradcheck / second-order checks on float64) and against
PyTorch, type promotion in cat/stack, in-place shape ops, and error types and messages."""
import warnings

import numpy as np
import pytest
from helpers import assert_close, to_np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minitorch_gpu as mt

RNG = np.random.default_rng(0)


def _arr(*shape, dtype=np.float64):
    if np.dtype(dtype).kind == "b":
        return RNG.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _t(a, device, requires_grad=False):
    return mt.tensor(a, device=device, requires_grad=requires_grad)


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _as_tuple(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _same_layout(ours, theirs, x, tx):
    """Same values, dtype, shape, strides, contiguity and view-ness as PyTorch's result."""
    ours, theirs = _as_tuple(ours), _as_tuple(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert _dtype_name(o.dtype) == _dtype_name(t.dtype)
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_array_equal(to_np(o), t.detach().numpy())
        assert o.stride() == t.stride(), (o.stride(), t.stride())
        assert o.is_contiguous() == t.is_contiguous()
        assert (o is x) == (t is tx)
        assert (o._base is x) == (t._base is tx)


def _weights(results):
    return [RNG.standard_normal(tuple(r.shape)) for r in _as_tuple(results)]


def _weighted_sum(results, weights, lib, device=None):
    total = None
    for r, w in zip(_as_tuple(results), weights):
        wt = lib.tensor(w, device=device) if lib is mt else lib.tensor(w)
        term = (r * wt).sum()
        total = term if total is None else total + term
    return total


# ---------------------------------------------------------------------- view ops

VIEWS = [
    ("view", (2, 3, 4), lambda x, L: x.view(6, 4)),
    ("view_infer", (2, 3, 4), lambda x, L: x.view(-1, 2)),
    ("view_tuple", (2, 3, 4), lambda x, L: x.view((4, 3, 2))),
    ("view_as", (2, 3, 4), lambda x, L: x.view_as(L.zeros(4, 6))),
    ("view_of_transpose", (2, 3, 4), lambda x, L: x.transpose(0, 1).view(3, 2, 2, 2)),
    ("view_0d", (), lambda x, L: x.view(1, 1)),
    ("view_empty", (2, 0, 3), lambda x, L: x.view(3, 0, 2)),
    ("view_of_empty_narrow", (4, 6), lambda x, L: x.narrow(1, 2, 0).view(2, 0, 2)),
    ("reshape_view", (2, 3, 4), lambda x, L: x.reshape(4, -1)),
    ("reshape_copy", (2, 3, 4), lambda x, L: x.transpose(0, 2).reshape(-1)),
    ("reshape_fn", (2, 3, 4), lambda x, L: L.reshape(x, (24,))),
    ("reshape_as", (2, 3, 4), lambda x, L: x.reshape_as(L.zeros(3, 8))),
    ("flatten", (2, 3, 4), lambda x, L: x.flatten()),
    ("flatten_mid", (2, 3, 4, 5), lambda x, L: x.flatten(1, 2)),
    ("flatten_neg", (2, 3, 4, 5), lambda x, L: L.flatten(x, -3, -2)),
    ("flatten_same", (2, 3, 4), lambda x, L: x.flatten(1, 1)),
    ("flatten_1d", (5,), lambda x, L: x.flatten()),
    ("flatten_0d", (), lambda x, L: x.flatten()),
    ("flatten_copy", (2, 3, 4), lambda x, L: x.transpose(1, 2).flatten(1)),
    ("unflatten", (2, 12), lambda x, L: x.unflatten(1, (3, 4))),
    ("unflatten_infer", (2, 12), lambda x, L: x.unflatten(-1, (2, -1, 3))),
    ("ravel", (2, 3, 4), lambda x, L: L.ravel(x)),
    ("ravel_copy", (2, 3, 4), lambda x, L: x.mT.ravel()),
    ("permute", (2, 3, 4), lambda x, L: x.permute(2, 0, 1)),
    ("permute_tuple", (2, 3, 4), lambda x, L: x.permute((1, -1, 0))),
    ("permute_fn", (2, 3, 4), lambda x, L: L.permute(x, (2, 1, 0))),
    ("transpose", (2, 3, 4), lambda x, L: x.transpose(0, 2)),
    ("transpose_neg", (2, 3, 4), lambda x, L: L.transpose(x, -1, -2)),
    ("transpose_0d", (), lambda x, L: x.transpose(0, -1)),
    ("swapaxes", (2, 3, 4), lambda x, L: x.swapaxes(0, 1)),
    ("swapdims", (2, 3, 4), lambda x, L: L.swapdims(x, 2, 0)),
    ("t", (3, 4), lambda x, L: x.t()),
    ("t_1d", (3,), lambda x, L: L.t(x)),
    ("T", (3, 4), lambda x, L: x.T),
    ("mT", (2, 3, 4), lambda x, L: x.mT),
    ("H", (3, 4), lambda x, L: x.H),
    ("mH", (2, 3, 4), lambda x, L: x.mH),
    ("adjoint", (2, 3, 4), lambda x, L: x.adjoint()),
    ("squeeze_all", (1, 3, 1, 4), lambda x, L: x.squeeze()),
    ("squeeze_dim", (1, 3, 1, 4), lambda x, L: x.squeeze(2)),
    ("squeeze_noop", (1, 3, 1, 4), lambda x, L: x.squeeze(1)),
    ("squeeze_dims", (1, 3, 1, 4), lambda x, L: x.squeeze((0, -2, 1))),
    ("squeeze_0d", (), lambda x, L: x.squeeze(0)),
    ("unsqueeze", (2, 3), lambda x, L: x.unsqueeze(1)),
    ("unsqueeze_end", (2, 3), lambda x, L: L.unsqueeze(x, -1)),
    ("unsqueeze_front_of_transpose", (2, 3), lambda x, L: x.t().unsqueeze(0)),
    ("unsqueeze_0d", (), lambda x, L: x.unsqueeze(0)),
    ("expand", (3, 1), lambda x, L: x.expand(2, 3, 4)),
    ("expand_keep", (3, 1), lambda x, L: x.expand(-1, 5)),
    ("expand_same", (3, 1), lambda x, L: x.expand(3, 1)),
    ("expand_new_size1", (3, 1), lambda x, L: x.expand(1, 3, 1)),
    ("expand_0d", (), lambda x, L: x.expand(2, 3)),
    ("expand_as", (1, 4), lambda x, L: x.expand_as(L.zeros(3, 4))),
    ("broadcast_to", (1, 4), lambda x, L: L.broadcast_to(x, (2, 3, 4))),
    ("broadcast_tensors", (3, 1), lambda x, L: L.broadcast_tensors(x, L.zeros(2, 1, 5))[0]),
    ("narrow", (4, 5), lambda x, L: x.narrow(1, 1, 3)),
    ("narrow_neg_start", (4, 5), lambda x, L: L.narrow(x, 0, -3, 2)),
    ("narrow_empty", (4, 5), lambda x, L: x.narrow(1, 5, 0)),
    ("select", (2, 3, 4), lambda x, L: x.select(1, 2)),
    ("select_neg", (2, 3, 4), lambda x, L: L.select(x, -1, -4)),
    ("select_to_0d", (4,), lambda x, L: x.select(0, 3)),
    ("unfold", (2, 7), lambda x, L: x.unfold(1, 3, 1)),
    ("unfold_step", (2, 7), lambda x, L: x.unfold(1, 2, 3)),
    ("unfold_dim0", (5, 3), lambda x, L: x.unfold(0, 2, 2)),
    ("unfold_0d", (), lambda x, L: x.unfold(0, 1, 1)),
    ("movedim", (2, 3, 4), lambda x, L: x.movedim(0, -1)),
    ("movedim_many", (2, 3, 4, 5), lambda x, L: L.movedim(x, (0, 1), (3, 0))),
    ("moveaxis", (2, 3, 4), lambda x, L: L.moveaxis(x, 2, 0)),
    ("diagonal", (3, 4), lambda x, L: x.diagonal()),
    ("diagonal_offset", (2, 3, 4), lambda x, L: x.diagonal(1, 1, 2)),
    ("diagonal_neg", (2, 3, 4), lambda x, L: L.diagonal(x, -1, 2, 0)),
    ("diagonal_empty", (3, 4), lambda x, L: x.diagonal(5)),
    ("unbind", (2, 3, 4), lambda x, L: x.unbind(1)),
    ("unbind_fn", (3, 2), lambda x, L: L.unbind(x)),
    ("split", (2, 7), lambda x, L: x.split(3, 1)),
    ("split_sizes", (2, 7), lambda x, L: L.split(x, [2, 0, 5], dim=1)),
    ("split_big", (2, 7), lambda x, L: x.split(10, 1)),
    ("chunk", (7, 2), lambda x, L: x.chunk(3)),
    ("chunk_uneven", (6, 2), lambda x, L: L.chunk(x, 4, 0)),
    ("chunk_empty", (0, 2), lambda x, L: x.chunk(3)),
    ("tensor_split", (7, 2), lambda x, L: x.tensor_split(3)),
    ("tensor_split_idx", (7, 2), lambda x, L: L.tensor_split(x, [1, 5, 3, 9], 0)),
    ("hsplit", (2, 6), lambda x, L: L.hsplit(x, 3)),
    ("vsplit", (4, 2), lambda x, L: L.vsplit(x, [1])),
    ("dsplit", (2, 2, 4), lambda x, L: L.dsplit(x, 2)),
    ("atleast_1d", (), lambda x, L: L.atleast_1d(x)),
    ("atleast_2d", (3,), lambda x, L: L.atleast_2d(x)),
    ("atleast_3d", (2, 3), lambda x, L: L.atleast_3d(x)),
    ("atleast_3d_1d", (3,), lambda x, L: L.atleast_3d(x)),
    ("chain", (4, 6), lambda x, L: x.t().unsqueeze(0).narrow(1, 1, 4).select(2, 2).unfold(1, 2, 1)),
]

COPIES = [
    ("repeat", (2, 3), lambda x, L: x.repeat(2, 1, 3)),
    ("repeat_tuple", (2, 3), lambda x, L: x.repeat((1, 2))),
    ("repeat_zero", (2, 3), lambda x, L: x.repeat(0, 2)),
    ("repeat_0d", (), lambda x, L: x.repeat(3)),
    ("tile", (2, 3), lambda x, L: x.tile((2,))),
    ("tile_more", (2, 3), lambda x, L: L.tile(x, (2, 1, 2))),
    ("cat", (2, 3), lambda x, L: L.cat([x, x * 2, x.narrow(0, 0, 1)])),
    ("cat_dim", (2, 3), lambda x, L: L.cat((x, x.narrow(1, 1, 2)), dim=-1)),
    ("cat_legacy_empty", (2, 3), lambda x, L: L.cat([x, L.zeros(0, dtype=x.dtype), x])),
    ("concat", (2, 3), lambda x, L: L.concat([x, x], 1)),
    ("concatenate", (2, 3), lambda x, L: L.concatenate([x, x], axis=0)),
    ("cat_of_views", (3, 4), lambda x, L: L.cat([x.t(), x.t().narrow(0, 1, 2)])),
    ("stack", (2, 3), lambda x, L: L.stack([x, x * 3])),
    ("stack_last", (2, 3), lambda x, L: L.stack((x, x), -1)),
    ("stack_0d", (), lambda x, L: L.stack([x, x, x])),
    ("hstack", (2, 3), lambda x, L: L.hstack([x, x])),
    ("hstack_1d", (3,), lambda x, L: L.hstack([x, x])),
    ("vstack", (3,), lambda x, L: L.vstack([x, x])),
    ("dstack", (2, 3), lambda x, L: L.dstack([x, x])),
    ("column_stack", (3,), lambda x, L: L.column_stack([x, x.unsqueeze(1)])),
    ("tril", (3, 4), lambda x, L: x.tril()),
    ("tril_k", (2, 3, 4), lambda x, L: L.tril(x, 1)),
    ("tril_neg", (4, 3), lambda x, L: x.tril(-2)),
    ("triu", (3, 4), lambda x, L: x.triu()),
    ("triu_k", (2, 4, 3), lambda x, L: L.triu(x, -1)),
    ("triu_big", (3, 4), lambda x, L: x.triu(7)),
    ("flip", (2, 3, 4), lambda x, L: x.flip(0, 2)),
    ("flip_list", (2, 3, 4), lambda x, L: L.flip(x, [-1])),
    ("flip_0d", (), lambda x, L: x.flip(0)),
    ("fliplr", (2, 3), lambda x, L: L.fliplr(x)),
    ("flipud", (2, 3), lambda x, L: L.flipud(x)),
    ("roll", (2, 3, 4), lambda x, L: x.roll(1, 2)),
    ("roll_many", (2, 3, 4), lambda x, L: L.roll(x, (1, -2), (0, 2))),
    ("roll_flat", (2, 3, 4), lambda x, L: x.roll(5)),
    ("roll_big", (2, 3), lambda x, L: x.roll(-7, 1)),
    ("rot90", (2, 3), lambda x, L: L.rot90(x)),
    ("rot90_k2", (2, 3, 4), lambda x, L: L.rot90(x, 2, (1, 2))),
    ("rot90_k3", (2, 3), lambda x, L: x.rot90(-1, [0, 1])),
    ("diag_vector", (3,), lambda x, L: L.diag(x)),
    ("diag_vector_offset", (3,), lambda x, L: L.diag(x, -2)),
    ("diag_matrix", (3, 4), lambda x, L: L.diag(x, 1)),
    ("diag_embed", (2, 3), lambda x, L: L.diag_embed(x)),
    ("diag_embed_dims", (2, 3), lambda x, L: x.diag_embed(-1, 2, 0)),
    ("diagflat", (2, 2), lambda x, L: L.diagflat(x, 1)),
    ("repeat_interleave", (2, 3), lambda x, L: x.repeat_interleave(2)),
    ("repeat_interleave_dim", (2, 3), lambda x, L: L.repeat_interleave(x, 3, dim=0)),
    ("repeat_interleave_tensor", (2, 3), lambda x, L: x.repeat_interleave(L.tensor([1, 0, 2]), dim=1)),
    ("repeat_interleave_one", (2, 3), lambda x, L: x.repeat_interleave(L.tensor([2]), dim=-1)),
]



def _run_pair(torch, device, shape, fn, dtype=np.float64, requires_grad=False):
    a = _arr(*shape, dtype=dtype)
    x = _t(a, device, requires_grad)
    tx = torch.tensor(a, requires_grad=requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return x, tx, fn(x, mt), fn(tx, torch)


def _fix_device(fn, device):
    """Factories inside a case (zeros, tensor) make CPU tensors; move the case to ``device``."""
    def wrapped(x, L):
        if L is not mt or device == "cpu":
            return fn(x, L)
        return fn(x, _OnDevice(device))
    return wrapped


class _OnDevice:
    """``mt`` with ``zeros`` / ``tensor`` defaulting to one device."""

    def __init__(self, device):
        self.device = device

    def __getattr__(self, name):
        return getattr(mt, name)

    def zeros(self, *size, **kw):
        kw.setdefault("device", self.device)
        return mt.zeros(*size, **kw)

    def tensor(self, data, **kw):
        kw.setdefault("device", self.device)
        return mt.tensor(data, **kw)


@pytest.mark.parametrize("name,shape,fn", VIEWS + COPIES, ids=[c[0] for c in VIEWS + COPIES])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_], ids=["f32", "i64", "bool"])
def test_values_strides_and_viewness_match_torch(torch, device, name, shape, fn, dtype):
    x, tx, ours, theirs = _run_pair(torch, device, shape, _fix_device(fn, device), dtype)
    _same_layout(ours, theirs, x, tx)


@pytest.mark.parametrize("name,shape,fn", VIEWS, ids=[c[0] for c in VIEWS])
def test_views_share_memory(device, name, shape, fn):
    a = _arr(*shape, dtype=np.float32)
    x = _t(a, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        outs = _as_tuple(_fix_device(fn, device)(x, mt))
    for o in outs:
        if o._base is x and o.numel():
            assert x._be.shares_memory(o._data, x._data)


@pytest.mark.parametrize("name,shape,fn", VIEWS + COPIES, ids=[c[0] for c in VIEWS + COPIES])
def test_gradients_match_torch(torch, device, name, shape, fn):
    x, tx, ours, theirs = _run_pair(torch, device, shape, _fix_device(fn, device), requires_grad=True)
    w = _weights(theirs)
    _weighted_sum(ours, w, mt, device).backward()
    _weighted_sum(theirs, w, torch).backward()
    assert x.grad is not None and x.grad.dtype is mt.float64
    assert_close(x.grad, tx.grad.numpy())
    if name.startswith("repeat_interleave"):
        return  # PyTorch builds it from other ops (expand + view, index_select): no node of its own
    for o, t in zip(_as_tuple(ours), _as_tuple(theirs)):
        if t.grad_fn is not None and o is not x:
            assert o.grad_fn.name() == t.grad_fn.name()


@pytest.mark.parametrize("name,shape,fn", VIEWS + COPIES, ids=[c[0] for c in VIEWS + COPIES])
def test_gradcheck(device, name, shape, fn):
    x = _t(_arr(*shape), device, requires_grad=True)
    f = _fix_device(fn, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert mt.autograd.gradcheck(lambda t: f(t, mt), (x,))


SECOND_ORDER = ["view_of_transpose", "reshape_copy", "permute", "squeeze_dims", "expand", "narrow", "select",
                "unfold", "diagonal_neg", "unbind", "split_sizes", "chunk", "chain", "repeat", "cat", "stack",
                "tril_k", "flip", "roll_many", "repeat_interleave_dim", "movedim_many", "atleast_3d_1d",
                "diag_embed_dims", "diag_matrix", "rot90", "unfold_0d"]


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_order_gradients(device, name):
    shape, fn = next((s, f) for n, s, f in VIEWS + COPIES if n == name)
    x = _t(_arr(*shape), device, requires_grad=True)
    f = _fix_device(fn, device)
    # squaring makes the second derivative depend on the input, so the double backward is exercised
    fn2 = lambda t: tuple(o * o for o in _as_tuple(f(t, mt)))  # noqa: E731
    grad_outputs = tuple(_t(RNG.standard_normal(tuple(o.shape)), device, requires_grad=True) for o in fn2(x))
    assert mt.autograd.gradgradcheck(fn2, (x,), grad_outputs)


def test_backward_of_backward_nodes_are_named_like_torch(torch, device):
    a = _arr(3, 4)
    for lib, x in ((mt, _t(a, device, True)), (torch, torch.tensor(a, requires_grad=True))):
        y = x.narrow(1, 1, 2).select(0, 1).unsqueeze(0)
        g, = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        names = []
        fn = g.grad_fn
        while fn is not None and len(names) < 3:
            names.append(fn.name())
            fn = fn.next_functions[0][0]
        if lib is mt:
            ours = names
        else:
            assert ours == names


# ---------------------------------------------------------------------- against NumPy

def test_values_match_numpy(device):
    a = _arr(2, 3, 4)
    x = _t(a, device)
    assert_close(x.permute(1, 2, 0), a.transpose(1, 2, 0))
    assert_close(x.flip(1), a[:, ::-1])
    assert_close(x.roll((2, 1), (1, 2)), np.roll(a, (2, 1), (1, 2)))
    assert_close(x.tril(-1), np.tril(a, -1))
    assert_close(x.triu(2), np.triu(a, 2))
    assert_close(x.diagonal(0, 1, 2), np.diagonal(a, 0, 1, 2))
    assert_close(mt.cat([x, x], 2), np.concatenate([a, a], 2))
    assert_close(mt.stack([x, x], 1), np.stack([a, a], 1))
    assert_close(x.repeat(1, 2, 1, 3), np.tile(a, (1, 2, 1, 3)))
    assert_close(x.repeat_interleave(2, dim=2), np.repeat(a, 2, axis=2))
    assert_close(x.unfold(2, 2, 1).select(-1, 1), a[:, :, 1:])
    assert_close(x.movedim(0, 2), np.moveaxis(a, 0, 2))
    assert [tuple(p.shape) for p in x.split([1, 3], 2)] == [(2, 3, 1), (2, 3, 3)]


# the fixtures are the same for every example (the device and the torch module)
_FIXTURES_OK = [HealthCheck.function_scoped_fixture]


@settings(max_examples=40, deadline=None, suppress_health_check=_FIXTURES_OK)
@given(data=st.data())
def test_random_view_chains_match_torch(torch, device, data):
    """A random chain of view ops gives PyTorch's shapes, strides, contiguity and values; a view that
    fails (incompatible strides) fails the same way in both."""
    ndim = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x, tx = mt.tensor(a, device=device), torch.tensor(a)
    y, ty = x, tx
    for _ in range(data.draw(st.integers(1, 5))):
        nd = ty.ndim
        kind = data.draw(st.sampled_from(["transpose", "permute", "narrow", "select", "unsqueeze", "squeeze",
                                          "expand", "view", "flatten", "diagonal", "unfold", "movedim"]))
        if nd == 0 and kind not in ("unsqueeze", "view", "flatten", "squeeze", "expand"):
            kind = "unsqueeze"
        if kind == "transpose":
            d0, d1 = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(0, nd - 1))
            op = lambda t: t.transpose(d0, d1)  # noqa: E731
        elif kind == "permute":
            perm = data.draw(st.permutations(range(nd)))
            op = lambda t: t.permute(*perm)  # noqa: E731
        elif kind == "narrow":
            d = data.draw(st.integers(0, nd - 1))
            start = data.draw(st.integers(0, ty.shape[d]))
            length = data.draw(st.integers(0, ty.shape[d] - start))
            op = lambda t: t.narrow(d, start, length)  # noqa: E731
        elif kind == "select":
            d = data.draw(st.integers(0, nd - 1))
            if ty.shape[d] == 0:
                continue
            i = data.draw(st.integers(0, ty.shape[d] - 1))
            op = lambda t: t.select(d, i)  # noqa: E731
        elif kind == "unsqueeze":
            d = data.draw(st.integers(0, nd))
            op = lambda t: t.unsqueeze(d)  # noqa: E731
        elif kind == "squeeze":
            op = lambda t: t.squeeze()  # noqa: E731
        elif kind == "expand":
            sizes = tuple(data.draw(st.integers(1, 3)) if s == 1 else s for s in ty.shape)
            lead = tuple(data.draw(st.lists(st.integers(1, 2), min_size=0 if nd else 1, max_size=2)))
            op = lambda t: t.expand(*(lead + sizes))  # noqa: E731
        elif kind == "view":
            n = ty.numel()
            divs = [k for k in range(1, n + 1) if n % k == 0] or [1]
            k = data.draw(st.sampled_from(divs))
            op = lambda t: t.view(k, -1) if n else t.view(0)  # noqa: E731
        elif kind == "flatten":
            s = data.draw(st.integers(0, max(nd - 1, 0)))
            e = data.draw(st.integers(s, max(nd - 1, 0)))
            op = lambda t: t.flatten(s, e)  # noqa: E731
        elif kind == "diagonal":
            if nd < 2:
                continue
            d0, d1 = data.draw(st.sampled_from([(i, j) for i in range(nd) for j in range(nd) if i != j]))
            off = data.draw(st.integers(-2, 2))
            op = lambda t: t.diagonal(off, d0, d1)  # noqa: E731
        elif kind == "unfold":
            d = data.draw(st.integers(0, nd - 1))
            size = data.draw(st.integers(0, ty.shape[d]))
            step = data.draw(st.integers(1, 3))
            op = lambda t: t.unfold(d, size, step)  # noqa: E731
        else:
            src, dst = data.draw(st.integers(0, nd - 1)), data.draw(st.integers(0, nd - 1))
            op = lambda t: t.movedim(src, dst)  # noqa: E731
        try:
            ty2 = op(ty)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                op(y)
            continue
        y, ty = op(y), ty2
        assert tuple(y.shape) == tuple(ty.shape)
        assert y.stride() == ty.stride(), (kind, y.stride(), ty.stride())
        assert y.is_contiguous() == ty.is_contiguous()
        np.testing.assert_array_equal(to_np(y), ty.numpy())
        assert (y._base is x) == (ty._base is tx)
        r, tr = y.reshape(-1), ty.reshape(-1)
        assert (r._base is x) == (tr._base is tx)
        np.testing.assert_array_equal(to_np(r), tr.numpy())


@settings(max_examples=30, deadline=None, suppress_health_check=_FIXTURES_OK)
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=4), dim_pick=st.integers(0, 3), n=st.integers(1, 3),
       data=st.data())
def test_random_cat_matches_numpy(device, sizes, dim_pick, n, data):
    ndim = len(sizes)
    d = dim_pick % ndim
    parts = []
    for _ in range(n):
        shape = list(sizes)
        shape[d] = data.draw(st.integers(0, 3))
        parts.append(_arr(*shape))
    out = mt.cat([mt.tensor(p, device=device) for p in parts], d)
    assert_close(out, np.concatenate(parts, d))
    pieces = out.split([p.shape[d] for p in parts], d)
    for piece, p in zip(pieces, parts):
        assert_close(piece, p)


# ---------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("bool", "uint8"), ("int8", "uint8"), ("int32", "int64"),
                                    ("float16", "float64"), ("bool", "int8", "uint8"), ("float32", "float32")])
def test_cat_and_stack_promote_like_torch(torch, device, dtypes):
    arrays = [_arr(2, 3).astype(np.float32).astype(d) for d in dtypes]
    ours = [mt.tensor(a, device=device) for a in arrays]
    theirs = [torch.tensor(a) for a in arrays]
    for fn in (lambda L, ts: L.cat(ts, 1), lambda L, ts: L.stack(ts)):
        r, tr = fn(mt, ours), fn(torch, theirs)
        assert _dtype_name(r.dtype) == _dtype_name(tr.dtype)
        np.testing.assert_array_equal(to_np(r), tr.numpy())


def test_cat_gradient_keeps_each_input_dtype(torch, device):
    a, b = _arr(2, 3, dtype=np.float32), _arr(1, 3)
    x, y = _t(a, device, True), _t(b, device, True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    w = _arr(3, 3)
    (mt.cat([x, y]) * _t(w, device)).sum().backward()
    (torch.cat([tx, ty]) * torch.tensor(w)).sum().backward()
    assert x.grad.dtype is mt.float32 and y.grad.dtype is mt.float64
    assert_close(x.grad, tx.grad.numpy())
    assert_close(y.grad, ty.grad.numpy())


def test_float32_stays_float32(device):
    x = _t(_arr(2, 3, dtype=np.float32), device)
    for r in (x.t(), x.flip(0), mt.cat([x, x]), x.repeat(2, 1), x.tril(), x.roll(1), x.unfold(1, 2, 1)):
        assert r.dtype is mt.float32


def test_non_float_results_record_no_history(device):
    x = _t(_arr(2, 3, dtype=np.int64), device)
    assert x.t().grad_fn is None and mt.cat([x, x]).grad_fn is None


def test_cat_out(device):
    x = _t(_arr(2, 3), device)
    out = _t(_arr(1), device)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        r = mt.cat([x, x], 0, out=out)
    assert r is out and tuple(out.shape) == (4, 3)
    assert_close(out, np.concatenate([to_np(x)] * 2))
    with pytest.raises(RuntimeError, match="out="):
        mt.cat([_t(_arr(2), device, True)], out=_t(_arr(2), device))


def test_broadcast_shapes(torch):
    for shapes in [((2, 1), (3,)), (3, (2, 1)), ((1, 4, 1), (3, 1, 5), ()), ((0, 1), (1, 3))]:
        r = mt.broadcast_shapes(*shapes)
        assert isinstance(r, mt.Size) and tuple(r) == tuple(torch.broadcast_shapes(*shapes))
    with pytest.raises(RuntimeError, match=r"dimension of length 4 at -2! Mismatching argument at index 1 had "
                                           r"\(4, 3\)"):
        mt.broadcast_shapes((2, 3), (4, 3))
    with pytest.raises(ValueError, match="negative length"):
        mt.broadcast_shapes((-1,), (3,))


def test_repeat_interleave_of_counts(torch, device):
    c = [2, 0, 3, 1]
    r = mt.repeat_interleave(mt.tensor(c, device=device))
    assert r.dtype is mt.int64
    np.testing.assert_array_equal(to_np(r), torch.repeat_interleave(torch.tensor(c)).numpy())


# ---------------------------------------------------------------------- warnings and aliasing results

def test_T_warns_off_matrices(device):
    x = _t(_arr(2, 3, 4), device)
    with pytest.warns(UserWarning, match="x.mT"):
        r = x.T
    assert tuple(r.shape) == (4, 3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tuple(x.select(0, 0).T.shape) == (4, 3)


def test_flatten_returns_input_when_nothing_to_merge(device):
    x = _t(_arr(2, 3), device)
    assert x.flatten(1, 1) is x and x.flatten(-1) is x
    v = _t(_arr(4), device)
    assert v.flatten() is v


def test_split_outputs_share_one_backward_node(device):
    x = _t(_arr(5, 2), device, True)
    for pieces, name in ((x.split(2), "SplitBackward0"), (x.chunk(2), "SplitBackward0"),
                         (x.split([1, 4]), "SplitWithSizesBackward0"), (x.unbind(), "UnbindBackward0")):
        assert {p.grad_fn for p in pieces} == {pieces[0].grad_fn}
        assert pieces[0].grad_fn.name() == name
        assert [p.output_nr for p in pieces] == list(range(len(pieces)))


def test_gradient_through_some_split_outputs_only(torch, device):
    a = _arr(7, 3)
    x, tx = _t(a, device, True), torch.tensor(a, requires_grad=True)
    p, tp = x.split(3), tx.split(3)
    (p[1] * p[1]).sum().backward()
    (tp[1] * tp[1]).sum().backward()
    assert_close(x.grad, tx.grad.numpy())
    u, tu = x.unbind(1), tx.unbind(1)
    (u[2] * 3).sum().backward()
    (tu[2] * 3).sum().backward()
    assert_close(x.grad, tx.grad.numpy())


def test_iterating_a_tensor_unbinds_it(device):
    a = _arr(3, 2)
    x = _t(a, device)
    rows = list(x)
    assert len(rows) == 3
    for r, expected in zip(rows, a):
        assert r._base is x
        assert_close(r, expected)


# ---------------------------------------------------------------------- in-place shape ops

@pytest.mark.parametrize("op,args,node", [("squeeze_", (), "SqueezeBackward3"), ("squeeze_", (0,), "SqueezeBackward4"),
                                          ("squeeze_", ((0, 2),), "SqueezeBackward5"),
                                          ("unsqueeze_", (1,), "UnsqueezeBackward1"), ("t_", (), "TBackward1"),
                                          ("transpose_", (0, 2), "TransposeBackward1"),
                                          ("swapaxes_", (1, 0), "TransposeBackward1")])
def test_inplace_shape_ops_match_torch(torch, device, op, args, node):
    shape = (1, 3, 1) if op != "t_" else (3, 2)
    a = _arr(*shape)
    x, tx = _t(a, device, True), torch.tensor(a, requires_grad=True)
    y, ty = x * 2, tx * 2
    v0 = y._version
    r, tr = getattr(y, op)(*args), getattr(ty, op)(*args)
    assert r is y and tr is ty
    assert tuple(y.shape) == tuple(ty.shape) and y.stride() == ty.stride()
    assert y._version == v0 + 1
    assert y.grad_fn.name() == ty.grad_fn.name() == node
    w = _arr(*tuple(ty.shape))
    (y * _t(w, device)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(x.grad, tx.grad.numpy())


def test_inplace_shape_op_on_leaf_requiring_grad_raises(device):
    x = _t(_arr(1, 3), device, True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.squeeze_()
    assert tuple(x.shape) == (1, 3) and x._version == 0
    with mt.no_grad():
        x.squeeze_()
    assert tuple(x.shape) == (3,)


def test_inplace_shape_op_on_a_view_keeps_it_a_view(device):
    base = _t(np.arange(6.0).reshape(2, 3), device)
    v = base.narrow(0, 1, 1)
    v.squeeze_(0)
    assert tuple(v.shape) == (3,) and v._base is base
    v.add_(10)
    assert_close(base, [[0, 1, 2], [13, 14, 15]])


@pytest.mark.parametrize("op", ["tril_", "triu_"])
def test_tril_triu_inplace(torch, device, op):
    a = _arr(3, 4)
    x, tx = _t(a, device, True), torch.tensor(a, requires_grad=True)
    y, ty = x * 1, tx * 1
    getattr(y, op)(1)
    getattr(ty, op)(1)
    assert_close(y, ty.detach().numpy())
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    assert_close(x.grad, tx.grad.numpy())


# ---------------------------------------------------------------------- errors

ERRORS = [
    (lambda x, L: x.view(5, 5), RuntimeError, r"shape '\[5, 5\]' is invalid for input of size 24"),
    (lambda x, L: x.view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda x, L: x.view(2, 3, -2), RuntimeError, "invalid shape dimension -2"),
    (lambda x, L: x.transpose(0, 1).view(-1), RuntimeError, "view size is not compatible"),
    (lambda x, L: x.reshape(5, -1), RuntimeError, "invalid for input of size 24"),
    (lambda x, L: x.transpose(0, 3), IndexError, r"range of \[-3, 2\], but got 3"),
    (lambda x, L: x.permute(0, 1), RuntimeError, "input.dim\\(\\) = 3 is not equal to len\\(dims\\) = 2"),
    (lambda x, L: x.permute(0, 1, 1), RuntimeError, "duplicate dims"),
    (lambda x, L: x.permute(0, 1, -4), IndexError, r"range of \[-3, 2\], but got -4"),
    (lambda x, L: x.t(), RuntimeError, "t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda x, L: x.select(0, 0).select(0, 0).mT, RuntimeError, "only supported on matrices"),
    (lambda x, L: x.H, RuntimeError, "only supported on matrices"),
    (lambda x, L: x.squeeze(3), IndexError, r"range of \[-3, 2\], but got 3"),
    (lambda x, L: x.squeeze((0, 0)), RuntimeError, "appears multiple times"),
    (lambda x, L: x.unsqueeze(4), IndexError, r"range of \[-4, 3\], but got 4"),
    (lambda x, L: x.unsqueeze(-5), IndexError, r"range of \[-4, 3\], but got -5"),
    (lambda x, L: x.flatten(2, 1), RuntimeError, "start_dim cannot come after end_dim"),
    (lambda x, L: x.flatten(0, 5), IndexError, "but got 5"),
    (lambda x, L: x.unflatten(1, (2, 2)), RuntimeError, r"sizes \[2, 2\] don't multiply up to the size of dim 1 \(3\)"),
    (lambda x, L: x.unflatten(1, ()), RuntimeError, "sizes must be non-empty"),
    (lambda x, L: x.unflatten(5, (1,)), IndexError, "but got 5"),
    (lambda x, L: x.expand(3, 3, 4), RuntimeError,
     r"expanded size of the tensor \(3\) must match the existing size \(2\)"),
    (lambda x, L: x.expand(3, 4), RuntimeError, "must be greater or equal to the number of dimensions"),
    (lambda x, L: x.narrow(1, 2, 2), RuntimeError, r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)"),
    (lambda x, L: x.narrow(1, 4, 0), IndexError,
     r"start out of range \(expected to be in range of \[-3, 3\], but got 4\)"),
    (lambda x, L: x.narrow(1, 0, -1), RuntimeError, "length must be non-negative"),
    (lambda x, L: x.narrow(3, 0, 1), IndexError, "but got 3"),
    (lambda x, L: x.select(1, 3), IndexError, r"index 3 out of range for tensor of size \[2, 3, 4\] at dimension 1"),
    (lambda x, L: x.select(1, -4), IndexError, "index -4 out of range"),
    (lambda x, L: x.unfold(1, 4, 1), RuntimeError, "maximum size for tensor at dimension 1 is 3 but size is 4"),
    (lambda x, L: x.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x, L: x.unfold(1, -1, 1), RuntimeError, "size is -1 but must be >= 0"),
    (lambda x, L: x.unfold(5, 1, 1), IndexError, "but got 5"),
    (lambda x, L: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda x, L: x.diagonal(0, 0, 3), IndexError, "but got 3"),
    (lambda x, L: x.movedim((0, 1), (1,)), RuntimeError, "should contain the same number of dims"),
    (lambda x, L: x.movedim((0, 0), (1, 2)), RuntimeError, r"repeated dim in `source` \(\[0, 0\]\)"),
    (lambda x, L: x.movedim((0, 1), (1, 1)), RuntimeError, "repeated dim in `destination`"),
    (lambda x, L: x.movedim(3, 0), IndexError, "but got 3"),
    (lambda x, L: x.split(0), RuntimeError, "split_size can only be 0 if dimension size is 0"),
    (lambda x, L: x.split(-1), RuntimeError, "split_size be non-negative"),
    (lambda x, L: x.split([1, 1], 1), RuntimeError, r"split_sizes to sum exactly to 3 .* split_sizes=\[1, 1\]"),
    (lambda x, L: x.split([1, -1, 3], 1), RuntimeError, "only non-negative entries"),
    (lambda x, L: x.split(2, 3), IndexError, "but got 3"),
    (lambda x, L: x.chunk(0), RuntimeError, "chunks` to be greater than 0, got: 0"),
    (lambda x, L: x.chunk(2, 3), IndexError, "but got 3"),
    (lambda x, L: x.unbind(3), IndexError, "but got 3"),
    (lambda x, L: x.tensor_split(0, 1), RuntimeError, "number of sections must be larger than 0, got 0"),
    (lambda x, L: x.tensor_split(L.tensor([1.0])), RuntimeError, "to have dtype of long"),
    (lambda x, L: L.hsplit(x, 2), RuntimeError, "size of the dimension 3 is not divisible by the split_size 2"),
    (lambda x, L: L.cat([x, L.zeros(2, 4, 4)], 2), RuntimeError,
     "Sizes of tensors must match except in dimension 2. Expected size 3 but got size 4 for tensor number 1"),
    (lambda x, L: L.cat([x, L.zeros(2, 4)], 2), RuntimeError, "same number of dimensions: got 3 and 2"),
    (lambda x, L: L.cat([x, x], 3), IndexError, "but got 3"),
    (lambda x, L: L.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (lambda x, L: L.cat([x, L.zeros(())]), RuntimeError, r"zero-dimensional tensor \(at position 1\) cannot be "),
    (lambda x, L: L.cat(x), TypeError, "must be tuple of Tensors, not Tensor"),
    (lambda x, L: L.cat([x, 1]), TypeError, "expected Tensor as element 1"),
    (lambda x, L: L.stack([x, L.zeros(2, 4, 4)]), RuntimeError,
     r"stack expects each tensor to be equal size, but got \[2, 3, 4\] at entry 0 and \[2, 4, 4\] at entry 1"),
    (lambda x, L: L.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda x, L: L.stack([x], 4), IndexError, r"range of \[-4, 3\], but got 4"),
    (lambda x, L: x.repeat(2, 2), RuntimeError, "can not be smaller than number of dimensions"),
    (lambda x, L: x.repeat(2, -1, 1), RuntimeError, r"negative dimension -3: \[4, -3, 4\]"),
    (lambda x, L: x.select(0, 0).select(0, 0).tril(), RuntimeError, "at least 2 dimensions"),
    (lambda x, L: x.flip(0, 0), RuntimeError, "dim 0 appears multiple times"),
    (lambda x, L: x.flip(5), IndexError, "but got 5"),
    (lambda x, L: x.roll((1, 2), (0,)), RuntimeError, "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda x, L: x.roll((1, 2)), RuntimeError, "shifts and dimensions must align"),
    (lambda x, L: x.roll(1, 5), IndexError, "but got 5"),
    (lambda x, L: x.repeat_interleave(L.tensor([1, 2, 3]), 0), RuntimeError,
     r"repeats.size\(0\) = 3 and input.size\(0\) = 2"),
    (lambda x, L: x.repeat_interleave(L.tensor([1, -2]), 0), RuntimeError, "can not be negative"),
    (lambda x, L: x.repeat_interleave(L.tensor([[2]]), 0), RuntimeError, "0-dim or 1-dim"),
    (lambda x, L: L.fliplr(x.select(0, 0).select(0, 0)), RuntimeError, "Input must be >= 2-d"),
    (lambda x, L: L.diag(x), RuntimeError, "diag\\(\\): Supports 1D or 2D tensors. Got 3D"),
    (lambda x, L: L.diag_embed(x, 0, 1, -3), RuntimeError, "diagonal dimensions cannot be identical 1, -3"),
    (lambda x, L: L.diag_embed(x, 0, 4, 0), IndexError, "but got 4"),
    (lambda x, L: L.rot90(x, 1, (0, 0)), RuntimeError, "expected rotation dims to be different"),
    (lambda x, L: L.rot90(x.select(0, 0).select(0, 0)), RuntimeError, "expected total dims >= 2"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(torch, device, k):
    fn, exc, msg = ERRORS[k]
    a = _arr(2, 3, 4)
    with pytest.raises(exc):
        fn(torch.tensor(a), torch)
    x = _t(a, device)
    before = to_np(x).copy()
    with pytest.raises(exc, match=msg):
        _fix_device(fn, device)(x, mt)
    np.testing.assert_array_equal(to_np(x), before)
    assert x._version == 0


def test_zero_dim_errors(device):
    s = _t(np.float64(1.0), device)
    with pytest.raises(RuntimeError, match="narrow\\(\\) cannot be applied to a 0-dim tensor"):
        s.narrow(0, 0, 1)
    with pytest.raises(IndexError, match="select\\(\\) cannot be applied to a 0-dim tensor"):
        s.select(0, 0)
    with pytest.raises(RuntimeError, match="split expects at least a 1-dimensional tensor"):
        s.split(1)
    with pytest.raises(RuntimeError, match="chunk expects at least a 1-dimensional tensor"):
        s.chunk(1)
    with pytest.raises(IndexError):
        s.unbind()
    with pytest.raises(RuntimeError, match="zero-dimensional"):
        mt.cat([s])
    with pytest.raises(IndexError, match=r"range of \[-1, 0\], but got 1"):
        s.transpose(0, 1)


def test_keyword_forms_match_torch(torch, device):
    a = _arr(2, 3)
    x, tx = _t(a, device), torch.tensor(a)
    for fn in (lambda t: t.view(size=(3, 2)), lambda t: t.reshape(shape=(6,)), lambda t: t.expand(size=(2, 2, 3)),
               lambda t: t.permute(dims=(1, 0)), lambda t: t.repeat(repeats=(2, 1)), lambda t: t.flip(dims=(0,)),
               lambda t: t.flatten(start_dim=0, end_dim=1), lambda t: t.transpose(dim0=0, dim1=1),
               lambda t: t.narrow(dim=1, start=1, length=2), lambda t: t.select(dim=1, index=0),
               lambda t: t.unfold(dimension=1, size=2, step=1), lambda t: t.squeeze(dim=0),
               lambda t: t.unsqueeze(dim=1), lambda t: t.roll(shifts=1, dims=1), lambda t: t.tril(diagonal=-1),
               lambda t: t.diagonal(offset=1, dim1=1, dim2=0), lambda t: t.movedim(source=0, destination=1),
               lambda t: t.split(split_size=1, dim=0),
               lambda t: t.chunk(chunks=2, dim=1), lambda t: t.unbind(dim=1), lambda t: t.tile(dims=(2,)),
               lambda t: t.repeat_interleave(repeats=2, dim=0)):
        for o, to in zip(_as_tuple(fn(x)), _as_tuple(fn(tx))):
            assert_close(o, to.numpy())


def test_bad_argument_types(device):
    x = _t(_arr(2, 3), device)
    with pytest.raises(TypeError):
        x.view(2.0, 3)
    with pytest.raises(TypeError):
        x.transpose(0.0, 1)
    with pytest.raises(TypeError):
        x.narrow(0, 0.5, 1)
    with pytest.raises(TypeError):
        x.flip()


def test_cat_stack_tril_out_dtype_like_torch(torch, device):
    a = _arr(2, 3)
    x, tx = _t(a, device), torch.tensor(a)
    for fn, args in [("cat", ([x, x],)), ("stack", ([x, x],)), ("tril", (x,))]:
        targs = tuple([tx, tx] if isinstance(v, list) else tx for v in args)
        with pytest.raises(Exception) as t_err:
            getattr(torch, fn)(*targs, out=torch.empty(0, dtype=torch.int64))
        with pytest.raises(Exception) as m_err:
            getattr(mt, fn)(*args, out=mt.empty(0, dtype=mt.int64, device=device))
        assert type(m_err.value) is type(t_err.value)
        assert str(m_err.value) == str(t_err.value).replace("torch.", "minitorch_gpu.")
    # a wider float dtype is fine for cat, which casts into out
    out = mt.empty(0, dtype=mt.float32, device=device)
    assert mt.cat([x, x], out=out) is out and tuple(out.shape) == (4, 3)


# ---------------------------------------------------------------------- meshgrid

@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("shapes", [[(3,), (4,)], [(2,), (3,), (5,)], [(3,)], [(), (4,)], [(0,), (2,)]])
def test_meshgrid_matches_torch(torch, device, indexing, shapes):
    arrays = [_arr(*s) for s in shapes]
    ours = mt.meshgrid(*[_t(a, device) for a in arrays], indexing=indexing)
    theirs = torch.meshgrid(*[torch.tensor(a) for a in arrays], indexing=indexing)
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert tuple(o.shape) == tuple(t.shape) and o.stride() == t.stride()
        np.testing.assert_array_equal(to_np(o), t.numpy())
    # a list argument, as PyTorch also takes
    for o, t in zip(mt.meshgrid([_t(a, device) for a in arrays], indexing=indexing), theirs):
        np.testing.assert_array_equal(to_np(o), t.numpy())


def test_meshgrid_gradients_match_torch(torch, device):
    a, b = _arr(3), _arr(4)
    xs = [_t(a, device, True), _t(b, device, True)]
    txs = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    ours, theirs = mt.meshgrid(*xs, indexing="xy"), torch.meshgrid(*txs, indexing="xy")
    w = _weights(theirs)
    _weighted_sum(ours, w, mt, device).backward()
    _weighted_sum(theirs, w, torch).backward()
    for x, tx in zip(xs, txs):
        assert_close(x.grad, tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_meshgrid_warns_without_indexing_like_torch(torch):
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument") as ours:
        grids = mt.meshgrid(mt.arange(2), mt.arange(3))
    assert grids[0].shape == (2, 3)  # "ij"
    with pytest.warns(UserWarning) as theirs:
        torch.meshgrid(torch.arange(2), torch.arange(3))
    assert str(ours[0].message) == str(theirs[0].message).split(" (Triggered internally")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mt.meshgrid(mt.arange(2), indexing="ij")


@pytest.mark.parametrize("case", ["indexing", "empty", "2d", "dtypes", "not_a_tensor"])
def test_meshgrid_errors_match_torch(torch, case):
    def call(L):
        a = L.arange(3)
        args, kw = {"indexing": ((a, a), {"indexing": "foo"}), "empty": ((), {"indexing": "ij"}),
                    "2d": ((L.zeros(2, 2),), {"indexing": "ij"}), "dtypes": ((a, a.float()), {"indexing": "ij"}),
                    "not_a_tensor": ((a, [1, 2]), {"indexing": "ij"})}[case]
        return L.meshgrid(*args, **kw)
    with pytest.raises((RuntimeError, TypeError)) as theirs:
        call(torch)
    with pytest.raises(theirs.type) as ours:
        call(mt)
    if case != "2d":  # PyTorch prints the offending tensor in C++'s format
        assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------- view(dtype)

VIEW_DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("new", VIEW_DTYPES)
@pytest.mark.parametrize("old", ["float32", "float64", "int16", "uint8"])
def test_view_dtype_reinterprets_bits_like_torch(torch, device, old, new):
    a = _arr(4, 8, dtype=old)
    if new == "bool":
        a = (np.arange(32).reshape(4, 8) % 2).astype(old)  # only 0 and 1 bytes may be read as bool
        if a.dtype.itemsize != 1:
            return
    for view in (lambda x: x, lambda x: x[1:3], lambda x: x[:, 4:]):  # contiguous, row offset, column window
        try:
            theirs = view(torch.tensor(a)).view(getattr(torch, new))
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=f"^{e}$".replace("(", r"\(").replace(")", r"\)")):
                view(_t(a, device)).view(getattr(mt, new))
            continue
        ours = view(_t(a, device)).view(getattr(mt, new))
        assert ours.dtype is getattr(mt, new) and tuple(ours.shape) == tuple(theirs.shape)
        assert ours.stride() == theirs.stride()
        np.testing.assert_array_equal(to_np(ours).view(np.uint8), theirs.numpy().view(np.uint8))


def test_view_dtype_shares_memory_and_has_no_history(device):
    x = mt.zeros(2, 4, device=device, requires_grad=True)
    y = x * 1
    bits = y.view(mt.int32)
    assert not bits.requires_grad and bits.grad_fn is None
    bits[0, 0] = 0x3F800000  # the bits of 1.0
    assert to_np(y)[0, 0] == 1.0
    assert y._version == bits._version == 1
    w = mt.zeros(3, 2, device=device).view(mt.float64)
    assert tuple(w.shape) == (3, 1)
    assert mt.ones(3, device=device).view(mt.float32).dtype is mt.float32


@pytest.mark.parametrize("case", ["0d", "odd_last", "offset", "stride_row", "stride_last", "stride_last_down"])
def test_view_dtype_errors_match_torch(torch, device, case):
    def call(L, dev=None):
        kw = {} if dev is None else {"device": dev}
        x = L.zeros(6, 6, **kw)
        v = {"0d": L.tensor(1.0, **kw), "odd_last": x[:, :3], "offset": x[0, 1:5], "stride_row": x[::1, :2].t(),
             "stride_last": x[:, ::2], "stride_last_down": x[:, ::2]}[case]
        return v.view(L.uint8 if case == "stride_last_down" else L.float64)
    with pytest.raises(RuntimeError) as theirs:
        call(torch)
    with pytest.raises(RuntimeError) as ours:
        call(mt, device)
    assert str(ours.value) == str(theirs.value)
