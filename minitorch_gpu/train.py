"""Train a character-level GPT: ``python -m minitorch_gpu.train`` (or the ``minitorch-gpu-train`` command).

With no arguments it trains on a corpus that is always there, offline: the Python standard library's own
source files, read from the running interpreter in a fixed order (the first ``--max-chars`` characters). Pass
``--data FILE_OR_DIR`` to train on any text (a directory contributes all its files, in sorted order). The last
10% of the corpus is held out for validation.

Everything lands in ``--out`` (default ``out/``): ``metrics.jsonl`` (one JSON object per step: step, loss,
lr, tokens_per_s, dtype, and val_loss at evaluation steps), ``checkpoint.safetensors`` (model, optimizer,
scheduler, step, random-number-generator states, model config, vocabulary, dtype and GradScaler state, written with
``mt.serialization.save_safetensors``) and ``loss.png`` (train and validation curves; needs matplotlib). A text
sample is printed at the end.

``--resume`` continues from the checkpoint in ``--out`` up to ``--steps``. Batches come from a generator whose
state is checkpointed with everything else, so on the CPU a resumed run reproduces the losses of an
uninterrupted one exactly (``--stop-after N`` ends a run early at step N, as an interruption would). Ctrl-C
finishes the step in flight, saves a checkpoint of it and exits with 130, so resuming is exact after it too; a
second Ctrl-C quits at once without one. ``metrics.jsonl`` is only appended to (each record fsynced before its
step's checkpoint); ``--resume`` keeps the records up to the checkpoint's step through a temporary file renamed
over it.

``--dtype`` picks the precision of the forward pass: ``float32``, or ``bfloat16`` / ``float16`` under
``mt.autocast`` (parameters, gradients and optimizer state stay float32; ``float16`` adds a ``GradScaler``).
``auto`` is bfloat16 on a GPU that supports it, else float32; a resumed run keeps its checkpoint's dtype.

Bad input (a missing, special or /proc data path, an empty corpus, a run too large for the available memory,
``--resume`` without a checkpoint or with one from another model config or vocabulary, or with a bad step,
``--device cuda`` without a GPU, a ``--dtype`` the device cannot do, bad numbers) is reported in one line on
stderr with exit code 2.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import stat
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from minitorch_gpu import Generator
    from minitorch_gpu import device as mt_device
    from minitorch_gpu.models import GPT, GPTConfig
    from minitorch_gpu.optim import Optimizer
    from minitorch_gpu.optim.lr_scheduler import LRScheduler

PROG = "minitorch-gpu-train"
CHECKPOINT = "checkpoint.safetensors"
METRICS = "metrics.jsonl"
PLOT = "loss.png"
CHECKPOINT_FORMAT = "minitorch_gpu.train/1"
VAL_FRACTION = 0.1
MIN_LR_RATIO = 0.1

# defaults per device. CPU: loss falls visibly within a minute on two cores; GPU: a model that learns to write
# plausible Python
DEFAULTS = {
    "cpu": dict(steps=300, batch_size=16, block_size=64, n_layer=2, n_head=4, n_embd=64, dropout=0.0, lr=3e-3,
                warmup=30, eval_every=50, eval_iters=10),
    "cuda": dict(steps=2000, batch_size=64, block_size=256, n_layer=6, n_head=6, n_embd=384, dropout=0.2,
                 lr=1e-3, warmup=100, eval_every=250, eval_iters=40),
}
DTYPES = ("auto", "float32", "bfloat16", "float16")
MODEL_FIELDS = ("block_size", "n_layer", "n_head", "n_embd", "dropout")

# directories of the standard library that are not plain library source (tests hold deliberately odd files;
# site-packages differs between installations)
_SKIP_DIRS = {"site-packages", "dist-packages", "test", "tests", "idle_test", "__pycache__"}


class UsageError(Exception):
    """Bad input: reported as one line on stderr with exit code 2, never as a traceback."""


# ---------------------------------------------------------------------------------------------- arguments

def _number(kind, low, low_open, what):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not math.isfinite(v) or v < low or (low_open and v == low):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return v
    parse.__name__ = what
    return parse


_positive_int = _number(int, 0, True, "a positive integer")
_nonneg_int = _number(int, 0, False, "a non-negative integer")
_positive_float = _number(float, 0.0, True, "a positive number")
_nonneg_float = _number(float, 0.0, False, "a non-negative number")


def _probability(text):
    v = _number(float, 0.0, False, "a probability in [0, 1)")(text)
    if v >= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), got {text!r}")
    return v


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    # options whose default depends on the device say so in their help text instead of "(default: None)"
    def _get_help_string(self, action):
        if action.default is None or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)


def build_parser():
    """The command-line interface (defaults of None are filled per device, or from the checkpoint)."""
    p = argparse.ArgumentParser(prog=PROG, description="Train a character-level GPT with minitorch_gpu.",
                                formatter_class=_HelpFormatter)
    p.add_argument("--data", default=None,
                   help="text file or directory of text files (default: the Python standard library's source)")
    p.add_argument("--max-chars", type=_positive_int, default=2_000_000, help="use at most this many characters")
    p.add_argument("--out", default="out", help="output directory")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (auto: cuda when available)")
    p.add_argument("--seed", type=_nonneg_int, default=1337, help="seed of the model init, batches and dropout")
    p.add_argument("--steps", type=_positive_int, help="total optimizer steps (cpu 300, gpu 2000)")
    p.add_argument("--stop-after", type=_positive_int, default=None,
                   help="stop (and checkpoint) after this step, as an interruption would; --resume continues")
    p.add_argument("--batch-size", type=_positive_int, help="sequences per step (cpu 16, gpu 64)")
    p.add_argument("--block-size", type=_positive_int, help="context length in characters (cpu 64, gpu 256)")
    p.add_argument("--n-layer", type=_positive_int, help="transformer blocks (cpu 2, gpu 6)")
    p.add_argument("--n-head", type=_positive_int, help="attention heads (cpu 4, gpu 6)")
    p.add_argument("--n-embd", type=_positive_int, help="embedding width (cpu 64, gpu 384)")
    p.add_argument("--dropout", type=_probability, help="dropout probability (cpu 0, gpu 0.2)")
    p.add_argument("--lr", type=_positive_float, help="peak learning rate (cpu 3e-3, gpu 1e-3)")
    p.add_argument("--warmup", type=_nonneg_int,
                   help="linear warmup steps before the cosine decay (cpu 30, gpu 100, at most a tenth of --steps)")
    p.add_argument("--weight-decay", type=_nonneg_float, default=0.1, help="AdamW weight decay (matrices only)")
    p.add_argument("--grad-clip", type=_nonneg_float, default=1.0, help="max gradient norm (0: no clipping)")
    p.add_argument("--eval-every", type=_positive_int, help="evaluate (and checkpoint) every N steps (cpu 50, gpu 250)")
    p.add_argument("--eval-iters", type=_positive_int, help="validation batches per evaluation (cpu 10, gpu 40)")
    p.add_argument("--sample-every", type=_nonneg_int, default=0, help="print a sample every N steps (0: never)")
    p.add_argument("--sample-chars", type=_nonneg_int, default=300, help="length of the printed samples")
    p.add_argument("--temperature", type=_positive_float, default=0.8, help="sampling temperature")
    p.add_argument("--top-k", type=_positive_int, default=40, help="sample from the k most likely characters")
    p.add_argument("--prompt", default=None, help="text the samples start from (default: a newline)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="precision of the forward pass under autocast (auto: bfloat16 on GPUs that support it, "
                        "else float32; float16 adds a GradScaler)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="capture the training step (forward, backward, clipping, optimizer step) in a CUDA graph "
                        "after warm-up and replay it (CUDA only; dropout draws fresh masks every replay)")
    return p


# ---------------------------------------------------------------------------------------------- data

def stdlib_source_files():
    """The standard library's ``.py`` files, sorted by path relative to the library root."""
    root = sysconfig.get_paths()["stdlib"]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        for name in filenames:
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                found.append((os.path.relpath(full, root).replace(os.sep, "/"), full))
    found.sort()
    return [full for _, full in found]


