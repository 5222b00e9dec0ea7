"""One command for a lent GPU machine: the CUDA test suite, compute-sanitizer over every kernel, the kernel
benchmarks, the side-by-side comparison and a bounded run of the main job, with a summary and one tarball.

    python -m benchmarks.gpu_report --tar /tmp/gpu_report.tar.gz

Parts (``--parts``, default all; ``--skip`` leaves some out), each a subprocess with its own time limit
(``--timeout-<part>`` seconds; on expiry its whole process group is killed and the report goes on) and its
output in ``logs/<part>.log``:

* ``tests``: ``MINITORCH_GPU_TEST_SIM=0 pytest tests -k cuda`` (``-n <cores>`` when pytest-xdist is installed),
  with a JUnit XML. Failures are listed grouped by test function; the ``cpu`` variants of the failing tests are
  then run once, so each group says whether it also fails on the CPU (then not a GPU problem: typically the
  installed PyTorch differs from the pinned oracle and a repr or an error message changed), or only on cuda;
* ``sanitizer``: ``compute-sanitizer --tool memcheck`` and ``--tool racecheck`` over
  ``python -m benchmarks.sanitize_kernels`` (every kernel entry point once on small awkward shapes; the test
  suite would take hours under the sanitizer);
* ``kernels``: ``python -m benchmarks.kernels``; ``compare``: ``python -m benchmarks.compare --device cuda``;
  ``host``: ``python -m benchmarks.host_path`` (dispatch cost per op with no kernel run, CuPy arrays);
* ``train``: ``python -m minitorch_gpu.train --device cuda`` for ``--train-steps`` steps (its checkpoint goes to
  a temporary folder, never into the report), reporting the median tokens/s after warm-up.

Everything lands in ``benchmarks/results/<device name>/`` (``--out`` for another root): ``report.md`` and
``report.json``, the parts' own results, ``logs/``; ``--tar PATH`` packs that folder (no checkpoints; logs
are trimmed to their head and tail). Without a GPU it says so and exits 0.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results")
PARTS = ("tests", "sanitizer", "kernels", "compare", "host", "train")
# within 9 minutes in all on an H100 (the sanitizer limit is per tool)
DEFAULT_TIMEOUTS = {"tests": 140, "sanitizer": 75, "kernels": 100, "compare": 70, "host": 30, "train": 50}
LOG_LIMIT = 2 << 20  # bytes of a log kept in the report: its first quarter and last three quarters
CPU_RERUN_MAX = 400  # failing tests whose cpu variant is re-run (more would be a broken build: no need)


@dataclass
class StepResult:
    """One subprocess of the report."""
    part: str
    name: str
    cmd: list[str]
    status: str = "not run"  # ok, failed, timed out, skipped
    rc: int | None = None
    seconds: float = 0.0
    log: str = ""
    note: str = ""
    details: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------- arguments
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu_report", description=__doc__.split("\n\n")[0])
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="the parts to run, in order")
    p.add_argument("--skip", nargs="+", choices=PARTS, default=[], help="parts to leave out")
    p.add_argument("--tar", default=None, metavar="PATH", help="pack the report folder into this .tar.gz")
    p.add_argument("--out", default=RESULTS, help="results root (a folder per device is made in it)")
    p.add_argument("--quick", action="store_true", help="the benchmarks' --quick sizes")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="pytest-xdist workers")
    p.add_argument("--train-steps", type=int, default=60, help="steps of the main job")
    p.add_argument("--sanitizer-tools", nargs="+", default=["memcheck", "racecheck"],
                   choices=["memcheck", "racecheck", "synccheck", "initcheck"])
    p.add_argument("--pytest-args", default="", help="extra pytest arguments for the tests part (one string)")
    for part in PARTS:
        p.add_argument(f"--timeout-{part}", type=int, default=DEFAULT_TIMEOUTS[part], metavar="S",
                       help=f"time limit of the {part} part in seconds (each sanitizer tool has its own)")
    args = p.parse_args(argv)
    args.parts = [x for x in args.parts if x not in args.skip]
    for part in PARTS:
        if getattr(args, f"timeout_{part}") <= 0:
            p.error(f"--timeout-{part} must be positive")
    if args.workers < 1 or args.train_steps < 1:
        p.error("--workers and --train-steps must be at least 1")
    return args


# ---------------------------------------------------------------------- running
def gpu_name() -> str | None:
    """The GPU's name as our CUDA backend sees it, asked in a subprocess (so this process never holds a CUDA
    context that the parts would share memory with), or None without a usable GPU."""
    code = ("import minitorch_gpu as mt, sys\n"
            "if mt.cuda.is_simulated() or not mt.cuda.is_available(): sys.exit(3)\n"
            "import cupy\n"
            "n = cupy.cuda.runtime.getDeviceProperties(0)['name']\n"
            "print(n.decode() if isinstance(n, bytes) else n)")
    try:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    name = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else ""
    return name or None


def folder_name(device: str) -> str:
    """The results subfolder of a device, spelled as benchmarks.kernels spells it."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", device)


