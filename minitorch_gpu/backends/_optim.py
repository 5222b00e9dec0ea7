"""Optimizer primitives: list ("foreach") operations and one fused step per optimizer.

Two families, both on lists of arrays (one entry per parameter of a parameter group):

* ``foreach_*``: one elementwise operation over every array of a list, the building blocks of the
  ``_multi_tensor_*`` optimizer implementations (PyTorch's ``torch._foreach_*``). A CUDA backend can replace
  each with one multi-tensor kernel launch.
* ``fused_<optimizer>``: a whole optimizer step for a group in one call. The body here is written against
  ``self.xp`` so it serves NumPy and CuPy alike; a CUDA backend overrides it with one kernel launch through a
  pointer table, which is why every argument is a list of arrays or a scalar (per-tensor step counts arrive
  as Python floats, already incremented).

The CPU bodies never allocate per step: each tensor is walked in cache-sized pieces, every operation writes
through ``out=`` into the parameter, its state, or scratch buffers kept per thread, and Python floats keep
float32 arithmetic in float32. A long group is split across a small thread pool (NumPy ufuncs release the
GIL); the pieces are independent, so results do not depend on the number of threads.
"""
import os
import threading

import numpy as np

_local = threading.local()
_pool_state = {"pool": None, "pid": None, "workers": 0}
_pool_lock = threading.Lock()

# below this many elements in a group, handing pieces to threads costs more than it saves
_PARALLEL_MIN_ELEMENTS = 1 << 20

_UNARY = {"neg": "negative", "sqrt": "sqrt", "sign": "sign"}
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "maximum": "maximum"}


def _default_threads():
    env = os.environ.get("MINITORCH_GPU_OPTIM_THREADS")
    if env:
        return max(1, int(env))
    return max(1, min(os.cpu_count() or 1, 8))


