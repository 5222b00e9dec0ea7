"""Training and inference side by side with PyTorch: the same models, the same data, one process.

Run ``python -m benchmarks.compare [--device cpu|cuda] [--quick] [--threads N]``. Cases:

* ``mlp train``: a 784-512-512-10 MLP, batch 256, cross-entropy, AdamW (one full step: zero_grad, forward,
  backward, optimizer step);
* ``gpt train``: :class:`minitorch_gpu.models.gpt.GPT` with 2 layers, width 128, 4 heads, sequence 64, batch 8,
  AdamW, against a PyTorch twin of identical structure built here (weights copied from ours);
* ``cnn train``: conv 3->16, BN, ReLU, maxpool, conv 16->32, BN, ReLU, maxpool, linear, batch 32 of 32x32
  images, SGD with momentum;
* ``tiny ops``: 100 ops on 1-element tensors forward + backward (``benchmarks.autograd_overhead``): pure
  framework overhead;
* ``adamw 10M``: one AdamW step over ~10M parameters in 20 tensors (``benchmarks.optim_adamw``);
* ``gpt inference``: the GPT's forward under ``inference_mode``;
* ``resnet train``: a CIFAR-style ResNet (a 3x3 stem, three stages of basic blocks at 16/32/64 channels, the
  later two stride 2 with a 1x1 projection shortcut, global average pooling, linear), batch 32 of 32x32 images,
  SGD with momentum;
* ``lstm lm train``: a word-level language model step (embedding, a 2-layer ``nn.LSTM``, linear head,
  cross-entropy over every position), AdamW;
* ``char transformer train``: a character-level transformer written the way tutorials write it (attention by
  hand with a causal mask, and GELU's tanh approximation spelled out with ``torch.pow(x, 3.0)``), AdamW.

Method: every case is built once per library from the same code (the two libraries share an API), warmed up,
then both sides run interleaved (ours, torch, ours, torch, ...) for ``--rounds`` rounds of ``reps`` calls each,
and the medians are compared: these machines are shared and noisy, and interleaving spreads the noise over both
sides alike. The optimizers use their fused implementation on both sides (``fused=True``), each library's
fastest CPU path. On ``cuda`` every sample ends with a device synchronize.

Threads: both sides get the same count (``--threads``, default 1: on a shared machine one thread per side
gives the steadiest numbers). NumPy's BLAS reads its thread count from the environment when it is loaded, so
this module sets ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS`` at the very top, before
anything imports NumPy or PyTorch; PyTorch gets ``torch.set_num_threads`` as well, and our fused optimizers'
thread pool the same count. The counts actually in effect are read back and reported.

Results: ``benchmarks/results/<device>/compare.json``, ``compare.md`` (case, ours ms, torch ms, ratio ours /
torch: lower is better, 1.0 is parity) and ``compare.png`` (the ratios as bars; needs matplotlib). Without a GPU,
``--device cuda`` says so and exits 0.
"""
import os
import sys

_BLAS_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def _threads_from_argv(argv):
    """The ``--threads`` value, read before argparse (and before NumPy) so the environment can be set."""
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


if __name__ == "__main__":
    # NOTE: must run before the first import of numpy or torch: OpenBLAS and OpenMP size their thread pools
    # from these variables once, when the library loads
    _n = _threads_from_argv(sys.argv[1:])
    for _var in _BLAS_ENV:
        os.environ[_var] = _n
    import minitorch_gpu  # noqa: F401  (its OpenBLAS settings, made before it loads NumPy, as a user's script gets them)

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from minitorch_gpu.backends import _blas  # noqa: E402

from ._report import machine_description, write_results  # noqa: E402

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

