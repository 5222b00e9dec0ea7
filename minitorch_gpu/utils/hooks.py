"""Removable handles returned by every ``register_*hook`` call."""
import itertools

_ids = itertools.count()


class RemovableHandle:
    """``handle.remove()`` unregisters the hook; also a context manager that removes on exit."""

    def __init__(self, hooks_dict, *extra_dicts):
        self.id = next(_ids)
        self._dicts = (hooks_dict,) + extra_dicts

    def remove(self):
        for d in self._dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(table, hook, *, prepend=False, flag_tables=()):
    """``hook`` stored in ``table`` under a new handle's id, last (or first with ``prepend``: ``table`` is then an
    OrderedDict, as PyTorch's hook tables are). Removing the handle also clears the id from ``flag_tables``, where
    the caller marks the hook (with_kwargs, always_call)."""
    handle = RemovableHandle(table, *flag_tables)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle
