"""ZeroRedundancyOptimizer on N ranks (with DistributedDataParallel) against one optimizer in one process on the
whole batch (run under mpiexec by tests/distributed/test_mpi_zero.py; argv[1] is the device)."""
import copy
import sys
from datetime import timedelta

from _common import Log, dist, expect_raises, mt, np

from minitorch_gpu.distributed.optim import ZeroRedundancyOptimizer

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
F = mt.nn.functional

dist.init_process_group("mpi", timeout=timedelta(seconds=60))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()

# parameter indices of net() by size: 0: 96, 1: 16, 2: 128, 3: 8, 4: 24, 5: 3 elements; PyTorch's greedy
# partition (largest first, to the rank with the fewest elements so far, the lowest on a tie), worked by hand
EXPECTED_OWNERS = {1: [0, 0, 0, 0, 0, 0], 2: [1, 1, 0, 0, 1, 0], 3: [1, 2, 0, 2, 2, 2]}


def net(seed=0):
    mt.manual_seed(seed)
    return mt.nn.Sequential(mt.nn.Linear(6, 16), mt.nn.Tanh(), mt.nn.Linear(16, 8), mt.nn.Tanh(),
                            mt.nn.Linear(8, 3)).to(DEVICE)


def batches(steps, seed=3):
    g = mt.Generator().manual_seed(seed)
    return [(mt.randn(4 * n, 6, generator=g).to(DEVICE), mt.randn(4 * n, 3, generator=g).to(DEVICE))
            for _ in range(steps)]


def shard(t):
    return t.chunk(n)[r]


def host(t):
    """A NumPy copy (never a view that later steps would change)."""
    return t.detach().cpu().numpy().copy()


def every_rank(obj):
    out = [None] * n
    dist.all_gather_object(out, obj)
    return out


def max_diff(a, b):
    return max(float(np.abs(host(x) - host(y)).max()) for x, y in zip(a.parameters(), b.parameters()))


def assert_identical_across_ranks(module):
    mine = [host(p) for p in module.parameters()]
    for other in every_rank(mine):
        assert all(np.array_equal(a, b) for a, b in zip(mine, other)), "parameters differ between ranks"


def state_numel(opt):
    return sum(v.numel() for s in opt.state.values() if s for v in s.values() if isinstance(v, mt.Tensor))


def step_both(ddp, zero, ref, ref_opt, x, y, closure=False):
    zero.zero_grad()
    if closure:
        def loss_fn():
            loss = F.mse_loss(ddp(shard(x)), shard(y))
            loss.backward()
            return loss
        loss = zero.step(loss_fn)
        assert isinstance(loss, mt.Tensor), "step(closure) returns the closure's loss"
    else:
        F.mse_loss(ddp(shard(x)), shard(y)).backward()
        zero.step()
    ref_opt.zero_grad()
    F.mse_loss(ref(x), y).backward()
    ref_opt.step()


def train(opt_cls, steps=5, bucket_view=False, **kw):
    model = net()
    ref = copy.deepcopy(model)
    ddp = mt.nn.parallel.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=opt_cls, parameters_as_bucket_view=bucket_view,
                                   **kw)
    ref_opt = opt_cls(ref.parameters(), **kw)
    for x, y in batches(steps):
        step_both(ddp, zero, ref, ref_opt, x, y)
    return model, ref, zero, ref_opt


@log.check
def sgd_momentum_matches_single_process():
    model, ref, zero, _ = train(mt.optim.SGD, lr=0.1, momentum=0.9)
    assert max_diff(model, ref) < 1e-5, max_diff(model, ref)
    assert_identical_across_ranks(model)
    assert zero.param_groups[0]["momentum"] == 0.9 and isinstance(zero.optim, mt.optim.SGD)


@log.check
def adamw_matches_single_process():
    model, ref, _, _ = train(mt.optim.AdamW, lr=0.01, weight_decay=0.1)
    assert max_diff(model, ref) < 1e-5, max_diff(model, ref)
    assert_identical_across_ranks(model)


@log.check
def bucket_view_matches_single_process():
    model, ref, zero, _ = train(mt.optim.AdamW, bucket_view=True, lr=0.01)
    assert max_diff(model, ref) < 1e-5, max_diff(model, ref)
    assert_identical_across_ranks(model)
    # every parameter is a view into its owner's bucket: writing the bucket writes the parameters
    with mt.no_grad():
        for bucket in zero._buckets[0]:
            bucket.fill_(0.0)
    assert all(float(p.abs().sum()) == 0.0 for p in model.parameters())


