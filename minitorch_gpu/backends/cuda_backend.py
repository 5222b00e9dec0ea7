"""The CUDA backend: device "cuda" as (array module, kernel runtime).

* real: CuPy arrays on one GPU, our kernels (kernels/*.cu) compiled by NVRTC through ``cupy.RawModule``;
* simulated (``MINITORCH_GPU_SIM=1`` or ``mt.cuda.use_simulator()``): NumPy arrays, the same kernels run by
  the CPU simulator (``backends/cuda/sim``).

Both go through one ``Launcher`` (backends/cuda/launch.py): grid sizes, argument packing and pointer tables are
the same code, so CI runs on the simulator what a GPU runs.

Kernel first, built-in second: ``ROUTES`` below is the one table that says, per primitive, which launcher call
serves it and when that applies. A route's launch returns the result, or None when the kernels decline the
call (an integer dtype, an unsupported layout); the primitive then runs the array library's
built-in body of ``Backend``. ``MINITORCH_GPU_KERNELS=0`` (read when the backend is created) leaves the backend
without kernels, so every primitive takes the built-in, for A/B comparisons and bisecting.

On a GPU every primitive runs with the backend's GPU current, so tensors on ``cuda:1`` work while
``cuda:0`` is the current device, as in PyTorch.
"""
from __future__ import annotations

from abc import ABCMeta, abstractmethod
import functools
import inspect
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np

from .. import _device
from .._dtype import bfloat16
from ._random import dropout_threshold
from .cuda.checks import Check, DeferredChecks, note_sync
from ._types import Array
from .base import Backend
from .cuda import device as _probe
from .cuda import memory as _memory
from .cuda import matmul as _matmul_flags
from .cuda import launch_rnn as _rnn
from .cuda import loader as _loader
from .cuda import sim
from .cuda.fused_step import FusedStep
from .cuda.launch import Launcher

__all__ = ["CudaBackend", "CupyBackend", "SimBackend", "ROUTES", "Route", "kernels_enabled", "make_cuda_backend"]


def kernels_enabled() -> bool:
    """False when ``MINITORCH_GPU_KERNELS=0``: CUDA primitives then use the array library's built-ins."""
    return os.environ.get("MINITORCH_GPU_KERNELS", "1").strip() not in ("0", "false", "False", "off")


_device_cls: Callable[..., Any] = _device.device  # a typed handle on the untyped device class
_INF = float("inf")
# the dtypes the row kernels (cross_entropy.cu, layernorm.cu) are instantiated for
_KERNEL_FLOATS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), bfloat16.np_dtype)

Primitive = Literal[
    "unary", "binary", "where", "clamp", "gelu", "gelu_backward", "softplus",
    "foreach_lerp", "foreach_addcmul", "foreach_addcdiv", "foreach_clamp_", "foreach_norm", "total_norm",
    "foreach_clip_", "amp_unscale_",
    "softmax_forward", "log_softmax_forward", "softmax_backward", "log_softmax_backward",
    "cross_entropy_forward", "cross_entropy_backward", "layer_norm_forward", "layer_norm_backward",
    "matmul", "_fused_step", "philox4x32_10", "rand_uniform", "rand_normal", "rand_int", "rand_dropout", "add_at",
    "attention_forward", "attention_backward",
    "lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"]
"""The primitives of ``Backend`` that the CUDA kernels serve."""

Launch = Callable[..., Any]
"""``launch(backend, kernels, *primitive args)``: the result, or None to decline."""


@dataclass(frozen=True)
class Route:
    """How the kernels serve one primitive.

    ``launch(backend, kernels, *args)`` (the primitive's own arguments) returns the result or None; a route
    whose launcher method takes exactly the primitive's arguments names it instead (``method``), and the
    primitive calls ``kernels.<method>(*args)``. ``when(*args)``, if given, is checked first: a call it rejects
    goes to the built-in without asking the kernels. ``in_place`` primitives return None, as their built-in does,
    after a launch that wrote the result. ``fallback(backend, *args)`` replaces the built-in body of ``Backend``
    when the kernels decline."""

    launch: Launch | None = None
    method: str | None = None
    when: Callable[..., Any] | None = None
    in_place: bool = False
    fallback: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if (self.launch is None) == (self.method is None):
            raise ValueError("a Route needs exactly one of launch (a function) or method (a Launcher method name)")


def _builtin(name: str) -> Callable[..., Any]:
    """The array-library body of primitive ``name`` (``Backend``'s)."""
    fn: Callable[..., Any] = getattr(Backend, name)
    return fn


