"""Normalisation: ``layer_norm``, ``rms_norm``, ``group_norm``, ``batch_norm``, ``instance_norm`` and
``normalize``.

All but ``normalize`` share one fused node, ``_Normalize``: the input is viewed as an array whose ``axes``
hold the elements of one normalisation group (layer norm: ``(rows, features)`` over axis 1; group norm:
``(N, groups, channels per group, positions)`` over axes 2 and 3; batch norm: ``(N, C, positions)`` over
axes 0 and 2; instance norm: the same over axis 2), normalised with two-pass statistics (mean first, then
the mean square of the centred values, which stays accurate where E[x^2] - E[x]^2 would cancel), and
scaled / shifted by a per-feature weight and bias viewed to broadcast against it. Half-precision inputs are
computed in float32 and rounded once. Batch norm in evaluation mode is an affine map with constants and is
composed from Tensor ops instead.

The array work is the backend's (``layer_norm_forward`` / ``layer_norm_backward`` for the layer-norm layout,
fused kernels on CUDA; ``norm_forward`` / ``norm_backward`` for the others; ``norm_moments`` for the running
statistics): the forward keeps what its backward needs (the normalised values and the reciprocal standard
deviation on the CPU), so that the ordinary backward is a handful of fused passes over arrays. Under
``create_graph`` (grad mode on during backward) the gradients are instead rebuilt from the saved input with
Tensor ops, so that they carry a graph of their own and gradients of gradients come out right. Both paths
compute the same formula:

    dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),   dxhat = dy * weight
"""
import math
import numbers
import operator

from ... import _dtype
from ...autograd.node import Op, skips_node
from ...autograd.grad_mode import _state, no_grad
from ...distributed.c10d import all_gather_into_tensor, all_reduce
from ...ops._util import check_same_device
from ...ops.creation import empty, full, zeros
from ...ops.shape import cat
from ...tensor import Tensor, _new_tensor
from ...ops._autocast import autocast_op

__all__ = ["layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "normalize"]

_data_of = operator.attrgetter("_data")
_PLAIN_FLOATS = (_dtype.float32.np_dtype, _dtype.float64.np_dtype)

# machine epsilon per float dtype: rms_norm's default eps
_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}



def _compute_dtype(be, npd):
    """Half-precision inputs are normalised in float32 (PyTorch's accumulation type)."""
    return be.np_dtype(_dtype.float32) if npd.itemsize == 2 else npd


def _vector(p):
    """The array of a parameter (or None) as one vector: layer norm's weight and bias span the normalised
    trailing dims, which the layer-norm primitives see as one."""
    if p is None:
        return None
    d = p._data
    return d if d.ndim == 1 else d.reshape(-1)


