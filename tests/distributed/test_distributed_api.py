"""The parts of mt.distributed that need no MPI job: argument checking before a process group exists, the
constants, and that importing minitorch_gpu does not start MPI. (Everything that communicates runs under
mpiexec in the test_mpi_* files.)"""
import subprocess
import sys
from datetime import timedelta

import pytest

import minitorch_gpu as mt
import minitorch_gpu.distributed as dist

NOT_INIT = "Default process group has not been initialized, please make sure to call init_process_group."


@pytest.fixture(autouse=True)
def _no_group():
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")


def test_nothing_works_before_init():
    assert not dist.is_initialized()
    for fn in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier):
        with pytest.raises(ValueError, match=NOT_INIT):
            fn()
    with pytest.raises(ValueError, match=NOT_INIT):
        dist.all_reduce(mt.ones(2))
    with pytest.raises(ValueError, match=NOT_INIT):
        mt.nn.parallel.DistributedDataParallel(mt.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=NOT_INIT):
        dist.DistributedOptimizer(mt.optim.SGD(mt.nn.Linear(2, 2).parameters(), lr=0.1))


def test_init_argument_errors_before_mpi_starts():
    with pytest.raises(ValueError, match="Invalid backend: 'tcp'"):
        dist.init_process_group("tcp")
    with pytest.raises(ValueError, match="timeout must be positive"):
        dist.init_process_group("mpi", timeout=timedelta(seconds=0))
    with pytest.raises(TypeError, match="timeout must be a datetime.timedelta"):
        dist.init_process_group("mpi", timeout="10s")
    with pytest.raises(ValueError, match="a store cannot be given"):
        dist.init_process_group("mpi", store=object())
    if not dist.is_nccl_available():
        with pytest.raises(RuntimeError, match="the nccl backend needs NVIDIA GPUs"):
            dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_constants():
    assert [int(op) for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
                               dist.ReduceOp.MAX)] == [0, 1, 2, 3, 4]
    assert dist.ReduceOp.SUM.name == "SUM"
    assert dist.Backend("MPI") == "mpi" and dist.Backend.NCCL == "nccl"
    assert dist.Average == dist.ReduceOp.AVG and dist.Sum == dist.ReduceOp.SUM
    assert dist.Compression.none.compress(t := mt.ones(2))[0] is t
    half, ctx = dist.Compression.fp16.compress(mt.ones(2, dtype=mt.float64))
    assert half.dtype is mt.float16 and dist.Compression.fp16.decompress(half, ctx).dtype is mt.float64
    assert dist.default_pg_timeout == timedelta(minutes=30)
    assert dist.GroupMember.WORLD is None and dist.group.WORLD is None


def test_debug_level_from_environment(monkeypatch):
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    monkeypatch.delenv("MINITORCH_DISTRIBUTED_DEBUG", raising=False)
    assert dist.get_debug_level() == dist.DebugLevel.OFF
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "info")
    assert dist.get_debug_level() == dist.DebugLevel.INFO
    monkeypatch.setenv("MINITORCH_DISTRIBUTED_DEBUG", "DETAIL")
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    monkeypatch.setenv("MINITORCH_DISTRIBUTED_DEBUG", "loud")
    with pytest.raises(ValueError, match="Invalid value for MINITORCH_DISTRIBUTED_DEBUG"):
        dist.get_debug_level()


def test_importing_does_not_start_mpi():
    code = "import sys, minitorch_gpu as mt; print(mt.distributed.is_initialized(), 'mpi4py.MPI' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_launcher_arguments():
    from minitorch_gpu.distributed.run import main
    with pytest.raises(SystemExit, match="--nproc must be at least 1"):
        main(["--nproc", "0", "script.py"])
