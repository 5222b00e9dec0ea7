"""Recurrent cells: the pointwise half of one LSTM or GRU step, forward and backward, as single primitives.

A step's matrix products are ordinary ``matmul`` calls made by the layer (the input projection of every time step
at once, then the hidden projection per step, each with its bias); these primitives take both projections, ``gi``
and ``gh``, and do the rest: the gate nonlinearities and the state update. The CUDA backend serves each with one
launch of kernels/rnn.cu; the bodies here are the reference it is tested against, written once against
``self.xp``. Gates are in PyTorch's order and layout: (B, 4H) as i, f, g, o for the LSTM; (B, 3H) as r, z, n for
the GRU, where ``gh``'s n block holds b_hn (n = tanh(gi_n + r * gh_n), PyTorch's formula).

The backward primitives take the forward's inputs and recompute the gates: the forward keeps nothing of its own,
so a sequence holds per step only what the layer keeps anyway (the projections and the previous state).
"""
from __future__ import annotations

from ._elementwise import _exp_limit
from ._types import Array, PrimitiveHost


class RNNMixin(PrimitiveHost):
    def _sigmoid_(self, v: Array) -> None:
        """v = 1 / (1 + exp(-v)) in place, the exponent clamped below overflow (as the ``sigmoid`` primitive) so
        that very negative v gives 0 without a warning."""
        xp = self.xp
        xp.negative(v, out=v)
        xp.minimum(v, _exp_limit(v.dtype), out=v)
        xp.exp(v, out=v)
        v += 1
        xp.reciprocal(v, out=v)

    def _lstm_gates(self, gi: Array, gh: Array) -> Array:
        """(B, 4H) activated gates: sigmoid over i, f and o, tanh over g."""
        xp = self.xp
        H = gi.shape[-1] // 4
        gates = gi + gh
        self._sigmoid_(gates[:, :2 * H])
        g = gates[:, 2 * H:3 * H]
        xp.tanh(g, out=g)
        self._sigmoid_(gates[:, 3 * H:])
        return gates

    def lstm_cell_forward(self, gi: Array, gh: Array, c: Array) -> tuple[Array, Array]:
        """(h', c') of an LSTM step from the projections ``gi``, ``gh`` (B, 4H) and the cell state ``c`` (B, H):
        c' = f c + i g, h' = o tanh(c')."""
        H = c.shape[-1]
        gates = self._lstm_gates(gi, gh)
        i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
        c_new = f * c
        c_new += i * g
        h = self.xp.tanh(c_new)
        h *= o
        return h, c_new

    def lstm_cell_backward(self, dh: Array | None, dc: Array | None, gi: Array, gh: Array,
                           c: Array) -> tuple[Array, Array]:
        """(d gates (B, 4H), d c) of ``lstm_cell_forward(gi, gh, c)`` from the gradients of h' and c' (None for
        a zero gradient). d gates is the gradient of ``gi`` and of ``gh`` alike."""
        xp = self.xp
        H = c.shape[-1]
        gates = self._lstm_gates(gi, gh)
        i, f, g, o = (gates[:, k * H:(k + 1) * H] for k in range(4))
        tc = f * c
        tc += i * g
        xp.tanh(tc, out=tc)
        d = xp.empty_like(gates)
        di, df, dg, do = (d[:, k * H:(k + 1) * H] for k in range(4))
        # c' reaches the loss through h' = o tanh(c') and through the next step's c
        if dh is not None:
            gc = 1 - tc * tc
            gc *= o
            gc *= dh
            if dc is not None:
                gc += dc
            xp.multiply(dh, tc, out=do)
            do *= o
            do *= 1 - o
        else:
            gc = xp.zeros_like(c) if dc is None else dc
            do[...] = 0
        xp.multiply(gc, g, out=di)
        di *= i
        di *= 1 - i
        xp.multiply(gc, c, out=df)
        df *= f
        df *= 1 - f
        xp.multiply(gc, i, out=dg)
        dg *= 1 - g * g
        return d, gc * f

    def _gru_gates(self, gi: Array, gh: Array) -> tuple[Array, Array, Array]:
        """(r, z, n) of a GRU step, each (B, H)."""
        H = gi.shape[-1] // 3
        rz = gi[:, :2 * H] + gh[:, :2 * H]
        self._sigmoid_(rz)
        r, z = rz[:, :H], rz[:, H:]
        n = r * gh[:, 2 * H:]
        n += gi[:, 2 * H:]
        self.xp.tanh(n, out=n)
        return r, z, n

    def gru_cell_forward(self, gi: Array, gh: Array, h: Array) -> Array:
        """h' of a GRU step from the projections ``gi``, ``gh`` (B, 3H) and the state ``h`` (B, H):
        h' = n + z (h - n)."""
        _, z, n = self._gru_gates(gi, gh)
        out = h - n
        out *= z
        out += n
        return out

    def gru_cell_backward(self, dh: Array, gi: Array, gh: Array, h: Array) -> tuple[Array, Array, Array]:
        """(d gi, d gh (B, 3H each), d h) of ``gru_cell_forward(gi, gh, h)`` from the gradient of h'."""
        xp = self.xp
        H = h.shape[-1]
        r, z, n = self._gru_gates(gi, gh)
        dgi = xp.empty_like(gi, order="C")
        dr, dz, dn = (dgi[:, k * H:(k + 1) * H] for k in range(3))
        # through tanh: the gradient of gi_n + r gh_n
        xp.multiply(dh, 1 - z, out=dn)
        dn *= 1 - n * n
        xp.multiply(dn, gh[:, 2 * H:], out=dr)
        dr *= r
        dr *= 1 - r
        xp.subtract(h, n, out=dz)
        dz *= dh
        dz *= z
        dz *= 1 - z
        dgh = xp.array(dgi, copy=True)
        dgh[:, 2 * H:] *= r
        return dgi, dgh, dh * z
