"""mt.cuda graphs: CUDAGraph, graph, graph_pool_handle, make_graphed_callables, and whole-network capture."""
import numpy as np
import pytest

import minitorch_gpu as mt
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from helpers import assert_close, to_np
from minitorch_gpu.models import GPT, GPTConfig


@pytest.fixture
def gpu(device):
    if device == "cpu":
        pytest.skip("CUDA graphs")
    return device


def test_replay_reruns_the_captured_work_on_the_same_memory(gpu):
    x = mt.ones(4, device=gpu)
    w = mt.full((4,), 2.0, device=gpu)
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        y = (x * w + 1).sum(0, keepdim=True)
        w.add_(1.0)
    # a capture runs nothing: w is as it was
    assert_close(w, [2.0] * 4)
    x.fill_(3.0)
    g.replay()
    assert_close(y, [28.0])
    assert_close(w, [3.0] * 4)
    g.replay()
    assert_close(y, [40.0])
    assert_close(w, [4.0] * 4)
    assert isinstance(g.pool(), type(mt.cuda.graph_pool_handle()))


def test_capture_begin_end_on_a_side_stream_and_a_shared_pool(gpu):
    a = mt.arange(6.0, device=gpu)
    s = mt.cuda.Stream()
    s.wait_stream(mt.cuda.current_stream())
    g1, g2 = mt.cuda.CUDAGraph(), mt.cuda.CUDAGraph()
    with mt.cuda.stream(s):
        g1.capture_begin()
        b = a * 2
        g1.capture_end()
        g2.capture_begin(pool=g1.pool())
        c = b + a
        g2.capture_end()
    mt.cuda.current_stream().wait_stream(s)
    assert g2.pool() is g1.pool()
    a.copy_(mt.ones(6, device=gpu))
    g1.replay()
    g2.replay()
    assert_close(b, [2.0] * 6)
    assert_close(c, [3.0] * 6)
    g1.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g1.replay()
    g2.replay()  # the other graph's memory is still its own
    assert_close(c, [3.0] * 6)


def test_synchronising_during_capture_raises_and_leaves_the_device_usable(gpu):
    x = mt.arange(4.0, device=gpu)
    for sync in (lambda t: t.sum().item(), lambda t: print(t), lambda t: mt.cuda.synchronize(),
                 lambda t: t.tolist(), lambda t: t[t > 1], lambda t: t.nonzero()):
        g = mt.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
            with mt.cuda.graph(g):
                sync(x * 2)
        with pytest.raises(RuntimeError, match="without a preceding successful capture"):
            g.replay()
        assert not mt.cuda.is_current_stream_capturing()
        assert (x * 2).tolist() == [0.0, 2.0, 4.0, 6.0]


def test_an_error_inside_the_block_abandons_the_capture(gpu):
    g = mt.cuda.CUDAGraph()
    w = mt.ones(3, device=gpu)
    with pytest.raises(ValueError, match="boom"):
        with mt.cuda.graph(g):
            w.mul_(5.0)
            raise ValueError("boom")
    assert_close(w, [1.0] * 3)
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    g2 = mt.cuda.CUDAGraph()  # a new capture can start
    with mt.cuda.graph(g2):
        w.mul_(5.0)
    g2.replay()
    assert_close(w, [5.0] * 3)


def _dropout_step(x, w, q):
    """A step that draws in all three captured ways: dropout (forward and its regenerated backward), fused
    attention dropout (forward and backward) and rand / randn / randint."""
    h = F.dropout(x * w, 0.4, training=True)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.3, is_causal=True)
    noise = mt.rand(5, device=x.device) + mt.randn(3, device=x.device).sum() + mt.randint(0, 9, (5,), device=x.device)
    loss = h.sum() + (a * a).sum() + noise.sum()
    loss.backward()
    return loss


def test_captured_random_numbers_replay_like_eager_steps(gpu):
    """PyTorch's scheme: the kernels read the generator's seed and offset from device memory that the graph owns,
    refreshed before each replay. N replays equal N eager steps drawn from the same generator state, bit for bit on
    the simulator, and leave the generator's offset where the eager steps leave it."""
    x = mt.ones(301, device=gpu)
    q0 = mt.randn(1, 2, 9, 8, device=gpu)
    gen = mt.cuda.default_generators[0]

    def leaves():
        return mt.full((301,), 0.5, device=gpu, requires_grad=True), q0.clone().requires_grad_()

    mt.manual_seed(7)
    eager = []
    for _ in range(4):
        w, q = leaves()
        loss = _dropout_step(x, w, q)
        eager.append((to_np(loss), to_np(w.grad), to_np(q.grad)))
    eager_offset = gen.get_offset()

    mt.manual_seed(7)
    w, q = leaves()
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        static_loss = _dropout_step(x, w, q)
    assert gen.get_offset() == 0  # a capture draws nothing
    for want in eager:
        w.grad.zero_()
        q.grad.zero_()
        g.replay()
        for got, exp in zip((static_loss, w.grad, q.grad), want):
            np.testing.assert_array_equal(to_np(got), exp)
    assert gen.get_offset() == eager_offset
    assert not np.array_equal(eager[0][1], eager[1][1])  # every replay drew fresh numbers


