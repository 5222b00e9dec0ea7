"""Classification, written exactly as a PyTorch script would be, with one changed line:
``import minitorch_gpu as torch``.

Three interleaved spiral arms in the plane, an MLP, cross-entropy, Adam, a DataLoader over a random
train/validation split, a checkpoint saved and loaded back. Runs in seconds on a CPU:

    python examples/classify.py --epochs 20
"""
import argparse
import math
import os
import tempfile

import minitorch_gpu as torch
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from minitorch_gpu.utils.data import DataLoader, TensorDataset, random_split


def spirals(n_per_class, n_classes, noise, generator):
    """Points on ``n_classes`` spiral arms (with Gaussian noise) and their arm index as the label."""
    t = torch.linspace(0.0, 1.0, n_per_class)
    xs, ys = [], []
    for c in range(n_classes):
        angle = 4.0 * t + 2 * math.pi * c / n_classes
        radius = t
        pts = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
        xs.append(pts + noise * torch.randn(n_per_class, 2, generator=generator))
        ys.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


class MLP(nn.Module):
    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_in, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_out),
        )

    def forward(self, x):
        return self.net(x)


def evaluate(model, loader, device):
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(dim=1) == y).sum().item()
            total += y.numel()
    model.train()
    return loss_sum / total, correct / total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--samples", type=int, default=300, help="points per class")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    g = torch.Generator().manual_seed(args.seed)
    x, y = spirals(args.samples, 3, noise=0.03, generator=g)
    train_set, val_set = random_split(TensorDataset(x, y), [0.8, 0.2], generator=g)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    val_loader = DataLoader(val_set, batch_size=256)

    device = torch.device(args.device)
    model = MLP(2, args.hidden, 3).to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=max(args.epochs // 3, 1), gamma=0.5)

    for epoch in range(1, args.epochs + 1):
        running = 0.0
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            running += loss.item() * yb.numel()
        scheduler.step()
        if epoch == 1 or epoch % 10 == 0 or epoch == args.epochs:
            val_loss, val_acc = evaluate(model, val_loader, device)
            print(f"epoch {epoch:3d}  train loss {running / len(train_set):.4f}  val loss {val_loss:.4f}  "
                  f"val accuracy {val_acc:.3f}")

    # save and restore the weights the way a PyTorch script does
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "classifier.pt")
        torch.save(model.state_dict(), path)
        restored = MLP(2, args.hidden, 3).to(device)
        restored.load_state_dict(torch.load(path))
    _, acc = evaluate(restored, val_loader, device)
    print(f"accuracy of the reloaded model: {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()
