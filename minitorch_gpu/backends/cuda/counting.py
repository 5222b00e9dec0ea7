"""Counting mode: what a piece of work asks of the GPU, counted instead of timed (the simulator has no clock), and
the observer of device work it shares with the profiler.

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

The observation itself is shared: ``observe(backend, listener)`` installs one set of hooks per backend, whoever
listens, and hands every listener each piece of work as a ``Work`` record (``end``), with a ``begin`` call before
it runs so that a listener can time it (the profiler, ``minitorch_gpu.profiler``, does; ``LaunchCounter`` sums).
The hooks come off when the last listener leaves.

Bytes are what the arguments span, not what the memory system moves: a tiled GEMM re-reads its operands from
L2, and a kernel that updates an array in place through a non-const pointer counts it as written only.
"""
from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from .hooks import hook_methods, unhook_methods

__all__ = ["LaunchCounter", "KernelStats", "CallStats", "Work", "Listener", "observe", "unobserve",
           "KERNEL", "BUILTIN", "VIEW", "TO_HOST", "FROM_HOST"]

# backend methods that move no data and launch nothing (metadata, allocation, probes)
_NOT_COUNTED = frozenset({"np_dtype", "supports", "strides", "is_contiguous", "data_ptr", "shares_memory",
                          "synchronize", "empty", "kernels", "xp", "index", "device", "name", "host_memory",
                          "count_memory", "writable", "defer_check", "checks", "reads_wait", "counts_memory"})
# backend methods that copy device memory to the host
_TO_HOST = frozenset({"to_numpy"})
_FROM_HOST = frozenset({"asarray"})

# what a piece of work is (``Work.kind``)
KERNEL = "kernel"        # a launch of one of our kernels
BUILTIN = "builtin"      # a primitive that ran the array library's built-ins (one or more library kernels)
VIEW = "view"            # a primitive whose results all share memory with its arguments: no data moved
TO_HOST = "to_host"      # a device-to-host copy the caller waits for
FROM_HOST = "from_host"  # a host-to-device copy


class Work:
    """One piece of device work as listeners see it. ``args`` (a launch's kernel arguments), ``arrays`` (a
    built-in's array arguments) and ``outs`` (its array results) are only valid inside ``Listener.end``: keep
    what you need, not them."""
    __slots__ = ("kind", "name", "file", "grid", "block", "shared_mem", "args", "arrays", "outs", "bytes_read",
                 "bytes_written")

    def __init__(self, kind: str, name: str, file: str = "", grid: tuple[int, ...] = (),
                 block: tuple[int, ...] = (), shared_mem: int = 0, args: Any = (), arrays: Any = (),
                 outs: Any = (), bytes_read: int = 0, bytes_written: int = 0) -> None:
        self.kind = kind
        self.name = name
        self.file = file
        self.grid = grid
        self.block = block
        self.shared_mem = shared_mem
        self.args = args
        self.arrays = arrays
        self.outs = outs
        self.bytes_read = bytes_read
        self.bytes_written = bytes_written


class Listener(Protocol):
    """What ``observe`` calls. ``begin`` runs before every launch and every primitive call (nested ones too);
    its result comes back to the matching ``end``, whose ``work`` is None when the call turned out not to be
    device work of its own (a primitive that launched our kernels or called other primitives) or raised."""

    def begin(self) -> Any: ...

    def end(self, token: Any, work: Work | None) -> None: ...

    def sync(self, what: str, nbytes: int) -> None: ...


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
        self._backend: Any = None
        self.enabled = True

    # ------------------------------------------------------------------ attach / detach
    def attach(self, backend: Any) -> LaunchCounter:
        """Start counting the work of ``backend`` (a CUDA backend); returns self."""
        if self._backend is not None:
            raise RuntimeError("this LaunchCounter is already attached; detach() it first")
        self._backend = backend
        observe(backend, self)
        return self

    def detach(self) -> None:
        """Stop counting: the backend and its launcher are as before ``attach`` (unless another listener
        still observes them)."""
        be = self._backend
        if be is None:
            return
        unobserve(be, self)
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

    # ------------------------------------------------------------------ the listener
    def begin(self) -> None:
        return None

    def end(self, token: Any, work: Work | None) -> None:
        if work is None or not self.enabled:
            return
        kind = work.kind
        if kind == KERNEL:
            st = self.kernels.get(work.name)
            if st is None:
                st = self.kernels[work.name] = KernelStats(work.file)
            st.launches += 1
            st.grids[work.grid] += 1
            st.bytes_read += work.bytes_read
            st.bytes_written += work.bytes_written
        elif kind == BUILTIN:
            cs = self.builtins.setdefault(work.name, CallStats())
            cs.calls += 1
            cs.bytes_read += work.bytes_read
            cs.bytes_written += work.bytes_written
        elif kind == VIEW:
            self.views[work.name] = self.views.get(work.name, 0) + 1
        elif kind == TO_HOST:
            self.sync(work.name, work.bytes_read)
        elif kind == FROM_HOST:
            self.host_to_device.calls += 1
            self.host_to_device.bytes_written += work.bytes_written

    def sync(self, what: str, nbytes: int) -> None:
        """A device-to-host copy the caller waits for."""
        if not self.enabled:
            return
        st = self.syncs.setdefault(what, CallStats())
        st.calls += 1
        st.bytes_read += nbytes

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


