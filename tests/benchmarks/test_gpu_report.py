"""benchmarks.gpu_report without a GPU: argument parsing, the no-GPU exit, JUnit parsing and failure grouping,
time limits, the summary writer and the tarball; and benchmarks.kernels' harness with stand-in cases."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

from benchmarks import gpu_report as gr
from benchmarks import kernels as kb

ROOT = gr.ROOT


def test_parse_args_parts_skip_and_limits():
    a = gr.parse_args([])
    assert a.parts == list(gr.PARTS) and a.tar is None and a.timeout_tests == gr.DEFAULT_TIMEOUTS["tests"]
    a = gr.parse_args(["--parts", "kernels", "train", "tests", "--skip", "tests", "--timeout-train", "30",
                       "--tar", "r.tgz", "--train-steps", "5"])
    assert a.parts == ["kernels", "train"] and a.timeout_train == 30 and a.tar == "r.tgz" and a.train_steps == 5
    for bad in (["--parts", "nope"], ["--timeout-kernels", "0"], ["--workers", "0"]):
        with pytest.raises(SystemExit):
            gr.parse_args(bad)


def test_without_a_gpu_it_says_so_and_exits_0(tmp_path):
    env = {**os.environ, "MINITORCH_GPU_SIM": "1"}  # the simulator is not a GPU
    r = subprocess.run([sys.executable, "-m", "benchmarks.gpu_report", "--out", str(tmp_path), "--tar",
                        str(tmp_path / "r.tgz")], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "no GPU" in r.stdout and "Traceback" not in r.stderr
    assert os.listdir(tmp_path) == []


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.test_tensor" name="test_repr[cuda]">\
<failure message="AssertionError: repr differs&#10;second line">tb</failure></testcase>
<testcase classname="tests.test_tensor" name="test_repr[cuda-float64]"><failure message="x">tb</failure></testcase>
<testcase classname="tests.test_tensor" name="test_add[cuda]"><error message="RuntimeError: boom">tb</error></testcase>
<testcase classname="tests.test_tensor" name="test_ok[cuda]"/>
<testcase classname="tests.test_tensor" name="test_skip[cuda-sim]"><skipped message="off"/></testcase>
</testsuite></testsuites>"""


