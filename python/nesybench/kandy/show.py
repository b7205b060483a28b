"""Sample grids: one picture per task, positives vs negatives, with the rule printed.

Reads a generated curriculum folder (docs/formats/kandy-dataset.md) or plain annotation rows. Pure
Pillow (no display needed). When an image file cannot be found, the sample is re-rendered from
its ``symbol`` column with :func:`nesybench.kandy.render.render`.
"""
from __future__ import annotations

import csv
import json
import os
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..errors import NesyError
from ..folder import DataFolder, json_loads
from .render import PNG_SAVE_OPTIONS, RenderConfig, render

SPLITS = ("train", "val", "test")
REQUIRED_COLUMNS = ("filename", "task_id", "label", "supervised", "symbol")

_FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu",
              "/usr/share/fonts/TTF", "/Library/Fonts", "C:/Windows/Fonts")


def _font(size: int, mono: bool = False):
    names = ("DejaVuSansMono.ttf",) if mono else ("DejaVuSans.ttf",)
    for d in _FONT_DIRS:
        for name in names:
            path = os.path.join(d, name)
            if os.path.exists(path):
                return ImageFont.truetype(path, size)
    try:
        return ImageFont.load_default(size)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def read_dataset(dataset_dir) -> tuple[dict, list[dict]]:
    """Read ``manifest.json`` (``{}`` if absent) and every split's ``annotations.csv``.

    Returns ``(manifest, rows)``; each row is the CSV row (strings) plus ``split`` and ``path``
    (absolute :class:`Path` of the image), in split order train, val, test then file order.
    """
    root = Path(dataset_dir)
    if not root.is_dir():
        raise NesyError("not a dataset folder", file=str(root))
    manifest: dict = {}
    folder = DataFolder(root)               # contained: no symbolic link out, regular files
    if folder.exists("manifest.json"):
        manifest = folder.read_json("manifest.json")
    rows: list[dict] = []
    found = False
    for split in SPLITS:
        rel = f"{split}/annotations.csv"
        if not folder.exists(rel):
            continue
        found = True
        header, raw = folder.csv_rows(rel)
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise NesyError(f"annotations.csv lacks column(s) {missing}", file=folder.label(rel))
        for _, row in raw:
            row["split"] = split
            row["path"] = root / split / str(row.get("filename"))
            row["_folder"] = folder
            rows.append(row)
    if not found:
        raise NesyError("no <split>/annotations.csv found (expected train/val/test)",
                        file=str(root))
    return manifest, rows


def task_info(manifest: Mapping, dataset_dir=None) -> dict[int, dict]:
    """``{task id: {"name": ..., "rule": Prolog text or ""}}`` from a manifest (rule files
    read inside ``dataset_dir`` through the contained reader)."""
    out: dict[int, dict] = {}
    folder = None if dataset_dir is None else DataFolder(dataset_dir)
    for t in manifest.get("tasks", []) or []:
        try:
            tid = int(t.get("id"))
        except (TypeError, ValueError):
            continue
        rule = ""
        rf = t.get("rule_file")
        if rf and folder is not None:
            where = {"file": folder.label("manifest.json"), "field": "rule_file"}
            if folder.exists(rf, **where):      # inside the folder, a regular file
                rule = folder.read_text(rf, **where)
        out[tid] = {"name": str(t.get("name", "")), "rule": rule}
    if folder is not None:  # rules/<id>.pl present without a manifest entry
        rdir = Path(dataset_dir) / "rules"
        if rdir.is_dir() and not rdir.is_symlink():
            for rel in folder.files("rules"):
                stem = Path(rel).stem
                if rel.endswith(".pl") and stem.isdigit():
                    info = out.setdefault(int(stem), {"name": "", "rule": ""})
                    if not info["rule"]:
                        info["rule"] = folder.read_text(rel)
    return out


def _thumb(row: Mapping, root, size: int, config: RenderConfig | None) -> Image.Image:
    path = row.get("path")
    if path is None and root is not None and row.get("filename"):
        path = Path(root) / row.get("split", "") / row["filename"]
    img = None
    folder = row.get("_folder")
    if folder is None and root is not None:
        folder = DataFolder(root)
    rel = f"{row.get('split', '')}/{row.get('filename')}" if row.get("filename") else None
    if folder is not None and rel is not None and folder.exists(rel):
        img = folder.image(rel).convert("RGB")       # inside the folder, bounded pixels
    if img is None:
        sym = row.get("symbol")
        if not sym:
            raise NesyError(f"sample {row.get('filename')!r} has neither an image nor a symbol")
        seed = int(row.get("seed", 0) or 0)
        img = render(json_loads(sym) if isinstance(sym, str) else sym, config, seed)
    return img.resize((size, size), Image.LANCZOS)


