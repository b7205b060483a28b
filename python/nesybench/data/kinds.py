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
value in the variable's domain. A data set rendered with ``render: blender`` (CLE4EVR, 3D
driving scenes) has a ``scene`` column too: the JSON annotation beside each picture (objects,
positions, 2D boxes, concept values), a string in the rows and in the exports.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from nesybench import __version__
from nesybench.data.core import BenchmarkData, Column, image_tensor
from nesybench.errors import NesyError
from nesybench.folder import (MAX_FACT_ARITY, DataFolder, checksum_map, check_input_file,
                              json_loads,
                              int64, need, relative)
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


def read_manifest(folder: DataFolder) -> dict:
    """The folder's ``manifest.json``: a JSON object whose ``format`` is a string."""
    man = folder.read_json("manifest.json")
    if not isinstance(man, dict):
        raise NesyError("the manifest is not a JSON object", file=folder.label("manifest.json"))
    need(man, "format", str, file=folder.label("manifest.json"), required=False)
    return man


def _csv_rows(folder: DataFolder, rel: str, required=()) -> tuple[str, list[tuple[int, dict]]]:
    """``(label, [(line, row), ...])`` of a CSV file of the folder."""
    if not folder.exists(rel):
        raise NesyError("missing (is the data set complete?)", file=folder.label(rel))
    return folder.label(rel), folder.csv_rows(rel, required=required)[1]


