"""The CPU backend: NumPy arrays."""
import numpy as np

from .._device import device
from .base import Backend


class NumpyBackend(Backend):
    xp = np
    name = "numpy"

    def __init__(self):
        self.device = device("cpu")
