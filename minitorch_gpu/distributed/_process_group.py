"""Process groups: the interface every communication backend implements, and the registry of backends.

This is the bottom layer of the distributed package. A backend module (``_mpi_backend``, ``_nccl_backend``)
subclasses :class:`ProcessGroup` and :class:`Work` and announces itself with :meth:`Backend.register_backend`;
``c10d`` (the public collectives) finds it here by name. Neither this module nor a backend imports ``c10d``.

A process group is one communicator plus the bookkeeping every collective shares: a sequence number, the
timeout, and a fingerprint check before each collective (see :meth:`ProcessGroup._fingerprint`): by default
one small all-reduce that tells whether every rank is about to run the same collective on the same dtype and
shape, with ``MINITORCH_DISTRIBUTED_DEBUG=DETAIL`` an all-gather of every rank's fingerprint, and none with
``MINITORCH_DISTRIBUTED_CHECKS=0``. Every collective is non-blocking underneath and returns a :class:`Work`.
Waiting is a polling loop with a deadline, never a blocking call into the library, so a peer that died or
stopped calling collectives turns into a RuntimeError naming the collective instead of a hang, and a peer
that reported a failure (see ``_failures``) into one naming that peer at once.
"""
from __future__ import annotations

import abc
import atexit
import contextlib
import enum
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

if TYPE_CHECKING:
    from mpi4py.MPI import Comm
    from typing_extensions import Self  # typing.Self needs Python 3.11; annotations are never evaluated here

    from .._device import device
    from ..tensor import Tensor

    #: where a group's GPU is named: an index, "cuda:1", a device, or None for "pick one per rank"
    DeviceId = int | str | device | None

__all__ = ["Backend", "DebugLevel", "ProcessGroup", "ProcessGroupFactory", "ReduceOp", "Work", "checks_enabled",
           "get_debug_level"]


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


#: bool tensors reduce as bytes: a sum or max is a logical or, a product or min a logical and
BOOL_REDUCE_OP: dict[_RedOpType, _RedOpType] = {
    _RedOpType.SUM: _RedOpType.MAX, _RedOpType.AVG: _RedOpType.MAX, _RedOpType.MAX: _RedOpType.MAX,
    _RedOpType.BOR: _RedOpType.MAX, _RedOpType.PRODUCT: _RedOpType.MIN, _RedOpType.MIN: _RedOpType.MIN,
    _RedOpType.BAND: _RedOpType.MIN, _RedOpType.BXOR: _RedOpType.BXOR}


def check_op(op: object) -> _RedOpType:
    """``op`` as a ReduceOp member; ValueError for anything else."""
    if isinstance(op, _RedOpType):
        return op
    if isinstance(op, int) and not isinstance(op, bool) and op in _RedOpType._value2member_map_:
        return _RedOpType(op)
    raise ValueError(f"Invalid reduce op: {op!r} (use minitorch_gpu.distributed.ReduceOp)")


class DebugLevel(enum.IntEnum):
    """How much the collectives check (see :func:`get_debug_level`)."""

    OFF = 0
    INFO = 1
    DETAIL = 2


def get_debug_level() -> DebugLevel:
    """The debug level from ``MINITORCH_DISTRIBUTED_DEBUG`` (or ``TORCH_DISTRIBUTED_DEBUG``): OFF, INFO or
    DETAIL. DETAIL checks before every collective that all ranks call the same one on the same shapes."""
    raw = os.environ.get("MINITORCH_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG") or "OFF"
    try:
        return DebugLevel[raw.strip().upper()]
    except KeyError:
        raise ValueError(f"Invalid value for MINITORCH_DISTRIBUTED_DEBUG: '{raw}' (expected OFF, INFO or DETAIL)") \
            from None


def checks_enabled() -> bool:
    """Whether collectives check their fingerprints across ranks: yes unless ``MINITORCH_DISTRIBUTED_CHECKS=0``
    (the debug level DETAIL checks regardless)."""
    raw = os.environ.get("MINITORCH_DISTRIBUTED_CHECKS", "1").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return get_debug_level() == DebugLevel.DETAIL
    raise ValueError(f"Invalid value for MINITORCH_DISTRIBUTED_CHECKS: '{raw}' (expected 1 or 0)")


