"""SyncBatchNorm on N ranks, each with its own part of a batch, against BatchNorm in one process on the whole
batch (run under mpiexec by tests/distributed/test_mpi_sync_batchnorm.py; argv[1] is the device)."""
import copy
import sys
from datetime import timedelta

from _common import Log, dist, expect_raises, mt, np

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
F = mt.nn.functional

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()
TOL = {"rtol": 1e-5, "atol": 1e-5}


def host(t):
    return t.detach().cpu().numpy().copy()


def summed(t):
    """``t`` summed over the ranks (on every rank)."""
    s = t.detach().clone()
    dist.all_reduce(s)
    return s


def close(a, b):
    np.testing.assert_allclose(host(a), host(b), **TOL)


def batch_sizes(empty_rank=None):
    # uneven on purpose: the statistics must weigh each rank by its count
    sizes = [2 + i for i in range(n)]
    if empty_rank is not None:
        sizes[empty_rank] = 0
    return sizes


def compare(bn, shape, sizes, steps=2):
    """``bn`` (a BatchNorm*d on the device) on the whole batch against its SyncBatchNorm twin on this rank's
    part: outputs, input gradients, parameter gradients (summed over ranks), running statistics; then the
    evaluation outputs."""
    sync = mt.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(bn))
    assert isinstance(sync, mt.nn.SyncBatchNorm)
    g = mt.Generator().manual_seed(7)
    lo, hi = sum(sizes[:r]), sum(sizes[:r + 1])
    for _ in range(steps):
        x = (mt.randn(sum(sizes), *shape, generator=g) * 3 + 1).to(DEVICE)
        w = mt.randn(sum(sizes), *shape, generator=g).to(DEVICE)
        xa = x.clone().requires_grad_()
        xs = x[lo:hi].clone().requires_grad_()
        for p in list(bn.parameters()) + list(sync.parameters()):
            p.grad = None
        out = bn(xa)
        (out * w).sum().backward()
        mine = sync(xs)
        (mine * w[lo:hi]).sum().backward()
        if n > 1:
            assert type(mine.grad_fn).__name__ == "SyncBatchNormBackward", mine.grad_fn
        close(mine, out[lo:hi])
        close(xs.grad, xa.grad[lo:hi])
        for p, q in zip(sync.parameters(), bn.parameters()):
            close(summed(p.grad), q.grad)
        for b, c in zip(sync.buffers(), bn.buffers()):
            close(b, c)
    sync.eval()
    bn.eval()
    x = mt.randn(3, *shape, generator=g).to(DEVICE)
    close(sync(x), bn(x))


SHAPES = [(mt.nn.BatchNorm1d, (4,)), (mt.nn.BatchNorm1d, (4, 5)), (mt.nn.BatchNorm2d, (4, 3, 2)),
          (mt.nn.BatchNorm3d, (4, 2, 2, 3))]


@log.check
def matches_batchnorm_on_the_whole_batch():
    for cls, shape in SHAPES:
        mt.manual_seed(0)
        bn = cls(4).to(DEVICE)
        with mt.no_grad():
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
        compare(bn, shape, batch_sizes())


@log.check
def cumulative_average_and_no_affine_and_no_running_stats():
    compare(mt.nn.BatchNorm2d(4, momentum=None).to(DEVICE), (4, 3, 2), batch_sizes(), steps=3)
    compare(mt.nn.BatchNorm2d(4, affine=False).to(DEVICE), (4, 3, 2), batch_sizes())
    compare(mt.nn.BatchNorm1d(4, track_running_stats=False).to(DEVICE), (4, 5), batch_sizes())


@log.check
def a_rank_with_an_empty_batch():
    if n == 1:
        return
    compare(mt.nn.BatchNorm2d(4).to(DEVICE), (4, 3, 2), batch_sizes(empty_rank=n - 1))


