"""Random sampling: Generator objects and seeding, the sampling factories (rand, randn, randint, randperm,
normal, bernoulli, multinomial, the ``*_like`` forms) and the in-place samplers (uniform_, normal_,
bernoulli_, random_, exponential_, cauchy_, log_normal_, geometric_).

Every draw comes from a Generator's counter-based Philox stream (see ``backends/_random.py``): a generator
is a 64-bit seed plus an offset in blocks; a draw reads blocks from the offset on and moves the offset past
them. CPU and CUDA default generators start from the same seed, so with equal seeds and offsets both
devices draw the same numbers. Samples are not differentiable with respect to their parameters (PyTorch
gives zero gradients); the in-place samplers record a node whose gradient for the old value is zero.
"""
import contextlib
import inspect
import os
import struct
import sys
import threading

from .. import _dtype
from .._device import device as _device_cls
from ..autograd.node import Op, bump_version
from ..autograd.grad_mode import _state
from ..backends import get_backend
from ..backends.cuda import device as _cuda
from ..tensor import Tensor
from ..autograd._inplace import apply_inplace
from ._util import broadcast_shapes, check_same_device, is_expandable_to, write_out
from .creation import _out_defaults, _resolve, pinned_new, size_arg, tensor, write_factory_out

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "fork_rng", "rand", "randn", "randint", "randperm", "normal", "bernoulli",
           "multinomial", "rand_like", "randn_like", "randint_like", "random"]

# PyTorch's default seed, so an unseeded program is as reproducible here as there
_DEFAULT_SEED = 67280421310721
_MASK64 = (1 << 64) - 1
_STATE_BYTES = 16  # seed and offset, both uint64 little-endian (the layout of PyTorch's Philox states)


def _check_seed(seed):
    if not isinstance(seed, int):
        if hasattr(seed, "__index__") and not isinstance(seed, float):
            seed = seed.__index__()
        else:
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    if not -(1 << 63) <= seed <= _MASK64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _MASK64  # negative seeds map to their two's complement, as in PyTorch


def _fresh_seed():
    """A non-deterministic 64-bit seed."""
    return int.from_bytes(os.urandom(8), "little")


