"""Multi-process data parallelism: PyTorch's ``DistributedDataParallel``.

Every rank holds a full replica of the module and a shard of the batch. At construction rank 0's
parameters and buffers are broadcast (after checking that every rank has the same parameter names and
shapes). Gradients are averaged during backward:

* parameters are packed into buckets in *reverse* registration order (the order backward tends to produce
  their gradients) of up to ``bucket_cap_mb`` (25 by default, and then, as in PyTorch, the first bucket is
  only 1 MiB so that communication starts early);
* a post-accumulate-grad hook copies each gradient into its bucket (pre-divided by the world size); when a
  bucket's last gradient lands, its all-reduce starts asynchronously — while backward goes on computing the
  gradients of earlier layers. Buckets start in index order on every rank, so the collectives match;
* a callback queued on the autograd engine waits for the remaining all-reduces when backward ends and writes
  the averages back into ``.grad`` (or, with ``gradient_as_bucket_view=True``, the gradients *are* views of
  the buckets and nothing is copied).

``no_sync()`` skips the reduction (gradients accumulate locally) until the next backward outside it.
``find_unused_parameters=True`` walks the autograd graph from the forward's outputs to find parameters this
iteration will not produce gradients for, and reduces zeros for them; without it such a parameter makes the
next forward raise, as in PyTorch.

Beyond PyTorch: ``DistributedDataParallel(module, optimizer=opt)`` runs ``opt``'s update for each bucket's
parameters as soon as that bucket's all-reduce has completed, still inside backward (optimizer-in-backward):
the update of the last layers overlaps the communication of the first. ``opt.step()`` is then still called
as usual once per iteration; for parameters already updated in backward it does nothing (step hooks and LR
schedulers see one ``step()`` per iteration as before). Gradient clipping cannot be combined with this mode
(the update happens before the full gradient norm is known); ``opt.zero_grad()`` stays the user's job.
"""
import time
import weakref
from contextlib import contextmanager

from ...autograd.engine import AccumulateGrad, queue_callback
from ...autograd.function import Function, bump_version
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...distributed.c10d import GroupMember, ReduceOp, _broadcast_coalesced, _resolve, all_gather_object, all_reduce
from ...tensor import Tensor
from ..module import Module

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
# the first bucket is small so the first all-reduce starts as early as possible (PyTorch's default too)
_DEFAULT_FIRST_BUCKET_BYTES = 1 * _MB


