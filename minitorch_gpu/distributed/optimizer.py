"""Horovod-style data parallelism: wrap the optimizer instead of the model.

``DistributedOptimizer(opt)`` returns an optimizer of a dynamic subclass of ``type(opt)`` (Horovod's trick) that
starts an asynchronous all-reduce of each gradient the moment autograd has accumulated it (a post-accumulate-grad
hook), so communication overlaps the rest of backward, and waits for them all in ``step()`` (or in an explicit
``synchronize()``, for code that must see the averaged gradients before stepping, e.g. gradient clipping)::

    opt = dist.DistributedOptimizer(mt.optim.SGD(model.parameters(), lr=0.1),
                                    named_parameters=model.named_parameters())
    dist.broadcast_parameters(model.state_dict(), root_rank=0)
    dist.broadcast_optimizer_state(opt, root_rank=0)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.synchronize()                          # only when clipping:
        mt.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with opt.skip_synchronize():
            opt.step()

Collectives are matched by order, not by name (there is no coordinator as in Horovod), so every rank must
produce gradients for the same parameters in the same order, which data-parallel replicas of one model do.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..ops.creation import zeros_like
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from ._process_group import ProcessGroup, Work
from .c10d import ReduceOp, _broadcast_coalesced, _resolve, _valid_group, all_reduce, broadcast_object_list, get_rank

if TYPE_CHECKING:
    from .c10d import GroupLike, ReduceOpLike

    # the mixin's methods run as methods of an Optimizer subclass (see DistributedOptimizer)
    _OptimizerBase = Optimizer
else:
    _OptimizerBase = object

__all__ = ["Average", "Compression", "DistributedOptimizer", "Sum", "broadcast_optimizer_state",
           "broadcast_parameters"]

#: gradients are averaged over the ranks (the default)
Average = ReduceOp.AVG
#: gradients are summed over the ranks
Sum = ReduceOp.SUM


class Compressor(Protocol):
    """What ``DistributedOptimizer(compression=...)`` calls: ``compress`` returns the tensor to send and a
    context that ``decompress`` gets back with the reduced tensor."""

    @staticmethod
    def compress(tensor: Tensor) -> tuple[Tensor, Any]: ...

    @staticmethod
    def decompress(tensor: Tensor, ctx: Any) -> Tensor: ...


class NoneCompressor:
    """No compression: gradients travel in their own dtype."""

    @staticmethod
    def compress(tensor: Tensor) -> tuple[Tensor, None]:
        return tensor, None

    @staticmethod
    def decompress(tensor: Tensor, ctx: None) -> Tensor:
        return tensor


class FP16Compressor:
    """Floating-point gradients travel as float16 (half the bytes) and are restored to their dtype after."""

    # NOTE: the ignores below: Tensor's op methods (``to``, ``*``) are bound onto the class when the ops
    # import, so the type checker does not see them

    @staticmethod
    def compress(tensor: Tensor) -> tuple[Tensor, _dtype.dtype | None]:
        if tensor.dtype.is_floating_point and tensor.dtype is not _dtype.float16:
            return tensor.to(_dtype.float16), tensor.dtype  # type: ignore[attr-defined]
        return tensor, None

    @staticmethod
    def decompress(tensor: Tensor, ctx: _dtype.dtype | None) -> Tensor:
        return tensor if ctx is None else tensor.to(ctx)  # type: ignore[attr-defined]


class Compression:
    """Gradient compression for :func:`DistributedOptimizer`: ``Compression.none`` or ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor


