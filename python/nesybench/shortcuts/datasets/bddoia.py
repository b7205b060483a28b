"""BDD-OIA from a user's copy of rsbench's preprocessed features (nothing is downloaded).

rsbench (rsbench-code, ``rsseval``) reads BDD-OIA as 2048-d Faster-RCNN features, one frame
per file, in this layout::

    DIR/{train,val,test}_BDD_OIA.pkl     a pickled list of dicts, each with "img_path"
                                         (the frame's image name, e.g. "abc_1.jpg")
    DIR/{split}/inputs/<name>.pt         the frame's features: a tensor of 2048 floats
    DIR/{split}/concepts/<name>.pt       its 21 concept labels in {0, 1}
    DIR/{split}/labels/<name>.pt         its action labels in {0, 1}: forward, stop, left,
                                         right (a fifth entry, if present, is ignored)

where ``<name>`` is ``img_path`` without its 4-character extension. Concept positions are named
as rsbench's BDD-OIA models read them (``models/boialtn.py``, ``models/sddoiadpl.py``: BDD-OIA's
own order, :data:`CONCEPTS`), not by the miniBOIA loader's ``CONCEPTS_ORDER``, which rsbench's
BDD-OIA loader uses only for the names it prints and for masking concept supervision. rsbench's
``stop_sign`` and ``clear`` are the driving task's ``traffic_sign`` and ``road_clear``.

:func:`import_bddoia` checks every file (a pickle that is not a list of such dicts, a global
other than numpy arrays in it, a ``.pt`` that is not one tensor, wrong sizes, NaN or infinite
features, labels outside {0, 1}, a path leaving DIR) with one :class:`NesyError` each, and
writes an RS data set folder (atomically) whose splits hold the features instead of images::

    OUT/manifest.json          "input": "features", "feature_dim": 2048, counts, checksums
    OUT/task.yaml              the driving task (its concepts and actions)
    OUT/{split}/features.npy   float32 [N, 2048]
    OUT/{split}/labels.csv     file, label:<action>..., concept:<variable>...

``nesybench nesy train curricula/rs/driving.yaml --data OUT`` trains on it (the concept
extractor is an MLP on the feature vector).
"""
from __future__ import annotations

import csv
import io
import warnings
from pathlib import PurePosixPath

import numpy as np
import yaml

from ...errors import NesyError
from ...folder import DataFolder, check_zip
from ...io import FORMAT_VERSION, atomic_output_dir, checksums, write_json
from ...paths import shipped_text
from ...yamlsafe import load_yaml

SPLITS = ("train", "val", "test")
FEATURE_DIM = 2048
ACTIONS = ("forward", "stop", "left", "right")
#: the concept at each position of a frame's concept tensor, as rsbench's BDD-OIA models read
#: it (BDD-OIA's order: 0-8 the forward/stop concepts, 9-14 the left side, 15-20 the right
#: side), named by the driving task's variables
CONCEPTS = ("green_light", "follow", "road_clear", "red_light", "traffic_sign", "car", "person",
            "rider", "other_obstacle",
            "left_lane", "left_green_light", "left_follow",
            "no_left_lane", "left_obstacle", "left_solid_line",
            "right_lane", "right_green_light", "right_follow",
            "no_right_lane", "right_obstacle", "right_solid_line")
#: the largest index pickle and per-frame tensor file read (a frame is about 9 KB)
MAX_PKL_BYTES = 256 << 20
MAX_PT_BYTES = 1 << 20
#: the most bytes the entries of one ``.pt`` file may declare when decompressed
MAX_PT_UNPACKED = 4 << 20
DRIVING_TASK = "curricula/rs/driving.yaml"


def _load_index(folder: DataFolder, rel: str) -> list[str]:
    from ...unpickle import restricted_load  # noqa: PLC0415 - numpy-only unpickler
    label = folder.label(rel)
    data = folder.read_bytes(rel, max_bytes=MAX_PKL_BYTES)
    try:
        obj = restricted_load(data)
    except NesyError as exc:
        raise exc.where(file=label) from None
    if not isinstance(obj, list) or not obj:
        raise NesyError("the index is not a non-empty list of frames", file=label)
    names, seen = [], set()
    for i, entry in enumerate(obj):
        if not isinstance(entry, dict) or not isinstance(entry.get("img_path"), str):
            raise NesyError("a frame is not a dict with an 'img_path' string", file=label,
                            field=f"[{i}]")
        name = entry["img_path"]
        p = PurePosixPath(name)
        if (len(name) <= 4 or "\x00" in name or "\\" in name or p.is_absolute()
                or any(part in ("", ".", "..") for part in name[:-4].split("/"))):
            raise NesyError(f"img_path {name[:80]!r} is not a relative file name",
                            file=label, field=f"[{i}].img_path")
        if name in seen:
            raise NesyError(f"frame {name[:80]!r} is listed twice", file=label,
                            field=f"[{i}].img_path")
        seen.add(name)
        names.append(name)
    return names


def _tensor(folder: DataFolder, rel: str, size: int | tuple[int, ...], what: str) -> np.ndarray:
    label = folder.label(rel)
    if not folder.exists(rel):
        raise NesyError(f"{what} file is missing", file=label)
    data = folder.read_bytes(rel, max_bytes=MAX_PT_BYTES)
    # a .pt file is a zip archive: its entries' sizes are checked before torch decompresses
    # anything (a 1 MB file may declare gigabytes)
    check_zip(data, label, max_bytes=MAX_PT_UNPACKED)
    import torch  # noqa: PLC0415
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable or hostile file
        raise NesyError(f"not a tensor file written by torch.save ({type(exc).__name__})",
                        file=label) from None
    if not isinstance(t, torch.Tensor) or t.is_complex():
        raise NesyError(f"{what} file does not hold one real tensor", file=label)
    a = t.detach().to(torch.float64).reshape(-1).numpy()
    sizes = (size,) if isinstance(size, int) else size
    if a.size not in sizes:
        raise NesyError(f"{what} has {a.size} values, expected "
                        f"{' or '.join(map(str, sizes))} (shape {tuple(t.shape)})", file=label)
    if not np.all(np.isfinite(a)):
        raise NesyError(f"{what} holds NaN or infinite values", file=label)
    return a


