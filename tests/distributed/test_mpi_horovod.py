"""The Horovod-style DistributedOptimizer on 2 ranks (and a world of one): scripts/horovod.py."""
import pytest

from mpirun_helper import requires_mpi, run_script

pytestmark = requires_mpi

CHECKS = ["matches_single_process", "clipping_with_synchronize_and_skip_synchronize", "fp16_compression",
          "gradient_predivide_factor", "sum_op", "zero_grad_before_step_is_refused", "step_after_synchronize_warns",
          "backward_passes_per_step", "broadcast_parameters_and_optimizer_state", "argument_errors"]


@pytest.fixture(scope="module", params=[2, None], ids=["world2", "world1-no-launcher"])
def horovod_run(request):
    return run_script("horovod.py", nproc=request.param), (request.param or 1)


def test_completed(horovod_run):
    res, n = horovod_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", CHECKS)
def test_check(horovod_run, check):
    res, n = horovod_run
    res.assert_check(check, range(n))
