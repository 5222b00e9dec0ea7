"""``mt.nn``: Module, Parameter, layers, losses, ``functional``, ``init`` and ``utils``."""
from . import functional, init, utils  # noqa: F401
from .module import *  # noqa: F401,F403
from .modules import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403
from .parallel import DataParallel  # noqa: F401  (and mt.nn.parallel)
