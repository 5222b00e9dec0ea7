"""Where ``save`` may write: regular files and new paths only, atomically, keeping the old file's mode, and
removing the temporary files that saves killed mid-write left behind. Both writers (the zip format of
``save`` and ``save_safetensors``) share the path handling; each test runs both."""
import io
import os
import pickle
import socket
import stat
import subprocess
import sys

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu.serialization import save_safetensors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mt.__file__)))

WRITERS = {"zip": mt.save, "safetensors": save_safetensors}


@pytest.fixture(params=sorted(WRITERS))
def writer(request):
    return WRITERS[request.param]


def _temps(folder):
    return sorted(n for n in os.listdir(folder) if ".mtg-tmp." in n)


def _values(path):
    return mt.load(path, map_location="cpu")["w"].numpy().tolist()


def test_roundtrip_on_every_device_keeps_no_temp(tmp_path, writer, device):
    t = mt.arange(5, dtype=mt.float32, device=device)
    writer({"w": t}, tmp_path / "ck.pt")
    writer({"w": t * 2}, tmp_path / "ck.pt")
    assert _values(tmp_path / "ck.pt") == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert _temps(tmp_path) == []


def _assert_refused(writer, path, match):
    before = os.lstat(path)
    with pytest.raises(RuntimeError, match=match) as e:
        writer({"w": mt.ones(2)}, path)
    assert "\n" not in str(e.value)
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode, after.st_size) == (before.st_ino, before.st_mode, before.st_size)


def test_refuses_directory_fifo_and_socket(tmp_path, writer):
    (tmp_path / "d").mkdir()
    _assert_refused(writer, tmp_path / "d", "is a directory")
    os.mkfifo(tmp_path / "fifo")
    _assert_refused(writer, tmp_path / "fifo", r"is a FIFO")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        _assert_refused(writer, tmp_path / "sock", "is a socket")
    finally:
        sock.close()
    assert _temps(tmp_path) == []


def test_refuses_devices_and_leaves_dev_null_alone(writer):
    # (if something else has already replaced it, a save that is not refused must not be attempted)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is not a character device on this machine"
    _assert_refused(writer, "/dev/null", "is a character device")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    block = next((os.path.join("/dev", n) for n in sorted(os.listdir("/dev"))
                  if stat.S_ISBLK(os.lstat(os.path.join("/dev", n)).st_mode)), None)
    if block is not None:
        _assert_refused(writer, block, "is a block device")


def test_refuses_looping_symlinks(tmp_path, writer):
    os.symlink("self", tmp_path / "self")
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    for name in ("self", "a"):
        _assert_refused(writer, tmp_path / name, "symbolic link in a loop")
        assert os.readlink(tmp_path / name) in ("self", "b")
    assert _temps(tmp_path) == []


def test_symlinks_to_files_are_written_through(tmp_path, writer):
    os.symlink("real.pt", tmp_path / "link.pt")  # dangling: the save creates its target, as open() would
    writer({"w": mt.ones(2)}, tmp_path / "link.pt")
    assert os.path.islink(tmp_path / "link.pt") and _values(tmp_path / "real.pt") == [1.0, 1.0]
    writer({"w": mt.zeros(2)}, tmp_path / "link.pt")
    assert os.path.islink(tmp_path / "link.pt") and _values(tmp_path / "real.pt") == [0.0, 0.0]


def test_missing_parent_and_file_as_folder(tmp_path, writer):
    with pytest.raises(RuntimeError, match="Parent directory .* does not exist"):
        writer({"w": mt.ones(2)}, tmp_path / "nowhere" / "ck.pt")
    (tmp_path / "file").write_bytes(b"x")
    with pytest.raises(RuntimeError, match="Not a directory"):
        writer({"w": mt.ones(2)}, tmp_path / "file" / "ck.pt")


