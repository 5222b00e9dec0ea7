"""The MPI launcher for tests that start several ranks (tests/distributed, tests/reliability), or None when
mpi4py or mpiexec is missing, and the marker that skips such tests then."""
import importlib.util

import pytest


def _mpiexec():
    if importlib.util.find_spec("mpi4py") is None:
        return None
    from minitorch_gpu.distributed.run import find_mpiexec
    try:
        return find_mpiexec()
    except RuntimeError:
        return None


MPIEXEC = _mpiexec()
requires_mpi = pytest.mark.skipif(MPIEXEC is None, reason="needs mpi4py and mpiexec (pip install '.[mpi]')")
