"""Before and after a change in one process: a baseline copy of the package against this checkout, both against
PyTorch, interleaved round by round.

Run ``python -m benchmarks.before_after BASE [--quick] [--cases ...] [--rounds N] [--host-path] [--threads N]``.
``BASE`` is a folder holding the baseline's ``minitorch_gpu`` package: a ``git worktree`` of the base commit, or
``git archive REV | tar -x -C BASE``. The cases are ``benchmarks.compare``'s (``--quick``: its quick sizes at 30
calls per sample) or, with ``--host-path``, ``benchmarks.host_path``'s (the CUDA path with a null launcher). Each
case is built for the three libraries (the GPT side copies the checkout's weights) and timed in turns, so the
table reads: torch's time, the baseline's and this checkout's, each as a ratio to torch, and after ÷ before.

Why one process: on a shared machine the load moves from minute to minute. Two runs of ``benchmarks.compare``
a few minutes apart have shown torch's own time for one case differing by 1.5x and the ratios by 0.2; a
before/after comparison made of two such runs measures the machine. Here every round runs all three sides.

How: the baseline is imported first, under its own name: its modules are registered as ``minitorch_gpu_before``
and ``minitorch_gpu_before.*`` (names, packages and specs, so that the relative imports its functions make later
resolve to its own modules), then this checkout's package is put back as ``minitorch_gpu``. The two share the
process-wide settings (the allocator's, the BLAS thread count) and the compiled-library cache. Not covered: code
of the baseline that imports ``minitorch_gpu`` by its absolute name at run time (the ``train`` module does).
"""
import os
import sys

if __name__ == "__main__":
    # NOTE: before NumPy loads (see benchmarks.compare)
    from benchmarks.compare import _BLAS_ENV, _threads_from_argv
    for _var in _BLAS_ENV:
        os.environ[_var] = _threads_from_argv(sys.argv[1:])

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import warnings  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

PACKAGE = "minitorch_gpu"
BEFORE = "minitorch_gpu_before"
# imported with the baseline's package: what the cases reach, so that nothing of it is imported by name later
_SUBMODULES = ("models.gpt", "nn", "optim", "cuda", "backends", "backends.cuda.launch", "profiler")


def load_baseline(folder: str) -> Any:
    """The ``minitorch_gpu`` package found in ``folder``, imported as ``minitorch_gpu_before``; the package
    imported as ``minitorch_gpu`` (this checkout's) stays or becomes what that name means."""
    folder = os.path.abspath(folder)
    if not os.path.isfile(os.path.join(folder, PACKAGE, "__init__.py")):
        raise SystemExit(f"{folder} holds no {PACKAGE} package")
    if BEFORE in sys.modules:
        return sys.modules[BEFORE]
    current = {k: sys.modules.pop(k) for k in list(sys.modules) if k == PACKAGE or k.startswith(PACKAGE + ".")}
    sys.path.insert(0, folder)
    try:
        base = importlib.import_module(PACKAGE)
        for sub in _SUBMODULES:
            importlib.import_module(f"{PACKAGE}.{sub}")
    finally:
        sys.path.remove(folder)
        for k in [k for k in sys.modules if k == PACKAGE or k.startswith(PACKAGE + ".")]:
            mod = sys.modules.pop(k)
            name = BEFORE + k[len(PACKAGE):]
            mod.__name__ = name
            pkg = getattr(mod, "__package__", None)
            if pkg and (pkg == PACKAGE or pkg.startswith(PACKAGE + ".")):
                mod.__package__ = BEFORE + pkg[len(PACKAGE):]
            spec = getattr(mod, "__spec__", None)
            if spec is not None:
                spec.name = name
            sys.modules[name] = mod
        sys.modules.update(current)
    if not base.__file__.startswith(folder):
        raise SystemExit(f"{folder}: the {PACKAGE} imported from there came from {base.__file__}")
    importlib.import_module(PACKAGE)  # this checkout's, if it was not imported yet
    return base


def _libraries(base: Any, device: str) -> list[Any]:
    import minitorch_gpu as mt
    from benchmarks import compare
    torch = compare._load_torch(device)
    if torch is None:
        raise SystemExit("PyTorch is needed: both sides are measured against it")
    # "ours" first: benchmarks.compare.run_case builds the weights every other side copies from it
    return [compare.Lib("ours", mt, device), compare.Lib("before", base, device), compare.Lib("torch", torch, device)]


