"""minitorch_gpu.utils.data: datasets, samplers, collation and the DataLoader (single- and multi-process),
checked against torch.utils.data where PyTorch is installed."""
import collections
import os
import time
import warnings

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                      IterableDataset, RandomSampler, SequentialSampler, StackDataset, Subset,
                                      SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate,
                                      default_convert, get_worker_info, random_split)


# ---------------------------------------------------------------- datasets used below (module level: picklable)

class Squares(Dataset):
    """Sample i is (float tensor [i, i*i], int i); length n."""

    def __init__(self, n, lib="mt"):
        self.n = n
        self.lib = lib  # a name, not the module: the dataset must pickle for spawned workers

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        lib = mt if self.lib == "mt" else __import__(self.lib)
        return lib.tensor([float(i), float(i * i)]), i


class Mixed(Dataset):
    """Samples of every kind default_collate handles."""

    Point = collections.namedtuple("Point", ["x", "y"])

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"arr": np.full((2,), i, dtype=np.float32), "f": i / 2, "n": i, "b": i % 2 == 0,
                "s": f"s{i}", "npf": np.float64(i), "pt": self.Point(i, float(i)), "lst": [i, i + 1],
                "tup": (i, "t")}


class Failing(Dataset):
    def __init__(self, bad, exc=KeyError):
        self.bad = bad
        self.exc = exc

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc(f"sample {i} is broken")
        return i


class Dying(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if get_worker_info() is not None and i == 3:
            os._exit(3)  # a worker crashing hard, without a Python exception
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(1.0)
        return i


class WhoAmI(Dataset):
    """Sample i is (i, worker id, worker pid, a draw from the worker's default generator)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = get_worker_info()
        return i, info.id, os.getpid(), float(mt.rand(()).item())


class Stream(IterableDataset):
    """0..n-1, split between workers by get_worker_info() (every worker gets every num_workers-th item)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


class UnevenStream(IterableDataset):
    """Worker 0 yields 7 items, every other worker 2: streams that end at different times."""

    def __iter__(self):
        info = get_worker_info()
        wid = 0 if info is None else info.id
        count = 7 if wid == 0 else 2
        return iter([(wid, k) for k in range(count)])


def _init_fn(worker_id):
    info = get_worker_info()
    info.dataset.tag = worker_id * 100


class Tagged(Dataset):
    tag = -1

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return self.tag + i


def _failing_init(worker_id):
    raise ValueError(f"init of worker {worker_id} failed")


def _plain(batch):
    """Nested batch -> plain Python (tensors to (values, dtype name)) for comparing ours with torch's."""
    if hasattr(batch, "detach") and hasattr(batch, "dtype"):
        return ("tensor", batch.detach().cpu().numpy().tolist(), str(batch.dtype).split(".")[-1],
                tuple(batch.shape))
    if isinstance(batch, dict):
        return {k: _plain(v) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return ("namedtuple", type(batch).__name__, [_plain(v) for v in batch])
    if isinstance(batch, (list, tuple)):
        return (type(batch).__name__, [_plain(v) for v in batch])
    return batch


def _values(loader):
    return [_plain(b) for b in loader]


# ---------------------------------------------------------------- datasets

def test_tensor_dataset_and_mismatch():
    x, y = mt.arange(12.).reshape(6, 2), mt.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == [8.0, 9.0] and b.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, mt.arange(5))


def test_concat_subset_chain_stack():
    a, b = Squares(3), Squares(4)
    cat = a + b
    assert isinstance(cat, ConcatDataset) and len(cat) == 7 and cat.cumulative_sizes == [3, 7]
    assert cat[3][1] == 0 and cat[6][1] == 3 and cat[-1][1] == 3 and cat[-7][1] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-8]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Stream(3)])
    sub = Subset(b, [3, 1])
    assert len(sub) == 2 and sub[0][1] == 3 and [s[1] for s in sub.__getitems__([1, 0])] == [1, 3]
    chain = Stream(3) + Stream(2)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 2, 0, 1] and len(chain) == 5
    st = StackDataset(a, Squares(3))
    assert st[2][0][1] == 2 and st[2][1][1] == 2
    sd = StackDataset(x=a, y=Subset(b, [0, 1, 2]))
    assert sd[1]["y"][1] == 1 and [d["x"][1] for d in sd.__getitems__([2, 0])] == [2, 0]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a, b)
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        iter(IterableDataset())


