"""Tensor: a backend array plus autograd metadata.

The array (``_data``) is a NumPy or CuPy array; views are array views, so a write through a view is
seen by its base for free. Autograd metadata follows PyTorch: ``requires_grad``, ``grad_fn`` and
``_output_nr`` (which output of grad_fn this is), ``grad``, a version counter shared with every view,
and for views the root ``_base`` plus a function that replays the view from it (used to rewrite the graph
when a view is modified in place).

This module sits below autograd and the ops and imports neither. Methods defined in the layers above are
bound onto Tensor through ``register_methods``: each op module's ``METHODS`` table, autograd's
``backward`` and edges, the printing layer's ``__repr__``, the legacy ``Tensor(...)`` constructor.
"""
from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import _dtype
from ._mode import _state
from ._shapes import wrap_dim
from .backends import get_backend
from .utils.hooks import add_hook

if TYPE_CHECKING:
    from .backends._types import Array
    from .backends.base import Backend

__all__ = ["Tensor", "Size", "register_methods"]


class VersionCounter:
    """Shared by a tensor and all its views; every in-place write bumps it."""
    __slots__ = ("value", "write_trace")

    def __init__(self) -> None:
        self.value = 0
        self.write_trace: str | None = None


class Size(tuple):
    """A tensor shape: a tuple with PyTorch's ``numel()`` and repr."""

    def __repr__(self):
        return f"minitorch_gpu.Size([{', '.join(map(str, self))}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r


_np_to_dtype = _dtype._BY_NP


