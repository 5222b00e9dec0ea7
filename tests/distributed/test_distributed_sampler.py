"""DistributedSampler against torch.utils.data.distributed.DistributedSampler: the same shards, padding and
drop_last; shuffling is compared by giving PyTorch's sampler our permutation (the two libraries' random
streams differ), and checked for determinism and for partitioning the dataset."""
import pytest

import minitorch_gpu as mt
from minitorch_gpu.utils.data import DataLoader, DistributedSampler, TensorDataset

CASES = [(10, 3), (12, 4), (7, 2), (5, 8), (1, 3), (9, 1), (0, 2), (17, 5)]


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


@pytest.mark.parametrize("n,replicas", CASES)
@pytest.mark.parametrize("drop_last", [False, True])
def test_unshuffled_shards_match_torch(torch, n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for rank in range(replicas):
        ours = DistributedSampler(Sized(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(Sized(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


@pytest.mark.parametrize("n,replicas", [c for c in CASES if c[0] > 0])
@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_shards_match_torch_given_the_same_permutation(torch, monkeypatch, n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for epoch in (0, 3):
        g = mt.Generator().manual_seed(7 + epoch)
        perm = mt.randperm(n, generator=g).tolist()
        monkeypatch.setattr(torch, "randperm", lambda k, generator=None: torch.tensor(perm))
        for rank in range(replicas):
            ours = DistributedSampler(Sized(n), num_replicas=replicas, rank=rank, seed=7, drop_last=drop_last)
            ours.set_epoch(epoch)
            theirs = TorchSampler(Sized(n), num_replicas=replicas, rank=rank, seed=7, drop_last=drop_last)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)


def test_shuffle_is_deterministic_per_seed_and_epoch_and_partitions_the_data():
    n, replicas = 23, 4
    shards = [list(DistributedSampler(Sized(n), replicas, r, seed=5)) for r in range(replicas)]
    again = [list(DistributedSampler(Sized(n), replicas, r, seed=5)) for r in range(replicas)]
    assert shards == again
    flat = sorted(i for s in shards for i in s)
    assert set(flat) == set(range(n))  # every index is somewhere
    assert len(flat) == 24 and len(set(flat)) == n  # one index repeated as padding
    assert all(len(s) == 6 for s in shards)
    other_seed = [list(DistributedSampler(Sized(n), replicas, r, seed=6)) for r in range(replicas)]
    assert other_seed != shards
    s = DistributedSampler(Sized(n), replicas, 0, seed=5)
    s.set_epoch(1)
    assert list(s) != shards[0]
    dropped = [list(DistributedSampler(Sized(n), replicas, r, seed=5, drop_last=True)) for r in range(replicas)]
    flat = [i for d in dropped for i in d]
    assert len(flat) == 20 and len(set(flat)) == 20  # no repeats when dropping the tail


def test_with_a_dataloader():
    ds = TensorDataset(mt.arange(10.0))
    sampler = DistributedSampler(ds, num_replicas=2, rank=1, shuffle=False)
    batches = [b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=sampler)]
    assert batches == [[1.0, 3.0], [5.0, 7.0], [9.0]]


def test_arguments():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(Sized(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match=r"Invalid rank -1"):
        DistributedSampler(Sized(4), num_replicas=2, rank=-1)
    if not mt.distributed.is_initialized():
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            DistributedSampler(Sized(4))
