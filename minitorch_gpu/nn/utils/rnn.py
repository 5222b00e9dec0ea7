"""``nn.utils.rnn``: packed and padded batches of variable-length sequences, as PyTorch's.

A ``PackedSequence`` holds the steps of a batch sorted by length (longest first) in time-major order: ``data``
(sum of lengths, *) has, for each time step t, the ``batch_sizes[t]`` sequences still running at t. The recurrent
layers take one and return one, running each step on just the sequences still alive.

Packing and padding are each one gather (``index_select``) through an index table built on the host from the
lengths, so both are differentiable and cost one kernel on a GPU; padding gathers from the data with one padding
row appended.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as _np  # host-side only: the index tables of packing and padding

from ... import _dtype
from ...ops.creation import full, tensor
from ...ops.shape import cat
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """The steps of a batch of sequences, sorted by length and packed time-major (see the module docstring).

    Build one with ``pack_padded_sequence`` or ``pack_sequence``; ``batch_sizes`` is an int64 CPU tensor,
    ``sorted_indices`` the order the batch was sorted into (None when it already was) and ``unsorted_indices`` its
    inverse."""

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PyTorch's older form: PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be created manually. "
                "They should be instantiated by functions like pack_sequence and pack_padded_sequences in "
                "nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The sequence with ``data`` converted as ``Tensor.to`` does; the index tensors follow it to its device,
        ``batch_sizes`` stays on the CPU. ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device

        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(dev)
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, device: Any = None) -> PackedSequence:
        return self.to("cuda" if device is None else device)

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    @property
    def is_cuda(self) -> bool:
        return bool(self.data.is_cuda)

    def is_pinned(self) -> bool:
        return False


# ``double()``, ``float()``, ... as Tensor's casts, applied to ``data``
def _caster(name: str, dt: _dtype.dtype) -> Any:
    def cast(self: PackedSequence) -> PackedSequence:
        return self.to(dtype=dt)
    cast.__name__ = name
    cast.__doc__ = f"The sequence with its data as {dt}."
    return cast


for _name, _dt in (("double", _dtype.float64), ("float", _dtype.float32), ("half", _dtype.float16),
                   ("long", _dtype.int64), ("int", _dtype.int32), ("short", _dtype.int16), ("char", _dtype.int8),
                   ("byte", _dtype.uint8)):
    setattr(PackedSequence, _name, _caster(_name, _dt))


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of 0..n-1 (None for None)."""
    if permutation is None:
        return None
    return permutation.argsort()


def _host_lengths(lengths: Any) -> list[int]:
    """``lengths`` (a list or a 1-d CPU tensor) as Python ints."""
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1 or lengths.device.type != "cpu":
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.device} Long tensor")
        return [int(v) for v in lengths.to(_dtype.int64).tolist()]
    return [int(v) for v in lengths]


