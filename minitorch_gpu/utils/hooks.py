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
