"""Rendering throughput of the KANDY renderer (images/s), 1 and 2 workers.

Symbols mimic the Hard curriculum's typical complexity (paper supp. §4.4, reference
``hard.yml``): a placement operator (``in`` or a quadrant) over one to three groups, each
group a displacement operator (any of the 13 but the placements) over 2-4 atomic shapes, so
2-12 shapes at depth 2-3. Each job renders with colour and size noise, encodes the PNG
(:func:`nesybench.kandy.render.encode_png`), hashes and writes it to a temporary folder, i.e.
exactly the generator's per-image work (:func:`nesybench.kandy.render.render_chunk` through
:func:`nesybench.parallel.map_streamed`). It also prints the split between drawing and PNG
encoding, Pillow's encoder (compress_level 6, adaptive filters) for comparison, and the
deflate candidates on the same unfiltered rows (interleaved rounds, medians): zlib-ng at levels
1-3 (level 2 writes the datasets), zlib at level 3, memLevel 5 (the fallback without zlib-ng),
and ISA-L at level 1 where ``isal`` is installed (faster, but its bytes are not a function of
the input alone, so it is not used).

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
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the encoder comparison")
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
    results["deflate"] = compare_deflates(arrays, args.rounds)

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
        print(f"  deflate of the same rows, medians of {args.rounds} interleaved rounds:")
        for name, row in results["deflate"].items():
            print(f"    {name:28s} {row['ms']:.3f} ms/image  {row['bytes']:7.0f} bytes  "
                  f"(range {row['ms_min']:.3f}-{row['ms_max']:.3f} ms)")
        for w in args.workers:
            print(f"  render_chunk -> PNG files, {w} worker(s): "
                  f"{results[f'png_files_{w}_workers']:8.1f} images/s (incl. pool start-up)")
    return 0


def _deflaters() -> dict:
    """Name -> function(bytes) -> zlib stream, for every deflate candidate installed here."""
    import zlib  # noqa: PLC0415

    def zlib_level3(data):
        comp = zlib.compressobj(3, zlib.DEFLATED, 15, 5)
        return comp.compress(data) + comp.flush()

    found = {}
    try:
        from zlib_ng import zlib_ng  # noqa: PLC0415
        for level in (1, 2, 3):
            found[f"zlib-ng {zlib_ng.ZLIBNG_VERSION} level {level}"] = \
                (lambda lv: lambda data: zlib_ng.compress(data, lv))(level)
    except ImportError:
        pass
    found[f"zlib {zlib.ZLIB_RUNTIME_VERSION} level 3 mem 5"] = zlib_level3
    try:
        from isal import isal_zlib  # noqa: PLC0415
        found["isal level 1"] = lambda data: isal_zlib.compress(data, 1)
    except ImportError:
        pass
    return found


def compare_deflates(arrays, rounds: int) -> dict:
    """Median ms per picture (and range) and mean bytes of each deflate candidate on the
    pictures' unfiltered PNG rows; candidates take turns within each round."""
    rows = []
    for a in arrays:
        raw = np.empty((a.shape[0], 3 * a.shape[1] + 1), dtype=np.uint8)
        raw[:, 0] = 0
        raw[:, 1:] = a.reshape(a.shape[0], -1)
        rows.append(raw.tobytes())
    times: dict[str, list[float]] = {}
    sizes: dict[str, float] = {}
    for _ in range(max(1, rounds)):
        for name, fn in _deflaters().items():
            t0 = time.perf_counter()
            out = [fn(r) for r in rows]
            times.setdefault(name, []).append(1000 * (time.perf_counter() - t0) / len(rows))
            sizes[name] = float(np.mean([len(o) for o in out]))
    return {name: {"ms": float(np.median(t)), "ms_min": min(t), "ms_max": max(t),
                   "bytes": sizes[name]} for name, t in times.items()}


if __name__ == "__main__":
    raise SystemExit(main())
