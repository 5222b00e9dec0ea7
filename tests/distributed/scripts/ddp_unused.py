"""DDP with parameters that get no gradient, and models that differ between ranks
(run under mpiexec by tests/distributed/test_mpi_ddp.py)."""
import copy
from datetime import timedelta

from _common import Log, assert_identical_across_ranks, dist, expect_raises, max_diff, mt, np

DDP = mt.nn.parallel.DistributedDataParallel
F = mt.nn.functional

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()


class Branchy(mt.nn.Module):
    """``side`` is used only when asked: on some ranks, or never."""

    def __init__(self):
        super().__init__()
        self.body = mt.nn.Linear(6, 6)
        self.side = mt.nn.Linear(6, 6)
        self.head = mt.nn.Linear(6, 2)

    def forward(self, x, use_side=True):
        h = mt.tanh(self.body(x))
        if use_side:
            h = h + self.side(h)
        return self.head(h)


def data(seed):
    g = mt.Generator().manual_seed(seed)
    return mt.randn(4 * n, 6, generator=g), mt.randn(4 * n, 2, generator=g)


@log.check
def unused_everywhere_with_find_unused():
    mt.manual_seed(0)
    net = Branchy()
    ref = copy.deepcopy(net)
    model = DDP(net, find_unused_parameters=True, bucket_cap_mb=0.0001)
    opt = mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step in range(3):
        x, y = data(step)
        opt.zero_grad()
        F.mse_loss(model(x.chunk(n)[r], use_side=False), y.chunk(n)[r]).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(ref(x, use_side=False), y).backward()
        ref_opt.step()
        assert net.side.weight.grad is None and net.side.bias.grad is None  # unused on every rank: untouched
    assert max_diff(net, ref) < 1e-5
    assert_identical_across_ranks(net)


@log.check
def unused_on_some_ranks_with_find_unused():
    mt.manual_seed(0)
    net = Branchy()
    ref = copy.deepcopy(net)
    model = DDP(net, find_unused_parameters=True)
    x, y = data(11)
    use = r % 2 == 0  # the odd ranks skip ``side``
    F.mse_loss(model(x.chunk(n)[r], use_side=use), y.chunk(n)[r]).backward()
    # one process: the mean over ranks of each rank's loss, with the same choice per shard
    losses = [F.mse_loss(ref(xs, use_side=(k % 2 == 0)), ys) for k, (xs, ys) in enumerate(zip(x.chunk(n),
                                                                                              y.chunk(n)))]
    (sum(losses) / n).backward()
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)


@log.check
def unused_without_find_unused_raises_next_forward():
    mt.manual_seed(0)
    net = Branchy()
    model = DDP(net)
    x, y = data(3)
    F.mse_loss(model(x, use_side=False), y).backward()  # completes: the error comes with the next forward
    err = expect_raises(RuntimeError, lambda: model(x), "Expected to have finished reduction in the prior iteration")
    msg = str(err)
    assert "find_unused_parameters=True" in msg
    assert f"Parameter indices which did not receive grad for rank {r}: 2 3" in msg, msg
    assert "side.weight, side.bias" in msg
    with mt.no_grad():
        model(x)  # evaluation does not touch the reducer


@log.check
def static_graph_allows_a_fixed_unused_set():
    mt.manual_seed(0)
    net = Branchy()
    ref = copy.deepcopy(net)
    model = DDP(net, static_graph=True)
    for step in range(3):
        x, y = data(20 + step)
        net.zero_grad()
        F.mse_loss(model(x.chunk(n)[r], use_side=False), y.chunk(n)[r]).backward()
        ref.zero_grad()
        F.mse_loss(ref(x, use_side=False), y).backward()
        np.testing.assert_allclose(net.head.weight.grad.numpy(), ref.head.weight.grad.numpy(), rtol=1e-5)


@log.check
def backward_twice_in_one_iteration_raises():
    mt.manual_seed(0)
    net = Branchy()
    model = DDP(net)
    x, y = data(4)
    loss = F.mse_loss(model(x), y)
    loss.backward(retain_graph=True)
    expect_raises(RuntimeError, lambda: loss.backward(), "Expected to mark a variable ready only once")


@log.check
def different_models_are_named():
    mt.manual_seed(0)
    width = 3 if r == n - 1 and n > 1 else 2
    net = mt.nn.Sequential(mt.nn.Linear(4, 4), mt.nn.Linear(4, width))
    if n == 1:
        DDP(net)
        return
    err = expect_raises(RuntimeError, lambda: DDP(net), "DDP expects same model across all ranks")
    assert f"Rank {n - 1} has parameter '1.weight' of shape [3, 4]" in str(err), str(err)
    assert "rank 0 has shape [2, 4]" in str(err), str(err)


@log.check
def ddp_argument_errors():
    expect_raises(RuntimeError, lambda: DDP(mt.nn.ReLU()), "doesn't have any parameter that requires a gradient")
    expect_raises(ValueError, lambda: DDP(mt.nn.Linear(2, 2), device_ids=[0]), "device_ids")
    expect_raises(TypeError, lambda: DDP(lambda x: x), "expects a minitorch_gpu.nn.Module")


dist.barrier()
log.emit("DONE")
