"""Views share storage with their base: a write through any view op is seen by the base (and the other
way round), the version counter is shared and bumped, and autograd gives PyTorch's gradients when a
view of an intermediate is modified in place. In-place writes that PyTorch refuses (a view of a leaf
that requires grad, an expanded tensor whose elements repeat) raise and leave everything unchanged."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt

RNG = np.random.default_rng(1)

# view ops applied the same way to a (4, 6) minitorch_gpu or PyTorch tensor
VIEW_OPS = {
    "view": lambda t: t.view(2, 12),
    "view_as": lambda t: t.view_as(t.flatten()),
    "reshape": lambda t: t.reshape(3, 8),
    "flatten": lambda t: t.flatten(),
    "unflatten": lambda t: t.unflatten(1, (2, 3)),
    "ravel": lambda t: t.ravel(),
    "permute": lambda t: t.unsqueeze(0).permute(2, 0, 1),
    "transpose": lambda t: t.transpose(0, 1),
    "swapaxes": lambda t: t.swapaxes(1, 0),
    "swapdims": lambda t: t.swapdims(0, -1),
    "t": lambda t: t.t(),
    "T": lambda t: t.T,
    "mT": lambda t: t.mT,
    "squeeze": lambda t: t.unsqueeze(1).squeeze(1),
    "squeeze_all": lambda t: t.view(1, 4, 1, 6).squeeze(),
    "unsqueeze": lambda t: t.unsqueeze(-1),
    "expand_size1": lambda t: t.unsqueeze(0).expand(1, 4, 6),
    "narrow": lambda t: t.narrow(1, 2, 3),
    "select": lambda t: t.select(0, 2),
    "unfold": lambda t: t.unfold(1, 2, 2),
    "movedim": lambda t: t.movedim(0, 1),
    "diagonal": lambda t: t.diagonal(1),
    "unbind": lambda t: t.unbind(1)[4],
    "split": lambda t: t.split(2, 1)[1],
    "split_sizes": lambda t: t.split([1, 3], 0)[1],
    "chunk": lambda t: t.chunk(3, 0)[1],
    "tensor_split": lambda t: t.tensor_split([1, 4], 1)[1],
    "chain": lambda t: t.view(2, 2, 6).transpose(0, 2).narrow(0, 1, 4).select(1, 1),
}

WRITES = {
    "add_": lambda v, L, w: v.add_(1),
    "mul_": lambda v, L, w: v.mul_(2),
    "copy_": lambda v, L, w: v.copy_(L.tensor(w)),
}


def _base_pair(torch, device):
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    return mt.tensor(a, device=device), torch.tensor(a), a


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("op", list(VIEW_OPS))
def test_write_through_view_reaches_base(torch, device, op, write):
    base, tbase, a = _base_pair(torch, device)
    v, tv = VIEW_OPS[op](base), VIEW_OPS[op](tbase)
    assert v._base is base and tv._base is tbase
    w = RNG.standard_normal(tuple(tv.shape))
    r = WRITES[write](v, _OnDevice(device), w)
    WRITES[write](tv, torch, w)
    assert r is v
    assert_close(base, tbase.numpy())
    assert_close(v, tv.numpy())
    assert not np.array_equal(to_np(base), a)
    # one version counter for the base and every view of it
    assert v._version == base._version == tv._version == tbase._version == 1


class _OnDevice:
    def __init__(self, device):
        self.device = device

    def tensor(self, data):
        return mt.tensor(data, device=self.device)


@pytest.mark.parametrize("op", list(VIEW_OPS))
def test_write_to_base_is_seen_by_view(torch, device, op):
    base, tbase, _ = _base_pair(torch, device)
    v, tv = VIEW_OPS[op](base), VIEW_OPS[op](tbase)
    other = base.narrow(0, 1, 2)
    base.mul_(-1)
    tbase.mul_(-1)
    assert_close(v, tv.numpy())
    other.add_(100)
    tbase.narrow(0, 1, 2).add_(100)
    assert_close(v, tv.numpy())
    assert v._version == other._version == base._version == 2


def test_views_of_views_share_the_root(device):
    base = mt.tensor(np.zeros((3, 4)), device=device)
    v1 = base.t()
    v2 = v1.narrow(0, 1, 2)
    v3 = v2.unsqueeze(0).select(2, 1)
    assert v1._base is base and v2._base is base and v3._base is base
    v3.add_(5)
    assert v1._version == v2._version == v3._version == base._version == 1
    expected = np.zeros((3, 4))
    expected[1, 1:3] = 5
    assert_close(base, expected)


def test_copies_do_not_share_storage(device):
    base = mt.tensor(np.arange(6.0).reshape(2, 3), device=device)
    for c in (base.flip(0), base.roll(1), base.tril(), base.repeat(1, 1), mt.cat([base]), mt.stack([base])[0],
              base.t().reshape(-1), base.rot90(), base.repeat_interleave(1, dim=0)):
        c.add_(1)
    assert_close(base, np.arange(6.0).reshape(2, 3))
    assert base._version == 0


# ---------------------------------------------------------------------- autograd through in-place on views

def _grads_after_inplace(lib, tensor, view_fn, write, x_arr, y_arr, loss="square"):
    x = tensor(x_arr, requires_grad=True)
    y = tensor(y_arr, requires_grad=True)
    h = x * 2
    v = view_fn(h)
    write(v, y)
    total = (h * h).sum() if loss == "square" else h.sum()
    total.backward()
    return x.grad, y.grad, h.detach()


INPLACE_CASES = {
    "brief_example": (lambda h: h.view(2, 12, 1).transpose(0, 1).narrow(0, 3, 6), lambda v, y: v.mul_(y), (6, 2, 1)),
    "transpose_add": (lambda h: h.transpose(0, 1), lambda v, y: v.add_(y), (6, 4)),
    "narrow_mul": (lambda h: h.narrow(1, 1, 3), lambda v, y: v.mul_(y), (4, 3)),
    "select_mul": (lambda h: h.select(0, 2), lambda v, y: v.mul_(y), (6,)),
    "select_broadcast": (lambda h: h.select(1, 0), lambda v, y: v.mul_(y), (1,)),
    "diagonal_copy": (lambda h: h.diagonal(-1), lambda v, y: v.copy_(y), (3,)),
    "unfold_mul": (lambda h: h.unfold(1, 2, 3), lambda v, y: v.mul_(y), (4, 2, 2)),
    "permute_add": (lambda h: h.view(2, 2, 6).permute(2, 0, 1), lambda v, y: v.add_(y), (6, 2, 2)),
    "squeeze_mul": (lambda h: h.narrow(0, 1, 1).squeeze(0), lambda v, y: v.mul_(y), (6,)),
    "flatten_copy": (lambda h: h.flatten(), lambda v, y: v.copy_(y), (24,)),
    "expand1_mul": (lambda h: h.unsqueeze(0).expand(1, 4, 6), lambda v, y: v.mul_(y), (1, 4, 6)),
    "movedim_mul": (lambda h: h.unflatten(1, (2, 3)).movedim(2, 0), lambda v, y: v.mul_(y), (3, 4, 2)),
    "twice": (lambda h: h.t(), lambda v, y: (v.mul_(y), v.narrow(0, 1, 2).mul_(3)), (6, 4)),
}


@pytest.mark.parametrize("loss", ["square", "sum"])
@pytest.mark.parametrize("case", list(INPLACE_CASES))
def test_inplace_on_view_of_intermediate_matches_torch(torch, device, case, loss):
    view_fn, write, y_shape = INPLACE_CASES[case]
    x_arr = RNG.standard_normal((4, 6))
    y_arr = RNG.standard_normal(y_shape)
    ours = _grads_after_inplace(mt, lambda a, requires_grad: mt.tensor(a, device=device, requires_grad=requires_grad),
                                view_fn, write, x_arr, y_arr, loss)
    theirs = _grads_after_inplace(torch, torch.tensor, view_fn, write, x_arr, y_arr, loss)
    for o, t in zip(ours, theirs):
        assert_close(o, t.numpy())


def test_view_history_is_rewritten_after_inplace(torch, device):
    a = RNG.standard_normal((3, 4))
    res = []
    for lib, tensor in ((mt, lambda d: mt.tensor(d, device=device, requires_grad=True)),
                        (torch, lambda d: torch.tensor(d, requires_grad=True))):
        x = tensor(a)
        h = x + 0
        v = h.narrow(0, 0, 2)
        other = h.select(1, 3)
        v.mul_(x.narrow(0, 1, 2))
        # a view taken before the write gets a history through the write
        (other * other).sum().backward()
        res.append((h.grad_fn.name(), x.grad))
    assert res[0][0] == "CopySlices" and res[1][0].endswith("CopySlices")
    assert_close(res[0][1], res[1][1].numpy())


def test_second_order_gradient_through_inplace_on_view(torch, device):
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((4,))
    out = []
    for lib, tensor in ((mt, lambda d: mt.tensor(d, device=device, requires_grad=True)),
                        (torch, lambda d: torch.tensor(d, requires_grad=True))):
        x, y = tensor(a), tensor(b)
        h = x * x
        h.select(0, 1).mul_(y)
        g, = lib.autograd.grad((h * h).sum(), x, create_graph=True)
        g.sum().backward()
        out.append((x.grad, y.grad))
    for o, t in zip(*out):
        assert_close(o, t.numpy())


# ---------------------------------------------------------------------- refused writes

MULTI_OUTPUT = {"unbind": "Unbind", "split": "Split", "split_sizes": "SplitWithSizes", "chunk": "Split"}


@pytest.mark.parametrize("op", list(VIEW_OPS))
def test_inplace_on_view_of_leaf_requiring_grad_raises(device, op):
    x = mt.tensor(np.ones((4, 6)), device=device, requires_grad=True)
    v = VIEW_OPS[op](x)
    # PyTorch names the multi-output op first when the view comes from one
    msg = (f"Output [0-9]+ of {MULTI_OUTPUT[op]} is a view and is being modified inplace" if op in MULTI_OUTPUT
           else "a view of a leaf Variable that requires grad")
    with pytest.raises(RuntimeError, match=msg):
        v.add_(1)
    assert_close(x, np.ones((4, 6)))
    assert x._version == 0 and x.grad_fn is None
    with mt.no_grad():
        VIEW_OPS[op](x).mul_(3)
    assert x._version == 1 and x.is_leaf


@pytest.mark.parametrize("make", [
    lambda t: t.unsqueeze(0).expand(3, 4, 6),
    lambda t: t.select(1, 0).unsqueeze(1).expand(4, 6),
    lambda t: t.expand_as(mt.zeros(2, 4, 6)),
    lambda t: mt.broadcast_to(t.narrow(0, 0, 1), (5, 6)),
    lambda t: t.unsqueeze(1).expand(4, 2, 6).select(2, 3),
])
@pytest.mark.parametrize("write", ["add_", "mul_", "copy_"])
def test_expanded_tensor_refuses_inplace_write(device, make, write):
    base = mt.tensor(np.arange(24.0).reshape(4, 6), device=device)
    v = make(base)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single "
                                           "memory location"):
        if write == "copy_":
            v.copy_(mt.zeros(*v.shape, dtype=v.dtype, device=device))
        else:
            getattr(v, write)(2)
    assert_close(base, np.arange(24.0).reshape(4, 6))
    assert base._version == v._version == 0


def test_expand_without_repeats_allows_inplace(torch, device):
    base, tbase, _ = _base_pair(torch, device)
    base.unsqueeze(0).expand(1, 4, 6).add_(1)
    tbase.unsqueeze(0).expand(1, 4, 6).add_(1)
    base.narrow(1, 0, 1).expand(4, 1).mul_(3)
    tbase.narrow(1, 0, 1).expand(4, 1).mul_(3)
    assert_close(base, tbase.numpy())


def test_write_through_multi_output_views_without_grad(torch, device):
    base, tbase, _ = _base_pair(torch, device)
    for lib, b in ((mt, base), (torch, tbase)):
        parts = b.split(2, 1)
        rows = b.unbind(0)
        parts[2].mul_(-1)
        rows[0].add_(10)
        b.chunk(2, 0)[1].copy_(lib.ones(2, 6, dtype=lib.float64) if lib is torch else
                               mt.ones(2, 6, dtype=mt.float64, device=device))
    assert_close(base, tbase.numpy())
    assert base._version == 3


@pytest.mark.parametrize("op", list(MULTI_OUTPUT))
def test_multi_output_views_refuse_inplace_while_recording(torch, device, op):
    a = np.ones((4, 6))
    x, tx = mt.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    h, th = x * 2, tx * 2
    v = VIEW_OPS[op](h)
    with pytest.raises(RuntimeError) as theirs:
        VIEW_OPS[op](th).mul_(3)
    with pytest.raises(RuntimeError, match="returns multiple views") as ours:
        v.mul_(3)
    assert str(ours.value) == str(theirs.value)
    assert_close(h, np.full((4, 6), 2.0))
    assert h._version == 0
