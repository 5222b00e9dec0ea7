"""MINITORCH_DISTRIBUTED_DEBUG=DETAIL: mismatched collectives raise on every rank, naming both sides
(run under mpiexec with that variable by tests/distributed/test_mpi_failures.py)."""
from datetime import timedelta

from _common import Log, dist, expect_raises, mt

dist.init_process_group("mpi", timeout=timedelta(seconds=20))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()
last = n - 1


@log.check
def debug_level_is_detail():
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL


@log.check
def matching_collectives_pass():
    t = mt.ones(4)
    dist.all_reduce(t)  # sequence 1
    dist.broadcast(t, src=0)  # sequence 2
    assert t.tolist() == [float(n)] * 4


@log.check
def shape_mismatch_is_named_on_every_rank():
    t = mt.ones(5 if r == last else 4)
    err = expect_raises(RuntimeError, lambda: dist.all_reduce(t), "collective mismatch")
    log.emit(f"MSG {err}")
    assert str(err) == (f"collective mismatch at sequence 3: rank 0 all_reduce float32 [4] vs rank {last} "
                        "all_reduce float32 [5] (the shape differs); every rank must call the same collectives in "
                        "the same order, on tensors of the same dtype and shape"), str(err)


@log.check
def collective_mismatch_is_named():
    t = mt.ones(2, 3, dtype=mt.float64)
    fn = (lambda: dist.all_reduce(t)) if r == last else (lambda: dist.broadcast(t, src=0))
    err = expect_raises(RuntimeError, fn, "collective mismatch at sequence 3")
    assert f"rank 0 broadcast float64 [2, 3] vs rank {last} all_reduce float64 [2, 3]" in str(err), str(err)


@log.check
def dtype_and_op_mismatch_are_named():
    t = mt.ones(3, dtype=mt.int64 if r == last else mt.float32)
    err = expect_raises(RuntimeError, lambda: dist.all_reduce(t), "collective mismatch")
    assert f"rank 0 all_reduce float32 [3] vs rank {last} all_reduce int64 [3]" in str(err), str(err)
    op = dist.ReduceOp.MAX if r == last else dist.ReduceOp.SUM
    err = expect_raises(RuntimeError, lambda: dist.all_reduce(mt.ones(3), op=op), "collective mismatch")
    assert "(op/root 0)" in str(err) and "(op/root 4)" in str(err), str(err)


@log.check
def group_still_usable_after_a_reported_mismatch():
    t = mt.ones(3)
    dist.all_reduce(t)
    assert t.tolist() == [float(n)] * 3


@log.check
def ddp_buckets_are_checked_too():
    mt.manual_seed(0)
    model = mt.nn.parallel.DistributedDataParallel(mt.nn.Linear(3, 2))
    model(mt.ones(2, 3)).sum().backward()
    assert model.module.weight.grad is not None


dist.barrier()
log.emit("DONE")
