"""DistributedDataParallel on N ranks against one process training on the whole batch
(run under mpiexec by tests/distributed/test_mpi_ddp.py)."""
import copy
from datetime import timedelta

from _common import Log, assert_identical_across_ranks, dist, gather_arrays, max_diff, mt, np

DDP = mt.nn.parallel.DistributedDataParallel
F = mt.nn.functional

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()
BATCH = 4 * n


def mlp(seed, widths=(10, 32, 32, 5)):
    mt.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [mt.nn.Linear(a, b), mt.nn.Tanh()]
    return mt.nn.Sequential(*layers[:-1])


def batches(steps, seed=123, dims=(10, 5)):
    g = mt.Generator().manual_seed(seed)
    return [(mt.randn(BATCH, dims[0], generator=g), mt.randn(BATCH, dims[1], generator=g)) for _ in range(steps)]


def shard(t):
    return t.chunk(n)[r]


def train_pair(make_opt, steps=5, **ddp_kwargs):
    """The same model trained by DDP on this rank's shard and by one process on the whole batch."""
    net = mlp(0)
    ref = copy.deepcopy(net)
    model = DDP(net, **ddp_kwargs)
    opt, ref_opt = make_opt(model.parameters()), make_opt(ref.parameters())
    for x, y in batches(steps):
        opt.zero_grad()
        F.mse_loss(model(shard(x)), shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        ref_opt.step()
    return model, net, ref


@log.check
def sgd_momentum_matches_single_process():
    model, net, ref = train_pair(lambda p: mt.optim.SGD(p, lr=0.1, momentum=0.9), bucket_cap_mb=0.0005)
    assert len(model._reducer.buckets) == 3
    d = max_diff(net, ref)
    assert d < 1e-5, d
    assert_identical_across_ranks(net)


@log.check
def adamw_matches_single_process():
    model, net, ref = train_pair(lambda p: mt.optim.AdamW(p, lr=1e-2, weight_decay=0.1))
    assert len(model._reducer.buckets) == 1
    d = max_diff(net, ref)
    assert d < 1e-5, d
    assert_identical_across_ranks(net)


@log.check
def gradient_as_bucket_view():
    for set_to_none in (True, False):
        net = mlp(0)
        ref = copy.deepcopy(net)
        model = DDP(net, gradient_as_bucket_view=True, bucket_cap_mb=0.002)
        opt = mt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for x, y in batches(4):
            opt.zero_grad(set_to_none=set_to_none)
            F.mse_loss(model(shard(x)), shard(y)).backward()
            opt.step()
            ref_opt.zero_grad()
            F.mse_loss(ref(x), y).backward()
            ref_opt.step()
        assert max_diff(net, ref) < 1e-5
        for b in model._reducer.buckets:
            lo = b.flat.data_ptr()
            hi = lo + b.flat.numel() * b.flat.element_size()
            for p in b.params:  # the gradients live inside the bucket: nothing is copied back
                assert lo <= p.grad.data_ptr() < hi


@log.check
def no_sync_accumulates_locally():
    net = mlp(0)
    ref = copy.deepcopy(net)
    model = DDP(net, bucket_cap_mb=0.002)
    data = batches(3, seed=7)
    with model.no_sync():
        for x, y in data[:2]:
            F.mse_loss(model(shard(x)), shard(y)).backward()
            local = gather_arrays(net[0].weight.grad)
            assert n == 1 or not np.allclose(local[0], local[1]), "no_sync must not average"
    x, y = data[2]
    F.mse_loss(model(shard(x)), shard(y)).backward()  # this one averages everything accumulated
    for x, y in data:
        F.mse_loss(ref(x), y).backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    every = gather_arrays(net[0].weight.grad)
    assert all(np.array_equal(e, every[0]) for e in every)


@log.check
def construction_broadcasts_rank0_state():
    mt.manual_seed(100 + r)  # different initial weights and buffers on every rank
    net = mt.nn.Sequential(mt.nn.Linear(6, 4), mt.nn.BatchNorm1d(4), mt.nn.Linear(4, 2))
    net[1].running_mean.fill_(float(r))
    mt.manual_seed(100)
    rank0 = mt.nn.Sequential(mt.nn.Linear(6, 4), mt.nn.BatchNorm1d(4), mt.nn.Linear(4, 2))
    DDP(net)
    assert max_diff(net, rank0) == 0.0
    assert net[1].running_mean.tolist() == [0.0] * 4


@log.check
def buffers_broadcast_each_forward():
    for bcast in (True, False):
        mt.manual_seed(0)
        net = mt.nn.Sequential(mt.nn.Linear(6, 4), mt.nn.BatchNorm1d(4))
        model = DDP(net, broadcast_buffers=bcast)
        seen = []
        net.register_forward_pre_hook(lambda m, args: seen.append(m[1].running_mean.clone()))
        g = mt.Generator().manual_seed(5 + r)  # each rank sees different data: running stats diverge
        for _ in range(3):
            model(mt.randn(8, 6, generator=g) + r).sum().backward()
        at_start = gather_arrays(seen[-1])
        after = gather_arrays(net[1].running_mean)
        if bcast:
            assert all(np.array_equal(a, at_start[0]) for a in at_start)  # rank 0's, before every forward
        elif n > 1:
            assert not np.allclose(at_start[0], at_start[1])
        assert n == 1 or not np.allclose(after[0], after[1])  # the forward itself updates locally


@log.check
def module_access_and_state_dict():
    net = mlp(0)
    model = DDP(net)
    assert model.module is net
    keys = list(model.state_dict().keys())
    assert keys == ["module." + k for k in net.state_dict().keys()], keys
    assert repr(model).startswith("DistributedDataParallel(\n  (module): Sequential(")
    sd = {k[len("module."):]: v for k, v in model.state_dict().items()}
    fresh = mlp(1)
    fresh.load_state_dict(sd)
    assert max_diff(fresh, net) == 0.0


@log.check
def optimizer_in_backward():
    net = mlp(0)
    ref = copy.deepcopy(net)
    opt = mt.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=0.1)
    model = DDP(net, bucket_cap_mb=0.002, optimizer=opt)
    ref_opt = mt.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
    calls = []
    opt.register_step_post_hook(lambda o, a, k: calls.append(1))
    for i, (x, y) in enumerate(batches(4)):
        opt.zero_grad()
        before = net[0].weight.detach().clone()
        F.mse_loss(model(shard(x)), shard(y)).backward()
        # the update already happened inside backward, bucket by bucket
        assert not np.array_equal(before.numpy(), net[0].weight.detach().numpy())
        stepped = net[0].weight.detach().clone()
        opt.step()  # a no-op for the parameters DDP already stepped
        assert np.array_equal(stepped.numpy(), net[0].weight.detach().numpy())
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        ref_opt.step()
    assert len(calls) == 4  # step hooks run once per iteration, around the user's step()
    assert max_diff(net, ref) < 1e-5
    assert_identical_across_ranks(net)
    assert all(len(g["params"]) == len(list(net.parameters())) for g in opt.param_groups)


