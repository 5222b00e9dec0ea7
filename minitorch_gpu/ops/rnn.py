"""The fused recurrent cells: the pointwise half of one LSTM or GRU step as one op with one backward node.

``lstm_cell_fused(gi, gh, c) -> (h', c')`` and ``gru_cell_fused(gi, gh, h) -> h'`` take the step's two
projections, ``gi = x W_ih^T + b_ih`` and ``gh = h W_hh^T + b_hh`` (computed by the layer, the first for every time
step in one product), and run the backend's ``lstm_cell_*`` / ``gru_cell_*`` primitives: one kernel launch per
step and direction on CUDA (kernels/rnn.cu), a few NumPy passes on the CPU. Their nodes are PyTorch's
``ThnnFusedLstmCellBackward0`` / ``ThnnFusedGruCellBackward0`` (the LSTM's has two outputs, h' and c').

The nodes save only their inputs; the backward primitives recompute the gates from them. Under ``create_graph``
the backward is instead written with Tensor ops on those saved inputs (PyTorch's "differentiable" cell backward),
so that gradients of gradients come out right.

``lstm_layer_fused(gi, w_hh, b_hh, h0, c0, reverse)`` runs a whole LSTM layer direction over a sequence of fixed
batch as one op (PyTorch's CPU layer node, ``MkldnnRnnLayerBackward0``): the time loop runs on arrays, with no node,
no Tensor and no autograd bookkeeping per step, and its backward is one loop of cell backwards and hidden
products followed by ONE product for the hidden weights' gradient over every step (instead of one per step and an
accumulation). Under ``create_graph`` it replays the sequence with the per-step ops and differentiates them in
Tensor ops.
"""
from __future__ import annotations

from ..autograd.grad_mode import _state
from ..autograd.node import Op
from ..tensor import Tensor
from ._util import apply_outputs
from .shape import cat

__all__ = ["lstm_cell_fused", "gru_cell_fused", "lstm_layer_fused"]


class ThnnFusedLstmCellBackward0(Op):
    def forward(self, gi, gh, c):
        h, c_new = gi._be.lstm_cell_forward(gi._data, gh._data, c._data)
        if any(self.needs_input_grad):
            self.save_for_backward(gi, gh, c)
        return h, c_new

    def backward(self, dh, dc):
        gi, gh, c = self.saved_tensors
        if dh is None and dc is None:
            return None, None, None
        if _state.grad:
            return self._backward_graph(dh, dc, gi, gh, c)
        be = gi._be
        dgates, dc_prev = be.lstm_cell_backward(None if dh is None else dh._data, None if dc is None else dc._data,
                                                gi._data, gh._data, c._data)
        ni, nh, nc = self.needs_input_grad
        d = Tensor._make(dgates, be)
        return (d if ni else None), (d if nh else None), (Tensor._make(dc_prev, be) if nc else None)

    def _backward_graph(self, dh, dc, gi, gh, c):
        d, dc_prev = _lstm_cell_grads(dh, dc, gi, gh, c)
        ni, nh, nc = self.needs_input_grad
        return (d if ni else None), (d if nh else None), (dc_prev if nc else None)


def _lstm_cell_grads(dh, dc, gi, gh, c):
    """(d gates, d c) of an LSTM step in Tensor ops (differentiable again), from the gradients of h' and c'."""
    i, f, g, o = (gi + gh).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    tc = (f * c + i * g).tanh()
    gc = dc
    do = None
    if dh is not None:
        through_h = dh * o * (1 - tc * tc)
        gc = through_h if gc is None else gc + through_h
        do = dh * tc * o * (1 - o)
    if do is None:
        do = o * 0
    d = cat([gc * g * i * (1 - i), gc * c * f * (1 - f), gc * i * (1 - g * g), do], 1)
    return d, gc * f


