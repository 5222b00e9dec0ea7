"""The CPU simulator of CUDA kernels (minitorch_gpu.backends.cuda.sim): the toy kernels in sim_kernels/ against NumPy,
the faults it must report with kernel name and source line, typed launches, and the compile cache."""
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from minitorch_gpu.backends.cuda import sim
from minitorch_gpu.backends.cuda.sim import builder

KERNELS = Path(__file__).parent / "sim_kernels"


def load(name, **kw):
    return sim.SimModule(path=KERNELS / name, include_dirs=(KERNELS,), **kw)


@pytest.fixture(scope="module")
def basics():
    return load("basics.cu", name_expressions=("axpy<float>", "axpy<double>"))


@pytest.fixture(scope="module")
def shared():
    return load("shared.cu")


@pytest.fixture(scope="module")
def warp():
    return load("warp.cu")


@pytest.fixture(scope="module")
def atomics():
    return load("atomics.cu")


@pytest.fixture(scope="module")
def faults():
    return load("faults.cu")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ------------------------------------------------------------------------------------------ basics
def test_vec_add_grid_stride(basics, rng):
    n = 10007  # more elements than threads: every thread loops
    a, b = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    basics.get_function("vec_add")((7,), (128,), (a, b, out, np.int64(n)))
    np.testing.assert_array_equal(out, a + b)


@pytest.mark.parametrize("grid,block", [((2, 3, 2), (4, 2, 3)), ((3, 1, 1), (5, 7, 1)), (4, 33)])
def test_grid_and_block_builtins(basics, grid, block):
    g = tuple(grid) + (1,) * (3 - len(grid)) if isinstance(grid, tuple) else (grid, 1, 1)
    b = tuple(block) + (1,) * (3 - len(block)) if isinstance(block, tuple) else (block, 1, 1)
    out = np.full((np.prod(g) * np.prod(b), 12), -1, np.int32)
    basics.get_function("grid_ids")(grid, block, (out,))
    bz, by, bx, tz, ty, tx = np.indices(g[::-1] + b[::-1]).reshape(6, -1)
    expected = np.stack([tx, ty, tz, bx, by, bz] + [np.full_like(tx, v) for v in b + g], axis=1)
    np.testing.assert_array_equal(out, expected)


def test_every_scalar_type(basics):
    out = np.zeros(11)
    vals = (np.bool_(True), np.int8(-5), np.uint8(200), np.int16(-300), np.uint16(60000), np.int32(-70000),
            np.uint32(4000000000), np.int64(-2 ** 40), np.uint64(2 ** 63 + 2 ** 40), np.float32(1.5),
            np.float64(-2.25))
    basics.get_function("scalars")(1, 1, (out,) + vals)
    np.testing.assert_array_equal(out, [float(v) for v in vals])


def test_pointer_tables(basics, rng):
    srcs = [rng.standard_normal(n, dtype=np.float32) for n in (5, 1000, 33)]
    dsts = [np.zeros_like(s) for s in srcs]
    src_table = np.array([s.ctypes.data for s in srcs], np.uint64)
    dst_table = np.array([d.ctypes.data for d in dsts], np.uint64)
    sizes = np.array([s.size for s in srcs], np.int64)
    basics.get_function("scale_tensors")((4, 3), 64, (src_table, dst_table, sizes, np.int32(3), np.float32(-2)))
    for s, d in zip(srcs, dsts):
        np.testing.assert_array_equal(d, -2 * s)


