"""The backward engine: execution order (reverse creation, AccumulateGrad first), no recursion on long
chains, re-entrant backward, and multithreaded backward (PyTorch's autograd mechanics notes)."""
import sys
import threading

import numpy as np
import pytest
from helpers import assert_close

import minitorch_gpu as mt


def _leaf(values, device, requires_grad=True):
    return mt.tensor(np.asarray(values, dtype=np.float32), device=device, requires_grad=requires_grad)


def _record_order(lib, nodes, order):
    for name, fn in nodes.items():
        fn.register_prehook(lambda g, name=name: order.append(name))


def test_ready_nodes_run_in_reverse_creation_order(device, torch):
    def run(lib, x):
        order = []
        a = x * x        # created first
        b = x * x * x    # created later: runs first once both are ready
        c = x * x * x * x
        _record_order(lib, {"a": a.grad_fn, "b": b.grad_fn, "c": c.grad_fn}, order)
        (a + b + c).sum().backward()
        return order

    ours = run(mt, _leaf([1.0, 2.0], device))
    theirs = run(torch, torch.tensor([1.0, 2.0], requires_grad=True))
    assert ours == theirs == ["c", "b", "a"]


def test_accumulate_grad_runs_as_soon_as_ready(device, torch):
    def run(lib, p, q):
        order = []
        a = p * p        # seq 1
        b = q * q        # seq 2
        out = a + b
        _record_order(lib, {"a": a.grad_fn, "b": b.grad_fn}, order)
        p.register_post_accumulate_grad_hook(lambda t: order.append("acc p"))
        q.register_post_accumulate_grad_hook(lambda t: order.append("acc q"))
        out.sum().backward()
        return order

    ours = run(mt, _leaf([1.0], device), _leaf([2.0], device))
    theirs = run(torch, torch.tensor([1.0], requires_grad=True), torch.tensor([2.0], requires_grad=True))
    # q's AccumulateGrad becomes ready while a (lower sequence number) is waiting, and jumps ahead of it
    assert ours == theirs == ["b", "acc q", "a", "acc p"]


