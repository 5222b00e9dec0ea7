"""Copying a batch into page-locked host memory (``DataLoader(pin_memory=True)``): every tensor inside it,
through the containers ``default_collate`` builds and any object with its own ``pin_memory()``."""
import collections.abc
import copy

__all__ = ["pin_memory"]


def pin_memory(data, device=None):
    """``data`` with each tensor (and each object that has ``pin_memory()``) replaced by its pinned copy;
    mappings, named tuples, tuples and sequences keep their type where it can be rebuilt, else become a
    dict or a list; strings and other objects come back as they are. ``device`` is accepted and unused, as
    PyTorch pins for the current accelerator."""
    if hasattr(data, "pin_memory"):  # tensors, PackedSequence, a user's batch class
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {k: pin_memory(v, device) for k, v in data.items()}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                out = copy.copy(data)  # a subclass may carry attributes of its own
                out.update(pinned)
                return out
            return type(data)(pinned)
        except TypeError:
            return pinned
    if isinstance(data, tuple):
        items = [pin_memory(x, device) for x in data]
        return type(data)(*items) if hasattr(data, "_fields") else type(data)(items)
    if isinstance(data, collections.abc.Sequence):
        items = [pin_memory(x, device) for x in data]
        try:
            if isinstance(data, collections.abc.MutableSequence):
                out = copy.copy(data)
                for i, x in enumerate(items):
                    out[i] = x
                return out
            return type(data)(items)
        except TypeError:  # e.g. a range cannot be rebuilt from its items
            return items
    return data
