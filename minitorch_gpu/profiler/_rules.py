"""The profiler's tables of rules: event names, FLOPs per kernel and per op, and each GPU's peaks.

Names. A built-in op's node class is named as PyTorch names its backward node (``AddmmBackward0``), which
PyTorch derives from the aten op's name, so the aten name is that derivation undone: the ``Backward<N>``
suffix dropped and CamelCase turned into snake_case (``AddmmBackward0`` -> ``aten::addmm``,
``NativeLayerNormBackward0`` -> ``aten::native_layer_norm``).

FLOPs of one kernel launch, from its arguments (``n``: the element count of its largest array argument):

* GEMM (matmul.cu): 2·nb·M·N·K, from the launch's batch count and sizes; the split-K reduction 1 per partial sum;
* attention (attention.cu), per batch·head, with ``L`` queries, ``S`` keys and head dim ``D``: forward 4·L·S·D
  (two products), the backward's dK/dV kernel 8·L·S·D (four), its dQ kernel 6·L·S·D (three); halved when
  causal (about half the scores are masked);
* elementwise (elementwise.cu, dropout): 1 per element; softmax and cross-entropy 5 per element forward
  (max, subtract, exp, sum, divide), 4 backward; layer norm 8 forward, 10 backward;
* anything else (optimizer steps, Philox, embedding, norms, copies): not counted (shown as ``--``): they are
  memory-bound, and the roofline uses their bytes.

An array-library built-in: ``matmul`` 2·(output elements)·K; ``unary``, ``binary``, ``where`` 1 per output
element; ``sum`` and ``reduce`` 1 per input element; the rest not counted. These are estimates of useful
arithmetic, the convention of roofline plots, not instruction counts.

Peaks (datasheet, FP32 without tensor cores; HBM bandwidth): the roofline fraction of a kernel is
``max(bytes / peak bandwidth, FLOPs / peak FLOP/s) / time``. The measured device-to-device copy on an H100 SXM
reaches 2.96 TB/s, 0.88 of the datasheet's 3.35, so a fully memory-bound kernel tops out near 0.88 here.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ..backends.cuda.loader import enum_codes

__all__ = ["op_name", "kernel_flops", "builtin_flops", "op_flops", "device_peaks", "PEAKS"]

_SUFFIX = re.compile(r"Backwards?\d*$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_names: dict[str, str] = {}


def op_name(cls_name: str) -> str:
    """``aten::`` name of a built-in op from its node class name."""
    name = _names.get(cls_name)
    if name is None:
        stem = _SUFFIX.sub("", cls_name).lstrip("_") or cls_name
        name = _names[cls_name] = "aten::" + _CAMEL.sub("_", stem).lower()
    return name


# FLOPs per element of the largest array argument, by kernel file and direction
_PER_ELEMENT = {
    ("elementwise.cu", "forward"): 1, ("random.cu", "dropout"): 1,
    ("softmax.cu", "forward"): 5, ("softmax.cu", "backward"): 4,
    ("cross_entropy.cu", "forward"): 5, ("cross_entropy.cu", "backward"): 4,
    ("layernorm.cu", "forward"): 8, ("layernorm.cu", "backward"): 10,
}
_ATTN_PRODUCTS = {"forward": 2, "dkv": 4, "dq": 3}


def _scalars(args: Sequence[Any]) -> list[int]:
    """The integer scalar arguments of a launch, in order (the launchers type every one as a NumPy scalar)."""
    return [int(a) for a in args if getattr(a, "ndim", None) == 0 and getattr(a, "dtype", None) is not None
            and a.dtype.kind in "iu"]


def kernel_flops(file: str, name: str, args: Sequence[Any]) -> int:
    """FLOPs of one launch of kernel ``name`` of ``kernels/<file>`` with ``args`` (0: not counted)."""
    stem = name.split("<")[0]
    if file == "matmul.cu":
        ints = _scalars(args)
        if stem.startswith("matmul_splitk_reduce"):  # (total, N, splits, has_bias)
            return ints[0] * ints[2]
        # (nb, splits, kchunk, nb*M*N, M, N, K, strides...)
        nb, M, N, K = ints[0], ints[4], ints[5], ints[6]
        return 2 * nb * M * N * K
    if file == "attention.cu":
        for part, products in _ATTN_PRODUCTS.items():
            if f"_{part}" in stem:
                # (BH, H, L, S, D, DV, flags, ...) after the operands; prep kernels have no such tail
                ints = _scalars(args)
                if len(ints) < 7:
                    return 0
                BH, _, L, S, D, _, flags = ints[:7]
                flops = 2 * products * BH * L * S * D
                causal = 1 << enum_codes("attention.cu", "AttnFlag")["causal"]  # the kernel's own bit
                return flops // 2 if flags & causal else flops
        return 0
    for (f, part), per in _PER_ELEMENT.items():
        if f == file and part in stem:
            return per * _largest(args)
    return 0


def _largest(arrays: Sequence[Any]) -> int:
    return max((int(a.size) for a in arrays if getattr(a, "ndim", 0)), default=0)


def builtin_flops(name: str, arrays: Sequence[Any], outs: Sequence[Any]) -> int:
    """FLOPs of one array-library call of primitive ``name`` (0: not counted)."""
    if name == "matmul" and arrays and outs:
        a, out = arrays[0], outs[0]
        if out.ndim >= 2 and a.ndim >= 2:
            k = a.shape[-1] * a.shape[-2] // max(1, out.shape[-2])
        else:
            k = a.shape[-1] if a.ndim else 1
        return 2 * int(out.size) * int(k)
    if name in ("unary", "binary", "where"):
        return _largest(outs)
    if name in ("sum", "reduce"):
        return _largest(arrays)
    return 0


def _broadcast(shapes: Sequence[Sequence[int]]) -> list[int]:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            out[i] = max(out[i], n)
    return out


def op_flops(name: str, shapes: Sequence[Sequence[int]]) -> int:
    """FLOPs of a CPU op from its input shapes (``with_flops``), for the ops PyTorch's formulas cover:
    matrix products (2·M·N·K) and binary arithmetic (1 per output element); 0 otherwise."""
    mats = [list(s) for s in shapes if len(s) >= 2]
    if name in ("aten::mm", "aten::bmm", "aten::matmul", "aten::addmm", "aten::baddbmm") and len(mats) >= 2:
        a, b = mats[-2], mats[-1]
        if a[-1] == b[-2]:
            n = b[-1]
        elif a[-1] == b[-1]:  # nn.Linear's addmm takes the weight untransposed
            n = b[-2]
        else:
            return 0
        return 2 * math.prod(_broadcast([a[:-2], b[:-2]])) * a[-2] * a[-1] * n
    if name in ("aten::add", "aten::sub", "aten::mul", "aten::div"):
        return math.prod(_broadcast(shapes)) if shapes else 0
    return 0


# (name fragment, HBM bytes/s, FP32 FLOP/s): datasheet values, the first fragment found in the device's name wins
PEAKS: list[tuple[str, float, float]] = [
    ("H100 PCIe", 2.0e12, 51.2e12),
    ("H100 NVL", 3.9e12, 60.0e12),
    ("H100", 3.35e12, 67.0e12),       # SXM5 (reported as "NVIDIA H100 80GB HBM3")
    ("H200", 4.8e12, 67.0e12),
    ("A100-SXM4-80GB", 2.039e12, 19.5e12),
    ("A100 80GB PCIe", 1.935e12, 19.5e12),
    ("A100", 1.555e12, 19.5e12),      # 40 GB
    ("L40S", 0.864e12, 91.6e12),
    ("L4", 0.3e12, 30.3e12),
    ("A10", 0.6e12, 31.2e12),
    ("RTX 4090", 1.008e12, 82.6e12),
    ("V100", 0.9e12, 15.7e12),
    ("T4", 0.32e12, 8.1e12),
]


def device_peaks(name: str) -> tuple[float, float] | None:
    """(bytes/s, FLOP/s) of the GPU called ``name``, or None when the table does not know it."""
    for frag, bw, flops in PEAKS:
        if frag in name:
            return bw, flops
    return None
