"""Host time per op on the CUDA path, with every kernel a no-op: what dispatch costs before the GPU sees work.

Run ``python -m benchmarks.host_path``. Our CUDA backend runs with a *null launcher*: the same ``Launcher`` code
(plans, grids, argument packing, allocation of outputs, deferred checks) whose kernel functions do nothing, so
the time is all host work. On a machine with a GPU the arrays are CuPy's (allocation from its pool included);
elsewhere they are the simulator's NumPy arrays. The other side is torch CPU eager on 1-element tensors, the
cost of a whole tiny op in a C++ dispatcher. Both run interleaved in one process (A B A B ...); the report gives
medians and ours ÷ torch. Goal (issue "GPU host path"): at most 1.5x.

Cases: ``a + b``, a broadcast add, gelu, ``linear`` forward + backward, and one GPT training step at
``benchmarks.compare``'s ``--quick`` size (forward, backward, fused AdamW: about 400 of our primitive calls).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import minitorch_gpu as mt
from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends.cuda.launch import Launcher

from . import compare
from ._report import write_results

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
GOAL = 1.5


class NullKernel:
    """A kernel that does nothing, with the attributes launchers read and set (as ``cupy.RawKernel``'s)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.max_dynamic_shared_size_bytes = 48 * 1024

    def __call__(self, grid: Any, block: Any, args: Any, **kwargs: Any) -> None:
        return None


class NullModule:
    """A kernel runtime (``cupy.RawModule``'s constructor and ``get_function``) whose kernels do nothing."""

    def __init__(self, code: str = "", options: Any = (), name_expressions: Any = ()) -> None:
        self.name_expressions = tuple(name_expressions)

    def get_function(self, name: str) -> NullKernel:
        return NullKernel(name)


@contextlib.contextmanager
def null_launches(backend: Any) -> Iterator[Launcher]:
    """Run ``backend`` (a CUDA backend) with a launcher that does everything but execute kernels."""
    real = backend.kernels
    if real is None:
        raise RuntimeError("the CUDA backend has no kernels (MINITORCH_GPU_KERNELS=0): nothing to measure")
    # the backend's own Launcher class: a second copy of the package (benchmarks.before_after) brings its own
    null = type(real)(real.xp, NullModule, real.ptr, real.max_blocks, upload=real.upload, sms=real.sms,
                      aligned=real.aligned)
    null.checks = real.checks
    backend.kernels = null
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # outputs of no-op kernels hold whatever memory held
            yield null
    finally:
        backend.kernels = real


# ---------------------------------------------------------------------------------------------- cases
# Each builder takes (library module, device) and returns a no-argument callable: one op (or one step).

def _ones(lib: Any, device: str, *shape: int, grad: bool = False) -> Any:
    return lib.ones(*shape, device=device, requires_grad=grad)


def case_add(lib: Any, device: str) -> Callable[[], Any]:
    a, b = _ones(lib, device, 1), _ones(lib, device, 1)
    return lambda: a + b


def case_broadcast_add(lib: Any, device: str) -> Callable[[], Any]:
    a, b = _ones(lib, device, 4, 1), _ones(lib, device, 1, 3)
    return lambda: a + b


def case_gelu(lib: Any, device: str) -> Callable[[], Any]:
    a = _ones(lib, device, 1)
    gelu = lib.nn.functional.gelu
    return lambda: gelu(a)


def case_linear(lib: Any, device: str) -> Callable[[], Any]:
    lib.manual_seed(0)
    layer = lib.nn.Linear(1, 1).to(device)
    x = _ones(lib, device, 1, 1, grad=True)

    def step() -> None:
        layer(x).sum().backward()
    return step


def case_gpt_step(lib: Any, device: str) -> Callable[[], Any]:
    twin = compare.Lib(lib.__name__, lib, device)
    ref = None
    if lib is not mt:  # the others copy our weights (not needed for timing, but keeps the models identical)
        ref, _ = compare.build_gpt_train(compare.Lib("minitorch_gpu", mt, "cpu"), compare.SIZES["quick"], None)
    _, step = compare.build_gpt_train(twin, compare.SIZES["quick"], ref)
    return step


CASES: dict[str, tuple[Callable[[Any, str], Callable[[], Any]], int]] = {
    # name: (builder, calls per timing sample)
    "a + b": (case_add, 2000),
    "broadcast add (4,1)+(1,3)": (case_broadcast_add, 2000),
    "gelu": (case_gelu, 2000),
    "linear fwd+bwd": (case_linear, 200),
    "gpt step (quick size)": (case_gpt_step, 5),
}


def _sample(fn: Callable[[], Any], reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def run(rounds: int = 15, scale: float = 1.0, cases: list[str] | None = None) -> dict[str, Any]:
    """Medians of ``rounds`` interleaved samples per case: {"device", "cases": {name: {ours_us, torch_us, ratio}}}."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
    if not mt.cuda.is_available():
        mt.cuda.use_simulator(True)
    be = get_backend("cuda")
    device = "simulator (NumPy arrays)" if be.name == "cuda-sim" else mt.cuda.get_device_name()
    out: dict[str, Any] = {"device": device, "torch": None if torch is None else torch.__version__,
                           "rounds": rounds, "cases": {}}
    for name, (build, reps) in CASES.items():
        if cases and name not in cases:
            continue
        reps = max(1, int(reps * scale))
        with null_launches(be):
            ours = build(mt, "cuda")
            ours()  # first call builds plans and loads nothing (kernels are no-ops)
            theirs = build(torch, "cpu") if torch is not None else None
            if theirs is not None:
                theirs()
            t_ours, t_torch = [], []
            for _ in range(rounds):
                t_ours.append(_sample(ours, reps))
                if theirs is not None:
                    t_torch.append(_sample(theirs, reps))
        o = statistics.median(t_ours) * 1e6
        t = statistics.median(t_torch) * 1e6 if t_torch else None
        out["cases"][name] = {"ours_us": o, "torch_us": t, "ratio": None if t is None else o / t}
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = [f"# Host time per op, CUDA path with a null launcher ({res['device']})", "",
             f"torch {res['torch']} CPU eager on 1-element tensors, single thread; medians of {res['rounds']} "
             f"interleaved rounds. Goal: ours ÷ torch ≤ {GOAL}.", "",
             "| case | ours (µs) | torch CPU eager (µs) | ours ÷ torch |", "|---|---|---|---|"]
    for name, c in res["cases"].items():
        t = "–" if c["torch_us"] is None else f"{c['torch_us']:.1f}"
        r = "–" if c["ratio"] is None else f"{c['ratio']:.2f}"
        lines.append(f"| {name} | {c['ours_us']:.1f} | {t} | {r} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    p.add_argument("--out", help="folder for host_path.md/json (default: print only)")
    args = p.parse_args(argv)
    res = run(rounds=3 if args.quick else args.rounds, scale=0.01 if args.quick else 1.0)
    text = markdown(res)
    print(text)
    if args.out:
        write_results(args.out, "host_path", res, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