def _text_files(directory):
    found = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if not name.startswith("."):
                full = os.path.join(dirpath, name)
                found.append((os.path.relpath(full, directory), full))
    found.sort()
    return [full for _, full in found]


# the kernel's live views of processes and devices (/proc/self/fd and /dev/fd among them): their files change
# under a reader, and some block until something happens. /dev itself holds devices, refused as non-regular
# files, and /dev/shm, whose files are plain text
_PSEUDO_ROOTS = ("/proc", "/sys")


class _NotRegular(Exception):
    """A path that is a FIFO, a device or a socket: reading it could block forever or never end."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _read_regular(path: str, limit: int) -> str:
    """Up to ``limit`` characters of the UTF-8 file at ``path``. It is opened without blocking and checked on
    the open descriptor, so a FIFO or device swapped in after the directory was listed cannot hang the read."""
    try:
        st = os.stat(path)
        if stat.S_ISSOCK(st.st_mode):  # opening a socket fails with an obscure errno: name it instead
            raise _NotRegular(_kind(st.st_mode))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, encoding="utf-8") as f:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise _NotRegular(_kind(mode))
            return f.read(limit)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def _data_files(data: str) -> list[str]:
    """The files ``--data`` names: itself, or the files under it; a path that is neither a regular file nor a
    directory, or lies in /proc or /sys, is refused before anything is opened."""
    real = os.path.realpath(data)
    root = next((r for r in _PSEUDO_ROOTS if real == r or real.startswith(r + os.sep)), None)
    if root is not None:
        raise UsageError(f"--data {data} is under {root}, the kernel's live view of processes and devices, not "
                         f"text to train on")
    try:
        mode = os.stat(data).st_mode
    except FileNotFoundError:
        raise UsageError(f"data path does not exist: {data}") from None
    except OSError as e:
        raise UsageError(f"cannot read {data}: {e.strerror}") from None
    if stat.S_ISDIR(mode):
        return _text_files(data)
    if not stat.S_ISREG(mode):
        raise UsageError(f"--data {data} is {_kind(mode)}, not a text file or a directory")
    return [data]


def read_corpus(data, max_chars):
    """The training text: ``data`` (a file, or every readable UTF-8 text file under a directory) or the
    standard library's source; files are joined in sorted order and the result cut at ``max_chars``. Files in
    a directory that are not regular files (FIFOs, devices, sockets) are skipped with a warning."""
    if data is None:
        files, origin = stdlib_source_files(), f"Python {sys.version.split()[0]} standard library"
    else:
        files, origin = _data_files(data), data
    parts, total, skipped = [], 0, []
    for path in files:
        if total >= max_chars:
            break
        try:
            text = _read_regular(path, max_chars - total + 1)
        except _NotRegular as e:
            if len(files) == 1:  # swapped for a FIFO or device since it was checked
                raise UsageError(f"--data {path} is {e}, not a text file") from None
            skipped.append(f"{path} ({e})")
            continue
        except UnicodeDecodeError:
            if len(files) == 1:
                raise UsageError(f"{path} is not UTF-8 text") from None
            continue  # a binary file inside a directory of text
        if text:
            parts.append(text)
            total += len(text)
    if skipped:
        more = f" and {len(skipped) - 3} more" if len(skipped) > 3 else ""
        print(f"{PROG}: warning: skipped {len(skipped)} file(s) that are not regular files: "
              f"{', '.join(skipped[:3])}{more}", file=sys.stderr)
    corpus = "".join(parts)[:max_chars]
    if not corpus:
        raise UsageError(f"the corpus is empty: no text found in {origin}")
    return corpus, origin


def encode(text):
    """Character ids of ``text`` (int64) and the vocabulary: its distinct characters, sorted."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    uniq, ids = np.unique(codes, return_inverse=True)
    return ids.astype(np.int64).reshape(-1), "".join(chr(c) for c in uniq)


