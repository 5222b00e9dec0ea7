"""Autocast's dispatch: the per-thread state, the op lists per device type, and the one wrapper that applies them.

PyTorch autocasts in its dispatcher, before an op's own argument checks; the equivalent here is the public op
function, so each op that a list names is wrapped once, where it is defined, by :func:`autocast_op` with its
PyTorch name. The wrapper tests one thread-local flag and otherwise calls the op unchanged, so ops run with
autocast off pay one attribute read and one call, and ops that no list names pay nothing. When the flag is up it
casts the op's floating tensor arguments as the table says for the device of the first one, then runs the op with
autocast suppressed (the ops inside a composite op run in the types their caller chose, as PyTorch's
decompositions below its autocast layer do).

The public API (``torch.autocast``, ``torch.get_autocast_dtype``, ...) is ``amp``; it sets this state.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .. import _dtype
from ..tensor import Tensor

__all__ = ["autocast_op", "autocast_listed", "DEVICE_TYPES", "LOWER", "FP32", "PROMOTE", "BANNED", "POLICIES", "state",
           "set_enabled", "is_enabled", "set_dtype", "get_dtype", "increment_nesting", "decrement_nesting",
           "clear_cache", "set_cache_enabled", "is_cache_enabled", "cast_value"]

F = TypeVar("F", bound=Callable[..., Any])

DEVICE_TYPES = ("cpu", "cuda")
"""The device types autocast runs on here (PyTorch's ``is_autocast_available`` is True for these)."""

LOWER, FP32, PROMOTE, BANNED = "lower", "fp32", "promote", "banned"

# PyTorch's lists (aten/src/ATen/autocast_mode.cpp), for the ops this package has. Matrix products and
# convolutions run in the low type on both devices.
_LOWER_BOTH = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
               "addmm", "addbmm", "baddbmm", "bmm", "matmul", "mm", "linear", "einsum",
               "scaled_dot_product_attention", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")
# CPU (bfloat16): only losses and a few numerically touchy ops go to float32; softmax, sums and pointwise math
# stay in the low type (checked against the installed PyTorch in tests/ops/test_autocast.py)
_CPU_FP32 = ("prod", "cdist", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
             "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
             "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
             "cosine_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "ctc_loss")
# CUDA (float16): float16's narrow range puts reductions, exponentials and normalisations in float32 too
_CUDA_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
              "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "cosine_similarity",
              "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss",
              "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
              "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits",
              "dist", "pdist", "cdist", "renorm", "logsumexp", "softmax", "log_softmax", "cumprod", "cumsum",
              "prod", "sum", "cross_entropy", "ctc_loss")
# ops that refuse mixed float types run in the widest of their inputs' types
_PROMOTE_BOTH = ("cat", "stack", "index_copy")
_CUDA_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "scatter_add", "tensordot",
                 "index_put")

POLICIES: dict[str, dict[str, str]] = {
    "cpu": {**{n: LOWER for n in _LOWER_BOTH}, **{n: FP32 for n in _CPU_FP32},
            **{n: PROMOTE for n in _PROMOTE_BOTH}},
    "cuda": {**{n: LOWER for n in _LOWER_BOTH + ("addmv", "addr", "mv", "chain_matmul", "multi_dot")},
             **{n: FP32 for n in _CUDA_FP32}, **{n: PROMOTE for n in _PROMOTE_BOTH + _CUDA_PROMOTE},
             "binary_cross_entropy": BANNED},
}
"""{device type: {op name: policy}}: what autocast does with each op it knows."""

# fp32 ops that take a ``dtype=`` keep the caller's choice when one is given (PyTorch's fp32_append_dtype)
_DTYPE_ARG = frozenset({"sum", "prod", "cumsum", "cumprod", "softmax", "log_softmax", "norm"})

_BANNED_MSG = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.")


on = False
"""The fast flag the op wrappers test: autocast is enabled on some thread (each thread's own state decides)."""
_threads_on: set[int] = set()
_threads_lock = threading.Lock()


