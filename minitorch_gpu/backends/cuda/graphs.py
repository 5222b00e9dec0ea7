"""CUDA graphs in the CUDA runtime: a stretch of one backend's device work captured once and replayed many times.

``Capture(backend, pool, mode)`` is one capture under way; ``begin()`` starts it on the current stream,
``end()`` returns a ``CapturedGraph`` whose ``replay()`` runs the work again on the same memory. The public
``mt.cuda.CUDAGraph`` sits above and drives it.

* On a GPU (CuPy) the capture stream's work is recorded by CUDA stream capture (``Stream.begin_capture`` /
  ``end_capture``) into a ``cupy.cuda.graph.Graph``, replayed with ``Graph.launch``. Arrays allocated during
  capture come from the graph's private pool (a ``cupy.cuda.MemoryPool`` made CuPy's allocator for the capture):
  memory the graph writes is never handed to work outside it, even after the tensors holding it are freed.
  Graphs that share a ``GraphPool`` may reuse each other's freed blocks, which is safe when they replay in the
  order they were captured (PyTorch's rule for shared pools).
* On the simulator every top-level call of a backend primitive during capture is recorded with its arguments
  and its result; ``replay`` calls the primitives again in order and writes each result into the array the
  capture returned (a primitive that writes in place just runs again). Kernel launches and the array library's
  built-ins are both primitives' work, so both are replayed. A GPU runs nothing during capture; so that the
  simulator agrees, the memory that existed before the capture and was handed to a captured call is put back
  as it was when the capture ends.

On both, while a capture is under way, whatever would make the host wait for the device raises CUDA's capture
error (``CAPTURE_ERROR``) and abandons the capture, leaving the device usable and the graph empty: a read of
device data (``to_numpy``: ``item()``, ``tolist()``, printing), ``synchronize``, a launcher's error-flag read,
a primitive whose answer is a host value or whose result's shape depends on device data (``nonzero``,
``unique``, a boolean-mask index). Random numbers are captured as PyTorch captures them: the generator hands the
primitive ``rng_state``, a device array the graph owns, from which the Philox kernels read the seed and the
offset (the call's own offset is relative to it), and writes its current seed and offset there before each
replay (``ops/random.py``). A draw without that array (a distribution our kernels do not compute, the raw
stream, a generator the graph does not know) raises: its seed and offset would be constants of the graph.
Checks deferred to the next synchronisation (``checks.py``) are not read during capture: a GPU re-queues the
captured ones after every replay, and on the simulator the replayed primitives queue them again.

NOTE: on the simulator only the work that goes through backend primitives is replayed. Array code above the
dispatch layer would run once, at capture, and its result would be replayed as a constant (on a GPU stream capture
records it like everything else): this is why the layers above never compute on arrays themselves, dtype casts
included (``be.astype``).
"""
from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._types import writable
from .checks import Check
from .hooks import hook_methods, unhook_methods

__all__ = ["Capture", "CapturedGraph", "GraphPool", "new_pool", "CAPTURE_ERROR", "CAPTURE_MODES", "capturing"]

CAPTURE_ERROR = "CUDA error: operation not permitted when stream is capturing"
CAPTURE_MODES = ("default", "global", "thread_local", "relaxed")
NON_DEFAULT_STREAM = ("CUDA graphs must be captured on a non-default stream. (However, after capture, it's ok to "
                      "replay them on the default stream.)")

# backend methods that touch no device memory: they pass through a capture untouched
_METADATA = frozenset({"np_dtype", "supports", "strides", "is_contiguous", "data_ptr", "shares_memory", "writable",
                       "count_memory", "kernels", "xp", "index", "device", "name", "host_memory", "counts_memory",
                       "checks", "reads_wait"})
# the host waits for the device in these
_SYNCS = {"to_numpy": "reading a device value (item(), tolist(), cpu(), printing)",
          "synchronize": "synchronize()"}
# results whose shape is read back from the device (a GPU synchronises for the count)
_HOST_SHAPE = frozenset({"nonzero_tuple", "argwhere", "unique", "unique_dim", "unique_consecutive"})
# index primitives whose index may hold a boolean mask (a gather by mask needs the count of True)
_MASK_INDEX = frozenset({"getitem"})
# draws from a Philox stream without a (seed, offset) pair in its signature
_RANDOM = frozenset({"philox4x32_10"})
# recorded (their results belong to the graph) but not run again: their content is never read before written
_NO_REPLAY = frozenset({"empty"})

