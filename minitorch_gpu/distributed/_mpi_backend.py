"""The MPI process group: mpi4py's non-blocking collectives on host arrays.

CPU tensors hold NumPy arrays, so a contiguous one is handed to MPI as it is and reduced in place. A
non-contiguous tensor, or one whose array is not NumPy (a CUDA tensor: this backend stages it through host
memory), goes through a contiguous host copy that is written back when the collective completes.
Dtypes MPI cannot reduce (bfloat16, float8) are reduced locally after an all-gather of their bytes.
"""
import atexit
import os
import threading
import time

import numpy as np

from ..autograd.function import bump_version
from .c10d import ProcessGroup, ReduceOp, Work, _spin_until

_R = ReduceOp


def _mpi():
    from mpi4py import MPI
    return MPI


def _host(t, copy_in=True):
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

    def write_back():
        be.copy_into(arr, be.asarray(host))

    return host, write_back


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


def _native(a):
    """Whether MPI has a datatype that can reduce this array's dtype."""
    return a.dtype.kind in "fiuc"


_NP_REDUCE = {_R.SUM: np.sum, _R.AVG: np.sum, _R.PRODUCT: np.prod, _R.MIN: np.min, _R.MAX: np.max,
              _R.BAND: np.bitwise_and.reduce, _R.BOR: np.bitwise_or.reduce, _R.BXOR: np.bitwise_xor.reduce}
# bool tensors reduce as bytes: a sum or max is a logical or, a product or min a logical and
_BOOL_OP = {_R.SUM: _R.MAX, _R.AVG: _R.MAX, _R.MAX: _R.MAX, _R.BOR: _R.MAX, _R.PRODUCT: _R.MIN, _R.MIN: _R.MIN,
            _R.BAND: _R.MIN, _R.BXOR: _R.BXOR}


def _divide(a, n):
    """a /= n in place; integers truncate toward zero (as NCCL's average does)."""
    if a.dtype.kind in "fc":
        np.divide(a, n, out=a)
    elif a.dtype.kind in "iu":
        q = np.abs(a) // n
        a[...] = np.where(a < 0, -q, q) if a.dtype.kind == "i" else q


def _local_reduce(stack, op, n):
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
    def __init__(self, pg, what, requests, outputs=(), keep=()):
        super().__init__(pg, what, outputs)
        self._reqs = requests
        self._keep = keep  # buffers MPI is still reading or writing
        self._mpi_done = False

    def _poll(self):
        # the progress thread may test the same requests: MPI forbids testing one request from two threads
        if self._mpi_done:
            return True
        with self._pg._req_lock:
            if not self._mpi_done and self._pg._MPI.Request.Testall(self._reqs):
                self._mpi_done = True
        return self._mpi_done


def _progress_interval():
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

    def __init__(self, interval):
        self.interval = interval
        self.pending = []
        self.cv = threading.Condition()
        self.stopped = False
        self.thread = None

    def add(self, work):
        with self.cv:
            if self.stopped:
                return
            self.pending.append(work)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="minitorch-mpi-progress", daemon=True)
                self.thread.start()
            self.cv.notify()

    def _run(self):
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
                except Exception:
                    w._mpi_done = False  # the waiting thread will meet the same error and report it
            with self.cv:
                self.pending = [w for w in self.pending if not w._mpi_done]
            sleep(self.interval)

    def stop(self):
        with self.cv:
            self.stopped = True
            self.pending = []
            self.cv.notify()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=5)


