"""Launchers of kernels/rnn.cu: one launch per LSTM or GRU step, forward or backward.

Each function has a route's signature, ``(backend, launcher, *the primitive's arguments)`` (see ``ROUTES`` in
``backends/cuda_backend.py``), and returns the primitive's result, or None for a call the kernels do not take (a
dtype other than float32, float64, float16 and bfloat16, operands of mixed dtypes): the primitive's body in
``backends/_rnn.py`` then runs. Operands are made C-contiguous first (the per-step slices the layers pass already are).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._types import Array
from .launch import THREADS, TNAME, Launcher

__all__ = ["lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"]


def _kernel_dtype(*arrays: Array | None) -> str | None:
    """The template type of the kernels for these operands (None entries skipped), or None if they have none."""
    dts = {a.dtype for a in arrays if a is not None}
    if len(dts) != 1:
        return None
    return TNAME.get(dts.pop())


def _run(kern: Launcher, kernel: str, widths: tuple[int, ...], inputs: tuple[Array | None, ...],
         like: tuple[int, ...], flags: tuple[bool, ...] = ()) -> tuple[Array, ...] | None:
    """Launch ``kernel(*inputs, *outputs, B, H, *flags)`` with one thread per element of the (B, H) state, the last
    input; input i must be (B, widths[i] * H) (the kernels read that much). The outputs are new arrays shaped like
    ``inputs[i]`` for each i in ``like``. An absent input (None: a zero gradient the kernel skips by its flag) is
    passed as the state's pointer, never read. None when the kernels do not take the dtypes or the shapes."""
    t = _kernel_dtype(*inputs)
    state = inputs[-1]
    if t is None or state is None or state.ndim != 2:
        return None
    B, H = state.shape
    if any(a is not None and a.shape != (B, w * H) for a, w in zip(inputs, widths)):
        return None
    xp = kern.xp
    ins = [None if a is None else xp.ascontiguousarray(a) for a in inputs]
    state = ins[-1]
    outs = tuple(xp.empty_like(ins[i]) for i in like)
    if B * H:
        kern.fn("rnn.cu", f"{kernel}<{t}>")(
            kern.grid(B * H), (THREADS,),
            (*(state if a is None else a for a in ins), *outs, np.int64(B), np.int64(H),
             *(np.int32(f) for f in flags)))
    return outs


def lstm_cell_forward(be: Any, kern: Launcher, gi: Array, gh: Array, c: Array) -> tuple[Array, ...] | None:
    return _run(kern, "lstm_cell_forward", (4, 4, 1), (gi, gh, c), (2, 2))


def lstm_cell_backward(be: Any, kern: Launcher, dh: Array | None, dc: Array | None, gi: Array, gh: Array,
                       c: Array) -> tuple[Array, ...] | None:
    return _run(kern, "lstm_cell_backward", (1, 1, 4, 4, 1), (dh, dc, gi, gh, c), (2, 4),
                (dh is not None, dc is not None))


def gru_cell_forward(be: Any, kern: Launcher, gi: Array, gh: Array, h: Array) -> Array | None:
    r = _run(kern, "gru_cell_forward", (3, 3, 1), (gi, gh, h), (2,))
    return None if r is None else r[0]


def gru_cell_backward(be: Any, kern: Launcher, dh: Array, gi: Array, gh: Array,
                      h: Array) -> tuple[Array, ...] | None:
    return _run(kern, "gru_cell_backward", (1, 3, 3, 1), (dh, gi, gh, h), (1, 2, 3))
