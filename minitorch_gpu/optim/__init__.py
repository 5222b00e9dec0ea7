"""``mt.optim``: optimizers and learning-rate schedulers, PyTorch's ``torch.optim``.

Each optimizer has three implementations behind one API, picked per step by the ``foreach`` / ``fused``
flags: a reference loop of tensor ops, a foreach version (one list operation at a time) and a fused one (one
backend call per parameter group, the default).
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .lion import Lion
from .optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Lion", "Optimizer", "RMSprop", "SGD", "lr_scheduler",
           "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]
