"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and ``CircularPad`` in
1, 2 and 3 dims. Each is a row of ``_LAYERS`` (mode, dims), built by ``_padding_layer``: the layer stores its
padding as a tuple of ``2 * dims`` ints and calls ``F.pad``."""
from .. import functional as F
from ..module import Module

__all__: list[str] = []  # the 15 layers, added as the loop at the end builds them


def _pads(padding, n):
    """``padding`` (one int for every side, or ``n`` ints) as a tuple of ``n`` ints."""
    if isinstance(padding, int):
        return (padding,) * n
    return tuple(padding)


class _PadNd(Module):
    """Pads the last ``dims`` dims of its input by ``padding`` (left, right, top, bottom, front, back)."""

    __constants__ = ["padding"]
    mode = "constant"
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _pads(padding, 2 * self.dims)

    def forward(self, input):
        if self.mode == "circular" and input.dim() not in (self.dims + 1, self.dims + 2):
            # the only layers that check the input's rank themselves (F.pad checks the rest)
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pads with a constant ``value``."""

    __constants__ = ["padding", "value"]

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    """Pads with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


# Constant before Zero: a ZeroPad layer is also the ConstantPad layer of its dims, as in PyTorch
_LAYERS = {"Constant": (_ConstantPadNd, "constant"), "Zero": (_ZeroPadNd, "constant"),
           "Reflection": (_PadNd, "reflect"), "Replication": (_PadNd, "replicate"), "Circular": (_PadNd, "circular")}


def _padding_layer(kind, dims):
    base, mode = _LAYERS[kind]
    bases = (base, globals()[f"ConstantPad{dims}d"]) if kind == "Zero" else (base,)
    name = f"{kind}Pad{dims}d"
    doc = (f"Pads the last {dims} dim{'s' if dims > 1 else ''} of a tensor ({mode} padding); ``padding`` is one "
           f"int or {2 * dims} ints (left, right{', top, bottom' if dims > 1 else ''}"
           f"{', front, back' if dims > 2 else ''}).")
    return type(name, bases, {"__module__": __name__, "__qualname__": name, "__doc__": doc, "mode": mode,
                                "dims": dims})


for _kind in _LAYERS:
    for _dims in (1, 2, 3):
        _cls = _padding_layer(_kind, _dims)
        globals()[_cls.__name__] = _cls
        __all__.append(_cls.__name__)
