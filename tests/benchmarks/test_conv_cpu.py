"""The ResNet18 convolution benchmark (``python -m benchmarks.conv_cpu``) runs end to end on a tiny batch and
reports every layer it was asked for and the weighted total; timings are not checked."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_runs_and_reports_each_layer():
    pytest.importorskip("torch")
    r = subprocess.run([sys.executable, "-m", "benchmarks.conv_cpu", "--batch", "2", "--rounds", "1", "--reps", "1",
                        "--layers", "0", "4", "9", "--clock", "cpu"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("threads 1 (torch 1), batch 2")
    assert [ln.split()[0] for ln in lines[1:]] == ["conv1", "layer2", "layer4", "total"]
    assert all("ratio" in ln for ln in lines[1:])
