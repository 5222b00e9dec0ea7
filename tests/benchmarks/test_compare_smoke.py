"""The side-by-side benchmark (``python -m benchmarks.compare``) runs end to end on tiny sizes and writes its
results; timings are not checked (they depend on the machine), only that every case ran and was reported."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = ["mlp train", "gpt train", "cnn train", "tiny ops", "adamw 10M", "gpt inference", "resnet train",
         "lstm lm train", "char transformer train"]


def run_compare(*args):
    r = subprocess.run([sys.executable, "-m", "benchmarks.compare", *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, f"benchmarks.compare failed:\n{r.stdout}\n{r.stderr}"
    assert "Traceback" not in r.stderr
    return r.stdout


def test_quick_run_writes_json_markdown_and_chart(tmp_path):
    out = run_compare("--quick", "--out", str(tmp_path), "--threads", "1")
    folder = tmp_path / "cpu"
    with open(folder / "compare.json") as f:
        res = json.load(f)
    assert res["device"] == "cpu" and res["quick"] is True
    assert [r["case"] for r in res["cases"]] == CASES
    # the thread counts are set through the environment before NumPy loads, then read back from the library
    assert res["threads"]["requested"] == 1
    assert res["threads"]["env"]["OPENBLAS_NUM_THREADS"] == "1"
    assert res["threads"]["numpy_blas"] in (None, 1)
    assert res["threads"]["ours_optim_pool"] == 1
    assert res["settle_s"] == 0.0  # the pause between samples is for more than one thread only
    for row in res["cases"]:
        assert row["ours_ms"] > 0 and row["reps"] >= 1
    md = (folder / "compare.md").read_text()
    assert "| case | ours (ms) | torch (ms) | ratio |" in md
    # the machine and its load, since the timings are only comparable side by side
    assert f"Machine: {res['machine']}." in md and "logical CPUs" in res["machine"]
    for case in CASES:
        assert f"| {case} |" in md and case in out
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    assert res["threads"]["torch"] == 1
    for row in res["cases"]:
        assert row["torch_ms"] > 0 and row["ratio"] == pytest.approx(row["ours_ms"] / row["torch_ms"])
    training = [r for r in res["cases"] if r["case"].endswith("train") or r["case"] == "gpt inference"]
    for row in training:
        # identical weights and data on both sides: the first step computes the same loss
        assert row["ours_first_output"] == pytest.approx(row["torch_first_output"], rel=1e-4, abs=1e-5)
    assert res["geomean_ratio"] > 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (folder / "compare.png").stat().st_size > 1000


def test_case_subset_and_suffix(tmp_path):
    run_compare("--quick", "--out", str(tmp_path), "--cases", "tiny_ops", "--suffix", "subset", "--rounds", "1")
    with open(tmp_path / "cpu" / "compare_subset.json") as f:
        res = json.load(f)
    assert [r["case"] for r in res["cases"]] == ["tiny ops"] and res["rounds"] == 1


def test_unknown_case_is_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "benchmarks.compare", "--quick", "--out", str(tmp_path), "--cases",
                        "nope"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode != 0 and "unknown case" in r.stderr


def test_cuda_without_a_gpu_says_so_and_exits_0(tmp_path):
    import minitorch_gpu as mt
    if mt.cuda.is_available() and not mt.cuda.is_simulated():
        pytest.skip("a GPU is present: --device cuda would time it")
    out = run_compare("--device", "cuda", "--quick", "--out", str(tmp_path))
    assert "no GPU" in out
    assert not (tmp_path / "cuda").exists()
