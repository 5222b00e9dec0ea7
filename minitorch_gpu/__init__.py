"""minitorch_gpu: a PyTorch-compatible deep-learning framework on NumPy (CPU) and CuPy (NVIDIA GPUs).

Port a script with ``import minitorch_gpu as torch``.
"""
from . import _dtype
from ._device import device, get_default_device, set_default_device
from ._dtype import (bfloat16, bool, double, dtype, float, float16, float32, float64, get_default_dtype, half,
                     int, int8, int16, int32, int64, long, promote_types, set_default_dtype, short, uint8)
from .tensor import Size, Tensor
# the layers above Tensor bind their methods onto it as they are imported
from . import autograd  # backward, grad_fn edges
from . import ops  # every op method
from ._tensor_str import get_printoptions, printoptions, set_printoptions  # __repr__
from . import cuda
from .autograd import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, \
    set_grad_enabled  # noqa: E402
from .ops.conversion import *  # noqa: E402,F401,F403
from .ops.creation import *  # noqa: E402,F401,F403
from .ops.creation import as_tensor, from_numpy  # noqa: E402,F401
from .ops.elementwise import *  # noqa: E402,F401,F403
from .ops.dlpack import *  # noqa: E402,F401,F403
from .ops.indexing import *  # noqa: E402,F401,F403
from .ops.linalg import *  # noqa: E402,F401,F403
from .ops.random import *  # noqa: E402,F401,F403
from .ops.reduction import *  # noqa: E402,F401,F403
from .ops.shape import *  # noqa: E402,F401,F403

__version__ = "0.1.0"


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.dtype.is_floating_point


def numel(t):
    return t.numel()


def result_type(tensor1, tensor2):
    return _dtype.result_type(tensor1, tensor2)


def can_cast(from_, to):
    return _dtype.can_cast(from_, to)


from . import nn, optim  # noqa: E402
from . import distributed  # noqa: E402
from ._compile import compile  # noqa: E402
from .utils import data as _data  # noqa: E402,F401  (makes mt.utils.data resolve, as torch.utils.data does)
from .serialization import *  # noqa: E402,F401,F403
