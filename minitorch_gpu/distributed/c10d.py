"""The public collectives API, PyTorch's ``torch.distributed`` functions: process group creation and lookup,
collectives on tensors and on picklable objects, point-to-point messages.

The functions check their arguments, find the process group, and hand arrays-in-tensors to its backend (see
``_process_group``: the interface and the registry this module looks backends up in by name).
Every collective is non-blocking underneath and returns a :class:`Work`; ``async_op=False`` just waits on it.
"""
from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..autograd.function import bump_version
from ..ops.creation import empty
from ..tensor import Tensor
from ._process_group import (
    Backend,
    DebugLevel,
    ProcessGroup,
    ReduceOp,
    Work,
    _RedOpType,
    check_op,
    dtype_name,
    get_debug_level,
    seconds,
)

if TYPE_CHECKING:
    from ._process_group import DeviceId

__all__ = ["Backend", "DebugLevel", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "barrier", "broadcast",
           "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather", "gather_object",
           "get_backend", "get_debug_level", "get_global_rank", "get_group_rank", "get_process_group_ranks",
           "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "isend", "new_group", "recv", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "scatter_object_list", "send"]

default_pg_timeout = timedelta(minutes=30)


def _describe(t: Tensor) -> str:
    return f"{dtype_name(t)} {list(t.shape)}"


class _NonGroupMember:
    """What ``new_group`` returns on ranks outside the new group (PyTorch's ``GroupMember.NON_GROUP_MEMBER``)."""

    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = _NonGroupMember()


#: a group argument: a ProcessGroup, None for the default group, or what new_group gave a non-member
GroupLike = ProcessGroup | _NonGroupMember | None
#: a ReduceOp member or its integer value
ReduceOpLike = _RedOpType | int


class group:
    """``group.WORLD``: the default process group once ``init_process_group`` has run."""

    WORLD: ProcessGroup | None = None


class _Groups:
    """The default group and every group made since (destroyed together)."""

    default: ProcessGroup | None = None
    all: ClassVar[list[ProcessGroup]] = []


def _set_world(pg: ProcessGroup | None) -> None:
    _Groups.default = pg
    _Groups.all = [pg] if pg is not None else []
    GroupMember.WORLD = pg
    group.WORLD = pg


def is_available() -> bool:
    """Whether distributed training can run here: mpi4py (with an MPI library such as the ``mpich`` wheel) is
    installed. The NCCL backend additionally needs CuPy with NCCL (:func:`is_nccl_available`)."""
    return is_mpi_available()


def is_mpi_available() -> bool:
    return Backend._lookup(Backend.MPI)[1].available()


def is_nccl_available() -> bool:
    return Backend._lookup(Backend.NCCL)[1].available()


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return _Groups.default is not None


def _default_group() -> ProcessGroup:
    pg = _Groups.default
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return pg


def _resolve(group_: GroupLike) -> ProcessGroup | _NonGroupMember:
    if group_ is None or group_ is GroupMember.WORLD:
        return _default_group()
    if isinstance(group_, _NonGroupMember):
        return group_
    if not isinstance(group_, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup (from new_group) or None, got {type(group_).__name__}")
    _default_group()
    return group_


def _member(group_: GroupLike, what: str, stacklevel: int = 3) -> ProcessGroup | None:
    """The group to run ``what`` on, or None (with a warning, as PyTorch) on a rank outside it."""
    pg = _resolve(group_)
    if isinstance(pg, _NonGroupMember):
        # stacklevel: the warning names the line that called the collective
        warnings.warn(f"Running {what} on global rank {get_rank()} which does not belong to the given group.",
                      stacklevel=stacklevel)
        return None
    return pg


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | float | None = None, world_size: int = -1, rank: int = -1,
                       store: object = None, group_name: str = "", pg_options: object = None,
                       device_id: DeviceId = None) -> None:
    """Create the default process group. Ranks come from the MPI launcher: run the script with
    ``mpiexec -n N python script.py`` or ``python -m minitorch_gpu.distributed.run --nproc N script.py``
    (a plain ``python script.py`` is a world of one). ``backend`` is ``"mpi"`` (default; ``"gloo"`` means the
    same) or ``"nccl"`` (one GPU per rank; the NCCL unique id is broadcast over MPI). ``world_size`` and
    ``rank``, when given, must agree with the launcher's. ``timeout`` bounds every wait on a collective
    (default 30 minutes): past it the waiting rank raises a RuntimeError naming the collective."""
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("minitorch_gpu's process groups are bootstrapped by MPI; a store cannot be given")
    _, impl = Backend._lookup(backend if backend is not None else Backend.MPI)
    timeout_s = seconds(timeout if timeout is not None else default_pg_timeout)
    if timeout_s is None or timeout_s <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_method must be a string URL or None, got {type(init_method).__name__}")
    impl.require()  # e.g. nccl without a GPU: say so before MPI starts
    world = impl.world()
    n, me = world.Get_size(), world.Get_rank()
    env_ws = os.environ.get("WORLD_SIZE") if init_method == "env://" else None
    env_rank = os.environ.get("RANK") if init_method == "env://" else None
    for given, actual, what in ((world_size, n, "world_size"), (rank, me, "rank"),
                                (int(env_ws) if env_ws else -1, n, "WORLD_SIZE"),
                                (int(env_rank) if env_rank else -1, me, "RANK")):
        if not isinstance(given, int) or isinstance(given, bool):
            raise TypeError(f"{what} must be an int, got {type(given).__name__}")
        if given != -1 and given != actual:
            raise ValueError(f"init_process_group: {what}={given} does not match the MPI launcher, which started "
                             f"this process as rank {me} of {n}")
    _set_world(impl.create(world, list(range(n)), timeout_s, group_rank=None, device_id=device_id))


def destroy_process_group(group: GroupLike = None) -> None:
    """Release a process group (the default one, and with it every group, when ``group`` is None)."""
    if group is None or group is _Groups.default:
        for pg in _Groups.all:
            pg._destroy()
        _set_world(None)
        return
    if isinstance(group, _NonGroupMember):
        return
    group._destroy()
    if group in _Groups.all:
        _Groups.all.remove(group)


def get_rank(group: GroupLike = None) -> int:
    """This process's rank in ``group`` (global rank by default); -1 outside the group."""
    pg = _resolve(group)
    if isinstance(pg, _NonGroupMember):
        return -1
    return pg.rank()


def get_world_size(group: GroupLike = None) -> int:
    """The number of ranks in ``group`` (all ranks by default); -1 outside the group."""
    pg = _resolve(group)
    if isinstance(pg, _NonGroupMember):
        return -1
    return pg.size()


def _valid_group(group: GroupLike) -> ProcessGroup:
    pg = _resolve(group)
    if isinstance(pg, _NonGroupMember):
        raise ValueError("Invalid process group specified")  # noqa: TRY004 - PyTorch's error type
    return pg


def get_backend(group: GroupLike = None) -> str:
    """The backend name of ``group``: "mpi" or "nccl"."""
    return _valid_group(group).backend


def get_process_group_ranks(group: GroupLike) -> list[int]:
    """The global ranks of ``group``'s members, in group order."""
    return list(_valid_group(group).ranks)


def get_global_rank(group: GroupLike, group_rank: int) -> int:
    """The global rank of the member with rank ``group_rank`` in ``group``."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group: GroupLike, global_rank: int) -> int:
    """The rank within ``group`` of the process with global rank ``global_rank``."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def new_group(ranks: Sequence[int] | None = None, timeout: timedelta | float | None = None,
              backend: str | None = None, pg_options: object = None, use_local_synchronization: bool = False,
              group_desc: str | None = None, device_id: DeviceId = None) -> ProcessGroup | _NonGroupMember:
    """A process group over the given global ranks (all ranks when None). Every rank of the world must call
    it (in the same order as other collectives); ranks outside get ``GroupMember.NON_GROUP_MEMBER``."""
    world_pg = _default_group()
    n = world_pg.size()
    members = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(members)) != len(members):
        raise ValueError(f"new_group: duplicate ranks in {members}")
    for r in members:
        if not 0 <= r < n:
            raise ValueError(f"new_group: rank {r} is out of range for a world of {n} ranks")
    _, impl = Backend._lookup(backend if backend is not None else world_pg.backend)
    timeout_s = seconds(timeout)
    if timeout_s is None:
        timeout_s = world_pg._timeout_s
    sub = world_pg._split(members)
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    pg = impl.create(sub, members, timeout_s, group_rank=members.index(world_pg.rank()), device_id=device_id)
    _Groups.all.append(pg)
    return pg


