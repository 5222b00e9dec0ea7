"""``embedding`` (a lookup of rows of a weight matrix by integer index) and ``one_hot``.

The forward of ``embedding`` is one row gather. Its weight gradient adds each output row's gradient into
the row it came from, so repeated indices accumulate; the row ``padding_idx`` gets none, and
``scale_grad_by_freq`` divides each contribution by how often its index occurs in the batch. The
accumulation runs as a product with the one-hot matrix of the indices when the table has few rows (a GEMM
costs 2 * rows flops per gradient element, which BLAS does faster than a scatter with repeated indices
adds one element, up to a few hundred rows), else as a scatter-add. Under ``create_graph`` it is an
``index_add`` node, so gradients of the gradient work too.
"""
from ... import _dtype
from ...autograd.node import Op
from ...autograd.grad_mode import _state, no_grad
from ...ops._util import check_same_device, check_tensor
from ...ops.elementwise import where
from ...ops.binning import searchsorted
from ...ops.creation import arange, zeros
from ...ops.indexing import IndexAddBackward0, one_hot
from ...tensor import Tensor

__all__ = ["embedding", "embedding_bag", "one_hot"]

_INDEX_DTYPES = (_dtype.int64, _dtype.int32)
# the one-hot product is used for tables of at most this many rows, with a one-hot matrix of at most
# _ONE_HOT_MAX elements
_ONE_HOT_ROWS = 256
_ONE_HOT_MAX = 1 << 22


def _accumulate_rows(be, flat, g2, num_rows):
    """(num_rows, D) array whose row r is the sum of the rows of ``g2`` whose index in ``flat`` is r."""
    n, d = g2.shape
    if num_rows <= _ONE_HOT_ROWS and num_rows * n <= _ONE_HOT_MAX:
        onehot = be.zeros((num_rows, n), g2.dtype)
        be.setitem(onehot, (flat, be.arange_index(n)), 1)
        return be.matmul(onehot, g2)
    out = be.zeros((num_rows, d), g2.dtype)
    be.add_at(out, (flat,), g2)
    return out


def _index_error(bad: int) -> IndexError:
    return IndexError("index out of range in self")


class EmbeddingBackward0(Op):
    def forward(self, weight, indices, padding_idx, scale_grad_by_freq):
        be = weight._be
        flat = indices.reshape(-1)
        w = weight._data
        self.indices = flat
        self.out_shape = indices.shape + (w.shape[1],)
        self.num_rows = w.shape[0]
        self.padding_idx = padding_idx
        self.scale_grad_by_freq = scale_grad_by_freq
        return be.index_select(w, 0, flat).reshape(self.out_shape)

    def _row_scale(self, be, npd):
        """Per-index factor (n, 1): 0 at padding_idx, 1 / count with scale_grad_by_freq, else None."""
        flat = self.indices
        scale = None
        if self.scale_grad_by_freq:
            counts = be.bincount(flat, minlength=self.num_rows)
            scale = be.binary("div", 1.0, be.astype(be.index_select(counts, 0, flat), npd))
        if self.padding_idx is not None:
            keep = be.astype(be.binary("ne", flat, self.padding_idx), npd)
            scale = keep if scale is None else be.binary("mul", scale, keep)
        return None if scale is None else scale.reshape(-1, 1)

    def backward(self, g):
        be = g._be
        d = self.out_shape[-1]
        flat = self.indices
        npd = g._data.dtype
        scale = self._row_scale(be, npd)
        if not _state.grad:
            g2 = g._data.reshape(-1, d)
            if scale is not None:
                g2 = be.binary("mul", g2, scale)
            return (Tensor._make(_accumulate_rows(be, flat, g2, self.num_rows), be),)
        g2 = g.reshape(-1, d)
        if scale is not None:
            g2 = g2 * Tensor._make(scale, be)
        zeros = Tensor._make(be.zeros((self.num_rows, d), npd), be)
        return (IndexAddBackward0.apply(zeros, g2, dim=0, index=flat, alpha=1),)


def _renorm_rows(weight, indices, max_norm, norm_type):
    """Scale the rows of ``weight`` that ``indices`` refers to down to norm ``max_norm``, in place."""
    with no_grad():
        rows = indices.reshape(-1).unique()
        sel = weight.index_select(0, rows)
        norms = sel.norm(norm_type, 1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, rows, sel * scale)


