"""The two unpicklers of ``load``: the restricted one of ``weights_only=True`` (the default) and the full one.

The restricted unpickler is Python's own pickle machine with every opcode that can reach code replaced: a
global resolves only through an allowlist (never by importing), a reduce or newobj calls only allowlisted
callables, build sets state only on allowlisted types, append/setitem act only on lists and dicts, and
extension codes, INST/OBJ and out-of-band buffers are refused. Anything else raises
``pickle.UnpicklingError`` with PyTorch's messages. The allowlist is PyTorch's: tensors, storages, dtypes,
devices, ``torch.Size``, ``OrderedDict``/``Counter``/``set``, plus what the user adds with
:func:`add_safe_globals` or :class:`safe_globals`. Tuples are built no deeper than :data:`MAX_TUPLE_DEPTH`,
since hashing a deeper one (as a dict key) overflows the C stack.
"""
from __future__ import annotations

import _compat_pickle
import collections
import importlib
import pickle
import struct
import sys
from collections.abc import Callable
from typing import Any, ClassVar

from ..nn.parameter import Parameter
from ..tensor import Tensor
from ._rebuild import CALLABLE_GLOBALS, TORCH_GLOBALS, set_tensor_state, unsupported_torch_global

UnpicklingError = pickle.UnpicklingError

# modules never admitted, even when the user allowlists something from them (as in PyTorch)
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
MAX_TUPLE_DEPTH = 1000

SafeGlobal = Callable[..., Any] | tuple[Callable[..., Any], str]
_marked_safe: set[Any] = set()


def add_safe_globals(safe_globals: list[SafeGlobal]) -> None:
    """Mark globals (classes, functions) as safe for ``weights_only`` loading: checkpoints may then create
    and call them. An entry is the object, or ``(object, "module.qualname")`` to match the name the checkpoint
    uses.

    >>> torch.serialization.add_safe_globals([MyConfig])  # doctest: +SKIP
    """
    global _marked_safe
    _marked_safe = _marked_safe.union(set(safe_globals))


def get_safe_globals() -> list[SafeGlobal]:
    """The globals the user marked safe for ``weights_only`` loading."""
    return list(_marked_safe)


def clear_safe_globals() -> None:
    """Forget every global the user marked safe for ``weights_only`` loading."""
    global _marked_safe
    _marked_safe = set()


class safe_globals:
    """Context manager marking globals safe for ``weights_only`` loading inside the block only.

    >>> with torch.serialization.safe_globals([MyConfig]):  # doctest: +SKIP
    ...     ckpt = torch.load("ckpt.pt")
    """

    def __init__(self, safe_globals: list[SafeGlobal]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc: Any) -> None:
        global _marked_safe
        _marked_safe = _marked_safe - set(self.safe_globals)


class _Passthrough(Exception):
    """Carries an error of the caller's making (a bad allowlist entry, a failing map_location) through the
    conversion of malformed-pickle errors into UnpicklingError."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def _user_allowed() -> dict[str, Any]:
    try:
        return _user_allowed_table()
    except (ValueError, TypeError) as e:
        raise _Passthrough(e) from None


def _user_allowed_table() -> dict[str, Any]:
    rc: dict[str, Any] = {}
    for f in _marked_safe:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                                 f"length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                                f"{type(f[1])}")
            rc[f[1]] = f[0]
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


def _compat(module: str, name: str) -> tuple[str, str]:
    # protocol 2 (PyTorch's default) spells Python 3 names the Python 2 way: ``__builtin__ set``
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _ours(full: str) -> str | None:
    # ``torch.nn.modules.linear.Linear`` in a checkpoint is our ``minitorch_gpu.nn.modules.linear.Linear``
    if full.startswith("torch."):
        return "minitorch_gpu." + full[len("torch."):]
    return None


def our_global(full: str, may_import: bool) -> Any:
    """Our object for PyTorch's global ``torch.M.Name`` (None if there is none): ``Name`` in our module mirroring
    ``torch.M``, else in the nearest package above it that has it. PyTorch's packages re-export what their
    submodules define, so ``torch.nn.modules.instancenorm.InstanceNorm1d`` is our ``nn.InstanceNorm1d`` wherever
    we define it. Without ``may_import`` only modules already imported are consulted, so a restricted load
    never runs a module's code."""
    if not full.startswith("torch."):
        return None
    module, _, name = full.rpartition(".")
    parts = ("minitorch_gpu" + module[len("torch"):]).split(".")
    while parts:
        modname = ".".join(parts)
        mod = sys.modules.get(modname)
        if mod is None and may_import:
            try:
                mod = importlib.import_module(modname)
            except ImportError:
                mod = None
        if mod is not None:
            obj: Any = mod
            for attr in name.split("."):  # a nested class's qualified name
                obj = getattr(obj, attr, None)
                if obj is None:
                    break
            if obj is not None:
                return obj
        parts.pop()
    return None


def _shown(full: str) -> str:
    # PyTorch names builtins without their module in its messages
    return full[len("builtins."):] if full.startswith("builtins.") else full