@log.check
def optimizer_in_backward_shared_by_two_models():
    a, b = mlp(0), mlp(1)
    ref_a, ref_b = copy.deepcopy(a), copy.deepcopy(b)
    opt = mt.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.05}], lr=0.1, momentum=0.9)
    ref_opt = mt.optim.SGD([{"params": ref_a.parameters()}, {"params": ref_b.parameters(), "lr": 0.05}], lr=0.1,
                           momentum=0.9)
    da, db = DDP(a, optimizer=opt), DDP(b, optimizer=opt, bucket_cap_mb=0.001)
    for x, y in batches(3):
        opt.zero_grad()
        (F.mse_loss(da(shard(x)), shard(y)) + F.mse_loss(db(shard(x)), shard(y))).backward()
        opt.step()
        ref_opt.zero_grad()
        (F.mse_loss(ref_a(x), y) + F.mse_loss(ref_b(x), y)).backward()
        ref_opt.step()
    assert max_diff(a, ref_a) < 1e-5 and max_diff(b, ref_b) < 1e-5
    assert [len(g["params"]) for g in opt.param_groups] == [6, 6]  # the groups are whole again


@log.check
def buckets_overlap_backward():
    net = mlp(0, widths=(16, 64, 64, 64, 64, 8))
    model = DDP(net, bucket_cap_mb=0.01)  # about one Linear per bucket
    x, y = batches(1, dims=(16, 8))[0]
    for _ in range(2):
        F.mse_loss(model(shard(x)), shard(y)).backward()
    st = model._reducer.stats
    k = st["buckets"]
    assert k >= 4, st
    # when the last gradient landed, every bucket but the one it completes was already all-reducing
    assert st["launched_before_last_grad"] == k - 1, st
    launches = st["launch_times"]
    assert launches == sorted(launches)
    assert all(t < st["last_grad_time"] for t in launches[:-1]), st
    log.emit(f"INFO overlap {st['launched_before_last_grad']}/{k} buckets launched before the last gradient; "
             f"{st['completed_before_backward_end']} completed before backward ended")


dist.barrier()
log.emit("DONE")
