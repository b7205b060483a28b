"""Time KANDY generation end to end: Hard curriculum, 1000 samples per task (18k images).

Three jobs, run interleaved for ``--rounds`` rounds (default 3) so that load on the machine
falls on all of them alike; each is reported as its median and its range over the rounds:

* **nesybench**: :func:`nesybench.kandy.generate.generate` on the curriculum, ``--workers``
  processes (symbols, rule checks, pictures, PNG files, annotations, manifest);
* **PNG floor**: only writing the same pictures' PNG files, from their pixels already in memory
  (a RAM-backed array, decoded from the first round's files, not timed), with the same
  encoder and options
  (:func:`nesybench.kandy.render.write_pngs`), the same jobs of ``RENDER_CHUNK`` pictures and
  the same number of worker processes, pool start-up included. No generator can write these
  files faster with this encoder, so ``nesybench / floor`` is how far the job is from
  being bound by writing its output;
* **reference** (with ``--reference PATH``, a checkout of continual-nesy/KANDYBenchmark): its
  own ``hard.yml`` with every task's ``samples`` set to ``--samples``, every split streamed and
  each image saved as PNG, as its ``main.py`` does (one process: it has no parallel mode).

It prints the symbols-only time once, each round's times, the machine's load average before
and after, and a Markdown table of the medians (the table on docs/performance.md): wall time
with its range, and CPU time (user + system, all the job's processes), the ratio that load
from other jobs on the machine disturbs least.

    .venv/bin/python benchmarks/kandy_generate.py [--samples 1000] [--workers 2] [--rounds 3]
        [--workdir DIR] [--reference PATH [--reference-python PY]] [--write-docs]

The reference needs pyswip, which is not a nesybench dependency: make a side venv, e.g.
``python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install pyswip numpy pillow pyyaml``,
and pass ``--reference-python /tmp/refvenv/bin/python`` (it uses the project's SWI-Prolog).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024.0


def cpu_seconds() -> tuple[float, float, float, float]:
    """(user, sys) seconds of this process, then of its finished children (the workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime, own.ru_stime, kids.ru_utime, kids.ru_stime


def load_average() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--curriculum", default=str(ROOT / "curricula" / "kandy" / "hard.yaml"))
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", default=None,
                    help="folder for the generated data (default: the system temp folder). "
                         "On ext4, creating many files soon after deleting many (e.g. a "
                         "previous run) costs much kernel time; /dev/shm avoids the disk")
    ap.add_argument("--no-floor", action="store_true", help="skip the PNG floor job")
    ap.add_argument("--write-docs", action="store_true",
                    help="also write what this run printed (the table, the rounds, the load "
                         "averages) into docs/performance.md, between the markers "
                         f"{DOC_BEGIN} and {DOC_END}")
    ap.add_argument("--reference", default=None, help="path to a KANDYBenchmark checkout")
    ap.add_argument("--reference-python", default=sys.executable,
                    help="Python interpreter with the reference's requirements (pyswip, numpy, "
                         "pillow, pyyaml); default: this one")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")

    if args.write_docs:
        tee = _Tee(sys.stdout)
        sys.stdout = tee
        try:
            status = _run(args)
        finally:
            sys.stdout = tee.out
        if status == 0:
            write_docs(ROOT / "docs" / "performance.md", "".join(tee.parts),
                       public_command(sys.argv[1:]))
        return status
    return _run(args)