def test_random_split_lengths_match_torch(torch):
    for n, lengths in [(10, [3, 7]), (10, [0.5, 0.5]), (11, [0.3, 0.3, 0.4]), (7, [0.1, 0.9]),
                       (5, [0.2, 0.2, 0.2, 0.2, 0.2])]:
        ours = random_split(list(range(n)), lengths, generator=mt.Generator().manual_seed(0))
        theirs = torch.utils.data.random_split(list(range(n)), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(s) for s in ours] == [len(s) for s in theirs]
        flat = sorted(i for s in ours for i in (s[j] for j in range(len(s))))
        assert flat == list(range(n))  # disjoint and complete
    for bad in ([3, 3], [0.5, 0.6]):
        with pytest.raises(ValueError) as ours:
            random_split(list(range(10)), bad)
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.random_split(list(range(10)), bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(list(range(10)), [0.5, 1.5, -1.0])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(list(range(2)), [0.9, 0.1])


def test_random_split_reproducible():
    a = random_split(range(20), [5, 15], generator=mt.Generator().manual_seed(3))
    b = random_split(range(20), [5, 15], generator=mt.Generator().manual_seed(3))
    c = random_split(range(20), [5, 15], generator=mt.Generator().manual_seed(4))
    assert a[0].indices == b[0].indices and a[1].indices == b[1].indices
    assert a[0].indices != c[0].indices
    mt.manual_seed(9)
    d = random_split(range(20), [5, 15])
    mt.manual_seed(9)
    e = random_split(range(20), [5, 15])
    assert d[0].indices == e[0].indices


# ---------------------------------------------------------------- samplers

def test_samplers_basic():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = mt.Generator().manual_seed(1)
    perm = list(RandomSampler(range(10), generator=g))
    assert sorted(perm) == list(range(10))
    assert perm == list(RandomSampler(range(10), generator=mt.Generator().manual_seed(1)))
    more = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(more) == 10 and sorted(more[:8]) == [0, 0, 1, 1, 2, 2, 3, 3]
    repl = list(RandomSampler(range(3), replacement=True, num_samples=70, generator=g))
    assert len(repl) == 70 and set(repl) == {0, 1, 2}
    sub = list(SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=g))
    assert len(w) == 50 and set(w) <= {1, 3}
    nw = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=g))
    assert sorted(nw) == [0, 1, 2]


def test_random_sampler_follows_manual_seed():
    mt.manual_seed(5)
    a = list(RandomSampler(range(30)))
    mt.manual_seed(5)
    b = list(RandomSampler(range(30)))
    c = list(RandomSampler(range(30)))
    assert a == b and a != c


@pytest.mark.parametrize("n,bs,drop", [(10, 3, False), (10, 3, True), (9, 3, False), (9, 3, True), (2, 5, False),
                                       (2, 5, True)])
def test_batch_sampler_matches_torch(torch, n, bs, drop):
    ours = BatchSampler(SequentialSampler(range(n)), bs, drop)
    theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), bs, drop)
    assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("make", [
    lambda U: U.BatchSampler(range(3), 0, False),
    lambda U: U.BatchSampler(range(3), True, False),
    lambda U: U.BatchSampler(range(3), 2, 1),
    lambda U: U.RandomSampler(range(3), replacement=1),
    lambda U: U.RandomSampler(range(3), num_samples=0),
    lambda U: U.RandomSampler(range(3), num_samples=2.0),
    lambda U: U.WeightedRandomSampler([1.0, 2.0], 0),
    lambda U: U.WeightedRandomSampler([1.0, 2.0], 2, replacement=None),
    lambda U: U.WeightedRandomSampler([[1.0, 2.0]], 2),
])
def test_sampler_argument_errors_match_torch(torch, make):
    import minitorch_gpu.utils.data as ours_mod
    with pytest.raises(Exception) as theirs:
        make(torch.utils.data)
    with pytest.raises(Exception) as ours:
        make(ours_mod)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------- collation

def test_default_collate_matches_torch(torch):
    samples = [Mixed()[i] for i in range(3)]
    ours = default_collate(samples)
    theirs = torch.utils.data.default_collate(samples)
    assert _plain(ours) == _plain(theirs)
    assert isinstance(ours["pt"], Mixed.Point) and isinstance(ours["tup"], list)
    assert ours["f"].dtype is mt.float64 and ours["n"].dtype is mt.int64 and ours["b"].dtype is mt.bool
    assert ours["s"] == ["s0", "s1", "s2"]