class _State(threading.local):
    """Per-thread autocast state; class attributes are the defaults a new thread sees."""
    on: bool = False                 # autocast is enabled for some device type on this thread
    cpu: bool = False
    cuda: bool = False
    cpu_dtype: _dtype.dtype = _dtype.bfloat16
    cuda_dtype: _dtype.dtype = _dtype.float16
    nesting: int = 0
    cache_enabled: bool = True
    cache: dict[int, tuple[Tensor, Tensor]] | None = None


state = _State()


def _check_device_type(device_type: str) -> str:
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_enabled(device_type: str) -> bool:
    return bool(getattr(state, _check_device_type(device_type)))


def set_enabled(device_type: str, enabled: bool) -> None:
    global on
    setattr(state, _check_device_type(device_type), bool(enabled))
    state.on = state.cpu or state.cuda
    with _threads_lock:
        if state.on:
            _threads_on.add(threading.get_ident())
        else:
            _threads_on.discard(threading.get_ident())
        on = bool(_threads_on)


def get_dtype(device_type: str) -> _dtype.dtype:
    return getattr(state, _check_device_type(device_type) + "_dtype")


def set_dtype(device_type: str, dtype: _dtype.dtype) -> None:
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    setattr(state, _check_device_type(device_type) + "_dtype", dtype)


def increment_nesting() -> int:
    state.nesting += 1
    return state.nesting


def decrement_nesting() -> int:
    state.nesting -= 1
    return state.nesting


def clear_cache() -> None:
    state.cache = None


def set_cache_enabled(enabled: bool) -> None:
    state.cache_enabled = bool(enabled)


def is_cache_enabled() -> bool:
    return state.cache_enabled


# ---------------------------------------------------------------------- casting

def _eligible(t: Tensor, device_type: str) -> bool:
    dt = t.dtype
    return dt.is_floating_point and dt is not _dtype.float64 and t.device.type == device_type


def _cast_tensor(t: Tensor, device_type: str, dtype: _dtype.dtype, low: _dtype.dtype) -> Tensor:
    if not _eligible(t, device_type) or t.dtype is dtype:
        return t
    # a weight (a float32 leaf that requires grad) is cast once per region, not once per use: PyTorch's cache
    if dtype is low and state.cache_enabled and t._requires_grad and t._grad_fn is None and t._base is None \
            and t.dtype is _dtype.float32:
        cache = state.cache
        if cache is None:
            cache = state.cache = {}
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        out = t.to(dtype)
        cache[id(t)] = (t, out)  # the source is kept so that its id cannot be reused while the entry lives
        return out
    return t.to(dtype)


def cast_value(value: Any, device_type: str, dtype: _dtype.dtype) -> Any:
    """``value`` with its eligible tensors (floating, not float64, on ``device_type``) cast to ``dtype``, through
    lists, tuples and dicts (``amp.custom_fwd``'s ``cast_inputs``, and the op wrapper)."""
    if isinstance(value, Tensor):
        return _cast_tensor(value, device_type, dtype, get_dtype(device_type))
    if isinstance(value, (list, tuple)):
        return type(value)(cast_value(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: cast_value(v, device_type, dtype) for k, v in value.items()}
    return value


def _tensors(args: Any):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)


def _widest(tensors: Any, device_type: str, low: _dtype.dtype) -> _dtype.dtype:
    out = low
    for t in tensors:
        if t.dtype.is_floating_point and t.device.type == device_type:
            out = _dtype.promote_types(out, t.dtype)
    return out


