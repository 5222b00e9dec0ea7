"""Optimizer primitives: list ("foreach") operations and one fused step per optimizer.

Two families, both on lists of arrays (one entry per parameter of a parameter group):

* ``foreach_*``: one elementwise operation over every array of a list, the building blocks of the
  ``_multi_tensor_*`` optimizer implementations (PyTorch's ``torch._foreach_*``). A CUDA backend can replace
  each with one multi-tensor kernel launch.
* ``fused_<optimizer>``: a whole optimizer step for a group in one call. Each describes its step as a
  ``FusedStep`` in the terms of kernels/optim_math.cuh and offers it to ``_fused_step``: the CUDA backend runs
  it as one kernel launch through pointer tables (optim.cu), the CPU backend as one compiled pass
  (optim_cpu.cpp, see ``_optim_native``). What they decline runs through the body here, written against
  ``self.xp`` so it serves NumPy and CuPy alike, with the same operations in the same order. Every argument is
  a list of arrays or a scalar (per-tensor step counts arrive as Python floats, already incremented).

The NumPy bodies never allocate per step: each tensor is walked in cache-sized pieces, every operation writes
through ``out=`` into the parameter, its state, or scratch buffers kept per thread, and Python floats keep
float32 arithmetic in float32. A long group is split across a small thread pool (NumPy ufuncs release the
GIL); the pieces are independent, so results do not depend on the number of threads.
"""
from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypedDict

import numpy as np

from ._types import Array, NpDtype
from .cuda.fused_step import FusedStep

Arrays = list[Array]
"""One array per tensor of a parameter group."""
Scalars = float | Sequence[float]
"""One number for every tensor of a list, or one per tensor."""
Body = Callable[[list[Any], Arrays, int], None]
"""A fused step's array-module body: ``body(arrays of one tensor by role, scratch arrays, tensor index)``."""


class _PoolState(TypedDict):
    pool: ThreadPoolExecutor | None
    pid: int | None
    workers: int


_local = threading.local()
_pool_state: _PoolState = {"pool": None, "pid": None, "workers": 0}
_pool_lock = threading.Lock()

# below this many elements in a group, handing pieces to threads costs more than it saves
_PARALLEL_MIN_ELEMENTS = 1 << 20

_UNARY = {"neg": "negative", "sqrt": "sqrt", "sign": "sign", "abs": "absolute", "reciprocal": "reciprocal",
          "exp": "exp", "log": "log"}
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "maximum": "maximum",
           "minimum": "minimum", "pow": "power"}


# PyTorch's list operations give IEEE results (x / 0 is inf, 0 / 0 NaN, sqrt(-1) NaN) without a word; so do these
# (NumPy would warn; CuPy never does)
def _ieee() -> Any:
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