# full sizes, and the --quick ones (tiny: the smoke test only checks that everything runs and is written)
SIZES = {
    "full": dict(mlp=(784, 512, 512, 10, 256), gpt=dict(n_layer=2, n_embd=128, n_head=4, T=64, B=8, vocab=256),
                 cnn=(3, 16, 32, 32, 32, 10), tiny_ops=100, adamw=None,
                 resnet=dict(widths=(16, 32, 64), blocks=1, hw=32, B=32, classes=10),
                 lstm=dict(vocab=1000, emb=128, hidden=256, layers=2, T=32, B=16),
                 chartf=dict(vocab=65, n_embd=128, n_head=4, n_layer=2, T=64, B=16)),
    "quick": dict(mlp=(32, 16, 16, 4, 8), gpt=dict(n_layer=1, n_embd=16, n_head=2, T=8, B=2, vocab=16),
                  cnn=(3, 4, 8, 8, 4, 3), tiny_ops=8, adamw=[(16, 8)] * 2,
                  resnet=dict(widths=(4, 8, 8), blocks=1, hw=8, B=4, classes=3),
                  lstm=dict(vocab=16, emb=8, hidden=16, layers=2, T=8, B=2),
                  chartf=dict(vocab=16, n_embd=16, n_head=2, n_layer=1, T=8, B=2)),
}


# ---------------------------------------------------------------------------------------------- libraries

class Lib:
    """One library under test: its module, the device string, and how to wait for it."""

    def __init__(self, name, mod, device):
        self.name = name
        self.mod = mod
        self.device = device

    def sync(self):
        if self.device == "cuda":
            self.mod.cuda.synchronize()

    def tensor(self, arr):
        return self.mod.tensor(arr, device=self.device)


def _load_torch(device):
    try:
        import torch
    except ImportError:
        return None
    if device == "cuda" and not torch.cuda.is_available():
        return None
    return torch


def _to_torch_state(model, torch, device):
    """Our model's state dict as torch tensors on ``device``: the twin starts from identical weights."""
    return {k: torch.from_numpy(np.array(v.detach().cpu().numpy(), copy=True)).to(device)
            for k, v in model.state_dict().items()}


# ---------------------------------------------------------------------------------------------- cases
# Each builder takes (lib, sizes, reference) and returns a step callable. ``reference`` is our side's model
# (None when building ours): the torch side copies its weights so both compute the same numbers.

def _train_step(model, opt, loss_fn, x, y):
    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def build_mlp(lib, sz, ref):
    d_in, h1, h2, d_out, batch = sz["mlp"]
    nn = lib.mod.nn
    model = nn.Sequential(nn.Linear(d_in, h1), nn.ReLU(), nn.Linear(h1, h2), nn.ReLU(), nn.Linear(h2, d_out))
    model = model.to(lib.device)
    if ref is not None:
        model.load_state_dict(_to_torch_state(ref, lib.mod, lib.device))
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((batch, d_in), dtype=np.float32))
    y = lib.tensor(rng.integers(0, d_out, batch))
    opt = lib.mod.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    return model, _train_step(model, opt, nn.functional.cross_entropy, x, y)


def build_cnn(lib, sz, ref):
    c_in, c1, c2, hw, batch, classes = sz["cnn"]
    nn = lib.mod.nn
    model = nn.Sequential(
        nn.Conv2d(c_in, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * (hw // 4) ** 2, classes)).to(lib.device)
    if ref is not None:
        model.load_state_dict(_to_torch_state(ref, lib.mod, lib.device))
    rng = np.random.default_rng(1)
    x = lib.tensor(rng.standard_normal((batch, c_in, hw, hw), dtype=np.float32))
    y = lib.tensor(rng.integers(0, classes, batch))
    opt = lib.mod.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    return model, _train_step(model, opt, nn.functional.cross_entropy, x, y)


def _gpt_config(sz):
    from minitorch_gpu.models.gpt import GPTConfig
    g = sz["gpt"]
    return GPTConfig(vocab_size=g["vocab"], block_size=g["T"], n_layer=g["n_layer"], n_head=g["n_head"],
                     n_embd=g["n_embd"], dropout=0.0, bias=True)


def torch_gpt(torch, cfg):
    """PyTorch twin of :class:`minitorch_gpu.models.gpt.GPT`: the same modules under the same names (dropout
    layers included, at p=0), the same ops in the same order, the lm head tied to the token embedding."""
    nn, F = torch.nn, torch.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.n_head = cfg.n_head
            self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=cfg.bias)
            self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
            self.resid_dropout = nn.Dropout(cfg.dropout)

        def forward(self, x):
            B, T, C = x.shape
            hs = C // self.n_head
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, self.n_head, hs).transpose(1, 2)
            k = k.view(B, T, self.n_head, hs).transpose(1, 2)
            v = v.view(B, T, self.n_head, hs).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=cfg.dropout if self.training else 0.0,
                                               is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=cfg.bias)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=cfg.bias)
            self.dropout = nn.Dropout(cfg.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(cfg.n_embd, bias=cfg.bias)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(cfg.vocab_size, cfg.n_embd), wpe=nn.Embedding(cfg.block_size, cfg.n_embd),
                drop=nn.Dropout(cfg.dropout), h=nn.ModuleList([Block() for _ in range(cfg.n_layer)]),
                ln_f=nn.LayerNorm(cfg.n_embd, bias=cfg.bias)))
            self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
            self.transformer.wte.weight = self.lm_head.weight

        def forward(self, idx, targets=None):
            T = idx.shape[1]
            pos = torch.arange(0, T, dtype=idx.dtype, device=idx.device)
            x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            loss = None
            if targets is not None:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=-1)
            return logits, loss

    return GPT()


