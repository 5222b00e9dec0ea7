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
from ...ops.indexing import IndexAddBackward0, one_hot
from ...tensor import Tensor

__all__ = ["embedding", "one_hot"]

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
        n = weight.shape[0] if weight.dim() else 0
        if padding_idx > 0:
            if padding_idx >= n:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
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
