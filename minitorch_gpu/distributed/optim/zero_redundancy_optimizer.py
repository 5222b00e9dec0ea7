"""PyTorch's ``ZeroRedundancyOptimizer``: ZeRO stage 1, the optimizer state sharded across a process group.

Every parameter belongs to exactly one rank. The partition is PyTorch's: the parameters of each group, largest
first (a stable sort by element count), each go to the rank that owns the fewest elements so far (counted over
all groups), the first such rank on a tie; so every rank computes the same partition without communicating, and
adding a group never moves an old parameter. Each rank builds the wrapped optimizer (``.optim``) over its own
shard only, so it holds about ``1 / world_size`` of the state; ``step()`` steps that shard and then every owner
broadcasts its updated parameters to the others. Gradients must already be averaged across the ranks
(``DistributedDataParallel`` does that)::

    model = mt.nn.parallel.DistributedDataParallel(net)
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=mt.optim.AdamW, lr=1e-3)
    loss_fn(model(x), y).backward()
    opt.step()

How it relates to ``dist.DistributedOptimizer`` (Horovod's API, ``..optimizer``): that one averages the
gradients itself and leaves the whole optimizer state on every rank; this one leaves the gradients to DDP and
shards the state. They share the communication: parameters travel through the same coalesced broadcast (one
flat message per owner, device and dtype; ``c10d._broadcast_coalesced``) that DDP's start-up sync and
``broadcast_parameters`` use.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from ...autograd.grad_mode import no_grad
from ...ops.creation import empty, zeros
from ...optim.optimizer import Optimizer, _typename
from ...tensor import Tensor
from .._process_group import Work
from ..c10d import _broadcast_coalesced, _valid_group, broadcast, gather_object, get_global_rank

__all__ = ["ZeroRedundancyOptimizer"]

ParamGroup = dict[str, Any]


def _copy_to_cpu(obj: Any) -> Any:
    """A copy of a (nested) state with every tensor copied to the CPU: a snapshot that later steps do not
    change and that keeps no device memory."""
    if isinstance(obj, Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _copy_to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy_to_cpu(v) for v in obj)
    return obj


def _partition(param_groups: list[ParamGroup], world_size: int) -> list[list[ParamGroup]]:
    """PyTorch's partition: per rank, a copy of every group holding that rank's share of its parameters. Each
    group's parameters, largest first (stable), go one by one to the rank with the fewest elements so far
    (counted over all groups; the lowest such rank on a tie)."""
    per_rank: list[list[ParamGroup]] = [[] for _ in range(world_size)]
    sizes = [0] * world_size
    for group in param_groups:
        shares: list[list[Tensor]] = [[] for _ in range(world_size)]
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
            r = sizes.index(min(sizes))
            shares[r].append(p)
            sizes[r] += p.numel()
        for r in range(world_size):
            share = copy.copy(group)
            share["params"] = shares[r]
            per_rank[r].append(share)
    return per_rank


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap ``optimizer_class`` so that each rank of ``process_group`` (default: all ranks) keeps the state of
    its own share of ``params`` only, and steps only that share; the updated parameters are then broadcast from
    their owners. ``**defaults`` go to ``optimizer_class``. ``parameters_as_bucket_view=True`` makes each
    parameter a view into one flat tensor per device and owner, which is broadcast as it is (no packing).
    Call ``consolidate_state_dict(to)`` on every rank before ``state_dict()`` on rank ``to``.

    ``overlap_with_ddp=True`` (stepping inside DDP's communication hook) is not supported: our
    DistributedDataParallel has no communication hooks.
    """

    def __init__(self, params: Iterable[Any], optimizer_class: Callable[..., Optimizer],
                 process_group: Any = None, parameters_as_bucket_view: bool = False, overlap_with_ddp: bool = False,
                 **defaults: Any) -> None:
        params = self._verify_and_init_params(params)
        self._verify_same_dense_param_type()
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer(overlap_with_ddp=True) needs DistributedDataParallel communication hooks, "
                "which minitorch_gpu does not have; pass overlap_with_ddp=False and call step() after backward")
        # before init_process_group this raises PyTorch's error, and a rank outside the group cannot shard
        pg = _valid_group(process_group)
        # the base constructor adds the groups through add_param_group, which must not repartition yet
        self.initialized = False
        Optimizer.__init__(self, params, defaults)
        self._partition_cache: list[list[ParamGroup]] = []
        self._owner_cache: dict[int, int] = {}
        self._index_cache: dict[int, int] = {}
        self._params_cache: list[Tensor] = []
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._default_device = self._all_params[0].device
        self.process_group = pg
        self.world_size: int = pg.size()
        self.rank: int = pg.rank()
        self.global_rank: int = pg.ranks[self.rank]
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._init_local_optimizer()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        # self._buckets[d][r]: the flat tensor viewed by rank r's trainable parameters on the d-th device
        self._buckets: list[list[Tensor]] = []
        self._build_param_buckets()
        # filled on rank `to` only by consolidate_state_dict: one state dict per rank, in rank order
        self._all_state_dicts: list[dict[str, Any]] = []
        self.initialized = True

    # ------------------------------------------------------------------ construction checks
    def _verify_and_init_params(self, params: Any) -> list[Any]:
        if isinstance(params, Tensor):
            raise TypeError(f"`params` argument should be an iterable of Tensors, but got {_typename(params)}")
        try:
            all_params = list(params)
        except TypeError as e:
            raise TypeError(f"`params` argument should be an iterable of Tensors or dicts, but got "
                            f"{_typename(params)}") from e
        if not all_params:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, Tensor) for p in all_params):
            self._all_params: list[Tensor] = list(all_params)
        elif all(isinstance(p, dict) for p in all_params):
            self._all_params = []
            for group in all_params:
                if "params" not in group:
                    raise ValueError("Each parameter group passed-in via `params` must have a 'params' key mapping "
                                     "to the parameters in the group")
                # materialised once: a generator would be empty by the time the base constructor reads it
                group["params"] = [group["params"]] if isinstance(group["params"], Tensor) else list(group["params"])
                self._all_params.extend(group["params"])
        else:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        return all_params

    def _verify_same_dense_param_type(self) -> None:
        first = self._all_params[0]
        typename = _typename(first)
        if first.is_sparse:
            raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense type for all parameters "
                             f"but got {typename}")
        for p in self._all_params[1:]:
            other = _typename(p)
            if other != typename:
                raise ValueError(f"ZeroRedundancyOptimizer only supports using the same dense type for all "
                                 f"parameters but got both {typename} and {other}")

    def _get_is_trainable_mask(self) -> list[bool]:
        return [p.requires_grad for p in self._all_params]

    # ------------------------------------------------------------------ the partition
    def _clear_cache(self) -> None:
        self._partition_cache = []
        self._owner_cache.clear()
        self._index_cache.clear()
        self._params_cache = []

    def _partition_parameters(self) -> list[list[ParamGroup]]:
        """Per rank, its share of every parameter group (see :func:`_partition`)."""
        if not self._partition_cache:
            self._partition_cache = _partition(self.param_groups, self.world_size)
        return self._partition_cache

    def _params_of(self, rank: int) -> list[Tensor]:
        return [p for g in self._partition_parameters()[rank] for p in g["params"]]

    @property
    def _param_to_rank(self) -> dict[int, int]:
        """id(parameter) -> the group rank that owns it."""
        if not self._owner_cache:
            for r in range(self.world_size):
                self._owner_cache.update((id(p), r) for p in self._params_of(r))
        return self._owner_cache

    @property
    def _index_to_param(self) -> list[Tensor]:
        """The parameters in state-dict order (every group's, one after another)."""
        if not self._params_cache:
            self._params_cache = list(chain.from_iterable(g["params"] for g in self.param_groups))
        return self._params_cache

    @property
    def _param_to_index(self) -> dict[int, int]:
        if not self._index_cache:
            self._index_cache = {id(p): i for i, p in enumerate(self._index_to_param)}
        return self._index_cache

    def _init_local_optimizer(self) -> None:
        # the groups are given as dicts, so a rank that owns nothing still gets a valid (empty) optimizer
        self.optim: Optimizer = self._optim_constructor(self._partition_parameters()[self.rank],
                                                        **self._optim_defaults)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)

    @staticmethod
    def _sync_param_groups(src: list[ParamGroup], dst: list[ParamGroup]) -> None:
        """Copy every hyperparameter (all but ``params``) of the groups in ``src`` to those in ``dst``."""
        if len(src) != len(dst):
            raise AssertionError("Mismatch between number of source and destination parameter groups")
        for s, d in zip(src, dst):
            for key, value in s.items():
                if key != "params":
                    d[key] = value

    # ------------------------------------------------------------------ buckets and parameter sync
    def _build_param_buckets(self) -> None:
        if not self.parameters_as_bucket_view:
            return
        per_device: dict[Any, list[list[Tensor]]] = {}
        for r in range(self.world_size):
            for p in self._params_of(r):
                per_device.setdefault(p.device, [[] for _ in range(self.world_size)])[r].append(p)
        self._buckets = []
        with no_grad():
            for device, per_rank in per_device.items():
                row = []
                for params in per_rank:
                    trainable = []
                    for p in params:
                        if p.requires_grad:
                            trainable.append(p)
                        else:
                            # a frozen parameter leaves the bucket it may have been in: no one steps it
                            p.data = p.data.clone()
                    total = sum(p.numel() for p in trainable)
                    if total == 0:
                        # every rank broadcasts every owner's bucket, so an owner of nothing still sends one
                        row.append(zeros(1, device=device))
                        continue
                    bucket = empty(total, dtype=trainable[0].dtype, device=device)
                    offset = 0
                    for p in trainable:
                        view = bucket[offset:offset + p.numel()]
                        view.copy_(p.data.reshape(-1))
                        p.data = view.view(p.shape)
                        offset += p.numel()
                    row.append(bucket)
                self._buckets.append(row)

    def _sync_params(self) -> None:
        """Every owner's parameters to every rank."""
        if self.world_size == 1:
            return
        pg = self.process_group
        if self.parameters_as_bucket_view:
            works: list[Work | None] = []
            for r in range(self.world_size):
                works.extend(broadcast(row[r], src=pg.ranks[r], group=pg, async_op=True) for row in self._buckets)
            for w in works:
                if w is not None:
                    w.wait()
            return
        for r in range(self.world_size):
            _broadcast_coalesced(self._params_of(r), src=pg.ranks[r], group=pg)

    # ------------------------------------------------------------------ the optimizer API
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group on every rank (call it on all of them): its parameters are partitioned as
        the constructor's were, and this rank's share joins the local optimizer."""
        super().add_param_group(param_group)
        if not self.initialized:
            return
        self._all_params.extend(self.param_groups[-1]["params"])
        self._is_trainable_mask = self._get_is_trainable_mask()
        self._clear_cache()
        mine = self._partition_parameters()[self.rank]
        if len(mine) == len(self.optim.param_groups) + 1:
            self.optim.add_param_group(mine[-1])
        self._build_param_buckets()

    def _local_step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        mask = self._get_is_trainable_mask()
        if mask != self._is_trainable_mask:
            # a parameter was frozen or unfrozen: the buckets hold the trainable ones only
            self._build_param_buckets()
            self._is_trainable_mask = mask
        # a scheduler changes the exposed groups; the local optimizer must see it
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else self.optim.step(closure=closure, **kwargs)
        self._sync_param_groups(self.optim.param_groups, self.param_groups)
        return loss

    def step(self, closure: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
        """Step this rank's shard with the local optimizer, then broadcast every shard from its owner.
        Returns the closure's loss (when given). Extra keyword arguments go to the local optimizer's step."""
        loss = self._local_step(closure, **kwargs)
        self._sync_params()
        return loss

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's shard of the optimizer state on group rank ``to`` (on the CPU), for
        :meth:`state_dict` there. Every rank must call it."""
        dst = get_global_rank(self.process_group, to)
        self._sync_param_groups(self.param_groups, self.optim.param_groups)
        local = _copy_to_cpu(self.optim.state_dict())
        gathered: list[Any] | None = [None] * self.world_size if self.rank == to else None
        gather_object(local, gathered, dst=dst, group=self.process_group)
        self._all_state_dicts = gathered if gathered is not None else []

    def state_dict(self) -> dict[str, Any]:
        """The whole optimizer's state, indexed like a single optimizer's over all the parameters, as of the
        last :meth:`consolidate_state_dict` to this rank."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               "save the global state.")
        state_dict = super().state_dict()
        for r, local in enumerate(self._all_state_dicts):
            shares = self._partition_parameters()[r]
            if len(local["param_groups"]) != len(shares):
                raise AssertionError("Mismatch between number of local and global parameter groups")
            for local_group, share in zip(local["param_groups"], shares):
                if len(local_group["params"]) != len(share["params"]):
                    raise AssertionError("Mismatch between number of local and global parameters in parameter "
                                         "group")
                for local_index, p in zip(local_group["params"], share["params"]):
                    if local_index in local["state"]:
                        state_dict["state"][self._param_to_index[id(p)]] = local["state"][local_index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict of :meth:`state_dict` (or of a single optimizer over the same parameters): this
        rank keeps (a copy of) the state of the parameters it owns only. Every rank must call it."""
        groups, saved = self.param_groups, state_dict["param_groups"]
        # checked before anything changes (the base checks again, too late to leave the local state alone)
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        params = self._index_to_param
        for index in state_dict["state"]:
            if not 0 <= index < len(params):
                raise IndexError(f"loaded state dict has state for parameter index {index}, but the optimizer has "
                                 f"{len(params)} parameters")
        owner = self._param_to_rank
        state: dict[int, Any] = {}
        for index, value in state_dict["state"].items():
            p = params[index]
            if owner[id(p)] != self.rank:
                # PyTorch's marker for state that lives on another rank
                state[index] = None
                continue
            mine = self._own_copy(p, value)
            self.optim.state[p] = mine
            state[index] = mine
        # the caller's dict is left as it was: the state goes through a copy
        super().load_state_dict({**state_dict, "state": state})
        self._sync_param_groups(self.param_groups, self.optim.param_groups)

    def _own_copy(self, p: Tensor, value: Any, key: str | None = None) -> Any:
        """A loaded state value as the local optimizer keeps it (its device and dtype policy), never sharing
        memory with the caller's."""
        if isinstance(value, Tensor):
            cast = self.optim._process_value_according_to_param_policy(p, value, key)
            return cast.clone() if cast is value else cast
        if isinstance(value, dict):
            return {k: self._own_copy(p, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self._own_copy(p, v) for v in value)
        return value