@log.check
def partition_is_pytorchs_and_state_is_only_the_shard():
    model, ref, zero, ref_opt = train(mt.optim.AdamW, steps=2, lr=0.01)
    params = list(model.parameters())
    owners = [zero._param_to_rank[id(p)] for p in params]
    if n in EXPECTED_OWNERS:
        assert owners == EXPECTED_OWNERS[n], owners
    mine = {id(p) for p, o in zip(params, owners) if o == r}
    assert {id(p) for p in zero.optim.state} == mine
    assert {id(p) for g in zero.optim.param_groups for p in g["params"]} == mine
    assert not zero.state, "the wrapper keeps no state of its own"
    # exp_avg and exp_avg_sq for each owned element and a step count per owned parameter, nothing else
    owned = sum(p.numel() for p in params if id(p) in mine)
    assert state_numel(zero.optim) == 2 * owned + len(mine), (state_numel(zero.optim), owned)
    assert sum(every_rank(state_numel(zero.optim))) == state_numel(ref_opt)


@log.check
def consolidated_state_dict_equals_single_process_and_reload_resumes_exactly():
    data = batches(6, seed=11)
    model = net()
    ref = copy.deepcopy(model)
    ddp = mt.nn.parallel.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=mt.optim.AdamW, lr=0.01)
    ref_opt = mt.optim.AdamW(ref.parameters(), lr=0.01)
    for x, y in data[:3]:
        step_both(ddp, zero, ref, ref_opt, x, y)
    expect_raises(RuntimeError, zero.state_dict, f"Please call `consolidate_state_dict(to={r})` on all ranks")
    to = n - 1
    zero.consolidate_state_dict(to=to)
    if r == to:
        sd = zero.state_dict()
        want = ref_opt.state_dict()
        assert sd["param_groups"] == want["param_groups"]
        assert sorted(sd["state"]) == sorted(want["state"]) == list(range(6))
        for i, s in sd["state"].items():
            assert s.keys() == want["state"][i].keys()
            for k, v in s.items():
                assert v.device.type == "cpu", "consolidated state lives on the CPU"
                np.testing.assert_allclose(host(v), host(want["state"][i][k]), rtol=1e-5, atol=1e-7)
    else:
        expect_raises(RuntimeError, zero.state_dict, "Optimizer state has not been consolidated on this rank")
        sd = None
    # what a checkpoint on rank `to` carries, as every rank would read it back from the file
    holder = [sd, {k: host(v) for k, v in model.state_dict().items()}]
    dist.broadcast_object_list(holder, src=to)
    sd, weights = holder
    for x, y in data[3:]:
        zero.zero_grad()
        F.mse_loss(ddp(shard(x)), shard(y)).backward()
        zero.step()
    resumed = net(seed=99)
    resumed.load_state_dict({k: mt.tensor(v) for k, v in weights.items()})
    rddp = mt.nn.parallel.DistributedDataParallel(resumed)
    rzero = ZeroRedundancyOptimizer(rddp.parameters(), optimizer_class=mt.optim.AdamW, lr=0.5)
    before = {i: {k: host(v) for k, v in s.items()} for i, s in sd["state"].items()}
    rzero.load_state_dict(sd)
    assert rzero.param_groups[0]["lr"] == 0.01 and rzero.optim.param_groups[0]["lr"] == 0.01
    for i, s in sd["state"].items():  # the caller's dict is left as it was
        assert all(np.array_equal(host(v), before[i][k]) for k, v in s.items())
    rparams = list(resumed.parameters())
    assert {id(p) for p in rzero.optim.state} == {id(p) for p in rparams if rzero._param_to_rank[id(p)] == r}
    for x, y in data[3:]:
        rzero.zero_grad()
        F.mse_loss(rddp(shard(x)), shard(y)).backward()
        rzero.step()
    for a, b in zip(model.parameters(), resumed.parameters()):
        assert np.array_equal(host(a), host(b)), "the resumed run differs from the uninterrupted one"


@log.check
def add_param_group_matches_single_process():
    model = net()
    ref = copy.deepcopy(model)
    ddp = mt.nn.parallel.DistributedDataParallel(model)
    layers = [m for m in model if isinstance(m, mt.nn.Linear)]
    ref_layers = [m for m in ref if isinstance(m, mt.nn.Linear)]
    zero = ZeroRedundancyOptimizer([*layers[0].parameters(), *layers[1].parameters()],
                                   optimizer_class=mt.optim.SGD, lr=0.1, momentum=0.9)
    ref_opt = mt.optim.SGD([*ref_layers[0].parameters(), *ref_layers[1].parameters()], lr=0.1, momentum=0.9)
    data = batches(4, seed=5)
    for x, y in data[:2]:
        step_both(ddp, zero, ref, ref_opt, x, y)
    before = dict(zero._param_to_rank)
    zero.add_param_group({"params": list(layers[2].parameters()), "lr": 0.05, "momentum": 0.5})
    ref_opt.add_param_group({"params": list(ref_layers[2].parameters()), "lr": 0.05, "momentum": 0.5})
    assert all(zero._param_to_rank[k] == v for k, v in before.items()), "old parameters kept their owners"
    assert len(zero.param_groups) == len(zero.optim.param_groups) == 2
    for x, y in data[2:]:
        step_both(ddp, zero, ref, ref_opt, x, y)
    assert max_diff(model, ref) < 1e-5, max_diff(model, ref)
    assert_identical_across_ranks(model)


