"""Time KANDY learning: data loading, then training and evaluation throughput of MLP and CNN.

Generates KANDY-Easy (small: 20 tasks × 100 samples, 224×224 PNGs) into a temporary folder
(or uses --dataset), then prints

* decoding: PNGs decoded + resized per second (done once; tensors stay in memory),
* per model (MLP, the paper's CNN; --resnet adds ResNet-50, --vit the small ViT-16) and device (cpu, and cuda when
  torch sees one): training samples/s (forward + backward + optimiser step: Adam as the
  trainers make it, fused where torch has it; batch --batch) and evaluation samples/s
  (inference, batch 256), with --threads torch threads.

    .venv/bin/python benchmarks/kandy_train.py [--size 64] [--batch 16] [--steps 30]
        [--threads 1] [--dataset DIR] [--resnet] [--vit] [--devices cpu,cuda]

Training throughput counts samples through the model (a class-balanced JOINT epoch's
mini-batches), excluding the first --warmup steps. Numbers depend on the machine's load.

``--paper`` instead trains Table 1's cells at the paper's configuration (the supplementary's
optimal hyper-parameters per model and setting, 224×224 inputs, every task of the curriculum)
with the trainer that ``nesybench kandy train`` runs in each sweep cell: one JSON line per
run, in the order of ``PAPER_PLAN`` (the CNN JOINT cell first, the one the paper discusses),
new runs started only while ``--budget`` seconds are left, then the table next to the
paper's figures. ``nesybench kandy train DATASET --model mlp,cnn --setting
independent,joint,task-incremental,continual-online --size 224 --seeds 3`` runs the same cells
through the sweep runner (resumable; its seeds are the sweep's own)::

    .venv/bin/python benchmarks/kandy_train.py --paper [--dataset DIR] [--device cuda]
        [--budget 3600] [--seeds 3]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))


#: the paper's Table 1, KANDY-Easy, average test accuracy (± sd over 3 runs); the
#: INDEPENDENT and CONTINUAL ONLINE columns are not legible in our copy of the paper
PAPER_TABLE1_EASY = {
    ("mlp", "joint"): "0.60 ± 0.02", ("cnn", "joint"): "0.73 ± 0.01",
    ("resnet50", "joint"): "0.67 ± 0.02",
    ("mlp", "task_incremental"): "0.61 ± 0.01", ("cnn", "task_incremental"): "0.74 ± 0.02",
    ("resnet50", "task_incremental"): "0.61 ± 0.01",
}
#: (model, setting) in the order --paper runs them: seed 0 of every cell first
PAPER_PLAN = [("cnn", "joint"), ("mlp", "joint"), ("mlp", "independent"),
              ("mlp", "task_incremental"), ("mlp", "continual_online"),
              ("cnn", "continual_online"), ("cnn", "task_incremental"),
              ("cnn", "independent"), ("resnet50", "joint"), ("resnet50", "task_incremental")]


def run_paper(args) -> None:
    """Table 1's cells at the paper's configuration (see the module docstring)."""
    import json
    import statistics

    import torch

    from nesybench.kandy.learn.data import load_data
    from nesybench.kandy.learn.settings import resolve_config, train

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    data = load_data(args.dataset, size=args.size)
    print(json.dumps({"dataset": str(args.dataset), "size": args.size, "device": device,
                      "threads": args.threads, "torch": torch.__version__,
                      "load_s": round(time.perf_counter() - t0, 2)}), flush=True)
    wanted = [m.strip() for m in args.models.split(",") if m.strip()]
    runs = [(m, st, seed) for seed in range(args.seeds) for m, st in PAPER_PLAN
            if m in wanted]
    runs.sort(key=lambda r: (r[2] > 0, r[2]))   # seed 0 of every cell, then seed 1, ...
    took: dict = {}
    acc: dict = {}
    for model, setting, seed in runs:
        spent = time.perf_counter() - t0
        if spent + took.get((model, setting), 0.0) > args.budget:
            print(json.dumps({"skipped": [model, setting, seed], "elapsed_s": round(spent, 1)}),
                  flush=True)
            continue
        cfg = resolve_config(model, setting, hparams="easy", device=device)
        t1 = time.perf_counter()
        res = train(data, cfg, seed=seed)
        took[(model, setting)] = time.perf_counter() - t1
        m = res.final_metrics()
        acc.setdefault((model, setting), []).append(m["avg_acc"])
        row = {"model": model, "setting": setting, "seed": seed,
               "seconds": round(took[(model, setting)], 1), "lr": cfg.lr, "optim": cfg.optim,
               "batch": cfg.batch, "epochs": cfg.epochs, "buffer": cfg.buffer,
               "avg_acc": round(m["avg_acc"], 4), "avg_acc_micro": round(m["avg_acc_micro"], 4),
               "first_loss": round(res.losses[0], 4) if res.losses else None,
               "last_loss": round(res.losses[-1], 4) if res.losses else None}
        row.update({k: round(m[k], 4) for k in ("forgetting", "bwt", "fwt") if k in m})
        print(json.dumps(row), flush=True)
    print(f"\nTable 1, KANDY-Easy, {args.size}x{args.size}, {device}: average test accuracy "
          f"(balanced), mean ± sd over the seeds run")
    print(f"{'model':<9} {'setting':<17} {'runs':>4}  {'nesybench':<15} paper")
    for (model, setting), xs in acc.items():
        sd = f" ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else " (n=1)"
        print(f"{model:<9} {setting:<17} {len(xs):>4}  {statistics.mean(xs):.3f}{sd:<9} "
              f"{PAPER_TABLE1_EASY.get((model, setting), '(not legible)')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=None, help="a generated curriculum (default: Easy)")
    ap.add_argument("--size", type=int, default=None,
                    help="input size (default: 64 when timing, the paper's 224 with --paper)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=30, help="timed training steps per model")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--resnet", action="store_true", help="also time ResNet-50")
    ap.add_argument("--vit", action="store_true", help="also time the small ViT-16 (vit)")
    ap.add_argument("--devices", default=None,
                    help="comma-separated devices to time (default: cpu, and cuda when torch "
                         "sees one)")
    ap.add_argument("--paper", action="store_true",
                    help="train Table 1's cells at the paper's configuration instead of timing")
    ap.add_argument("--device", default=None, help="--paper: cpu or cuda (default: cuda when "
                    "torch sees one)")
    ap.add_argument("--budget", type=float, default=3600.0,
                    help="--paper: start no run past this many seconds")
    ap.add_argument("--seeds", type=int, default=3, help="--paper: runs per cell")
    ap.add_argument("--models", default="mlp,cnn",
                    help="--paper: comma-separated models of PAPER_PLAN (mlp, cnn, resnet50)")
    args = ap.parse_args()
    known = sorted({m for m, _ in PAPER_PLAN})
    if args.paper and (not args.models.strip() or any(
            m.strip() not in known for m in args.models.split(",") if m.strip())):
        ap.error(f"--models takes {', '.join(known)}, not {args.models!r}")   # exit 2

    import torch

    from nesybench.kandy.generate import generate
    from nesybench.kandy.learn.data import load_data
    from nesybench.kandy.learn.models import build_model
    from nesybench.kandy.learn.settings import TrainConfig, _optimizer

    torch.set_num_threads(args.threads)
    tmp = None
    ds = args.dataset
    if args.size is None:
        args.size = 224 if args.paper else 64
    if ds is None:
        tmp = tempfile.TemporaryDirectory(prefix="kandy-train-bench-")
        ds = Path(tmp.name) / "easy"
        t0 = time.perf_counter()
        generate(ROOT / "curricula/kandy/easy.yaml", ds, workers=2)
        print(f"generated KANDY-Easy (2000 images) in {time.perf_counter() - t0:.1f} s")
    if args.paper:
        args.dataset = ds
        run_paper(args)
        if tmp is not None:
            tmp.cleanup()
        return
    data = load_data(ds, size=args.size)
    n_img = sum(len(s) for s in data.splits.values())
    print(f"decode + resize to {args.size}x{args.size}: {n_img} images in "
          f"{data.decode_seconds:.2f} s = {n_img / data.decode_seconds:,.0f} images/s "
          f"(once per run; {sum(s.images.numel() for s in data.splits.values()) / 2**20:.1f} MiB "
          f"of uint8 tensors)")
    split = data.splits["train"]
    test = data.splits["test"]
    devices = (args.devices.split(",") if args.devices else
               ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    if "cuda" in devices:
        print(f"cuda: {torch.cuda.get_device_name()}")
    models = (["mlp", "cnn"] + (["resnet50"] if args.resnet else [])
              + (["vit"] if args.vit else []))
    print(f"torch {torch.__version__}, {args.threads} thread(s), batch {args.batch}, Adam")
    print(f"{'model':<9} {'device':<6} {'train samples/s':>16} {'eval samples/s':>15} "
          f"{'batch fetch ms':>15}")
    gen = torch.Generator().manual_seed(0)
    for dev in devices:
        for name in models:
            torch.manual_seed(0)
            model = build_model(name, size=data.size, heads=data.n_tasks).to(dev)
            cfg = TrainConfig(model=name, lr=1e-4, optim="adam", batch=args.batch)
            opt = _optimizer(model, cfg)
            model.train()
            n, t_fetch, t_total = 0, 0.0, 0.0
            for step in range(args.warmup + args.steps):
                t0 = time.perf_counter()
                idx = torch.randint(len(split), (args.batch,), generator=gen)
                x = split.batch(idx, dev)
                y = split.labels[idx].float().to(dev)
                heads = split.tasks[idx].to(dev)
                t1 = time.perf_counter()
                logit = model(x).gather(1, heads[:, None]).squeeze(1)
                loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                if dev == "cuda":
                    torch.cuda.synchronize()
                t2 = time.perf_counter()
                if step >= args.warmup:
                    n += args.batch
                    t_fetch += t1 - t0
                    t_total += t2 - t0
            model.eval()
            t0 = time.perf_counter()
            with torch.no_grad():
                for k in range(0, len(test), 256):
                    model(test.batch(torch.arange(k, min(k + 256, len(test))), dev))
            if dev == "cuda":
                torch.cuda.synchronize()
            t_eval = time.perf_counter() - t0
            print(f"{name:<9} {dev:<6} {n / t_total:>16,.1f} {len(test) / t_eval:>15,.1f} "
                  f"{1000 * t_fetch / args.steps:>15.2f}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
