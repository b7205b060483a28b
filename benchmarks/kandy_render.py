"""Rendering throughput of the KANDY renderer (images/s), 1 and 2 workers.

Symbols mimic the Hard curriculum's typical complexity (paper supp. §4.4, reference
``hard.yml``): a placement operator (``in`` or a quadrant) over one to three groups, each
group a displacement operator (any of the 13 but the placements) over 2-4 atomic shapes, so
2-12 shapes at depth 2-3. Each job renders with colour and size noise, encodes the PNG
(:func:`nesybench.kandy.render.encode_png`), hashes and writes it to a temporary folder, i.e.
exactly the generator's per-image work (:func:`nesybench.kandy.render.render_chunk` through
:func:`nesybench.parallel.map_streamed`). It also prints the split between drawing and PNG
encoding, and Pillow's encoder (compress_level 6, adaptive filters) for comparison.

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

from nesybench.kandy.render import (PNG_SAVE_OPTIONS, RenderConfig, encode_png,  # noqa: E402
                                    render_array, render_chunk)
from nesybench.kandy.symbols import Composite, Shape, leaves  # noqa: E402
from nesybench.parallel import map_streamed  # noqa: E402

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
    arrays = [render_array(s, cfg, i) for i, s in enumerate(symbols)]
    results["draw_ms"] = 1000 * (time.perf_counter() - t0) / args.n
    t0 = time.perf_counter()
    sizes = [len(encode_png(a)) for a in arrays]
    results["encode_ms"] = 1000 * (time.perf_counter() - t0) / args.n
    results["png_bytes"] = float(np.mean(sizes))
    from io import BytesIO  # noqa: PLC0415

    from PIL import Image  # noqa: PLC0415
    t0 = time.perf_counter()
    pil = []
    for a in arrays[:500]:
        buf = BytesIO()
        Image.fromarray(a).save(buf, **PNG_SAVE_OPTIONS)
        pil.append(len(buf.getvalue()))
    results["pillow_encode_ms"] = 1000 * (time.perf_counter() - t0) / len(pil)
    results["pillow_png_bytes"] = float(np.mean(pil))
    results["in_memory_1_worker"] = 1000 / (results["draw_ms"] + results["encode_ms"])

    cfg_dict = cfg.to_dict()
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workers:
            jobs = [(s.to_json(), i, True, True, f"w{w}/{i:05d}.png")
                    for i, s in enumerate(symbols)]
            chunks = ((cfg_dict, tmp, jobs[i:i + 64]) for i in range(0, len(jobs), 64))
            t0 = time.perf_counter()
            for _ in map_streamed(render_chunk, chunks, workers=w):
                pass
            results[f"png_files_{w}_workers"] = args.n / (time.perf_counter() - t0)

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(f"KANDY render benchmark: {args.n} Hard-like symbols, "
              f"{results['mean_shapes']:.1f} shapes on average, 224x224, noise on")
        print(f"  drawing {results['draw_ms']:.3f} ms + PNG encoding {results['encode_ms']:.3f} ms "
              f"per image ({results['png_bytes']:.0f} bytes); Pillow's encoder "
              f"{results['pillow_encode_ms']:.3f} ms ({results['pillow_png_bytes']:.0f} bytes)")
        print(f"  in memory, 1 worker : {results['in_memory_1_worker']:8.1f} images/s")
        for w in args.workers:
            print(f"  render_chunk -> PNG files, {w} worker(s): "
                  f"{results[f'png_files_{w}_workers']:8.1f} images/s (incl. pool start-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
