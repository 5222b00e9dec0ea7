"""The Optimizer base class: parameter groups, per-parameter state, hooks, and state_dict.

Every optimizer follows one shape (PyTorch's): ``step()`` runs under ``no_grad``, ``_init_group`` gathers a
group's parameters, gradients and state into lists, and one of three implementations with the same
signature updates them: ``_single_tensor_<name>`` (the reference: a loop of in-place tensor ops),
``_multi_tensor_<name>`` (foreach: each operation over the whole list) and ``_fused_<name>`` (one backend
primitive per device and dtype).
"""
import functools
import math
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from copy import deepcopy
from itertools import chain
from typing import Any, TypeAlias

from .. import _dtype
from ..autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from ..tensor import Tensor
from ..utils._foreach_utils import _get_fused_kernels_supported_devices, _group_tensors_by_device_and_dtype
from ..utils._grads import zero_grads
from ..utils.hooks import add_hook
from . import _foreach as F

__all__ = ["Optimizer", "ParamsT", "StateDict", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook",
           "required"]

ParamsT: TypeAlias = Iterable[Tensor] | Iterable[tuple[str, Tensor]] | Iterable[dict[str, Any]]
"""What an optimizer takes: tensors, ``(name, tensor)`` pairs, or parameter groups (dicts with ``"params"``)."""
StateDict: TypeAlias = dict[str, Any]
DeviceDict: TypeAlias = dict[Any, Tensor]
"""Tensors keyed by device (PyTorch's optimizers keep one copy of a tensor hyperparameter per device)."""
DeviceDtypeDict: TypeAlias = dict[Any, Tensor]
"""Tensors keyed by ``(device, dtype)``."""

# hook(optimizer, args, kwargs), keyed by their RemovableHandle's id
_StepHook: TypeAlias = Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
_global_optimizer_pre_hooks: OrderedDict[int, _StepHook] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, _StepHook] = OrderedDict()

# the devices with a fused primitive: one kernel launch per group on a GPU, one compiled pass on the CPU (each
# falling back to the backend's array-module body for what the compiled code does not take)
_FUSED_DEVICES = _get_fused_kernels_supported_devices()