def test_file_objects_still_work(writer):
    buf = io.BytesIO()
    writer({"w": mt.arange(3, dtype=mt.float32)}, buf)
    buf.seek(0)
    assert mt.load(buf)["w"].numpy().tolist() == [0.0, 1.0, 2.0]
    with open(os.devnull, "wb") as fh:  # the way to write to a device, as the refusal says
        writer({"w": mt.ones(2)}, fh)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604])
def test_resave_keeps_mode_and_owner(tmp_path, writer, mode):
    path = tmp_path / "ck.pt"
    writer({"w": mt.ones(2)}, path)
    os.chmod(path, mode)
    before = os.stat(path)
    writer({"w": mt.zeros(2)}, path)
    after = os.stat(path)
    assert stat.S_IMODE(after.st_mode) == mode
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)
    assert after.st_ino != before.st_ino  # replaced by a rename, not rewritten in place
    assert _values(path) == [0.0, 0.0]


def test_new_file_gets_the_umask_mode(tmp_path, writer):
    umask = os.umask(0o027)
    try:
        writer({"w": mt.ones(2)}, tmp_path / "ck.pt")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "ck.pt").st_mode) == 0o640


def test_failed_save_removes_its_temp_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "ck.pt"
    mt.save({"w": mt.ones(2)}, path)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        mt.save({"w": mt.zeros(2), "f": lambda: 0}, path)  # fails while writing the temporary file
    assert _values(path) == [1.0, 1.0] and _temps(tmp_path) == []


# the child saves a large checkpoint and stops at a chosen point (mid-write: after the first storage record is
# in the temporary file; before-rename: the temporary file is complete and fsynced) to be killed there
_CHILD = r"""
import os, sys, time
import minitorch_gpu as mt
from minitorch_gpu.serialization import _writer
fmt, point, path = sys.argv[1:4]

def stop(*args, **kwargs):
    print("ready", flush=True)
    time.sleep(300)

if point == "mid-write":
    write_record = _writer._write_record
    def _write_record(zf, name, data):
        write_record(zf, name, data)
        if "/data/" in name:
            stop()
    _writer._write_record = _write_record
else:
    os.replace = stop
obj = {"w": mt.arange(2_000_000, dtype=mt.float32), "b": mt.ones(1000)}
(mt.save if fmt == "zip" else mt.serialization.save_safetensors)(obj, path)
"""


@pytest.mark.parametrize("fmt,point", [("zip", "mid-write"), ("zip", "before-rename"),
                                       ("safetensors", "before-rename")])
def test_sigkill_during_save_keeps_old_file_and_next_save_cleans_up(tmp_path, fmt, point):
    path = tmp_path / "ck.pt"
    WRITERS[fmt]({"w": mt.ones(3)}, path)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", _CHILD, fmt, point, str(path)], stdout=subprocess.PIPE,
                             cwd=ROOT, env=env)
    try:
        assert child.stdout.readline() == b"ready\n"
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    leftover = _temps(tmp_path)
    assert len(leftover) == 1 and f".{child.pid}." in leftover[0]
    assert os.path.getsize(tmp_path / leftover[0]) > 1_000_000  # the kill came after real writing
    assert _values(path) == [1.0, 1.0, 1.0]
    # temporary files of a live writer (this process) and of another host are not this save's to remove
    host = leftover[0].split(".mtg-tmp.")[1].split(".")[0]
    live = f".other.pt.mtg-tmp.{host}.{os.getpid()}.0123abcd"
    remote = f".other.pt.mtg-tmp.elsewhere.{child.pid}.0123abcd"
    for name in (live, remote):
        (tmp_path / name).write_bytes(b"partial")
    WRITERS[fmt]({"w": mt.zeros(3)}, path)
    assert _values(path) == [0.0, 0.0, 0.0]
    assert _temps(tmp_path) == sorted([live, remote])
    np.testing.assert_array_equal(mt.load(path)["w"].numpy(), np.zeros(3, np.float32))
