"""How autograd encodes the history: the graph is rebuilt on every forward, grad_fn / next_functions /
is_leaf / requires_grad follow PyTorch, and only leaves that require grad accumulate ``.grad``."""
import copy

import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt


def _leaf(values, device, requires_grad=True, dtype=mt.float32):
    return mt.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def test_graph_is_rebuilt_each_iteration_with_python_control_flow(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    shapes = []
    for it in range(4):
        y = x
        # a different number of ops each iteration: the graph is whatever ran
        for _ in range(it + 1):
            y = y * 2.0
        n = 0
        fn = y.grad_fn
        while fn is not None and fn.name() != "AccumulateGrad":
            n += 1
            fn = fn.next_functions[0][0]
        shapes.append(n)
        y.sum().backward()
        assert_close(x.grad, np.full(3, 2.0 ** (it + 1)))
        x.grad = None
    assert shapes == [1, 2, 3, 4]


def test_grad_fn_names_and_next_functions(device):
    x = _leaf([1.0, 2.0], device)
    w = _leaf([3.0, 4.0], device, requires_grad=False)
    y = x * w
    z = y + x
    assert x.grad_fn is None and w.grad_fn is None
    assert y.grad_fn.name() == "MulBackward0"
    assert z.grad_fn.name() == "AddBackward0"
    # one edge per input: (node, output_nr); inputs that need no gradient have (None, 0)
    (n0, i0), (n1, i1) = y.grad_fn.next_functions
    assert n0.name() == "AccumulateGrad" and i0 == 0
    assert n0.variable is x
    assert n1 is None and i1 == 0
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    # the same leaf reached through two paths has one AccumulateGrad node
    assert z.grad_fn.next_functions[1][0] is n0
    assert isinstance(y.grad_fn, mt.autograd.graph.Node)
    assert "MulBackward0" in repr(y.grad_fn)


def test_grad_fn_matches_torch_structure(device, torch):
    def names(fn, depth=3):
        if fn is None or depth == 0:
            return None
        # PyTorch spells the C++ node "torch::autograd::AccumulateGrad"; its Python type name is ours
        return (fn.name().rsplit("::", 1)[-1], tuple(names(n, depth - 1) for n, _ in fn.next_functions))

    ours = _leaf([1.0, 2.0], device)
    theirs = torch.tensor([1.0, 2.0], requires_grad=True)
    oc = _leaf([3.0, 4.0], device, requires_grad=False)
    tc = torch.tensor([3.0, 4.0])
    o = (ours * oc + ours).sum()
    t = (theirs * tc + theirs).sum()
    assert names(o.grad_fn, 5) == names(t.grad_fn, 5)


def test_sequence_numbers_increase_in_creation_order(device):
    x = _leaf([1.0], device)
    a = x * 2.0
    b = x * 3.0
    assert b.grad_fn._sequence_nr() > a.grad_fn._sequence_nr()
    acc = a.grad_fn.next_functions[0][0]
    # AccumulateGrad reports the largest sequence number, as in PyTorch (it runs first when ready)
    assert acc._sequence_nr() == 2 ** 64 - 1


def test_requires_grad_is_derived_for_results(device):
    x = _leaf([1.0, 2.0], device)
    c = _leaf([1.0, 2.0], device, requires_grad=False)
    assert x.requires_grad and x.is_leaf
    assert not c.requires_grad and c.is_leaf
    y = c * 2.0
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None
    z = c * x
    assert z.requires_grad and not z.is_leaf
    # integer results are never recorded
    i = mt.tensor([1, 2], device=device)
    assert not (i + 1).requires_grad


def test_requires_grad_settable_only_on_leaves(device):
    x = _leaf([1.0, 2.0], device, requires_grad=False)
    x.requires_grad = True
    assert x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    y = x * 2.0
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="var_no_grad = var.detach"):
        y.requires_grad_(False)
    # requires_grad_(True) on a tensor that already requires grad is a no-op, as in PyTorch
    assert y.requires_grad_(True) is y
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        mt.tensor([1, 2], device=device).requires_grad_()
    with pytest.raises(TypeError):
        x.requires_grad_("yes")


def test_requires_grad_false_freezes_part_of_a_model(device):
    frozen = _leaf([[1.0, 2.0], [3.0, 4.0]], device)
    trained = _leaf([[0.5, -1.0], [2.0, 1.0]], device)
    frozen.requires_grad_(False)
    out = (frozen * trained + frozen).sum()
    out.backward()
    assert frozen.grad is None
    assert_close(trained.grad, to_np(frozen))
    # ops that only see frozen tensors are not recorded at all
    assert (frozen * 2.0).grad_fn is None


