"""A generated KANDY curriculum as tensors: decode every PNG once, keep uint8 in memory.

``load_data(folder, size=64)`` reads ``manifest.json`` (format ``nesybench-kandy``, version
1.x) and ``<split>/annotations.csv`` of ``train``/``val``/``test``, decodes each picture once
(Pillow; optional square resize with an antialiasing box filter) and returns a
:class:`KandyData`: per split a :class:`SplitTensors` with

* ``images``: uint8 ``[N, 3, S, S]`` (channels first),
* ``tasks``, ``labels``: int64 ``[N]``, ``supervised``: bool ``[N]``.

Supervision (γ, β of the curriculum): a sample with ``supervised == 0`` is kept (it is still
evaluated on val/test with its ground-truth label) but its label never reaches a loss nor a
threshold: the learners in :mod:`.settings` implement the **ignore** option (no unsupervised
objective); :meth:`SplitTensors.supervised_indices` is what they draw from.

Class balance: :func:`balanced_order` is the per-task class-balanced epoch the paper trains
with (supp. §2: "sampling positive/negative training data in a class-balanced manner").
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ...errors import NesyError
from ...folder import DataFolder

SPLITS = ("train", "val", "test")
FORMAT = "nesybench-kandy"
SUPPORTED_MAJOR = "1"


@dataclass
class SplitTensors:
    """One split of a curriculum, decoded.

    images: uint8 [N, 3, S, S]; tasks, labels: int64 [N]; supervised: bool [N];
    files: the N relative PNG paths (annotation order).
    """

    images: torch.Tensor
    tasks: torch.Tensor
    labels: torch.Tensor
    supervised: torch.Tensor
    files: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def task_indices(self, task: int) -> torch.Tensor:
        """Indices (int64) of the samples of ``task``."""
        return torch.nonzero(self.tasks == task).flatten()

    def supervised_indices(self, task: int) -> torch.Tensor:
        """Indices of the samples of ``task`` whose label may be used for learning."""
        return torch.nonzero((self.tasks == task) & self.supervised).flatten()

    def batch(self, idx: torch.Tensor, device: str = "cpu") -> torch.Tensor:
        """Float images in [0, 1], shape [len(idx), 3, S, S], on ``device``."""
        return self.images[idx].to(device=device, dtype=torch.float32).div_(255.0)


@dataclass
class KandyData:
    """A decoded curriculum: ``tasks`` = manifest entries (id, name, ...) in curriculum order,
    ``size`` = side of the (square) input in pixels, ``original_size`` = the PNGs' side."""

    root: Path
    tasks: list[dict]
    size: int
    original_size: int
    splits: dict[str, SplitTensors]
    manifest: dict
    decode_seconds: float = 0.0

    @property
    def n_tasks(self) -> int:
        return len(self.tasks)

    @property
    def task_ids(self) -> list[int]:
        return [int(t["id"]) for t in self.tasks]

    def describe(self) -> dict:
        """JSON-able summary recorded with results (input size, counts, supervision)."""
        out = {"dataset": str(self.root), "size": self.size,
               "original_size": self.original_size, "tasks": self.task_ids}
        for s, t in self.splits.items():
            out[f"{s}_samples"] = len(t)
            out[f"{s}_supervised"] = int(t.supervised.sum())
        return out


class KandyDataset(torch.utils.data.Dataset):
    """A ``torch`` Dataset over one decoded split (optionally restricted to some tasks).

    Item ``i`` = ``(image float [3, S, S] in [0, 1], task int, label int, supervised bool)``.
    The learners index :class:`SplitTensors` in whole batches instead (no per-item Python
    overhead); this class is for users plugging KANDY into their own loops.
    """

    def __init__(self, split: SplitTensors, tasks: list[int] | None = None,
                 supervised_only: bool = False):
        self.split = split
        mask = torch.ones(len(split), dtype=torch.bool)
        if tasks is not None:
            mask &= torch.isin(split.tasks, torch.tensor(list(tasks), dtype=torch.int64))
        if supervised_only:
            mask &= split.supervised
        self.index = torch.nonzero(mask).flatten()

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def __getitem__(self, i: int):
        j = int(self.index[i])
        s = self.split
        return (s.images[j].float() / 255.0, int(s.tasks[j]), int(s.labels[j]),
                bool(s.supervised[j]))


