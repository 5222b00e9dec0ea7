"""Ordinary PyTorch programs (``programs/*.py``: ``import torch``, a model, data, a training loop, a checkpoint,
resume, sampling) run with ``torch`` bound to minitorch_gpu — on the CPU and on the simulated GPU, which the
programs pick with ``torch.cuda.is_available()`` as real programs do — and print PyTorch's losses from the
same weights; a run resumed from its checkpoint continues exactly where the uninterrupted run went."""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_AS = os.path.join(HERE, "run_as.py")
PROGRAMS = {"char_lstm.py": 12, "tiny_gpt.py": 10, "cnn_classifier.py": 12, "amp_gpt.py": 8,
            "vit_einops.py": 8}  # program: steps
NEEDS = {"vit_einops.py": "einops"}  # program: a third-party package it imports (its tests skip without it)
# small models: threads only slow them down on a busy machine
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
MODES = {"cpu": {"MINITORCH_GPU_SIM": "0"}, "cuda-sim": {"MINITORCH_GPU_SIM": "1"}}


# PyTorch's compiler takes a minute per run on the CPU; its eager numerics are the reference
TORCH_ARGS = {"amp_gpt.py": ("--compile", "0")}
TF32_PROGRAMS = {"amp_gpt.py"}  # they set torch.backends.cuda.matmul.allow_tf32 = True


def run(lib, program, *args, mode="cpu", stderr=None):
    if lib == "torch":
        args = (*args, *TORCH_ARGS.get(program, ()))
    r = subprocess.run([sys.executable, RUN_AS, lib, os.path.join(HERE, "programs", program), *args],
                       capture_output=True, text=True, env=dict(ENV, **MODES[mode]), timeout=300)
    assert r.returncode == 0, f"{program} under {lib} failed:\n{r.stdout}\n{r.stderr}"
    if stderr is not None:
        stderr.append(r.stderr)
    return r.stdout


def losses(out):
    """{step: loss} of the lines ``step N loss X`` / ``iter N loss X``."""
    return {int(s): float(v) for s, v in re.findall(r"^(?:step|iter) (\d+) loss ([0-9.eE+-]+)", out, re.M)}


def sample(out):
    return re.findall(r"^sample (.*)$", out, re.M)[-1]


@pytest.fixture(scope="module")
def torch_runs():
    pytest.importorskip("torch")
    return {p: run("torch", p, "--steps", str(n)) for p, n in PROGRAMS.items() if _has(NEEDS.get(p))}


def _has(package):
    return package is None or importlib.util.find_spec(package) is not None


