"""Replicate a module onto several devices for ``DataParallel``.

A replica is a shallow copy of every submodule whose parameters are *differentiable copies* of the source's
(``param.to(device)``): autograd connects each replica's parameter to the source parameter, so backward
through any replica accumulates its gradient into the source module's ``.grad`` — the gradient reduction of
data parallelism comes from the autograd graph. On the source device ``to`` returns the parameter itself,
so CPU replicas share the source parameters outright. Buffers are plain copies, except that the first
replica keeps the source's own buffers (so running statistics are updated on the source module, as in
PyTorch).
"""
from ...autograd.grad_mode import no_grad
from .scatter_gather import _as_device

__all__ = ["replicate"]


def _shallow_copy(module):
    replica = module.__new__(type(module))
    replica.__dict__.update(module.__dict__)
    d = replica.__dict__
    d["_parameters"] = dict(module._parameters)
    d["_buffers"] = dict(module._buffers)
    d["_modules"] = dict(module._modules)
    d["_is_replica"] = True
    return replica


def replicate(network, devices, detach=False):
    """One replica of ``network`` per device (see the module docstring). With ``detach`` the replicas'
    parameters carry no autograd history (for inference)."""
    devices = [_as_device(d) for d in devices]
    modules = list(network.modules())
    module_index = {id(m): i for i, m in enumerate(modules)}
    replicas = [[_shallow_copy(m) for m in modules] for _ in devices]
    params = {}
    for rep_idx, dev in enumerate(devices):
        rep = replicas[rep_idx]
        for m_idx, m in enumerate(modules):
            r = rep[m_idx]
            for name, child in m._modules.items():
                r._modules[name] = None if child is None else rep[module_index[id(child)]]
            for name, p in m._parameters.items():
                if p is None:
                    continue
                key = (id(p), rep_idx)
                if key not in params:
                    if detach:
                        with no_grad():
                            params[key] = p.detach().to(dev)
                    else:
                        params[key] = p.to(dev)
                r._parameters[name] = params[key]
            for name, b in m._buffers.items():
                if b is None:
                    continue
                key = (id(b), rep_idx)
                if key not in params:
                    if b.requires_grad and not detach:
                        params[key] = b.to(dev)
                    elif rep_idx == 0 and b.device == dev:
                        params[key] = b
                    else:
                        with no_grad():
                            c = b.to(dev)
                            params[key] = c.clone() if c is b else c
                r._buffers[name] = params[key]
    return [rep[0] for rep in replicas]