def seconds(timeout: timedelta | float | None) -> float | None:
    """A timeout in seconds (None stays None); TypeError for anything but a timedelta or a number."""
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"timeout must be a datetime.timedelta or a number of seconds, got {type(timeout).__name__}")


def dtype_name(t: Tensor) -> str:
    """``t``'s dtype without the package prefix ("float32")."""
    return str(t.dtype).rsplit(".", 1)[-1]


# ---------------------------------------------------------------------------------------------- waiting
#: how long a wait still polls its collective after a peer reported a failure: the peer may have done its
#: part before failing, and then the collective completes
PEER_SETTLE_S = 1.0


def spin_until(done: Callable[[], bool], timeout: float, on_timeout: Callable[[], object],
               peer_failure: Callable[[], Callable[[], object] | None] | None = None) -> None:
    """Poll ``done()`` until it is true. The first polls spin (a small collective finishes in microseconds and
    MPI only progresses while it is being called); after a millisecond the loop backs off to short sleeps.
    Past ``timeout`` seconds ``on_timeout()`` runs (it raises). ``peer_failure()`` runs with the deadline test
    (so a quick collective never pays for it): once a peer has failed it returns the function that raises,
    which runs unless the collective still completes within :data:`PEER_SETTLE_S`."""
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
            fail = peer_failure() if peer_failure is not None else None
            if fail is not None:
                settle = now + PEER_SETTLE_S
                while time.monotonic() < settle:
                    if done():
                        return
                    sleep(1e-3)
                fail()
            elapsed = now - start
            if elapsed > 1e-3:
                sleep(min(1e-3, elapsed * 0.02))


class Work:
    """Handle of an asynchronous collective (``async_op=True``): ``wait()`` blocks until it is done (raising
    after the group's timeout), ``is_completed()`` asks without blocking. Results are in the tensors passed to
    the collective (also returned by ``result()``)."""

    def __init__(self, pg: ProcessGroup, what: str, outputs: Sequence[Tensor] = ()) -> None:
        self._pg = pg
        self._what = what
        self._outputs = list(outputs)
        self._done = False
        self._exc: Exception | None = None
        self._finishers: list[Callable[[], object]] = []

    # backends override these two
    def _poll(self) -> bool:
        """True when the underlying operation has finished (non-blocking)."""
        return True

    def _on_timeout(self) -> None:
        pass

    def _add_finisher(self, fn: Callable[[], object]) -> None:
        self._finishers.append(fn)

    def _finish(self) -> None:
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

    def is_completed(self) -> bool:
        """Whether the collective has finished (results written when it returns True)."""
        if not self._done and self._poll():
            self._finish()
        return self._done

    def wait(self, timeout: timedelta | float | None = None) -> bool:
        """Block until the collective is done; RuntimeError after ``timeout`` (default: the group's timeout)."""
        if self._exc is not None:
            raise self._exc
        if self._done:
            return True
        self._pg._check_usable()
        limit = seconds(timeout)
        if limit is None:
            limit = self._pg._timeout_s

        def expired() -> None:
            self._on_timeout()
            self._pg._raise_timeout(self._what, limit)

        spin_until(self._poll, limit, expired, lambda: self._pg._peer_failure(self._what))
        self._finish()
        return True

    def is_success(self) -> bool:
        return self._done and self._exc is None

    def exception(self) -> Exception | None:
        return self._exc

    def result(self) -> list[Tensor]:
        return list(self._outputs)

    def __repr__(self) -> str:
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
# what differs, named from the first slot that does (the dims and the hash both mean the shape)
_FP_FIELDS = ["sequence number", "collective", "dtype", "shape", "op or root", "shape"] + ["shape"] * _FP_DIMS

_broken_groups: list[ProcessGroup] = []
_abort_registered: list[bool] = []


