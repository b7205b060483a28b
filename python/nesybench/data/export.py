"""Export a loaded data set for the Hugging Face Hub and for Croissant readers.

``export(data, out, fmt)`` writes one folder (into a temporary sibling, renamed at the end):

============  ===========================================================================
format        files
============  ===========================================================================
``hf``        ``DatasetDict.save_to_disk`` (``dataset_dict.json``, ``<split>/*.arrow``):
              read back with ``datasets.load_from_disk(OUT)``
``parquet``   ``data/<split>-00000-of-00001.parquet`` (Hugging Face feature metadata
              inside): read back with ``datasets.load_dataset("parquet", data_dir=...)``
              or pandas; the layout the Hub's dataset viewer reads
``croissant`` the Parquet files plus ``croissant.json`` (MLCommons Croissant 1.0: one
              record set per split): read back with
              ``mlcroissant.Dataset("OUT/croissant.json").records("train")``
============  ===========================================================================

Every export also holds ``README.md``, the dataset card (front matter for the Hub, then the
task, splits and sizes, class balance, columns, the ground-truth rules, seed, generator
version and the citation), and ``manifest.json`` (format ``nesybench-export``: the source's
meta, the split sizes and the SHA-256 of every other file).

Columns: images are the ``Image`` feature holding the source PNG bytes unchanged (the
``sha256`` column is the source manifest's checksum of each); class indices are
``ClassLabel``; KANDY's ``objects`` (the symbolic tree's objects: shape, color, size) is a
list of structs. Croissant describes every column but ``objects`` (its record readers have no
list-of-struct fields; ``symbol`` holds the same tree as JSON).

Determinism: the same data set exported twice gives the same bytes with the same versions of
``datasets`` and ``pyarrow`` (the Arrow and Parquet writers record their version; the
``datasets`` fingerprint in ``state.json`` is a hash of the content).
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from nesybench import __version__
from nesybench.data.core import BenchmarkData
from nesybench.errors import NesyError
from nesybench.io import atomic_output_dir, check_replaceable, checksums, dumps

FORMATS = ("hf", "parquet", "croissant")
EXPORT_FORMAT = "nesybench-export"
EXPORT_VERSION = "1.0"

CITATIONS = {
    "kandy": """@article{lorello2025kandy,
  author  = {Lorello, Luca Salvatore and Lippi, Marco and Melacci, Stefano},
  title   = {The {KANDY} Benchmark: Incremental Neuro-Symbolic Learning and Reasoning with Kandinsky Patterns},
  journal = {Machine Learning}, volume = {114}, pages = {161}, year = {2025},
  doi     = {10.1007/s10994-025-06798-x}, eprint = {2402.17431}, archivePrefix = {arXiv}}""",
    "rudas": """@misc{cornelio2019rudas,
  author = {Cornelio, Cristina and Thost, Veronika},
  title  = {{RuDaS}: Synthetic Datasets for Rule Learning and Evaluation Tools},
  year   = {2019}, eprint = {1909.07095}, archivePrefix = {arXiv}}""",
    "rsbench": """@inproceedings{bortolotti2024rsbench,
  author    = {Bortolotti, Samuele and Marconato, Emanuele and Carraro, Tommaso and Morettin, Paolo and van Krieken, Emile and Vergari, Antonio and Teso, Stefano and Passerini, Andrea},
  title     = {A Neuro-Symbolic Benchmark Suite for Concept Quality and Reasoning Shortcuts},
  booktitle = {Advances in Neural Information Processing Systems 37, Datasets and Benchmarks Track},
  year      = {2024}, eprint = {2406.10368}, archivePrefix = {arXiv}}""",
    "ski": """@inproceedings{rafanelli2024ski,
  author    = {Rafanelli, Andrea and Magnini, Matteo and Agiollo, Andrea and Ciatto, Giovanni and Omicini, Andrea},
  title     = {An Empirical Study on the Robustness of Knowledge Injection Techniques Against Data Degradation},
  booktitle = {Proceedings of the 25th Workshop "From Objects to Agents" (WOA 2024)},
  series    = {CEUR Workshop Proceedings}, volume = {3735}, year = {2024}}""",
    "irt": """@inproceedings{fabraboluda2022irt,
  author    = {Fabra-Boluda, Ra{\\"u}l and Ferri, C{\\`e}sar and Mart{\\'i}nez-Plumed, Fernando and Ram{\\'i}rez-Quintana, M. Jos{\\'e}},
  title     = {Robustness Testing of Machine Learning Families using Instance-level {IRT}-Difficulty},
  booktitle = {EBeM'22: Workshop on AI Evaluation Beyond Metrics},
  series    = {CEUR Workshop Proceedings}, volume = {3169}, year = {2022}}""",
}
NESYBENCH_CITATION = """@software{nesybench,
  title   = {nesybench: logic-programming-centric neuro-symbolic benchmarks},
  author  = {{The nesybench developers}},
  version = {%s}}""" % __version__


def _require():
    try:
        import datasets  # noqa: PLC0415
    except ImportError:
        raise NesyError("export needs the hub extra: pip install 'nesybench[hub]' (datasets, "
                        "pyarrow, mlcroissant)") from None
    return datasets


def parquet_name(split: str) -> str:
    return f"data/{split}-00000-of-00001.parquet"


# -- Hugging Face -----------------------------------------------------------------------------
def features(data: BenchmarkData):
    """The ``datasets.Features`` of a data set's columns."""
    datasets = _require()
    out = {}
    for c in data.columns:
        if c.dtype == "image":
            out[c.name] = datasets.Image()
        elif c.dtype == "objects":
            out[c.name] = datasets.List({k: datasets.Value("string")
                                         for k in ("shape", "color", "size")})
        elif c.names:
            out[c.name] = datasets.ClassLabel(names=list(c.names))
        else:
            out[c.name] = datasets.Value({"string": "string"}.get(c.dtype, c.dtype))
    return datasets.Features(out)


def dataset_dict(data: BenchmarkData, *, progress: bool = False):
    """The data set as a ``datasets.DatasetDict`` (non-empty splits, in order; images as the
    source PNG bytes)."""
    datasets = _require()
    from tqdm import tqdm  # noqa: PLC0415

    from nesybench.io import progress_delay  # noqa: PLC0415

    feats = features(data)
    images = [c.name for c in data.columns if c.dtype == "image"]
    splits = [s for s in data.splits if data.rows_by_split[s]]
    total = sum(len(data.rows_by_split[s]) for s in splits) if images else 0
    bar = tqdm(total=total, desc="read images", unit="img", disable=not (progress and total),
               delay=progress_delay())
    out = {}
    with bar:
        for s in splits:
            cols: dict[str, list] = {c.name: [] for c in data.columns}
            for row in data.rows_by_split[s]:
                digest = None
                for c in data.columns:
                    v = row[c.name]
                    if c.dtype == "image":
                        v = {"bytes": data.image_bytes(v), "path": Path(v).name}
                        digest = hashlib.sha256(v["bytes"]).hexdigest()
                        bar.update()
                    cols[c.name].append(v)
                if digest is not None and "sha256" in cols:
                    # the checksum of the bytes exported (the manifest's, once checked)
                    cols["sha256"][-1] = digest
            out[s] = datasets.Dataset.from_dict(cols, features=feats,
                                                split=datasets.NamedSplit(s))
    return datasets.DatasetDict(out)


# -- the dataset card -------------------------------------------------------------------------
def _size_category(n: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "1M<n<10M"


def card(data: BenchmarkData, fmt: str) -> str:
    """The dataset card (README.md) of an export: Hub front matter, then the description."""
    c = data.card
    meta = data.meta
    splits = [s for s in data.splits if data.rows_by_split[s]]
    sizes = {s: len(data.rows_by_split[s]) for s in splits}
    lic = "other" if data.kind == "tabular" else "apache-2.0"
    fm = ["---", f"pretty_name: {json.dumps(c.get('title', data.name))}", f"license: {lic}",
          f"task_categories:\n- {c.get('task', 'other')}",
          "tags:\n- nesybench\n- neuro-symbolic\n- " + data.kind,
          f"size_categories:\n- {_size_category(sum(sizes.values()))}"]
    if fmt in ("parquet", "croissant"):
        fm.append("configs:\n- config_name: default\n  data_files:\n" + "".join(
            f"  - split: {s}\n    path: {parquet_name(s).replace('-00000-of-00001', '-*')}\n"
            for s in splits).rstrip("\n"))
    fm.append("---")
    lines = ["\n".join(fm), "", f"# {c.get('title', data.name)}", "", c.get("summary", ""), "",
             f"Generated by nesybench {meta.get('generator') or __version__} "
             f"(data format {meta.get('format')} {meta.get('format_version') or ''}".rstrip()
             + f"), seed {meta.get('seed')}; exported by nesybench {__version__} as `{fmt}`.",
             "", "## Splits", "", "| split | rows |", "|---|---|"]
    lines += [f"| {s} | {n} |" for s, n in sizes.items()]
    balance = data.class_balance()
    label = next((col for col in data.columns if col.name == "label"), None)
    if balance:
        lines += ["", "## Class balance", "", "| split | " + " | ".join(
            _label_name(label, v) for v in _values(balance)) + " |",
            "|---|" + "---|" * len(_values(balance))]
        lines += [f"| {s} | " + " | ".join(str(balance[s].get(v, 0)) for v in _values(balance))
                  + " |" for s in splits]
    if c.get("tasks"):
        lines += ["", "## Tasks", "", "| id | name | description | rows |", "|---|---|---|---|"]
        per_task: dict = {}
        for s in splits:
            for r in data.rows_by_split[s]:
                per_task[r["task_id"]] = per_task.get(r["task_id"], 0) + 1
        lines += [f"| {t['id']} | {t['name']} | {t['description']} | {per_task.get(t['id'], 0)} |"
                  for t in c["tasks"]]
    lines += ["", "## Columns", "", "| column | type | description |", "|---|---|---|"]
    for col in data.columns:
        typ = col.dtype + (f" (classes: {', '.join(col.names)})" if col.names else "")
        lines.append(f"| `{col.name}` | {typ} | {col.description} |")
    if c.get("rules"):
        lines += ["", "## Ground truth", ""]
        lang = c.get("rules_language", "text")
        for title, text in c["rules"].items():
            lines += [f"**{title}**", "", f"```{lang if title.endswith(('.pl', ')')) or title == 'rules.txt' else 'text'}",
                      text.rstrip("\n"), "```", ""]
        lines.pop()
    lines += ["", "## Loading", "", "```python"]
    if fmt == "hf":
        lines += ["import datasets", 'ds = datasets.load_from_disk("PATH/TO/THIS/FOLDER")']
    elif fmt == "parquet":
        lines += ["import datasets", 'ds = datasets.load_dataset("parquet", data_dir="PATH/TO/THIS/FOLDER/data")']
    else:
        lines += ["import mlcroissant", 'ds = mlcroissant.Dataset("PATH/TO/THIS/FOLDER/croissant.json")',
                  f'records = ds.records("{splits[0] if splits else "train"}")']
    lines += ["```", "", "`manifest.json` holds the generator's full specification (seed, "
              "parameters) and the SHA-256 of the source files and of every file here.",
              "", "## Citation", "", "```bibtex", CITATIONS.get(c.get("paper"), "").strip(),
              NESYBENCH_CITATION, "```", ""]
    return "\n".join(lines)


def _values(balance: dict) -> list:
    seen = []
    for hist in balance.values():
        seen += [v for v in hist if v not in seen]
    return sorted(seen, key=lambda v: (str(type(v)), v))


def _label_name(col, v) -> str:
    if col is not None and col.names and isinstance(v, int) and 0 <= v < len(col.names):
        return f"{col.names[v]} ({v})"
    return str(v)


# -- Croissant --------------------------------------------------------------------------------
def croissant(data: BenchmarkData) -> dict:
    """Croissant 1.0 JSON-LD describing the Parquet files of an export (one record set per
    split)."""
    import mlcroissant as mlc  # noqa: PLC0415

    types = {"int64": mlc.DataType.INT64, "float64": mlc.DataType.FLOAT64,
             "bool": mlc.DataType.BOOL, "string": mlc.DataType.TEXT,
             "image": mlc.DataType.IMAGE_OBJECT}
    dist, record_sets = [], []
    for s in (s for s in data.splits if data.rows_by_split[s]):
        fs = f"parquet-{s}"
        dist.append(mlc.FileSet(id=fs, name=fs, encoding_formats=[mlc.EncodingFormat.PARQUET],
                                includes=[parquet_name(s)]))
        fields = []
        for c in data.columns:
            if c.dtype not in types:
                continue
            src = mlc.Source(file_set=fs, extract=mlc.Extract(column=c.name),
                             transforms=[mlc.Transform(json_path="bytes")]
                             if c.dtype == "image" else [])
            fields.append(mlc.Field(id=f"{s}/{c.name}", name=c.name, description=c.description,
                                    data_types=[types[c.dtype]], source=src))
        record_sets.append(mlc.RecordSet(id=s, name=s, description=f"the {s} split",
                                         fields=fields))
    c = data.card
    md = mlc.Metadata(
        name=data.name, description=c.get("summary", ""),
        url="https://pypi.org/project/nesybench/",
        license=["https://www.apache.org/licenses/LICENSE-2.0"] if data.kind != "tabular" else [],
        version="1.0.0", cite_as=CITATIONS.get(c.get("paper"), NESYBENCH_CITATION),
        keywords=["nesybench", "neuro-symbolic", data.kind],
        distribution=dist, record_sets=record_sets)
    errors = [str(e) for e in md.issues.errors]
    if errors:  # pragma: no cover - a bug in this module
        raise NesyError("the Croissant metadata does not validate: " + "; ".join(errors))
    return md.to_json()


def validate_croissant(path) -> list[str]:
    """Errors ``mlcroissant`` finds in a ``croissant.json`` (what ``mlcroissant validate``
    runs); an empty list when it validates."""
    import mlcroissant as mlc  # noqa: PLC0415

    try:
        ds = mlc.Dataset(jsonld=str(path))
    except mlc.ValidationError as exc:
        return [str(exc)]
    return [str(e) for e in ds.metadata.issues.errors]


# -- the export -------------------------------------------------------------------------------
def export(data: BenchmarkData, out, fmt: str, *, overwrite: bool = False,
           progress: bool = False) -> dict:
    """Write ``data`` as ``fmt`` (``hf``, ``parquet``, ``croissant``) into the folder ``out``;
    returns a summary (out, format, rows per split, bytes, files, seconds)."""
    if fmt not in FORMATS:
        raise NesyError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    datasets = _require()
    t0 = time.perf_counter()
    if not progress:
        datasets.disable_progress_bars()
    else:
        datasets.enable_progress_bars()
    inputs = [data.root] if data.root is not None else []
    # a table (CSV/ARFF) or task file read for the export is an input too: never inside --out
    source = (data.meta.get("spec") or {}).get("source") if isinstance(data.meta, dict) else None
    if isinstance(source, str) and source and Path(source).exists():
        inputs.append(source)
    check_replaceable(out, overwrite=overwrite, inputs=inputs)     # before the work
    dd = dataset_dict(data, progress=progress)
    _check_listed(data)
    with atomic_output_dir(out, overwrite=overwrite, inputs=inputs) as tmp:
        if fmt == "hf":
            dd.save_to_disk(str(tmp))
        else:
            (tmp / "data").mkdir()
            for s, ds in dd.items():
                ds.to_parquet(str(tmp / parquet_name(s)))
            if fmt == "croissant":
                (tmp / "croissant.json").write_text(
                    json.dumps(croissant(data), indent=2, ensure_ascii=False, default=str) + "\n",
                    encoding="utf-8")
        (tmp / "README.md").write_text(card(data, fmt), encoding="utf-8")
        files = checksums(tmp, exclude=(".nesybench-pid",))
        manifest = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION,
                    "export": fmt, "exporter": __version__,
                    "versions": _versions(), "source": data.meta,
                    "splits": {s: len(d) for s, d in dd.items()},
                    "columns": [c.name for c in data.columns], "files": files}
        (tmp / "manifest.json").write_text(dumps(manifest), encoding="utf-8")
        size = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
    return {"out": str(out), "format": fmt, "splits": {s: len(d) for s, d in dd.items()},
            "bytes": size, "files": len(files) + 2, "seconds": time.perf_counter() - t0}


def _check_listed(data: BenchmarkData) -> None:
    """Refuse to export a file the data set read that its manifest lists no SHA-256 for (an
    unverified file would be exported as if it were checked); with ``--no-verify``
    (``verify=False``) such files are exported with a warning on stderr. Data sets whose
    manifest lists no checksums at all (tables, built-ins) are not concerned."""
    folder = data.folder
    if folder is None or not getattr(folder, "checksums", None):
        return
    unlisted = sorted(r for r in folder.read_log
                      if r not in folder.checksums and r != "manifest.json")
    if not unlisted:
        return
    shown = ", ".join(unlisted[:3]) + (f" and {len(unlisted) - 3} more" if len(unlisted) > 3
                                       else "")
    if folder.verify:
        raise NesyError(f"{len(unlisted)} file(s) have no SHA-256 in the manifest: {shown}; "
                        "they cannot be verified (--no-verify exports them unverified, with "
                        "a warning)", file=folder.label("manifest.json"))
    import sys  # noqa: PLC0415

    print(f"nesybench: warning: exported {len(unlisted)} file(s) the manifest lists no "
          f"SHA-256 for, unverified (--no-verify): {shown}", file=sys.stderr)


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    out = {}
    for pkg in ("datasets", "pyarrow", "mlcroissant"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out