class Batches:
    """Random windows of the train or validation ids: ``x`` is ``block_size`` characters, ``y`` the same window
    shifted by one. Offsets come from the given generator, so batches are reproducible from its state."""

    def __init__(self, ids, block_size, batch_size, device):
        import minitorch_gpu as mt
        n_val = max(int(len(ids) * VAL_FRACTION), 1)
        self.splits = {"train": mt.from_numpy(ids[:-n_val].copy()), "val": mt.from_numpy(ids[-n_val:].copy())}
        for name, part in self.splits.items():
            if part.numel() < block_size + 1:
                raise UsageError(f"the corpus is too small for --block-size {block_size}: its {name} split has "
                                 f"{part.numel()} characters, need at least {block_size + 1}")
        self.block_size = block_size
        self.batch_size = batch_size
        self.device = device
        self._window = mt.arange(block_size)

    def get(self, split, generator):
        import minitorch_gpu as mt
        data = self.splits[split]
        starts = mt.randint(0, data.numel() - self.block_size, (self.batch_size, 1), generator=generator)
        pos = starts + self._window
        x, y = data[pos], data[pos + 1]
        return x.to(self.device), y.to(self.device)


# ---------------------------------------------------------------------------------------------- pieces

def pick_device(name):
    """``auto`` -> cuda when a GPU is usable, else cpu; an explicit cuda without one is a UsageError."""
    import minitorch_gpu as mt
    if name == "auto":
        return mt.device("cuda" if mt.cuda.is_available() else "cpu")
    try:
        dev = mt.device(name)
    except (RuntimeError, ValueError, TypeError):
        raise UsageError(f"unknown device {name!r} (expected auto, cpu, cuda or cuda:N)") from None
    if dev.type not in ("cpu", "cuda"):
        raise UsageError(f"unsupported device {name!r} (expected auto, cpu, cuda or cuda:N)")
    if dev.type == "cuda":
        if not mt.cuda.is_available():
            raise UsageError(f"--device {name} was requested but no CUDA GPU is available (install CuPy with "
                             f"pip install 'minitorch_gpu[cuda12]' on a machine with an NVIDIA GPU, or use "
                             f"--device cpu)")
        if dev.index is not None and dev.index >= mt.cuda.device_count():
            raise UsageError(f"--device {name}: only {mt.cuda.device_count()} GPU(s) present")
    return dev