def read_manifest(folder: str | os.PathLike, *, images: bool = True) -> dict:
    """The manifest of a generated curriculum, checked (format and major version; with
    ``images``, that the pictures were rendered)."""
    root = Path(folder)
    if not root.is_dir():
        raise NesyError("dataset folder not found", file=str(root))
    path = root / "manifest.json"
    folder = DataFolder(root)               # contained: no symbolic link out, regular files
    if not folder.exists("manifest.json"):
        raise NesyError("not a generated KANDY curriculum (no manifest.json; make one with "
                        "`nesybench kandy generate`)", file=str(root))
    man = folder.read_json("manifest.json")
    if not isinstance(man, dict) or man.get("format") != FORMAT:
        raise NesyError(f"not a nesybench KANDY manifest (format {man.get('format')!r}, "
                        f"expected {FORMAT!r})", file=str(path), field="format")
    version = str(man.get("version", ""))
    if version.split(".")[0] != SUPPORTED_MAJOR:
        raise NesyError(f"format version {version!r} is not supported (this nesybench reads "
                        f"{SUPPORTED_MAJOR}.x; regenerate the curriculum)", file=str(path),
                        field="version")
    if not man.get("tasks"):
        raise NesyError("the manifest lists no tasks", file=str(path), field="tasks")
    if images and not man.get("config", {}).get("images", True):
        raise NesyError("the curriculum was generated without images (--no-images); "
                        "regenerate it with images to train neural models", file=str(path))
    return man


_EDITED = ("does not match the manifest (sha256 differs: truncated or edited after "
           "generation; regenerate the curriculum, or pass --no-verify for a deliberate edit)")


def verify_dataset(folder: str | os.PathLike, man: dict, tasks: list[int] | None = None, *,
                   images: bool = True) -> None:
    """Check a generated curriculum against its manifest before anything learns from it.

    Every file the manifest lists (``files``: relative path → sha256; PNGs only with
    ``images``) must exist with that digest, and each selected task must have, in every
    split's ``annotations.csv``, as many rows as the manifest's ``splits`` entry says. The
    first mismatch is a :class:`NesyError` naming the file. A manifest without ``files``
    (format 1.0) is checked for split sizes only.
    """
    import hashlib  # noqa: PLC0415

    root = Path(folder)
    base = DataFolder(root)                 # contained: no symbolic link out, regular files
    files = man.get("files") or {}
    if not isinstance(files, dict):
        raise NesyError("expected a map of relative paths to SHA-256 digests",
                        file=str(root / "manifest.json"), field="files")
    for rel, digest in sorted(files.items()):
        if not images and str(rel).endswith(".png"):
            continue
        path = root / str(rel)
        if not base.exists(rel, file=str(root / "manifest.json"), field="files"):
            raise NesyError("file listed in the manifest is missing (regenerate the "
                            "curriculum, or pass --no-verify for a deliberate edit)",
                            file=str(path))
        if hashlib.sha256(base.read_bytes(rel)).hexdigest() != digest:
            raise NesyError(f"file {_EDITED}", file=str(path))
    entries = select_tasks(man, tasks, source=str(root))
    want = {int(t["id"]): t.get("splits") or {} for t in entries}
    for split in SPLITS:
        path = root / split / "annotations.csv"
        if not base.exists(f"{split}/annotations.csv"):
            raise NesyError("annotations not found (is this a generated KANDY curriculum?)",
                            file=str(path))
        counts: dict[int, int] = {}
        for _line, r in base.csv_rows(f"{split}/annotations.csv")[1]:
            try:
                tid = int(r.get("task_id") or "")
            except (TypeError, ValueError):
                continue                # reported with its line by the loader
            counts[tid] = counts.get(tid, 0) + 1
        for tid, sizes in want.items():
            if split in sizes and counts.get(tid, 0) != int(sizes[split]):
                raise NesyError(f"task {tid} has {counts.get(tid, 0)} {split} rows, the "
                                f"manifest says {sizes[split]} (truncated or edited; "
                                f"regenerate, or pass --no-verify)", file=str(path),
                                task=str(tid))


def select_tasks(man: dict, tasks: list[int] | None, *, source: str | None = None) -> list[dict]:
    """Manifest task entries for the ids in ``tasks`` (all when None), in curriculum order."""
    entries = sorted(man["tasks"], key=lambda t: int(t["id"]))
    if tasks is None:
        return entries
    by_id = {int(t["id"]): t for t in entries}
    bad = [t for t in tasks if t not in by_id]
    if bad:
        raise NesyError(f"task index {bad[0]} out of range (the curriculum has tasks "
                        f"{min(by_id)}..{max(by_id)})", file=source, task=str(bad[0]),
                        field="tasks")
    if len(set(tasks)) != len(tasks):
        raise NesyError("a task is listed twice", file=source, field="tasks")
    return [by_id[t] for t in sorted(tasks)]


def _decode(folder: DataFolder, rel: str, size: int | None):
    from PIL import Image  # noqa: PLC0415

    path = folder.label(rel)
    try:
        with folder.image(rel) as im:
            im = im.convert("RGB")
            w, h = im.size
            if size is not None and (w, h) != (size, size):
                im = im.resize((size, size), Image.Resampling.BOX)
            return np.asarray(im, dtype=np.uint8), w
    except (OSError, ValueError) as exc:
        raise NesyError(f"cannot decode image: {exc}", file=str(path)) from None


