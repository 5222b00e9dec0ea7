"""TensorBoard event files from a training loop: ``SummaryWriter`` and the per-folder ``FileWriter`` under it.

Events are TensorBoard's own protocol buffers, written by TensorBoard's ``EventFileWriter`` (a background
thread that batches them and flushes every ``flush_secs``), so TensorBoard reads them as it reads PyTorch's.
"""
from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
from tensorboard.summary.writer.event_file_writer import EventFileWriter

__all__ = ["FileWriter", "SummaryWriter"]


def _scalar(tag: str, value: Any, new_style: bool = False, double_precision: bool = False) -> Summary:
    v = float(value)  # a Python or NumPy number, or a one-element tensor (its ``__float__``)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=v)])
    tensor = (TensorProto(double_val=[v], dtype="DT_DOUBLE") if double_precision
              else TensorProto(float_val=[v], dtype="DT_FLOAT"))
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=tag, tensor=tensor, metadata=meta)])


def _text(tag: str, text: str) -> Summary:
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)])


class FileWriter:
    """Events into one event file of ``log_dir``, written asynchronously by TensorBoard's writer."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        log_dir = str(log_dir)
        self.event_writer = EventFileWriter(log_dir, max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        """The folder of the event file."""
        return str(self.event_writer.get_logdir())

    def add_event(self, event: Event, step: int | None = None, walltime: float | None = None) -> None:
        """Queue ``event``, stamped with ``walltime`` (default: now) and ``step`` when given."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Summary, global_step: int | None = None, walltime: float | None = None) -> None:
        """Queue a summary protocol buffer as an event."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


class SummaryWriter:
    """Logs for TensorBoard, PyTorch's ``SummaryWriter``: ``add_scalar``, ``add_scalars``, ``add_text``,
    ``flush``, ``close``, and use as a context manager. ``log_dir`` defaults to
    ``runs/<Mon DD_HH-MM-SS>_<host><comment>``; ``purge_step`` hides the events at and after that step of an
    earlier run in the same folder (a resumed run). Images, histograms, graphs, embeddings, audio, video,
    meshes and hyperparameters are not written (``AttributeError``).

        >>> with SummaryWriter("runs/exp1") as w:  # doctest: +SKIP
        ...     for step in range(3):
        ...         w.add_scalar("Loss/train", 1.0 / (step + 1), step)
    """

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        """The writer of ``log_dir`` (made again after ``close``)."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # TensorBoard drops the earlier run's events from this step on when it meets this pair
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """The folder the event files go to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a float, a NumPy scalar or a one-element tensor) under ``tag`` at ``global_step``."""
        self._get_file_writer().add_summary(_scalar(tag, scalar_value, new_style, double_precision),
                                            global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Log several numbers as one chart: each key gets its own run folder ``<log_dir>/<main_tag>_<key>``."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        writers = self.all_writers
        assert writers is not None
        for tag, value in tag_scalar_dict.items():
            key = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = writers.get(key)
            if fw is None:
                fw = writers[key] = FileWriter(key, self.max_queue, self.flush_secs, self.filename_suffix)
            fw.add_summary(_scalar(main_tag, value), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a (Markdown) text under ``tag``."""
        self._get_file_writer().add_summary(_text(tag, text_string), global_step, walltime)

    def flush(self) -> None:
        """Write every queued event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close the event files; a later ``add_*`` opens new ones."""
        for writer in (self.all_writers or {}).values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
