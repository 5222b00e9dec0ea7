"""The MPI process group: mpi4py's non-blocking collectives on host arrays.

CPU tensors hold NumPy arrays, so a contiguous one is handed to MPI as it is and reduced in place. A
non-contiguous tensor, or one whose array is not NumPy (a CUDA tensor: this backend stages it through host
memory), goes through a contiguous host copy that is written back when the collective completes.
Dtypes MPI cannot reduce (bfloat16, float8) are reduced locally after an all-gather of their bytes.

Every process group of either backend is built on a split of one duplicate of ``COMM_WORLD`` (see
:func:`world_comm`), so a script's own mpi4py traffic never interleaves with ours; a second duplicate carries
the failure notices of ``_failures`` (armed while the default group exists).
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..autograd.function import bump_version
from ._failures import FailureChannel, PeerFailure
from ._process_group import BOOL_REDUCE_OP, Backend, ProcessGroup, ReduceOp, Work, spin_until

if TYPE_CHECKING:
    from mpi4py.MPI import Comm, Op, Request

    from ..tensor import Tensor
    from ._process_group import DeviceId, _RedOpType

_R = ReduceOp


def _mpi() -> ModuleType:
    # mpi4py is imported on first use, not with this module: importing it initialises MPI, and importing
    # minitorch_gpu must not (a plain script may never call init_process_group)
    try:
        from mpi4py import MPI
    except ImportError:
        raise RuntimeError("distributed training needs mpi4py and an MPI library: "
                           "pip install 'minitorch_gpu[mpi]' (mpi4py + the mpich wheel)") from None
    return MPI


def is_available() -> bool:
    """Whether mpi4py is installed (without importing it, which would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


_world: list[Comm] = []
_channel: list[FailureChannel] = []


def world_comm() -> Comm:
    """This job's own duplicate of ``COMM_WORLD``, made on first use and kept for the life of the process (a
    default group destroyed and created again reuses it). Every rank makes it (in ``init_process_group``),
    and with it the job's failure channel."""
    if not _world:
        MPI = _mpi()
        _world.append(MPI.COMM_WORLD.Dup())
        _channel.append(FailureChannel(MPI, MPI.COMM_WORLD.Dup()))
    return _world[0]


def failure_channel() -> FailureChannel:
    """The job's failure notices (see ``_failures``)."""
    world_comm()
    return _channel[0]


def _host(t: Tensor, copy_in: bool = True) -> tuple[np.ndarray, Callable[[], None] | None]:
    """A contiguous NumPy array holding ``t``'s data (``t``'s own array when possible) and the function that
    writes it back into ``t`` (None when it is ``t``'s own array)."""
    arr = t._data
    if isinstance(arr, np.ndarray) and arr.flags.c_contiguous:
        return arr, None
    be = t._be
    if copy_in:
        host = np.ascontiguousarray(be.to_numpy(arr))
        if host is arr:
            host = host.copy()
    else:
        host = np.empty(arr.shape, arr.dtype)

    def write_back() -> None:
        be.copy_into(arr, be.asarray(host))

    return host, write_back


def _bytes(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1).view(np.uint8)


def _native(a: np.ndarray) -> bool:
    """Whether MPI has a datatype that can reduce this array's dtype."""
    return a.dtype.kind in "fiuc"


_NP_REDUCE: dict[_RedOpType, Callable[..., np.ndarray]] = {
    _R.SUM: np.sum, _R.AVG: np.sum, _R.PRODUCT: np.prod, _R.MIN: np.min, _R.MAX: np.max,
    _R.BAND: np.bitwise_and.reduce, _R.BOR: np.bitwise_or.reduce, _R.BXOR: np.bitwise_xor.reduce}


def divide(a: Any, n: int, xp: ModuleType = np) -> None:
    """a /= n in place for a NumPy (or, with ``xp=cupy``, CuPy) array of numbers (not bool); integers
    truncate toward zero (as NCCL's average does)."""
    if a.dtype.kind in "iu":
        q = xp.abs(a) // n
        a[...] = xp.where(a < 0, -q, q) if a.dtype.kind == "i" else q
    else:
        xp.divide(a, n, out=a)


def _publish(t: Tensor, write_back: Callable[[], None] | None) -> None:
    """Make a finished collective's result visible in ``t``: copy the host buffer back when it was a copy, and
    bump the version so that autograd sees that ``t`` changed."""
    if write_back is not None:
        write_back()
    bump_version(t)


def _displacements(counts: list[int]) -> list[int]:
    """Where each rank's part starts in a buffer of the parts laid end to end."""
    displs = [0] * len(counts)
    for i in range(1, len(counts)):
        displs[i] = displs[i - 1] + counts[i - 1]
    return displs


def _local_reduce(stack: np.ndarray, op: _RedOpType, n: int) -> np.ndarray:
    """Reduce the rank axis of ``stack`` (for dtypes MPI cannot reduce); float math in float32."""
    if stack.dtype.kind == "V" or stack.dtype == np.float16:
        work = stack.astype(np.float32)
    else:
        work = stack
    if op in (_R.BAND, _R.BOR, _R.BXOR) and work.dtype.kind == "f":
        raise RuntimeError(f"ReduceOp.{op.name} is not defined for floating-point tensors")
    r = _NP_REDUCE[op](work, axis=0)
    if op == _R.AVG:
        r = r / n
    return r.astype(stack.dtype)


class MPIWork(Work):
    _pg: MPIProcessGroup

    def __init__(self, pg: MPIProcessGroup, what: str, requests: list[Request], outputs: Sequence[Tensor] = (),
                 keep: tuple[object, ...] = ()) -> None:
        super().__init__(pg, what, outputs)
        self._reqs = requests
        self._keep = keep  # buffers MPI is still reading or writing
        self._mpi_done = False

    def _poll(self) -> bool:
        # the progress thread may test the same requests: MPI forbids testing one request from two threads
        if self._mpi_done:
            return True
        with self._pg._req_lock:
            if not self._mpi_done and self._pg._MPI.Request.Testall(self._reqs):
                self._mpi_done = True
        return self._mpi_done


def _progress_interval() -> float:
    """Seconds between the progress thread's polls (``MINITORCH_MPI_PROGRESS_US``, default 500; 0: no thread)."""
    raw = os.environ.get("MINITORCH_MPI_PROGRESS_US", "500")
    try:
        us = float(raw)
    except ValueError:
        raise ValueError(f"MINITORCH_MPI_PROGRESS_US must be a number of microseconds, got {raw!r}") from None
    return us * 1e-6


class _ProgressThread:
    """Drives pending non-blocking collectives while the caller computes.

    MPI only advances a non-blocking collective inside MPI calls; without them an all-reduce started during
    backward would sit still until backward ends and waits for it, and nothing would overlap. This thread
    tests the pending requests every ``interval`` seconds (NumPy's kernels release the GIL, so it runs while
    backward computes). It only completes the MPI requests; the results are written back into the tensors
    by the thread that waits on (or polls) the Work."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.pending: list[MPIWork] = []
        self.cv = threading.Condition()
        self.stopped = False
        self.thread: threading.Thread | None = None

    def add(self, work: MPIWork) -> None:
        with self.cv:
            if self.stopped:
                return
            self.pending.append(work)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="minitorch-mpi-progress", daemon=True)
                self.thread.start()
            self.cv.notify()

    def _run(self) -> None:
        sleep = time.sleep
        while True:
            with self.cv:
                while not self.pending and not self.stopped:
                    self.cv.wait()
                if self.stopped:
                    return
                works = list(self.pending)
            for w in works:
                try:
                    w._poll()
                except Exception:  # noqa: BLE001 - whatever it is, the waiting thread raises it
                    w._mpi_done = False  # the waiting thread will meet the same error and report it
            with self.cv:
                self.pending = [w for w in self.pending if not w._mpi_done]
            sleep(self.interval)

    def stop(self) -> None:
        with self.cv:
            self.stopped = True
            self.pending = []
            self.cv.notify()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=5)


class MPIProcessGroup(ProcessGroup):
    """Collectives over an MPI communicator (``comm``), one non-blocking MPI call each."""

    backend = "mpi"

    def __init__(self, comm: Comm, ranks: Sequence[int], timeout_s: float,
                 group_rank: int | None = None) -> None:
        super().__init__(ranks, comm.Get_rank() if group_rank is None else group_rank, timeout_s)
        self.comm = comm
        self._MPI = _mpi()
        self._ops = {_R.SUM: self._MPI.SUM, _R.AVG: self._MPI.SUM, _R.PRODUCT: self._MPI.PROD,
                     _R.MIN: self._MPI.MIN, _R.MAX: self._MPI.MAX, _R.BAND: self._MPI.BAND,
                     _R.BOR: self._MPI.BOR, _R.BXOR: self._MPI.BXOR}
        self._req_lock = threading.Lock()
        self._failures = failure_channel()
        # the default group arms the failure channel: an escaping exception then ends the job on every rank
        self._arms = group_rank is None and self.size() > 1
        if self._arms:
            self._failures.arm()
        interval = _progress_interval()
        self._progress = _ProgressThread(interval) if interval > 0 else None
        if self._progress is not None:
            # before MPI_Finalize (mpi4py's exit hook, registered earlier, runs after this one)
            atexit.register(self._progress.stop)

    # ------------------------------------------------------------------ plumbing
    def _wait(self, reqs: list[Request], what: str) -> None:
        """Block (polling, with the group's deadline) until ``reqs`` complete."""
        Testall = self._MPI.Request.Testall
        spin_until(lambda: Testall(reqs), self._timeout_s, lambda: self._raise_timeout(what, self._timeout_s),
                   lambda: self._peer_failure(what))

    def _peer_failure(self, what: str) -> Callable[[], None] | None:
        failed = self._failures.poll()
        for r in self.ranks if failed else ():
            if r in failed:
                origin, cause = failed[r]
                msg = f"[rank {self._global_rank()}] rank {origin} failed, so {what} cannot complete: {cause}"
                return lambda: self._break(msg, PeerFailure(msg, origin, cause))
        return None

    def _call(self, fn: Callable[..., Request], *args: Any) -> Request:
        try:
            return fn(*args)
        except self._MPI.Exception as e:
            raise RuntimeError(f"MPI error: {e}") from None

    def _start(self, what: str, fn: Callable[..., Request], *args: Any) -> None:
        """Run one non-blocking MPI call and wait for it (the byte collectives complete before returning)."""
        self._wait([self._call(fn, *args)], what)

    def _typed(self, a: np.ndarray, op: _RedOpType) -> tuple[np.ndarray, Op]:
        """(buffer, MPI op) for reducing ``a`` with ``op`` natively."""
        if a.dtype == np.bool_:
            return a.view(np.uint8), self._ops[BOOL_REDUCE_OP[op]]
        return a, self._ops[op]

    def _work(self, what: str, reqs: list[Request], finish: Callable[[], None], outputs: Sequence[Tensor],
              keep: tuple[object, ...]) -> MPIWork:
        w = MPIWork(self, what, reqs, outputs, keep)
        w._add_finisher(finish)
        if self._progress is not None and not w._poll():
            self._progress.add(w)
        return w

    # a wait in the check is reported as a wait for the collective: to the caller it is part of it
    def _exchange_fingerprints(self, fp: np.ndarray, what: str) -> np.ndarray:
        rows = np.empty((self.size(), fp.size), np.int64)
        self._start(what, self.comm.Iallgather, fp, rows)
        return rows

    def _max_fingerprints(self, both: np.ndarray, what: str) -> None:
        self._start(what, self.comm.Iallreduce, self._MPI.IN_PLACE, both, self._MPI.MAX)

    def _split(self, ranks: list[int]) -> Comm | None:
        MPI = self._MPI
        # MPI_Comm_split blocks: make sure every peer is alive and here first, within the deadline
        self._start(f"new_group (ranks {ranks})", self.comm.Ibarrier)
        me = self.rank()
        color = 0 if me in ranks else MPI.UNDEFINED
        sub = self.comm.Split(color, ranks.index(me) if me in ranks else 0)
        return None if sub == MPI.COMM_NULL else sub

    def _abort(self, code: int) -> None:
        self._MPI.COMM_WORLD.Abort(code)

    def _destroy(self) -> None:
        if self._arms:
            self._arms = False
            self._failures.disarm()
        if self._progress is not None:
            self._progress.stop()
        # the world duplicate outlives its groups: a later init_process_group builds on it again
        if not (_world and self.comm is _world[0]) and self._broken is None:
            try:
                self.comm.Free()
            except self._MPI.Exception:
                pass
        self._broken = "it was destroyed (destroy_process_group)"

    # ------------------------------------------------------------------ collectives
    def _reduced(self, t: Tensor, host: np.ndarray, wb: Callable[[], None] | None, op: _RedOpType,
                 only: int | None = None) -> Callable[[], None]:
        """The finisher of a native reduction into ``host``: average, then publish into ``t`` (on rank
        ``only`` alone when given)."""
        n = self.size()

        def finish() -> None:
            if only is not None and self.rank() != only:
                return
            if op == _R.AVG and host.dtype != np.bool_:
                divide(host, n)
            _publish(t, wb)

        return finish

    def all_reduce(self, t: Tensor, op: _RedOpType, what: str) -> Work:
        host, wb = _host(t)
        if not _native(host):
            return self._allgather_reduce(t, host, wb, op, what)
        buf, mop = self._typed(host, op)
        req = self._call(self.comm.Iallreduce, self._MPI.IN_PLACE, buf, mop)
        return self._work(what, [req], self._reduced(t, host, wb, op), [t], (host,))

    def _allgather_reduce(self, t: Tensor, host: np.ndarray, wb: Callable[[], None] | None, op: _RedOpType,
                          what: str, chunk: tuple[np.ndarray, Callable[[], None] | None, Tensor] | None = None,
                          root: int | None = None) -> Work:
        """Reduce by all-gathering the bytes and reducing locally: for dtypes without an MPI type. With
        ``chunk`` (reduce-scatter) the result is this rank's chunk; with ``root`` only that rank writes."""
        n = self.size()
        flat = np.ascontiguousarray(host).reshape(-1)
        stack = np.empty((n, flat.size), flat.dtype)
        req = self._call(self.comm.Iallgather, _bytes(flat), _bytes(stack))

        def finish() -> None:
            if root is not None and self.rank() != root:
                return
            r = _local_reduce(stack, op, n)
            if chunk is not None:
                out_host, out_wb, out_t = chunk
                k = out_host.size
                out_host.reshape(-1)[...] = r[self.rank() * k:(self.rank() + 1) * k]
                _publish(out_t, out_wb)
                return
            host.reshape(-1)[...] = r
            _publish(t, wb)

        outputs = [chunk[2]] if chunk is not None else [t]
        return self._work(what, [req], finish, outputs, (stack, flat))

    def broadcast(self, t: Tensor, root: int, what: str) -> Work:
        host, wb = _host(t, copy_in=self.rank() == root)
        req = self._call(self.comm.Ibcast, _bytes(host), root)

        def finish() -> None:
            if self.rank() != root:
                _publish(t, wb)

        return self._work(what, [req], finish, [t], (host,))

    def _copy_rows(self, outs: list[Tensor], stack: np.ndarray | None) -> Callable[[], None]:
        """The finisher that copies row ``i`` of a gathered ``stack`` into ``outs[i]`` (nothing without one)."""
        def finish() -> None:
            if stack is None:
                return
            for i, o in enumerate(outs):
                o._be.copy_into(o._data, o._be.asarray(stack[i]))
                bump_version(o)

        return finish

    def all_gather(self, outs: list[Tensor], t: Tensor, what: str) -> Work:
        host, _ = _host(t)
        stack = np.empty((self.size(),) + host.shape, host.dtype)
        req = self._call(self.comm.Iallgather, _bytes(host), _bytes(stack))
        return self._work(what, [req], self._copy_rows(outs, stack), outs, (host, stack))

    def all_gather_into_tensor(self, out: Tensor, inp: Tensor, what: str) -> Work:
        host_in, _ = _host(inp)
        host_out, wb = _host(out, copy_in=False)
        req = self._call(self.comm.Iallgather, _bytes(host_in), _bytes(host_out))
        return self._work(what, [req], lambda: _publish(out, wb), [out], (host_in, host_out))

    def _reduce_scatter_flat(self, out: Tensor, send: np.ndarray, op: _RedOpType, what: str) -> Work:
        host_out, wb = _host(out, copy_in=False)
        if not _native(send):
            return self._allgather_reduce(out, send, None, op, what, chunk=(host_out, wb, out))
        sbuf, mop = self._typed(send, op)
        rbuf, _ = self._typed(host_out, op)
        req = self._call(self.comm.Ireduce_scatter_block, sbuf.reshape(-1), rbuf.reshape(-1), mop)
        return self._work(what, [req], self._reduced(out, host_out, wb, op), [out], (send, host_out))

    def reduce_scatter(self, out: Tensor, inputs: list[Tensor], op: _RedOpType, what: str) -> Work:
        send = np.concatenate([_host(t)[0].reshape(-1) for t in inputs]) if inputs else np.empty(0)
        return self._reduce_scatter_flat(out, send, op, what)

    def reduce_scatter_tensor(self, out: Tensor, inp: Tensor, op: _RedOpType, what: str) -> Work:
        send, _ = _host(inp)
        return self._reduce_scatter_flat(out, send, op, what)

    def reduce(self, t: Tensor, root: int, op: _RedOpType, what: str) -> Work:
        host, wb = _host(t)
        if not _native(host):
            return self._allgather_reduce(t, host, wb, op, what, root=root)
        buf, mop = self._typed(host, op)
        if self.rank() == root:
            req = self._call(self.comm.Ireduce, self._MPI.IN_PLACE, buf, mop, root)
        else:
            req = self._call(self.comm.Ireduce, buf, None, mop, root)
        return self._work(what, [req], self._reduced(t, host, wb, op, only=root), [t], (host,))

    def gather(self, t: Tensor, outs: list[Tensor], root: int, what: str) -> Work:
        host, _ = _host(t)
        stack = np.empty((self.size(),) + host.shape, host.dtype) if self.rank() == root else None
        req = self._call(self.comm.Igather, _bytes(host), _bytes(stack) if stack is not None else None, root)
        return self._work(what, [req], self._copy_rows(outs, stack), outs, (host, stack))

    def scatter(self, t: Tensor, ins: list[Tensor], root: int, what: str) -> Work:
        host, wb = _host(t, copy_in=False)
        send = np.concatenate([_host(s)[0].reshape(-1) for s in ins]) if self.rank() == root else None
        req = self._call(self.comm.Iscatter, _bytes(send) if send is not None else None, _bytes(host), root)
        return self._work(what, [req], lambda: _publish(t, wb), [t], (host, send))

    def barrier(self, what: str) -> Work:
        req = self._call(self.comm.Ibarrier)
        return self._work(what, [req], lambda: None, [], ())

    def send(self, t: Tensor, peer: int, tag: int, what: str) -> Work:
        host, _ = _host(t)
        req = self._call(self.comm.Isend, _bytes(host), peer, tag)
        return self._work(what, [req], lambda: None, [t], (host,))

    def recv(self, t: Tensor, peer: int, tag: int, what: str) -> Work:
        host, wb = _host(t, copy_in=False)
        req = self._call(self.comm.Irecv, _bytes(host), peer, tag)
        return self._work(what, [req], lambda: _publish(t, wb), [t], (host,))

    # ------------------------------------------------------------------ bytes (pickled objects)
    def broadcast_bytes(self, payload: np.ndarray | None, root: int, what: str) -> np.ndarray:
        me = self.rank()
        size = np.array([payload.size if payload is not None and me == root else 0], np.int64)
        self._start(what, self.comm.Ibcast, size, root)
        buf = payload if payload is not None and me == root else np.empty(int(size[0]), np.uint8)
        self._start(what, self.comm.Ibcast, buf, root)
        return buf

    def _split_parts(self, sizes: np.ndarray) -> tuple[np.ndarray, list[int], list[int]]:
        """A receive buffer for parts of the given byte sizes laid end to end, with their counts and offsets."""
        counts = [int(c) for c in sizes]
        return np.empty(sum(counts), np.uint8), counts, _displacements(counts)

    def all_gather_bytes(self, payload: np.ndarray, what: str) -> list[np.ndarray]:
        sizes = np.empty(self.size(), np.int64)
        self._start(what, self.comm.Iallgather, np.array([payload.size], np.int64), sizes)
        recv, counts, displs = self._split_parts(sizes)
        self._start(what, self.comm.Iallgatherv, payload, [recv, (counts, displs), self._MPI.BYTE])
        return [recv[d:d + c] for d, c in zip(displs, counts)]

    def gather_bytes(self, payload: np.ndarray, root: int, what: str) -> list[np.ndarray] | None:
        if self.rank() != root:
            self._start(what, self.comm.Igather, np.array([payload.size], np.int64), None, root)
            self._start(what, self.comm.Igatherv, payload, None, root)
            return None
        sizes = np.empty(self.size(), np.int64)
        self._start(what, self.comm.Igather, np.array([payload.size], np.int64), sizes, root)
        recv, counts, displs = self._split_parts(sizes)
        self._start(what, self.comm.Igatherv, payload, [recv, (counts, displs), self._MPI.BYTE], root)
        return [recv[d:d + c] for d, c in zip(displs, counts)]

    def scatter_bytes(self, payloads: list[np.ndarray] | None, root: int, what: str) -> np.ndarray:
        size = np.empty(1, np.int64)
        if payloads is None or self.rank() != root:
            self._start(what, self.comm.Iscatter, None, size, root)
            recv = np.empty(int(size[0]), np.uint8)
            self._start(what, self.comm.Iscatterv, None, recv, root)
            return recv
        counts = [int(p.size) for p in payloads]
        self._start(what, self.comm.Iscatter, np.array(counts, np.int64), size, root)
        recv = np.empty(int(size[0]), np.uint8)
        send = np.concatenate(payloads) if payloads else np.empty(0, np.uint8)
        self._start(what, self.comm.Iscatterv, [send, (counts, _displacements(counts)), self._MPI.BYTE], recv, root)
        return recv


def _create(comm: Comm, ranks: list[int], timeout_s: float, *, group_rank: int | None,
            device_id: DeviceId) -> MPIProcessGroup:
    return MPIProcessGroup(comm, ranks, timeout_s, group_rank)


Backend.register_backend(Backend.MPI, _create, world=world_comm, devices=("cpu", "cuda"), available=is_available)