def _embedding_padding_idx(padding_idx, num_embeddings):
    """``padding_idx`` checked against the table's rows and made nonnegative, as nn.Embedding and F.embedding
    do (their AssertionError, not embedding_bag's RuntimeError)."""
    if padding_idx > 0:
        if padding_idx >= num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = num_embeddings + padding_idx
    return padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, embedding_dim) picked by the integer tensor ``input``: the result
    has shape ``input.shape + (embedding_dim,)``. The row ``padding_idx`` gets no gradient; ``max_norm``
    first rescales (in place) the referenced rows whose ``norm_type``-norm exceeds it. Gradients are dense
    (``sparse=True`` is accepted and gives the same dense gradient).

    >>> embedding(mt.tensor([1, 1]), mt.eye(3))
    tensor([[0., 1., 0.],
            [0., 1., 0.]])
    """
    check_tensor(input, "embedding", "input")
    check_tensor(weight, "embedding", "weight")
    if padding_idx is not None:
        padding_idx = _embedding_padding_idx(padding_idx, weight.shape[0] if weight.dim() else 0)
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got minitorch_gpu.{input.dtype._tensor_name} instead (while checking "
                           f"arguments for embedding)")
    check_same_device(weight, input)
    be = weight._be
    idx = input._data
    be.check_index_range(idx, weight._data.shape[0], _index_error)
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    return EmbeddingBackward0.apply(weight, indices=idx, padding_idx=padding_idx,
                                    scale_grad_by_freq=bool(scale_grad_by_freq))


_BAG_MODES = ("sum", "mean", "max")


def _bag_layout(input, offsets, include_last_offset):
    """(flat indices, bag starts, number of bags) for the two layouts: a 2-D input is one bag per row; a 1-D
    input is cut into bags at ``offsets`` (with ``include_last_offset``, the last offset closes the last bag)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        rows, width = input.shape
        return input.reshape(-1), arange(0, rows * width, max(width, 1), device=input.device), rows
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if offsets.dtype not in _INDEX_DTYPES:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got minitorch_gpu.{offsets.dtype._tensor_name} instead (while checking "
                           "arguments for embedding_bag)")
    if offsets.numel():
        first, last = offsets[0].item(), offsets[-1].item()
        if first != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {first}")
        if last > input.numel():
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {input.numel()} but got "
                               f"offsets[-1] of {last}")
    starts = offsets[:-1] if include_last_offset and offsets.numel() else offsets
    return input, starts, starts.numel()


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sum, mean or max of the embeddings of each bag of indices, without materialising them per bag: a
    2-D ``input`` holds one bag per row, a 1-D one is cut into bags at ``offsets``. Entries equal to
    ``padding_idx`` are left out (of the mean's count too); an empty bag gives zeros. ``per_sample_weights``
    scales each embedding (``mode='sum'`` only).

    >>> embedding_bag(mt.tensor([0, 1, 1]), mt.eye(2), mt.tensor([0, 1]), mode="sum")
    tensor([[1., 0.],
            [0., 2.]])
    """
    check_tensor(input, "embedding_bag", "input")
    check_tensor(weight, "embedding_bag", "weight")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      "on GitHub.")
        if per_sample_weights.shape != input.shape:
            raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                             f"must have the same shape as the input ({input.shape})")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-n} through {n - 1}, but got "
                               f"{padding_idx}")
        padding_idx %= n
    if input.dtype not in _INDEX_DTYPES:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got minitorch_gpu.{input.dtype._tensor_name} instead (while checking "
                           "arguments for embedding_bag)")
    flat, starts, bags = _bag_layout(input, offsets, include_last_offset)
    if flat.numel():
        lo, hi = flat._be.index_range(flat._data)
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            at = ((flat < 0) | (flat >= n)).nonzero()[0, 0].item()
            raise RuntimeError(f"Index {at} of input takes value {bad} which is not in the valid range [0, {n})")
    rows = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq, sparse)
    # the bag of every entry; entries past the last bag and padding entries go to a spare row, dropped at the end
    bag = searchsorted(starts, arange(flat.numel(), device=flat.device), right=True) - 1
    if include_last_offset and offsets.numel():
        bag = where(arange(flat.numel(), device=flat.device) < offsets[-1], bag, bags)
    if padding_idx is not None:
        bag = where(flat == padding_idx, bags, bag)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1).to(rows.dtype)
    d = weight.shape[1]
    out = zeros((bags + 1, d), dtype=weight.dtype, device=weight.device)
    if mode == "max":
        out = out.scatter_reduce(0, bag.reshape(-1, 1).expand(-1, d), rows, "amax", include_self=False)
    else:
        out = out.index_add(0, bag, rows)
    out = out[:bags]
    if mode == "mean":
        counts = zeros(bags + 1, dtype=weight.dtype, device=weight.device).index_add(
            0, bag, rows.new_ones(bag.shape))[:bags]
        out = out / counts.clamp_min(1).reshape(-1, 1)
    return out
