"""Launch a training script on N processes: ``python -m minitorch_gpu.distributed.run --nproc N script.py args``.

A thin wrapper over ``mpiexec``: it finds the launcher (the one the ``mpich`` wheel installs next to this
Python first, then ``$MPIEXEC``, then ``mpiexec`` on PATH) and runs ``mpiexec -n N python script.py args``.
Each rank also gets torchrun's environment variables (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``) from the MPI launcher's, so scripts written for ``torchrun`` find them. ``-m module``
runs a module instead of a script, as with ``python -m``.
"""
from __future__ import annotations

import argparse
import os
import runpy
import shutil
import subprocess
import sys

__all__ = ["find_mpiexec", "main"]


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


def _worker(argv: list[str]) -> None:
    """Inside one rank: export torchrun's variables, then run the target as ``__main__``."""
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
    if is_module:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")


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
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
