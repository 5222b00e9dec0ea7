"""The functional forms of the optimizers (PyTorch's ``torch.optim._functional``): each updates lists of
parameters and state in place, choosing the reference, foreach or fused implementation."""
from .adagrad import adagrad
from .adam import adam
from .adamw import adamw
from .lion import lion
from .rmsprop import rmsprop
from .sgd import sgd

__all__ = ["adagrad", "adam", "adamw", "lion", "rmsprop", "sgd"]
