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
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=None, help="a generated curriculum (default: Easy)")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=30, help="timed training steps per model")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--resnet", action="store_true", help="also time ResNet-50")
    ap.add_argument("--vit", action="store_true", help="also time the small ViT-16 (vit)")
    ap.add_argument("--devices", default=None,
                    help="comma-separated devices to time (default: cpu, and cuda when torch "
                         "sees one)")
    args = ap.parse_args()

    import torch

    from nesybench.kandy.generate import generate
    from nesybench.kandy.learn.data import load_data
    from nesybench.kandy.learn.models import build_model
    from nesybench.kandy.learn.settings import TrainConfig, _optimizer

    torch.set_num_threads(args.threads)
    tmp = None
    ds = args.dataset
    if ds is None:
        tmp = tempfile.TemporaryDirectory(prefix="kandy-train-bench-")
        ds = Path(tmp.name) / "easy"
        t0 = time.perf_counter()
        generate(ROOT / "curricula/kandy/easy.yaml", ds, workers=2)
        print(f"generated KANDY-Easy (2000 images) in {time.perf_counter() - t0:.1f} s")
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