def test_default_collate_tensors_and_errors(torch):
    batch = [mt.ones(2, 3, dtype=mt.float16) * i for i in range(4)]
    out = default_collate(batch)
    assert out.shape == (4, 2, 3) and out.dtype is mt.float16 and out[3, 1, 2].item() == 3.0
    np_batch = [np.arange(3, dtype=np.int32) + i for i in range(2)]
    assert _plain(default_collate(np_batch)) == _plain(torch.utils.data.default_collate(np_batch))
    for bad in ([object(), object()], [np.array(["a"]), np.array(["b"])]):
        with pytest.raises(TypeError) as ours:
            default_collate(bad)
        with pytest.raises(TypeError) as theirs:
            torch.utils.data.default_collate(bad)
        assert str(ours.value).split(";")[0] == str(theirs.value).split(";")[0]
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([mt.ones(2), mt.ones(3)])


def test_default_convert_matches_torch(torch):
    sample = {"a": np.arange(3), "t": (np.float32(2.0), "x"), "keep": 3, "objs": np.array([None])}
    ours, theirs = default_convert(sample), torch.utils.data.default_convert(sample)
    assert _plain({k: v for k, v in ours.items() if k != "objs"}) == \
        _plain({k: v for k, v in theirs.items() if k != "objs"})
    assert ours["objs"] is sample["objs"]


# ---------------------------------------------------------------- DataLoader, one process

@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=4, drop_last=False), dict(batch_size=None),
                                    dict(batch_size=10), dict(batch_size=20, drop_last=True)])
def test_sequential_batches_match_torch(torch, kwargs):
    ours = DataLoader(Squares(10), **kwargs)
    theirs = torch.utils.data.DataLoader(Squares(10, lib="torch"), **kwargs)
    assert len(ours) == len(theirs)
    assert _values(ours) == _values(theirs)


def test_mixed_batches_match_torch(torch):
    ours = DataLoader(Mixed(), batch_size=2)
    theirs = torch.utils.data.DataLoader(Mixed(), batch_size=2)
    assert _values(ours) == _values(theirs)


def test_iterable_batches_match_torch(torch):
    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    for kwargs in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)):
        ours = DataLoader(Stream(10), **kwargs)
        theirs = torch.utils.data.DataLoader(TorchStream(), **kwargs)
        assert _values(ours) == _values(theirs) and len(ours) == len(theirs)


def test_custom_sampler_batch_sampler_collate():
    dl = DataLoader(Squares(6), batch_sampler=[[5, 0], [2]])
    assert [b[1].tolist() for b in dl] == [[5, 0], [2]]
    dl = DataLoader(Squares(6), sampler=[4, 3, 2], batch_size=2, collate_fn=lambda b: [s[1] for s in b])
    assert list(dl) == [[4, 3], [2]]
    dl = DataLoader(Squares(3), batch_size=None, collate_fn=lambda s: s[1] * 10)
    assert list(dl) == [0, 10, 20]


def test_shuffle_reproducible_and_generator_driven():
    def epoch(loader):
        return [i for b in loader for i in b[1].tolist()]

    g = mt.Generator().manual_seed(11)
    dl = DataLoader(Squares(20), batch_size=6, shuffle=True, generator=g)
    e1, e2 = epoch(dl), epoch(dl)
    assert sorted(e1) == list(range(20)) and e1 != e2  # a new order every epoch
    dl2 = DataLoader(Squares(20), batch_size=6, shuffle=True, generator=mt.Generator().manual_seed(11))
    assert epoch(dl2) == e1 and epoch(dl2) == e2
    # without generator=, shuffles come from the global generator
    mt.manual_seed(3)
    a = epoch(DataLoader(Squares(20), batch_size=4, shuffle=True))
    mt.manual_seed(3)
    b = epoch(DataLoader(Squares(20), batch_size=4, shuffle=True))
    assert a == b and sorted(a) == list(range(20))


@pytest.mark.parametrize("kwargs", [
    dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2), dict(num_workers=1, prefetch_factor=-1),
    dict(persistent_workers=True), dict(shuffle=True, sampler=[0, 1]),
    dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
    dict(batch_sampler=[[0]], drop_last=True), dict(batch_size=None, drop_last=True),
    dict(multiprocessing_context="fork"), dict(num_workers=1, multiprocessing_context="nope"),
    dict(num_workers=1, multiprocessing_context=3),
])
def test_dataloader_argument_errors_match_torch(torch, kwargs):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.DataLoader(Squares(4, lib="torch"), **kwargs)
    with pytest.raises(Exception) as ours:
        DataLoader(Squares(4), **kwargs)
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_iterable_dataset_argument_errors():
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Stream(3), batch_sampler=[[0]])
    DataLoader(Stream(3), shuffle=False)  # an explicit False is allowed


