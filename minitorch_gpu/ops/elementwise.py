"""Elementwise ops: arithmetic, comparisons, logical and bitwise ops, unary math, activations,
where / lerp / clamp / addcmul / addcdiv.

Each differentiable op is an ``Op`` subclass named like PyTorch's node (``AddBackward0``) holding its
forward (arrays through the backend) next to its backward (Tensor ops, so it can be differentiated
again), and a function that prepares operands and applies it. Ops that fit a row are rows: the unary table
(``_unary``) builds node, function, in-place form, aliases, dunder and exports from one call, and binary
rows (``_binary_node`` / ``_binary``) give a ``_BinaryOp`` its primitive and derivatives; pow's several
forms, rounded division, where, clamp, lerp, addcmul/addcdiv and the activations are written out.

Python scalars never become tensors on the hot path: a ``tensor op scalar`` call passes the scalar to the
op as a keyword (``MulBackward0.apply(x, other=2.0)``), and ``_prep_scalar`` applies PyTorch's promotion for
"wrapped numbers": the scalar only decides the result's category (bool < int < float), never its width,
so ``float16 + 2.5`` stays float16, ``int + 2.5`` is the default float and ``uint8 + 1000`` wraps.
Operands of two different dtypes go through ``_dtype.result_type`` (0-d tensors rank below the others).
"""
import builtins
import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as _np  # host-side only: recognising NumPy scalars and dtype metadata

from .. import _dtype, _op_range
from ..autograd.node import Op, bump_version, skips_node
from ..autograd.grad_mode import _state
from ..tensor import Tensor, _new_tensor
from ..autograd._inplace import apply_inplace
from ._util import broadcast_shapes, check_tensor, sum_to, write_out
from .creation import zeros_like
from ._autocast import autocast_listed, autocast_op

__all__ = [
    # arithmetic
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
    "fmod", "pow", "float_power", "positive", "rsub",
    # comparisons and predicates
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
    "equal", "allclose", "isclose", "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
    # unary math (the rows of the unary table add theirs)
    "round", "square",
    # clamping, selection, interpolation
    "clamp", "clip", "clamp_min", "clamp_max", "where", "lerp",
    "addcmul", "addcdiv",
]

METHODS: dict[str, Any] = {}
"""Tensor methods: the rows below add theirs as they are built, the table at the end the hand-written ones."""


def _export(name, fn, aliases=(), inplace=None, dunder=None):
    """Make ``fn`` (and its aliases) module functions, exported and Tensor methods, with the in-place form."""
    fn = autocast_listed(name, fn)
    for n in (name,) + tuple(aliases):
        globals()[n] = fn
        __all__.append(n)
        METHODS[n] = fn
        if inplace is not None:
            METHODS[n + "_"] = inplace
    if dunder is not None:
        METHODS[dunder] = fn
    return fn


_BOOL, _INT, _FLOAT = 0, 1, 2


def _np_info():
    """Per NumPy dtype: (category, smallest int, largest int, is a 2-byte float)."""
    info = {}
    for d in (_dtype.float32, _dtype.float64, _dtype.float16, _dtype.bfloat16, _dtype.int64, _dtype.int32,
              _dtype.int16, _dtype.int8, _dtype.uint8, _dtype.bool):
        npd = d.np_dtype
        if npd is None:
            continue
        if d.is_floating_point:
            info[npd] = (_FLOAT, 0, 0, d.itemsize == 2)
        elif d is _dtype.bool:
            info[npd] = (_BOOL, 0, 1, False)
        else:
            ii = _np.iinfo(npd)
            info[npd] = (_INT, int(ii.min), int(ii.max), False)
    return info


_INFO = _np_info()
_F32 = _np.dtype(_np.float32)
_I64 = _np.dtype(_np.int64)
_default = _dtype._default  # [current default float dtype]


def _wrap_int(v, npd):
    """A Python int wrapped into ``npd``'s range the way a C cast does (PyTorch's scalar conversion)."""
    if v < -(1 << 63) or v >= (1 << 64):
        raise OverflowError("int too big to convert")
    _, lo, hi, _ = _INFO[npd]
    span = hi - lo + 1
    return (v - lo) % span + lo


def _prep_scalar(be, d, s, keep=False):
    """``(array, scalar)`` for ``array op scalar`` on backend ``be``: the array cast to PyTorch's result dtype and
    the scalar as the backend should see it. A 2-byte float array with a float scalar computes in float32 inside
    the backend's binary primitive (PyTorch's "opmath", one pass and one rounding); the scalar is first rounded to
    the 2-byte type, as PyTorch's CPU kernels read it, unless ``keep`` (its mul and div keep the scalar's full
    value)."""
    cat, lo, hi, low = _INFO[d.dtype]
    ts = type(s)
    if ts is float:
        if cat != _FLOAT:
            d = be.astype(d, _default[0].np_dtype)
            low = d.dtype.itemsize == 2
        if not low:
            return d, s
    elif ts is int:
        if cat == _FLOAT:
            s = float(s)
        elif cat == _INT:
            if s < lo or s > hi:
                s = _wrap_int(s, d.dtype)
            return d, s
        else:
            d = be.astype(d, _I64)
            if s < -(1 << 63) or s >= (1 << 63):
                s = _wrap_int(s, _I64)
            return d, s
        if not low:
            return d, s
    else:  # bool: never changes the category of a tensor
        if cat == _FLOAT:
            s = float(s)
            if not low:
                return d, s
        else:
            return d, (int(s) if cat == _INT else s)
    if not keep:
        with _np.errstate(over="ignore"):  # beyond the type's range: inf, as the cast gives it
            s = float(_np.asarray(s, dtype=d.dtype))
    return d, s


# the binary primitives whose PyTorch CPU kernels keep a Python scalar's full value with a 2-byte float tensor
_FULL_SCALAR = frozenset({"mul", "div", "floor_divide", "trunc_divide"})


def _prep_scalar_float(be, d, s, keep=False):
    """Like ``_prep_scalar`` for ops whose result is always floating (true division)."""
    if _INFO[d.dtype][0] != _FLOAT:
        d = be.astype(d, _default[0].np_dtype)
        if type(s) is not float:
            s = float(s)
    return _prep_scalar(be, d, s, keep)


def _pair(a, b):
    """The arrays of tensors ``a`` and ``b`` in their PyTorch result dtype."""
    ad = a._data
    bd = b._data
    if ad.dtype is bd.dtype:
        return ad, bd
    npd = _dtype.result_type(a, b).np_dtype
    be = a._be
    return be.astype(ad, npd), be.astype(bd, npd)


def _pair_float(a, b):
    ad, bd = _pair(a, b)
    if _INFO[ad.dtype][0] != _FLOAT:
        npd = _default[0].np_dtype
        be = a._be
        ad = be.astype(ad, npd)
        bd = be.astype(bd, npd)
    return ad, bd


def _broadcast_error(*arrays):
    """Called when the array library refused to broadcast: raise PyTorch's RuntimeError naming the shapes."""
    broadcast_shapes(*[x.shape for x in arrays if hasattr(x, "shape")])


def _scalar_value(x):
    """``x`` as a Python number, or None when it is not a real number (NumPy scalars are unwrapped)."""
    t = type(x)
    if t is float or t is int or t is bool:
        return x
    if isinstance(x, _np.generic):
        if x.dtype.kind in "biuf":
            return x.item()
        return None
    if isinstance(x, (int, float)):  # subclasses of the builtins (IntEnum, ...)
        return bool(x) if isinstance(x, bool) else (int(x) if isinstance(x, int) else float(x))
    return None


def _same_device(a, b):
    """Two tensors on one device: a CPU 0-d tensor joins the other's device (as in PyTorch), else error."""
    if a._be is b._be:
        return a, b
    if b._data.ndim == 0 and b._be.device.type == "cpu":
        return a, b.to(a.device)
    if a._data.ndim == 0 and a._be.device.type == "cpu":
        return a.to(b.device), b
    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                       f"{a.device} and {b.device}!")


def _grad_to(g, shape, dt):
    """A gradient reduced to an input's shape (the backward of broadcasting) and cast to its dtype."""
    if g._data.shape != shape:
        g = sum_to(g, shape)
    if dt is not None and g._data.dtype != dt.np_dtype:
        g = g.to(dt)
    return g


def _need_tensor(a, b, name):
    """A binary function needs a tensor on one side (either, since ``2 + x`` reaches it reflected)."""
    if not isinstance(b, Tensor):
        check_tensor(a, name, "input", 1)


def _unsupported(name, other):
    return TypeError(f"unsupported operand type(s) for {name}: 'Tensor' and '{type(other).__name__}'")


def _public_result(r, other, sym, out, name):
    """What a public binary function returns from its dunder body's result ``r``: NotImplemented (an operand
    that is neither a tensor nor a number) becomes Python's TypeError for ``sym``; ``out=`` is written."""
    if r is NotImplemented:
        raise _unsupported(sym, other)
    return r if out is None else write_out(r, out, name)


def _zeros(g):
    return zeros_like(g)


def _check_no_bool_sub(a, b):
    """PyTorch refuses subtraction as soon as one operand (tensor or Python bool) is bool."""
    a_bool = a._data.dtype.kind == "b"
    b_bool = b is True or b is False or (isinstance(b, Tensor) and b._data.dtype.kind == "b")
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                           "or `logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _refuse_bool(d, kernel):
    """PyTorch has no bool kernel for some integer ops (floor division, remainder, pow of two bools)."""
    if d.dtype.kind == "b":
        raise RuntimeError(f"\"{kernel}\" not implemented for 'Bool'")


def _alpha_scaled(t, s, alpha):
    """The scalar operand ``s`` times ``alpha``, checked against ``t``'s dtype."""
    if alpha != 1:
        _check_alpha(t, alpha, s)
        s = s * alpha
    return s


def _check_alpha(t, alpha, other=None):
    """PyTorch forbids a float alpha for integer results and a non-bool alpha for bool results."""
    if alpha == 1 and type(alpha) is int:
        return
    cat = _INFO[t._data.dtype][0]
    if other is not None:
        cat = builtins.max(cat, _INFO[other._data.dtype][0] if isinstance(other, Tensor)
                           else (_FLOAT if isinstance(other, float) else _INT if type(other) is int else _BOOL))
    if cat != _FLOAT and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if cat == _BOOL and not isinstance(alpha, bool):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")


# ====================================================================== arithmetic ops

def _broadcasting(fn, *args):
    """``fn(*args)``, with the array library's refusal to broadcast turned into PyTorch's RuntimeError naming
    the shapes (the one place that translates it, for every primitive but ``binary``; see ``_BinaryOp``)."""
    try:
        return fn(*args)
    except ValueError:
        _broadcast_error(*args)
        raise


Derivative = Callable[[Tensor, Any, Any], Tensor]
"""``(g, a, b) -> gradient`` of one input of a binary op, in Tensor ops (so it can be differentiated again);
``a`` / ``b`` are the saved inputs (None where not saved), or for ``tensor op scalar`` ``b`` is the scalar."""


class _BinaryOp(Op):
    """``input <prim> other`` for two tensors, or a tensor and a Python scalar passed as ``other=``: the scalar
    path (PyTorch's promotion for wrapped numbers, ``_prep_scalar``), the promotion of two tensors, the refusal
    of bool operands, ``alpha`` (``other`` scaled first) and the broadcast error, once for every binary op.

    Built from a row by ``_binary_node``: ``grad_a`` / ``grad_b`` are the derivatives, ``saves_a`` / ``saves_b``
    say which gradients (of a, of b) read each input, so forward saves only what the needed ones read."""

    prim: str = ""
    true_division: ClassVar[bool] = False  # integer operands compute in the default float dtype
    bool_kernel: str | None = None  # PyTorch has no bool kernel: its name for the error
    saves_a: ClassVar[tuple[bool, bool]] = (False, False)
    saves_b: ClassVar[tuple[bool, bool]] = (False, False)
    saves: ClassVar[bool] = False
    cast: tuple[Any, Any] | None = None
    alpha: Any = 1
    other: Any = None

    @staticmethod
    def grad_a(g, a, b):
        return g

    @staticmethod
    def grad_b(g, a, b):
        return g

    def _scalar(self, a, s, reverse=False):
        """``a <prim> s`` (``s <prim> a`` when ``reverse``) for a Python scalar ``s``, as an array."""
        be = a._be
        d, s = (_prep_scalar_float if self.true_division else _prep_scalar)(be, a._data, s,
                                                                           self.prim in _FULL_SCALAR)
        if self.bool_kernel is not None:
            _refuse_bool(d, self.bool_kernel)
        return be.binary(self.prim, s, d) if reverse else be.binary(self.prim, d, s)

    def _tensors(self, a, b):
        """The arrays of ``a`` and ``b`` in their result dtype; records what backward needs to reduce and cast
        the gradients back to each input."""
        ad, bd = (_pair_float if self.true_division else _pair)(a, b)
        self.shapes = (a._data.shape, b._data.shape)
        if a._data.dtype is not b._data.dtype:
            self.cast = (a.dtype, b.dtype)
        if self.bool_kernel is not None:
            _refuse_bool(ad, self.bool_kernel)
        return ad, bd

    def _binary(self, be, ad, bd, prim=None):
        try:
            return be.binary(prim or self.prim, ad, bd)
        except ValueError:
            _broadcast_error(ad, bd)
            raise

    def _to_inputs(self, ga, gb):
        """Gradients reduced to each input's shape and cast to its dtype."""
        cast = self.cast
        sa, sb = self.shapes
        return (None if ga is None else _grad_to(ga, sa, cast and cast[0]),
                None if gb is None else _grad_to(gb, sb, cast and cast[1]))

    def forward(self, a, b=None, other=None, alpha=1):
        if b is None:
            self.other = other
            return self._scalar(a, other)
        if self.saves:
            na, nb = self.needs_input_grad
            sa, sb = self.saves_a, self.saves_b
            self.save_for_backward(a if (na and sa[0]) or (nb and sa[1]) else None,
                                   b if (na and sb[0]) or (nb and sb[1]) else None)
        ad, bd = self._tensors(a, b)
        be = a._be
        if alpha != 1:
            self.alpha = alpha
            bd = be.binary("mul", bd, _scalar_like(alpha, bd))
        return self._binary(be, ad, bd)

    def backward(self, g):
        if len(self.next_functions) == 1:  # tensor op scalar
            return (self.grad_a(g, None, self.other),)
        na, nb = self.needs_input_grad
        a, b = self.saved_tensors if self.saves else (None, None)
        ga = self.grad_a(g, a, b) if na else None
        gb = None
        if nb:
            gb = self.grad_b(g, a, b)
            if self.alpha != 1:
                gb = gb * self.alpha
        return self._to_inputs(ga, gb)


def _binary_node(node, prim, grad_a, grad_b, reads=("", ""), *, true_division=False, bool_kernel=None):
    """The Op class of one binary row. ``reads``: the inputs each derivative reads ("ab", "b", ...)."""
    saves_a = ("a" in reads[0], "a" in reads[1])
    saves_b = ("b" in reads[0], "b" in reads[1])
    cls = type(node, (_BinaryOp,), {
        "__module__": __name__, "__qualname__": node, "__doc__": f"Backward node of ``{prim}``.", "prim": prim,
        "true_division": true_division, "bool_kernel": bool_kernel, "saves_a": saves_a, "saves_b": saves_b,
        "saves": any(saves_a) or any(saves_b), "grad_a": staticmethod(grad_a), "grad_b": staticmethod(grad_b)})
    return cls


