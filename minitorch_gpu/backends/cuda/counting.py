"""Counting mode: what a piece of work asks of the GPU, counted instead of timed (the simulator has no clock).

``LaunchCounter().attach(backend)`` hooks one CUDA backend (simulated or real) until ``detach()``:

* every launch of our kernels (through ``Launcher.observer``): kernel name, grid, and the bytes of its array
  arguments — read when the kernel's parameter is ``const T*``, written otherwise (the simulator reports each
  parameter's C type; without it every array counts as read). An array passed twice in one launch counts once
  (launchers pass a real array in the slot of an absent operand, which the kernel never reads). The fused
  optimizer reads its tensors through pointer tables, so its bytes come from the step's tensor lists;
* every primitive of the backend that launched none of our kernels and called no other primitive: a call of
  the array library's built-ins (one primitive may be several library kernels: counted once, with the bytes of
  its array arguments read and its array results written). A result that shares memory with an argument is a
  view and moves no data: counted apart, as ``views``. Inside launchers, ``ascontiguousarray`` calls that copy
  and ``zeros`` (a memset) are built-in kernels too and are counted under those names;
* device-to-host synchronisations: ``to_numpy`` (``item()``, ``tolist()``, printing), the launchers' error
  flag reads, and primitives that return a Python bool, int or float (``isfinite_all``...). Implicit ones
  inside a built-in body whose result stays on the device (a Python ``if`` on a device value) are not seen.

Bytes are what the arguments span, not what the memory system moves: a tiled GEMM re-reads its operands from
L2, and a kernel that updates an array in place through a non-const pointer counts it as written only.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .hooks import hook_methods, unhook_methods

__all__ = ["LaunchCounter", "KernelStats", "CallStats"]

# backend methods that move no data and launch nothing (metadata, allocation, probes)
_NOT_COUNTED = frozenset({"np_dtype", "supports", "strides", "is_contiguous", "data_ptr", "shares_memory",
                          "synchronize", "empty", "kernels", "xp", "index", "device", "name", "host_memory",
                          "count_memory", "writable", "defer_check", "checks", "reads_wait", "counts_memory"})
# backend methods that copy device memory to the host
_TO_HOST = frozenset({"to_numpy"})
_FROM_HOST = frozenset({"asarray"})


@dataclass
class KernelStats:
    """One kernel's launches and bytes over the counted work (``file``: its kernels/*.cu file)."""
    file: str = ""
    launches: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    grids: Counter[tuple[int, ...]] = field(default_factory=Counter)


@dataclass
class CallStats:
    """One array-library call's count and bytes (a built-in primitive, a copy, a sync)."""
    calls: int = 0
    bytes_read: int = 0
    bytes_written: int = 0


class _Frame:
    __slots__ = ("launched", "nested")

    def __init__(self) -> None:
        self.launched = False
        self.nested = False


