"""``DataLoader``, PyTorch's ``torch.utils.data.DataLoader``: batches from a dataset through a sampler and a
collate function, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a process with its own index queue; the main process keeps up to
``prefetch_factor * num_workers`` batches in flight, handing indices to the workers in turn, and gives the
results back in sampler order (``in_order=True``) whatever order they arrive in. An exception in a worker
comes back as an exception of the same type carrying the worker's traceback."""
import itertools
import multiprocessing
import multiprocessing.context
import os
import pickle
import queue
import time
import warnings
import weakref

from ... import _dtype
from ...backends.cuda import device as _cuda_probe
from ...ops.creation import empty
from . import _worker
from ._collate import default_collate, default_convert
from ._pin_memory import pin_memory
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

# seconds to wait for a worker to exit on shutdown before terminating it
_SHUTDOWN_TIMEOUT = 5.0


class _InfiniteConstantSampler(Sampler):
    """The 'sampler' of an IterableDataset: endless ``None`` s, one per sample to pull from the stream."""

    def __iter__(self):
        while True:
            yield None


def _draw_base_seed(generator):
    # one int64 from the loader's generator (or the default one) per iterator, as PyTorch does: workers are
    # seeded from it, so seeding the program seeds the workers
    return int(empty((), dtype=_dtype.int64).random_(generator=generator).item())