def _binary(name, node, prim, grad_a, grad_b, reads, *, doc, aliases=(), true_division=False, inplace=False,
            check=None):
    """One row of a tensor-tensor binary op: its node, ``fn(input, other, *, out=None)``, its in-place form when
    ``inplace``, and ``aliases``, exported and bound onto Tensor. ``check(input, other)`` raises PyTorch's error
    for operands it refuses."""
    cls = _binary_node(node, prim, grad_a, grad_b, reads, true_division=true_division)
    globals()[node] = cls

    def fn(input, other, *, out=None):
        check_tensor(input, name, "input", 1)
        check_tensor(other, name, "other", 2)
        if check is not None:
            check(input, other)
        r = _binary_tensor(cls, input, other)
        return r if out is None else write_out(r, out, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    fn_ = None
    if inplace:
        def fn_(self, other):
            return apply_inplace(self, fn, other)
        fn_.__name__ = fn_.__qualname__ = name + "_"
    return _export(name, fn, aliases, fn_)


# binary rows whose functions are hand-written below (scalars, alpha, dunders): (node, primitive, d/da, d/db,
# which inputs each derivative reads), each derivative in Tensor ops
AddBackward0 = _binary_node("AddBackward0", "add", lambda g, a, b: g, lambda g, a, b: g)
SubBackward0 = _binary_node("SubBackward0", "sub", lambda g, a, b: g, lambda g, a, b: -g)
MulBackward0 = _binary_node("MulBackward0", "mul", lambda g, a, b: g * b, lambda g, a, b: g * a, ("b", "a"))
# true division: integer operands give the default float dtype
DivBackward0 = _binary_node("DivBackward0", "div", lambda g, a, b: g / b, lambda g, a, b: -g * ((a / b) / b),
                            ("b", "ab"), true_division=True)
# input mod other: d/d other = -(input / other rounded), the rounding being the op's: floor for remainder (the
# divisor's sign), trunc for fmod (the dividend's sign)
RemainderBackward1 = _binary_node("RemainderBackward1", "remainder", lambda g, a, b: g,
                                  lambda g, a, b: -g * div(a, b, rounding_mode="floor"), ("", "ab"),
                                  bool_kernel="remainder_cpu")
FmodBackward1 = _binary_node("FmodBackward1", "fmod", lambda g, a, b: g,
                             lambda g, a, b: -g * div(a, b, rounding_mode="trunc"), ("", "ab"), bool_kernel="fmod_cpu")
FmodBackward0 = _binary_node("FmodBackward0", "fmod", lambda g, a, b: g, lambda g, a, b: g, bool_kernel="fmod_cpu")
# exponent 0 contributes nothing to the base's gradient, even where a ** -1 is infinite (a select, so a NaN gradient
# gives 0 there); the exponent's gradient multiplies g by 0 at base 0: PyTorch keeps a NaN gradient there
PowBackward1 = _binary_node("PowBackward1", "pow", lambda g, a, b: where(b == 0, 0.0, g * (b * a.pow(b - 1))),
                            lambda g, a, b: g * where((a == 0) & (b >= 0), 0.0, a.pow(b) * a.log()), ("ab", "ab"),
                            bool_kernel="pow")


class RsubBackward1(_BinaryOp):
    """other - alpha * input, other a Python scalar (``2 - x``)."""
    prim = "sub"

    def forward(self, a, other, alpha=1):
        be = a._be
        d, s = _prep_scalar(be, a._data, other)
        self.alpha = alpha
        if alpha != 1:
            # alpha * input is rounded to a 16-bit input's type before the subtraction, as PyTorch's CPU rounds it
            d = be.binary("mul", d, _scalar_like(alpha, d))
        return be.binary("sub", s, d)

    def backward(self, g):
        return (g * (-self.alpha),)


def _scalar_like(v, arr):
    """A Python scalar ``v`` converted for arithmetic with ``arr`` (wrapped for integer arrays)."""
    return _scalar_for(v, arr.dtype)


def _scalar_for(v, npd):
    """A Python scalar ``v`` converted to the kind of NumPy dtype ``npd`` (ints wrap like a C cast)."""
    cat, lo, hi, _ = _INFO[npd]
    if cat == _FLOAT:
        return float(v)
    if cat == _INT:
        v = int(v)
        return v if lo <= v <= hi else _wrap_int(v, npd)
    return bool(v)


class DivBackward2(_BinaryOp):
    """Division with ``rounding_mode`` 'trunc' or 'floor' (also ``//``): piecewise constant, zero gradient."""

    def forward(self, a, b=None, other=None, mode="floor", reverse=False):
        self.prim = "floor_divide" if mode == "floor" else "trunc_divide"
        self.bool_kernel = "div_floor_cpu" if mode == "floor" else "div_trunc_cpu"
        if b is None:
            return self._scalar(a, other, reverse)
        self.dtypes = (a.dtype, b.dtype)
        ad, bd = self._tensors(a, b)
        return self._binary(a._be, ad, bd)

    def backward(self, g):
        if len(self.next_functions) == 1:
            return (_zeros(g),)
        na, nb = self.needs_input_grad
        return (_grad_to(_zeros(g), self.shapes[0], self.dtypes[0]) if na else None,
                _grad_to(_zeros(g), self.shapes[1], self.dtypes[1]) if nb else None)


class RemainderBackward0(_BinaryOp):
    """input % scalar (Python's sign convention: the result has the divisor's sign), or scalar % input."""
    prim = "remainder"
    bool_kernel = "remainder_cpu"

    def forward(self, a, other, reverse=False):
        self.reverse = reverse
        self.other = other
        if reverse:
            self.save_for_backward(a)
        return self._scalar(a, other, reverse)

    def backward(self, g):
        if not self.reverse:
            return (g,)
        a, = self.saved_tensors
        return (-g * div(self.other, a, rounding_mode="floor"),)


class PowBackward0(_BinaryOp):
    """tensor ** scalar."""
    prim = "pow"

    def forward(self, a, exponent):
        cat, lo, hi, _ = _INFO[a._data.dtype]
        if cat == _INT and type(exponent) is int and not lo <= exponent <= hi:
            raise RuntimeError(f"value cannot be converted to type {a.dtype._cpp_name} without overflow")
        be = a._be
        d, s = _prep_scalar(be, a._data, exponent, True)
        self.save_for_backward(a)
        self.exponent = exponent
        if d.dtype.kind == "b":
            # bool ** bool stays bool: x ** True is x, x ** False is True
            return be.binary("logical_or", d, not s)
        if _INFO[d.dtype][0] != _FLOAT and s < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if s == 0.5 or s == -0.5:
            # PyTorch computes these powers as sqrt and 1 / sqrt (on the CPU and on CUDA): -0.0 ** 0.5 is -0.0
            # and -inf ** 0.5 NaN there, where pow gives +0.0 and +inf
            return be.unary("sqrt" if s > 0 else "rsqrt", d)
        return be.binary("pow", d, s)

    def backward(self, g):
        a, = self.saved_tensors
        e = self.exponent
        if e == 0:
            return (_zeros(g),)
        if e == 2:
            return (g * (a * 2.0),)
        return (g * (e * a.pow(e - 1)),)


class PowBackward2(_BinaryOp):
    """scalar ** tensor."""
    prim = "pow"
    save_output = True

    def forward(self, b, base):
        self.base = base
        if base == 0:
            self.save_for_backward(b)
        return self._scalar(b, base, reverse=True)

    def backward(self, g):
        r = self.saved_output
        base = self.base
        if base == 0:
            b = self.saved_tensors[0]
            # PyTorch multiplies g by the selected factor: a NaN gradient stays NaN where the factor is 0
            return (g * where(b >= 0, 0.0, r * float("-inf")),)
        return (g * (r * (math.log(base) if base > 0 else math.nan)),)


# ---------------------------------------------------------------------- the functions

_PLAIN_FLOATS = (_F32, _np.dtype(_np.float64))


def _plain(prim, a, b):
    """``a <prim> b`` straight through the backend, or None when the op must take its node.

    NOTE: the tiny-op path. Outside autograd (grad mode off, or no operand that requires grad or is a view) and
    outside any op range (profiler, NVTX), a binary op on two tensors of one dtype and device, or on a float32 /
    float64 tensor and a Python number, needs no node: no promotion, no saved state, no history. This skips
    the node's construction and the promotion code, two thirds of the host time of ``a + b`` on tiny tensors.
    Anything else (and a shape mismatch, which the node turns into PyTorch's error) returns None."""
    if _op_range.enabled:
        return None
    ad = a._data
    if b.__class__ is Tensor:
        bd = b._data
        if ad.dtype is not bd.dtype or a._be is not b._be or (_state.grad and (
                a._requires_grad or b._requires_grad or a._base is not None or b._base is not None)):
            return None
    else:
        t = type(b)
        if (t is not float and t is not int) or ad.dtype not in _PLAIN_FLOATS or (
                _state.grad and (a._requires_grad or a._base is not None)):
            return None
        bd = float(b)
    be = a._be
    try:
        return _new_tensor(be.binary(prim, ad, bd), be)
    except ValueError:  # shapes that do not broadcast: the node raises PyTorch's error
        return None


def _binary_tensor(cls, a, b, **params):
    if a._be is not b._be:
        a, b = _same_device(a, b)
    return cls.apply(a, b, **params)


def _add(input, other, alpha=1):
    """``input + alpha * other``; NotImplemented for an operand that is neither a tensor nor a number."""
    if alpha == 1 and input.__class__ is Tensor and not (_state.grad and input._requires_grad):
        r = _plain("add", input, other)
        if r is not None:
            return r
    t = type(other)
    if (t is float or t is int) and alpha == 1:
        return AddBackward0.apply(input, other=other)
    if t is Tensor or isinstance(other, Tensor):
        if not isinstance(input, Tensor):
            s = _scalar_value(input)
            if s is None:
                return NotImplemented
            if alpha != 1:
                _check_alpha(other, alpha, s)
                return _add(mul(other, alpha), s)
            return AddBackward0.apply(other, other=s)
        if alpha != 1:
            _check_alpha(input, alpha, other)
        if input._be is not other._be:
            input, other = _same_device(input, other)
        return AddBackward0.apply(input, other, alpha=alpha)
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return AddBackward0.apply(input, other=_alpha_scaled(input, s, alpha))


def add(input, other, *, alpha=1, out=None):
    """input + alpha * other, with broadcasting and type promotion."""
    _need_tensor(input, other, "add")
    return _public_result(_add(input, other, alpha), other, "+", out, "add")


def _sub(input, other, alpha=1):
    if alpha == 1 and input.__class__ is Tensor and not (_state.grad and input._requires_grad) and \
            input._data.dtype.kind != "b":
        r = _plain("sub", input, other)
        if r is not None:
            return r
    t = type(other)
    if (t is float or t is int) and alpha == 1 and input._data.dtype.kind != "b":
        return SubBackward0.apply(input, other=other)
    if t is Tensor or isinstance(other, Tensor):
        if not isinstance(input, Tensor):
            s = _scalar_value(input)
            if s is None:
                return NotImplemented
            return rsub(other, s, alpha=alpha)
        _check_no_bool_sub(input, other)
        if alpha != 1:
            _check_alpha(input, alpha, other)
        if input._be is not other._be:
            input, other = _same_device(input, other)
        return SubBackward0.apply(input, other, alpha=alpha)
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    _check_no_bool_sub(input, s)
    return SubBackward0.apply(input, other=_alpha_scaled(input, s, alpha))


def sub(input, other, *, alpha=1, out=None):
    """input - alpha * other."""
    _need_tensor(input, other, "sub")
    return _public_result(_sub(input, other, alpha), other, "-", out, "sub")


subtract = sub


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    if isinstance(other, Tensor):
        return sub(other, input, alpha=alpha)
    s = _scalar_value(other)
    if s is None:
        raise _unsupported("-", other)
    _check_no_bool_sub(input, s)
    if alpha != 1:
        _check_alpha(input, alpha, s)
    return RsubBackward1.apply(input, other=s, alpha=alpha)


def _rsub_dunder(self, other):
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return rsub(self, s)


def _mul(input, other):
    if input.__class__ is Tensor and not (_state.grad and input._requires_grad):
        r = _plain("mul", input, other)
        if r is not None:
            return r
    t = type(other)
    if t is float or t is int:
        return MulBackward0.apply(input, other=other)
    if t is Tensor or isinstance(other, Tensor):
        if not isinstance(input, Tensor):
            s = _scalar_value(input)
            if s is None:
                return NotImplemented
            return MulBackward0.apply(other, other=s)
        if input._be is not other._be:
            input, other = _same_device(input, other)
        return MulBackward0.apply(input, other)
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return MulBackward0.apply(input, other=s)


def mul(input, other, *, out=None):
    """input * other, with broadcasting and type promotion."""
    _need_tensor(input, other, "mul")
    return _public_result(_mul(input, other), other, "*", out, "mul")


multiply = mul


def _rounded_div(input, other, mode, reverse=False):
    """input / other rounded by ``mode`` ('trunc' or 'floor'); ``reverse`` computes other / input."""
    cls = DivBackward2
    if isinstance(other, Tensor):
        if reverse:
            input, other = other, input
        return _binary_tensor(cls, input, other, mode=mode)
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return cls.apply(input, other=s, mode=mode, reverse=reverse)


def _div(input, other):
    if input.__class__ is Tensor and not (_state.grad and input._requires_grad) and \
            input._data.dtype in _PLAIN_FLOATS:
        r = _plain("div", input, other)
        if r is not None:
            return r
    t = type(other)
    if t is float or t is int:
        return DivBackward0.apply(input, other=other)
    if t is Tensor or isinstance(other, Tensor):
        if not isinstance(input, Tensor):
            s = _scalar_value(input)
            if s is None:
                return NotImplemented
            return _rtruediv(other, s)
        if input._be is not other._be:
            input, other = _same_device(input, other)
        return DivBackward0.apply(input, other)
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return DivBackward0.apply(input, other=s)


def div(input, other, *, rounding_mode=None, out=None):
    """input / other. ``rounding_mode``: None (true division; integers give the default float), 'trunc'
    (toward zero) or 'floor' (toward -inf); the rounded modes keep integer dtypes."""
    _need_tensor(input, other, "div")
    if rounding_mode is None:
        r = _div(input, other)
    elif rounding_mode == "trunc" or rounding_mode == "floor":
        if not isinstance(input, Tensor):
            r = _rounded_div(other, input, rounding_mode, reverse=True)
        else:
            r = _rounded_div(input, other, rounding_mode)
    else:
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    return _public_result(r, other, "/", out, "div")


divide = div


def true_divide(input, other, *, out=None):
    """Alias of ``div`` with no rounding."""
    return div(input, other, out=out)


def _rtruediv(self, other):
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    # scalar / x is computed as reciprocal(x) * scalar, as PyTorch does (so its grad_fn is MulBackward0)
    return mul(self.reciprocal(), s)


def floor_divide(input, other, *, out=None):
    """input // other rounded toward -inf (Python's ``//``)."""
    return div(input, other, rounding_mode="floor", out=out)


def _floordiv(self, other):
    return _rounded_div(self, other, "floor")


def _rfloordiv(self, other):
    return _rounded_div(self, other, "floor", reverse=True)


def _remainder(input, other, reverse=False):
    if isinstance(other, Tensor):
        if not isinstance(input, Tensor):
            s = _scalar_value(input)
            if s is None:
                return NotImplemented
            return RemainderBackward0.apply(other, other=s, reverse=True)
        return _binary_tensor(RemainderBackward1, input, other)
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return RemainderBackward0.apply(input, other=s, reverse=reverse)


def remainder(input, other, *, out=None):
    """Python-style modulus: the result has the sign of the divisor."""
    _need_tensor(input, other, "remainder")
    return _public_result(_remainder(input, other), other, "%", out, "remainder")


def _rmod(self, other):
    return _remainder(self, other, reverse=True)


def fmod(input, other, *, out=None):
    """C-style modulus: the result has the sign of the dividend."""
    if isinstance(other, Tensor):
        r = _binary_tensor(FmodBackward1, input, other)
    else:
        s = _scalar_value(other)
        if s is None:
            raise _unsupported("fmod", other)
        r = FmodBackward0.apply(input, other=s)
    return r if out is None else write_out(r, out, "fmod")


@autocast_op("pow")
def _pow(input, exponent):
    if isinstance(exponent, Tensor):
        if not isinstance(input, Tensor):
            s = _scalar_value(input)
            if s is None:
                return NotImplemented
            return PowBackward2.apply(exponent, base=s)
        return _binary_tensor(PowBackward1, input, exponent)
    s = _scalar_value(exponent)
    if s is None:
        return NotImplemented
    return PowBackward0.apply(input, exponent=s)


@autocast_op("pow")
def pow(input, exponent, *, out=None):
    """input ** exponent; either may be a Python number (but not both). Integer tensors raised to a negative
    integer scalar raise, as in PyTorch."""
    _need_tensor(input, exponent, "pow")
    return _public_result(_pow(input, exponent), exponent, "**", out, "pow")


@autocast_op("pow")
def _rpow(self, other):
    s = _scalar_value(other)
    if s is None:
        return NotImplemented
    return PowBackward2.apply(self, base=s)


def float_power(input, exponent, *, out=None):
    """input ** exponent computed in float64."""
    a = input.double() if isinstance(input, Tensor) else builtins.float(input)
    e = exponent.double() if isinstance(exponent, Tensor) else builtins.float(exponent)
    return pow(a, e, out=out)


def positive(input):
    """input itself (PyTorch's unary ``+``)."""
    if input.dtype is _dtype.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _atan2_recip(a, b):
    """1 / (a^2 + b^2), 0 where the sum is 0: PyTorch's atan2 gradient is 0 at the origin (and where the squares
    underflow to 0), not 0 * inf = NaN."""
    d = a * a + b * b
    return where(d == 0, 0.0, d.reciprocal())


atan2 = _binary("atan2", "Atan2Backward0", "atan2", lambda g, a, b: g * (b * _atan2_recip(a, b)),
                lambda g, a, b: g * (-a * _atan2_recip(a, b)), ("ab", "ab"), true_division=True,
                doc="Elementwise angle of (other, input), in the float result dtype.", aliases=("arctan2",),
                inplace=True)


def _float_kernel2(kernel):
    """PyTorch's refusal of two operands whose promoted dtype is not floating (ops with only float kernels)."""
    def check(a, b):
        dt = _dtype.result_type(a, b)
        if not dt.is_floating_point:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt._scalar_name}'")
    return check