def run_step(step: StepResult, timeout: int, logs: str, env: dict[str, str] | None = None) -> StepResult:
    """Run ``step.cmd`` in its own process group, output to ``logs/<name>.log``; kill the group at ``timeout``."""
    os.makedirs(logs, exist_ok=True)
    step.log = os.path.join("logs", f"{step.name}.log")
    path = os.path.join(logs, f"{step.name}.log")
    t0 = time.perf_counter()
    with open(path, "w") as log:
        log.write(f"$ {' '.join(step.cmd)}\n")
        log.flush()
        proc = subprocess.Popen(step.cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            step.rc = proc.wait(timeout=timeout)
            step.status = "ok" if step.rc == 0 else "failed"
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            step.rc = proc.returncode
            step.status = "timed out"
            step.note = f"killed after {timeout} s"
    step.seconds = time.perf_counter() - t0
    trim_log(path)
    print(f"[gpu_report] {step.name}: {step.status} ({step.seconds:.0f} s)", flush=True)
    return step


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def trim_log(path: str, limit: int = LOG_LIMIT) -> None:
    """Keep a log under ``limit`` bytes: its head and its tail (where pytest and the sanitizer summarise)."""
    size = os.path.getsize(path)
    if size <= limit:
        return
    with open(path, "rb") as f:
        head = f.read(limit // 4)
        f.seek(size - 3 * limit // 4)
        tail = f.read()
    with open(path, "wb") as f:
        f.write(head + f"\n\n[... {size - len(head) - len(tail)} bytes cut by gpu_report ...]\n\n".encode() + tail)


# ---------------------------------------------------------------------- the tests part
def parse_junit(path: str) -> dict[str, Any]:
    """Counts and failures (node id, kind, first line of the message) of a pytest JUnit XML file."""
    root = ET.parse(path).getroot()
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failures = []
    for tc in root.iter("testcase"):
        counts["tests"] += 1
        for kind in ("failure", "error"):
            el = tc.find(kind)
            if el is not None:
                counts["failures" if kind == "failure" else "errors"] += 1
                msg = (el.get("message") or el.text or "").strip().splitlines()
                failures.append({"id": node_id(tc.get("classname", ""), tc.get("name", "")), "kind": kind,
                                 "message": msg[0][:300] if msg else ""})
                break
        else:
            if tc.find("skipped") is not None:
                counts["skipped"] += 1
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return {"counts": counts, "failures": failures}


def node_id(classname: str, name: str) -> str:
    """pytest's node id from JUnit's dotted classname (module path, then classes) and test name."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if os.path.isfile(os.path.join(ROOT, path)):
            return "::".join([path, *parts[i:], name])
    return "::".join([classname.replace(".", "/") + ".py", name]) if classname else name


def cpu_variant(nid: str) -> str | None:
    """The node id of the same test on the ``cpu`` device: the param id's ``cuda`` token swapped, or None."""
    m = re.match(r"^(.*)\[(.*)\]$", nid)
    if not m:
        return None
    if re.search(r"(^|-)cuda-sim(-|$)", m.group(2)):
        return None  # the simulator's id, not the GPU's
    tokens = m.group(2).split("-")
    if "cuda" not in tokens:
        return None
    return f"{m.group(1)}[{'-'.join('cpu' if t == 'cuda' else t for t in tokens)}]"


def group_failures(failures: list[dict[str, Any]], cpu_failed: set[str] | None) -> list[dict[str, Any]]:
    """Failures grouped by test function (params folded), each group split by whether its cpu variant also
    fails (``cpu_failed`` None: not checked)."""
    groups: dict[str, dict[str, Any]] = {}
    for f in failures:
        fn = f["id"].split("[", 1)[0]
        g = groups.setdefault(fn, {"test": fn, "params": [], "also_on_cpu": [], "cuda_only": [], "unknown": [],
                                   "message": f["message"]})
        param = f["id"][len(fn):]
        g["params"].append(param)
        cpu = cpu_variant(f["id"])
        if cpu_failed is None or cpu is None:
            g["unknown"].append(param)
        elif cpu in cpu_failed:
            g["also_on_cpu"].append(param)
        else:
            g["cuda_only"].append(param)
    return sorted(groups.values(), key=lambda g: (not g["cuda_only"], g["test"]))


def run_tests(args: argparse.Namespace, folder: str) -> list[StepResult]:
    junit = os.path.join(folder, "junit_tests.xml")
    cmd = [sys.executable, "-m", "pytest", "tests", "-k", "cuda", "-q", "-p", "no:cacheprovider", "-rN",
           f"--junitxml={junit}"]
    xdist = importlib.util.find_spec("xdist") is not None
    if xdist:
        cmd += ["-n", str(args.workers)]
    cmd += args.pytest_args.split()
    step = run_step(StepResult("tests", "tests", cmd), args.timeout_tests, os.path.join(folder, "logs"),
                    {"MINITORCH_GPU_TEST_SIM": "0"})
    step.details["xdist"] = xdist
    if not os.path.isfile(junit):
        step.note = (step.note + "; " if step.note else "") + "no JUnit XML (pytest did not finish)"
        return [step]
    res = parse_junit(junit)
    step.details["counts"] = res["counts"]
    cpu_ids = sorted({c for f in res["failures"] if (c := cpu_variant(f["id"]))})
    cpu_failed: set[str] | None = None
    steps = [step]
    if cpu_ids and len(cpu_ids) <= CPU_RERUN_MAX:
        junit_cpu = os.path.join(folder, "junit_cpu_rerun.xml")
        rerun = run_step(StepResult("tests", "tests-cpu-rerun", [sys.executable, "-m", "pytest", *cpu_ids, "-q",
                                                                  "-p", "no:cacheprovider",
                                                                  f"--junitxml={junit_cpu}"]),
                         min(args.timeout_tests, 900), os.path.join(folder, "logs"))
        rerun.note = f"the cpu variants of {len(cpu_ids)} failing cuda tests"
        if os.path.isfile(junit_cpu):
            cpu_failed = {f["id"] for f in parse_junit(junit_cpu)["failures"]}
            # a failed rerun is information, not a failure of the report
            rerun.status = "ok" if rerun.status == "failed" else rerun.status
        steps.append(rerun)
    step.details["failure_groups"] = group_failures(res["failures"], cpu_failed)
    return steps


# ---------------------------------------------------------------------- the other parts
def find_sanitizer() -> str | None:
    """compute-sanitizer on PATH or in the usual CUDA toolkit folders."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda", "/opt/cuda"]
    if os.path.isdir("/usr/local"):
        roots += sorted((os.path.join("/usr/local", d) for d in os.listdir("/usr/local") if d.startswith("cuda-")),
                        reverse=True)
    for r in roots:
        for sub in ("bin", os.path.join("compute-sanitizer")):
            cand = os.path.join(r, sub, "compute-sanitizer") if r else ""
            if cand and os.access(cand, os.X_OK):
                return cand
    return None


def run_sanitizer(args: argparse.Namespace, folder: str) -> list[StepResult]:
    exe = find_sanitizer()
    steps = []
    for tool in args.sanitizer_tools:
        cmd = [exe or "compute-sanitizer", "--tool", tool, "--error-exitcode", "86", "--print-limit", "100",
               sys.executable, "-m", "benchmarks.sanitize_kernels"]
        step = StepResult("sanitizer", f"sanitizer-{tool}", cmd)
        if exe is None:
            step.status, step.note = "skipped", "compute-sanitizer not found (PATH, $CUDA_HOME, /usr/local/cuda*)"
            steps.append(step)
            continue
        run_step(step, args.timeout_sanitizer, os.path.join(folder, "logs"))
        text = _read(os.path.join(folder, step.log))
        summary = re.findall(r"=+ (?:ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY)[^\n]*", text)
        step.details["summary"] = summary[-3:]
        step.details["kernel_files"] = re.findall(r"^(ok|FAIL) +(\S+)", text, re.M)
        if step.rc == 86:
            step.note = "the sanitizer reported errors"
        steps.append(step)
    return steps


def run_kernels(args: argparse.Namespace, folder: str) -> list[StepResult]:
    cmd = [sys.executable, "-m", "benchmarks.kernels", "--out", os.path.dirname(folder)] + (
        ["--quick"] if args.quick else [])
    step = run_step(StepResult("kernels", "kernels", cmd), args.timeout_kernels, os.path.join(folder, "logs"))
    res = _load_json(os.path.join(folder, "kernels.json"))
    if res:
        step.details["failed_cases"] = res.get("failed", [])
        step.details["copy_GB/s"] = res.get("copy_GB/s")
    return [step]


def run_compare(args: argparse.Namespace, folder: str) -> list[StepResult]:
    # benchmarks.compare names its folder by device type ("cuda"): its files are moved next to the others
    staging = os.path.join(folder, "compare_out")
    # 5 interleaved rounds: the report's time budget (the comparison alone defaults to 15)
    cmd = [sys.executable, "-m", "benchmarks.compare", "--device", "cuda", "--rounds", "5", "--out", staging] + (
        ["--quick"] if args.quick else [])
    step = run_step(StepResult("compare", "compare", cmd), args.timeout_compare, os.path.join(folder, "logs"))
    for sub in sorted(os.listdir(staging)) if os.path.isdir(staging) else []:
        for name in os.listdir(os.path.join(staging, sub)):
            if name.startswith("compare"):
                shutil.move(os.path.join(staging, sub, name), os.path.join(folder, name))
    shutil.rmtree(staging, ignore_errors=True)
    res = _load_json(os.path.join(folder, "compare.json"))
    if res:
        step.details["geomean_ratio"] = res.get("geomean_ratio")
    return [step]


def run_host(args: argparse.Namespace, folder: str) -> list[StepResult]:
    cmd = [sys.executable, "-m", "benchmarks.host_path", "--rounds", "5", "--out", folder] + (
        ["--quick"] if args.quick else [])
    step = run_step(StepResult("host", "host", cmd), args.timeout_host, os.path.join(folder, "logs"))
    res = _load_json(os.path.join(folder, "host_path.json"))
    if res:
        step.details["ours_over_torch"] = {name: c["ratio"] for name, c in res["cases"].items()}
    return [step]


def run_train(args: argparse.Namespace, folder: str) -> list[StepResult]:
    n = args.train_steps
    with tempfile.TemporaryDirectory(prefix="gpu_report_train_") as tmp:
        cmd = [sys.executable, "-m", "minitorch_gpu.train", "--device", "cuda", "--steps", str(n), "--eval-every",
               str(n), "--eval-iters", "2", "--sample-chars", "40", "--quiet", "--out", tmp]
        step = run_step(StepResult("train", "train", cmd), args.timeout_train, os.path.join(folder, "logs"))
        metrics = os.path.join(tmp, "metrics.jsonl")
        if os.path.isfile(metrics):
            shutil.copyfile(metrics, os.path.join(folder, "train_metrics.jsonl"))
            step.details.update(train_summary(metrics))
    return [step]


def train_summary(path: str) -> dict[str, Any]:
    """Median tokens/s over the steps after warm-up (the first tenth, at least 3, dropped), and the losses."""
    recs = [json.loads(line) for line in open(path) if line.strip()]
    if not recs:
        return {}
    skip = min(max(3, len(recs) // 10), len(recs) - 1)
    tok = [r["tokens_per_s"] for r in recs[skip:] if "tokens_per_s" in r]
    return {"steps": len(recs), "tokens_per_s": statistics.median(tok) if tok else None,
            "first_loss": recs[0].get("loss"), "last_loss": recs[-1].get("loss"), "warmup_steps_dropped": skip}


RUNNERS = {"tests": run_tests, "sanitizer": run_sanitizer, "kernels": run_kernels, "compare": run_compare,
           "host": run_host, "train": run_train}


# ---------------------------------------------------------------------- the summary
def environment(device: str) -> dict[str, Any]:
    """Versions that explain results: the package's commit, PyTorch installed against the pinned oracle,
    CuPy, Python."""
    env: dict[str, Any] = {"device": device, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec="seconds"), "python": sys.version.split()[0]}
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=ROOT, timeout=30).stdout.strip() or None
        # a copied working tree often carries an older .git: say so rather than name a commit it is not
        dirty = commit and subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                          capture_output=True, text=True, cwd=ROOT, timeout=30).stdout.strip()
        env["commit"] = f"{commit} plus uncommitted changes" if dirty else commit
    except (OSError, subprocess.TimeoutExpired):
        env["commit"] = None
    pin = re.search(r'"torch==([^"]+)"', _read(os.path.join(ROOT, "pyproject.toml")))
    env["torch_pinned"] = pin.group(1) if pin else None
    for mod in ("torch", "cupy"):
        try:
            from importlib.metadata import version
            env[mod] = version(mod if mod == "torch" else _cupy_dist())
        except Exception:  # noqa: BLE001 - not installed, or installed under another name
            env[mod] = None
    return env


def _cupy_dist() -> str:
    from importlib.metadata import distributions
    for d in distributions():
        name = d.metadata.get("Name", "") or ""
        if name.lower().startswith("cupy"):
            return name
    return "cupy"


def write_summary(folder: str, env: dict[str, Any], steps: list[StepResult]) -> str:
    """report.md and report.json in ``folder``; returns the markdown path."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump({"environment": env, "steps": [asdict(s) for s in steps]}, f, indent=1)
    path = os.path.join(folder, "report.md")
    with open(path, "w") as f:
        f.write(summary_markdown(folder, env, steps))
    return path


def summary_markdown(folder: str, env: dict[str, Any], steps: list[StepResult]) -> str:
    torch_note = ""
    if env.get("torch") and env.get("torch_pinned") and not str(env["torch"]).startswith(env["torch_pinned"]):
        torch_note = (f" **PyTorch {env['torch']} is not the pinned oracle {env['torch_pinned']}:** tests that compare "
                      "reprs or error messages with torch may fail for that reason alone (see 'also on cpu' below).")
    lines = [f"# GPU report: {env.get('device')}", "",
             f"{env.get('date')}, commit {env.get('commit')}, Python {env.get('python')}, CuPy {env.get('cupy')}, "
             f"PyTorch {env.get('torch')} (pinned oracle {env.get('torch_pinned')}).{torch_note}", "",
             "| step | status | time (s) | log | note |", "|---|---|---:|---|---|"]
    for s in steps:
        lines.append(f"| {s.name} | {s.status}{'' if s.rc in (None, 0) else f' (rc {s.rc})'} | {s.seconds:.0f} | "
                     f"{s.log} | {s.note} |")
    for s in steps:
        if s.name == "tests":
            lines += _tests_section(s)
        elif s.part == "sanitizer" and s.status != "skipped":
            lines += ["", f"## {s.name}", ""] + [f"    {x}" for x in s.details.get("summary", [])] + [
                f"- {st} {name}" for st, name in s.details.get("kernel_files", [])]
        elif s.name == "train" and s.details:
            d = s.details
            tok = d.get("tokens_per_s")
            lines += ["", "## Main job", "",
                      f"{d.get('steps')} steps; median {tok:,.0f} tokens/s after {d.get('warmup_steps_dropped')} "
                      f"warm-up steps; loss {d.get('first_loss')} -> {d.get('last_loss')}." if tok else
                      f"{d.get('steps')} steps; no timing recorded."]
    for part, name, title in (("kernels", "kernels.md", "Kernel benchmarks"),
                              ("compare", "compare.md", "Side by side with PyTorch"),
                              ("host", "host_path.md", "Host time per op")):
        text = _read(os.path.join(folder, name))
        if text and any(s.part == part for s in steps):
            lines += ["", f"## {title} ({name})", ""] + [x for x in text.splitlines() if not x.startswith("# ")]
    return "\n".join(lines) + "\n"


def _tests_section(s: StepResult) -> list[str]:
    c = s.details.get("counts")
    out = ["", "## Test suite (cuda)", ""]
    if not c:
        return out + ["No results (see the log)."]
    out.append(f"{c['passed']} passed, {c['failures']} failed, {c['errors']} errors, {c['skipped']} skipped "
               f"(xdist: {s.details.get('xdist')}).")
    groups = s.details.get("failure_groups", [])
    if groups:
        out += ["", "Failures by test function; 'also on cpu' means the same test on the cpu device fails too "
                "(not a GPU problem), 'cuda only' means it passes on cpu.", "",
                "| test | failing params | cuda only | also on cpu | not checked | first message |",
                "|---|---:|---|---|---|---|"]
        for g in groups:
            msg = g["message"].replace("|", "\\|")[:160]
            out.append(f"| `{g['test']}` | {len(g['params'])} | {' '.join(g['cuda_only'])} | "
                       f"{' '.join(g['also_on_cpu'])} | {' '.join(g['unknown'])} | {msg} |")
    return out


def make_tar(folder: str, path: str) -> None:
    """``folder`` as a .tar.gz at ``path`` (files over 50 MB left out: the report's own files are small)."""
    base = os.path.basename(folder.rstrip(os.sep))

    def small(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if info.isfile() and info.size > 50 << 20 else info
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        tar.add(folder, arcname=f"gpu_report_{base}", filter=small)


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _load_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path) as f:
            data: dict[str, Any] = json.load(f)
            return data
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = gpu_name()
    if device is None:
        print("benchmarks.gpu_report: no GPU (CuPy with a CUDA device is required; the simulator is not a GPU). "
              "Nothing to run.")
        return 0
    folder = os.path.join(args.out, folder_name(device))
    os.makedirs(folder, exist_ok=True)
    env = environment(device)
    steps: list[StepResult] = []
    for part in args.parts:
        try:
            steps += RUNNERS[part](args, folder)
        except Exception as e:  # noqa: BLE001 - one broken part must not lose the others' results
            steps.append(StepResult(part, part, [], status="failed", note=f"{type(e).__name__}: {e}"))
        write_summary(folder, env, steps)  # after every part: a later kill still leaves a report
    md = write_summary(folder, env, steps)
    print(f"[gpu_report] summary: {md}")
    if args.tar:
        make_tar(folder, args.tar)
        print(f"[gpu_report] tarball: {args.tar} ({os.path.getsize(args.tar) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
