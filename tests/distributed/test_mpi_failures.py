"""What goes wrong across ranks is reported, never silently wrong or hung: mismatched collectives under
MINITORCH_DISTRIBUTED_DEBUG=DETAIL raise on every rank naming both sides, and a rank that dies or hangs makes
the others raise within the process group's timeout (3 s in the script) naming the collective."""
import pytest

from mpirun_helper import requires_mpi, run_script

pytestmark = requires_mpi

DEBUG_CHECKS = ["debug_level_is_detail", "matching_collectives_pass", "shape_mismatch_is_named_on_every_rank",
                "collective_mismatch_is_named", "dtype_and_op_mismatch_are_named",
                "group_still_usable_after_a_reported_mismatch", "ddp_buckets_are_checked_too"]


@pytest.fixture(scope="module")
def debug_run():
    return run_script("debug_mismatch.py", env={"MINITORCH_DISTRIBUTED_DEBUG": "DETAIL"})


def test_debug_completed(debug_run):
    debug_run.assert_completed(range(2))


@pytest.mark.parametrize("check", DEBUG_CHECKS)
def test_debug(debug_run, check):
    debug_run.assert_check(check, range(2))


def test_mismatch_message_is_the_same_on_both_ranks(debug_run):
    want = "MSG collective mismatch at sequence 3: rank 0 all_reduce float32 [4] vs rank 1 all_reduce float32 [5]"
    for r in range(2):
        assert want in debug_run.logs[r], debug_run.describe()


def test_killed_rank_makes_survivor_fail_within_timeout():
    # -disable-auto-cleanup: without it mpiexec itself kills the survivor as soon as a rank dies, which would
    # hide whether the survivor notices on its own
    res = run_script("dead_rank.py", args=["die"], mpiexec_args=["-disable-auto-cleanup"], timeout=60)
    log = res.logs.get(0, "")
    assert ("ERROR [rank 0] mpi process group timed out after 3s waiting for all_reduce #2 (op SUM, float32 [10]); "
            "a peer rank may have died") in log, res.describe()
    elapsed = float(log.split("ELAPSED ")[1].split()[0])
    assert 2.9 <= elapsed < 6, res.describe()
    assert "AFTER [rank 0] the mpi process group can no longer be used" in log
    assert res.returncode != 0
    assert res.elapsed < 30, res.describe()


def test_hung_rank_makes_ddp_backward_fail_and_the_job_end():
    res = run_script("dead_rank.py", args=["hang"], timeout=60)
    log = res.logs.get(0, "")
    assert "ERROR [rank 0] mpi process group timed out after 3s waiting for all_reduce" in log, res.describe()
    assert "a peer rank may have died or stopped calling collectives" in log
    assert "leaving" in res.logs.get(1, "")
    # the survivor aborts the job on exit, which also stops the rank that was sleeping for two minutes
    assert res.returncode != 0
    assert res.elapsed < 30, res.describe()