_LOG2 = 0.6931471805599453
hypot = _binary("hypot", "HypotBackward0", "hypot", lambda g, a, b: g * a / a.hypot(b),
                lambda g, a, b: g * b / a.hypot(b), ("ab", "ab"), true_division=True, inplace=True,
                check=_float_kernel2("hypot_cpu"), doc="sqrt(input ** 2 + other ** 2) elementwise, without overflow.")
logaddexp = _binary("logaddexp", "LogaddexpBackward0", "logaddexp", lambda g, a, b: g / ((b - a).exp() + 1),
                    lambda g, a, b: g / ((a - b).exp() + 1), ("ab", "ab"), true_division=True,
                    check=_float_kernel2("logaddexp_cpu"), doc="log(exp(input) + exp(other)) without overflow.")
logaddexp2 = _binary("logaddexp2", "Logaddexp2Backward0", "logaddexp2", lambda g, a, b: g / ((b - a).exp2() + 1),
                     lambda g, a, b: g / ((a - b).exp2() + 1), ("ab", "ab"), true_division=True,
                     check=_float_kernel2("logaddexp2_cpu"), doc="log2(2 ** input + 2 ** other) without overflow.")
def _copysign_grad(g, a, flipped):
    """d/d input copysign(input, other) as PyTorch writes it, g * (result / input) with 0 at input == 0: +-1
    (-1 where ``flipped``), and NaN at a NaN or infinite input (inf / inf); a NaN ``g`` stays NaN at input == 0."""
    ratio = where(a == 0, 0.0, where(flipped, -1.0, 1.0))
    return g * where(a.isfinite(), ratio, math.nan)


# other only contributes its sign: zero gradient
CopysignBackward0 = _binary_node("CopysignBackward0", "copysign",
                                 lambda g, a, b: _copysign_grad(g, a, a.signbit() != b.signbit()),
                                 lambda g, a, b: _zeros(g), ("ab", ""), true_division=True)


class CopysignBackward1(_BinaryOp):
    """copysign(tensor, number): the number contributes its sign only."""
    prim = "copysign"
    true_division = True

    def forward(self, a, other):
        self.other = other
        self.save_for_backward(a)
        return self._scalar(a, float(other))

    def backward(self, g):
        a, = self.saved_tensors
        flips = a.signbit() if math.copysign(1.0, self.other) > 0 else ~a.signbit()
        return (_copysign_grad(g, a, flips),)


def copysign(input, other, *, out=None):
    """The magnitude of ``input`` with the sign of ``other`` (a tensor or a number), in the float result dtype."""
    check_tensor(input, "copysign", "input", 1)
    if isinstance(other, Tensor):
        r = _binary_tensor(CopysignBackward0, input, other)
    else:
        s = _scalar_value(other)
        if s is None:
            raise TypeError(f"copysign(): argument 'other' (position 2) must be Tensor or Number, not "
                            f"{type(other).__name__}")
        r = CopysignBackward1.apply(input, other=s)
    return r if out is None else write_out(r, out, "copysign")


def copysign_(self, other):
    return apply_inplace(self, copysign, other)


_export("copysign", copysign, inplace=copysign_)


# ---------------------------------------------------------------------- in-place arithmetic

def _direct_inplace(self, other, prim, alpha=1):
    """``self <prim>= alpha * other`` straight into self's memory when autograd is not involved and the result
    already has self's dtype and shape (an optimizer's update must not allocate a result and copy it).
    Returns False when the general path must run (it also produces the errors)."""
    if _state.grad and (self.requires_grad or (isinstance(other, Tensor) and other.requires_grad)):
        return False
    d = self._data
    if alpha != 1 and _INFO[d.dtype][0] != _FLOAT:
        return False   # integer alphas have rules (and errors) of their own
    if not self._be.writable(d):
        return False   # NumPy refuses to write a broadcast view, CuPy would write it: the general path raises
    if isinstance(other, Tensor):
        od = other._data
        if od.dtype is not d.dtype or other._be is not self._be:
            return False
        if alpha != 1:
            od = self._be.binary("mul", od, float(alpha))
    else:
        s = _scalar_value(other)
        if s is None:
            return False
        d2, od = _prep_scalar(self._be, d, s if alpha == 1 else s * alpha)
        if d2 is not d:
            return False
    self._check_inplace()
    try:
        self._be.binary(prim, d, od, out=d)
    except (ValueError, TypeError):
        return False
    bump_version(self)
    return True


def add_(self, other, *, alpha=1):
    """In-place ``add``."""
    if _direct_inplace(self, other, "add", alpha):
        return self
    return apply_inplace(self, add, other, alpha=alpha, keeps_self=False)


def sub_(self, other, *, alpha=1):
    """In-place ``sub``."""
    if (self._data.dtype.kind != "b" and other is not True and other is not False
            and _direct_inplace(self, other, "sub", alpha)):
        return self
    return apply_inplace(self, sub, other, alpha=alpha, keeps_self=False)


def mul_(self, other):
    """In-place ``mul``."""
    if _direct_inplace(self, other, "mul"):
        return self
    return apply_inplace(self, mul, other, keeps_self=isinstance(other, Tensor))


def div_(self, other, *, rounding_mode=None):
    """In-place ``div``."""
    if rounding_mode is None and self._data.dtype.kind in "fV" and _direct_inplace(self, other, "div"):
        return self
    return apply_inplace(self, div, other, rounding_mode=rounding_mode, keeps_self=True)


def true_divide_(self, other):
    """In-place ``true_divide``."""
    return div_(self, other)


def floor_divide_(self, other):
    """In-place ``floor_divide``."""
    return apply_inplace(self, floor_divide, other, keeps_self=False)


def remainder_(self, other):
    """In-place ``remainder``."""
    return apply_inplace(self, remainder, other, keeps_self=isinstance(other, Tensor))


def fmod_(self, other):
    """In-place ``fmod``."""
    return apply_inplace(self, fmod, other, keeps_self=isinstance(other, Tensor))


def pow_(self, exponent):
    """In-place ``pow``."""
    return apply_inplace(self, pow, exponent)


def float_power_(self, exponent):
    """In-place ``float_power`` (self must already be float64)."""
    if self.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype._scalar_name} but the "
                           "operation's result requires dtype Double")
    return apply_inplace(self, float_power, exponent)


def _iop(fn):
    """An augmented-assignment dunder (``__iadd__``...): in place, NotImplemented for foreign operands."""
    def iop(self, other):
        if not isinstance(other, Tensor) and _scalar_value(other) is None:
            return NotImplemented
        return fn(self, other)
    iop.__name__ = fn.__name__
    return iop


# ====================================================================== comparisons and logical ops

def _compare(prim, a, b):
    """A bool tensor from a binary predicate; NotImplemented for an unsupported operand."""
    if isinstance(b, Tensor):
        if not isinstance(a, Tensor):
            s = _scalar_value(a)
            if s is None:
                return NotImplemented
            d, s = _prep_scalar(b._be, b._data, s)
            return Tensor._make(b._be.binary(prim, s, d), b._be)
        if a._be is not b._be:
            a, b = _same_device(a, b)
        ad, bd = _pair(a, b)
        return Tensor._make(_broadcasting(a._be.binary, prim, ad, bd), a._be)
    s = _scalar_value(b)
    if s is None:
        return NotImplemented
    d, s = _prep_scalar(a._be, a._data, s)
    return Tensor._make(a._be.binary(prim, d, s), a._be)


def _make_compare(prim, name):
    def fn(input, other, *, out=None):
        r = _compare(prim, input, other)
        if r is NotImplemented:
            raise TypeError(f"{name}(): argument 'other' must be Tensor or Number, not {type(other).__name__}")
        return r if out is None else write_out(r, out, name)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` as a bool tensor (broadcasting, comparing in the promoted dtype)."

    def dunder(self, other):
        return _compare(prim, self, other)
    dunder.__name__ = f"__{name}__"

    def inplace(self, other):
        return apply_inplace(self, fn, other, keeps_self=False)
    inplace.__name__ = name + "_"
    return fn, dunder, inplace


eq, _eq_dunder, eq_ = _make_compare("eq", "eq")
ne, _ne_dunder, ne_ = _make_compare("ne", "ne")
lt, _lt_dunder, lt_ = _make_compare("lt", "lt")
le, _le_dunder, le_ = _make_compare("le", "le")
gt, _gt_dunder, gt_ = _make_compare("gt", "gt")
ge, _ge_dunder, ge_ = _make_compare("ge", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def equal(input, other):
    """True when both tensors have the same shape and equal elements (a Python bool)."""
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        raise TypeError("equal(): arguments must be Tensors")
    if input._data.shape != other._data.shape:
        return False
    input, other = _same_device(input, other)
    return bool(eq(input, other)._data.all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (infinities equal to themselves)."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype._scalar_name} did not match {other.dtype._scalar_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    input, other = _same_device(input, other)
    be = input._be
    return Tensor._make(_broadcasting(be.isclose, input._data, other._data, rtol, atol, equal_nan), be)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element is ``isclose`` (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def _predicate(prim, name):
    def fn(input):
        return Tensor._make(input._be.unary(prim, input._data), input._be)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` as a bool tensor."
    return fn


isnan = _predicate("isnan", "isnan")
isinf = _predicate("isinf", "isinf")
isfinite = _predicate("isfinite", "isfinite")
signbit = _predicate("signbit", "signbit")


def isposinf(input):
    """True where input is +inf."""
    return logical_and(isinf(input), gt(input, 0))


def isneginf(input):
    """True where input is -inf."""
    return logical_and(isinf(input), lt(input, 0))


def _logical(prim, name):
    def fn(input, other, *, out=None):
        check_tensor(other, name, "other", 2)
        a, b = _same_device(input, other)
        r = Tensor._make(_broadcasting(a._be.binary, prim, a._data, b._data), a._be)
        return r if out is None else write_out(r, out, name)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of the truth values, as a bool tensor."

    def inplace(self, other):
        return apply_inplace(self, fn, other, keeps_self=False)
    inplace.__name__ = name + "_"
    return fn, inplace


logical_and, logical_and_ = _logical("logical_and", "logical_and")
logical_or, logical_or_ = _logical("logical_or", "logical_or")
logical_xor, logical_xor_ = _logical("logical_xor", "logical_xor")


def logical_not(input, *, out=None):
    """Elementwise NOT of the truth values, as a bool tensor."""
    r = Tensor._make(input._be.unary("logical_not", input._data), input._be)
    return r if out is None else write_out(r, out, "logical_not")


def logical_not_(self):
    """In-place ``logical_not`` (the result is cast to self's dtype)."""
    return apply_inplace(self, logical_not, keeps_self=False)


def _check_integral(t, kernel):
    if t._data.dtype.kind not in "iub":
        _no_kernel(kernel, t.dtype._scalar_name)


def _no_kernel(kernel, type_name):
    """PyTorch's error for a dtype its kernel is not compiled for (a NotImplementedError since 2.x)."""
    raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for '{type_name}'")


