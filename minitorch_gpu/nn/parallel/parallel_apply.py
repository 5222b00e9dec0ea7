"""Run replicas of a module on their inputs, one thread per replica."""
import sys
import threading
import traceback

from ... import cuda
from ...autograd.grad_mode import _state as _grad_state
from ...tensor import Tensor
from .scatter_gather import _as_device

__all__ = ["parallel_apply"]


class _ExceptionWrapper:
    """An exception caught in a worker thread, re-raised in the caller with the worker's traceback."""

    def __init__(self, where):
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.msg = f"Caught {exc_type.__name__} {where}.\nOriginal " + "".join(
            traceback.format_exception(exc_type, exc, tb))

    def reraise(self):
        try:
            err = self.exc_type(self.msg)
        except Exception:
            raise RuntimeError(self.msg) from None
        raise err


def _first_device(obj):
    if isinstance(obj, Tensor):
        return obj.device
    if isinstance(obj, (list, tuple)):
        for o in obj:
            d = _first_device(o)
            if d is not None:
                return d
    if isinstance(obj, dict):
        for o in obj.values():
            d = _first_device(o)
            if d is not None:
                return d
    return None


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``modules[i](*inputs[i], **kwargs_tup[i])`` for every i, each in its own thread (on its device), with
    the caller's grad mode. Returns the outputs in order; an exception in any replica is re-raised here."""
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is None:
        kwargs_tup = ({},) * len(modules)
    elif len(modules) != len(kwargs_tup):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of kwargs "
                             f"{len(kwargs_tup)}")
    if devices is None:
        devices = [_first_device(inp) for inp in inputs]
    else:
        devices = [_as_device(d) for d in devices]
    grad_enabled = _grad_state.grad
    inference = _grad_state.inference
    results = {}
    lock = threading.Lock()

    def worker(i, module, inp, kwargs, dev):
        # grad modes are thread-local: each worker starts from the caller's
        _grad_state.grad = grad_enabled
        _grad_state.inference = inference
        try:
            if not isinstance(inp, (list, tuple)):
                inp = (inp,)
            if dev is not None and dev.type == "cuda":
                with cuda.device(dev.index or 0):
                    out = module(*inp, **kwargs)
            else:
                out = module(*inp, **kwargs)
            with lock:
                results[i] = out
        except Exception:
            with lock:
                results[i] = _ExceptionWrapper(f"in replica {i} on device {dev}")

    if len(modules) > 1:
        threads = [threading.Thread(target=worker, args=(i, m, inp, kw, dev))
                   for i, (m, inp, kw, dev) in enumerate(zip(modules, inputs, kwargs_tup, devices))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        worker(0, modules[0], inputs[0], kwargs_tup[0], devices[0])

    outputs = []
    for i in range(len(inputs)):
        out = results[i]
        if isinstance(out, _ExceptionWrapper):
            out.reraise()
        outputs.append(out)
    return outputs
