"""Helpers of the reliability tests: the main job run as a user runs it, in a subprocess, on settings small
enough that a run takes about two seconds; ``MINITORCH_GPU_TRAIN_FAULT`` makes a run signal itself at an exact
point (see minitorch_gpu.train)."""
import json
import os
import subprocess
import sys

import numpy as np

import minitorch_gpu as mt

# single-threaded BLAS: tiny matrices gain nothing from threads, and a busy machine makes them much slower
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MINITORCH_GPU_SIM="0")
ENV.pop("MINITORCH_GPU_TRAIN_FAULT", None)
# two blocks, so the forward fault point (half-way through the blocks) lands mid-forward; dropout, so the
# default generator's state matters for exact resume as much as the batch generator's
SMALL = ["--steps", "12", "--batch-size", "4", "--block-size", "8", "--n-layer", "2", "--n-head", "2",
         "--n-embd", "16", "--lr", "1e-2", "--dropout", "0.1", "--eval-every", "4", "--eval-iters", "2",
         "--sample-chars", "20", "--quiet"]


# the job's own entry point, with matplotlib hidden: the plot is not under test here, and importing matplotlib
# is a large share of a small run's time
ENTRY = "import sys; sys.modules['matplotlib'] = None; from minitorch_gpu.train import main; sys.exit(main())"


def start_train(*argv, fault=None, sim=False):
    """Start ``python -m minitorch_gpu.train ARGV`` with the fault spec ``fault`` (None: none)."""
    env = dict(ENV, MINITORCH_GPU_SIM="1" if sim else "0")
    if fault:
        env["MINITORCH_GPU_TRAIN_FAULT"] = fault
    return subprocess.Popen([sys.executable, "-c", ENTRY, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def finish(proc, timeout=120):
    """The CompletedProcess of a started run."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the run did not end within {timeout} s: {err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_train(*argv, fault=None, sim=False, timeout=120):
    """Run ``python -m minitorch_gpu.train ARGV`` to its end."""
    return finish(start_train(*argv, fault=fault, sim=sim), timeout)


def run_all(calls, timeout=120):
    """Run several jobs at once (``calls``: (argv, fault) pairs); their CompletedProcesses in order. The runs
    spend much of their time starting up, so overlapping them keeps the suite fast."""
    procs = [start_train(*argv, fault=fault) for argv, fault in calls]
    return [finish(p, timeout) for p in procs]


def metrics(out):
    """The records of ``out/metrics.jsonl``."""
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def checkpoint(out):
    return mt.load(os.path.join(out, "checkpoint.safetensors"), map_location="cpu")


def assert_same_run(ref_out, out):
    """Every step's loss, learning rate and validation loss, and the final weights and optimizer moments, are
    bitwise those of the reference run."""
    a, b = metrics(ref_out), metrics(out)
    assert [r["step"] for r in b] == [r["step"] for r in a]
    for x, y in zip(a, b):
        assert (x["loss"], x["lr"], x.get("val_loss")) == (y["loss"], y["lr"], y.get("val_loss")), x["step"]
    ca, cb = checkpoint(ref_out), checkpoint(out)
    assert ca["step"] == cb["step"]
    for name, t in ca["model"].items():
        np.testing.assert_array_equal(cb["model"][name].numpy(), t.numpy(), err_msg=name)
    for i, st in ca["optimizer"]["state"].items():
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(cb["optimizer"]["state"][i][key].numpy(), st[key].numpy())