class _Normalize(Op):
    """``(x - mean) * rstd * weight + bias`` with statistics over ``axes`` of ``x`` viewed as ``view``.

    ``weight`` / ``bias`` (either may be None) are viewed as ``wshape``, which has ``view``'s rank and
    broadcasts against it. ``center=False`` leaves the mean out (RMS normalisation). ``stats`` passes
    precomputed ``(mean, var)`` arrays (batch norm computes them first to update its running estimates).
    The layer-norm layout (rows of a 2-D view, parameters along the row) runs on the backend's
    ``layer_norm_forward`` / ``layer_norm_backward`` (fused kernels on CUDA), the others on ``norm_forward`` /
    ``norm_backward``. ``done`` passes ``(y, saved)`` already computed by a primitive of the caller's choice
    (saved in ``norm_forward``'s form, or its {"mean", "rstd"} variant).
    """

    def forward(self, x, weight, bias, view, axes, wshape, eps, center=True, stats=None, done=None):
        be = x._be
        xd = x._data
        xv = xd if xd.shape == view else xd.reshape(view)
        recording = False
        for e in self.next_functions:
            if e[0] is not None:
                recording = True
                break
        rows = stats is None and len(view) == 2 and axes == (1,) and wshape == (1, view[1])
        if done is not None:
            y, saved = done
        elif rows:
            y, saved = be.layer_norm_forward(xv, _vector(weight), _vector(bias), eps, center, recording)
        else:
            y, saved = be.norm_forward(xv, axes, None if weight is None else weight._data.reshape(wshape),
                                       None if bias is None else bias._data.reshape(wshape), eps, center, stats,
                                       recording)
        if recording:
            # saved like tensors, so that the engine frees them with the rest after backward
            self.saved_names = tuple(saved)
            self.save_for_backward(x, weight, *map(Tensor._make, saved.values(), (be,) * len(saved)))
            self.view, self.axes, self.wshape, self.eps, self.center = view, axes, wshape, eps, center
            self.rows = rows
            p = weight if weight is not None else bias
            if p is not None:
                self.param_shape, self.param_npd = p._data.shape, p._data.dtype
        return y.reshape(xd.shape)

    def _param_axes(self):
        """The axes of ``view`` that weight and bias are broadcast over (their gradients sum over them)."""
        return tuple(i for i, s in enumerate(self.wshape) if s == 1)

    def _param_grad(self, be, r):
        if r.shape != self.param_shape:
            r = r.reshape(self.param_shape)
        if r.dtype != self.param_npd:
            r = be.astype(r, self.param_npd)
        return Tensor._make(r, be)

    def backward(self, g):
        x, weight, *arrays = self.saved_tensors
        saved = dict(zip(self.saved_names, map(_data_of, arrays)))
        if _state.grad:
            return self._backward_graph(g, x, weight, saved["rstd"].dtype)
        needs = self.needs_input_grad
        be = g._be
        xd = x._data
        view = self.view
        xv = xd if xd.shape == view else xd.reshape(view)
        gv = g._data
        if gv.shape != view:
            gv = gv.reshape(view)
        if self.rows:
            gx, gw, gb = be.layer_norm_backward(gv, xv, _vector(weight), saved, self.center, needs)
        else:
            gx, gw, gb = be.norm_backward(gv, xv, None if weight is None else weight._data.reshape(self.wshape),
                                          saved, self.axes, self._param_axes(), self.center, needs)
        return (None if gx is None else Tensor._make(gx.reshape(xd.shape), be),
                None if gw is None else self._param_grad(be, gw),
                None if gb is None else self._param_grad(be, gb))

    def _backward_graph(self, g, x, weight, npd):
        """The same gradients from Tensor ops on the saved input, recorded for a further backward."""
        nx, nw, nb = self.needs_input_grad
        view, axes = self.view, self.axes
        cdt = _dtype.from_numpy_dtype(npd)
        xv = x.reshape(view)
        if xv.dtype is not cdt:
            xv = xv.to(cdt)
        xc = xv - xv.mean(axes, keepdim=True) if self.center else xv
        rstd = ((xc * xc).mean(axes, keepdim=True) + self.eps).rsqrt()
        xhat = xc * rstd
        gv = g.reshape(view)
        if gv.dtype is not cdt:
            gv = gv.to(cdt)
        paxes = self._param_axes()
        gx = gw = gb = None
        if nw or nb:
            pdt = _dtype.from_numpy_dtype(self.param_npd)
            if nw:
                gw = gv * xhat
                gw = (gw.sum(paxes, keepdim=True) if paxes else gw).reshape(self.param_shape).to(pdt)
            if nb:
                gb = (gv.sum(paxes, keepdim=True) if paxes else gv).reshape(self.param_shape).to(pdt)
        if nx:
            gxh = gv * weight.reshape(self.wshape).to(cdt) if weight is not None else gv
            r = gxh - xhat * (gxh * xhat).mean(axes, keepdim=True)
            if self.center:
                r = r - gxh.mean(axes, keepdim=True)
            gx = (r * rstd).reshape(x.shape).to(x.dtype)
        return gx, gw, gb


class NativeLayerNormBackward0(_Normalize):
    pass


class RmsNormBackward0(_Normalize):
    pass


class NativeGroupNormBackward0(_Normalize):
    pass


class NativeBatchNormBackward0(_Normalize):
    """Batch norm in training; where the backend's ``batch_norm_forward`` made the output (``done``), its
    ``batch_norm_backward`` makes the gradients from the saved per-channel statistics."""

    def backward(self, g):
        if not _state.grad:
            x, weight, *arrays = self.saved_tensors
            saved = dict(zip(self.saved_names, map(_data_of, arrays)))
            if "xhat" not in saved:
                be = g._be
                view = self.view
                r = be.batch_norm_backward(g._data.reshape(view), x._data.reshape(view),
                                           None if weight is None else weight._data, saved["mean"], saved["rstd"],
                                           self.needs_input_grad)
                if r is not None:
                    gx, gw, gb = r
                    return (None if gx is None else Tensor._make(gx.reshape(x._data.shape), be),
                            None if gw is None else self._param_grad(be, gw),
                            None if gb is None else self._param_grad(be, gb))
        return super().backward(g)


