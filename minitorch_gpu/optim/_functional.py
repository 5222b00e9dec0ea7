"""The functional forms of the optimizers (PyTorch's ``torch.optim._functional``): each updates lists of
parameters and state in place, choosing the reference, foreach or fused implementation."""
from .adadelta import adadelta
from .adagrad import adagrad
from .adam import adam
from .adamax import adamax
from .adamw import adamw
from .asgd import asgd
from .lion import lion
from .nadam import nadam
from .radam import radam
from .rmsprop import rmsprop
from .sgd import sgd

__all__ = ["adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "lion", "nadam", "radam", "rmsprop", "sgd"]