def test_junit_parsing_and_failures_grouped_by_function(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(JUNIT)
    res = gr.parse_junit(str(path))
    assert res["counts"] == {"tests": 5, "failures": 2, "errors": 1, "skipped": 1, "passed": 1}
    ids = [f["id"] for f in res["failures"]]
    assert ids[0] == "tests/test_tensor.py::test_repr[cuda]"
    assert res["failures"][0]["message"] == "AssertionError: repr differs"
    assert gr.cpu_variant("tests/test_tensor.py::test_repr[cuda-float64]") == \
        "tests/test_tensor.py::test_repr[cpu-float64]"
    assert gr.cpu_variant("tests/x.py::test_y[cuda-sim]") is None and gr.cpu_variant("tests/x.py::t") is None
    groups = gr.group_failures(res["failures"], {"tests/test_tensor.py::test_repr[cpu]"})
    # cuda-only groups first
    assert [g["test"] for g in groups] == ["tests/test_tensor.py::test_add", "tests/test_tensor.py::test_repr"]
    rep = groups[1]
    assert rep["also_on_cpu"] == ["[cuda]"] and rep["cuda_only"] == ["[cuda-float64]"]
    assert gr.group_failures(res["failures"], None)[0]["unknown"] == ["[cuda]"]


def test_step_time_limit_kills_and_reports(tmp_path):
    step = gr.StepResult("x", "sleepy", [sys.executable, "-c", "import time; print('hi', flush=True); "
                                         "time.sleep(60)"])
    gr.run_step(step, 2, str(tmp_path / "logs"))
    assert step.status == "timed out" and step.seconds < 40
    assert "hi" in (tmp_path / "logs" / "sleepy.log").read_text()
    ok = gr.run_step(gr.StepResult("x", "fine", [sys.executable, "-c", "pass"]), 60, str(tmp_path / "logs"))
    assert ok.status == "ok" and ok.rc == 0


def test_trim_log_keeps_head_and_tail(tmp_path):
    p = tmp_path / "l.log"
    p.write_bytes(b"HEAD" + b"x" * 5000 + b"TAIL")
    gr.trim_log(str(p), limit=1000)
    data = p.read_bytes()
    assert data.startswith(b"HEAD") and data.endswith(b"TAIL") and len(data) < 1200 and b"cut by gpu_report" in data


def test_summary_and_tarball(tmp_path):
    folder = tmp_path / "NVIDIA_H100"
    folder.mkdir()
    (folder / "kernels.md").write_text("# Kernel benchmarks on X\n\n| kernel | time |\n|---|---|\n| add | 1 |\n")
    metrics = tmp_path / "m.jsonl"
    metrics.write_text("".join(json.dumps({"step": i, "loss": 4.0 - i / 10, "tokens_per_s": 1000.0 * (i > 2) + 10})
                               + "\n" for i in range(10)))
    train = gr.StepResult("train", "train", ["python"], status="ok", rc=0, seconds=12, log="logs/train.log",
                          details=gr.train_summary(str(metrics)))
    assert train.details["tokens_per_s"] == 1010.0 and train.details["steps"] == 10
    tests = gr.StepResult("tests", "tests", ["pytest"], status="failed", rc=1, details={
        "counts": {"tests": 3, "failures": 1, "errors": 0, "skipped": 0, "passed": 2}, "xdist": True,
        "failure_groups": [{"test": "tests/t.py::test_a", "params": ["[cuda]"], "cuda_only": ["[cuda]"],
                            "also_on_cpu": [], "unknown": [], "message": "bad | pipe"}]})
    san = gr.StepResult("sanitizer", "sanitizer-memcheck", [], status="skipped", note="compute-sanitizer not found")
    kern = gr.StepResult("kernels", "kernels", [], status="ok", rc=0)
    env = {"device": "NVIDIA H100", "torch": "2.11.0", "torch_pinned": "2.13.0", "commit": "abc"}
    md_path = gr.write_summary(str(folder), env, [tests, san, kern, train])
    md = open(md_path).read()
    assert "# GPU report: NVIDIA H100" in md and "not the pinned oracle 2.13.0" in md
    assert "| sanitizer-memcheck | skipped |" in md and "compute-sanitizer not found" in md
    assert "`tests/t.py::test_a` | 1 | [cuda]" in md and "bad \\| pipe" in md
    assert "2 passed, 1 failed" in md and "1,010 tokens/s" in md and "| add | 1 |" in md
    data = json.loads((folder / "report.json").read_text())
    assert [s["name"] for s in data["steps"]] == ["tests", "sanitizer-memcheck", "kernels", "train"]
    tar = tmp_path / "out" / "r.tgz"
    gr.make_tar(str(folder), str(tar))
    with tarfile.open(tar) as t:
        names = t.getnames()
    assert "gpu_report_NVIDIA_H100/report.md" in names and "gpu_report_NVIDIA_H100/kernels.md" in names


def test_kernels_harness_reports_a_failing_case_and_keeps_going(tmp_path):
    def good(ctx):
        return [kb.Case("copy-ish", 8e6, "B", lambda: 1, lambda: 1, None, flops=1e6),
                kb.Case("gemm-ish", 2e9, "FLOP", lambda: 1, lambda: 1, lambda: 1 / 0, bytes=1e7),
                kb.Case("declined", 1e6, "B", lambda: None)]

    def broken_case(ctx):
        return [kb.Case("adamw-ish", 1e6, "B", lambda: ctx.k.adam(), None)]

    def broken_fn(ctx):
        raise AttributeError("'Launcher' object has no attribute 'adam'")

    class Ctx:
        k = object()

    times = iter([1e-3, 2e-3, 1e-3, 0.5e-3] + [1e-3] * 10)

    def timer(fn):
        fn()
        return next(times)
    rows = kb.measure([good, broken_case, broken_fn], Ctx(), timer, copy_bw=16e9, log=lambda s: None)
    assert [r["kernel"] for r in rows] == ["copy-ish", "gemm-ish", "declined", "adamw-ish", "broken_fn"]
    assert "declined" in rows[2]["error"] and "seconds" not in rows[2]
    del rows[2]
    assert rows[0]["GB/s"] == pytest.approx(8.0) and rows[0]["vs_copy"] == pytest.approx(0.5)
    assert rows[0]["vs_cupy"] == pytest.approx(2.0)
    assert rows[1]["TFLOP/s"] == pytest.approx(2.0) and rows[1]["vs_cublas"] == pytest.approx(0.5)
    assert "ZeroDivisionError" in rows[1]["vs_torch_error"] and "error" not in rows[1]
    assert "AttributeError" in rows[2]["error"] and "no attribute 'adam'" in rows[3]["error"]
    assert kb.measure([good], Ctx(), lambda fn: 1e-3, 16e9, only=["gemm"], log=lambda s: None)[0]["kernel"] == \
        "gemm-ish"
    result = {"device": "Fake GPU", "copy_GB/s": 16.0, "reps": 3, "warmup": 1, "torch": None, "cases": rows,
              "failed": [r["kernel"] for r in rows if "error" in r]}
    kb.write_results(result, str(tmp_path))
    md = (tmp_path / "kernels.md").read_text()
    assert "| adamw-ish | failed |" in md and "## Failures" in md and "no attribute 'adam'" in md
    assert "| gemm-ish |" in md and "0.50x | failed |" in md
    assert json.loads((tmp_path / "kernels.json").read_text())["failed"] == ["adamw-ish", "broken_fn"]
    assert (tmp_path / "roofline.png").exists() or (tmp_path / "roofline.svg").exists()


def _fake_run_step(writes):
    """A run_step stand-in: ``writes[step name](step)`` creates the files the real command would."""
    def run_step(step, timeout, logs, env=None):
        writes[step.name](step)
        step.status, step.rc, step.log = "failed", 1, f"logs/{step.name}.log"
        return step
    return run_step


def test_tests_part_groups_failures_and_checks_their_cpu_variants(tmp_path, monkeypatch):
    def tests(step):
        junit = next(a for a in step.cmd if a.startswith("--junitxml=")).split("=", 1)[1]
        open(junit, "w").write(JUNIT)

    def rerun(step):
        assert "tests/test_tensor.py::test_repr[cpu]" in step.cmd and "tests/test_tensor.py::test_add[cpu]" in step.cmd
        junit = next(a for a in step.cmd if a.startswith("--junitxml=")).split("=", 1)[1]
        open(junit, "w").write('<testsuites><testsuite><testcase classname="tests.test_tensor" name="test_repr[cpu]">'
                               '<failure message="m"/></testcase></testsuite></testsuites>')
    monkeypatch.setattr(gr, "run_step", _fake_run_step({"tests": tests, "tests-cpu-rerun": rerun}))
    steps = gr.run_tests(gr.parse_args([]), str(tmp_path))
    assert [s.name for s in steps] == ["tests", "tests-cpu-rerun"] and steps[1].status == "ok"
    groups = {g["test"]: g for g in steps[0].details["failure_groups"]}
    assert groups["tests/test_tensor.py::test_repr"]["also_on_cpu"] == ["[cuda]"]
    assert groups["tests/test_tensor.py::test_repr"]["cuda_only"] == ["[cuda-float64]"]
    assert groups["tests/test_tensor.py::test_add"]["cuda_only"] == ["[cuda]"]


def test_compare_results_are_moved_next_to_the_others(tmp_path, monkeypatch):
    def compare(step):
        folder = os.path.join(step.cmd[step.cmd.index("--out") + 1], "cuda")
        os.makedirs(folder)
        open(os.path.join(folder, "compare.json"), "w").write('{"geomean_ratio": 2.5}')
        open(os.path.join(folder, "compare.md"), "w").write("| case |\n")
    monkeypatch.setattr(gr, "run_step", _fake_run_step({"compare": compare}))
    steps = gr.run_compare(gr.parse_args(["--quick"]), str(tmp_path))
    assert steps[0].details["geomean_ratio"] == 2.5 and "--quick" in steps[0].cmd
    assert sorted(os.listdir(tmp_path)) == ["compare.json", "compare.md"]
