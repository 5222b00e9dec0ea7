"""The thread-local grad-mode and inference-mode flags.

They sit below ``Tensor`` because every tensor records, when it is made, whether inference mode was on;
``autograd.grad_mode`` (no_grad, inference_mode, ...) is the public API that sets them. The flags are read
on every op, so they are class attributes of a ``threading.local`` subclass: a new thread sees the
defaults without any setup.
"""
import threading


class _State(threading.local):
    grad: bool = True
    inference: bool = False


_state = _State()