_PRIMITIVE_TEMPLATE = """\
def {name}(self, {params}):
    kernels = self.kernels
    if kernels is not None{guard}:
        r = {launch}({launch_args})
        if r is not None:
            return {result}
    return fallback(self, {args})
"""


def _kernel_first(name: Primitive, route: Route) -> Callable[..., Any]:
    """Primitive ``name`` of ``CudaBackend``: ``route`` first, the built-in body when it declines.

    NOTE: the method is generated with the built-in's own parameter list (as ``dataclasses`` generates
    ``__init__``) rather than as a ``*args, **kwargs`` wrapper: packing and unpacking the arguments would cost
    about 150 ns a call, and ``binary`` runs on every ``a + b``. The generated body is the pattern every
    primitive used to spell out by hand."""
    builtin = _builtin(name)
    params: list[str] = []
    args: list[str] = []
    defaults: dict[str, Any] = {}
    keyword_only = False
    for p in list(inspect.signature(builtin).parameters.values())[1:]:
        if p.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            raise TypeError(f"Backend.{name}: a routed primitive takes named parameters only, not {p}")
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            params.append("*")
            keyword_only = True
        if p.default is inspect.Parameter.empty:
            params.append(p.name)
        else:
            defaults[f"_default_{p.name}"] = p.default
            params.append(f"{p.name}=_default_{p.name}")
        args.append(f"{p.name}={p.name}" if keyword_only else p.name)
    call = ", ".join(args)
    source = _PRIMITIVE_TEMPLATE.format(
        name=name, params=", ".join(params), args=call,
        guard=f" and when({call})" if route.when is not None else "",
        launch=f"kernels.{route.method}" if route.method else "launch",
        launch_args=call if route.method else f"self, kernels, {call}",
        result="None" if route.in_place else "r")
    namespace: dict[str, Any] = {"launch": route.launch, "when": route.when,
                                 "fallback": route.fallback or builtin, **defaults}
    exec(compile(source, f"<kernel-first route of {name}>", "exec"), namespace)
    primitive: Callable[..., Any] = namespace[name]
    primitive.__qualname__ = f"CudaBackend.{name}"
    primitive.__doc__ = builtin.__doc__
    return primitive


# ---------------------------------------------------------------------- launches, by kernel file
# Each takes (backend, kernels, <the primitive's arguments>) and returns the result or None.

# elementwise.cu (unary, binary and where call the launcher's methods of the same name)
def _clamp(be: CudaBackend, kern: Launcher, x: Array, lo: Any, hi: Any) -> Array | None:
    return kern.ternary("clamp", x, -_INF if lo is None else lo, _INF if hi is None else hi)


def _gelu(be: CudaBackend, kern: Launcher, x: Array, approximate: str = "none") -> Array | None:
    return kern.unary("gelu_tanh" if approximate == "tanh" else "gelu", x)


def _gelu_backward(be: CudaBackend, kern: Launcher, g: Array, x: Array, approximate: str = "none") -> Array | None:
    return kern.binary("gelu_tanh_backward" if approximate == "tanh" else "gelu_backward", g, x)


def _softplus(be: CudaBackend, kern: Launcher, x: Array, beta: float = 1.0, threshold: float = 20.0) -> Array | None:
    return kern.unary("softplus", x, None, float(beta), float(threshold))


# multi_tensor.cu: one launch per list (tables of multi_tensor.cuh). A list the kernel declines (mixed dtypes or
# shapes, strided arrays) goes per tensor through elementwise.cu, and a tensor that declines takes the built-in on
# its own, so an in-place update never runs twice on the tensors the kernels did take
def _foreach_lerp(be: CudaBackend, kern: Launcher, xs: list[Array], ys: list[Array], weight: float,
                  inplace: bool = True) -> list[Array]:
    r = kern.foreach_ternary("lerp", xs, ys, None, float(weight), inplace)
    if r is not None:
        return r
    builtin = _builtin("foreach_lerp")
    out = []
    for x, y in zip(xs, ys):
        r1 = kern.ternary("lerp", x, y, float(weight), out=x if inplace else None)
        out.append(r1 if r1 is not None else builtin(be, [x], [y], weight, inplace)[0])
    return out


