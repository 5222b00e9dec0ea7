"""SyncBatchNorm on 2 and 3 ranks and on a world of one without a launcher, on the CPU and on the simulated GPU:
scripts/sync_batchnorm.py against BatchNorm on the whole batch in one process."""
import pytest

from mpirun_helper import DEVICE_RUNS, device_run_id, requires_mpi, run_on_device

pytestmark = requires_mpi

CHECKS = ["matches_batchnorm_on_the_whole_batch", "cumulative_average_and_no_affine_and_no_running_stats",
          "a_rank_with_an_empty_batch", "one_value_per_channel_over_the_group_is_refused",
          "subgroup_synchronises_its_members_only", "ddp_training_matches_single_process",
          "convert_replaces_every_batchnorm_and_keeps_its_state"]


@pytest.fixture(scope="module", params=DEVICE_RUNS, ids=device_run_id)
def sync_bn_run(request):
    return run_on_device("sync_batchnorm.py", *request.param)


def test_completed(sync_bn_run):
    res, n = sync_bn_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", CHECKS)
def test_check(sync_bn_run, check):
    res, n = sync_bn_run
    res.assert_check(check, range(n))