def _index(values: Any, device: Any) -> Tensor:
    return tensor(_np.asarray(values, dtype=_np.int64), dtype=_dtype.int64, device=device)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (``batch_first``: (B, T, *)) of sequences with the given lengths.

    With ``enforce_sorted`` the lengths must be in decreasing order; otherwise the batch is sorted here and the
    order kept in the result, so that ``pad_packed_sequence`` and the recurrent layers give results in the
    caller's order. Example: ``nn.LSTM(8, 16)(pack_padded_sequence(x, [5, 3], enforce_sorted=False))``."""
    lens = _host_lengths(lengths)
    batch_dim = 0 if batch_first else 1
    sorted_indices = None
    if not enforce_sorted:
        # stable, as PyTorch's CPU sort is for these sizes: equal lengths keep their order
        order = sorted(range(len(lens)), key=lambda b: -lens[b])
        lens = [lens[b] for b in order]
        sorted_indices = _index(order, input.device)
        if input.dim() > batch_dim and len(lens) == input.shape[batch_dim]:
            input = input.index_select(batch_dim, sorted_indices)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    B = input.shape[batch_dim]
    T = input.shape[1 - batch_dim]
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={B})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(a < b for a, b in zip(lens, lens[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
            "if you do not need ONNX exportability.")
    if lens[0] > T:
        raise RuntimeError(f"the longest sequence (length {lens[0]}) does not fit the padded input of {T} steps")
    n = _np.asarray(lens, dtype=_np.int64)
    batch_sizes = (n[None, :] > _np.arange(lens[0])[:, None]).sum(1)
    # time-major positions (t, b) of the live steps, in the padded input's flattened (T, B) or (B, T) order
    t_idx, b_idx = _np.nonzero(_np.arange(B)[None, :] < batch_sizes[:, None])
    src = b_idx * T + t_idx if batch_first else t_idx * B + b_idx
    data = input.flatten(0, 1).index_select(0, _index(src, input.device))
    return PackedSequence(data, tensor(batch_sizes, dtype=_dtype.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: (padded (T, B, *) or (B, T, *), lengths as an int64 CPU tensor),
    in the order the batch had before packing. ``total_length`` pads to that many steps (at least the longest)."""
    bs = [int(v) for v in sequence.batch_sizes.tolist()]
    T = len(bs)
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
        T = total_length
    data = sequence.data
    B = bs[0]
    sizes = _np.zeros(T, dtype=_np.int64)
    sizes[:len(bs)] = bs
    start = _np.concatenate([[0], _np.cumsum(sizes)[:-1]])
    lens = (sizes[None, :] > _np.arange(B)[:, None]).sum(1)
    # (t, b) gathers packed row start[t] + b, or the padding row appended after the data
    pos = _np.where(_np.arange(B)[None, :] < sizes[:, None], start[:, None] + _np.arange(B)[None, :], data.shape[0])
    if batch_first:
        pos = pos.T
    pad = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = cat([data, pad]).index_select(0, _index(pos.reshape(-1), data.device))
    padded = padded.reshape(pos.shape + tuple(data.shape[1:]))
    lengths = tensor(lens, dtype=_dtype.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(0 if batch_first else 1, unsorted)
        lengths = lengths[unsorted.cpu()]
    return padded, lengths


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (``batch_first``: (B, max L, *)), each padded with
    ``padding_value`` on the ``padding_side`` ("right" or "left")."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    trailing = tuple(seqs[0].shape[1:])
    for s in seqs[1:]:
        if tuple(s.shape[1:]) != trailing:
            for d, (a, b) in enumerate(zip(s.shape[1:], trailing)):
                if a != b:
                    raise RuntimeError(f"The size of tensor a ({b}) must match the size of tensor b ({a}) at "
                                       f"non-singleton dimension {d + 1}")
            raise RuntimeError(f"pad_sequence: every sequence needs the trailing shape {list(trailing)}, got "
                               f"{list(s.shape[1:])}")
    lens = [int(s.shape[0]) for s in seqs]
    L, B = max(lens), len(seqs)
    flat = cat([s.reshape((s.shape[0],) + trailing) for s in seqs])
    pad = full((1,) + trailing, padding_value, dtype=flat.dtype, device=flat.device)
    start = _np.concatenate([[0], _np.cumsum(lens)[:-1]])
    n = _np.asarray(lens)
    t = _np.arange(L)[:, None]
    # step t of sequence b sits at t (right) or t - (L - len) (left) in the padded result
    offset = t if padding_side == "right" else t - (L - n)[None, :]
    pos = _np.where((offset >= 0) & (offset < n[None, :]), start[None, :] + offset, flat.shape[0])
    if batch_first:
        pos = pos.T
    out = cat([flat, pad]).index_select(0, _index(pos.reshape(-1), flat.device))
    return out.reshape((B, L) + trailing if batch_first else (L, B) + trailing)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length (views of ``padded_sequences``, which is left as
    it is)."""
    seqs = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lens = lengths.tolist() if isinstance(lengths, Tensor) else list(lengths)
    if len(lens) != seqs.shape[0]:
        raise ValueError(f"unpad_sequence: {len(lens)} lengths for a batch of {seqs.shape[0]} sequences")
    return [seq[:int(n)] for seq, n in zip(seqs.unbind(0), lens)]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences (L_i, *) (sorted by decreasing length unless ``enforce_sorted`` is False)."""
    lengths = [int(v.shape[0]) for v in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
