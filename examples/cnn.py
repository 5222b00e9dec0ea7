"""A small convolutional network: tell apart images of horizontal bars, vertical bars and diagonal lines.

The images (16x16, one channel, a randomly placed shape plus noise) are generated on the fly by a
``Dataset``; ``Conv2d`` / ``BatchNorm2d`` / ``MaxPool2d`` layers extract features and a ``Linear`` layer
classifies them. Runs in seconds on a CPU:

    python examples/cnn.py --epochs 3
"""
import argparse

import minitorch_gpu as torch
import minitorch_gpu.nn as nn
from minitorch_gpu.utils.data import DataLoader, Dataset

SIZE = 16
CLASSES = ("horizontal", "vertical", "diagonal")


class Shapes(Dataset):
    """Sample ``i`` is always the same image: it is drawn from a generator seeded with ``seed + i``."""

    def __init__(self, n, seed, noise=0.3):
        self.n, self.seed, self.noise = n, seed, noise

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(f"index {i} out of range for {self.n} images")
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        label = int(torch.randint(0, 3, (), generator=g))
        pos = int(torch.randint(2, SIZE - 2, (), generator=g))
        img = torch.zeros(SIZE, SIZE)
        if label == 0:
            img[pos, 2:-2] = 1.0
        elif label == 1:
            img[2:-2, pos] = 1.0
        else:
            idx = torch.arange(2, SIZE - 2)
            img[idx, (idx + pos) % SIZE] = 1.0
        img += self.noise * torch.randn(SIZE, SIZE, generator=g)
        return img.unsqueeze(0), label


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2),                                                    # 8 x 8
        nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2),                                                    # 4 x 4
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, len(CLASSES)),
    )


def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x.to(device)).argmax(1)
            correct += (pred == y.to(device)).sum().item()
            total += y.numel()
    model.train()
    return correct / total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train-size", type=int, default=1200)
    p.add_argument("--test-size", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    train_loader = DataLoader(Shapes(args.train_size, seed=args.seed), batch_size=args.batch_size, shuffle=True,
                              num_workers=args.num_workers)
    test_loader = DataLoader(Shapes(args.test_size, seed=args.seed + 1), batch_size=100)
    model = make_model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    print(f"{sum(p.numel() for p in model.parameters())} parameters; chance accuracy {1 / len(CLASSES):.3f}")

    for epoch in range(1, args.epochs + 1):
        total, count = 0.0, 0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * y.numel()
            count += y.numel()
        acc = accuracy(model, test_loader, device)
        print(f"epoch {epoch}  train loss {total / count:.4f}  test accuracy {acc:.3f}")
    acc = accuracy(model, test_loader, device)
    print(f"final test accuracy: {acc:.3f}")
    return acc


if __name__ == "__main__":
    main()