def _row(name: str, torch_t: float, before: float, after: float, unit: str) -> dict[str, Any]:
    return {"case": name, f"torch_{unit}": torch_t, f"before_{unit}": before, f"after_{unit}": after,
            "before_ratio": before / torch_t, "after_ratio": after / torch_t, "after_over_before": after / before}


def run_compare(base: Any, quick: bool, rounds: int, cases: list[str] | None, threads: int) -> list[dict[str, Any]]:
    """benchmarks.compare's cases, the three libraries interleaved."""
    from benchmarks import compare
    libs = _libraries(base, "cpu")
    compare.setup_threads(threads, libs[2].mod, "cpu")
    base.zeros(1)._be.optim_threads = threads
    sz = compare.SIZES["quick" if quick else "full"]
    rows = []
    for name in cases or list(compare.CASES):
        r = compare.run_case(name, libs, sz, rounds, 2, 0.06, False, 30 if quick else None)
        rows.append(_row(name, r["torch_ms"], r["before_ms"], r["ours_ms"], "ms"))
        print(_line(rows[-1], "ms"), flush=True)
    return rows


def run_host_path(base: Any, rounds: int, cases: list[str] | None, scale: float = 1.0) -> list[dict[str, Any]]:
    """benchmarks.host_path's cases: both packages' CUDA paths with a null launcher (the simulator's arrays without
    a GPU), next to torch CPU eager."""
    import minitorch_gpu as mt
    from benchmarks import host_path
    libs = _libraries(base, "cpu")
    torch = libs[2].mod
    torch.set_num_threads(1)
    for m in (mt, base):
        if not m.cuda.is_available():
            m.cuda.use_simulator(True)
    rows = []
    for name, (build, reps) in host_path.CASES.items():
        if cases and name not in cases:
            continue
        reps = max(1, int(reps * scale))
        with contextlib.ExitStack() as stack:
            for m in (mt, base):
                stack.enter_context(host_path.null_launches(m.backends.get_backend("cuda")))
            fns = {"after": build(mt, "cuda"), "before": build(base, "cuda"), "torch": build(torch, "cpu")}
            for f in fns.values():
                f()
            samples: dict[str, list[float]] = {k: [] for k in fns}
            order = list(fns)
            for r in range(rounds):
                for k in (order if r % 2 == 0 else order[::-1]):
                    samples[k].append(host_path._sample(fns[k], reps))
        med = {k: statistics.median(v) * 1e6 for k, v in samples.items()}
        rows.append(_row(name, med["torch"], med["before"], med["after"], "us"))
        print(_line(rows[-1], "us"), flush=True)
    return rows


def _line(r: dict[str, Any], unit: str) -> str:
    return (f"{r['case']:28s} torch {r[f'torch_{unit}']:9.3f} {unit} | before {r[f'before_{unit}']:9.3f} = "
            f"{r['before_ratio']:.2f}x | after {r[f'after_{unit}']:9.3f} = {r['after_ratio']:.2f}x | after/before "
            f"{r['after_over_before']:.2f}")


def markdown(rows: list[dict[str, Any]], title: str, unit: str) -> str:
    lines = [f"# {title}", "", f"| case | torch ({unit}) | before ({unit}) | before ÷ torch | after ({unit}) | "
             "after ÷ torch | after ÷ before |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r[f'torch_{unit}']:.3f} | {r[f'before_{unit}']:.3f} | {r['before_ratio']:.2f} "
                     f"| {r[f'after_{unit}']:.3f} | {r['after_ratio']:.2f} | {r['after_over_before']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", help="folder holding the baseline's minitorch_gpu package")
    p.add_argument("--quick", action="store_true", help="benchmarks.compare's quick sizes, 30 calls per sample")
    p.add_argument("--host-path", action="store_true", help="benchmarks.host_path's cases instead")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cases", nargs="*", help="a subset of the cases (underscores for spaces)")
    p.add_argument("--out", help="write the rows as JSON to this file")
    args = p.parse_args(argv)
    base = load_baseline(args.base)
    cases = [c.replace("_", " ") for c in args.cases] if args.cases else None
    print("load average before:", os.getloadavg())
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.host_path:
            rows, unit = run_host_path(base, args.rounds, cases), "us"
            title = "Host time per op, CUDA path with a null launcher: before and after, one process"
        else:
            rows, unit = run_compare(base, args.quick, args.rounds, cases, args.threads), "ms"
            title = f"benchmarks.compare{' --quick' if args.quick else ''}: before and after, one process"
    print("load average after:", os.getloadavg())
    print()
    print(markdown(rows, title, unit))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