def _bitwise(prim, name, sym):
    def impl(a, b):
        if isinstance(b, Tensor):
            if not isinstance(a, Tensor):
                s = _scalar_value(a)
                if s is None:
                    return NotImplemented
                _check_integral(b, name)
                if isinstance(s, float):
                    _no_kernel(name, "Float")
                d, s = _prep_scalar(b._be, b._data, s)
                return Tensor._make(b._be.binary(prim, s, d), b._be)
            a, b = _same_device(a, b)
            _check_integral(a, name)
            _check_integral(b, name)
            ad, bd = _pair(a, b)
            return Tensor._make(_broadcasting(a._be.binary, prim, ad, bd), a._be)
        s = _scalar_value(b)
        if s is None:
            return NotImplemented
        _check_integral(a, name)
        if isinstance(s, float):
            _no_kernel(name, "Float")
        d, s = _prep_scalar(a._be, a._data, s)
        return Tensor._make(a._be.binary(prim, d, s), a._be)

    def fn(input, other, *, out=None):
        r = impl(input, other)
        if r is NotImplemented:
            raise _unsupported(sym, other)
        return r if out is None else write_out(r, out, name)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise ``{name}`` of integer or bool tensors."

    def reflected(self, other):
        return impl(other, self) if _scalar_value(other) is not None else NotImplemented

    def inplace(self, other):
        return apply_inplace(self, fn, other, keeps_self=False)
    inplace.__name__ = name + "_"
    return impl, fn, reflected, inplace


_and, bitwise_and, _rand, bitwise_and_ = _bitwise("bitwise_and", "bitwise_and", "&")
_or, bitwise_or, _ror, bitwise_or_ = _bitwise("bitwise_or", "bitwise_or", "|")
_xor, bitwise_xor, _rxor, bitwise_xor_ = _bitwise("bitwise_xor", "bitwise_xor", "^")
_lshift, bitwise_left_shift, _rlshift, bitwise_left_shift_ = _bitwise("left_shift", "bitwise_left_shift", "<<")
_rshift, bitwise_right_shift, _rrshift, bitwise_right_shift_ = _bitwise("right_shift", "bitwise_right_shift", ">>")


def bitwise_not(input, *, out=None):
    """Elementwise NOT of an integer or bool tensor (logical NOT for bool)."""
    _check_integral(input, "bitwise_not")
    r = Tensor._make(input._be.unary("bitwise_not", input._data), input._be)
    return r if out is None else write_out(r, out, "bitwise_not")


def bitwise_not_(self):
    """In-place ``bitwise_not``."""
    return apply_inplace(self, bitwise_not, keeps_self=False)


def _invert(self):
    if self._data.dtype.kind not in "iub":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


# ====================================================================== unary math

class _OutputGrad(Op):
    """``g * f'(y)`` for an activation whose derivative is a function of its output ``y``, as one op: the
    backward of tanh / sigmoid costs one node instead of three, and stays differentiable. ``prim``: the
    backend primitive computing it (one fused pass where the backend has one)."""

    prim: ClassVar[str] = ""

    def forward(self, g, y):
        ng, ny = self.needs_input_grad
        self.save_for_backward(g if ny else None, y)
        gd, yd = g._data, y._data
        be = y._be
        if gd.dtype is not yd.dtype:
            gd = be.astype(gd, yd.dtype)
        return getattr(be, self.prim)(gd, yd)


class TanhBackwardBackward0(_OutputGrad):
    prim = "tanh_backward"

    def backward(self, gg):
        g, y = self.saved_tensors
        ng, ny = self.needs_input_grad
        return (gg * (1 - y * y) if ng else None,
                gg * g * (y * -2) if ny else None)


class SigmoidBackwardBackward0(_OutputGrad):
    prim = "sigmoid_backward"

    def backward(self, gg):
        g, y = self.saved_tensors
        ng, ny = self.needs_input_grad
        return (gg * (y * (1 - y)) if ng else None,
                gg * g * (1 - y * 2) if ny else None)


class RoundBackward1(Op):
    def forward(self, x, decimals):
        d = x._data
        if _INFO[d.dtype][0] != _FLOAT:
            raise RuntimeError(f"\"round_cpu\" not implemented for '{x.dtype._scalar_name}'")
        return x._be.round(d, decimals)

    def backward(self, g):
        return (_zeros(g),)


class ThresholdBackwardBackward0(Op):
    """0 where ``y <= threshold``, else ``g``: relu's gradient as one backend primitive (a ``where`` through
    Tensor ops costs a comparison tensor, a promotion and NumPy's branchy select), still differentiable
    in ``g`` for double backward; the step function has zero gradient in ``y``."""

    def forward(self, g, y, threshold):
        self.threshold = threshold
        if self.needs_input_grad[0]:
            self.save_for_backward(y)
        gd, yd = g._data, y._data
        if gd.dtype != yd.dtype:
            gd = y._be.astype(gd, yd.dtype)
        return y._be.threshold_backward(gd, yd, threshold)

    def backward(self, gg):
        if not self.needs_input_grad[0]:
            return None, None
        y, = self.saved_tensors
        return ThresholdBackwardBackward0.apply(gg, y, threshold=self.threshold), None


# ---------------------------------------------------------------------- the unary table
# TO ADD A UNARY OP: one row below (its primitive must be a row of backends/_elementwise_table.py, with a kernel
# line in kernels/elementwise.cu if CUDA computes it), and one test row in tests/ops/test_elementwise.py.
#
# A row builds the node class (named like PyTorch's, so ``grad_fn.name()`` agrees), the function
# ``name(input, *, out=None)``, the in-place ``name_``, the aliases, the dunder, and exports them all.
# ``dtype``: FLOAT computes integer and bool inputs in the default float dtype (exp, sqrt, sin...); SAME keeps
# the input dtype; EXACT returns integer inputs unchanged (rounding). ``saves``: what the derivative reads
# besides ``g``: INPUT (x), OUTPUT (y) or nothing. ``grad(g, x_or_y)`` is in Tensor ops, so it can be
# differentiated again. ``check(x)`` raises PyTorch's error for dtypes it refuses.

FLOAT, SAME, EXACT = "float", "same", "exact"
INPUT, OUTPUT = "input", "output"
_LN2 = 0.6931471805599453
_LN10 = 2.302585092994046
_DEG2RAD = math.pi / 180
_RAD2DEG = 180 / math.pi
_TWO_OVER_SQRT_PI = 1.1283791670955126
_SQRT_PI_OVER_TWO = 0.886226925452758

UNARY_OPS: dict[str, Any] = {}
"""name -> the function of every row below (what the tests enumerate)."""


class _UnaryOp(Op):
    """One-input op through the backend's ``unary`` table; ``_unary`` builds each from its row."""


def _unary_node(node, prim, dtype, saves, grad, check=None):
    """The Op class of a unary row. Its forward and backward are closures over the row (no per-call lookups of
    the row's fields)."""
    saves_input = saves == INPUT
    keeps_dtype = dtype == SAME
    exact = dtype == EXACT

    def forward(self, x):
        if check is not None:
            check(x)
        d = x._data
        if not keeps_dtype and _INFO[d.dtype][0] != _FLOAT:
            if exact:
                return x._be.copy(d)
            d = x._be.astype(d, _default[0].np_dtype)
        if saves_input:
            self.save_for_backward(x)
        return x._be.unary(prim, d)

    if saves_input:
        def backward(self, g):
            x, = self.saved_tensors
            return (grad(g, x),)
    elif saves == OUTPUT:
        def backward(self, g):
            return (grad(g, self.saved_output),)
    else:
        def backward(self, g):
            return (grad(g, None),)
    cls = type(node, (_UnaryOp,), {"__module__": __name__, "__qualname__": node,
                                   "__doc__": f"Backward node of the ``{prim}`` primitive.", "forward": forward,
                                   "backward": backward, "save_output": saves == OUTPUT})
    globals()[node] = cls
    return cls


def _unary(name, node, prim, *, dtype=FLOAT, saves=None, grad, check=None, aliases=(), dunder=None):
    """One row of the unary table (see above); returns the function."""
    cls = _unary_node(node, prim, dtype, saves, grad, check)
    keeps_self = saves == INPUT  # the in-place form must keep a copy of the value its backward reads

    def fn(input, *, out=None):
        r = cls.apply(input)
        return r if out is None else write_out(r, out, name)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``."

    def inplace(self):
        return apply_inplace(self, fn, keeps_self=keeps_self)
    inplace.__name__ = inplace.__qualname__ = name + "_"
    globals()[name + "_"] = inplace
    # the in-place form keeps the unwrapped op: PyTorch's autocast lists no in-place op
    public = UNARY_OPS[name] = _export(name, fn, aliases, inplace, dunder)
    return public


def _refuse(message):
    def check(x):
        if x._data.dtype.kind == "b":
            raise RuntimeError(message)
    return check


def _float_kernel(kernel):
    """PyTorch's refusal of integer and bool inputs by an op with only floating kernels."""
    def check(x):
        if _INFO[x._data.dtype][0] != _FLOAT:
            raise RuntimeError(f"\"{kernel}\" not implemented for '{x.dtype._scalar_name}'")
    return check


def _zero_grad(g, _):
    return _zeros(g)


_unary("neg", "NegBackward0", "neg", dtype=SAME, grad=lambda g, _: -g, aliases=("negative",), dunder="__neg__",
       check=_refuse("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert "
                     "a mask, use the `~` or `logical_not()` operator instead."))
_unary("abs", "AbsBackward0", "abs", dtype=SAME, saves=INPUT, grad=lambda g, x: g * x.sign(),
       check=_refuse("\"abs_cpu\" not implemented for 'Bool'"), aliases=("absolute",), dunder="__abs__")
_unary("sign", "SignBackward0", "sign", dtype=SAME, grad=_zero_grad, aliases=("sgn",))
_unary("exp", "ExpBackward0", "exp", saves=OUTPUT, grad=lambda g, y: g * y)
_unary("exp2", "Exp2Backward0", "exp2", saves=OUTPUT, grad=lambda g, y: g * (y * _LN2))
_unary("log", "LogBackward0", "log", saves=INPUT, grad=lambda g, x: g / x)
_unary("log2", "Log2Backward0", "log2", saves=INPUT, grad=lambda g, x: g / (x * _LN2))
_unary("log10", "Log10Backward0", "log10", saves=INPUT, grad=lambda g, x: g / (x * _LN10))
_unary("log1p", "Log1PBackward0", "log1p", saves=INPUT, grad=lambda g, x: g / (x + 1))
_unary("expm1", "Expm1Backward0", "expm1", saves=OUTPUT, grad=lambda g, y: g * (y + 1))
_unary("sqrt", "SqrtBackward0", "sqrt", saves=OUTPUT, grad=lambda g, y: g / (y * 2))
_unary("rsqrt", "RsqrtBackward0", "rsqrt", saves=OUTPUT, grad=lambda g, y: g * -0.5 * y.pow(3))
_unary("sin", "SinBackward0", "sin", saves=INPUT, grad=lambda g, x: g * x.cos())
_unary("cos", "CosBackward0", "cos", saves=INPUT, grad=lambda g, x: g * -x.sin())
_unary("tan", "TanBackward0", "tan", saves=OUTPUT, grad=lambda g, y: g * (y * y + 1))
_unary("asin", "AsinBackward0", "asin", saves=INPUT, grad=lambda g, x: g * (1 - x * x).rsqrt(), aliases=("arcsin",))
_unary("acos", "AcosBackward0", "acos", saves=INPUT, grad=lambda g, x: g * -(1 - x * x).rsqrt(),
       aliases=("arccos",))