def test_random_numbers_the_kernels_do_not_draw_raise_inside_a_capture(gpu):
    x = mt.ones(8, device=gpu)
    with pytest.raises(RuntimeError, match="random numbers"):
        with mt.cuda.graph(mt.cuda.CUDAGraph()):
            mt.randperm(5, device=gpu)
    with pytest.raises(RuntimeError, match="random numbers"):
        with mt.cuda.graph(mt.cuda.CUDAGraph()):
            x.exponential_()
    other = mt.Generator("cuda").manual_seed(3)
    with pytest.raises(RuntimeError, match="random numbers"):
        with mt.cuda.graph(mt.cuda.CUDAGraph()):
            mt.rand(3, device=gpu, generator=other)
    # a generator registered with the graph is captured as the default one is
    g = mt.cuda.CUDAGraph()
    g.register_generator_state(other)
    with mt.cuda.graph(g):
        y = mt.rand(3, device=gpu, generator=other)
    want = mt.rand(3, device=gpu, generator=other.clone_state())
    g.replay()
    np.testing.assert_array_equal(to_np(y), to_np(want))
    assert other.get_offset() == 1
    with pytest.raises(RuntimeError, match="expected a CUDA Generator"):
        g.register_generator_state(mt.Generator())
    assert F.dropout(x, 0.5, training=True).shape == (8,)  # the device keeps working


def test_graph_errors(gpu):
    g = mt.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.pool()
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        with mt.cuda.graph(g, capture_error_mode="loose"):
            pass
    with pytest.raises(TypeError, match="pool"):
        g.capture_begin(pool=(0, 1))
    with mt.cuda.graph(g, capture_error_mode="relaxed"):
        mt.ones(2, device=gpu)
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="without a preceding capture_begin"):
        mt.cuda.CUDAGraph().capture_end()
    other = mt.cuda.CUDAGraph()
    other.capture_begin()
    try:
        with pytest.raises(RuntimeError, match="another capture is under way"):
            mt.cuda.CUDAGraph().capture_begin()
        with pytest.raises(RuntimeError, match="while a capture is under way"):
            g.replay()
    finally:
        other.capture_end()


def test_cuda_graph_needs_cuda(device):
    if device != "cpu":
        pytest.skip("the CPU case")
    if mt.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        mt.cuda.CUDAGraph()


def test_deferred_checks_of_a_replay_are_read_at_the_next_synchronisation(gpu):
    emb = nn.Embedding(5, 3).to(gpu)
    idx = mt.tensor([0, 1], device=gpu)
    g = mt.cuda.CUDAGraph()
    with mt.cuda.graph(g):
        out = emb(idx)
    idx.copy_(mt.tensor([4, 2], device=gpu))
    g.replay()
    assert_close(out, to_np(emb.weight)[[4, 2]])
    idx.copy_(mt.tensor([1, 7], device=gpu))
    g.replay()
    with pytest.raises(IndexError, match="index out of range"):
        mt.cuda.synchronize()
    assert (emb.weight * 1).shape == (5, 3)


# ---------------------------------------------------------------------- whole-network capture, as PyTorch documents
def _train_step(model, opt, loss_of, batch):
    opt.zero_grad(set_to_none=True)
    loss = loss_of(model, *batch)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss


def _whole_network(make, loss_of, batches, warmup=3):
    """Losses of an eager run and of a run that warms up ``warmup`` steps on a side stream, captures one training
    step and replays it for the remaining batches, from the same initial weights."""
    model, opt = make()
    eager = [_train_step(model, opt, loss_of, batch).item() for batch in batches]

    model, opt = make()
    static = [t.clone() for t in batches[0]]
    s = mt.cuda.Stream()
    s.wait_stream(mt.cuda.current_stream())
    with mt.cuda.stream(s):
        graphed = [_train_step(model, opt, loss_of, batch).item() for batch in batches[:warmup]]
    mt.cuda.current_stream().wait_stream(s)
    g = mt.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with mt.cuda.graph(g):
        static_loss = loss_of(model, *static)
        static_loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    for batch in batches[warmup:]:
        for dst, src in zip(static, batch):
            dst.copy_(src)
        g.replay()
        graphed.append(static_loss.item())
    return eager, graphed, model