def _binary(a: np.ndarray, label: str, what: str) -> list[int]:
    bad = [x for x in a.tolist() if x not in (0.0, 1.0)]
    if bad:
        raise NesyError(f"{what} value {bad[0]:g} is not 0 or 1", file=label)
    return [int(x) for x in a]


def read_split(folder: DataFolder, split: str):
    """``(names, features float32 [N, 2048], concepts [N][21], actions [N][4])`` of a split,
    every file read through the contained reader (``folder``: the user's copy)."""
    names = _load_index(folder, f"{split}_BDD_OIA.pkl")
    feats = np.empty((len(names), FEATURE_DIM), dtype=np.float32)
    concepts, actions = [], []
    for i, name in enumerate(names):
        rel = name[:-4] + ".pt"
        f = _tensor(folder, f"{split}/inputs/{rel}", FEATURE_DIM, "features")
        if np.any(np.abs(f) > np.finfo(np.float32).max):
            raise NesyError("features overflow float32", file=folder.label(f"{split}/inputs/{rel}"))
        feats[i] = f
        c = f"{split}/concepts/{rel}"
        concepts.append(_binary(_tensor(folder, c, len(CONCEPTS), "concept labels"),
                                folder.label(c), "concept label"))
        lp = f"{split}/labels/{rel}"
        actions.append(_binary(_tensor(folder, lp, (4, 5), "action labels")[:4],
                               folder.label(lp), "action label"))
    return names, feats, concepts, actions


def import_bddoia(src, out, *, overwrite: bool = False,
                  allow_hardlinks: bool | None = None) -> dict:
    """Validate rsbench's BDD-OIA features under ``src`` and write them to ``out`` as an RS data
    set folder (module docstring). Returns ``{"out", "counts", "label_counts"}``. Every file
    of ``src`` is read through :class:`~nesybench.folder.DataFolder` (a link out of the
    folder, a FIFO, a hard-linked file, an archive bomb is one error)."""
    folder = DataFolder(src, allow_hardlinks=allow_hardlinks)
    present = [s for s in SPLITS if folder.exists(f"{s}_BDD_OIA.pkl")]
    for need in ("train", "val"):
        if need not in present:
            raise NesyError(f"no {need}_BDD_OIA.pkl (the {need} split's frame index)",
                            file=str(src))
    data = {s: read_split(folder, s) for s in present}
    task = load_yaml(shipped_text(DRIVING_TASK), DRIVING_TASK)
    task["name"] = "bddoia"
    task.pop("generate", None)
    var_names = [c["name"] for c in task["concepts"]]
    if sorted(var_names) != sorted(CONCEPTS) or list(task["labels"]) != list(ACTIONS):
        raise NesyError("the driving task's concepts or labels are not BDD-OIA's",
                        file=DRIVING_TASK)
    perm = [CONCEPTS.index(n) for n in var_names]
    counts, label_counts = {}, {}
    with atomic_output_dir(out, overwrite=overwrite, inputs=[src]) as tmp:
        for split, (names, feats, concepts, actions) in data.items():
            (tmp / split).mkdir()
            with open(tmp / split / "features.npy", "wb") as fh:
                np.save(fh, feats, allow_pickle=False)
            with open(tmp / split / "labels.csv", "w", newline="") as fh:
                wr = csv.writer(fh, lineterminator="\n")
                wr.writerow(["file", *[f"label:{a}" for a in ACTIONS],
                             *[f"concept:{n}" for n in var_names]])
                hist: dict = {}
                for name, c, a in zip(names, concepts, actions):
                    wr.writerow([name, *a, *[c[j] for j in perm]])
                    key = ",".join(map(str, a))
                    hist[key] = hist.get(key, 0) + 1
            counts[split] = len(names)
            label_counts[split] = dict(sorted(hist.items()))
        (tmp / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=True), encoding="utf-8")
        manifest = {
            "format": "nesybench-rs", "format_version": FORMAT_VERSION, "task": "bddoia",
            "source": "BDD-OIA features (rsbench layout), imported from a local copy",
            "render": None, "input": "features", "feature_dim": FEATURE_DIM,
            "labels": list(ACTIONS),
            "concepts": [{"name": n, "domain": [0, 1]} for n in var_names],
            "counts": counts, "label_counts": label_counts, "warnings": [],
        }
        manifest["checksums"] = checksums(tmp)
        write_json(tmp / "manifest.json", manifest)
    return {"out": str(out), "counts": counts, "label_counts": label_counts}


def finite_features(x: np.ndarray, where: str) -> np.ndarray:
    """``x`` as float32 [N, D] if it is a finite 2-d real array, else a :class:`NesyError`."""
    if x.ndim != 2 or x.dtype.kind not in "fiu" or not x.shape[1]:
        raise NesyError(f"features are not a 2-d real array (shape {x.shape}, dtype {x.dtype})",
                        file=where)
    x = x.astype(np.float32)
    if not np.all(np.isfinite(x)):
        raise NesyError("features hold NaN or infinite values", file=where)
    return x
