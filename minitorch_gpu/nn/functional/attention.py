"""Attention: ``scaled_dot_product_attention`` and the functional form of ``nn.MultiheadAttention``.

Both follow PyTorch's reference ("math") implementation step by step, so results, masks and the shapes
of returned weights agree with it. Rows of attention scores that are masked out entirely take no part
(their weights are 0, not NaN) in ``scaled_dot_product_attention``, as with PyTorch's safe softmax.

On CUDA, float32 / float64 calls go to the fused kernels (kernels/attention.cu, through the backend's
``attention_forward`` / ``attention_backward`` and ``ScaledDotProductFlashAttentionBackward0``): no (L, S) scores
in memory, no host synchronisation, dropout regenerated in the backward from the generator state the forward
drew at, with the same mask the composite path draws. What the kernels do not cover (other dtypes, head dims over
128, batch dims broadcast between q, k and v, a mask that needs a gradient, ``need_weights=True`` in
multi-head attention) takes the composite path, which is also the reference the kernels are tested against.
"""
import math
import warnings

from ... import _dtype
from ...autograd.grad_mode import _state
from ...autograd.node import Op, skips_node
from ...ops import random as _random
from ...ops._util import check_tensor
from ...ops.elementwise import where
from ...ops.reduction import SoftmaxBackward0
from ...ops.shape import cat
from ...tensor import Tensor, _new_tensor
from .dropout import dropout
from .linear import linear
from .padding import pad
from ...ops._autocast import autocast_op

# the two mask helpers are reachable as F._canonical_mask / F._none_or_dtype, as in PyTorch, whose transformer
# layers (and code written against them) call them
__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward", "_canonical_mask", "_none_or_dtype"]



class SafeSoftmaxBackward0(SoftmaxBackward0):
    """softmax over the last dim whose rows of all -inf give zeros instead of NaN; the gradient of such a row is
    zero (it is the softmax gradient evaluated at the zero output)."""

    def forward(self, x, causal=False, mask=None):
        self.axis = x._data.ndim - 1
        return x._be.attention_softmax(x._data, causal, None if mask is None else mask._data)


def _safe_softmax(x):
    return SafeSoftmaxBackward0.apply(x)


class CausalSoftmaxBackward0(SafeSoftmaxBackward0):
    """The safe softmax over the last dim of scores (..., L, S) whose keys after each query are masked out
    (``is_causal``): ``masked_fill`` and softmax in one op. Same values and gradient as the two ops (a masked
    score's weight is 0, so softmax's gradient already sends it nothing), without the mask tensors, the
    filled copy and the extra node."""

    def forward(self, x):
        return super().forward(x, causal=True)


def _composite_weights(q, k, mask, causal, scale):
    """The attention weights in Tensor ops: the safe softmax of q k^T * scale, masked."""
    scores = (q * scale).matmul(k.transpose(-2, -1))
    if causal:
        return CausalSoftmaxBackward0.apply(scores)
    if mask is not None:
        if mask.dtype is _dtype.bool:
            scores = where(mask, scores, float("-inf"))
        else:
            scores = scores + (mask if mask.dtype is q.dtype else mask.to(q.dtype))
    return _safe_softmax(scores)


def _composite_backward(g, q, k, v, mask, causal, scale, dropout_p=0.0, seed=0, offset=0):
    """Attention's input gradients in Tensor ops (through the L x S scores), differentiable again: what a
    ``create_graph`` backward of the attention nodes runs. A dropout mask is drawn again from the forward's
    generator state (seed, offset): the kernels' keep rule is rand_bernoulli's, element for element."""
    p = _composite_weights(q, k, mask, causal, scale)
    be = q._be
    if dropout_p > 0.0:
        keep, _ = be.rand_bernoulli(seed, offset, p._data.shape, 1.0 - dropout_p, p._data.dtype)
        be.binary("mul", keep, 1.0 / (1.0 - dropout_p), out=keep)
        keep = Tensor._make(keep, be)
        dp = g.matmul(v.transpose(-2, -1)) * keep
        dv = (p * keep).transpose(-2, -1).matmul(g)
    else:
        dp = g.matmul(v.transpose(-2, -1))
        dv = p.transpose(-2, -1).matmul(g)
    ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    return ds.matmul(k) * scale, ds.transpose(-2, -1).matmul(q) * scale, dv


