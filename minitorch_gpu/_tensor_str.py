"""repr of tensors in PyTorch's format."""
import numpy as np


def tensor_repr(t):
    arr = t._be.to_numpy(t._data)
    body = np.array2string(arr, separator=", ", prefix="tensor(")
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if t.dtype.name not in ("float32", "int64", "bool"):
        extras.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
