"""Flatten parameters into one vector and back (``parameters_to_vector`` / ``vector_to_parameters``)."""
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _typename(obj):
    t = type(obj)
    mod = t.__module__
    return t.__qualname__ if mod in (None, "builtins") else f"{mod}.{t.__qualname__}"


def _check_param_device(param, old_device):
    """The device of the first parameter; TypeError when a later one lives elsewhere (one flat vector can
    only live on one device)."""
    index = param.get_device() if param.device.type == "cuda" else -1
    if old_device is None:
        return index
    if index != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_device


def parameters_to_vector(parameters):
    """All ``parameters`` flattened and concatenated into one 1-d tensor (a copy)."""
    from ...ops.shape import cat
    device = None
    vec = []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of the 1-d ``vec`` (in ``parameters`` order), as PyTorch
    does: afterwards the parameters share memory with ``vec``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected minitorch_gpu.Tensor, but got: {_typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
