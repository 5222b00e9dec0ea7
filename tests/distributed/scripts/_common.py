"""Shared by the scripts that tests/distributed runs under mpiexec: each check runs on every rank and its
outcome goes to a per-rank log file (``$MT_TEST_OUT/rank<r>.log``), which the pytest side reads; files, not
stdout, because mpiexec interleaves the ranks' output."""
import atexit
import os
import sys
import traceback

import numpy as np

import minitorch_gpu as mt
import minitorch_gpu.distributed as dist


class Log:
    def __init__(self):
        self.rank = dist.get_rank() if dist.is_initialized() else int(os.environ.get("PMI_RANK", "0"))
        out = os.environ.get("MT_TEST_OUT")
        self.f = open(os.path.join(out, f"rank{self.rank}.log"), "w") if out else None
        if self.f is not None:
            atexit.register(self.f.close)

    def emit(self, text):
        if self.f is not None:
            self.f.write(text + "\n")
            self.f.flush()
        sys.stdout.write(f"[rank {self.rank}] {text}\n")
        sys.stdout.flush()

    def check(self, fn):
        """Decorator: run ``fn`` now and log ``OK name`` or ``FAIL name`` with the traceback."""
        try:
            fn()
        except Exception:
            self.emit(f"FAIL {fn.__name__}\n" + "".join("    " + line for line in
                                                          traceback.format_exc().splitlines(True)))
        else:
            self.emit(f"OK {fn.__name__}")
        return fn


def gather_arrays(t):
    """Every rank's copy of tensor ``t`` as NumPy arrays (rank order)."""
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, t.detach().numpy().copy())
    return out


def flat_params(module):
    return np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])


def max_diff(a, b):
    return max(float((x.detach() - y.detach()).abs().max().item()) for x, y in zip(a.parameters(), b.parameters()))


def assert_identical_across_ranks(module):
    mine = flat_params(module)
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)
    for r, other in enumerate(every):
        if not np.array_equal(other, mine):
            raise AssertionError(f"parameters differ between this rank and rank {r}: "
                                 f"max {np.abs(other - mine).max()}")


def expect_raises(exc_type, fn, match=None):
    try:
        fn()
    except exc_type as e:
        if match is not None and match not in str(e):
            raise AssertionError(f"expected {match!r} in the message, got: {e}")
        return e
    raise AssertionError(f"{exc_type.__name__} not raised")


__all__ = ["Log", "np", "mt", "dist", "gather_arrays", "flat_params", "max_diff", "assert_identical_across_ranks",
           "expect_raises"]