class ScaledDotProductFlashAttentionForCpuBackward0(Op):
    """Attention without dropout in one node where no fused kernel serves the call (the CPU): the scores, the
    masked softmax and the product with the values in as few passes over the L x S weights as the array
    library allows, and a backward of three batched products and one softmax-gradient pass. Only the weights
    are kept of size L x S (as the composite's softmax would keep them). PyTorch's CPU node has this name."""

    def forward(self, q, k, v, mask=None, causal=False, scale=1.0):
        self.causal, self.scale = causal, scale
        out, p = _math_attention_arrays(q, k, v, mask, causal, scale)
        if any(self.needs_input_grad[:3]):
            self.save_for_backward(q, k, v, mask, Tensor._make(p, q._be))
        return out

    def backward(self, g):
        q, k, v, mask, p = self.saved_tensors
        need = self.needs_input_grad[:3]
        if _state.grad:
            grads = _composite_backward(g, q, k, v, mask, self.causal, self.scale)
            return tuple(d if n else None for d, n in zip(grads, need)) + (None,)
        be = g._be
        gd, pd = g._data, p._data
        dq = dk = dv = None
        if need[2]:
            dv = Tensor._make(be.matmul(pd, gd, transpose_a=True), be)
        if need[0] or need[1]:
            ds = be.attention_softmax_backward(pd, be.matmul(gd, v._data, transpose_b=True), self.scale, True)
            if need[0]:
                dq = Tensor._make(be.matmul(ds, k._data), be)
            if need[1]:
                dk = Tensor._make(be.matmul(ds, q._data, transpose_a=True), be)
        return dq, dk, dv, None


def _math_attention_arrays(q, k, v, mask, causal, scale):
    """(softmax(q k^T scale, masked) v, the weights) on the arrays of ``ScaledDotProductFlashAttentionForCpuBackward0``."""
    be = q._be
    # the scale goes into the softmax's pass over the scores (PyTorch's CPU attention scales there too)
    scores = be.matmul(q._data, k._data, transpose_b=True)
    p = be.attention_softmax(scores, causal, None if mask is None else mask._data, overwrite=True, scale=scale)
    return be.attention_values(p, v._data, q._data), p


def _math_attention(query, key, value, attn_mask, is_causal, scale):
    """The one-node attention of ``ScaledDotProductFlashAttentionForCpuBackward0``, or None for what it does not
    take: 16-bit dtypes, batch dims that q, k and v do not share, a mask that needs a gradient or would broadcast
    the scores to a larger shape (the composite path serves those)."""
    qd, kd, vd = query._data, key._data, value._data
    if qd.dtype.itemsize == 2 or qd.ndim < 2 or kd.shape[:-2] != qd.shape[:-2] or vd.shape[:-2] != qd.shape[:-2] \
            or kd.shape[-1] != qd.shape[-1] or vd.shape[-2] != kd.shape[-2]:
        return None
    if attn_mask is not None:
        if _state.grad and attn_mask.requires_grad:
            return None
        shape = qd.shape[:-1] + (kd.shape[-2],)
        ms = attn_mask._data.shape
        if len(ms) > len(shape) or any(m not in (1, n) for m, n in zip(ms[::-1], shape[::-1])):
            return None
        if attn_mask.dtype is not _dtype.bool and attn_mask.dtype is not query.dtype:
            attn_mask = attn_mask.to(query.dtype)
    if skips_node(query, key, value, attn_mask):
        # outside autograd the node would only run its forward
        return _new_tensor(_math_attention_arrays(query, key, value, attn_mask, is_causal, scale)[0], query._be)
    return ScaledDotProductFlashAttentionForCpuBackward0.apply(query, key, value, attn_mask, causal=is_causal,
                                                               scale=scale)