def _run(args) -> int:
    from nesybench.kandy.generate import RENDER_CHUNK, generate
    from nesybench.kandy.render import PNG_DEFLATE

    print(f"load average         {load_average()} (1, 5, 15 min) before, "
          f"{os.cpu_count()} CPUs")
    tmp = Path(tempfile.mkdtemp(prefix="kandy-bench-", dir=args.workdir))
    store = None
    times: dict[str, list[float]] = {"ours": [], "floor": [], "reference": []}
    cpus: dict[str, list[float]] = {"ours": [], "floor": [], "reference": []}
    try:
        t0 = time.perf_counter()
        sym = generate(args.curriculum, tmp / "symbols", samples=args.samples, images=False)
        t_sym = time.perf_counter() - t0
        n_samples = sum(sum(t["stats"]["split_sizes"].values()) for t in sym.tasks)
        print(f"curriculum           {args.curriculum} ({len(sym.tasks)} tasks x {args.samples})")
        print(f"png encoder          {PNG_DEFLATE}, unfiltered rows")
        print(f"symbols only         {t_sym:8.2f} s  {n_samples / t_sym:9.0f} samples/s  "
              f"{sym.rule_checks / t_sym:9.0f} rule checks/s ({sym.rule_checks} checks)")
        bench = _self_module()
        peak = None
        for r in range(1, args.rounds + 1):
            # Every job writes to a folder of its own and nothing is deleted before the end:
            # deleting 18,000 files leaves the file system work (on ext4 with discard, for
            # seconds) that would land on whichever job runs next.
            out = tmp / f"round{r}" / "nesybench"
            cpu0 = cpu_seconds()
            t0 = time.perf_counter()
            full = generate(args.curriculum, out, samples=args.samples, workers=args.workers)
            times["ours"].append(time.perf_counter() - t0)
            cpu = [b - a for a, b in zip(cpu0, cpu_seconds())]
            cpus["ours"].append(sum(cpu))
            line = (f"round {r}: nesybench {times['ours'][-1]:6.2f} s "
                    f"(cpu: main {cpu[0] + cpu[1]:.1f} s, workers {cpu[2] + cpu[3]:.1f} s)")
            if peak is None:
                peak = peak_rss_mb()
            if not args.no_floor and store is None:
                store = PixelStore.build(out)           # not timed
            if store is not None:
                cpu0 = cpu_seconds()
                times["floor"].append(store.write_all(bench, tmp / f"round{r}" / "floor",
                                                      args.workers, RENDER_CHUNK))
                cpus["floor"].append(sum(b - a for a, b in zip(cpu0, cpu_seconds())))
                line += f", floor {times['floor'][-1]:6.2f} s"
            if args.reference:
                cpu0 = cpu_seconds()
                ref = run_reference(Path(args.reference), args.samples, args.reference_python,
                                    tmp / f"round{r}" / "reference")
                cpus["reference"].append(sum(b - a for a, b in zip(cpu0, cpu_seconds())))
                if ref is None:
                    args.reference = None
                else:
                    times["reference"].append(ref)
                    line += f", reference {ref:7.2f} s"
            print(line + f"  [load {load_average()}]", flush=True)
        print(f"end to end           {full.images} images, {args.workers} workers, "
              f"peak memory {peak:.0f} MB (largest process)")
        print(f"load average         {load_average()} (1, 5, 15 min) after")
        report(times, cpus, args, full.images)
    finally:
        if store is not None:
            store.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


#: the markers around the measured section of docs/performance.md that --write-docs replaces
DOC_BEGIN, DOC_END = "<!-- kandy_generate.py:begin -->", "<!-- kandy_generate.py:end -->"


class _Tee:
    """stdout that also keeps what was written (for --write-docs)."""

    def __init__(self, out):
        self.out, self.parts = out, []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.out.write(text)

    def flush(self) -> None:
        self.out.flush()


#: options whose values are this machine's paths, and what the page shows instead
_PLACEHOLDERS = {"--reference": "PATH", "--reference-python": "PY", "--workdir": "DIR",
                 "--curriculum": None}


def public_command(argv: list[str]) -> str:
    """The command line as the page shows it: paths of this machine replaced by
    placeholders, a curriculum inside the source tree by its relative path."""
    out, i = ["benchmarks/kandy_generate.py"], 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if key in _PLACEHOLDERS and (eq or i + 1 < len(argv)):
            if not eq:
                i += 1
                value = argv[i]
            shown = _PLACEHOLDERS[key] or _relative(value)
            out.append(f"{key} {shown}")
        else:
            out.append(arg)
        i += 1
    return " ".join(out)