class _RequiredParameter:
    """Marks a hyperparameter that has no default and must be given for every parameter group."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    """PyTorch's ``typename``: ``minitorch_gpu.FloatTensor`` for a tensor, the qualified type name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = getattr(cls, "__module__", None)
    if module in (None, "builtins", "__builtin__"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


def _get_value(x):
    """A Python number from a 0-d tensor (or the number itself)."""
    return x.item() if isinstance(x, Tensor) else x


def _amp_unscale_or_skip(grads: list[Tensor], grad_scale: Tensor | None, found_inf: Tensor | None) -> bool:
    """A fused step's share of GradScaler's work (``grad_scale``/``found_inf``, as PyTorch's fused optimizers take
    them): True when ``found_inf`` says to skip the step; otherwise the gradients are divided by ``grad_scale`` in
    place, as PyTorch's fused kernels leave them. Reading the flag is the step's one wait for the device."""
    if found_inf is not None and float(found_inf.item()) != 0.0:
        return True
    if grad_scale is not None:
        for g in grads:
            g.div_(grad_scale.to(g.device))
    return False


def _to_scalar(x):
    """A 1-element tensor hyperparameter squeezed to 0-d; anything else unchanged."""
    if isinstance(x, Tensor) and x.dim() != 0:
        return x.squeeze()
    return x


def _get_scalar_dtype(is_fused=None):
    """The dtype of step counters: float32, or float64 when that is the default dtype (as in PyTorch, whose
    fused kernels always count in float32)."""
    if is_fused:
        return _dtype.float32
    return _dtype.float64 if _dtype.get_default_dtype() is _dtype.float64 else _dtype.float32


def _new_step(device=None):
    """A fresh step counter: a 0-d tensor on the CPU, so that reading it for the bias corrections never
    synchronises a GPU; on ``device`` for optimizers with ``capturable=True``, which never read it."""
    from ..ops.creation import zeros
    return zeros((), dtype=_get_scalar_dtype(), device=device)


def _use_grad_for_differentiable(func):
    """Run ``step`` with grad mode set to the optimizer's ``differentiable`` flag (off by default)."""

    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        prev = is_grad_enabled()
        try:
            set_grad_enabled(self.defaults["differentiable"])
            return func(self, *args, **kwargs)
        finally:
            set_grad_enabled(prev)

    return _use_grad


def _default_to_fused_or_foreach(params, differentiable, use_fused=False):
    """The implementation to use when the user chose none: ``(fused, foreach)``.

    The fused primitive is the fastest path on every backend (one call per group; on the CPU it makes no
    temporaries), so optimizers that have one ask for it (``use_fused=True``) and get it whenever every parameter
    is a floating-point tensor; the others get foreach, on the CPU too (one backend call per list beats a loop
    of tensor ops there as well). ``differentiable`` needs the reference loop, which records autograd history.
    """
    if differentiable:
        return False, False
    fused = use_fused and all(
        p is None or (isinstance(p, Tensor) and p.device.type in _FUSED_DEVICES and p.is_floating_point())
        for p in params)
    foreach = not fused and all(p is None or isinstance(p, Tensor) for p in params)
    return fused, foreach


def _device_dtype_check_for_fused(p, cuda_unsupported=False):
    devices = [d for d in _FUSED_DEVICES if not (cuda_unsupported and d == "cuda")]
    if not (p.device.type in devices and p.is_floating_point()):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{devices} but {p.dtype} and {p.device.type}")


def register_optimizer_step_pre_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run before every optimizer's ``step``; it may return
    ``(new_args, new_kwargs)``. Returns a removable handle."""
    return add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Register ``hook(optimizer, args, kwargs)`` to run after every optimizer's ``step``."""
    return add_hook(_global_optimizer_post_hooks, hook)


def _hooked_step(func):
    """Wrap a subclass's ``step`` so that the step hooks run around it (once, even when a subclass's step calls
    its parent's)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        self = args[0]
        if self.__dict__.get("_in_hooked_step"):
            return func(*args, **kwargs)
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        self.__dict__["_in_hooked_step"] = True
        try:
            out = func(*args, **kwargs)
        finally:
            self.__dict__["_in_hooked_step"] = False
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class Optimizer:
    """Base class for all optimizers.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter groups, each
    with a ``"params"`` entry and any hyperparameters that differ from ``defaults``)::

        opt = mt.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.1}], lr=0.01, momentum=0.9)
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, _StepHook] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, _StepHook] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()

        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got " + _typename(params))

        # keyed by parameter; a loaded state dict may also carry entries for indices no group has
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []

        param_groups: list[Any] = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def _steps_as_tensors(self, keys=("step",)):
        """Old pickles kept per-parameter host scalars ('step'; NAdam's 'mu_product', ASGD's 'eta' and 'mu') as
        Python numbers; they are 0-d tensors now (as in PyTorch)."""
        from ..ops.creation import tensor
        for group in self.param_groups:
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in keys:
                    if key in p_state and not isinstance(p_state[key], Tensor):
                        p_state[key] = tensor(float(p_state[key]), dtype=_get_scalar_dtype())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                self.__dict__[name] = OrderedDict()
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group.keys()):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        return "\n".join(lines) + "\n)"

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)`` to run before ``step``; it may return
        ``(new_args, new_kwargs)``. Returns a :class:`RemovableHandle`."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """Register ``hook(optimizer, args, kwargs)`` to run after ``step``. Returns a :class:`RemovableHandle`."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs before :meth:`state_dict`."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend=prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs after :meth:`state_dict`; it may return a new state dict."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend=prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs before :meth:`load_state_dict`; it may return a new state dict."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend=prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs after :meth:`load_state_dict`."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend=prepend)

    # ------------------------------------------------------------------ state_dict
    def state_dict(self) -> StateDict:
        """The optimizer's state as a dict: ``state`` (per parameter, keyed by the parameter's index over all
        groups) and ``param_groups`` (hyperparameters, with ``params`` as those indices). The state tensors are
        the optimizer's own (not copies), as in PyTorch."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start_index):
                param_mappings.setdefault(id(p), i)
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, key=None):
        """A loaded state tensor on its parameter's device; floating state takes the parameter's dtype. The step
        counter is left alone: it is a host scalar on every path."""
        if key == "step":
            return value
        if param.is_floating_point() and value.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a state dict made by :meth:`state_dict` (of an optimizer over parameters of the same shapes, in
        the same group structure)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                             "group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, key=None):
            if isinstance(value, Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v) for v in value)
            return value

        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # ------------------------------------------------------------------ gradients and groups
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized tensor: to None (the default), or to zeros in place."""
        zero_grads(chain.from_iterable(group["params"] for group in self.param_groups), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step. ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a parameter group (a dict with ``"params"`` and optional hyperparameters) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        param_ids: set[int] = set()
        for group in self.param_groups:
            param_ids.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. cannot add param group "
                                 f"{which} to the optimizer")
        if not param_ids.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ------------------------------------------------------------------ helpers for subclasses
    @staticmethod
    def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
        return _group_tensors_by_device_and_dtype(tensorlistlist, with_indices)

    def _group_setdefault(self, **defaults):
        """Fill hyperparameters that a state pickled by an older version lacks into every group."""
        for group in self.param_groups:
            for key, value in defaults.items():
                group.setdefault(key, value)

    def _collect_group(self, group, params_with_grad, grads, state_lists, new_state):
        """The body of an ``_init_group``: append every parameter of ``group`` that has a gradient, its gradient,
        and its state entries (``state_lists`` maps a state key to the list it goes to), creating the state as
        ``new_state(p)`` on first use. Returns ``has_complex`` (always False: every dtype here is real)."""
        for p in group["params"]:
            if p.grad is None:
                continue
            params_with_grad.append(p)
            grads.append(p.grad)
            state = self.state[p]
            if len(state) == 0:
                state.update(new_state(p))
            for key, lst in state_lists.items():
                lst.append(state[key])
        return False

    def _step_groups(self, closure, n_state_lists, update_group):
        """The body of a ``step()``: run ``closure`` (with grad), then for every group gather the parameters with
        gradients, the gradients and ``n_state_lists`` state lists with ``_init_group`` and hand them to
        ``update_group(group, params, grads, *state_lists)``. Returns the closure's loss."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lists: list[list[Tensor]] = [[] for _ in range(2 + n_state_lists)]
            self._init_group(group, *lists)
            update_group(group, *lists)
        return loss

    def _accelerator_graph_capture_health_check(self) -> None:
        """PyTorch's step checks that a CUDA-graph capture in progress only records capturable optimizers. There
        is no graph capture here, so no step is ever being captured and nothing can be wrong."""

    _cuda_graph_capture_health_check = _accelerator_graph_capture_health_check

    def _optimizer_step_code(self) -> None:
        """PyTorch's profiler hooks this empty method after each step; it stays empty here too."""

    def _run_closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()