_unary("atan", "AtanBackward0", "atan", saves=INPUT, grad=lambda g, x: g / (x * x + 1), aliases=("arctan",))
_unary("sinh", "SinhBackward0", "sinh", saves=INPUT, grad=lambda g, x: g * x.cosh())
_unary("cosh", "CoshBackward0", "cosh", saves=INPUT, grad=lambda g, x: g * x.sinh())
_unary("asinh", "AsinhBackward0", "asinh", saves=INPUT, grad=lambda g, x: g * (x * x + 1).rsqrt(),
       aliases=("arcsinh",))
_unary("acosh", "AcoshBackward0", "acosh", saves=INPUT, grad=lambda g, x: g * (x * x - 1).rsqrt(),
       aliases=("arccosh",))
_unary("atanh", "AtanhBackward0", "atanh", saves=INPUT, grad=lambda g, x: g / (1 - x * x), aliases=("arctanh",))
_unary("tanh", "TanhBackward0", "tanh", saves=OUTPUT, grad=lambda g, y: TanhBackwardBackward0.apply(g, y))
_unary("sigmoid", "SigmoidBackward0", "sigmoid", saves=OUTPUT,
       grad=lambda g, y: SigmoidBackwardBackward0.apply(g, y))
_unary("erf", "ErfBackward0", "erf", saves=INPUT, grad=lambda g, x: g * ((-(x * x)).exp() * _TWO_OVER_SQRT_PI))
_unary("erfinv", "ErfinvBackward0", "erfinv", saves=OUTPUT, grad=lambda g, y: g * ((y * y).exp() * _SQRT_PI_OVER_TWO))
_unary("lgamma", "LgammaBackward0", "lgamma", saves=INPUT, grad=lambda g, x: g * x.digamma())
_unary("digamma", "DigammaBackward0", "digamma", saves=INPUT, grad=lambda g, x: g * polygamma(1, x))
_unary("floor", "FloorBackward0", "floor", dtype=EXACT, grad=_zero_grad)
_unary("ceil", "CeilBackward0", "ceil", dtype=EXACT, grad=_zero_grad)
_unary("trunc", "TruncBackward0", "trunc", dtype=EXACT, grad=_zero_grad, aliases=("fix",))
_unary("frac", "FracBackward0", "frac", dtype=SAME, grad=lambda g, _: g, check=_float_kernel("frac_cpu"))
_unary("deg2rad", "Deg2RadBackward0", "deg2rad", grad=lambda g, _: g * _DEG2RAD)
_unary("rad2deg", "Rad2DegBackward0", "rad2deg", grad=lambda g, _: g * _RAD2DEG)
_unary("reciprocal", "ReciprocalBackward0", "reciprocal", saves=OUTPUT, grad=lambda g, y: g * -(y * y))
_unary("relu", "ReluBackward0", "relu", dtype=SAME, saves=OUTPUT,
       grad=lambda g, y: ThresholdBackwardBackward0.apply(g, y, threshold=0),
       check=_refuse("\"clamp_min_cpu\" not implemented for 'Bool'"))
# round's function is hand-written below (decimals); its node is a row like the others
RoundBackward0 = _unary_node("RoundBackward0", "rint", EXACT, None, _zero_grad)


def round(input, *, decimals=0, out=None):
    """Round half to even; ``decimals`` rounds to that many decimal digits (negative: tens, hundreds...)."""
    if decimals == 0:
        r = RoundBackward0.apply(input)
    else:
        r = RoundBackward1.apply(input, decimals=decimals)
    return r if out is None else write_out(r, out, "round")


def round_(self, *, decimals=0):
    """In-place ``round``."""
    return apply_inplace(self, round, decimals=decimals, keeps_self=False)


def square(input, *, out=None):
    """input * input (as ``pow(input, 2)``; bool gives int64, as in PyTorch)."""
    if input.dtype is _dtype.bool:
        input = input.long()
    return pow(input, 2, out=out)


def square_(self):
    """In-place ``square``."""
    return apply_inplace(self, square)


class PolygammaBackward0(Op):
    """The n-th derivative of digamma; its gradient is the next one."""

    def forward(self, x, n):
        self.n = n
        self.save_for_backward(x)
        d = x._data
        if _INFO[d.dtype][0] != _FLOAT:
            d = x._be.astype(d, _default[0].np_dtype)
        return x._be.polygamma(n, d)

    def backward(self, g):
        x, = self.saved_tensors
        return (g * polygamma(self.n + 1, x),)


def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of digamma (``n = 0``: digamma itself), elementwise."""
    if isinstance(n, bool) or not isinstance(n, (int, _np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    check_tensor(input, "polygamma", "input", 2)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    r = PolygammaBackward0.apply(input, n=int(n))
    return r if out is None else write_out(r, out, "polygamma")


def _polygamma_method(self, n):
    return polygamma(n, self)


def polygamma_(self, n):
    """In-place ``polygamma`` of order ``n``."""
    return apply_inplace(self, _polygamma_method, n)


class NanToNumBackward0(Op):
    """NaN, +inf and -inf replaced by numbers; the gradient flows only where the input was finite."""

    def forward(self, x, nan, posinf, neginf):
        self.save_for_backward(x)
        be = x._be
        d = x._data
        # the replacements in the input's dtype (a Python float would promote a bfloat16 result to float32); one
        # beyond the dtype's range becomes an infinity, as PyTorch converts it
        t = d.dtype.type
        with _np.errstate(over="ignore"):
            nan, posinf, neginf = t(nan), t(posinf), t(neginf)
        r = be.where(be.unary("isnan", d), nan, d)
        r = be.where(be.binary("eq", d, math.inf), posinf, r)
        return be.where(be.binary("eq", d, -math.inf), neginf, r)

    def backward(self, g):
        x, = self.saved_tensors
        # a product, not a select: a NaN gradient stays NaN at the replaced elements, as in PyTorch
        return (g * x.isfinite(),)


def _largest(npd):
    """The largest finite value of a float dtype (bfloat16 through ml_dtypes, which np.finfo may not know)."""
    try:
        return float(_np.finfo(npd).max)
    except (TypeError, ValueError):
        return float.fromhex("0x1.fep127")


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN replaced by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (default: the dtype's largest and
    smallest finite values); integer and bool tensors are returned as a copy."""
    check_tensor(input, "nan_to_num", "input", 1)
    if _INFO[input._data.dtype][0] != _FLOAT:
        r = input.clone()
    else:
        big = _largest(input._data.dtype)
        r = NanToNumBackward0.apply(input, nan=float(nan), posinf=big if posinf is None else float(posinf),
                                    neginf=-big if neginf is None else float(neginf))
    return r if out is None else write_out(r, out, "nan_to_num")


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    """In-place ``nan_to_num``."""
    return apply_inplace(self, nan_to_num, nan, posinf, neginf)


_export("polygamma", polygamma)
_export("nan_to_num", nan_to_num, inplace=nan_to_num_)
METHODS["polygamma"] = _polygamma_method
METHODS["polygamma_"] = polygamma_


# ---------------------------------------------------------------------- activations

class GeluBackward0(Op):
    def forward(self, x, approximate="none"):
        self.save_for_backward(x)
        self.approximate = approximate
        return x._be.gelu(x._data, approximate)

    def backward(self, g):
        x, = self.saved_tensors
        return (GeluBackwardBackward0.apply(g, x, approximate=self.approximate),)


class GeluBackwardBackward0(Op):
    """The gradient of gelu as an op of its own: one fused backend pass forward, and differentiable again."""

    def forward(self, g, x, approximate="none"):
        self.save_for_backward(g, x)
        self.approximate = approximate
        gd, xd = g._data, x._data
        if gd.dtype is not xd.dtype:
            gd = x._be.astype(gd, xd.dtype)
        return x._be.gelu_backward(gd, xd, approximate)

    def backward(self, gg):
        g, x = self.saved_tensors
        ng, nx = self.needs_input_grad
        gg_g = GeluBackwardBackward0.apply(gg, x, approximate=self.approximate) if ng else None
        gg_x = None
        if nx:
            if self.approximate == "tanh":
                beta, kappa = 0.7978845608028654, 0.044715
                inner = (x + x.pow(3) * kappa) * beta
                t = inner.tanh()
                sech2 = 1 - t * t
                dinner = (1 + x * x * (3 * kappa)) * beta
                # d/dx [0.5 (1 + t) + 0.5 x sech2 dinner]
                second = sech2 * dinner + x * 0.5 * (sech2 * (-2 * t * dinner * dinner)
                                                     + sech2 * (x * (6 * kappa * beta)))
            else:
                pdf = (x * x * -0.5).exp() * 0.3989422804014327
                second = pdf * (2 - x * x)
            gg_x = gg * g * second
        return gg_g, gg_x


def gelu(input, approximate="none"):
    """Gaussian error linear unit: x * Phi(x), or with ``approximate='tanh'`` its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"GeluKernelImpl\" not implemented for '{input.dtype._scalar_name}'")
    if skips_node(input):
        # outside autograd the node would only run its forward: the same primitive, without the node (see _plain)
        be = input._be
        return _new_tensor(be.gelu(input._data, approximate), be)
    return GeluBackward0.apply(input, approximate=approximate)


class SiluBackward0(Op):
    def forward(self, x):
        self.save_for_backward(x)
        return x._be.silu(x._data)

    def backward(self, g):
        x, = self.saved_tensors
        s = x.sigmoid()
        return (g * (s * (1 + x * (1 - s))),)


def silu(input, inplace=False):
    """x * sigmoid(x)."""
    if inplace:
        return apply_inplace(input, silu)
    return SiluBackward0.apply(input)


class SoftplusBackward0(Op):
    def forward(self, x, beta=1.0, threshold=20.0):
        self.save_for_backward(x)
        self.beta = beta
        self.threshold = threshold
        return x._be.softplus(x._data, beta, threshold)

    def backward(self, g):
        x, = self.saved_tensors
        xb = x * self.beta if self.beta != 1 else x
        return (where(xb > self.threshold, g, g * xb.sigmoid()),)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear where beta x > threshold."""
    return SoftplusBackward0.apply(input, beta=beta, threshold=threshold)