def _strings(value, *, file: str, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise NesyError(f"expected a list of strings, got {type(value).__name__} "
                        f"{repr(value)[:60]}", file=file, field=field)
    return list(value)


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

    return {"image": image_tensor(data.folder.image(row["image"])),
            "label": torch.tensor(row["label"], dtype=torch.int64),
            "task_id": torch.tensor(row["task_id"], dtype=torch.int64),
            "supervised": torch.tensor(row["supervised"], dtype=torch.bool)}


def _kandy_tasks(man: dict, mfile: str) -> dict[int, dict]:
    tasks: dict[int, dict] = {}
    for i, t in enumerate(need(man, "tasks", list, file=mfile, required=False, default=[])):
        f = f"tasks[{i}]"
        if not isinstance(t, dict):
            raise NesyError(f"expected an object, got {type(t).__name__}", file=mfile, field=f)
        tid = need(t, "id", int, file=mfile, field=f)
        if not 0 <= tid < 1_000_000:
            raise NesyError(f"task id {tid} out of range (0..999999)", file=mfile,
                            field=f"{f}.id")
        if tid in tasks:
            raise NesyError(f"task id {tid} appears twice", file=mfile, field=f"{f}.id")
        for key in ("name", "description", "rule_file"):
            need(t, key, (str, int), file=mfile, field=f, required=False)
        if t.get("rule_file") is not None:
            relative(str(t["rule_file"]), file=mfile, field=f"{f}.rule_file")
        tasks[tid] = dict(t, _index=i)
    return tasks


def load_kandy(folder: DataFolder, man: dict, name: str) -> BenchmarkData:
    mfile = folder.label("manifest.json")
    files = checksum_map(man.get("files"), file=mfile, field="files")
    folder.checksums.update(files)
    tasks = _kandy_tasks(man, mfile)
    rows_by_split = {}
    for split in KANDY_SPLITS:
        path, raw = _csv_rows(folder, f"{split}/annotations.csv",
                              required=("filename", "task_id", "label", "supervised", "symbol"))
        rows = []
        for line, r in raw:
            tid = int64(r.get("task_id"), file=path, line=line, field="task_id", lo=0)
            try:
                symbol = json_loads(r["symbol"])
            except (KeyError, TypeError, ValueError, RecursionError):
                raise NesyError("the symbol is not JSON", file=path, line=line) from None
            rel = folder.check(f"{split}/{r.get('filename')}", file=path, line=line,
                               field="filename")
            filename = rel[len(split) + 1:]
            rows.append({
                "image": rel, "filename": filename, "task_id": tid,
                "task": str(tasks.get(tid, {}).get("name", tid)),
                "label": int64(r.get("label"), file=path, line=line, field="label", lo=0, hi=1),
                "supervised": bool(int64(r.get("supervised"), file=path, line=line,
                                         field="supervised", lo=0, hi=1)),
                "symbol": r["symbol"], "prolog": r.get("prolog") or "",
                "objects": _objects(symbol),
                "sha256": files.get(rel) or folder.sha256(rel)})
        rows_by_split[split] = rows
    rules = {}
    for tid, t in sorted(tasks.items()):
        rf = str(t.get("rule_file") or f"rules/{tid:02d}.pl")
        where = {"file": mfile, "field": f"tasks[{t.pop('_index')}].rule_file"}
        if folder.exists(rf, **where):
            rules[f"task {tid} ({t.get('name', '')})"] = folder.read_text(rf, **where)
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
    return BenchmarkData(kind="kandy", name=name, root=folder.root, folder=folder, columns=list(KANDY_COLUMNS),
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
    return {"image": image_tensor(data.folder.image(row["image"])),
            "labels": torch.tensor(labels, dtype=torch.int64),
            "concepts": torch.tensor(concepts, dtype=torch.int64)}


def _rs_concepts(man: dict, mfile: str) -> list[dict]:
    out = []
    for i, c in enumerate(need(man, "concepts", list, file=mfile, required=False, default=[])):
        f = f"concepts[{i}]"
        if not isinstance(c, dict):
            raise NesyError(f"expected an object with name and domain, got "
                            f"{type(c).__name__} {repr(c)[:40]}", file=mfile, field=f)
        need(c, "name", str, file=mfile, field=f)
        domain = need(c, "domain", list, file=mfile, field=f, required=False, default=[])
        for j, v in enumerate(domain):
            if isinstance(v, bool) or not isinstance(v, (int, str)):
                raise NesyError(f"expected an integer or a string, got {repr(v)[:40]}",
                                file=mfile, field=f"{f}.domain[{j}]")
            if isinstance(v, int):
                int64(v, file=mfile, field=f"{f}.domain[{j}]")
        out.append(c)
    return out


def knowledge_text(folder: DataFolder, name, *, file: str, field: str) -> str:
    """The text of a data set's ``knowledge:`` entry ``name``: a file of the data set, or the
    name of a knowledge base nesybench ships (``kb/shortcuts/xor.lp``, looked up in the
    registry :func:`nesybench.paths.shipped`). Anything else (``Makefile``, an absolute path,
    ``..``) is one :class:`NesyError` naming the file and field; nothing outside the folder is
    resolved."""
    from nesybench.paths import shipped_text  # noqa: PLC0415
    if not isinstance(name, str):
        raise NesyError(f"expected a file name, got {type(name).__name__}", file=file,
                        field=field)
    rel = relative(name, file=file, field=field)
    if folder.exists(rel, file=file, field=field):
        return folder.read_text(rel, file=file, field=field)
    text = shipped_text(rel, folders=("kb",))
    if text is not None:
        return text
    raise NesyError(f"{name[:80]!r} is neither a file of the data set nor a knowledge base "
                    "nesybench ships (kb/...)", file=file, field=field)


def load_rs(folder: DataFolder, man: dict, name: str) -> BenchmarkData:
    mfile = folder.label("manifest.json")
    sums = checksum_map(man.get("checksums"), file=mfile, field="checksums")
    folder.checksums.update(sums)
    labels = _strings(man.get("labels"), file=mfile, field="labels")
    concepts = _rs_concepts(man, mfile)
    counts = need(man, "counts", dict, file=mfile, required=False, default={})
    raw: dict[str, tuple[str, list[tuple[int, dict]]]] = {}
    for split in RS_SPLITS:
        rel = f"{split}/labels.csv"
        if not folder.exists(rel) and not counts.get(split):
            continue
        raw[split] = _csv_rows(folder, rel, required=("file",))
    taken = {"image", "file", "split", "sha256"}
    label_cols, concept_cols = [], []
    for lab in labels:
        key = f"label:{lab}"
        vals = sorted({r.get(key) or "" for _, rows in raw.values() for _, r in rows})
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
                             "dtype": "int64" if ints else "string", "concept": True,
                             "domain": [int(v) for v in domain] if ints else [str(v) for v in domain]})
    rows_by_split = {}
    scenes = man.get("render") == "blender"
    for split, (path, rows) in raw.items():
        out = []
        for line, r in rows:
            rel = folder.check(f"{split}/{r.get('file')}", file=path, line=line, field="file")
            row = {"image": rel, "file": rel[len(split) + 1:]}
            for col in label_cols + concept_cols:
                v = r.get(col["source"])
                if v is None:
                    raise NesyError(f"missing column {col['source']}", file=path, line=line)
                if col["dtype"] == "int64":
                    v = int64(v, file=path, line=line, field=col["source"])
                if col.get("concept") and v not in col["domain"]:
                    raise NesyError(f"value {v!r} is not in the domain of {col['name']}",
                                    file=path, line=line, field=col["source"])
                row[col["column"]] = v
            row["sha256"] = sums.get(rel) or folder.sha256(rel)
            if scenes:
                # render: blender writes the scene annotation beside each picture
                ann = Path(rel).with_suffix(".json").as_posix()
                if not folder.exists(ann, file=path, line=line, field="file"):
                    raise NesyError(f"no scene annotation {ann} for the picture", file=path,
                                    line=line)
                row["scene"] = folder.read_text(ann, file=path, line=line, field="file")
            out.append(row)
        rows_by_split[split] = out
    for col in concept_cols:
        col.pop("concept", None)
    columns = [Column("image", "image", "the picture (PNG)"),
               Column("file", "string", "PNG file name inside its split folder")]
    columns += [Column(c["column"], c["dtype"], f"label {c['name']}") for c in label_cols]
    columns += [Column(c["column"], c["dtype"], f"concept {c['name']} (the ground-truth value)")
                for c in concept_cols]
    columns.append(Column("sha256", "string", "SHA-256 of the PNG file (the manifest's checksum)"))
    if scenes:
        columns.append(Column("scene", "string", "the scene annotation (JSON): objects with "
                              "their attributes, positions and 2D boxes in pixels, and the "
                              "concept values (render: blender)"))
    task_text = folder.read_text("task.yaml") if folder.exists("task.yaml") else ""
    rules = {}
    if task_text:
        rules["task.yaml"] = task_text
        from nesybench.yamlsafe import load_yaml  # noqa: PLC0415
        doc = load_yaml(task_text, folder.label("task.yaml"))
        kn = doc.get("knowledge") if isinstance(doc, dict) else None
        for i, name in enumerate(kn if isinstance(kn, list) else [kn] if kn else []):
            where = {"file": folder.label("task.yaml"),
                     "field": f"knowledge[{i}]" if isinstance(kn, list) else "knowledge"}
            text = knowledge_text(folder, name, **where)
            rules[relative(name, **where)] = text
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
            "summary": "Pictures of concept worlds (digits, Kandinsky figures, driving "
                       "scenes, or 3D scenes rendered with Blender) labelled by a logic program over the concepts; the concepts "
                       "are given for measuring concept quality and reasoning shortcuts.",
            "rules": rules, "rules_language": "text"}
    return BenchmarkData(kind="rs", name=name, root=folder.root, folder=folder, columns=columns,
                         rows_by_split=rows_by_split, meta=meta, card=card,
                         torch_spec={"image": ("float32", "[C, H, W]"),
                                     "labels": ("int64", f"[{len(label_cols)}]"),
                                     "concepts": ("int64", f"[{len(concept_cols)}]")},
                         _encode=_rs_encode)