def _foreach_addc(name: Literal["addcmul", "addcdiv"]) -> Launch:
    builtin = _builtin("foreach_" + name)

    def launch(be: CudaBackend, kern: Launcher, xs: list[Array], ys: list[Array], zs: list[Array],
               values: Any = 1, inplace: bool = False) -> list[Array] | None:
        vs = values if isinstance(values, (list, tuple)) else [values] * len(xs)
        if len(vs) != len(xs):
            return None  # the built-in reports the mismatch
        vs = [float(v) for v in vs]
        r = kern.foreach_ternary(name, xs, ys, zs, vs, inplace)
        if r is not None:
            return r
        out = []
        for x, y, z, v in zip(xs, ys, zs, vs):
            r1 = kern.ternary(name, x, y, z, alpha=v, out=x if inplace else None)
            out.append(r1 if r1 is not None else builtin(be, [x], [y], [z], [v], inplace)[0])
        return out
    return launch


def _foreach_clamp_(be: CudaBackend, kern: Launcher, xs: list[Array], bound: float) -> Literal[True] | None:
    return None if kern.foreach_ternary("clamp", xs, None, None, float(bound), True) is None else True


def _foreach_norm(be: CudaBackend, kern: Launcher, xs: list[Array], ord: float) -> list[Array] | None:
    out = kern.multi_norm(xs, ord, per_tensor=True)
    # 0-d views (a plain index of a NumPy array would give a NumPy scalar, not an array)
    return None if out is None else [out[i:i + 1].reshape(()) for i in range(1, len(xs) + 1)]


def _total_norm(be: CudaBackend, kern: Launcher, xs: list[Array], ord: float) -> Array | None:
    out = kern.multi_norm(xs, ord, per_tensor=False)
    return None if out is None else out.reshape(())


def _foreach_clip_(be: CudaBackend, kern: Launcher, xs: list[Array], total: Array,
                   max_norm: float) -> Literal[True] | None:
    return kern.clip_scale(xs, total, float(max_norm))


def _amp_unscale_(be: CudaBackend, kern: Launcher, xs: list[Array], found_inf: Array,
                  inv_scale: Array) -> Literal[True] | None:
    return kern.amp_unscale_(xs, found_inf, inv_scale)


# softmax.cu: rows of the last dim
def _last_axis(x: Array, axis: int) -> bool:
    return bool(x.ndim) and axis == x.ndim - 1


def _last_axis_backward(y: Array, g: Array, axis: int) -> bool:
    return _last_axis(y, axis)


def _softmax(log: bool) -> Launch:
    def launch(be: CudaBackend, kern: Launcher, x: Array, axis: int) -> Array | None:
        return kern.softmax(x, log, axis)
    return launch


def _softmax_backward(log: bool) -> Launch:
    def launch(be: CudaBackend, kern: Launcher, y: Array, g: Array, axis: int) -> Array | None:
        return kern.softmax_backward(y, g, log, axis)
    return launch


# cross_entropy.cu: 2-D (rows, C) float logits (float32, float64, float16, bfloat16). When the backward will run, the forward writes the
# gradient of the summed losses in the same pass over the logits ("dlogits"), and the backward scales it in place
# by the loss gradient; the per-row log-sum-exp is saved as well, for a second backward (retained graph) after the
# first one handed "dlogits" out. Spatial inputs and mismatched weights use the built-in bodies.
def _cross_entropy_applies(x: Array, target: Array, weight: Array | None = None, *args: Any, **kwargs: Any) -> bool:
    return x.ndim == 2 and x.dtype in _KERNEL_FLOATS and (weight is None or weight.dtype == x.dtype)


def _cross_entropy(be: CudaBackend, kern: Launcher, x: Array, target: Array, weight: Array | None = None,
                   ignore_index: int = -100, label_smoothing: float = 0.0, *, tidx: Any = None, mask: Any = None,
                   coef: Any = None, want_grad: bool = False) -> tuple[Array, dict[str, Array]] | None:
    t = target.reshape(-1)
    if want_grad:
        r = kern.cross_entropy_fused(x, t, weight, ignore_index, label_smoothing)
        if r is None:
            return None
        loss, _, lse, d = r
        return loss.reshape(target.shape), {"lse": lse, "dlogits": d}
    r3 = kern.cross_entropy(x, t, weight, ignore_index, label_smoothing)
    if r3 is None:
        return None
    return r3[0].reshape(target.shape), {"lse": r3[2]}


def _cross_entropy_backward(be: CudaBackend, kern: Launcher, gout: Array, x: Array, target: Array,
                            weight: Array | None, ignore_index: int, label_smoothing: float, saved: dict[str, Array],
                            denom: float | Array | None = None, *, tidx: Any = None, mask: Any = None) -> Array | None:
    lse = saved.get("lse")
    if lse is None:
        return None  # the forward ran the built-in: so does the backward
    g = gout.reshape(-1) if gout.ndim else gout.reshape(1)
    scale = 1.0
    if isinstance(denom, (int, float)):
        scale = 1.0 / denom if denom else 1.0
    elif denom is not None:
        # a 0-d device denominator (never read back): folded into the loss gradient
        g = be.binary("div", g, denom.astype(g.dtype, copy=False))
    d = saved.get("dlogits")
    if d is not None:
        # NOTE: in place: the caller hands the saved gradient out once and drops it from ``saved`` afterwards
        return kern.cross_entropy_scale(d, g, scale)
    return kern.cross_entropy_backward(x, target.reshape(-1), weight, lse, g, scale, ignore_index, label_smoothing)


