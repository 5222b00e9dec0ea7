"""The Horovod-style DistributedOptimizer on N ranks against one process on the whole batch
(run under mpiexec by tests/distributed/test_mpi_horovod.py)."""
import copy
import warnings
from datetime import timedelta

from _common import Log, assert_identical_across_ranks, dist, expect_raises, gather_arrays, max_diff, mt, np

F = mt.nn.functional

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()


def mlp(seed):
    mt.manual_seed(seed)
    return mt.nn.Sequential(mt.nn.Linear(8, 16), mt.nn.Tanh(), mt.nn.Linear(16, 3))


def batches(steps, seed=5):
    g = mt.Generator().manual_seed(seed)
    return [(mt.randn(4 * n, 8, generator=g), mt.randn(4 * n, 3, generator=g)) for _ in range(steps)]


def shard(t):
    return t.chunk(n)[r]


def run(steps=4, clip=None, **kw):
    net = mlp(0)
    ref = copy.deepcopy(net)
    opt = dist.DistributedOptimizer(mt.optim.SGD(net.parameters(), lr=0.1, momentum=0.9),
                                    named_parameters=net.named_parameters(), **kw)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches(steps):
        opt.zero_grad()
        F.mse_loss(net(shard(x)), shard(y)).backward()
        if clip is None:
            opt.step()
        else:
            opt.synchronize()
            mt.nn.utils.clip_grad_norm_(net.parameters(), clip)
            with opt.skip_synchronize():
                opt.step()
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        if clip is not None:
            mt.nn.utils.clip_grad_norm_(ref.parameters(), clip)
        ref_opt.step()
    return net, ref, opt


@log.check
def matches_single_process():
    net, ref, opt = run()
    assert isinstance(opt, mt.optim.SGD) and type(opt).__name__ == "SGD"
    assert max_diff(net, ref) < 1e-5
    assert_identical_across_ranks(net)


@log.check
def clipping_with_synchronize_and_skip_synchronize():
    net, ref, _ = run(clip=0.05)
    assert max_diff(net, ref) < 1e-5
    assert_identical_across_ranks(net)


@log.check
def fp16_compression():
    net, ref, _ = run(compression=dist.Compression.fp16)
    d = max_diff(net, ref)
    assert d < 2e-3, d
    assert all(p.dtype is mt.float32 and p.grad.dtype is mt.float32 for p in net.parameters())
    assert_identical_across_ranks(net)


@log.check
def gradient_predivide_factor():
    net, ref, _ = run(gradient_predivide_factor=float(n))
    assert max_diff(net, ref) < 1e-5


@log.check
def sum_op():
    net = mlp(0)
    alone = copy.deepcopy(net)
    opt = dist.DistributedOptimizer(mt.optim.SGD(net.parameters(), lr=0.1), op=dist.Sum)
    x, y = batches(1)[0]
    F.mse_loss(net(shard(x)), shard(y)).backward()  # .grad is being reduced in place until synchronize()
    F.mse_loss(alone(shard(x)), shard(y)).backward()
    local = [p.grad for p in alone.parameters()]
    opt.synchronize()
    for p, g in zip(net.parameters(), local):
        every = gather_arrays(g)
        np.testing.assert_allclose(p.grad.numpy(), np.sum(every, axis=0), rtol=1e-6)
    with opt.skip_synchronize():
        opt.step()


@log.check
def zero_grad_before_step_is_refused():
    net = mlp(0)
    opt = dist.DistributedOptimizer(mt.optim.SGD(net.parameters(), lr=0.1))
    x, y = batches(1)[0]
    F.mse_loss(net(shard(x)), shard(y)).backward()
    expect_raises(AssertionError, opt.zero_grad, "optimizer.zero_grad() was called after loss.backward() but before "
                  "optimizer.step() or optimizer.synchronize()")
    opt.step()
    opt.zero_grad()
    assert all(p.grad is None for p in net.parameters())


@log.check
def step_after_synchronize_warns():
    net = mlp(0)
    opt = dist.DistributedOptimizer(mt.optim.SGD(net.parameters(), lr=0.1))
    x, y = batches(1)[0]
    F.mse_loss(net(shard(x)), shard(y)).backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step()
    assert any("skip_synchronize" in str(c.message) for c in caught)


@log.check
def backward_passes_per_step():
    net = mlp(0)
    ref = copy.deepcopy(net)
    opt = dist.DistributedOptimizer(mt.optim.SGD(net.parameters(), lr=0.1), backward_passes_per_step=2)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1)
    data = batches(4, seed=9)
    for i in range(0, 4, 2):
        opt.zero_grad()
        for x, y in data[i:i + 2]:
            F.mse_loss(net(shard(x)), shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        for x, y in data[i:i + 2]:
            F.mse_loss(ref(x), y).backward()
        ref_opt.step()
    assert max_diff(net, ref) < 1e-5
    x, y = data[0]
    opt.zero_grad()
    for _ in range(2):
        F.mse_loss(net(shard(x)), shard(y)).backward()
    expect_raises(AssertionError, lambda: F.mse_loss(net(shard(x)), shard(y)).backward(),
                  "Gradients were computed more than backward_passes_per_step times")
    opt.synchronize()


@log.check
def broadcast_parameters_and_optimizer_state():
    net = mlp(10 + r)  # different everywhere
    opt = mt.optim.SGD(net.parameters(), lr=0.1 * (r + 1), momentum=0.9)
    if r == 0:
        x, y = batches(1)[0]
        F.mse_loss(net(x), y).backward()
        opt.step()  # rank 0 alone has momentum buffers
    dist.broadcast_parameters(net.state_dict(), root_rank=0)
    assert_identical_across_ranks(net)
    dist.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == 0.1
    for p in net.parameters():
        buf = opt.state[p]["momentum_buffer"]
        every = gather_arrays(buf)
        assert all(np.array_equal(e, every[0]) for e in every)
    net2 = mlp(20 + r)
    dist.broadcast_parameters(net2.named_parameters(), root_rank=n - 1)
    assert_identical_across_ranks(net2)


@log.check
def argument_errors():
    net = mlp(0)
    base = mt.optim.SGD(net.parameters(), lr=0.1)
    expect_raises(ValueError, lambda: dist.DistributedOptimizer(base, op=dist.ReduceOp.MAX), "Average or Sum")
    expect_raises(ValueError, lambda: dist.DistributedOptimizer(base, op=dist.Sum, gradient_predivide_factor=2.0),
                  "gradient_predivide_factor")
    expect_raises(ValueError, lambda: dist.DistributedOptimizer(base, named_parameters=[("a", p) for p in
                                                                                      net.parameters()]),
                  "must be unique")
    expect_raises(ValueError, lambda: dist.DistributedOptimizer(base, named_parameters=list(
        net.named_parameters())[:1]), "were not named")
    expect_raises(TypeError, lambda: dist.DistributedOptimizer(net), "expects a minitorch_gpu.optim.Optimizer")


dist.barrier()
log.emit("DONE")
