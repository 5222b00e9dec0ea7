"""Recurrent layers: ``RNN`` (tanh / relu), ``LSTM`` (with ``proj_size``), ``GRU``, and their single-step cells
``RNNCell``, ``LSTMCell``, ``GRUCell``, as PyTorch's: the same constructor arguments, parameter names, shapes and
initialisation (so state dicts load both ways), inputs, outputs and errors.

A layer runs layer by layer and direction by direction. The input projection of every time step is one matrix
product, ``x W_ih^T + b_ih`` over all (T * B) rows; then each step does one product for the hidden projection,
``h W_hh^T + b_hh``, and one fused cell op for the rest (``ops/rnn.py``: gate nonlinearities and the state update,
one kernel on CUDA). Gradients flow through the ordinary autograd graph of these ops (backpropagation through
time). A ``PackedSequence`` runs the same loop with the batch shrinking as sequences end, so each sequence's final
state is taken at its own last step.

There is no cuDNN: the steps of a sequence are a Python loop. For an LSTM over a fixed batch (no packing, no
projection) that loop runs inside one op per layer and direction (``lstm_layer_fused``, PyTorch's CPU layer node),
on arrays, and its backward computes the hidden weights' gradient in one product over every step; the other
cases run a few autograd ops per step and direction.
"""
from __future__ import annotations

import math
import numbers
import warnings

