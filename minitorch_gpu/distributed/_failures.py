"""What one rank's failure does to the others: they hear of it and the whole job ends, within seconds.

Without this a rank whose script raises leaves Python, and MPI_Finalize (run at exit) waits for every peer
to finalize too, while the peers wait in their next collective for the rank that left: nothing ends before
the process group's timeout (30 minutes by default). So while a default process group of more than one rank
exists, an exception that escapes the script (``sys.excepthook``) makes its rank:

1. print the traceback as usual;
2. send a short notice ("ValueError: ...") to every other rank over a communicator used for nothing else;
3. wait up to :data:`GRACE_S` seconds for every peer to report back (a peer waiting in a collective hears the
   notice at once, raises a RuntimeError naming the failed rank, and, if that escapes too, reports in turn);
4. abort the job (``MPI_Abort``, after aborting the NCCL communicators), which stops the ranks that did not
   report, so the job ends with a non-zero status and every rank that could has said why.

The notices are fixed-size messages on one posted receive, polled by the waits of the collectives (see
``spin_until``): a collective that finishes in time never looks at them. Nothing here imports mpi4py; the MPI
backend hands in its module and a duplicate of ``COMM_WORLD``.
"""
from __future__ import annotations

import atexit
import contextlib
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

if TYPE_CHECKING:
    from types import TracebackType

    from mpi4py.MPI import Comm

__all__ = ["GRACE_S", "FailureChannel", "PeerFailure", "armed_channel"]

#: how long a failing rank waits for its peers to report before it aborts the job
GRACE_S = 3.0
_NOTICE_BYTES = 1024
_TAG = 7

_armed: list[FailureChannel] = []


class PeerFailure(RuntimeError):
    """Raised on a rank that waited for a peer which failed: ``origin`` is the global rank where the failure
    began and ``cause`` what it reported. A PeerFailure that escapes forwards that origin, not itself, so
    every rank names the same first failure."""

    def __init__(self, msg: str, origin: int, cause: str) -> None:
        super().__init__(msg)
        self.origin = origin
        self.cause = cause


def armed_channel() -> FailureChannel | None:
    """The channel of the process group now up (armed), or None: a failure then concerns this rank alone."""
    return _armed[0] if _armed else None


class FailureChannel:
    """The job's failure notices over ``comm`` (a communicator of every rank, used for nothing else)."""

    def __init__(self, mpi: ModuleType, comm: Comm) -> None:
        self._MPI = mpi
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        #: global rank -> (the rank where its failure began, what that one reported)
        self.failed: dict[int, tuple[int, str]] = {}
        self._buf = np.zeros(_NOTICE_BYTES, np.uint8)
        self._status = mpi.Status()
        self._recv: Any = comm.Irecv(self._buf, mpi.ANY_SOURCE, _TAG)
        self._sends: list[Any] = []
        # MPI forbids testing one request from two threads at once (two threads may wait on collectives)
        self._lock = threading.Lock()
        self._armed = 0
        self._aborters: list[Callable[[], None]] = []
        self._previous_hook: Callable[..., Any] | None = None
        # registered after mpi4py's own exit hook, so it runs first: MPI_Finalize must not find the
        # receive still posted
        atexit.register(self._close)

    # ------------------------------------------------------------------ hearing
    def poll(self) -> dict[int, tuple[int, str]]:
        """Take in the notices that have arrived; returns every failure heard of (global rank -> (origin,
        text))."""
        with self._lock:
            recv = self._recv
            while recv is not None and recv.Test(self._status):
                origin, _, text = bytes(self._buf).rstrip(b"\0").decode("utf-8", "replace").partition("\t")
                self.failed.setdefault(self._status.Get_source(), (int(origin), text))
                recv = self._recv = self.comm.Irecv(self._buf, self._MPI.ANY_SOURCE, _TAG)
        return self.failed

    # ------------------------------------------------------------------ failing
    def arm(self) -> None:
        """A process group that needs the others is up: an escaping exception now ends the whole job."""
        self._armed += 1
        if self._armed == 1 and self.size > 1:
            self._previous_hook = sys.excepthook
            sys.excepthook = self._excepthook
            _armed[:] = [self]

    def disarm(self) -> None:
        self._armed = max(0, self._armed - 1)
        if self._armed == 0 and self._previous_hook is not None:
            if sys.excepthook == self._excepthook:
                sys.excepthook = self._previous_hook
            self._previous_hook = None
            _armed.clear()

    @property
    def armed(self) -> bool:
        return self._armed > 0 and self.size > 1

    def add_aborter(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` (e.g. abort an NCCL communicator) before the job is aborted."""
        self._aborters.append(fn)

    def remove_aborter(self, fn: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._aborters.remove(fn)

    def _excepthook(self, typ: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        hook = self._previous_hook or sys.__excepthook__
        hook(typ, value, tb)
        if not self.armed:
            return
        if isinstance(value, PeerFailure):
            self.fail(value.cause, value.origin)
        self.fail(f"{typ.__name__}: {value}" if str(value) else typ.__name__)

    def fail(self, text: str, origin: int | None = None) -> NoReturn:
        """Tell every peer that this rank failed with ``text`` (a failure that began on rank ``origin``, this
        one by default), give them :data:`GRACE_S` seconds to report back, then abort the job."""
        with contextlib.suppress(Exception):  # a closed stream must not keep us from aborting
            sys.stdout.flush()
            sys.stderr.flush()
        note = np.zeros(_NOTICE_BYTES, np.uint8)
        first = self.rank if origin is None else origin
        raw = f"{first}\t{text}".encode("utf-8", "replace")[:_NOTICE_BYTES - 1]
        note[:len(raw)] = np.frombuffer(raw, np.uint8)
        # every peer, also those that failed first: they wait for this report to end their grace early
        for peer in range(self.size):
            if peer != self.rank:
                # a dead peer may refuse the message: the abort below stops the job all the same
                with contextlib.suppress(Exception):
                    self._sends.append(self.comm.Isend(note, peer, _TAG))
        deadline = time.monotonic() + GRACE_S
        with contextlib.suppress(Exception):
            while time.monotonic() < deadline and len(self.poll().keys() - {self.rank}) < self.size - 1:
                time.sleep(0.002)
        for fn in list(self._aborters):
            with contextlib.suppress(Exception):
                fn()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        self._MPI.COMM_WORLD.Abort(1)
        raise SystemExit(1)  # not reached: MPI_Abort does not return

    def _close(self) -> None:
        with self._lock:
            recv, self._recv = self._recv, None
        if recv is None:
            return
        with contextlib.suppress(Exception):
            recv.Cancel()
            recv.Wait()
