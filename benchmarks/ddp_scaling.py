"""DistributedDataParallel on the CPU: a training step on 1 and 2 processes, and how much of the gradient
all-reduce is hidden behind backward.

Run ``python -m benchmarks.ddp_scaling`` (it starts itself under ``mpiexec -n 1`` and ``-n 2``). The model
is an MLP of ``--depth`` square ``--width`` layers; every rank gets ``--batch`` samples (weak scaling: two
processes train on twice the data per step). Each rank uses one BLAS thread, so two ranks use two cores.

For every world size it reports the median step time (zero_grad + forward + backward + SGD step) and the
throughput, for DDP with buckets of ``--bucket-cap-mb`` (``overlap``), for DDP with a single bucket (its
all-reduce can only start once backward has ended: the no-overlap baseline), and for the same step without
any communication (``compute_only``: DDP under ``no_sync``). The variants run interleaved, step by step, the
ranks aligned by a barrier before each step. With two ranks it also reports:

* ``comm_s``: the time the step's buckets take to all-reduce when nothing else runs (blocking, one after
  another): what communication would add to a step if none of it overlapped backward;
* ``exposed_s``: the all-reduce time left when backward had ended on every rank, i.e. the end-of-backward
  wait of the last rank to finish (an earlier rank also waits for that one);
* ``hidden_fraction`` = 1 - exposed / comm: the share of the all-reduce time hidden behind backward.

With two ranks it also measures what the cross-rank fingerprint check of every collective costs (one small
all-reduce before each, on by default; ``MINITORCH_DISTRIBUTED_CHECKS=0`` turns it off): the ``overlap`` DDP
step again on a process group made without the check (``overlap_unchecked``, interleaved with the others),
their ratio (``check.step_overhead``; ``check.step_overhead_paired`` is the median of the per-step ratios of the
two, which ran in the same rounds), a one-element all-reduce on either group (``check.tiny_*_us``), and
from these the share of a step the checks take (``check.estimated_overhead``: the extra time of one checked
collective times the buckets, over the unchecked step), which the noise of a shared machine cannot hide.

The single-bucket baseline shows what this measurement reports when nothing can overlap (a late rank finds
its peer's part of the all-reduce already under way, so it is not exactly 0). ``added_to_compute_s`` (step
time minus the compute-only step) is the end-to-end cost; on a machine shared with other work it is noisier
than the in-backward measurement. Results go to ``benchmarks/results/cpu/ddp_scaling.json``.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "cpu", "ddp_scaling.json")


def _worker(args):
    import minitorch_gpu as mt
    import minitorch_gpu.distributed as dist
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()

    def build(bucket_cap_mb, group=None):
        mt.manual_seed(0)
        layers = []
        for _ in range(args.depth):
            layers += [mt.nn.Linear(args.width, args.width), mt.nn.Tanh()]
        net = mt.nn.Sequential(*layers)
        model = mt.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=bucket_cap_mb, process_group=group)
        return net, model, mt.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    # a group reads the check setting when it is made: this one runs its collectives unchecked
    previous = os.environ.get("MINITORCH_DISTRIBUTED_CHECKS")
    os.environ["MINITORCH_DISTRIBUTED_CHECKS"] = "0"
    unchecked = dist.new_group()
    if previous is None:
        del os.environ["MINITORCH_DISTRIBUTED_CHECKS"]
    else:
        os.environ["MINITORCH_DISTRIBUTED_CHECKS"] = previous

    g = mt.Generator().manual_seed(rank)
    x = mt.randn(args.batch, args.width, generator=g)
    y = mt.randn(args.batch, args.width, generator=g)
    configs = {"overlap": build(args.bucket_cap_mb), "single_bucket": build(1e6),
               "overlap_unchecked": build(args.bucket_cap_mb, unchecked)}

    def step(model, opt, sync=True):
        dist.barrier()  # the ranks start every timed step together
        t0 = time.perf_counter()
        opt.zero_grad()
        if sync:
            mt.nn.functional.mse_loss(model(x), y).backward()
        else:
            with model.no_sync():
                mt.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        return time.perf_counter() - t0

    # interleaved (A B C A B C ...) so that the machine's drift hits every variant alike
    times = {label: [] for label in [*configs, "compute_only"]}
    waits = {label: [] for label in configs}
    for i in range(args.warmup + args.steps):
        for label, (net, model, opt) in configs.items():
            dt = step(model, opt)
            # a rank that finishes backward early also waits for its slower peer; the last rank to finish
            # waits for the communication alone: per step, the smallest wait over the ranks is what the
            # all-reduces still needed once backward was over everywhere
            every = [None] * world
            dist.all_gather_object(every, model._reducer.stats["comm_wait_s"])
            if i >= args.warmup:
                times[label].append(dt)
                waits[label].append(min(every))
        net, model, opt = configs["overlap"]
        dt = step(model, opt, sync=False)  # the same work without any communication
        if i >= args.warmup:
            times["compute_only"].append(dt)
    # the buckets all-reduced with nothing else running: the communication one step needs
    comm = {}
    for label, (net, model, opt) in configs.items():
        buckets = [b.flat for b in model._reducer.buckets]
        ts = []
        for i in range(args.warmup + args.steps):
            dist.barrier()
            t0 = time.perf_counter()
            for b in buckets:
                dist.all_reduce(b, group=model.process_group)
            if i >= args.warmup:
                ts.append(time.perf_counter() - t0)
        comm[label] = statistics.median(ts)
    # the check alone: a one-element all-reduce on the checked and on the unchecked group, in interleaved blocks
    tiny = {"checked": [], "unchecked": []}
    one = mt.zeros(1)
    for i in range(args.warmup + args.steps):
        for label, group in (("checked", None), ("unchecked", unchecked)):
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(100):
                dist.all_reduce(one, group=group)
            if i >= args.warmup:
                tiny[label].append((time.perf_counter() - t0) / 100)
    out = {"world": world, "params": sum(p.numel() for p in configs["overlap"][0].parameters())}
    base = statistics.median(times["compute_only"])
    out["compute_only"] = {"step_s": base, "samples_per_s": world * args.batch / base}
    for label, (net, model, opt) in configs.items():
        med = statistics.median(times[label])
        res = {"buckets": len(model._reducer.buckets), "step_s": med, "samples_per_s": world * args.batch / med,
               "added_to_compute_s": med - base}
        if world > 1:
            exposed = statistics.median(waits[label])
            res.update(comm_s=comm[label], exposed_s=exposed, hidden_fraction=max(0.0, 1.0 - exposed / comm[label]))
        out[label] = res
    if world > 1:
        # the step times carry the machine's noise; the estimate is the check's own time (one small all-reduce
        # per bucket) over the step, which noise cannot hide
        checked, unchecked_step = out["overlap"]["step_s"], out["overlap_unchecked"]["step_s"]
        per_check = statistics.median(tiny["checked"]) - statistics.median(tiny["unchecked"])
        # the two variants ran in every round: the median of the per-round ratios cancels the
        # drift that the ratio of two medians keeps
        paired = statistics.median(a / b for a, b in zip(times["overlap"], times["overlap_unchecked"]))
        out["check"] = {"step_s_checked": checked, "step_s_unchecked": unchecked_step,
                        "step_overhead": checked / unchecked_step - 1.0,
                        "step_overhead_paired": paired - 1.0,
                        "tiny_checked_us": statistics.median(tiny["checked"]) * 1e6,
                        "tiny_unchecked_us": statistics.median(tiny["unchecked"]) * 1e6,
                        "estimated_overhead": per_check * out["overlap"]["buckets"] / unchecked_step}
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--batch", type=int, default=128, help="samples per rank and step")
    p.add_argument("--bucket-cap-mb", type=float, default=4.0, dest="bucket_cap_mb")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--worlds", default="1,2", help="comma-separated numbers of processes")
    p.add_argument("--json", default=RESULTS, help="where to write the results")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _worker(args)
        return
    from minitorch_gpu.distributed.run import find_mpiexec
    mpiexec = find_mpiexec()
    # two ranks need two idle cores to scale: record how busy the machine was
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    runs = []
    for world in [int(w) for w in args.worlds.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            cmd = [mpiexec, "-n", str(world), sys.executable, "-m", "benchmarks.ddp_scaling", "--worker",
                   "--out", out, "--width", str(args.width), "--depth", str(args.depth), "--batch", str(args.batch),
                   "--bucket-cap-mb", str(args.bucket_cap_mb), "--steps", str(args.steps), "--warmup",
                   str(args.warmup)]
            subprocess.run(cmd, check=True, env=env, cwd=ROOT)
            with open(out) as f:
                runs.append(json.load(f))
    base = runs[0]["compute_only"]["samples_per_s"]
    print(f"MLP {args.depth} x Linear({args.width}, {args.width}) ({runs[0]['params'] / 1e6:.1f}M params, "
          f"{runs[0]['params'] * 4 / 2**20:.0f} MiB of gradients), {args.batch} samples per rank, SGD, "
          f"{os.cpu_count()} CPUs")
    print(f"{'procs':>5} {'variant':>14} {'buckets':>7} {'step ms':>8} {'samples/s':>10} {'vs 1 proc':>9} "
          f"{'comm ms':>8} {'exposed ms':>10} {'hidden':>7}")
    for run in runs:
        for label in ("compute_only", "overlap", "overlap_unchecked", "single_bucket"):
            r = run[label]
            extra = ""
            if "comm_s" in r:
                extra = f"{r['comm_s'] * 1e3:8.1f} {r['exposed_s'] * 1e3:10.1f} {r['hidden_fraction'] * 100:6.0f}%"
            print(f"{run['world']:5d} {label:>14} {r.get('buckets', 0):7d} {r['step_s'] * 1e3:8.1f} "
                  f"{r['samples_per_s']:10.0f} {r['samples_per_s'] / base:8.2f}x {extra}")
    for run in runs:
        if "check" in run:
            c = run["check"]
            print(f"fingerprint check, {run['world']} procs: DDP step {c['step_s_checked'] * 1e3:.1f} ms checked vs "
                  f"{c['step_s_unchecked'] * 1e3:.1f} ms unchecked ({c['step_overhead']:+.2%}; median of the paired "
                  f"per-step ratios {c['step_overhead_paired']:+.2%}); a one-element "
                  f"all_reduce {c['tiny_checked_us']:.0f} us checked vs {c['tiny_unchecked_us']:.0f} us, so the "
                  f"checks of a step's {run['overlap']['buckets']} buckets take {c['estimated_overhead']:.2%} of it")
    config = {k: getattr(args, k) for k in ("width", "depth", "batch", "bucket_cap_mb", "steps", "warmup")}
    result = {"benchmark": "ddp_scaling", "device": "cpu", "config": config, "cpu_count": os.cpu_count(),
              "load_average_before": load_before, "runs": runs}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
