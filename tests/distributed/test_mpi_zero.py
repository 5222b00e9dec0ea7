"""ZeroRedundancyOptimizer on 2 and 3 ranks and on a world of one without a launcher, on the CPU and on the
simulated GPU: scripts/zero.py against one optimizer over the whole batch."""
import pytest

from mpirun_helper import DEVICE_RUNS, device_run_id, requires_mpi, run_on_device

pytestmark = requires_mpi

CHECKS = ["sgd_momentum_matches_single_process", "adamw_matches_single_process", "bucket_view_matches_single_process",
          "partition_is_pytorchs_and_state_is_only_the_shard",
          "consolidated_state_dict_equals_single_process_and_reload_resumes_exactly",
          "add_param_group_matches_single_process", "scheduler_and_closure", "frozen_parameter_with_bucket_view",
          "argument_errors"]


@pytest.fixture(scope="module", params=DEVICE_RUNS, ids=device_run_id)
def zero_run(request):
    return run_on_device("zero.py", *request.param)


def test_completed(zero_run):
    res, n = zero_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", CHECKS)
def test_check(zero_run, check):
    res, n = zero_run
    res.assert_check(check, range(n))