def _abort_at_exit() -> None:
    # a group that timed out still has collectives in flight: MPI_Finalize would wait for them forever, so a
    # process whose group broke leaves through MPI_Abort (which also stops peers that are stuck)
    if not _broken_groups:
        return
    with contextlib.suppress(Exception):  # a closed or broken stream must not keep us from aborting
        sys.stdout.flush()
        sys.stderr.flush()
    for pg in _broken_groups:
        pg._abort(1)
    os._exit(1)


class ProcessGroup(abc.ABC):
    """A set of ranks that run collectives together. ``rank()`` and ``size()`` are within the group; ``ranks``
    lists the members' global ranks in group order.

    A backend implements the collectives below on tensors (each starts the operation and returns a Work whose
    completion writes the results) and their byte-buffer forms for pickled objects (which complete before
    returning). ``root`` and ``peer`` are ranks within the group; ``what`` names the call for error messages."""

    backend: ClassVar[str] = ""

    def __init__(self, ranks: Sequence[int], group_rank: int, timeout_s: float) -> None:
        self.ranks = list(ranks)
        self._rank = group_rank
        self._timeout_s = timeout_s
        self._seq = 0
        self._broken: str | None = None
        self._debug = get_debug_level() == DebugLevel.DETAIL
        self._checked = checks_enabled()

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self.ranks)

    def name(self) -> str:
        return self.backend

    def _global_rank(self) -> int:
        return self.ranks[self._rank]

    def _check_usable(self) -> None:
        if self._broken is not None:
            raise RuntimeError(f"[rank {self._global_rank()}] the {self.backend} process group can no longer be used: "
                               f"{self._broken}")

    def _raise_timeout(self, what: str, limit: float) -> None:
        self._break(f"[rank {self._global_rank()}] {self.backend} process group timed out after {limit:g}s waiting "
                    f"for {what}; a peer rank may have died or stopped calling collectives")

    def _break(self, msg: str, error: RuntimeError | None = None) -> None:
        """Raise ``error`` (a RuntimeError of ``msg`` by default) and leave the group unusable: a collective is
        still in flight, so this process must leave through an abort rather than MPI_Finalize (which would
        wait for it)."""
        self._broken = msg
        if self not in _broken_groups:
            _broken_groups.append(self)
        if not _abort_registered:
            _abort_registered.append(True)
            atexit.register(_abort_at_exit)
        raise error if error is not None else RuntimeError(msg)

    def _peer_failure(self, what: str) -> Callable[[], None] | None:
        """None while no member of the group has reported a failure; after one has, the function that raises
        (and breaks the group: ``what`` may never complete). Backends with a way to hear of failures
        override this."""
        return None

    def _begin(self, name: str, details: str, tensor: Tensor | None = None, extra: int = 0) -> str:
        """Check the call against the other ranks' (DETAIL debug), number the collective about to start and
        describe it (for timeouts and mismatch reports)."""
        seq = self._seq + 1
        what = f"{name} #{seq} ({details})" if details else f"{name} #{seq}"
        self._check_usable()
        self._fingerprint(name, what, tensor, extra)
        self._seq = seq
        return what

    # ------------------------------------------------------------------ fingerprints
    def _fingerprint(self, name: str, what: str, tensor: Tensor | None = None, extra: int = 0) -> None:
        """Before collective number ``self._seq + 1``: check that every rank is about to run the same
        collective (name, dtype, shape, op or root, sequence number) and raise the same RuntimeError on every
        rank, naming what differs and the ranks that differ from the group's first, if not.

        A mismatched payload is never sent: with different sizes MPI would truncate (an abort with a C
        backtrace) or hand one rank garbage, and with different ops the ranks would silently diverge. The
        default check costs one all-reduce of 36 integers (each rank's fingerprint and its negation, under
        MAX: every slot's maximum and minimum at once, equal on every slot exactly when all ranks agree);
        only when they disagree is every rank's fingerprint gathered to name the difference. DETAIL debug
        gathers them always; ``MINITORCH_DISTRIBUTED_CHECKS=0`` skips the check."""
        if not (self._checked or self._debug) or self.size() == 1:
            return
        shape: tuple[int, ...] = tuple(tensor.shape) if tensor is not None else ()
        fp = np.zeros(_FP_LEN, np.int64)
        fp[0] = self._seq + 1
        fp[1] = _COLL_CODE[name]
        fp[2] = _DTYPE_CODE.get(dtype_name(tensor), -1) if tensor is not None else -2
        fp[3] = len(shape) if tensor is not None else -1
        fp[4] = int(extra)
        # ints hash the same in every process, unlike str; 62 bits so that the negation cannot overflow
        fp[5] = hash(shape) & ((1 << 62) - 1)
        for i, d in enumerate(shape[:_FP_DIMS]):
            fp[6 + i] = d
        if not self._debug:
            both = np.concatenate([fp, -fp])
            self._max_fingerprints(both, what)
            if np.array_equal(both[:_FP_LEN], -both[_FP_LEN:]):
                return
            # every rank saw the same maximum and minimum, so every rank takes this branch
        rows = self._exchange_fingerprints(fp, what)
        ref = rows[0]
        differ = [r for r in range(1, rows.shape[0]) if not np.array_equal(rows[r], ref)]
        if not differ:
            return
        slots = [i for i in range(_FP_LEN) if any(rows[r][i] != ref[i] for r in differ)]
        fields = list(dict.fromkeys(_FP_FIELDS[i] for i in slots))
        show_extra = "op or root" in fields
        sides = ", ".join(f"rank {self.ranks[r]} {_fp_text(rows[r], show_extra, int(ref[0]))}" for r in differ)
        raise RuntimeError(f"collective mismatch at sequence {int(ref[0])}: rank {self.ranks[0]} "
                           f"{_fp_text(ref, show_extra)} vs {sides} (the {' and the '.join(fields)} differ"
                           f"{'s' if len(fields) == 1 else ''}); every rank must call the same collectives in "
                           "the same order, on tensors of the same dtype and shape")

    # ------------------------------------------------------------------ what a backend provides
    @abc.abstractmethod
    def _exchange_fingerprints(self, fp: np.ndarray, what: str) -> np.ndarray:
        """Every rank's ``fp``, stacked in group order (completes before returning); ``what`` names the
        collective it checks, for errors."""

    @abc.abstractmethod
    def _max_fingerprints(self, both: np.ndarray, what: str) -> None:
        """All-reduce the int64 array ``both`` in place under MAX (completes before returning)."""

    @abc.abstractmethod
    def _split(self, ranks: list[int]) -> Comm | None:
        """The communicator of a new group over ``ranks`` (None on ranks outside it). Every rank calls this."""

    def _abort(self, code: int) -> None:
        pass

    def _destroy(self) -> None:
        pass

    @abc.abstractmethod
    def all_reduce(self, t: Tensor, op: _RedOpType, what: str) -> Work: ...

    @abc.abstractmethod
    def broadcast(self, t: Tensor, root: int, what: str) -> Work: ...

    @abc.abstractmethod
    def all_gather(self, outs: list[Tensor], t: Tensor, what: str) -> Work: ...

    @abc.abstractmethod
    def all_gather_into_tensor(self, out: Tensor, inp: Tensor, what: str) -> Work: ...

    @abc.abstractmethod
    def reduce_scatter(self, out: Tensor, inputs: list[Tensor], op: _RedOpType, what: str) -> Work: ...

    @abc.abstractmethod
    def reduce_scatter_tensor(self, out: Tensor, inp: Tensor, op: _RedOpType, what: str) -> Work: ...

    @abc.abstractmethod
    def reduce(self, t: Tensor, root: int, op: _RedOpType, what: str) -> Work: ...

    @abc.abstractmethod
    def gather(self, t: Tensor, outs: list[Tensor], root: int, what: str) -> Work: ...

    @abc.abstractmethod
    def scatter(self, t: Tensor, ins: list[Tensor], root: int, what: str) -> Work: ...

    @abc.abstractmethod
    def barrier(self, what: str) -> Work: ...

    @abc.abstractmethod
    def send(self, t: Tensor, peer: int, tag: int, what: str) -> Work: ...

    @abc.abstractmethod
    def recv(self, t: Tensor, peer: int, tag: int, what: str) -> Work: ...

    @abc.abstractmethod
    def broadcast_bytes(self, payload: np.ndarray | None, root: int, what: str) -> np.ndarray: ...

    @abc.abstractmethod
    def all_gather_bytes(self, payload: np.ndarray, what: str) -> list[np.ndarray]: ...

    @abc.abstractmethod
    def gather_bytes(self, payload: np.ndarray, root: int, what: str) -> list[np.ndarray] | None: ...

    @abc.abstractmethod
    def scatter_bytes(self, payloads: list[np.ndarray] | None, root: int, what: str) -> np.ndarray: ...