def _gpt(lib, sz, ref):
    cfg = _gpt_config(sz)
    ours = getattr(lib.mod, "models", None)
    if ours is not None:
        # this library's own GPT (a second copy of the package, as benchmarks.before_after loads, has its own)
        lib.mod.manual_seed(0)
        model = ours.gpt.GPT(ours.gpt.GPTConfig(**cfg.to_dict())).to(lib.device)
    else:
        model = torch_gpt(lib.mod, cfg).to(lib.device)
    if ref is not None:
        model.load_state_dict(_to_torch_state(ref, lib.mod, lib.device))
    g = sz["gpt"]
    rng = np.random.default_rng(2)
    idx = lib.tensor(rng.integers(0, g["vocab"], (g["B"], g["T"])))
    targets = lib.tensor(rng.integers(0, g["vocab"], (g["B"], g["T"])))
    return model, idx, targets


def build_gpt_train(lib, sz, ref):
    model, idx, targets = _gpt(lib, sz, ref)
    opt = lib.mod.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)

    def step():
        opt.zero_grad()
        _, loss = model(idx, targets)
        loss.backward()
        opt.step()
        return loss
    return model, step


def build_gpt_inference(lib, sz, ref):
    model, idx, _ = _gpt(lib, sz, ref)
    model.eval()
    mod = lib.mod

    def step():
        with mod.inference_mode():
            logits, _ = model(idx)
        return logits
    return model, step


def build_tiny_ops(lib, sz, ref):
    from .autograd_overhead import chain
    a = lib.mod.ones(1, requires_grad=True, device=lib.device)
    n = sz["tiny_ops"]
    return None, lambda: chain(lib.mod, a, n)


def build_adamw(lib, sz, ref):
    from . import optim_adamw
    shapes = sz["adamw"] or optim_adamw.SHAPES
    weights, grads = optim_adamw._arrays(0, shapes)
    if ref is None:
        return None, optim_adamw._ours(weights, grads, lib.device, fused=True)
    return None, optim_adamw._torch(lib.mod, weights, grads, lib.device, fused=True)


def _copy_weights(model, lib, ref):
    if ref is not None:
        model.load_state_dict(_to_torch_state(ref, lib.mod, lib.device))


def resnet(lib, widths, blocks, classes):
    """A CIFAR-style ResNet from basic blocks (two 3x3 conv + BN, identity or 1x1-conv shortcut), the same code for
    either library."""
    nn, F = lib.mod.nn, lib.mod.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.shortcut = nn.Sequential()
            if stride != 1 or c_in != c_out:
                self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                              nn.BatchNorm2d(c_out))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, widths[0], 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(widths[0])
            layers, c_in = [], widths[0]
            for i, w in enumerate(widths):
                for j in range(blocks):
                    layers.append(BasicBlock(c_in, w, 2 if i > 0 and j == 0 else 1))
                    c_in = w
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(c_in, classes)

        def forward(self, x):
            out = self.layers(F.relu(self.bn1(self.conv1(x))))
            return self.fc(self.pool(out).flatten(1))

    return ResNet()


