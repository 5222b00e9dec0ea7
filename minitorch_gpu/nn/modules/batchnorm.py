"""Batch normalisation (``BatchNorm1d/2d/3d``, and ``SyncBatchNorm`` with the statistics of a process group)
and instance normalisation (``InstanceNorm1d/2d/3d``).

In training, batch norm normalises with the batch's statistics and folds them into the running estimates
(``running_mean``, ``running_var``: an exponential average with ``momentum``, or with ``momentum=None``
the cumulative average over ``num_batches_tracked`` batches); in evaluation it uses the estimates. With
``track_running_stats=False`` there are no estimates and batch statistics are always used.
"""
import warnings

from .. import functional as F
from .. import init
from ... import _dtype
from ...distributed import c10d as dist
from ...ops.creation import ones, tensor, zeros
from ..functional.normalization import sync_batch_norm
from ..module import Module
from .normalization import _affine_parameters

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "SyncBatchNorm"]


class _NormBase(Module):
    """Parameters (weight, bias), running estimates and their bookkeeping shared by batch and instance norm."""

    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, affine, bias, num_features, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # checkpoints written before num_batches_tracked existed (version 1) load with the current count
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else tensor(0, dtype=_dtype.int64))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        counting = self.training and self.track_running_stats and self.num_batches_tracked is not None
        if counting and self.momentum is None:
            # the cumulative average gives this batch weight 1 / (batches seen, this one included)
            factor = 1.0 / (float(self.num_batches_tracked) + 1.0)
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        out = self._normalize(input, self.running_mean if track else None, self.running_var if track else None,
                              use_batch_stats, factor)
        # counted once the batch was accepted, so that a refused input changes nothing
        if counting:
            self.num_batches_tracked.add_(1)
        return out

    def _normalize(self, input, running_mean, running_var, use_batch_stats, momentum):
        return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, use_batch_stats, momentum,
                            self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs, per channel C."""

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs, per channel C."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs, per channel C."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, ...) inputs whose training statistics cover the batches of every rank of
    ``process_group`` (default: all ranks): each rank's per-channel mean, variance and count are all-gathered
    in forward, and the two per-channel gradient sums the input gradient needs are all-reduced in backward.
    Outside a process group, on a group of one, and in evaluation it is ``BatchNorm``. Convert a model's
    batch norms with :meth:`convert_sync_batchnorm` before wrapping it in ``DistributedDataParallel``::

        model = mt.nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = mt.nn.parallel.DistributedDataParallel(model)

    Unlike PyTorch's, it synchronises CPU tensors too (over MPI).
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def _sync_group(self):
        """The group to synchronise with, or None to behave as BatchNorm (no group, a group of one, or this
        rank outside the group)."""
        if not dist.is_initialized():
            return None
        group = dist.group.WORLD if self.process_group is None else self.process_group
        return group if dist.get_world_size(group) > 1 else None

    def _normalize(self, input, running_mean, running_var, use_batch_stats, momentum):
        group = self._sync_group() if use_batch_stats and self.training else None
        if group is None:
            return super()._normalize(input, running_mean, running_var, use_batch_stats, momentum)
        return sync_batch_norm(input, running_mean, running_var, self.weight, self.bias, momentum, self.eps, group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Replace every ``BatchNorm*d`` in ``module`` (itself included: then a new module is returned) by a
        ``SyncBatchNorm`` that shares its parameters, running estimates and training mode."""
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class _InstanceNorm(_NormBase):
    # set by each subclass: the input rank without a batch dim, and the dims statistics reduce over
    _no_batch_dim: int | None = None
    _dims: tuple[int, ...] | None = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        if input.dim() not in self._dims:
            raise ValueError(f"expected {self._dims[0]}D or {self._dims[1]}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        unbatched = input.dim() == self._no_batch_dim
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L) inputs: each channel of each sample over its positions."""
    _no_batch_dim = 2
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W) inputs."""
    _no_batch_dim = 3
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W) inputs."""
    _no_batch_dim = 4
    _dims = (4, 5)
