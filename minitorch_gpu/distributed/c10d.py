"""Process groups and collectives: PyTorch's ``torch.distributed`` on MPI (mpi4py) and NCCL (CuPy).

A process group is one communicator plus the bookkeeping every collective shares: a sequence number, the
timeout, and (with ``MINITORCH_DISTRIBUTED_DEBUG=DETAIL``) a fingerprint exchange before each collective.
Every collective is non-blocking underneath and returns a :class:`Work`; ``async_op=False`` just waits on it.
Waiting is a polling loop with a deadline, never a blocking MPI call, so a peer that died or stopped
calling collectives turns into a RuntimeError naming the collective instead of a hang.

The functions take and return Tensors; the backends (``_mpi_backend``, ``_nccl_backend``) see arrays.
"""
import atexit
import enum
import os
import pickle
import sys
import time
import warnings
from datetime import timedelta

import numpy as np

from ..autograd.function import bump_version
from ..tensor import Tensor

__all__ = ["Backend", "DebugLevel", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "barrier", "broadcast",
           "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather", "gather_object",
           "get_backend", "get_debug_level", "get_global_rank", "get_group_rank", "get_process_group_ranks",
           "get_rank", "get_world_size", "group", "init_process_group", "irecv", "is_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "isend", "new_group", "recv", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "scatter_object_list", "send"]

default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """Backend names: ``Backend.MPI`` ("mpi", CPU tensors; CUDA tensors are staged through the host) and
    ``Backend.NCCL`` ("nccl", CUDA tensors). ``"gloo"`` is accepted as a spelling of the MPI backend so that
    scripts written for PyTorch's CPU backend run unchanged."""

    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")
        low = name.lower()
        if low not in ("mpi", "nccl", "gloo"):
            raise ValueError(f"Invalid backend: '{name}' (minitorch_gpu supports 'mpi' and 'nccl'; 'gloo' is "
                             "served by 'mpi')")
        return str.__new__(cls, low)


class _RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class ReduceOp:
    """Reduction operations of the reducing collectives (``ReduceOp.SUM`` ...). ``AVG`` is a sum divided by
    the group size (integer tensors divide truncating, like NCCL)."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR


class DebugLevel(enum.IntEnum):
    OFF = 0
    INFO = 1
    DETAIL = 2


def get_debug_level():
    """The debug level from ``MINITORCH_DISTRIBUTED_DEBUG`` (or ``TORCH_DISTRIBUTED_DEBUG``): OFF, INFO or
    DETAIL. DETAIL checks before every collective that all ranks call the same one on the same shapes."""
    raw = os.environ.get("MINITORCH_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG") or "OFF"
    try:
        return DebugLevel[raw.strip().upper()]
    except KeyError:
        raise ValueError(f"Invalid value for MINITORCH_DISTRIBUTED_DEBUG: '{raw}' (expected OFF, INFO or DETAIL)") \
            from None


def _check_op(op):
    if isinstance(op, _RedOpType):
        return op
    if isinstance(op, int) and not isinstance(op, bool) and op in _RedOpType._value2member_map_:
        return _RedOpType(op)
    raise ValueError(f"Invalid reduce op: {op!r} (use minitorch_gpu.distributed.ReduceOp)")


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta or a number of seconds, got {type(timeout).__name__}")


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _describe(t):
    return f"{_dtype_name(t)} {list(t.shape)}"


# ---------------------------------------------------------------------------------------------- waiting
def _spin_until(done, timeout, on_timeout):
    """Poll ``done()`` until it is true. The first polls spin (a small collective finishes in microseconds and
    MPI only progresses while it is being called); after a millisecond the loop backs off to short sleeps.
    Past ``timeout`` seconds ``on_timeout()`` runs (it raises)."""
    if done():
        return
    start = time.monotonic()
    deadline = start + timeout
    polls = 0
    sleep = time.sleep
    while not done():
        polls += 1
        if polls >= 64:
            now = time.monotonic()
            if now >= deadline:
                on_timeout()
            elapsed = now - start
            if elapsed > 1e-3:
                sleep(min(1e-3, elapsed * 0.02))


class Work:
    """Handle of an asynchronous collective (``async_op=True``): ``wait()`` blocks until it is done (raising
    after the group's timeout), ``is_completed()`` asks without blocking. Results are in the tensors passed to
    the collective (also returned by ``result()``)."""

    def __init__(self, pg, what, outputs=()):
        self._pg = pg
        self._what = what
        self._outputs = list(outputs)
        self._done = False
        self._exc = None
        self._finishers = []

    # backends override these two
    def _poll(self):
        """True when the underlying operation has finished (non-blocking)."""
        return True

    def _on_timeout(self):
        pass

    def _add_finisher(self, fn):
        self._finishers.append(fn)

    def _finish(self):
        if self._done:
            return
        self._done = True
        fns, self._finishers = self._finishers, []
        try:
            for fn in fns:
                fn()
        except Exception as e:
            self._exc = e
            raise

    def is_completed(self):
        """Whether the collective has finished (results written when it returns True)."""
        if not self._done and self._poll():
            self._finish()
        return self._done

    def wait(self, timeout=None):
        """Block until the collective is done; RuntimeError after ``timeout`` (default: the group's timeout)."""
        if self._exc is not None:
            raise self._exc
        if self._done:
            return True
        self._pg._check_usable()
        limit = self._pg._timeout_s if timeout is None else _seconds(timeout)

        def expired():
            self._on_timeout()
            self._pg._raise_timeout(self._what, limit)

        _spin_until(self._poll, limit, expired)
        self._finish()
        return True

    def is_success(self):
        return self._done and self._exc is None

    def exception(self):
        return self._exc

    def result(self):
        return list(self._outputs)

    def __repr__(self):
        state = "completed" if self._done else "pending"
        return f"<Work {self._what} {state}>"


# ---------------------------------------------------------------------------------------------- groups
_COLLECTIVES = ["all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                "reduce_scatter_tensor", "reduce", "gather", "scatter", "barrier", "broadcast_object_list",
                "all_gather_object", "gather_object", "scatter_object_list"]
_COLL_CODE = {n: i for i, n in enumerate(_COLLECTIVES)}
_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
           "complex64", "complex128", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2"]
_DTYPE_CODE = {n: i for i, n in enumerate(_DTYPES)}
_FP_DIMS = 12
# slots: seq, collective, dtype, ndim, extra (op or root), shape hash, dims...
_FP_LEN = 6 + _FP_DIMS

_broken_groups = []
_abort_registered = []


def _abort_at_exit():
    # a group that timed out still has collectives in flight: MPI_Finalize would wait for them forever, so a
    # process whose group broke leaves through MPI_Abort (which also stops peers that are stuck)
    if not _broken_groups:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        pass
    for pg in _broken_groups:
        pg._abort(1)
    os._exit(1)


class ProcessGroup:
    """A set of ranks that run collectives together. ``rank()`` and ``size()`` are within the group; ``ranks``
    lists the members' global ranks in group order."""

    backend = None

    def __init__(self, ranks, group_rank, timeout_s):
        self.ranks = list(ranks)
        self._rank = group_rank
        self._timeout_s = timeout_s
        self._seq = 0
        self._broken = None
        self._debug = get_debug_level() == DebugLevel.DETAIL

    def rank(self):
        return self._rank

    def size(self):
        return len(self.ranks)

    def name(self):
        return self.backend

    def _global_rank(self):
        return self.ranks[self._rank]

    def _check_usable(self):
        if self._broken is not None:
            raise RuntimeError(f"[rank {self._global_rank()}] the {self.backend} process group can no longer be used: "
                               f"{self._broken}")

    def _raise_timeout(self, what, limit):
        msg = (f"[rank {self._global_rank()}] {self.backend} process group timed out after {limit:g}s waiting for "
               f"{what}; a peer rank may have died or stopped calling collectives")
        self._broken = msg
        if self not in _broken_groups:
            _broken_groups.append(self)
        if not _abort_registered:
            _abort_registered.append(True)
            atexit.register(_abort_at_exit)
        raise RuntimeError(msg)

    def _next(self, name, details):
        """Number the collective about to start and describe it (for timeouts and mismatch reports)."""
        self._check_usable()
        self._seq += 1
        return f"{name} #{self._seq} ({details})" if details else f"{name} #{self._seq}"

    # ------------------------------------------------------------------ DETAIL debug fingerprints
    def _fingerprint(self, name, tensor=None, extra=0, shape=None, dtype=None):
        """Before collective number ``self._seq + 1``: every rank shares what it is about to call and all raise
        the same error, naming the first rank that differs from rank 0, if the calls do not match."""
        if not self._debug or self.size() == 1:
            return
        if tensor is not None:
            shape = tuple(tensor.shape)
            dtype = _dtype_name(tensor)
        shape = tuple(shape or ())
        fp = np.zeros(_FP_LEN, np.int64)
        fp[0] = self._seq + 1
        fp[1] = _COLL_CODE[name]
        fp[2] = _DTYPE_CODE.get(dtype, -1) if dtype is not None else -2
        fp[3] = len(shape) if dtype is not None else -1
        fp[4] = int(extra)
        fp[5] = hash(shape)  # ints hash the same in every process, unlike str
        for i, d in enumerate(shape[:_FP_DIMS]):
            fp[6 + i] = d
        rows = self._exchange_fingerprints(fp)
        ref = rows[0]
        for r in range(1, rows.shape[0]):
            if not np.array_equal(rows[r], ref):
                show_extra = rows[r][4] != ref[4]
                raise RuntimeError(f"collective mismatch at sequence {int(ref[0])}: rank {self.ranks[0]} "
                                   f"{_fp_text(ref, show_extra)} vs rank {self.ranks[r]} "
                                   f"{_fp_text(rows[r], show_extra, ref[0])}")

    def _exchange_fingerprints(self, fp):
        raise NotImplementedError(f"{type(self).__name__} must gather the debug fingerprints of every rank")

    def _abort(self, code):
        pass

    def _destroy(self):
        pass


def _fp_text(row, show_extra, ref_seq=None):
    name = _COLLECTIVES[int(row[1])] if 0 <= row[1] < len(_COLLECTIVES) else f"collective {int(row[1])}"
    parts = [name]
    if row[2] != -2:
        parts.append(_DTYPES[int(row[2])] if 0 <= row[2] < len(_DTYPES) else "dtype?")
        nd = int(row[3])
        dims = [int(d) for d in row[6:6 + min(nd, _FP_DIMS)]]
        parts.append("[" + ", ".join(map(str, dims)) + (", ...]" if nd > _FP_DIMS else "]"))
    if show_extra:
        parts.append(f"(op/root {int(row[4])})")
    if ref_seq is not None and row[0] != ref_seq:
        parts.append(f"(its sequence {int(row[0])})")
    return " ".join(parts)


class _NonGroupMember:
    """What ``new_group`` returns on ranks outside the new group (PyTorch's ``GroupMember.NON_GROUP_MEMBER``)."""

    def __repr__(self):
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = _NonGroupMember()


class group:
    """``group.WORLD``: the default process group once ``init_process_group`` has run."""

    WORLD = None


_state = {"default": None, "mpi_world": None, "groups": []}


def is_available():
    """Whether distributed training can run here: mpi4py (with an MPI library such as the ``mpich`` wheel) is
    installed. The NCCL backend additionally needs CuPy with NCCL (:func:`is_nccl_available`)."""
    return is_mpi_available()


def is_mpi_available():
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


def is_nccl_available():
    if not is_mpi_available():
        return False
    from .. import cuda
    if not cuda.is_available() or cuda.is_simulated():
        return False
    try:
        from cupy.cuda import nccl
        return nccl.available if hasattr(nccl, "available") else True
    except Exception:
        return False


def is_initialized():
    """Whether the default process group exists."""
    return _state["default"] is not None


def _default_group():
    pg = _state["default"]
    if pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return pg


def _resolve(group_):
    if group_ is None or group_ is GroupMember.WORLD:
        return _default_group()
    if group_ is GroupMember.NON_GROUP_MEMBER:
        return group_
    if not isinstance(group_, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup (from new_group) or None, got {type(group_).__name__}")
    _default_group()
    return group_


def _not_member(pg, what):
    if pg is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {what} on global rank {get_rank()} which does not belong to the given group.",
                      stacklevel=3)
        return True
    return False


def _mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        raise RuntimeError("distributed training needs mpi4py and an MPI library: "
                           "pip install 'minitorch_gpu[mpi]' (mpi4py + the mpich wheel)") from None
    return MPI


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
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
    name = Backend(backend if backend is not None else "mpi")
    if name == Backend.GLOO:
        name = Backend(Backend.MPI)
    timeout_s = _seconds(timeout if timeout is not None else default_pg_timeout)
    if timeout_s <= 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_method must be a string URL or None, got {type(init_method).__name__}")
    if name == Backend.NCCL:
        from ._nccl_backend import _cupy
        _cupy()  # no GPU: say so before MPI starts
    MPI = _mpi()
    world = _state["mpi_world"]
    if world is None:
        # our own copy of COMM_WORLD: a script's direct mpi4py traffic can never interleave with ours
        world = _state["mpi_world"] = MPI.COMM_WORLD.Dup()
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
    ranks = list(range(n))
    if name == Backend.MPI:
        from ._mpi_backend import MPIProcessGroup
        pg = MPIProcessGroup(world, ranks, timeout_s)
    else:
        from ._nccl_backend import NCCLProcessGroup
        pg = NCCLProcessGroup(world, ranks, timeout_s, device_id=device_id)
    _state["default"] = pg
    _state["groups"] = [pg]
    GroupMember.WORLD = pg
    group.WORLD = pg


def destroy_process_group(group=None):
    """Release a process group (the default one, and with it every group, when ``group`` is None)."""
    if group is None or group is _state["default"]:
        for pg in _state["groups"]:
            pg._destroy()
        _state["default"] = None
        _state["groups"] = []
        GroupMember.WORLD = None
        globals()["group"].WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    group._destroy()
    if group in _state["groups"]:
        _state["groups"].remove(group)


def get_rank(group=None):
    """This process's rank in ``group`` (global rank by default); -1 outside the group."""
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    return pg.rank()


def get_world_size(group=None):
    """The number of ranks in ``group`` (all ranks by default); -1 outside the group."""
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        return -1
    return pg.size()


def get_backend(group=None):
    """The backend name of ``group``: "mpi" or "nccl"."""
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return pg.backend


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members, in group order."""
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return list(pg.ranks)


def get_global_rank(group, group_rank):
    """The global rank of the member with rank ``group_rank`` in ``group``."""
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank):
    """The rank within ``group`` of the process with global rank ``global_rank``."""
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A process group over the given global ranks (all ranks when None). Every rank of the world must call
    it (in the same order as other collectives); ranks outside get ``GroupMember.NON_GROUP_MEMBER``."""
    world_pg = _default_group()
    n = world_pg.size()
    if ranks is None:
        ranks = list(range(n))
    ranks = sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: duplicate ranks in {ranks}")
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(f"new_group: rank {r} is out of range for a world of {n} ranks")
    name = Backend(backend if backend is not None else world_pg.backend)
    if name == Backend.GLOO:
        name = Backend(Backend.MPI)
    timeout_s = world_pg._timeout_s if timeout is None else _seconds(timeout)
    sub = world_pg._split(ranks)
    if sub is None:
        return GroupMember.NON_GROUP_MEMBER
    me = ranks.index(world_pg.rank())
    if name == Backend.MPI:
        from ._mpi_backend import MPIProcessGroup
        pg = MPIProcessGroup(sub, ranks, timeout_s, group_rank=me)
    else:
        from ._nccl_backend import NCCLProcessGroup
        pg = NCCLProcessGroup(sub, ranks, timeout_s, group_rank=me, device_id=device_id)
    _state["groups"].append(pg)
    return pg


# ---------------------------------------------------------------------------------------------- checks
def _check_tensor(t, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type minitorch_gpu.Tensor but "
                        f"got {type(t)} instead.")


def _check_tensor_list(ts, name):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[minitorch_gpu.Tensor] "
                        "but got " + (f"{type(ts)}" if not isinstance(ts, (list, tuple)) else "a list containing "
                                      "something else") + " instead.")


def _same_shape(t, ref, what):
    if tuple(t.shape) != tuple(ref.shape):
        raise ValueError(f"{what}: every tensor must have the shape {list(ref.shape)} of the input, got "
                         f"{list(t.shape)}")
    if t.dtype is not ref.dtype:
        raise TypeError(f"{what}: every tensor must have the dtype {_dtype_name(ref)} of the input, got "
                        f"{_dtype_name(t)}")


def _root(pg, rank, group_rank, what, name):
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


def _ret(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------------------- collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group in place, with the result on every rank."""
    _check_tensor(tensor)
    op = _check_op(op)
    pg = _resolve(group)
    if _not_member(pg, "all_reduce"):
        return None
    pg._fingerprint("all_reduce", tensor, int(op))
    what = pg._next("all_reduce", f"op {op.name}, {_describe(tensor)}")
    return _ret(pg.all_reduce(tensor, op, what), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` from rank ``src`` (a global rank; ``group_src`` for a rank within the group) to every
    rank of the group, in place."""
    _check_tensor(tensor)
    pg = _resolve(group)
    if _not_member(pg, "broadcast"):
        return None
    root = _root(pg, src, group_src, "broadcast", "src")
    pg._fingerprint("broadcast", tensor, root)
    what = pg._next("broadcast", f"src {pg.ranks[root]}, {_describe(tensor)}")
    return _ret(pg.broadcast(tensor, root, what), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list`` (one tensor per rank, each shaped like ``tensor``) with every rank's ``tensor``."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor)
    pg = _resolve(group)
    if _not_member(pg, "all_gather"):
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list must hold one tensor per rank ({pg.size()}), got "
                         f"{len(tensor_list)}")
    for t in tensor_list:
        _same_shape(t, tensor, "all_gather")
    pg._fingerprint("all_gather", tensor)
    what = pg._next("all_gather", _describe(tensor))
    return _ret(pg.all_gather(list(tensor_list), tensor, what), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` concatenated (``[world * n, ...]``) or stacked (``[world, n, ...]``) into
    ``output_tensor``, in rank order."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _resolve(group)
    if _not_member(pg, "all_gather_into_tensor"):
        return None
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to world_size times input "
                         f"tensor size (output {list(output_tensor.shape)}, input {list(input_tensor.shape)}, "
                         f"world size {pg.size()})")
    if output_tensor.dtype is not input_tensor.dtype:
        raise TypeError("all_gather_into_tensor: output tensor must have the same type as input tensor")
    pg._fingerprint("all_gather_into_tensor", input_tensor)
    what = pg._next("all_gather_into_tensor", _describe(input_tensor))
    return _ret(pg.all_gather_into_tensor(output_tensor, input_tensor, what), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list[i]`` across ranks into ``output`` on rank ``i`` of the group."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    op = _check_op(op)
    pg = _resolve(group)
    if _not_member(pg, "reduce_scatter"):
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list must hold one tensor per rank ({pg.size()}), got "
                         f"{len(input_list)}")
    for t in input_list:
        _same_shape(t, output, "reduce_scatter")
    pg._fingerprint("reduce_scatter", output, int(op))
    what = pg._next("reduce_scatter", f"op {op.name}, {_describe(output)}")
    return _ret(pg.reduce_scatter(output, list(input_list), op, what), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``input`` (``world`` equal chunks along dim 0) reduced across ranks; rank ``i`` gets chunk ``i``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    op = _check_op(op)
    pg = _resolve(group)
    if _not_member(pg, "reduce_scatter_tensor"):
        return None
    if input.numel() != output.numel() * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same size as output size times world "
                         f"size (input {list(input.shape)}, output {list(output.shape)}, world size {pg.size()})")
    if output.dtype is not input.dtype:
        raise TypeError("reduce_scatter_tensor: input tensor must be the same type as the output tensor")
    pg._fingerprint("reduce_scatter_tensor", input, int(op))
    what = pg._next("reduce_scatter_tensor", f"op {op.name}, {_describe(input)}")
    return _ret(pg.reduce_scatter_tensor(output, input, op, what), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s tensor (the others' are left as they were)."""
    _check_tensor(tensor)
    op = _check_op(op)
    pg = _resolve(group)
    if _not_member(pg, "reduce"):
        return None
    root = _root(pg, dst, group_dst, "reduce", "dst")
    pg._fingerprint("reduce", tensor, int(op) * 1000003 + root)
    what = pg._next("reduce", f"op {op.name}, dst {pg.ranks[root]}, {_describe(tensor)}")
    return _ret(pg.reduce(tensor, root, op, what), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (which alone passes a list)."""
    _check_tensor(tensor)
    pg = _resolve(group)
    if _not_member(pg, "gather"):
        return None
    root = _root(pg, dst, group_dst, "gather", "dst")
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
        if len(gather_list) != pg.size():
            raise ValueError(f"gather: gather_list must hold one tensor per rank ({pg.size()}), got "
                             f"{len(gather_list)}")
        for t in gather_list:
            _same_shape(t, tensor, "gather")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    pg._fingerprint("gather", tensor, root)
    what = pg._next("gather", f"dst {pg.ranks[root]}, {_describe(tensor)}")
    return _ret(pg.gather(tensor, list(gather_list or []), root, what), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank ``src``'s ``scatter_list[i]`` into ``tensor`` on rank ``i`` of the group."""
    _check_tensor(tensor)
    pg = _resolve(group)
    if _not_member(pg, "scatter"):
        return None
    root = _root(pg, src, group_src, "scatter", "src")
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"scatter: scatter_list must hold one tensor per rank ({pg.size()}), got "
                             f"{len(scatter_list)}")
        for t in scatter_list:
            _same_shape(t, tensor, "scatter")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    pg._fingerprint("scatter", tensor, root)
    what = pg._next("scatter", f"src {pg.ranks[root]}, {_describe(tensor)}")
    return _ret(pg.scatter(tensor, list(scatter_list or []), root, what), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group has reached this call."""
    pg = _resolve(group)
    if _not_member(pg, "barrier"):
        return None
    pg._fingerprint("barrier")
    what = pg._next("barrier", "")
    return _ret(pg.barrier(what), async_op)


# point to point: no sequence numbers or fingerprints (they are not collectives)
def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a Work."""
    _check_tensor(tensor)
    pg = _resolve(group)
    if _not_member(pg, "isend"):
        return None
    peer = _root(pg, dst, group_dst, "isend", "dst")
    return pg.send(tensor, peer, tag, f"send to rank {pg.ranks[peer]} (tag {tag}, {_describe(tensor)})")


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src``; returns a Work."""
    _check_tensor(tensor)
    pg = _resolve(group)
    if _not_member(pg, "irecv"):
        return None
    peer = _root(pg, src, group_src, "irecv", "src")
    return pg.recv(tensor, peer, tag, f"recv from rank {pg.ranks[peer]} (tag {tag}, {_describe(tensor)})")


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` (blocking until it has been taken)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src``; returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return src if src is not None else _resolve(group).ranks[group_src]


# ---------------------------------------------------------------------------------------------- objects
# Objects travel pickled (the peers are trusted: they are this job's own processes).
def _dumps(obj):
    return np.frombuffer(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8)


def _loads(buf):
    return pickle.loads(buf.tobytes())


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace the entries of ``object_list`` on every rank with rank ``src``'s (any picklable objects)."""
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list expects a list, got {type(object_list).__name__}")
    pg = _resolve(group)
    if _not_member(pg, "broadcast_object_list"):
        return
    root = _root(pg, src, group_src, "broadcast_object_list", "src")
    pg._fingerprint("broadcast_object_list", extra=root * 1000003 + len(object_list))
    what = pg._next("broadcast_object_list", f"src {pg.ranks[root]}, {len(object_list)} objects")
    payload = _dumps(list(object_list)) if pg.rank() == root else None
    data = pg.broadcast_bytes(payload, root, what)
    if pg.rank() != root:
        object_list[:] = _loads(data)


def all_gather_object(object_list, obj, group=None):
    """``object_list[i]`` = rank ``i``'s ``obj`` on every rank (``object_list`` has one slot per rank)."""
    pg = _resolve(group)
    if _not_member(pg, "all_gather_object"):
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list with one slot per rank ({pg.size()})")
    pg._fingerprint("all_gather_object")
    what = pg._next("all_gather_object", "")
    parts = pg.all_gather_bytes(_dumps(obj), what)
    for i, p in enumerate(parts):
        object_list[i] = _loads(p)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = _resolve(group)
    if _not_member(pg, "gather_object"):
        return
    root = _root(pg, dst, group_dst, "gather_object", "dst")
    if pg.rank() == root and (not isinstance(object_gather_list, list) or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must be a list with one slot per rank ({pg.size()}) "
                         "on the destination rank")
    pg._fingerprint("gather_object", extra=root)
    what = pg._next("gather_object", f"dst {pg.ranks[root]}")
    parts = pg.gather_bytes(_dumps(obj), root, what)
    if pg.rank() == root:
        for i, p in enumerate(parts):
            object_gather_list[i] = _loads(p)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """Rank ``src``'s ``scatter_object_input_list[i]`` into ``scatter_object_output_list[0]`` on rank ``i``."""
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    pg = _resolve(group)
    if _not_member(pg, "scatter_object_list"):
        return
    root = _root(pg, src, group_src, "scatter_object_list", "src")
    payloads = None
    if pg.rank() == root:
        if not isinstance(scatter_object_input_list, list) or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list must be a list with one object per "
                             f"rank ({pg.size()}) on the source rank")
        payloads = [_dumps(o) for o in scatter_object_input_list]
    pg._fingerprint("scatter_object_list", extra=root)
    what = pg._next("scatter_object_list", f"src {pg.ranks[root]}")
    scatter_object_output_list[0] = _loads(pg.scatter_bytes(payloads, root, what))


# ---------------------------------------------------------------------------------------------- coalesced
def _flat_groups(tensors):
    """Tensors grouped by (device, dtype), preserving order."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return groups


def _broadcast_coalesced(tensors, src=0, group=None):
    """Broadcast many tensors (in place) as one flat message per device and dtype."""
    from ..ops.creation import empty
    pg = _resolve(group)
    if pg is GroupMember.NON_GROUP_MEMBER or pg.size() == 1:
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
