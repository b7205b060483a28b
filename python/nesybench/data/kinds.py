"""Readers that turn each kind of nesybench data set into a :class:`BenchmarkData`.

=========  ===============================================  ==========================================
kind       what is read                                     item of ``to_torch()`` (dtype, shape)
=========  ===============================================  ==========================================
kandy      a generated KANDY curriculum folder              image float32 [3, H, W] in [0, 1],
           (``manifest.json`` format ``nesybench-kandy``)   label int64 [], task_id int64 [],
                                                            supervised bool []
rs         a generated reasoning-shortcut / NeSy data set   image float32 [C, H, W] in [0, 1] (C = 3
           (``manifest.json`` format ``nesybench-rs``)      RGB, 1 grey), labels int64 [L],
                                                            concepts int64 [V] (value indices)
rudas      a RuDaS data set folder (format ``rudas``):      predicate int64 [], arguments int64 [A]
           one split per fact file                          (entity indices, -1 padding), target
                                                            bool []
tabular    an IRT/SKI table: a built-in one, or a CSV or     x float32 [D], label int64 []
           ARFF file
=========  ===============================================  ==========================================

Label and concept encodings of the ``rs`` kind: an integer value is itself, any other value
its index in the sorted list of values (``meta["encodings"]``); a concept is the index of its
value in the variable's domain.
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from nesybench import ROOT, __version__
from nesybench.data.core import BenchmarkData, Column, image_tensor
from nesybench.errors import NesyError
from nesybench.io import sha256_file

KANDY_SPLITS = ("train", "val", "test")
RS_SPLITS = ("train", "val", "test", "ood")
#: RuDaS fact files, in the order of the format page; the split name is the file stem with
#: ``-`` written ``_`` (split names are identifiers in every export)
RUDAS_FILES = ("train", "test", "train-support", "train-conseqs", "train-cw", "train-ow",
               "train-cw-n", "eval-support", "eval-conseqs", "eval-cw")


def identifier(name: str, taken: set[str] | None = None) -> str:
    """A column name: lower case, ``[a-z0-9_]``, not starting with a digit, unique in
    ``taken`` (which it is added to)."""
    s = re.sub(r"[^a-z0-9]+", "_", str(name).lower()).strip("_") or "x"
    if s[0].isdigit():
        s = "c_" + s
    if taken is not None:
        base, k = s, 2
        while s in taken:
            s, k = f"{base}_{k}", k + 1
        taken.add(s)
    return s


def read_manifest(root: Path) -> dict:
    path = root / "manifest.json"
    try:
        man = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NesyError(f"cannot read the manifest: {exc}", file=str(path)) from None
    if not isinstance(man, dict):
        raise NesyError("the manifest is not a JSON object", file=str(path))
    return man


def _csv_rows(path: Path) -> list[dict]:
    if not path.is_file():
        raise NesyError("missing (is the data set complete?)", file=str(path))
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _int(value, path: Path, line: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise NesyError(f"expected an integer, got {value!r}", file=str(path), line=line) from None


# -- KANDY ------------------------------------------------------------------------------------
def _objects(symbol) -> list[dict]:
    """The objects (leaves) of a KANDY symbol tree, left to right."""
    out = []
    if isinstance(symbol, dict):
        if "shape" in symbol:
            out.append({"shape": str(symbol.get("shape")), "color": str(symbol.get("color")),
                        "size": str(symbol.get("size"))})
        else:
            for children in symbol.values():
                for c in children if isinstance(children, list) else [children]:
                    out += _objects(c)
    elif isinstance(symbol, list):
        for c in symbol:
            out += _objects(c)
    return out


KANDY_COLUMNS = [
    Column("image", "image", "the picture: an 8-bit RGB PNG"),
    Column("filename", "string", "path of the PNG inside its split folder (task/index.png)"),
    Column("task_id", "int64", "index of the task in the curriculum"),
    Column("task", "string", "name of the task"),
    Column("label", "int64", "1 when the picture satisfies the task's rule, else 0",
           names=("negative", "positive")),
    Column("supervised", "bool", "whether the label may be used for training (curriculum decay)"),
    Column("symbol", "string", "the sample's symbolic tree as compact JSON"),
    Column("prolog", "string", "the same tree as a Prolog term"),
    Column("objects", "objects", "the objects of the tree, left to right: shape, color, size"),
    Column("sha256", "string", "SHA-256 of the PNG file (the manifest's checksum)"),
]


def _kandy_encode(data, row):
    import torch  # noqa: PLC0415

    return {"image": image_tensor(data.root / row["image"]),
            "label": torch.tensor(row["label"], dtype=torch.int64),
            "task_id": torch.tensor(row["task_id"], dtype=torch.int64),
            "supervised": torch.tensor(row["supervised"], dtype=torch.bool)}


def load_kandy(root: Path, man: dict, name: str) -> BenchmarkData:
    files = man.get("files") or {}
    tasks = {int(t["id"]): t for t in man.get("tasks", [])}
    rows_by_split = {}
    for split in KANDY_SPLITS:
        path = root / split / "annotations.csv"
        rows = []
        for line, r in enumerate(_csv_rows(path), start=2):
            tid = _int(r.get("task_id"), path, line)
            try:
                symbol = json.loads(r["symbol"])
            except (KeyError, TypeError, json.JSONDecodeError):
                raise NesyError("the symbol is not JSON", file=str(path), line=line) from None
            rel = f"{split}/{r['filename']}"
            rows.append({
                "image": rel, "filename": r["filename"], "task_id": tid,
                "task": str(tasks.get(tid, {}).get("name", tid)),
                "label": _int(r.get("label"), path, line),
                "supervised": bool(_int(r.get("supervised"), path, line)),
                "symbol": r["symbol"], "prolog": r.get("prolog", ""),
                "objects": _objects(symbol),
                "sha256": files.get(rel) or sha256_file(root / rel)})
        rows_by_split[split] = rows
    rules = {}
    for tid, t in sorted(tasks.items()):
        rf = root / str(t.get("rule_file") or f"rules/{tid:02d}.pl")
        if rf.is_file():
            rules[f"task {tid} ({t.get('name', '')})"] = rf.read_text(encoding="utf-8")
    meta = {"kind": "kandy", "name": name, "format": man.get("format"),
            "format_version": man.get("version"), "generator": man.get("generator"),
            "seed": man.get("seed"),
            "spec": {"curriculum": man.get("curriculum"), "config": man.get("config"),
                     "tasks": [{k: v for k, v in t.items() if k != "stats"}
                               for t in man.get("tasks", [])]},
            "checksums": files}
    card = {"title": f"KANDY curriculum {name}", "paper": "kandy",
            "task": "image-classification",
            "summary": "Kandinsky-pattern pictures, one binary classification task per "
                       "curriculum step; each task's ground truth is a Prolog rule over the "
                       "picture's symbolic tree.",
            "rules": rules, "rules_language": "prolog",
            "tasks": [{"id": tid, "name": t.get("name"), "description": t.get("description", "")}
                      for tid, t in sorted(tasks.items())]}
    return BenchmarkData(kind="kandy", name=name, root=root, columns=list(KANDY_COLUMNS),
                         rows_by_split=rows_by_split, meta=meta, card=card,
                         torch_spec={"image": ("float32", "[3, H, W]"), "label": ("int64", "[]"),
                                     "task_id": ("int64", "[]"), "supervised": ("bool", "[]")},
                         _encode=_kandy_encode)


# -- reasoning shortcuts / NeSy -------------------------------------------------------------
def _is_int(s) -> bool:
    return isinstance(s, int) or (isinstance(s, str) and re.fullmatch(r"-?\d+", s) is not None)


def _rs_encode(data, row):
    import torch  # noqa: PLC0415

    enc = data.meta["encodings"]
    labels = []
    for col in enc["labels"]:
        v = row[col["column"]]
        labels.append(int(v) if col["values"] is None else col["values"].index(v))
    concepts = [col["domain"].index(row[col["column"]]) for col in enc["concepts"]]
    return {"image": image_tensor(data.root / row["image"]),
            "labels": torch.tensor(labels, dtype=torch.int64),
            "concepts": torch.tensor(concepts, dtype=torch.int64)}


def load_rs(root: Path, man: dict, name: str) -> BenchmarkData:
    sums = man.get("checksums") or {}
    labels = list(man.get("labels") or [])
    concepts = list(man.get("concepts") or [])
    raw: dict[str, list[dict]] = {}
    for split in RS_SPLITS:
        path = root / split / "labels.csv"
        if not path.is_file() and not (man.get("counts") or {}).get(split):
            continue
        raw[split] = _csv_rows(path)
    taken = {"image", "file", "split", "sha256"}
    label_cols, concept_cols = [], []
    for lab in labels:
        key = f"label:{lab}"
        vals = sorted({r.get(key, "") for rows in raw.values() for r in rows})
        ints = all(_is_int(v) for v in vals)
        label_cols.append({"name": lab, "source": key,
                           "column": identifier(f"label_{lab}", taken),
                           "dtype": "int64" if ints else "string",
                           "values": None if ints else vals})
    for c in concepts:
        domain = list(c.get("domain") or [])
        ints = all(_is_int(v) for v in domain)
        concept_cols.append({"name": c["name"], "source": f"concept:{c['name']}",
                             "column": identifier(f"concept_{c['name']}", taken),
                             "dtype": "int64" if ints else "string",
                             "domain": [int(v) for v in domain] if ints else [str(v) for v in domain]})
    rows_by_split = {}
    for split, rows in raw.items():
        path = root / split / "labels.csv"
        out = []
        for line, r in enumerate(rows, start=2):
            rel = f"{split}/{r['file']}"
            row = {"image": rel, "file": r["file"]}
            for col in label_cols + concept_cols:
                v = r.get(col["source"])
                if v is None:
                    raise NesyError(f"missing column {col['source']}", file=str(path), line=line)
                row[col["column"]] = _int(v, path, line) if col["dtype"] == "int64" else v
            row["sha256"] = sums.get(rel) or sha256_file(root / rel)
            out.append(row)
        rows_by_split[split] = out
    columns = [Column("image", "image", "the picture (PNG)"),
               Column("file", "string", "PNG file name inside its split folder")]
    columns += [Column(c["column"], c["dtype"], f"label {c['name']}") for c in label_cols]
    columns += [Column(c["column"], c["dtype"], f"concept {c['name']} (the ground-truth value)")
                for c in concept_cols]
    columns.append(Column("sha256", "string", "SHA-256 of the PNG file (the manifest's checksum)"))
    task_yaml = root / "task.yaml"
    task_text = task_yaml.read_text(encoding="utf-8") if task_yaml.is_file() else ""
    rules = {}
    if task_text:
        rules["task.yaml"] = task_text
        import yaml  # noqa: PLC0415
        try:
            kn = (yaml.safe_load(task_text) or {}).get("knowledge")
        except yaml.YAMLError:
            kn = None
        if isinstance(kn, str):
            for base in (root, ROOT):
                p = base / kn
                if p.is_file():
                    rules[kn] = p.read_text(encoding="utf-8")
                    break
    meta = {"kind": "rs", "name": name, "format": man.get("format"),
            "format_version": man.get("format_version"), "generator": man.get("generator"),
            "seed": man.get("seed"),
            "spec": {k: man.get(k) for k in ("task", "render", "labels", "concepts",
                                             "support_size", "ood_worlds", "counts",
                                             "label_counts", "digits", "warnings")},
            "checksums": sums,
            "encodings": {"labels": label_cols, "concepts": concept_cols}}
    card = {"title": f"Reasoning-shortcut task {man.get('task', name)}", "paper": "rsbench",
            "task": "image-classification",
            "summary": "Pictures of concept worlds (digits, Kandinsky figures or driving "
                       "scenes) labelled by a logic program over the concepts; the concepts "
                       "are given for measuring concept quality and reasoning shortcuts.",
            "rules": rules, "rules_language": "text"}
    return BenchmarkData(kind="rs", name=name, root=root, columns=columns,
                         rows_by_split=rows_by_split, meta=meta, card=card,
                         torch_spec={"image": ("float32", "[C, H, W]"),
                                     "labels": ("int64", f"[{len(label_cols)}]"),
                                     "concepts": ("int64", f"[{len(concept_cols)}]")},
                         _encode=_rs_encode)


# -- RuDaS ------------------------------------------------------------------------------------
_FACT = re.compile(r"^\s*([a-z][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*\.\s*$")


def _rudas_encode(data, row):
    import torch  # noqa: PLC0415

    enc = data.meta["encodings"]
    ent = enc["entity_index"]
    args = [ent[row[f"arg_{k}"]] if row[f"arg_{k}"] else -1
            for k in range(1, enc["max_arity"] + 1)]
    return {"predicate": torch.tensor(enc["predicate_index"][row["predicate"]], dtype=torch.int64),
            "arguments": torch.tensor(args, dtype=torch.int64),
            "target": torch.tensor(row["target"], dtype=torch.bool)}


def load_rudas(root: Path, man: dict, name: str) -> BenchmarkData:
    targets = set(man.get("targets") or [])
    parsed: dict[str, list[tuple]] = {}
    max_arity = 0
    for stem in RUDAS_FILES:
        path = root / f"{stem}.txt"
        if not path.is_file():
            continue
        facts = []
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not text.strip():
                continue
            m = _FACT.match(text)
            if not m:
                raise NesyError("not a ground fact", file=str(path), line=line)
            args = [a.strip() for a in m.group(2).split(",")] if m.group(2) else []
            max_arity = max(max_arity, len(args))
            facts.append((text, m.group(1), args))
        parsed[stem.replace("-", "_")] = facts
    if not parsed:
        raise NesyError("no fact files (train.txt ...): not a RuDaS data set", file=str(root))
    relations = _lines(root / "relations.txt")
    entities = _lines(root / "entities.txt")
    rows_by_split = {}
    for split, facts in parsed.items():
        rows = []
        for text, pred, args in facts:
            row = {"fact": text, "predicate": pred, "arity": len(args)}
            for k in range(max_arity):
                row[f"arg_{k + 1}"] = args[k] if k < len(args) else ""
            row["target"] = f"{pred}/{len(args)}" in targets
            rows.append(row)
            if pred not in relations:
                relations.append(pred)
            entities += [a for a in args if a not in entities]
        rows_by_split[split] = rows
    columns = [Column("fact", "string", "the fact as written in the file (Prolog syntax)"),
               Column("predicate", "string", "predicate name"),
               Column("arity", "int64", "number of arguments")]
    columns += [Column(f"arg_{k}", "string", f"argument {k} (empty when the arity is smaller)")
                for k in range(1, max_arity + 1)]
    columns.append(Column("target", "bool", "whether the predicate is a target of the rules"))
    rules_txt = root / "rules.txt"
    rules = {"rules.txt": rules_txt.read_text(encoding="utf-8")} if rules_txt.is_file() else {}
    meta = {"kind": "rudas", "name": name, "format": man.get("format"),
            "format_version": man.get("format_version"), "generator": man.get("generator"),
            "seed": man.get("seed"),
            "spec": {k: man.get(k) for k in ("params", "counts", "targets", "components",
                                             "predicates", "rule_graph")},
            "checksums": man.get("files") or {},
            "splits": {s.replace("-", "_"): f"{s}.txt" for s in RUDAS_FILES
                       if s.replace("-", "_") in parsed},
            "encodings": {"max_arity": max_arity,
                          "predicate_index": {p: i for i, p in enumerate(relations)},
                          "entity_index": {e: i for i, e in enumerate(entities)}}}
    card = {"title": f"RuDaS rule-learning data set {name}", "paper": "rudas",
            "task": "other",
            "summary": "Ground facts generated from a hidden set of Datalog rules (the ground "
                       "truth below), with open-world removal and noise: learn the rules back "
                       "from the training facts. One split per fact file.",
            "rules": rules, "rules_language": "prolog"}
    return BenchmarkData(kind="rudas", name=name, root=root, columns=columns,
                         rows_by_split=rows_by_split, meta=meta, card=card,
                         torch_spec={"predicate": ("int64", "[]"),
                                     "arguments": ("int64", f"[{max_arity}]"),
                                     "target": ("bool", "[]")},
                         _encode=_rudas_encode)


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [s.strip() for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]


# -- tabular (IRT, SKI) -----------------------------------------------------------------------
def _tabular_encode(data, row):
    import torch  # noqa: PLC0415

    feats = data.meta["encodings"]["features"]
    return {"x": torch.tensor([row[f] for f in feats], dtype=torch.float32),
            "label": torch.tensor(row["label"], dtype=torch.int64)}


def tabular(name: str, X, y, features: list, classes: list, *, source: str, study: str,
            checksums: dict, spec: dict) -> BenchmarkData:
    """A classification table as a one-split (``train``) data set: one float64 column per
    feature, ``label`` (class index) and ``class`` (class name)."""
    taken = {"label", "class", "split"}
    cols = [identifier(f, taken) for f in features]
    classes = [str(c) for c in classes]
    Xl = X.tolist()
    rows = []
    for xi, yi in zip(Xl, y.tolist()):
        row = dict(zip(cols, (float(v) for v in xi)))
        row["label"] = int(yi)
        row["class"] = classes[int(yi)]
        rows.append(row)
    columns = [Column(c, "float64", f"feature {f}") for c, f in zip(cols, features)]
    columns += [Column("label", "int64", "class index", names=tuple(classes)),
                Column("class", "string", "class name")]
    meta = {"kind": "tabular", "name": name, "format": "table", "format_version": None,
            "generator": __version__, "seed": None, "spec": {**spec, "source": source},
            "checksums": checksums,
            "encodings": {"features": cols, "feature_names": [str(f) for f in features],
                          "classes": classes}}
    paper = {"irt": "irt", "ski": "ski"}.get(study, "irt")
    card = {"title": f"Classification table {name}", "paper": paper,
            "task": "tabular-classification",
            "summary": f"A tabular classification data set as nesybench's {study.upper()} study "
                       f"reads it (source: {source}).", "rules": {}, "rules_language": "text"}
    return BenchmarkData(kind="tabular", name=name, root=None, columns=columns,
                         rows_by_split={"train": rows}, meta=meta, card=card,
                         torch_spec={"x": ("float32", f"[{len(cols)}]"),
                                     "label": ("int64", "[]")},
                         _encode=_tabular_encode)


def load_irt_table(spec: str, name: str) -> BenchmarkData:
    """An IRT data set: a built-in name (``letter``, ``optdigits``, ``phoneme``) or a
    CSV/ARFF path (target: the last column)."""
    from nesybench import datafiles  # noqa: PLC0415
    from nesybench.irt import data as irt_data  # noqa: PLC0415

    if spec in irt_data.BUILTIN:
        ds = irt_data.load_builtin(spec)
        key = irt_data.BUILTIN[spec][0]
        sums = {key: datafiles.DATA_FILES[key].sha256}
    else:
        ds = irt_data.load_file(spec)
        sums = {Path(spec).name: sha256_file(spec)}
    d = ds.describe()
    d["nominal_columns"] = [f for f, n in zip(ds.features, ds.nominal.tolist()) if n]
    d["categories"] = {f: c for f, c in zip(ds.features, ds.categories) if c}
    return tabular(name, ds.X, ds.y, list(ds.features), list(ds.classes), source=ds.source,
                   study="irt", checksums=sums, spec=d)


def load_ski_table(key: str, name: str) -> BenchmarkData:
    """A SKI data set: ``bcw``, ``splice`` or ``census`` (from the data-file cache)."""
    from nesybench import datafiles  # noqa: PLC0415
    from nesybench.ski import data as ski_data  # noqa: PLC0415

    ds = ski_data.load(key)
    sums = {k: f.sha256 for k, f in sorted(datafiles.DATA_FILES.items())
            if k.startswith("ski/") and (key != "census") == ("adult" not in k)
            and (key != "bcw" or "biopsy" in k) and (key != "splice" or "splice" in k)}
    spec = {"name": ds.name, "rows": int(ds.y.size), "features": len(ds.features),
            "classes": list(ds.classes), "class_counts": ds.counts(),
            "groups": [{"name": g.name, "kind": g.kind, "columns": list(g.columns)}
                       for g in ds.groups]}
    return tabular(name, ds.X, ds.y, list(ds.features), list(ds.classes), source=ds.source,
                   study="ski", checksums=sums, spec=spec)
