"""Ctrl-C during training checkpoints at a step boundary, so ``--resume`` continues bitwise as if never stopped.

The interrupt is sent by the run to itself at a named point of a step (MINITORCH_GPU_TRAIN_FAULT), where a
user's Ctrl-C could land: after the batch was drawn, inside the forward pass, inside the optimizer step, inside
an evaluation, right after an evaluation's checkpoint."""
import pytest
from train_runs import SMALL, assert_same_run, checkpoint, metrics, run_all, run_train

# fault spec -> the step the run stops after
POINTS = {
    "INT@batch:5": 5,       # the batch generator has advanced; nothing else has
    "INT@forward:6": 6,     # half-way through the forward pass
    "INT@optimizer:7": 7,   # gradients computed, parameters not yet updated
    "INT@eval:8": 8,        # inside the evaluation of step 8 (its checkpoint follows)
    "INT@saved:4": 4,       # right after step 4's checkpoint: nothing to redo
}


@pytest.fixture(scope="module")
def interrupted(corpus, tmp_path_factory):
    """Every scenario of POINTS run until the interrupt, then resumed: {fault: (out, first run, resumed run)}."""
    outs = {fault: str(tmp_path_factory.mktemp("sigint")) for fault in POINTS}
    firsts = run_all([(["--data", corpus, "--out", out, *SMALL], fault) for fault, out in outs.items()])
    snapshots = {fault: (checkpoint(out)["step"], [rec["step"] for rec in metrics(out)])
                 for fault, out in outs.items()}
    resumed = run_all([(["--data", corpus, "--out", out, *SMALL, "--resume"], None) for out in outs.values()])
    return {fault: (outs[fault], first, snapshots.get(fault), again)
            for fault, first, again in zip(outs, firsts, resumed)}


@pytest.mark.parametrize("fault", list(POINTS))
def test_sigint_then_resume_is_exact(interrupted, reference, fault):
    out, first, snapshot, again = interrupted[fault]
    stopped_at = POINTS[fault]
    assert first.returncode == 130, first.stderr
    assert "Traceback" not in first.stderr
    assert f"interrupted after step {stopped_at}; checkpoint saved" in first.stderr
    # what the interrupted run left: a checkpoint of the last finished step and the records up to it
    assert snapshot == (stopped_at, list(range(1, stopped_at + 1)))
    assert again.returncode == 0, again.stderr
    ref_out, ref_stdout = reference
    assert_same_run(ref_out, out)
    assert again.stdout == ref_stdout  # the same final sample


def test_second_sigint_quits_without_a_checkpoint_and_resume_is_still_exact(corpus, reference, tmp_path):
    ref_out, _ = reference
    out = str(tmp_path / "run")
    # both inside step 6: the first asks for a stop after the step, the second abandons it
    r = run_train("--data", corpus, "--out", out, *SMALL, fault="INT@forward:6,INT@optimizer:6")
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr
    assert "interrupted again during step 6; no new checkpoint, --resume continues from step 4" in r.stderr
    assert checkpoint(out)["step"] == 4
    r = run_train("--data", corpus, "--out", out, *SMALL, "--resume")
    assert r.returncode == 0, r.stderr
    assert_same_run(ref_out, out)


def test_sigint_on_the_simulated_gpu_resumes_exactly(corpus, tmp_path):
    args = ["--data", corpus, *SMALL, "--steps", "6", "--eval-every", "3", "--device", "cuda"]
    ref, out = str(tmp_path / "ref"), str(tmp_path / "run")
    r = run_train(*args, "--out", ref, sim=True)
    assert r.returncode == 0, r.stderr
    r = run_train(*args, "--out", out, sim=True, fault="INT@forward:2")
    assert r.returncode == 130 and checkpoint(out)["step"] == 2, r.stderr
    r = run_train(*args, "--out", out, "--resume", sim=True)
    assert r.returncode == 0, r.stderr
    assert_same_run(ref, out)