class Tensor:
    """A multi-dimensional array on a device, with autograd. Build one with ``mt.tensor(data)``."""

    __slots__ = ("_data", "_be", "_requires_grad", "_grad_fn", "_output_nr", "_grad", "_vc", "_base",
                 "_inference", "__weakref__", "__dict__")

    if TYPE_CHECKING:
        _data: Array
        _be: Backend
        _requires_grad: bool
        _grad_fn: Any  # autograd's Node (a layer above): typed there
        _output_nr: int
        _grad: Tensor | None
        _vc: VersionCounter | None
        _base: Tensor | None
        _inference: bool

        # the op methods (``t.sum()``, ``t + u``) are bound at import time by the layers above
        def __getattr__(self, name: str) -> Any: ...

        # a type checker looks operators up on the class, never through __getattr__
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...

    # rarely-set metadata lives in the instance dict; these are the defaults
    _view_fn = None
    _view_version = 0
    _hooks = None
    _post_acc_hooks = None
    _acc_ref = None
    _retains_grad = False
    _is_param = False
    # how a view came to be, when that restricts in-place writes: "no_grad", "inference" or
    # "custom_function" (PyTorch's CreationMeta); None for ordinary views and non-views
    _view_meta = None

    # ``Tensor(...)`` (the legacy constructor) is bound by ops.creation; ``_make`` is the internal one
    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def _make(cls, data, be, requires_grad=False):
        """Wrap a backend array (no copy). The hot path of every op."""
        t = object.__new__(cls)
        t._data = data
        t._be = be
        t._requires_grad = requires_grad
        t._grad_fn = None
        t._output_nr = 0
        t._grad = None
        t._vc = None
        t._base = None
        t._inference = _state.inference
        if be.counts_memory:
            be.count_memory(data)
        return t

    # ------------------------------------------------------------------ basic attributes
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)]

    def dim(self):
        return self._data.ndim

    @property
    def ndim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self):
        return _np_to_dtype[self._data.dtype]

    @property
    def device(self):
        return self._be.device

    @property
    def is_cuda(self):
        return self._be.device.type == "cuda"

    @property
    def is_cpu(self):
        return self._be.device.type == "cpu"

    def get_device(self):
        return -1 if self._be.device.type == "cpu" else self._be.device.index

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return False

    @property
    def is_sparse(self):
        return False  # every tensor here is strided (dense)

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return int(self._data.nbytes)

    def stride(self, dim=None):
        s = self._be.strides(self._data)
        if dim is None:
            return s
        return s[wrap_dim(dim, self._data.ndim)]

    def data_ptr(self):
        return self._be.data_ptr(self._data)

    def storage_offset(self):
        base = self._base
        if base is None:
            return 0
        return (self.data_ptr() - base.data_ptr()) // self._data.itemsize

    def _is_view(self):
        return self._base is not None

    def is_inference(self):
        return self._inference

    @property
    def _version(self):
        return 0 if self._vc is None else self._vc.value

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    # ------------------------------------------------------------------ Python scalars and host data
    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._be.to_numpy(self._data).reshape(()).item()

    def tolist(self):
        return self._be.to_numpy(self._data).tolist()

    def numpy(self, *, force=False):
        """The data as a NumPy array, sharing memory on the CPU (like PyTorch)."""
        if self.is_cuda and not force:
            raise TypeError("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                            "tensor to host memory first.")
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._be.to_numpy(self._data)

    def __array__(self, dtype=None, copy=None):
        arr = self._be.to_numpy(self._data)
        return arr if dtype is None else arr.astype(dtype)

    def _scalar_check(self, kind):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __float__(self):
        self._scalar_check("float")
        return float(self.item())

    def __int__(self):
        self._scalar_check("int")
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        n = self._data.size
        if n != 1:
            if n == 0:
                raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __complex__(self):
        self._scalar_check("complex")
        return complex(self.item())

    def __format__(self, spec):
        # PyTorch formats a plain 0-d tensor as its number (f"{loss:.4f}", f"{loss}"); anything else as str()
        if self._data.ndim == 0 and type(self) is Tensor:
            return format(self.detach().item(), spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        # pickle rebuilds through NumPy; autograd history cannot cross a process boundary
        if self.requires_grad and not self.is_leaf:
            raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                               "does not support crossing process boundaries.  If you just want to transfer the "
                               "data, call detach() on the tensor before serializing (e.g., putting it on the "
                               "queue).")
        return (_rebuild, (type(self), self._be.to_numpy(self._data).copy(), str(self.device),
                           self._requires_grad, _user_dict(self) or None))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                               "be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        new = type(self)._make(self._be.copy(self._data), self._be, self._requires_grad)
        if self._grad is not None:
            new._grad = copy.deepcopy(self._grad, memo)
        for k, v in _user_dict(self).items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        memo[id(self)] = new
        return new

    # ------------------------------------------------------------------ autograd metadata
    @property
    def requires_grad(self):
        """Whether autograd records ops on this tensor: leaves that asked for it, results of recorded ops,
        and (as in PyTorch) views of a base that requires grad."""
        if self._requires_grad:
            return True
        base = self._base
        if base is None:
            return False
        return base._requires_grad or self.grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, value):
        if not self.is_leaf:
            if value:
                raise RuntimeError("you can only change requires_grad flags of leaf variables.")
            raise RuntimeError(_NONLEAF_REQUIRES_GRAD_MSG)
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on a leaf in place; returns self."""
        if not isinstance(requires_grad, bool):
            raise TypeError(f"requires_grad_() expects a bool, got {type(requires_grad).__name__}")
        if not self.is_leaf:
            if requires_grad:
                return self
            raise RuntimeError(_NONLEAF_REQUIRES_GRAD_MSG)
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if requires_grad and self._inference and not _state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not "
                               "allowed.")
        self._requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        """The node that created this tensor (None for leaves)."""
        base = self._base
        if base is not None and base._requires_grad:
            vc = self._vc
            if vc is not None and vc.value != self._view_version and self._view_fn is not None \
                    and self._view_meta is None:
                self._regenerate_view_grad_fn()
        return self._grad_fn

    def _regenerate_view_grad_fn(self):
        # the base (or another view of it) was modified in place: the view's history is now "take this
        # view of the base's current value", replayed from the base's new grad_fn
        old_fn, old_nr = self._grad_fn, self._output_nr
        prev = _state.grad
        _state.grad = True
        try:
            tmp = self._view_fn(self._base)
        finally:
            _state.grad = prev
        self._grad_fn = tmp._grad_fn
        self._output_nr = tmp._output_nr
        self._requires_grad = tmp._requires_grad
        self._view_version = self._vc.value
        if self._retains_grad:
            _move_retain(self, old_fn, old_nr)

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value.dtype is not self.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def data(self):
        """The same data, detached from autograd (writes through it are not tracked)."""
        t = Tensor._make(self._data, self._be)
        t._inference = self._inference
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._be = value._be

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf after backward (a no-op on leaves)."""
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None or self._retains_grad:
            return
        fn._add_retain_hook(self._output_nr, weakref.ref(self))
        self._retains_grad = True

    @property
    def retains_grad(self):
        return self._retains_grad

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; it may return a replacement."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self.grad_fn
        if fn is not None:
            return fn._add_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = {}
        return add_hook(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs on a leaf after its ``.grad`` has been accumulated."""
        if not self.is_leaf:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = {}
        return add_hook(self._post_acc_hooks, hook)

    def detach(self):
        """A tensor sharing data (and version counter) with this one, with no history."""
        t = Tensor._make(self._data, self._be)
        if self._vc is None:
            self._vc = VersionCounter()
        t._vc = self._vc
        t._inference = self._inference
        return t

    def detach_(self):
        """Cut this tensor from its history in place; returns self."""
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self._grad_fn = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    # ------------------------------------------------------------------ in-place machinery
    def _check_inplace(self):
        if self._inference and not _state.inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                               "make a clone to get a normal tensor before doing inplace update.See "
                               "https://github.com/pytorch/rfcs/pull/17 for more details.")


# autograd bookkeeping kept in the instance dict: never copied or pickled with the tensor
_INTERNAL_KEYS = frozenset(("_acc_ref", "_hooks", "_post_acc_hooks", "_retains_grad", "_view_fn", "_view_version",
                            "_view_meta", "_multi_output_op"))


def _user_dict(t):
    """Attributes a user set on the tensor (``t.name = ...``), without autograd's own."""
    d = t.__dict__
    if not d:
        return {}
    return {k: v for k, v in d.items() if k not in _INTERNAL_KEYS}


_NONLEAF_REQUIRES_GRAD_MSG = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
    "subgraph that doesn't require differentiation use var_no_grad = var.detach().")