def load_data(folder: str | os.PathLike, *, size: int | None = 64,
              tasks: list[int] | None = None, progress: bool = False,
              verify: bool = True) -> KandyData:
    """Decode a generated curriculum (see module docstring). ``size`` None keeps the PNGs'
    resolution; ``tasks`` restricts to some task ids (curriculum order is kept). ``verify``
    checks the files against the manifest first (:func:`verify_dataset`)."""
    import time  # noqa: PLC0415

    t0 = time.perf_counter()
    root = Path(folder).resolve()
    man = read_manifest(root)
    entries = select_tasks(man, tasks, source=str(root))
    if verify:
        verify_dataset(root, man, tasks)
    wanted = {int(t["id"]) for t in entries}
    if size is not None and (not isinstance(size, int) or size < 8):
        raise NesyError(f"input size must be an integer >= 8, got {size!r}", field="size")
    rows_by_split: dict[str, list[dict]] = {}
    contained = DataFolder(root)            # contained: no symbolic link out, regular files
    for split in SPLITS:
        path = root / split / "annotations.csv"
        if not contained.exists(f"{split}/annotations.csv"):
            raise NesyError("annotations not found (is this a generated KANDY curriculum?)",
                            file=str(path))
        header, reader = contained.csv_rows(f"{split}/annotations.csv")
        missing = {"filename", "task_id", "label", "supervised"} - set(header)
        if missing:
            raise NesyError(f"missing column(s) {', '.join(sorted(missing))}",
                            file=str(path), line=1)
        rows = []
        for line, r in reader:
            try:
                tid, lab, sup = int(r["task_id"]), int(r["label"]), int(r["supervised"])
            except (TypeError, ValueError):
                raise NesyError("task_id, label and supervised must be integers",
                                file=str(path), line=line) from None
            if lab not in (0, 1) or sup not in (0, 1):
                raise NesyError("label and supervised must be 0 or 1", file=str(path),
                                line=line)
            if tid in wanted:
                rows.append({"file": r["filename"], "task": tid, "label": lab,
                             "supervised": sup})
        rows_by_split[split] = rows
    total = sum(len(r) for r in rows_by_split.values())
    bar = None
    if progress:
        from tqdm import tqdm  # noqa: PLC0415

        bar = tqdm(total=total, desc="decode", unit="img", leave=False)
    splits: dict[str, SplitTensors] = {}
    side = None
    orig = None
    for split, rows in rows_by_split.items():
        arrays = []
        for r in rows:
            rel = contained.check(f"{split}/{r['file']}",
                                  file=str(root / split / "annotations.csv"))
            arr, w = _decode(contained, rel, size)
            if side is None:
                side, orig = arr.shape[0], w
            elif arr.shape[:2] != (side, side):
                raise NesyError(f"image is {arr.shape[1]}x{arr.shape[0]}, others are "
                                f"{side}x{side} (give a --size)", file=str(root / split / r["file"]))
            arrays.append(arr)
            if bar is not None:
                bar.update(1)
        if arrays:
            images = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2).contiguous()
        else:
            images = torch.zeros((0, 3, side or (size or 1), side or (size or 1)),
                                 dtype=torch.uint8)
        splits[split] = SplitTensors(
            images=images,
            tasks=torch.tensor([r["task"] for r in rows], dtype=torch.int64),
            labels=torch.tensor([r["label"] for r in rows], dtype=torch.int64),
            supervised=torch.tensor([bool(r["supervised"]) for r in rows], dtype=torch.bool),
            files=[r["file"] for r in rows])
    if bar is not None:
        bar.close()
    if not len(splits["train"]):
        raise NesyError("the selected tasks have no training samples", file=str(root))
    return KandyData(root=root, tasks=entries, size=int(side), original_size=int(orig),
                     splits=splits, manifest=man, decode_seconds=time.perf_counter() - t0)


def balanced_order(labels: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """A class-balanced epoch over positions ``0..len(labels)-1``.

    Each class present is drawn as often as the larger one: the minority class is repeated
    through fresh random permutations (every sample used before any is reused), then the
    whole epoch is shuffled. Length = 2·max(n_pos, n_neg) when both classes are present, else
    len(labels) (one class: a plain permutation). Returns int64 positions.
    """
    labels = labels.flatten()
    pos = torch.nonzero(labels == 1).flatten()
    neg = torch.nonzero(labels == 0).flatten()
    if len(pos) == 0 or len(neg) == 0:
        return torch.randperm(len(labels), generator=gen)
    n = max(len(pos), len(neg))
    parts = []
    for cls in (pos, neg):
        reps = -(-n // len(cls))
        perm = torch.cat([cls[torch.randperm(len(cls), generator=gen)] for _ in range(reps)])
        parts.append(perm[:n])
    both = torch.cat(parts)
    return both[torch.randperm(len(both), generator=gen)]
