"""The GEMM-per-type cases of benchmarks/kernels.py (``gemm_dtypes``), built on the simulator at small shapes
(NumPy standing in for CuPy): every case runs our tensor-core product, checks it against the built-in before it
would be timed, and a wrong result turns the case into a failure instead of a timing."""
import numpy as np
import pytest

from benchmarks import kernels as kb


@pytest.fixture
def ctx(sim, monkeypatch):
    monkeypatch.setattr(kb, "_gemm_shapes", lambda quick: (40, 72, 24, 40))
    return kb.Ctx(np, sim, sim.kernels, None, True, 0, None, None)


def test_every_type_and_product_is_built_checked_and_run(ctx):
    cases = kb.gemm_dtypes(ctx)
    names = [c.name for c in cases]
    assert len(cases) == 12 and all(c.unit == "FLOP" and c.builtin is not None and c.torch is None for c in cases)
    for ty in ("tf32", "float16", "bfloat16"):
        assert sum(n.startswith(f"gemm {ty} ") for n in names) == 4
    for c in cases:
        got = c.ours()  # the first call checks against the built-in (cuBLAS on a GPU)
        assert got is not None and got.shape == c.builtin().shape, c.name
        assert c.ours() is not None


def test_a_wrong_result_fails_the_case(ctx, monkeypatch):
    real = ctx.k.matmul
    monkeypatch.setattr(ctx.k, "matmul", lambda *a, **kw: real(*a, **kw) * 1.01)
    case = kb.gemm_dtypes(ctx)[4]  # float16 4096^3 (here 40^3)
    with pytest.raises(AssertionError, match=r"^gemm float16 40\^3: relative error \S+ against cuBLAS \(at most 0\.002"):
        case.ours()
    rows = kb.measure([kb.gemm_dtypes], ctx, lambda fn: fn() is not None and 1.0, 1.0, only=["gemm float16 40^3"])
    assert len(rows) == 1 and "relative error" in rows[0]["error"]


def test_without_tensor_cores_the_family_says_why(ctx, monkeypatch):
    monkeypatch.setattr(ctx.k, "tensor_cores", False)
    with pytest.raises(RuntimeError, match="no mma.sync tensor cores"):
        kb.gemm_dtypes(ctx)
