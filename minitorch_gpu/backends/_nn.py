"""Neural-network primitives: fused cross-entropy over class indices, normalisation (layer norm, and the
grouped statistics behind group / batch / instance / RMS norm), the index counts of embedding's
``scale_grad_by_freq``, and the index arithmetic of max pooling.

The bodies are written against ``self.xp`` and the other primitive families, so they serve NumPy and CuPy
alike; the CUDA backend replaces ``cross_entropy_*`` and ``layer_norm_*`` with the kernels of
kernels/cross_entropy.cu and kernels/layernorm.cu where those cover the case.

Forward primitives that have a backward return, besides their result, a dict of arrays (``saved``) that the
backward primitive of the same backend reads back. Callers keep its entries as saved tensors (so that the
autograd engine frees them after backward) and never look inside: the bodies here keep what makes the
backward a few fused passes (cross-entropy: exp of the shifted logits, their sums and the targets' flat
positions; normalisation: the normalised values), the kernels keep per-row statistics (log-sum-exp; mean
and 1/std) and re-read the input. The normalisation backward bodies accept the kernels' (mean, 1/std) too,
so a backward that the kernel declines still works (the CUDA backend recomputes cross-entropy's state for
its body instead).

Half-precision inputs compute in float32 (PyTorch's CPU "opmath") and float32 stays float32.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from ._types import Array, NpDtype, Operand, PrimitiveHost, Saved, Shape

Needs: TypeAlias = tuple[bool, bool, bool]
"""Which of (input, weight, bias) a normalisation backward must give a gradient for."""

Grads: TypeAlias = "tuple[Array | None, Array | None, Array | None]"
"""(d input, d weight, d bias), None where not asked for."""

# largest argument whose exp is finite, by itemsize of the compute dtype (float32, float64)
_EXP_LIMIT = {4: math.log(3.4028234663852886e38), 8: math.log(1.7976931348623157e308)}


# the compute dtype of the 2-byte floats (float16, bfloat16); other floats compute in their own dtype. Written
# inline as ``_F32 if dt.itemsize == 2 else dt``: these bodies run once per training step on small arrays too.
_F32 = np.dtype(np.float32)
_ROW_FLOATS = (_F32, np.dtype(np.float64))


class NNMixin(PrimitiveHost):
    # ================================================================ cross-entropy over class indices
    def cross_entropy_forward(self, x: Array, target: Array, weight: Array | None = None, ignore_index: int = -100,
                              label_smoothing: float = 0.0, *, tidx: Array | None = None, mask: Array | None = None,
                              coef: Array | None = None, want_grad: bool = False) -> tuple[Array, Saved]:
        """Per-sample cross-entropy of logits and class-index targets, and the state its backward reads.

        ``x``: float logits (N, C, *spatial), classes on axis 1. ``target``: int64 (N, 1, *spatial), each entry a
        class in [0, C) or ``ignore_index`` (the caller has checked). ``weight``: per-class weights (C,) or None.
        With p = softmax(x_i), s = ``label_smoothing``, w the class weights (ones without ``weight``) and y the
        target, the loss of a counted sample is (1 - s) w_y (-log p_y) + (s / C) sum_c w_c (-log p_c); ignored
        samples give 0. The optional hints, for a caller that has them already: ``tidx`` (target with ignored
        entries replaced by 0), ``mask`` (1 for counted entries, 0 for ignored, in the compute dtype; None when
        all count) and ``coef`` (w_y * mask, or None when that is all ones). ``want_grad``: the backward will
        run, so a backend may compute the gradient now, in the same pass over the logits (this body's saved
        state serves the backward either way).

        Returns ``(loss, saved)``: loss (N, 1, *spatial) in the compute dtype (float32 for 2-byte floats).
        """
        cdt, wd = self._ce_compute(x.dtype, weight)
        if x.dtype != cdt:
            x = x.astype(cdt)
        if tidx is None:
            tidx, mask = self._ce_targets(target, ignore_index, cdt)
            coef = None
            if wd is not None:
                coef = self.take(wd, tidx)
                if mask is not None:
                    coef = self.binary("mul", coef, mask, out=coef)
            elif mask is not None:
                coef = mask
        n_classes = x.shape[1]
        ls = label_smoothing
        flat = None
        if x.ndim == 2 and x.flags.c_contiguous:
            # the flat position of each sample's target logit: one 1-d take instead of a 2-d gather here, and
            # in the backward a take and a write instead of a gather and a scatter
            flat = self.arange_index(x.shape[0])
            flat *= n_classes
            flat += tidx.reshape(-1)
        e = self._ce_shifted_logits(x, tidx, n_classes, flat)
        picked = None
        if e is None:
            # a logit far above its sample's target logit, or a NaN / inf: shift by the row maxima instead
            e = self.binary("sub", x, self.amax(x, (1,), True))
            picked = self._ce_at_target(e, tidx, flat)
        if ls > 0:
            ssum = self._ce_class_sum(e, wd)
        self.unary("exp", e, out=e)
        se = self._ce_class_sum(e)
        lse = self.unary("log", se)
        if ls > 0:
            # sum_c w_c (-log p_c) = W lse - sum_c w_c shifted_c
            wsum = float(n_classes) if wd is None else self.sum(wd)
            smooth = self.binary("sub", self.binary("mul", lse, wsum), ssum, out=ssum)
        loss = lse if picked is None else self.binary("sub", lse, picked, out=picked)  # -log p[target]
        if ls > 0:
            if wd is not None:
                loss = self.binary("mul", loss, self.take(wd, tidx), out=loss)
            loss = self.binary("mul", loss, 1.0 - ls, out=loss)
            loss = self.binary("add", loss, self.binary("mul", smooth, ls / n_classes, out=smooth), out=loss)
            if mask is not None:
                loss = self.binary("mul", loss, mask, out=loss)
        elif coef is not None:
            loss = self.binary("mul", loss, coef, out=loss)
        if flat is None:
            return loss, {"e": e, "se": se}
        return loss, {"e": e, "se": se, "flat": flat}

    def cross_entropy_backward(self, gout: Array, x: Array, target: Array, weight: Array | None, ignore_index: int,
                               label_smoothing: float, saved: Saved, denom: float | Array | None = None, *,
                               tidx: Array | None = None, mask: Array | None = None) -> Array:
        """The gradient of the logits (x's shape, compute dtype) from ``cross_entropy_forward``'s ``saved``.

        ``gout``: the gradient of the per-sample losses, a 0-d array (the same for every sample: reductions
        'sum' and 'mean') or one per sample (N, 1, *spatial); divided by ``denom`` when that is given and
        non-zero ('mean'). The other arguments are the forward's. The gradient of a counted sample is
        go (A p - B) with A = (1 - s) w_y + (s / C) W, B = (1 - s) w_y onehot(y) + (s / C) w (W = sum of w).
        """
        cdt, wd = self._ce_compute(x.dtype, weight)
        if tidx is None:
            tidx, mask = self._ce_targets(target, ignore_index, cdt)
        gr = gout if gout.dtype == cdt else gout.astype(cdt)
        if denom is not None and not (isinstance(denom, (int, float)) and denom == 0):
            gr = self.binary("div", gr, denom)
        a, at_target, smooth = self.cross_entropy_coefficients(wd, tidx, mask, label_smoothing, x.shape)
        # p = e / se: the division folds into the per-sample scale
        rowc = self.binary("div", gr, saved["se"])
        if not isinstance(a, float):
            rowc = self.binary("mul", rowc, a, out=rowc)
        dl = self.binary("mul", saved["e"], rowc)
        flat = saved.get("flat")
        if flat is not None and not dl.flags.c_contiguous:
            flat = None  # the write below goes through a flat view
        cur = self._ce_at_target(dl, tidx, flat)
        cur = self.binary("sub", cur, self.binary("mul", at_target, gr), out=cur)
        if flat is None:
            self.scatter_into(dl, 1, tidx, cur)
        else:
            self.setitem(dl.reshape(-1), flat, cur.reshape(-1))
        if smooth is not None:
            rows = gr if mask is None else self.binary("mul", mask, gr)
            dl = self.binary("sub", dl, self.binary("mul", rows, smooth), out=dl)
        return dl

    def _ce_compute(self, x_dtype: NpDtype, weight: Array | None) -> tuple[NpDtype, Array | None]:
        """(the compute dtype of logits of ``x_dtype``, the class weights in it or None)."""
        cdt = _F32 if x_dtype.itemsize == 2 else x_dtype
        if weight is not None and weight.dtype != cdt:
            weight = weight.astype(cdt)
        return cdt, weight

    def _ce_targets(self, target: Array, ignore_index: int, cdt: NpDtype) -> tuple[Array, Array | None]:
        """(target with ignored entries pointed at class 0, 0/1 mask of counted entries or None)."""
        if target.size:
            lo, hi = self.index_range(target)
            if lo <= ignore_index <= hi:
                keep = self.binary("ne", target, ignore_index)
                return self.where(keep, target, 0), keep.astype(cdt)
        return target, None

    def cross_entropy_coefficients(self, weight: Array | None, tidx: Array, mask: Array | None, ls: float,
                                   shape: Shape) -> tuple[Operand, Operand, Operand | None]:
        """The per-sample constants of the cross-entropy gradient go (A p - B) (see ``cross_entropy_backward``):
        (A, B at the target, the smoothing part of B per class), each an array or a Python float, with
        ignored samples' A and B zeroed; the smoothing part is None without label smoothing. ``weight`` is in
        the compute dtype (or None), ``tidx`` and ``mask`` as the forward's hints, ``shape`` the logits'."""
        wd = weight
        n_classes = shape[1]
        if wd is None:
            a = 1.0
            at_target = 1.0 - ls if ls > 0 else 1.0
        else:
            wy = self.take(wd, tidx)
            if ls > 0:
                at_target = self.binary("mul", wy, 1.0 - ls)
                a = self.binary("add", at_target, self.sum(wd) * (ls / n_classes))
            else:
                a = at_target = wy
        smooth = None
        if ls > 0:
            if wd is None:
                smooth = ls / n_classes
            else:
                smooth = self.binary("mul", wd.reshape((1, n_classes) + (1,) * (len(shape) - 2)), ls / n_classes)
        if mask is not None:
            a = self.binary("mul", mask, a)
            at_target = self.binary("mul", mask, at_target)
        return a, at_target, smooth

    def _ce_at_target(self, a: Array, tidx: Array, flat: Array | None) -> Array:
        """The entries of (N, C, *spatial) ``a`` at each sample's target class, shaped like ``tidx``; ``flat``
        (or None) holds their flat positions in a C-contiguous 2-d ``a``."""
        if flat is None:
            return self.gather(a, 1, tidx)
        return self.take(a, flat).reshape(tidx.shape)

    def _ce_shifted_logits(self, x: Array, tidx: Array, n_classes: int, flat: Array | None = None) -> Array | None:
        """``x - x[target]`` per sample, or None when some exp of it could overflow (or it holds a NaN).

        Any per-sample shift gives the same softmax; the target's own logit costs a gather where the row maxima
        cost a reduction along each row, the slowest pass of the array libraries, and it makes -log p[target]
        simply log(sum(exp(shifted))), without the cancellation of lse - x[target]. The shifted logits must stay
        below the exp limit less log(C), so that the sums cannot overflow either; the maximum over the whole
        array, one fast reduction, tells."""
        e = self.binary("sub", x, self._ce_at_target(x, tidx, flat))
        if e.size:
            top = float(self.to_numpy(self.amax(e)))
            if not top <= _EXP_LIMIT[e.dtype.itemsize] - math.log(n_classes) - 1.0:
                return None
        return e

    def _ce_class_sum(self, a: Array, w: Array | None = None) -> Array:
        """Sum over the class axis (1, kept), weighted by the class vector ``w`` when given. For (N, C) it is a
        BLAS matrix-vector product: NumPy's reductions along rows cost several times the arithmetic."""
        if a.ndim == 2:
            if w is None:
                w = self.ones((a.shape[1],), a.dtype)
            return self.matmul(a, w).reshape(a.shape[0], 1)
        if w is not None:
            a = self.binary("mul", a, w.reshape((1, w.shape[0]) + (1,) * (a.ndim - 2)))
        return self.sum(a, (1,), True)

    # ================================================================ normalisation
    def norm_moments(self, x: Array, axes: tuple[int, ...],
                     center: bool = True) -> tuple[Array | None, Array, Array]:
        """(mean or None, biased variance, centred values) of ``x`` over ``axes`` (kept), in two passes: the
        mean first, then the mean square of the centred values, which stays accurate where E[x^2] - E[x]^2
        would cancel. The centred values are a new array when ``center`` (the caller may overwrite it), else
        ``x`` itself; ``center=False`` gives the mean square (RMS normalisation)."""
        n = math.prod([x.shape[a] for a in axes])
        mean = None
        xc = x
        if center:
            mean = self.mean(x, axes, keepdims=True)
            xc = self.binary("sub", x, mean)
        lead = x.shape[:x.ndim - len(axes)]
        vecdot = getattr(self.xp, "vecdot", None)
        if n and vecdot is not None and axes == tuple(range(len(lead), x.ndim)) and xc.flags.c_contiguous:
            # a row-wise dot product needs no squared temporary
            rows = xc.reshape(-1, n)
            var = vecdot(rows, rows).reshape(lead + (1,) * len(axes))
            var /= x.dtype.type(n)
        else:
            var = self.mean(self.binary("mul", xc, xc), axes, keepdims=True)
        return mean, var, xc

    def norm_forward(self, x: Array, axes: tuple[int, ...], weight: Array | None = None, bias: Array | None = None,
                     eps: float = 1e-5, center: bool = True, stats: tuple[Array, Array] | None = None,
                     keep: bool = True) -> tuple[Array, Saved]:
        """``(x - mean) * rstd * weight + bias`` with statistics over ``axes`` of ``x``: ``(y, saved)``.

        ``weight`` / ``bias`` (either may be None) broadcast against ``x``; rstd = 1 / sqrt(var + eps) with the
        biased variance. ``center=False`` leaves the mean out (RMS normalisation); ``stats`` passes precomputed
        ``(mean, var)`` (kept dims). ``keep``: the caller keeps ``saved`` for a backward, so ``y`` must not share
        memory with it. ``y`` has x's dtype."""
        out_npd = x.dtype
        cdt = _F32 if out_npd.itemsize == 2 else out_npd
        xv = x if x.dtype == cdt else self.astype(x, cdt)
        if stats is None:
            mean, var, xc = self.norm_moments(xv, axes, center)
        else:
            mean, var = stats
            xc = self.binary("sub", xv, mean) if center else xv
        var = self.binary("add", var, eps)
        rstd = self.unary("rsqrt", var, out=var)
        xhat = self.binary("mul", xc, rstd, out=None if xc is xv else xc)
        w = weight if weight is None or weight.dtype == cdt else self.astype(weight, cdt)
        b = bias if bias is None or bias.dtype == cdt else self.astype(bias, cdt)
        if w is not None:
            y = self.binary("mul", xhat, w)
            if b is not None:
                self.binary("add", y, b, out=y)
        elif b is not None:
            y = self.binary("add", xhat, b)
        else:
            # the result is the caller's to modify in place, so the saved normalised values must be a copy
            y = self.copy(xhat) if keep else xhat
        if y.dtype != out_npd:
            y = self.astype(y, out_npd)
        return y, {"xhat": xhat, "rstd": rstd}

    def norm_backward(self, g: Array, x: Array, weight: Array | None, saved: Saved, axes: tuple[int, ...],
                      param_axes: tuple[int, ...], center: bool = True, needs: Needs = (True, True, True),
                      keepdims: bool = True) -> Grads:
        """(dx, dweight, dbias) of ``norm_forward`` from its ``saved``; each None unless asked for in ``needs``.

        ``g`` and ``x`` are shaped like the forward's input, ``weight`` as in the forward (or None);
        ``param_axes`` are the axes weight and bias broadcast over (their gradients sum over them, kept unless
        ``keepdims`` is false). dx has x's dtype, dweight / dbias the compute dtype:
        dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * weight."""
        nx, nw, nb = needs
        rstd = saved["rstd"]
        cdt = rstd.dtype
        xhat = saved.get("xhat")
        if xhat is None and (nx or nw):
            # the kernels' state: normalise again from the input and its statistics
            xv = x if x.dtype == cdt else self.astype(x, cdt)
            xhat = self.binary("mul", self.binary("sub", xv, saved["mean"]) if center else xv, rstd)
        w = weight if weight is None or weight.dtype == cdt else self.astype(weight, cdt)
        gd = g if g.dtype == cdt else self.astype(g, cdt)
        gx = gw = gb = None
        t = self.binary("mul", gd, xhat) if (nw or nx) else None
        if nw:
            # the sum is a new array; without broadcast axes, t itself would be overwritten below
            gw = self.sum(t, param_axes, keepdims) if param_axes else self.copy(t)
        if nb:
            gb = self.sum(gd, param_axes, keepdims) if param_axes else self.copy(gd)
        if nx:
            n = math.prod([x.shape[a] for a in axes])
            inv_n = 1.0 / n if n else 0.0
            if w is not None and x.ndim == 2 and axes == (1,) and w.shape[-1] == w.size == x.shape[1]:
                # (rows, features) with a per-feature weight: both row sums of dxhat = dy * w are products
                # with w (one GEMV each, no scaled copy of t)
                w1 = w if w.ndim == 1 else w.reshape(-1)
                c = self.binary("mul", self.matmul(t, w1).reshape(rstd.shape), inv_n)
                a = self.binary("mul", self.matmul(gd, w1).reshape(rstd.shape), inv_n) if center else None
                gxh = self.binary("mul", gd, w)
            else:
                if w is not None:
                    gxh = self.binary("mul", gd, w)
                    self.binary("mul", t, w, out=t)  # t = dxhat * xhat
                else:
                    gxh = gd
                c = self.binary("mul", self.sum(t, axes, keepdims=True), inv_n)
                a = self.binary("mul", self.sum(gxh, axes, keepdims=True), inv_n) if center else None
            self.binary("mul", xhat, c, out=t)
            # gd belongs to the caller (it may be another node's saved gradient): never write into it
            gxh = self.binary("sub", gxh, t, out=None if gxh is gd else gxh)
            if a is not None:
                self.binary("sub", gxh, a, out=gxh)
            self.binary("mul", gxh, rstd, out=gxh)
            if gxh.dtype != x.dtype:
                gxh = self.astype(gxh, x.dtype)
            gx = gxh
        return gx, gw, gb

    def layer_norm_forward(self, x: Array, weight: Array | None = None, bias: Array | None = None, eps: float = 1e-5,
                           center: bool = True, keep: bool = True) -> tuple[Array, Saved]:
        """Layer norm of the rows of a 2-D ``x`` (rows, N) with per-feature ``weight`` / ``bias`` (N,) or None:
        ``(y, saved)`` as ``norm_forward`` gives. ``center=False`` is RMS normalisation."""
        dt = x.dtype
        if self.xp is np and center and dt in _ROW_FLOATS and x.ndim == 2 and x.shape[1] >= 2 and x.shape[0] \
                and x.flags.c_contiguous and (weight is None or weight.dtype == dt) \
                and (bias is None or bias.dtype == dt):
            # NOTE: norm_forward's steps for the common case with the array library's functions called directly:
            # on small layers the generic body's bookkeeping costs as much as its arithmetic
            mean = self.mean(x, (1,), keepdims=True)
            xc = np.subtract(x, mean)
            var = np.vecdot(xc, xc)[:, None]
            var /= dt.type(x.shape[1])
            var += eps
            rstd = np.reciprocal(np.sqrt(var, out=var), out=var)
            xhat = np.multiply(xc, rstd, out=xc)
            if weight is not None:
                y = np.multiply(xhat, weight)
                if bias is not None:
                    y += bias
            elif bias is not None:
                y = np.add(xhat, bias)
            else:
                y = xhat.copy() if keep else xhat
            return y, {"xhat": xhat, "rstd": rstd}
        # (N,) parameters broadcast along the rows as they are
        return self.norm_forward(x, (1,), weight, bias, eps, center, None, keep)

    def layer_norm_backward(self, g: Array, x: Array, weight: Array | None, saved: Saved, center: bool = True,
                            needs: Needs = (True, True, True)) -> Grads:
        """(dx (rows, N), dweight (N,), dbias (N,)) of ``layer_norm_forward``, each None unless in ``needs``."""
        return self.norm_backward(g, x, weight, saved, (1,), (0,), center, needs, False)

    # ================================================================ embedding
    def bincount(self, x: Array, minlength: int = 0) -> Array:
        """How often each value 0, 1, ... occurs in the non-negative 1-d integer array ``x`` (int64, at least
        ``minlength`` entries)."""
        return self.xp.bincount(x, minlength=minlength).astype(np.int64, copy=False)

    # ================================================================ pooling
    def max_pool_positions(self, choice: Array, kernel: Shape, stride: Shape, pads: Sequence[tuple[int, int]],
                           dilation: Shape, spatial: Shape) -> Array:
        """The flat index within the input plane of the element picked at kernel offset ``choice`` (an int array
        shaped ``(*lead, *blocks)``, a flat offset into the window) of each pooling window over the last
        ``len(kernel)`` dims of an input whose spatial shape is ``spatial`` and whose padding is ``pads``
        ((low, high) per dim)."""
        xp = self.xp
        k = len(kernel)
        nlead = choice.ndim - k
        flat = None
        for i in range(k):
            inner = math.prod(kernel[i + 1:])
            offset = (choice // inner) % kernel[i] if inner > 1 else choice % kernel[i]
            shape = [1] * choice.ndim
            shape[nlead + i] = choice.shape[nlead + i]
            start = xp.arange(choice.shape[nlead + i], dtype=np.int64).reshape(shape) * stride[i] - pads[i][0]
            pos = start + offset * dilation[i]
            if pads[i][0]:
                # a window whose values are all -inf picks its first element, which may be padding; PyTorch
                # reports the first element inside the input instead
                pos = xp.maximum(pos, 0)
            flat = pos if flat is None else flat * spatial[i] + pos
        return flat

    def adaptive_max_pool(self, x: Array, tables: Sequence[npt.NDArray[np.int64]]) -> tuple[Array, Array]:
        """(values, flat input indices) of adaptive max pooling over the last ``len(tables)`` dims of ``x``.

        ``tables[i]`` is a host int64 array (bins, width): row b lists the input positions of bin b along that
        dim, padded to the widest bin by repeating its last position (repeats do not change a max)."""
        xp = self.xp
        k = len(tables)
        nlead = x.ndim - k
        spatial = x.shape[nlead:]
        sizes = tuple(t.shape[0] for t in tables)
        widths = [t.shape[1] for t in tables]
        # advanced indices shaped (o0, w0, o1, w1, ...) broadcast against each other
        index = []
        dev_tables = []
        for i, t in enumerate(tables):
            shape = [1] * (2 * k)
            shape[2 * i], shape[2 * i + 1] = t.shape
            dt = xp.asarray(t)
            dev_tables.append(dt)
            index.append(dt.reshape(shape))
        gathered = x[(slice(None),) * nlead + tuple(index)]
        perm = tuple(range(nlead)) + tuple(nlead + 2 * i for i in range(k)) + \
            tuple(nlead + 2 * i + 1 for i in range(k))
        win = self.reshape(gathered.transpose(perm), x.shape[:nlead] + sizes + (math.prod(widths),))
        vals, choice = self.max_dim(win, -1)
        flat = None
        for i, t in enumerate(dev_tables):
            inner = math.prod(widths[i + 1:])
            offset = (choice // inner) % widths[i]
            rows = [1] * choice.ndim
            rows[nlead + i] = sizes[i]
            which = xp.arange(sizes[i], dtype=np.int64).reshape(rows)
            pos = t[which, offset]
            flat = pos if flat is None else flat * spatial[i] + pos
        return vals, flat

    # ================================================================ attention weights
    def attention_softmax(self, scores: Array, causal: bool = False, mask: Array | None = None,
                          overwrite: bool = False, scale: float = 1.0) -> Array:
        """The attention weights softmax(scores * scale masked) along the last axis of ``scores`` (..., L, S) as a
        new array; a row whose keys are all masked out gives zeros. ``causal`` masks the keys after each query
        (top-left aligned); ``mask`` (of ``scores``' dtype when float, broadcasting to its shape) is bool (True
        takes part) or added to the scaled scores. ``overwrite``: ``scores`` is the caller's scratch
        (C-contiguous), which may be overwritten and returned."""
        if scale != 1.0:
            scores = self.binary("mul", scores, scale, out=scores if overwrite else None)
            overwrite = overwrite or scores.flags.c_contiguous
        L, S = scores.shape[-2:]
        keep = self.tri_mask(L, S, 0) if causal else mask if mask is not None and mask.dtype == np.bool_ else None
        if self.xp is np and not self.reads_wait and scores.size and (scores.flags.c_contiguous or not overwrite):
            # NOTE: an additive 0 / -inf mask is one vectorised pass; where() with a mask whose edge moves every row
            # is ~10x slower in NumPy. An inf or NaN score under the mask gives NaN where where() gives -inf:
            # the array's maximum shows it, and the exact path below takes over.
            add = self.tri_mask(L, S, 0, float("-inf"), scores.dtype) if causal else mask if keep is None else \
                self.where(keep, scores.dtype.type(0), scores.dtype.type(-np.inf))
            if add is not None:
                scores = np.add(scores, add, out=scores if overwrite else None)
            parts = self._exp_rows(scores, scores.ndim - 1, safe=True, least_size=1)
            if parts is not None:
                e, s, _ = parts
                e /= s
                return e
            if keep is not None:
                # masked positions back to -inf whatever the addition made of them (unmasked ones added 0)
                self.xp.copyto(scores, scores.dtype.type(-np.inf), where=~keep)
        elif keep is not None:
            scores = self.where(keep, scores, self.xp.asarray(-np.inf, dtype=scores.dtype))
        elif mask is not None:
            scores = self.binary("add", scores, mask)
        return self.safe_softmax(scores)

    def attention_softmax_backward(self, p: Array, g: Array, scale: float = 1.0, overwrite: bool = False) -> Array:
        """The gradient of the scaled scores of ``attention_softmax`` from its weights ``p`` and their gradient
        ``g``: p (g - sum(g p)) * scale along the last axis. ``overwrite``: ``g`` is the caller's scratch, which may
        be overwritten and returned."""
        ds = self.softmax_backward(p, g, p.ndim - 1)
        if scale != 1.0:
            ds = self.binary("mul", ds, scale, out=ds)
        return ds

    def attention_values(self, p: Array, v: Array, q: Array | None = None) -> Array:
        """``p @ v`` for attention weights (..., L, S) and values (..., S, Ev) of the same batch dims. When the
        queries ``q`` (B, H, L, E) are laid out with the heads inside the sequence (a (B, L, H, E) array seen
        through ``transpose(1, 2)``, as a fused q/k/v projection gives them), the result is laid out the same way,
        as PyTorch's CPU attention lays it out: the (B, H, L, Ev) view of a C-contiguous (B, L, H, Ev) array, which
        ``transpose(1, 2)`` turns back without a copy (the product writes there directly: BLAS takes the output's
        row stride)."""
        if q is None or q.ndim != 4 or p.ndim != 4 or v.ndim != 4 or p.shape[:2] != v.shape[:2] or \
                p.dtype != v.dtype or abs(q.strides[1]) >= abs(q.strides[2]):
            return self.matmul(p, v)
        B, H, L, _ = p.shape
        buf = self.xp.empty((B, L, H, v.shape[-1]), dtype=p.dtype)
        out = buf.transpose(0, 2, 1, 3)
        self.xp.matmul(p, v, out=out)
        return out

    def safe_softmax(self, x: Array) -> Array:
        """softmax along the last axis with rows of all -inf giving zeros instead of NaN."""
        axis = x.ndim - 1
        out_dtype = x.dtype
        if out_dtype.itemsize == 2:
            x = self.astype(x, np.dtype(np.float32))
        m = self.amax(x, axis=axis, keepdims=True)
        dead = self.binary("eq", m, float("-inf"))
        zero = self.zeros((), x.dtype)
        # shifting dead rows by 0 instead of -inf keeps them at exp(-inf) = 0 without a NaN
        e = self.unary("exp", self.binary("sub", x, self.where(dead, zero, m)))
        total = self.sum(e, axis=axis, keepdims=True)
        y = self.binary("div", e, self.where(dead, self.ones((), x.dtype), total), out=e)
        return self.astype(y, out_dtype)

    # ================================================================ fused attention
    # The array library has no fused attention: these bodies decline (None) and the caller composes attention from
    # matmul, softmax and dropout, which is also the reference the fused kernels (attention.cu on CUDA) are tested
    # against. A backend that serves the forward serves the backward of that call too.
    def attention_forward(self, q: Array, k: Array, v: Array, mask: Array | None, causal: bool, scale: float,
                          dropout_p: float, seed: int, offset: int,
                          rng_state: Array | None = None) -> tuple[Array, Array] | None:
        """(softmax(q k^T scale + mask) v with dropout, per-row LSE for the backward), or None (not fused here).

        ``mask``: bool (True takes part) or float (added), broadcasting to (*batch, L, S); ``causal`` masks keys
        after each query. Dropout keeps score (b, q, k) when word (b L + q) S + k of the Philox stream of
        ``seed`` from block ``offset`` is below (1 - p) 2^32: the mask ``rand_bernoulli(1 - p)`` of shape
        (*batch, L, S) draws from the same state; ``rng_state`` as for the ``rand_*`` primitives."""
        return None

    def attention_backward(self, g: Array, q: Array, k: Array, v: Array, out: Array, lse: Array,
                           mask: Array | None, causal: bool, scale: float, dropout_p: float, seed: int,
                           offset: int, rng_state: Array | None = None) -> tuple[Array, Array, Array] | None:
        """(dq, dk, dv) of ``attention_forward``'s call with the same arguments, or None (not fused here)."""
        return None
