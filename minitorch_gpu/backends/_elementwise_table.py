"""Every elementwise primitive of the dispatch layer, once: its name, how the array library computes it, and the
op code of kernels/elementwise.cu that computes it on CUDA.

The NumPy/CuPy bodies (``_elementwise.py``), the CUDA launcher's op codes (``cuda/launch.py``) and the tests
that enumerate primitives all read this table, so a name cannot exist in one place and be missing in another;
tests/backends/test_elementwise_table.py checks it against the enums of the kernel source.

TO ADD AN ELEMENTWISE OP: one row here (give ``kernel`` if elementwise.cu computes it, and add that enum line
there), one row in ``UNARY_OPS`` of ops/elementwise.py if it is a differentiable unary op, one test row in
tests/ops/test_elementwise.py (and in tests/kernels/test_elementwise_kernels.py for a kernel).

This module is data only: it imports nothing of the package, so every layer may read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Prim", "PRIMITIVES", "KERNEL_ENUMS", "KERNEL_FILE", "Arity", "by_arity", "kernel_members"]

Arity = Literal["unary", "binary", "ternary"]

KERNEL_FILE = "elementwise.cu"
KERNEL_ENUMS: dict[str, str] = {"U": "UnaryOp", "P": "PredicateOp", "B": "BinaryOp", "C": "CompareOp",
                                "T": "TernaryOp"}
"""The prefix of an enum member of elementwise.cu -> the enum it belongs to (one per kernel signature)."""


@dataclass(frozen=True, slots=True)
class Prim:
    """One primitive. ``xp``: the NumPy/CuPy function computing it; ``body``: else the method of
    ``ElementwiseMixin`` that does (NumPy disagrees with PyTorch, or lacks it); neither: only the kernels have it,
    and ``served_by`` names the backend primitive that launches it. ``kernel``: the enum member of
    elementwise.cu (``U_neg``), or None when CUDA uses the array library's built-in."""

    name: str
    arity: Arity
    xp: str | None = None
    body: str | None = None
    kernel: str | None = None
    served_by: str | None = None


def _xp(name: str, xp: str | None, body: str | None, served_by: str | None) -> str | None:
    """The array library's function: named, or by default the primitive's own name, unless a body or only the
    kernels compute it."""
    if body is not None or served_by is not None:
        return None
    return xp or name


def _u(name: str, xp: str | None = None, *, body: str | None = None, kernel: str | None = "U",
       served_by: str | None = None) -> Prim:
    """A unary row; ``kernel`` is the enum prefix (member ``<prefix>_<name>``) or None."""
    return Prim(name, "unary", _xp(name, xp, body, served_by), body,
                None if kernel is None else f"{kernel}_{name}", served_by)


def _b(name: str, xp: str | None = None, *, body: str | None = None, kernel: str | None = "B",
       served_by: str | None = None) -> Prim:
    return Prim(name, "binary", _xp(name, xp, body, served_by), body,
                None if kernel is None else f"{kernel}_{name}", served_by)


PRIMITIVES: tuple[Prim, ...] = (
    # ---- unary: float in, same dtype out
    _u("neg", "negative"), _u("abs"), _u("exp"), _u("exp2"), _u("log"), _u("log2"), _u("log10"), _u("log1p"),
    _u("expm1"), _u("sqrt"), _u("rsqrt", body="_rsqrt"), _u("sin"), _u("cos"), _u("tan"), _u("tanh"),
    _u("floor"), _u("ceil"), _u("trunc"), _u("rint"), _u("frac", body="_frac"), _u("reciprocal"), _u("square"),
    _u("asin", "arcsin"), _u("acos", "arccos"), _u("atan", "arctan"), _u("sinh"), _u("cosh"),
    _u("asinh", "arcsinh"), _u("acosh", "arccosh"), _u("atanh", "arctanh"), _u("deg2rad", body="_deg2rad"), _u("rad2deg", body="_rad2deg"),
    _u("sign", body="_sign"), _u("relu", body="_relu"), _u("sigmoid", body="_sigmoid"), _u("erf", body="_erf_out"),
    _u("erfinv", body="_erfinv_out", kernel=None), _u("bitwise_not", "invert", kernel=None),
    _u("lgamma", body="_lgamma"), _u("digamma", body="_digamma"),
    # ---- unary: bool out
    _u("isnan", kernel="P"), _u("isinf", kernel="P"), _u("isfinite", kernel="P"), _u("signbit", kernel="P"),
    _u("logical_not", body="_logical_not", kernel="P"),
    # ---- kernel-only unary codes: the activations' fused forwards
    _u("gelu", served_by="gelu"), _u("gelu_tanh", served_by="gelu"), _u("softplus", served_by="softplus"),
    _u("silu", served_by="(kernel tests only)"),
    # ---- binary: same dtype out
    _b("add"), _b("sub", "subtract"), _b("mul", "multiply"), _b("div", "true_divide"), _b("maximum"),
    _b("minimum"), _b("fmax"), _b("fmin"), _b("pow", body="_pow"), _b("atan2", "arctan2"), _b("copysign"),
    _b("hypot"), _b("logaddexp"), _b("logaddexp2"), _b("fmod", body="_fmod"), _b("remainder", body="_remainder"),
    _b("floor_divide", body="_floor_divide"), _b("trunc_divide", body="_trunc_divide"),
    _b("bitwise_and", kernel=None), _b("bitwise_or", kernel=None), _b("bitwise_xor", kernel=None),
    _b("left_shift", kernel=None), _b("right_shift", kernel=None),
    # ---- binary: bool out
    _b("eq", "equal", kernel="C"), _b("ne", "not_equal", kernel="C"), _b("lt", "less", kernel="C"),
    _b("le", "less_equal", kernel="C"), _b("gt", "greater", kernel="C"), _b("ge", "greater_equal", kernel="C"),
    _b("logical_and", kernel="C", body="_logical_and"), _b("logical_or", kernel="C", body="_logical_or"),
    _b("logical_xor", kernel="C", body="_logical_xor"),
    # ---- kernel-only binary codes: fused backwards of the activations
    _b("gelu_backward", served_by="gelu_backward"), _b("gelu_tanh_backward", served_by="gelu_backward"),
    _b("silu_backward", served_by="(kernel tests only)"), _b("sigmoid_backward", served_by="(kernel tests only)"),
    _b("tanh_backward", served_by="(kernel tests only)"),
    # ---- kernel-only ternary codes
    Prim("clamp", "ternary", kernel="T_clamp", served_by="clamp"),
    Prim("lerp", "ternary", kernel="T_lerp", served_by="foreach_lerp"),
    Prim("addcmul", "ternary", kernel="T_addcmul", served_by="foreach_addcmul"),
    Prim("addcdiv", "ternary", kernel="T_addcdiv", served_by="foreach_addcdiv"),
)


def by_arity(arity: Arity) -> dict[str, Prim]:
    """The rows of one arity that ``unary`` / ``binary`` serve on every backend (kernel-only codes excluded)."""
    return {p.name: p for p in PRIMITIVES if p.arity == arity and p.served_by is None}


def kernel_members() -> dict[str, tuple[str, str]]:
    """{primitive name: (enum, member)} for every row elementwise.cu computes."""
    return {p.name: (KERNEL_ENUMS[p.kernel.split("_", 1)[0]], p.kernel) for p in PRIMITIVES if p.kernel}
