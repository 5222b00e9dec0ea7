"""A rank that dies (or hangs) must make the others fail within the timeout, naming the collective, never
hang (run under mpiexec by tests/distributed/test_mpi_failures.py).

``python dead_rank.py die``: the last rank exits abruptly after one collective; the others then all-reduce.
``python dead_rank.py hang``: the last rank stops calling collectives (sleeps) while the others run a DDP
backward, whose bucket all-reduce cannot complete.
"""
import os
import sys
import time
from datetime import timedelta

from _common import Log, dist, mt

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=timedelta(seconds=3))
log = Log()
r, n = dist.get_rank(), dist.get_world_size()
model = mt.nn.parallel.DistributedDataParallel(mt.nn.Linear(10, 1)) if mode == "hang" else None
t = mt.ones(10)
dist.all_reduce(t)
log.emit(f"first all_reduce {t[0].item()}")
if r == n - 1:
    log.emit("leaving")
    if mode == "die":
        os._exit(3)
    time.sleep(120)
    os._exit(4)
start = time.monotonic()
try:
    if mode == "die":
        dist.all_reduce(t)
    else:
        model(mt.ones(4, 10)).sum().backward()
except RuntimeError as e:
    log.emit(f"ERROR {e}")
    log.emit(f"ELAPSED {time.monotonic() - start:.2f}")
    # the group is broken now: further collectives refuse at once
    try:
        dist.barrier()
    except RuntimeError as e2:
        log.emit(f"AFTER {e2}")
    raise
log.emit("UNEXPECTED no error")
