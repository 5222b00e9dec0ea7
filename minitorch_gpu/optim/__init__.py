"""``mt.optim``: optimizers and learning-rate schedulers, PyTorch's ``torch.optim``.

Each optimizer has up to three implementations behind one API, picked per step by the ``foreach`` / ``fused``
flags: a reference loop of tensor ops, a foreach version (one list operation at a time) and, for SGD, Adam,
AdamW, RMSprop, Adagrad and Lion, a fused one (one backend call per parameter group, their default; the others
default to foreach). LBFGS is one loop over flat vectors.
"""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .lion import Lion
from .nadam import NAdam
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["ASGD", "Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "LBFGS", "Lion", "NAdam", "Optimizer", "RAdam",
           "RMSprop", "SGD", "lr_scheduler", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]