def build_resnet(lib, sz, ref):
    r = sz["resnet"]
    lib.mod.manual_seed(0)
    model = resnet(lib, r["widths"], r["blocks"], r["classes"]).to(lib.device)
    _copy_weights(model, lib, ref)
    rng = np.random.default_rng(3)
    x = lib.tensor(rng.standard_normal((r["B"], 3, r["hw"], r["hw"]), dtype=np.float32))
    y = lib.tensor(rng.integers(0, r["classes"], r["B"]))
    opt = lib.mod.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, fused=True)
    return model, _train_step(model, opt, lib.mod.nn.functional.cross_entropy, x, y)


def lstm_lm(lib, vocab, emb, hidden, layers):
    """Embedding, a multi-layer LSTM, a linear head over the vocabulary: the same code for either library."""
    nn = lib.mod.nn

    class LSTMLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, emb)
            self.lstm = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, idx):
            out, _ = self.lstm(self.embed(idx))
            return self.head(out)

    return LSTMLM()


def _token_lm_step(lib, model, ref, c, seed, lr, flatten):
    """A next-token training step of ``model`` on a random (B, T) batch of ``c``'s vocabulary, AdamW, the logits
    flattened by their ``flatten`` method ("view" or "reshape", as the model's authors write it) for the loss."""
    model = model.to(lib.device)
    _copy_weights(model, lib, ref)
    rng = np.random.default_rng(seed)
    idx = lib.tensor(rng.integers(0, c["vocab"], (c["B"], c["T"])))
    targets = lib.tensor(rng.integers(0, c["vocab"], (c["B"] * c["T"],)))
    opt = lib.mod.optim.AdamW(model.parameters(), lr=lr, fused=True)
    F = lib.mod.nn.functional

    def loss_fn(logits, y):
        return F.cross_entropy(getattr(logits, flatten)(-1, logits.shape[-1]), y)
    return model, _train_step(model, opt, loss_fn, idx, targets)


def build_lstm(lib, sz, ref):
    c = sz["lstm"]
    lib.mod.manual_seed(0)
    model = lstm_lm(lib, c["vocab"], c["emb"], c["hidden"], c["layers"])
    return _token_lm_step(lib, model, ref, c, 4, 1e-3, "reshape")