# -- RuDaS ------------------------------------------------------------------------------------
_FACT = re.compile(r"^\s*([a-z][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*\.\s*$")
#: one argument of a ground fact: a constant (an atom or a number; quoted without commas)
_CONSTANT = re.compile(r"[a-z0-9][A-Za-z0-9_.+-]*|'[^',\\]*'")


def _rudas_encode(data, row):
    import torch  # noqa: PLC0415

    enc = data.meta["encodings"]
    ent = enc["entity_index"]
    args = [ent[row[f"arg_{k}"]] if row[f"arg_{k}"] else -1
            for k in range(1, enc["max_arity"] + 1)]
    return {"predicate": torch.tensor(enc["predicate_index"][row["predicate"]], dtype=torch.int64),
            "arguments": torch.tensor(args, dtype=torch.int64),
            "target": torch.tensor(row["target"], dtype=torch.bool)}


def parse_fact(text: str, *, file: str, line: int) -> tuple[str, list[str]]:
    """``(predicate, arguments)`` of one ground fact ``p(c1, ..., cn).``; a rule, a variable,
    a compound argument or more than :data:`MAX_FACT_ARITY` arguments is one error naming
    ``file:line``."""
    if ":-" in text:
        raise NesyError("a rule in a fact file (facts are ground atoms such as p(a, b).)",
                        file=file, line=line)
    m = _FACT.match(text)
    if not m:
        raise NesyError("not a ground fact (expected p(a, b).)", file=file, line=line)
    if not m.group(2):
        return m.group(1), []
    if m.group(2).count(",") >= MAX_FACT_ARITY:
        raise NesyError(f"a fact with more than {MAX_FACT_ARITY} arguments", file=file,
                        line=line)
    args = [a.strip() for a in m.group(2).split(",")]
    for a in args:
        if not _CONSTANT.fullmatch(a):
            raise NesyError(f"argument {a[:40]!r} is not a constant (facts are ground: no "
                            "variables, no compound terms)", file=file, line=line)
    return m.group(1), args


