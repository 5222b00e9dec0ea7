"""The CPU backend's compiled fused optimizer step (backends/_optim_native.py): bit-identical with the NumPy
bodies for every optimizer and option bit, independent of the thread split, and declining (touching nothing)
whatever it cannot take, so the NumPy body runs instead."""
import warnings

import numpy as np
import pytest
from fused_cases import CASE_IDS, CASES, assert_states_equal, copy_state, make_state, run_step

import minitorch_gpu as mt
from minitorch_gpu.backends import _optim_native as native
from minitorch_gpu.backends.cuda.fused_step import FusedStep
from minitorch_gpu.backends.numpy_backend import NumpyBackend

# 70001 elements span several threads' shares when the parallel threshold is lowered; 0 and 1 are edge sizes
SHAPES = [(1,), (7,), (3, 5), (70001,), (0,), (64, 33)]


def _backend(native_optim, threads=1):
    be = NumpyBackend()
    be.native_optim = native_optim
    be.optim_threads = threads
    return be


@pytest.fixture(scope="module")
def lib():
    if not native.available():
        pytest.skip(f"no native optimizer library here: {native.unavailable_reason()}")
    return native._library()


@pytest.fixture
def fresh_state(monkeypatch):
    """Forget the loaded library for one test (restored afterwards)."""
    for k, v in (("lib", None), ("tried", False), ("reason", None)):
        monkeypatch.setitem(native._state, k, v)


def _spy(monkeypatch):
    """Record what every native.run call returned."""
    results = []
    real = native.run
    monkeypatch.setattr(native, "run", lambda step, threads: results.append(real(step, threads)) or results[-1])
    return results


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind,opts", CASES, ids=CASE_IDS)
def test_bit_identical_with_numpy_bodies(lib, monkeypatch, dt, kind, opts):
    state = make_state(kind, dt, SHAPES, seed=3)
    ref = copy_state(state)
    taken = _spy(monkeypatch)
    be, ref_be = _backend(True), _backend(False)
    for step in (1, 2, 3):
        run_step(be, kind, state, step, opts)
        run_step(ref_be, kind, ref, step, opts)
    assert taken == [True] * 3
    assert_states_equal(state, ref)


@pytest.mark.parametrize("threads", [2, 3, 5])
@pytest.mark.parametrize("kind,opts", [CASES[1], CASES[6], CASES[9]], ids=[CASE_IDS[1], CASE_IDS[6], CASE_IDS[9]])
def test_thread_split_does_not_change_results(lib, monkeypatch, threads, kind, opts):
    monkeypatch.setattr(native, "_PARALLEL_MIN_ELEMENTS", 1000)  # every thread works on this group
    monkeypatch.setattr(native, "_CHUNK", 997)  # in pieces that start and end mid-tensor
    state = make_state(kind, np.float32, SHAPES, seed=4)
    ref = copy_state(state)
    for step in (1, 2):
        run_step(_backend(True, threads), kind, state, step, opts)
        run_step(_backend(False), kind, ref, step, opts)
    assert_states_equal(state, ref)


def test_data_addresses_without_the_object_layout(lib, monkeypatch):
    """With the array objects' data offset unknown, Python passes data addresses itself."""
    monkeypatch.setattr(lib, "data_offset", -1)
    state = make_state("adam", np.float32, SHAPES, seed=5)
    ref = copy_state(state)
    run_step(_backend(True), "adam", state, 1, dict(amsgrad=True))
    run_step(_backend(False), "adam", ref, 1, dict(amsgrad=True))
    assert_states_equal(state, ref)


def test_data_offset_reads_the_data_pointer(lib):
    import ctypes
    if lib.data_offset < 0:
        pytest.skip("array object layout not recognised; data addresses are passed instead")
    for a in (np.zeros(5), np.ones((3, 4), np.float32)[1:], np.empty(0, np.float32)):
        assert ctypes.c_uint64.from_address(id(a) + lib.data_offset).value == a.__array_interface__["data"][0]


def _declines(step):
    before = copy_state([r for r in step.roles if r is not None])
    assert native.run(step, 1) is None
    assert_states_equal([r for r in step.roles if r is not None], before)