def _cross_entropy_backward_builtin(be: CudaBackend, gout: Array, x: Array, target: Array, weight: Array | None,
                                    ignore_index: int, label_smoothing: float, saved: dict[str, Array],
                                    denom: float | Array | None = None, *, tidx: Any = None, mask: Any = None) -> Array:
    if saved.get("lse") is not None:
        # the kernel's saved state is its own: the built-in backward needs the built-in forward's, computed again
        _, saved = _builtin("cross_entropy_forward")(be, x, target, weight, ignore_index, label_smoothing,
                                                     tidx=tidx, mask=mask)
    return _builtin("cross_entropy_backward")(be, gout, x, target, weight, ignore_index, label_smoothing, saved,
                                              denom, tidx=tidx, mask=mask)


# layernorm.cu: rows of a 2-D float array with mean and 1/std saved per row (float32 for the 2-byte floats); RMS
# norm (center=False) uses the built-in bodies
def _layer_norm_applies(x: Array, weight: Array | None = None, bias: Array | None = None, eps: float = 1e-5,
                        center: bool = True, keep: bool = True) -> bool:
    return center and x.ndim == 2 and x.dtype in _KERNEL_FLOATS and \
        all(p is None or p.dtype == x.dtype for p in (weight, bias))


def _layer_norm(be: CudaBackend, kern: Launcher, x: Array, weight: Array | None = None, bias: Array | None = None,
                eps: float = 1e-5, center: bool = True, keep: bool = True) -> tuple[Array, dict[str, Array]] | None:
    r = kern.layer_norm(x, weight, bias, eps)
    if r is None:
        return None
    y, mean, rstd = r
    # kept dims, so that the built-in backward can use them too
    return y, {"mean": mean.reshape(-1, 1), "rstd": rstd.reshape(-1, 1)}


def _layer_norm_backward_applies(g: Array, x: Array, weight: Array | None, saved: dict[str, Array],
                                 center: bool = True, needs: tuple[bool, bool, bool] = (True, True, True)) -> bool:
    return center and saved.get("mean") is not None and g.dtype == x.dtype and \
        (weight is None or weight.dtype == x.dtype)


def _layer_norm_backward(be: CudaBackend, kern: Launcher, g: Array, x: Array, weight: Array | None,
                         saved: dict[str, Array], center: bool = True,
                         needs: tuple[bool, bool, bool] = (True, True, True)) -> tuple[Any, Any, Any] | None:
    nx, nw, nb = needs
    r = kern.layer_norm_backward(g, x, weight, saved["mean"].reshape(-1), saved["rstd"].reshape(-1), nw, nb)
    if r is None:
        return None
    dx, dw, db = r
    return (dx if nx else None), dw, db


# matmul.cu (float32, float64), matmul_tc.cu (float16, bfloat16, and float32 as TF32 when allowed)
def _matmul(be: CudaBackend, kern: Launcher, a: Array, b: Array, transpose_a: bool = False,
            transpose_b: bool = False, bias: Array | None = None) -> Array | None:
    a2 = a.swapaxes(-1, -2) if transpose_a and a.ndim >= 2 else a
    b2 = b.swapaxes(-1, -2) if transpose_b and b.ndim >= 2 else b
    return kern.matmul(a2, b2, bias, tf32=_matmul_flags.allow_tf32)


def _matmul_builtin(be: CudaBackend, a: Array, b: Array, transpose_a: bool = False, transpose_b: bool = False,
                    bias: Array | None = None) -> Array:
    """The array library's product, which honours allow_tf32 too (cuBLAS's TF32 math on a GPU): the reference
    the kernels are compared with (MINITORCH_GPU_KERNELS=0), and what serves the calls they decline."""
    if a.dtype == np.float32 and _matmul_flags.allow_tf32:
        a2 = a.swapaxes(-1, -2) if transpose_a and a.ndim >= 2 else a
        b2 = b.swapaxes(-1, -2) if transpose_b and b.ndim >= 2 else b
        r = be._matmul_tf32(a2, b2)
        return r if bias is None else be.binary("add", r, bias, out=r)
    return _builtin("matmul")(be, a, b, transpose_a, transpose_b, bias)