def restricted_global(module: str, name: str) -> Any:
    module, name = _compat(module, name)
    full = f"{module}.{name}"
    if module in _BLOCKED_MODULES:
        raise UnpicklingError(f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
    if full in TORCH_GLOBALS:
        return TORCH_GLOBALS[full]
    why = unsupported_torch_global(module, name)
    if why is not None:
        raise UnpicklingError(why)
    user = _user_allowed()
    if full in user:
        return user[full]
    alias = _ours(full)
    if alias is not None:
        if alias in user:
            return user[alias]
        # the user allowlisted our class, which PyTorch's file names by PyTorch's own module path
        obj = our_global(full, may_import=False)
        if obj is not None and any(obj is v for v in user.values()):
            return obj
    shown = _shown(full)
    raise UnpicklingError(
        f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
        f"`torch.serialization.add_safe_globals([{shown}])` or the `torch.serialization.safe_globals([{shown}])` "
        "context manager to allowlist this global if you trust this class/function.")


def _is_user_allowed(obj: Any) -> bool:
    return any(obj is v for v in _user_allowed().values())


def _may_call(func: Any) -> bool:
    return id(func) in CALLABLE_GLOBALS or _is_user_allowed(func)


def _may_create(cls: Any) -> bool:
    return isinstance(cls, type) and (any(cls is v for v in TORCH_GLOBALS.values()) or _is_user_allowed(cls))


def _unsupported_op(code: int) -> Callable[[Any], None]:
    def refuse(self: Any) -> None:
        raise UnpicklingError(f"Unsupported operand {code}")
    return refuse


class RestrictedUnpickler(pickle._Unpickler):  # type: ignore[name-defined, misc]
    """Python's pickle machine with the risky opcodes replaced (see the module docstring)."""

    dispatch: ClassVar[dict[int, Callable[[Any], None]]] = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]
    # the pickle machine's state, which the stubs of pickle._Unpickler do not declare
    stack: list[Any]
    metastack: list[Any]
    append: Callable[[Any], None]
    readline: Callable[[], bytes]
    pop_mark: Callable[[], list[Any]]

    def __init__(self, file: Any, persistent_load: Callable[[Any], Any], encoding: str = "utf-8") -> None:
        super().__init__(file, encoding=encoding)
        self._persistent_load = persistent_load
        self._depth: dict[int, tuple[tuple[Any, ...], int]] = {}

    def find_class(self, module: str, name: str) -> Any:
        return restricted_global(module, name)

    # ------------------------------------------------------------------ calls and state
    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if not _may_call(func):
            msg = f"Trying to call reduce for unrecognized function {func}"
            if hasattr(func, "__self__"):
                msg += f" which belongs to {func.__self__}"
            raise UnpicklingError(msg)
        if not isinstance(args, tuple):
            raise UnpicklingError(f"the arguments of a reduce must be a tuple, got {type(args).__name__}")
        self.stack[-1] = func(*args)

    def _new(self, cls: Any, args: Any, kwargs: Any) -> Any:
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise UnpicklingError("the arguments of a newobj must be a tuple (and a dict)")
        if cls is Parameter:
            return Parameter(*args, **kwargs)
        if not _may_create(cls):
            raise UnpicklingError("Can only create new object for nn.Parameter or classes allowlisted via "
                                  f"`add_safe_globals` but got {cls}")
        return cls.__new__(cls, *args, **kwargs)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, {}))

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, kwargs))

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, Tensor) and type(inst) in (Tensor, Parameter):
            set_tensor_state(inst, state)
        elif type(inst) is collections.OrderedDict:
            # a state dict's ``_metadata`` arrives this way
            if not isinstance(state, dict) or not all(type(k) is str for k in state):
                raise UnpicklingError("an OrderedDict's state must be a dict with string keys")
            inst.__dict__.update(state)
        elif _may_create(type(inst)):
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
                return
            slotstate = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            if state:
                inst.__dict__.update(state)
            if slotstate:
                for k, v in slotstate.items():
                    setattr(inst, k, v)
        else:
            raise UnpicklingError("Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                  f"`add_safe_globals`, but got {type(inst)}")

    # ------------------------------------------------------------------ containers
    def load_append(self) -> None:
        item = self.stack.pop()
        target = self.stack[-1]
        if type(target) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(target)}")
        target.append(item)

    def load_appends(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(target)}")
        target.extend(items)

    def _check_dict(self, opcode: str) -> Any:
        target = self.stack[-1]
        if type(target) not in (dict, collections.OrderedDict, collections.Counter):
            raise UnpicklingError(f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, "
                                  f"but got {type(target)}")
        return target

    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._check_dict("SETITEM")[key] = value

    def load_setitems(self) -> None:
        items = self.pop_mark()
        target = self._check_dict("SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not set:
            raise UnpicklingError(f"Can only add items to sets, but got {type(target)}")
        target.update(items)

    def _tuple(self, items: list[Any]) -> tuple[Any, ...]:
        depth = 1
        for x in items:
            if type(x) is tuple:
                depth = max(depth, self._depth.get(id(x), ((), 1))[1] + 1)
        if depth > MAX_TUPLE_DEPTH:
            raise UnpicklingError(f"the pickle nests tuples more than {MAX_TUPLE_DEPTH} deep")
        t = tuple(items)
        self._depth[id(t)] = (t, depth)  # (holding t keeps its id from being reused)
        return t

    def load_tuple(self) -> None:
        items = self.pop_mark()  # (before reading self.append, which pop_mark rebinds)
        self.append(self._tuple(items))

    def load_tuple1(self) -> None:
        self.stack[-1] = self._tuple(self.stack[-1:])

    def load_tuple2(self) -> None:
        self.stack[-2:] = [self._tuple(self.stack[-2:])]

    def load_tuple3(self) -> None:
        self.stack[-3:] = [self._tuple(self.stack[-3:])]

    def persistent_load(self, pid: Any) -> Any:
        try:
            return self._persistent_load(pid)
        except (UnpicklingError, RuntimeError):
            raise
        except Exception as e:
            raise _Passthrough(e) from None

    def load_binpersid(self) -> None:
        self.append(self.persistent_load(self.stack.pop()))

    def load_persid(self) -> None:
        try:
            pid = self.readline()[:-1].decode("ascii")
        except UnicodeDecodeError:
            raise UnpicklingError("persistent IDs in protocol 0 must be ASCII strings") from None
        self.append(self.persistent_load(pid))


_OVERRIDES = {
    pickle.REDUCE: RestrictedUnpickler.load_reduce, pickle.NEWOBJ: RestrictedUnpickler.load_newobj,
    pickle.NEWOBJ_EX: RestrictedUnpickler.load_newobj_ex, pickle.BUILD: RestrictedUnpickler.load_build,
    pickle.APPEND: RestrictedUnpickler.load_append, pickle.APPENDS: RestrictedUnpickler.load_appends,
    pickle.SETITEM: RestrictedUnpickler.load_setitem, pickle.SETITEMS: RestrictedUnpickler.load_setitems,
    pickle.ADDITEMS: RestrictedUnpickler.load_additems, pickle.TUPLE: RestrictedUnpickler.load_tuple,
    pickle.TUPLE1: RestrictedUnpickler.load_tuple1, pickle.TUPLE2: RestrictedUnpickler.load_tuple2,
    pickle.TUPLE3: RestrictedUnpickler.load_tuple3, pickle.BINPERSID: RestrictedUnpickler.load_binpersid,
    pickle.PERSID: RestrictedUnpickler.load_persid,
}
for _op, _fn in _OVERRIDES.items():
    RestrictedUnpickler.dispatch[_op[0]] = _fn
# opcodes that create objects outside the allowlist's reach, or need buffers we never pass
for _op in (pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4, pickle.NEXT_BUFFER,
            pickle.READONLY_BUFFER):
    RestrictedUnpickler.dispatch[_op[0]] = _unsupported_op(_op[0])
for _code in range(256):
    RestrictedUnpickler.dispatch.setdefault(_code, _unsupported_op(_code))


def restricted_load(file: Any, persistent_load: Callable[[Any], Any], encoding: str = "utf-8") -> Any:
    """One object from ``file`` through the restricted unpickler; malformed data raises UnpicklingError."""
    try:
        return RestrictedUnpickler(file, persistent_load, encoding=encoding).load()
    except _Passthrough as p:
        raise p.error from None
    except (UnpicklingError, RuntimeError):
        raise
    except (EOFError, IndexError, KeyError, ValueError, TypeError, AttributeError, OverflowError, struct.error,
            MemoryError, UnicodeError) as e:
        raise UnpicklingError(f"the pickle data is corrupt or truncated ({type(e).__name__}: {e})") from None


def full_unpickler(pickle_module: Any, file: Any, persistent_load: Callable[[Any], Any],
                   **pickle_load_args: Any) -> Any:
    """An unpickler of ``pickle_module`` that loads anything, with ``torch...`` names mapped onto ours."""

    class TorchUnpickler(pickle_module.Unpickler):  # type: ignore[misc, name-defined]
        def find_class(self, module: str, name: str) -> Any:
            mod, nm = _compat(module, name)
            if mod == "torch.tensor":
                mod = "torch._tensor"  # renamed in PyTorch 1.8; old checkpoints use the old name
            full = f"{mod}.{nm}"
            if full in TORCH_GLOBALS:
                return TORCH_GLOBALS[full]
            why = unsupported_torch_global(mod, nm)
            if why is not None:
                raise RuntimeError(why)
            alias = _ours(full)
            if alias is not None or mod == "torch":
                ours = "minitorch_gpu" if mod == "torch" else alias.rsplit(".", 1)[0]  # type: ignore[union-attr]
                try:
                    return super().find_class(ours, nm)
                except (ImportError, AttributeError):
                    found = our_global(full, may_import=True)
                    if found is not None:
                        return found
                    raise AttributeError(f"this checkpoint needs {full}, which minitorch_gpu does not have "
                                         f"(looked for {ours}.{nm})") from None
            return super().find_class(module, name)

    unpickler = TorchUnpickler(file, **pickle_load_args)
    unpickler.persistent_load = persistent_load
    return unpickler
