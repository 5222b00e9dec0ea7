"""The CUDA backend: device "cuda" as (array module, kernel runtime).

* real: CuPy arrays on one GPU, our kernels (kernels/*.cu) compiled by NVRTC through ``cupy.RawModule``;
* simulated (``MINITORCH_GPU_SIM=1`` or ``mt.cuda.use_simulator()``): NumPy arrays, the same kernels run by
  the CPU simulator (``minitorch_gpu.cuda.sim.SimModule``).

Both go through one ``Launcher`` (minitorch_gpu/cuda/launch.py): grid sizes, argument packing and pointer
tables are the same code, so CI runs on the simulator what a GPU runs. Each primitive that has a kernel
asks the launcher first and falls back to the array library's built-in when the launcher declines (another
dtype, float16 included; an unsupported layout). ``MINITORCH_GPU_KERNELS=0`` (read when the backend is
created) sends every primitive to the built-ins, for A/B comparisons and bisecting.

On a GPU every primitive runs with the backend's GPU current, so tensors on ``cuda:1`` work while
``cuda:0`` is the current device, as in PyTorch.
"""
import functools
import os

import numpy as np

from .._device import device
from .._dtype import bfloat16
from .base import Backend


def kernels_enabled():
    """False when ``MINITORCH_GPU_KERNELS=0``: CUDA primitives then use the array library's built-ins."""
    return os.environ.get("MINITORCH_GPU_KERNELS", "1").strip() not in ("0", "false", "False", "off")


def _on_device(fn):
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        cp = self.xp
        if cp.cuda.runtime.getDevice() == self.index:
            return fn(self, *args, **kwargs)
        with cp.cuda.Device(self.index):
            return fn(self, *args, **kwargs)
    return wrapper


