"""One KANDY task as the ILP export and evaluation read it: the dataset folder, the task's
manifest entry, its samples per split in ``annotations.csv`` order, and its ground-truth rule.

:func:`load_task` reads a dataset once; :func:`~nesybench.kandy.ilp.export.export_task` and
:func:`~nesybench.kandy.ilp.evaluate.evaluate_theory` take the :class:`IlpTask` it returns (or
a dataset path, which they load the same way).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NesyError
from ...folder import DataFolder, checksum_map, relative
from ..symbols import Symbol, from_prolog
from .bias import SPLITS


@dataclass(frozen=True)
class Sample:
    """One row of ``annotations.csv`` for the task."""

    split: str
    row: int            # 2-based line in annotations.csv (header is line 1)
    label: int
    supervised: bool
    text: str           # natural encoding
    symbol: Symbol


@dataclass
class IlpTask:
    """A task read once: ``root`` (the dataset folder), ``id``, ``meta`` (its manifest entry,
    {} without a manifest), ``manifest`` (the whole manifest or None) and ``splits``
    (split name -> samples in file order)."""

    root: Path
    id: int
    meta: dict
    manifest: dict | None
    splits: dict[str, list[Sample]] = field(default_factory=dict)

    def rule(self) -> tuple[str, str] | None:
        """``(label, text)`` of the ground-truth rule file (the manifest's ``rule_file``, else
        ``rules/NN.pl``), read through the data set's :class:`~nesybench.folder.DataFolder`:
        a relative path inside the folder, a regular file without a link out, its SHA-256
        checked when the manifest's ``files`` lists it. None when the data set has no rule
        file; a ``rule_file`` that leaves the folder is one :class:`NesyError`."""
        man = self.manifest or {}
        mfile = str(self.root / "manifest.json")
        folder = DataFolder(self.root, checksums=checksum_map(
            man.get("files") if isinstance(man, dict) else None, file=mfile, field="files"))
        cands: list[tuple[str, dict]] = []
        if self.meta.get("rule_file"):
            cands.append((self.meta["rule_file"],
                          {"file": mfile, "field": "rule_file"}))
        cands += [(f"rules/{self.id:02d}.pl", {}), (f"rules/{self.id}.pl", {})]
        for rel, where in cands:
            if folder.exists(rel, **where):
                return folder.label(relative(rel)), folder.read_text(rel, **where)
        return None

    @property
    def seed(self) -> int:
        """The task's generation seed (the manifest's, else the dataset's, else 0)."""
        man = self.manifest or {}
        return int(self.meta.get("seed", man.get("seed", 0)) or 0)


def read_manifest(root: Path) -> dict | None:
    """``manifest.json`` of a dataset folder, or None when it has none."""
    folder = DataFolder(root)               # contained: no symbolic link out, regular files
    if not folder.exists("manifest.json"):
        return None
    return folder.read_json("manifest.json")


def dataset_dir(dataset) -> Path:
    """The dataset folder, checked to hold at least one ``<split>/annotations.csv``."""
    d = Path(dataset)
    if not d.is_dir():
        raise NesyError("dataset folder not found", file=str(d))
    if not any((d / s / "annotations.csv").exists() for s in SPLITS):
        raise NesyError("not a KANDY dataset (no <split>/annotations.csv; see docs/formats/kandy-dataset.md)",
                        file=str(d))
    return d


def _read_samples(dataset_dir: Path, task_id: int) -> dict[str, list[Sample]]:
    """Every split's samples of one task, in ``annotations.csv`` order."""
    out: dict[str, list[Sample]] = {}
    folder = DataFolder(dataset_dir)        # contained: no symbolic link out, regular files
    for split in SPLITS:
        path = dataset_dir / split / "annotations.csv"
        if not folder.exists(f"{split}/annotations.csv"):
            continue
        rows: list[Sample] = []
        header, reader = folder.csv_rows(f"{split}/annotations.csv")
        missing = {"task_id", "label", "prolog"} - set(header)
        if missing:
            raise NesyError(f"missing column(s) {', '.join(sorted(missing))}",
                            file=str(path), line=1)
        for line, rec in reader:
            try:
                tid = int(rec["task_id"])
            except (TypeError, ValueError):
                raise NesyError(f"bad task_id {rec['task_id']!r}", file=str(path),
                                field="task_id", line=line) from None
            if tid != task_id:
                continue
            label = (rec.get("label") or "").strip()
            if label not in ("0", "1"):
                raise NesyError(f"bad label {label!r} (expected 0 or 1)", file=str(path),
                                field="label", line=line, task=str(task_id))
            text = (rec.get("prolog") or "").strip()
            try:
                sym = from_prolog(text)
            except (ValueError, IndexError) as exc:
                raise NesyError(f"bad sample: {exc}", file=str(path), field="prolog",
                                line=line, task=str(task_id)) from None
            sup = (rec.get("supervised") or "1").strip() != "0"
            rows.append(Sample(split, line, int(label), sup, sym.to_prolog(), sym))
        out[split] = rows
    return out


def task_ids(dataset, manifest: dict | None = None) -> list[int]:
    """Every task id of the dataset (the manifest's, else those in the annotations)."""
    d = Path(dataset)
    man = manifest if manifest is not None else read_manifest(d)
    if man is not None and man.get("tasks"):
        return sorted(int(t["id"]) for t in man["tasks"])
    ids: set[int] = set()
    folder = DataFolder(d)                  # contained: no symbolic link out, regular files
    for split in SPLITS:
        if folder.exists(f"{split}/annotations.csv"):
            for line, r in folder.csv_rows(f"{split}/annotations.csv")[1]:
                try:
                    ids.add(int(r.get("task_id")))
                except (TypeError, ValueError):
                    raise NesyError(f"bad task_id {r.get('task_id')!r}",
                                    file=str(d / split / "annotations.csv"), field="task_id",
                                    line=line) from None
    return sorted(ids)


def load_task(dataset: "str | os.PathLike | IlpTask", task_id=None, *,
              manifest: dict | None = None) -> IlpTask:
    """Read task ``task_id`` of ``dataset`` (an :class:`IlpTask` is returned as it is).
    ``manifest``: the dataset's manifest when the caller has read it already."""
    if isinstance(dataset, IlpTask):
        return dataset
    d = dataset_dir(dataset)
    try:
        tid = int(task_id)
    except (TypeError, ValueError):
        raise NesyError(f"bad task id {task_id!r} (expected an integer)", task=str(task_id)) from None
    man = manifest if manifest is not None else read_manifest(d)
    meta: dict = {}
    if man is not None:
        meta = next((t for t in man.get("tasks", []) if int(t.get("id", -1)) == tid), None)
        if meta is None:
            raise NesyError(f"unknown task id {tid}", file=str(d / "manifest.json"),
                            task=str(tid))
    splits = _read_samples(d, tid)
    if not any(splits.values()):
        raise NesyError(f"unknown task id {tid}: no samples in any split", file=str(d),
                        task=str(tid))
    return IlpTask(d, tid, meta, man, splits)