def _fp_text(row: np.ndarray, show_extra: bool, ref_seq: int | None = None) -> str:
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


# ---------------------------------------------------------------------------------------------- registry
class ProcessGroupFactory(Protocol):
    """Builds a backend's process group over ``comm`` (the MPI communicator of exactly the group's ranks,
    which every backend bootstraps on). ``group_rank`` is None for the default group (the communicator's
    rank is the group rank)."""

    def __call__(self, comm: Comm, ranks: list[int], timeout_s: float, *, group_rank: int | None,
                 device_id: DeviceId) -> ProcessGroup: ...


def _always() -> bool:
    return True


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class _Registration:
    create: ProcessGroupFactory
    world: Callable[[], Comm]
    devices: tuple[str, ...]
    available: Callable[[], bool]
    require: Callable[[], None]


class Backend(str):
    """Backend names: ``Backend.MPI`` ("mpi", CPU tensors; CUDA tensors are staged through the host) and
    ``Backend.NCCL`` ("nccl", CUDA tensors). ``"gloo"`` is accepted as a spelling of the MPI backend so that
    scripts written for PyTorch's CPU backend run unchanged. A backend module adds its name with
    :meth:`register_backend`."""

    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"

    #: registered names, in registration order
    backend_list: ClassVar[list[str]] = []
    _registry: ClassVar[dict[str, _Registration]] = {}
    _aliases: ClassVar[dict[str, str]] = {"gloo": "mpi"}

    def __new__(cls, name: str) -> Self:
        if not isinstance(name, str):
            raise ValueError(f"Backend name must be a string, but got: {name}")  # noqa: TRY004 - as PyTorch
        low = name.lower()
        if low not in cls._registry and low not in cls._aliases:
            names = [f"'{n}'" for n in cls.backend_list]
            served = "; ".join(f"'{a}' is served by '{t}'" for a, t in cls._aliases.items())
            raise ValueError(f"Invalid backend: '{name}' (minitorch_gpu supports {' and '.join(names)}; {served})")
        return str.__new__(cls, low)

    @classmethod
    def register_backend(cls, name: str, func: ProcessGroupFactory, *, world: Callable[[], Comm],
                         devices: Sequence[str], available: Callable[[], bool] = _always,
                         require: Callable[[], None] = _nothing) -> None:
        """Make ``name`` a backend: ``func`` builds its groups over the communicator ``world()`` (the default
        group) or a split of it (``new_group``). ``available()`` says without side effects whether it can run
        here; ``require()`` raises an error that says what to install when it cannot, before any
        communication starts. ``devices`` lists the device types its tensors may live on."""
        low = name.lower()
        if low in cls._registry or low in cls._aliases:
            raise ValueError(f"{name.upper()} c10d backend already exist")
        cls._registry[low] = _Registration(func, world, tuple(devices), available, require)
        cls.backend_list.append(low)
        if not hasattr(cls, low.upper()):
            setattr(cls, low.upper(), low)  # Backend.MYBACKEND, as PyTorch adds it

    @classmethod
    def _lookup(cls, name: str) -> tuple[Backend, _Registration]:
        """The canonical name of ``name`` (aliases resolved) and its registration; ValueError when unknown."""
        low = Backend(name)
        canonical = Backend(cls._aliases.get(low, low))
        return canonical, cls._registry[canonical]
