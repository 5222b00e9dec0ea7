"""A character-level LSTM language model, written as an ordinary PyTorch program: a text corpus, a Dataset of
windows, a DataLoader, Embedding -> 2-layer LSTM -> Linear, Adam with gradient clipping and a step LR schedule,
a checkpoint with the model, the optimizer, the scheduler and the step, resume, and greedy sampling."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

TEXT = ("the quick brown fox jumps over the lazy dog while the small cat sleeps in the warm sun "
        "and the old man reads a book by the window as the rain falls softly on the roof ") * 4


class Windows(Dataset):
    def __init__(self, data, block):
        self.data, self.block = data, block

    def __len__(self):
        return len(self.data) - self.block - 1

    def __getitem__(self, i):
        chunk = self.data[i:i + self.block + 1]
        return chunk[:-1], chunk[1:]


class CharLSTM(nn.Module):
    def __init__(self, vocab, emb=16, hidden=32, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None):
        out, state = self.lstm(self.emb(idx), state)
        return self.head(out), state


def deterministic_init(model):
    # the same starting weights in any library, without depending on its random number generator
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            n = p.numel()
            p.copy_((torch.sin(torch.arange(n, dtype=torch.float32) * 0.37 + i) * (0.3 / math.sqrt(max(1, p.shape[-1]))))
                    .reshape(p.shape))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--ckpt", default=None, help="where to save the checkpoint at the end")
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"

    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    loader = DataLoader(Windows(data, 24), batch_size=8, shuffle=False, drop_last=True)

    model = CharLSTM(len(chars))
    deterministic_init(model)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=6, gamma=0.7)
    step = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        step = ckpt["step"]

    model.train()
    batches = iter(loader)
    for _ in range(step):  # the data position is a function of the step: skip what the first run consumed
        next(batches)
    while step < args.steps:
        x, y = next(batches)
        x, y = x.to(device), y.to(device)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        print(f"step {step} loss {loss.item():.6f} lr {sched.get_last_lr()[0]:.6f}")

    if args.ckpt:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "step": step, "vocab": chars}, args.ckpt)

    model.eval()
    with torch.no_grad():
        idx = torch.tensor([[stoi["t"]]], device=device)
        out, state = [], None
        for _ in range(30):
            logits, state = model(idx, state)
            idx = logits[:, -1].argmax(dim=-1, keepdim=True)
            out.append(chars[idx.item()])
    print("sample " + repr("t" + "".join(out)))


if __name__ == "__main__":
    main()