def _relative(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return "FILE"


def write_docs(doc: Path, printed: str, command: str) -> None:
    """Replace the section between :data:`DOC_BEGIN` and :data:`DOC_END` of ``doc`` with the
    Markdown table of ``printed`` and, below it, the rest of what the run printed (the source
    tree's own path left out of it)."""
    printed = printed.replace(f"{ROOT}{os.sep}", "")
    text = doc.read_text(encoding="utf-8")
    if DOC_BEGIN not in text or DOC_END not in text:
        raise SystemExit(f"{doc}: no {DOC_BEGIN} ... {DOC_END} section to write")
    lines = printed.splitlines()
    table = [line for line in lines if line.startswith("|")]
    rest = [line for line in lines if line.strip() and not line.startswith("|")]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section = (f"\nAs printed by `{command}` ({when}, {os.cpu_count()} CPUs):\n\n"
               + "\n".join(table) + "\n\n```text\n" + "\n".join(rest) + "\n```\n")
    head, tail = text.split(DOC_BEGIN, 1)
    tail = tail.split(DOC_END, 1)[1]
    doc.write_text(head + DOC_BEGIN + section + DOC_END + tail, encoding="utf-8")
    print(f"wrote the section of {doc}", file=sys.stderr)


def _stat(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.2f} s | {min(xs):.2f} – {max(xs):.2f} s"


def report(times: dict, cpus: dict, args, images: int) -> None:
    """The Markdown table of medians (wall time with its range, CPU time of all the job's
    processes) and the two ratios against their targets, also per round."""
    ours = statistics.median(times["ours"])
    rows = [(f"nesybench, {args.workers} workers", "ours", "1.0×")]
    if times["floor"]:
        floor = statistics.median(times["floor"])
        rows.append((f"PNG floor: the same files from pixels in memory, {args.workers} workers",
                     "floor", f"{floor / ours:.2f}×"))
    if times["reference"]:
        ref = statistics.median(times["reference"])
        rows.append(("KANDYBenchmark (reference), 1 process", "reference", f"{ref / ours:.1f}×"))
    print()
    print(f"KANDY Hard, {args.samples} samples per task ({images:,} PNG files), medians of "
          f"{len(times['ours'])} interleaved rounds, load average {load_average()}:")
    print()
    print("| job | wall time | range | CPU time | wall / nesybench |")
    print("|---|---:|---:|---:|---:|")
    for name, key, rel in rows:
        print(f"| {name} | {_stat(times[key])} | {statistics.median(cpus[key]):.1f} s | {rel} |")
    print()
    per_round = lambda a, b: ", ".join(f"{x / y:.2f}" for x, y in zip(a, b))  # noqa: E731
    if times["floor"]:
        print(f"nesybench / PNG floor        {ours / floor:6.2f}×  (target <= 1.5×; "
              f"per round {per_round(times['ours'], times['floor'])})")
    if times["reference"]:
        print(f"reference / nesybench        {ref / ours:6.1f}×  (target >= 20×; "
              f"per round {per_round(times['reference'], times['ours'])}; CPU time "
              f"{statistics.median(cpus['reference']) / statistics.median(cpus['ours']):.1f}×)")


class PixelStore:
    """The pixels of every picture of a generated dataset in one RAM-backed ``(N, H, W, 3)``
    array (``/dev/shm`` when there is one), with each picture's relative path: the input of
    the floor job. Built by decoding the PNGs of one generation run (not timed)."""

    def __init__(self, path: Path, relpaths: list[str], shape: tuple[int, ...]):
        self.path, self.relpaths, self.shape = path, relpaths, shape

    @classmethod
    def build(cls, data: Path) -> "PixelStore":
        """Decode every PNG under ``data`` into the store (in path order)."""
        from PIL import Image

        shm = Path("/dev/shm")
        where = Path(tempfile.mkdtemp(prefix="kandy-pixels-", dir=shm if shm.is_dir() else None))
        relpaths = sorted(str(p.relative_to(data)) for p in data.rglob("*.png"))
        with Image.open(data / relpaths[0]) as im:
            w, h = im.size
        shape = (len(relpaths), h, w, 3)
        arr = np.lib.format.open_memmap(where / "pixels.npy", mode="w+", dtype=np.uint8,
                                        shape=shape)
        for i, rel in enumerate(relpaths):
            with Image.open(data / rel) as im:
                arr[i] = np.asarray(im.convert("RGB"))
        arr.flush()
        del arr
        return cls(where / "pixels.npy", relpaths, shape)

    def write_all(self, bench, out: Path, workers: int, chunk: int) -> float:
        from nesybench.parallel import map_streamed

        jobs = ((str(self.path), i, self.relpaths[i:i + chunk], str(out))
                for i in range(0, len(self.relpaths), chunk))
        t0 = time.perf_counter()
        n = sum(len(d) for d in map_streamed(bench._floor_job, jobs, workers=workers))
        seconds = time.perf_counter() - t0
        assert n == len(self.relpaths)
        return seconds

    def close(self) -> None:
        shutil.rmtree(self.path.parent, ignore_errors=True)


def _floor_job(args) -> list:
    """Floor worker: write the PNGs of stored pictures ``start .. start + len(relpaths)``."""
    from nesybench.kandy.render import write_pngs

    path, start, relpaths, root = args
    pixels = np.load(path, mmap_mode="r")
    return write_pngs(pixels[start:start + len(relpaths)], root, relpaths)


def _self_module():
    """This script as an importable module, so that spawned workers can find
    :func:`_floor_job` by name (a script's functions live in ``__main__``, which the
    workers do not run)."""
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    return importlib.import_module(Path(__file__).stem)


def run_reference(path: Path, samples: int, python: str, work: Path) -> float | None:
    """Time the reference on the same job: its own hard.yml with every task's ``samples`` set
    to ``samples``, every split streamed and each image saved as PNG (as its main.py does),
    into the new folder ``work``. None (with a note) when it cannot run (it needs pyswip:
    pass ``--reference-python``)."""
    if not (path / "curriculum_generator.py").is_file():
        print(f"reference: {path} is not a KANDYBenchmark checkout; skipped")
        return None
    work.mkdir(parents=True)
    text = (path / "hard.yml").read_text(encoding="utf-8")
    (work / "hard.yml").write_text(
        re.sub(r"(?m)^(\s*)samples: *\d+", rf"\g<1>samples: {samples}", text),
        encoding="utf-8")
    code = (
        "import sys, os; sys.path.insert(0, '.')\n"
        "from curriculum_generator import CurriculumGenerator\n"
        "out = sys.argv[2]\n"
        "cg = CurriculumGenerator('config.yml', sys.argv[1])\n"
        "for i, t in enumerate(cg.tasks):\n"
        "    for split in ('train', 'val', 'test'):\n"
        "        os.makedirs(f'{out}/{split}/{i}', exist_ok=True)\n"
        "        for j, s in enumerate(t.get_stream(split)):\n"
        "            s[0].save(f'{out}/{split}/{i}/{j:04d}.png', 'PNG')\n"
    )
    env = dict(os.environ)
    swipl = shutil.which("swipl") or str(ROOT / ".deps" / "swipl" / "bin" / "swipl")
    env["PATH"] = f"{Path(swipl).parent}{os.pathsep}{env.get('PATH', '')}"
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-c", code, str(work / "hard.yml"), str(work / "out")],
                          cwd=path, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        print("reference: could not run (missing pyswip? see --reference-python):",
              (proc.stderr.strip().splitlines() or [""])[-1])
        return None
    n = sum(1 for _ in (work / "out").rglob("*.png"))
    if n == 0:
        print("reference: wrote no images; skipped")
        return None
    return seconds


if __name__ == "__main__":
    sys.exit(main())