def test_node_waits_for_all_its_gradients(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 2.0
    seen = []
    h.grad_fn.register_prehook(lambda g: seen.append(g[0].tolist()))
    # h feeds three consumers: its node runs once, with the summed gradient
    (h * 1.0 + h * 2.0 + h * 3.0).sum().backward()
    assert seen == [[6.0, 6.0]]
    assert_close(x.grad, [12.0, 12.0])


def test_long_chain_backward_is_iterative(device):
    x = _leaf([1.0, 2.0], device)
    y = x
    for _ in range(10000):
        y = y * 1.0
    limit = sys.getrecursionlimit()
    assert limit < 10000
    y.sum().backward()
    assert_close(x.grad, [1.0, 1.0])
    # autograd.grad over the same length
    z = x
    for _ in range(10000):
        z = z + 0.0
    (g,) = mt.autograd.grad(z.sum(), x)
    assert_close(g, [1.0, 1.0])


def test_long_chain_built_and_freed_without_backward(device):
    x = _leaf([1.0], device)
    y = x
    for _ in range(50000):
        y = y * 1.0
    # dropping the last reference frees 50000 nodes: must not overflow the C stack
    del y
    z = x * 2.0
    z.sum().backward()
    assert_close(x.grad, [2.0])


def test_node_can_be_called_directly(device):
    x = _leaf([1.0, 2.0], device)
    y = x * _leaf([3.0, 4.0], device, requires_grad=False)
    (gx, gw) = y.grad_fn(mt.ones(2, device=device))
    assert_close(gx, [3.0, 4.0])
    assert gw is None


def test_reentrant_backward_inside_a_function(device):
    class Checkpointed(mt.autograd.Function):
        """Recompute the forward in backward and differentiate it with a nested backward pass."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with mt.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd * xd * xd
                (gx,) = mt.autograd.grad(y, xd, g)
            return gx

    x = _leaf([1.0, 2.0], device)
    Checkpointed.apply(x).sum().backward()
    assert_close(x.grad, [3.0, 12.0])


def test_seed_train_fn_from_ten_threads(device):
    # the example in PyTorch's autograd mechanics notes
    results = []
    errors = []

    def train_fn():
        try:
            x = mt.ones(5, 5, requires_grad=True, device=device)
            y = (x + 3) * (x + 4) * 0.5
            y.sum().backward()
            results.append(x.grad.tolist())
        except Exception as e:  # a failure in a thread must fail the test
            errors.append(e)

    threads = []
    for _ in range(10):
        p = threading.Thread(target=train_fn, args=())
        p.start()
        threads.append(p)
    for p in threads:
        p.join()
    assert not errors
    assert len(results) == 10
    for r in results:
        assert np.allclose(r, 4.5)


def test_concurrent_backward_into_shared_leaf(device):
    # Hogwild-style: many threads accumulate into one parameter; accumulation is locked, so nothing is lost
    w = mt.ones(64, requires_grad=True, device=device)
    n_threads, n_iters = 8, 25
    errors = []
    start = threading.Barrier(n_threads)

    def work(k):
        try:
            start.wait()
            for _ in range(n_iters):
                (w * float(k + 1)).sum().backward()
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    expected = n_iters * sum(k + 1 for k in range(n_threads))
    assert_close(w.grad, np.full(64, float(expected)))


def test_concurrent_grad_calls_are_independent(device):
    x = mt.tensor(np.arange(1.0, 5.0, dtype=np.float32), requires_grad=True, device=device)
    out = {}

    def work(k):
        y = (x * x * float(k)).sum()
        (g,) = mt.autograd.grad(y, x)
        out[k] = g.tolist()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(1, 9):
        assert np.allclose(out[k], 2.0 * k * np.arange(1.0, 5.0))
    assert x.grad is None


def test_graph_shared_between_threads_needs_retain_graph(device):
    # the first part of the graph is built once and shared; the first backward frees it
    x = _leaf([1.0, 2.0], device)
    shared = x * x
    errors = []

    def work():
        try:
            (shared * 2.0).sum().backward()
        except RuntimeError as e:
            errors.append(str(e))

    for _ in range(2):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    assert len(errors) == 1 and "retain_graph=True" in errors[0]

    y = _leaf([1.0, 2.0], device)
    shared2 = y * y

    def work_retained():
        (shared2 * 2.0).sum().backward(retain_graph=True)

    threads = [threading.Thread(target=work_retained) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_close(y.grad, 4 * 4.0 * np.array([1.0, 2.0]))


def test_backward_in_thread_does_not_leak_grad_mode(device):
    x = _leaf([1.0], device)
    modes = []

    def work():
        (x * x).sum().backward(create_graph=True)
        modes.append(mt.is_grad_enabled())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert modes == [True]
    assert mt.is_grad_enabled()


@pytest.mark.parametrize("retain", [False, True])
def test_error_inside_backward_restores_state(device, retain):
    class Boom(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = _leaf([1.0], device)
    with pytest.raises(ValueError, match="boom"):
        Boom.apply(x).sum().backward(retain_graph=retain)
    assert mt.is_grad_enabled()
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        mt.autograd.queue_callback(lambda: None)


def test_graph_is_freed_by_reference_counting(device):
    # saved outputs, custom Functions, views and in-place rewrites must not form reference cycles: the
    # graph (and the memory it holds) goes as soon as the last output does, without the cyclic GC
    import gc
    import weakref

    class Exp(mt.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            y = a.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = _leaf([0.1, 0.2, 0.3], device)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        y = Exp.apply(x * 2.0).exp()
        h = x * 1.0
        h.narrow(0, 0, 2).mul_(3.0)
        refs = [weakref.ref(y.grad_fn), weakref.ref(y.grad_fn.next_functions[0][0]), weakref.ref(h.grad_fn)]
        y.sum().backward(retain_graph=True)
        del y, h
        assert [r() for r in refs] == [None, None, None]
    finally:
        if was_enabled:
            gc.enable()