def _resolve_impl(params, foreach, fused, differentiable):
    """Which implementation runs: 'fused', 'foreach' or 'single' (the flags as the user gave them, None meaning
    "pick the fastest")."""
    if fused is None and foreach is None:
        fused, foreach = _default_to_fused_or_foreach(params, differentiable, use_fused=True)
    if fused:
        return "fused"
    if foreach:
        return "foreach"
    return "single"


def _use_foreach(params, foreach, differentiable):
    """Whether an optimizer without a fused primitive runs its foreach implementation (``foreach`` as the user
    gave it, None meaning "pick the fastest")."""
    if foreach is None:
        _, foreach = _default_to_fused_or_foreach(params, differentiable, use_fused=False)
    return bool(foreach)


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_nonnegative(**values):
    """``Invalid <name> value: <value>`` for the first negative one (PyTorch's wording; eps reads "epsilon")."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {'epsilon' if name == 'eps' else name} value: {value}")


def _check_singleton_tensors(ts, name="state_steps"):
    if not all(isinstance(t, Tensor) for t in ts):
        raise RuntimeError(f"API has changed, `{name}` argument must contain a list of singleton tensors")


def _foreach_grads(params, grads, maximize, weight_decay):
    """The gradients a foreach step works with: negated for ``maximize``, plus ``weight_decay * params`` (an L2
    penalty) when that is nonzero. New tensors when either applies (free to overwrite), otherwise the parameters'
    own ``.grad`` tensors (to be read only)."""
    if maximize:
        grads = F._foreach_neg(grads)
        if weight_decay != 0:
            F._foreach_add_(grads, params, alpha=weight_decay)
    elif weight_decay != 0:
        grads = F._foreach_add(grads, params, alpha=weight_decay)
    return grads


def _check_fused_foreach(fused, foreach, differentiable):
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


# ---------------------------------------------------------------------------------------------------------------
# What PyTorch's own optimizer modules import from ``torch.optim.optimizer`` beyond the class itself, so that an
# optimizer written against PyTorch's internals (a copy of one of its files, a research optimizer built the same
# way) runs unchanged with ``torch`` bound to this package. Eager execution is all there is here: nothing is ever
# compiled, scripted or captured in a graph, which fixes what the compile-related helpers do.

def _dispatch_sqrt(x):
    """The square root of a number or a tensor (PyTorch 2.x before 2.5 takes the bias corrections' roots with
    it)."""
    return x.sqrt() if isinstance(x, Tensor) else math.sqrt(x)


def _stack_if_compiling(x):
    """PyTorch stacks per-tensor step sizes into one tensor under ``torch.compile``; eager code keeps the list."""
    return x


def _disable_dynamo_if_unsupported(single_tensor_fn=None):
    """PyTorch's decorator that keeps TorchDynamo away from an optimizer's functional form; with no compiler
    here, the function is returned as it is."""

    def wrapper(func):
        return func

    return wrapper


def _view_as_real(params, *state_and_grads):
    """PyTorch views complex parameters (and their state and gradients) as real pairs before a foreach step.
    Every dtype here is real, so the lists are already what the step needs and are left as they are."""
    for p in params:
        if p.is_complex():
            raise TypeError("complex parameters are not supported")


def _get_capturable_supported_devices(supports_xla=True):
    """The device types on which ``capturable=True`` is allowed: CUDA (the only accelerator here)."""
    return ["cuda"]


_params_doc = """params (iterable): the tensors to optimize, ``(name, tensor)`` pairs (named_parameters), or dicts
            that define parameter groups"""
_foreach_doc = """foreach (bool, optional): use the foreach implementation (each operation over the whole list of
            tensors at once) rather than the per-tensor loop; None picks the fastest available (default: None)"""
_fused_doc = """fused (bool, optional): use the fused implementation (one backend call per device and dtype);
            None picks the fastest available (default: None)"""
_capturable_doc = """capturable (bool, optional): accepted for compatibility; step counters live on the host on
            every path here (default: False)"""
_differentiable_doc = """differentiable (bool, optional): run the step with autograd recording, so that gradients
            can flow through it; otherwise it runs under no_grad (default: False)"""
_maximize_doc = """maximize (bool, optional): maximize the objective instead of minimizing it (default: False)"""
