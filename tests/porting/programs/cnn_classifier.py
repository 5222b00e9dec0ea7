"""A small image classifier trained the way tutorial scripts do it: a synthetic image dataset behind a Dataset
with a normalising transform, a DataLoader, a CNN of Conv2d / BatchNorm2d / ReLU / MaxPool2d / Dropout /
Linear, SGD with Nesterov momentum and weight decay, a MultiStepLR schedule, train/eval modes, accuracy under
no_grad, and a checkpoint of the model and the optimizer."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Shapes(Dataset):
    """16x16 single-channel images of three classes (a bright row, column or diagonal), deterministic."""

    def __init__(self, n, offset=0):
        self.n, self.offset = n, offset

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        i += self.offset
        label = i % 3
        img = torch.zeros(1, 16, 16)
        k = (i * 7) % 16
        if label == 0:
            img[0, k, :] = 1.0
        elif label == 1:
            img[0, :, k] = 1.0
        else:
            img[0] = torch.eye(16)
        img = img + 0.1 * torch.sin(torch.arange(256, dtype=torch.float32) * (0.13 + 0.01 * (i % 5))).view(1, 16, 16)
        return (img - 0.1) / 0.3, label


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.drop = nn.Dropout(0.0)
        self.fc = nn.Linear(16 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


def deterministic_init(model):
    with torch.no_grad():
        for i, (name, p) in enumerate(sorted(model.named_parameters())):
            if "bn" in name:
                continue
            p.copy_((torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 1.3 + i) * 0.2).reshape(p.shape))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--resume", default=None)
    args = ap.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = Net()
    deterministic_init(model)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[6, 9], gamma=0.3)
    step = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        step = ckpt["step"]

    train = DataLoader(Shapes(96), batch_size=16, shuffle=False)
    batches = [b for b in train]
    criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
    while step < args.steps:
        model.train()
        x, y = batches[step % len(batches)]
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        print(f"step {step} loss {loss.item():.6f}")

    if args.ckpt:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "step": step}, args.ckpt)

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in DataLoader(Shapes(48, offset=1000), batch_size=24):
            pred = model(x.to(device)).argmax(dim=1)
            correct += (pred == y.to(device)).sum().item()
            total += y.numel()
    print(f"sample accuracy {correct / total:.4f}")


if __name__ == "__main__":
    main()