# ---------------------------------------------------------------------------------------------- checks
def _check_tensor(t: object, name: str = "tensor") -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type minitorch_gpu.Tensor but "
                        f"got {type(t)} instead.")


def _check_tensor_list(ts: object, name: str) -> None:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[minitorch_gpu.Tensor] "
                        "but got " + (f"{type(ts)}" if not isinstance(ts, (list, tuple)) else "a list containing "
                                      "something else") + " instead.")


def _same_shape(t: Tensor, ref: Tensor, what: str) -> None:
    if tuple(t.shape) != tuple(ref.shape):
        raise ValueError(f"{what}: every tensor must have the shape {list(ref.shape)} of the input, got "
                         f"{list(t.shape)}")
    if t.dtype is not ref.dtype:
        raise TypeError(f"{what}: every tensor must have the dtype {dtype_name(ref)} of the input, got "
                        f"{dtype_name(t)}")


def _check_per_rank(pg: ProcessGroup, ts: Sequence[Tensor], ref: Tensor, what: str, name: str) -> None:
    """``ts`` holds one tensor per rank of ``pg``, each shaped and typed like ``ref``."""
    if len(ts) != pg.size():
        raise ValueError(f"{what}: {name} must hold one tensor per rank ({pg.size()}), got {len(ts)}")
    for t in ts:
        _same_shape(t, ref, what)


