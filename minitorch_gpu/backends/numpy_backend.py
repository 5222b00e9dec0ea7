"""The CPU backend: NumPy arrays."""
import warnings

import numpy as np

from .._device import device
from .base import Backend


# PyTorch computes log(0), 1/0, inf*0 silently (IEEE results); NumPy warns. Entering np.errstate around
# every primitive would cost more than the primitive on small tensors, so the warnings NumPy attributes
# to our own backend modules are filtered once instead; the user's NumPy error state is left alone.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"minitorch_gpu\.backends\.")


class NumpyBackend(Backend):
    xp = np
    name = "numpy"

    def __init__(self):
        self.device = device("cpu")