def _move_retain(t, old_fn, old_nr):
    """retain_grad follows the tensor: after an in-place op it reports the gradient of the new value."""
    if old_fn is not None and old_fn._retain_hooks:
        ref = old_fn._retain_hooks.get(old_nr)
        if ref is not None and ref() is t:
            del old_fn._retain_hooks[old_nr]
    fn = t._grad_fn
    if fn is not None:
        fn._add_retain_hook(t._output_nr, weakref.ref(t))


def _rebuild(cls, arr, dev, requires_grad, state):
    """Unpickle a tensor (``__reduce_ex__``): the NumPy copy goes back onto its device."""
    be = get_backend(dev)
    t = cls._make(be.asarray(arr), be)
    t._requires_grad = requires_grad
    if state:
        t.__dict__.update(state)
    return t


def _new_tensor(data, be, _new=object.__new__, _cls=Tensor, _st=_state):
    """Tensor._make without the classmethod binding: the constructor of every op result."""
    t = _new(_cls)
    t._data = data
    t._be = be
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._grad = None
    t._vc = None
    t._base = None
    t._inference = _st.inference
    if be.counts_memory:
        be.count_memory(data)
    return t



def register_methods(methods: Mapping[str, Callable[..., Any] | Any]) -> None:
    """Bind methods defined in a layer above this one onto Tensor (``staticmethod``/``property`` objects
    included). The single way upper layers extend Tensor, so that this module imports none of them."""
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
