"""The on-disk caches of compiled libraries (``_native.py``: the native CPU optimizer step and the CUDA
simulator) load nothing they did not build: a library planted under the expected name, a cache folder that
others can write or that belongs to someone else, and a simulator manifest naming a file outside the cache are
all refused. A planted library's constructor would write a marker file; the marker must never appear."""
import json
import os
import stat
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from minitorch_gpu import _native
from minitorch_gpu.backends import _cpu_library
from minitorch_gpu.backends import _optim_native as native
from minitorch_gpu.backends.cuda import sim
from minitorch_gpu.backends.cuda.fused_step import group_scalar_count
from minitorch_gpu.backends.cuda.sim import builder

_PLANTED = r"""
#include <stdio.h>
extern "C" {
__attribute__((constructor)) static void planted(void) {
    FILE* f = fopen(MARKER, "w");
    if (f) { fputs("ran", f); fclose(f); }
}
int answer(void) { return 666; }
}
"""
_GENUINE = 'extern "C" int answer(void) { return 42; }\n'


def _compile(tmp_path, name, source, marker=None):
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    out = tmp_path / f"{name}.so"
    defs = [f'-DMARKER="{marker}"'] if marker else []
    subprocess.run([_native.compiler(), "-shared", "-fPIC", *defs, str(src), "-o", str(out)], check=True)
    return out


@pytest.fixture
def planted(tmp_path):
    """(path of a library whose constructor writes the marker, the marker's path)."""
    marker = tmp_path / "planted-code-ran"
    return _compile(tmp_path, "planted", _PLANTED, marker), marker


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(root))
    monkeypatch.setattr(_native, "_private_fallback", [], raising=False)
    return root


def _plant(target, so):
    """Put the planted library's bytes at ``target`` as a new file: rewriting a library this process has
    loaded in place would corrupt its mapped code."""
    if target.exists() or target.is_symlink():
        target.unlink()
    target.write_bytes(so.read_bytes())


def _mode(p):
    return stat.S_IMODE(os.lstat(p).st_mode)


def _genuine(cache_sub, tmp_path):
    src = tmp_path / "genuine.cpp"
    src.write_text(_GENUINE)
    lib = _native.build_library(cache_sub / "libgenuine-0123.so", [_native.compiler(), "-shared", "-fPIC", str(src)],
                                "genuine.cpp")
    return lib.answer()


def test_cache_folders_are_created_private(cache):
    d = _native.cache_dir("cpu")
    assert d == cache / "cpu"
    assert _mode(cache) == 0o700 and _mode(d) == 0o700


def test_an_open_cache_folder_is_closed(cache):
    (cache / "cpu").mkdir(parents=True)
    os.chmod(cache, 0o777)
    os.chmod(cache / "cpu", 0o777)
    assert _native.cache_dir("cpu") == cache / "cpu"
    assert _mode(cache) == 0o700 and _mode(cache / "cpu") == 0o700


def _foreign(monkeypatch, root):
    """Make everything under ``root`` look owned by another user (os.lstat as _native sees it)."""
    real = os.lstat

    def lstat(p, *a, **k):
        st = real(p, *a, **k)
        if str(p).startswith(str(root)):
            fields = list(st[:10])
            fields[4] = os.getuid() + 1
            return os.stat_result(fields)
        return st
    monkeypatch.setattr(_native.os, "lstat", lstat)


def test_a_foreign_cache_folder_is_refused_for_a_private_temporary_one(cache, monkeypatch, tmp_path, planted):
    so, marker = planted
    (cache / "cpu").mkdir(parents=True, mode=0o700)
    _foreign(monkeypatch, cache)
    # the predictable shared path of old, planted by "another user" with the expected library in it
    shared = Path(tempfile.gettempdir()) / f"minitorch_gpu-{os.getuid()}"
    d = _native.cache_dir("cpu")
    # (by folder, not by string prefix: the private folder's random name may begin like the shared one's)
    assert cache not in d.parents and shared not in d.parents
    assert _mode(d.parent) == 0o700 and os.lstat(d.parent).st_uid == os.getuid()
    assert _native.cache_dir("cpu") == d  # one private folder per process
    assert _genuine(d, tmp_path) == 42
    assert not marker.exists()


