"""ZeroRedundancyOptimizer's partition of the parameters over the ranks is PyTorch's (no process group needed:
the partition is a function of the parameter groups and the world size)."""
import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.distributed.optim.zero_redundancy_optimizer import _partition


def _torch_partition(torch, sizes_per_group, world_size):
    """PyTorch's own partition of tensors of these sizes, as (group, index in group) per rank and group."""
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero
    groups = [{"params": [torch.zeros(s) for s in sizes], "lr": 0.1} for sizes in sizes_per_group]
    where = {id(p): (g, i) for g, group in enumerate(groups) for i, p in enumerate(group["params"])}
    # the method reads only these attributes: no process group is needed to call it
    zero = object.__new__(TorchZero)
    zero.world_size = world_size
    zero.param_groups = groups
    zero._partition_parameters_cache = []
    return [[[where[id(p)] for p in g["params"]] for g in per_rank] for per_rank in zero._partition_parameters()]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # importing torch.distributed.optim warns about torch.jit
@pytest.mark.parametrize("world_size", [1, 2, 3, 5])
def test_partition_matches_pytorch(torch, world_size):
    rng = np.random.default_rng(world_size)
    # repeated sizes check the tie-breaking (stable order, lowest rank), two groups the counts carried over
    sizes_per_group = [[int(s) for s in rng.choice([1, 3, 8, 8, 40, 100], size=9)],
                       [int(s) for s in rng.integers(1, 50, size=4)]]
    groups = [{"params": [mt.zeros(s) for s in sizes], "lr": 0.1} for sizes in sizes_per_group]
    where = {id(p): (g, i) for g, group in enumerate(groups) for i, p in enumerate(group["params"])}
    ours = [[[where[id(p)] for p in g["params"]] for g in per_rank] for per_rank in _partition(groups, world_size)]
    assert ours == _torch_partition(torch, sizes_per_group, world_size)


def test_partition_copies_the_group_options():
    w, b = mt.zeros(4), mt.zeros(2)
    group = {"params": [w, b], "lr": 0.5, "momentum": 0.9}
    per_rank = _partition([group], 2)
    assert [g["params"] for g in per_rank[0]] == [[w]] and [g["params"] for g in per_rank[1]] == [[b]]
    assert all(g["lr"] == 0.5 and g["momentum"] == 0.9 for r in per_rank for g in r)
    assert group["params"] == [w, b], "the group itself is left alone"
