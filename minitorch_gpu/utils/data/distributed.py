"""``DistributedSampler``: each rank of a data-parallel job reads its own shard of the dataset, PyTorch's
``torch.utils.data.distributed.DistributedSampler``."""
import math

from ... import distributed as dist
from ...ops.random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """The indices of rank ``rank``'s shard out of ``num_replicas`` (default: the default process group's rank
    and size). Every epoch all ranks draw the same permutation (seeded with ``seed + epoch``: call
    ``set_epoch(epoch)`` before each epoch for a fresh order), then rank ``r`` takes every ``num_replicas``-th
    index starting at ``r``. When the dataset does not divide evenly, the list is padded by repeating its
    first indices (so every rank gets the same number), or with ``drop_last=True`` trimmed instead::

        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for batch in loader: ...
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(self.dataset)
        if self.drop_last and n % self.num_replicas != 0:
            # the largest per-rank count that every rank can fill without repeating an index
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            missing = self.total_size - len(indices)
            if missing > 0:
                # wrap around (several times for a dataset smaller than the number of ranks)
                repeats = math.ceil(missing / len(indices))
                indices += (indices * repeats)[:missing]
        if len(indices) != self.total_size:
            raise AssertionError(f"DistributedSampler built {len(indices)} indices instead of {self.total_size}")
        shard = indices[self.rank:self.total_size:self.num_replicas]
        if len(shard) != self.num_samples:
            raise AssertionError(f"DistributedSampler shard has {len(shard)} indices instead of {self.num_samples}")
        return iter(shard)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use ``epoch`` in the shuffle's seed, so that each epoch has its own (rank-consistent) order."""
        self.epoch = epoch