class Generator:
    """A source of random numbers for one device: a 64-bit seed and a position (offset) in its Philox stream.

    Pass one as ``generator=`` to a sampling function to draw from it instead of the device's default
    generator. Two generators with the same seed give the same numbers, and drawing from one never moves
    another; ``get_state()``/``set_state()`` save and restore the position."""

    def __init__(self, device="cpu"):
        d = _device_cls(device)
        d = get_backend(d).device if d.type == "cuda" else _device_cls("cpu")
        self._device = d
        self._seed = _DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()
        self._graph = None  # under CUDA-graph capture: [device state array, blocks claimed since capture began]

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        """Seed the generator (and restart its stream); returns the generator."""
        s = _check_seed(seed)
        with self._lock:
            self._seed = s
            self._offset = 0
        return self

    def seed(self):
        """Seed from a non-deterministic source; returns the seed used."""
        s = _fresh_seed()
        self.manual_seed(s)
        return s

    def initial_seed(self):
        """The seed the stream started from."""
        return self._seed

    def get_state(self):
        """The state as a CPU uint8 tensor (seed and offset) for ``set_state``."""
        with self._lock:
            raw = struct.pack("<QQ", self._seed, self._offset)
        return tensor(list(raw), dtype=_dtype.uint8, device="cpu")

    def set_state(self, new_state):
        """Restore a state from ``get_state()``; returns the generator."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a minitorch_gpu.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not _dtype.uint8:
            raise TypeError("RNG state must be a minitorch_gpu.ByteTensor")
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected a Philox generator state of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {new_state.numel()}")
        raw = new_state._be.to_numpy(new_state._data).tobytes()
        s, off = struct.unpack("<QQ", raw)
        with self._lock:
            self._seed = s
            self._offset = off
        return self

    def get_offset(self):
        """The position in the stream, in 128-bit blocks."""
        return self._offset

    def set_offset(self, offset):
        """Move to a position in the stream (in blocks); returns the generator."""
        if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= _MASK64:
            raise RuntimeError(f"offset must be an integer in [0, 2**64), got {offset!r}")
        with self._lock:
            self._offset = offset
        return self

    def clone_state(self):
        """A new generator at the same seed and position."""
        g = Generator.__new__(Generator)
        g._device = self._device
        g._lock = threading.Lock()
        g._graph = None
        with self._lock:
            g._seed, g._offset = self._seed, self._offset
        return g

    def _draw(self, fn, *args, **kwargs):
        """Run a backend sampling primitive ``fn(seed, offset, *args, **kwargs)`` and move past the blocks it
        used. Under CUDA-graph capture a primitive that takes ``rng_state`` gets the graph's device copy of this
        generator's state and an offset relative to it; one that does not runs as usual, and the capture refuses
        it."""
        with self._lock:
            g = self._graph
            if g is not None and "rng_state" in inspect.signature(fn).parameters:
                arr, used = fn(self._seed, g[1], *args, rng_state=g[0], **kwargs)
                g[1] += used
                return arr
            arr, used = fn(self._seed, self._offset, *args, **kwargs)
            self._offset = (self._offset + used) & _MASK64
        return arr

    def _claim(self, nblocks):
        """(seed, offset, rng_state) of the next ``nblocks`` blocks, moving past them: for an op that draws inside
        its own kernel and replays the same blocks later (dropout regenerates its mask in backward from these).
        ``rng_state`` is None, or under CUDA-graph capture the graph's device copy of this generator's state (the
        offset is then relative to it)."""
        with self._lock:
            g = self._graph
            if g is not None:
                offset = g[1]
                g[1] += nblocks
                return self._seed, offset, g[0]
            seed, offset = self._seed, self._offset
            self._offset = (offset + nblocks) & _MASK64
        return seed, offset, None

    # ------------------------------------------------------------------ CUDA-graph capture
    # PyTorch's scheme: during capture the kernels read the seed and the offset from a small device array that the
    # graph owns (``state``: two uint64) and take their own offsets relative to it; the generator counts the blocks
    # the captured work claims, and before each replay writes its current seed and offset into the array and moves
    # past those blocks. A replayed step so draws exactly what the same step run eagerly would.
    def _graph_begin(self, state):
        """Start handing ``state`` (a device array of two uint64) to the draws of a capture."""
        with self._lock:
            if self._graph is not None:
                raise RuntimeError(f"{self!r} is already registered with a CUDA graph capture under way")
            self._graph = [state, 0]

    def _graph_end(self):
        """End the capture's use of this generator: the blocks its work claimed (each replay's advance)."""
        with self._lock:
            g, self._graph = self._graph, None
        return 0 if g is None else g[1]

    def _graph_replay(self, be, state, nblocks):
        """Before a replay: the current seed and offset into ``state`` (on ``be``'s device), and move past the
        ``nblocks`` blocks the replay draws."""
        with self._lock:
            be.set_graph_rng_state(state, self._seed, self._offset)
            self._offset = (self._offset + nblocks) & _MASK64

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self._seed, self._offset))

    def __repr__(self):
        return f"<minitorch_gpu.Generator device={self._device} seed={self._seed} offset={self._offset}>"


def _rebuild_generator(device, seed, offset):
    g = Generator(device)
    g._seed, g._offset = seed, offset
    return g


default_generator = Generator("cpu")
_cuda_generators: dict[int, Generator] = {}
# the seed last given to every CUDA generator; default generators created later start from it
_cuda_seed = [None]


def cuda_default_generator(index):
    """The default generator of GPU ``index`` (created on first use)."""
    g = _cuda_generators.get(index)
    if g is None:
        g = Generator(_device_cls("cuda", index))
        if _cuda_seed[0] is not None:
            g.manual_seed(_cuda_seed[0])
        _cuda_generators[index] = g
    return g


def seed_cuda_all(s):
    """Seed every CUDA default generator, present and future (a no-op without GPUs, as in PyTorch)."""
    s = _check_seed(s)
    _cuda_seed[0] = s
    for g in _cuda_generators.values():
        g.manual_seed(s)


def manual_seed(seed):
    """Seed the default generators of every device; returns the CPU default generator."""
    seed = _check_seed(int(seed))
    seed_cuda_all(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seed every default generator from a non-deterministic source; returns that seed."""
    s = default_generator.seed()
    seed_cuda_all(s)
    return s


def initial_seed():
    """The initial seed of the CPU default generator."""
    return default_generator.initial_seed()


def get_rng_state():
    """The CPU default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the CPU default generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Inside the block, draws do not disturb the default generators: their states (CPU and the given CUDA
    devices, all of them by default) are restored on exit."""
    if not enabled:
        yield
        return
    if devices is None:
        indices = list(range(_cuda.device_count())) if _cuda.is_available() else []
    else:
        indices = []
        for d in devices:
            d = _device_cls(d) if not isinstance(d, int) else _device_cls("cuda", d)
            indices.append(d.index if d.index is not None else _cuda.current_device())
    cpu_state = default_generator.get_state()
    gpu_states = [(i, cuda_default_generator(i).get_state()) for i in indices]
    try:
        yield
    finally:
        default_generator.set_state(cpu_state)
        for i, st in gpu_states:
            cuda_default_generator(i).set_state(st)


# ---------------------------------------------------------------------- helpers

def _generator(generator, be):
    if generator is None:
        dev = be.device
        return default_generator if dev.type == "cpu" else cuda_default_generator(dev.index)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a minitorch_gpu.Generator, not {type(generator).__name__}")
    if generator._device.type != be.device.type:
        raise RuntimeError(f"Expected a '{be.device.type}' device type for generator but found "
                           f"'{generator._device.type}'")
    return generator


def _require_float(dt, kernel):
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._scalar_name}'")