class ScaledDotProductFlashAttentionBackward0(Op):
    """Fused attention (the backend's ``attention_forward`` / ``attention_backward``; attention.cu on CUDA).

    Nothing of size L x S is kept: the saved tensors are q, k, v, the output and one log-sum-exp per query row,
    and the dropout mask is regenerated in the backward from the generator state (seed, offset) the forward
    drew at. ``forward`` receives the primitive's result, computed before ``apply`` because the primitive may
    decline a call, which then takes the composite path instead."""

    save_output = True

    def forward(self, q, k, v, mask=None, fused=None, causal=False, scale=1.0, dropout_p=0.0, seed=0, offset=0,
                rng_state=None):
        out, lse = fused
        self.causal, self.scale, self.dropout_p, self.seed, self.offset = causal, scale, dropout_p, seed, offset
        self.rng_state = rng_state  # under CUDA-graph capture: the graph's device copy of the generator state
        if any(self.needs_input_grad[:3]):
            self.save_for_backward(q, k, v, mask, Tensor._make(lse, q._be))
        return out

    def backward(self, g):
        q, k, v, mask, lse, out = self.saved_tensors
        if _state.grad:
            grads = _composite_backward(g, q, k, v, mask, self.causal, self.scale, self.dropout_p, self.seed,
                                        self.offset)
        else:
            be = q._be
            grads = be.attention_backward(be.ascontiguous(g._data), q._data, k._data, v._data, out._data, lse._data,
                                          None if mask is None else mask._data, self.causal, self.scale,
                                          self.dropout_p, self.seed, self.offset, self.rng_state)
            if grads is None:
                raise RuntimeError("scaled_dot_product_attention: the fused backward declined a call its forward "
                                   "served; set MINITORCH_GPU_KERNELS=0 to use the composite path")
            grads = tuple(Tensor._make(d, be) for d in grads)
        return tuple(d if need else None for d, need in zip(grads, self.needs_input_grad[:3])) + (None,)


