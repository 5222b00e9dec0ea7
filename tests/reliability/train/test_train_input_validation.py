"""Every input of the main job is checked before training starts: one line on stderr, exit code 2, never a
hang, a traceback or the OOM killer. Data paths that are FIFOs, devices, sockets or /proc views; sizes that
cannot fit in memory (estimated from the config before anything is allocated); checkpoints with an absurd
config or a step that is not a non-negative integer; --steps below the checkpoint's step."""
import os
import re
import socket
import stat
import tracemalloc

import pytest
from train_runs import run_all

import minitorch_gpu as mt
from minitorch_gpu import train
from minitorch_gpu.models import GPT, GPTConfig

TINY = ["--steps", "2", "--batch-size", "2", "--block-size", "8", "--n-layer", "1", "--n-head", "1",
        "--n-embd", "8", "--eval-every", "2", "--eval-iters", "1", "--sample-chars", "5", "--quiet"]


def one_line_error(code, err, msg):
    assert code == 2, err
    assert err.startswith("minitorch-gpu-train: error:") and err.count("\n") == 1 and msg in err, err


def main(argv, capsys):
    code = train.main(argv)
    return code, capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ data paths

def test_special_files_never_hang(corpus, tmp_path):
    # run as subprocesses with a timeout: reading a FIFO without a writer blocks forever
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.txt").write_text(open(corpus).read())
    os.mkfifo(mixed / "b.fifo")
    (mixed / "c.zero").symlink_to("/dev/zero")  # a device: endless, if it were read
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(mixed / "d.sock"))
    try:
        results = run_all([(["--data", data, "--out", str(tmp_path / f"o{i}"), *TINY], None)
                           for i, data in enumerate([str(fifo), str(mixed), "/proc/self/fd", str(mixed / "d.sock")])],
                          timeout=60)
    finally:
        sock.close()
    r_fifo, r_mixed, r_proc, r_sock = results
    one_line_error(r_fifo.returncode, r_fifo.stderr, f"--data {fifo} is a FIFO, not a text file or a directory")
    one_line_error(r_proc.returncode, r_proc.stderr, "--data /proc/self/fd is under /proc")
    one_line_error(r_sock.returncode, r_sock.stderr, "is a socket, not a text file or a directory")
    # inside a directory, the special files are skipped with one warning line naming them
    assert r_mixed.returncode == 0, r_mixed.stderr
    warning = [line for line in r_mixed.stderr.splitlines() if "warning" in line]
    assert warning == [f"minitorch-gpu-train: warning: skipped 3 file(s) that are not regular files: "
                       f"{mixed / 'b.fifo'} (a FIFO), {mixed / 'c.zero'} (a character device), "
                       f"{mixed / 'd.sock'} (a socket)"]


@pytest.mark.parametrize("name", ["checkpoint.safetensors", "metrics.jsonl"])
def test_a_fifo_in_place_of_an_output_file_is_refused(corpus, tmp_path, capsys, name):
    out = tmp_path / "o"
    out.mkdir()
    os.mkfifo(out / name)
    code, err = main(["--data", corpus, "--out", str(out), *TINY, "--resume"], capsys)
    one_line_error(code, err, f"{out / name} is a FIFO, not a regular file: remove it or choose another --out")
    assert stat.S_ISFIFO(os.stat(out / name).st_mode)  # left as it was


def test_a_fifo_swapped_in_after_the_listing_is_not_read(tmp_path, capsys):
    # the check is made on the opened descriptor, not only on the listing
    (tmp_path / "a.txt").write_text("hello world\n" * 20)
    os.mkfifo(tmp_path / "b.txt")
    text = train._read_regular(str(tmp_path / "a.txt"), 100)
    assert text.startswith("hello")
    with pytest.raises(train._NotRegular, match="a FIFO"):
        train._read_regular(str(tmp_path / "b.txt"), 100)


# ------------------------------------------------------------------------------------------------ sizes

@pytest.mark.parametrize("extra,msg", [
    (["--batch-size", "1000000000"], r"activations 9\d\d\.\d TB"),
    (["--n-embd", "200000", "--n-head", "1"], r"parameters 3\.8 TB"),
    (["--sample-chars", "100000000000000"], r"sample 800\.0 TB"),
])
def test_absurd_sizes_are_refused_with_the_estimate(corpus, tmp_path, capsys, extra, msg):
    argv = ["--data", corpus, "--out", str(tmp_path / "o"), *TINY, "--n-layer", "2", "--n-embd", "64",
            "--block-size", "64", "--n-head", "4", "--batch-size", "16"]
    code, err = main(argv + extra, capsys)
    one_line_error(code, err, "error: the run needs about ")
    assert re.search(msg, err) and "lower --batch-size" in err
    assert not os.path.exists(tmp_path / "o" / "checkpoint.safetensors")