def _check_grad_dtype(dt, requires_grad):
    # checked before drawing, so a refused call leaves the generator where it was
    if requires_grad and not dt.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def _finish(t, out, fn, requires_grad, pin_memory=False):
    if out is not None:
        return write_factory_out(t, out, fn)
    if pin_memory:
        t = pinned_new(t)
    if requires_grad:
        t._requires_grad = True
    return t


def _num(x, name):
    """A Python number from a number or a one-element tensor."""
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, (int, float)):
        return x
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"{name} must be a number, not {type(x).__name__}")


def _int(x, fn, name):
    if isinstance(x, bool) or isinstance(x, float) or not hasattr(x, "__index__"):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(x).__name__}")
    return x.__index__()


def _g(v):
    """A number as PyTorch's messages print it (C++ stream formatting)."""
    return f"{v:g}" if isinstance(v, float) else str(v)


_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
              "float64": 1.7976931348623157e308}
_INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-(1 << 15), (1 << 15) - 1),
              "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1), "bool": (0, 1)}
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _check_int_bounds(low, high, dt):
    """PyTorch's check that [low, high) fits an integer dtype."""
    if dt.is_floating_point:
        return
    lo, hi = _INT_RANGE[dt.name]
    # PyTorch names the type as typeid spells it ("short int")
    name = dt._cpp_typeid_name
    if low < lo or low > hi:
        raise RuntimeError(f"from is out of bounds for {name}")
    if high - 1 < lo or high - 1 > hi:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")


class _SampleOp(Op):
    """A sample drawn in forward (by the ``draw`` closure); its gradient is zero for every input."""

    def forward(self, *tensors, draw):
        self.metas = [(t._data.shape, t._data.dtype, t._be) for t in tensors]
        return draw()

    def backward(self, g):
        return tuple(Tensor._make(be.zeros(shape, npd), be) if need else None
                     for (shape, npd, be), need in zip(self.metas, self.needs_input_grad))


def _node(name):
    return type(name, (_SampleOp,), {"__doc__": f"Node of a sampling op ({name}): zero gradients."})