class ThnnFusedGruCellBackward0(Op):
    def forward(self, gi, gh, h):
        out = gi._be.gru_cell_forward(gi._data, gh._data, h._data)
        if any(self.needs_input_grad):
            self.save_for_backward(gi, gh, h)
        return out

    def backward(self, dh):
        gi, gh, h = self.saved_tensors
        if _state.grad:
            return self._backward_graph(dh, gi, gh, h)
        be = gi._be
        dgi, dgh, dh_prev = be.gru_cell_backward(dh._data, gi._data, gh._data, h._data)
        ni, nh, nx = self.needs_input_grad
        return (Tensor._make(dgi, be) if ni else None), (Tensor._make(dgh, be) if nh else None), \
            (Tensor._make(dh_prev, be) if nx else None)

    def _backward_graph(self, dh, gi, gh, h):
        ir, iz, inn = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (inn + r * hn).tanh()
        dn = dh * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = dh * (h - n) * z * (1 - z)
        ni, nh, nx = self.needs_input_grad
        return (cat([dr, dz, dn], 1) if ni else None), (cat([dr, dz, dn * r], 1) if nh else None), \
            (dh * z if nx else None)


def lstm_cell_fused(gi: Tensor, gh: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """(h', c') of an LSTM step: ``gi``, ``gh`` (B, 4H) are the input and hidden projections with their biases
    (gates i, f, g, o), ``c`` (B, H) the cell state. c' = f c + i g, h' = o tanh(c')."""
    h, c_new = apply_outputs(ThnnFusedLstmCellBackward0, gi, gh, c)
    return h, c_new


def gru_cell_fused(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """h' of a GRU step: ``gi``, ``gh`` (B, 3H) are the input and hidden projections with their biases (gates r, z,
    n), ``h`` (B, H) the state. n = tanh(gi_n + r gh_n), h' = n + z (h - n)."""
    return ThnnFusedGruCellBackward0.apply(gi, gh, h)


class MkldnnRnnLayerBackward0(Op):
    """One LSTM layer direction over a whole sequence (PyTorch's name for its CPU layer node): outputs the hidden
    state of every step (T * B, H), time-major as ``gi``, and the final (h, c). Keeps, in the rows of each step,
    the hidden projection and the cell state the step started from (the cell backward recomputes the gates from
    them); the hidden states it needs are its own first output."""

    save_output = True

    def forward(self, gi, w_hh, b_hh, h0, c0, reverse=False):
        self.reverse = reverse
        be = gi._be
        gd, w = gi._data, w_hh._data
        b = None if b_hh is None else b_hh._data
        B, H = h0._data.shape
        T = gd.shape[0] // B
        dt = gd.dtype
        out = be.empty((T * B, H), dt)
        keep = any(self.needs_input_grad)
        if keep:
            ghs, cs = be.empty(gd.shape, dt), be.empty((T * B, H), dt)
            # released with the other saved tensors after backward (the engine drops ``_saved``)
            self.save_for_backward(gi, w_hh, b_hh, h0, c0, Tensor._make(ghs, be), Tensor._make(cs, be))
        h, c = h0._data, c0._data
        # W_hh^T laid out once for the T products (BLAS is ~1.5x slower on the transposed view at these shapes);
        # the row blocks below are fresh arrays of this op, written by plain slice assignment
        wt = be.matmul_operand(w.T)
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            rows = slice(t * B, (t + 1) * B)
            gh = be.matmul(h, wt, bias=b)
            if keep:
                ghs[rows] = gh
                cs[rows] = c
            h, c = be.lstm_cell_forward(gd[rows], gh, c)
            out[rows] = h
        return out, h, c

    def backward(self, dout, dh_n, dc_n):
        gi, w_hh, b_hh, h0, c0, ghs, cs, out, _, _ = self.saved_tensors
        if dout is None and dh_n is None and dc_n is None:
            return None, None, None, None, None
        if _state.grad:
            return self._backward_graph(dout, dh_n, dc_n, gi, w_hh, b_hh, h0, c0)
        be = gi._be
        gd, w, od, ghd, cd = gi._data, w_hh._data, out._data, ghs._data, cs._data
        B, H = h0._data.shape
        T = gd.shape[0] // B
        dgates = be.empty(gd.shape, gd.dtype)
        dod = None if dout is None else dout._data
        dh = None if dh_n is None else dh_n._data
        dc = None if dc_n is None else dc_n._data
        for t in (range(T) if self.reverse else range(T - 1, -1, -1)):  # the reverse of the order they ran
            rows = slice(t * B, (t + 1) * B)
            g_h = dh if dod is None else (dod[rows] if dh is None else be.binary("add", dod[rows], dh))
            dg, dc = be.lstm_cell_backward(g_h, dc, gd[rows], ghd[rows], cd[rows])
            dgates[rows] = dg
            dh = be.matmul(dg, w)
        ni, nw, nb, nh, nc = self.needs_input_grad
        dw = db = None
        if nw:
            # the hidden state each step started from, in the rows of its step (forwards step t started from
            # h_{t-1}, backwards from h_{t+1}; the first step ran from h0): one product for every step
            prev = be.concatenate([od[B:], h0._data] if self.reverse else [h0._data, od[:-B]], 0)
            dw = Tensor._make(be.matmul(dgates, prev, transpose_a=True), be)
        if nb:
            db = Tensor._make(be.reduce("sum", dgates, (0,)), be)
        return ((Tensor._make(dgates, be) if ni else None), dw, db, (Tensor._make(dh, be) if nh else None),
                (Tensor._make(dc, be) if nc else None))

    def _backward_graph(self, dout, dh_n, dc_n, gi, w_hh, b_hh, h0, c0):
        """The same gradients in Tensor ops: the sequence replayed step by step (graph-connected to the inputs),
        then differentiated step by step, so that gradients of gradients come out right."""
        B = h0.shape[0]
        T = gi.shape[0] // B
        order = list(range(T - 1, -1, -1) if self.reverse else range(T))
        gis = gi.split(B)
        steps = []
        h, c = h0, c0
        for t in order:
            gh = h.matmul(w_hh.t())
            if b_hh is not None:
                gh = gh + b_hh
            steps.append((t, h, c, gh))
            h, c = lstm_cell_fused(gis[t], gh, c)
        douts = None if dout is None else dout.split(B)
        dh, dc = dh_n, dc_n
        dgis = [None] * T
        dw = db = None
        for t, h_prev, c_prev, gh in reversed(steps):
            g_h = dh if douts is None else (douts[t] if dh is None else douts[t] + dh)
            d, dc = _lstm_cell_grads(g_h, dc, gis[t], gh, c_prev)
            dgis[t] = d
            dh = d.matmul(w_hh)
            dw_t = d.t().matmul(h_prev)
            dw = dw_t if dw is None else dw + dw_t
            db_t = d.sum(0)
            db = db_t if db is None else db + db_t
        ni, nw, nb, nh, nc = self.needs_input_grad
        return ((cat(dgis) if ni else None), (dw if nw else None), (db if nb else None), (dh if nh else None),
                (dc if nc else None))


def lstm_layer_fused(gi: Tensor, w_hh: Tensor, b_hh: Tensor | None, h0: Tensor, c0: Tensor,
                     reverse: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """(hidden state of every step (T * B, H), h_n, c_n) of one LSTM layer direction: ``gi`` (T * B, 4H) holds the
    input projections with their bias, time-major; ``w_hh`` (4H, H) and ``b_hh`` (4H) the hidden weights; ``h0``,
    ``c0`` (B, H) the initial state. ``reverse`` runs from the last step to the first."""
    out, h, c = apply_outputs(MkldnnRnnLayerBackward0, gi, w_hh, b_hh, h0, c0, reverse=reverse)
    return out, h, c
