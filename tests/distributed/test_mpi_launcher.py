"""``python -m minitorch_gpu.distributed.run --nproc N script args``: N ranks, torchrun's variables, the
script's own arguments."""
import os
import subprocess
import sys
import tempfile

from mpirun_helper import ENV, ROOT, SCRIPTS, requires_mpi

pytestmark = requires_mpi


def test_launcher_starts_ranks_with_torchrun_variables():
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([sys.executable, "-m", "minitorch_gpu.distributed.run", "--nproc", "2",
                            os.path.join(SCRIPTS, "launcher_env.py"), "--lr", "0.1", "x"],
                           capture_output=True, text=True, timeout=60, env=dict(ENV, MT_TEST_OUT=out), cwd=ROOT)
        logs = {}
        for k in range(2):
            with open(os.path.join(out, f"rank{k}.log")) as f:
                logs[k] = f.read()
    assert r.returncode == 0, r.stderr
    for k in range(2):
        assert (f"RANK={k} LOCAL_RANK={k} WORLD_SIZE=2 rank={k} world=2 sum=2 argv=['--lr', '0.1', 'x'] "
                "main=__main__") in logs[k], logs


def test_launcher_propagates_failure():
    r = subprocess.run([sys.executable, "-m", "minitorch_gpu.distributed.run", "--nproc", "2", "-m",
                        "minitorch_gpu.no_such_module"], capture_output=True, text=True, timeout=60, env=ENV, cwd=ROOT)
    assert r.returncode != 0
    assert "No module named minitorch_gpu.no_such_module" in r.stderr


def test_find_mpiexec_prefers_the_wheel_next_to_python():
    from minitorch_gpu.distributed.run import find_mpiexec
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(here):
        assert find_mpiexec() == here
    else:
        assert os.path.basename(find_mpiexec()).startswith(("mpiexec", "mpirun"))
