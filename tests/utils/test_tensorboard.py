"""``torch.utils.tensorboard.SummaryWriter`` against PyTorch's: the same events (tags, steps, values, text) as
TensorBoard reads them, and PyTorch's ImportError when the ``tensorboard`` package is missing."""
import importlib
import os
import re
import sys

import numpy as np
import pytest

import minitorch_gpu as mt


def test_missing_tensorboard_is_pytorchs_import_error(torch, monkeypatch):
    """Without the tensorboard package (hidden here if installed) both imports fail alike."""
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    for name in ("torch.utils.tensorboard", "minitorch_gpu.utils.tensorboard"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ModuleNotFoundError) as theirs:
        importlib.import_module("torch.utils.tensorboard")
    with pytest.raises(ModuleNotFoundError, match=f"^{re.escape(str(theirs.value))}$"):
        importlib.import_module("minitorch_gpu.utils.tensorboard")


def _events(path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    tags = acc.Tags()
    scalars = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags["scalars"]}
    # texts and new-style scalars arrive as tensors
    tensors = {t: [(e.step, [v.decode() for v in e.tensor_proto.string_val] + list(e.tensor_proto.float_val))
                   for e in acc.Tensors(t)] for t in tags["tensors"]}
    return scalars, tensors


def _log(lib, log_dir):
    w = lib.utils.tensorboard.SummaryWriter(log_dir)
    for step in range(3):
        w.add_scalar("Loss/train", lib.tensor(1.0 / (step + 1)), step)  # a 0-d tensor, as scripts pass
        w.add_scalar("lr", np.float32(0.1 * step), step)
        w.add_scalar("acc", 0.5 + step / 10, step, new_style=True)
        w.add_scalars("run", {"a": step, "b": 2.0 * step}, step)
    w.add_text("notes", "**hello**", 2)
    assert w.get_logdir() == log_dir
    w.close()


def test_writes_what_pytorchs_writer_writes(torch, tmp_path):
    pytest.importorskip("tensorboard")
    import torch.utils.tensorboard  # noqa: F401  (PyTorch's, for the comparison)
    importlib.import_module("minitorch_gpu.utils.tensorboard")
    _log(torch, tmp_path / "torch")
    _log(mt, tmp_path / "ours")
    assert _events(tmp_path / "ours") == _events(tmp_path / "torch")
    assert sorted(os.listdir(tmp_path / "ours")) != [] and \
        sorted(d for d in os.listdir(tmp_path / "ours") if not d.startswith("events")) == ["run_a", "run_b"]
    for sub in ("run_a", "run_b"):
        assert _events(tmp_path / "ours" / sub) == _events(tmp_path / "torch" / sub)
    scalars, tensors = _events(tmp_path / "ours")
    assert scalars["Loss/train"] == [(0, 1.0), (1, 0.5), (2, pytest.approx(1 / 3))]
    assert tensors["notes/text_summary"] == [(2, ["**hello**"])] and len(tensors["acc"]) == 3


def test_context_manager_reopen_and_default_folder(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard")
    from minitorch_gpu.utils.tensorboard import SummaryWriter
    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_lr0.1") as w:
        w.add_scalar("x", 1.0, 0)
    folder = w.get_logdir()
    assert folder.startswith("runs" + os.sep) and folder.endswith("_lr0.1")
    w.add_scalar("x", 2.0, 1)  # after close: a new event file in the same folder
    w.flush()
    assert _events(tmp_path / folder)[0] == {"x": [(0, 1.0), (1, 2.0)]}
    w.close()


def test_purge_step_hides_a_crashed_runs_later_events(tmp_path):
    pytest.importorskip("tensorboard")
    from minitorch_gpu.utils.tensorboard import SummaryWriter
    with SummaryWriter(tmp_path) as w:
        for step in range(5):
            w.add_scalar("loss", float(step), step)
    with SummaryWriter(tmp_path, purge_step=3) as w:  # resumed from the step-3 checkpoint
        for step in range(3, 5):
            w.add_scalar("loss", 10.0 + step, step)
    assert _events(tmp_path)[0]["loss"] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 13.0), (4, 14.0)]
