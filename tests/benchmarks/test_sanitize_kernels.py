"""The sanitizer workload (benchmarks/sanitize_kernels.py) passes on the simulator and launches every entry point
of every kernel file, so that compute-sanitizer on a GPU sees them all."""
import minitorch_gpu as mt
from benchmarks import sanitize_kernels
from minitorch_gpu.backends import get_backend
from minitorch_gpu.backends.cuda.counting import LaunchCounter
from minitorch_gpu.backends.cuda.loader import exports, kernel_files


def test_every_kernel_entry_point_runs_and_checks_out(capsys):
    prev = mt.cuda.use_simulator(True)
    try:
        be = get_backend("cuda")
        with LaunchCounter().attach(be) as c:
            assert sanitize_kernels.run(be) == 0
    finally:
        mt.cuda.use_simulator(prev)
    every = {(f, e) for f in kernel_files() for e in exports(f)}
    launched = {(s.file, name) for name, s in c.kernels.items() if s.launches}
    assert every - launched == set()
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("ok    ") == len(kernel_files())