def char_transformer(lib, vocab, n_embd, n_head, n_layer, block):
    """A character-level transformer as a tutorial writes it: attention by hand (q k^T / sqrt(d), a causal mask
    filled with -inf, softmax, times v) and the tanh-GELU spelled out with ``pow``: the same code for either
    library."""
    mod = lib.mod
    nn, F = mod.nn, mod.nn.functional

    def new_gelu(x):
        return 0.5 * x * (1.0 + mod.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * mod.pow(x, 3.0))))

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("mask", mod.triu(mod.ones(block, block, dtype=mod.bool), diagonal=1))

        def forward(self, x):
            B, T, C = x.shape
            hs = C // n_head
            q, k, v = self.qkv(x).split(C, dim=2)
            q = q.view(B, T, n_head, hs).transpose(1, 2)
            k = k.view(B, T, n_head, hs).transpose(1, 2)
            v = v.view(B, T, n_head, hs).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(n_embd)
            self.attn = Head()
            self.ln2 = nn.LayerNorm(n_embd)
            self.fc = nn.Linear(n_embd, 4 * n_embd)
            self.out = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.out(new_gelu(self.fc(self.ln2(x))))

    class CharTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, n_embd)
            self.pos = nn.Embedding(block, n_embd)
            self.blocks = nn.Sequential(*[Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab)

        def forward(self, idx):
            T = idx.shape[1]
            x = self.tok(idx) + self.pos(mod.arange(T, device=idx.device))
            return self.head(self.ln_f(self.blocks(x)))

    return CharTransformer()


def build_char_transformer(lib, sz, ref):
    c = sz["chartf"]
    lib.mod.manual_seed(0)
    model = char_transformer(lib, c["vocab"], c["n_embd"], c["n_head"], c["n_layer"], c["T"])
    return _token_lm_step(lib, model, ref, c, 5, 3e-4, "view")


CASES = {
    "mlp train": build_mlp,
    "gpt train": build_gpt_train,
    "cnn train": build_cnn,
    "tiny ops": build_tiny_ops,
    "adamw 10M": build_adamw,
    "gpt inference": build_gpt_inference,
    "resnet train": build_resnet,
    "lstm lm train": build_lstm,
    "char transformer train": build_char_transformer,
}


def describe(sz):
    """One line per case saying what it runs at these sizes."""
    d_in, h1, h2, d_out, b = sz["mlp"]
    g = sz["gpt"]
    c_in, c1, c2, hw, cb, classes = sz["cnn"]
    shapes = sz["adamw"]
    r, lm, tf = sz["resnet"], sz["lstm"], sz["chartf"]
    n_adam = sum(int(np.prod(s)) for s in shapes) if shapes else 9_994_240
    gpt = f"{g['n_layer']} layers, width {g['n_embd']}, {g['n_head']} heads, seq {g['T']}, batch {g['B']}, vocab {g['vocab']}"
    return {
        "mlp train": f"MLP {d_in}-{h1}-{h2}-{d_out}, batch {b}, cross-entropy, AdamW step",
        "gpt train": f"GPT {gpt}, AdamW step",
        "cnn train": f"CNN conv {c_in}->{c1}->{c2}, BN, ReLU, maxpool, linear, batch {cb} of {hw}x{hw}, SGD momentum",
        "tiny ops": f"{sz['tiny_ops']} ops on 1-element tensors, forward + backward",
        "adamw 10M": f"AdamW step, {n_adam / 1e6:.2f}M parameters in {len(shapes) if shapes else 20} tensors",
        "gpt inference": f"GPT forward under inference_mode, {gpt}",
        "resnet train": (f"ResNet, basic blocks x{r['blocks']} per stage at widths {r['widths']}, batch {r['B']} of "
                         f"{r['hw']}x{r['hw']}, {r['classes']} classes, SGD momentum"),
        "lstm lm train": (f"LSTM LM: embedding {lm['emb']}, {lm['layers']}-layer LSTM of {lm['hidden']}, vocab "
                          f"{lm['vocab']}, seq {lm['T']}, batch {lm['B']}, AdamW step"),
        "char transformer train": (f"char transformer, {tf['n_layer']} layers, width {tf['n_embd']}, {tf['n_head']} "
                                   f"heads, seq {tf['T']}, batch {tf['B']}, vocab {tf['vocab']}, hand-written "
                                   "attention and pow-GELU, AdamW step"),
    }


# ---------------------------------------------------------------------------------------------- timing

def _time(step, reps, lib):
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    lib.sync()
    return (time.perf_counter() - t0) / reps


def _reps_for(steps, libs, target_s, quick, reps=None):
    """Calls per sample: ``reps`` when given, else enough for the slower side to run about ``target_s`` (timer
    resolution and per-sample noise stop mattering; one call with ``quick``, a smoke run), the same count for both
    sides."""
    if reps is not None:
        return reps
    if quick:
        return 1
    slowest = max(_time(steps[lib.name], 1, lib) for lib in libs)
    return max(1, min(200, int(target_s / max(slowest, 1e-6))))


def _loss_value(out):
    if out is None:
        return None
    try:
        return float(out.detach().float().sum().item()) if out.dim() else float(out.item())
    except (AttributeError, RuntimeError, TypeError):
        return None


def run_case(name, libs, sz, rounds, warmup, target_s, quick, reps=None, settle=0.0):
    steps, first = {}, {}
    ref = None
    for lib in libs:
        model, step = CASES[name](lib, sz, ref)
        if ref is None:
            ref = model
        steps[lib.name] = step
    for lib in libs:
        step = steps[lib.name]
        # the first call shows that both sides compute the same thing (identical weights and data)
        first[lib.name] = _loss_value(step())
        for _ in range(warmup):
            step()
        lib.sync()
    reps = _reps_for(steps, libs, target_s, quick, reps)
    samples = {lib.name: [] for lib in libs}
    for r in range(rounds):
        # alternate who goes first so that neither side always runs right after the other's allocations
        order = libs if r % 2 == 0 else libs[::-1]
        for lib in order:
            if settle:
                # the other side's idle worker threads spin for a while after its last call (OpenBLAS's, the
                # OpenMP pool's): with every core in use, the next sample would run against them
                time.sleep(settle)
            samples[lib.name].append(_time(steps[lib.name], reps, lib))
    row = {"case": name, "reps": reps, "rounds": rounds}
    for lib in libs:
        s = samples[lib.name]
        row[f"{lib.name}_ms"] = statistics.median(s) * 1e3
        row[f"{lib.name}_min_ms"] = min(s) * 1e3
        row[f"{lib.name}_first_output"] = first[lib.name]
    row["ratio"] = row["ours_ms"] / row["torch_ms"] if "torch_ms" in row else None
    return row


# ---------------------------------------------------------------------------------------------- threads

def setup_threads(n, torch, device):
    import minitorch_gpu as mt
    be = mt.zeros(1, device=device)._be
    be.optim_threads = n
    info = {"requested": n, "env": {v: os.environ.get(v) for v in _BLAS_ENV},
            "numpy_blas": _blas.threads(), "numpy_blas_core": _blas.core(), "ours_optim_pool": be._optim_threads()}
    if torch is not None:
        torch.set_num_threads(n)
        info["torch"] = torch.get_num_threads()
    return info


# ---------------------------------------------------------------------------------------------- report

def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def markdown(res):
    th = res["threads"]
    pause = f", a {res['settle_s']:g} s pause before each sample" if res.get("settle_s") else ""
    lines = [f"# minitorch_gpu vs PyTorch on {res['device']}{' (quick sizes)' if res['quick'] else ''}", "",
             f"minitorch_gpu {res['versions']['minitorch_gpu']} (NumPy {res['versions']['numpy']}), "
             f"PyTorch {res['versions'].get('torch', 'not installed')}. "
             f"Threads: NumPy BLAS {th['numpy_blas']} ({th.get('numpy_blas_core')} kernels), our optimizer pool {th['ours_optim_pool']}, "
             f"torch {th.get('torch', '-')} (requested {th['requested']}). "
             f"Medians of {res['rounds']} interleaved rounds{pause}; ratio = ours / torch (lower is better, 1.00 is parity). "
             f"Machine: {res.get('machine', 'not recorded')}.",
             "", "| case | ours (ms) | torch (ms) | ratio |", "|---|---:|---:|---:|"]
    for r in res["cases"]:
        torch_ms = f"{r['torch_ms']:.3f}" if r.get("torch_ms") is not None else "-"
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "-"
        lines.append(f"| {r['case']} | {r['ours_ms']:.3f} | {torch_ms} | {ratio} |")
    if res.get("geomean_ratio"):
        lines.append(f"| **geometric mean** | | | **{res['geomean_ratio']:.2f}** |")
    lines += ["", "Cases:", ""] + [f"- {k}: {v}" for k, v in res["descriptions"].items() if
                                    any(r["case"] == k for r in res["cases"])]
    return "\n".join(lines) + "\n"


def plot(res, path):
    """The ratios as horizontal bars, parity marked; returns False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [r for r in res["cases"] if r.get("ratio")]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.6))
    names = [r["case"] for r in rows][::-1]
    vals = [r["ratio"] for r in rows][::-1]
    bars = ax.barh(names, vals, color="#4878a8")
    for b, v in zip(bars, vals):
        ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {v:.2f}x", va="center", fontsize=9)
    ax.axvline(1.0, color="#303030", linestyle="--", linewidth=1, label="parity")
    ax.set_xlabel("time ours / time PyTorch (lower is better)")
    ax.set_xlim(0, max(vals + [1.0]) * 1.2)
    gm = res.get("geomean_ratio")
    ax.set_title(f"minitorch_gpu vs PyTorch, {res['device']}, {res['threads']['requested']} thread(s)"
                 + (f", geometric mean {gm:.2f}x" if gm else ""))
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------- main

def run(args):
    import minitorch_gpu as mt
    device = args.device
    if device == "cuda" and (not mt.cuda.is_available() or mt.cuda.is_simulated()):
        print("benchmarks.compare: no GPU (CuPy with a CUDA device is required; the simulator is not timed). "
              "Nothing to measure on cuda.")
        return 0
    torch = _load_torch(device)
    if torch is None:
        print(f"PyTorch{' with CUDA' if device == 'cuda' else ''} is not installed: timing ours only.")
    threads = setup_threads(args.threads, torch, device)
    if threads["numpy_blas"] not in (None, args.threads):
        print(f"warning: NumPy's BLAS runs {threads['numpy_blas']} threads, not {args.threads}: it was loaded before "
              "this module could set the environment (run it as `python -m benchmarks.compare`)")
    libs = [Lib("ours", mt, device)] + ([Lib("torch", torch, device)] if torch is not None else [])
    sz = SIZES["quick" if args.quick else "full"]
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 15)
    names = [n.replace("_", " ") for n in args.cases] if args.cases else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; choose from {list(CASES)}")
    print(f"threads: NumPy BLAS {threads['numpy_blas']}, ours optim pool {threads['ours_optim_pool']}, "
          f"torch {threads.get('torch', '-')}")
    settle = args.settle if args.settle is not None else (0.3 if args.threads > 1 and device == "cpu" else 0.0)
    rows = []
    for name in names:
        row = run_case(name, libs, sz, rounds, 0 if args.quick and args.reps is None else 2, args.target_ms / 1e3,
                       args.quick, args.reps, settle)
        rows.append(row)
        ratio = f"{row['ratio']:.2f}x" if row["ratio"] else "-"
        torch_ms = f"{row['torch_ms']:9.3f}" if "torch_ms" in row else "        -"
        print(f"{name:14s} ours {row['ours_ms']:9.3f} ms  torch {torch_ms} ms  ratio {ratio}", flush=True)
    from minitorch_gpu.backends import numpy_backend
    res = {"device": device, "quick": args.quick, "rounds": rounds, "threads": threads, "settle_s": settle,
           # glibc's malloc told to keep freed memory (see minitorch_gpu/backends/numpy_backend.py): a
           # process-wide setting, so both sides run with it
           "malloc_keeps_freed_memory": numpy_backend.KEEPS_FREED_MEMORY,
           "versions": {"minitorch_gpu": getattr(mt, "__version__", "dev"), "numpy": np.__version__,
                        "python": sys.version.split()[0]},
           "descriptions": describe(sz), "cases": rows,
           "geomean_ratio": geomean([r["ratio"] for r in rows]),
           "max_ratio": max((r["ratio"] for r in rows if r["ratio"]), default=None)}
    if torch is not None:
        res["versions"]["torch"] = torch.__version__
    res["machine"] = machine_description()  # after the run: its load average covers the run
    folder = os.path.join(args.out, device)
    stem = "compare" + (f"_{args.suffix}" if args.suffix else "")
    md = markdown(res)
    write_results(folder, stem, res, md)
    if torch is not None and not plot(res, os.path.join(folder, stem + ".png")):
        print("matplotlib is not installed: no chart written")
    print()
    print(md)
    print(f"results in {folder}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--quick", action="store_true", help="tiny sizes and 2 rounds: checks that everything runs")
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS / intra-op threads for both sides (set in the environment before NumPy loads)")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 15, 2 with --quick)")
    p.add_argument("--target-ms", type=float, default=60.0, help="time per sample; sets the calls per sample")
    p.add_argument("--reps", type=int, default=None,
                   help="calls per sample (default: from --target-ms; 1 with --quick). `--quick --reps 50` times the "
                        "quick sizes properly instead of smoke-testing them")
    p.add_argument("--cases", nargs="*", help=f"a subset of: {', '.join(CASES)}")
    p.add_argument("--out", default=RESULTS, help="results folder (a subfolder per device is made)")
    p.add_argument("--suffix", default="", help="write compare_<suffix>.* instead of compare.*")
    p.add_argument("--settle", type=float, default=None,
                   help="seconds of pause before each sample, so that the other side's spinning worker threads "
                        "are asleep (default 0.3 with more than one CPU thread, else 0)")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
