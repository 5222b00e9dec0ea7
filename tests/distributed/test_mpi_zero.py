"""ZeroRedundancyOptimizer on 2 and 3 ranks and on a world of one without a launcher, on the CPU and on the
simulated GPU: scripts/zero.py against one optimizer over the whole batch."""
import pytest

from mpirun_helper import requires_mpi, run_script

pytestmark = requires_mpi

CHECKS = ["sgd_momentum_matches_single_process", "adamw_matches_single_process", "bucket_view_matches_single_process",
          "partition_is_pytorchs_and_state_is_only_the_shard",
          "consolidated_state_dict_equals_single_process_and_reload_resumes_exactly",
          "add_param_group_matches_single_process", "scheduler_and_closure", "frozen_parameter_with_bucket_view",
          "argument_errors"]
# (ranks, device): None ranks is a plain process; "cuda" runs on the simulator
RUNS = [(2, "cpu"), (3, "cpu"), (None, "cpu"), (2, "cuda"), (3, "cuda"), (None, "cuda")]


@pytest.fixture(scope="module", params=RUNS, ids=[f"world{n or '1-no-launcher'}-{'cuda-sim' if d == 'cuda' else d}"
                                                  for n, d in RUNS])
def zero_run(request):
    nproc, device = request.param
    env = {"MINITORCH_GPU_SIM": "1"} if device == "cuda" else {}
    return run_script("zero.py", nproc=nproc, args=(device,), env=env, timeout=180), (nproc or 1)


def test_completed(zero_run):
    res, n = zero_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", CHECKS)
def test_check(zero_run, check):
    res, n = zero_run
    res.assert_check(check, range(n))
