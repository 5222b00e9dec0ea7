"""Mixed-precision GPT training in the style of the popular single-GPU trainers, as an ordinary PyTorch program:
the device picked by ``torch.cuda.is_available()``, an autocast context chosen by device type (none on the CPU),
``torch.cuda.amp.GradScaler`` enabled only for float16, TF32 switches, ``torch.compile``, fused AdamW when its
signature offers it, batches drawn with NumPy and pinned before an asynchronous copy, gradient accumulation,
clipping after ``unscale_``, a checkpoint with the scaler's state, exact resume, and greedy sampling."""
import argparse
import inspect
from contextlib import nullcontext

import numpy as np
import torch

from tiny_gpt import GPT, Config, deterministic_init, get_lr

ACCUM = 2  # micro-batches per optimizer step
B = 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--resume", default=None)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--compile", type=int, default=1)
    args = ap.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[args.dtype]
    ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

    text = "it was the best of times it was the worst of times it was the age of wisdom " * 8
    chars = sorted(set(text))
    data = np.array([chars.index(c) for c in text], dtype=np.uint16)
    rng = np.random.default_rng(1234)
    cfg = Config(vocab_size=len(chars))
    T = cfg.block_size

    def get_batch():
        ix = rng.integers(len(data) - T - 1, size=B)
        x = torch.stack([torch.from_numpy(data[i:i + T].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + T].astype(np.int64)) for i in ix])
        if device_type == "cuda":
            x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        else:
            x, y = x.to(device), y.to(device)
        return x, y

    it = 0
    model = GPT(cfg)
    deterministic_init(model)
    model.to(device)
    scaler = torch.cuda.amp.GradScaler(enabled=(args.dtype == "float16"))
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    use_fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
    opt = torch.optim.AdamW(groups, lr=3e-3, betas=(0.9, 0.95), **({"fused": True} if use_fused else {}))
    print(f"using fused AdamW: {use_fused}")
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        scaler.load_state_dict(ckpt["scaler"])
        it = ckpt["iter_num"]
        rng.bit_generator.state = ckpt["rng"]
        X, Y = ckpt["batch"][0].to(device), ckpt["batch"][1].to(device)
    else:
        X, Y = get_batch()
    raw_model = model
    if args.compile:
        model = torch.compile(model)

    while it < args.steps:
        for g in opt.param_groups:
            g["lr"] = get_lr(it)
        for _ in range(ACCUM):
            with ctx:
                _, loss = model(X, Y)
                loss = loss / ACCUM
            X, Y = get_batch()  # the next batch while the device works
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        it += 1
        print(f"iter {it} loss {loss.item() * ACCUM:.6f} scale {scaler.get_scale():g}")

    if args.ckpt:
        torch.save({"model": raw_model.state_dict(), "optimizer": opt.state_dict(), "scaler": scaler.state_dict(),
                    "iter_num": it, "model_args": vars(cfg), "rng": rng.bit_generator.state,
                    "batch": (X.cpu(), Y.cpu())}, args.ckpt)
    raw_model.eval()
    with ctx:
        out = raw_model.generate(torch.tensor([[chars.index("t")]], device=device), 24)
    print("sample " + repr("".join(chars[i] for i in out[0].tolist())))


if __name__ == "__main__":
    main()