_active: list[Capture] = []


def capturing() -> bool:
    """Whether a capture is under way in this process (one at a time, as in PyTorch)."""
    return bool(_active)


def check_no_capture() -> None:
    """RuntimeError when a capture is under way: a second one cannot begin."""
    if _active:
        raise RuntimeError("Cannot begin a CUDA graph capture while another capture is under way in this "
                           "process; end it with capture_end() first")


class GraphPool:
    """The memory pool of one or more graphs (PyTorch's opaque pool handle, from ``graph_pool_handle()`` or
    ``CUDAGraph.pool()``): on a GPU a private ``cupy.cuda.MemoryPool``; on the simulator the graphs' own
    recorded results hold their memory, and the handle only names the pool."""

    _ids = itertools.count(1)

    def __init__(self, memory: Any = None) -> None:
        self.id = next(self._ids)
        self.memory = memory

    def __repr__(self) -> str:
        return f"<minitorch_gpu graph pool {self.id}>"


def _is_sim(backend: Any) -> bool:
    return backend.xp is np


def new_pool(backend: Any) -> GraphPool:
    """A fresh pool for graphs of ``backend``'s device."""
    if _is_sim(backend):
        return GraphPool()
    with backend.xp.cuda.Device(backend.index):
        return GraphPool(backend.xp.cuda.MemoryPool())


class _Call:
    __slots__ = ("method", "args", "kwargs", "result")

    def __init__(self, method: Callable[..., Any], args: Any, kwargs: Any, result: Any) -> None:
        self.method = method
        self.args = args
        self.kwargs = kwargs
        self.result = result


class CapturedGraph:
    """A finished capture: ``replay()`` runs its work again on the memory it captured."""

    def __init__(self, backend: Any, pool: GraphPool, calls: list[_Call], checks: list[tuple[Any, Check]],
                 cuda_graph: Any = None, owned: list[Any] | None = None) -> None:
        self.backend = backend
        self.pool = pool
        self._calls = calls
        self._checks = checks
        self._cuda_graph = cuda_graph
        self._owned = owned or []  # simulator: the arrays the capture allocated, alive while the graph is

    def replay(self) -> None:
        """Run the captured work once more (on a GPU: launched on the current stream, asynchronously)."""
        if _active:
            raise RuntimeError(CAPTURE_ERROR + ": a graph cannot be replayed while a capture is under way")
        be = self.backend
        if self._cuda_graph is not None:
            cp = be.xp
            with cp.cuda.Device(be.index):
                self._cuda_graph.launch(stream=cp.cuda.get_current_stream())
            for values, check in self._checks:
                be.checks.add(values, check)
            return
        for call in self._calls:
            if call.method.__name__ in _NO_REPLAY:
                continue
            _write_back(call.result, call.method(*call.args, **call.kwargs), call.method.__name__)

    @property
    def num_calls(self) -> int:
        """How many primitive calls the simulator replays (0 on a GPU, where CUDA keeps the work)."""
        return len(self._calls)