def _needs(program):
    if not _has(NEEDS.get(program)):
        pytest.skip(f"{program} needs the {NEEDS[program]} package")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_program_matches_pytorch_and_resumes_exactly(program, mode, torch_runs, tmp_path):
    _needs(program)
    n = PROGRAMS[program]
    ours = run("minitorch_gpu", program, "--steps", str(n), mode=mode)
    theirs = torch_runs[program]
    got, want = losses(ours), losses(theirs)
    assert sorted(got) == list(range(1, n + 1)) and sorted(want) == sorted(got)
    # a program that allows TF32 gets it on the (simulated) GPU, as on PyTorch's: products of 11-bit mantissas
    # against PyTorch's CPU float32
    tf32 = program in TF32_PROGRAMS and mode == "cuda-sim"
    np.testing.assert_allclose([got[k] for k in sorted(got)], [want[k] for k in sorted(want)],
                               rtol=5e-3 if tf32 else 2e-4)
    assert got[n] < got[1]  # it learns
    if not tf32:  # (greedy sampling from barely trained logits flips a near tie under TF32)
        assert sample(ours) == sample(theirs)

    # interrupted halfway, then resumed from the checkpoint: the same losses as the run that went straight through
    ckpt = str(tmp_path / "ckpt.pt")
    first = losses(run("minitorch_gpu", program, "--steps", str(n // 2), "--ckpt", ckpt, mode=mode))
    second = losses(run("minitorch_gpu", program, "--steps", str(n), "--resume", ckpt, mode=mode))
    assert sorted(first) == list(range(1, n // 2 + 1)) and sorted(second) == list(range(n // 2 + 1, n + 1))
    resumed = {**first, **second}
    np.testing.assert_allclose([resumed[k] for k in sorted(resumed)], [got[k] for k in sorted(got)], rtol=1e-6)


@pytest.mark.parametrize("program", list(PROGRAMS))
def test_checkpoints_cross_between_pytorch_and_us(program, torch_runs, tmp_path):
    """A checkpoint PyTorch's run wrote resumes here, and ours resumes in PyTorch: the second half of the losses is
    the uninterrupted PyTorch run's either way."""
    _needs(program)
    n = PROGRAMS[program]
    want = losses(torch_runs[program])
    for first_lib, second_lib in (("torch", "minitorch_gpu"), ("minitorch_gpu", "torch")):
        ckpt = str(tmp_path / f"{first_lib}.pt")
        run(first_lib, program, "--steps", str(n // 2), "--ckpt", ckpt)
        second = losses(run(second_lib, program, "--steps", str(n), "--resume", ckpt))
        assert sorted(second) == list(range(n // 2 + 1, n + 1)), (first_lib, second_lib)
        np.testing.assert_allclose([second[k] for k in sorted(second)], [want[k] for k in sorted(second)],
                                   rtol=2e-4, err_msg=f"{first_lib} -> {second_lib}")


def test_float16_program_scales_on_the_device_and_disables_itself_on_the_cpu(torch_runs, tmp_path):
    """``amp_gpt.py --dtype float16``, the usual mixed-precision recipe. On the (simulated) GPU it autocasts to
    float16 with a live GradScaler and fused AdamW: the losses follow PyTorch's float32 run to float16
    rounding, and a resumed run (the scaler's state in the checkpoint) continues exactly. On the CPU the
    program takes no autocast and its GradScaler disables itself with PyTorch's warning, as PyTorch's does."""
    n = PROGRAMS["amp_gpt.py"]
    want = losses(torch_runs["amp_gpt.py"])
    out = run("minitorch_gpu", "amp_gpt.py", "--steps", str(n), "--dtype", "float16", mode="cuda-sim")
    got = losses(out)
    assert "using fused AdamW: True" in out and re.findall(r"scale (\S+)$", out, re.M) == ["65536"] * n
    np.testing.assert_allclose([got[k] for k in sorted(got)], [want[k] for k in sorted(want)], rtol=5e-3)
    assert max(abs(got[k] - want[k]) / want[k] for k in got) > 1e-6  # float16 did run (not float32 again)
    ckpt = str(tmp_path / "amp.pt")
    first = losses(run("minitorch_gpu", "amp_gpt.py", "--steps", str(n // 2), "--dtype", "float16", "--ckpt", ckpt,
                       mode="cuda-sim"))
    second = losses(run("minitorch_gpu", "amp_gpt.py", "--steps", str(n), "--dtype", "float16", "--resume", ckpt,
                        mode="cuda-sim"))
    resumed = {**first, **second}
    np.testing.assert_allclose([resumed[k] for k in sorted(resumed)], [got[k] for k in sorted(got)], rtol=1e-6)

    errs = []
    cpu = run("minitorch_gpu", "amp_gpt.py", "--steps", str(n), "--dtype", "float16", stderr=errs)
    theirs = []
    run("torch", "amp_gpt.py", "--steps", "1", "--dtype", "float16", stderr=theirs)
    warning = "GradScaler is enabled, but CUDA is not available.  Disabling."
    assert warning in theirs[0] and warning in errs[0]
    cpu_losses = losses(cpu)
    np.testing.assert_allclose([cpu_losses[k] for k in sorted(cpu_losses)], [want[k] for k in sorted(want)],
                               rtol=2e-4)
