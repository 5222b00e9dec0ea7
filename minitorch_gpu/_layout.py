"""Layout objects: how a tensor's elements are stored (``mt.strided``: a dense array; ``mt.sparse_coo``:
coordinates and values). Compared by identity (``x.layout is mt.sparse_coo``), as in PyTorch."""

__all__ = ["layout", "strided", "sparse_coo"]


class layout:
    """A storage layout (``mt.strided`` or ``mt.sparse_coo``); compare with ``is`` or ``==``."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"minitorch_gpu.{self._name}"

    def __reduce__(self) -> str:
        # layouts are singletons: unpickling finds the module-level object by its name
        return self._name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
