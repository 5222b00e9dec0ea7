"""Faults across ranks end the job within seconds, with a clear error on every rank, under the default
settings (no debug mode, the 30-minute default timeout): a dtype, shape or op mismatch between ranks raises
the same RuntimeError on every rank instead of an MPI abort with a C backtrace, garbage, or silently
different results; a rank that raises or exits non-zero ends the job instead of leaving its peers blocked.
The ranks run scripts/collective_faults.py under mpiexec, on 2 and 3 ranks, on the CPU and the simulated GPU.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import pytest
from mpi_launch import MPIEXEC, requires_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "collective_faults.py")
# a wait that the fix does not end takes the default 30 minutes: far past this
TIMEOUT_S = 90
SUGGESTION = "every rank must call the same collectives in the same order, on tensors of the same dtype and shape"

pytestmark = requires_mpi


def _env(out, device):
    env = dict(os.environ, MT_TEST_OUT=out, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    for name in ("MINITORCH_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG", "MINITORCH_DISTRIBUTED_CHECKS"):
        env.pop(name, None)
    if device == "cuda":
        env["MINITORCH_GPU_SIM"] = "1"
    return env


def _read(path):
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read()


class Run:
    """One job: exit code, seconds, each rank's log and stderr lines (the script sends each rank's stderr to a
    file of its own)."""

    def __init__(self, cmd, nproc, device):
        with tempfile.TemporaryDirectory() as out:
            start = time.monotonic()
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=_env(out, device),
                                  cwd=ROOT)
            self.elapsed = time.monotonic() - start
            self.logs = {r: _read(os.path.join(out, f"rank{r}.log")) for r in range(nproc)}
            self.errors = {r: _read(os.path.join(out, f"rank{r}.err")) for r in range(nproc)}
        self.returncode = proc.returncode
        self.output = proc.stdout + proc.stderr + "".join(self.errors.values())
        self.stderr = proc.stderr
        self.lines = {r: text.splitlines() for r, text in self.errors.items()}

    def __repr__(self):
        logs = "\n".join(f"--- rank {r} log ---\n{text}--- rank {r} stderr ---\n{self.errors[r][-3000:]}"
                         for r, text in self.logs.items())
        return f"exit code {self.returncode} after {self.elapsed:.1f}s\n{logs}\n--- output ---\n{self.stderr[-3000:]}"

    def assert_ended_with_error(self):
        assert self.returncode != 0, self
        assert "libmpi" not in self.output, f"an MPI C backtrace:\n{self}"
        assert "UNEXPECTED" not in "".join(self.logs.values()), self


def run_ranks(nproc, device, case):
    cmd = [MPIEXEC, "-n", str(nproc), sys.executable, SCRIPT, device, case]
    return Run(cmd, nproc, device)


WORLDS = [(2, "cpu"), (3, "cpu"), (2, "cuda"), (3, "cuda")]


def _world_id(w):
    return f"{w[0]}ranks-{'cuda-sim' if w[1] == 'cuda' else w[1]}"


@pytest.fixture(scope="module", params=WORLDS, ids=_world_id)
def caught_run(request):
    nproc, device = request.param
    return nproc, run_ranks(nproc, device, "caught")


def test_mismatches_raise_the_same_error_naming_what_differs_on_every_rank(caught_run):
    n, run = caught_run
    last = n - 1
    want = {
        "dtype": f"collective mismatch at sequence 1: rank 0 all_reduce float32 [4] vs rank {last} all_reduce "
                 f"int64 [4] (the dtype differs); {SUGGESTION}",
        "shape": f"collective mismatch at sequence 1: rank 0 all_reduce float32 [4] vs rank {last} all_reduce "
                 f"float32 [5] (the shape differs); {SUGGESTION}",
        "op": f"collective mismatch at sequence 1: rank 0 all_reduce float32 [2, 3] vs rank {last} broadcast "
              f"float32 [2, 3] (the collective differs); {SUGGESTION}",
    }
    for r in range(n):
        for case, msg in want.items():
            assert f"{case}: {msg}\n" in run.logs[r], f"rank {r}, {case}:\n{run}"


def test_group_still_works_after_a_reported_mismatch(caught_run):
    n, run = caught_run
    for r in range(n):
        assert f"still usable: {[float(n)] * 4}\n" in run.logs[r], run


def test_the_check_can_be_turned_off(caught_run):
    n, run = caught_run
    for r in range(n):
        assert re.search(r"^unchecked: [0-9.]+$", run.logs[r], re.M), run


def test_rank_raising_before_a_collective_ends_the_job_with_the_error_on_every_rank(caught_run):
    n, run = caught_run
    run.assert_ended_with_error()
    assert run.elapsed < 60, run
    assert "ValueError: rank 1 gave up" in run.lines[1], run
    for r in range(n):
        if r != 1:
            assert (f"minitorch_gpu.distributed._failures.PeerFailure: [rank {r}] rank 1 failed, so all_reduce #3 "
                    "(op SUM, float32 [4]) cannot complete: ValueError: rank 1 gave up") in run.lines[r], run


@pytest.mark.parametrize("nproc,device,case", [(2, "cpu", "dtype"), (3, "cuda", "shape"), (3, "cpu", "op")],
                         ids=["dtype-2ranks-cpu", "shape-3ranks-cuda-sim", "op-3ranks-cpu"])
def test_uncaught_mismatch_ends_the_job_with_the_error_on_every_rank(nproc, device, case):
    run = run_ranks(nproc, device, case)
    run.assert_ended_with_error()
    assert run.elapsed < 60, run
    for r in range(nproc):
        errors = [line for line in run.lines[r] if line.startswith("RuntimeError: collective mismatch at sequence 1")]
        assert errors and f"(the {case if case != 'op' else 'collective'} differs)" in errors[0], f"rank {r}:\n{run}"


def test_launcher_stops_the_job_and_names_the_rank_that_exited_non_zero():
    cmd = [sys.executable, "-m", "minitorch_gpu.distributed.run", "--nproc", "3", SCRIPT, "cpu", "exit"]
    run = Run(cmd, 3, "cpu")
    run.assert_ended_with_error()
    assert run.elapsed < 60, run
    assert "[rank 1] exited with code 3 while a process group was up" in run.lines[1], run
    for r in (0, 2):
        assert any(f"[rank {r}] rank 1 failed, so all_reduce #2 (op SUM, float32 [4]) cannot complete: it exited "
                   "with code 3" in line for line in run.lines[r]), run
    assert "minitorch_gpu.distributed.run: rank 1 failed first (exit code 3): SystemExit: 3" in run.stderr, run


def test_check_setting_comes_from_the_environment(monkeypatch):
    from minitorch_gpu.distributed._process_group import checks_enabled
    for name in ("MINITORCH_DISTRIBUTED_CHECKS", "MINITORCH_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    assert checks_enabled()
    monkeypatch.setenv("MINITORCH_DISTRIBUTED_CHECKS", "0")
    assert not checks_enabled()
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL")  # DETAIL asks for more checking, never less
    assert checks_enabled()
    monkeypatch.setenv("MINITORCH_DISTRIBUTED_CHECKS", "sometimes")
    with pytest.raises(ValueError, match="Invalid value for MINITORCH_DISTRIBUTED_CHECKS: 'sometimes'"):
        checks_enabled()
