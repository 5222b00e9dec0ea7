"""Every op, defined once. Each module's ``METHODS`` table binds its ops onto Tensor."""
from . import conversion, creation, dlpack, elementwise, indexing, linalg, random, reduction, shape

_MODULES = (creation, conversion, elementwise, reduction, shape, indexing, linalg, random, dlpack)


def _bind():
    from ..tensor import Tensor
    for mod in _MODULES:
        for name, fn in getattr(mod, "METHODS", {}).items():
            setattr(Tensor, name, fn)


_bind()
