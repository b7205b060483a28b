"""Import a data set written by the reference KANDY generator (KANDYBenchmark, Lorello, Lippi
and Melacci) into the nesybench data set layout (:doc:`formats/kandy-dataset`).

The reference writes, per split, ``<sets>/<split>/annotations.csv`` with the columns
``filename`` (relative to the CSV: ``<task>/<index>.png``), ``task_id``, ``label`` (1
positive, 0 negative), ``supervised`` (1/0) and ``symbol`` (the sample as a Python
dictionary-of-lists literal, ``{'stack': [{'shape': 'triangle', 'color': 'red', 'size':
'small'}, ...]}``), next to the PNGs and a ``stats.txt`` (or ``specs.txt``) describing the
tasks. ``<sets>`` is ``DIR/samples/sets``, ``DIR/sets`` or ``DIR`` itself, whichever holds
the three splits.

:func:`import_reference` reads that, checks every row (one-line errors naming file and line),
and writes ``OUT`` as ``kandy generate`` would: ``<split>/annotations.csv`` with our
columns (``symbol`` as compact JSON, ``prolog`` the natural encoding), the PNGs copied
byte for byte to ``<split>/<task>/<index>.png`` in the reference's row order (the stream
order), the reference's description files under ``reference/``, and a ``manifest.json``
(format ``nesybench-kandy``) with per-task split sizes, positives, supervised counts, names,
γ/β where the description gives them, and the sha256 of every file. No ground-truth rule
is imported (the reference keeps its rules inside its curriculum YAML): ``ilp-eval``
then scores theories on the samples only.
"""
from __future__ import annotations

import ast
import csv
import json
import math
import re
from pathlib import Path

from ..errors import NesyError
from ..folder import MAX_TEXT_BYTES, DataFolder, png_size

SPLITS = ("train", "val", "test")
REQUIRED = ("filename", "task_id", "label", "supervised", "symbol")
_PNG = b"\x89PNG\r\n\x1a\n"
_TRUE = {"1", "1.0", "true", "True"}
_FALSE = {"0", "0.0", "false", "False"}


def find_sets(folder: Path) -> Path:
    """The folder holding ``train/``, ``val/``, ``test/`` with their annotations.csv."""
    for cand in (folder / "samples" / "sets", folder / "sets", folder):
        if all((cand / s / "annotations.csv").is_file() for s in SPLITS):
            return cand
    raise NesyError("not a reference KANDY data set (expected samples/sets/{train,val,test}/"
                    "annotations.csv, as the reference generator writes)", file=str(folder))


def _flag(value: str, name: str, path: Path, line: int, negatives=()) -> int:
    v = (value or "").strip()
    if v in _TRUE:
        return 1
    if v in _FALSE or v in negatives:
        return 0
    raise NesyError(f"{name} must be 1 or 0, got {v[:20]!r}", file=str(path), line=line)


def _symbol(text: str, path: Path, line: int):
    from .symbols import from_json  # noqa: PLC0415

    t = (text or "").strip()
    if len(t) > 1_000_000:
        raise NesyError("symbol is too long", file=str(path), line=line)
    try:
        obj = ast.literal_eval(t)              # literals only: no code runs
        return from_json(obj)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise NesyError(f"symbol is not a KANDY sample (a dictionary of lists such as "
                        f"{{'stack': [{{'shape': 'triangle', 'color': 'red', 'size': "
                        f"'small'}}]}}): {t[:60]!r}", file=str(path), line=line) from None


def _png_size(folder: DataFolder, rel: str) -> tuple[int, int]:
    """Width and height from the PNG header (refused over the pixel limit: a 60000x60000
    picture would be imported, then fail every reader)."""
    return png_size(folder.read_bytes(rel), folder.label(rel))