def _check_root_list(pg: ProcessGroup, root: int, ts: Sequence[Tensor] | None, ref: Tensor, what: str, name: str,
                     role: str) -> None:
    """The per-rank list of gather/scatter: given on the root (the ``role`` rank) only."""
    if pg.rank() == root:
        if not ts:
            raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
        _check_tensor_list(ts, name)
        _check_per_rank(pg, ts, ref, what, name)
    elif ts:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")


def _root(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str, name: str) -> int:
    """The group rank of a root given as a global rank (``src``/``dst``) or a group rank (``group_src``...)."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{what}: can only specify one of {name} and group_{name}")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"{what}: group_{name}={group_rank} is out of range for a group of {pg.size()}")
        return group_rank
    if rank is None:
        rank = 0
    if rank not in pg.ranks:
        raise ValueError(f"{what}: {name}={rank} is not a member of the group (ranks {pg.ranks})")
    return pg.ranks.index(rank)


def _ret(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------------------- collectives
def all_reduce(tensor: Tensor, op: ReduceOpLike = ReduceOp.SUM, group: GroupLike = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` across the group in place, with the result on every rank."""
    _check_tensor(tensor)
    red = check_op(op)
    pg = _member(group, "all_reduce")
    if pg is None:
        return None
    what = pg._begin("all_reduce", f"op {red.name}, {_describe(tensor)}", tensor, int(red))
    return _ret(pg.all_reduce(tensor, red, what), async_op)


