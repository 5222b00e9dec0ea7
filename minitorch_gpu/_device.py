"""device objects: ``mt.device("cuda:1")``, ``mt.device("cpu")``, ``mt.device("cuda", 0)``."""

_TYPES = ("cpu", "cuda")


class device:
    __slots__ = ("type", "index")

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's parameter name
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(device, index) is not allowed; pass a device type string")
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string or a device, got {type.__class__.__name__}")
        name = type.strip()
        if ":" in name:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {name}")
            name, _, idx = name.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if name not in _TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}")
        if index is not None:
            if not isinstance(index, int) or index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            if name == "cpu" and index != 0:
                raise RuntimeError(f"CPU device index must be 0 or absent, got {index}")
            if name == "cpu":
                index = None
        self = object.__new__(cls)
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)
        return self

    def __setattr__(self, name, value):
        raise AttributeError("device objects are immutable")

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))


_default_device = [device("cpu")]


def set_default_device(d):
    """Device that factory functions (``zeros``, ``tensor``, ...) use when none is given."""
    _default_device[0] = device("cpu") if d is None else device(d)


def get_default_device():
    return _default_device[0]
