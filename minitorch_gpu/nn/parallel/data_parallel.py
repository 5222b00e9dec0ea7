"""Single-process data parallelism over several devices: PyTorch's ``nn.DataParallel``.

Each forward scatters the batch along ``dim`` over ``device_ids``, replicates the module onto those devices
(the replicas' parameters are differentiable copies of the source's, see ``replicate``), runs the replicas in
threads and gathers their outputs on ``output_device``. Backward goes through the gather, each replica and
the copies, so the source parameters receive the sum of every replica's gradient; one ordinary optimizer
then updates the source module.

``device_ids`` holds GPU indices (``[0, 1]``) or device strings; ``["cpu", "cpu"]`` runs replicas on the
CPU (threads; the gradient arithmetic is the same, which is what makes it testable without GPUs).
"""
from itertools import chain

from ... import cuda
from ..._device import device as _device
from ...autograd.grad_mode import is_grad_enabled
from ..module import Module
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import _as_device, gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _device_id(d):
    """How ``device_ids`` is stored: an int for a GPU (as PyTorch stores it), the device for a CPU."""
    dev = _as_device(d)
    if dev.type == "cuda":
        return dev.index if dev.index is not None else cuda.current_device()
    return dev


def _check_same_kind(devices):
    kinds = {d.type for d in devices}
    if len(kinds) > 1:
        raise ValueError(f"DataParallel device_ids must all be GPUs or all be CPUs, got {devices}")


class DataParallel(Module):
    """Split each input batch over ``device_ids``, run a replica of ``module`` on each part in parallel and
    gather the outputs on ``output_device`` (default ``device_ids[0]``). The module's parameters and buffers
    must be on ``device_ids[0]``. Without GPUs and with ``device_ids=None`` it just calls ``module``::

        model = mt.nn.DataParallel(net, device_ids=[0, 1])        # two GPUs
        model = mt.nn.DataParallel(net, device_ids=["cpu", "cpu"]) # two CPU threads
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel expects a minitorch_gpu.nn.Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        if device_ids is None:
            if not cuda.is_available():
                self.device_ids = []
                self.output_device = None
                self.src_device_obj = _device("cpu")
                return
            device_ids = list(range(cuda.device_count()))
        if len(device_ids) == 0:
            raise ValueError("DataParallel: device_ids must not be empty")
        self.device_ids = [_device_id(d) for d in device_ids]
        self._devices = [_as_device(d) for d in self.device_ids]
        _check_same_kind(self._devices)
        if output_device is None:
            output_device = self.device_ids[0]
        self.output_device = _device_id(output_device)
        self.src_device_obj = self._devices[0]
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not module_kwargs:
            inputs = ((),)
            module_kwargs = ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        return replicate(module, device_ids, not is_grad_enabled())

    def scatter(self, inputs, kwargs, device_ids):
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional form of :class:`DataParallel`: one data-parallel forward of ``module`` on ``inputs``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if device_ids is None:
        if not cuda.is_available():
            return module(*inputs, **(module_kwargs or {}))
        device_ids = list(range(cuda.device_count()))
    device_ids = [_device_id(d) for d in device_ids]
    if output_device is None:
        output_device = device_ids[0]
    src = _as_device(device_ids[0])
    for t in chain(module.parameters(), module.buffers()):
        if t.device != src:
            raise RuntimeError(f"module must have its parameters and buffers on device {src} (device_ids[0]) but "
                               f"found one of them on device: {t.device}")
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, device_ids, dim)
    if not inputs and not module_kwargs:
        inputs = ((),)
        module_kwargs = ({},)
    if len(device_ids) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = device_ids[:len(inputs)]
    replicas = replicate(module, used, not is_grad_enabled())
    outputs = parallel_apply(replicas, inputs, module_kwargs, used)
    return gather(outputs, output_device, dim)