@log.check
def scheduler_and_closure():
    model = net()
    ref = copy.deepcopy(model)
    ddp = mt.nn.parallel.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=mt.optim.SGD, lr=0.2)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.2)
    sched = mt.optim.lr_scheduler.StepLR(zero, step_size=1, gamma=0.5)
    ref_sched = mt.optim.lr_scheduler.StepLR(ref_opt, step_size=1, gamma=0.5)
    for x, y in batches(3, seed=8):
        step_both(ddp, zero, ref, ref_opt, x, y, closure=True)
        sched.step()
        ref_sched.step()
    assert zero.optim.param_groups[0]["lr"] == 0.2 * 0.5 ** 2  # synchronised at the last step
    assert zero.param_groups[0]["lr"] == ref_opt.param_groups[0]["lr"] == 0.2 * 0.5 ** 3
    assert max_diff(model, ref) < 1e-5, max_diff(model, ref)


@log.check
def frozen_parameter_with_bucket_view():
    model = net()
    ref = copy.deepcopy(model)
    zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=mt.optim.SGD, parameters_as_bucket_view=True,
                                   lr=0.1)
    ref_opt = mt.optim.SGD(ref.parameters(), lr=0.1)
    data = batches(4, seed=21)
    # every rank runs the whole batch: the gradients are equal without DDP
    for i, (x, y) in enumerate(data):
        if i == 2:
            model[0].weight.requires_grad_(False)
            ref[0].weight.requires_grad_(False)
        for m, o in ((model, zero), (ref, ref_opt)):
            o.zero_grad()
            F.mse_loss(m(x), y).backward()
            o.step()
    assert max_diff(model, ref) < 1e-6, max_diff(model, ref)
    assert_identical_across_ranks(model)


@log.check
def argument_errors():
    model = net()
    params = list(model.parameters())
    expect_raises(TypeError, lambda: ZeroRedundancyOptimizer(params[0], mt.optim.SGD, lr=0.1),
                  "`params` argument should be an iterable of Tensors, but got")
    expect_raises(ValueError, lambda: ZeroRedundancyOptimizer([], mt.optim.SGD, lr=0.1),
                  "ZeroRedundancyOptimizer got an empty parameter list")
    expect_raises(TypeError, lambda: ZeroRedundancyOptimizer([params[0], {"params": params[1:]}], mt.optim.SGD,
                                                             lr=0.1),
                  "`params` argument should be an iterable of Tensors or dicts")
    expect_raises(ValueError, lambda: ZeroRedundancyOptimizer([{"lr": 0.1}], mt.optim.SGD, lr=0.1),
                  "must have a 'params' key")
    double = mt.zeros(3, dtype=mt.float64, device=DEVICE, requires_grad=True)
    expect_raises(ValueError, lambda: ZeroRedundancyOptimizer([params[0], double], mt.optim.SGD, lr=0.1),
                  "ZeroRedundancyOptimizer only supports using the same dense type for all parameters but got both")
    expect_raises(NotImplementedError, lambda: ZeroRedundancyOptimizer(params, mt.optim.SGD, overlap_with_ddp=True,
                                                                       lr=0.1), "overlap_with_ddp=True")
    zero = ZeroRedundancyOptimizer(params, mt.optim.SGD, lr=0.1)
    expect_raises(ValueError, lambda: zero.consolidate_state_dict(to=n), f"Group rank {n} is not part of group")
    sd = {"state": {}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]}
    expect_raises(ValueError, lambda: zero.load_state_dict(sd), "doesn't match the size")
    groups = copy.deepcopy([{k: v for k, v in g.items() if k != "params"} for g in zero.param_groups])
    sd = {"state": {7: {}}, "param_groups": [dict(groups[0], params=list(range(6)))]}
    expect_raises(IndexError, lambda: zero.load_state_dict(sd), "parameter index 7")


dist.barrier()
log.emit("DONE")