@log.check
def one_value_per_channel_over_the_group_is_refused():
    sync = mt.nn.SyncBatchNorm(3).to(DEVICE)
    x = mt.randn(1 if r == 0 else 0, 3, device=DEVICE)
    expect_raises(ValueError, lambda: sync(x), "Expected more than 1 value per channel when training")
    assert int(sync.num_batches_tracked) == 0 and float(sync.running_mean.abs().sum()) == 0.0


@log.check
def subgroup_synchronises_its_members_only():
    members = [0, 1] if n > 1 else [0]
    group = dist.new_group(members)
    bn = mt.nn.BatchNorm2d(4).to(DEVICE)
    sync = mt.nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(bn), process_group=group)
    assert sync.process_group is group
    g = mt.Generator().manual_seed(3)
    x = mt.randn(2 * len(members), 4, 2, 2, generator=g).to(DEVICE)
    if r in members:
        i = members.index(r)
        close(sync(x[2 * i:2 * i + 2]), bn(x)[2 * i:2 * i + 2])
    else:
        # outside the group it is a BatchNorm of its own batch
        close(sync(x[:2]), bn(x[:2]))


@log.check
def ddp_training_matches_single_process():
    mt.manual_seed(1)
    net = mt.nn.Sequential(mt.nn.Conv2d(2, 4, 3, padding=1), mt.nn.BatchNorm2d(4), mt.nn.ReLU(), mt.nn.Flatten(),
                           mt.nn.Linear(4 * 4 * 4, 3)).to(DEVICE)
    ref = copy.deepcopy(net)
    model = mt.nn.parallel.DistributedDataParallel(mt.nn.SyncBatchNorm.convert_sync_batchnorm(net))
    opt = mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    g = mt.Generator().manual_seed(4)
    for _ in range(3):
        x = mt.randn(3 * n, 2, 4, 4, generator=g).to(DEVICE)
        y = mt.randn(3 * n, 3, generator=g).to(DEVICE)
        opt.zero_grad()
        F.mse_loss(model(x.chunk(n)[r]), y.chunk(n)[r]).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        ref_opt.step()
    for a, b in zip(net.parameters(), ref.parameters()):
        close(a, b)
    for a, b in zip(net.buffers(), ref.buffers()):
        close(a, b)


@log.check
def convert_replaces_every_batchnorm_and_keeps_its_state():
    inner = mt.nn.Sequential(mt.nn.BatchNorm1d(3, eps=1e-3, momentum=0.2), mt.nn.Linear(3, 3))
    model = mt.nn.Sequential(mt.nn.Conv2d(1, 2, 1), mt.nn.BatchNorm2d(2, affine=False), inner,
                             mt.nn.BatchNorm3d(5, track_running_stats=False, bias=False)).to(DEVICE)
    model.eval()
    old = [m for m in model.modules() if isinstance(m, mt.nn.modules.batchnorm._BatchNorm)]
    converted = mt.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model
    new = [m for m in model.modules() if isinstance(m, mt.nn.modules.batchnorm._BatchNorm)]
    assert len(new) == 3 and all(type(m) is mt.nn.SyncBatchNorm for m in new)
    assert isinstance(model[0], mt.nn.Conv2d) and isinstance(model[2][1], mt.nn.Linear)
    for a, b in zip(old, new):
        assert (a.num_features, a.eps, a.momentum, a.affine, a.track_running_stats) == (
            b.num_features, b.eps, b.momentum, b.affine, b.track_running_stats)
        assert b.weight is a.weight and b.bias is a.bias and not b.training
        assert b.running_mean is a.running_mean and b.running_var is a.running_var
        assert b.num_batches_tracked is a.num_batches_tracked and b.process_group is None
    assert new[2].weight is not None and new[2].bias is None
    single = mt.nn.BatchNorm1d(3)
    out = mt.nn.SyncBatchNorm.convert_sync_batchnorm(single)
    assert type(out) is mt.nn.SyncBatchNorm and out is not single and out.weight is single.weight


dist.barrier()
log.emit("DONE")