class LaunchCounter:
    """Counts launches, built-in calls and syncs of one backend between ``attach`` and ``detach``.

    >>> from minitorch_gpu.backends import get_backend       # doctest: +SKIP
    >>> c = LaunchCounter().attach(get_backend("cuda"))      # doctest: +SKIP
    >>> ...; c.detach(); c.kernels["binary_forward<float>"].launches   # doctest: +SKIP
    """

    def __init__(self) -> None:
        self.kernels: dict[str, KernelStats] = {}
        self.builtins: dict[str, CallStats] = {}
        self.views: dict[str, int] = {}
        self.syncs: dict[str, CallStats] = {}
        self.host_to_device: CallStats = CallStats()
        self._stack: list[_Frame] = []
        self._table_bytes: tuple[int, int] | None = None
        self._backend: Any = None
        self._saved_xp: Any = None
        self.enabled = True

    # ------------------------------------------------------------------ attach / detach
    def attach(self, backend: Any) -> LaunchCounter:
        """Start counting the work of ``backend`` (a CUDA backend); returns self."""
        if self._backend is not None:
            raise RuntimeError("this LaunchCounter is already attached; detach() it first")
        self._backend = backend
        launcher = backend.kernels
        hook_methods(backend, _NOT_COUNTED, self._primitive)
        if launcher is not None:
            launcher.observer = self
            self._saved_xp = launcher.xp
            launcher.xp = _CountingXp(launcher.xp, self)
            launcher.optim_step = self._optim_step(launcher.optim_step)
        return self

    def detach(self) -> None:
        """Stop counting: the backend and its launcher are as before ``attach``."""
        be = self._backend
        if be is None:
            return
        unhook_methods(be)
        launcher = be.kernels
        if launcher is not None:
            launcher.observer = None
            launcher.xp = self._saved_xp
            del launcher.optim_step
        self._backend = None

    def __enter__(self) -> LaunchCounter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()

    def reset(self) -> None:
        """Forget what was counted so far (keep counting)."""
        self.kernels.clear()
        self.builtins.clear()
        self.views.clear()
        self.syncs.clear()
        self.host_to_device = CallStats()

    # ------------------------------------------------------------------ hooks
    def kernel(self, fname: str, name: str, fn: Any) -> Callable[..., Any]:
        """``Launcher.fn``'s hook: ``fn`` wrapped so that each call is counted."""
        return _CountedKernel(self, fname, name, fn)

    def _launch(self, fname: str, name: str, fn: Any, grid: Any, block: Any, args: Any, **kw: Any) -> Any:
        if self.enabled:
            self._count_launch(fname, name, fn, grid, args)
        return fn(grid, block, args, **kw)

    def _count_launch(self, fname: str, name: str, fn: Any, grid: Any, args: Any) -> None:
        for f in self._stack:
            f.launched = True
        st = self.kernels.get(name)
        if st is None:
            st = self.kernels[name] = KernelStats(fname)
        st.launches += 1
        st.grids[tuple(grid) if isinstance(grid, (tuple, list)) else (int(grid),)] += 1
        params = getattr(fn, "params", None)
        seen: set[tuple[int, int]] = set()
        for i, a in enumerate(args):
            nbytes = getattr(a, "nbytes", None)
            if nbytes is None or not hasattr(a, "dtype") or not getattr(a, "ndim", 0):
                continue
            key = (_address(a), nbytes)
            if key in seen:
                continue
            seen.add(key)
            ctype = params[i].ctype if params is not None and i < len(params) else "const"
            if ctype.startswith("const") and "*" in ctype:
                st.bytes_read += nbytes
            elif "*" in ctype:
                st.bytes_written += nbytes
            else:
                st.bytes_read += nbytes
        if self._table_bytes is not None and name.split("<")[0].endswith("_step"):
            r, w = self._table_bytes
            st.bytes_read += r
            st.bytes_written += w
            self._table_bytes = None

    def sync(self, what: str, nbytes: int) -> None:
        """A device-to-host copy the caller waits for."""
        if not self.enabled:
            return
        st = self.syncs.setdefault(what, CallStats())
        st.calls += 1
        st.bytes_read += nbytes

    def builtin(self, name: str, read: int, written: int) -> None:
        if not self.enabled:
            return
        for f in self._stack:
            f.nested = True
        st = self.builtins.setdefault(name, CallStats())
        st.calls += 1
        st.bytes_read += read
        st.bytes_written += written

    def _optim_step(self, step_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def optim_step(step: Any) -> Any:
            # roles: params, grads, then the states; the kernel reads them all and writes all but the grads
            sizes = [sum(a.nbytes for a in role) if role else 0 for role in step.roles]
            self._table_bytes = (sum(sizes), sum(sizes) - (sizes[1] if len(sizes) > 1 else 0))
            try:
                return step_fn(step)
            finally:
                self._table_bytes = None
        return optim_step

    def _primitive(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        counter = self

        def call(*args: Any, **kwargs: Any) -> Any:
            if not counter.enabled:
                return method(*args, **kwargs)
            for f in counter._stack:
                f.nested = True
            frame = _Frame()
            counter._stack.append(frame)
            try:
                result = method(*args, **kwargs)
            finally:
                counter._stack.pop()
            if not frame.nested and type(result) in (bool, int, float):
                # a Python value out of device data: the caller waited for the device
                counter.sync(f"{name} (host value)", 8)
            if frame.launched or frame.nested:
                return result
            arrays = [a for a in _arrays(args, counter) if a is not None]
            arrays += [a for a in _arrays(kwargs.values(), counter) if a is not None]
            outs = [a for a in _arrays((result,), counter) if a is not None]
            if name in _TO_HOST:
                counter.sync(name, sum(a.nbytes for a in arrays))
            elif name in _FROM_HOST:
                counter.host_to_device.calls += 1
                counter.host_to_device.bytes_written += sum(a.nbytes for a in outs)
            elif outs and all(any(_shares(o, a) for a in arrays) for o in outs):
                counter.views[name] = counter.views.get(name, 0) + 1
            else:
                # no array result: an in-place update writes its first argument, a host value writes nothing
                in_place = result is None and arrays
                counter.builtin(name, _unique_bytes(arrays),
                                _unique_bytes(outs) if outs else (arrays[0].nbytes if in_place else 0))
            return result
        return call

    # ------------------------------------------------------------------ summaries
    def totals(self) -> dict[str, int]:
        """Launches, built-in calls, syncs and bytes over everything counted."""
        return {
            "kernel_launches": sum(s.launches for s in self.kernels.values()),
            "kernel_bytes": sum(s.bytes_read + s.bytes_written for s in self.kernels.values()),
            "builtin_calls": sum(s.calls for s in self.builtins.values()),
            "builtin_bytes": sum(s.bytes_read + s.bytes_written for s in self.builtins.values()),
            "syncs": sum(s.calls for s in self.syncs.values()),
            "views": sum(self.views.values()),
            "host_to_device_copies": self.host_to_device.calls,
        }


class _CountingXp:
    """The launcher's array module, seen through: ``ascontiguousarray`` copies and ``zeros`` are library kernels
    the launchers run around ours."""

    def __init__(self, xp: Any, counter: LaunchCounter) -> None:
        self._xp = xp
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._xp, name)

    def ascontiguousarray(self, a: Any, *args: Any, **kwargs: Any) -> Any:
        out = self._xp.ascontiguousarray(a, *args, **kwargs)
        if out is not a and not _shares(out, a):
            self._counter.builtin("ascontiguousarray (launcher copy)", a.nbytes, out.nbytes)
        return out

    def zeros(self, *args: Any, **kwargs: Any) -> Any:
        out = self._xp.zeros(*args, **kwargs)
        self._counter.builtin("zeros (launcher memset)", 0, out.nbytes)
        return out


def _address(a: Any) -> int:
    data = getattr(a, "data", None)
    ptr = getattr(data, "ptr", None)
    if ptr is not None:
        return int(ptr)
    iface = getattr(a, "__array_interface__", None)
    return int(iface["data"][0]) if iface else id(a)


def _arrays(values: Any, counter: LaunchCounter) -> Iterator[Any]:
    """The device arrays among ``values`` (one level into tuples, lists and dicts)."""
    be = counter._backend
    nd = be.xp.ndarray if be is not None else None
    for v in values:
        if nd is not None and isinstance(v, nd):
            yield v
        elif isinstance(v, (tuple, list)):
            for x in v:
                if nd is not None and isinstance(x, nd):
                    yield x
        elif isinstance(v, dict):
            for x in v.values():
                if nd is not None and isinstance(x, nd):
                    yield x


def _shares(a: Any, b: Any) -> bool:
    base_a, base_b = _root(a), _root(b)
    return base_a is base_b


def _root(a: Any) -> Any:
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def _unique_bytes(arrays: list[Any]) -> int:
    seen: set[tuple[int, int]] = set()
    total = 0
    for a in arrays:
        key = (_address(a), a.nbytes)
        if key not in seen:
            seen.add(key)
            total += a.nbytes
    return total


class _CountedKernel:
    """A kernel whose calls go through the counter; its attributes (``params``, the dynamic shared memory
    limit the attention launcher raises) are the kernel's own."""

    def __init__(self, counter: LaunchCounter, fname: str, name: str, fn: Any) -> None:
        object.__setattr__(self, "_c", (counter, fname, name, fn))

    def __call__(self, grid: Any, block: Any, args: Any, **kw: Any) -> Any:
        counter, fname, name, fn = self._c
        return counter._launch(fname, name, fn, grid, block, args, **kw)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._c[3], attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._c[3], attr, value)