def test_the_estimate_is_compared_with_what_is_available(corpus, tmp_path, capsys, monkeypatch):
    argv = ["--data", corpus, "--out", str(tmp_path / "o"), *TINY]
    need = sum(train.estimate_memory(GPTConfig(vocab_size=len(set(open(corpus).read())), block_size=8,
                                               n_layer=1, n_head=1, n_embd=8), 2, 5).values())
    monkeypatch.setattr(train, "available_memory", lambda device: (need - 1, "available"))
    code, err = main(argv, capsys)
    one_line_error(code, err, f"but only {train._size(need - 1)} is available")
    monkeypatch.setattr(train, "available_memory", lambda device: (need, "available"))
    assert main(argv, capsys)[0] == 0


def test_available_memory_per_device(device, monkeypatch):
    dev = mt.device(device)
    free, source = train.available_memory(dev)
    assert free > 0
    if dev.type == "cuda":
        monkeypatch.setattr(mt.cuda, "mem_get_info", lambda d=None: (12345, 10 ** 12))
        assert train.available_memory(dev) == (12345, f"free on {dev}")
    else:
        with open("/proc/meminfo") as f:
            total = int(next(line for line in f if line.startswith("MemTotal:")).split()[1]) * 1024
        assert free <= total and source in ("available", "free", "left by this container's memory limit")


def test_a_container_memory_limit_counts(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text("1000000\n")
    (v2 / "memory.current").write_text("600000\n")
    (v2 / "memory.stat").write_text("anon 500000\ninactive_file 100000\nactive_file 7\n")
    assert train.cgroup_available(str(v2)) == 1000000 - 600000 + 100000  # file cache can be reclaimed
    (v2 / "memory.max").write_text("max\n")
    assert train.cgroup_available(str(v2)) is None
    v1 = tmp_path / "v1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("2000000\n")
    (v1 / "memory.usage_in_bytes").write_text("2500000\n")
    (v1 / "memory.stat").write_text("total_inactive_file 0\n")
    assert train.cgroup_available(str(tmp_path / "v1")) == 0
    (v1 / "memory.limit_in_bytes").write_text(f"{2 ** 63 - 4096}\n")  # v1's "no limit"
    assert train.cgroup_available(str(tmp_path / "v1")) is None
    assert train.cgroup_available(str(tmp_path / "none")) is None


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_the_estimate_matches_the_memory_a_step_takes(dropout):
    cfg = GPTConfig(vocab_size=65, block_size=64, n_layer=2, n_head=4, n_embd=64, dropout=dropout)
    mt.manual_seed(0)
    tracemalloc.start()
    try:
        model = GPT(cfg)
        opt = mt.optim.AdamW(train.param_groups(model, 0.1), lr=1e-3)
        x, y = mt.randint(0, 65, (16, 64)), mt.randint(0, 65, (16, 64))
        train.train_step(model, opt, x, y, 1.0)  # gradients and moments exist from here on
        tracemalloc.reset_peak()
        train.train_step(model, opt, x, y, 1.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    est = sum(train.estimate_memory(cfg, 16, 0).values())
    assert 0.75 < est / peak < 1.33, (est, peak)


# ------------------------------------------------------------------------------------------------ checkpoints

@pytest.fixture
def finished(corpus, tmp_path, capsys):
    """A run of TINY that ended at step 2: its arguments and checkpoint path."""
    argv = ["--data", corpus, "--out", str(tmp_path / "o"), *TINY]
    assert main(argv, capsys)[0] == 0
    return argv, str(tmp_path / "o" / "checkpoint.safetensors")


def rewrite(path, **changes):
    ckpt = mt.load(path)
    for key, value in changes.items():
        if key == "config":
            ckpt["config"].update(value)
        else:
            ckpt[key] = value
    mt.serialization.save_safetensors(ckpt, path)


@pytest.mark.parametrize("step", ["twenty", -3, 2.5, True, None])
def test_a_checkpoint_step_that_is_not_a_count_is_refused(finished, capsys, step):
    argv, path = finished
    rewrite(path, step=step)
    code, err = main(argv + ["--resume"], capsys)
    one_line_error(code, err, f"the checkpoint's step must be a non-negative integer, got {step!r}")


def test_a_checkpoint_with_an_absurd_config_is_refused_before_allocating(finished, capsys):
    argv, path = finished
    rewrite(path, config={"n_embd": 10 ** 7})
    code, err = main(argv[:argv.index("--n-embd")] + argv[argv.index("--n-embd") + 2:] + ["--resume"], capsys)
    one_line_error(code, err, "error: the run needs about ")
    assert "the checkpoint's model is n_layer=1, n_embd=10000000" in err


def test_resume_with_steps_below_the_checkpoint_is_refused(finished, capsys):
    argv, path = finished
    argv = list(argv)
    argv[argv.index("--steps") + 1] = "1"
    code, err = main(argv + ["--resume"], capsys)
    one_line_error(code, err, "--resume: the checkpoint is at step 2, beyond --steps 1; pass --steps 2 or more")
    argv[argv.index("--steps") + 1] = "4"
    rewrite(path, step=3)
    code, err = main(argv + ["--resume", "--stop-after", "2"], capsys)
    one_line_error(code, err, "the checkpoint is at step 3, beyond --stop-after 2")