def test_grad_accumulates_on_leaves_only(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    y = x * x
    y.sum().backward()
    assert_close(x.grad, [2.0, 4.0, 6.0])
    assert y.grad is None
    (x * 3.0).sum().backward()
    assert_close(x.grad, [5.0, 7.0, 9.0])
    x.grad = None
    (x * 3.0).sum().backward()
    assert_close(x.grad, [3.0, 3.0, 3.0])
    assert x.grad.dtype is mt.float32 and x.grad.device == x.device
    assert not x.grad.requires_grad


def test_grad_of_shared_gradient_is_not_aliased(device):
    # AddBackward hands one gradient tensor to both inputs: the two leaves must get separate .grad
    a = _leaf([1.0, 2.0], device)
    b = _leaf([3.0, 4.0], device)
    (a + b).sum().backward()
    a.grad.mul_(10.0)
    assert_close(b.grad, [1.0, 1.0])
    (a + b).sum().backward()
    assert_close(a.grad, [11.0, 11.0])
    assert_close(b.grad, [2.0, 2.0])


def test_grad_setter_validates(device):
    x = _leaf([1.0, 2.0], device)
    x.grad = mt.tensor([1.0, 1.0], device=device)
    assert_close(x.grad, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = mt.tensor([1.0, 1.0, 1.0], device=device)
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = mt.tensor([1.0, 1.0], dtype=mt.float64, device=device)
    with pytest.raises(TypeError):
        x.grad = [1.0, 1.0]
    del x.grad
    assert x.grad is None


def test_retain_grad_on_non_leaf(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 3.0
    y.retain_grad()
    assert y.retains_grad
    z = (y * y).sum()
    z.backward()
    assert_close(y.grad, [6.0, 12.0])
    assert_close(x.grad, [18.0, 36.0])
    # on a leaf retain_grad is a no-op
    x.retain_grad()
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        _leaf([1.0], device, requires_grad=False).retain_grad()


def test_retain_grad_follows_in_place_ops(device, torch):
    def run(lib, dev):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev) if lib is mt else \
            torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        a = x * 2.0
        a.retain_grad()
        a.mul_(3.0)
        (a * a).sum().backward()
        return a.grad, x.grad

    ag, xg = run(mt, device)
    tag, txg = run(torch, None)
    assert_close(ag, tag.numpy())
    assert_close(xg, txg.numpy())


def test_detach_shares_data_and_version_but_not_history(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 2.0
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad and d.is_leaf
    assert d.data_ptr() == y.data_ptr()
    v = y._version
    d.add_(1.0)
    assert y._version == v + 1
    assert_close(y, [3.0, 5.0])


def test_detach_in_place(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 2.0
    assert y.detach_() is y
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    v = (x * 1.0).view(2)
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) instead"):
        v.detach_()


def test_data_attribute_is_untracked(device):
    x = _leaf([1.0, 2.0], device)
    d = x.data
    assert not d.requires_grad and d.grad_fn is None
    d.mul_(2.0)  # allowed: .data is outside autograd
    assert_close(x, [2.0, 4.0])
    assert x.requires_grad


def test_deepcopy_leaf_and_non_leaf(device):
    x = _leaf([1.0, 2.0], device)
    (x * 2.0).sum().backward()
    c = copy.deepcopy(x)
    assert c is not x and c.requires_grad and c.is_leaf
    assert_close(c, [1.0, 2.0])
    assert_close(c.grad, [2.0, 2.0])
    c.data.add_(1.0)
    assert_close(x, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2.0)


def test_views_inherit_requires_grad_from_base(device):
    x = _leaf([1.0, 2.0, 3.0, 4.0], device)
    v = x.view(2, 2)
    assert v.requires_grad and not v.is_leaf
    assert v.grad_fn.name() == "ViewBackward0"
    (v * 2.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0, 2.0, 2.0])


def test_view_made_in_no_grad_reports_requires_grad_but_carries_no_gradient(device, torch):
    x = _leaf([1.0, 2.0, 3.0], device)
    with mt.no_grad():
        v = x.view(3)
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with torch.no_grad():
        tv = tx.view(3)
    assert v.requires_grad == tv.requires_grad
    assert v.is_leaf == tv.is_leaf
    (v * 2.0).sum().backward()
    (tv * 2.0).sum().backward()
    assert x.grad is None and tx.grad is None
