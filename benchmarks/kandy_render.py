"""Rendering throughput of the KANDY renderer (images/s), 1 and 2 workers.

Symbols mimic the Hard curriculum's typical complexity (paper supp. §4.4, reference
``hard.yml``): a placement operator (``in`` or a quadrant) over one to three groups, each
group a displacement operator (any of the 13 but the placements) over 2-4 atomic shapes, so
2-12 shapes at depth 2-3. Each job renders with colour and size noise, encodes the PNG with
the fixed options and writes it to a temporary folder, i.e. exactly the generator's per-image
work (:func:`nesybench.kandy.render.render_job` through
:func:`nesybench.parallel.map_ordered`).

Usage: ``python benchmarks/kandy_render.py [--n 2000] [--workers 1 2] [--json]``
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.kandy.render import RenderConfig, render, render_job  # noqa: E402
from nesybench.kandy.symbols import Composite, Shape, leaves  # noqa: E402
from nesybench.parallel import map_ordered  # noqa: E402

PLACEMENTS = ("in", "quadrant_ul", "quadrant_ur", "quadrant_ll", "quadrant_lr")
DISPLACEMENTS = ("random", "stack", "side_by_side", "stack_reduce_bb", "side_by_side_reduce_bb",
                 "diag_ul_lr", "diag_ll_ur", "grid")
SHAPES = ("triangle", "square", "circle")
COLORS = ("red", "green", "blue", "cyan", "magenta", "yellow")
SIZES = ("small", "large")


def hard_like_symbol(rng: np.random.Generator):
    def atom():
        return Shape(str(rng.choice(SHAPES)), str(rng.choice(COLORS)), str(rng.choice(SIZES)))

    groups = tuple(Composite(str(rng.choice(DISPLACEMENTS)),
                             tuple(atom() for _ in range(int(rng.integers(2, 5)))))
                   for _ in range(int(rng.integers(1, 4))))
    if len(groups) > 1:
        groups = (Composite(str(rng.choice(DISPLACEMENTS)), groups),)
    return Composite(str(rng.choice(PLACEMENTS)), groups)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="images per measurement")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print results as JSON")
    args = ap.parse_args(argv)

    rng = np.random.Generator(np.random.PCG64(args.seed))
    symbols = [hard_like_symbol(rng) for _ in range(args.n)]
    cfg = RenderConfig()
    results = {"n": args.n, "mean_shapes": float(np.mean([len(leaves(s)) for s in symbols]))}

    t0 = time.perf_counter()
    for i, s in enumerate(symbols):
        render(s, cfg, i)
    results["in_memory_1_worker"] = args.n / (time.perf_counter() - t0)

    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workers:
            jobs = [(s.to_json(), cfg.to_dict(), i, True, True, f"{tmp}/w{w}/{i:05d}.png")
                    for i, s in enumerate(symbols)]
            t0 = time.perf_counter()
            for _ in map_ordered(render_job, jobs, workers=w, chunksize=16):
                pass
            results[f"png_files_{w}_workers"] = args.n / (time.perf_counter() - t0)

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"KANDY render benchmark: {args.n} Hard-like symbols, "
              f"{results['mean_shapes']:.1f} shapes on average, 224x224, noise on")
        print(f"  render() in memory, 1 worker : {results['in_memory_1_worker']:8.1f} images/s")
        for w in args.workers:
            print(f"  render_job -> PNG file, {w} worker(s): "
                  f"{results[f'png_files_{w}_workers']:8.1f} images/s (incl. pool start-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
