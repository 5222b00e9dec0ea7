"""Run a script of tests/distributed/scripts on N ranks (``mpiexec -n N python script``) or as one plain
process (a world of one), and read what each rank logged (see scripts/_common.py)."""
import os
import subprocess
import sys
import tempfile
import time

from mpi_launch import MPIEXEC, requires_mpi  # noqa: F401 - the tests import them from here

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
# the ranks share two CPUs in CI: single-threaded BLAS keeps them from oversubscribing
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
ENV.pop("MINITORCH_DISTRIBUTED_DEBUG", None)
ENV.pop("TORCH_DISTRIBUTED_DEBUG", None)


class Result:
    def __init__(self, proc, logs, elapsed):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.logs = logs
        self.elapsed = elapsed

    def describe(self):
        parts = [f"exit code {self.returncode} after {self.elapsed:.1f}s"]
        for r, text in sorted(self.logs.items()):
            parts.append(f"--- rank {r} log ---\n{text}")
        parts.append(f"--- stdout ---\n{self.stdout[-4000:]}\n--- stderr ---\n{self.stderr[-4000:]}")
        return "\n".join(parts)

    def assert_check(self, name, ranks):
        for r in ranks:
            log = self.logs.get(r, "")
            assert f"OK {name}\n" in log, f"check {name!r} did not pass on rank {r}:\n" + self.describe()

    def assert_completed(self, ranks):
        assert self.returncode == 0, self.describe()
        for r in ranks:
            log = self.logs.get(r, "")
            assert "DONE" in log and "FAIL " not in log, self.describe()


def run_script(name, nproc=2, args=(), env=None, mpiexec_args=(), timeout=90):
    """Run ``scripts/<name>`` on ``nproc`` ranks under mpiexec (``nproc=None``: a plain ``python``, no
    launcher). Returns a Result holding the exit code, output and each rank's log."""
    script = os.path.join(SCRIPTS, name)
    with tempfile.TemporaryDirectory() as out:
        full_env = dict(ENV, MT_TEST_OUT=out, **(env or {}))
        if nproc is None:
            cmd = [sys.executable, script, *args]
        else:
            cmd = [MPIEXEC, *mpiexec_args, "-n", str(nproc), sys.executable, script, *args]
        start = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=ROOT)
        elapsed = time.monotonic() - start
        logs = {}
        for f in os.listdir(out):
            if f.startswith("rank") and f.endswith(".log"):
                with open(os.path.join(out, f)) as fh:
                    logs[int(f[4:-4])] = fh.read()
    return Result(proc, logs, elapsed)


# (ranks, device) for scripts that run on the CPU and on the simulated GPU (device "cuda" with
# MINITORCH_GPU_SIM=1); None ranks is a plain process, a world of one
DEVICE_RUNS = [(2, "cpu"), (3, "cpu"), (None, "cpu"), (2, "cuda"), (3, "cuda"), (None, "cuda")]


def device_run_id(run):
    nproc, device = run
    return f"world{nproc or '1-no-launcher'}-{'cuda-sim' if device == 'cuda' else device}"


def run_on_device(name, nproc, device, timeout=180):
    """``scripts/<name> <device>`` on ``nproc`` ranks (see DEVICE_RUNS): (Result, number of ranks)."""
    env = {"MINITORCH_GPU_SIM": "1"} if device == "cuda" else {}
    return run_script(name, nproc=nproc, args=(device,), env=env, timeout=timeout), (nproc or 1)
