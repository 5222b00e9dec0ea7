"""The CTC loss (Graves et al., 2006): the alpha-beta recursion over the blank-extended targets, in log space,
vectorised over the batch and the extended label positions (one array step per time step).

``ctc_loss_forward`` returns each sequence's negative log-likelihood and keeps the log-alphas for
``ctc_loss_backward``, which runs the beta recursion and returns PyTorch's gradient with respect to the
log-probabilities: ``exp(lp) - exp(log(sum_s alpha beta) + nll - lp)`` per class, i.e. the gradient for
log-probabilities that come from a log-softmax (the ``exp(lp)`` term sums to one and passes through it).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ._types import Array, PrimitiveHost, Saved

_NEG_INF = -np.inf


class CTCMixin(PrimitiveHost):

    def _logaddexp3(self, a: Array, b: Array, c: Array) -> Array:
        """log(e^a + e^b + e^c) where each may be -inf (then it adds nothing)."""
        xp = self.xp
        m = xp.maximum(xp.maximum(a, b), c)
        safe = xp.where(xp.isinf(m), 0.0, m)
        with np.errstate(divide="ignore"):
            s = xp.log(xp.exp(a - safe) + xp.exp(b - safe) + xp.exp(c - safe)) + safe
        return xp.where(m == _NEG_INF, _NEG_INF, s)

    def _shift(self, a: Array, k: int) -> Array:
        """``a`` moved k places up its last axis (a[..., s - k] at s), -inf entering at the front (k < 0: from the
        back)."""
        xp = self.xp
        pad = xp.full(a.shape[:-1] + (abs(k),), _NEG_INF, dtype=a.dtype)
        if k > 0:
            return xp.concatenate([pad, a[..., :-k]], axis=-1)
        return xp.concatenate([a[..., -k:], pad], axis=-1)

    def _ctc_layout(self, targets: Array, target_lengths: Array, blank: int) -> tuple[Array, Array]:
        """(extended labels (B, 2S + 1), where a skip over the previous blank is allowed (B, 2S + 1))."""
        xp = self.xp
        b, s = targets.shape
        ext = xp.full((b, 2 * s + 1), blank, dtype=np.int64)
        ext[:, 1::2] = targets
        pos = xp.arange(2 * s + 1)
        ext = xp.where(pos[None, :] < 2 * target_lengths[:, None] + 1, ext, blank)
        prev2 = xp.concatenate([xp.full((b, 2), blank, dtype=np.int64), ext[:, :-2]], axis=1)
        skip = (ext != blank) & (ext != prev2)
        return ext, skip

    def ctc_loss_forward(self, log_probs: Array, targets: Array, input_lengths: Array, target_lengths: Array,
                         blank: int) -> tuple[Array, Saved]:
        """The negative log-likelihood of each padded target (B, S) under the (T, B, C) log-probabilities, and
        what the backward needs. Computes in float64 for float32 inputs too, rounding the result once."""
        xp = self.xp
        lp = log_probs.astype(np.float64)
        t_max, b, _ = lp.shape
        ext, skip = self._ctc_layout(targets, target_lengths, blank)
        width = ext.shape[1]
        lp_ext = xp.take_along_axis(lp, xp.broadcast_to(ext[None], (t_max, b, width)), axis=2)  # (T, B, 2S + 1)
        pos = xp.arange(width)[None, :]
        alpha = xp.full((t_max, b, width), _NEG_INF)
        if t_max:
            alpha[0] = xp.where(pos < xp.minimum(2, 2 * target_lengths[:, None] + 1), lp_ext[0], _NEG_INF)
        for t in range(1, t_max):
            prev = alpha[t - 1]
            two_back = xp.where(skip, self._shift(prev, 2), _NEG_INF)
            alpha[t] = self._logaddexp3(prev, self._shift(prev, 1), two_back) + lp_ext[t]
        rows = xp.arange(b)
        last_t = xp.maximum(input_lengths - 1, 0)
        end = 2 * target_lengths
        final = alpha[last_t, rows]  # (B, 2S + 1)
        a_end = xp.take_along_axis(final, end[:, None], axis=1)[:, 0]
        a_before = xp.where(end > 0, xp.take_along_axis(final, xp.maximum(end - 1, 0)[:, None], axis=1)[:, 0],
                            _NEG_INF)
        nll = -self._logaddexp3(a_end, a_before, xp.full_like(a_end, _NEG_INF))
        nll = xp.where(input_lengths > 0, nll, xp.where(target_lengths > 0, xp.inf, 0.0))
        saved: Saved = {"alpha": alpha, "lp_ext": lp_ext, "ext": ext, "skip": skip, "nll": nll}
        return nll.astype(log_probs.dtype), saved

    def ctc_loss_backward(self, grad: Array, log_probs: Array, input_lengths: Array, target_lengths: Array,
                          zero_infinity: bool, saved: Saved) -> Array:
        """d(sum_b grad[b] nll[b]) / d log_probs, (T, B, C), zero past each input's length (and for an
        infinite loss when ``zero_infinity``)."""
        xp = self.xp
        lp = log_probs.astype(np.float64)
        alpha, lp_ext, ext, skip, nll = saved["alpha"], saved["lp_ext"], saved["ext"], saved["skip"], saved["nll"]
        t_max, b, n_cls = lp.shape
        width = ext.shape[1]
        pos = xp.arange(width)[None, :]
        end = 2 * target_lengths[:, None]
        at_end = (pos == end) | (pos == end - 1)
        # a skip into s + 2 is allowed where it is allowed to land there
        skip_from = xp.concatenate([skip[:, 2:], xp.zeros((b, 2), dtype=bool)], axis=1)
        beta = xp.full((t_max, b, width), _NEG_INF)
        nxt = xp.full((b, width), _NEG_INF)
        for t in range(t_max - 1, -1, -1):
            rec = self._logaddexp3(nxt, self._shift(nxt, -1), xp.where(skip_from, self._shift(nxt, -2), _NEG_INF))
            start = xp.where(at_end, lp_ext[t], _NEG_INF)
            last = (input_lengths - 1)[:, None] == t
            cur = xp.where(last, start, xp.where(t < input_lengths[:, None] - 1, rec + lp_ext[t], _NEG_INF))
            beta[t] = cur
            nxt = cur
        ab = alpha + beta  # (T, B, 2S + 1): each path's probability through (t, s), lp[t] counted twice
        m = ab.max(axis=2, keepdims=True)
        safe = xp.where(xp.isinf(m), 0.0, m)
        onehot = (ext[:, :, None] == xp.arange(n_cls)[None, None, :]).astype(np.float64)  # (B, 2S + 1, C)
        summed: Any = xp.matmul(xp.exp(ab - safe).transpose(1, 0, 2), onehot).transpose(1, 0, 2)  # (T, B, C)
        # an impossible alignment (infinite nll) makes NaN here, as in PyTorch, unless zero_infinity masks it
        with np.errstate(divide="ignore", invalid="ignore"):
            lcab = xp.log(summed) + safe
            g = xp.exp(lp) - xp.exp(lcab + nll[None, :, None] - lp)
        valid = xp.arange(t_max)[:, None] < input_lengths[None, :]  # (T, B)
        keep = valid[:, :, None]
        if zero_infinity:
            keep = keep & ~xp.isinf(nll)[None, :, None]
        g = xp.where(keep, g * grad.astype(np.float64)[None, :, None], 0.0)
        return g.astype(log_probs.dtype)