def _run(name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if not state.on:  # another thread's region, or inside an op this thread is already running
        return fn(*args, **kwargs)
    first = next(_tensors(args), None)
    if first is None:
        first = next(_tensors(kwargs.values()), None)
    if first is None:
        return fn(*args, **kwargs)
    device_type: str = first.device.type
    policy = POLICIES[device_type].get(name) if getattr(state, device_type) else None
    if policy is None:
        return fn(*args, **kwargs)
    low = get_dtype(device_type)
    if policy == BANNED:
        raise RuntimeError(_BANNED_MSG)
    if policy == LOWER:
        target = low
    elif policy == FP32:
        target = _dtype.float32
        if name in _DTYPE_ARG and kwargs.get("dtype") is not None:
            target = None
    else:
        target = _widest(_tensors((args, tuple(kwargs.values()))), device_type, low)
    if target is not None:
        args = tuple(cast_value(a, device_type, target) for a in args)
        kwargs = {k: cast_value(v, device_type, target) for k, v in kwargs.items()}
    state.on = False
    try:
        return fn(*args, **kwargs)
    finally:
        state.on = state.cpu or state.cuda


def _forwarding_source(fn: Callable[..., Any]) -> tuple[str, str, str, str]:
    """Source text for a wrapper with ``fn``'s signature: (its parameter list, the call passing every parameter on
    to ``fn``, the positional arguments as a tuple, the keyword arguments as a dict). Defaults are placeholders
    that the wrapper replaces with ``fn``'s own objects."""
    params, pos, kw, kw_dict = [], [], [], []
    var_kw = None
    star = open_posonly = False
    for p in inspect.signature(fn).parameters.values():
        n = p.name
        default = "" if p.default is p.empty else "=_D"
        if open_posonly and p.kind is not p.POSITIONAL_ONLY:
            params.append("/")
            open_posonly = False
        if p.kind is p.VAR_POSITIONAL:
            params.append("*" + n)
            pos.append("*" + n)
            star = True
        elif p.kind is p.VAR_KEYWORD:
            params.append("**" + n)
            var_kw = n
        elif p.kind is p.KEYWORD_ONLY:
            if not star:
                params.append("*")
                star = True
            params.append(n + default)
            kw.append(f"{n}={n}")
            kw_dict.append(f"{n!r}: {n}")
        else:
            params.append(n + default)
            pos.append(n)
            open_posonly = p.kind is p.POSITIONAL_ONLY
    if open_posonly:
        params.append("/")
    call = ", ".join(pos + kw + ([f"**{var_kw}"] if var_kw else []))
    args = f"({', '.join(pos)},)" if pos else "()"
    kwargs = "{" + ", ".join(kw_dict + ([f"**{var_kw}"] if var_kw else [])) + "}"
    return ", ".join(params), call, args, kwargs


def autocast_op(name: str) -> Callable[[F], F]:
    """Decorate the public function of the op PyTorch's autocast lists call ``name``: under autocast its
    arguments are cast as ``POLICIES`` says; otherwise it runs as it is.

    The wrapper has the op's own signature, so that with autocast off it costs one call and one module-global
    test (no argument packing: about 75 ns against 600 for a ``*args, **kwargs`` wrapper reading the
    thread-local state, measured with timeit on a no-op function)."""
    def wrap(fn: F) -> F:
        params, call, args, kwargs = _forwarding_source(fn)
        src = (f"def {fn.__name__}({params}):\n"
               f"    if _m.on:\n"
               f"        return _run(_name, _fn, {args}, {kwargs})\n"
               f"    return _fn({call})\n")
        ns: dict[str, Any] = {"_m": sys.modules[__name__], "_run": _run, "_name": name, "_fn": fn, "_D": None}
        exec(compile(src, f"<autocast {name}>", "exec"), ns)  # noqa: S102 - the source is built from a signature
        op = ns[fn.__name__]
        op.__defaults__ = fn.__defaults__
        op.__kwdefaults__ = fn.__kwdefaults__
        functools.update_wrapper(op, fn)
        op.__autocast_name__ = name
        return op  # type: ignore[no-any-return]
    return wrap


def autocast_listed(name: str, fn: F) -> F:
    """``fn`` wrapped by :func:`autocast_op` when a list names ``name``, else ``fn`` itself (for ops built from
    tables, most of which no list names)."""
    if any(name in table for table in POLICIES.values()):
        return autocast_op(name)(fn)
    return fn