class Capture:
    """One capture of ``backend``'s work into a graph whose memory comes from ``pool``; ``mode`` is PyTorch's
    ``capture_error_mode`` ("global", "thread_local" or "relaxed", CUDA's ``cudaStreamCaptureMode``)."""

    def __init__(self, backend: Any, pool: GraphPool, mode: str = "global") -> None:
        if mode not in CAPTURE_MODES:
            raise RuntimeError("Unknown capture error mode. Expected `default`, `global`, `thread_local`, or "
                               f"`relaxed`, got {mode}")
        self.backend = backend
        self.pool = pool
        self.mode = "global" if mode == "default" else mode
        self.sim = _is_sim(backend)
        self.error: str | None = None  # why the capture was abandoned
        self._depth = 0
        self._calls: list[_Call] = []
        self._checks: list[tuple[Any, Check]] = []
        self._saved: dict[int, tuple[Any, Any]] = {}  # simulator: id(root) -> (pre-existing root, its copy)
        self._owned: dict[int, Any] = {}  # simulator: id(root) -> root allocated by the capture
        self._stream: Any = None
        self._allocator: Any = None
        self._random = _random_parameters(type(backend))

    # ------------------------------------------------------------------ begin / end
    def begin(self) -> None:
        """Start capturing the backend's work on the current stream."""
        check_no_capture()
        if not self.sim:
            self._begin_stream_capture()
        self._install()
        _active.append(self)

    def end(self) -> CapturedGraph:
        """Finish the capture; RuntimeError if it was abandoned."""
        if self.error is not None:
            raise RuntimeError(f"the CUDA graph capture was abandoned ({self.error}); the graph is empty")
        self._close()
        if self.sim:
            graph = CapturedGraph(self.backend, self.pool, self._calls, [], owned=list(self._owned.values()))
            self._restore()
            return graph
        cuda_graph = self._end_stream_capture()
        return CapturedGraph(self.backend, self.pool, [], self._checks, cuda_graph=cuda_graph)

    def abort(self, why: str) -> None:
        """Abandon the capture: the device is usable again, nothing is kept."""
        if self.error is not None:
            return
        self.error = why
        self._close()
        if self.sim:
            self._restore()
        else:
            try:
                self._end_stream_capture()
            except Exception:  # an invalidated capture ends with an error of its own: it is gone either way
                pass
        self._calls, self._checks, self._owned = [], [], {}

    def _close(self) -> None:
        self._uninstall()
        if self in _active:
            _active.remove(self)

    # ------------------------------------------------------------------ the GPU: CUDA stream capture
    def _begin_stream_capture(self) -> None:
        cp = self.backend.xp
        with cp.cuda.Device(self.backend.index):
            stream = cp.cuda.get_current_stream()
            if stream.ptr in (0, cp.cuda.runtime.streamLegacy):
                raise RuntimeError(NON_DEFAULT_STREAM)
            modes = {"global": cp.cuda.runtime.streamCaptureModeGlobal,
                     "thread_local": cp.cuda.runtime.streamCaptureModeThreadLocal,
                     "relaxed": cp.cuda.runtime.streamCaptureModeRelaxed}
            # every allocation of the capture comes from the graph's pool, which nothing else draws from
            allocator = cp.cuda.using_allocator(self.pool.memory.malloc)
            allocator.__enter__()
            try:
                stream.begin_capture(mode=modes[self.mode])
            except BaseException:
                allocator.__exit__(None, None, None)
                raise
        self._stream, self._allocator = stream, allocator

    def _end_stream_capture(self) -> Any:
        cp = self.backend.xp
        try:
            with cp.cuda.Device(self.backend.index):
                return self._stream.end_capture()
        finally:
            self._allocator.__exit__(None, None, None)

    # ------------------------------------------------------------------ hooks on the backend
    def _install(self) -> None:
        be = self.backend
        hook_methods(be, _METADATA, self._hook)
        be.checks.add = self._defer
        be.checks.flush = self._refuse("a read of the deferred device checks")
        if be.kernels is not None:
            be.kernels.read_flag = self._refuse("a kernel's error-flag read")

    def _uninstall(self) -> None:
        be = self.backend
        unhook_methods(be)
        for obj, attr in ((be.checks, "add"), (be.checks, "flush"), (be.kernels, "read_flag")):
            if obj is not None and attr in vars(obj):
                delattr(obj, attr)

    def _refuse(self, what: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise self._fail(what)
        return refuse

    def _fail(self, what: str) -> RuntimeError:
        self.abort(what)
        return RuntimeError(
            f"{CAPTURE_ERROR}: {what} waits for the device, which a CUDA graph capture does not "
            "allow (the capture was abandoned). Read values after replay(), outside the capture; host control "
            "flow that depends on device values cannot be captured.")

    def _defer(self, values: Any, check: Check) -> None:
        self._checks.append((values, check))

    def _hook(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        if name in _SYNCS:
            return self._refuse(_SYNCS[name])
        draws_random = name in self._random
        switch = self._random.get(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return method(*args, **kwargs)
            if draws_random and _draws(method, switch, args, kwargs):
                self.abort(f"random numbers in {name}")
                raise RuntimeError(
                    f"random numbers ({name}) cannot be captured in a CUDA graph here: this draw would take the "
                    "generator's seed and offset as constants, so every replay would draw the same numbers (the "
                    "capture was abandoned). Inside a graph only rand, randn, randint, dropout and the dropout of "
                    "scaled_dot_product_attention draw, from the device's default generator or one passed to "
                    "CUDAGraph.register_generator_state; draw other numbers outside the graph.")
            if name in _HOST_SHAPE or (name in _MASK_INDEX and any(
                    getattr(a, "dtype", None) == np.bool_ for a in _arrays((args, kwargs)))):
                raise self._fail(f"{name} (its result's size is read from the device)")
            if self.sim:
                self._note_inputs((args, kwargs))
            self._depth += 1
            try:
                result = method(*args, **kwargs)
            except BaseException as e:
                if not self.sim:
                    # CUDA invalidates a capture whose stream saw an error: nothing of it can be kept
                    self.abort(f"{name} raised {type(e).__name__}")
                raise
            finally:
                self._depth -= 1
            if _host_value(result):
                raise self._fail(f"{name} (its answer is a host value)")
            if self.sim:
                self._note_outputs(result)
                self._calls.append(_Call(method, _freeze(args), _freeze(kwargs), result))
            return result
        return call

    # ------------------------------------------------------------------ simulator: memory before and after
    def _note_inputs(self, values: Any) -> None:
        for a in _arrays(values):
            root = _root(a)
            key = id(root)
            if key in self._owned or key in self._saved or not writable(root):
                continue
            self._saved[key] = (root, root.copy())

    def _note_outputs(self, result: Any) -> None:
        for a in _arrays(result):
            root = _root(a)
            key = id(root)
            if key not in self._saved and key not in self._owned:
                self._owned[key] = root

    def _restore(self) -> None:
        # a GPU runs nothing while capturing: memory that existed before holds what it held then
        for root, copy in self._saved.values():
            np.copyto(root, copy)
        self._saved = {}


def _random_parameters(cls: type) -> dict[str, str | None]:
    """Per random-number primitive of ``cls``: the parameter that switches its draw off when zero (dropout's
    probability in fused attention) or None (it always draws)."""
    out: dict[str, str | None] = {name: None for name in _RANDOM}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        fn = getattr(cls, name)
        if not callable(fn) or isinstance(fn, type):
            continue
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            continue
        if "seed" in params and "offset" in params:
            out[name] = "dropout_p" if "dropout_p" in params else None
    return out


def _draws(method: Callable[..., Any], switch: str | None, args: Any, kwargs: Any) -> bool:
    """Whether a call of a random primitive draws with the host's seed and offset: it draws at all (``switch``,
    dropout's probability in fused attention, is not zero) and was not handed a graph's device copy of the
    generator state (``rng_state``)."""
    try:
        bound = inspect.signature(method).bind(*args, **kwargs).arguments
    except TypeError:
        return True
    if bound.get("rng_state") is not None:
        return False
    return switch is None or bool(bound.get(switch, 0))


def _host_value(result: Any) -> bool:
    """A Python number, or a tuple of them: read back from the device."""
    if type(result) in (bool, int, float):
        return True
    return isinstance(result, tuple) and bool(result) and all(type(v) in (bool, int, float) for v in result)


def _root(a: Any) -> Any:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _arrays(values: Any) -> Iterator[Any]:
    """The arrays in ``values``, through tuples, lists and dicts at any depth."""
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray):
            yield v
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())


def _freeze(v: Any) -> Any:
    """``v`` with its containers copied (arrays shared): the caller may change a list or dict it passed after
    the call (a saved-state dict loses its entry once used), and replay must see what the call saw."""
    if isinstance(v, list):
        return [_freeze(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return {k: _freeze(x) for k, x in v.items()}
    return v


def _write_back(captured: Any, new: Any, name: str) -> None:
    """Write a replayed call's result into the arrays its capture returned (views of the same memory need
    nothing)."""
    if isinstance(captured, np.ndarray):
        if new is captured:
            return
        if (new.__array_interface__["data"][0] == captured.__array_interface__["data"][0]
                and new.strides == captured.strides and new.shape == captured.shape):
            return
        if new.shape != captured.shape:
            raise RuntimeError(f"CUDA graph replay: {name} returned shape {new.shape}, captured {captured.shape}")
        np.copyto(captured, new, casting="unsafe")
    elif isinstance(captured, (tuple, list)):
        for c, n in zip(captured, new):
            _write_back(c, n, name)
    elif isinstance(captured, dict):
        for k, c in captured.items():
            _write_back(c, new[k], name)
