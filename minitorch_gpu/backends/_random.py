"""Random primitives, drawn from a Generator's state."""


class RandomMixin:
    pass
