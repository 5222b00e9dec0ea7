"""What runs inside a DataLoader worker process: the fetch loop, per-worker seeding, ``get_worker_info``,
and the wrapper that carries an exception (with the worker's traceback) back to the main process."""
import os
import queue
import random
import sys
import traceback
from multiprocessing.reduction import ForkingPickler

__all__ = ["get_worker_info", "WorkerInfo"]

# how often (seconds) a waiting worker checks that its parent is still alive, and the main process that its
# workers are
POLL_INTERVAL = 1.0


class WorkerInfo:
    """Facts about the current worker: ``id`` (0 .. num_workers-1), ``num_workers``, ``seed`` (the seed of
    this worker's default generator) and ``dataset`` (this worker's copy). Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({fields})"


_worker_info = None


def get_worker_info():
    """In a DataLoader worker process, its :class:`WorkerInfo`; in the main process ``None``.

    An ``IterableDataset`` uses it to give each worker a different share of the stream, and a
    ``worker_init_fn`` to configure the worker's copy of the dataset."""
    return _worker_info


class _KeyErrorMessage(str):
    # KeyError shows repr() of its argument; this keeps the multi-line traceback readable
    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, made picklable: its type and its formatted traceback."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        exc_type = exc_info[0]
        try:
            ForkingPickler.dumps(exc_type)
        except Exception:
            # a class defined inside a function cannot cross the process boundary; its name stays in the text
            exc_type = RuntimeError
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise an exception of the original type whose message includes the worker's traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            # an exception type whose constructor needs other arguments: keep the message, lose the type
            raise RuntimeError(msg) from None
        try:
            raise exc
        finally:
            # the frame would otherwise hold the exception that holds the frame: a cycle keeping the
            # DataLoader iterator (and its worker processes) alive until the next garbage collection
            exc = None


class IterableStopped:
    """A worker's answer once its copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of every epoch after the first; echoed back as an ack."""


class MapFetcher:
    """Fetches samples (or a collated batch) of a map-style dataset by index."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            if callable(getitems):
                data = getitems(index)
            else:
                data = [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class IterableFetcher:
    """Pulls samples from an IterableDataset's iterator; raises StopIteration once it is exhausted."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = IterableFetcher if iterable else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def numpy_seed(base_seed, worker_id):
    """A 128-bit NumPy seed mixed from the base seed and the worker id, so that workers (and epochs) never
    share NumPy streams."""
    import numpy as np
    words = [worker_id, base_seed & 0xFFFFFFFF, (base_seed >> 32) & 0xFFFFFFFF]
    return np.random.SeedSequence(words).generate_state(4)


def seed_worker(base_seed, worker_id):
    """Seed every RNG a dataset is likely to use: Python's, NumPy's global one, and minitorch_gpu's."""
    import numpy as np
    from ...ops.random import manual_seed
    seed = (base_seed + worker_id) & ((1 << 64) - 1)
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    return seed


def _dumps(item, where):
    """Pickle ``(task_id, data)`` here rather than in the queue's feeder thread, where a failure would only be
    printed and the main process would wait forever: an unpicklable batch comes back as the error."""
    try:
        return bytes(ForkingPickler.dumps(item))
    except Exception:
        return bytes(ForkingPickler.dumps((item[0], ExceptionWrapper(where=where))))


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers):
    """The body of one worker process: answer each ``(task_id, index)`` from ``index_queue`` with
    ``(task_id, batch)`` (or an ExceptionWrapper / IterableStopped) on ``data_queue``; exit on ``None``."""
    global _worker_info
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=where)
        stopped = False
        parent = os.getppid()
        while True:
            try:
                task = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent or done_event.is_set():
                    # orphaned (the main process died), or shut down without the exit request reaching us
                    break
                continue
            if task is None:
                break
            if isinstance(task, ResumeIteration):
                data_queue.put(_dumps((task, None), where))
                stopped = False
                if init_error is None:
                    # a fresh pass: an iterable dataset starts its stream again
                    try:
                        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                    except Exception:
                        init_error = ExceptionWrapper(where=where)
                continue
            if done_event.is_set() or stopped:
                continue
            task_id, index = task
            if init_error is not None:
                # the dataset could not be set up in this worker: every batch it is asked for fails so
                data = init_error
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if iterable:
                        data = IterableStopped(worker_id)
                        stopped = True
                    else:
                        data = ExceptionWrapper(where=where)
                except Exception:
                    data = ExceptionWrapper(where=where)
            data_queue.put(_dumps((task_id, data), where))
            del data, task, index
    except KeyboardInterrupt:
        # the main process sees the interrupt too and shuts the workers down
        pass
    if done_event.is_set():
        # the main process no longer reads results: exiting must not wait for them to be flushed
        data_queue.cancel_join_thread()
        data_queue.close()
