"""``mt.distributed``: PyTorch's ``torch.distributed`` on MPI (CPU) and NCCL (GPU), plus a Horovod-style
``DistributedOptimizer``.

Launch one process per rank with MPI::

    mpiexec -n 2 python train.py                                  # mpiexec of the mpich wheel, or any MPI
    python -m minitorch_gpu.distributed.run --nproc 2 train.py    # the same, finding mpiexec for you

and in the script::

    import minitorch_gpu as torch
    import minitorch_gpu.distributed as dist
    dist.init_process_group("mpi")            # "nccl" with one GPU per rank
    model = torch.nn.parallel.DistributedDataParallel(model)

Importing this package does not start MPI; ``init_process_group`` does. Every collective is checked across
ranks first (name, dtype, shape, reduce op or root, sequence number: one small all-reduce) and a mismatch
raises the same RuntimeError on every rank instead of returning garbage; ``MINITORCH_DISTRIBUTED_CHECKS=0``
turns the check off, ``MINITORCH_DISTRIBUTED_DEBUG=DETAIL`` gathers every rank's fingerprint each time.
While the default group is up, an exception escaping a rank (or a non-zero exit under the launcher) tells
the other ranks, which raise naming it, and then aborts the job (``_failures``). Every wait has the group's
deadline (``init_process_group(timeout=...)``): a rank that dies or stops calling collectives makes the others
raise a RuntimeError naming the collective, and such a process leaves through ``MPI_Abort``.

MPI advances a non-blocking collective only inside MPI calls, so the MPI backend runs a small progress
thread that polls the pending ones every ``MINITORCH_MPI_PROGRESS_US`` microseconds (default 500; 0 turns it
off): this is what lets DDP's bucket all-reduces proceed while backward computes.

The NCCL backend (``_nccl_backend``) needs GPUs and has not been exercised by the test suite, which runs on
CPUs; everything else is tested under ``mpiexec -n 2`` (tests/distributed).

The package is layered; each module imports only from the ones below it:

    optim/                   torch.distributed.optim: ZeroRedundancyOptimizer (ZeRO-1, optimizer state sharded)
    c10d.py, optimizer.py    the public API: process group creation, collectives, DistributedOptimizer
    _mpi_backend.py          the MPI process group (mpi4py); _nccl_backend.py: NCCL (CuPy), bootstrapped over MPI
    _process_group.py        the ProcessGroup/Work interface every backend implements, and the backend registry
    _failures.py             one rank's failure told to the others, and the job aborted (used by _mpi_backend)

A backend module registers itself (``Backend.register_backend``) when this package is imported; ``c10d`` looks
it up by name and never imports a backend module. ``run.py`` (the launcher) stands apart: it starts
``mpiexec`` and watches how the ranks end (it imports only ``_failures``).
"""
# the backends register themselves on import: after these lines Backend("mpi") and Backend("nccl") resolve
from . import _mpi_backend, _nccl_backend  # noqa: F401
from .c10d import (
                   Backend,
                   DebugLevel,
                   GroupMember,
                   ProcessGroup,
                   ReduceOp,
                   Work,
                   all_gather,
                   all_gather_into_tensor,
                   all_gather_object,
                   all_reduce,
                   barrier,
                   broadcast,
                   broadcast_object_list,
                   default_pg_timeout,
                   destroy_process_group,
                   gather,
                   gather_object,
                   get_backend,
                   get_debug_level,
                   get_global_rank,
                   get_group_rank,
                   get_process_group_ranks,
                   get_rank,
                   get_world_size,
                   group,
                   init_process_group,
                   irecv,
                   is_available,
                   is_initialized,
                   is_mpi_available,
                   is_nccl_available,
                   isend,
                   new_group,
                   recv,
                   reduce,
                   reduce_scatter,
                   reduce_scatter_tensor,
                   scatter,
                   scatter_object_list,
                   send,
)
from .optimizer import Average, Compression, DistributedOptimizer, Sum, broadcast_optimizer_state, broadcast_parameters
from . import optim  # torch.distributed.optim, also reachable as an attribute (as in PyTorch)

__all__ = ["Average", "Backend", "Compression", "DebugLevel", "DistributedOptimizer", "GroupMember", "ProcessGroup",
           "ReduceOp", "Sum", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
           "barrier", "broadcast", "broadcast_object_list", "broadcast_optimizer_state", "broadcast_parameters",
           "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend",
           "get_debug_level", "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
           "get_world_size", "group", "init_process_group", "irecv", "is_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "isend", "new_group", "recv", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "scatter_object_list", "send"]
