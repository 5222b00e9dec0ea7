"""One fused optimizer step, described in the terms of kernels/optim_math.cuh.

The optimizer primitives (``backends/_optim.py``) describe a step as a ``FusedStep``; whichever compiled
implementation runs it reads the description: the CUDA launcher (one launch of optim.cu through pointer
tables) and the CPU's native loop (optim_cpu.cpp, ``backends/_optim_native.py``). Names of scalars and flags
are those of the kernel's enums, read from the header, so Python and the kernels cannot disagree on a code.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._types import Array, writable
from .loader import define_int, enum_codes

__all__ = ["FusedStep", "fused_group_sizes", "group_scalar_count", "OPTIM_KINDS"]

_HEADER = "optim_math.cuh"
# optimizer kind -> the prefix of its enums in optim_math.cuh (``<Prefix>Scalar``, ``<Prefix>Flag``)
_KERNEL_ENUM = {"adam": "Adam", "sgd": "Sgd", "rmsprop": "Rmsprop", "adagrad": "Adagrad", "lion": "Lion"}
OPTIM_KINDS = tuple(_KERNEL_ENUM)


def group_scalar_count() -> int:
    """The number of group scalar slots in the kernels' ``consts`` argument (``MT_OPTIM_GROUP_SCALARS``)."""
    return define_int(_HEADER, "MT_OPTIM_GROUP_SCALARS")


def _codes(kind: str, what: str) -> dict[str, int]:
    """{name: code} of optim_math.cuh's ``<Kind><what>`` enum (what: Scalar or Flag)."""
    return enum_codes(_HEADER, _KERNEL_ENUM[kind] + what)


def _bits(kind: str, flags: dict[str, bool]) -> int:
    """The option bits of a {flag name: bool} dict."""
    codes = _codes(kind, "Flag")
    return sum(1 << codes[k] for k, on in flags.items() if on)


class FusedStep:
    """One fused optimizer step over a group, in the terms of kernels/optim_math.cuh, for whichever
    implementation runs it.

    ``roles``: the parameters, the gradients and each state in the kernel's order (None for a state the options
    leave unused). ``scalars`` and ``flags`` are the group's, by their names in the kernel's enums;
    ``tensor_scalars`` (up to two numbers) and ``tensor_flags`` (a dict of flags) are per tensor.
    """
    __slots__ = ("kind", "roles", "scalars", "flags", "tensor_scalars", "tensor_flags")

    def __init__(self, kind: str, roles: Sequence[list[Array] | None], scalars: dict[str, float],
                 flags: dict[str, bool], tensor_scalars: Sequence[tuple[float, ...]] | None = None,
                 tensor_flags: Sequence[dict[str, bool]] | None = None) -> None:
        self.kind = kind
        self.roles: list[list[Array] | None] = list(roles)
        self.scalars = scalars
        self.flags = flags
        self.tensor_scalars = tensor_scalars
        self.tensor_flags = tensor_flags

    @property
    def params(self) -> list[Array]:
        """The parameters (role 0, always present)."""
        p = self.roles[0]
        assert p is not None, "a FusedStep's first role is its parameters"
        return p

    def roles_or_none(self) -> list[list[Any]]:
        """The roles with a list of Nones for each unused state (the array-module bodies' layout)."""
        n = len(self.params)
        return [r if r is not None else [None] * n for r in self.roles]

    def flag_bits(self) -> int:
        """The group's option bits (the kernels' ``flags`` argument)."""
        return _bits(self.kind, self.flags)

    def consts(self) -> list[float]:
        """[group scalars | per tensor: extra flag bits, t0, t1] as floats (float64): the CPU loop's ``consts``
        argument; the GPU kernels take the group scalars as arguments and the per-tensor part as arguments too
        when every tensor shares it, else as one uploaded array."""
        n = len(self.params)
        g = group_scalar_count()
        out = [0.0] * (g + 3 * n)
        codes = _codes(self.kind, "Scalar")
        for k, v in self.scalars.items():
            out[codes[k]] = float(v)
        if self.tensor_flags is not None:
            for i, tf in enumerate(self.tensor_flags):
                out[g + 3 * i] = float(_bits(self.kind, tf))
        if self.tensor_scalars is not None:
            for i, ts in enumerate(self.tensor_scalars):
                out[g + 3 * i + 1:g + 3 * i + 1 + len(ts)] = map(float, ts)
        return out


def fused_group_sizes(step: FusedStep, array_type: Any, dt: Any, writeable: bool = False) -> list[int] | None:
    """Element counts of the group's tensors when every array of every used role is a C-contiguous
    ``array_type`` of dtype ``dt`` with its parameter's size (and, with ``writeable``, every role but the
    gradients writeable): what a compiled step needs. Else None."""
    sizes = []
    for arrs in zip(*[r for r in step.roles if r is not None]):
        n = arrs[0].size
        for j, a in enumerate(arrs):
            if type(a) is not array_type or (a.dtype is not dt and a.dtype != dt) or a.size != n:
                return None
            if not a.flags.c_contiguous or (writeable and j != 1 and not writable(a)):
                return None
        sizes.append(n)
    return sizes