# optim.cu: the whole step in one launch (True), or None
def _fused_step(be: CudaBackend, kern: Launcher, step: FusedStep) -> Literal[True] | None:
    return kern.optim_step(step)


def _fused_step_builtin(be: CudaBackend, step: FusedStep) -> None:
    return None  # the optimizer's array-module body runs the step


# random.cu
def _philox(be: CudaBackend, kern: Launcher, counter: int, key: int, n: int) -> Array:
    return kern.philox_words(key, counter, n)


def _into(be: CudaBackend, out: Array | None, r: tuple[Array, int]) -> tuple[Array, int]:
    """A kernel's sample, copied into ``out`` when the caller (an in-place sampler) passed one."""
    if out is None:
        return r
    be.copy_into(out, r[0])
    return out, r[1]


def _rand_uniform(be: CudaBackend, kern: Launcher, seed: int, offset: int, shape: tuple[int, ...], np_dtype: Any,
                  low: float = 0.0, high: float = 1.0, out: Array | None = None, *,
                  rng_state: Array | None = None) -> tuple[Array, int] | None:
    r = kern.uniform(seed, offset, math.prod(shape), np.dtype(np_dtype), low, high, rng_state)
    return None if r is None else _into(be, out, (r[0].reshape(shape), r[1]))


def _scalar_moments(seed: int, offset: int, shape: tuple[int, ...], np_dtype: Any, mean: Any = 0.0,
                    std: Any = 1.0, out: Array | None = None, *, rng_state: Array | None = None) -> bool:
    return isinstance(mean, (int, float)) and isinstance(std, (int, float))


def _rand_normal(be: CudaBackend, kern: Launcher, seed: int, offset: int, shape: tuple[int, ...], np_dtype: Any,
                 mean: float = 0.0, std: float = 1.0, out: Array | None = None, *,
                 rng_state: Array | None = None) -> tuple[Array, int] | None:
    r = kern.normal(seed, offset, math.prod(shape), np.dtype(np_dtype), float(mean), float(std), rng_state)
    return None if r is None else _into(be, out, (r[0].reshape(shape), r[1]))


def _span_fits(seed: int, offset: int, shape: tuple[int, ...], low: int, high: int, np_dtype: Any,
               out: Array | None = None, *, rng_state: Array | None = None) -> bool:
    return bool(high - low <= 1 << 64)


def _rand_int(be: CudaBackend, kern: Launcher, seed: int, offset: int, shape: tuple[int, ...], low: int, high: int,
              np_dtype: Any, out: Array | None = None, *, rng_state: Array | None = None) -> tuple[Array, int]:
    r, nb = kern.randint(seed, offset, math.prod(shape), int(low), int(high), rng_state)
    return _into(be, out, (r.reshape(shape).astype(np_dtype, copy=False), nb))


def _rand_dropout(be: CudaBackend, kern: Launcher, seed: int, offset: int, x: Array, p: float,
                  residual: Array | None = None, *, rng_state: Array | None = None) -> tuple[Array, int] | None:
    return kern.dropout(seed, offset, x, p, dropout_threshold(p), residual, rng_state)


# embedding.cu: a scatter-add of rows, in place
def _add_at(be: CudaBackend, kern: Launcher, a: Array, index: Any, values: Any) -> Literal[True] | None:
    idx = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    xp = be.xp
    if not (isinstance(idx, xp.ndarray) and isinstance(values, xp.ndarray)):
        return None
    return kern.embedding_backward(a, idx, values)