class MPIProcessGroup(ProcessGroup):
    """Collectives over an MPI communicator (``comm``), one non-blocking MPI call each."""

    backend = "mpi"

    def __init__(self, comm, ranks, timeout_s, group_rank=None):
        super().__init__(ranks, comm.Get_rank() if group_rank is None else group_rank, timeout_s)
        self.comm = comm
        self._MPI = _mpi()
        self._ops = {_R.SUM: self._MPI.SUM, _R.AVG: self._MPI.SUM, _R.PRODUCT: self._MPI.PROD,
                     _R.MIN: self._MPI.MIN, _R.MAX: self._MPI.MAX, _R.BAND: self._MPI.BAND,
                     _R.BOR: self._MPI.BOR, _R.BXOR: self._MPI.BXOR}
        self._req_lock = threading.Lock()
        interval = _progress_interval()
        self._progress = _ProgressThread(interval) if interval > 0 else None
        if self._progress is not None:
            # before MPI_Finalize (mpi4py's exit hook, registered earlier, runs after this one)
            atexit.register(self._progress.stop)

    # ------------------------------------------------------------------ plumbing
    def _wait(self, reqs, what):
        """Block (polling, with the group's deadline) until ``reqs`` complete."""
        Testall = self._MPI.Request.Testall
        _spin_until(lambda: Testall(reqs), self._timeout_s, lambda: self._raise_timeout(what, self._timeout_s))

    def _call(self, fn, *args):
        try:
            return fn(*args)
        except self._MPI.Exception as e:
            raise RuntimeError(f"MPI error: {e}") from None

    def _typed(self, a, op):
        """(buffer, MPI op) for reducing ``a`` with ``op`` natively."""
        if a.dtype == np.bool_:
            return a.view(np.uint8), self._ops[_BOOL_OP[op]]
        return a, self._ops[op]

    def _work(self, what, reqs, finish, outputs, keep):
        w = MPIWork(self, what, reqs, outputs, keep)
        w._add_finisher(finish)
        if self._progress is not None and not w._poll():
            self._progress.add(w)
        return w

    def _exchange_fingerprints(self, fp):
        rows = np.empty((self.size(), fp.size), np.int64)
        req = self._call(self.comm.Iallgather, fp, rows)
        self._wait([req], f"the debug fingerprint exchange before collective #{self._seq + 1}")
        return rows

    def _split(self, ranks):
        """The communicator of a new group over ``ranks`` (None on ranks outside it). Every rank calls this."""
        MPI = self._MPI
        # MPI_Comm_split blocks: make sure every peer is alive and here first, within the deadline
        req = self._call(self.comm.Ibarrier)
        self._wait([req], f"new_group (ranks {ranks})")
        me = self.rank()
        color = 0 if me in ranks else MPI.UNDEFINED
        sub = self.comm.Split(color, ranks.index(me) if me in ranks else 0)
        return None if sub == MPI.COMM_NULL else sub

    def _abort(self, code):
        self._MPI.COMM_WORLD.Abort(code)

    def _destroy(self):
        from . import c10d
        if self._progress is not None:
            self._progress.stop()
        if self.comm is not c10d._state["mpi_world"] and self._broken is None:
            try:
                self.comm.Free()
            except self._MPI.Exception:
                pass
        self._broken = "it was destroyed (destroy_process_group)"

    # ------------------------------------------------------------------ collectives
    def all_reduce(self, t, op, what):
        host, wb = _host(t)
        n = self.size()
        if not _native(host):
            return self._allgather_reduce(t, host, wb, op, what)
        buf, mop = self._typed(host, op)
        req = self._call(self.comm.Iallreduce, self._MPI.IN_PLACE, buf, mop)

        def finish():
            if op == _R.AVG and host.dtype != np.bool_:
                _divide(host, n)
            if wb is not None:
                wb()
            bump_version(t)

        return self._work(what, [req], finish, [t], (host,))

    def _allgather_reduce(self, t, host, wb, op, what, chunk=None, root=None):
        """Reduce by all-gathering the bytes and reducing locally: for dtypes without an MPI type. With
        ``chunk`` (reduce-scatter) the result is this rank's chunk; with ``root`` only that rank writes."""
        n = self.size()
        flat = np.ascontiguousarray(host).reshape(-1)
        stack = np.empty((n, flat.size), flat.dtype)
        req = self._call(self.comm.Iallgather, _bytes(flat), _bytes(stack))

        def finish():
            if root is not None and self.rank() != root:
                return
            r = _local_reduce(stack, op, n)
            if chunk is not None:
                out_host, out_wb, out_t = chunk
                k = out_host.size
                out_host.reshape(-1)[...] = r[self.rank() * k:(self.rank() + 1) * k]
                if out_wb is not None:
                    out_wb()
                bump_version(out_t)
                return
            host.reshape(-1)[...] = r
            if wb is not None:
                wb()
            bump_version(t)

        outputs = [chunk[2]] if chunk is not None else [t]
        return self._work(what, [req], finish, outputs, (stack, flat))

    def broadcast(self, t, root, what):
        host, wb = _host(t, copy_in=self.rank() == root)
        req = self._call(self.comm.Ibcast, _bytes(host), root)

        def finish():
            if self.rank() != root:
                if wb is not None:
                    wb()
                bump_version(t)

        return self._work(what, [req], finish, [t], (host,))

    def all_gather(self, outs, t, what):
        host, _ = _host(t)
        stack = np.empty((self.size(),) + host.shape, host.dtype)
        req = self._call(self.comm.Iallgather, _bytes(host), _bytes(stack))

        def finish():
            for i, o in enumerate(outs):
                o._be.copy_into(o._data, o._be.asarray(stack[i]))
                bump_version(o)

        return self._work(what, [req], finish, outs, (host, stack))

    def all_gather_into_tensor(self, out, inp, what):
        host_in, _ = _host(inp)
        host_out, wb = _host(out, copy_in=False)
        req = self._call(self.comm.Iallgather, _bytes(host_in), _bytes(host_out))

        def finish():
            if wb is not None:
                wb()
            bump_version(out)

        return self._work(what, [req], finish, [out], (host_in, host_out))

    def _reduce_scatter_flat(self, out, send, op, what):
        host_out, wb = _host(out, copy_in=False)
        n = self.size()
        if not _native(send):
            return self._allgather_reduce(out, send, None, op, what, chunk=(host_out, wb, out))
        sbuf, mop = self._typed(send, op)
        rbuf, _ = self._typed(host_out, op)
        req = self._call(self.comm.Ireduce_scatter_block, sbuf.reshape(-1), rbuf.reshape(-1), mop)

        def finish():
            if op == _R.AVG and host_out.dtype != np.bool_:
                _divide(host_out, n)
            if wb is not None:
                wb()
            bump_version(out)

        return self._work(what, [req], finish, [out], (send, host_out))

    def reduce_scatter(self, out, inputs, op, what):
        send = np.concatenate([_host(t)[0].reshape(-1) for t in inputs]) if inputs else np.empty(0)
        return self._reduce_scatter_flat(out, send, op, what)

    def reduce_scatter_tensor(self, out, inp, op, what):
        send, _ = _host(inp)
        return self._reduce_scatter_flat(out, send, op, what)

    def reduce(self, t, root, op, what):
        host, wb = _host(t)
        n = self.size()
        me = self.rank()
        if not _native(host):
            return self._allgather_reduce(t, host, wb, op, what, root=root)
        buf, mop = self._typed(host, op)
        if me == root:
            req = self._call(self.comm.Ireduce, self._MPI.IN_PLACE, buf, mop, root)
        else:
            req = self._call(self.comm.Ireduce, buf, None, mop, root)

        def finish():
            if me != root:
                return
            if op == _R.AVG and host.dtype != np.bool_:
                _divide(host, n)
            if wb is not None:
                wb()
            bump_version(t)

        return self._work(what, [req], finish, [t], (host,))

    def gather(self, t, outs, root, what):
        host, _ = _host(t)
        me = self.rank()
        stack = np.empty((self.size(),) + host.shape, host.dtype) if me == root else None
        req = self._call(self.comm.Igather, _bytes(host), _bytes(stack) if stack is not None else None, root)

        def finish():
            if me == root:
                for i, o in enumerate(outs):
                    o._be.copy_into(o._data, o._be.asarray(stack[i]))
                    bump_version(o)

        return self._work(what, [req], finish, outs, (host, stack))

    def scatter(self, t, ins, root, what):
        host, wb = _host(t, copy_in=False)
        me = self.rank()
        send = np.concatenate([_host(s)[0].reshape(-1) for s in ins]) if me == root else None
        req = self._call(self.comm.Iscatter, _bytes(send) if send is not None else None, _bytes(host), root)

        def finish():
            if wb is not None:
                wb()
            bump_version(t)

        return self._work(what, [req], finish, [t], (host, send))

    def barrier(self, what):
        req = self._call(self.comm.Ibarrier)
        return self._work(what, [req], lambda: None, [], ())

    def send(self, t, peer, tag, what):
        host, _ = _host(t)
        req = self._call(self.comm.Isend, _bytes(host), peer, tag)
        return self._work(what, [req], lambda: None, [t], (host,))

    def recv(self, t, peer, tag, what):
        host, wb = _host(t, copy_in=False)
        req = self._call(self.comm.Irecv, _bytes(host), peer, tag)

        def finish():
            if wb is not None:
                wb()
            bump_version(t)

        return self._work(what, [req], finish, [t], (host,))

    # ------------------------------------------------------------------ bytes (pickled objects)
    def broadcast_bytes(self, payload, root, what):
        me = self.rank()
        size = np.array([payload.size if me == root else 0], np.int64)
        req = self._call(self.comm.Ibcast, size, root)
        self._wait([req], what)
        buf = payload if me == root else np.empty(int(size[0]), np.uint8)
        req = self._call(self.comm.Ibcast, buf, root)
        self._wait([req], what)
        return buf

    def all_gather_bytes(self, payload, what):
        MPI = self._MPI
        sizes = np.empty(self.size(), np.int64)
        req = self._call(self.comm.Iallgather, np.array([payload.size], np.int64), sizes)
        self._wait([req], what)
        counts = [int(c) for c in sizes]
        displs = [0] * len(counts)
        for i in range(1, len(counts)):
            displs[i] = displs[i - 1] + counts[i - 1]
        recv = np.empty(sum(counts), np.uint8)
        req = self._call(self.comm.Iallgatherv, payload, [recv, (counts, displs), MPI.BYTE])
        self._wait([req], what)
        return [recv[d:d + c] for d, c in zip(displs, counts)]

    def gather_bytes(self, payload, root, what):
        MPI = self._MPI
        me = self.rank()
        sizes = np.empty(self.size(), np.int64) if me == root else None
        req = self._call(self.comm.Igather, np.array([payload.size], np.int64), sizes, root)
        self._wait([req], what)
        if me != root:
            req = self._call(self.comm.Igatherv, payload, None, root)
            self._wait([req], what)
            return None
        counts = [int(c) for c in sizes]
        displs = [0] * len(counts)
        for i in range(1, len(counts)):
            displs[i] = displs[i - 1] + counts[i - 1]
        recv = np.empty(sum(counts), np.uint8)
        req = self._call(self.comm.Igatherv, payload, [recv, (counts, displs), MPI.BYTE], root)
        self._wait([req], what)
        return [recv[d:d + c] for d, c in zip(displs, counts)]

    def scatter_bytes(self, payloads, root, what):
        MPI = self._MPI
        me = self.rank()
        size = np.empty(1, np.int64)
        counts = [int(p.size) for p in payloads] if me == root else None
        req = self._call(self.comm.Iscatter, np.array(counts, np.int64) if me == root else None, size, root)
        self._wait([req], what)
        recv = np.empty(int(size[0]), np.uint8)
        if me == root:
            displs = [0] * len(counts)
            for i in range(1, len(counts)):
                displs[i] = displs[i - 1] + counts[i - 1]
            send = np.concatenate(payloads) if payloads else np.empty(0, np.uint8)
            req = self._call(self.comm.Iscatterv, [send, (counts, displs), MPI.BYTE], recv, root)
        else:
            req = self._call(self.comm.Iscatterv, None, recv, root)
        self._wait([req], what)
        return recv
