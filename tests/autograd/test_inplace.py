"""In-place operations with autograd: version counters and the saved-tensor check, leaf errors, and
the graph rewrite (CopySlices) that keeps gradients right when a view of a non-leaf is written."""
import numpy as np
import pytest
from helpers import assert_close, to_np

import minitorch_gpu as mt


def _pair(torch, device, values, requires_grad=True, dtype="float32"):
    """The same leaf in minitorch_gpu and in PyTorch."""
    arr = np.asarray(values, dtype=dtype)
    return (mt.tensor(arr, device=device, requires_grad=requires_grad),
            torch.tensor(arr, requires_grad=requires_grad))


def _same_grads(ours, theirs, rtol=1e-5, atol=1e-6):
    for o, t in zip(ours, theirs):
        if t is None:
            assert o is None
        else:
            assert o is not None
            assert_close(o, t.detach().numpy(), rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------- version counter

def test_version_counter_bumped_by_in_place_ops_and_shared_by_views(device):
    x = mt.zeros(4, device=device)
    assert x._version == 0
    v = x.view(2, 2)
    d = x.detach()
    x.add_(1.0)
    assert x._version == v._version == d._version == 1
    v.mul_(2.0)
    assert x._version == 2
    d.masked_fill_(mt.tensor([True, False, False, False], device=device), 5.0)
    assert x._version == v._version == 3
    y = x * 2.0  # out of place: a new tensor with its own counter
    assert y._version == 0 and x._version == 3
    x.copy_(mt.ones(4, device=device))
    assert x._version == 4
    assert_close(v, [[1.0, 1.0], [1.0, 1.0]])


def test_modified_saved_tensor_raises_naming_op_shape_and_versions(device, torch):
    def run(lib, x):
        a = x * 2.0
        b = a * a  # saves a at version 0
        a.add_(1.0)
        return b

    x, tx = _pair(torch, device, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = run(mt, x)
    with pytest.raises(RuntimeError) as e:
        b.sum().backward()
    msg = str(e.value)
    with pytest.raises(RuntimeError) as te:
        run(torch, tx).sum().backward()
    expected = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
                "[minitorch_gpu.FloatTensor [2, 3]], which is output 0 of AddBackward0, is at version 1; expected "
                "version 0 instead.")
    assert expected in msg
    # PyTorch's wording, up to its name for the node
    tmsg = str(te.value)
    assert ("modified by an inplace operation: [torch.FloatTensor [2, 3]], which is output 0 of " in tmsg
            and "is at version 1; expected version 0 instead." in tmsg)
    assert "set_detect_anomaly(True)" in msg


def test_modified_saved_output_raises(device, torch):
    def run(lib, x):
        y = x.exp()  # saves its result
        y.mul_(2.0)
        return y

    x, tx = _pair(torch, device, [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"\[minitorch_gpu.FloatTensor \[2\]\], which is output 0 of "
                                           r"ExpBackward0, is at version 1; expected version 0 instead"):
        run(mt, x).sum().backward()
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0"):
        run(torch, tx).sum().backward()


def test_modified_saved_leaf_raises(device):
    x = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = (x * x).sum()
    with mt.no_grad():
        x.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"\[minitorch_gpu.FloatTensor \[2\]\] is at version 1; expected "
                                           r"version 0 instead"):
        y.backward()


def test_modification_through_a_view_is_detected(device):
    x = mt.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    a = x * 1.0
    b = a * a
    a.view(2, 2).mul_(3.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_unchecked_when_saved_tensor_untouched(device):
    x = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    a = x * 2.0
    b = a * 3.0  # saves a and the scalar
    c = a.clone()
    c.add_(1.0)  # c has its own counter
    b.sum().backward()
    assert_close(x.grad, [6.0, 6.0])


# ---------------------------------------------------------------------------- leaf errors

def test_in_place_on_leaf_requiring_grad_raises(device, torch):
    x = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place"):
        x.view(2).mul_(2.0)
    assert_close(x, [1.0, 2.0])
    assert x._version == 0
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        tx.add_(1.0)
    # allowed under no_grad, and on leaves that do not require grad
    with mt.no_grad():
        x.add_(1.0)
    assert_close(x, [2.0, 3.0])
    c = mt.tensor([1.0, 2.0], device=device)
    c.add_(1.0)
    assert not c.requires_grad


def test_failing_in_place_op_leaves_tensor_unchanged(device):
    i = mt.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        i.add_(1.5)
    assert i._version == 0
    assert to_np(i).tolist() == [1, 2]
    x = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    a = x * 1.0
    fn = a.grad_fn
    with pytest.raises(RuntimeError):
        a.add_(mt.ones(3, device=device))
    assert a.grad_fn is fn and a._version == 0


# ---------------------------------------------------------------------------- graph rewrite

def test_in_place_on_non_leaf_rewrites_history(device, torch):
    def run(lib, x, w):
        a = x * 2.0
        a.mul_(w)      # backward needs the old value of a (for w's gradient)
        a.add_(x)
        a.mul_(a * 1.0)
        return (a * 3.0).sum()

    x, tx = _pair(torch, device, [1.0, -2.0, 3.0])
    w, tw = _pair(torch, device, [0.5, 1.5, -1.0])
    out, tout = run(mt, x, w), run(torch, tx, tw)
    assert_close(out, tout.detach().numpy())
    out.backward()
    tout.backward()
    _same_grads([x.grad, w.grad], [tx.grad, tw.grad])


def test_in_place_op_gives_tensor_new_grad_fn(device):
    x = mt.tensor([1.0, 2.0], device=device, requires_grad=True)
    a = x * 2.0
    assert a.grad_fn.name() == "MulBackward0"
    a.add_(1.0)
    assert a.grad_fn.name() == "AddBackward0"
    assert a.grad_fn.next_functions[0][0].name() == "MulBackward0"
    # a leaf that did not require grad becomes a non-leaf when it takes in a tensor that does
    b = mt.zeros(2, device=device)
    b.add_(x)
    assert b.requires_grad and not b.is_leaf
    (b * b).sum().backward()
    assert_close(x.grad, [2.0, 4.0])


def test_in_place_on_view_of_non_leaf(device, torch):
    def run(lib, x):
        a = x * 1.0
        v = a.narrow(0, 1, 2)
        v.mul_(3.0)
        return a, v

    x, tx = _pair(torch, device, [1.0, 2.0, 3.0, 4.0])
    a, v = run(mt, x)
    ta, tv = run(torch, tx)
    assert_close(a, ta.detach().numpy())
    assert a.grad_fn.name() == ta.grad_fn.name().rsplit("::", 1)[-1] == "CopySlices"
    assert v._version == a._version == 1
    (a * a).sum().backward()
    (ta * ta).sum().backward()
    _same_grads([x.grad], [tx.grad])


def test_views_created_before_the_write_see_the_new_history(device, torch):
    def run(lib, x, w):
        a = x * 1.0
        other = a.narrow(0, 0, 3)     # overlaps the region written below
        a.narrow(0, 2, 2).mul_(w)
        return (other * other).sum() + (a * 2.0).sum()

    x, tx = _pair(torch, device, [1.0, 2.0, 3.0, 4.0])
    w, tw = _pair(torch, device, [2.0, -1.0])
    out, tout = run(mt, x, w), run(torch, tx, tw)
    assert_close(out, tout.detach().numpy())
    out.backward()
    tout.backward()
    _same_grads([x.grad, w.grad], [tx.grad, tw.grad])


def test_copy_into_view_of_tensor_without_grad(device, torch):
    def run(lib, w, dev):
        b = lib.zeros(2, 3) if lib is torch else lib.zeros(2, 3, device=dev)
        b.select(0, 1).copy_(w * 2.0)
        return b

    w, tw = _pair(torch, device, [1.0, 2.0, 3.0])
    b, tb = run(mt, w, device), run(torch, tw, None)
    assert b.requires_grad and not b.is_leaf and b.grad_fn.name() == "CopySlices"
    assert_close(b, tb.detach().numpy())
    g = np.arange(6, dtype=np.float32).reshape(2, 3)
    b.backward(mt.tensor(g, device=device))
    tb.backward(torch.tensor(g))
    _same_grads([w.grad], [tw.grad])


def test_setitem_into_view_of_intermediate(device, torch):
    def run(lib, x, w):
        a = x * 2.0
        a[1:3] = w * w
        a.view(2, 2)[0] = a.view(2, 2)[1] * 3.0
        return (a * a).sum()

    x, tx = _pair(torch, device, [1.0, 2.0, 3.0, 4.0])
    w, tw = _pair(torch, device, [0.5, -1.5])
    out, tout = run(mt, x, w), run(torch, tx, tw)
    assert_close(out, tout.detach().numpy())
    out.backward()
    tout.backward()
    _same_grads([x.grad, w.grad], [tx.grad, tw.grad])


def test_double_backward_through_copy_slices(device, torch):
    def run(lib, x, w):
        a = x * x
        a.narrow(0, 0, 2).mul_(w)
        y = (a * a).sum()
        gx, gw = lib.autograd.grad(y, [x, w], create_graph=True)
        return lib.autograd.grad((gx * gx).sum() + gw.sum(), [x, w])

    x, tx = _pair(torch, device, [1.0, -2.0, 0.5], dtype="float64")
    w, tw = _pair(torch, device, [0.3, 2.0], dtype="float64")
    _same_grads(run(mt, x, w), run(torch, tx, tw), rtol=1e-9, atol=1e-9)


def test_view_made_in_no_grad_mode_cannot_be_modified_in_place_with_grad(device, torch):
    x = mt.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    a = x * 1.0
    with mt.no_grad():
        v = a.view(3)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with "
                                           "grad mode enabled"):
        v.mul_(2.0)
    b = mt.zeros(3, device=device)
    with mt.no_grad():
        vb = b.view(3)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        vb.add_(x)
    # inside no_grad (or with nothing requiring grad) it is fine
    with mt.no_grad():
        v.mul_(2.0)
    vb.add_(1.0)
    ta = torch.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1.0
    with torch.no_grad():
        tv = ta.view(3)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        tv.mul_(2.0)


def test_deep_view_chain_replays_without_recursion(device):
    x = mt.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    a = x * 1.0
    v = a
    for i in range(3000):
        v = v.view(2, 2) if i % 2 == 0 else v.view(4)
    v.mul_(2.0)
    assert a.grad_fn.name() == "CopySlices"
    (a * 1.0).sum().backward()
    assert_close(x.grad, [2.0, 2.0, 2.0, 2.0])


def test_outputs_of_multi_view_ops_cannot_be_modified_in_place(device, torch):
    x = mt.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    a = x * 1.0
    msg = ("Output 0 of {} is a view and is being modified inplace. This view is the output of a function that "
           "returns multiple views.")
    with pytest.raises(RuntimeError, match=msg.format("Unbind")):
        a.unbind(0)[0].mul_(2.0)
    with pytest.raises(RuntimeError, match=msg.format("Split")):
        a.split(2)[0].mul_(2.0)
    tx = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="This view is the output of a function that returns multiple views"):
        tx.unbind(0)[0].mul_(2.0)
    # nothing recorded: allowed, and the write reaches the base
    b = mt.zeros(4, device=device)
    b.unbind(0)[1].add_(5.0)
    assert b.tolist() == [0.0, 5.0, 0.0, 0.0]


def test_view_taken_before_its_base_started_requiring_grad(device, torch):
    # v2 was taken while b needed no gradient; writing w through another view makes b (and so v2)
    # part of the graph, and ops on v2 must record it
    def run(lib, w, dev):
        b = lib.zeros(4) if lib is torch else lib.zeros(4, device=dev)
        v1 = b.narrow(0, 0, 3)
        v2 = b.narrow(0, 1, 3)
        v1.copy_(w)
        assert v2.requires_grad
        return (v2 * v2).sum()

    w, tw = _pair(torch, device, [1.0, 2.0, 3.0])
    out, tout = run(mt, w, device), run(torch, tw, None)
    out.backward()
    tout.backward()
    _same_grads([w.grad], [tw.grad])
