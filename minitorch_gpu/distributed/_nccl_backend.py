"""The NCCL process group: CuPy's NCCL bindings on CUDA tensors, bootstrapped over MPI.

Rank 0 creates the NCCL unique id and broadcasts it over the group's MPI communicator; every rank then
builds its ``NcclCommunicator`` on its GPU. Collectives are enqueued on the current CUDA stream (so they are
ordered with the kernels around them) and followed by an event; a Work is complete when its event is. Any
copy a collective needs (a non-contiguous tensor, the tensors of a list) is enqueued on the same stream right
after it, so nothing is left for the host to do at completion. Picklable objects, fingerprints and group
creation go over the MPI communicator.

Without a GPU this module cannot run (it is imported only for ``backend="nccl"``).
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from .. import cuda
from .._device import device as _device
from ..autograd.function import bump_version
from ._mpi_backend import MPIProcessGroup, divide, world_comm
from ._mpi_backend import is_available as _mpi_available
from ._process_group import BOOL_REDUCE_OP, Backend, ProcessGroup, ReduceOp, Work

if TYPE_CHECKING:
    from mpi4py.MPI import Comm

    from ..tensor import Tensor
    from ._process_group import DeviceId, _RedOpType

_R = ReduceOp


def _cupy() -> tuple[ModuleType, ModuleType]:
    """CuPy and its NCCL bindings; RuntimeError saying what to use instead when there is no GPU."""
    if cuda.is_simulated() or not cuda.is_available():
        raise RuntimeError("the nccl backend needs NVIDIA GPUs with CuPy (pip install 'minitorch_gpu[cuda12]'); "
                           "use backend='mpi' on CPUs or the simulated device")
    # imported on use: CuPy is an optional extra, and a CPU-only install must import this module
    import cupy
    from cupy.cuda import nccl
    return cupy, nccl


def is_available() -> bool:
    """Whether NCCL can run here: MPI (to bootstrap), a real GPU and a CuPy built with NCCL."""
    if not _mpi_available():
        return False
    if not cuda.is_available() or cuda.is_simulated():
        return False
    try:
        from cupy.cuda import nccl
        return nccl.available if hasattr(nccl, "available") else True
    except Exception:  # noqa: BLE001 - a CuPy without NCCL fails to import in more ways than one
        return False


def _require() -> None:
    _cupy()


def _dtype_table(nccl: ModuleType) -> dict[np.dtype, int]:
    table: dict[np.dtype, int] = {np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
             np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int8): nccl.NCCL_INT8,
             np.dtype(np.uint8): nccl.NCCL_UINT8, np.dtype(np.int32): nccl.NCCL_INT32,
             np.dtype(np.uint32): nccl.NCCL_UINT32, np.dtype(np.int64): nccl.NCCL_INT64,
             np.dtype(np.uint64): nccl.NCCL_UINT64, np.dtype(np.bool_): nccl.NCCL_UINT8}
    # ncclBfloat16 is 9 in every NCCL since 2.10; older CuPy builds do not name it
    table[np.dtype(ml_dtypes.bfloat16)] = getattr(nccl, "NCCL_BFLOAT16", 9)
    return table


class NCCLWork(Work):
    _pg: NCCLProcessGroup

    def __init__(self, pg: NCCLProcessGroup, what: str, event: Any, outputs: Sequence[Tensor] = (),
                 keep: tuple[object, ...] = ()) -> None:
        super().__init__(pg, what, outputs)
        self._event = event
        self._keep = keep

    def _poll(self) -> bool:
        if self._event.done:
            return True
        # a failed peer shows up as an asynchronous NCCL error: raise it instead of waiting for the deadline
        self._pg._nccl.check_async_error()
        return False

    def _on_timeout(self) -> None:
        self._pg._abort_nccl()

    def _finish(self) -> None:
        super()._finish()
        # later work on the caller's current stream must see the result
        self._pg._cupy.cuda.get_current_stream().wait_event(self._event)


class _Grouped:
    """``with _Grouped(nccl):`` brackets point-to-point calls in ``groupStart``/``groupEnd`` so that NCCL
    runs them as one operation (a root's sends and receives would deadlock one by one)."""

    def __init__(self, nccl: ModuleType) -> None:
        self._nccl = nccl

    def __enter__(self) -> None:
        self._nccl.groupStart()

    def __exit__(self, *exc: object) -> None:
        self._nccl.groupEnd()


class NCCLProcessGroup(ProcessGroup):
    """Collectives over an NCCL communicator, one GPU per rank."""

    backend = "nccl"

    def __init__(self, comm: Comm, ranks: Sequence[int], timeout_s: float, group_rank: int | None = None,
                 device_id: DeviceId = None) -> None:
        self._mpi_pg = MPIProcessGroup(comm, ranks, timeout_s, group_rank)
        super().__init__(ranks, self._mpi_pg.rank(), timeout_s)
        cupy, nccl = _cupy()
        self._cupy = cupy
        self._nccl_mod = nccl
        if device_id is not None:
            # device sets its fields through object.__setattr__ (it is immutable), hidden from the type checker
            dev = device_id if isinstance(device_id, int) else (
                _device(device_id).index or 0)  # type: ignore[attr-defined]
        elif getattr(cuda._state, "index", None) is not None:
            dev = cuda.current_device()
        else:
            # the user did not pick a GPU: spread the ranks of a node over its GPUs
            local = comm.Split_type(self._mpi_pg._MPI.COMM_TYPE_SHARED)
            dev = local.Get_rank() % cuda.device_count()
            local.Free()
        cuda.set_device(dev)
        self.device_index = dev
        uid = np.zeros(128, np.int8)
        if self.rank() == 0:
            uid[:] = np.array(nccl.get_unique_id(), dtype=np.int64).astype(np.int8)
        data = self._mpi_pg.broadcast_bytes(uid.view(np.uint8), 0, "the NCCL unique id broadcast")
        uid = data.view(np.int8)
        with cupy.cuda.Device(dev):
            self._nccl = nccl.NcclCommunicator(self.size(), tuple(int(x) for x in uid), self.rank())
        self._mpi_pg._failures.add_aborter(self._abort_nccl)
        self._dtypes = _dtype_table(nccl)
        self._ops = {_R.SUM: nccl.NCCL_SUM, _R.AVG: nccl.NCCL_SUM, _R.PRODUCT: nccl.NCCL_PROD,
                     _R.MIN: nccl.NCCL_MIN, _R.MAX: nccl.NCCL_MAX}

    # ------------------------------------------------------------------ plumbing
    def _abort_nccl(self) -> None:
        # best effort: the communicator may already be broken, and the caller is about to raise anyway
        with contextlib.suppress(Exception):
            self._nccl.abort()

    def _abort(self, code: int) -> None:
        self._abort_nccl()
        self._mpi_pg._abort(code)

    def _peer_failure(self, what: str) -> Callable[[], None] | None:
        fail = self._mpi_pg._peer_failure(what)
        if fail is None:
            return None

        def abort_and_fail() -> None:
            try:
                fail()
            except RuntimeError as e:
                # kernels waiting on the failed peer would never finish
                self._abort_nccl()
                self._break(str(e), e)

        return abort_and_fail

    def _destroy(self) -> None:
        self._mpi_pg._failures.remove_aborter(self._abort_nccl)
        if self._broken is None:
            self._nccl.destroy()
        self._mpi_pg._destroy()
        self._broken = "it was destroyed (destroy_process_group)"

    def _exchange_fingerprints(self, fp: np.ndarray, what: str) -> np.ndarray:
        return self._mpi_pg._exchange_fingerprints(fp, what)

    def _max_fingerprints(self, both: np.ndarray, what: str) -> None:
        self._mpi_pg._max_fingerprints(both, what)

    def _split(self, ranks: list[int]) -> Comm | None:
        return self._mpi_pg._split(ranks)

    def _check(self, t: Tensor) -> None:
        if t.device.type != "cuda":
            raise RuntimeError(f"Tensors must be CUDA and dense (the nccl backend got a tensor on {t.device}); "
                               "use a process group with backend='mpi' for CPU tensors")
        if t.device.index != self.device_index:
            raise RuntimeError(f"the nccl process group of this rank runs on cuda:{self.device_index}, but got a "
                               f"tensor on {t.device}")

    def _dt(self, arr: Any) -> int:
        try:
            return self._dtypes[arr.dtype]
        except KeyError:
            raise RuntimeError(f"the nccl backend does not support dtype {arr.dtype}") from None

    def _op(self, op: _RedOpType, arr: Any) -> int:
        if arr.dtype == np.bool_:
            op = BOOL_REDUCE_OP[op]
        if op not in self._ops:
            raise RuntimeError(f"the nccl backend does not support ReduceOp.{op.name}")
        return self._ops[op]

    def _contig(self, t: Tensor) -> tuple[Any, Any]:
        """(contiguous device array, the tensor's array or None when they are the same)."""
        arr = t._data
        if arr.flags.c_contiguous:
            return arr, None
        return self._cupy.ascontiguousarray(arr), arr

    def _stream(self) -> Any:
        return self._cupy.cuda.get_current_stream()

    def _done(self, what: str, outputs: Sequence[Tensor], keep: tuple[object, ...] = ()) -> NCCLWork:
        ev = self._cupy.cuda.Event(disable_timing=True)
        ev.record(self._stream())
        for t in outputs:
            bump_version(t)
        return NCCLWork(self, what, ev, outputs, keep)

    def _avg(self, arr: Any, op: _RedOpType) -> None:
        if op == _R.AVG and arr.dtype != np.bool_:
            divide(arr, self.size(), self._cupy)

    def _write_back(self, t: Tensor, orig: Any, buf: Any) -> None:
        """Copy a collective's result from the contiguous stand-in ``buf`` into ``t``'s own array ``orig`` (on
        the stream, right after the collective); nothing when ``buf`` was ``t``'s array."""
        if orig is not None:
            t._be.copy_into(orig, buf)

    # ------------------------------------------------------------------ collectives
    def all_reduce(self, t: Tensor, op: _RedOpType, what: str) -> Work:
        self._check(t)
        buf, orig = self._contig(t)
        s = self._stream()
        self._nccl.allReduce(buf.data.ptr, buf.data.ptr, buf.size, self._dt(buf), self._op(op, buf), s.ptr)
        self._avg(buf, op)
        self._write_back(t, orig, buf)
        return self._done(what, [t], (buf,))

    def broadcast(self, t: Tensor, root: int, what: str) -> Work:
        self._check(t)
        buf, orig = self._contig(t)
        self._nccl.bcast(buf.data.ptr, buf.size, self._dt(buf), root, self._stream().ptr)
        self._write_back(t, orig, buf)
        return self._done(what, [t], (buf,))

    def _gather_flat(self, inp: Tensor) -> tuple[Any, Any]:
        src, _ = self._contig(inp)
        out = self._cupy.empty((self.size(),) + src.shape, src.dtype)
        self._nccl.allGather(src.data.ptr, out.data.ptr, src.size, self._dt(src), self._stream().ptr)
        return src, out

    def all_gather(self, outs: list[Tensor], t: Tensor, what: str) -> Work:
        self._check(t)
        for o in outs:
            self._check(o)
        src, stack = self._gather_flat(t)
        for i, o in enumerate(outs):
            o._be.copy_into(o._data, stack[i])
        return self._done(what, outs, (src, stack))

    def all_gather_into_tensor(self, out: Tensor, inp: Tensor, what: str) -> Work:
        self._check(out)
        self._check(inp)
        src, _ = self._contig(inp)
        dst, orig = self._contig(out)
        self._nccl.allGather(src.data.ptr, dst.data.ptr, src.size, self._dt(src), self._stream().ptr)
        self._write_back(out, orig, dst)
        return self._done(what, [out], (src, dst))

    def _reduce_scatter_flat(self, out: Tensor, send: Any, op: _RedOpType, what: str) -> Work:
        dst, orig = self._contig(out)
        self._nccl.reduceScatter(send.data.ptr, dst.data.ptr, dst.size, self._dt(dst), self._op(op, dst),
                                 self._stream().ptr)
        self._avg(dst, op)
        self._write_back(out, orig, dst)
        return self._done(what, [out], (send, dst))

    def reduce_scatter(self, out: Tensor, inputs: list[Tensor], op: _RedOpType, what: str) -> Work:
        self._check(out)
        for t in inputs:
            self._check(t)
        send = self._cupy.concatenate([self._contig(t)[0].reshape(-1) for t in inputs])
        return self._reduce_scatter_flat(out, send, op, what)

    def reduce_scatter_tensor(self, out: Tensor, inp: Tensor, op: _RedOpType, what: str) -> Work:
        self._check(out)
        self._check(inp)
        return self._reduce_scatter_flat(out, self._contig(inp)[0], op, what)

    def reduce(self, t: Tensor, root: int, op: _RedOpType, what: str) -> Work:
        self._check(t)
        buf, orig = self._contig(t)
        if self.rank() == root:
            self._nccl.reduce(buf.data.ptr, buf.data.ptr, buf.size, self._dt(buf), self._op(op, buf), root,
                              self._stream().ptr)
            self._avg(buf, op)
            self._write_back(t, orig, buf)
            return self._done(what, [t], (buf,))
        # the other ranks only send: their tensor is left as it was
        out = self._cupy.empty_like(buf)
        self._nccl.reduce(buf.data.ptr, out.data.ptr, buf.size, self._dt(buf), self._op(op, buf), root,
                          self._stream().ptr)
        return self._done(what, [], (buf, out))

    def gather(self, t: Tensor, outs: list[Tensor], root: int, what: str) -> Work:
        self._check(t)
        src, _ = self._contig(t)
        s = self._stream().ptr
        recv = []
        with _Grouped(self._nccl_mod):
            if self.rank() == root:
                for r, o in enumerate(outs):
                    self._check(o)
                    buf = self._cupy.empty(src.shape, src.dtype)
                    recv.append(buf)
                    if r == root:
                        buf[...] = src
                    else:
                        self._nccl.recv(buf.data.ptr, buf.size, self._dt(buf), r, s)
            else:
                self._nccl.send(src.data.ptr, src.size, self._dt(src), root, s)
        for o, buf in zip(outs, recv):
            o._be.copy_into(o._data, buf)
        return self._done(what, outs, (src, recv))

    def scatter(self, t: Tensor, ins: list[Tensor], root: int, what: str) -> Work:
        self._check(t)
        dst, orig = self._contig(t)
        s = self._stream().ptr
        sends = []
        with _Grouped(self._nccl_mod):
            if self.rank() == root:
                for r, src_t in enumerate(ins):
                    self._check(src_t)
                    src, _ = self._contig(src_t)
                    sends.append(src)
                    if r == root:
                        dst[...] = src
                    else:
                        self._nccl.send(src.data.ptr, src.size, self._dt(src), r, s)
            else:
                self._nccl.recv(dst.data.ptr, dst.size, self._dt(dst), root, s)
        self._write_back(t, orig, dst)
        return self._done(what, [t], (dst, sends))

    def barrier(self, what: str) -> Work:
        # a one-element all-reduce on the stream: the barrier is ordered with the GPU work before it
        one = self._cupy.zeros(1, np.float32)
        self._nccl.allReduce(one.data.ptr, one.data.ptr, 1, self._nccl_mod.NCCL_FLOAT32, self._nccl_mod.NCCL_SUM,
                             self._stream().ptr)
        return self._done(what, [], (one,))

    def send(self, t: Tensor, peer: int, tag: int, what: str) -> Work:
        self._check(t)
        src, _ = self._contig(t)
        self._nccl.send(src.data.ptr, src.size, self._dt(src), peer, self._stream().ptr)
        return self._done(what, [], (src,))

    def recv(self, t: Tensor, peer: int, tag: int, what: str) -> Work:
        self._check(t)
        dst, orig = self._contig(t)
        self._nccl.recv(dst.data.ptr, dst.size, self._dt(dst), peer, self._stream().ptr)
        self._write_back(t, orig, dst)
        return self._done(what, [t], (dst,))

    # ------------------------------------------------------------------ objects travel over MPI
    def broadcast_bytes(self, payload: np.ndarray | None, root: int, what: str) -> np.ndarray:
        return self._mpi_pg.broadcast_bytes(payload, root, what)

    def all_gather_bytes(self, payload: np.ndarray, what: str) -> list[np.ndarray]:
        return self._mpi_pg.all_gather_bytes(payload, what)

    def gather_bytes(self, payload: np.ndarray, root: int, what: str) -> list[np.ndarray] | None:
        return self._mpi_pg.gather_bytes(payload, root, what)

    def scatter_bytes(self, payloads: list[np.ndarray] | None, root: int, what: str) -> np.ndarray:
        return self._mpi_pg.scatter_bytes(payloads, root, what)


def _create(comm: Comm, ranks: list[int], timeout_s: float, *, group_rank: int | None,
            device_id: DeviceId) -> NCCLProcessGroup:
    return NCCLProcessGroup(comm, ranks, timeout_s, group_rank, device_id)


Backend.register_backend(Backend.NCCL, _create, world=world_comm, devices=("cuda",), available=is_available,
                         require=_require)
