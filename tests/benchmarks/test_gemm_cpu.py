"""The CPU matrix-product benchmark (``python -m benchmarks.gemm_cpu``) runs end to end on the shapes it was asked
for, and every row's forced native product agrees with NumPy's (a row says ERROR otherwise); timings are not
checked."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_runs_and_checks_each_shape(dtype):
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, "-m", "benchmarks.gemm_cpu", "--rounds", "1", "--target-ms", "0.05",
                        "--dtype", dtype, "--shapes", "lstm step", "gpt attn q@k^T", "edge batch K32 tt"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"threads 1, {dtype},") and "native GEMM available" in lines[0]
    rows = lines[3:-1]
    assert [ln[:32].strip() for ln in rows] == ["gpt attn q@k^T", "lstm step h@W_hh^T", "lstm step dg@W_hh",
                                                "edge batch K32 tt"]
    assert not any("ERROR" in ln for ln in rows), r.stdout
