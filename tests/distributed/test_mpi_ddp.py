"""DistributedDataParallel on 2 ranks (and on a world of one without a launcher) against one process on the
whole batch: scripts/ddp_train.py and scripts/ddp_unused.py."""
import re

import pytest

from mpirun_helper import requires_mpi, run_script

pytestmark = requires_mpi

TRAIN_CHECKS = ["sgd_momentum_matches_single_process", "adamw_matches_single_process", "gradient_as_bucket_view",
                "no_sync_accumulates_locally", "construction_broadcasts_rank0_state", "buffers_broadcast_each_forward",
                "module_access_and_state_dict", "optimizer_in_backward",
                "optimizer_in_backward_shared_by_two_models", "buckets_overlap_backward"]
UNUSED_CHECKS = ["unused_everywhere_with_find_unused", "unused_on_some_ranks_with_find_unused",
                 "unused_without_find_unused_raises_next_forward", "static_graph_allows_a_fixed_unused_set",
                 "backward_twice_in_one_iteration_raises", "different_models_are_named", "ddp_argument_errors"]


@pytest.fixture(scope="module", params=[2, None], ids=["world2", "world1-no-launcher"])
def train_run(request):
    return run_script("ddp_train.py", nproc=request.param), (request.param or 1)


@pytest.fixture(scope="module", params=[2, None], ids=["world2", "world1-no-launcher"])
def unused_run(request):
    return run_script("ddp_unused.py", nproc=request.param), (request.param or 1)


def test_train_completed(train_run):
    res, n = train_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", TRAIN_CHECKS)
def test_train(train_run, check):
    res, n = train_run
    res.assert_check(check, range(n))


def test_overlap_report(train_run):
    # the instrumentation line: buckets launched while backward was still producing gradients
    res, n = train_run
    for r in range(n):
        m = re.search(r"INFO overlap (\d+)/(\d+) buckets launched before the last gradient", res.logs.get(r, ""))
        assert m, res.describe()
        launched, total = int(m.group(1)), int(m.group(2))
        assert 1 <= launched == total - 1


def test_unused_completed(unused_run):
    res, n = unused_run
    res.assert_completed(range(n))


@pytest.mark.parametrize("check", UNUSED_CHECKS)
def test_unused(unused_run, check):
    res, n = unused_run
    res.assert_check(check, range(n))