def lr_schedule(warmup, steps):
    """The LR factor after ``i`` scheduler steps: linear warmup to 1 over ``warmup`` steps, then a cosine decay
    to ``MIN_LR_RATIO`` at ``steps``."""
    def factor(i):
        if i < warmup:
            return (i + 1) / warmup
        progress = min((i - warmup) / max(steps - warmup, 1), 1.0)
        return MIN_LR_RATIO + (1 - MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def param_groups(model, weight_decay):
    """AdamW groups: weight decay on matrices (Linear and embedding weights), none on biases and norms."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def evaluate(model, batches, iters, seed):
    """Mean validation loss over ``iters`` batches, always the same ones (a generator seeded afresh), so
    successive evaluations are comparable and training's random streams are untouched."""
    import minitorch_gpu as mt
    gen = mt.Generator().manual_seed(seed)
    model.eval()
    total = 0.0
    with mt.no_grad():
        for _ in range(iters):
            x, y = batches.get("val", gen)
            _, loss = model(x, y)
            total += loss.item()
    model.train()
    return total / iters


def sample(model, vocab, prompt, n_chars, temperature, top_k, seed, device):
    """A text sample of ``n_chars`` characters after ``prompt`` (drawn from its own seeded generator)."""
    import minitorch_gpu as mt
    stoi = {c: i for i, c in enumerate(vocab)}
    idx = mt.tensor([[stoi[c] for c in prompt]], dtype=mt.int64, device=device)
    gen = mt.Generator(device).manual_seed(seed)
    was_training = model.training
    model.eval()
    out = model.generate(idx, n_chars, temperature=temperature, top_k=min(top_k, len(vocab)), generator=gen)
    model.train(was_training)
    return "".join(vocab[i] for i in out[0].tolist())


def _rng_states(data_gen, device):
    import minitorch_gpu as mt
    states = {"cpu": mt.get_rng_state(), "data": data_gen.get_state()}
    if device.type == "cuda":
        states["cuda"] = mt.cuda.get_rng_state(device)
    return states


def _set_rng_states(states, data_gen, device):
    import minitorch_gpu as mt
    mt.set_rng_state(states["cpu"])
    data_gen.set_state(states["data"])
    if device.type == "cuda" and "cuda" in states:
        mt.cuda.set_rng_state(states["cuda"], device)


def save_checkpoint(path, model, optimizer, scheduler, step, data_gen, device, config, vocab, run):
    """Everything a resumed run needs to continue exactly: weights, optimizer and scheduler state, step, RNG
    states, model config, vocabulary and the run settings."""
    import minitorch_gpu as mt
    # safetensors, as before zip checkpoints became mt.save's default: the trainer's own resume file holds
    # only tensors and plain values, and stays a format no loader can run code from
    state = {"format": CHECKPOINT_FORMAT, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "scheduler": scheduler.state_dict(), "step": step, "rng": _rng_states(data_gen, device),
             "config": config.to_dict(), "vocab": vocab, "run": run}
    mt.serialization.save_safetensors(state, path)


def load_checkpoint(path):
    """The checkpoint dict at ``path``; a missing or unreadable one is a UsageError."""
    import minitorch_gpu as mt
    if not os.path.exists(path):
        raise UsageError(f"--resume: no checkpoint at {path} (train without --resume first)")
    try:
        ckpt = mt.load(path, map_location="cpu")
    except Exception as e:  # a damaged file: say which and why, without a traceback
        raise UsageError(f"--resume: cannot read checkpoint {path}: {e}") from None
    required = ("format", "model", "optimizer", "scheduler", "step", "rng", "config", "vocab")
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT or \
            any(k not in ckpt for k in required):
        raise UsageError(f"--resume: {path} is not a checkpoint written by {PROG}")
    from minitorch_gpu.models import GPTConfig
    try:
        GPTConfig.from_dict(ckpt["config"])
    except (ValueError, TypeError, AttributeError) as e:
        raise UsageError(f"--resume: the checkpoint's model config is invalid: {e}") from None
    step = ckpt["step"]
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise UsageError(f"--resume: the checkpoint's step must be a non-negative integer, got {step!r}")
    ckpt["step"] = int(step)
    return ckpt


def read_metrics(path, up_to_step):
    """The records of an earlier run's metrics file up to ``up_to_step`` (a resumed run redoes the rest)."""
    records = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by a crash
                    step = rec.get("step") if isinstance(rec, dict) else None
                    if isinstance(step, int) and not isinstance(step, bool) and step <= up_to_step:
                        records.append(rec)
    return records


class MetricsLog:
    """``metrics.jsonl`` opened for appending: each record is flushed and fsynced as it is written, so a record
    written before a checkpoint survives any kill after it."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")

    def append(self, rec: dict[str, Any]) -> None:
        self._file.write(json.dumps(rec) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def reconcile_metrics(path: str, records: list[dict[str, Any]], written: Callable[[], None] = lambda: None) -> None:
    """Make ``path`` hold exactly ``records`` (those up to the checkpoint's step) without ever truncating it in
    place: they go to a temporary file that is fsynced and renamed over it, so a kill at any moment leaves either
    the old file or the new one. ``written`` runs once the temporary file holds them (a test's fault point)."""
    from minitorch_gpu.serialization._common import atomic_write

    def write(f: IO[bytes]) -> None:
        for rec in records:
            f.write((json.dumps(rec) + "\n").encode())
        f.flush()
        written()

    try:
        atomic_write(path, write)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from None


def write_plot(path, records):
    """Train and validation loss curves as a PNG; returns False (and says why) when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{PROG}: matplotlib is not installed, so {path} was not written "
              f"(pip install 'minitorch_gpu[plot]')", file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    steps = [r["step"] for r in records]
    ax.plot(steps, [r["loss"] for r in records], label="train", linewidth=1, alpha=0.8)
    val = [(r["step"], r["val_loss"]) for r in records if "val_loss" in r]
    if val:
        ax.plot(*zip(*val), "o-", label="val", linewidth=2)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title("char-level GPT, minitorch_gpu")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------- the job

def _resolve(args, device, ckpt):
    """Fill unset options from the device's defaults, or for the model shape from the checkpoint (explicit
    options that contradict it are an error)."""
    defaults = DEFAULTS["cuda" if device.type == "cuda" else "cpu"]
    if ckpt is not None:
        saved = ckpt["config"]
        for name in MODEL_FIELDS:
            given = getattr(args, name)
            if given is not None and given != saved.get(name):
                raise UsageError(f"--resume: the checkpoint is from an incompatible config: it has "
                                 f"{name}={saved.get(name)!r}, but --{name.replace('_', '-')} {given!r} was given")
            setattr(args, name, saved.get(name))
    for name, value in defaults.items():
        if getattr(args, name) is None:
            if name == "warmup":
                # a short run still reaches its peak learning rate (steps is resolved first: dict order)
                value = min(value, args.steps // 10)
            setattr(args, name, value)
    if args.n_embd % args.n_head != 0:
        raise UsageError(f"--n-embd ({args.n_embd}) must be divisible by --n-head ({args.n_head})")
    args.dtype = _resolve_dtype(args.dtype, device, ckpt)
    if args.cuda_graph and args.dtype == "float16":
        raise UsageError("--cuda-graph cannot be used with --dtype float16: the GradScaler reads its overflow flag "
                         "on the host every step; use --dtype bfloat16 or float32")
    if args.cuda_graph and device.type != "cuda":
        raise UsageError(f"--cuda-graph needs a CUDA device, but the run is on {device}; use --device cuda")


def _resolve_dtype(name: str, device: mt_device, ckpt: dict[str, Any] | None) -> str:
    """The run's dtype: ``auto`` (bfloat16 on a GPU that does it, else float32; a resumed run's own), or the one
    asked for when ``device`` can do it."""
    import minitorch_gpu as mt

    if name == "auto":
        if ckpt is not None:
            return str(ckpt["run"].get("dtype", "float32"))
        return "bfloat16" if device.type == "cuda" and mt.cuda.is_bf16_supported() else "float32"
    if name == "bfloat16":
        if device.type == "cuda" and not mt.cuda.is_bf16_supported():
            raise UsageError(f"--dtype bfloat16: {device} does not support bfloat16 here "
                             "(mt.cuda.is_bf16_supported() is False); use --dtype float16 or float32")
    return name


# ---------------------------------------------------------------------------------------------- memory

def estimate_memory(config: GPTConfig, batch_size: int, sample_chars: int) -> dict[str, int]:
    """Bytes a training run needs at its peak, by part (float32 throughout): the parameters with their
    gradients and AdamW's two moments, the activations one batch keeps for the backward pass, and the sample's
    token ids. The activation counts were measured on the CPU backend (within about 15%)."""
    V, T, L, H, C = config.vocab_size, config.block_size, config.n_layer, config.n_head, config.n_embd
    B = batch_size
    # the tied embedding and lm_head, positions, per block two LayerNorms, attention and MLP, the last LayerNorm
    params = (V + T) * C + L * (12 * C * C + 13 * C) + 2 * C
    # per block: LayerNorm, qkv, attention output, MLP input and GELU outputs (about 20 copies of B x T x C)
    # and the attention scores and probabilities (2 of B x heads x T x T); dropout adds a mask of each kind
    per_block = 20 * B * T * C + 2 * B * H * T * T
    if config.dropout:
        per_block += 2 * B * T * C + 2 * B * H * T * T
    activations = L * per_block + 3 * B * T * V  # the logits, their softmax and its gradient
    return {"parameters": 4 * params, "gradients": 4 * params, "optimizer state": 8 * params,
            "activations": 4 * activations, "sample": 8 * (sample_chars + 1)}


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000:
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1000
    return f"{n:,.1f} PB"


def cgroup_available(root: str = "/sys/fs/cgroup") -> int | None:
    """What the memory limit of this process's cgroup leaves (cgroup v2, else v1): the limit less the usage,
    counting reclaimable file cache as free; None without a limit."""
    for limit_file, usage_file, stat_file, cache_key in (
            ("memory.max", "memory.current", "memory.stat", "inactive_file"),
            ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat",
             "total_inactive_file")):
        try:
            with open(os.path.join(root, limit_file)) as f:
                limit_text = f.read().strip()
            with open(os.path.join(root, usage_file)) as f:
                usage = int(f.read())
            cache = 0
            with open(os.path.join(root, stat_file)) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == cache_key:
                        cache = int(value)
        except (OSError, ValueError):
            continue
        # "max" (v2) or a page-rounded 2**63 (v1) is no limit
        if limit_text == "max" or int(limit_text) >= 2 ** 62:
            return None
        return max(int(limit_text) - usage + cache, 0)
    return None


def available_memory(device: mt_device) -> tuple[int, str] | None:
    """Bytes a run on ``device`` can still allocate, and where the number comes from; None when unknown."""
    import minitorch_gpu as mt
    if device.type == "cuda":
        free, _ = mt.cuda.mem_get_info(device)
        return free, f"free on {device}"
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append((int(line.split()[1]) * 1024, "available"))
    except (OSError, ValueError, IndexError):
        pass
    if not found and hasattr(os, "sysconf"):
        try:
            found.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free"))
        except (OSError, ValueError):
            pass
    cgroup = cgroup_available()
    if cgroup is not None:
        found.append((cgroup, "left by this container's memory limit"))
    return min(found) if found else None


def check_memory(config: GPTConfig, batch_size: int, sample_chars: int, device: mt_device,
                 from_checkpoint: bool) -> None:
    """A UsageError with the estimate when the run cannot fit in the memory available on ``device``, so an
    absurd size is refused before anything is allocated instead of ending in a traceback or the OOM killer."""
    need = estimate_memory(config, batch_size, sample_chars)
    total = sum(need.values())
    have = available_memory(device)
    if have is None or total <= have[0]:
        return
    parts = ", ".join(f"{name} {_size(n)}" for name, n in need.items() if n)
    origin = "the checkpoint's model" if from_checkpoint else "the model"
    raise UsageError(f"the run needs about {_size(total)} ({parts}; {origin} is n_layer={config.n_layer}, "
                     f"n_embd={config.n_embd}, block_size={config.block_size}, with --batch-size {batch_size}) "
                     f"but only {_size(have[0])} is {have[1]}; lower --batch-size, --block-size, --n-embd, --n-layer "
                     f"or --sample-chars")


EXIT_DIVERGED = 1
EXIT_INTERRUPTED = 130


# ---------------------------------------------------------------------------------------------- interruptions

# test-only: "<SIGNAL>@<point>[:<step>]", comma-separated (e.g. "INT@forward:5", "KILL@saved:8"), makes the run
# send each SIGNAL to itself when it reaches <point> (during step <step>, or the first time), so tests interrupt
# and kill at exact places instead of racing a timer
FAULT_ENV = "MINITORCH_GPU_TRAIN_FAULT"
FAULT_POINTS = ("batch", "forward", "optimizer", "eval", "recorded", "saved", "reconcile")


class Faults:
    """The signals ``MINITORCH_GPU_TRAIN_FAULT`` asks for, each sent once when the run reaches its point."""

    def __init__(self, spec: str | None) -> None:
        self.pending: list[tuple[int, str, int | None]] = []
        for item in (spec or "").split(","):
            if not item:
                continue
            sig, _, where = item.partition("@")
            point, _, step = where.partition(":")
            signum = getattr(signal, f"SIG{sig.upper()}", None)
            if not isinstance(signum, int) or point not in FAULT_POINTS or (step and not step.isdigit()):
                raise UsageError(f"{FAULT_ENV}={spec!r}: expected <SIGNAL>@<point>[:<step>] with a point among "
                                 f"{', '.join(FAULT_POINTS)}")
            self.pending.append((signum, point, int(step) if step else None))

    def hit(self, point: str, step: int) -> None:
        """Send the first pending signal meant for this point (and step)."""
        for i, (signum, at, at_step) in enumerate(self.pending):
            if at == point and at_step in (None, step):
                del self.pending[i]
                os.kill(os.getpid(), signum)
                return

    def attach(self, trainer: Trainer) -> None:
        """Hooks for the points inside library calls: the forward pass (half-way through the blocks; eval when
        the model is in eval mode) and the optimizer step."""
        if not self.pending:
            return

        def forward(module: Any, args: Any) -> None:
            # evaluation runs after the step counter advanced; the forward pass of training before
            if trainer.model.training:
                self.hit("forward", trainer.step + 1)
            else:
                self.hit("eval", trainer.step)

        trainer.model.transformer.h[len(trainer.model.transformer.h) // 2].register_forward_pre_hook(forward)
        trainer.optimizer.register_step_pre_hook(lambda opt, args, kwargs: self.hit("optimizer", trainer.step + 1))


class Interrupts:
    """Ctrl-C during training: the first one asks the loop to stop at the next step boundary (the step in flight
    finishes, so the checkpoint taken then resumes exactly); a second one aborts at once without a checkpoint.
    Only the main thread can own the handler; elsewhere Ctrl-C keeps Python's default."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        # os.write, not print: the handler may run while the main thread is inside a write to sys.stderr, and a
        # buffered stream refuses reentrant writes
        os.write(2, f"\n{PROG}: interrupted: finishing the current step, then saving a checkpoint (Ctrl-C again "
                    f"to quit without saving)\n".encode())


@dataclass
class Job:
    """What a run trains on and where it writes: everything settled from the arguments, the corpus and the
    checkpoint before a model exists."""
    args: argparse.Namespace
    device: mt_device
    ckpt: dict[str, Any] | None  # the checkpoint being resumed from
    corpus_chars: int
    origin: str
    vocab: str
    config: GPTConfig
    prompt: str
    batches: Batches
    ckpt_path: str
    metrics_path: str
    run_info: dict[str, Any]  # the settings stored with every checkpoint

    @property
    def stop(self) -> int:
        """The step this invocation ends at (``--stop-after``, else ``--steps``)."""
        return self.args.steps if self.args.stop_after is None else self.args.stop_after


class Precision:
    """The run's mixed precision: an autocast region for the forward pass (a no-op for float32) and, for float16,
    the GradScaler that keeps small gradients from flushing to zero."""

    def __init__(self, dtype: str, device: mt_device) -> None:
        import minitorch_gpu as mt

        self.dtype = dtype
        self.device_type = device.type
        self.low = None if dtype == "float32" else getattr(mt, dtype)
        self.scaler = mt.amp.GradScaler(device.type) if dtype == "float16" else None

    def autocast(self) -> Any:
        import minitorch_gpu as mt
        return mt.autocast(self.device_type, dtype=self.low, enabled=self.low is not None)


@dataclass
class Trainer:
    """The state a checkpoint holds: model, optimizer, schedule, the batch generator, the step reached, and
    the metrics records so far."""
    model: GPT
    optimizer: Optimizer
    scheduler: LRScheduler
    data_gen: Generator
    precision: Precision
    step: int = 0
    records: list[dict[str, Any]] = field(default_factory=list)
    saved_step: int | None = None  # the step of the checkpoint on disk (None: none from this run yet)

    def save(self, job: Job) -> None:
        scaler = self.precision.scaler
        run = {**job.run_info, "scaler": scaler.state_dict() if scaler is not None else {}}
        save_checkpoint(job.ckpt_path, self.model, self.optimizer, self.scheduler, self.step, self.data_gen,
                        job.device, job.config, job.vocab, run)
        self.saved_step = self.step


def prepare(args: argparse.Namespace) -> Job:
    """Check the arguments, read the corpus and the checkpoint (when resuming), and create the output
    directory; every bad input surfaces here, before any training starts, as a UsageError."""
    from minitorch_gpu.models import GPTConfig

    device = pick_device(args.device)
    ckpt_path = os.path.join(args.out, CHECKPOINT)
    for path in (ckpt_path, os.path.join(args.out, METRICS)):
        # a FIFO or device there would block the read of --resume or the first write
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            raise UsageError(f"{path} is {_kind(mode)}, not a regular file: remove it or choose another --out")
    ckpt = load_checkpoint(ckpt_path) if args.resume else None
    _resolve(args, device, ckpt)
    if args.stop_after is not None and args.stop_after > args.steps:
        raise UsageError(f"--stop-after ({args.stop_after}) is beyond --steps ({args.steps})")
    if ckpt is not None:
        done = ckpt["step"]
        for flag, value in (("--steps", args.steps), ("--stop-after", args.stop_after)):
            if value is not None and value < done:
                raise UsageError(f"--resume: the checkpoint is at step {done}, beyond {flag} {value}; pass "
                                 f"{flag} {done} or more")

    text, origin = read_corpus(args.data, args.max_chars)
    ids, vocab = encode(text)
    if ckpt is not None and ckpt["vocab"] != vocab:
        raise UsageError("--resume: the checkpoint's vocabulary differs from this corpus's; resume with the same "
                         "--data and --max-chars as the original run")
    config = GPTConfig(vocab_size=len(vocab), block_size=args.block_size, n_layer=args.n_layer,
                       n_head=args.n_head, n_embd=args.n_embd, dropout=args.dropout, bias=True)
    prompt = args.prompt
    if prompt is None:
        prompt = "\n" if "\n" in vocab else vocab[0]
    unknown = sorted(set(prompt) - set(vocab))
    if not prompt or unknown:
        raise UsageError(f"--prompt must be non-empty text over the corpus's characters (unknown: {unknown!r})")
    batches = Batches(ids, args.block_size, args.batch_size, device)
    check_memory(config, args.batch_size, args.sample_chars, device, from_checkpoint=ckpt is not None)

    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create output directory {args.out}: {e.strerror}") from None
    run_info = {"seed": args.seed, "steps": args.steps, "batch_size": args.batch_size, "data": origin,
                "dtype": args.dtype}
    return Job(args, device, ckpt, len(text), origin, vocab, config, prompt, batches, ckpt_path,
               os.path.join(args.out, METRICS), run_info)


def build(job: Job) -> Trainer:
    """A freshly initialised model, optimizer and schedule, seeded from ``--seed``."""
    import minitorch_gpu as mt
    from minitorch_gpu.models import GPT

    args = job.args
    mt.manual_seed(args.seed)
    data_gen = mt.Generator().manual_seed(args.seed)
    model = GPT(job.config).to(job.device)
    # a replayed step reads the learning rate from the device, where the scheduler writes it in place
    lr = mt.tensor(args.lr, device=job.device) if args.cuda_graph else args.lr
    optimizer = mt.optim.AdamW(param_groups(model, args.weight_decay), lr=lr, betas=(0.9, 0.99),
                               capturable=args.cuda_graph)
    scheduler = mt.optim.lr_scheduler.LambdaLR(optimizer, lr_schedule(args.warmup, args.steps))
    return Trainer(model, optimizer, scheduler, data_gen, Precision(args.dtype, job.device))


def resume(job: Job, ckpt: dict[str, Any], trainer: Trainer) -> None:
    """Load the checkpoint's states into ``trainer`` (the RNGs last, after the model was built, so the next
    batch and dropout mask are the ones the interrupted run would have drawn) and keep the metrics records
    up to its step."""
    try:
        trainer.model.load_state_dict(ckpt["model"])
        trainer.optimizer.load_state_dict(ckpt["optimizer"])
        trainer.scheduler.load_state_dict(ckpt["scheduler"])
        _set_rng_states(ckpt["rng"], trainer.data_gen, job.device)
        scaler_state = ckpt["run"].get("scaler")
        if trainer.precision.scaler is not None and scaler_state:
            trainer.precision.scaler.load_state_dict(scaler_state)
    except (RuntimeError, KeyError, ValueError, TypeError) as e:
        raise UsageError(f"--resume: the checkpoint does not fit this model: {e}") from None
    trainer.step = trainer.saved_step = ckpt["step"]
    trainer.records = read_metrics(job.metrics_path, trainer.step)


def train_step(model: GPT, optimizer: Optimizer, x: Any, y: Any, grad_clip: float,
               precision: Precision | None = None) -> Any:
    """One optimizer step on batch (x, y), the forward pass under ``precision``'s autocast; returns the loss tensor
    (not read back)."""
    import minitorch_gpu as mt

    scaler = None if precision is None else precision.scaler
    if precision is None:
        _, loss = model(x, y)
    else:
        with precision.autocast():
            _, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
        if grad_clip > 0:
            mt.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        return loss
    scaler.scale(loss).backward()
    if grad_clip > 0:
        scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
        mt.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)  # skipped when a gradient overflowed
    scaler.update()
    return loss


