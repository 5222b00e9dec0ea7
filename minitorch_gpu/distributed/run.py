"""Launch a training script on N processes: ``python -m minitorch_gpu.distributed.run --nproc N script.py args``.

A thin wrapper over ``mpiexec``: it finds the launcher (the one the ``mpich`` wheel installs next to this
Python first, then ``$MPIEXEC``, then ``mpiexec`` on PATH) and runs ``mpiexec -n N python script.py args``.
Each rank also gets torchrun's environment variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``) from the MPI launcher's, so scripts written for ``torchrun`` find them. ``-m module``
runs a module instead of a script, as with ``python -m``.

As torchrun does, it watches the ranks: each one records in a private directory when it starts (its pid)
and how it ended (exit code, and the exception that escaped). When a rank fails (a non-zero exit, or a
process that vanished without saying how: a signal, ``os._exit``) and ``mpiexec`` has not ended the job
within a few seconds by itself, the launcher terminates the remaining ranks. Either way it ends by naming
the failed ranks, the first to fail first, and returns non-zero. A rank that exits with a non-zero code
while a process group is up aborts the job at once, as an escaping exception does (see ``_failures``).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from ._failures import GRACE_S, armed_channel

__all__ = ["find_mpiexec", "main"]

#: where each rank records its start and its end (set by the launcher for the ranks)
STATUS_ENV = "MINITORCH_RUN_STATUS_DIR"
#: how long after a rank failed the launcher lets mpiexec end the job before terminating it
_LAUNCHER_GRACE_S = GRACE_S + 2.0


def find_mpiexec() -> str:
    """Path of the MPI launcher: next to ``sys.executable`` (the mpich wheel's), ``$MPIEXEC``, or on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    env = os.environ.get("MPIEXEC")
    if env:
        return env
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if found:
        return found
    raise RuntimeError("no mpiexec found: install the MPI extra (pip install 'minitorch_gpu[mpi]', which brings the "
                       "mpich wheel and its mpiexec) or set $MPIEXEC")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m minitorch_gpu.distributed.run",
                                description="Run a script on N processes (one rank each) through mpiexec.")
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, default=1,
                   help="number of processes (ranks) to start (default 1)")
    p.add_argument("--hosts", default=None,
                   help="comma-separated hosts to spread the ranks over (passed to mpiexec -hosts)")
    p.add_argument("--mpiexec-arg", action="append", default=[], metavar="ARG",
                   help="an extra argument for mpiexec (repeatable), e.g. --mpiexec-arg=-disable-auto-cleanup")
    p.add_argument("-m", dest="module", action="store_true", help="run the target as a module (python -m)")
    p.add_argument("target", help="the training script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def _record(rank: str, kind: str, text: str) -> None:
    """Write ``rank<rank>.<kind>`` in the launcher's status directory (nothing when there is none, e.g. on
    another host); atomically, so that the launcher never reads half a record."""
    folder = os.environ.get(STATUS_ENV)
    if not folder:
        return
    with contextlib.suppress(OSError):
        tmp = os.path.join(folder, f".rank{rank}.{kind}.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(folder, f"rank{rank}.{kind}"))


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return 0
    return e.code if isinstance(e.code, int) else 1


def _one_line(text: str, limit: int = 500) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _worker(argv: list[str]) -> None:
    """Inside one rank: export torchrun's variables, then run the target as ``__main__``, recording how it
    ended for the launcher."""
    is_module = argv[0] == "-m"
    if is_module:
        argv = argv[1:]
    env = os.environ
    rank = env.get("PMI_RANK") or env.get("OMPI_COMM_WORLD_RANK") or "0"
    size = env.get("PMI_SIZE") or env.get("OMPI_COMM_WORLD_SIZE") or "1"
    local = env.get("MPI_LOCALRANKID") or env.get("OMPI_COMM_WORLD_LOCAL_RANK") or rank
    local_size = env.get("MPI_LOCALNRANKS") or env.get("OMPI_COMM_WORLD_LOCAL_SIZE") or size
    env.setdefault("RANK", rank)
    env.setdefault("WORLD_SIZE", size)
    env.setdefault("LOCAL_RANK", local)
    env.setdefault("LOCAL_WORLD_SIZE", local_size)
    target = argv[0]
    sys.argv = list(argv)
    _record(rank, "start", f"{os.getpid()} {socket.gethostname()}")
    try:
        if is_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = _exit_code(e)
        _record(rank, "exit", f"{code} {time.time()!r} SystemExit: {_one_line(str(e.code))}")
        channel = armed_channel()
        if code != 0 and channel is not None:
            # the peers may be waiting for this rank in a collective: end the job instead of leaving them
            # there (MPI_Finalize would wait for them)
            print(f"[rank {rank}] exited with code {code} while a process group was up", file=sys.stderr)
            channel.fail(f"it exited with code {code}")
        raise
    except BaseException as e:
        summary = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        _record(rank, "exit", f"1 {time.time()!r} {_one_line(summary)}")
        raise  # to sys.excepthook, which aborts the job while a process group is up
    _record(rank, "exit", f"0 {time.time()!r} ")


@dataclass
class _Rank:
    rank: int
    pid: int | None = None
    local: bool = False
    code: int | None = None
    when: float = 0.0
    why: str = ""


def _read_status(folder: str, nproc: int, vanished: dict[int, float]) -> list[_Rank]:
    """What the ranks recorded so far. A rank of this host whose process is gone without an exit record
    failed (a signal or ``os._exit``): ``vanished`` keeps when the launcher first saw that, so that a rank
    found gone only after mpiexec ended (perhaps stopped by mpiexec) is not taken for the first failure."""
    host = socket.gethostname()
    ranks = []
    for r in range(nproc):
        info = _Rank(r)
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(folder, f"rank{r}.start")) as f:
                pid, where = f.read().split(maxsplit=1)
            info.pid, info.local = int(pid), where.strip() == host
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(folder, f"rank{r}.exit")) as f:
                code, when, *why = f.read().split(" ", 2)
            info.code, info.when, info.why = int(code), float(when), (why[0] if why else "")
        if info.code is None and info.pid is not None and info.local and not _alive(info.pid):
            info.code, info.when = -1, vanished.setdefault(r, time.time())
            info.why = "its process ended without saying why (a signal, os._exit, or mpiexec stopping it)"
        ranks.append(info)
    return ranks


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop(proc: subprocess.Popen[bytes], ranks: list[_Rank]) -> None:
    """Terminate mpiexec (which stops its ranks), then kill what is left of it and of this host's ranks."""
    with contextlib.suppress(OSError):
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
    for r in ranks:
        if r.local and r.pid is not None and r.code is None:
            with contextlib.suppress(OSError):
                os.kill(r.pid, signal.SIGKILL)