class LeakyReluBackward0(Op):
    def forward(self, x, negative_slope=0.01):
        self.save_for_backward(x)
        self.slope = negative_slope
        be = x._be
        d = x._data
        return be.where(be.binary("gt", d, 0), d, be.binary("mul", d, _scalar_like(negative_slope, d)))

    def backward(self, g):
        x, = self.saved_tensors
        return (where(x > 0, g, g * self.slope),)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x where x > 0, else negative_slope * x."""
    if inplace:
        return apply_inplace(input, leaky_relu, negative_slope)
    return LeakyReluBackward0.apply(input, negative_slope=negative_slope)


class EluBackward0(Op):
    """``scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1))``: PyTorch's one elu kernel behind elu, selu
    and celu."""

    def forward(self, x, alpha=1.0, scale=1.0, input_scale=1.0):
        self.save_for_backward(x)
        self.alpha, self.scale, self.input_scale = alpha, scale, input_scale
        be = x._be
        d = x._data
        pos = be.binary("gt", d, _scalar_like(0, d))
        # the negative side's input, 0 where x > 0 (exp must not overflow there); a select, not minimum(x, 0),
        # keeps -0.0 (PyTorch's elu(-0.0) is expm1(-0.0) = -0.0) and NaN
        neg = be.where(pos, d.dtype.type(0), d)
        if input_scale != 1:
            neg = be.binary("mul", neg, _scalar_like(input_scale, d))
        neg = be.binary("mul", be.unary("expm1", neg), _scalar_like(alpha, d))
        r = be.where(pos, d, neg)
        return r if scale == 1 else be.binary("mul", r, _scalar_like(scale, d))

    def backward(self, g):
        x, = self.saved_tensors
        alpha, scale, input_scale = self.alpha, self.scale, self.input_scale
        neg = x.clamp(max=0)
        if input_scale != 1:
            neg = neg * input_scale
        gs = g * scale if scale != 1 else g
        return (where(x <= 0, gs * (neg.exp() * (alpha * input_scale)), gs),)  # NaN: the linear side


def elu(input, alpha=1.0, inplace=False):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    if inplace:
        return apply_inplace(input, elu, alpha)
    return EluBackward0.apply(input, alpha=alpha)


class HardtanhBackward0(Op):
    def forward(self, x, min_val=-1.0, max_val=1.0):
        self.save_for_backward(x)
        self.lo, self.hi = min_val, max_val
        d = x._data
        return x._be.clamp(d, _scalar_like(min_val, d), _scalar_like(max_val, d))

    def backward(self, g):
        x, = self.saved_tensors
        # PyTorch zeroes the gradient at and beyond the bounds only: a NaN input passes it
        return (where((x <= self.lo) | (x >= self.hi), 0.0, g),)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clamped to [min_val, max_val] (zero gradient at and beyond the bounds)."""
    if inplace:
        return apply_inplace(input, hardtanh, min_val, max_val)
    return HardtanhBackward0.apply(input, min_val=min_val, max_val=max_val)


# ====================================================================== clamping, selection, interpolation

def _bound_scalar(v, name):
    s = _scalar_value(v)
    if s is None:
        raise TypeError(f"clamp(): argument '{name}' must be Number or Tensor, not {type(v).__name__}")
    return s


class ClampBackward1(Op):
    """clamp with Python-number bounds."""

    def forward(self, x, min=None, max=None):
        self.save_for_backward(x)
        self.lo, self.hi = min, max
        d = x._data
        cat = _INFO[d.dtype][0]
        if (cat != _FLOAT and (isinstance(min, float) or isinstance(max, float))):
            d = x._be.astype(d, _default[0].np_dtype)
        lo = None if min is None else _scalar_like(min, d)
        hi = None if max is None else _scalar_like(max, d)
        return x._be.clamp(d, lo, hi)

    def backward(self, g):
        x, = self.saved_tensors
        lo, hi = self.lo, self.hi
        if lo is None:
            mask = x <= hi
        elif hi is None:
            mask = x >= lo
        else:
            mask = (x >= lo) & (x <= hi)
        return (where(mask, g, 0.0),)


class ClampMinBackward0(ClampBackward1):
    pass


class ClampMaxBackward0(ClampBackward1):
    pass


class ClampBackward0(Op):
    """clamp with tensor bounds (either may be None)."""

    def forward(self, x, lo=None, hi=None):
        self.save_for_backward(x, lo, hi)
        operands = [t for t in (x, lo, hi) if t is not None]
        npd = _dtype.result_type(*operands).np_dtype
        arrays = [x._be.astype(t._data, npd) for t in operands]
        d = arrays[0]
        lo_d = arrays[1] if lo is not None else None
        hi_d = arrays[-1] if hi is not None else None
        return _broadcasting(x._be.clamp, d, lo_d, hi_d)

    def backward(self, g):
        x, lo, hi = self.saved_tensors
        nx, nlo, nhi = self.needs_input_grad
        gx = glo = ghi = None
        if nx:
            if lo is None:
                m = x <= hi
            elif hi is None:
                m = x >= lo
            else:
                m = (x >= lo) & (x <= hi)
            gx = _grad_to(where(m, g, 0.0), x._data.shape, x.dtype)
        if nlo:
            m = x < lo
            if hi is not None:
                m = m & (lo < hi)
            glo = _grad_to(where(m, g, 0.0), lo._data.shape, lo.dtype)
        if nhi:
            m = x > hi
            if lo is not None:
                m = m | (hi < lo)
            ghi = _grad_to(where(m, g, 0.0), hi._data.shape, hi.dtype)
        return gx, glo, ghi


class ClampMinBackward1(ClampBackward0):
    pass


class ClampMaxBackward1(ClampBackward0):
    pass


def _clamp(input, min, max, scalar_cls, tensor_cls):
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = min if isinstance(min, Tensor) or min is None else _scalar_tensor(_bound_scalar(min, "min"), input)
        hi = max if isinstance(max, Tensor) or max is None else _scalar_tensor(_bound_scalar(max, "max"), input)
        if lo is not None:
            input, lo = _same_device(input, lo)
        if hi is not None:
            input, hi = _same_device(input, hi)
        return tensor_cls.apply(input, lo, hi)
    lo = None if min is None else _bound_scalar(min, "min")
    hi = None if max is None else _bound_scalar(max, "max")
    return scalar_cls.apply(input, min=lo, max=hi)


def clamp(input, min=None, max=None, *, out=None):
    """Elementwise min(max(input, min), max); bounds are numbers or tensors (broadcast). NaN propagates;
    where min > max the result is max."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    r = _clamp(input, min, max, ClampBackward1, ClampBackward0)
    return r if out is None else write_out(r, out, "clamp")


clip = clamp


def clamp_min(input, min, *, out=None):
    """max(input, min)."""
    r = _clamp(input, min, None, ClampMinBackward0, ClampMinBackward1)
    return r if out is None else write_out(r, out, "clamp_min")


def clamp_max(input, max, *, out=None):
    """min(input, max)."""
    r = _clamp(input, None, max, ClampMaxBackward0, ClampMaxBackward1)
    return r if out is None else write_out(r, out, "clamp_max")


def clamp_(self, min=None, max=None):
    """In-place ``clamp``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return apply_inplace(self, clamp, min, max)


clip_ = clamp_


def clamp_min_(self, min):
    """In-place ``clamp_min``."""
    return apply_inplace(self, clamp_min, min)


def clamp_max_(self, max):
    """In-place ``clamp_max``."""
    return apply_inplace(self, clamp_max, max)


def _scalar_tensor(value, ref):
    """A 0-d tensor for a Python scalar, typed as the scalar would promote against ``ref``."""
    dt = _dtype.result_type(ref, value)
    be = ref._be
    return Tensor._make(be.asarray(_scalar_for(value, dt.np_dtype), dt.np_dtype), be)


def _half_ties(g, a, b):
    # ties share the gradient equally, as in PyTorch
    return where(a == b, g / 2, g)


maximum = _binary("maximum", "MaximumBackward0", "maximum", lambda g, a, b: where(a < b, 0.0, _half_ties(g, a, b)),
                  lambda g, a, b: where(a > b, 0.0, _half_ties(g, a, b)), ("ab", "ab"),
                  doc="Elementwise maximum (NaN propagates).")
minimum = _binary("minimum", "MinimumBackward0", "minimum", lambda g, a, b: where(a > b, 0.0, _half_ties(g, a, b)),
                  lambda g, a, b: where(a < b, 0.0, _half_ties(g, a, b)), ("ab", "ab"),
                  doc="Elementwise minimum (NaN propagates).")
fmax = _binary("fmax", "FmaxBackward0", "fmax", lambda g, a, b: where((a >= b) | b.isnan(), g, 0.0),
               lambda g, a, b: where((a >= b) | b.isnan(), 0.0, g), ("ab", "ab"),
               doc="Elementwise maximum ignoring NaN (NaN only where both are NaN).")
fmin = _binary("fmin", "FminBackward0", "fmin", lambda g, a, b: where((a <= b) | b.isnan(), g, 0.0),
               lambda g, a, b: where((a <= b) | b.isnan(), 0.0, g), ("ab", "ab"),
               doc="Elementwise minimum ignoring NaN (NaN only where both are NaN).")