from .. import functional as F
from .. import init
from ...ops.creation import empty, zeros
from ...ops.rnn import gru_cell_fused, lstm_cell_fused, lstm_layer_fused
from ...ops.shape import cat, stack
from ..module import Module
from ..parameter import Parameter
from ..utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _step(mode, gi, h, c, w_hh, b_hh, w_hr):
    """One time step of ``mode`` from the input projection ``gi``: (h', c') (c' None except for the LSTM)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        h, c = lstm_cell_fused(gi, gh, c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        return gru_cell_fused(gi, gh, h), None
    pre = gi + gh
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _whole_sequence(mode, gi, batch_sizes, h0, weights):
    """Whether a layer direction runs as one sequence op (``lstm_layer_fused``): an LSTM without projection over
    steps of one batch size (not a packed sequence whose batch shrinks), with every operand in one dtype (under
    autocast the per-step ops cast as they go)."""
    _, w_hh, _, b_hh, w_hr = weights
    if mode != "LSTM" or w_hr is not None or batch_sizes.count(batch_sizes[0]) != len(batch_sizes):
        return False
    dt = gi.dtype
    return w_hh.dtype is dt and h0.dtype is dt and (b_hh is None or b_hh.dtype is dt)


def _run_direction(mode, steps, batch_sizes, h0, c0, weights, reverse):
    """Run one direction of one layer over the per-step input projections ``steps`` (step t holds the
    ``batch_sizes[t]`` sequences still running): (outputs per step, final h, final c).

    Sequences are sorted longest first, so at each step the live ones are the leading rows. Forwards, the rows of
    sequences that have ended are set aside as they end (their final state); backwards, a sequence starts at its
    own last step, from its initial state, when the batch grows to include it."""
    _, w_hh, _, b_hh, w_hr = weights
    T = len(steps)
    outs = [None] * T
    h, c = h0, c0
    ended_h, ended_c = [], []
    if reverse:
        h = h0[:batch_sizes[-1]]
        c = None if c0 is None else c0[:batch_sizes[-1]]
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        bs = batch_sizes[t]
        live = h.shape[0]
        if bs < live:
            ended_h.append(h[bs:])
            h = h[:bs]
            if c is not None:
                ended_c.append(c[bs:])
                c = c[:bs]
        elif bs > live:
            h = cat([h, h0[live:bs]])
            if c is not None:
                c = cat([c, c0[live:bs]])
        h, c = _step(mode, steps[t], h, c, w_hh, b_hh, w_hr)
        outs[t] = h
    if ended_h:
        # the latest to end hold the lowest rows
        h = cat([h] + ended_h[::-1])
        if c is not None:
            c = cat([c] + ended_c[::-1])
    return outs, h, c


class RNNBase(Module):
    """The machinery shared by ``RNN``, ``LSTM`` and ``GRU`` (``mode``: "RNN_TANH", "RNN_RELU", "LSTM", "GRU")."""

    __constants__ = ["mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                     "bidirectional", "proj_size"]

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = {"weight_ih": (gate_size, layer_input), "weight_hh": (gate_size, real_hidden)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        """The parameters in PyTorch's flat order (per layer and direction: w_ih, w_hh, b_ih, b_hh, w_hr)."""
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters grouped per layer and direction."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """Does nothing: PyTorch packs the weights into one cuDNN buffer here, and there is no cuDNN; the method
        exists because PyTorch programs call it."""

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ------------------------------------------------------------------ argument checks (PyTorch's names)
    def check_input(self, input, batch_sizes):
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _state_size(self, input, batch_sizes, width):
        """(layers * directions, batch, width): the shape of an initial or final state."""
        mini_batch = int(batch_sizes[0]) if batch_sizes is not None else input.size(0 if self.batch_first else 1)
        return (self.num_layers * (2 if self.bidirectional else 1), mini_batch, width)

    def get_expected_hidden_size(self, input, batch_sizes):
        return self._state_size(input, batch_sizes, self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx, expected_hidden_size, msg="Expected hidden size {}, got {}"):
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ------------------------------------------------------------------ the forward shared by every mode
    def _forward(self, input, hx):
        """PyTorch's argument handling around ``_layers``: packed, batched or unbatched input; ``hx`` a tensor, or
        (h_0, c_0) for the LSTM, or None for zeros."""
        lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        is_batched = True
        sorted_indices = unsorted_indices = None
        if packed:
            x, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = [int(b) for b in batch_sizes_t.tolist()]
        else:
            x, batch_sizes = input, None
            name = "RNN" if self.mode.startswith("RNN") else self.mode
            if x.dim() not in (2, 3):
                tail = " tensor instead" if name == "RNN" else " instead"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {x.dim()}D{tail}")
            is_batched = x.dim() == 3
            if not is_batched:
                x = x.unsqueeze(0 if self.batch_first else 1)
            if hx is not None:
                self._check_hidden_dims(hx, is_batched)
                if not is_batched:
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1)) if lstm else hx.unsqueeze(1)
        if hx is None:
            hx = self._zero_state(x, batch_sizes)
        self.check_forward_args(x, hx, batch_sizes)
        hx = self.permute_hidden(hx, sorted_indices)
        h0, c0 = hx if lstm else (hx, None)
        if packed:
            out, h_n, c_n = self._layers(x, batch_sizes, h0, c0)
            output = PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices)
        else:
            seq = x.transpose(0, 1) if self.batch_first else x
            T, B = seq.shape[0], seq.shape[1]
            if T == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            out, h_n, c_n = self._layers(seq.reshape(T * B, seq.shape[2]), [B] * T, h0, c0)
            output = out.reshape(T, B, out.shape[-1])
            if self.batch_first:
                output = output.transpose(0, 1)
            if not is_batched:
                output = output.squeeze(0 if self.batch_first else 1)
                h_n = h_n.squeeze(1)
                c_n = None if c_n is None else c_n.squeeze(1)
        hidden = (h_n, c_n) if lstm else h_n
        return output, self.permute_hidden(hidden, unsorted_indices)

    def _check_hidden_dims(self, hx, is_batched):
        want = 3 if is_batched else 2
        kind = "batched 3-D" if is_batched else "unbatched 2-D"
        if self.mode == "LSTM":
            if hx[0].dim() != want or hx[1].dim() != want:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        elif hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")

    def _zero_state(self, x, batch_sizes):
        h = zeros(self.get_expected_hidden_size(x, batch_sizes), dtype=x.dtype, device=x.device)
        if self.mode != "LSTM":
            return h
        return h, zeros(self._state_size(x, batch_sizes, self.hidden_size), dtype=x.dtype, device=x.device)

    def _layers(self, x, batch_sizes, h0, c0):
        """Every layer and direction over time-major flat steps ``x`` (sum of batch_sizes, features):
        (output (rows, directions * hidden), h_n, c_n or None)."""
        directions = 2 if self.bidirectional else 1
        h0s = h0.unbind(0)
        c0s = c0.unbind(0) if c0 is not None else None
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                suffix = "_reverse" if direction else ""
                # (w_ih, w_hh, b_ih, b_hh, w_hr), None for those this layer has not
                wt = tuple(getattr(self, f"{kind}_l{layer}{suffix}", None)
                           for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))
                # the input projection of every step at once: one matrix product per layer and direction
                gi = F.linear(x, wt[0], wt[2])
                if _whole_sequence(self.mode, gi, batch_sizes, h0s[k], wt):
                    out, h, c = lstm_layer_fused(gi, wt[1], wt[3], h0s[k], c0s[k], direction == 1)
                    outs.append(out)
                else:
                    step_out, h, c = _run_direction(self.mode, gi.split(batch_sizes), batch_sizes, h0s[k],
                                                    None if c0s is None else c0s[k], wt, direction == 1)
                    outs.append(cat(step_out))
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
            x = outs[0] if directions == 1 else cat(outs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, stack(h_n), (stack(c_n) if c_n else None)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (``nonlinearity="relu"``: relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``; ``rnn(input, h_0=None) -> (output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gates (i, f, g, o) and optional projection of h (``proj_size``).

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False,
    proj_size=0)``; ``lstm(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``. Example::

        lstm = nn.LSTM(10, 20, num_layers=2)
        output, (h_n, c_n) = lstm(torch.randn(5, 3, 10))   # (T, B, features)
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        return self._state_size(input, batch_sizes, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gates (r, z, n) with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False)``;
    ``gru(input, h_0=None) -> (output, h_n)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward(input, hx)


# ---------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """Parameters of a single-step cell: weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden),
    bias_ih and bias_hh (chunks * hidden), all ~ U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    __constants__ = ["input_size", "hidden_size", "bias"]

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batch(self, name, input, states):
        """Check the dims of ``input`` and of the ``states`` given (None when not given); (batched input, states
        with a batch dim or zeros, whether the input was batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for i, s in enumerate(states or ()):
            if s.dim() not in (1, 2):
                what = f"hx[{i}]" if len(states) > 1 else "hidden"
                raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {s.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if states is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            states = (z,) * self._n_states
        elif not is_batched:
            states = tuple(s.unsqueeze(0) for s in states)
        self._check_cell(input, states)
        return input, states, is_batched

    def _check_cell(self, input, states):
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for i, s in enumerate(states):
            if input.size(0) != s.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} batch size "
                                   f"{s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.size(1)}, expected "
                                   f"{self.hidden_size}")

    _n_states = 1


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu). ``cell(input, hx=None) -> h'``,
    input (B, input_size) or unbatched (input_size,)."""

    __constants__ = ["input_size", "hidden_size", "bias", "nonlinearity"]

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, (h,), is_batched = self._batch("RNNCell", input, None if hx is None else (hx,))
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h, _ = _step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh, None)
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (the fused cell op): ``cell(input, (h, c)=None) -> (h', c')``."""

    _n_states = 2

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h, c), is_batched = self._batch("LSTMCell", input, None if hx is None else tuple(hx))
        h, c = _step("LSTM", F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh, None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step (the fused cell op): ``cell(input, hx=None) -> h'``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        x, (h,), is_batched = self._batch("GRUCell", input, None if hx is None else (hx,))
        h, _ = _step("GRU", F.linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh, None)
        return h if is_batched else h.squeeze(0)