# ---------------------------------------------------------------------- the shared observer
_observers: weakref.WeakKeyDictionary[Any, _Observer] = weakref.WeakKeyDictionary()


def observe(backend: Any, listener: Listener) -> None:
    """Hand ``listener`` every launch, built-in call and sync of ``backend`` (a CUDA backend) until
    ``unobserve``; the first listener of a backend installs the hooks."""
    obs = _observers.get(backend)
    if obs is None:
        obs = _observers[backend] = _Observer(backend)
    obs.add(listener)


def unobserve(backend: Any, listener: Listener) -> None:
    """Stop handing ``listener`` the work of ``backend``; the last one to leave takes the hooks off."""
    obs = _observers.get(backend)
    if obs is None:
        return
    if obs.remove(listener):
        del _observers[backend]


class _Frame:
    __slots__ = ("launched", "nested")

    def __init__(self) -> None:
        self.launched = False
        self.nested = False


class _Observer:
    """The hooks on one backend: ``Launcher.observer`` (every launch of our kernels and flag read), every
    primitive of the backend wrapped (built-in calls, copies, host values), the launcher's array module seen
    through (its copies and memsets), the fused optimizer step's tensor lists."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.listeners: tuple[Listener, ...] = ()
        self._stack: list[_Frame] = []
        self._table_bytes: tuple[int, int] | None = None
        self._saved_xp: Any = None

    def add(self, listener: Listener) -> None:
        if listener in self.listeners:
            return
        if not self.listeners:
            self._install()
        self.listeners = self.listeners + (listener,)

    def remove(self, listener: Listener) -> bool:
        """Drop ``listener``; True when none is left (the hooks are off)."""
        self.listeners = tuple(x for x in self.listeners if x is not listener)
        if self.listeners:
            return False
        self._uninstall()
        return True

    def _install(self) -> None:
        backend = self.backend
        hook_methods(backend, _NOT_COUNTED, self._primitive)
        launcher = backend.kernels
        if launcher is not None:
            launcher.observer = self
            self._saved_xp = launcher.xp
            launcher.xp = _ObservedXp(launcher.xp, self)
            launcher.optim_step = self._optim_step(launcher.optim_step)

    def _uninstall(self) -> None:
        be = self.backend
        unhook_methods(be)
        launcher = be.kernels
        if launcher is not None:
            launcher.observer = None
            launcher.xp = self._saved_xp
            del launcher.optim_step

    # ------------------------------------------------------------------ hooks
    def kernel(self, fname: str, name: str, fn: Any) -> Callable[..., Any]:
        """``Launcher.fn``'s hook: ``fn`` wrapped so that each call is observed."""
        return _ObservedKernel(self, fname, name, fn)

    def sync(self, what: str, nbytes: int) -> None:
        """A device-to-host copy the caller waits for (``Launcher.read_flag``'s hook)."""
        for li in self.listeners:
            li.sync(what, nbytes)

    def _run(self, work_of: Callable[[Any], Work | None], fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)`` between the listeners' ``begin`` and ``end``; ``work_of(result)`` says what it
        was (None: nothing of its own)."""
        listeners = self.listeners
        tokens = [li.begin() for li in listeners]
        work: Work | None = None
        try:
            result = fn(*args, **kw)
            work = work_of(result)
        finally:
            for li, tok in zip(listeners, tokens):
                li.end(tok, work)
        return result

    def _launch(self, fname: str, name: str, fn: Any, grid: Any, block: Any, args: Any, **kw: Any) -> Any:
        for f in self._stack:
            f.launched = True
        work = Work(KERNEL, name, fname, _dims(grid), _dims(block), int(kw.get("shared_mem", 0)), args)
        self._launch_bytes(work, getattr(fn, "params", None))
        return self._run(lambda _: work, fn, grid, block, args, **kw)

    def _launch_bytes(self, work: Work, params: Any) -> None:
        seen: set[tuple[int, int]] = set()
        for i, a in enumerate(work.args):
            nbytes = getattr(a, "nbytes", None)
            if nbytes is None or not hasattr(a, "dtype") or not getattr(a, "ndim", 0):
                continue
            key = (_address(a), nbytes)
            if key in seen:
                continue
            seen.add(key)
            ctype = params[i].ctype if params is not None and i < len(params) else "const"
            if ctype.startswith("const") and "*" in ctype:
                work.bytes_read += nbytes
            elif "*" in ctype:
                work.bytes_written += nbytes
            else:
                work.bytes_read += nbytes
        if self._table_bytes is not None and work.name.split("<")[0].endswith("_step"):
            r, w = self._table_bytes
            work.bytes_read += r
            work.bytes_written += w
            self._table_bytes = None

    def builtin(self, name: str, fn: Callable[..., Any], copied: Callable[[Any], tuple[int, int] | None],
                *args: Any, **kwargs: Any) -> Any:
        """A library call the launchers make around our kernels: ``copied(result)`` gives its (read, written)
        bytes, or None when it moved nothing."""
        for f in self._stack:
            f.nested = True

        def work_of(result: Any) -> Work | None:
            moved = copied(result)
            if moved is None:
                return None
            return Work(BUILTIN, name, arrays=args[:1], outs=(result,), bytes_read=moved[0], bytes_written=moved[1])
        return self._run(work_of, fn, *args, **kwargs)

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
        obs = self

        def work_of(frame: _Frame, args: Any, kwargs: Any, result: Any) -> Work | None:
            if not frame.nested and type(result) in (bool, int, float):
                # a Python value out of device data: the caller waited for the device
                obs.sync(f"{name} (host value)", 8)
            if frame.launched or frame.nested:
                return None
            arrays = [a for a in _arrays(args, obs.backend) if a is not None]
            arrays += [a for a in _arrays(kwargs.values(), obs.backend) if a is not None]
            outs = [a for a in _arrays((result,), obs.backend) if a is not None]
            if name in _TO_HOST:
                return Work(TO_HOST, name, arrays=arrays, bytes_read=sum(a.nbytes for a in arrays))
            if name in _FROM_HOST:
                return Work(FROM_HOST, name, outs=outs, bytes_written=sum(a.nbytes for a in outs))
            if outs and all(any(_shares(o, a) for a in arrays) for o in outs):
                return Work(VIEW, name, arrays=arrays, outs=outs)
            # no array result: an in-place update writes its first argument, a host value writes nothing
            in_place = result is None and arrays
            written = _unique_bytes(outs) if outs else (arrays[0].nbytes if in_place else 0)
            return Work(BUILTIN, name, arrays=arrays, outs=outs, bytes_read=_unique_bytes(arrays),
                        bytes_written=written)

        def call(*args: Any, **kwargs: Any) -> Any:
            for f in obs._stack:
                f.nested = True
            frame = _Frame()
            obs._stack.append(frame)

            def run(*a: Any, **k: Any) -> Any:
                try:
                    return method(*a, **k)
                finally:
                    obs._stack.pop()
            return obs._run(lambda result: work_of(frame, args, kwargs, result), run, *args, **kwargs)
        return call


class _ObservedXp:
    """The launcher's array module, seen through: ``ascontiguousarray`` copies and ``zeros`` are library kernels
    the launchers run around ours."""

    def __init__(self, xp: Any, observer: _Observer) -> None:
        self._xp = xp
        self._observer = observer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._xp, name)

    def ascontiguousarray(self, a: Any, *args: Any, **kwargs: Any) -> Any:
        def copied(out: Any) -> tuple[int, int] | None:
            return None if out is a or _shares(out, a) else (a.nbytes, out.nbytes)
        return self._observer.builtin("ascontiguousarray (launcher copy)", self._xp.ascontiguousarray, copied,
                                      a, *args, **kwargs)

    def zeros(self, *args: Any, **kwargs: Any) -> Any:
        return self._observer.builtin("zeros (launcher memset)", self._xp.zeros, lambda out: (0, out.nbytes),
                                      *args, **kwargs)


def _dims(d: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in d) if isinstance(d, (tuple, list)) else (int(d),)


def _address(a: Any) -> int:
    iface = getattr(a, "__array_interface__", None)
    if iface is not None:
        # NOTE: a NumPy array's ``.data`` is a memoryview, which raises for dtypes the buffer protocol lacks
        # (bfloat16): host arrays answer through the interface, CuPy's through ``.data.ptr``
        return int(iface["data"][0])
    ptr = getattr(getattr(a, "data", None), "ptr", None)
    return int(ptr) if ptr is not None else id(a)


def _arrays(values: Any, be: Any) -> Iterator[Any]:
    """The device arrays among ``values`` (one level into tuples, lists and dicts)."""
    nd = be.xp.ndarray
    for v in values:
        if isinstance(v, nd):
            yield v
        elif isinstance(v, (tuple, list)):
            for x in v:
                if isinstance(x, nd):
                    yield x
        elif isinstance(v, dict):
            for x in v.values():
                if isinstance(x, nd):
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


class _ObservedKernel:
    """A kernel whose calls go through the observer; its attributes (``params``, the dynamic shared memory
    limit the attention launcher raises) are the kernel's own."""

    def __init__(self, observer: _Observer, fname: str, name: str, fn: Any) -> None:
        object.__setattr__(self, "_c", (observer, fname, name, fn))

    def __call__(self, grid: Any, block: Any, args: Any, **kw: Any) -> Any:
        observer, fname, name, fn = self._c
        return observer._launch(fname, name, fn, grid, block, args, **kw)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._c[3], attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._c[3], attr, value)