@functools.lru_cache(maxsize=None)
def _default_threads() -> int:
    # read once, like the BLAS thread variables: every compiled call asks, and the lookup costs a microsecond
    env = os.environ.get("MINITORCH_GPU_OPTIM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(_cpu_count(), 8))


@functools.lru_cache(maxsize=None)
def _cpu_count() -> int:
    return os.cpu_count() or 1  # costs microseconds per call, and is asked on every step


def _pool(workers: int) -> ThreadPoolExecutor:
    """A process-wide thread pool of ``workers`` threads, rebuilt after a fork (threads do not survive one)."""
    st = _pool_state
    pid = os.getpid()
    if st["pool"] is None or st["pid"] != pid or st["workers"] != workers:
        with _pool_lock:
            if st["pool"] is None or st["pid"] != pid or st["workers"] != workers:
                old = st["pool"]
                if old is not None and st["pid"] == pid:
                    old.shutdown(wait=False)
                st["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="minitorch_gpu-optim")
                st["pid"] = pid
                st["workers"] = workers
    pool = st["pool"]
    assert pool is not None
    return pool


def _per_tensor(values: Any, n: int) -> list[Any]:
    """A scalar repeated ``n`` times, or a per-tensor sequence as a list."""
    if isinstance(values, (list, tuple)):
        if len(values) != n:
            raise ValueError(f"expected {n} scalars, one per tensor, but got {len(values)}")
        return list(values)
    return [values] * n


_Piece = tuple[int, list[Any], int, int]
"""One piece of a fused step's work: (tensor index, its flat arrays by role, start, stop)."""


class OptimMixin:
    """List primitives and fused optimizer steps (see the module docstring)."""

    # elements per piece of the fused loops: a piece of each array plus the scratch buffers stay in L2.
    # None processes whole tensors (the right choice for a GPU, where there is no cache to fit).
    optim_chunk = 32768
    # threads for long fused steps on the CPU; None: $MINITORCH_GPU_OPTIM_THREADS or the CPU count (at most 8)
    optim_threads: int | None = None
    # what the mixin uses of Backend (declared for the type checker only)
    xp: Any
    copy_into: Callable[[Array, Any], None]
    vector_norm: Callable[..., Array]

    # ------------------------------------------------------------------ foreach: one op over a list
    def foreach_unary(self, name: str, xs: Arrays, inplace: bool = False) -> Arrays:
        """``name`` (a key of ``_UNARY``: neg, sqrt, sign, abs, ...) applied to every array, in place or into new
        arrays."""
        fn = getattr(self.xp, _UNARY[name])
        with _ieee():
            return [fn(x, out=x if inplace else self.xp.empty_like(x)) for x in xs]

    def foreach_scalar(self, name: str, xs: Arrays, scalars: Scalars, inplace: bool = False) -> Arrays:
        """``x <name> s`` for every array; ``scalars`` is one number or one per array."""
        fn = getattr(self.xp, _BINARY[name])
        ss = _per_tensor(scalars, len(xs))
        with _ieee():
            return [fn(x, s, out=x if inplace else self.xp.empty_like(x)) for x, s in zip(xs, ss)]

    def foreach_list(self, name: str, xs: Arrays, ys: Arrays, alpha: float = 1, inplace: bool = False) -> Arrays:
        """``x <name> alpha * y`` pairwise (``alpha`` is meant for add and sub)."""
        fn = getattr(self.xp, _BINARY[name])
        out = []
        with _ieee():
            for x, y in zip(xs, ys):
                if alpha != 1:
                    y = self.xp.multiply(y, alpha)
                out.append(fn(x, y, out=x if inplace else self.xp.empty_like(x)))
        return out

    def foreach_lerp(self, xs: Arrays, ys: Arrays, weight: float, inplace: bool = True) -> Arrays:
        """``x + weight * (y - x)`` pairwise, with PyTorch's two-sided formula (exact at both ends)."""
        xp = self.xp
        w = float(weight)
        out = []
        for x, y in zip(xs, ys):
            d = xp.subtract(y, x, out=xp.empty_like(x))
            if abs(w) < 0.5:
                xp.multiply(d, w, out=d)
                r = xp.add(x, d, out=x if inplace else d)
            else:
                xp.multiply(d, 1.0 - w, out=d)
                r = xp.subtract(y, d, out=x if inplace else d)
            out.append(r)
        return out

    def foreach_addcmul(self, xs: Arrays, ys: Arrays, zs: Arrays, values: Scalars = 1, inplace: bool = False) -> Arrays:
        """``x + value * y * z``; ``values`` is one number or one per array."""
        return self._foreach_addc(self.xp.multiply, xs, ys, zs, values, inplace)

    def foreach_addcdiv(self, xs: Arrays, ys: Arrays, zs: Arrays, values: Scalars = 1, inplace: bool = False) -> Arrays:
        """``x + value * y / z``; ``values`` is one number or one per array."""
        return self._foreach_addc(self.xp.divide, xs, ys, zs, values, inplace)

    def _foreach_addc(self, op: Any, xs: Arrays, ys: Arrays, zs: Arrays, values: Scalars, inplace: bool) -> Arrays:
        xp = self.xp
        vs = _per_tensor(values, len(xs))
        out = []
        for x, y, z, v in zip(xs, ys, zs, vs):
            t = op(y, z, out=xp.empty_like(x))
            if v != 1:
                xp.multiply(t, v, out=t)
            out.append(xp.add(x, t, out=x if inplace else t))
        return out

    def foreach_clamp_(self, xs: Arrays, bound: float) -> None:
        """Clamp every array to [-bound, bound] in place (``clip_grad_value_``)."""
        xp = self.xp
        for x in xs:
            xp.clip(x, -bound, bound, out=x)

    # ------------------------------------------------------------------ norms and clipping
    def foreach_norm(self, xs: Arrays, ord: float) -> Arrays:
        """The ``ord``-norm of every array, as 0-d arrays of its dtype (``torch._foreach_norm``)."""
        return [self.vector_norm(x, ord) for x in xs]

    def total_norm(self, xs: Arrays, ord: float) -> Array:
        """The ``ord``-norm of the per-array norms, a 0-d array: for ord > 0 the norm of every element of
        ``xs`` together (``clip_grad_norm_``'s total; for ord 0 and negative ords PyTorch's norm of the norms)."""
        return self.vector_norm(self.xp.stack(self.foreach_norm(xs, ord)), ord)

    def foreach_clip_(self, xs: Arrays, total: Array, max_norm: float) -> None:
        """Scale every array in place by ``min(max_norm / (total + 1e-6), 1)``, computed in ``total``'s dtype
        (the 1e-6 keeps a zero norm from dividing by zero; a NaN total makes NaN gradients, as in PyTorch)."""
        xp = self.xp
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN in PyTorch too, silently
            coef = xp.minimum(max_norm / (total + 1e-6), 1.0)
            for x in xs:
                xp.multiply(x, coef, out=x)

    def amp_unscale_(self, xs: Arrays, found_inf: Array, inv_scale: Array) -> None:
        """GradScaler's unscale (``torch._amp_foreach_non_finite_check_and_unscale_``): every array times the
        1-element float32 ``inv_scale`` in place, computed in float32 for half types, and the 1-element float32
        ``found_inf`` set to 1 when any element is inf or NaN. Both stay arrays: nothing is read on the host."""
        xp = self.xp
        with np.errstate(invalid="ignore", over="ignore"):
            for x in xs:
                bad = xp.logical_not(xp.isfinite(x)).any()
                xp.maximum(found_inf, bad.astype(found_inf.dtype), out=found_inf)
                inv = inv_scale.reshape(()).astype(x.dtype) if x.dtype.itemsize > 4 else inv_scale.reshape(())
                if x.dtype.itemsize < 4:
                    x[...] = (x.astype(np.float32) * inv).astype(x.dtype)
                else:
                    xp.multiply(x, inv, out=x)

    # ------------------------------------------------------------------ the fused driver
    def _optim_scratch(self, n: int, np_dtype: Any, k: int) -> Arrays:
        """``k`` scratch arrays of at least ``n`` elements, kept per thread and grown on demand."""
        cache = getattr(_local, "scratch", None)
        if cache is None:
            cache = _local.scratch = {}
        key = (id(self), np.dtype(np_dtype).str)
        bufs = cache.get(key)
        if bufs is None or len(bufs) < k or bufs[0].size < n:
            size = max(n, bufs[0].size if bufs else 0)
            bufs = [self.xp.empty(size, dtype=np_dtype) for _ in range(max(k, len(bufs) if bufs else 0))]
            cache[key] = bufs
        return bufs

    def _optim_threads(self) -> int:
        n = self.optim_threads
        return _default_threads() if n is None else max(1, int(n))

    def _fused_run(self, body: Body, lists: list[list[Any]], written: tuple[int, ...], n_tmp: int) -> None:
        """Run ``body(arrays, tmps, i)`` over every tensor ``i`` of a group.

        ``lists`` holds one list per role (parameter, gradient, each state), entries may be None where a role
        does not apply; ``written`` names the roles the body writes. Float32/float64 tensors that are
        contiguous are walked in ``optim_chunk``-sized flat pieces with shared scratch buffers; other tensors
        (strided, or half precision, computed in float32 like PyTorch's fused kernels) are processed whole
        through float32 working copies that are written back afterwards.
        """
        xp = self.xp
        # pieces only pay off where there is a cache to fit them in
        chunk = self.optim_chunk if xp is np else None
        f32 = np.dtype(np.float32)
        pieces = []      # (i, flat arrays, start, stop)
        dtypes = set()
        for i, arrs in enumerate(zip(*lists)):
            p = arrs[0]
            dt = p.dtype
            native = dt == f32 or dt == np.float64
            if chunk and native and all(a is None or (a.flags.c_contiguous and a.dtype == dt) for a in arrs):
                flat = [None if a is None else a.reshape(-1) for a in arrs]
                n = p.size
                dtypes.add(dt)
                for s in range(0, n, chunk):
                    pieces.append((i, flat, s, min(s + chunk, n)))
                continue
            cdt = dt if native else f32
            work = [None if a is None else (a if a.dtype == cdt else a.astype(cdt)) for a in arrs]
            tmps = [xp.empty(p.shape, dtype=cdt) for _ in range(n_tmp)]
            body(work, tmps, i)
            for j in written:
                if arrs[j] is not None and work[j] is not arrs[j]:
                    self.copy_into(arrs[j], work[j])
        if not pieces or chunk is None:  # pieces are only cut with a chunk size
            return
        total = sum(stop - start for _, _, start, stop in pieces)
        workers = self._optim_threads() if xp is np else 1
        if workers > 1 and total >= _PARALLEL_MIN_ELEMENTS and len(pieces) > 1:
            workers = min(workers, len(pieces))
            futures = [_pool(self._optim_threads()).submit(self._fused_pieces, body, pieces[k::workers], n_tmp,
                                                           chunk, dtypes)
                       for k in range(workers)]
            for f in futures:
                f.result()
        else:
            self._fused_pieces(body, pieces, n_tmp, chunk, dtypes)

    def _fused_pieces(self, body: Body, pieces: list[_Piece], n_tmp: int, chunk: int,
                      dtypes: set[NpDtype]) -> None:
        scratch = {dt: self._optim_scratch(chunk, dt, n_tmp) for dt in dtypes}
        for i, flat, s, e in pieces:
            k = e - s
            bufs = scratch[flat[0].dtype]
            body([None if a is None else a[s:e] for a in flat], [b[:k] for b in bufs[:n_tmp]], i)

    def _scalar_fn(self, params: Arrays) -> Callable[[float], Any]:
        """How a fused body passes its scalars: NumPy dispatches a 0-d array of the compute dtype about twice as
        fast as a Python float (which it converts on every call), and the per-call cost adds up over hundreds of
        pieces. Other array modules take Python floats."""
        if self.xp is not np or not params:
            return float
        dt = params[0].dtype
        cdt = dt if (dt == np.float32 or dt == np.float64) else np.dtype(np.float32)
        return lambda v: np.asarray(v, dtype=cdt)

    # ------------------------------------------------------------------ fused optimizer steps
    # Each method describes its step as a FusedStep and offers it to ``_fused_step`` (one compiled pass: a
    # kernel launch on a GPU, native code on the CPU); when that declines, the array-module body below runs the
    # same operations in the same order with the same scalars.
    def _fused_step(self, step: FusedStep) -> bool | None:
        """Run ``step`` natively and return True, or return None to have the caller's body run."""
        return None

    def _body_scalars(self, step: FusedStep) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
        """The step's group scalars by name, and its per-tensor scalars, as the array-module body passes them."""
        c = self._scalar_fn(step.params)
        return ({k: c(v) for k, v in step.scalars.items()},
                [tuple(c(x) for x in ts) for ts in step.tensor_scalars or ()])

    def fused_adam(self, params: Arrays, grads: Arrays, exp_avgs: Arrays, exp_avg_sqs: Arrays,
                   max_exp_avg_sqs: Arrays,
                   steps: list[float], lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                   amsgrad: bool, maximize: bool, decoupled: bool) -> None:
        """One Adam (``decoupled=False``) or AdamW step over a group, in place.

        ``steps``: each tensor's step count after this step's increment (Python floats). ``max_exp_avg_sqs`` is
        used when ``amsgrad``. The update is PyTorch's, with the bias corrections folded into two scalars:
        ``p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)`` computed as
        ``p += (-(lr / bc1) * sqrt(bc2)) * m / (sqrt(v) + eps * sqrt(bc2))``.
        """
        coupled = weight_decay != 0 and not decoupled
        tensor_scalars = []
        for st in steps:
            bc1 = 1.0 - beta1 ** st
            bc2_sqrt = (1.0 - beta2 ** st) ** 0.5
            tensor_scalars.append((eps * bc2_sqrt, -(lr / bc1) * bc2_sqrt))
        step = FusedStep(
            "adam", [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else None],
            dict(beta1=beta1, beta2=beta2, one_minus_beta2=1.0 - beta2,
                 g_scale=-(1.0 - beta1) if (maximize and not coupled) else (1.0 - beta1),
                 weight_decay=weight_decay, decay=1.0 - lr * weight_decay if decoupled else 1.0,
                 gsign=-1.0 if maximize else 1.0),
            dict(amsgrad=amsgrad, coupled=coupled), tensor_scalars=tensor_scalars)
        if self._fused_step(step):
            return
        xp = self.xp
        mul, add = xp.multiply, xp.add
        s, consts = self._body_scalars(step)
        decay = s["decay"] if (weight_decay != 0 and decoupled) else None

        def body(a: list[Any], t: Arrays, i: int) -> None:
            p, g, m, v, vmax = a
            A, B = t
            if decay is not None:
                mul(p, decay, out=p)
            if coupled:
                mul(p, s["weight_decay"], out=B)
                (xp.subtract if maximize else add)(B, g, out=B)
                g = B
            mul(g, s["g_scale"], out=A)
            mul(m, s["beta1"], out=m)
            add(m, A, out=m)
            mul(g, g, out=A)
            mul(A, s["one_minus_beta2"], out=A)
            mul(v, s["beta2"], out=v)
            add(v, A, out=v)
            if amsgrad:
                xp.maximum(vmax, v, out=vmax)
                v = vmax
            eps_scaled, step_scale = consts[i]
            xp.sqrt(v, out=A)
            add(A, eps_scaled, out=A)
            xp.divide(m, A, out=A)
            mul(A, step_scale, out=A)
            add(p, A, out=p)

        self._fused_run(body, step.roles_or_none(), (0, 2, 3, 4), 2)

    def fused_sgd(self, params: Arrays, grads: Arrays, momentum_buffers: list[Any], first_steps: Sequence[bool],
                  lr: float, weight_decay: float, momentum: float, dampening: float, nesterov: bool,
                  maximize: bool) -> None:
        """One SGD step over a group, in place. ``momentum_buffers`` are used when ``momentum != 0``;
        ``first_steps[i]`` says buffer ``i`` is new and takes the (decayed) gradient as it is."""
        use_mom = momentum != 0
        use_wd = weight_decay != 0
        step = FusedStep(
            "sgd", [params, grads, momentum_buffers if use_mom else None],
            dict(lr=lr, weight_decay=weight_decay, momentum=momentum, one_minus_dampening=1.0 - dampening,
                 gsign=-1.0 if maximize else 1.0),
            dict(weight_decay=use_wd, momentum=use_mom, nesterov=nesterov and use_mom),
            tensor_flags=[{"first": bool(f)} for f in first_steps] if use_mom else None)
        if self._fused_step(step):
            return
        xp = self.xp
        mul, add, sub = xp.multiply, xp.add, xp.subtract
        s, _ = self._body_scalars(step)

        def body(a: list[Any], t: Arrays, i: int) -> None:
            p, g, buf = a
            A, B = t
            g = self._decayed_grad(p, g, A, use_wd, s["weight_decay"], maximize)
            if use_mom:
                if first_steps[i]:
                    xp.copyto(buf, g)
                else:
                    mul(buf, s["momentum"], out=buf)
                    if dampening != 0:
                        mul(g, s["one_minus_dampening"], out=B)
                        add(buf, B, out=buf)
                    else:
                        add(buf, g, out=buf)
                if nesterov:
                    mul(buf, s["momentum"], out=B)
                    add(B, g, out=B)
                    g = B
                else:
                    g = buf
            mul(g, s["lr"], out=B)
            sub(p, B, out=p)

        self._fused_run(body, step.roles_or_none(), (0, 2), 2)

    def _decayed_grad(self, p: Array, g: Array, out: Array, use_wd: bool, weight_decay: Any, maximize: bool) -> Array:
        """``p * wd + g`` (``- g`` when maximizing) or ``-g`` into ``out``, or ``g`` itself when neither applies:
        the gradient every fused body but Adam's starts from."""
        xp = self.xp
        if use_wd:
            xp.multiply(p, weight_decay, out=out)
            (xp.subtract if maximize else xp.add)(out, g, out=out)
            return out
        if maximize:
            return xp.negative(g, out=out)
        return g

    def fused_rmsprop(self, params: Arrays, grads: Arrays, square_avgs: Arrays, grad_avgs: list[Any],
                      momentum_buffers: list[Any], lr: float, alpha: float, eps: float, weight_decay: float,
                      momentum: float, centered: bool, maximize: bool) -> None:
        """One RMSprop step over a group, in place (``grad_avgs`` used when centered, ``momentum_buffers`` when
        ``momentum > 0``)."""
        use_mom = momentum > 0
        use_wd = weight_decay != 0
        step = FusedStep(
            "rmsprop", [params, grads, square_avgs, grad_avgs if centered else None,
                        momentum_buffers if use_mom else None],
            dict(lr=lr, alpha=alpha, one_minus_alpha=1.0 - alpha, eps=eps, weight_decay=weight_decay,
                 momentum=momentum, gsign=-1.0 if maximize else 1.0),
            dict(weight_decay=use_wd, centered=centered, momentum=use_mom))
        if self._fused_step(step):
            return
        xp = self.xp
        mul, add, sub = xp.multiply, xp.add, xp.subtract
        s, _ = self._body_scalars(step)

        def body(a: list[Any], t: Arrays, i: int) -> None:
            p, g, sq, gavg, buf = a
            A, B, C = t
            g = self._decayed_grad(p, g, A, use_wd, s["weight_decay"], maximize)
            mul(g, g, out=B)
            mul(B, s["one_minus_alpha"], out=B)
            mul(sq, s["alpha"], out=sq)
            add(sq, B, out=sq)
            if centered:
                mul(g, s["one_minus_alpha"], out=B)
                mul(gavg, s["alpha"], out=gavg)
                add(gavg, B, out=gavg)
                mul(gavg, gavg, out=B)
                sub(sq, B, out=B)
                xp.sqrt(B, out=B)
            else:
                xp.sqrt(sq, out=B)
            add(B, s["eps"], out=B)
            xp.divide(g, B, out=C)
            if use_mom:
                mul(buf, s["momentum"], out=buf)
                add(buf, C, out=buf)
                mul(buf, s["lr"], out=C)
            else:
                mul(C, s["lr"], out=C)
            sub(p, C, out=p)

        self._fused_run(body, step.roles_or_none(), (0, 2, 3, 4), 3)

    def fused_adagrad(self, params: Arrays, grads: Arrays, state_sums: Arrays, steps: list[float], lr: float,
                      lr_decay: float, weight_decay: float, eps: float, maximize: bool) -> None:
        """One Adagrad step over a group, in place; ``steps`` as in :meth:`fused_adam`."""
        use_wd = weight_decay != 0
        step = FusedStep("adagrad", [params, grads, state_sums],
                         dict(weight_decay=weight_decay, eps=eps, gsign=-1.0 if maximize else 1.0),
                         dict(weight_decay=use_wd),
                         tensor_scalars=[(lr / (1.0 + (st - 1.0) * lr_decay),) for st in steps])
        if self._fused_step(step):
            return
        xp = self.xp
        mul, add = xp.multiply, xp.add
        s, consts = self._body_scalars(step)

        def body(a: list[Any], t: Arrays, i: int) -> None:
            p, g, ssum = a
            A, B = t
            g = self._decayed_grad(p, g, A, use_wd, s["weight_decay"], maximize)
            mul(g, g, out=B)
            add(ssum, B, out=ssum)
            xp.sqrt(ssum, out=B)
            add(B, s["eps"], out=B)
            xp.divide(g, B, out=B)
            mul(B, consts[i][0], out=B)
            xp.subtract(p, B, out=p)

        self._fused_run(body, step.roles_or_none(), (0, 2), 2)

    def fused_lion(self, params: Arrays, grads: Arrays, exp_avgs: Arrays, lr: float, beta1: float, beta2: float,
                   weight_decay: float, maximize: bool) -> None:
        """One Lion step over a group, in place: ``c = b1 m + (1 - b1) g``; ``p *= 1 - lr wd``;
        ``p -= lr sign(c)``; ``m = b2 m + (1 - b2) g``."""
        sgn = -1.0 if maximize else 1.0
        step = FusedStep("lion", [params, grads, exp_avgs],
                         dict(beta1=beta1, beta2=beta2, g1=sgn * (1.0 - beta1), g2=sgn * (1.0 - beta2), neg_lr=-lr,
                              decay=1.0 - lr * weight_decay), {})
        if self._fused_step(step):
            return
        xp = self.xp
        mul, add = xp.multiply, xp.add
        s, _ = self._body_scalars(step)
        decay = s["decay"] if weight_decay != 0 else None

        def body(a: list[Any], t: Arrays, i: int) -> None:
            p, g, m = a
            A, B = t
            mul(m, s["beta1"], out=A)
            mul(g, s["g1"], out=B)
            add(A, B, out=A)
            xp.sign(A, out=A)
            if decay is not None:
                mul(p, decay, out=p)
            mul(A, s["neg_lr"], out=A)
            add(p, A, out=p)
            mul(m, s["beta2"], out=m)
            mul(g, s["g2"], out=B)
            add(m, B, out=m)

        self._fused_run(body, step.roles_or_none(), (0, 2), 2)
