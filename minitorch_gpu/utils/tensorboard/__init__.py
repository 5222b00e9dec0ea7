"""``torch.utils.tensorboard``: ``SummaryWriter`` writing TensorBoard event files.

As in PyTorch it needs the ``tensorboard`` package: without it, importing this module raises the same
``ModuleNotFoundError`` PyTorch's does (``No module named 'tensorboard'``), so a script's fallback for a
missing TensorBoard behaves the same here. The writer covers the calls training scripts make (scalars, groups
of scalars, text); see :class:`SummaryWriter`.
"""
import tensorboard

if not hasattr(tensorboard, "__version__") or tuple(int(p) for p in tensorboard.__version__.split(".")[:2]) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard

from .writer import FileWriter, SummaryWriter  # noqa: E402  (only once tensorboard is known to be there)

__all__ = ["FileWriter", "SummaryWriter"]
