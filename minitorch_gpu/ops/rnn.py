"""The fused recurrent cells: the pointwise half of one LSTM or GRU step as one op with one backward node.

``lstm_cell_fused(gi, gh, c) -> (h', c')`` and ``gru_cell_fused(gi, gh, h) -> h'`` take the step's two
projections, ``gi = x W_ih^T + b_ih`` and ``gh = h W_hh^T + b_hh`` (computed by the layer, the first for every time
step in one product), and run the backend's ``lstm_cell_*`` / ``gru_cell_*`` primitives: one kernel launch per
step and direction on CUDA (kernels/rnn.cu), a few NumPy passes on the CPU. Their nodes are PyTorch's
``ThnnFusedLstmCellBackward0`` / ``ThnnFusedGruCellBackward0`` (the LSTM's has two outputs, h' and c').

The nodes save only their inputs; the backward primitives recompute the gates from them. Under ``create_graph``
the backward is instead written with Tensor ops on those saved inputs (PyTorch's "differentiable" cell backward),
so that gradients of gradients come out right.
"""
from __future__ import annotations

from ..autograd.grad_mode import _state
from ..autograd.node import Op
from ..tensor import Tensor
from ._util import apply_outputs
from .shape import cat

__all__ = ["lstm_cell_fused", "gru_cell_fused"]


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
        ni, nh, nc = self.needs_input_grad
        return (d if ni else None), (d if nh else None), (gc * f if nc else None)


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