def test_a_library_planted_under_the_expected_name_is_not_loaded(cache, tmp_path, planted):
    so, marker = planted
    d = _native.cache_dir("cpu")
    target = d / "libgenuine-0123.so"
    _plant(target, so)  # no manifest: rebuilt
    assert _genuine(d, tmp_path) == 42
    _plant(target, so)  # the manifest of the genuine build: the hash differs, rebuilt
    assert _genuine(d, tmp_path) == 42
    target.unlink()
    target.symlink_to(so)  # a symlink to a library elsewhere: rebuilt
    assert _genuine(d, tmp_path) == 42
    assert not marker.exists()


def test_a_library_others_can_write_is_rebuilt(cache, tmp_path):
    d = _native.cache_dir("cpu")
    assert _genuine(d, tmp_path) == 42
    lib = d / "libgenuine-0123.so"
    os.chmod(lib, 0o777)
    before = lib.stat().st_ino
    assert _genuine(d, tmp_path) == 42
    assert lib.stat().st_ino != before and not _mode(lib) & 0o022


def test_manifests_are_private(cache, tmp_path):
    d = _native.cache_dir("cpu")
    _genuine(d, tmp_path)
    manifest = d / "libgenuine-0123.so.json"
    assert _mode(manifest) == 0o600
    os.chmod(manifest, 0o666)  # a manifest others could have rewritten is not believed
    assert _native.read_manifest(manifest) is None


def test_native_optimizer_ignores_a_library_planted_under_its_key(cache, monkeypatch, planted, tmp_path):
    # the optimizer's own build and load path, with a stand-in source that builds in a fraction of a second
    so, marker = planted
    stub = tmp_path / "optim_stub.cpp"
    # (the step's parallel twin is a data symbol holding a function's address, as pool_cpu.h's MT_PARALLEL exports it)
    stub.write_text('extern "C" { int mt_optim_cpu_step(void) { return 0; } int mt_optim_cpu_disjoint(void) '
                    f'{{ return 1; }} int mt_optim_cpu_group_scalars(void) {{ return {group_scalar_count()}; }} '
                    'void* mt_optim_cpu_step_parallel = (void*)&mt_optim_cpu_step; }\n')
    monkeypatch.setattr(native, "_sources", lambda: (tmp_path, [stub]))
    monkeypatch.setattr(_cpu_library, "compile_flags", lambda _native_arch: ["-fPIC", "-shared"])
    for k, v in (("lib", None), ("tried", False), ("reason", None)):
        monkeypatch.setitem(native._state, k, v)
    assert native.available(), native.unavailable_reason()
    (built,) = (cache / "cpu").glob("liboptim_cpu-*.so")
    # the key is computable: plant under it, in a cache this process has not loaded from (dlopen of a path
    # already loaded returns the loaded library without reading the file)
    other = tmp_path / "other-cache"
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(other))
    _native.cache_dir("cpu")
    _plant(other / "cpu" / built.name, so)
    for k, v in (("lib", None), ("tried", False), ("reason", None)):
        native._state[k] = v
    assert native.available(), native.unavailable_reason()
    assert not marker.exists()


_KERNEL = 'extern "C" __global__ void put(int* x) { x[threadIdx.x] = 5; }\n'


def test_simulator_manifest_cannot_point_outside_the_cache(monkeypatch, planted, tmp_path):
    so, marker = planted
    builder.runtime_library()  # built (or found) in the default cache once per process, before switching
    cache = tmp_path / "cache"
    monkeypatch.setenv("MINITORCH_GPU_CACHE", str(cache))
    monkeypatch.setattr(builder, "_loaded", {})

    def run():
        x = np.zeros(2, np.int32)
        sim.SimModule(code=_KERNEL).get_function("put")(1, 2, (x,))
        return x.tolist()

    assert run() == [5, 5]
    (meta,) = (cache / "sim").glob("mod-*.json")
    info = json.loads(meta.read_text())
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / info["so"]).write_bytes(so.read_bytes())
    for name in (str(outside / info["so"]), f"../../elsewhere/{info['so']}"):
        # even with the planted file's own hash recorded, a name outside the cache folder is refused
        info.update(so=name, sha256=_native.file_sha256(so))
        _native.write_manifest(meta, info)
        monkeypatch.setattr(builder, "_loaded", {})
        assert run() == [5, 5]
        info = json.loads(meta.read_text())
        assert "/" not in info["so"]  # rebuilt: the manifest names the new library again
    # the expected name inside the cache, with the planted content: the hash differs
    _plant(cache / "sim" / info["so"], so)
    monkeypatch.setattr(builder, "_loaded", {})
    assert run() == [5, 5]
    assert not marker.exists()