class WhereBackward0(Op):
    """where(cond, x, y); x or y may be a Python scalar (passed as ``xs`` / ``ys``)."""

    def forward(self, cond, x=None, y=None, xs=None, ys=None, npd=None):
        be = cond._be
        xd = x._data if x is not None else _scalar_for(xs, npd)
        yd = y._data if y is not None else _scalar_for(ys, npd)
        if x is not None:
            xd = be.astype(xd, npd)
        if y is not None:
            yd = be.astype(yd, npd)
        self.save_for_backward(cond)
        self.shapes = (None if x is None else x._data.shape, None if y is None else y._data.shape)
        self.dtypes = (None if x is None else x.dtype, None if y is None else y.dtype)
        r = _broadcasting(be.where, cond._data, xd, yd)
        if r.dtype != npd:  # two Python scalars: keep the promoted dtype
            r = be.astype(r, npd)
        return r

    def backward(self, g):
        cond, = self.saved_tensors
        _, nx, ny = self.needs_input_grad
        gx = _grad_to(where(cond, g, 0.0), self.shapes[0], self.dtypes[0]) if nx else None
        gy = _grad_to(where(cond, 0.0, g), self.shapes[1], self.dtypes[1]) if ny else None
        return None, gx, gy


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` (a bool tensor) is true, else ``other``, with broadcasting; either may be
    a Python number. With only a condition: ``condition.nonzero(as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    check_tensor(condition, "where", "condition")
    if condition.dtype is not _dtype.bool:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype._scalar_name}")
    xt = isinstance(input, Tensor)
    yt = isinstance(other, Tensor)
    xs = None if xt else _scalar_value(input)
    ys = None if yt else _scalar_value(other)
    if (not xt and xs is None) or (not yt and ys is None):
        bad = input if not xt and xs is None else other
        raise TypeError(f"where(): expected Tensor or Number, got {type(bad).__name__}")
    operands = [input if xt else xs, other if yt else ys]
    if xt and yt and input._data.dtype is other._data.dtype:
        dt = input.dtype
    else:
        dt = _dtype.result_type(*operands)
    if xt:
        condition, input = _same_device(condition, input)
    if yt:
        condition, other = _same_device(condition, other)
    r = WhereBackward0.apply(condition, input if xt else None, other if yt else None, xs=xs, ys=ys,
                             npd=condition._be.np_dtype(dt))
    return r if out is None else write_out(r, out, "where")


def _where_method(self, condition, other):
    return where(condition, self, other)


class LerpBackward0(Op):
    """start + weight * (end - start), weight a Python number."""

    def forward(self, start, end, weight):
        self.weight = weight
        be = start._be
        a, b = start._data, end._data
        diff = _broadcasting(be.binary, "sub", b, a)
        self.shapes = (a.shape, b.shape)
        w = float(weight)
        # the two forms agree with PyTorch's kernel, which picks the one that is exact at its end point
        if builtins.abs(w) < 0.5:
            return be.binary("add", a, be.binary("mul", diff, w))
        return be.binary("sub", b, be.binary("mul", diff, 1.0 - w))

    def backward(self, g):
        ns, ne = self.needs_input_grad
        w = self.weight
        return (_grad_to(g * (1 - w), self.shapes[0], None) if ns else None,
                _grad_to(g * w, self.shapes[1], None) if ne else None)


class LerpBackward1(Op):
    """start + weight * (end - start), weight a tensor."""

    def forward(self, start, end, weight):
        ns, ne, nw = self.needs_input_grad
        self.save_for_backward(start if nw else None, end if nw else None, weight if ns or ne else None)
        self.shapes = (start._data.shape, end._data.shape, weight._data.shape)
        be = start._be
        return _broadcasting(self._lerp, be, start._data, end._data, weight._data)

    @staticmethod
    def _lerp(be, a, b, w):
        diff = be.binary("sub", b, a)
        small = be.binary("lt", be.unary("abs", w), 0.5)
        lo = be.binary("add", a, be.binary("mul", diff, w))
        hi = be.binary("sub", b, be.binary("mul", diff, be.binary("sub", 1.0, w)))
        return be.where(small, lo, hi)

    def backward(self, g):
        start, end, weight = self.saved_tensors
        ns, ne, nw = self.needs_input_grad
        s0, s1, s2 = self.shapes
        return (_grad_to(g * (1 - weight), s0, None) if ns else None,
                _grad_to(g * weight, s1, None) if ne else None,
                _grad_to(g * (end - start), s2, None) if nw else None)


def lerp(input, end, weight, *, out=None):
    """input + weight * (end - input); ``weight`` is a number or a tensor (broadcast)."""
    if input.dtype is not end.dtype:
        raise RuntimeError(f"expected dtype {input.dtype._cpp_typeid_name} for `end` but got dtype "
                           f"{end.dtype._cpp_typeid_name}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"lerp_kernel_scalar\" not implemented for '{input.dtype._scalar_name}'")
    input, end = _same_device(input, end)
    if isinstance(weight, Tensor):
        if weight.dtype is not input.dtype:
            raise RuntimeError(f"expected dtype {input.dtype._cpp_typeid_name} for `weight` but got dtype "
                               f"{weight.dtype._cpp_typeid_name}")
        input, weight = _same_device(input, weight)
        r = LerpBackward1.apply(input, end, weight)
    else:
        w = _scalar_value(weight)
        if w is None:
            raise TypeError(f"lerp(): argument 'weight' must be Number or Tensor, not {type(weight).__name__}")
        r = LerpBackward0.apply(input, end, weight=w)
    return r if out is None else write_out(r, out, "lerp")


def lerp_(self, end, weight):
    """In-place ``lerp``."""
    return apply_inplace(self, lerp, end, weight, keeps_self=isinstance(weight, Tensor))


class _AddcBackward(Op):
    """input + value * (tensor1 <prim> tensor2), for addcmul (prim "mul") and addcdiv (prim "div")."""

    prim = ""

    def forward(self, x, t1, t2, value=1):
        _, n1, n2 = self.needs_input_grad
        self.save_for_backward(*self._to_save(t1, t2, n1, n2))
        self.value = value
        self.meta = ((x._data.shape, x.dtype), (t1._data.shape, t1.dtype), (t2._data.shape, t2.dtype))
        npd = _dtype.result_type(x, t1, t2).np_dtype
        be = x._be
        xd, ad, bd = (be.astype(t._data, npd) for t in (x, t1, t2))
        return _broadcasting(self._addc, be, xd, ad, bd, value)

    def _addc(self, be, xd, ad, bd, value):
        r = be.binary(self.prim, ad, bd)
        if value != 1:
            r = be.binary("mul", r, _scalar_like(value, r))
        return be.binary("add", xd, r)


class AddcmulBackward0(_AddcBackward):
    prim = "mul"

    @staticmethod
    def _to_save(t1, t2, n1, n2):
        return (t1 if n2 else None, t2 if n1 else None)

    def backward(self, g):
        t1, t2 = self.saved_tensors
        nx, n1, n2 = self.needs_input_grad
        v = self.value
        (sx, dx), (s1, d1), (s2, d2) = self.meta
        gv = g * v if v != 1 else g
        return (_grad_to(g, sx, dx) if nx else None,
                _grad_to(gv * t2, s1, d1) if n1 else None,
                _grad_to(gv * t1, s2, d2) if n2 else None)


class AddcdivBackward0(_AddcBackward):
    prim = "div"

    @staticmethod
    def _to_save(t1, t2, n1, n2):
        return (t1 if n2 else None, t2 if n1 or n2 else None)

    def backward(self, g):
        t1, t2 = self.saved_tensors
        nx, n1, n2 = self.needs_input_grad
        v = self.value
        (sx, dx), (s1, d1), (s2, d2) = self.meta
        gv = g * v if v != 1 else g
        return (_grad_to(g, sx, dx) if nx else None,
                _grad_to(gv / t2, s1, d1) if n1 else None,
                _grad_to(-gv * t1 / (t2 * t2), s2, d2) if n2 else None)


@autocast_op("addcmul")
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 * tensor2 (broadcast)."""
    input, tensor1 = _same_device(input, tensor1)
    input, tensor2 = _same_device(input, tensor2)
    r = AddcmulBackward0.apply(input, tensor1, tensor2, value=value)
    return r if out is None else write_out(r, out, "addcmul")


@autocast_op("addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """input + value * tensor1 / tensor2 (broadcast); integer tensor1 / tensor2 are refused, as in PyTorch."""
    if tensor1._data.dtype.kind in "iub" and tensor2._data.dtype.kind in "iub":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2),"
                           " for all dtypes.")
    input, tensor1 = _same_device(input, tensor1)
    input, tensor2 = _same_device(input, tensor2)
    r = AddcdivBackward0.apply(input, tensor1, tensor2, value=value)
    return r if out is None else write_out(r, out, "addcdiv")


def addcmul_(self, tensor1, tensor2, *, value=1):
    """In-place ``addcmul``."""
    if (not (_state.grad and (self.requires_grad or tensor1.requires_grad or tensor2.requires_grad))
            and self._data.dtype is tensor1._data.dtype is tensor2._data.dtype and self._be is tensor1._be
            and self._be is tensor2._be):
        # an optimizer's ``v.addcmul_(g, g, value=1 - beta2)``: one temporary, written straight into self
        be = self._be
        prod = be.binary("mul", tensor1._data, tensor2._data)
        if value != 1:
            be.binary("mul", prod, _scalar_like(value, prod), out=prod)
        if _direct_inplace(self, Tensor._make(prod, be), "add"):
            return self
    return apply_inplace(self, addcmul, tensor1, tensor2, value=value, keeps_self=False)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    """In-place ``addcdiv``."""
    if (not (_state.grad and (self.requires_grad or tensor1.requires_grad or tensor2.requires_grad))
            and self._data.dtype.kind in "fV"
            and self._data.dtype is tensor1._data.dtype is tensor2._data.dtype and self._be is tensor1._be
            and self._be is tensor2._be):
        be = self._be
        q = be.binary("div", tensor1._data, tensor2._data)
        if value != 1:
            be.binary("mul", q, _scalar_like(value, q), out=q)
        if _direct_inplace(self, Tensor._make(q, be), "add"):
            return self
    return apply_inplace(self, addcdiv, tensor1, tensor2, value=value, keeps_self=False)


METHODS.update({
    # arithmetic
    "add": add, "add_": add_, "__add__": _add, "__radd__": _add, "__iadd__": _iop(add_),
    "sub": sub, "sub_": sub_, "subtract": sub, "subtract_": sub_, "__sub__": _sub, "__rsub__": _rsub_dunder,
    "__isub__": _iop(sub_),
    "mul": mul, "mul_": mul_, "multiply": mul, "multiply_": mul_, "__mul__": _mul, "__rmul__": _mul,
    "__imul__": _iop(mul_),
    "div": div, "div_": div_, "divide": div, "divide_": div_, "true_divide": true_divide,
    "true_divide_": true_divide_, "__truediv__": _div, "__rtruediv__": _rtruediv, "__itruediv__": _iop(div_),
    "floor_divide": floor_divide, "floor_divide_": floor_divide_, "__floordiv__": _floordiv,
    "__rfloordiv__": _rfloordiv, "__ifloordiv__": _iop(floor_divide_),
    "remainder": remainder, "remainder_": remainder_, "__mod__": _remainder, "__rmod__": _rmod,
    "__imod__": _iop(remainder_),
    "fmod": fmod, "fmod_": fmod_,
    "pow": pow, "pow_": pow_, "__pow__": _pow, "__rpow__": _rpow, "__ipow__": _iop(pow_),
    "float_power": float_power, "float_power_": float_power_,
    "positive": positive, "__pos__": positive,
    # comparisons
    "eq": eq, "eq_": eq_, "__eq__": _eq_dunder, "ne": ne, "ne_": ne_, "__ne__": _ne_dunder,
    "lt": lt, "lt_": lt_, "__lt__": _lt_dunder, "le": le, "le_": le_, "__le__": _le_dunder,
    "gt": gt, "gt_": gt_, "__gt__": _gt_dunder, "ge": ge, "ge_": ge_, "__ge__": _ge_dunder,
    "greater": gt, "greater_": gt_, "greater_equal": ge, "greater_equal_": ge_, "less": lt, "less_": lt_,
    "less_equal": le, "less_equal_": le_, "not_equal": ne, "not_equal_": ne_,
    "equal": equal, "allclose": allclose, "isclose": isclose, "isnan": isnan, "isinf": isinf,
    "isfinite": isfinite, "isposinf": isposinf, "isneginf": isneginf, "signbit": signbit,
    # logical and bitwise
    "logical_and": logical_and, "logical_and_": logical_and_, "logical_or": logical_or,
    "logical_or_": logical_or_, "logical_xor": logical_xor, "logical_xor_": logical_xor_,
    "logical_not": logical_not, "logical_not_": logical_not_,
    "bitwise_and": bitwise_and, "bitwise_and_": bitwise_and_, "__and__": _and, "__rand__": _rand,
    "__iand__": _iop(bitwise_and_),
    "bitwise_or": bitwise_or, "bitwise_or_": bitwise_or_, "__or__": _or, "__ror__": _ror,
    "__ior__": _iop(bitwise_or_),
    "bitwise_xor": bitwise_xor, "bitwise_xor_": bitwise_xor_, "__xor__": _xor, "__rxor__": _rxor,
    "__ixor__": _iop(bitwise_xor_),
    "bitwise_left_shift": bitwise_left_shift, "bitwise_left_shift_": bitwise_left_shift_,
    "__lshift__": _lshift, "__rlshift__": _rlshift, "__ilshift__": _iop(bitwise_left_shift_),
    "bitwise_right_shift": bitwise_right_shift, "bitwise_right_shift_": bitwise_right_shift_,
    "__rshift__": _rshift, "__rrshift__": _rrshift, "__irshift__": _iop(bitwise_right_shift_),
    "bitwise_not": bitwise_not, "bitwise_not_": bitwise_not_, "__invert__": _invert,
    # unary math (the rows of the unary table add theirs)
    "round": round, "round_": round_, "square": square, "square_": square_,
    # clamping, selection, interpolation
    "clamp": clamp, "clamp_": clamp_, "clip": clamp, "clip_": clamp_, "clamp_min": clamp_min,
    "clamp_min_": clamp_min_, "clamp_max": clamp_max, "clamp_max_": clamp_max_,
    "where": _where_method,
    "lerp": lerp, "lerp_": lerp_, "addcmul": addcmul, "addcmul_": addcmul_, "addcdiv": addcdiv,
    "addcdiv_": addcdiv_,
    # NumPy scalars on the left (np.float64(2) * t) defer to the tensor's reflected operator
    "__array_priority__": 1000,
})
