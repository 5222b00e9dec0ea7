"""The elementwise benchmark (``python -m benchmarks.elementwise_ops``) covers every unary and binary row of the
primitive table that a function reaches, runs on tiny sizes, and writes its table; timings are not checked."""
import pytest

from benchmarks import elementwise_ops as bench
from minitorch_gpu.backends._elementwise_table import by_arity


def test_every_table_row_has_a_case():
    assert set(by_arity("unary")) <= set(bench.UNARY)
    assert set(by_arity("binary")) <= set(bench.BINARY)


def test_tiny_run_writes_the_table(tmp_path):
    pytest.importorskip("torch")
    rc = bench.main(["--size", "64", "--rounds", "1", "--reps", "1", "--ops", "gelu", "fmod", "pow 3.0",
                     "--out", str(tmp_path)])
    assert rc == 0
    md = (tmp_path / "elementwise_ops.md").read_text()
    for op in ("gelu", "fmod", "pow 3.0"):
        assert f"| {op} |" in md
