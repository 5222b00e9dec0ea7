"""Saving to a path safely: only to a regular file or a new path, atomically, keeping the old file's mode.

The checkpoint is written to a temporary file in the target's folder, fsynced, renamed over the target, and the
folder is fsynced, so a crash at any moment leaves either the old checkpoint or the new one. The temporary file's
name carries the host and the writer's pid (``.<name>.mtg-tmp.<host>.<pid>.<random>``): a save removes the ones
left in its folder by writers on this host that were killed mid-save (their pid no longer runs).
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import socket
import stat
from collections.abc import Callable
from typing import IO

_TMP_MARK = ".mtg-tmp."
_TMP_NAME = re.compile(r"\..+\.mtg-tmp\.(?P<host>[A-Za-z0-9_-]+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}")
# the target's name is cut in the temporary name, which must stay under the 255-byte name limit
_MAX_BASE = 120

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:64] or "host"


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: str) -> tuple[str, os.stat_result | None]:
    """The file a save to ``path`` replaces (symlinks followed) and its stat, None for a new file. Anything but a
    regular file or a new path in an existing folder raises PyTorch's RuntimeError for a bad path."""
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        # a new file, or a symlink to one: the write creates the link's target, as open() would
        st = None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise RuntimeError(f"cannot save to {path}: it is a symbolic link in a loop (it resolves to "
                               "itself)") from None
        raise RuntimeError(f"cannot save to {path}: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise RuntimeError(f"cannot save to {path}: it is {_kind(st.st_mode)}; save writes only to a regular file "
                           "or a new path (to write there anyway, open it and pass the file object)")
    # through a symlink, replace the file it points to (as a plain write would), not the link itself
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise RuntimeError(f"Parent directory {folder} does not exist.")
    return real, st


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process, or a number we cannot ask about: keep its file
    return True


def remove_stale_temps(folder: str) -> None:
    """Delete the temporary files that saves on this host left in ``folder`` when they were killed."""
    if os.name != "posix":
        return  # os.kill(pid, 0) would terminate the process on Windows
    host, uid = _host(), os.getuid()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        m = _TMP_NAME.fullmatch(entry.name) if _TMP_MARK in entry.name else None
        if m is None or m["host"] != host:
            continue  # a pid from another machine sharing this folder says nothing about processes here
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid and not _pid_alive(int(m["pid"])):
                os.unlink(entry.path)
        except OSError:
            pass  # gone already, or another save is removing it


def _fsync_dir(path: str) -> None:
    # the rename is durable only once the directory entry is on disk; not every platform can open a dir
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _copy_owner_and_mode(fd: int, st: os.stat_result) -> None:
    # owner first: chown may clear the set-id bits that chmod then restores
    if hasattr(os, "fchown") and (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:
            # only root may give a file away; the group may still be one of ours
            try:
                os.fchown(fd, -1, st.st_gid)
            except OSError:
                pass
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(st.st_mode))


def atomic_write(path: str, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write`` on a temporary file in the folder of the file ``path`` names, fsync it and rename it over
    that file, keeping an existing file's mode and (where allowed) owner. Refuses targets that are not regular
    files; on any failure the temporary file is removed and the target is untouched."""
    real, st = check_target(path)
    folder, base = os.path.split(real)
    remove_stale_temps(folder)
    tmp = os.path.join(folder, f".{base[:_MAX_BASE]}{_TMP_MARK}{_host()}.{os.getpid()}.{secrets.token_hex(4)}")
    # over an existing file the temporary starts private (the old file may be 0600); a new file gets the
    # umask's mode, as open() would give it
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o666 if st is None else 0o600)
    try:
        try:
            fh = os.fdopen(fd, "wb")
        except BaseException:
            os.close(fd)
            raise
        with fh:
            if st is not None:
                _copy_owner_and_mode(fh.fileno(), st)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)