class SyncBatchNormBackward(_Normalize):
    """Batch norm with the statistics of a whole process group (see :func:`sync_batch_norm`).

    The forward normalises with the group's ``stats``. The input gradient needs two per-channel sums over the
    whole group, which backward all-reduces in one message as PyTorch does (its sum_dy and sum_dy_xmu; the
    second travels here as sum(dy * xhat) = sum_dy_xmu * rstd, rstd being the same on every rank):

        dx = weight * rstd * (dy - sum_dy / N - xhat * sum(dy * xhat) / N),  N = the group's count

    The weight and bias get this rank's gradients only, as in PyTorch (data parallelism averages them).
    Gradients of this backward are not recorded (PyTorch cannot differentiate it either).
    """

    def forward(self, x, weight, bias, view, axes, wshape, eps, stats, group, count):
        self.group, self.count = group, count
        return super().forward(x, weight, bias, view, axes, wshape, eps, stats=stats)

    def backward(self, g):
        x, weight, *arrays = self.saved_tensors
        saved = dict(zip(self.saved_names, map(_data_of, arrays)))
        nx, nw, nb = self.needs_input_grad
        be = g._be
        view, c = self.view, self.view[1]
        xv = x._data.reshape(view)
        gv = g._data.reshape(view)
        w = None if weight is None else weight._data.reshape(self.wshape)
        # the weight's and bias's gradients are the local sums the input gradient needs
        _, sum_dy_xhat, sum_dy = be.norm_backward(gv, xv, w, saved, self.axes, self.axes, True,
                                                  (False, nx or nw, nx or nb))
        gx = None
        if nx:
            with no_grad():
                sums = cat([Tensor._make(sum_dy.reshape(c), be), Tensor._make(sum_dy_xhat.reshape(c), be)])
                all_reduce(sums, group=self.group)
            means = be.binary("mul", sums._data, 1.0 / self.count)
            rstd = saved["rstd"]
            cdt = rstd.dtype
            gd = gv if gv.dtype == cdt else be.astype(gv, cdt)
            r = be.binary("sub", gd, means[:c].reshape(self.wshape))
            t = be.binary("mul", saved["xhat"], means[c:].reshape(self.wshape))
            be.binary("sub", r, t, out=r)
            scale = rstd if w is None else be.binary("mul", rstd, w if w.dtype == cdt else be.astype(w, cdt))
            be.binary("mul", r, scale, out=r)
            if r.dtype != x._data.dtype:
                r = be.astype(r, x._data.dtype)
            gx = Tensor._make(r.reshape(x._data.shape), be)
        return (gx, self._param_grad(be, sum_dy_xhat) if nw else None, self._param_grad(be, sum_dy) if nb else None)


# ---------------------------------------------------------------------- argument checks

def _need_float(input, kernel):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype._scalar_name}'")


def _check_param_dtype(input, params, msg):
    """Parameters share the input's dtype, except that half-precision inputs may take float32 ones."""
    dt = input.dtype
    for p in params:
        if p is not None and p.dtype is not dt and not (dt.itemsize == 2 and p.dtype is _dtype.float32):
            raise RuntimeError(msg)


def _same_device(input, params):
    check_same_device(input, *[p for p in params if p is not None])


