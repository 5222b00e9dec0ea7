"""Every script in examples/ runs (as a user would run it, in a subprocess, with small sizes) and reaches
its goal: the classifiers learn, the custom autograd Function passes gradcheck, the custom optimizer matches
minitorch_gpu.optim.AdamW."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
# single-threaded BLAS: these models are tiny, and threads only slow them down on a busy machine
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def run_example(name, *args):
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], capture_output=True, text=True,
                       env=ENV, cwd=ROOT, timeout=120)
    assert r.returncode == 0, f"{name} failed:\n{r.stdout}\n{r.stderr}"
    assert "Traceback" not in r.stderr
    return r.stdout


def last_number(pattern, text):
    found = re.findall(pattern, text)
    assert found, text
    return float(found[-1])


def test_classify():
    out = run_example("classify.py", "--epochs", "12", "--samples", "150", "--num-workers", "1")
    assert last_number(r"accuracy of the reloaded model: ([0-9.]+)", out) > 0.85
    first = last_number(r"epoch   1  train loss ([0-9.]+)", out)
    final = last_number(r"epoch  12  train loss ([0-9.]+)", out)
    assert final < first / 2


def test_custom_function():
    out = run_example("custom_function.py", "--steps", "120")
    assert "gradcheck passed" in out
    assert "quantized weights [1.0, -0.5, 0.25]" in out
    assert last_number(r"loss ([0-9.]+)", out) < 1e-3


def test_custom_optimizer():
    out = run_example("custom_optimizer.py", "--steps", "40")
    assert "custom AdamW matches minitorch_gpu.optim.AdamW" in out
    assert last_number(r"max \|weight difference\| after 40 steps: ([0-9.e+-]+)", out) < 1e-5


def test_custom_optimizer_validates_arguments():
    sys.path.insert(0, EXAMPLES)
    try:
        import custom_optimizer
    finally:
        sys.path.remove(EXAMPLES)
    import minitorch_gpu as mt
    w = mt.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        custom_optimizer.AdamW([w], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        custom_optimizer.AdamW([w], betas=(0.9, 1.0))
    opt = custom_optimizer.AdamW([w], lr=0.1)
    opt.step()  # no gradients yet: nothing changes, no state is created
    assert w.tolist() == [0.0, 0.0] and len(opt.state) == 0


def test_cnn():
    out = run_example("cnn.py", "--epochs", "2", "--train-size", "480", "--test-size", "150", "--num-workers", "2")
    assert last_number(r"final test accuracy: ([0-9.]+)", out) > 0.9


@pytest.mark.parametrize("mode", ["ddp", "horovod", "zero", "dp"])
def test_data_parallel(mode):
    pytest.importorskip("mpi4py")
    # ddp, horovod and zero on two processes through the launcher; dp (threads) in one plain process
    launch = [] if mode == "dp" else ["-m", "minitorch_gpu.distributed.run", "--nproc", "2"]
    r = subprocess.run([sys.executable, *launch, os.path.join(EXAMPLES, "data_parallel.py"), "--mode", mode,
                        "--epochs", "8"], capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=120)
    assert r.returncode == 0, f"data_parallel.py failed:\n{r.stdout}\n{r.stderr}"
    assert f"{mode}: {1 if mode == 'dp' else 2} process(es)" in r.stdout
    assert "replicas in sync: True" in r.stdout
    assert last_number(r"test accuracy: ([0-9.]+)", r.stdout) > 0.9