def _pool(workers):
    """A process-wide thread pool of ``workers`` threads, rebuilt after a fork (threads do not survive one)."""
    st = _pool_state
    pid = os.getpid()
    if st["pool"] is None or st["pid"] != pid or st["workers"] != workers:
        with _pool_lock:
            if st["pool"] is None or st["pid"] != pid or st["workers"] != workers:
                from concurrent.futures import ThreadPoolExecutor
                old = st["pool"]
                if old is not None and st["pid"] == pid:
                    old.shutdown(wait=False)
                st["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="minitorch_gpu-optim")
                st["pid"] = pid
                st["workers"] = workers
    return st["pool"]


def _per_tensor(values, n):
    """A scalar repeated ``n`` times, or a per-tensor sequence as a list."""
    if isinstance(values, (list, tuple)):
        if len(values) != n:
            raise ValueError(f"expected {n} scalars, one per tensor, but got {len(values)}")
        return list(values)
    return [values] * n


class OptimMixin:
    """List primitives and fused optimizer steps (see the module docstring)."""

    # elements per piece of the fused loops: a piece of each array plus the scratch buffers stay in L2.
    # None processes whole tensors (the right choice for a GPU, where there is no cache to fit).
    optim_chunk = 32768
    # threads for long fused steps on the CPU; None: $MINITORCH_GPU_OPTIM_THREADS or the CPU count (at most 8)
    optim_threads = None

    # ------------------------------------------------------------------ foreach: one op over a list
    def foreach_unary(self, name, xs, inplace=False):
        """``name`` (neg, sqrt or sign) applied to every array, in place or into new arrays."""
        fn = getattr(self.xp, _UNARY[name])
        return [fn(x, out=x if inplace else self.xp.empty_like(x)) for x in xs]

    def foreach_scalar(self, name, xs, scalars, inplace=False):
        """``x <name> s`` for every array; ``scalars`` is one number or one per array."""
        fn = getattr(self.xp, _BINARY[name])
        ss = _per_tensor(scalars, len(xs))
        return [fn(x, s, out=x if inplace else self.xp.empty_like(x)) for x, s in zip(xs, ss)]

    def foreach_list(self, name, xs, ys, alpha=1, inplace=False):
        """``x <name> alpha * y`` pairwise (``alpha`` is meant for add and sub)."""
        fn = getattr(self.xp, _BINARY[name])
        out = []
        for x, y in zip(xs, ys):
            if alpha != 1:
                y = self.xp.multiply(y, alpha)
            out.append(fn(x, y, out=x if inplace else self.xp.empty_like(x)))
        return out

    def foreach_lerp(self, xs, ys, weight, inplace=True):
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

    def foreach_addcmul(self, xs, ys, zs, values=1, inplace=False):
        """``x + value * y * z``; ``values`` is one number or one per array."""
        return self._foreach_addc(self.xp.multiply, xs, ys, zs, values, inplace)

    def foreach_addcdiv(self, xs, ys, zs, values=1, inplace=False):
        """``x + value * y / z``; ``values`` is one number or one per array."""
        return self._foreach_addc(self.xp.divide, xs, ys, zs, values, inplace)

    def _foreach_addc(self, op, xs, ys, zs, values, inplace):
        xp = self.xp
        vs = _per_tensor(values, len(xs))
        out = []
        for x, y, z, v in zip(xs, ys, zs, vs):
            t = op(y, z, out=xp.empty_like(x))
            if v != 1:
                xp.multiply(t, v, out=t)
            out.append(xp.add(x, t, out=x if inplace else t))
        return out

    # ------------------------------------------------------------------ the fused driver
    def _optim_scratch(self, n, np_dtype, k):
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

    def _optim_threads(self):
        n = self.optim_threads
        return _default_threads() if n is None else max(1, int(n))

    def _fused_run(self, body, lists, written, n_tmp):
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
        if not pieces:
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

    def _fused_pieces(self, body, pieces, n_tmp, chunk, dtypes):
        scratch = {dt: self._optim_scratch(chunk, dt, n_tmp) for dt in dtypes}
        for i, flat, s, e in pieces:
            k = e - s
            bufs = scratch[flat[0].dtype]
            body([None if a is None else a[s:e] for a in flat], [b[:k] for b in bufs[:n_tmp]], i)

    def _scalar_fn(self, params):
        """How a fused body passes its scalars: NumPy dispatches a 0-d array of the compute dtype about twice as
        fast as a Python float (which it converts on every call), and the per-call cost adds up over hundreds of
        pieces. Other array modules take Python floats."""
        if self.xp is not np or not params:
            return float
        dt = params[0].dtype
        cdt = dt if (dt == np.float32 or dt == np.float64) else np.dtype(np.float32)
        return lambda v: np.asarray(v, dtype=cdt)

    # ------------------------------------------------------------------ fused optimizer steps
    def fused_adam(self, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2, eps,
                   weight_decay, amsgrad, maximize, decoupled):
        """One Adam (``decoupled=False``) or AdamW step over a group, in place.

        ``steps``: each tensor's step count after this step's increment (Python floats). ``max_exp_avg_sqs`` is
        used when ``amsgrad``. The update is PyTorch's, with the bias corrections folded into two scalars:
        ``p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)`` computed as
        ``p += (-(lr / bc1) * sqrt(bc2)) * m / (sqrt(v) + eps * sqrt(bc2))``.
        """
        xp = self.xp
        mul, add, sub = xp.multiply, xp.add, xp.subtract
        n = len(params)
        coupled = weight_decay != 0 and not decoupled
        c = self._scalar_fn(params)
        decay = c(1.0 - lr * weight_decay) if (weight_decay != 0 and decoupled) else None
        g_scale = c(-(1.0 - beta1) if (maximize and not coupled) else (1.0 - beta1))
        consts = []
        for st in steps:
            bc1 = 1.0 - beta1 ** st
            bc2_sqrt = (1.0 - beta2 ** st) ** 0.5
            consts.append((c(eps * bc2_sqrt), c(-(lr / bc1) * bc2_sqrt)))
        beta1, beta2, one_minus_b2, weight_decay = c(beta1), c(beta2), c(1.0 - beta2), c(weight_decay)

        def body(a, t, i):
            p, g, m, v, vmax = a
            A, B = t
            if decay is not None:
                mul(p, decay, out=p)
            if coupled:
                mul(p, weight_decay, out=B)
                (sub if maximize else add)(B, g, out=B)
                g = B
            mul(g, g_scale, out=A)
            mul(m, beta1, out=m)
            add(m, A, out=m)
            mul(g, g, out=A)
            mul(A, one_minus_b2, out=A)
            mul(v, beta2, out=v)
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

        vmaxs = max_exp_avg_sqs if amsgrad else [None] * n
        self._fused_run(body, (params, grads, exp_avgs, exp_avg_sqs, vmaxs), (0, 2, 3, 4), 2)

    def fused_sgd(self, params, grads, momentum_buffers, first_steps, lr, weight_decay, momentum, dampening,
                  nesterov, maximize):
        """One SGD step over a group, in place. ``momentum_buffers`` are used when ``momentum != 0``;
        ``first_steps[i]`` says buffer ``i`` is new and takes the (decayed) gradient as it is."""
        xp = self.xp
        mul, add, sub = xp.multiply, xp.add, xp.subtract
        n = len(params)
        use_mom = momentum != 0
        use_wd = weight_decay != 0
        c = self._scalar_fn(params)
        lr, weight_decay, momentum, one_minus_damp = c(lr), c(weight_decay), c(momentum), c(1.0 - dampening)

        def body(a, t, i):
            p, g, buf = a
            A, B = t
            if use_wd:
                mul(p, weight_decay, out=A)
                (sub if maximize else add)(A, g, out=A)
                g = A
            elif maximize:
                xp.negative(g, out=A)
                g = A
            if use_mom:
                if first_steps[i]:
                    xp.copyto(buf, g)
                else:
                    mul(buf, momentum, out=buf)
                    if dampening != 0:
                        mul(g, one_minus_damp, out=B)
                        add(buf, B, out=buf)
                    else:
                        add(buf, g, out=buf)
                if nesterov:
                    mul(buf, momentum, out=B)
                    add(B, g, out=B)
                    g = B
                else:
                    g = buf
            mul(g, lr, out=B)
            sub(p, B, out=p)

        bufs = momentum_buffers if use_mom else [None] * n
        self._fused_run(body, (params, grads, bufs), (0, 2), 2)

    def fused_rmsprop(self, params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps, weight_decay,
                      momentum, centered, maximize):
        """One RMSprop step over a group, in place (``grad_avgs`` used when centered, ``momentum_buffers`` when
        ``momentum > 0``)."""
        xp = self.xp
        mul, add, sub = xp.multiply, xp.add, xp.subtract
        n = len(params)
        use_mom = momentum > 0
        use_wd = weight_decay != 0
        c = self._scalar_fn(params)
        one_minus_alpha = c(1.0 - alpha)
        lr, alpha, eps, weight_decay, momentum = c(lr), c(alpha), c(eps), c(weight_decay), c(momentum)

        def body(a, t, i):
            p, g, sq, gavg, buf = a
            A, B, C = t
            if use_wd:
                mul(p, weight_decay, out=A)
                (sub if maximize else add)(A, g, out=A)
                g = A
            elif maximize:
                xp.negative(g, out=A)
                g = A
            mul(g, g, out=B)
            mul(B, one_minus_alpha, out=B)
            mul(sq, alpha, out=sq)
            add(sq, B, out=sq)
            if centered:
                mul(g, one_minus_alpha, out=B)
                mul(gavg, alpha, out=gavg)
                add(gavg, B, out=gavg)
                mul(gavg, gavg, out=B)
                sub(sq, B, out=B)
                xp.sqrt(B, out=B)
            else:
                xp.sqrt(sq, out=B)
            add(B, eps, out=B)
            if use_mom:
                xp.divide(g, B, out=C)
                mul(buf, momentum, out=buf)
                add(buf, C, out=buf)
                mul(buf, lr, out=C)
            else:
                xp.divide(g, B, out=C)
                mul(C, lr, out=C)
            sub(p, C, out=p)

        gavgs = grad_avgs if centered else [None] * n
        bufs = momentum_buffers if use_mom else [None] * n
        self._fused_run(body, (params, grads, square_avgs, gavgs, bufs), (0, 2, 3, 4), 3)

    def fused_adagrad(self, params, grads, state_sums, steps, lr, lr_decay, weight_decay, eps, maximize):
        """One Adagrad step over a group, in place; ``steps`` as in :meth:`fused_adam`."""
        xp = self.xp
        mul, add, sub = xp.multiply, xp.add, xp.subtract
        c = self._scalar_fn(params)
        clrs = [c(lr / (1.0 + (st - 1.0) * lr_decay)) for st in steps]
        use_wd = weight_decay != 0
        weight_decay, eps = c(weight_decay), c(eps)

        def body(a, t, i):
            p, g, s = a
            A, B = t
            if use_wd:
                mul(p, weight_decay, out=A)
                (sub if maximize else add)(A, g, out=A)
                g = A
            elif maximize:
                xp.negative(g, out=A)
                g = A
            mul(g, g, out=B)
            add(s, B, out=s)
            xp.sqrt(s, out=B)
            add(B, eps, out=B)
            xp.divide(g, B, out=B)
            mul(B, clrs[i], out=B)
            sub(p, B, out=p)

        self._fused_run(body, (params, grads, state_sums), (0, 2), 2)

    def fused_lion(self, params, grads, exp_avgs, lr, beta1, beta2, weight_decay, maximize):
        """One Lion step over a group, in place: ``c = b1 m + (1 - b1) g``; ``p *= 1 - lr wd``;
        ``p -= lr sign(c)``; ``m = b2 m + (1 - b2) g``."""
        xp = self.xp
        mul, add = xp.multiply, xp.add
        sgn = -1.0 if maximize else 1.0
        c = self._scalar_fn(params)
        decay = c(1.0 - lr * weight_decay) if weight_decay != 0 else None
        g1, g2, neg_lr = c(sgn * (1.0 - beta1)), c(sgn * (1.0 - beta2)), c(-lr)
        beta1, beta2 = c(beta1), c(beta2)

        def body(a, t, i):
            p, g, m = a
            A, B = t
            mul(m, beta1, out=A)
            mul(g, g1, out=B)
            add(A, B, out=A)
            xp.sign(A, out=A)
            if decay is not None:
                mul(p, decay, out=p)
            mul(A, neg_lr, out=A)
            add(p, A, out=p)
            mul(m, beta2, out=m)
            mul(g, g2, out=B)
            add(m, B, out=m)

        self._fused_run(body, (params, grads, exp_avgs), (0, 2), 2)