NormalBackward0 = _node("NormalBackward0")  # normal_
NormalBackward1 = _node("NormalBackward1")  # normal(Tensor mean, float std)
NormalBackward2 = _node("NormalBackward2")  # normal(float mean, Tensor std)
NormalBackward3 = _node("NormalBackward3")  # normal(Tensor mean, Tensor std)
UniformBackward0 = _node("UniformBackward0")
BernoulliBackward0 = _node("BernoulliBackward0")  # bernoulli(Tensor p)
BernoulliBackward1 = _node("BernoulliBackward1")  # bernoulli_(Tensor p)
BernoulliBackward2 = _node("BernoulliBackward2")  # bernoulli_(float p)
RandomBackward0 = _node("RandomBackward0")  # random_(from, to)
RandomBackward1 = _node("RandomBackward1")  # random_(to)
RandomBackward2 = _node("RandomBackward2")  # random_()
ExponentialBackward0 = _node("ExponentialBackward0")
CauchyBackward0 = _node("CauchyBackward0")
LogNormalBackward0 = _node("LogNormalBackward0")
GeometricBackward0 = _node("GeometricBackward0")


def _drawer(gen, fn, *args):
    """``draw(out=None)`` for ``_sample_inplace``: the sample ``fn(*args)`` from ``gen``, into ``out`` if given."""
    return lambda out=None: gen._draw(fn, *args, out=out)


def _sample_inplace(self, node, draw, *tensors):
    """Overwrite ``self`` with a sample (computed by ``draw()``, or written into an array by ``draw(out)``),
    through apply_inplace so that autograd sees the write; ``tensors`` are further inputs of the node (a
    probability tensor)."""
    if not (_state.grad and (self.requires_grad or any(t.requires_grad for t in tensors))):
        # nothing to record: the sampler writes straight into self's memory, with no full-size temporary
        self._check_inplace()
        draw(self._data)
        bump_version(self)
        return self
    return apply_inplace(self, lambda x, *ts: node.apply(x, *ts, draw=draw), *tensors, keeps_self=False)


# ---------------------------------------------------------------------- factories

def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False, **kwargs):
    """Samples uniform on [0, 1) of the given shape (default float dtype)."""
    shape = size_arg(size, kwargs, "rand")
    dtype, device = _out_defaults(out, dtype, device, "rand")
    be, dt = _resolve(dtype, device)
    _require_float(dt, "check_uniform_bounds")
    npd = be.np_dtype(dt)
    gen = _generator(generator, be)
    t = Tensor._make(gen._draw(be.rand_uniform, shape, npd), be)
    return _finish(t, out, "rand", requires_grad, pin_memory)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, **kwargs):
    """Standard normal samples of the given shape (default float dtype)."""
    shape = size_arg(size, kwargs, "randn")
    dtype, device = _out_defaults(out, dtype, device, "randn")
    be, dt = _resolve(dtype, device)
    _require_float(dt, "normal_kernel")
    npd = be.np_dtype(dt)
    gen = _generator(generator, be)
    t = Tensor._make(gen._draw(be.rand_normal, shape, npd), be)
    return _finish(t, out, "randn", requires_grad, pin_memory)


def _randint_bounds(low, high, fn):
    low, high = _int(low, fn, "low"), _int(high, fn, "high")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return low, high