_INF = float("inf")
# the dtypes the row kernels (cross_entropy.cu, layernorm.cu) are instantiated for
_KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class CudaBackend(Backend):
    """Primitives with a kernel ask ``self.k`` (a Launcher, or None with kernels off) and fall back to the
    built-in body of ``Backend`` when it returns None."""

    name = "cuda"
    k = None

    def _init_cuda(self, index, xp, launcher):
        self.xp = xp
        self.index = index
        self.device = device("cuda", index)
        self.k = launcher if kernels_enabled() else None

    def np_dtype(self, dtype):
        if dtype is bfloat16:
            raise TypeError("bfloat16 is not supported on CUDA devices by the CuPy backend; use float16 or "
                            "float32 on the GPU (bfloat16 works on the CPU with ml_dtypes installed)")
        return Backend.np_dtype(self, dtype)

    def supports(self, dtype):
        return dtype.np_dtype is not None and dtype is not bfloat16

    # ------------------------------------------------------------------ elementwise (elementwise.cu)
    def unary(self, name, x, out=None):
        k = self.k
        if k is not None:
            r = k.unary(name, x, out)
            if r is not None:
                return r
        return Backend.unary(self, name, x, out)

    def binary(self, name, a, b, out=None):
        k = self.k
        if k is not None:
            r = k.binary(name, a, b, out)
            if r is not None:
                return r
        return Backend.binary(self, name, a, b, out)

    def where(self, cond, a, b):
        k = self.k
        if k is not None:
            r = k.where(cond, a, b)
            if r is not None:
                return r
        return Backend.where(self, cond, a, b)

    def clamp(self, x, lo, hi):
        k = self.k
        if k is not None and (lo is not None or hi is not None):
            r = k.ternary("clamp", x, -_INF if lo is None else lo, _INF if hi is None else hi)
            if r is not None:
                return r
        return Backend.clamp(self, x, lo, hi)

    def gelu(self, x, approximate="none"):
        k = self.k
        if k is not None:
            r = k.unary("gelu_tanh" if approximate == "tanh" else "gelu", x)
            if r is not None:
                return r
        return Backend.gelu(self, x, approximate)

    def gelu_backward(self, g, x, approximate="none"):
        k = self.k
        if k is not None and g.dtype == x.dtype:
            r = k.binary("gelu_tanh_backward" if approximate == "tanh" else "gelu_backward", g, x)
            if r is not None:
                return r
        return Backend.gelu_backward(self, g, x, approximate)

    def softplus(self, x, beta=1.0, threshold=20.0):
        k = self.k
        if k is not None:
            r = k.unary("softplus", x, None, float(beta), float(threshold))
            if r is not None:
                return r
        return Backend.softplus(self, x, beta, threshold)

    # ------------------------------------------------------------------ foreach (elementwise.cu, per tensor)
    def foreach_lerp(self, xs, ys, weight, inplace=True):
        k = self.k
        if k is None:
            return Backend.foreach_lerp(self, xs, ys, weight, inplace)
        out = []
        for x, y in zip(xs, ys):
            r = k.ternary("lerp", x, y, float(weight), out=x if inplace else None)
            out.append(r if r is not None else Backend.foreach_lerp(self, [x], [y], weight, inplace)[0])
        return out

    def foreach_addcmul(self, xs, ys, zs, values=1, inplace=False):
        return self._foreach_addc_k("addcmul", xs, ys, zs, values, inplace)

    def foreach_addcdiv(self, xs, ys, zs, values=1, inplace=False):
        return self._foreach_addc_k("addcdiv", xs, ys, zs, values, inplace)

    def _foreach_addc_k(self, name, xs, ys, zs, values, inplace):
        base = Backend.foreach_addcmul if name == "addcmul" else Backend.foreach_addcdiv
        k = self.k
        if k is None:
            return base(self, xs, ys, zs, values, inplace)
        vs = values if isinstance(values, (list, tuple)) else [values] * len(xs)
        if len(vs) != len(xs):
            return base(self, xs, ys, zs, values, inplace)
        out = []
        for x, y, z, v in zip(xs, ys, zs, vs):
            r = k.ternary(name, x, y, z, alpha=float(v), out=x if inplace else None)
            out.append(r if r is not None else base(self, [x], [y], [z], [v], inplace)[0])
        return out


    # ------------------------------------------------------------------ softmax family (softmax.cu)
    def softmax_forward(self, x, axis):
        k = self.k
        if k is not None and x.ndim and axis == x.ndim - 1:
            r = k.softmax(x, False, axis)
            if r is not None:
                return r
        return Backend.softmax_forward(self, x, axis)

    def log_softmax_forward(self, x, axis):
        k = self.k
        if k is not None and x.ndim and axis == x.ndim - 1:
            r = k.softmax(x, True, axis)
            if r is not None:
                return r
        return Backend.log_softmax_forward(self, x, axis)

    def softmax_backward(self, y, g, axis):
        k = self.k
        if k is not None and y.ndim and axis == y.ndim - 1:
            r = k.softmax_backward(y, g, False, axis)
            if r is not None:
                return r
        return Backend.softmax_backward(self, y, g, axis)

    def log_softmax_backward(self, y, g, axis):
        k = self.k
        if k is not None and y.ndim and axis == y.ndim - 1:
            r = k.softmax_backward(y, g, True, axis)
            if r is not None:
                return r
        return Backend.log_softmax_backward(self, y, g, axis)

    # ------------------------------------------------------------------ cross-entropy (cross_entropy.cu)
    # The kernels take 2-D (rows, C) float32/float64 logits; the saved state is the per-row log-sum-exp, and the
    # backward re-reads the logits. Spatial inputs, 2-byte floats and mismatched weights use the base bodies.
    def cross_entropy_forward(self, x, target, weight=None, ignore_index=-100, label_smoothing=0.0, *, tidx=None,
                              mask=None, coef=None):
        k = self.k
        if k is not None and x.ndim == 2 and x.dtype in _KERNEL_FLOATS and (weight is None or weight.dtype == x.dtype):
            r = k.cross_entropy(x, target.reshape(-1), weight, ignore_index, label_smoothing)
            if r is not None:
                loss, _, lse = r
                return loss.reshape(target.shape), {"lse": lse}
        return Backend.cross_entropy_forward(self, x, target, weight, ignore_index, label_smoothing, tidx=tidx,
                                             mask=mask, coef=coef)

    def cross_entropy_backward(self, gout, x, target, weight, ignore_index, label_smoothing, saved, denom=None, *,
                               tidx=None, mask=None):
        k = self.k
        lse = saved.get("lse")
        if k is not None and lse is not None:
            g = gout.reshape(-1) if gout.ndim else gout.reshape(1)
            r = k.cross_entropy_backward(x, target.reshape(-1), weight, lse, g, 1.0 / denom if denom else 1.0,
                                         ignore_index, label_smoothing)
            if r is not None:
                return r
        if lse is not None:
            # the kernel's state is its own: the base body needs the forward's, computed again
            _, saved = Backend.cross_entropy_forward(self, x, target, weight, ignore_index, label_smoothing,
                                                     tidx=tidx, mask=mask)
        return Backend.cross_entropy_backward(self, gout, x, target, weight, ignore_index, label_smoothing, saved,
                                              denom, tidx=tidx, mask=mask)

    # ------------------------------------------------------------------ layer norm (layernorm.cu)
    # The kernels normalise rows of a 2-D float32/float64 array with mean and 1/std saved per row; RMS norm
    # (center=False) and 2-byte floats use the base bodies.
    def layer_norm_forward(self, x, weight=None, bias=None, eps=1e-5, center=True, keep=True):
        k = self.k
        if k is not None and center and x.ndim == 2 and x.dtype in _KERNEL_FLOATS and \
                all(p is None or p.dtype == x.dtype for p in (weight, bias)):
            r = k.layer_norm(x, weight, bias, eps)
            if r is not None:
                y, mean, rstd = r
                # kept dims, so that the base backward can use them too
                return y, {"mean": mean.reshape(-1, 1), "rstd": rstd.reshape(-1, 1)}
        return Backend.layer_norm_forward(self, x, weight, bias, eps, center, keep)

    def layer_norm_backward(self, g, x, weight, saved, center=True, needs=(True, True, True)):
        k = self.k
        mean = saved.get("mean")
        if k is not None and center and mean is not None and g.dtype == x.dtype and \
                (weight is None or weight.dtype == x.dtype):
            nx, nw, nb = needs
            r = k.layer_norm_backward(g, x, weight, mean.reshape(-1), saved["rstd"].reshape(-1), nw, nb)
            if r is not None:
                dx, dw, db = r
                return (dx if nx else None), dw, db
        return Backend.layer_norm_backward(self, g, x, weight, saved, center, needs)

    # ------------------------------------------------------------------ matmul (matmul.cu)
    def matmul(self, a, b, transpose_a=False, transpose_b=False):
        k = self.k
        if k is not None:
            a2 = a.swapaxes(-1, -2) if transpose_a and a.ndim >= 2 else a
            b2 = b.swapaxes(-1, -2) if transpose_b and b.ndim >= 2 else b
            if a2.dtype == np.float32 and self._tf32():
                return self._matmul_tf32(a2, b2)
            r = k.matmul(a2, b2)
            if r is not None:
                return r
        return Backend.matmul(self, a, b, transpose_a, transpose_b)

    def _tf32(self):
        return False

    def _matmul_tf32(self, a, b):
        return Backend.matmul(self, a, b)

    # ------------------------------------------------------------------ fused optimizers (optim.cu)
    def _fused_step(self, step):
        k = self.k
        return k is not None and k.optim_step(step)

    # ------------------------------------------------------------------ random streams (random.cu)
    def philox4x32_10(self, counter, key, n):
        k = self.k
        if k is None:
            return Backend.philox4x32_10(self, counter, key, n)
        return k.philox_words(key, counter, n)

    def rand_uniform(self, seed, offset, shape, np_dtype, low=0.0, high=1.0):
        k = self.k
        if k is not None:
            r = k.uniform(seed, offset, _numel(shape), np.dtype(np_dtype), low, high)
            if r is not None:
                return r[0].reshape(shape), r[1]
        return Backend.rand_uniform(self, seed, offset, shape, np_dtype, low, high)

    def rand_normal(self, seed, offset, shape, np_dtype, mean=0.0, std=1.0):
        k = self.k
        if k is not None and isinstance(mean, (int, float)) and isinstance(std, (int, float)):
            r = k.normal(seed, offset, _numel(shape), np.dtype(np_dtype), float(mean), float(std))
            if r is not None:
                return r[0].reshape(shape), r[1]
        return Backend.rand_normal(self, seed, offset, shape, np_dtype, mean, std)

    def rand_int(self, seed, offset, shape, low, high, np_dtype):
        k = self.k
        if k is not None and high - low <= 1 << 64:
            r, nb = k.randint(seed, offset, _numel(shape), int(low), int(high))
            return r.reshape(shape).astype(np_dtype, copy=False), nb
        return Backend.rand_int(self, seed, offset, shape, low, high, np_dtype)

    # ------------------------------------------------------------------ scatter-add of rows (embedding.cu)
    def add_at(self, a, index, values):
        k = self.k
        if k is not None:
            idx = index[0] if isinstance(index, tuple) and len(index) == 1 else index
            if isinstance(idx, self.xp.ndarray) and isinstance(values, self.xp.ndarray) and \
                    k.embedding_backward(a, idx, values):
                return
        Backend.add_at(self, a, index, values)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class CupyBackend(CudaBackend):
    """Device "cuda:<index>" on a GPU: CuPy arrays, kernels through ``cupy.RawModule``."""

    name = "cupy"

    def __init__(self, index):
        import cupy
        from ..cuda.launch import Launcher
        with cupy.cuda.Device(index):
            sms = cupy.cuda.runtime.getDeviceProperties(index)["multiProcessorCount"]
        # enough resident blocks to fill every SM several times over; grid-stride loops cover the rest
        launcher = Launcher(cupy, cupy.RawModule, lambda a: a.data.ptr, max_blocks=32 * sms)
        self._init_cuda(index, cupy, launcher)

    def to_numpy(self, arr):
        return self.xp.asnumpy(arr)

    def asarray(self, obj, np_dtype=None, copy=False):
        if copy:
            return self.xp.array(obj, dtype=np_dtype, copy=True)
        return self.xp.asarray(obj, dtype=np_dtype)

    def data_ptr(self, arr):
        return arr.data.ptr

    def copy_into(self, dst, src):
        xp = self.xp
        if isinstance(src, xp.ndarray) and xp.may_share_memory(dst, src):
            # CuPy copies element by element in parallel; overlapping source and destination need a buffer
            src = src.copy()
        Backend.copy_into(self, dst, xp.asarray(src) if hasattr(src, "__array__") else src)

    def synchronize(self):
        self.xp.cuda.Device(self.index).synchronize()

    def _tf32(self):
        from . import cuda_flags
        return cuda_flags.matmul.allow_tf32

    def _matmul_tf32(self, a, b):
        """float32 matmul on cuBLAS with TF32 tensor-core math (``mt.backends.cuda.matmul.allow_tf32``)."""
        from cupy_backends.cuda.libs import cublas
        handle = self.xp.cuda.device.get_cublas_handle()
        cublas.setMathMode(handle, cublas.CUBLAS_TF32_TENSOR_OP_MATH)
        try:
            return Backend.matmul(self, a, b)
        finally:
            cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)