def _cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Map-style datasets are read in the order of ``sampler`` (sequential, or random with ``shuffle=True``),
    grouped by ``batch_size`` (or by a custom ``batch_sampler``) and merged by ``collate_fn``
    (``default_collate`` stacks tensors, converts numbers and arrays, and recurses into tuples and dicts).
    ``batch_size=None`` turns batching off: each sample is only converted (``default_convert``).
    IterableDatasets are read as streams. ``num_workers > 0`` loads in that many worker processes
    (``worker_init_fn(worker_id)`` runs first in each; :func:`get_worker_info` tells a dataset which worker it
    is in); ``persistent_workers=True`` keeps them between epochs. Shuffling draws from ``generator`` (default:
    the global generator, so ``mt.manual_seed`` makes it reproducible)."""

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers "
                             "> 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.in_order = in_order
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if isinstance(shuffle, bool) and shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self._iterator = None
        self._IterableDataset_len_called = None
        self._initialized = True
        self._check_worker_number()

    def _check_worker_number(self):
        if self.num_workers <= 1:
            return
        cpus = _cpu_count()
        if self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. Our suggested "
                          f"max number of worker in current system is {cpus}, which is smaller than what this "
                          "DataLoader is going to create. Please be aware that excessive worker creation might get "
                          "DataLoader running slow or even freeze, lower the worker number to avoid potential "
                          "slowness/freeze if necessary.", stacklevel=3)

    @property
    def multiprocessing_context(self):
        """The multiprocessing context the workers are started from (``None``: the platform default)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(ctx, str):
                methods = multiprocessing.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={ctx!r}")
                ctx = multiprocessing.get_context(ctx)
            if not isinstance(ctx, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={ctx}")
        self.__multiprocessing_context = ctx

    def __setattr__(self, attr, val):
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # what the iterator draws from: lists of indices when batching, single indices otherwise
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._dataset_kind == "iterable":
            # a stream's length is whatever its dataset reports (TypeError when it has none)
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._dataset_kind == "iterable"
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        # batches are pinned here, in the main process, when there is a GPU to copy them to
        self._pin_memory = bool(loader.pin_memory) and _cuda_probe.is_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=4)
        if self._pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                          f"ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=4)
        self._sampler_iter = None
        self._base_seed = _draw_base_seed(loader.generator)
        self._num_yielded = 0
        self._len_called = None

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __iter__(self):
        return self

    def __next__(self):
        data = self._next_data()
        if self._pin_memory:
            data = pin_memory(data)
        self._num_yielded += 1
        if self._iterable and self._len_called is not None and self._num_yielded > self._len_called:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {self._len_called} (when "
                          f"accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ",
                          stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._reset(loader, first_iter=True)
        self._fetcher = _worker.make_fetcher(self._iterable, self._dataset, self._auto_collation,
                                             self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        # shutdown is a finalizer holding the queues and processes itself: when the iterator is collected as
        # part of a reference cycle, objects in the cycle (its queues) may already be finalized by the time a
        # __del__ would run, and a put() on a finalized queue is silently lost
        self._finalizer = weakref.finalize(self, _shutdown_workers, os.getpid(), self._workers, self._index_queues,
                                           self._result_queue, self._done_event)
        try:
            for i in range(self._num_workers):
                iq = ctx.Queue()
                # the index queue may still hold tasks at shutdown; never block on flushing them
                iq.cancel_join_thread()
                w = ctx.Process(target=_worker.worker_loop,
                                args=(self._iterable, self._dataset, iq, self._result_queue, self._done_event,
                                      self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                                      loader.worker_init_fn, i, self._num_workers),
                                daemon=True)
                w.start()
                self._index_queues.append(iq)
                self._workers.append(w)
        except BaseException:
            self._shutdown_workers()
            raise
        self._reset(loader, first_iter=True)

    def _max_tasks(self):
        # at least one batch in flight, so prefetch_factor=0 still loads
        return max(self._prefetch_factor * self._num_workers, 1)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        # task id -> [worker_id] while in flight, [worker_id, data] once it arrived early
        self._task_info = {}
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # persistent workers: start a new pass in each, dropping results of a pass left unfinished
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            waiting = self._num_workers
            while waiting:
                task_id, _ = self._get_data()
                if isinstance(task_id, _worker.ResumeIteration):
                    waiting -= 1
        for _ in range(self._max_tasks()):
            self._try_put_index()

    def _try_put_index(self):
        if len(self._task_info) >= self._max_tasks():
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return  # every worker's stream has ended
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = [wid]
        self._send_idx += 1

    def _try_get_data(self, timeout):
        try:
            raw = self._result_queue.get(timeout=timeout)
        except queue.Empty:
            dead = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if dead:
                pids = ", ".join(str(w.pid) for w in dead)
                codes = ", ".join(str(w.exitcode) for w in dead)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code(s) "
                                   f"{codes})") from None
            return False, None
        return True, pickle.loads(raw)

    def _get_data(self):
        if self._timeout > 0:
            ok, item = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return item
        while True:
            ok, item = self._try_get_data(_worker.POLL_INTERVAL)
            if ok:
                return item

    def _drop_orphaned_tasks(self):
        # tasks sent to a worker whose stream has ended will never be answered
        for tid in [t for t, info in self._task_info.items()
                    if len(info) == 1 and not self._workers_status[info[0]]]:
            del self._task_info[tid]

    def _next_data(self):
        while True:
            self._drop_orphaned_tasks()
            if self._in_order:
                while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._task_info:
                    self._rcvd_idx += 1
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and len(info) == 2:
                    del self._task_info[self._rcvd_idx]
                    self._rcvd_idx += 1
                    return self._process(info[1])
            if not self._task_info:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            task_id, data = self._get_data()
            info = self._task_info.get(task_id)
            if info is None:
                continue  # stale (a task this pass already gave up on)
            if isinstance(data, _worker.IterableStopped):
                del self._task_info[task_id]
                self._mark_worker_stopped(data.worker_id)
                self._try_put_index()
                continue
            if self._in_order and task_id != self._rcvd_idx:
                info.append(data)
                continue
            del self._task_info[task_id]
            if self._in_order:
                self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_stopped(self, wid):
        self._workers_status[wid] = False
        if not self._persistent_workers:
            # its stream is done for good: let the process exit now
            self._index_queues[wid].put(None)

    def _shutdown_workers(self):
        self._finalizer()


def _shutdown_workers(owner_pid, workers, index_queues, result_queue, done_event):
    """Stop a multi-process iterator's workers: ask each to exit, wait a little, then terminate stragglers."""
    if os.getpid() != owner_pid:
        return  # a forked child inherits the finalizer; only the process that started the workers stops them
    try:
        done_event.set()
        for q in index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + _SHUTDOWN_TIMEOUT
        for w in workers:
            w.join(timeout=max(deadline - time.monotonic(), 0))
        for q in index_queues:
            q.close()
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
                w.join()
        result_queue.cancel_join_thread()
        result_queue.close()
