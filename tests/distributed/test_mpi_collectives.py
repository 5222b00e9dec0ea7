"""Collectives on 2 and 3 ranks under mpiexec, and on a world of one without a launcher: each check of
scripts/collectives.py must pass on every rank."""
import pytest

from mpirun_helper import requires_mpi, run_script

pytestmark = requires_mpi

CHECKS = ["world_info", "all_reduce_ops", "all_reduce_dtypes", "all_reduce_non_contiguous_in_place",
          "all_reduce_on_simulated_gpu", "broadcast_from_each_root", "all_gather_variants", "reduce_scatter_variants",
          "reduce_to_one_rank", "gather_and_scatter", "objects", "barrier_and_async_handles", "point_to_point",
          "sub_groups", "argument_errors"]
WORLDS = [2, 3, None]  # None: plain ``python script.py``, a world of one


@pytest.fixture(scope="module", params=WORLDS, ids=lambda n: f"world{n or 1}{'' if n else '-no-launcher'}")
def collectives_run(request):
    n = request.param
    return run_script("collectives.py", nproc=n), (n or 1)


def test_completed(collectives_run):
    res, n = collectives_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", CHECKS)
def test_check(collectives_run, check):
    res, n = collectives_run
    res.assert_check(check, range(n))