ROUTES: dict[Primitive, Route] = {
    "unary": Route(method="unary"),
    "binary": Route(method="binary"),
    "where": Route(method="where"),
    "clamp": Route(_clamp, when=lambda x, lo, hi: lo is not None or hi is not None),
    "gelu": Route(_gelu),
    "gelu_backward": Route(_gelu_backward, when=lambda g, x, approximate="none": g.dtype == x.dtype),
    "softplus": Route(_softplus),
    "foreach_lerp": Route(_foreach_lerp),
    "foreach_addcmul": Route(_foreach_addc("addcmul")),
    "foreach_addcdiv": Route(_foreach_addc("addcdiv")),
    "foreach_clamp_": Route(_foreach_clamp_, in_place=True),
    "foreach_norm": Route(_foreach_norm),
    "total_norm": Route(_total_norm),
    "foreach_clip_": Route(_foreach_clip_, in_place=True),
    "amp_unscale_": Route(_amp_unscale_, in_place=True),
    "softmax_forward": Route(_softmax(False), when=_last_axis),
    "log_softmax_forward": Route(_softmax(True), when=_last_axis),
    "softmax_backward": Route(_softmax_backward(False), when=_last_axis_backward),
    "log_softmax_backward": Route(_softmax_backward(True), when=_last_axis_backward),
    "cross_entropy_forward": Route(_cross_entropy, when=_cross_entropy_applies),
    "cross_entropy_backward": Route(_cross_entropy_backward, fallback=_cross_entropy_backward_builtin),
    "layer_norm_forward": Route(_layer_norm, when=_layer_norm_applies),
    "layer_norm_backward": Route(_layer_norm_backward, when=_layer_norm_backward_applies),
    "matmul": Route(_matmul, fallback=_matmul_builtin),
    "_fused_step": Route(_fused_step, fallback=_fused_step_builtin),
    "philox4x32_10": Route(_philox),
    "rand_uniform": Route(_rand_uniform),
    "rand_normal": Route(_rand_normal, when=_scalar_moments),
    "rand_int": Route(_rand_int, when=_span_fits),
    "rand_dropout": Route(_rand_dropout),
    "add_at": Route(_add_at, in_place=True),
    # attention.cu: causal / float / bool masks, dropout regenerated from (seed, offset), head dims up to 128
    "attention_forward": Route(method="attention_forward"),
    "attention_backward": Route(method="attention_backward"),
    # rnn.cu: one launch per LSTM / GRU step (backends/cuda/launch_rnn.py)
    "lstm_cell_forward": Route(_rnn.lstm_cell_forward),
    "lstm_cell_backward": Route(_rnn.lstm_cell_backward),
    "gru_cell_forward": Route(_rnn.gru_cell_forward),
    "gru_cell_backward": Route(_rnn.gru_cell_backward),
}
"""Per primitive, how the kernels serve it (see ``Route``)."""


