"""Faults across ranks under the default settings (checks on, the default 30-minute timeout): run under
mpiexec by tests/reliability/test_distributed_faults.py.

``python collective_faults.py DEVICE caught``: a dtype, a shape and an op mismatch, each caught on every rank
(the messages go to ``$MT_TEST_OUT/rank<r>.log``); the group still works; a group made with the check turned
off lets an op mismatch through; then rank 1 raises before a collective that the others enter.
``python collective_faults.py DEVICE dtype|shape|op``: that mismatch, not caught.
``python collective_faults.py DEVICE exit``: rank 1 calls ``sys.exit(3)`` before a collective.
"""
import os
import sys

import minitorch_gpu as mt
import minitorch_gpu.distributed as dist

device, case = sys.argv[1], sys.argv[2]
dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()
last = n - 1
log = open(os.path.join(os.environ["MT_TEST_OUT"], f"rank{r}.log"), "w", buffering=1)
# each rank's stderr (tracebacks, MPI's own messages) to a file of its own: mpiexec would interleave them
err = open(os.path.join(os.environ["MT_TEST_OUT"], f"rank{r}.err"), "w")
os.dup2(err.fileno(), 2)


def ones(*shape, dtype=mt.float32):
    return mt.ones(*shape, dtype=dtype, device=device)


def op_mismatch():
    t = ones(2, 3)
    if r == last:
        dist.broadcast(t, src=0)
    else:
        dist.all_reduce(t)


MISMATCHES = {
    "dtype": lambda: dist.all_reduce(ones(4, dtype=mt.int64 if r == last else mt.float32)),
    "shape": lambda: dist.all_reduce(ones(5 if r == last else 4)),
    "op": op_mismatch,
}

if case in MISMATCHES:
    MISMATCHES[case]()
    log.write("UNEXPECTED no error\n")
elif case == "exit":
    dist.all_reduce(ones(4))
    if r == 1:
        sys.exit(3)
    dist.all_reduce(ones(4))
    log.write("UNEXPECTED no error\n")
else:
    for name, fn in MISMATCHES.items():
        try:
            fn()
            log.write(f"{name}: no error\n")
        except RuntimeError as e:
            log.write(f"{name}: {e}\n")
    t = ones(4)
    dist.all_reduce(t)
    log.write(f"still usable: {t.tolist()}\n")
    # the check is read when a group is made: this one has none, and a MAX on one rank against SUM on the
    # others goes through unnoticed (what every collective did before the check)
    os.environ["MINITORCH_DISTRIBUTED_CHECKS"] = "0"
    unchecked = dist.new_group()
    t = ones(1) * (r + 1)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if r == last else dist.ReduceOp.SUM, group=unchecked)
    log.write(f"unchecked: {t.item()}\n")
    dist.all_reduce(ones(4))
    if r == 1:
        raise ValueError("rank 1 gave up")
    dist.all_reduce(ones(4))
    log.write("UNEXPECTED no error\n")
