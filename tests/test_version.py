"""``mt.version``: PyTorch's names for what this build is."""
import pathlib
import re

import pytest

import minitorch_gpu as mt

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_names_of_torch_version(torch):
    for name in ("__version__", "cuda", "git_version", "hip", "debug"):
        assert hasattr(mt.version, name) and hasattr(torch.version, name), name
    assert mt.version.hip is None and mt.version.debug is False
    assert isinstance(mt.version.git_version, str)
    assert mt.version.__version__ == mt.__version__
    with pytest.raises(AttributeError, match="has no attribute 'rocm_x'"):
        mt.version.rocm_x


def test_release_is_the_project_version():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == mt.version.RELEASE
    assert mt.__version__ == f"{mt.version.TORCH_API}+minitorch_gpu.{mt.version.RELEASE}"


def test_cuda_is_cupy_build_version_or_none(monkeypatch):
    from minitorch_gpu.backends.cuda import device as probe
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is None:
        assert mt.version.cuda is None
    else:
        v = cupy.cuda.runtime.runtimeGetVersion()
        assert mt.version.cuda == f"{v // 1000}.{v % 1000 // 10}"
    # the simulator does not make this a CUDA build
    prev = mt.cuda.use_simulator(True)
    try:
        assert mt.version.cuda == probe.cuda_version()
    finally:
        mt.cuda.use_simulator(prev)
    from minitorch_gpu.version import cuda  # a from-import reads it too
    assert cuda == mt.version.cuda
