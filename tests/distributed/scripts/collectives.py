"""Semantics of every collective on N ranks (run under mpiexec by tests/distributed/test_mpi_collectives.py)."""
import time
import warnings
from datetime import timedelta

from _common import Log, dist, expect_raises, mt, np

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()
ranks_data = [np.array([k + 1.0, 2.0 * (k + 1), -(k + 1.0), 0.5], np.float64) for k in range(n)]
stack = np.stack(ranks_data)


@log.check
def world_info():
    assert dist.is_initialized() and dist.is_available()
    assert dist.get_backend() == "mpi"
    assert dist.get_world_size() == n and 0 <= r < n
    assert dist.group.WORLD is not None and dist.get_process_group_ranks(dist.group.WORLD) == list(range(n))


@log.check
def all_reduce_ops():
    expected = {dist.ReduceOp.SUM: stack.sum(0), dist.ReduceOp.AVG: stack.mean(0), dist.ReduceOp.MIN: stack.min(0),
                dist.ReduceOp.MAX: stack.max(0), dist.ReduceOp.PRODUCT: stack.prod(0)}
    for op, want in expected.items():
        for dt in (mt.float32, mt.float64):
            t = mt.tensor(ranks_data[r], dtype=dt)
            assert dist.all_reduce(t, op=op) is None
            np.testing.assert_allclose(t.numpy(), want, rtol=1e-6, err_msg=f"{op.name} {dt}")
            assert t.dtype is dt


@log.check
def all_reduce_dtypes():
    t = mt.tensor([r + 1, -(r + 1) * 3, 7], dtype=mt.int64)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    s = sum(k + 1 for k in range(n))
    trunc = lambda v: int(v / n)  # noqa: E731  (integer average truncates toward zero)
    assert t.tolist() == [trunc(s), trunc(-3 * s), 7], t.tolist()
    i = mt.tensor([1 << r, 3, 5 + r], dtype=mt.int32)
    dist.all_reduce(i, op=dist.ReduceOp.BOR)
    assert i.tolist()[0] == (1 << n) - 1 and i.tolist()[1] == 3
    b = mt.tensor([r == 0, True, False])
    dist.all_reduce(b)  # a sum of booleans is a logical or
    assert b.tolist() == [True, True, False]
    b = mt.tensor([r == 0, True, False])
    dist.all_reduce(b, op=dist.ReduceOp.PRODUCT)
    assert b.tolist() == [n == 1, True, False]
    h = mt.tensor(ranks_data[r], dtype=mt.float16)
    dist.all_reduce(h)
    np.testing.assert_allclose(h.float().numpy(), stack.sum(0), rtol=1e-3)
    assert h.dtype is mt.float16
    bf = mt.tensor(ranks_data[r], dtype=mt.bfloat16)
    dist.all_reduce(bf, op=dist.ReduceOp.AVG)  # MPI has no bfloat16: reduced locally after an all-gather
    np.testing.assert_allclose(bf.float().numpy(), stack.mean(0), rtol=1e-2)
    assert bf.dtype is mt.bfloat16


@log.check
def all_reduce_non_contiguous_in_place():
    base = mt.arange(12.0).reshape(3, 4) * (r + 1)
    before = base.clone()
    view = base[:, ::2]  # a strided view: reduced through a contiguous copy, written back into base
    v0 = view._version
    dist.all_reduce(view)
    f = sum(k + 1 for k in range(n)) / (r + 1)
    np.testing.assert_allclose(base[:, ::2].numpy(), before[:, ::2].numpy() * f)
    np.testing.assert_allclose(base[:, 1::2].numpy(), before[:, 1::2].numpy())
    assert view._version > v0


@log.check
def all_reduce_on_simulated_gpu():
    prev = mt.cuda.use_simulator(True)
    try:
        t = mt.tensor(ranks_data[r], dtype=mt.float32, device="cuda")
        dist.all_reduce(t)
        assert t.device.type == "cuda"
        np.testing.assert_allclose(t.cpu().numpy(), stack.sum(0), rtol=1e-6)
    finally:
        mt.cuda.use_simulator(prev)


@log.check
def broadcast_from_each_root():
    for src in range(n):
        t = mt.full((2, 3), float(r))
        dist.broadcast(t, src=src)
        assert t.tolist() == [[float(src)] * 3] * 2
    t = mt.full((4,), float(r), dtype=mt.float64)
    w = dist.broadcast(t, group_src=n - 1, async_op=True)
    w.wait()
    assert t.tolist() == [float(n - 1)] * 4


@log.check
def all_gather_variants():
    outs = [mt.zeros(2, 3) for _ in range(n)]
    dist.all_gather(outs, mt.full((2, 3), r + 0.5))
    assert [o[0, 0].item() for o in outs] == [k + 0.5 for k in range(n)]
    cat = mt.zeros(2 * n, 3)
    dist.all_gather_into_tensor(cat, mt.full((2, 3), float(r)))
    assert cat[:, 0].tolist() == [float(k) for k in range(n) for _ in range(2)]
    stacked = mt.zeros(n, 2, 3)
    dist.all_gather_into_tensor(stacked, mt.full((2, 3), float(r)))
    assert stacked[:, 1, 2].tolist() == [float(k) for k in range(n)]


@log.check
def reduce_scatter_variants():
    inputs = [mt.full((3,), float((r + 1) * (k + 1))) for k in range(n)]
    out = mt.zeros(3)
    dist.reduce_scatter(out, inputs)
    s = sum(k + 1 for k in range(n))
    assert out.tolist() == [float(s * (r + 1))] * 3
    big = mt.arange(2.0 * n) + r
    out = mt.zeros(2)
    dist.reduce_scatter_tensor(out, big, op=dist.ReduceOp.AVG)
    mean_off = sum(range(n)) / n
    assert out.tolist() == [2.0 * r + mean_off, 2.0 * r + 1 + mean_off]