class GraphedStep:
    """``--cuda-graph``: ``train_step`` run eagerly for ``WARMUP`` steps on a side stream (the optimizer's state
    exists after them), then captured once in a CUDA graph and replayed for every later step; the batch goes in
    through static tensors and the loss comes out of one."""

    WARMUP = 3

    def __init__(self, model: GPT, optimizer: Optimizer, grad_clip: float, precision: Precision | None = None) -> None:
        self.model, self.optimizer, self.grad_clip = model, optimizer, grad_clip
        self.precision = precision
        self.steps = 0
        self.graph: Any = None
        self.static: tuple[Any, Any, Any] | None = None

    def __call__(self, x: Any, y: Any) -> Any:
        import minitorch_gpu as mt

        if self.static is None:
            self.static = (x.clone(), y.clone(), None)
        sx, sy, loss = self.static
        sx.copy_(x)
        sy.copy_(y)
        self.steps += 1
        if self.steps <= self.WARMUP:
            side = mt.cuda.Stream()
            side.wait_stream(mt.cuda.current_stream())
            with mt.cuda.stream(side):
                loss = train_step(self.model, self.optimizer, sx, sy, self.grad_clip, self.precision)
            mt.cuda.current_stream().wait_stream(side)
            return loss
        if self.graph is None:
            self.graph = mt.cuda.CUDAGraph()
            self.optimizer.zero_grad(set_to_none=True)
            with mt.cuda.graph(self.graph):
                loss = train_step(self.model, self.optimizer, sx, sy, self.grad_clip, self.precision)
            self.static = (sx, sy, loss)
        self.graph.replay()
        return self.static[2]