def _wrap_all(cls):
    for name in dir(cls):
        if name.startswith("_") or name in ("supports", "np_dtype", "strides", "is_contiguous"):
            continue
        attr = getattr(cls, name)
        if callable(attr):
            setattr(cls, name, _on_device(attr))
    return cls


_wrap_all(CupyBackend)


_SIM_LAUNCHER = []


class SimBackend(CudaBackend):
    """Device "cuda:0" on the CPU simulator: NumPy arrays standing for device memory, kernels through
    ``sim.SimModule``.

    Host and "device" stay apart as on a GPU: moving data onto the device copies (``asarray`` of a NumPy
    array) and reading it back copies (``to_numpy``), so a CPU tensor and its ``.cuda()`` copy never share
    memory. DLPack exports the memory as what it is, host memory (kDLCPU, see ``host_memory``)."""

    name = "cuda-sim"

    def __init__(self, index):
        from ..cuda.launch import Launcher
        launcher = _SIM_LAUNCHER[0] if _SIM_LAUNCHER else None
        if launcher is None:
            try:
                from ..cuda import sim
                sim.SimModule
            except (ImportError, AttributeError):
                pass  # the simulator is not part of this build: built-in NumPy primitives only
            else:
                # a few blocks: the simulator runs them on a small worker pool, grid-stride loops do the rest
                launcher = Launcher(np, sim.SimModule, lambda a: a.__array_interface__["data"][0], max_blocks=8,
                                    upload=np.ascontiguousarray)
                # one per process: tests switch the simulator on and off around every test, and the loaded
                # modules and strided metadata stay valid across backends
                _SIM_LAUNCHER.append(launcher)
        self._init_cuda(index, np, launcher)

    def asarray(self, obj, np_dtype=None, copy=False):
        if copy or isinstance(obj, np.ndarray):
            return np.array(obj, dtype=np_dtype, copy=True)
        return np.asarray(obj, dtype=np_dtype)

    def to_numpy(self, arr):
        return np.array(arr, copy=True)

    # DLPack exports (and __dlpack_device__ reports) this device's arrays as kDLCPU: they are host memory, and a
    # consumer told kDLCUDA would hand a host address to CUDA. Importing a tensor exported this way gives a CPU
    # tensor sharing the memory.
    host_memory = True


def make_cuda_backend(index):
    from .. import cuda
    if cuda.is_simulated():
        return SimBackend(index)
    return CupyBackend(index)