def _map_tensors(obj, fn):
    """``obj`` with every tensor inside (nested in tuples, lists, dicts) replaced by ``fn(tensor)``."""
    if isinstance(obj, Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_map_tensors(o, fn) for o in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
    return obj


def _tensors_in(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


def _reached_leaves(outputs):
    """ids of the leaf tensors that backward from ``outputs`` would reach (PyTorch's unused-parameter search)."""
    reached = set()
    seen = set()
    stack = []
    for t in _tensors_in(outputs, []):
        if not t.requires_grad:
            continue
        fn = t.grad_fn
        if fn is None:
            reached.add(id(t))
        else:
            stack.append(fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.__class__ is AccumulateGrad:
            reached.add(id(node.variable))
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and id(nxt) not in seen:
                stack.append(nxt)
    return reached


class _DDPSink(Function):
    """Identity on the forward's outputs whose backward runs first: it tells the reducer that backward has
    started (queueing the end-of-backward callback, marking unused parameters)."""

    @staticmethod
    def forward(ctx, reducer, *tensors):
        ctx.set_materialize_grads(False)
        ctx.reducer = reducer
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        ctx.reducer._start_backward()
        return (None,) + grads


class _InBackwardSteps:
    """The optimizer-in-backward bookkeeping of one optimizer (shared by every DDP module using it): which
    parameters were already updated during backward, so that the user's ``step()`` skips them."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.stepped = set()
        self.saved = None
        optimizer.register_step_pre_hook(self._pre_hook)
        optimizer.register_step_post_hook(self._post_hook)

    @staticmethod
    def attach(optimizer):
        state = optimizer.__dict__.get("_ddp_in_backward")
        if state is None:
            state = optimizer.__dict__["_ddp_in_backward"] = _InBackwardSteps(optimizer)
        return state

    def step(self, params):
        """One update restricted to ``params``, without the step hooks (they run once per iteration, around
        the user's own ``step()``)."""
        opt = self.optimizer
        self._restore()
        keep = {id(p) for p in params}
        groups = opt.param_groups
        saved = [g["params"] for g in groups]
        fn = type(opt).step
        raw = getattr(fn, "__wrapped__", fn)
        try:
            for g in groups:
                g["params"] = [p for p in g["params"] if id(p) in keep]
            with no_grad():
                raw(opt)
        finally:
            for g, s in zip(groups, saved):
                g["params"] = s
        self.stepped.update(keep)

    def forget(self, params):
        """A new iteration of these parameters begins: they have not been stepped in it yet."""
        self._restore()
        self.stepped.difference_update(id(p) for p in params)

    def _restore(self):
        if self.saved is not None:
            for g, s in zip(self.optimizer.param_groups, self.saved):
                g["params"] = s
            self.saved = None

    def _pre_hook(self, opt, args, kwargs):
        self._restore()
        if self.stepped:
            self.saved = [g["params"] for g in opt.param_groups]
            for g in opt.param_groups:
                g["params"] = [p for p in g["params"] if id(p) not in self.stepped]
        return None

    def _post_hook(self, opt, args, kwargs):
        self._restore()
        self.stepped.clear()


class _Bucket:
    __slots__ = ("index", "params", "indices", "offsets", "views", "view_tensors", "flat", "be", "pending", "work",
                 "done", "t_launch", "t_done")

    def __init__(self, index, params, indices):
        from ...ops.creation import zeros
        self.index = index
        self.params = params
        self.indices = indices
        total = sum(p.numel() for p in params)
        self.flat = zeros(total, dtype=params[0].dtype, device=params[0].device)
        be = self.be = self.flat._be
        self.offsets = []
        self.views = []
        self.view_tensors = []
        off = 0
        for p in params:
            n = p.numel()
            v = be.reshape(self.flat._data[off:off + n], tuple(p.shape))
            self.offsets.append(off)
            self.views.append(v)
            self.view_tensors.append(Tensor._make(v, be))
            off += n
        self.pending = len(params)
        self.work = None
        self.done = False
        self.t_launch = self.t_done = None


class _Reducer:
    """The gradient-averaging machinery of one DDP module (see the module docstring)."""

    def __init__(self, params, names, pg, bucket_bytes, first_bucket_bytes, track_unused, static_graph,
                 gradient_as_bucket_view, optimizer):
        self.params = params
        self.names = names
        self.pg = pg
        self.world = pg.size()
        self.track_unused = track_unused
        self.static_graph = static_graph
        self.as_view = gradient_as_bucket_view
        self.in_backward = None if optimizer is None else _InBackwardSteps.attach(optimizer)
        self.buckets = self._assign(bucket_bytes, first_bucket_bytes)
        self.loc = {}
        for b in self.buckets:
            for pos, i in enumerate(b.indices):
                self.loc[i] = (b, pos)
        self.expect_hooks = False
        self.finalized = False
        self.require_finalize = False
        self.missing = []
        self.started = False
        self.ready = [False] * len(params)
        self.next_bucket = 0
        self.unused = []
        self.static_unused = None
        self.used_work = None
        self.used_map = None
        self.globally_unused = set()
        self.unused_known = False
        self.stats = {}
        self._launched_at_last_grad = 0
        self._t_last_grad = None
        self._t_start = None
        ref = weakref.ref(self)
        self.handles = [p.register_post_accumulate_grad_hook(_make_hook(ref, i)) for i, p in enumerate(params)]

    def _assign(self, bucket_bytes, first_bucket_bytes):
        """Buckets over the parameters in reverse order, split by device and dtype: the first one up to
        ``first_bucket_bytes``, the following ones up to ``bucket_bytes``."""
        open_buckets = {}
        limits = {}
        closed = []
        for i in reversed(range(len(self.params))):
            p = self.params[i]
            key = (p.device, p.dtype)
            cur = open_buckets.setdefault(key, [[], 0])
            cur[0].append(i)
            cur[1] += p.numel() * p.element_size()
            limit = limits.setdefault(key, first_bucket_bytes)
            if cur[1] >= limit:
                closed.append(cur[0])
                open_buckets[key] = [[], 0]
                limits[key] = bucket_bytes
        for cur in open_buckets.values():
            if cur[0]:
                closed.append(cur[0])
        # bucket order = order of their first (i.e. latest-registered) parameter, as the gradients arrive
        closed.sort(key=lambda idx: -idx[0])
        return [_Bucket(k, [self.params[i] for i in idx], idx) for k, idx in enumerate(closed)]

    # ------------------------------------------------------------------ per iteration
    def prepare_for_backward(self, outputs):
        """Called at the end of a forward that will be followed by a synchronizing backward."""
        if self.in_backward is not None:
            self.in_backward.forget(self.params)
        for b in self.buckets:
            b.pending = len(b.params)
            b.work = None
            b.done = False
            b.t_launch = b.t_done = None
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        self.started = False
        self.used_work = None
        self.globally_unused = set()
        self.unused_known = False
        self.expect_hooks = True
        self._launched_at_last_grad = 0
        self._t_last_grad = None
        self.unused = []
        if self.track_unused:
            if self.static_graph and self.static_unused is not None:
                self.unused = self.static_unused
            else:
                reached = _reached_leaves(outputs)
                self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
                if self.static_graph:
                    self.static_unused = self.unused

    def _start_backward(self):
        if self.started or not self.expect_hooks:
            return
        self.started = True
        self.require_finalize = True
        self._t_start = time.perf_counter()
        queue_callback(self._finalize)
        if self.track_unused:
            from ...ops.creation import tensor
            flags = [1] * len(self.params)
            for i in self.unused:
                flags[i] = 0
            # NCCL reduces device memory only
            device = self.params[0].device if self.pg.backend == "nccl" else "cpu"
            used = tensor(flags, dtype=_int32(), device=device)
            self.used_map = used
            if self.world > 1:
                # issued before any bucket, at the same point on every rank
                self.used_work = all_reduce(used, op=ReduceOp.SUM, group=self.pg, async_op=True)
            for i in self.unused:
                self._mark_ready(i)
            self._launch_ready()

    def _hook(self, i):
        if not self.expect_hooks:
            if self.finalized:
                raise RuntimeError(_ready_twice_msg(i, self.names[i]))
            return
        self._start_backward()
        if self.ready[i]:
            raise RuntimeError(_ready_twice_msg(i, self.names[i]))
        self._launched_at_last_grad = self.next_bucket
        self._t_last_grad = time.perf_counter()
        self._mark_ready(i)
        self._launch_ready()
        self._poll()

    def _mark_ready(self, i):
        """Put parameter i's gradient (zeros if it has none) into its bucket slot, divided by the world size."""
        b, pos = self.loc[i]
        self.ready[i] = True
        b.pending -= 1
        if self.world == 1 and not self.as_view:
            return  # nothing to average: the gradients in .grad are already the result
        p = self.params[i]
        view = b.views[pos]
        be = b.be
        g = p._grad
        if g is None:
            be.fill(view, 0)
        elif g is b.view_tensors[pos]:
            if self.world > 1:
                be.binary("mul", view, 1.0 / self.world, out=view)
        else:
            if self.world > 1:
                be.binary("mul", g._data, 1.0 / self.world, out=view)
            else:
                be.copy_into(view, g._data)
            if self.as_view:
                p._grad = b.view_tensors[pos]

    def _launch_ready(self):
        buckets = self.buckets
        while self.next_bucket < len(buckets) and buckets[self.next_bucket].pending == 0:
            b = buckets[self.next_bucket]
            b.t_launch = time.perf_counter()
            if self.world > 1:
                b.work = all_reduce(b.flat, op=ReduceOp.SUM, group=self.pg, async_op=True)
            self.next_bucket += 1

    def _poll(self):
        """Complete the buckets whose all-reduce has finished (this also drives MPI's progress)."""
        if self.used_work is not None and not self.used_work.is_completed():
            return
        for b in self.buckets[:self.next_bucket]:
            if not b.done and (b.work is None or b.work.is_completed()):
                self._bucket_done(b)

    def _unused_globally(self):
        if not self.track_unused:
            return set()
        if self.used_work is not None:
            self.used_work.wait()
            self.used_work = None
        counts = self.used_map.tolist()
        return {i for i, c in enumerate(counts) if c == 0}

    def _bucket_done(self, b):
        if b.work is not None:
            b.work.wait()
        b.done = True
        b.t_done = time.perf_counter()
        if self.unused and not self.unused_known:
            # only a parameter this rank did not use can be unused on every rank
            self.globally_unused = self._unused_globally()
            self.unused_known = True
        if self.world > 1 or self.as_view:
            self._write_back(b)
        if self.in_backward is not None:
            self.in_backward.step(b.params)

    def _write_back(self, b):
        """The averaged bucket into ``.grad`` (nothing to copy where ``.grad`` is a view of the bucket)."""
        for pos, p in enumerate(b.params):
            g = p._grad
            if g is None:
                if b.indices[pos] in self.globally_unused:
                    continue  # as in PyTorch, a parameter no rank used keeps no gradient
                p._grad = b.view_tensors[pos] if self.as_view else Tensor._make(b.be.copy(b.views[pos]), b.be)
            elif g is not b.view_tensors[pos]:
                b.be.copy_into(g._data, b.views[pos])
                bump_version(g)

    def _finalize(self):
        t_end = time.perf_counter()
        self.expect_hooks = False
        self.finalized = True
        missing = [i for i, r in enumerate(self.ready) if not r]
        if missing and self.track_unused:
            # reachable from the outputs, yet no gradient arrived: reduce zeros for them too
            for i in missing:
                self._mark_ready(i)
            self._launch_ready()
            missing = []
        waited = 0.0
        if self.unused and not self.unused_known:
            t0 = time.perf_counter()
            self.globally_unused = self._unused_globally()
            self.unused_known = True
            waited += time.perf_counter() - t0
        done_before_end = sum(1 for b in self.buckets if b.done)
        for b in self.buckets[:self.next_bucket]:
            if not b.done:
                t0 = time.perf_counter()
                if b.work is not None:
                    b.work.wait()
                waited += time.perf_counter() - t0
                self._bucket_done(b)
        self.stats = {
            "buckets": len(self.buckets),
            "bucket_sizes": [b.flat.numel() for b in self.buckets],
            "launched_before_last_grad": self._launched_at_last_grad,
            "completed_before_backward_end": done_before_end,
            "backward_s": t_end - self._t_start,
            "comm_wait_s": waited,
            "launch_times": [None if b.t_launch is None else b.t_launch - self._t_start for b in self.buckets],
            "done_times": [None if b.t_done is None else b.t_done - self._t_start for b in self.buckets],
            "last_grad_time": None if self._t_last_grad is None else self._t_last_grad - self._t_start,
            "backward_end_time": t_end - self._t_start,
        }
        if missing:
            # PyTorch leaves the reduction unfinished and reports it at the next forward
            self.missing = missing
            return
        self.require_finalize = False
        self.started = False

    def check_prior_reduction(self):
        if not self.require_finalize:
            return
        idx = " ".join(str(i) for i in self.missing)
        names = ", ".join(self.names[i] for i in self.missing)
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. You can enable unused "
            "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`minitorch_gpu.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function "
            "outputs participate in calculating loss. \nIf you already have done the above, then the distributed "
            "data parallel module wasn't able to locate the output tensors in the return value of your module's "
            "`forward` function. Please include the loss function and the structure of the return value of "
            "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n"
            f"Parameter indices which did not receive grad for rank {self.pg.rank()}: {idx}\n"
            f"Parameters which did not receive grad for rank {self.pg.rank()}: {names}")

def _int32():
    from ... import _dtype
    return _dtype.int32


def _make_hook(ref, i):
    def hook(p):
        reducer = ref()
        if reducer is not None:
            reducer._hook(i)
    return hook


def _ready_twice_msg(i, name):
    return ("Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) "
            "Use of a module parameter outside the `forward` function. Please make sure model parameters are not "
            "shared across multiple concurrent forward-backward passes. or try to use _set_static_graph() as a "
            "workaround if this module graph does not change during training loop.2) Reused parameters in multiple "
            "reentrant backward passes. For example, if you use multiple `checkpoint` functions to wrap the same "
            "part of your model, it would result in the same set of parameters been used by different reentrant "
            "backward passes multiple times, and hence marking a variable ready multiple times. DDP does not "
            "support such use cases in default. You can try to use _set_static_graph() as a workaround if your "
            "module graph does not change over iterations.\n"
            f"Parameter at index {i} with name {name} has been marked as ready twice. This means that multiple "
            "autograd engine  hooks have fired for this particular parameter during this iteration.")


def _to_device(obj, dev):
    return _map_tensors(obj, lambda t: t.to(dev))


class DistributedDataParallel(Module):
    """Data parallelism across processes (see the module docstring for how gradients are averaged)::

        dist.init_process_group("mpi")
        model = mt.nn.parallel.DistributedDataParallel(net)
        for x, y in loader:                       # each rank loads its own shard (DistributedSampler)
            opt.zero_grad()
            loss_fn(model(x), y).backward()       # gradients are averaged across ranks here
            opt.step()

    ``device_ids`` (one GPU, or None) moves inputs to that device; ``broadcast_buffers`` re-broadcasts rank
    0's buffers before every forward; ``bucket_cap_mb`` (default 25) sizes the buckets; ``optimizer`` (not
    in PyTorch) runs that optimizer's update per bucket inside backward. ``module`` is reachable as
    ``.module`` and ``state_dict()`` keys start with ``"module."``, as in PyTorch.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, *, optimizer=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel expects a minitorch_gpu.nn.Module, got {type(module).__name__}")
        pg = _resolve(process_group)
        if pg is GroupMember.NON_GROUP_MEMBER:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        devices = {p.device for _, p in module.named_parameters()}
        if device_ids is not None:
            if len(device_ids) != 1:
                raise ValueError("device_ids can only be None or contain a single element.")
            if any(d.type != "cuda" for d in devices) or len(devices) > 1:
                raise ValueError("DistributedDataParallel device_ids and output_device arguments only work with "
                                 "single-device GPU modules or CPU modules, but got device_ids "
                                 f"{list(device_ids)}, output_device {output_device}, and module parameters "
                                 f"{devices}.")
            from .scatter_gather import _as_device
            self.device_ids = [_as_device(device_ids[0])]
            self.output_device = _as_device(output_device) if output_device is not None else self.device_ids[0]
        else:
            self.device_ids = None
            self.output_device = None
        # PyTorch's rule: with the default cap the first bucket is small (1 MiB) so that communication starts
        # early; a cap given explicitly applies to every bucket
        first = _DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else None
        if bucket_cap_mb is None:
            bucket_cap_mb = 25
        if not (isinstance(bucket_cap_mb, (int, float)) and bucket_cap_mb > 0):
            raise ValueError(f"bucket_cap_mb must be a positive number, got {bucket_cap_mb!r}")
        self.module = module
        self.dim = dim
        self.process_group = pg
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int(bucket_cap_mb * _MB)
        self._optimizer = optimizer

        names = [n for n, _ in named]
        params = [p for _, p in named]
        if pg.size() > 1:
            self._verify_same_model(pg, module)
            if init_sync:
                src = pg.ranks[0]
                tensors = [p for p in module.parameters()] + [b for b in module.buffers()]
                with no_grad():
                    _broadcast_coalesced(tensors, src=src, group=pg)
        if first is None:
            first = self.bucket_bytes_cap
        if optimizer is not None:
            self._check_optimizer(optimizer)
        self._reducer = _Reducer(params, names, pg, self.bucket_bytes_cap, first,
                                 find_unused_parameters or static_graph, static_graph, gradient_as_bucket_view,
                                 optimizer)

    @staticmethod
    def _verify_same_model(pg, module):
        mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in module.named_parameters()]
        every = [None] * pg.size()
        all_gather_object(every, mine, group=pg)
        ref = every[0]
        for r, theirs in enumerate(every[1:], start=1):
            rank = pg.ranks[r]
            if len(theirs) != len(ref):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has {len(theirs)} "
                                   f"params, while rank {pg.ranks[0]} has inconsistent {len(ref)} params.")
            for (n0, s0, d0), (n1, s1, d1) in zip(ref, theirs):
                if n0 != n1:
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has parameter "
                                       f"'{n1}' where rank {pg.ranks[0]} has '{n0}'.")
                if s0 != s1 or d0 != d1:
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has parameter "
                                       f"'{n1}' of shape {list(s1)} and dtype {d1.rsplit('.', 1)[-1]}, while rank "
                                       f"{pg.ranks[0]} has shape {list(s0)} and dtype {d0.rsplit('.', 1)[-1]}.")

    @staticmethod
    def _check_optimizer(optimizer):
        from ...optim.optimizer import Optimizer
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be a minitorch_gpu.optim.Optimizer, got {type(optimizer).__name__}")
        if any(g.get("differentiable") for g in optimizer.param_groups):
            raise ValueError("DistributedDataParallel(optimizer=...) does not support differentiable optimizers")

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        reducer = self._reducer
        grad_on = is_grad_enabled()
        if grad_on:
            # a forward without autograd (evaluation) leaves a pending backward's state alone
            if self.require_backward_grad_sync:
                reducer.check_prior_reduction()
            reducer.finalized = False
            reducer.expect_hooks = False
        if self.device_ids:
            inputs = _to_device(inputs, self.device_ids[0])
            kwargs = _to_device(kwargs, self.device_ids[0])
        if self.broadcast_buffers and self.process_group.size() > 1:
            bufs = list(self.module.buffers())
            if bufs:
                with no_grad():
                    _broadcast_coalesced(bufs, src=self.process_group.ranks[0], group=self.process_group)
        out = self.module(*inputs, **kwargs)
        if grad_on and self.require_backward_grad_sync:
            reducer.prepare_for_backward(out)
            tensors = [t for t in _tensors_in(out, []) if t.requires_grad]
            if tensors:
                sunk = _DDPSink.apply(reducer, *tensors)
                if not isinstance(sunk, tuple):
                    sunk = (sunk,)
                replace = {id(t): s for t, s in zip(tensors, sunk)}
                out = _map_tensors(out, lambda t: replace.get(id(t), t))
        return out

    @contextmanager
    def no_sync(self):
        """Within this context backward does not average gradients: they accumulate locally, and the first
        backward after it averages the accumulated sum."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self):
        """PyTorch's escape hatch: the set of used parameters is fixed after the first iteration."""
        self.static_graph = True
        self._reducer.static_graph = True
        self._reducer.track_unused = True