def _fused_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The output of the fused path, or None when the backend does not fuse this call (the CPU; a dtype or shape
    the kernels do not cover) or it needs what the fused node does not give (a gradient for the mask)."""
    be = query._be
    if key._be is not be or value._be is not be or not 0.0 <= dropout_p < 1.0:
        return None
    mask = None
    if attn_mask is not None:
        if attn_mask._be is not be or (_state.grad and attn_mask.requires_grad):
            return None
        mask = attn_mask._data
    args = (query._data, key._data, value._data, mask, is_causal, scale, dropout_p)
    if dropout_p > 0.0:
        drawn_at = []

        def draw(seed, offset, rng_state=None):
            drawn_at.append((seed, offset, rng_state))
            res = be.attention_forward(*args, seed, offset, rng_state)
            if res is None:
                return None, 0
            # the blocks the composite path's dropout mask (B, H, L, S) would use: the generator ends where it would
            return res, (math.prod(query._data.shape[:-1]) * key._data.shape[-2] + 3) // 4

        fused = _random._generator(None, be)._draw(draw)
        seed, offset, rng_state = drawn_at[0]
    else:
        fused = be.attention_forward(*args, 0, 0)
        seed = offset = 0
        rng_state = None
    if fused is None:
        return None
    return ScaledDotProductFlashAttentionBackward0.apply(query, key, value, attn_mask, fused=fused, causal=is_causal,
                                                         scale=scale, dropout_p=dropout_p, seed=seed, offset=offset,
                                                         rng_state=rng_state)


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims, batch dims broadcast.

    ``attn_mask``: a bool mask (True = the position takes part) or a float mask added to the scores.
    ``is_causal`` masks out keys after each query (top-left aligned); it cannot be combined with a mask.
    ``scale`` defaults to ``1/sqrt(E)``. ``enable_gqa`` lets key/value have fewer heads (dim -3) than
    query, each shared by a group of query heads. Dropout (``dropout_p``) is applied whenever it is > 0.
    """
    fn = "scaled_dot_product_attention"
    check_tensor(query, fn, "query", 1)
    check_tensor(key, fn, "key", 2)
    check_tensor(value, fn, "value", 3)
    if attn_mask is not None:
        check_tensor(attn_mask, fn, "attn_mask", 4)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    qdt = query.dtype
    if key.dtype is not qdt or value.dtype is not qdt:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{qdt._cpp_typeid_name} key.dtype: {key.dtype._cpp_typeid_name} and value.dtype: "
                           f"{value.dtype._cpp_typeid_name} instead.")
    if attn_mask is not None and attn_mask.dtype is not _dtype.bool and not attn_mask.dtype.is_floating_point:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype._cpp_typeid_name} and  query.dtype: "
                           f"{qdt._cpp_typeid_name} instead.")
    if not qdt.is_floating_point:
        raise RuntimeError("Expected query, key and value to be floating point tensors, but got "
                           f"{qdt._cpp_typeid_name}")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t._data.ndim < 2:
            raise RuntimeError(f"{fn}: expected {name} to have at least 2 dimensions, but got {t._data.ndim}")
    if enable_gqa and query._data.ndim >= 3:
        hq = query._data.shape[-3]
        hk = key._data.shape[-3]
        hv = value._data.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        if hk != hq:
            key = key.repeat_interleave(hq // hk, -3)
        if hv != hq:
            value = value.repeat_interleave(hq // hv, -3)
    factor = 1.0 / math.sqrt(query._data.shape[-1]) if scale is None else float(scale)
    fused = _fused_attention(query, key, value, attn_mask, dropout_p, is_causal, factor)
    if fused is not None:
        return fused
    if dropout_p == 0.0 and query._be is key._be and value._be is query._be and \
            (attn_mask is None or attn_mask._be is query._be):
        out = _math_attention(query, key, value, attn_mask, is_causal, factor)
        if out is not None:
            return out
    weights = _composite_weights(query, key, attn_mask, is_causal, factor)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights.matmul(value)


# ---------------------------------------------------------------------- multi-head attention

def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask as a float mask (-inf where True); float masks pass through."""
    if mask is None:
        return None
    mdt = mask.dtype
    if mdt is not _dtype.bool and not mdt.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mdt is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      f"instead.")
    if mdt is _dtype.bool:
        be = mask._be
        zeros = Tensor._make(be.zeros(mask._data.shape, be.np_dtype(target_type)), be)
        return zeros.masked_fill(mask, float("-inf"))
    return mask


def _none_or_dtype(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return x.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the inputs are batched (3-D query), with PyTorch's shape assertions."""
    qd = query.dim()
    if qd == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if qd == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {qd}-D query tensor")


def _in_projection_packed(q, k, v, w, b):
    """q, k, v projected by the stacked weight ``w`` (3E, E): one product for self-attention, two for
    encoder-decoder attention (key is value), three otherwise."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            return proj.chunk(3, -1)
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv = linear(k, w_kv, b_kv).chunk(2, -1)
        return linear(q, w_q, b_q), kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    if tuple(w_q.shape) != (Eq, Eq):
        raise AssertionError(f"expecting query weights shape of {(Eq, Eq)}, but got {w_q.shape}")
    if tuple(w_k.shape) != (Eq, Ek):
        raise AssertionError(f"expecting key weights shape of {(Eq, Ek)}, but got {w_k.shape}")
    if tuple(w_v.shape) != (Eq, Ev):
        raise AssertionError(f"expecting value weights shape of {(Eq, Ev)}, but got {w_v.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention over sequence-first inputs: query (L, N, E) or (L, E), key/value (S, N, E_k/E_v).

    Bool masks mark the positions NOT attended to (True = masked), as in ``nn.MultiheadAttention``.
    Returns (output (L, N, E), weights (N, L, S) averaged over heads, or (N, H, L, S), or None when
    ``need_weights`` is False).
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query = query.unsqueeze(1)
        key = key.unsqueeze(1)
        value = value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the mask is only a hint here: scaled_dot_product_attention builds the causal mask itself
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
        if in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")

    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    if static_k is None:
        k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_k.size(0) != bsz * num_heads or static_k.size(2) != head_dim:
            raise AssertionError(f"expecting static_k of shape ({bsz * num_heads}, *, {head_dim}), but got "
                                 f"{tuple(static_k.shape)}")
        k = static_k
    if static_v is None:
        v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    else:
        if static_v.size(0) != bsz * num_heads or static_v.size(2) != head_dim:
            raise AssertionError(f"expecting static_v of shape ({bsz * num_heads}, *, {head_dim}), but got "
                                 f"{tuple(static_v.shape)}")
        v = static_v

    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = cat([k, k.new_zeros(zshape)], dim=1)
        v = cat([v, v.new_zeros(zshape)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    src_len = k.size(1)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        weights = q_scaled.bmm(k.transpose(-2, -1))
        if attn_mask is not None:
            weights = weights + attn_mask
        weights = weights.softmax(-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = weights.bmm(v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.size(1))
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.size(1))
    if not is_batched:
        out = out.squeeze(1)
    return out, None