def test_attributes_frozen_after_init():
    dl = DataLoader(Squares(4), batch_size=2)
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after DataLoader is initialized"):
            setattr(dl, attr, None)
    dl.num_workers = 0  # other attributes stay writable


def test_pin_memory_warns_without_gpu(torch):
    """As PyTorch: the loader is built silently; iterating it warns once and gives unpinned batches."""
    if mt.cuda.is_available():
        pytest.skip("a GPU is present")
    for lib in (torch, mt):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            dl = lib.utils.data.DataLoader(lib.arange(2), pin_memory=True)
        with pytest.warns(UserWarning, match="no accelerator is found"):
            batches = list(dl)
        assert [b.tolist() for b in batches] == [[0], [1]] and not batches[0].is_pinned()


Point = collections.namedtuple("Point", "x y")


class _Batch:
    """A user's batch type with its own ``pin_memory``, which the loader calls."""

    def __init__(self, samples):
        self.x = mt.stack([s[0] for s in samples])

    def pin_memory(self):
        self.x = self.x.pin_memory()
        return self


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_pins_every_tensor_of_a_batch(device, num_workers):
    """With a GPU (or the simulator), ``pin_memory=True`` pins each tensor inside the batch's containers, in
    single-process and worker loading, and the batches go to the device as in a training loop."""
    if not mt.cuda.is_available():
        pytest.skip("pinning needs a GPU or the simulator")
    data = [{"a": mt.tensor([float(i)]), "p": Point(mt.tensor(i), i), "pair": (mt.tensor(i), "s")} for i in range(4)]
    dl = DataLoader(data, batch_size=2, pin_memory=True, num_workers=num_workers)
    for k, b in enumerate(dl):
        assert b["a"].is_pinned() and b["p"].x.is_pinned() and b["pair"][0].is_pinned()
        assert isinstance(b["p"], Point) and isinstance(b["pair"], list) and b["pair"][1] == ("s", "s")
        assert b["a"].to(device, non_blocking=True).flatten().tolist() == [2.0 * k, 2.0 * k + 1]
    custom = DataLoader([(mt.ones(2),)] * 2, batch_size=2, collate_fn=_Batch, pin_memory=True)
    assert all(b.x.is_pinned() for b in custom)


def test_single_process_errors_propagate_unchanged():
    with pytest.raises(KeyError, match="sample 2 is broken"):
        list(DataLoader(Failing(2), batch_size=2))
    assert get_worker_info() is None


# ---------------------------------------------------------------- DataLoader, worker processes

@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("num_workers,bs,kwargs", [(2, 3, {}), (3, 1, {}), (2, 4, dict(drop_last=True)),
                                                   (2, None, {}), (2, 2, dict(prefetch_factor=1))])
def test_workers_preserve_order(num_workers, bs, kwargs):
    ref = _values(DataLoader(Squares(13), batch_size=bs, drop_last=kwargs.get("drop_last", False)))
    got = _values(DataLoader(Squares(13), batch_size=bs, num_workers=num_workers, **kwargs))
    assert got == ref


def test_spawned_workers():
    # spawn (and forkserver, Python 3.14's default) pickle the dataset into a fresh interpreter
    dl = DataLoader(Squares(7), batch_size=3, num_workers=1, multiprocessing_context="spawn")
    assert _values(dl) == _values(DataLoader(Squares(7), batch_size=3))


def test_workers_out_of_order_mode_gives_every_batch():
    got = [b[1].tolist() for b in DataLoader(Squares(13), batch_size=2, num_workers=2, in_order=False)]
    assert sorted(i for b in got for i in b) == list(range(13)) and len(got) == 7