def test_declines_what_it_cannot_take(lib):
    p = [np.ones(8, np.float32)]
    g = [np.full(8, 0.5, np.float32)]
    m = [np.zeros(8, np.float32)]
    lion = dict(beta1=0.9, beta2=0.99, g1=0.1, g2=0.01, neg_lr=-0.1, decay=1.0)
    _declines(FusedStep("lion", [[np.ones(8, np.float16)], [np.ones(8, np.float16)], [np.zeros(8, np.float16)]],
                        lion, {}))                                   # half precision
    _declines(FusedStep("lion", [[np.ones((4, 4), np.float32).T], [np.ones((4, 4), np.float32)],
                                 [np.zeros((4, 4), np.float32)]], lion, {}))  # strided parameter
    _declines(FusedStep("lion", [p, g, [np.zeros(8, np.float64)]], lion, {}))  # mixed dtypes
    _declines(FusedStep("lion", [p, g, [np.zeros(9, np.float32)]], lion, {}))  # state of another size
    _declines(FusedStep("lion", [p, g, p], lion, {}))                 # a state that is the parameter
    buf = np.zeros(16, np.float32)
    _declines(FusedStep("lion", [[buf[:8]], g, [buf[4:12]]], lion, {}))  # overlapping roles
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    _declines(FusedStep("lion", [p, g, [ro]], lion, {}))              # read-only state
    # a read-only gradient is fine: it is only read
    g_ro = g[0].copy()
    g_ro.flags.writeable = False
    assert native.run(FusedStep("lion", [p, [g_ro], m], lion, {}), 1)


def test_declined_groups_still_step_through_numpy(lib):
    """Half precision and strided groups go to the NumPy body and give the reference results."""
    for dt, strided in ((np.float16, False), (np.float32, True)):
        state = make_state("adam", dt, [(6, 4), (9,)], seed=6)
        if strided:
            state = [[role[0].T] + role[1:] for role in state]
        ref = copy_state(state)
        run_step(_backend(True), "adam", state, 1, {})
        run_step(_backend(False), "adam", ref, 1, {})
        assert_states_equal(state, ref)


def test_switched_off_by_environment(fresh_state, monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_NATIVE_OPTIM", "0")
    assert not native.available()
    assert "MINITORCH_GPU_NATIVE_OPTIM=0" in native.unavailable_reason()
    state = make_state("sgd", np.float32, SHAPES, seed=7)
    ref = copy_state(state)
    run_step(_backend(True), "sgd", state, 1, dict(momentum=0.9))
    run_step(_backend(False), "sgd", ref, 1, dict(momentum=0.9))
    assert_states_equal(state, ref)


def test_build_failure_warns_once_and_falls_back(fresh_state, monkeypatch, tmp_path):
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.warns(RuntimeWarning, match="native CPU optimizer step is unavailable"):
        assert not native.available()
    assert "no-such-compiler" in native.unavailable_reason()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        p = mt.ones(5, requires_grad=True)
        p.grad = mt.ones(5)
        mt.optim.AdamW([p], lr=0.1, fused=True).step()
    np.testing.assert_allclose(p.detach().numpy(), np.full(5, 1 - 0.1 * 0.01 - 0.1), rtol=1e-6)


def test_builds_into_the_cache_and_reuses_it(fresh_state, monkeypatch, tmp_path):
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(tmp_path))
    if not native.available():
        pytest.skip(native.unavailable_reason())
    built = list((tmp_path / "cpu").glob("liboptim_cpu-*.so"))
    assert len(built) == 1
    mtime = built[0].stat().st_mtime_ns
    for k, v in (("lib", None), ("tried", False), ("reason", None)):
        native._state[k] = v
    assert native.available()
    assert built[0].stat().st_mtime_ns == mtime  # loaded from the cache, not rebuilt


def test_optimizers_take_the_native_path(lib, monkeypatch):
    taken = _spy(monkeypatch)
    w = mt.randn(40, 30, requires_grad=True)
    w.grad = mt.randn(40, 30)
    for cls, kw in ((mt.optim.AdamW, {}), (mt.optim.Adam, dict(amsgrad=True)), (mt.optim.SGD, dict(momentum=0.9)),
                    (mt.optim.RMSprop, {}), (mt.optim.Adagrad, {}), (mt.optim.Lion, {})):
        cls([w], lr=1e-3, fused=True, **kw).step()
    assert taken == [True] * 6
