"""Time `nesybench export` on a KANDY curriculum and compare the sizes with the raw folder.

Generates the curriculum once into a temporary folder, then exports it in each format and
prints, per format, the export time, the size on disk and the number of files, next to the raw
folder (PNGs + annotations + manifest), plus the time to load the export back.

    .venv/bin/python benchmarks/export_bench.py                      # small: Easy, 20 per task
    .venv/bin/python benchmarks/export_bench.py --curriculum curricula/kandy/hard.yaml
                                               # Hard, 1000 per task: 18 tasks, 18k images

--samples defaults to 20 for the default curriculum and to 1000 for one given with
--curriculum (the Hard figure of docs/performance.md).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "curricula" / "kandy" / "easy.yaml"


def folder_size(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--curriculum", default=None, help=f"default: {DEFAULT.relative_to(ROOT)}")
    ap.add_argument("--samples", type=int, default=None, help="samples per task")
    ap.add_argument("--workers", type=int, default=2, help="render processes")
    ap.add_argument("--formats", default="hf,parquet,croissant")
    ap.add_argument("--workdir", default=None, help="default: the system temp folder")
    args = ap.parse_args()
    curriculum = Path(args.curriculum) if args.curriculum else DEFAULT
    samples = args.samples or (20 if args.curriculum is None else 1000)

    import logging

    import datasets

    import nesybench
    from nesybench.data.export import export
    from nesybench.kandy.generate import generate

    logging.getLogger("absl").setLevel(logging.ERROR)
    datasets.disable_progress_bars()
    work = Path(tempfile.mkdtemp(prefix="export-bench-", dir=args.workdir))
    try:
        t0 = time.perf_counter()
        gen = generate(curriculum, work / "raw", samples=samples, workers=args.workers)
        gen_s = time.perf_counter() - t0
        raw_bytes, raw_files = folder_size(work / "raw")
        t0 = time.perf_counter()
        data = nesybench.load(work / "raw")
        load_s = time.perf_counter() - t0
        print(f"{curriculum.name}: {len(gen.tasks)} tasks x {samples} samples = {gen.images} "
              f"images, generated in {gen_s:.1f} s; nesybench.load {load_s:.2f} s")
        print(f"{'what':<12} {'seconds':>8} {'MB':>9} {'files':>7} {'vs raw':>7} "
              f"{'read back s':>12}")
        print(f"{'raw folder':<12} {'':>8} {raw_bytes / 1e6:>9.2f} {raw_files:>7} {'1.00':>7} "
              f"{'':>12}")
        for fmt in args.formats.split(","):
            out = work / f"export-{fmt}"
            t0 = time.perf_counter()
            export(data, out, fmt)
            secs = time.perf_counter() - t0
            size, nfiles = folder_size(out)
            t0 = time.perf_counter()
            if fmt == "hf":
                n = sum(len(d) for d in datasets.load_from_disk(str(out)).values())
            elif fmt == "parquet":
                n = sum(len(d) for d in datasets.load_dataset(
                    "parquet", data_dir=str(out / "data"),
                    cache_dir=str(work / "hf-cache")).values())
            else:
                import mlcroissant as mlc
                cr = mlc.Dataset(jsonld=str(out / "croissant.json"))
                n = sum(1 for s in data.splits for _ in cr.records(s))
            back = time.perf_counter() - t0
            assert n == len(data), (fmt, n, len(data))
            print(f"{fmt:<12} {secs:>8.2f} {size / 1e6:>9.2f} {nfiles:>7} "
                  f"{size / raw_bytes:>7.2f} {back:>12.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
