"""The native worker pool behind the CPU kernel libraries (kernels/pool_cpu.cpp, loaded by
backends/_cpu_library.py): every piece of a split call taken once, by several threads; an error on any thread
reported; concurrent callers from several Python threads; a forked child with its own pool; a clean exit; and
the compiled loops still right with the pool switched off."""
import ctypes
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import minitorch_gpu
from minitorch_gpu.backends import _cpu_library as cpu
from minitorch_gpu.backends import _rows_native as rows

_i64 = ctypes.c_longlong


@pytest.fixture(scope="module")
def pool():
    p = cpu.POOL.get()
    if p is None:
        pytest.skip(f"no native worker pool here: {cpu.POOL.reason}")
    return p


def _probe(pool, workers, pieces, work_ns=0, fail_at=-1, fail_code=0):
    """(return code, owner of every piece) of one split call of the probe entry."""
    owner = (_i64 * max(pieces, 1))()
    rc = pool.probe(workers, pieces, work_ns, fail_at, fail_code, owner, ctypes.byref(_i64(0)))
    return rc, list(owner)[:pieces]


def _caller_id(pool):
    """The probe's number for the calling thread (one worker: the caller takes every piece)."""
    return _probe(pool, 1, 1)[1][0]


def test_every_piece_once_and_shared_between_threads(pool):
    me = _caller_id(pool)
    shared = False
    for _ in range(20):
        rc, owner = _probe(pool, 2, 64, work_ns=20_000)
        assert rc == 0
        assert all(o != 0 for o in owner)  # each piece taken (and by a thread the probe numbered)
        shared = shared or any(o != me for o in owner)
        if shared:
            break
    assert shared, "no helper ever took a piece"
    assert pool.helpers() >= 1


def test_one_worker_runs_on_the_caller(pool):
    me = _caller_id(pool)
    rc, owner = _probe(pool, 1, 16, work_ns=1000)
    assert rc == 0 and set(owner) == {me}


def test_an_error_on_a_helper_raises_naming_the_entry(pool):
    me = _caller_id(pool)
    on_helper = False
    for _ in range(40):
        owner = (_i64 * 64)()
        with pytest.raises(RuntimeError, match=r"the pool probe rejected its arguments \(code -7\)"):
            cpu.run_counted(pool.probe, (64, 20_000, 63, -7, owner), 2, "the pool probe")
        if owner[63] not in (0, me):
            on_helper = True
            break
    assert on_helper, "the failing piece never ran on a helper"


def test_concurrent_callers(pool):
    """Python threads calling at once: whoever finds the pool busy runs alone; every call still covers its
    pieces exactly once."""
    errors = []

    def caller():
        try:
            for _ in range(100):
                rc, owner = _probe(pool, 2, 37, work_ns=2000)
                if rc != 0 or not all(o != 0 for o in owner):
                    errors.append((rc, owner))
        except Exception as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_concurrent_layer_norms_match_one_thread(pool, monkeypatch):
    if not rows.available():
        pytest.skip(f"no native row library here: {rows.LIB.reason}")
    monkeypatch.setattr(rows, "_PARALLEL_MIN_ELEMENTS", 1 << 10)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((300, 96)).astype(np.float32) for _ in range(4)]
    w, b = rng.standard_normal(96).astype(np.float32), rng.standard_normal(96).astype(np.float32)
    want = [rows.layer_norm_forward(x, w, b, 1e-5, threads=1) for x in xs]
    got = [None] * 4

    def caller(i):
        for _ in range(30):
            got[i] = rows.layer_norm_forward(xs[i], w, b, 1e-5, threads=2)

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for g, r in zip(got, want):
        for a, e in zip(g, r):
            np.testing.assert_array_equal(a, e)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_starts_its_own_pool(pool):
    _probe(pool, 2, 8, work_ns=1000)  # the parent's helpers exist, and may be asleep or spinning at the fork
    pid = os.fork()
    if pid == 0:  # the child: report through the exit status, never return into pytest
        code = 1
        try:
            ok = True
            for _ in range(50):
                rc, owner = _probe(pool, 2, 32, work_ns=5000)
                ok = ok and rc == 0 and all(o != 0 for o in owner)
            code = 0 if ok and pool.helpers() >= 1 else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in the pool")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0


def _run_python(code, env=None, timeout=120):
    full = {**os.environ, **(env or {})}
    root = os.path.dirname(os.path.dirname(minitorch_gpu.__file__))  # this checkout, whatever the cwd
    full["PYTHONPATH"] = os.pathsep.join(p for p in [root, full.get("PYTHONPATH", "")] if p)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=timeout)


def test_exit_with_helpers_spinning_and_asleep(pool):
    code = """
import ctypes, time
from minitorch_gpu.backends import _cpu_library as cpu
p = cpu.POOL.get()
owner = (ctypes.c_longlong * 64)()
p.probe(3, 64, 1000, -1, 0, owner, ctypes.byref(ctypes.c_longlong(0)))
time.sleep(0.05)   # past the spin: the helpers sleep
p.probe(3, 64, 1000, -1, 0, owner, ctypes.byref(ctypes.c_longlong(0)))
print(p.helpers())  # and exit while they spin
"""
    r = _run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "2"


def test_switched_off_every_call_runs_on_one_thread():
    code = """
import numpy as np
from minitorch_gpu.backends import _cpu_library as cpu, _rows_native as rows
rows._PARALLEL_MIN_ELEMENTS = 1 << 10
assert cpu.POOL.get() is None and "MINITORCH_GPU_NATIVE_POOL=0" in cpu.POOL.reason
x = np.random.default_rng(1).standard_normal((500, 64))
one = rows.layer_norm_forward(x, None, None, 1e-5, threads=1)
two = rows.layer_norm_forward(x, None, None, 1e-5, threads=2)
assert all((a == b).all() for a, b in zip(one, two))
print("ok")
"""
    r = _run_python(code, {"MINITORCH_GPU_NATIVE_POOL": "0"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_spin_time_is_configurable(pool):
    before = pool.configure(20)
    try:
        assert pool.configure(500) == 20
        rc, owner = _probe(pool, 2, 16, work_ns=1000)
        assert rc == 0 and all(o != 0 for o in owner)
        for bad in (-1, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="microseconds >= 0"):
                pool.configure(bad)
        assert pool.spin_us() == 500
        assert pool.configure(500) == 500  # the refused value left it alone
    finally:
        pool.configure(before)


def test_a_bad_spin_variable_warns_and_keeps_the_default():
    code = """
import warnings
from minitorch_gpu.backends import _cpu_library as cpu
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    pool = cpu.POOL.get()
print([str(w.message) for w in caught], pool.configure(100))
"""
    r = _run_python(code, {"MINITORCH_GPU_POOL_SPIN_US": "fast"})
    assert r.returncode == 0, r.stderr
    assert "MINITORCH_GPU_POOL_SPIN_US='fast' is not a number" in r.stdout
    assert r.stdout.strip().endswith(" 1000.0")  # the default spin


def test_openblas_thread_timeout_default_and_a_user_value():
    """The package sets OpenBLAS's idle-spin time before NumPy loads (its spinning threads would otherwise hold
    the cores the pool's helpers need), and leaves a value the user set."""
    code = "import os, minitorch_gpu; print(os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    root = os.path.dirname(os.path.dirname(minitorch_gpu.__file__))
    env["PYTHONPATH"] = os.pathsep.join(p for p in [root, env.get("PYTHONPATH", "")] if p)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "18"
    r = _run_python(code, {"OPENBLAS_THREAD_TIMEOUT": "25"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "25"