class _DistributedOptimizer(_OptimizerBase):
    """The methods mixed into the dynamic subclass (see :func:`DistributedOptimizer`)."""

    def _dist_setup(self, base_cls: type[Optimizer], named_parameters: Iterable[tuple[str, Tensor]] | None,
                    compression: Compressor, backward_passes_per_step: int, op: ReduceOpLike,
                    gradient_predivide_factor: float, group: GroupLike) -> None:
        self._dist_base = base_cls
        self._compression = compression
        self._bpps = backward_passes_per_step
        self._op = op
        self._predivide = float(gradient_predivide_factor)
        # a rank outside ``group`` has no gradients to average with it: refuse now, not in the first backward
        self._group: ProcessGroup = _valid_group(group)
        all_params = [p for g in self.param_groups for p in g["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            if any(not isinstance(x, tuple) or len(x) != 2 for x in named):
                raise ValueError("named_parameters should be a sequence of tuples (name, parameter), usually "
                                 "produced by model.named_parameters().")
            names = [n for n, _ in named]
            if len(set(names)) != len(names):
                dups = sorted({n for n in names if names.count(n) > 1})
                raise ValueError(f"Parameter names in named_parameters must be unique. Found duplicates: "
                                 f"{', '.join(dups)}")
            name_of = {id(p): n for n, p in named}
            unnamed = [i for i, p in enumerate(all_params) if id(p) not in name_of]
            if unnamed:
                raise ValueError("named_parameters was specified, but one or more model parameters were not named. "
                                 "Python object ids: " + ", ".join(str(id(all_params[i])) for i in unnamed))
        else:
            name_of = {id(p): f"allreduce.noname.{i}" for i, p in enumerate(all_params)}
        self._names = name_of
        self._params = [p for p in all_params if p.requires_grad]
        self._handles: dict[int, tuple[Tensor, Work | None, Any]] = {}  # id(param) -> (param, handle, ctx)
        self._delay = {id(p): self._bpps for p in self._params}
        self._synchronized = False
        self._should_synchronize = True
        self._hook_handles = [p.register_post_accumulate_grad_hook(self._make_hook()) for p in self._params]

    def _make_hook(self) -> Callable[[Tensor], None]:
        def hook(p: Tensor) -> None:
            key = id(p)
            entry = self._handles.get(key)
            if entry is not None and entry[1] is not None and self._delay[key] <= 0:
                raise AssertionError("Gradients were computed more than backward_passes_per_step times before call "
                                     "to step(). Increase backward_passes_per_step to accumulate gradients locally.")
            self._delay[key] -= 1
            handle = ctx = None
            if self._delay[key] == 0:
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[key] = (p, handle, ctx)
        return hook

    def _allreduce_grad_async(self, p: Tensor) -> tuple[Work, tuple[Tensor, Any, float]]:
        if p.grad is None:
            # a parameter this rank did not use still joins the all-reduce, with a zero gradient
            p.grad = zeros_like(p)
        with no_grad():
            sent, cctx = self._compression.compress(p.grad)
            post = 1.0
            if self._op == Average:
                # Horovod's split of the average: 1/f before the sum, f/size after
                if self._predivide != 1.0:
                    if sent is p.grad:
                        sent.mul_(1.0 / self._predivide)
                    else:
                        sent = sent * (1.0 / self._predivide)  # type: ignore[operator, assignment]
                post = self._predivide / self._group.size()
            work = all_reduce(sent, op=ReduceOp.SUM, group=self._group, async_op=True)
        assert work is not None  # async_op on a group this rank belongs to (checked in _dist_setup)
        return work, (sent, cctx, post)

    def synchronize(self) -> None:
        """Wait for every gradient's all-reduce (starting those whose hooks have not fired yet), leaving the
        reduced gradients in ``.grad``."""
        pending = {k for k, e in self._handles.items()}
        for p in self._params:
            if id(p) not in pending:
                self._handles[id(p)] = (p, None, None)
        started = []
        for key, (p, handle, ctx) in list(self._handles.items()):
            if handle is None:
                handle, ctx = self._allreduce_grad_async(p)
                self._handles[key] = (p, handle, ctx)
            started.append((key, p, handle, ctx))
        with no_grad():
            for key, p, handle, (sent, cctx, post) in started:
                handle.wait()
                out = self._compression.decompress(sent, cctx)
                if out is not p.grad:
                    p.grad.copy_(out)
                if post != 1.0:
                    p.grad.mul_(post)
                self._delay[key] = self._bpps
        self._handles.clear()
        self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        """Within this context ``step()`` does not synchronize (call :meth:`synchronize` yourself first)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Synchronize the gradients (unless inside :meth:`skip_synchronize`), then take the wrapped
        optimizer's step."""
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() context after "
                              "optimizer.synchronize(). This can cause training slowdown. You may want to consider "
                              "using optimizer.skip_synchronize() context if you use optimizer.synchronize() in "
                              "your code.", stacklevel=2)
            self.synchronize()
        self._synchronized = False
        return self._dist_base.step(self, closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """The wrapped optimizer's ``zero_grad``; refused while gradient all-reduces are still pending."""
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step() or optimizer.synchronize(). This is prohibited as it can cause a "
                                 "race condition.")
        self._dist_base.zero_grad(self, set_to_none)


_MIXIN = {k: v for k, v in vars(_DistributedOptimizer).items() if k not in ("__dict__", "__weakref__", "__doc__")}


def DistributedOptimizer(optimizer: Optimizer, named_parameters: Iterable[tuple[str, Tensor]] | None = None,
                         compression: Compressor = Compression.none, backward_passes_per_step: int = 1,
                         op: ReduceOpLike = Average, gradient_predivide_factor: float = 1.0,
                         group: GroupLike = None) -> Optimizer:
    """Wrap ``optimizer`` so that gradients are all-reduced across the ranks of ``group`` (default: all) while
    backward runs, Horovod's ``hvd.DistributedOptimizer``. The result is an instance of a subclass of
    ``type(optimizer)`` sharing its parameter groups and state; use it in place of ``optimizer``.

    ``op`` is ``Average`` or ``Sum``; ``compression`` ``Compression.none`` or ``Compression.fp16``;
    ``backward_passes_per_step`` > 1 accumulates that many backward passes locally before each all-reduce;
    ``gradient_predivide_factor`` f splits the average into 1/f before the sum and f/size after.
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"DistributedOptimizer expects a minitorch_gpu.optim.Optimizer, got "
                        f"{type(optimizer).__name__}")
    if op not in (Average, Sum):
        raise ValueError(f"op must be Average or Sum, got {op!r} (Adasum is not supported)")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise ValueError(f"backward_passes_per_step must be a positive int, got {backward_passes_per_step!r}")
    if compression not in (Compression.none, Compression.fp16) and not (
            hasattr(compression, "compress") and hasattr(compression, "decompress")):
        raise TypeError("compression must be Compression.none, Compression.fp16 or an object with compress() and "
                        "decompress()")
    base = type(optimizer)
    cls = type(base.__name__, (base,), dict(_MIXIN))
    opt: _DistributedOptimizer = object.__new__(cls)
    opt.__dict__.update(optimizer.__dict__)
    opt._dist_setup(base, named_parameters, compression, backward_passes_per_step, op, gradient_predivide_factor,
                    group)
    return opt


def broadcast_parameters(params: dict[str, Tensor] | Iterable[tuple[str, Tensor]] | Iterable[Tensor],
                         root_rank: int, group: GroupLike = None) -> None:
    """Overwrite tensors on every rank with rank ``root_rank``'s: ``params`` is a ``state_dict()``, or an
    iterable of ``(name, tensor)`` pairs (``model.named_parameters()``) or of tensors."""
    if isinstance(params, dict):
        tensors = [t for _, t in sorted(params.items())]
    else:
        items = list(params)
        tensors = [x[1] if isinstance(x, tuple) else x for x in items]
    for t in tensors:
        if not isinstance(t, Tensor):
            # Horovod's error type
            raise ValueError(f"broadcast_parameters: invalid params of type {type(t).__name__}")  # noqa: TRY004
    seen, unique = set(), []
    for t in tensors:
        if id(t) not in seen:
            seen.add(id(t))
            unique.append(t)
    _broadcast_coalesced(unique, src=root_rank, group=group)


def broadcast_optimizer_state(optimizer: Optimizer, root_rank: int, group: GroupLike = None) -> None:
    """Make every rank's optimizer state (per-parameter state and hyperparameters) equal to ``root_rank``'s."""
    pg = _resolve(group)
    # filled with root_rank's state dict on every rank by the broadcast
    holder: list[Any] = [optimizer.state_dict() if get_rank() == root_rank else None]
    broadcast_object_list(holder, src=root_rank, group=pg)
    if get_rank() != root_rank:
        optimizer.load_state_dict(holder[0])