@log.check
def reduce_to_one_rank():
    dst = n - 1
    t = mt.tensor(ranks_data[r])
    dist.reduce(t, dst=dst, op=dist.ReduceOp.MAX)
    want = stack.max(0) if r == dst else ranks_data[r]
    np.testing.assert_allclose(t.numpy(), want)


@log.check
def gather_and_scatter():
    t = mt.full((2,), float(r))
    if r == 0:
        lst = [mt.zeros(2) for _ in range(n)]
        dist.gather(t, gather_list=lst, dst=0)
        assert [x.tolist() for x in lst] == [[float(k)] * 2 for k in range(n)]
    else:
        dist.gather(t, dst=0)
    out = mt.zeros(3, dtype=mt.int64)
    src = n - 1
    if r == src:
        dist.scatter(out, scatter_list=[mt.full((3,), 10 * k, dtype=mt.int64) for k in range(n)], src=src)
    else:
        dist.scatter(out, src=src)
    assert out.tolist() == [10 * r] * 3


@log.check
def objects():
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": r, "t": mt.tensor([float(r)])})
    assert [o["rank"] for o in objs] == list(range(n))
    assert [o["t"].item() for o in objs] == [float(k) for k in range(n)]
    lst = ["from root", {"x": 1}, mt.ones(2)] if r == 0 else [None, None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst[0] == "from root" and lst[1] == {"x": 1} and lst[2].tolist() == [1.0, 1.0]
    got = [None] * n if r == 0 else None
    dist.gather_object(("g", r), got, dst=0)
    if r == 0:
        assert got == [("g", k) for k in range(n)]
    out = [None]
    dist.scatter_object_list(out, [f"item{k}" * (k + 1) for k in range(n)] if r == 0 else None, src=0)
    assert out[0] == f"item{r}" * (r + 1)


@log.check
def barrier_and_async_handles():
    dist.barrier()
    w = dist.barrier(async_op=True)
    w.wait()
    assert w.is_completed() and w.is_success()
    ts = [mt.full((1000,), float(r + i)) for i in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    assert all(isinstance(w, dist.Work) for w in works)
    for w in reversed(works):  # completion order does not matter
        assert w.wait() is True
    for i, (t, w) in enumerate(zip(ts, works)):
        assert w.is_completed()
        assert w.result()[0] is t
        assert t[0].item() == sum(k + i for k in range(n))
    t = mt.ones(5)
    w = dist.all_reduce(t, async_op=True)
    deadline = time.monotonic() + 10
    while not w.is_completed():  # polling alone completes it (and writes the result)
        assert time.monotonic() < deadline
    assert t.tolist() == [float(n)] * 5


@log.check
def point_to_point():
    if n < 2:
        return
    if r == 0:
        dist.send(mt.arange(4.0), dst=1, tag=7)
        w = dist.irecv(buf := mt.zeros(2), src=1)
        w.wait()
        assert buf.tolist() == [9.0, 9.0]
    elif r == 1:
        buf = mt.zeros(4)
        assert dist.recv(buf, src=0, tag=7) == 0
        assert buf.tolist() == [0.0, 1.0, 2.0, 3.0]
        dist.isend(mt.full((2,), 9.0), dst=0).wait()


@log.check
def sub_groups():
    everyone = dist.new_group()
    t = mt.ones(2)
    dist.all_reduce(t, group=everyone)
    assert t.tolist() == [float(n)] * 2
    members = [k for k in range(n) if k % 2 == 1] or [0]
    g = dist.new_group(members)
    if r in members:
        assert dist.get_rank(g) == members.index(r)
        assert dist.get_world_size(g) == len(members)
        assert dist.get_global_rank(g, 0) == members[0]
        assert dist.get_group_rank(g, members[-1]) == len(members) - 1
        t = mt.full((3,), float(r))
        dist.all_reduce(t, group=g)
        assert t.tolist() == [float(sum(members))] * 3
        t = mt.full((1,), float(r))
        dist.broadcast(t, src=members[-1], group=g)  # src is a global rank
        assert t.item() == float(members[-1])
    else:
        assert g is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert dist.all_reduce(mt.ones(1), group=g) is None
        assert any("does not belong to the given group" in str(c.message) for c in caught)
    dist.barrier()


@log.check
def argument_errors():
    expect_raises(TypeError, lambda: dist.all_reduce([1.0, 2.0]), "Expected parameter `tensor`")
    expect_raises(ValueError, lambda: dist.all_reduce(mt.ones(1), op="sum"), "Invalid reduce op")
    expect_raises(ValueError, lambda: dist.all_gather([mt.zeros(2)] * (n + 1), mt.zeros(2)), "one tensor per rank")
    expect_raises(ValueError, lambda: dist.all_gather([mt.zeros(3)] * n, mt.zeros(2)), "shape [2]")
    expect_raises(ValueError, lambda: dist.all_gather_into_tensor(mt.zeros(2 * n + 1), mt.zeros(2)),
                  "world_size times input")
    expect_raises(ValueError, lambda: dist.broadcast(mt.ones(1), src=n), "not a member of the group")
    if r != 0:
        expect_raises(ValueError, lambda: dist.gather(mt.ones(1), gather_list=[mt.ones(1)] * n, dst=0),
                      "must NOT be specified on non-destination ranks")
    else:
        expect_raises(ValueError, lambda: dist.gather(mt.ones(1), dst=0), "must be specified on destination rank")
    expect_raises(ValueError, lambda: dist.init_process_group("mpi"), "twice")
    dist.barrier()  # nothing was sent by the failed calls: the ranks are still in step


dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
log.emit("DONE")