@pytest.mark.parametrize("n", [1003, 4, 3])
def test_float4_vector_loads(basics, rng, n):
    x = rng.standard_normal(n, dtype=np.float32)
    y = np.zeros_like(x)
    basics.get_function("copy_float4")(2, 64, (x, y, np.int32(n)))
    np.testing.assert_array_equal(y, 2 * x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_template_through_name_expressions(basics, rng, dtype):
    x, y = rng.standard_normal(300).astype(dtype), rng.standard_normal(300).astype(dtype)
    expected = dtype(0.5) * x + y
    fn = basics.get_function(f"axpy<{np.dtype(dtype).name.replace('float32', 'float').replace('float64', 'double')}>")
    fn(3, 128, (dtype(0.5), x, y, np.int32(300)))
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert fn.param_types[1] == ("const float*" if dtype == np.float32 else "const double*")


def test_template_needs_name_expression(basics):
    with pytest.raises(sim.SimError, match=r"axpy is a template \(basics.cu:\d+\).*name_expressions"):
        basics.get_function("axpy")
    with pytest.raises(sim.SimError, match="no kernel named 'nope'.*vec_add"):
        basics.get_function("nope")


def test_struct_parameter(basics, rng):
    affine = np.dtype([("n", np.int32), ("scale", np.float32), ("shift", np.float32)])
    x = rng.standard_normal(50, dtype=np.float32)
    y = np.zeros_like(x)
    p = np.array((40, 3.0, 1.0), dtype=affine)[()]
    basics.get_function("affine")(1, 64, (p, x, y))
    np.testing.assert_allclose(y[:40], 3 * x[:40] + 1, rtol=1e-6)
    assert not y[40:].any()


def test_extern_shared_sized_by_launch(basics, rng):
    x = rng.standard_normal(100, dtype=np.float32)
    y = np.zeros_like(x)
    basics.get_function("reverse_dynamic")(1, 128, (x, y, np.int32(100)), shared_mem=100 * 4)
    np.testing.assert_array_equal(y, x[::-1])


def test_extern_shared_at_namespace_scope(basics):
    x = np.arange(3 * 64, dtype=np.int32)
    y = np.zeros_like(x)
    basics.get_function("reverse_global")(3, 64, (x, y), shared_mem=64 * 4)
    np.testing.assert_array_equal(y, x.reshape(3, 64)[:, ::-1].ravel())


def test_noinline_helper_and_included_header(basics):
    x = np.linspace(-2, 2, 41, dtype=np.float32)
    y = np.zeros_like(x)
    basics.get_function("helper_noinline")(1, 64, (x, y, np.int32(41)))
    np.testing.assert_allclose(y, x ** 3 + np.clip(x, 0, 1), rtol=1e-6)


# ------------------------------------------------------------------------------------------ shared memory, barriers
@pytest.mark.parametrize("rows,cols", [(70, 45), (32, 32), (1, 97)])
def test_tiled_transpose(shared, rng, rows, cols):
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.zeros((cols, rows), np.float32)
    shared.get_function("transpose")(((cols + 31) // 32, (rows + 31) // 32), (32, 8), (a, out, np.int32(rows),
                                                                                       np.int32(cols)))
    np.testing.assert_array_equal(out, a.T)


def test_tiled_sgemm_matches_numpy_and_is_fast(shared, rng):
    M, K, N = 128, 96, 80
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    fn = shared.get_function("sgemm_tiled")
    args = (a, b, c, np.int32(M), np.int32(N), np.int32(K))
    fn((N // 16, M // 16), (16, 16), args)  # warm up (first launch starts the worker pool)
    t0 = time.perf_counter()
    fn((N // 16, M // 16), (16, 16), args)
    elapsed = time.perf_counter() - t0
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    # ~10 ms here; the bound only catches a pathological slowdown (e.g. a system call per fiber switch)
    assert elapsed < 2.0, f"128x96 @ 96x80 tiled SGEMM took {elapsed:.3f} s"


def test_tiled_sgemm_awkward_sizes_with_define():
    mod = load("shared.cu", options=("-DTILE=8", "-arch=sm_80", "--use_fast_math"))
    rng = np.random.default_rng(1)
    M, K, N = 37, 29, 41
    a, b = rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    mod.get_function("sgemm_tiled")(((N + 7) // 8, (M + 7) // 8), (8, 8),
                                    (a, b, c, np.int32(M), np.int32(N), np.int32(K)))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", [100, 256, 1024])
def test_block_reduction(shared, rng, block):
    x = rng.standard_normal(5000, dtype=np.float32)
    partial = np.zeros(6, np.float32)
    shared.get_function("block_sum")(6, block, (x, partial, np.int32(x.size)))
    np.testing.assert_allclose(partial.sum(), x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_syncthreads_count_and_or(shared):
    x = np.array([[1] * 64, [-1] * 64, [1] * 10 + [-1] * 54], np.float32).ravel()
    out = np.zeros(9, np.int32)
    shared.get_function("count_positive")(3, 64, (x, out))
    np.testing.assert_array_equal(out.reshape(3, 3), [[64, 1, 1], [0, 0, 0], [10, 0, 1]])


# ------------------------------------------------------------------------------------------ warp collectives
def test_warp_allreduce_xor(warp, rng):
    x = rng.standard_normal(128, dtype=np.float32)
    out = np.zeros_like(x)
    warp.get_function("warp_sum_xor")(2, 64, (x, out))
    np.testing.assert_allclose(out, np.repeat(x.reshape(4, 32).sum(1), 32), rtol=1e-5, atol=1e-5)


def test_warp_reduce_down_double(warp, rng):
    x = rng.standard_normal(96)
    out = np.zeros(3)
    warp.get_function("warp_sum_down")(1, 96, (x, out))
    np.testing.assert_allclose(out, x.reshape(3, 32).sum(1), rtol=1e-12)


@pytest.mark.parametrize("block", [40, 100, 7, 64])
def test_partial_warp_reduction(warp, rng, block):
    rows, n = 3, 123
    x = rng.standard_normal(rows * n, dtype=np.float32)
    out = np.zeros(rows, np.float32)
    warp.get_function("row_sum_partial")(rows, block, (x, out, np.int32(n)))
    np.testing.assert_allclose(out, x.reshape(rows, n).sum(1), rtol=1e-4, atol=1e-4)


def test_ballot_any_all_activemask(warp):
    x = np.ones(96, np.float32)
    x[32:64:3] = -1  # warp 1: some negative
    x[64:] = -1      # warp 2: all negative
    out = np.zeros(12, np.uint32)
    warp.get_function("ballot_positive")(1, 96, (x, out))
    bits = [int("".join("1" if v > 0 else "0" for v in x[w * 32:(w + 1) * 32][::-1]), 2) for w in range(3)]
    np.testing.assert_array_equal(out.reshape(3, 4), [[bits[0], 1, 1, 0xFFFFFFFF], [bits[1], 1, 0, 0xFFFFFFFF],
                                                      [0, 0, 0, 0xFFFFFFFF]])


def test_shfl_up_inclusive_scan(warp, rng):
    x = rng.integers(-50, 50, 64, dtype=np.int32)
    out = np.zeros_like(x)
    warp.get_function("inclusive_scan")(1, 64, (x, out))
    np.testing.assert_array_equal(out, np.cumsum(x.reshape(2, 32), axis=1).ravel())


def test_shfl_width_16_broadcast(warp):
    x = np.arange(64, dtype=np.int64) * 10
    out = np.zeros_like(x)
    warp.get_function("broadcast16")(2, 32, (x, out))
    np.testing.assert_array_equal(out, np.repeat(x[::16], 16))


def test_match_any_and_reduce_add(warp, rng):
    x = rng.integers(0, 3, 32, dtype=np.int32)
    same, total = np.zeros(32, np.uint32), np.zeros(32, np.int32)
    warp.get_function("match_reduce")(1, 32, (x, same, total))
    expected = [sum(1 << j for j in range(32) if x[j] == x[i]) for i in range(32)]
    np.testing.assert_array_equal(same, expected)
    np.testing.assert_array_equal(total, np.full(32, x.sum()))


def test_syncwarp_branches_and_sub_warp_mask(warp):
    x = np.arange(32, dtype=np.int32)
    out = np.zeros_like(x)
    warp.get_function("syncwarp_split")(1, 32, (x, out))
    v = x[::-1].copy()
    expected = v.copy()
    expected[:8] = v[:8] + v[np.arange(8) ^ 1]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("rows,cols,block", [(33, 1000, 256), (8, 37, 96), (3, 4096, 1024)])
def test_softmax_rows_block_reductions(warp, rng, rows, cols, block):
    x = rng.standard_normal((rows, cols), dtype=np.float32) * 5
    y = np.zeros_like(x)
    warp.get_function("softmax_rows")(rows, block, (x, y, np.int32(cols)))
    e = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------------------------------ atomics
def test_histogram_shared_and_global_atomics(atomics, rng):
    x = rng.integers(0, 37, 20000, dtype=np.int32)
    bins = np.zeros(37, np.uint32)
    atomics.get_function("histogram")(8, 128, (x, bins, np.int32(x.size), np.int32(37)), shared_mem=37 * 4)
    np.testing.assert_array_equal(bins, np.bincount(x, minlength=37))


def test_float_and_double_atomic_add(atomics, rng):
    x = rng.standard_normal(10000, dtype=np.float32)
    bucket = rng.integers(0, 5, x.size, dtype=np.int32)
    sums, dsums = np.zeros(5, np.float32), np.zeros(5)
    atomics.get_function("float_sums")(16, 64, (x, bucket, sums, dsums, np.int32(x.size)))
    expected = np.bincount(bucket, weights=x.astype(np.float64), minlength=5)
    np.testing.assert_allclose(dsums, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sums, expected, rtol=1e-3, atol=1e-3)


def test_atomic_min_max_and_cas(atomics, rng):
    x = rng.integers(-10 ** 6, 10 ** 6, 5000, dtype=np.int32)
    mx, mn, umx = np.array([-2 ** 31], np.int32), np.array([2 ** 31 - 1], np.int32), np.zeros(1, np.uint64)
    atomics.get_function("extremes")(4, 128, (x, mx, mn, umx, np.int32(x.size)))
    assert (mx[0], mn[0]) == (x.max(), x.min())
    assert umx[0] == max((int(v) * 3) % 2 ** 64 for v in x)
    f = rng.standard_normal(3000, dtype=np.float32)
    out = np.array([-np.inf], np.float32)
    atomics.get_function("cas_max_float")(4, 128, (f, out, np.int32(f.size)))
    assert out[0] == f.max()


def test_atomic_inc_wraps_and_exch(atomics):
    counter, last, seen = np.zeros(1, np.uint32), np.zeros(1, np.int32), np.zeros(10, np.int32)
    atomics.get_function("ticket")(1, 25, (counter, last, seen))
    np.testing.assert_array_equal(seen, [3] * 5 + [2] * 5)  # tickets 0..9, 0..9, 0..4
    assert counter[0] == 5 and last[0] == 1


# ------------------------------------------------------------------------------------------ faults
@pytest.mark.parametrize("kernel,grid,block,args,line,pattern", [
    ("divergent_barrier", 1, 32, lambda: (np.zeros(32, np.float32),), 6,
     r"divergent __syncthreads in block \(0,0,0\).*faults.cu:6.*faults.cu:9"),
    ("exit_before_barrier", 1, 32, lambda: (np.zeros(32, np.float32), np.int32(20)), 17,
     r"20 threads wait at __syncthreads \(faults.cu:17\) but 12 threads have exited \(first: thread \(20,0,0\)\)"),
    ("shuffle_absent_lane", 1, 40, lambda: (np.zeros(40, np.float32), np.zeros(2, np.float32)), 24,
     r"__shfl_down_sync at faults.cu:24: lane 0 of warp 1 .* reads lane 16, which does not exist"),
    ("shuffle_exited_lane", 1, 32, lambda: (np.zeros(32, np.float32), np.zeros(32, np.float32), np.int32(5)), 31,
     r"__shfl_xor_sync at faults.cu:31: lane 4 of warp 0 .* reads lane 5, which has already exited"),
    ("shuffle_outside_mask", 1, 16, lambda: (np.zeros(16, np.int32), np.zeros(16, np.int32)), 36,
     r"lane 15 of warp 0 .* reads lane 16, which does not exist \(the block has 16 threads"),
    ("shuffle_outside_mask", 1, 32, lambda: (np.zeros(32, np.int32), np.zeros(32, np.int32)), 36,
     r"lane 15 of warp 0 .* reads lane 16, which is not in the mask 0x0000ffff"),
    ("warp_waits_for_barrier", 1, 32, lambda: (np.zeros(32, np.float32),), 44,
     r"deadlock .*lane 1 of warp 0 .* waits at __shfl_sync \(faults.cu:44\) for lane 0 .* __syncthreads "
     r"\(faults.cu:42\)"),
    ("failing_assert", 2, 8, lambda: (np.array([0] * 11 + [-1] + [0] * 4, np.int32),), 49,
     r"assertion failed: x\[blockIdx.x \* blockDim.x \+ threadIdx.x\] >= 0 at faults.cu:49 "
     r"\(thread \(3,0,0\), block \(1,0,0\)\)"),
    ("trap_on_negative", 1, 8, lambda: (np.array([0, 0, -1, 0, 0, 0, 0, 0], np.int32),), 53,
     r"__trap\(\) called at faults.cu:53 \(thread \(2,0,0\)"),
    ("mask_without_self", 1, 2, lambda: (np.zeros(2, np.int32),), 57,
     r"__ballot_sync at faults.cu:57: lane 1 of warp 0 .* mask 0x00000001, which does not include the calling lane"),
    ("bad_width", 1, 32, lambda: (np.zeros(32, np.int32),), 61, r"width 12 is not a power of 2"),
])
def test_faults_name_kernel_and_line(faults, kernel, grid, block, args, line, pattern):
    fn = faults.get_function(kernel)
    with pytest.raises(sim.SimError, match=pattern) as info:
        fn(grid, block, args())
    assert str(info.value).startswith(kernel + ": ")
    assert (info.value.kernel, info.value.line) == (kernel, line)


def test_module_keeps_working_after_a_fault(faults, basics):
    with pytest.raises(sim.SimError):
        faults.get_function("divergent_barrier")(4, 256, (np.zeros(256, np.float32),))
    test_vec_add_grid_stride(basics, np.random.default_rng(3))
    x = np.zeros(32, np.float32)
    faults.get_function("exit_before_barrier")(1, 32, (x, np.int32(32)))  # no thread exits early: fine
    np.testing.assert_array_equal(x, np.full(32, 2.0))


# ------------------------------------------------------------------------------------------ typed launches
def test_plain_python_int_is_rejected(basics):
    a = np.zeros(4, np.float32)
    with pytest.raises(sim.SimArgumentError, match=r"vec_add \(basics.cu:\d+\): argument 3 expects long long int "
                                                   r"\(np.int64\), got a plain Python int \(4\).*np.int64\(4\)") as e:
        basics.get_function("vec_add")(1, 32, (a, a, a, 4))
    assert isinstance(e.value, TypeError) and isinstance(e.value, sim.SimError)
    assert e.value.kernel == "vec_add" and e.value.line > 0


@pytest.mark.parametrize("value,given", [(np.int32(4), "np.int32"), (np.float64(4), "np.float64"),
                                         (4.0, "Python float"), (True, "Python bool")])
def test_scalar_type_mismatch(basics, value, given):
    a = np.zeros(4, np.float32)
    with pytest.raises(sim.SimArgumentError, match=f"argument 3 expects long long int.*{given}"):
        basics.get_function("vec_add")(1, 32, (a, a, a, value))
    with pytest.raises(sim.SimArgumentError, match=f"scale_tensors .*argument 4 expects float .np.float32.*{given}"):
        t = np.zeros(1, np.uint64)
        basics.get_function("scale_tensors")(1, 1, (t, t, np.zeros(1, np.int64), np.int32(0), value))


def test_pointer_arguments_are_checked(basics):
    a, d = np.zeros(4, np.float32), np.zeros(4)
    fn = basics.get_function("vec_add")
    with pytest.raises(sim.SimArgumentError, match="argument 2 expects float\\*.*array of float64"):
        fn(1, 32, (a, a, d, np.int64(4)))
    with pytest.raises(sim.SimArgumentError, match="argument 0 .*None.*np.uint64\\(0\\)"):
        fn(1, 32, (None, a, a, np.int64(4)))
    with pytest.raises(sim.SimArgumentError, match="the kernel takes 4 arguments .* got 3"):
        fn(1, 32, (a, a, a))
    with pytest.raises(sim.SimArgumentError, match="argument 0 expects const float\\* const\\*.*uint64 addresses"):
        basics.get_function("scale_tensors")(1, 1, (a, a, np.zeros(1, np.int64), np.int32(0), np.float32(1)))


def test_raw_addresses_and_null_pointers(basics, rng):
    a, b = rng.standard_normal(8, dtype=np.float32), rng.standard_normal(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    basics.get_function("vec_add")(1, 8, (np.uint64(a.ctypes.data), b, out, np.int64(8)))
    np.testing.assert_array_equal(out, a + b)
    basics.get_function("vec_add")(1, 8, (np.uint64(0), np.uint64(0), np.uint64(0), np.int64(0)))


@pytest.mark.parametrize("grid,block,pattern", [
    (1, 1025, "invalid configuration argument.*block \\(1025,1,1\\)"),
    (1, (64, 32), "invalid configuration argument"),
    (1, (1, 1, 65), "invalid configuration argument"),
    (0, 32, "invalid configuration argument: grid \\(0, 1, 1\\)"),
    ((1, 70000), 32, "invalid configuration argument"),
])
def test_invalid_launch_configuration(basics, grid, block, pattern):
    a = np.zeros(4, np.float32)
    with pytest.raises(sim.SimError, match=pattern):
        basics.get_function("vec_add")(grid, block, (a, a, a, np.int64(0)))


def test_grid_and_block_types(basics):
    a = np.zeros(4, np.float32)
    fn = basics.get_function("vec_add")
    fn([1], [32, 1], (a, a, a, np.int64(4)))
    with pytest.raises(sim.SimArgumentError, match="block must be an int or a tuple"):
        fn(1, (32, "1"), (a, a, a, np.int64(4)))
    with pytest.raises(sim.SimArgumentError, match="args must be a tuple"):
        fn(1, 32, a)


def test_dynamic_shared_memory_limit(basics):
    x = np.zeros(4, np.float32)
    fn = load("basics.cu", name_expressions=("axpy<float>", "axpy<double>")).get_function("reverse_dynamic")
    with pytest.raises(sim.SimError, match="asks for 65536 bytes .* limit is 49152.*max_dynamic_shared_size_bytes"):
        fn(1, 4, (x, x, np.int32(4)), shared_mem=65536)
    fn.max_dynamic_shared_size_bytes = 100 * 1024
    fn(1, 4, (x, x, np.int32(4)), shared_mem=65536)
    with pytest.raises(sim.SimError, match="between 0 and 232448"):
        fn.max_dynamic_shared_size_bytes = 300 * 1024


def test_concurrent_launches_from_python_threads(basics):
    fn = basics.get_function("vec_add")
    errors = []

    def worker(seed):
        r = np.random.default_rng(seed)
        for _ in range(10):
            a, b = r.standard_normal(3000, dtype=np.float32), r.standard_normal(3000, dtype=np.float32)
            out = np.zeros_like(a)
            fn(4, 128, (a, b, out, np.int64(a.size)))
            if not np.array_equal(out, a + b):
                errors.append(seed)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_launch_in_forked_child(basics):
    fn = basics.get_function("vec_add")
    a = np.arange(1000, dtype=np.float32)
    out = np.zeros_like(a)
    fn(8, 128, (a, a, out, np.int64(a.size)))  # the parent's worker pool exists before the fork
    pid = os.fork()
    if pid == 0:  # the child has no pool threads: it must start its own
        out[:] = 0
        fn(8, 128, (a, a, out, np.int64(a.size)))
        os._exit(0 if np.array_equal(out, 2 * a) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


# ------------------------------------------------------------------------------------------ building and caching
def test_compile_error_names_file_and_line():
    src = "extern \"C\" __global__ void broken(float* x) {\n    x[0] = undefined_name;\n}\n"
    with pytest.raises(sim.SimCompileError, match=r"broken.cu:2:\d+: error: .undefined_name."):
        sim.SimModule(code=src, filename="broken.cu").get_function("broken")


def test_kernel_discovery():
    src = textwrap.dedent("""\
        // __global__ void in_a_comment() {}
        #define UNARY(name, expr) extern "C" __global__ void name(float* x) { x[threadIdx.x] = expr; }
        UNARY(set_one, 1.0f)
        UNARY(set_two, 2.0f)
        extern "C" {
        __global__ void __launch_bounds__(64) in_block(float* x);
        __global__ void __launch_bounds__(64) in_block(float* x) { x[threadIdx.x] = 3.0f; }
        }
        namespace ns {
        extern "C" __global__ void in_namespace(float* x) { x[threadIdx.x] = 4.0f; }
        __global__ void cpp_linkage(float* x) { x[threadIdx.x] = 5.0f; }
        }
        const char* s = "__global__ void in_a_string()";
        """)
    mod = sim.SimModule(code=src, name_expressions=("ns::cpp_linkage",), filename="disc.cu")
    mod.compile()
    assert sorted(mod._library.exports) == ["in_block", "in_namespace", "ns::cpp_linkage", "set_one", "set_two"]
    for name, value in [("set_one", 1), ("set_two", 2), ("in_block", 3), ("in_namespace", 4),
                        ("ns::cpp_linkage", 5)]:
        x = np.zeros(4, np.float32)
        mod.get_function(name)(1, 4, (x,))
        np.testing.assert_array_equal(x, value)
    assert mod.get_function("set_two")._location == "disc.cu:4"
    with pytest.raises(sim.SimError, match="cpp_linkage has C\\+\\+ linkage"):
        sim.SimModule(code=src).get_function("cpp_linkage")


def test_compile_cache_in_memory_and_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(tmp_path / "cache"))
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "value.cuh").write_text("#define VALUE 7\n")
    src = '#include "value.cuh"\nextern "C" __global__ void put(int* x) { x[threadIdx.x] = VALUE; }\n'
    compiles = []
    real_compile = builder._compile
    monkeypatch.setattr(builder, "_compile", lambda *a: compiles.append(1) or real_compile(*a))

    def run():
        x = np.zeros(2, np.int32)
        sim.SimModule(code=src, include_dirs=(inc,)).get_function("put")(1, 2, (x,))
        return x[0]

    assert run() == 7 and len(compiles) == 1
    assert run() == 7 and len(compiles) == 1          # in memory
    monkeypatch.setattr(builder, "_loaded", {})
    assert run() == 7 and len(compiles) == 1          # from disk
    assert list((tmp_path / "cache" / "sim").glob("mod-*.so"))
    (inc / "value.cuh").write_text("#define VALUE 9\n")
    monkeypatch.setattr(builder, "_loaded", {})
    assert run() == 9 and len(compiles) == 2          # an included header changed: rebuilt


_UCONTEXT_CHILD = """
import numpy as np
from minitorch_gpu.backends.cuda import sim
mod = sim.SimModule(path={path!r}, include_dirs=({inc!r},))
x = np.arange(96, dtype=np.float32)
out = np.zeros_like(x)
mod.get_function("warp_sum_xor")(1, 96, (x, out))
assert np.allclose(out, np.repeat(x.reshape(3, 32).sum(1), 32)), out
try:
    sim.SimModule(path={faults!r}).get_function("divergent_barrier")(1, 32, (out,))
except sim.SimError as e:
    assert e.line == 6, e
else:
    raise AssertionError("no fault reported")
print("ok")
"""


def test_portable_ucontext_switch(tmp_path):
    # The x86-64 assembly switch is the default; other machines use ucontext. Run that path too.
    code = _UCONTEXT_CHILD.format(path=str(KERNELS / "warp.cu"), inc=str(KERNELS), faults=str(KERNELS / "faults.cu"))
    env = dict(os.environ, MINITORCH_GPU_SIM_UCONTEXT="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
