"""Backward hooks: on tensors (may replace the gradient), on grad_fn nodes (pre and post), after
accumulation into a leaf, and final callbacks queued during a backward pass."""
import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt


def _leaf(values, device, requires_grad=True):
    return mt.tensor(np.asarray(values, dtype=np.float32), device=device, requires_grad=requires_grad)


def test_leaf_tensor_hook_sees_and_replaces_gradient(device):
    x = _leaf([1.0, 2.0], device)
    seen = []

    def hook(g):
        seen.append(g.tolist())
        return g * 10.0

    h = x.register_hook(hook)
    (x * 3.0).sum().backward()
    assert seen == [[3.0, 3.0]]
    assert_close(x.grad, [30.0, 30.0])
    h.remove()
    x.grad = None
    (x * 3.0).sum().backward()
    assert_close(x.grad, [3.0, 3.0])
    assert len(seen) == 1


def test_hook_returning_none_keeps_gradient(device):
    x = _leaf([1.0], device)
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 2.0).sum().backward()
    assert calls == [1]
    assert_close(x.grad, [2.0])


def test_non_leaf_hook_changes_upstream_gradients(device, torch):
    def run(lib, x):
        h = x * 2.0
        h.register_hook(lambda g: g * g)
        h.retain_grad()
        (h * h).sum().backward()
        return h.grad

    x = _leaf([1.0, 3.0], device)
    tx = torch.tensor([1.0, 3.0], requires_grad=True)
    hg, thg = run(mt, x), run(torch, tx)
    assert_close(x.grad, tx.grad.numpy())
    # retain_grad reports the gradient after the tensor's hooks, whatever the registration order
    assert_close(hg, thg.numpy())


def test_multiple_hooks_run_in_registration_order(device):
    x = _leaf([1.0], device)
    x.register_hook(lambda g: g + 1.0)
    x.register_hook(lambda g: g * 10.0)
    (x * 1.0).sum().backward()
    assert_close(x.grad, [20.0])


def test_hook_registration_needs_requires_grad(device):
    c = _leaf([1.0], device, requires_grad=False)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        c.register_hook(lambda g: g)


def test_handle_as_context_manager(device):
    x = _leaf([1.0], device)
    with x.register_hook(lambda g: g * 0.0):
        (x * 1.0).sum().backward()
    assert_close(x.grad, [0.0])
    (x * 1.0).sum().backward()
    assert_close(x.grad, [1.0])


def test_grad_fn_post_hook_and_prehook(device, torch):
    def run(lib, x):
        y = x * x
        events = []

        def pre(grad_outputs):
            events.append(("pre", [g.tolist() for g in grad_outputs]))
            return (grad_outputs[0] * 2.0,)

        def post(grad_inputs, grad_outputs):
            events.append(("post", [g.tolist() for g in grad_inputs], [g.tolist() for g in grad_outputs]))
            return tuple(g + 1.0 for g in grad_inputs)

        hpre = y.grad_fn.register_prehook(pre)
        hpost = y.grad_fn.register_hook(post)
        y.sum().backward(retain_graph=True)
        first = x.grad.tolist()
        hpre.remove()
        hpost.remove()
        x.grad = None
        y.sum().backward()
        return events, first, x.grad.tolist()

    ours = run(mt, _leaf([1.0, 2.0], device))
    theirs = run(torch, torch.tensor([1.0, 2.0], requires_grad=True))
    assert ours == theirs
    # x * x hands x two gradients (one per input): each (doubled grad) * x, plus 1 from the post-hook
    assert ours[0] == [("pre", [[1.0, 1.0]]), ("post", [[2.0, 4.0], [2.0, 4.0]], [[2.0, 2.0]])]
    assert ours[1] == [6.0, 10.0] and ours[2] == [2.0, 4.0]


def test_post_accumulate_grad_hook(device):
    w = _leaf([1.0, 2.0], device)
    seen = []

    def sgd_step(param):
        # the optimizer-in-backward pattern: update as soon as the gradient is complete
        seen.append(param.grad.tolist())
        with mt.no_grad():
            param.add_(param.grad * -0.1)
        param.grad = None

    h = w.register_post_accumulate_grad_hook(sgd_step)
    (w * w).sum().backward()
    assert seen == [[2.0, 4.0]]
    assert_close(w, [0.8, 1.6])
    assert w.grad is None
    h.remove()
    (w * w).sum().backward()
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (w * 2.0).register_post_accumulate_grad_hook(lambda p: None)


def test_post_accumulate_hook_runs_after_all_contributions(device):
    w = _leaf([1.0], device)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.item()))
    a = w * 2.0
    b = w * 3.0
    (a + b + w).sum().backward()
    assert seen == [6.0]


def test_queue_callback_runs_when_backward_finishes(device):
    x = _leaf([1.0, 2.0], device)
    events = []

    def hook(g):
        events.append("hook")
        mt.autograd.queue_callback(lambda: events.append(("callback", x.grad.tolist())))
        mt.autograd.Variable._execution_engine.queue_callback(lambda: events.append("engine-callback"))
        return g

    h = x * 2.0
    h.register_hook(hook)
    (h * 1.0).sum().backward()
    # callbacks run after every node, the leaf's accumulation included
    assert events == ["hook", ("callback", [2.0, 2.0]), "engine-callback"]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        mt.autograd.queue_callback(lambda: None)


def test_callback_may_queue_another(device):
    x = _leaf([1.0], device)
    events = []

    def first():
        events.append(1)
        mt.autograd.queue_callback(lambda: events.append(2))

    x.register_hook(lambda g: mt.autograd.queue_callback(first))
    (x * 1.0).sum().backward()
    assert events == [1, 2]


def test_hooks_see_gradients_under_create_graph(device):
    x = _leaf([2.0], device)
    grads = []
    x.register_hook(lambda g: grads.append(g.requires_grad))
    (x * x).sum().backward(create_graph=True)
    assert grads == [True]