def load_rudas(folder: DataFolder, man: dict, name: str) -> BenchmarkData:
    mfile = folder.label("manifest.json")
    targets = set(_strings(man.get("targets"), file=mfile, field="targets"))
    files = checksum_map(man.get("files"), file=mfile, field="files")
    folder.checksums.update(files)
    parsed: dict[str, list[tuple]] = {}
    max_arity = 0
    for stem in RUDAS_FILES:
        rel = f"{stem}.txt"
        if not folder.exists(rel):
            continue
        path = folder.label(rel)
        facts = []
        for line, text in enumerate(folder.read_text(rel).splitlines(), start=1):
            if not text.strip():
                continue
            pred, args = parse_fact(text, file=path, line=line)
            max_arity = max(max_arity, len(args))
            facts.append((text, pred, args))
        parsed[stem.replace("-", "_")] = facts
    if not parsed:
        raise NesyError("no fact files (train.txt ...): not a RuDaS data set", file=str(folder.root))
    relations = dict.fromkeys(_lines(folder, "relations.txt"))
    entities = dict.fromkeys(_lines(folder, "entities.txt"))
    rows_by_split = {}
    for split, facts in parsed.items():
        rows = []
        for text, pred, args in facts:
            row = {"fact": text, "predicate": pred, "arity": len(args)}
            for k in range(max_arity):
                row[f"arg_{k + 1}"] = args[k] if k < len(args) else ""
            row["target"] = f"{pred}/{len(args)}" in targets
            rows.append(row)
            relations.setdefault(pred)
            for a in args:
                entities.setdefault(a)
        rows_by_split[split] = rows
    relations, entities = list(relations), list(entities)
    columns = [Column("fact", "string", "the fact as written in the file (Prolog syntax)"),
               Column("predicate", "string", "predicate name"),
               Column("arity", "int64", "number of arguments")]
    columns += [Column(f"arg_{k}", "string", f"argument {k} (empty when the arity is smaller)")
                for k in range(1, max_arity + 1)]
    columns.append(Column("target", "bool", "whether the predicate is a target of the rules"))
    rules = {"rules.txt": folder.read_text("rules.txt")} if folder.exists("rules.txt") else {}
    meta = {"kind": "rudas", "name": name, "format": man.get("format"),
            "format_version": man.get("format_version"), "generator": man.get("generator"),
            "seed": man.get("seed"),
            "spec": {k: man.get(k) for k in ("params", "counts", "targets", "components",
                                             "predicates", "rule_graph")},
            "checksums": files,
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
    return BenchmarkData(kind="rudas", name=name, root=folder.root, folder=folder, columns=columns,
                         rows_by_split=rows_by_split, meta=meta, card=card,
                         torch_spec={"predicate": ("int64", "[]"),
                                     "arguments": ("int64", f"[{max_arity}]"),
                                     "target": ("bool", "[]")},
                         _encode=_rudas_encode)


def _lines(folder: DataFolder, rel: str) -> list[str]:
    if not folder.exists(rel):
        return []
    return [s.strip() for s in folder.read_text(rel).splitlines() if s.strip()]


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
        check_input_file(spec)
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