def read_split(sets: Path, split: str) -> list[dict]:
    """The rows of one split, checked; each with ``src`` (the PNG), task, label, supervised,
    symbol (a :mod:`.symbols` tree)."""
    folder = DataFolder(sets)
    path = folder.label(f"{split}/annotations.csv")
    try:
        _, raw = folder.csv_rows(f"{split}/annotations.csv", required=REQUIRED)
    except NesyError as exc:
        if exc.message.startswith("missing column"):
            raise NesyError(f"{exc.message} (the reference's annotations have "
                            f"{', '.join(REQUIRED)})", file=path, line=1) from None
        raise
    rows = []
    for line, r in raw:
        text = (r.get("task_id") or "").strip()
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value.is_integer()):
            raise NesyError(f"task_id must be an integer, got {text[:20]!r}", file=path,
                            line=line)
        tid = int(value)
        if not 0 <= tid < 10_000:
            raise NesyError(f"task_id {tid} out of range (0..9999)", file=path, line=line)
        label = _flag(r.get("label"), "label", path, line, negatives=("-1", "-1.0"))
        sup = _flag(r.get("supervised"), "supervised", path, line)
        name = (r.get("filename") or "").strip()
        if not name:
            raise NesyError("filename is empty", file=path, line=line)
        rel = folder.check(f"{split}/{name}", file=path, line=line, field="filename")
        rows.append({"src": folder, "rel": rel, "task": tid, "label": label, "supervised": sup,
                     "symbol": _symbol(r.get("symbol"), path, line), "line": line})
    if not rows:
        raise NesyError("no samples", file=str(path))
    return rows


def read_description(sets: Path, root: Path) -> tuple[dict[int, dict], list[Path]]:
    """Per-task name/seed/γ/β from the reference's stats.txt or specs.txt (when present) and
    the description files to keep (``.txt``, ``.yml``, ``.yaml``, ``.pl`` next to the splits
    or at the top of the folder)."""
    keep: list[tuple[DataFolder, str]] = []
    for d in dict.fromkeys((sets, root)):
        folder = DataFolder(d)
        # regular files only: a symbolic link (notes.txt -> a file elsewhere) is left out
        for rel in folder.files():
            if rel.lower().endswith((".txt", ".yml", ".yaml", ".pl")):
                keep.append((folder, rel))
    tasks: dict[int, dict] = {}
    for folder, rel in keep:
        if rel not in ("stats.txt", "specs.txt"):
            continue
        current = None
        text = folder.read_bytes(rel, max_bytes=MAX_TEXT_BYTES).decode("utf-8", "replace")
        for raw in text.splitlines():
            m = re.match(r"\s*Task (\d+):\s*$", raw)
            if m:
                current = tasks.setdefault(int(m.group(1)), {})
                continue
            m = re.match(r"\s*(Name|Seed|Gamma|Beta):\s*(.*?)\s*$", raw)
            if m and current is not None:
                key, val = m.group(1).lower(), m.group(2)
                if key == "name":
                    current.setdefault("name", val[:200])
                else:
                    try:
                        current.setdefault(key, int(val) if key == "seed" else float(val))
                    except ValueError:
                        pass
        break
    return tasks, keep