def sample_grid(source, task_id: int, n: int = 8, rule_text: str | None = None, *,
                title: str | None = None, root=None, config: RenderConfig | None = None,
                thumb: int = 112, per_row: int = 8) -> Image.Image:
    """A figure of task ``task_id``: up to ``n`` positives (row(s) framed green) above up to
    ``n`` negatives (framed red), titled with the task name and followed by ``rule_text``.

    ``source`` is a dataset folder (docs/formats/kandy-dataset.md) or an iterable of annotation rows
    (dicts with ``task_id``, ``label``, ``filename``/``path``, ``symbol``; ``root`` + ``split``
    locate images when ``path`` is missing, otherwise the symbol is rendered with ``config``).
    With a folder, the title and rule default to the manifest's name and ``rules/<id>.pl``.
    Samples are taken in file order (train, val, test). ``thumb`` is the thumbnail side (px).
    """
    if n < 1:
        raise NesyError(f"n must be >= 1, got {n}")
    task_id = int(task_id)
    info: dict = {}
    if isinstance(source, (str, os.PathLike)):
        root = Path(source)
        manifest, rows = read_dataset(root)
        info = task_info(manifest, root).get(task_id, {})
    else:
        rows = list(source)
    rows = [r for r in rows if int(r["task_id"]) == task_id]
    if not rows:
        raise NesyError(f"no samples for task {task_id}", task=str(task_id))
    if rule_text is None:
        rule_text = info.get("rule", "")
    if title is None:
        name = info.get("name", "")
        title = f"Task {task_id}" + (f": {name}" if name else "")
    groups = [("positives", [r for r in rows if int(r["label"]) == 1][:n], (40, 160, 60)),
              ("negatives", [r for r in rows if int(r["label"]) == 0][:n], (200, 50, 50))]

    margin, gap, label_w, frame = 14, 6, 110, 3
    per_row = max(1, min(per_row, n))
    cell = thumb + 2 * frame
    grid_w = per_row * cell + (per_row - 1) * gap
    width = margin * 2 + label_w + grid_w
    f_title, f_label, f_rule = _font(22), _font(16), _font(13, mono=True)
    char_w = max(1, int(f_rule.getlength("m")))
    wrap = max(20, (width - 2 * margin) // char_w)
    rule_lines: list[str] = []
    for line in (rule_text or "").rstrip().splitlines():
        rule_lines.extend(textwrap.wrap(line, wrap, subsequent_indent="    ",
                                        drop_whitespace=False) or [""])
    if len(rule_lines) > 40:
        rule_lines = rule_lines[:39] + [f"... ({len(rule_lines) - 39} more lines)"]
    line_h = 17
    rows_per_group = [max(1, -(-len(g[1]) // per_row)) for g in groups]
    height = (margin + 30 + sum(r * (cell + gap) + 10 for r in rows_per_group)
              + (len(rule_lines) * line_h + 24 if rule_lines else 0) + margin)

    canvas = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(canvas)
    draw.text((margin, margin), title, fill=(20, 20, 20), font=f_title)
    y = margin + 36
    for (label, items, colour), nrows in zip(groups, rows_per_group):
        draw.text((margin, y + cell // 2 - 10), f"{label}", fill=colour, font=f_label)
        draw.text((margin, y + cell // 2 + 10), f"({len(items)} shown)", fill=(110, 110, 110),
                  font=_font(12))
        if not items:
            draw.text((margin + label_w, y + cell // 2 - 8), "(none)", fill=(110, 110, 110),
                      font=f_label)
        for i, row in enumerate(items):
            x0 = margin + label_w + (i % per_row) * (cell + gap)
            y0 = y + (i // per_row) * (cell + gap)
            draw.rectangle((x0, y0, x0 + cell - 1, y0 + cell - 1), fill=colour)
            canvas.paste(_thumb(row, root, thumb, config), (x0 + frame, y0 + frame))
        y += nrows * (cell + gap) + 10
    if rule_lines:
        draw.line((margin, y + 4, width - margin, y + 4), fill=(200, 200, 200))
        y += 14
        for line in rule_lines:
            draw.text((margin, y), line, fill=(30, 30, 90), font=f_rule)
            y += line_h
    return canvas


def write_task_grids(dataset_dir, out_dir, n: int = 8, *, thumb: int = 112,
                     tasks: Iterable[int] | None = None, overwrite: bool = False,
                     progress: bool = False) -> list[Path]:
    """Write ``out_dir/task_<id>.png`` (id zero-padded to 2) for every task of a dataset.

    Returns the written paths in task order. ``tasks`` restricts to some task ids. The folder
    is written atomically (:func:`nesybench.io.atomic_output_dir`: an existing one is replaced
    only with ``overwrite`` and only when it is empty or a nesybench output).
    """
    from ..io import atomic_output_dir, check_no_links  # noqa: PLC0415
    if n < 1:
        raise NesyError(f"-n must be >= 1, got {n}")
    root = Path(dataset_dir)
    manifest, rows = read_dataset(root)
    info = task_info(manifest, root)
    ids = sorted({int(r["task_id"]) for r in rows})
    if tasks is not None:
        wanted = {int(t) for t in tasks}
        unknown = sorted(wanted - set(ids))
        if unknown:
            raise NesyError(f"no samples for task(s) {unknown}", file=str(root))
        ids = [t for t in ids if t in wanted]
    out = check_no_links(out_dir)        # before anything resolves it
    from tqdm import tqdm  # noqa: PLC0415
    names = []
    with atomic_output_dir(out, overwrite=overwrite, inputs=[root]) as tmp:
        for tid in tqdm(ids, desc="grids", unit="task", disable=not progress, leave=False):
            t = info.get(tid, {})
            name = t.get("name", "")
            img = sample_grid([r for r in rows if int(r["task_id"]) == tid], tid, n,
                              t.get("rule", ""), root=root, thumb=thumb,
                              title=f"Task {tid}" + (f": {name}" if name else ""))
            names.append(f"task_{tid:02d}.png")
            img.save(tmp / names[-1], **PNG_SAVE_OPTIONS)
    return [out.resolve() / nm for nm in names]


__all__ = ["read_dataset", "task_info", "sample_grid", "write_task_grids"]
