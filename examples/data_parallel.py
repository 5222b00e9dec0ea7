"""Data-parallel training, written as a PyTorch script would be (``import minitorch_gpu as torch``), three ways:

* ``--mode ddp`` (default): ``DistributedDataParallel``, one process per rank, each reading its own shard of
  the data through a ``DistributedSampler``; gradients are averaged during backward;
* ``--mode horovod``: the same processes, but the optimizer is wrapped instead of the model
  (``dist.DistributedOptimizer``), with gradient clipping through ``synchronize()``;
* ``--mode zero``: ``DistributedDataParallel`` with a ``ZeroRedundancyOptimizer``: each rank keeps the AdamW state
  of its own share of the parameters only, and broadcasts that share after stepping it;
* ``--mode dp``: ``nn.DataParallel`` in a single process, the batch split over ``--replicas`` CPU threads.

Launch the first two on N processes with MPI (a plain ``python`` run is a world of one)::

    python -m minitorch_gpu.distributed.run --nproc 2 examples/data_parallel.py --epochs 10
    python -m minitorch_gpu.distributed.run --nproc 2 examples/data_parallel.py --mode horovod
    python -m minitorch_gpu.distributed.run --nproc 2 examples/data_parallel.py --mode zero
    python examples/data_parallel.py --mode dp --replicas 2

The task: three interleaved spiral arms in the plane, an MLP, cross-entropy, AdamW. Every rank builds the
same dataset; the sampler gives each one a disjoint shard (``--batch-size`` is the global batch).
"""
import argparse
import math

import minitorch_gpu as torch
import minitorch_gpu.distributed as dist
import minitorch_gpu.nn as nn
import minitorch_gpu.nn.functional as F
from minitorch_gpu.distributed.optim import ZeroRedundancyOptimizer
from minitorch_gpu.utils.data import DataLoader, DistributedSampler, TensorDataset


def spirals(n_per_class, n_classes, noise, generator):
    """Points on ``n_classes`` spiral arms (with Gaussian noise) and their arm index as the label."""
    t = torch.linspace(0.0, 1.0, n_per_class)
    xs, ys = [], []
    for c in range(n_classes):
        angle = 4.0 * t + 2 * math.pi * c / n_classes
        pts = torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1)
        xs.append(pts + noise * torch.randn(n_per_class, 2, generator=generator))
        ys.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(xs), torch.cat(ys)


def mlp(hidden):
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 3))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["ddp", "horovod", "zero", "dp"], default="ddp")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--samples", type=int, default=400, help="training points per class")
    p.add_argument("--batch-size", type=int, default=64, help="global batch size (split over the ranks)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--replicas", type=int, default=2, help="CPU threads for --mode dp")
    args = p.parse_args(argv)

    dist.init_process_group("mpi")  # rank and world size come from the MPI launcher
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.mode == "dp" and world > 1:
        raise SystemExit("--mode dp is single-process: run it with plain python")

    g = torch.Generator().manual_seed(0)  # the same data on every rank
    x_train, y_train = spirals(args.samples, 3, 0.04, g)
    x_test, y_test = spirals(200, 3, 0.04, g)
    train = TensorDataset(x_train, y_train)
    sampler = DistributedSampler(train, shuffle=True, seed=0)  # this rank's shard, reshuffled every epoch
    loader = DataLoader(train, batch_size=max(1, args.batch_size // world), sampler=sampler)

    torch.manual_seed(1)
    net = mlp(args.hidden)
    if args.mode == "ddp":
        model = nn.parallel.DistributedDataParallel(net)  # broadcasts rank 0's weights
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    elif args.mode == "zero":
        model = nn.parallel.DistributedDataParallel(net)
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=args.lr)
    elif args.mode == "horovod":
        model = net
        opt = dist.DistributedOptimizer(torch.optim.AdamW(net.parameters(), lr=args.lr),
                                        named_parameters=net.named_parameters())
        dist.broadcast_parameters(net.state_dict(), root_rank=0)
        dist.broadcast_optimizer_state(opt, root_rank=0)
    else:
        model = nn.DataParallel(net, device_ids=["cpu"] * args.replicas)
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if rank == 0:
        print(f"{args.mode}: {world} process(es), {len(sampler)} training points per rank and epoch")

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        total = torch.zeros(2)  # loss sum, sample count (summed over ranks for the report)
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if args.mode == "horovod":
                opt.synchronize()  # the averaged gradients, before clipping them
                nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                with opt.skip_synchronize():
                    opt.step()
            else:
                opt.step()
            total += torch.tensor([loss.item() * len(y), float(len(y))])
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch:3d}  train loss {total[0].item() / total[1].item():.4f}")

    with torch.no_grad():
        acc = (net(x_test).argmax(dim=1) == y_test).float().mean().item()
    # every rank ends with the same weights: compare a checksum of them
    sums = [None] * world
    dist.all_gather_object(sums, [p.detach().sum().item() for p in net.parameters()])
    if rank == 0:
        print(f"test accuracy: {acc:.3f}")
        print(f"replicas in sync: {all(s == sums[0] for s in sums)}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
