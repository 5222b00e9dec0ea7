"""``Module``: the base class of every layer and model.

A module keeps its state in three ordered registries that ``__setattr__`` maintains: ``_parameters``
(Parameters), ``_buffers`` (tensors that are state but not learnable, e.g. BatchNorm's running mean) and
``_modules`` (child modules). Everything that walks a model (``parameters()``, ``state_dict()``, ``to()``,
``train()``, ``repr``) walks these registries, so a model is a tree of modules whose leaves hold the tensors.

``__call__`` runs ``forward`` between the forward pre-hooks and forward hooks; full backward hooks are
implemented by passing the module's tensor inputs and outputs through an identity autograd Function whose
graph nodes carry the hooks, so that ``grad_input`` really is the gradient with respect to the module's inputs.
"""
import functools
import itertools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Mapping
from typing import Any

from ..autograd.function import Function
from .. import _op_range
from ..autograd.grad_mode import _state, no_grad
from ..tensor import Tensor
from ..utils._grads import zero_grads
from ..utils.hooks import add_hook
from .parameter import Buffer, Parameter

__all__ = ["Module"]

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

# hooks that apply to every module (register_module_forward_hook & co.)
_global_forward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict[int, bool] = OrderedDict()
_global_forward_hooks_always_called: OrderedDict[int, bool] = OrderedDict()
_global_backward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_is_full_backward_hook = None


def _typename(obj):
    """PyTorch's ``torch.typename``: a tensor's type string, else the qualified name of obj's type."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def _addindent(text, num_spaces):
    """Indent every line but the first (how nested module reprs are laid out)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * num_spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys the model expected but did not get, and the reverse."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# ---------------------------------------------------------------------- global hooks

def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` before every module's forward; it may return replacement args."""
    return add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(module, args, output)`` after every module's forward; it may return a replacement output."""
    handle = add_hook(_global_forward_hooks, hook,
                      flag_tables=(_global_forward_hooks_with_kwargs, _global_forward_hooks_always_called))
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` for every module, before its input gradients are computed."""
    return add_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` for every module once its input gradients are known."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks as a global Module "
                           "hook. Please use only one of them.")
    _global_is_full_backward_hook = True
    return add_hook(_global_backward_hooks, hook)


# ---------------------------------------------------------------------- backward hooks

class BackwardHookFunction(Function):
    """Identity on tensors whose graph node is where a module's full backward hooks attach."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class _BackwardHook:
    """Wires one forward call's backward hooks: the output-side identity node collects ``grad_output`` (and
    runs the pre-hooks, which may replace it); the input-side identity node then sees ``grad_input`` and runs
    the hooks, which may replace it."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = -1
        self.input_index = None
        self.n_outputs = -1
        self.output_index = None

    @staticmethod
    def _pack(indices, values, size):
        res = [None] * size
        for i, v in zip(indices, values):
            res[i] = v
        return tuple(res)

    def _wrap(self, args, attach):
        """Pass the tensors among ``args`` through the identity Function and let ``attach`` hook its node;
        returns (new args, positions of the tensors) or (args, None) when nothing needs a gradient."""
        idx, tensors, needs = [], [], False
        for i, a in enumerate(args):
            if isinstance(a, Tensor):
                idx.append(i)
                tensors.append(a)
                needs = needs or a.requires_grad
        if not (needs and _state.grad):
            return args, None
        new = BackwardHookFunction.apply(*tensors)
        node = next((t.grad_fn for t in new if t.grad_fn is not None), None)
        if node is None:
            raise RuntimeError("Error while setting up backward hooks.")
        attach(node)
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args):
        def attach(node):
            def hook(grad_input, _):
                if self.grad_outputs is None:
                    # the gradient reached the inputs without passing through the outputs (double backward)
                    return None
                res = self._pack(self.input_index, grad_input, self.n_inputs)
                for h in self.user_hooks:
                    out = h(self.module, res, self.grad_outputs)
                    if out is None:
                        continue
                    if len(out) != len(res):
                        raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got "
                                           f"{len(out)}, but expected {len(res)}")
                    res = out
                self.grad_outputs = None
                return tuple(res[i] for i in self.input_index)
            node.register_hook(hook)

        res, idx = self._wrap(args, attach)
        self.n_inputs = len(args)
        self.input_index = idx
        return res

    def setup_output_hook(self, result):
        def attach(node):
            def hook(_, grad_output):
                self.grad_outputs = self._pack(self.output_index, grad_output, self.n_outputs)
                for h in self.user_pre_hooks:
                    new = h(self.module, self.grad_outputs)
                    if new is None:
                        continue
                    if len(new) != len(self.grad_outputs):
                        raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                           f"{len(new)}, but expected {len(self.grad_outputs)}")
                    self.grad_outputs = tuple(new)
                local = self.grad_outputs
                if self.input_index is None:
                    # no input needs a gradient: the input-side node does not exist, so call the hooks here
                    grad_inputs = (None,) * self.n_inputs
                    if self.user_hooks:
                        warnings.warn("Full backward hook is firing when gradients are computed with respect to "
                                      "module outputs since no inputs require gradients. See "
                                      "Module.register_full_backward_hook for more details.", stacklevel=5)
                    for h in self.user_hooks:
                        r = h(self.module, grad_inputs, self.grad_outputs)
                        if r is not None and not (isinstance(r, tuple) and all(x is None for x in r)):
                            raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                               "always return None or None for all gradients.")
                    self.grad_outputs = None
                return tuple(local[i] for i in self.output_index)
            node.register_hook(hook)

        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._wrap(args, attach)
        self.n_outputs = len(args)
        self.output_index = idx
        return res if is_tuple else res[0]


# ---------------------------------------------------------------------- Module

def _check_parameter_name(name):
    if not isinstance(name, str):
        raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError('parameter name can\'t contain "."')
    if name == "":
        raise KeyError('parameter name can\'t be empty string ""')


def _check_parameter_value(name, param):
    if not isinstance(param, Parameter):
        raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                        "(minitorch_gpu.nn.Parameter or None required)")
    if param.grad_fn is not None:
        raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                         f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                         "the value in the forward() method.")


def _forward_unimplemented(self, *input):
    """Subclasses define the computation here."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


_HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks", "_forward_hooks_with_kwargs",
               "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")

_PENDING = "_minitorch_gpu_pending_loads"


class Module:
    """Base class for all neural network modules. Subclasses call ``super().__init__()`` first, assign their
    layers and Parameters as attributes (which registers them) and define ``forward``."""

    dump_patches = False
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if not self.call_super_init and args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_is_full_backward_hook"] = None
        for name in _HOOK_DICTS:
            d[name] = OrderedDict()
        d["_modules"] = {}
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ------------------------------------------------------------------ registration
    def register_buffer(self, name, tensor, persistent=True):
        """Add a buffer: module state that is not a parameter (``persistent=False`` keeps it out of
        ``state_dict``). ``tensor`` may be None (the name is reserved; nothing is saved)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(minitorch_gpu Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Add a Parameter (or reserve the name with None, e.g. ``bias=False``)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_parameter_name(name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        _check_parameter_value(name, param)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Add a child module (None reserves the name)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def get_submodule(self, target):
        """The module at dotted path ``target`` (``""`` is self); AttributeError naming the missing piece."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Replace (or, unless ``strict``, add) the module at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(".".join(atoms[:-1])) if len(atoms) > 1 else self
        name = atoms[-1]
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """The Parameter at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        buf = getattr(mod, name)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buf

    def get_extra_state(self):
        """Override (with ``set_extra_state``) to save non-tensor state in ``state_dict``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        """Override (with ``get_extra_state``) to restore what ``get_extra_state`` saved."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    # ------------------------------------------------------------------ attribute protocol
    def __getattr__(self, name):
        d = self.__dict__
        params = d.get("_parameters")
        if params is not None and name in params:
            return params[name]
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            return buffers[name]
        modules = d.get("_modules")
        if modules is not None and name in modules:
            return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__

        def remove_from(*containers):
            for c in containers:
                if name in c:
                    if isinstance(c, dict):
                        del c[name]
                    else:
                        c.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            # checked before the name leaves the other registries, so a rejected assignment changes nothing
            _check_parameter_name(name)
            _check_parameter_value(name, value)
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(minitorch_gpu.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(minitorch_gpu.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(minitorch_gpu.nn.Buffer, minitorch_gpu.Tensor or None expected)")
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            if isinstance(value, Buffer):
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = dir(self.__class__) + list(self.__dict__) + list(self._parameters) + list(self._modules) + \
            list(self._buffers)
        return sorted(k for k in keys if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        # modules pickled before a registry existed still unpickle into a working module
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())
        self.__dict__.setdefault("_is_full_backward_hook", None)

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (module_prefix + "." + k if module_prefix else k), v

    def parameters(self, recurse=True):
        """Every parameter of this module (and, with ``recurse``, of its descendants), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, Parameter)`` pairs; a tied parameter is reported once, under its first name,
        unless ``remove_duplicate=False``."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer (persistent or not) of this module and, with ``recurse``, its descendants."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, buffer)`` pairs."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """Immediate child modules, each once."""
        for _, m in self.named_children():
            yield m

    def named_children(self):
        """``(name, module)`` for immediate children, each module once."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def modules(self):
        """This module and all its descendants, each once, depth first."""
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted name, module)`` for this module (name ``prefix``) and its descendants, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode=True):
        """Set training mode on this module and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """``train(False)``: dropout off, batch norm uses running statistics."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default) or to zeros in place."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant (children first) and then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ conversion
    def _apply(self, fn, recurse=True):
        """Convert every parameter, gradient and buffer with ``fn``. Parameters stay the same objects (their
        data is replaced), so optimizers holding them keep working."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param:
                param.data = new
            grad = param.grad
            if grad is not None:
                with no_grad():
                    new_grad = fn(grad)
                if new_grad is not grad:
                    grad.data = new_grad
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``, ``to(memory_format=...)``:
        move/cast parameters and buffers in place (dtype applies to floating tensors only); returns self."""
        from ..ops.conversion import _parse_to_args
        device, dtype, non_blocking, _, fmt = _parse_to_args(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            dt = dtype if (t.is_floating_point() or t.is_complex()) else None
            if fmt is not None and t.dim() in (4, 5):
                return t.to(device, dt, non_blocking, memory_format=fmt)
            return t.to(device, dt, non_blocking)

        return self._apply(convert)

    def cuda(self, device=None):
        """Move every parameter and buffer to a GPU; returns self."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        """Move every parameter and buffer to host memory; returns self."""
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type``; returns self."""
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        """Floating parameters and buffers to float32; returns self."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Floating parameters and buffers to float64; returns self."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Floating parameters and buffers to float16; returns self."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        """Floating parameters and buffers to bfloat16; returns self."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device, recurse=True):
        """Replace every parameter and buffer by an uninitialised tensor of the same shape and dtype on
        ``device`` (to be filled by ``reset_parameters`` or ``load_state_dict``); returns self."""
        from ..ops.creation import empty_like
        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    # ------------------------------------------------------------------ state_dict
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters and persistent buffers (not its children's) in ``destination``."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An ordered dict of every parameter and persistent buffer under dotted names, detached from autograd
        (``keep_vars=True`` keeps the tensors themselves). Tied parameters appear under each name."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            if len(args) > 3:
                raise TypeError(f"state_dict() takes at most 3 positional arguments ({len(args)} given)")
            destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if isinstance(hook, _PublicStateDictHook):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Load this module's own parameters and buffers from ``state_dict`` (keys under ``prefix``), noting
        problems in the three lists. Subclasses override it to adapt old checkpoints and call super().
        Inside ``load_state_dict`` the copies are only queued: they happen once every module has been
        checked, so a failed load changes nothing."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        for k, v in self._buffers.items():
            if v is not None and k not in self._non_persistent_buffers_set:
                local_state[k] = v
        assign = local_metadata.get("assign_to_params_buffers", False)
        pending = local_metadata.get(_PENDING)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected minitorch_gpu.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            # checkpoints from before 0-d tensors stored scalars as 1-element vectors
            if param.dim() == 0 and value.dim() == 1:
                value = value[0]
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            if assign:
                if isinstance(param, Parameter):
                    if not isinstance(value, Parameter):
                        value = Parameter(value, requires_grad=param.requires_grad)
                    else:
                        value.requires_grad_(param.requires_grad)
                action = ("assign", self, name, value)
            else:
                try:
                    param._check_inplace()
                except Exception as ex:
                    error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model '
                                      f"are {param.size()} and whose dimensions in the checkpoint are "
                                      f"{value.size()}, an exception occurred : {ex.args}.")
                    continue
                action = ("copy", param, value)
            if pending is not None:
                pending.append(action)
            else:
                _run_load_action(action)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                action = ("extra", self, state_dict[extra_key])
                if pending is not None:
                    pending.append(action)
                else:
                    _run_load_action(action)
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_key:
                    head, dot, _ = key[len(prefix):].partition(".")
                    if dot:
                        if head not in self._modules:
                            unexpected_keys.append(key)
                    elif head not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict`` into this module (in place, so optimizers keep
        working; ``assign=True`` puts the given tensors in instead). With ``strict``, missing and unexpected
        keys are errors; shape mismatches always are. On any error a RuntimeError lists every problem and
        nothing has been loaded. Returns ``(missing_keys, unexpected_keys)``."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        pending = []
        visited = []

        def load(module, local_sd, prefix=""):
            local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            local_metadata[_PENDING] = pending
            module._load_from_state_dict(local_sd, prefix, local_metadata, True, missing_keys, unexpected_keys,
                                         error_msgs)
            visited.append(module)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_sd.items() if k.startswith(child_prefix)}, child_prefix)

        load(self, state_dict)

        def errors():
            msgs = list(error_msgs)
            if strict:
                if unexpected_keys:
                    msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected_keys)))
                if missing_keys:
                    msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing_keys)))
            if msgs:
                return RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                    self.__class__.__name__, "\n\t".join(msgs)))
            return None

        post_hooks = [m for m in visited if m._load_state_dict_post_hooks]
        if error_msgs or not post_hooks:
            err = errors()
            if err is not None:
                raise err
            _run_load_actions(pending)
            return _IncompatibleKeys(missing_keys, unexpected_keys)
        # post hooks may clear missing/unexpected keys (so the load succeeds) and expect to see the loaded
        # values: load, run them, and put the old values back if the load still fails
        undo = _run_load_actions(pending, keep_undo=True)
        keys = _IncompatibleKeys(missing_keys, unexpected_keys)
        try:
            for module in visited:
                for hook in module._load_state_dict_post_hooks.values():
                    out = hook(module, keys)
                    if out is not None:
                        raise RuntimeError("Hooks registered with ``register_load_state_dict_post_hook`` are not"
                                           "expected to return new values, if incompatible_keys need to be "
                                           "modified,it should be done inplace.")
            err = errors()
            if err is not None:
                raise err
        except BaseException:
            _undo_load_actions(undo)
            raise
        return keys

    # ------------------------------------------------------------------ hooks
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``) before forward; it may
        return replacement args (or an ``(args, kwargs)`` pair). Returns a removable handle."""
        handle = add_hook(self._forward_pre_hooks, hook, prepend=prepend,
                          flag_tables=(self._forward_pre_hooks_with_kwargs,))
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) after forward; it may
        return a replacement output. ``always_call`` runs it even when forward raises."""
        handle = add_hook(self._forward_hooks, hook, prepend=prepend,
                          flag_tables=(self._forward_hooks_with_kwargs, self._forward_hooks_always_called))
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` before the gradients with respect to the module's inputs are computed;
        it may return a replacement ``grad_output`` tuple."""
        return add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` once the gradients with respect to the module's tensor
        inputs are known (None for non-tensor inputs and those that need no gradient); it may return a
        replacement ``grad_input`` tuple."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        return add_hook(self._backward_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook):
        """Old-style hook on the last autograd node of the output: ``hook(module, grad_input, grad_output)``
        sees that node's gradients. Prefer :meth:`register_full_backward_hook`."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before this module's state is collected by ``state_dict``."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after ``state_dict`` (may edit it in place)."""
        return add_hook(self._state_dict_hooks, _PublicStateDictHook(hook))

    def _register_state_dict_hook(self, hook):
        return add_hook(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before this module loads its entries."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        return add_hook(self._load_state_dict_pre_hooks, functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after ``load_state_dict``; it may edit the key lists in place
        (e.g. to accept a missing key)."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    def _get_backward_hooks(self):
        full, non_full = [], []
        if _global_is_full_backward_hook is True:
            full += _global_backward_hooks.values()
        elif _global_is_full_backward_hook is False:
            non_full += _global_backward_hooks.values()
        if self._is_full_backward_hook is True:
            full += self._backward_hooks.values()
        elif self._is_full_backward_hook is False:
            non_full += self._backward_hooks.values()
        return full, non_full

    # ------------------------------------------------------------------ calling
    def _has_call_hooks(self):
        """Whether calling the module would run a hook (its own or a global one): the condition of ``__call__``'s
        fast path, which stays spelled out there because it runs on every call."""
        return bool(self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                    or self._backward_pre_hooks or _global_forward_pre_hooks or _global_forward_hooks
                    or _global_backward_hooks or _global_backward_pre_hooks)

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or _global_forward_pre_hooks or _global_forward_hooks
                or _global_backward_hooks or _global_backward_pre_hooks):
            if _op_range.enabled:
                return self._forward_in_range(args, kwargs)
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    _call_impl = __call__

    def _forward_in_range(self, args, kwargs):
        """``forward`` inside an op range (NVTX, the profiler's ``with_modules``)."""
        _op_range.push(_op_range.MODULE, type(self).__name__)
        try:
            return self.forward(*args, **kwargs)
        finally:
            _op_range.pop()

    def _call_with_hooks(self, args, kwargs):
        state = {"result": None, "args": args, "kwargs": kwargs}
        called = set()
        try:
            return self._run_hooked(state, called)
        except Exception:
            self._run_always_called_hooks(state, called)
            raise

    def _run_hooked(self, state, called):
        args, kwargs = state["args"], state["kwargs"]
        full, non_full = [], []
        if self._backward_hooks or _global_backward_hooks:
            full, non_full = self._get_backward_hooks()
        pre = []
        if self._backward_pre_hooks or _global_backward_pre_hooks:
            pre = list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())

        for hook_id, hook in itertools.chain(_global_forward_pre_hooks.items(), self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if isinstance(r, tuple) and len(r) == 2:
                        args, kwargs = r
                    else:
                        raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs),"
                                           f" but got {r}.")
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
            state["args"], state["kwargs"] = args, kwargs

        bw = None
        if full or pre:
            bw = _BackwardHook(self, full, pre)
            args = bw.setup_input_hook(args)

        if _op_range.enabled:
            result = self._forward_in_range(args, kwargs)
        else:
            result = self.forward(*args, **kwargs)
        state["result"] = result
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
            if hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                called.add(hook_id)
            if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                r = hook(self, args, kwargs, result)
            else:
                r = hook(self, args, result)
            if r is not None:
                result = r
                state["result"] = result

        if bw is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(result)}", stacklevel=3)
            else:
                result = bw.setup_output_hook(result)

        if non_full:
            var = result
            while not isinstance(var, Tensor):
                if isinstance(var, dict):
                    var = next(v for v in var.values() if isinstance(v, Tensor))
                else:
                    var = var[0]
            fn = var.grad_fn
            if fn is not None:
                for hook in non_full:
                    fn.register_hook(functools.partial(_call_module_hook, weakref.ref(self), hook))
        return result

    def _run_always_called_hooks(self, state, called):
        args, kwargs, result = state["args"], state["kwargs"], state["result"]
        for hook_id, hook in itertools.chain(_global_forward_hooks.items(), self._forward_hooks.items()):
            always = hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called
            if not always or hook_id in called:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r
            except Exception as e:
                warnings.warn("forward hook with ``always_call=True`` raised an exception that was silenced as "
                              f"another error was raised in forward: {e}", stacklevel=3)

    # ------------------------------------------------------------------ printing
    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        """The text inside this module's parentheses in its repr (layers report their configuration here)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


class _PublicStateDictHook:
    """Marks a hook registered through the public API: it must edit the state dict in place, not return
    a new one (the private ``_register_state_dict_hook`` may)."""

    __slots__ = ("hook",)

    def __init__(self, hook):
        self.hook = hook

    def __call__(self, *args):
        return self.hook(*args)


def _call_module_hook(module_ref, hook, grad_input, grad_output):
    return hook(module_ref(), grad_input, grad_output)


def _run_load_action(action):
    kind = action[0]
    if kind == "copy":
        _, dst, src = action
        with no_grad():
            dst.copy_(src)
    elif kind == "assign":
        _, module, name, value = action
        with no_grad():
            setattr(module, name, value)
    else:
        _, module, value = action
        module.set_extra_state(value)


def _run_load_actions(actions, keep_undo=False):
    """Carry out queued loads; with ``keep_undo`` also return what ``_undo_load_actions`` needs."""
    undo = []
    for action in actions:
        if keep_undo:
            kind = action[0]
            if kind == "copy":
                with no_grad():
                    undo.append(("copy", action[1], action[1].clone()))
            elif kind == "assign":
                _, module, name, _ = action
                undo.append(("assign", module, name, getattr(module, name)))
            else:
                _, module, _ = action
                undo.append(("extra", module, module.get_extra_state()))
        _run_load_action(action)
    return undo


def _undo_load_actions(undo):
    for action in reversed(undo):
        _run_load_action(action)
