"""``metrics.jsonl`` loses nothing to a kill: each record is fsynced before its step's checkpoint, and
``--resume`` drops the records past the checkpoint by writing the kept ones to a temporary file renamed over
the old one, never by truncating it in place. The kills are sent by the run to itself at named points
(MINITORCH_GPU_TRAIN_FAULT)."""
import os

from train_runs import SMALL, assert_same_run, checkpoint, metrics, run_all, run_train


def test_kills_after_a_checkpoint_and_after_a_record_lose_no_step(corpus, reference, tmp_path):
    ref_out, _ = reference
    # KILL@saved:8: right after step 8's evaluation checkpoint; KILL@recorded:6: step 6's record is written,
    # the checkpoint is still step 4's
    outs = {"KILL@saved:8": str(tmp_path / "saved"), "KILL@recorded:6": str(tmp_path / "recorded")}
    killed = run_all([(["--data", corpus, "--out", out, *SMALL], fault) for fault, out in outs.items()])
    for r in killed:
        assert r.returncode == -9, r.stderr
    assert checkpoint(outs["KILL@saved:8"])["step"] == 8
    assert [rec["step"] for rec in metrics(outs["KILL@saved:8"])] == list(range(1, 9))
    assert checkpoint(outs["KILL@recorded:6"])["step"] == 4
    assert [rec["step"] for rec in metrics(outs["KILL@recorded:6"])] == list(range(1, 7))
    resumed = run_all([(["--data", corpus, "--out", out, *SMALL, "--resume"], None) for out in outs.values()])
    for r, out in zip(resumed, outs.values()):
        assert r.returncode == 0, r.stderr
        assert_same_run(ref_out, out)  # every step once, with the uninterrupted run's values


def test_a_kill_while_resume_reconciles_the_metrics_keeps_them(corpus, reference, tmp_path):
    ref_out, _ = reference
    out = str(tmp_path / "run")
    r = run_train("--data", corpus, "--out", out, *SMALL, fault="KILL@recorded:10")
    assert r.returncode == -9, r.stderr
    before = metrics(out)
    assert [rec["step"] for rec in before] == list(range(1, 11)) and checkpoint(out)["step"] == 8
    # killed while --resume replaces the file by the records up to step 8: the old file is intact
    r = run_train("--data", corpus, "--out", out, *SMALL, "--resume", fault="KILL@reconcile")
    assert r.returncode == -9, r.stderr
    assert metrics(out) == before
    r = run_train("--data", corpus, "--out", out, *SMALL, "--resume")
    assert r.returncode == 0, r.stderr
    assert_same_run(ref_out, out)


def test_a_record_cut_short_by_a_crash_is_dropped_on_resume(corpus, tmp_path):
    out = str(tmp_path / "run")
    args = ["--data", corpus, "--out", out, *SMALL, "--steps", "4", "--eval-every", "2"]
    r = run_train(*args, fault="KILL@recorded:3")
    assert r.returncode == -9
    with open(os.path.join(out, "metrics.jsonl"), "a") as f:
        f.write('{"step": 4, "loss": 1.0')  # a record cut short, as by a crash during its write
    r = run_train(*args, "--resume")
    assert r.returncode == 0, r.stderr
    assert [rec["step"] for rec in metrics(out)] == [1, 2, 3, 4]
