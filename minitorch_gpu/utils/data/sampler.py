"""Samplers, PyTorch's ``torch.utils.data.sampler``: iterables of dataset indices (or of index lists, for
``BatchSampler``). Random samplers draw from a ``minitorch_gpu.Generator``: the one passed as ``generator=``,
otherwise a fresh one seeded from the default generator, so ``mt.manual_seed`` makes shuffles reproducible."""
from ... import _dtype
from ...ops.creation import as_tensor, empty
from ...ops.random import Generator, multinomial, randint, randperm

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

# RandomSampler with replacement draws this many indices per generator call (PyTorch's chunking)
_CHUNK = 32


def _seeded_generator():
    """A new CPU generator seeded by one draw from the default generator."""
    seed = int(empty((), dtype=_dtype.int64).random_().item())
    return Generator().manual_seed(seed)


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


class Sampler:
    """Base class: subclasses define ``__iter__`` (the indices) and, when they can, ``__len__``."""

    def __init__(self, data_source=None):
        # PyTorch accepts and ignores ``data_source`` here; subclasses keep what they need
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a permutation (repeated and cut to ``num_samples`` when that is larger or
    smaller than the dataset), or with ``replacement=True`` ``num_samples`` independent uniform draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not _is_int(self.num_samples) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        """How many indices one pass yields (the dataset's length unless given)."""
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        gen = _seeded_generator() if self.generator is None else self.generator
        total = self.num_samples
        if self.replacement:
            for _ in range(total // _CHUNK):
                yield from randint(high=n, size=(_CHUNK,), dtype=_dtype.int64, generator=gen).tolist()
            yield from randint(high=n, size=(total % _CHUNK,), dtype=_dtype.int64, generator=gen).tolist()
        else:
            for _ in range(total // n):
                yield from randperm(n, generator=gen).tolist()
            yield from randperm(n, generator=gen).tolist()[:total % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in random order (a fresh permutation every pass)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (not necessarily summing
    to one), with or without replacement."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_int(num_samples) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = as_tensor(weights, dtype=_dtype.float64)
        if w.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        draws = multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from draws.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size``; the last, shorter list is dropped when
    ``drop_last`` is true."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_int(batch_size) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
