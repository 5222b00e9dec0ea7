"""``torch.save`` / ``torch.load`` the PyTorch way, and ``torch.serialization``.

``save`` writes PyTorch's zip checkpoint format for any picklable object (tensors, state dicts, optimizer
state dicts, whole modules, NumPy arrays...), so that PyTorch's ``torch.load`` reads it; tensors are raw
storages beside the pickle, views keep sharing their storage. ``_use_new_zipfile_serialization=False`` writes
PyTorch's legacy format. :func:`save_safetensors` writes a safetensors file instead.

``load`` reads all three formats (found from the file's first bytes): PyTorch's zip and legacy files, from
PyTorch or from us, and safetensors files (ours, whose structure comes back whole, and plain ones).
``weights_only=True``, the default as in PyTorch 2.6 and later, unpickles through a restricted unpickler
that admits only tensors, storages, primitive containers, numbers, strings, dtypes, devices, ``torch.Size``
and the globals allowed with :func:`add_safe_globals` / :class:`safe_globals`: a checkpoint cannot run code.
``weights_only=False`` unpickles fully; use it only for files you trust.
"""
from __future__ import annotations

import os
import pickle
import warnings
from typing import IO, Any

from ._common import CheckpointError, check_map_location, open_for_read, write_to
from ._reader import load_legacy, load_zip
from ._safetensors import load_safetensors, save_safetensors
from ._storage import StorageType, TypedStorage, default_restore_location, location_tag, register_package, restorer
from ._unpickler import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._writer import archive_name, write_legacy, write_zip

# only these two go into the top-level namespace (``torch.save``, ``torch.load``)
__all__ = ["save", "load"]

_PUBLIC = (CheckpointError, StorageType, TypedStorage, default_restore_location, location_tag, register_package,
           add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals, save_safetensors)

DEFAULT_PROTOCOL = 2

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely succeed, "
    "but it can result in arbitrary code execution. Do it only if you got the file from a trusted source.")

_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = pickle,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True) -> None:
    """Save ``obj`` (anything picklable) to ``f``, a path or a binary file object, in PyTorch's zip checkpoint
    format, which PyTorch's ``torch.load`` reads. Saving to a path is atomic: the new file is written next to
    the old one and renamed over it (keeping its mode), so a crash mid-save leaves the previous checkpoint
    intact. A path that is not a regular file or a new file (a directory, device, FIFO, socket, symlink loop)
    raises RuntimeError.

    >>> torch.save({"model": model.state_dict(), "step": 5}, "ckpt.pt")  # doctest: +SKIP
    """
    if isinstance(pickle_protocol, bool) or not isinstance(pickle_protocol, int):
        raise TypeError(f"pickle_protocol must be an int, got {type(pickle_protocol).__name__}")
    if not 0 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"pickle protocol must be <= {pickle.HIGHEST_PROTOCOL}")
    if _use_new_zipfile_serialization:
        name = archive_name(f)
        write_to(f, lambda fh: write_zip(obj, fh, name, pickle_module, pickle_protocol))
    else:
        write_to(f, lambda fh: write_legacy(obj, fh, pickle_module, pickle_protocol))


def _weights_only_message(message: str) -> str:
    # PyTorch's wording, so that its advice (and searches for it) apply
    if "was not an allowed global by default." in message:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, "
                "\033[1mdo those steps only if you trust the source of the checkpoint\033[0m. "
                f"\n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` please check "
                "the recommended steps in the following error message.\n\tWeightsUnpickler error: " + message
                + _DOCS_MESSAGE)
    updated = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if "is blocked" not in message:
        updated += ("Please file an issue with the following so that we can make `weights_only=True` compatible "
                    "with your use case: WeightsUnpickler error: ")
    return updated + "\n\n" + message + _DOCS_MESSAGE


_TRUE = ("1", "y", "yes", "true")


def _resolve_weights_only(weights_only: bool | None, pickle_module: Any) -> bool:
    unset = weights_only is None
    result = pickle_module is None if unset else bool(weights_only)
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if force:
        return True
    if force_no and unset:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `torch.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        return False
    return result


def _is_safetensors(head: bytes, size: int) -> bool:
    # an 8-byte little-endian header length, then the JSON header: a length byte can look like a pickle's
    # PROTO opcode, the brace cannot
    return len(head) >= 9 and head[8:9] == b"{" and 0 < int.from_bytes(head[:8], "little") <= size - 8


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = None, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """load(f, map_location=None, pickle_module=pickle, *, weights_only=True, mmap=None, **pickle_load_args)

    Load a checkpoint written by :func:`save` or PyTorch's ``torch.save`` (zip or legacy format), or a
    safetensors file, from a path or binary file object.

    ``weights_only=True`` (the default unless a ``pickle_module`` is given) admits only tensors, primitive
    containers, numbers, strings, dtypes, devices, ``torch.Size`` and the globals allowed with
    :func:`add_safe_globals`; anything else raises ``pickle.UnpicklingError``. ``map_location`` moves storages
    as in PyTorch: None restores each where it was saved, a string or device puts all of them there, a dict
    maps saved locations (``'cuda:0'``) to new ones, and a callable ``fn(storage, location)`` returns the
    storage to use (or None for the default). ``mmap=True`` maps the storages of a zip checkpoint at a path
    from the file (copy-on-write) instead of reading them.

    >>> sd = torch.load("model.pt", map_location="cpu")  # doctest: +SKIP
    """
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
    elif pickle_module is None:
        pickle_module = pickle
    pickle_load_args.setdefault("encoding", "utf-8")
    check_map_location(map_location)
    is_path = isinstance(f, (str, os.PathLike))
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    fh, close = open_for_read(f)
    try:
        start = fh.tell()
        head = fh.read(9)
        size = fh.seek(0, os.SEEK_END) - start
        fh.seek(start)
        if head[:4] == b"PK\x03\x04":
            mmap_path = os.fspath(f) if mmap and is_path else None  # type: ignore[arg-type]
            return _guarded(weights_only, load_zip, fh, restorer(map_location), weights_only, pickle_module,
                            pickle_load_args, mmap_path)
        if mmap:
            raise RuntimeError("mmap can only be used with files saved with `torch.save(f, "
                               "_use_new_zipfile_serialization=True), please torch.save your checkpoint with this "
                               "option in order to use mmap.")
        if head[:1] == b"\x80" and not _is_safetensors(head, size):
            return _guarded(weights_only, load_legacy, fh, restorer(map_location), weights_only, pickle_module,
                            pickle_load_args)
        return load_safetensors(fh.read(), map_location)
    finally:
        if close:
            fh.close()


def _guarded(weights_only: bool, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except pickle.UnpicklingError as e:
        if weights_only:
            raise pickle.UnpicklingError(_weights_only_message(str(e))) from None
        raise