def _lr_value(optimizer: Optimizer) -> float:
    lr = optimizer.param_groups[0]["lr"]
    return float(lr.item()) if hasattr(lr, "item") else float(lr)


def train_loop(job: Job, trainer: Trainer, faults: Faults) -> int:
    """Train from ``trainer.step`` to ``job.stop``, appending a metrics record per step, evaluating and
    checkpointing on schedule; returns 0, EXIT_DIVERGED (a non-finite loss) or EXIT_INTERRUPTED (Ctrl-C: after
    the step in flight and a checkpoint of it, or at once without one on a second Ctrl-C)."""
    from tqdm import tqdm

    args = job.args
    model, optimizer, scheduler = trainer.model, trainer.optimizer, trainer.scheduler
    tokens_per_step = args.batch_size * args.block_size
    bar = tqdm(total=args.steps, initial=trainer.step, desc="train", unit="step", disable=args.quiet,
               file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    metrics = MetricsLog(job.metrics_path)
    precision = trainer.precision
    graphed = GraphedStep(model, optimizer, args.grad_clip, precision) if args.cuda_graph else None
    faults.attach(trainer)
    try:
        with Interrupts() as interrupts:
            while trainer.step < job.stop and not interrupts.requested:
                t0 = time.perf_counter()
                x, y = job.batches.get("train", trainer.data_gen)
                faults.hit("batch", trainer.step + 1)
                lr = _lr_value(optimizer)
                if graphed is not None:
                    loss = graphed(x, y)
                else:
                    loss = train_step(model, optimizer, x, y, args.grad_clip, precision)
                scheduler.step()
                loss_value = loss.item()  # also waits for the GPU, so the timing below is real
                trainer.step += 1
                step = trainer.step
                rec = {"step": step, "loss": loss_value, "lr": lr,
                       "tokens_per_s": tokens_per_step / max(time.perf_counter() - t0, 1e-9),
                       "dtype": precision.dtype}
                if not math.isfinite(loss_value):
                    bar.close()
                    print(f"{PROG}: the loss became {loss_value} at step {step}; try a lower --lr", file=sys.stderr)
                    return EXIT_DIVERGED
                evaluating = step % args.eval_every == 0 or step == args.steps
                if evaluating:
                    with precision.autocast():
                        rec["val_loss"] = evaluate(model, job.batches, args.eval_iters, args.seed + 1)
                    bar.write(f"step {step}: train loss {loss_value:.4f}, val loss {rec['val_loss']:.4f}",
                              file=sys.stderr)
                # the record is on disk before the checkpoint of its step: a kill between the two leaves a
                # record past the checkpoint (dropped on --resume), never a checkpoint past the records
                metrics.append(rec)
                trainer.records.append(rec)
                faults.hit("recorded", step)
                if evaluating or step == job.stop:
                    trainer.save(job)
                    faults.hit("saved", step)
                # the bar redraws at most every mininterval seconds, not on every postfix change
                bar.set_postfix(loss=f"{loss_value:.4f}", tok_s=f"{rec['tokens_per_s']:,.0f}", refresh=False)
                bar.update(1)
                if args.sample_every and step % args.sample_every == 0 and step != args.steps:
                    bar.write(f"--- sample (step {step}) ---\n{_sample(job, trainer)}", file=sys.stdout)
            if interrupts.requested:
                if trainer.saved_step != trainer.step:
                    trainer.save(job)
                bar.close()
                print(f"{PROG}: interrupted after step {trainer.step}; checkpoint saved, continue with --resume",
                      file=sys.stderr)
                return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        # a second Ctrl-C: the step in flight is abandoned; the last checkpoint (written atomically) still holds
        bar.close()
        since = "its start" if trainer.saved_step is None else f"step {trainer.saved_step}"
        print(f"\n{PROG}: interrupted again during step {trainer.step + 1}; no new checkpoint, --resume continues "
              f"from {since}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        metrics.close()
        bar.close()
    return 0


def summarize(job: Job, trainer: Trainer, wrote_plot: bool) -> None:
    """The last losses and the files written (stderr), then a text sample (stdout)."""
    records = trainer.records
    last_val = next((r["val_loss"] for r in reversed(records) if "val_loss" in r), None)
    summary = f"{PROG}: step {trainer.step}"
    if records:
        summary += f", train loss {records[-1]['loss']:.4f}"
    if last_val is not None:
        summary += f", val loss {last_val:.4f}"
    written = [job.metrics_path, job.ckpt_path] + ([os.path.join(job.args.out, PLOT)] if wrote_plot else [])
    print(summary + "; wrote " + ", ".join(written), file=sys.stderr)
    print(f"--- sample (step {trainer.step}) ---")
    print(_sample(job, trainer))


def _sample(job: Job, trainer: Trainer) -> str:
    args = job.args
    return sample(trainer.model, job.vocab, job.prompt, args.sample_chars, args.temperature, args.top_k,
                  args.seed + 2, job.device)


def run(args: argparse.Namespace) -> int:
    """Train as ``args`` say; returns the exit code."""
    faults = Faults(os.environ.get(FAULT_ENV))
    job = prepare(args)
    trainer = build(job)
    if job.ckpt is not None:
        resume(job, job.ckpt, trainer)
    # a resumed run redoes the steps after its checkpoint's; a fresh run starts an empty file
    reconcile_metrics(job.metrics_path, trainer.records, lambda: faults.hit("reconcile", trainer.step))
    config = job.config
    print(f"{PROG}: {job.corpus_chars:,} characters of {job.origin}, vocabulary {len(job.vocab)}; GPT "
          f"{config.n_layer} layers, {config.n_head} heads, width {config.n_embd}, context {config.block_size} "
          f"({trainer.model.num_params():,} parameters) on {job.device} in {trainer.precision.dtype}; steps {trainer.step + 1}..{job.stop}",
          file=sys.stderr)

    exit_code = train_loop(job, trainer, faults)
    if exit_code == EXIT_DIVERGED:
        return exit_code
    # an interrupted run still gets its curves
    wrote_plot = bool(trainer.records) and write_plot(os.path.join(args.out, PLOT), trainer.records)
    if exit_code:
        return exit_code
    summarize(job, trainer, wrote_plot)
    return 0


def main(argv=None):
    """Entry point of ``python -m minitorch_gpu.train`` and ``minitorch-gpu-train``; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C outside the training loop (reading the corpus, building the model, writing the plot): nothing
        # of the run's state is half-done there, so there is nothing to save
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