def broadcast(tensor: Tensor, src: int | None = None, group: GroupLike = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copy ``tensor`` from rank ``src`` (a global rank; ``group_src`` for a rank within the group) to every
    rank of the group, in place."""
    _check_tensor(tensor)
    pg = _member(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast", "src")
    what = pg._begin("broadcast", f"src {pg.ranks[root]}, {_describe(tensor)}", tensor, root)
    return _ret(pg.broadcast(tensor, root, what), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: GroupLike = None,
               async_op: bool = False) -> Work | None:
    """Fill ``tensor_list`` (one tensor per rank, each shaped like ``tensor``) with every rank's ``tensor``."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor)
    pg = _member(group, "all_gather")
    if pg is None:
        return None
    _check_per_rank(pg, tensor_list, tensor, "all_gather", "tensor_list")
    what = pg._begin("all_gather", _describe(tensor), tensor)
    return _ret(pg.all_gather(list(tensor_list), tensor, what), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: GroupLike = None,
                           async_op: bool = False) -> Work | None:
    """Every rank's ``input_tensor`` concatenated (``[world * n, ...]``) or stacked (``[world, n, ...]``) into
    ``output_tensor``, in rank order."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _member(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to world_size times input "
                         f"tensor size (output {list(output_tensor.shape)}, input {list(input_tensor.shape)}, "
                         f"world size {pg.size()})")
    if output_tensor.dtype is not input_tensor.dtype:
        raise TypeError("all_gather_into_tensor: output tensor must have the same type as input tensor")
    what = pg._begin("all_gather_into_tensor", _describe(input_tensor), input_tensor)
    return _ret(pg.all_gather_into_tensor(output_tensor, input_tensor, what), async_op)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: ReduceOpLike = ReduceOp.SUM,
                   group: GroupLike = None, async_op: bool = False) -> Work | None:
    """Reduce ``input_list[i]`` across ranks into ``output`` on rank ``i`` of the group."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    red = check_op(op)
    pg = _member(group, "reduce_scatter")
    if pg is None:
        return None
    _check_per_rank(pg, input_list, output, "reduce_scatter", "input_list")
    what = pg._begin("reduce_scatter", f"op {red.name}, {_describe(output)}", output, int(red))
    return _ret(pg.reduce_scatter(output, list(input_list), red, what), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOpLike = ReduceOp.SUM,
                          group: GroupLike = None, async_op: bool = False) -> Work | None:
    """``input`` (``world`` equal chunks along dim 0) reduced across ranks; rank ``i`` gets chunk ``i``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    red = check_op(op)
    pg = _member(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if input.numel() != output.numel() * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same size as output size times world "
                         f"size (input {list(input.shape)}, output {list(output.shape)}, world size {pg.size()})")
    if output.dtype is not input.dtype:
        raise TypeError("reduce_scatter_tensor: input tensor must be the same type as the output tensor")
    what = pg._begin("reduce_scatter_tensor", f"op {red.name}, {_describe(input)}", input, int(red))
    return _ret(pg.reduce_scatter_tensor(output, input, red, what), async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOpLike = ReduceOp.SUM, group: GroupLike = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduce ``tensor`` across the group into rank ``dst``'s tensor (the others' are left as they were)."""
    _check_tensor(tensor)
    red = check_op(op)
    pg = _member(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce", "dst")
    what = pg._begin("reduce", f"op {red.name}, dst {pg.ranks[root]}, {_describe(tensor)}", tensor,
                     int(red) * 1000003 + root)
    return _ret(pg.reduce(tensor, root, red, what), async_op)


def _rooted_list(gathering: bool, tensor: Tensor, tensors: list[Tensor] | None, rank: int | None,
                 group: GroupLike, async_op: bool, group_rank: int | None) -> Work | None:
    """gather and scatter: one tensor per rank in a list that only the root passes."""
    what, name, list_name, role = (("gather", "dst", "gather_list", "destination") if gathering
                                   else ("scatter", "src", "scatter_list", "source"))
    _check_tensor(tensor)
    pg = _member(group, what, stacklevel=4)
    if pg is None:
        return None
    root = _root(pg, rank, group_rank, what, name)
    _check_root_list(pg, root, tensors, tensor, what, list_name, role)
    desc = pg._begin(what, f"{name} {pg.ranks[root]}, {_describe(tensor)}", tensor, root)
    start = pg.gather if gathering else pg.scatter
    return _ret(start(tensor, list(tensors or []), root, desc), async_op)


def gather(tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int | None = None,
           group: GroupLike = None, async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (which alone passes a list)."""
    return _rooted_list(True, tensor, gather_list, dst, group, async_op, group_dst)


def scatter(tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int | None = None,
            group: GroupLike = None, async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank ``src``'s ``scatter_list[i]`` into ``tensor`` on rank ``i`` of the group."""
    return _rooted_list(False, tensor, scatter_list, src, group, async_op, group_src)


def barrier(group: GroupLike = None, async_op: bool = False, device_ids: Sequence[int] | None = None) -> Work | None:
    """Wait until every rank of the group has reached this call."""
    pg = _member(group, "barrier")
    if pg is None:
        return None
    return _ret(pg.barrier(pg._begin("barrier", "")), async_op)


# point to point: no sequence numbers or fingerprints (they are not collectives)
def _point_to_point(sending: bool, tensor: Tensor, rank: int | None, group: GroupLike, tag: int,
                    group_rank: int | None) -> Work | None:
    what, name = ("isend", "dst") if sending else ("irecv", "src")
    _check_tensor(tensor)
    pg = _member(group, what, stacklevel=4)
    if pg is None:
        return None
    peer = _root(pg, rank, group_rank, what, name)
    direction = "send to" if sending else "recv from"
    desc = f"{direction} rank {pg.ranks[peer]} (tag {tag}, {_describe(tensor)})"
    return pg.send(tensor, peer, tag, desc) if sending else pg.recv(tensor, peer, tag, desc)


def isend(tensor: Tensor, dst: int | None = None, group: GroupLike = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Start sending ``tensor`` to rank ``dst``; returns a Work."""
    return _point_to_point(True, tensor, dst, group, tag, group_dst)


def irecv(tensor: Tensor, src: int | None = None, group: GroupLike = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Start receiving into ``tensor`` from rank ``src``; returns a Work."""
    return _point_to_point(False, tensor, src, group, tag, group_src)


def send(tensor: Tensor, dst: int | None = None, group: GroupLike = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to rank ``dst`` (blocking until it has been taken)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Tensor, src: int | None = None, group: GroupLike = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from rank ``src``; returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    if src is not None:
        return src
    # without src or group_src irecv took global rank 0 as the sender
    return _valid_group(group).ranks[group_src] if group_src is not None else 0


# ---------------------------------------------------------------------------------------------- objects
# Objects travel pickled (the peers are trusted: they are this job's own processes).
def _dumps(obj: object) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def _loads(buf: np.ndarray) -> Any:
    return pickle.loads(buf.tobytes())


def broadcast_object_list(object_list: list[Any], src: int | None = None, group: GroupLike = None,
                          device: object = None, group_src: int | None = None) -> None:
    """Replace the entries of ``object_list`` on every rank with rank ``src``'s (any picklable objects)."""
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list expects a list, got {type(object_list).__name__}")
    pg = _member(group, "broadcast_object_list")
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast_object_list", "src")
    what = pg._begin("broadcast_object_list", f"src {pg.ranks[root]}, {len(object_list)} objects",
                     extra=root * 1000003 + len(object_list))
    payload = _dumps(list(object_list)) if pg.rank() == root else None
    data = pg.broadcast_bytes(payload, root, what)
    if pg.rank() != root:
        object_list[:] = _loads(data)


def all_gather_object(object_list: list[Any], obj: object, group: GroupLike = None) -> None:
    """``object_list[i]`` = rank ``i``'s ``obj`` on every rank (``object_list`` has one slot per rank)."""
    pg = _member(group, "all_gather_object")
    if pg is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list with one slot per rank ({pg.size()})")
    parts = pg.all_gather_bytes(_dumps(obj), pg._begin("all_gather_object", ""))
    for i, p in enumerate(parts):
        object_list[i] = _loads(p)


def gather_object(obj: object, object_gather_list: list[Any] | None = None, dst: int | None = None,
                  group: GroupLike = None, group_dst: int | None = None) -> None:
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _member(group, "gather_object")
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather_object", "dst")
    if pg.rank() == root and (not isinstance(object_gather_list, list) or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must be a list with one slot per rank ({pg.size()}) "
                         "on the destination rank")
    what = pg._begin("gather_object", f"dst {pg.ranks[root]}", extra=root)
    parts = pg.gather_bytes(_dumps(obj), root, what)
    if parts is not None and object_gather_list is not None:
        for i, p in enumerate(parts):
            object_gather_list[i] = _loads(p)


def scatter_object_list(scatter_object_output_list: list[Any], scatter_object_input_list: list[Any] | None = None,
                        src: int | None = None, group: GroupLike = None, group_src: int | None = None) -> None:
    """Rank ``src``'s ``scatter_object_input_list[i]`` into ``scatter_object_output_list[0]`` on rank ``i``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    pg = _member(group, "scatter_object_list")
    if pg is None:
        return
    root = _root(pg, src, group_src, "scatter_object_list", "src")
    payloads = None
    if pg.rank() == root:
        if not isinstance(scatter_object_input_list, list) or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list must be a list with one object per "
                             f"rank ({pg.size()}) on the source rank")
        payloads = [_dumps(o) for o in scatter_object_input_list]
    what = pg._begin("scatter_object_list", f"src {pg.ranks[root]}", extra=root)
    scatter_object_output_list[0] = _loads(pg.scatter_bytes(payloads, root, what))


# ---------------------------------------------------------------------------------------------- coalesced
def _flat_groups(tensors: Sequence[Tensor]) -> dict[tuple[Any, Any], list[Tensor]]:
    """Tensors grouped by (device, dtype), preserving order."""
    groups: dict[tuple[Any, Any], list[Tensor]] = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return groups


def _broadcast_coalesced(tensors: Sequence[Tensor], src: int = 0, group: GroupLike = None) -> None:
    """Broadcast many tensors (in place) as one flat message per device and dtype."""
    pg = _resolve(group)
    if isinstance(pg, _NonGroupMember) or pg.size() == 1:
        return
    for (dev, dt), ts in _flat_groups([t for t in tensors if t.numel() > 0]).items():
        total = sum(t.numel() for t in ts)
        flat = empty(total, dtype=dt, device=dev)
        be = flat._be
        is_src = pg._global_rank() == src
        off = 0
        views = []
        for t in ts:
            n = t.numel()
            v = flat._data[off:off + n]
            views.append(v)
            if is_src:
                be.copy_into(v, be.reshape(be.ascontiguous(t._data), (n,)))
            off += n
        broadcast(flat, src=src, group=pg)
        for t, v in zip(ts, views):
            be.copy_into(t._data, be.reshape(v, t._data.shape))
            bump_version(t)
