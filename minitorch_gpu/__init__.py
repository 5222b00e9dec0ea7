"""minitorch_gpu: a PyTorch-compatible deep-learning framework on NumPy (CPU) and CuPy (NVIDIA GPUs).

Port a script with ``import minitorch_gpu as torch``.
"""
import os as _os
import sys as _sys

# NOTE: before anything loads NumPy's OpenBLAS, which reads this once. Its idle threads spin for 2^28 cycles
# (about 0.1 s) after each product, on the cores the compiled CPU loops split their calls onto, and a helper
# sharing a core with a spinning thread gets little of it: at 2 threads, a ResNet training step took 0.98x its
# 1-thread time with the default and 0.74x with 2^18 cycles (tens of microseconds, still enough to keep them warm
# between the back-to-back products of an LSTM: 0.81x either way). A value already set wins; with NumPy already
# imported it has no effect.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "18")

from . import _dtype
from ._device import device, get_default_device, set_default_device
from ._dtype import (bfloat16, bool, double, dtype, float, float16, float32, float64, get_default_dtype, half,
                     int, int8, int16, int32, int64, long, promote_types, set_default_dtype, short, uint8)
from ._typeinfo import finfo, iinfo
from .tensor import Size, Tensor
# the layers above Tensor bind their methods onto it as they are imported
from . import autograd  # backward, grad_fn edges
from . import ops  # every op method
from ._tensor_str import get_printoptions, printoptions, set_printoptions  # __repr__
from . import cuda
from .backends.cuda import get_float32_matmul_precision, set_float32_matmul_precision  # TF32 on CUDA
from . import accelerator  # noqa: E402
from .autograd import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, \
    set_grad_enabled  # noqa: E402
from .ops.bessel import *  # noqa: E402,F401,F403
from .ops.binning import *  # noqa: E402,F401,F403
from .ops.composite_math import *  # noqa: E402,F401,F403
from .ops.cumulative import *  # noqa: E402,F401,F403
from .ops.order_statistics import *  # noqa: E402,F401,F403
from .ops.conversion import *  # noqa: E402,F401,F403
from .ops.creation import *  # noqa: E402,F401,F403
from .ops.creation import as_tensor, from_numpy  # noqa: E402,F401
from .ops.legacy_types import CPU_TYPES as _CPU_TYPES  # noqa: E402
from .ops.decomposition import *  # noqa: E402,F401,F403
from .ops.elementwise import *  # noqa: E402,F401,F403
from .ops.distance import *  # noqa: E402,F401,F403
from .ops.dlpack import *  # noqa: E402,F401,F403
from .ops.indexing import *  # noqa: E402,F401,F403
from .ops.linalg import *  # noqa: E402,F401,F403
from .ops.random import *  # noqa: E402,F401,F403
from .ops.reduction import *  # noqa: E402,F401,F403
from .ops.shape import *  # noqa: E402,F401,F403

from . import version  # noqa: E402
from .torch_version import TorchVersion as _TorchVersion  # noqa: E402

__version__ = _TorchVersion(version.__version__)
globals().update(_CPU_TYPES)  # FloatTensor, LongTensor, ...: PyTorch's legacy tensor types


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(t):
    return t.dtype.is_floating_point


def is_complex(t):
    """Whether ``t`` has a complex dtype: always False here, where every dtype is real."""
    return t.is_complex()


def numel(t):
    return t.numel()


def result_type(tensor1, tensor2):
    return _dtype.result_type(tensor1, tensor2)


def can_cast(from_, to):
    return _dtype.can_cast(from_, to)


from . import _inductor, _utils, compiler, distributions, jit, linalg, nn, onnx, optim, special, testing  # noqa: E402
from .optim import _foreach  # noqa: E402
from . import sparse  # noqa: E402
from .sparse import layout, sparse_coo, sparse_coo_tensor, strided  # noqa: E402,F401
from .sparse import mm as spmm  # noqa: E402,F401
# PyTorch's list operations live in its top-level namespace (``torch._foreach_add_``), where code written against
# its optimizer internals looks for them
globals().update({_name: getattr(_foreach, _name) for _name in _foreach.TORCH_NAMESPACE})
from . import distributed  # noqa: E402
from . import profiler  # noqa: E402
from . import amp  # noqa: E402
from .amp import (autocast, autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,  # noqa: E402
                  get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled, set_autocast_cache_enabled,
                  set_autocast_dtype, set_autocast_enabled, _amp_foreach_non_finite_check_and_unscale_,
                  _amp_update_scale_)
from .amp._aliases import cpu  # noqa: E402

# ``torch.cuda.amp``: amp sits above the CUDA API, so the namespace hangs the deprecated spelling there
cuda.amp = amp._aliases.cuda_amp  # type: ignore[attr-defined]
from .profiler import legacy as _autograd_profiler  # noqa: E402

# ``torch.autograd.profiler``: autograd sits below the profiler, so the namespace hangs it there
autograd.profiler = _autograd_profiler  # type: ignore[attr-defined]
_sys.modules[__name__ + ".autograd.profiler"] = _autograd_profiler
from ._compile import compile  # noqa: E402
from .utils import data as _data  # noqa: E402,F401  (makes mt.utils.data resolve, as torch.utils.data does)
from .utils import checkpoint as _checkpoint  # noqa: E402,F401  (and mt.utils.checkpoint)
from .serialization import *  # noqa: E402,F401,F403
