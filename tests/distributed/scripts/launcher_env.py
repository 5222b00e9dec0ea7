"""Started by ``python -m minitorch_gpu.distributed.run``: reports what each rank sees
(tests/distributed/test_mpi_launcher.py)."""
import os
import sys

from _common import Log, dist, mt

dist.init_process_group()
log = Log()
t = mt.ones(1)
dist.all_reduce(t)
log.emit(f"RANK={os.environ['RANK']} LOCAL_RANK={os.environ['LOCAL_RANK']} WORLD_SIZE={os.environ['WORLD_SIZE']} "
         f"rank={dist.get_rank()} world={dist.get_world_size()} sum={t.item():g} argv={sys.argv[1:]} "
         f"main={__name__}")
