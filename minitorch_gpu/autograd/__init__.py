"""``mt.autograd``: reverse-mode automatic differentiation, following PyTorch's autograd mechanics.

Layers inside the package, each importing only those before it: ``grad_mode`` and ``anomaly`` (flags),
``node`` (Node, edges, version bumps, the ``Op`` base of every built-in op), ``_inplace`` (in-place writes
and views), ``function`` (user-defined Functions), ``engine`` (the backward pass), then this module's
public ``backward``/``grad`` and ``gradcheck``. The package sits above ``Tensor`` and below ``ops``: it
binds ``backward`` and the edge lookups onto Tensor and never imports an op module.
"""
from . import anomaly, engine, function, grad_mode, node
from ._api import backward, grad
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import queue_callback
from .function import Function, FunctionCtx, InplaceFunction, Node, once_differentiable
from .gradcheck import gradcheck, gradgradcheck
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "gradcheck", "gradgradcheck",
           "queue_callback", "Variable", "graph"]


class _ExecutionEngine:
    @staticmethod
    def queue_callback(callback):
        queue_callback(callback)


class Variable:
    """Kept for code written against old PyTorch: ``Variable._execution_engine.queue_callback(fn)``."""
    _execution_engine = _ExecutionEngine()

    def __new__(cls, data, requires_grad=False):
        return data.detach().requires_grad_(requires_grad)


class graph:
    """``mt.autograd.graph``: the Node type, for ``isinstance`` checks on grad_fn."""
    Node = Node

