"""``mt.nn.parallel``: data parallelism, in one process over several devices (:class:`DataParallel`) and
across processes (:class:`DistributedDataParallel`, on ``mt.distributed``)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "parallel_apply", "replicate",
           "scatter"]
