"""Every op, defined once. Each module's ``METHODS`` table binds its ops onto Tensor."""
from ..tensor import register_methods
from . import conversion, creation, dlpack, elementwise, indexing, linalg, random, reduction, shape

_MODULES = (creation, conversion, elementwise, reduction, shape, indexing, linalg, random, dlpack)


for _mod in _MODULES:
    register_methods(getattr(_mod, "METHODS", {}))