def _shape_tuple(normalized_shape, fn):
    if isinstance(normalized_shape, numbers.Integral) or not hasattr(normalized_shape, "__iter__"):
        raise TypeError(f"{fn}(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    return tuple(int(s) for s in normalized_shape)


def _normalized_view(input, shape, fn, sep):
    """(M, K) for normalising the trailing ``shape`` of ``input``; PyTorch's errors otherwise."""
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    xs = input._data.shape
    k = len(shape)
    if len(xs) < k or tuple(xs[len(xs) - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{sep}{', '.join(map(str, shape))}], but got input of size{list(xs)}")
    return (math.prod(xs[:len(xs) - k]), math.prod(shape))


def _check_param_shape(p, name, shape):
    if p is not None and tuple(p._data.shape) != shape:
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                           f"{list(p.shape)} and normalized_shape = {list(shape)}")


# ---------------------------------------------------------------------- the functions

def _plain_param(p, n, npd, be):
    """Whether a layer-norm parameter fits the common call: None, or (n,) of the input's dtype and device."""
    return p is None or (p._data.shape == (n,) and p._data.dtype is npd and p._be is be)


@autocast_op("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims to zero mean and unit variance (biased), then
    scale by ``weight`` and shift by ``bias`` (both of shape ``normalized_shape``)."""
    xd = input._data
    xs = xd.shape
    npd = xd.dtype
    be = input._be
    if isinstance(normalized_shape, (tuple, list)) and len(normalized_shape) == 1 and xs and \
            normalized_shape[0].__class__ is int and normalized_shape[0] == xs[-1] and npd in _PLAIN_FLOATS and \
            _plain_param(weight, xs[-1], npd, be) and _plain_param(bias, xs[-1], npd, be):
        # NOTE: the common call (one trailing dim, parameters of its size in the input's dtype and device) passes
        # every check below at once; outside autograd the node would only run its forward, so the primitive runs
        # without it (the per-call cost of small layers)
        n = xs[-1]
        view = (math.prod(xs[:-1]), n)
        if skips_node(input, weight, bias):
            y, _ = be.layer_norm_forward(xd if len(xs) == 2 else xd.reshape(view), _vector(weight), _vector(bias),
                                         float(eps), True, False)
            return _new_tensor(y if len(xs) == 2 else y.reshape(xs), be)
        return NativeLayerNormBackward0.apply(input, weight, bias, view=view, axes=(1,), wshape=(1, n),
                                              eps=float(eps))
    shape = _shape_tuple(normalized_shape, "layer_norm")
    view = _normalized_view(input, shape, "layer_norm", ", ")
    _check_param_shape(weight, "weight", shape)
    _check_param_shape(bias, "bias", shape)
    _need_float(input, "LayerNormKernelImpl")
    _check_param_dtype(input, (weight, bias),
                       f"mixed dtype (CPU): expect parameter to have scalar type of {input.dtype._scalar_name}")
    _same_device(input, (weight, bias))
    return NativeLayerNormBackward0.apply(input, weight, bias, view=view, axes=(1,), wshape=(1, view[1]),
                                          eps=float(eps))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing ``normalized_shape`` dims, times ``weight``; ``eps``
    defaults to the machine epsilon of the input's dtype."""
    shape = _shape_tuple(normalized_shape, "rms_norm")
    view = _normalized_view(input, shape, "rms_norm", "")
    _check_param_shape(weight, "weight", shape)
    _need_float(input, "rms_norm")
    _check_param_dtype(input, (weight,),
                       f"mixed dtype (CPU): expect parameter to have scalar type of {input.dtype._scalar_name}")
    _same_device(input, (weight,))
    if eps is None:
        eps = _EPS[input.dtype.name]
    return RmsNormBackward0.apply(input, weight, None, view=view, axes=(1,), wshape=(1, view[1]),
                                  eps=float(eps), center=False)


@autocast_op("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels (dim 1) into ``num_groups`` groups and normalise each group of each sample over
    its channels and positions; ``weight`` / ``bias`` hold one value per channel."""
    xs = input._data.shape
    if len(xs) < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {len(xs)}")
    n, c = xs[0], xs[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(xs)} and num_groups={num_groups}")
    for p, name in ((weight, "weight"), (bias, "bias")):
        if p is not None and (p.dim() != 1 or p.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(p.shape)} and input of shape {list(xs)}")
    _need_float(input, "GroupNormKernelImpl")
    _check_param_dtype(input, (weight, bias),
                       f"mixed dtype (CPU): expect parameter to have scalar type of {input.dtype._scalar_name}")
    _same_device(input, (weight, bias))
    g = num_groups
    view = (n, g, c // g, math.prod(xs[2:]))
    return NativeGroupNormBackward0.apply(input, weight, bias, view=view, axes=(2, 3), wshape=(1, g, c // g, 1),
                                          eps=float(eps))


def _channel_checks(input, tensors):
    c = input._data.shape[1] if input._data.ndim > 1 else 0
    for t, name in tensors:
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    return c


def _batch_norm_checks(input, running_mean, running_var, weight, bias, training, momentum):
    """PyTorch's argument checks of batch norm, in its order; returns the number of channels."""
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if momentum is None or isinstance(momentum, bool) or not isinstance(momentum, numbers.Real):
        raise TypeError(f"batch_norm(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")
    if not training and running_mean is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    c = _channel_checks(input, ((running_mean, "running_mean"), (running_var, "running_var"),
                                (weight, "weight"), (bias, "bias")))
    if input._data.ndim < 2:
        raise RuntimeError(f"batch_norm: expected an input with at least 2 dims (N, C, ...), got "
                           f"{input._data.ndim}")
    _need_float(input, "batch_norm")
    _check_param_dtype(input, (weight, bias, running_mean, running_var),
                       "mixed dtype (CPU): all inputs must share same datatype.")
    _same_device(input, (weight, bias, running_mean, running_var))
    return c


def _update_running(running, new, momentum):
    """running = (1 - momentum) * running + momentum * new, in place and unrecorded."""
    with no_grad():
        running.mul_(1 - momentum).add_(new.to(running.dtype).reshape(running.shape), alpha=momentum)


def _channel_moments(input, view):
    """(mean, biased variance) per channel of ``input`` viewed as (N, C, positions), kept dims, computed in the
    compute dtype."""
    be = input._be
    xv = input._data.reshape(view)
    cdt = _compute_dtype(be, xv.dtype)
    if xv.dtype != cdt:
        xv = be.astype(xv, cdt)
    mean, var, _ = be.norm_moments(xv, (0, 2), True)
    return mean, var


def _update_running_stats(running_mean, running_var, mean, var, n, momentum):
    """Fold a batch's statistics over ``n`` values per channel into the running estimates (the variance
    unbiased, as PyTorch does)."""
    be = running_mean._be
    _update_running(running_mean, Tensor._make(mean, be), momentum)
    _update_running(running_var, Tensor._make(be.binary("mul", var, n / (n - 1)), be), momentum)


def _eval_affine(input, mean, var, weight, bias, eps):
    """(x - mean) / sqrt(var + eps) * weight + bias with per-channel constants folded into one scale and one
    shift, so the input is read twice instead of four times."""
    c = input._data.shape[1]
    bshape = (c,) + (1,) * (input._data.ndim - 2)
    scale = (var + eps).rsqrt()
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    if scale.dtype is not input.dtype:
        scale = scale.to(input.dtype)
        shift = shift.to(input.dtype)
    return input * scale.reshape(bshape) + shift.reshape(bshape)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalise each channel (dim 1) over the batch and positions. In training (or without running
    estimates) the batch's statistics are used and, when given, ``running_mean`` / ``running_var`` are
    updated in place with ``momentum`` (the variance unbiased, as PyTorch does); in evaluation the running
    estimates are used."""
    if training:
        xs = input._data.shape
        size = math.prod(xs[:1] + xs[2:]) if xs else 1
        if size == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    c = _batch_norm_checks(input, running_mean, running_var, weight, bias, training, momentum)
    if not training:
        return _eval_affine(input, running_mean, running_var, weight, bias, eps)
    xs = input._data.shape
    view = (xs[0], c, math.prod(xs[2:]))
    be = input._be
    fast = be.batch_norm_forward(input._data.reshape(view), None if weight is None else weight._data,
                                 None if bias is None else bias._data, float(eps))
    if fast is not None:
        # one pass for the statistics and one for the output (the backend's compiled loops)
        y, mean, var, rstd = fast
        if running_mean is not None:
            _update_running_stats(running_mean, running_var, mean, var, view[0] * view[2], momentum)
        saved = {"mean": mean.reshape(1, c, 1), "rstd": rstd.reshape(1, c, 1)}
        return NativeBatchNormBackward0.apply(input, weight, bias, view=view, axes=(0, 2), wshape=(1, c, 1),
                                              eps=float(eps), done=(y, saved))
    stats = None
    if running_mean is not None:
        stats = _channel_moments(input, view)
        _update_running_stats(running_mean, running_var, *stats, view[0] * view[2], momentum)
    return NativeBatchNormBackward0.apply(input, weight, bias, view=view, axes=(0, 2), wshape=(1, c, 1),
                                          eps=float(eps), stats=stats)


def sync_batch_norm(input, running_mean, running_var, weight, bias, momentum, eps, group):
    """Training-mode :func:`batch_norm` whose statistics cover the batches of every rank of the process
    ``group`` (:class:`~minitorch_gpu.nn.SyncBatchNorm`'s computation; every rank must call it). Each rank's
    per-channel (mean, biased variance, count) are all-gathered and combined as a parallel variance: a rank
    with an empty batch counts for nothing. The running estimates get the group's mean and unbiased
    variance."""
    c = _batch_norm_checks(input, running_mean, running_var, weight, bias, True, momentum)
    xs = input._data.shape
    view = (xs[0], c, math.prod(xs[2:]))
    be = input._be
    cdt = _dtype.from_numpy_dtype(_compute_dtype(be, input._data.dtype))
    n_local = view[0] * view[2]
    with no_grad():
        if n_local:
            mean, var = _channel_moments(input, view)
            local = cat([Tensor._make(mean.reshape(c), be), Tensor._make(var.reshape(c), be),
                         full((1,), float(n_local), dtype=cdt, device=input.device)])
        else:
            local = zeros(2 * c + 1, dtype=cdt, device=input.device)
        rows = empty((group.size(), 2 * c + 1), dtype=cdt, device=input.device)
        all_gather_into_tensor(rows, local, group=group)
        means, variances, counts = rows[:, :c], rows[:, c:2 * c], rows[:, 2 * c:]
        n = float(counts.sum().item())
        if n <= 1:
            # every rank sees the same count, so all of them refuse together
            raise ValueError(f"Expected more than 1 value per channel when training, got {int(n)} over the "
                             f"process group (this rank's input size {input.shape})")
        weights = counts / n
        g_mean = (weights * means).sum(0)
        spread = means - g_mean
        g_var = (weights * (variances + spread * spread)).sum(0)
    stats = (g_mean._data.reshape(1, c, 1), g_var._data.reshape(1, c, 1))
    if running_mean is not None:
        _update_running_stats(running_mean, running_var, *stats, n, momentum)
    return SyncBatchNormBackward.apply(input, weight, bias, view=view, axes=(0, 2), wshape=(1, c, 1),
                                       eps=float(eps), stats=stats, group=group, count=n)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its positions; with ``use_input_stats=False`` the running
    estimates are used instead, and with them given and ``use_input_stats`` they are updated (averaged over
    the batch)."""
    xs = input._data.shape
    if use_input_stats:
        if math.prod(xs[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    if input._data.ndim < 2:
        raise RuntimeError(f"instance_norm: expected an input with at least 2 dims (N, C, ...), got "
                           f"{input._data.ndim}")
    c = _channel_checks(input, ((running_mean, "running_mean"), (running_var, "running_var"),
                                (weight, "weight"), (bias, "bias")))
    _need_float(input, "instance_norm")
    _check_param_dtype(input, (weight, bias, running_mean, running_var),
                       "mixed dtype (CPU): all inputs must share same datatype.")
    _same_device(input, (weight, bias, running_mean, running_var))
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return _eval_affine(input, running_mean, running_var, weight, bias, eps)
    view = (xs[0], c, math.prod(xs[2:]))
    be = input._be
    stats = None
    if running_mean is not None and running_var is not None:
        cdt = _compute_dtype(be, input._data.dtype)
        xv = input._data.reshape(view)
        if xv.dtype != cdt:
            xv = be.astype(xv, cdt)
        mean, var, _ = be.norm_moments(xv, (2,), True)
        stats = (mean, var)
        n = view[2]
        _update_running(running_mean, Tensor._make(be.mean(mean, (0,)), be), momentum)
        _update_running(running_var, Tensor._make(be.binary("mul", be.mean(var, (0,)), n / (n - 1)), be), momentum)
    return NativeBatchNormBackward0.apply(input, weight, bias, view=view, axes=(2,), wshape=(1, c, 1),
                                          eps=float(eps), stats=stats)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along ``dim``, eps): unit-norm slices (zero slices stay zero)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    from ...ops.elementwise import div
    return div(input, denom, out=out)