class CudaBackend(Backend, metaclass=ABCMeta):
    """The primitives of ``ROUTES`` ask ``self.kernels`` (a Launcher, or None with kernels off) first and run
    the built-in body of ``Backend`` when it declines."""

    name = "cuda"
    reads_wait = True
    kernels: Launcher | None = None
    index: int
    device: Any

    def _init_cuda(self, index: int, xp: Any, launcher: Launcher | None) -> None:
        self.xp = xp
        self.index = index
        self.device = _device_cls("cuda", index)
        self.kernels = launcher if kernels_enabled() else None
        self.checks = DeferredChecks(self._to_host, xp.concatenate)
        if launcher is not None:
            launcher.checks = self.checks

    @abstractmethod
    def _to_host(self, arr: Array) -> Any:
        """A host (NumPy) copy of ``arr``: CuPy copies from the device, the simulator from its own buffers."""

    def to_numpy(self, arr: Array) -> Any:
        # the host waits for the device here: the natural point to read the checks queued since the last wait
        note_sync()
        self.checks.flush()
        return self._to_host(arr)

    def defer_check(self, values: Array, check: Check) -> None:
        """Queue ``check(host copy of values)`` (returns the error to raise, or None) for the next
        synchronisation instead of waiting for the device now."""
        self.checks.add(values, check)

    def synchronize(self) -> None:
        self.xp.cuda.Device(self.index).synchronize()
        self.checks.flush()

    def check_index_range(self, idx: Array, size: int, error: Callable[[int], BaseException]) -> None:
        if idx.size == 0:
            return

        def check(v: np.ndarray[Any, Any]) -> BaseException | None:
            lo, hi = int(v[0]), int(v[1])
            return error(lo if lo < 0 else hi) if lo < 0 or hi >= size else None
        self.defer_check(self.xp.stack([idx.min(), idx.max()]), check)

    def np_dtype(self, dtype: Any) -> Any:
        if dtype is bfloat16 and not self.supports(dtype):
            raise TypeError("bfloat16 arrays on the GPU need CuPy 14 or newer (the installed CuPy has none); use "
                            "float16 or float32 on this GPU, or upgrade CuPy")
        return _builtin("np_dtype")(self, dtype)

    def supports(self, dtype: Any) -> bool:
        return dtype is not bfloat16 or self._bfloat16_arrays()

    def _bfloat16_arrays(self) -> bool:
        return True

    # ---------------------------------------------------------------- page-locked host memory
    def pin(self, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """A copy of the host array ``arr`` in page-locked host memory of this device's runtime (what
        ``Tensor.pin_memory`` holds): a NumPy array, so CPU ops use it as any other."""
        out = self._pinned_empty(arr.shape, arr.dtype)
        np.copyto(out, arr)
        return out

    @abstractmethod
    def _pinned_empty(self, shape: tuple[int, ...], np_dtype: Any) -> np.ndarray[Any, Any]:
        """An uninitialised host array in page-locked memory (CUDA's pinned allocator, or the simulator's)."""

    @abstractmethod
    def is_pinned(self, arr: np.ndarray[Any, Any]) -> bool:
        """Whether the host array ``arr`` (or the array it views) lies in page-locked memory."""

    def _matmul_tf32(self, a: Array, b: Array) -> Array:
        """float32 ``a @ b`` with TF32 inputs where the array library offers it; the simulator's NumPy has no
        TF32 math and computes it in full float32."""
        return _builtin("matmul")(self, a, b)


for _primitive, _route in ROUTES.items():
    setattr(CudaBackend, _primitive, _kernel_first(_primitive, _route))


_F = TypeVar("_F", bound=Callable[..., Any])


def _on_device(fn: _F) -> _F:
    """``fn`` run with the backend's GPU current."""
    @functools.wraps(fn)
    def wrapper(self: CupyBackend, *args: Any, **kwargs: Any) -> Any:
        cp = self.xp
        if cp.cuda.runtime.getDevice() == self.index:
            return fn(self, *args, **kwargs)
        with cp.cuda.Device(self.index):
            return fn(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


_CUDA_MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost: page-locked host memory


class CupyBackend(CudaBackend):
    """Device "cuda:<index>" on a GPU: CuPy arrays, kernels through ``cupy.RawModule``."""

    name = "cupy"

    def __init__(self, index: int) -> None:
        import cupy
        with cupy.cuda.Device(index):
            sms = cupy.cuda.runtime.getDeviceProperties(index)["multiProcessorCount"]
        # enough resident blocks to fill every SM several times over; grid-stride loops cover the rest
        cc = int(cupy.cuda.Device(index).compute_capability)
        launcher = Launcher(cupy, cupy.RawModule, lambda a: a.data.ptr, max_blocks=32 * sms, sms=sms,
                            options=_loader.nvrtc_options(), tensor_cores=cc >= 80)
        self._init_cuda(index, cupy, launcher)
        _memory.install_cupy_hook(cupy)

    def _to_host(self, arr: Array) -> Any:
        return self.xp.asnumpy(arr)

    def _bfloat16_arrays(self) -> bool:
        return _cupy_bfloat16(self.xp)

    def asarray(self, obj: Any, np_dtype: Any = None, copy: bool = False) -> Array:
        if copy:
            return self.xp.array(obj, dtype=np_dtype, copy=True)
        return self.xp.asarray(obj, dtype=np_dtype)

    def data_ptr(self, arr: Array) -> int:
        return int(arr.data.ptr)

    def copy_into(self, dst: Array, src: Any) -> None:
        xp = self.xp
        if isinstance(src, xp.ndarray) and xp.may_share_memory(dst, src):
            # CuPy copies element by element in parallel; overlapping source and destination need a buffer
            src = src.copy()
        _builtin("copy_into")(self, dst, xp.asarray(src) if hasattr(src, "__array__") else src)

    def _pinned_empty(self, shape: tuple[int, ...], np_dtype: Any) -> np.ndarray[Any, Any]:
        import cupyx
        out: np.ndarray[Any, Any] = cupyx.empty_pinned(shape, dtype=np_dtype)
        return out

    def is_pinned(self, arr: np.ndarray[Any, Any]) -> bool:
        # the runtime's own answer for the address, as PyTorch asks cudaPointerGetAttributes: memory pinned by
        # CuPy's allocator or registered by another library counts alike
        if arr.size == 0:  # an empty array has no address to ask about
            return False
        try:
            attrs = self.xp.cuda.runtime.pointerGetAttributes(arr.ctypes.data)
        except self.xp.cuda.runtime.CUDARuntimeError:
            return False
        return bool(attrs.type == _CUDA_MEMORY_TYPE_HOST)

    def _matmul_tf32(self, a: Array, b: Array) -> Array:
        """float32 matmul on cuBLAS with TF32 tensor-core math (``mt.backends.cuda.matmul.allow_tf32``)."""
        from cupy_backends.cuda.libs import cublas
        handle = self.xp.cuda.device.get_cublas_handle()
        cublas.setMathMode(handle, cublas.CUBLAS_TF32_TENSOR_OP_MATH)
        try:
            return _builtin("matmul")(self, a, b)
        finally:
            cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)


@functools.cache
def _cupy_bfloat16(cp: Any) -> bool:
    """Whether this CuPy makes arrays of ml_dtypes' bfloat16 (CuPy 14 does; earlier versions refuse the dtype)."""
    try:
        cp.zeros(1, dtype=bfloat16.np_dtype)
    except (TypeError, ValueError, NotImplementedError):
        return False
    return True


# the methods that CuPy's own calls do not pin to a device
_NOT_ON_DEVICE = ("supports", "np_dtype", "strides", "is_contiguous")
for _name in dir(CupyBackend):
    if not _name.startswith("_") and _name not in _NOT_ON_DEVICE and callable(getattr(CupyBackend, _name)):
        setattr(CupyBackend, _name, _on_device(getattr(CupyBackend, _name)))


class _SimPinnedHost(bytearray):
    """The simulated GPU's page-locked host memory: ordinary host memory (the simulator's copies are synchronous
    anyway) whose type marks it as pinned, so ``is_pinned`` answers as on a GPU for the arrays built on it."""


class SimBackend(CudaBackend):
    """Device "cuda:0" on the CPU simulator: NumPy arrays standing for device memory, kernels through
    ``sim.SimModule``.

    Host and "device" stay apart as on a GPU: moving data onto the device copies (``asarray`` of a NumPy
    array) and reading it back copies (``to_numpy``), so a CPU tensor and its ``.cuda()`` copy never share
    memory. DLPack exports the memory as what it is, host memory (kDLCPU, see ``host_memory``)."""

    name = "cuda-sim"

    # DLPack exports (and __dlpack_device__ reports) this device's arrays as kDLCPU: they are host memory, and a
    # consumer told kDLCUDA would hand a host address to CUDA. Importing a tensor exported this way gives a CPU
    # tensor sharing the memory.
    host_memory = True

    def __init__(self, index: int) -> None:
        self._init_cuda(index, np, _sim_launcher())
        self._memory_stats = _memory.stats_for(index)

    def asarray(self, obj: Any, np_dtype: Any = None, copy: bool = False) -> Array:
        if copy or isinstance(obj, np.ndarray):
            return np.array(obj, dtype=np_dtype, copy=True)
        return np.asarray(obj, dtype=np_dtype)

    def _to_host(self, arr: Array) -> Any:
        return np.array(arr, copy=True)

    def _pinned_empty(self, shape: tuple[int, ...], np_dtype: Any) -> np.ndarray[Any, Any]:
        dt = np.dtype(np_dtype)
        n = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(_SimPinnedHost(max(n, 1) * dt.itemsize), dtype=dt)[:n].reshape(shape)

    def is_pinned(self, arr: np.ndarray[Any, Any]) -> bool:
        if arr.size == 0:  # no address to ask about, as on a GPU
            return False
        base: Any = arr
        while isinstance(base, np.ndarray):
            base = base.base
        if isinstance(base, memoryview):  # np.frombuffer holds its buffer through a memoryview
            base = base.obj
        return isinstance(base, _SimPinnedHost)

    counts_memory = True

    def count_memory(self, arr: Array) -> None:
        _memory.track_owner(arr, self._memory_stats)

    def index_select(self, x: Array, dim: int, index: Array) -> Array:
        # a GPU gather wraps an index outside the table (CuPy's ``take``) and its range check is read at the
        # next synchronisation: NumPy's take would raise its own IndexError here first
        if x.ndim == 0:
            return np.take(x.reshape(1), index.reshape(-1), mode="wrap").reshape(())
        return np.take(x, index, axis=dim, mode="wrap")

    def synchronize(self) -> None:
        self.checks.flush()


@functools.lru_cache(maxsize=1)
def _sim_launcher() -> Launcher:
    """The simulator's Launcher, one per process: tests switch the simulator on and off around every test, and
    the loaded modules and strided metadata stay valid across backends."""
    # a few blocks: the simulator runs them on a small worker pool, grid-stride loops do the rest
    return Launcher(np, sim.SimModule, _sim_ptr, max_blocks=8, upload=np.ascontiguousarray, aligned=_sim_aligned,
                    tensor_cores=True)


def _sim_ptr(a: Array) -> int:
    return int(a.__array_interface__["data"][0])


def _sim_aligned(a: Array) -> bool:
    # NOTE: an array that owns its memory got it from NumPy's allocator (malloc underneath), whose blocks are
    # 16-byte aligned on every 64-bit platform NumPy supports; reading the address costs a dict per call
    return a.base is None or _sim_ptr(a) % 16 == 0


def make_cuda_backend(index: int) -> CudaBackend:
    """The backend of device ``cuda:<index>``: the simulator's when it backs device "cuda", else CuPy's."""
    if _probe.is_simulated():
        return SimBackend(index)
    return CupyBackend(index)
