"""Reasoning-shortcut data sets: images + labels + concept vectors, per split.

* in-distribution worlds = the task's support (train / val / test), OOD worlds = the rest
  (a generated support, ``{generator: miniboia}``, brings its own: the generator's draws left
  out of the support; its splits draw a world as often as the generator kept it);
* every split is balanced over the label values (positives and negatives for a Boolean
  label; every label vector for multilabel tasks) as far as the split's worlds allow
  (``balance: equal``, the default); a miniBOIA support can instead give each split rsbench's
  images (``balance: rsbench``: rsbench's ``configurations_split``, see
  :func:`nesybench.shortcuts.datasets.miniboia.rsbench_images`; its OOD split is the kept
  configurations too, the buckets in reverse order, labelled by the task's knowledge, so
  rsbench's OOD split is that of ``driving_ambulance``);
* digits come from held-out pools: scikit-learn's bundled 8x8 handwritten digits (upscaled
  to 28x28), an MNIST IDX folder or a folder of PNGs in 0/ ... 9/; train, val, test and OOD images never share a source image;
* ``render: kandinsky`` and ``render: driving`` draw scenes with Pillow.

Output (written atomically)::

    OUT/manifest.json                      task, seed, splits, counts, domains, checksums
    OUT/task.yaml                          the task spec used
    OUT/{train,val,test,ood}/NNNNN.png
    OUT/{split}/labels.csv                 file, label:<L>..., concept:<variable>...

:class:`RSDataset` reads it back as a PyTorch ``Dataset``.
"""
from __future__ import annotations

import csv
import fnmatch
import json
import os
import random
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from PIL import Image, ImageDraw

from ..errors import NesyError
from ..folder import DataFolder, gunzip
from ..io import (FORMAT_VERSION, atomic_output_dir, check_replaceable, checksums, derive_seed,
                  progress_delay, write_json)
from .task import Task

SPLITS = ("train", "val", "test", "ood")
POOL_FRACTIONS = {"train": 0.6, "val": 0.1, "test": 0.15, "ood": 0.15}


@dataclass
class GenerateResult:
    out: str
    counts: dict
    label_counts: dict
    warnings: list = field(default_factory=list)
    blender: dict | None = None


# -- digit pools -----------------------------------------------------------------------------
#: the MNIST IDX files of a --mnist folder (uncompressed or .gz)
_IDX_IMAGES, _IDX_LABELS = "*images-idx3-ubyte*", "*labels-idx1-ubyte*"


def _read_idx(folder: DataFolder, rel: str, ndim: int) -> np.ndarray:
    """The unsigned-byte array of the IDX file ``rel`` of ``folder`` (gzip when it ends in
    ``.gz``), read through the contained reader (decompressed in bounded steps), its header
    checked: type 0x08 (unsigned bytes), ``ndim`` dimensions whose product is the number of
    bytes that follow."""
    label = folder.label(rel)
    data = folder.read_bytes(rel)
    if rel.endswith(".gz"):
        data = gunzip(data, label)
    if len(data) < 4 or data[:3] != b"\0\0\x08" or data[3] != ndim:
        raise NesyError(f"not an MNIST IDX file of {ndim}-d unsigned bytes (its magic number "
                        f"should be 0x0000080{ndim})", file=label)
    head = 4 + 4 * ndim
    if len(data) < head:
        raise NesyError("the IDX header is cut short", file=label)
    dims = struct.unpack(">" + "I" * ndim, data[4:head])
    if int(np.prod(dims, dtype=object)) != len(data) - head:
        raise NesyError(f"the IDX header declares {' x '.join(map(str, dims))} bytes, the file "
                        f"holds {len(data) - head:,}", file=label)
    return np.frombuffer(data, dtype=np.uint8, offset=head).reshape(dims)