def test_workers_shuffle_same_as_single_process():
    one = [b[1].tolist() for b in DataLoader(Squares(15), batch_size=4, shuffle=True,
                                             generator=mt.Generator().manual_seed(2))]
    many = [b[1].tolist() for b in DataLoader(Squares(15), batch_size=4, shuffle=True, num_workers=2,
                                              generator=mt.Generator().manual_seed(2))]
    assert one == many


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    rows = [r for b in DataLoader(WhoAmI(), batch_size=None, num_workers=2) for r in [b]]
    ids = {r[1] for r in rows}
    pids = {r[2] for r in rows}
    assert ids == {0, 1} and len(pids) == 2 and os.getpid() not in pids
    # batches go to the workers in turn
    assert [r[1] for r in rows] == [i % 2 for i in range(12)]
    # each worker's default generator is seeded differently
    draws0 = [r[3] for r in rows if r[1] == 0]
    draws1 = [r[3] for r in rows if r[1] == 1]
    assert draws0[0] != draws1[0]
    # seeds come from the loader's generator: equal generators, equal worker streams
    again = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=mt.Generator().manual_seed(1)))
    again2 = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=mt.Generator().manual_seed(1)))
    assert [r[3] for r in again] == [r[3] for r in again2]
    tagged = list(DataLoader(Tagged(), batch_size=None, num_workers=2, worker_init_fn=_init_fn))
    assert tagged == [0, 101, 2, 103, 4, 105]
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        get_worker_info_in_main = mt.utils.data.WorkerInfo(id=0)
        get_worker_info_in_main.id = 1


def test_iterable_dataset_sharded_across_workers():
    dl = DataLoader(Stream(11), batch_size=2, num_workers=2)
    got = [b.tolist() for b in dl]
    # worker 0 streams 0,2,4,..; worker 1 streams 1,3,5,..; batches alternate between them
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
    assert sorted(i for b in got for i in b) == list(range(11))


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_iterable_streams_ending_at_different_times():
    got = [tuple(x.tolist() for x in b) for b in DataLoader(UnevenStream(), batch_size=2, num_workers=3)]
    flat = sorted((w, k) for ws, ks in got for w, k in zip(ws, ks))
    assert flat == sorted([(0, k) for k in range(7)] + [(1, 0), (1, 1), (2, 0), (2, 1)])


@pytest.mark.parametrize("exc", [KeyError, ValueError, ZeroDivisionError])
def test_worker_errors_reraised_with_traceback(exc):
    dl = DataLoader(Failing(5, exc), batch_size=2, num_workers=2)
    it = iter(dl)
    assert next(it).tolist() == [0, 1] and next(it).tolist() == [2, 3]
    with pytest.raises(exc) as info:
        next(it)
    msg = str(info.value)
    assert f"Caught {exc.__name__} in DataLoader worker process 0." in msg
    assert "Original Traceback (most recent call last)" in msg and "sample 5 is broken" in msg
    assert "__getitem__" in msg  # the worker's frames are part of the message
    del it


def test_worker_init_fn_error_reported():
    with pytest.raises(ValueError, match="init of worker 0 failed"):
        list(DataLoader(Squares(4), num_workers=1, worker_init_fn=_failing_init))


def test_worker_crash_detected():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(DataLoader(Dying(), batch_size=1, num_workers=1))


def test_worker_timeout():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.25 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.25))


def test_persistent_workers_reused_across_epochs():
    dl = DataLoader(WhoAmI(), batch_size=3, num_workers=2, persistent_workers=True)
    first = list(dl)
    it = dl._iterator
    second = list(dl)
    assert dl._iterator is it
    assert set(first[0][2].tolist() + first[1][2].tolist()) == set(second[0][2].tolist() + second[1][2].tolist())
    assert [b[0].tolist() for b in first] == [b[0].tolist() for b in second] == [[0, 1, 2], [3, 4, 5], [6, 7, 8],
                                                                                [9, 10, 11]]
    # an epoch abandoned half way does not leak into the next one
    part = iter(dl)
    next(part)
    assert [b[0].tolist() for b in dl][0] == [0, 1, 2]
    # iterable datasets restart their streams every epoch
    sdl = DataLoader(Stream(5), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in sdl] == [b.tolist() for b in sdl] == [[0, 2], [1, 3], [4]]
    it._shutdown_workers()
    sdl._iterator._shutdown_workers()


def test_workers_shut_down_after_epoch():
    dl = DataLoader(Squares(6), batch_size=2, num_workers=2)
    it = iter(dl)
    list(it)
    assert all(not w.is_alive() for w in it._workers)
    it2 = iter(dl)
    next(it2)
    workers = it2._workers
    del it2  # dropping a half-read iterator stops its workers
    deadline = time.time() + 10
    while any(w.is_alive() for w in workers) and time.time() < deadline:
        time.sleep(0.05)
    assert all(not w.is_alive() for w in workers)


def test_iterable_len_warning():
    class Liar(Stream):
        def __len__(self):
            return 2

    dl = DataLoader(Liar(4), batch_size=None)
    assert len(dl) == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(dl)
    assert any("was reported to be 2" in str(w.message) for w in caught)