def test_whole_network_capture_of_an_mlp_gives_the_eager_losses(gpu):
    def make():
        mt.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)).to(gpu)
        return model, mt.optim.AdamW(model.parameters(), lr=1e-2, capturable=True)

    gen = mt.Generator().manual_seed(1)
    batches = [(mt.randn(6, 8, generator=gen).to(gpu), mt.randint(0, 4, (6,), generator=gen).to(gpu))
               for _ in range(7)]
    eager, graphed, _ = _whole_network(make, lambda m, x, t: F.cross_entropy(m(x), t), batches)
    np.testing.assert_allclose(graphed, eager, rtol=1e-6, atol=1e-7)
    assert len(set(graphed)) == len(graphed)  # every replay computed its own batch's loss


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_whole_network_capture_of_the_gpt_gives_the_eager_losses(gpu, dropout):
    # with dropout every replay draws the masks the eager step would (test_captured_random_numbers_replay_...)
    cfg = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=dropout, bias=True)

    def make():
        mt.manual_seed(0)
        model = GPT(cfg).to(gpu)
        return model, mt.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.99), capturable=True)

    gen = mt.Generator().manual_seed(1)
    batches = [(mt.randint(0, 11, (2, 8), generator=gen).to(gpu), mt.randint(0, 11, (2, 8), generator=gen).to(gpu))
               for _ in range(5)]
    eager, graphed, _ = _whole_network(make, lambda m, x, t: m(x, t)[1], batches, warmup=2)
    np.testing.assert_allclose(graphed, eager, rtol=1e-6, atol=1e-7)



def test_whole_network_capture_under_bfloat16_autocast_gives_the_eager_losses(gpu):
    """Every cast under autocast (weights to bfloat16, mixed operands promoted, the loss in float32) is a backend
    primitive, so a replay casts this step's weights, not the ones the capture saw."""
    cfg = GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, n_embd=16, dropout=0.0, bias=True)

    def make():
        mt.manual_seed(0)
        model = GPT(cfg).to(gpu)
        return model, mt.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.99), capturable=True)

    def loss_of(m, x, t):
        with mt.autocast("cuda", dtype=mt.bfloat16):
            return m(x, t)[1]

    gen = mt.Generator().manual_seed(1)
    batches = [(mt.randint(0, 11, (2, 8), generator=gen).to(gpu), mt.randint(0, 11, (2, 8), generator=gen).to(gpu))
               for _ in range(6)]
    eager, graphed, _ = _whole_network(make, loss_of, batches, warmup=2)
    np.testing.assert_array_equal(graphed, eager)

# ---------------------------------------------------------------------- make_graphed_callables
def test_make_graphed_callables_replays_forward_and_backward(gpu):
    mt.manual_seed(0)
    ref = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(gpu)
    module = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(gpu)
    module.load_state_dict(ref.state_dict())

    def fn(a, b):
        return (a * b).sin(), a + 1

    sample = mt.randn(3, 4, device=gpu, requires_grad=True)
    graphed_module, graphed_fn = mt.cuda.make_graphed_callables(
        (module, fn), ((sample,), (mt.randn(2, device=gpu, requires_grad=True), mt.randn(2, device=gpu))),
        num_warmup_iters=2)
    assert graphed_module is module
    for seed in (1, 2):
        mt.manual_seed(seed)
        x = mt.randn(3, 4, device=gpu, requires_grad=True)
        x_ref = x.detach().clone().requires_grad_(True)
        out = graphed_module(x)
        expected = ref(x_ref)
        assert_close(out, expected, rtol=1e-5, atol=1e-6)
        out.square().sum().backward()
        expected.square().sum().backward()
        assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-6)
        for p, q in zip(module.parameters(), ref.parameters()):
            assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6)
            p.grad, q.grad = None, None

        a = mt.randn(2, device=gpu, requires_grad=True)
        b = mt.randn(2, device=gpu)
        s, t = graphed_fn(a, b)
        assert_close(s, (a * b).sin())
        assert_close(t, a + 1)
        (s.sum() + 2 * t.sum()).backward()
        assert_close(a.grad, (a * b).cos() * b + 2)
    module.eval()  # the other training mode runs eagerly
    x = mt.randn(5, 4, device=gpu)
    assert_close(module(x), ref(x), rtol=1e-5, atol=1e-6)


def test_make_graphed_callables_checks_its_arguments(gpu):
    lin = nn.Linear(2, 2).to(gpu)
    lin.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="must not have hooks"):
        mt.cuda.make_graphed_callables(lin, (mt.randn(1, 2, device=gpu),))
    with pytest.raises(AssertionError, match="only Tensors"):
        mt.cuda.make_graphed_callables(lambda a, n: a * n, (mt.randn(2, device=gpu), 3))
