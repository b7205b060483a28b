"""Images per second of `rs generate` with `render: blender` (Cycles on the CPU).

Renders the scenes of a task (CLE4EVR by default; `--task driving_3d` for the 3D miniBOIA road
scenes) at the fast preset (128x128, 16 samples) and the paper-like preset
(320x240, 128 samples) with 1 and 2 worker processes, into temporary folders, and prints the
rate of each (wall clock of the whole `generate` call: worker start-up, bpy import, scene
construction, rendering, annotation). Needs bpy (`pip install --no-deps bpy==5.0.1`).

    .venv/bin/python benchmarks/rs_blender.py                  # 8 fast, 2 paper images per run
    .venv/bin/python benchmarks/rs_blender.py --fast 32 --paper 8 --grid docs/guides/img/cle4evr.png
    .venv/bin/python benchmarks/rs_blender.py --task driving_3d --grid docs/guides/img/driving_3d.png
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from nesybench.shortcuts.render import blender as B  # noqa: E402
from nesybench.shortcuts.generate import generate  # noqa: E402
from nesybench.shortcuts.task import load_task  # noqa: E402

def run(task: Path, n: int, preset: str, jobs: int, tmp: Path) -> tuple[float, Path]:
    out = tmp / f"{preset}-{jobs}"
    t0 = time.perf_counter()
    generate(load_task(task), out, seed=0, samples={"train": n, "val": 0, "test": 0, "ood": 0},
             render_options={"preset": preset, "workers": jobs})
    return n / (time.perf_counter() - t0), out


def grid(folder: Path, dest: Path, n: int = 8) -> None:
    from PIL import Image  # noqa: PLC0415
    ims = [Image.open(f).convert("RGB") for f in sorted((folder / "train").glob("*.png"))[:n]]
    w, h = ims[0].size
    cols = 4
    rows = (len(ims) + cols - 1) // cols
    g = Image.new("RGB", (cols * w, rows * h), (255, 255, 255))
    for i, im in enumerate(ims):
        g.paste(im, ((i % cols) * w, (i // cols) * h))
    dest.parent.mkdir(parents=True, exist_ok=True)
    g.save(dest, optimize=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fast", type=int, default=8, help="images per fast-preset run")
    ap.add_argument("--paper", type=int, default=2, help="images per paper-preset run")
    ap.add_argument("--grid", type=Path, help="also save a 4-column grid of fast-preset images")
    ap.add_argument("--task", default="cle4evr", help="a task of curricula/rs (default cle4evr)")
    a = ap.parse_args()
    task = ROOT / "curricula" / "rs" / f"{a.task}.yaml"
    if not task.is_file():
        print(f"no task {task}", file=sys.stderr)
        return 2
    if not B.bpy_available():
        print(f"bpy is not installed: {B.INSTALL_HINT}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="rs-blender-"))
    try:
        for preset, n in (("fast", a.fast), ("paper", a.paper)):
            opts = B.PRESETS[B.PRESET_ALIASES.get(preset, preset)]  # paper: rsbench
            for jobs in (1, 2):
                if n == 0:
                    continue
                rate, out = run(task, n * jobs, preset, jobs, tmp)
                print(f"{a.task} {preset:5s} {opts['resolution'][0]}x{opts['resolution'][1]} "
                      f"{opts['samples']:3d} samples/px  {jobs} worker(s): {n * jobs:3d} images, "
                      f"{rate:.2f} images/s", flush=True)
                if a.grid and preset == "fast" and jobs == 1:
                    grid(out, a.grid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