def import_reference(src, out, *, overwrite: bool = False) -> dict:
    """Convert the reference data set in ``src`` into ``out`` (see module docstring);
    returns the manifest written."""
    from .. import __version__  # noqa: PLC0415
    from ..io import atomic_output_dir, checksums, write_json  # noqa: PLC0415
    from .symbols import Domain, leaves  # noqa: PLC0415

    root = Path(src)
    if not root.is_dir():
        raise NesyError("folder not found", file=str(root))
    sets = find_sets(root)
    # the splits' folder (samples/sets, sets or the folder itself) lies inside the folder
    rel_sets = sets.relative_to(root).as_posix()
    if rel_sets != ".":
        DataFolder(root).locate(rel_sets)
    splits = {s: read_split(sets, s) for s in SPLITS}
    desc, keep = read_description(sets, root)
    first = splits["train"][0]
    size = _png_size(first["src"], first["rel"])
    dom = Domain()
    for s, rows in splits.items():
        for r in rows:
            for leaf in leaves(r["symbol"]):
                if (leaf.shape not in dom.shapes or leaf.color not in dom.colors
                        or leaf.size not in dom.sizes):
                    raise NesyError(f"shape {leaf.to_prolog()} is outside KANDY's domain "
                                    f"(shapes {', '.join(dom.shapes)}; colours "
                                    f"{', '.join(dom.colors)}; sizes {', '.join(dom.sizes)})",
                                    file=str(sets / s / "annotations.csv"), line=r["line"])
            w = _png_size(r["src"], r["rel"])
            if w != size:
                raise NesyError(f"image is {w[0]}x{w[1]}, the first one is {size[0]}x{size[1]}",
                                file=r["src"].label(r["rel"]))
    task_ids = sorted({r["task"] for rows in splits.values() for r in rows})
    if not any(r["task"] == t for t in task_ids for r in splits["train"]):
        raise NesyError("no training samples", file=str(sets / "train" / "annotations.csv"))
    with atomic_output_dir(out, overwrite=overwrite, inputs=[root]) as tmp:
        stats = {t: {"split_sizes": {}, "split_positives": {}, "supervised": {}}
                 for t in task_ids}
        for s, rows in splits.items():
            (tmp / s).mkdir()
            counter: dict[int, int] = {}
            with open(tmp / s / "annotations.csv", "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh, lineterminator="\n")
                w.writerow(["filename", "task_id", "label", "supervised", "symbol", "prolog"])
                for r in rows:
                    t = r["task"]
                    k = counter.get(t, 0)
                    counter[t] = k + 1
                    rel = f"{t:02d}/{k:05d}.png"
                    (tmp / s / f"{t:02d}").mkdir(exist_ok=True)
                    (tmp / s / rel).write_bytes(r["src"].read_bytes(r["rel"]))
                    w.writerow([rel, t, r["label"], r["supervised"],
                                json.dumps(r["symbol"].to_json(), separators=(",", ":")),
                                r["symbol"].to_prolog()])
                    st = stats[t]
                    st["split_sizes"][s] = st["split_sizes"].get(s, 0) + 1
                    st["split_positives"][s] = st["split_positives"].get(s, 0) + r["label"]
                    st["supervised"][s] = st["supervised"].get(s, 0) + r["supervised"]
        if keep:
            (tmp / "reference").mkdir()
            for folder, rel in keep:
                (tmp / "reference" / rel).write_bytes(folder.read_bytes(rel))
        tasks = []
        for t in task_ids:
            st = stats[t]
            sizes = {s: st["split_sizes"].get(s, 0) for s in SPLITS}
            pos = sum(st["split_positives"].values())
            d = desc.get(t, {})
            entry = {"id": t, "name": d.get("name", f"task {t}"), "samples": sum(sizes.values()),
                     "splits": sizes, "rule_file": None,
                     "stats": {"positives": pos, "negatives": sum(sizes.values()) - pos,
                               "split_sizes": sizes,
                               "split_positives": {s: st["split_positives"].get(s, 0)
                                                   for s in SPLITS},
                               "supervised": {s: st["supervised"].get(s, 0) for s in SPLITS}}}
            for k in ("seed", "gamma", "beta"):
                if k in d:
                    entry[k] = d[k]
            tasks.append(entry)
        manifest = {
            "format": "nesybench-kandy", "version": "1.1", "generator": f"nesybench {__version__}",
            "imported_from": {"kind": "KANDYBenchmark reference generator",
                              "folder": str(root.resolve()),
                              "sets": str(sets.resolve().relative_to(root.resolve()))
                              if sets.resolve() != root.resolve() else "."},
            "seed": None,
            "config": {"images": True, "render": {"canvas": [size[0], size[1]]},
                       "domain": {"shapes": list(dom.shapes), "colors": list(dom.colors),
                                  "sizes": list(dom.sizes)}},
            "curriculum": None,
            "tasks": tasks,
            "files": checksums(tmp),
        }
        write_json(tmp / "manifest.json", manifest)
    return manifest


def main_summary(man: dict) -> str:
    n = sum(t["samples"] for t in man["tasks"])
    return (f"imported {len(man['tasks'])} tasks, {n} samples "
            f"({man['config']['render']['canvas'][0]}x{man['config']['render']['canvas'][1]})")


__all__ = ["import_reference", "find_sets", "read_split", "read_description"]