def _supervise(proc: subprocess.Popen[bytes], folder: str, nproc: int) -> int:
    """Wait for mpiexec; stop the job when a rank has failed and it goes on; report the failed ranks."""
    first_failure: float | None = None
    stopped = False
    vanished: dict[int, float] = {}
    while True:
        try:
            rc = proc.wait(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            pass
        except KeyboardInterrupt:
            # mpiexec got the same Ctrl-C and stops its ranks; make sure it does
            _stop(proc, _read_status(folder, nproc, vanished))
            return 130
        ranks = _read_status(folder, nproc, vanished)
        if first_failure is None and any(r.code not in (None, 0) for r in ranks):
            first_failure = time.monotonic()
        if first_failure is not None and time.monotonic() - first_failure > _LAUNCHER_GRACE_S:
            _stop(proc, ranks)
            rc, stopped = proc.returncode, True
            break
    seen = dict(vanished)
    ranks = _read_status(folder, nproc, vanished)
    for r in ranks:
        if r.rank in vanished and r.rank not in seen:
            r.when = float("inf")  # gone by the time mpiexec ended: no telling when
    failed = sorted((r for r in ranks if r.code not in (None, 0)), key=lambda r: r.when)
    for i, r in enumerate(failed):
        code = f"exit code {r.code}" if r.code is not None and r.code > 0 else "no exit code"
        first = " first" if i == 0 and len(failed) > 1 and r.when != float("inf") else ""
        print(f"minitorch_gpu.distributed.run: rank {r.rank} failed{first} ({code}): {r.why}", file=sys.stderr)
    if stopped:
        print(f"minitorch_gpu.distributed.run: terminated the remaining ranks {_LAUNCHER_GRACE_S:g}s after rank "
              f"{failed[0].rank} failed", file=sys.stderr)
    if failed and rc == 0:
        return 1
    return rc if rc >= 0 else 128 - rc


def main(argv: list[str] | None = None) -> int:
    """The launcher's command line (``sys.argv[1:]`` by default); returns mpiexec's exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "--worker":
        _worker(argv[1:])
        return 0
    args = _parser().parse_args(argv)
    if args.nproc < 1:
        raise SystemExit(f"--nproc must be at least 1, got {args.nproc}")
    cmd = [find_mpiexec(), "-n", str(args.nproc)]
    if args.hosts:
        cmd += ["-hosts", args.hosts]
    cmd += list(args.mpiexec_arg)
    cmd += [sys.executable, "-m", "minitorch_gpu.distributed.run", "--worker"]
    if args.module:
        cmd.append("-m")
    cmd += [args.target] + list(args.args)
    with tempfile.TemporaryDirectory(prefix="minitorch-run-") as folder:
        proc = subprocess.Popen(cmd, env=dict(os.environ, **{STATUS_ENV: folder}))
        return _supervise(proc, folder, args.nproc)


if __name__ == "__main__":
    sys.exit(main())
