"""benchmarks/before_after.py: a baseline copy of the package beside this checkout in one process. Run here with
this checkout as its own baseline: both load side by side (distinct modules, each resolving its own imports), every
case is reported for the three sides; timings are not checked."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(tmp_path, *args):
    pytest.importorskip("torch")
    out = tmp_path / "rows.json"
    r = subprocess.run([sys.executable, "-m", "benchmarks.before_after", ROOT, "--rounds", "1", "--out", str(out),
                        *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, f"benchmarks.before_after failed:\n{r.stdout}\n{r.stderr}"
    rows = json.loads(out.read_text())
    for row in rows:
        assert row["after_over_before"] > 0 and row["before_ratio"] > 0 and row["after_ratio"] > 0
    return rows, r.stdout


def test_compare_cases_run_for_both_copies_and_torch(tmp_path):
    rows, text = _run(tmp_path, "--quick", "--cases", "tiny_ops", "gpt_inference")
    assert [r["case"] for r in rows] == ["tiny ops", "gpt inference"]
    assert "| after ÷ before |" in text


def test_host_path_cases_run_for_both_copies(tmp_path):
    rows, _ = _run(tmp_path, "--host-path", "--cases", "a + b")
    assert [r["case"] for r in rows] == ["a + b"] and rows[0]["torch_us"] > 0


_SEPARATE = """
import sys
import minitorch_gpu as mt
from benchmarks import before_after
before = before_after.load_baseline(sys.argv[1])
assert before.__name__ == "minitorch_gpu_before" and sys.modules["minitorch_gpu"] is mt
assert before.Tensor is not mt.Tensor and before.nn.Linear is not mt.nn.Linear
# a relative import made later inside the baseline resolves to the baseline's own modules
assert sys.modules["minitorch_gpu_before.ops.creation"].zeros is before.zeros
t = before.ones(2) + before.ones(2)
assert type(t) is before.Tensor and t.tolist() == [2.0, 2.0]
assert type(mt.ones(1) + 1) is mt.Tensor
print("ok")
"""


def test_the_baseline_is_a_separate_package():
    # in a process of its own: the test session keeps one copy of the package
    r = subprocess.run([sys.executable, "-c", _SEPARATE, ROOT], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
