"""The character-level GPT (minitorch_gpu.models.gpt) and the training job (python -m minitorch_gpu.train):
the model against a PyTorch twin with copied weights, and the job end to end on tiny configs: the loss falls,
its files have the right contents, a resumed run repeats the uninterrupted one exactly, bad input exits 2."""
import json
import math
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import minitorch_gpu as mt
from minitorch_gpu import train
from minitorch_gpu.models import GPT, GPTConfig

# single-threaded BLAS: tiny matrices gain nothing from threads, and a busy machine makes them much slower
ENV = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MINITORCH_GPU_SIM="0")
TINY = ["--steps", "24", "--batch-size", "8", "--block-size", "16", "--n-layer", "1", "--n-head", "2",
        "--n-embd", "32", "--lr", "1e-2", "--eval-every", "8", "--eval-iters", "4", "--sample-chars", "30",
        "--quiet"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A small text with learnable structure (a few words in random order)."""
    rng = random.Random(0)
    words = ["def", "return", "self", "import", "class", "lambda", "yield", "print"]
    lines = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(600)]
    path = tmp_path_factory.mktemp("data") / "words.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def run_cli(*argv, env=ENV):
    return subprocess.run([sys.executable, "-m", "minitorch_gpu.train", *argv], capture_output=True, text=True,
                          env=env, timeout=120)


def read_metrics(out):
    with open(os.path.join(out, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


# ------------------------------------------------------------------------------------------------ model

def torch_twin(torch, cfg):
    """The same architecture written with torch.nn, parameter names matching ours."""
    nn, F = torch.nn, torch.nn.functional

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.view(B, T, cfg.n_head, C // cfg.n_head).transpose(1, 2)
                       for t in self.c_attn(x).split(C, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).reshape(B, T, C))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)

        def forward(self, x):
            return self.c_proj(F.gelu(self.c_fc(x)))

    class Blk(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(cfg.n_embd, bias=cfg.bias), Attn()
            self.ln_2, self.mlp = nn.LayerNorm(cfg.n_embd, bias=cfg.bias), Mlp()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Twin(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(cfg.vocab_size, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                h=nn.ModuleList([Blk() for _ in range(cfg.n_layer)]),
                ln_f=nn.LayerNorm(cfg.n_embd, bias=cfg.bias)))
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T))
            for b in self.transformer.h:
                x = b(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    return Twin()


@pytest.mark.parametrize("bias", [True, False])
def test_gpt_matches_torch_twin(torch, bias):
    cfg = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0, bias=bias)
    mt.manual_seed(0)
    ours = GPT(cfg)
    theirs = torch_twin(torch, cfg)
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})
    assert set(ours.state_dict()) == set(theirs.state_dict())
    idx = np.random.default_rng(0).integers(0, 11, size=(3, 8))
    tgt = np.random.default_rng(1).integers(0, 11, size=(3, 8))
    tgt[0, :3] = -1  # ignored positions
    logits, loss = ours(mt.tensor(idx), mt.tensor(tgt))
    t_logits, t_loss = theirs(torch.tensor(idx), torch.tensor(tgt))
    np.testing.assert_allclose(logits.detach().numpy(), t_logits.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loss.item(), t_loss.item(), rtol=1e-5)
    loss.backward()
    t_loss.backward()
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), rtol=1e-3, atol=1e-5,
                                   err_msg=name)


def test_gpt_structure_init_and_causality():
    cfg = GPTConfig(vocab_size=13, block_size=10, n_layer=3, n_head=2, n_embd=16)
    mt.manual_seed(1)
    model = GPT(cfg)
    assert model.lm_head.weight is model.transformer.wte.weight  # tied
    names = [n for n, _ in model.named_parameters()]
    assert "lm_head.weight" not in names or "transformer.wte.weight" not in names  # counted once
    assert model.num_params(non_embedding=False) - model.num_params() == 10 * 16
    proj = model.transformer.h[0].attn.c_proj.weight
    assert abs(proj.std().item() - 0.02 / math.sqrt(6)) < 0.004
    assert abs(model.transformer.h[0].mlp.c_fc.weight.std().item() - 0.02) < 0.003
    assert model.transformer.h[0].mlp.c_fc.bias.abs().max().item() == 0
    # the loss at initialization is about ln(vocab): the model starts out uniform
    idx = mt.randint(0, 13, (4, 10))
    _, loss = model(idx, mt.randint(0, 13, (4, 10)))
    assert abs(loss.item() - math.log(13)) < 0.3
    # changing a later token never changes earlier logits
    logits, none = model(idx)
    assert none is None and logits.shape == (4, 10, 13)
    idx2 = idx.clone()
    idx2[:, 6:] = (idx2[:, 6:] + 1) % 13
    logits2, _ = model(idx2)
    np.testing.assert_allclose(logits[:, :6].detach().numpy(), logits2[:, :6].detach().numpy(), atol=1e-6)
    assert not np.allclose(logits[:, 6:].detach().numpy(), logits2[:, 6:].detach().numpy())
    with pytest.raises(ValueError, match="Cannot forward sequence of length 11, block size is only 10"):
        model(mt.zeros(1, 11, dtype=mt.int64))


def test_gpt_generate():
    cfg = GPTConfig(vocab_size=7, block_size=4, n_layer=1, n_head=1, n_embd=8)
    model = GPT(cfg).eval()
    start = mt.zeros(2, 1, dtype=mt.int64)
    out = model.generate(start, 9, generator=mt.Generator().manual_seed(3))
    assert out.shape == (2, 10) and out.dtype is mt.int64 and not out.requires_grad
    assert out.min().item() >= 0 and out.max().item() < 7
    again = model.generate(start, 9, generator=mt.Generator().manual_seed(3))
    assert out.tolist() == again.tolist()
    greedy = model.generate(start, 5, top_k=1)
    logits, _ = model(greedy[:, -5:-1])  # the last block_size tokens before the final one
    assert greedy[:, -1].tolist() == logits[:, -1].argmax(-1).tolist()
    with pytest.raises(ValueError, match="temperature must be positive"):
        model.generate(start, 1, temperature=0)


@pytest.mark.parametrize("kwargs,msg", [(dict(n_embd=10, n_head=3), "divisible"), (dict(n_layer=0), "n_layer"),
                                        (dict(dropout=1.0), "dropout"), (dict(bias=1), "bias")])
def test_gpt_config_validation(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        GPTConfig(**kwargs)
    cfg = GPTConfig()
    assert GPTConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown GPTConfig field"):
        GPTConfig.from_dict(dict(cfg.to_dict(), extra=1))


# ------------------------------------------------------------------------------------------------ pieces

def test_corpus_stdlib_default_is_deterministic():
    files = train.stdlib_source_files()
    assert files and all(f.endswith(".py") for f in files)
    assert not any("site-packages" in f for f in files)
    a, origin = train.read_corpus(None, 50_000)
    b, _ = train.read_corpus(None, 50_000)
    assert a == b and len(a) == 50_000 and "standard library" in origin
    ids, vocab = train.encode(a)
    assert "".join(vocab[i] for i in ids[:500]) == a[:500] and list(vocab) == sorted(set(a))


def test_directory_corpus_and_lr_schedule(tmp_path):
    (tmp_path / "b.txt").write_text("bbb")
    (tmp_path / "a.txt").write_text("aaa")
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe\x00\x81")  # not UTF-8: skipped inside a directory
    text, _ = train.read_corpus(str(tmp_path), 100)
    assert text == "aaabbb"
    f = train.lr_schedule(warmup=4, steps=20)
    assert [f(i) for i in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert f(4) == 1.0 and abs(f(20) - train.MIN_LR_RATIO) < 1e-12 and f(12) < f(8)


# ------------------------------------------------------------------------------------------------ the job

def test_train_end_to_end(corpus, tmp_path):
    out = str(tmp_path / "run")
    r = run_cli("--data", corpus, "--out", out, *TINY)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "--- sample (step 24) ---" in r.stdout
    recs = read_metrics(out)
    assert [rec["step"] for rec in recs] == list(range(1, 25))
    for rec in recs:
        assert {"step", "loss", "lr", "tokens_per_s"} <= set(rec) and rec["tokens_per_s"] > 0
        assert ("val_loss" in rec) == (rec["step"] in (8, 16, 24))
    # warmup then decay; the loss falls well below the uniform guess
    lrs = [rec["lr"] for rec in recs]
    assert lrs.index(max(lrs)) in (1, 2, 3) and lrs[-1] < max(lrs)
    vocab = len(set(open(corpus).read()))
    assert recs[0]["loss"] > math.log(vocab) - 0.3
    assert np.mean([rec["loss"] for rec in recs[-4:]]) < recs[0]["loss"] - 0.5
    vals = [rec["val_loss"] for rec in recs if "val_loss" in rec]
    assert vals[-1] < vals[0] < math.log(vocab)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in r.stderr and not os.path.exists(os.path.join(out, "loss.png"))
    else:
        with open(os.path.join(out, "loss.png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    ckpt = mt.load(os.path.join(out, "checkpoint.safetensors"))
    assert {"model", "optimizer", "scheduler", "step", "rng", "config", "vocab"} <= set(ckpt)
    assert ckpt["step"] == 24 and ckpt["config"]["n_embd"] == 32 and len(ckpt["vocab"]) == vocab
    assert {"cpu", "data"} <= set(ckpt["rng"])
    model = GPT(GPTConfig.from_dict(ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    assert ckpt["optimizer"]["state"] and ckpt["scheduler"]["last_epoch"] == 24


def test_resume_reproduces_uninterrupted_run_exactly(corpus, tmp_path):
    common = ["--data", corpus, *TINY, "--dropout", "0.1"]  # dropout: the default RNG must be restored too
    full, part = str(tmp_path / "full"), str(tmp_path / "part")
    r0 = run_cli(*common, "--out", full)
    assert r0.returncode == 0, r0.stderr
    r1 = run_cli(*common, "--out", part, "--stop-after", "11")
    assert r1.returncode == 0, r1.stderr
    assert [rec["step"] for rec in read_metrics(part)] == list(range(1, 12))
    assert mt.load(os.path.join(part, "checkpoint.safetensors"))["step"] == 11
    r2 = run_cli(*common, "--out", part, "--resume")
    assert r2.returncode == 0, r2.stderr
    a, b = read_metrics(full), read_metrics(part)
    assert [rec["step"] for rec in b] == list(range(1, 25))
    for x, y in zip(a, b):
        assert x["loss"] == y["loss"] and x["lr"] == y["lr"] and x.get("val_loss") == y.get("val_loss"), x["step"]
    assert r2.stdout == r0.stdout  # the same final sample too


def test_auto_device_picks_the_gpu(corpus, tmp_path):
    # the CPU simulator of the CUDA backend stands in for a GPU: --device auto must choose it, and the GPU
    # generator's state must be checkpointed and restored with the others
    env = dict(ENV, MINITORCH_GPU_SIM="1")
    out = str(tmp_path / "gpu")
    args = ["--data", corpus, *TINY, "--steps", "8", "--eval-every", "4", "--dropout", "0.1", "--out", out]
    r = run_cli(*args, "--stop-after", "5", env=env)
    assert r.returncode == 0, r.stderr
    assert "on cuda" in r.stderr
    ckpt = mt.load(os.path.join(out, "checkpoint.safetensors"), map_location="cpu")
    assert set(ckpt["rng"]) == {"cpu", "data", "cuda"}
    r = run_cli(*args, "--resume", env=env)
    assert r.returncode == 0, r.stderr
    assert [rec["step"] for rec in read_metrics(out)] == list(range(1, 9))


def test_plot_without_matplotlib(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes ``import matplotlib`` fail
    path = str(tmp_path / "loss.png")
    assert train.write_plot(path, [{"step": 1, "loss": 2.0}]) is False
    assert not os.path.exists(path)
    assert "matplotlib is not installed" in capsys.readouterr().err


def _main(argv, capsys):
    code = train.main(argv)
    err = capsys.readouterr().err
    return code, err


def test_bad_input_exit_2(corpus, tmp_path, capsys):
    out = str(tmp_path / "o")
    small = ["--steps", "2", "--batch-size", "2", "--block-size", "8", "--n-layer", "1", "--n-head", "1",
             "--n-embd", "8", "--quiet", "--out", out]
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    (tmp_path / "emptydir").mkdir()
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 10)
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("abc" * 5)
    cases = [
        (["--data", str(tmp_path / "missing.txt")], "data path does not exist"),
        (["--data", str(empty)], "the corpus is empty"),
        (["--data", str(tmp_path / "emptydir")], "the corpus is empty"),
        (["--data", str(binary)], "is not UTF-8 text"),
        (["--data", str(tiny)], "too small for --block-size 8"),
        (["--data", corpus, "--resume"], "no checkpoint at"),
        (["--data", corpus, "--device", "tpu"], "device"),
        (["--data", corpus, "--n-embd", "10", "--n-head", "4"], "must be divisible by --n-head"),
        (["--data", corpus, "--stop-after", "5"], "--stop-after (5) is beyond --steps (2)"),
    ]
    if not mt.cuda.is_available():
        cases.append((["--data", corpus, "--device", "cuda"], "no CUDA GPU is available"))
    for extra, msg in cases:
        code, err = _main(small + extra, capsys)
        assert code == 2, (extra, err)
        assert msg in err and "Traceback" not in err, (extra, err)
        assert err.startswith("minitorch-gpu-train: error:")
    # a checkpoint, then resumes that do not fit it
    assert _main(small + ["--data", corpus], capsys)[0] == 0
    code, err = _main(small + ["--data", corpus, "--resume", "--n-layer", "2"], capsys)
    assert code == 2 and "incompatible config" in err and "n_layer=1" in err
    other = tmp_path / "other.txt"
    other.write_text("xyz " * 200)
    code, err = _main(small + ["--data", str(other), "--resume"], capsys)
    assert code == 2 and "vocabulary differs" in err
    with open(os.path.join(out, "checkpoint.safetensors"), "r+b") as f:
        f.seek(0)
        f.write(b"\xff" * 8)  # a damaged header
    code, err = _main(small + ["--data", corpus, "--resume"], capsys)
    assert code == 2 and "cannot read checkpoint" in err


@pytest.mark.parametrize("arg", [["--steps", "0"], ["--steps", "abc"], ["--lr", "-1"], ["--lr", "nan"],
                                 ["--dropout", "1.5"], ["--batch-size", "2.5"], ["--eval-every", "0"]])
def test_bad_numbers_exit_2(arg, capsys):
    with pytest.raises(SystemExit) as info:
        train.main(arg)
    err = capsys.readouterr().err
    assert info.value.code == 2 and "error: argument" in err and "Traceback" not in err


def test_cli_bad_input_has_no_traceback(tmp_path):
    r = run_cli("--data", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.strip() == \
        f"minitorch-gpu-train: error: data path does not exist: {tmp_path / 'nope'}"
    r = run_cli("--steps", "-3")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--steps" in r.stderr


@pytest.mark.parametrize("dtype,dropout", [("float32", "0"), ("float32", "0.1"), ("bfloat16", "0.1")])
def test_cuda_graph_gives_the_losses_of_the_eager_run(corpus, tmp_path, dtype, dropout):
    # on the simulator; --cuda-graph captures the step after warm-up and replays it, resume included; every replay
    # draws the dropout masks the eager step draws (the kernels read the generator's seed and offset from device
    # memory), and under bfloat16 autocast every cast is a backend primitive, so the replay repeats the casts too
    env = dict(ENV, MINITORCH_GPU_SIM="1")
    args = ["--data", corpus, *TINY, "--steps", "8", "--eval-every", "4", "--dropout", dropout, "--device", "cuda",
            "--dtype", dtype]
    eager, graphed = str(tmp_path / "eager"), str(tmp_path / "graphed")
    r = run_cli(*args, "--out", eager, env=env)
    assert r.returncode == 0, r.stderr
    r = run_cli(*args, "--cuda-graph", "--out", graphed, "--stop-after", "6", env=env)
    assert r.returncode == 0, r.stderr
    r = run_cli(*args, "--cuda-graph", "--out", graphed, "--resume", env=env)
    assert r.returncode == 0, r.stderr
    a, b = read_metrics(eager), read_metrics(graphed)
    assert [rec["step"] for rec in b] == list(range(1, 9))
    # capturable AdamW computes its bias corrections on the device in float32: the same losses to rounding (a
    # bfloat16 forward turns the last-bit differences of the float32 weights into a few 1e-5 of the loss; a cast
    # replayed as the constant the capture saw would drift by 10% within a few steps)
    rtol = 1e-5 if dtype == "float32" else 5e-4
    np.testing.assert_allclose([rec["loss"] for rec in b], [rec["loss"] for rec in a], rtol=rtol)
    np.testing.assert_allclose([rec["val_loss"] for rec in b if "val_loss" in rec],
                               [rec["val_loss"] for rec in a if "val_loss" in rec], rtol=rtol)


def test_cuda_graph_is_refused_on_the_cpu(corpus, tmp_path, capsys):
    small = ["--data", corpus, "--steps", "2", "--batch-size", "2", "--block-size", "8", "--n-layer", "1",
             "--n-head", "1", "--n-embd", "8", "--quiet", "--out", str(tmp_path / "o"), "--cuda-graph"]
    code, err = _main(small + ["--device", "cpu"], capsys)
    assert code == 2 and "--cuda-graph needs a CUDA device, but the run is on cpu" in err


# ------------------------------------------------------------------------------------------------ --dtype

@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_mixed_precision_runs_records_its_dtype_and_resumes(corpus, tmp_path, dtype):
    """--dtype trains under autocast (float16 with a GradScaler whose state goes into the checkpoint), records the
    dtype in every metrics record and in the checkpoint, stays close to the float32 run, and a resumed run keeps
    the checkpoint's dtype and repeats the uninterrupted run's losses."""
    args = ["--data", corpus, *TINY, "--steps", "8", "--eval-every", "4"]
    ref, mixed, resumed = (str(tmp_path / n) for n in ("ref", "mixed", "resumed"))
    for out, extra in ((ref, ["--dtype", "float32"]), (mixed, ["--dtype", dtype]),
                       (resumed, ["--dtype", dtype, "--stop-after", "4"])):
        r = run_cli(*args, *extra, "--out", out)
        assert r.returncode == 0, r.stderr
    r = run_cli(*args, "--resume", "--out", resumed)  # --dtype auto: the checkpoint's
    assert r.returncode == 0, r.stderr
    a, m, b = read_metrics(ref), read_metrics(mixed), read_metrics(resumed)
    assert {rec["dtype"] for rec in m} == {dtype} and {rec["dtype"] for rec in b} == {dtype}
    assert {rec["dtype"] for rec in a} == {"float32"}
    np.testing.assert_allclose([rec["loss"] for rec in m], [rec["loss"] for rec in a], rtol=3e-2)
    assert [rec["loss"] for rec in b] == [rec["loss"] for rec in m]
    ckpt = mt.load(os.path.join(mixed, "checkpoint.safetensors"))
    assert ckpt["run"]["dtype"] == dtype
    scaler = ckpt["run"]["scaler"]
    assert (scaler["scale"] == 2.0 ** 16 and scaler["_growth_tracker"] == 8) if dtype == "float16" else scaler == {}
    # parameters stay float32
    assert all(v.dtype is mt.float32 for k, v in ckpt["model"].items() if v.dtype.is_floating_point)


def test_dtype_auto_and_refusals(corpus, tmp_path, capsys, monkeypatch):
    small = ["--data", corpus, "--steps", "2", "--batch-size", "2", "--block-size", "8", "--n-layer", "1",
             "--n-head", "1", "--n-embd", "8", "--quiet", "--eval-every", "2", "--eval-iters", "1",
             "--sample-chars", "5"]
    code, _ = _main(small + ["--out", str(tmp_path / "auto")], capsys)
    assert code == 0 and {r["dtype"] for r in read_metrics(str(tmp_path / "auto"))} == {"float32"}
    with pytest.raises(SystemExit) as e:  # argparse's own one-line error, exit 2
        train.main(small + ["--dtype", "int8", "--out", str(tmp_path / "x")])
    assert e.value.code == 2 and "invalid choice: 'int8'" in capsys.readouterr().err
    prev = mt.cuda.use_simulator(True)
    try:
        # a GPU without bfloat16 (the simulator has it, as sm_80+ GPUs do)
        monkeypatch.setattr(mt.cuda, "is_bf16_supported", lambda including_emulation=True: False)
        code, err = _main(small + ["--device", "cuda", "--dtype", "bfloat16", "--out", str(tmp_path / "y")], capsys)
        assert code == 2 and "does not support bfloat16" in err and "Traceback" not in err
        monkeypatch.undo()
        assert train._resolve_dtype("auto", mt.device("cuda"), None) == "bfloat16"
        code, err = _main(small + ["--device", "cuda", "--dtype", "float16", "--cuda-graph", "--dropout", "0",
                                   "--out", str(tmp_path / "z")], capsys)
        assert code == 2 and "--cuda-graph cannot be used with --dtype float16" in err
    finally:
        mt.cuda.use_simulator(prev)
    monkeypatch.setattr(mt.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert train._resolve_dtype("auto", mt.device("cuda"), None) == "bfloat16"
    assert train._resolve_dtype("auto", mt.device("cpu"), None) == "float32"