def load_digits_source(mnist: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(images uint8 [N, 28, 28], labels [N])`` from an MNIST IDX folder, a folder of PNGs in
    ``0/`` ... ``9/``, or scikit-learn's bundled digits (default). A folder is read through
    :class:`~nesybench.folder.DataFolder`: regular files inside it (a link out, a FIFO or a file
    over the size limit is one error), gzip decompressed in bounded steps, pictures' pixels
    counted before decoding."""
    if mnist:
        root = Path(mnist)
        folder = DataFolder(root)
        if all((root / str(d)).is_dir() for d in range(10)):   # PNG folders 0/ ... 9/
            xs, ys = [], []
            for d in range(10):
                for rel in folder.files(str(d)):
                    if rel.endswith(".png"):
                        xs.append(np.asarray(folder.image(rel).convert("L").resize((28, 28))))
                        ys.append(d)
            if not xs:
                raise NesyError("no PNG digits under 0/ ... 9/", file=str(root))
            return np.stack(xs), np.array(ys)
        names = folder.files()
        imgs = [n for n in names if fnmatch.fnmatchcase(n, _IDX_IMAGES)]
        labs = [n for n in names if fnmatch.fnmatchcase(n, _IDX_LABELS)]
        if not imgs or len(imgs) != len(labs):
            raise NesyError("no MNIST IDX files (*images-idx3-ubyte[.gz], *labels-idx1-ubyte[.gz]; "
                            "symbolic links are not followed)",
                            file=str(root))
        xs = [_read_idx(folder, n, 3) for n in imgs]
        ys = [_read_idx(folder, n, 1) for n in labs]
        for n, a in zip(imgs, xs):
            if a.shape[1:] != xs[0].shape[1:]:
                raise NesyError(f"pictures of {a.shape[1]}x{a.shape[2]} pixels, {imgs[0]} has "
                                f"{xs[0].shape[1]}x{xs[0].shape[2]}", file=folder.label(n))
        for (n, a), b in zip(zip(imgs, xs), ys):
            if len(a) != len(b):
                raise NesyError(f"{len(a):,} pictures, its labels file has {len(b):,}",
                                file=folder.label(n))
        return np.concatenate(xs), np.concatenate(ys).astype(int)
    from sklearn.datasets import load_digits  # noqa: PLC0415 - bundled, no download
    d = load_digits()
    x = (d.images / 16.0 * 255).astype(np.uint8)
    big = np.stack([np.asarray(Image.fromarray(im).resize((24, 24), Image.BILINEAR)) for im in x])
    out = np.zeros((len(x), 28, 28), dtype=np.uint8)
    out[:, 2:26, 2:26] = big
    return out, d.target.astype(int)


def digit_pools(x, y, seed) -> dict[str, dict[int, list[int]]]:
    """Disjoint per-split index pools for every digit class."""
    rng = random.Random(derive_seed("rs-digit-pools", seed))
    pools = {s: {} for s in SPLITS}
    for cls in sorted(set(y.tolist())):
        idx = [int(i) for i in np.flatnonzero(y == cls)]
        rng.shuffle(idx)
        start = 0
        for s in SPLITS:
            k = max(1, int(round(POOL_FRACTIONS[s] * len(idx))))
            pools[s][cls] = idx[start:start + k] or idx[-1:]
            start += k
    return pools


# -- renderers --------------------------------------------------------------------------------
COLOURS = {"red": (220, 40, 40), "yellow": (235, 200, 30), "blue": (40, 80, 220),
           "green": (40, 170, 60), "purple": (150, 60, 180), "orange": (240, 130, 20)}


def render_digits(task: Task, world, rng, x, pools, split) -> Image.Image:
    tiles = []
    for v, val in zip(task.variables, world):
        if not isinstance(val, int) or val not in pools[split]:
            raise NesyError(f"no digit images for value {val!r} of {v.name}", file=task.source)
        tiles.append(x[rng.choice(pools[split][val])])
    return Image.fromarray(np.concatenate(tiles, axis=1)).convert("L")


def render_kandinsky(task: Task, world, rng, *_) -> Image.Image:
    vals = {v.term: x for v, x in zip(task.variables, world)}
    figs = sorted({t[1] for t in vals if isinstance(t, tuple) and t[0] == "shape"})
    size = 64
    img = Image.new("RGB", (size * len(figs), size), (127, 127, 127))
    d = ImageDraw.Draw(img)
    for fi, f in enumerate(figs):
        objs = sorted(t[2] for t in vals if isinstance(t, tuple) and t[0] == "shape" and t[1] == f)
        slots = [(cx, cy) for cy in (16, 48) for cx in (16, 48)]
        rng.shuffle(slots)
        for o, (cx, cy) in zip(objs, slots):
            cx, cy = cx + fi * size + rng.randint(-3, 3), cy + rng.randint(-3, 3)
            r = rng.randint(8, 11)
            col = COLOURS.get(str(vals[("color", f, o)]), (0, 0, 0))
            shape = vals[("shape", f, o)]
            if shape == "circle":
                d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=col)
            elif shape == "square":
                d.rectangle([cx - r, cy - r, cx + r, cy + r], fill=col)
            else:
                d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=col)
        if fi:
            d.line([(fi * size, 0), (fi * size, size)], fill=(255, 255, 255))
    return img


def render_driving(task: Task, world, rng, *_) -> Image.Image:
    on = {str(v.term) for v, x in zip(task.variables, world) if x == 1}
    img = Image.new("RGB", (128, 128), (90, 150, 90))
    d = ImageDraw.Draw(img)
    d.rectangle([40, 0, 88, 128], fill=(70, 70, 70))                      # own road
    j = lambda: rng.randint(-2, 2)  # noqa: E731
    if "left_lane" in on:
        d.rectangle([8, 0, 40, 128], fill=(80, 80, 80))
    if "right_lane" in on:
        d.rectangle([88, 0, 120, 128], fill=(80, 80, 80))
    if "no_left_lane" in on:
        d.rectangle([30, 0, 40, 128], fill=(120, 90, 60))
    if "no_right_lane" in on:
        d.rectangle([88, 0, 98, 128], fill=(120, 90, 60))
    if "left_solid_line" in on:
        d.line([(40, 0), (40, 128)], fill=(250, 250, 250), width=3)
    if "right_solid_line" in on:
        d.line([(88, 0), (88, 128)], fill=(250, 250, 250), width=3)
    if "road_clear" in on:
        d.line([(64, 10), (64, 60)], fill=(250, 250, 120), width=2)
    lights = [("red_light", (220, 30, 30), 44), ("green_light", (30, 220, 30), 56),
              ("left_green_light", (30, 220, 30), 4), ("right_green_light", (30, 220, 30), 116)]
    for name, col, x0 in lights:
        if name in on:
            d.rectangle([x0 - 4, 2, x0 + 4, 14], fill=(20, 20, 20))
            d.ellipse([x0 - 3 + j(), 4, x0 + 3, 10], fill=col)
    if "traffic_sign" in on:
        d.regular_polygon((100 + j(), 30, 8), 8, fill=(200, 0, 0))
    objs = [("car", (30, 60, 200), (56, 30), "rect"), ("follow", (200, 200, 200), (64, 70), "rect"),
            ("person", (240, 200, 160), (76, 44), "circle"), ("rider", (160, 60, 200), (50, 50), "circle"),
            ("other_obstacle", (240, 140, 0), (68, 20), "tri"),
            ("left_obstacle", (30, 60, 200), (24, 40), "rect"), ("left_follow", (200, 200, 200), (24, 80), "rect"),
            ("right_obstacle", (30, 60, 200), (104, 40), "rect"), ("right_follow", (200, 200, 200), (104, 80), "rect")]
    for name, col, (cx, cy), kind in objs:
        if name in on:
            cx, cy = cx + j(), cy + j()
            if kind == "rect":
                d.rectangle([cx - 6, cy - 9, cx + 6, cy + 9], fill=col)
            elif kind == "circle":
                d.ellipse([cx - 5, cy - 5, cx + 5, cy + 5], fill=col)
            else:
                d.polygon([(cx, cy - 7), (cx - 6, cy + 6), (cx + 6, cy + 6)], fill=col)
    d.rectangle([56, 104, 72, 126], fill=(250, 250, 250))                  # ego car
    return img


RENDERERS = {"digits": render_digits, "kandinsky": render_kandinsky, "driving": render_driving,
             "blender": None}   # blender.py: rendered in worker processes


def _share(total: int, *, has_ood) -> dict:
    """``total`` images over the splits in the default proportions 100/20/20/20 (no OOD part
    when the task has no OOD worlds), by largest remainder."""
    w = {"train": 100, "val": 20, "test": 20, "ood": 20 if has_ood is not False else 0}
    s = sum(w.values())
    exact = {k: total * v / s for k, v in w.items()}
    out = {k: int(v) for k, v in exact.items()}
    for k in sorted(w, key=lambda k: (-(exact[k] - out[k]), SPLITS.index(k)))[:total - sum(out.values())]:
        out[k] += 1
    return out


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


# -- sampling ---------------------------------------------------------------------------------
def balanced(worlds, labels, n, rng) -> list[int]:
    """``n`` indices into ``worlds``, as even as possible over the distinct label vectors."""
    by: dict = {}
    for i, lab in enumerate(labels):
        by.setdefault(lab, []).append(i)
    keys = sorted(by, key=str)
    if not keys or n <= 0:
        return []
    out = []
    for j in range(n):
        out.append(rng.choice(by[keys[j % len(keys)]]))
    rng.shuffle(out)
    return out


def generate(task: Task, out, *, seed: int = 0, samples: dict | None = None,
             mnist: str | None = None, overwrite: bool = False, progress: bool = False,
             render_options: dict | None = None, total: int | None = None,
             balance: str | None = None) -> GenerateResult:
    """Generate the task's data set into ``out`` (see module docstring). ``progress``: a tqdm
    bar on stderr over the images written (its total is the requested samples; a split with
    fewer worlds than asked may end it short). ``balance`` (``equal`` or ``rsbench``)
    overrides the task's ``generate.balance``; under ``rsbench`` a ``total`` is rsbench's
    ``--n_samples`` (train 0.7, val 0.15, test 0.15, OOD 0.1 of it)."""
    spec = task.raw.get("generate", {}) or {}
    samples_arg = samples
    samples = {**{"train": 100, "val": 20, "test": 20, "ood": 20}, **(spec.get("samples") or {}),
               **(samples or {})}
    render = spec.get("render", "digits")
    balance = balance or spec.get("balance") or "equal"
    if balance not in ("equal", "rsbench"):
        raise NesyError(f"balance must be equal or rsbench, not {balance!r}", file=task.source,
                        field="generate.balance")
    if total is not None:
        samples = _share(total, has_ood=None)
    if render not in RENDERERS:
        raise NesyError(f"unknown renderer {render!r} ({', '.join(RENDERERS)})", file=task.source,
                        field="generate.render")
    support = task.support(seed=seed)
    sset = set(support)
    generated = task.generated_pools(seed=seed)   # a generated support brings its own pools
    kept, ood = generated or (support, None)
    if ood is None and task.n_worlds <= 200_000:
        ood = [w for w in task.all_worlds() if w not in sset]
    elif ood is None:
        rng0 = random.Random(derive_seed("rs-ood", task.name, seed))
        ood = []
        for _ in range(20 * max(1, samples.get("ood", 0))):
            w = tuple(rng0.choice(v.domain) for v in task.variables)
            if w not in sset:
                ood.append(w)
        ood = sorted(set(ood), key=str)
    if render == "blender":
        # a scene can show an object or leave it out, not half of it, and shows n objects as
        # objects 1..n: with absent objects (`none` values), OOD worlds are those whose objects
        # are each whole or absent, the absent ones last
        from .render import blender as B  # noqa: PLC0415
        bad = next((w for w in support if not B.drawable(task, w)), None)
        if bad is not None:
            raise NesyError(f"support world {','.join(map(str, bad))} "
                            f"{B.undrawable(task, bad)}; use support {{objects: [min, max]}}",
                            file=task.source, field="support")
        ood = [w for w in ood if B.drawable(task, w)]
    pools = {"train": kept, "val": kept, "test": kept, "ood": ood}
    if total is not None:
        samples = _share(total, has_ood=bool(ood))
    rsbench_plan = None
    if balance == "rsbench":
        from .datasets.miniboia import rsbench_sizes  # noqa: PLC0415
        if total is not None:
            samples = rsbench_sizes(total)
        rsbench_plan = task.rsbench_images({k: int(samples.get(k, 0)) for k in SPLITS},
                                           seed=seed)
    lab_of = dict(zip(support + ood, task.labels_of(support + ood)))
    names = task.label_names()
    warnings = []
    want_ood = int(samples.get("ood", 0))
    if want_ood and not ood and rsbench_plan is None:
        msg = (f"the task has no OOD worlds (its support is all {task.n_worlds} worlds), so "
               f"the ood split is empty, not {want_ood} samples")
        if (samples_arg or {}).get("ood"):
            raise NesyError(msg + "; drop the ood sample request or restrict the support",
                            file=task.source, task=task.name, field="samples")
        warnings.append(msg)
    sup_labels = {lab_of[w] for w in support}
    if len(sup_labels) == 1:
        warnings.append(f"every support world has the same label {sup_labels.pop()}: the "
                        "train/val/test splits are single-label, and a model can fit them "
                        "without looking at the concepts")
    x = pools_img = None
    if render == "digits":
        x, y = load_digits_source(mnist)
        pools_img = digit_pools(x, y, seed)
    plan = {}
    for split in SPLITS:
        n = int(samples.get(split, 0))
        worlds = pools[split]
        if rsbench_plan is not None:
            plan[split] = (random.Random(derive_seed("rs-generate", task.name, seed, split)),
                           rsbench_plan[split])
            continue
        if n and not worlds:
            if split == "ood":
                n = 0
            else:
                raise NesyError("the support is empty", file=task.source)
        rng = random.Random(derive_seed("rs-generate", task.name, seed, split))
        picks = balanced(worlds, [lab_of[w] for w in worlds], n, rng)
        plan[split] = (rng, [worlds[i] for i in picks])
    inputs = [p for p in (task.source, mnist) if p]
    blender_info = None
    if render == "blender":
        from .render import blender as B  # noqa: PLC0415
        B.require_bpy(task.source)
        opts = B.options(task, render_options)
        B.check_vocabulary(task, opts)
        descs = {split: [B.describe(task, w, opts, seed=seed, split=split, index=k)
                         for k, w in enumerate(ws)] for split, (_, ws) in plan.items()}
        check_replaceable(out, overwrite=overwrite, inputs=inputs)
    elif render_options and any(v is not None for v in render_options.values()):
        raise NesyError(f"render options (resolution, render samples, engine, preset, workers) "
                        f"apply to render: blender, not {render}", file=task.source)
    counts, label_counts = {}, {}
    from tqdm import tqdm  # noqa: PLC0415
    total = sum(len(ws) for _, ws in plan.values())
    bar = tqdm(total=total, desc=f"rs generate {task.name}", unit="img", disable=not progress,
               delay=progress_delay())
    with bar:
        if render == "blender":
            partial = B.open_partial(out)
            jobs = []
            for split, ds in descs.items():
                (partial / split).mkdir(exist_ok=True)
                jobs += [(d, str(partial / split / f"{k:05d}.png"),
                          str(partial / split / f"{k:05d}.json")) for k, d in enumerate(ds)]
            blender_info = {**B.render_all(jobs, n_jobs=opts["workers"], bar=bar), "options": opts}
        with atomic_output_dir(out, overwrite=overwrite, inputs=inputs) as tmp:
            for split in SPLITS:
                rng, ws = plan[split]
                (tmp / split).mkdir()
                rows = []
                for k, w in enumerate(ws):
                    fname = f"{k:05d}.png"
                    if render == "blender":
                        for ext in (".png", ".json"):      # linked: the resume folder stays whole
                            _link(partial / split / f"{k:05d}{ext}", tmp / split / f"{k:05d}{ext}")
                    else:
                        img = RENDERERS[render](task, w, rng, x, pools_img, split)
                        img.save(tmp / split / fname, optimize=False)
                        bar.update()
                    rows.append([fname, *lab_of[w], *w])
                with open(tmp / split / "labels.csv", "w", newline="") as fh:
                    wr = csv.writer(fh, lineterminator="\n")
                    wr.writerow(["file", *[f"label:{n_}" for n_ in names],
                                 *[f"concept:{v.name}" for v in task.variables]])
                    wr.writerows(rows)
                counts[split] = len(rows)
                hist: dict = {}
                for r in rows:
                    key = ",".join(map(str, r[1:1 + len(names)]))
                    hist[key] = hist.get(key, 0) + 1
                label_counts[split] = dict(sorted(hist.items()))
            (tmp / "task.yaml").write_text(yaml.safe_dump(task.raw, sort_keys=True), encoding="utf-8")
            manifest = {
                "format": "nesybench-rs", "format_version": FORMAT_VERSION, "task": task.name,
                "seed": seed, "render": render, "labels": names,
                "concepts": [{"name": v.name, "domain": list(v.domain)} for v in task.variables],
                "support_size": len(support), "ood_worlds": len(ood), "counts": counts,
                "label_counts": label_counts, "warnings": warnings,
                "digits": (mnist or "sklearn.datasets.load_digits (8x8 upscaled to 28x28)")
                if render == "digits" else None,
            }
            if balance != "equal":
                manifest["balance"] = balance
            if blender_info is not None:
                if blender_info["bpy_version"] is None and jobs:
                    blender_info["bpy_version"] = json.loads(
                        Path(jobs[0][2]).read_text(encoding="utf-8")).get("bpy_version")
                # the worker count changes how fast, never what: it stays out of the manifest
                # so that one seed gives the same bytes at any -j
                manifest["blender"] = {"bpy_version": blender_info["bpy_version"],
                                       **{k: v for k, v in blender_info["options"].items()
                                          if k != "workers"}}
            manifest["checksums"] = checksums(tmp)
            write_json(tmp / "manifest.json", manifest)
    if render == "blender":
        shutil.rmtree(partial, ignore_errors=True)
    return GenerateResult(str(out), counts, label_counts, warnings,
                          blender_info and {k: v for k, v in blender_info.items() if k != "options"})


class RSDataset:
    """PyTorch ``Dataset`` over a generated split: items ``(image [C,H,W] float in [0,1],
    labels LongTensor [L], concepts LongTensor [n] of value indices into each domain)``."""

    def __init__(self, root, split: str = "train", transform=None):
        import io  # noqa: PLC0415

        from ..folder import DataFolder  # noqa: PLC0415
        self.root = Path(root)
        # contained: no symbolic link out, regular files, pictures bounded before decoding
        self.folder = folder = DataFolder(self.root)
        if not folder.exists("manifest.json"):
            raise NesyError("not a generated RS data set (no manifest.json)", file=str(self.root))
        self.manifest = man = folder.read_json("manifest.json")
        label = folder.label("manifest.json")
        if not isinstance(man, dict) or not isinstance(man.get("labels"), list) or \
                not isinstance(man.get("concepts"), list) or \
                not all(isinstance(c, dict) and isinstance(c.get("domain"), list)
                        for c in man["concepts"]):
            raise NesyError("expected an object with a list `labels` and a list `concepts` "
                            "of objects with a `domain` list", file=label)
        self.split = split
        self.transform = transform
        try:
            self.rows = list(csv.reader(io.StringIO(folder.read_text(f"{split}/labels.csv"),
                                                    newline="")))[1:]
        except csv.Error as exc:
            raise NesyError(f"not a CSV table: {exc}",
                            file=folder.label(f"{split}/labels.csv")) from None
        self.n_labels = len(man["labels"])
        self.domains = [[str(x) for x in c["domain"]] for c in man["concepts"]]
        width = 1 + self.n_labels + len(self.domains)
        for line, r in enumerate(self.rows, start=2):
            if len(r) != width:
                raise NesyError(f"row has {len(r)} columns, expected {width}",
                                file=folder.label(f"{split}/labels.csv"), line=line)
        self.label_values: list[dict] = [{} for _ in range(self.n_labels)]
        for r in self.rows:
            for j in range(self.n_labels):
                self.label_values[j].setdefault(r[1 + j], None)
        for j, vals in enumerate(self.label_values):
            keys = sorted(vals, key=lambda s: (0, int(s)) if s.lstrip("-").isdigit() else (1, s))
            self.label_values[j] = {k: (int(k) if k.lstrip("-").isdigit() else i)
                                    for i, k in enumerate(keys)}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        import torch  # noqa: PLC0415
        r = self.rows[i]
        with self.folder.image(f"{self.split}/{r[0]}") as im:
            img = np.asarray(im, dtype=np.float32) / 255.0
        t = torch.from_numpy(img[None] if img.ndim == 2 else img.transpose(2, 0, 1).copy())
        if self.transform:
            t = self.transform(t)
        labels = torch.tensor([self.label_values[j][r[1 + j]] for j in range(self.n_labels)])
        try:
            concepts = torch.tensor([self.domains[k].index(r[1 + self.n_labels + k])
                                     for k in range(len(self.domains))])
        except ValueError:
            raise NesyError("a concept value is outside its domain",
                            file=self.folder.label(f"{self.split}/labels.csv"),
                            line=i + 2) from None
        return t, labels, concepts