def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False, low=None, high=None):
    """Integers uniform in [low, high) (low defaults to 0): ``randint(high, size)`` or
    ``randint(low, high, size)``; int64 unless ``dtype`` is given."""
    pos = list(args)
    if size is None and pos and isinstance(pos[-1], (tuple, list)):
        size = pos.pop()
    if size is None:
        if pos:
            raise TypeError(f"randint(): argument 'size' (position {len(pos)}) must be tuple of ints, not "
                            f"{type(pos[-1]).__name__}")
        raise TypeError("randint() missing required argument 'size'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    if len(pos) == 2:
        low, high = pos
    elif len(pos) == 1:
        if high is None:
            high = pos[0]
        else:
            low = pos[0]
    elif len(pos) > 2:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args)} given)")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low, high = _randint_bounds(0 if low is None else low, high, "randint")
    shape = size_arg((size,), None, "randint")
    if dtype is None and out is None:
        dtype = _dtype.int64
    dtype, device = _out_defaults(out, dtype, device, "randint")
    be, dt = _resolve(dtype, device)
    _check_int_bounds(low, high, dt)
    _check_grad_dtype(dt, requires_grad)
    npd = be.np_dtype(dt)
    gen = _generator(generator, be)
    t = Tensor._make(gen._draw(be.rand_int, shape, low, high, npd), be)
    return _finish(t, out, "randint", requires_grad, pin_memory)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` is given)."""
    n = _int(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dtype is None and out is None:
        dtype = _dtype.int64
    dtype, device = _out_defaults(out, dtype, device, "randperm")
    be, dt = _resolve(dtype, device)
    if not dt.is_floating_point and n > 0 and n - 1 > _INT_RANGE[dt.name][1]:
        raise RuntimeError(f"value cannot be converted to type {dt._cpp_name} without overflow")
    _check_grad_dtype(dt, requires_grad)
    npd = be.np_dtype(dt)
    gen = _generator(generator, be)
    t = Tensor._make(gen._draw(be.rand_perm, n, npd), be)
    return _finish(t, out, "randperm", requires_grad, pin_memory)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    """Normal samples: ``normal(mean_tensor, std_tensor)`` (broadcast together), ``normal(mean_tensor,
    std=1.0)``, ``normal(mean, std_tensor)`` or ``normal(mean, std, size)`` with numbers."""
    m_t, s_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not m_t and not s_t:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), but "
                            "expected one of: (Tensor mean, Tensor std), (Tensor mean, float std), (float mean, "
                            "Tensor std), (float mean, float std, tuple of ints size)")
        mean, std = float(_num(mean, "mean")), float(_num(std, "std"))
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
        shape = size_arg((size,) if isinstance(size, (tuple, list)) else (size,), None, "normal")
        dtype, device = _out_defaults(out, dtype, device, "normal")
        be, dt = _resolve(dtype, device)
        _require_float(dt, "normal_kernel")
        npd = be.np_dtype(dt)
        gen = _generator(generator, be)
        t = Tensor._make(gen._draw(be.rand_normal, shape, npd, mean, std), be)
        return _finish(t, out, "normal", requires_grad, pin_memory)
    if size is not None:
        raise TypeError("normal(): 'size' is only accepted when mean and std are numbers")
    ref = mean if m_t else std
    be = ref._be
    if m_t and s_t:
        check_same_device(mean, std)
        dt = _dtype.promote_types(mean.dtype, std.dtype)
        shape = broadcast_shapes(mean._data.shape, std._data.shape)
    else:
        dt = ref.dtype
        shape = ref._data.shape
    _require_float(dt, "normal_kernel")
    if s_t:
        if be.any_outside(std._data, 0, float("inf")):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        std = float(_num(std, "std"))
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    if not m_t:
        mean = float(_num(mean, "mean"))
    npd = be.np_dtype(dt)
    gen = _generator(generator, be)
    mean_arg = mean._data if m_t else mean
    std_arg = std._data if s_t else std

    def draw():
        return gen._draw(be.rand_normal, shape, npd, mean_arg, std_arg)

    if m_t and s_t:
        t = NormalBackward3.apply(mean, std, draw=draw)
    elif m_t:
        t = NormalBackward1.apply(mean, draw=draw)
    else:
        t = NormalBackward2.apply(std, draw=draw)
    return write_out(t, out, "normal")


def _check_prob(p):
    p = float(_num(p, "p"))
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_g(p)}")
    return p


def _check_prob_tensor(be, p):
    if be.any_outside(p._data, 0, 1):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")


def bernoulli(input, p=None, *, generator=None, out=None):
    """1 with probability ``input`` (elementwise, in [0, 1]) else 0, in input's dtype; with ``p`` a number,
    every element is drawn with probability ``p`` instead."""
    be = input._be
    npd = input._data.dtype
    shape = input._data.shape
    if p is not None:
        p = _check_prob(p)
        gen = _generator(generator, be)
        t = Tensor._make(gen._draw(be.rand_bernoulli, shape, p, npd), be)
        return write_out(t, out, "bernoulli")
    _require_float(input.dtype, "bernoulli_tensor_p_")
    _check_prob_tensor(be, input)
    gen = _generator(generator, be)
    t = BernoulliBackward0.apply(input, draw=lambda: gen._draw(be.rand_bernoulli, shape, input._data, npd))
    return write_out(t, out, "bernoulli")


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """For each row of non-negative weights, ``num_samples`` category indices (int64) drawn in proportion to
    the weights; without replacement every index of a row is distinct."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype._scalar_name}")
    nd = input._data.ndim
    if nd not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    num_samples = _int(num_samples, "multinomial", "num_samples")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    k = input._data.shape[-1]
    if not replacement and num_samples > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    be = input._be
    probs = input._data if nd == 2 else be.reshape(input._data, (1, k))
    rows = probs.shape[0]
    i64 = be.np_dtype(_dtype.int64)
    if rows == 0:
        res = be.empty((0, num_samples), i64)
    else:
        bad, zero_row = be.prob_check(probs)
        if bad:
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if zero_row:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        gen = _generator(generator, be)
        res = gen._draw(be.rand_multinomial, probs, num_samples, bool(replacement))
    if nd == 1:
        res = be.reshape(res, (num_samples,))
    t = Tensor._make(res, be)
    return write_out(t, out, "multinomial", dtype_error="multinomial expects Long tensor out, got: {out}")


def _like_args(input, dtype, device):
    dt = input.dtype if dtype is None else _dtype.to_dtype(dtype)
    return dt, (input._be.device if device is None else device)


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
              generator=None):
    """Uniform [0, 1) samples with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like_args(input, dtype, device)
    return rand(input._data.shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
               generator=None):
    """Standard normal samples with the shape (and, unless given, dtype and device) of ``input``."""
    dt, dev = _like_args(input, dtype, device)
    return randn(input._data.shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, requires_grad=False,
                 memory_format=None, generator=None):
    """Integers in [low, high) with the shape (and, unless given, dtype and device) of ``input``:
    ``randint_like(x, high)`` or ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    dt, dev = _like_args(input, dtype, device)
    return randint(low, high, input._data.shape, generator=generator, dtype=dt, device=dev,
                   requires_grad=requires_grad)


# ---------------------------------------------------------------------- in-place samplers

def _check_float_bound(v, dt, what):
    if dt.name in _FLOAT_MAX and not (-_FLOAT_MAX[dt.name] <= v <= _FLOAT_MAX[dt.name]):
        raise RuntimeError(f"{what} is out of bounds for {dt._cpp_name}")


def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill with samples uniform on [from_, to), in place."""
    dt = self.dtype
    _require_float(dt, "check_uniform_bounds")
    lo, hi = float(_num(from_, "from")), float(_num(to, "to"))
    _check_float_bound(lo, dt, "from")
    _check_float_bound(hi, dt, "to")
    if lo > hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_g(lo)} > to={_g(hi)}")
    if hi - lo > _FLOAT_MAX[dt.name]:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{dt._cpp_name}>::max(), "
                           f"but found to={_g(hi)} and from={_g(lo)} which result in to-from to exceed the limit")
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, UniformBackward0, _drawer(gen, be.rand_uniform, shape, npd, lo, hi))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples of the given mean and standard deviation, in place."""
    _require_float(self.dtype, "normal_kernel")
    mean, std = float(_num(mean, "mean")), float(_num(std, "std"))
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_g(std)}")
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, NormalBackward0, _drawer(gen, be.rand_normal, shape, npd, mean, std))


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a number, or a tensor broadcasting to self) else 0, in place."""
    be = self._be
    shape, npd = self._data.shape, self._data.dtype
    if isinstance(p, Tensor):
        if not is_expandable_to(p._data.shape, shape):
            raise RuntimeError(f"The expanded size of the tensor ({list(shape)}) must match the existing size "
                               f"({list(p.shape)}) of the probability tensor: cannot broadcast "
                               f"{list(p.shape)} to {list(shape)}")
        _check_prob_tensor(be, p)
        gen = _generator(generator, be)
        check_same_device(self, p)
        return _sample_inplace(self, BernoulliBackward1,
                               _drawer(gen, be.rand_bernoulli, shape, p._data, npd), p)
    pv = _check_prob(p)
    gen = _generator(generator, be)
    return _sample_inplace(self, BernoulliBackward2, _drawer(gen, be.rand_bernoulli, shape, pv, npd))


def random_(self, *args, generator=None, **kwargs):
    """Fill with integers uniform in [from, to), in place: ``random_()`` covers [0, 2**mantissa] for floats
    and the whole non-negative range for integers, ``random_(to)`` is [0, to), ``random_(from, to)``."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    frm = kwargs.pop("from", kwargs.pop("from_", None))
    to = kwargs.pop("to", None)
    if kwargs:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(kwargs)}")
    if len(args) == 2:
        frm, to = args
    elif len(args) == 1:
        to = args[0]  # one positional bound is the exclusive upper one, as in PyTorch
    dt = self.dtype
    if dt.is_floating_point:
        top = (1 << _DIGITS[dt.name]) + 1  # every integer up to 2**digits is exact
    else:
        top = _INT_RANGE[dt.name][1] + 1
    if frm is None and to is None:
        node, low, high = RandomBackward2, 0, top
    elif frm is None:
        node, low, high = RandomBackward1, 0, _int(to, "random_", "to")
    else:
        low = _int(frm, "random_", "from")
        high = top if to is None else _int(to, "random_", "to")
        node = RandomBackward0
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    _check_int_bounds(low, high, dt)
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, node, _drawer(gen, be.rand_int, shape, low, high, npd))


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with exponential samples of rate ``lambd``, in place."""
    if not self.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self.dtype._scalar_name}")
    lambd = float(_num(lambd, "lambd"))
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_g(lambd)}")
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, ExponentialBackward0,
                           _drawer(gen, be.rand_exponential, shape, npd, lambd))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with Cauchy samples (location ``median``, scale ``sigma``), in place."""
    _require_float(self.dtype, "cauchy")
    median, sigma = float(_num(median, "median")), float(_num(sigma, "sigma"))
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_g(sigma)}")
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, CauchyBackward0,
                           _drawer(gen, be.rand_cauchy, shape, npd, median, sigma))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples whose logarithm is normal(mean, std), in place."""
    _require_float(self.dtype, "log_normal")
    mean, std = float(_num(mean, "mean")), float(_num(std, "std"))
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_g(std)}")
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, LogNormalBackward0,
                           _drawer(gen, be.rand_log_normal, shape, npd, mean, std))


def geometric_(self, p, *, generator=None):
    """Fill with the number of Bernoulli(p) trials up to the first success (>= 1), in place."""
    p = float(_num(p, "p"))
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_g(p)}")
    be = self._be
    gen = _generator(generator, be)
    shape, npd = self._data.shape, self._data.dtype
    return _sample_inplace(self, GeometricBackward0, _drawer(gen, be.rand_geometric, shape, npd, p))


METHODS = {
    "uniform_": uniform_, "normal_": normal_, "bernoulli_": bernoulli_, "random_": random_,
    "exponential_": exponential_, "cauchy_": cauchy_, "log_normal_": log_normal_, "geometric_": geometric_,
    "bernoulli": bernoulli, "multinomial": multinomial,
}

# ``mt.random`` is this module (PyTorch's ``torch.random`` holds the seeding functions and fork_rng), also
# importable as ``minitorch_gpu.random``
random = sys.modules[__name__]
sys.modules.setdefault(__name__.rsplit(".", 2)[0] + ".random", random)
