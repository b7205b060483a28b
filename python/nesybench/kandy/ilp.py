"""KANDY as an ILP problem: Aleph-ready export and evaluation of learned theories.

Paper, main text §4 "Symbolic models" and supplementary §2-§4.5.3. Two encodings of a sample:

* **natural** (NAT): the sample is a nested term, the example is ``valid(stack([...]))``;
* **pointer** (PTR): every composition is a constant ``cNNNNNN`` defined by a fact
  ``defined_as(c000001, stack, [triangle_red_small, c000002])``; the example is
  ``valid(sNNNNN)`` and ``sample_is(sNNNNN, c000000)`` links it to its root object.

and three background-knowledge sizes, ``minimal`` (§4.5.1), ``mid`` (the paper's 39 predicates of
§4.5: without the domain definitions and without the named objects) and ``large`` (``mid`` + the
"cheat" predicates of footnote 9 / §4.5.2: named objects, symmetric_list/1, forall_shared_*/2,
pseudo_palindrome*/1), in ``kb/kandy/ilp/<encoding>_<kb>.pl``.

Pointer constants are deterministic: within a task, samples are numbered over the splits in the
order train, val, test (rows in ``annotations.csv`` order), ``s00001`` first, and objects in
depth-first pre-order, ``c000000`` first. Export and evaluation use the same numbering, so a learned
fact such as ``valid(s00003)`` can never name a test sample.

Public functions: :func:`export_task`, :func:`export_all`, :func:`evaluate_theory`,
:func:`theory_size`; result dataclass :class:`IlpScore`.
"""
from __future__ import annotations

import csv
import itertools
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import KB_DIR
from ..errors import NesyError, PrologError
from ..io import atomic_output_dir, dumps
from ..logic import prolog
from .symbols import Composite, Shape, Symbol, from_prolog

ENCODINGS = ("natural", "pointer")
KBS = ("minimal", "mid", "large")
SPLITS = ("train", "val", "test")

#: Aleph settings written into every .b file (supplementary Table 2 constants; clauselength is
#: the Easy ``max_size`` of Table 3). Override per export with ``settings=``.
DEFAULT_SETTINGS: dict[str, object] = {
    "i": 5,
    "clauselength": 6,
    "minacc": 0.5,
    "noise": 5,
    "minpos": 2,
    "depth": 15,
    "nodes": 20000,
}

#: Aleph ``newvars`` (the paper's ``max_vars``, the largest number of new variables in a clause)
#: per encoding: the best Easy values of supplementary Table 4 (NAT 12, PTR 6). Written after
#: :data:`DEFAULT_SETTINGS`; ``settings={"newvars": N}`` overrides it, ``None`` drops it.
DEFAULT_NEWVARS: dict[str, int] = {"natural": 12, "pointer": 6}

# Mode declarations (recall, template). Types: sample (pointer example constant), obj (an atomic
# shape, a composition term or a pointer constant), list (of obj), int, and the constants shape,
# color, size, op (compositional operator), name (named object).
_MODES_MIN_COMMON = [
    (1, "extract_shape(+obj, #shape)"),
    (1, "extract_color(+obj, #color)"),
    (1, "extract_size(+obj, #size)"),
    ("*", "exists_shape(#shape, +list)"),
    ("*", "exists_color(#color, +list)"),
    ("*", "exists_size(#size, +list)"),
    (1, "same_shape(#shape, +list)"),
    (1, "same_color(#color, +list)"),
    (1, "same_size(#size, +list)"),
    ("*", "contains(+obj, -obj)"),
    ("*", "recursive_contains(+obj, -obj)"),
]
_MODES_STRUCT = {
    "natural": [
        (1, "extract_operator(+obj, #op)"),
        (1, "extract_children(+obj, -list)"),
        (1, "extract_op_and_chld(+obj, #op, -list)"),
        (1, "atom(+obj)"),
    ],
    "pointer": [
        (1, "sample_is(+sample, -obj)"),
        (1, "defined_as(+obj, #op, -list)"),
    ],
}
_MODES_BUILTIN_MIN = [
    (1, "reverse(+list, -list)"),
    (1, "length(+list, -int)"),
    (1, "length(+list, #int)"),
]
_MODES_MID = [
    ("*", "recursive_contains2(+obj, -obj, -int)"),
    ("*", "contains_composition(+obj, #op)"),
    ("*", "contains_composition_depth(+obj, #op, -int)"),
    (1, "same_attribute(+list)"),
    (1, "same_non_size(+list)"),
    (1, "all_same(-obj, +list)"),
    (1, "expand2(+list, -obj, -obj)"),
    (1, "expand4(+list, -obj, -obj, -obj, -obj)"),
    (1, "expand8(+list, -obj, -obj, -obj, -obj, -obj, -obj, -obj, -obj)"),
    (1, "expand9(+list, -obj, -obj, -obj, -obj, -obj, -obj, -obj, -obj, -obj)"),
    (1, "odd(+int)"),
    (1, "even(+int)"),
    (1, "first(+list, -obj)"),
    (1, "last(+list, -obj)"),
    (1, "prepend(+obj, +list, -list)"),
    (1, "droplast(+list, -list)"),
    (1, "middle(+list, -list)"),
    (1, "getmiddle(+list, -obj)"),
    (1, "dropmiddle(+list, -list)"),
    (1, "less_eq(+int, +int)"),
    (1, "less(+int, +int)"),
    (1, "greater(+int, +int)"),
    (1, "same(+obj, +obj)"),
    (1, "different(+obj, +obj)"),
    (1, "delete(+list, +obj, -list)"),
    ("*", "nth0(-int, +list, -obj)"),
    ("*", "member(-obj, +list)"),
]
# The LARGE KB's "cheat" predicates (paper footnote 9, supplementary §4.5.2).
_MODES_LARGE = [
    (1, "house(+obj)"),
    (1, "car(+obj)"),
    (1, "tower(+obj)"),
    (1, "wagon(+obj)"),
    (1, "traffic_light(+obj)"),
    ("*", "is_named_object(+obj, #name)"),
    (1, "symmetric_list(+list)"),
    ("*", "forall_shared_shape(+obj, #shape)"),
    ("*", "forall_shared_color(+obj, #color)"),
    ("*", "forall_shared_named_obj(+obj, #name)"),
    (1, "pseudo_palindrome(+list)"),
    (1, "pseudo_palindrome2(+list)"),
]


def mode_declarations(encoding: str, kb: str) -> list[tuple[object, str]]:
    """The ``modeb`` (recall, template) pairs offered to the learner for ``encoding`` x ``kb``."""
    _check_choice("encoding", encoding, ENCODINGS)
    _check_choice("kb", kb, KBS)
    modes = _MODES_MIN_COMMON + _MODES_STRUCT[encoding] + _MODES_BUILTIN_MIN
    if kb in ("mid", "large"):
        modes = modes + _MODES_MID
    if kb == "large":
        modes = modes + _MODES_LARGE
    return modes


def determinations(encoding: str, kb: str) -> list[str]:
    """The ``Name/Arity`` of every body predicate the learner may use (one
    ``determination(valid/1, Name/Arity)`` each), in mode order without repeats."""
    seen: list[str] = []
    for _, t in mode_declarations(encoding, kb):
        name = t.split("(", 1)[0]
        pi = f"{name}/{t.count(',') + 1}"
        if pi not in seen:
            seen.append(pi)
    return seen


def bk_file(encoding: str, kb: str) -> Path:
    """Path of the background-knowledge file ``kb/kandy/ilp/<encoding>_<kb>.pl``."""
    _check_choice("encoding", encoding, ENCODINGS)
    _check_choice("kb", kb, KBS)
    return KB_DIR / "kandy" / "ilp" / f"{encoding}_{kb}.pl"


_INCLUDE = re.compile(r"^:- include\('([^']+)'\)\.\s*$")


def bk_text(encoding: str, kb: str) -> str:
    """The knowledge base as one stand-alone text: each ``:- include('part.pl').`` line of
    :func:`bk_file` replaced by that part (paths relative to the including file), as Aleph
    reads the exported ``.b`` file on its own."""
    return _inline_includes(bk_file(encoding, kb))


def _inline_includes(path: Path, depth: int = 0) -> str:
    if depth > 8:
        raise NesyError("include nesting too deep", file=str(path))
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _INCLUDE.match(line)
        if m:
            part = (path.parent / m[1]).resolve()
            out.append(f"% ---- {part.relative_to(KB_DIR.parent).as_posix()} ----")
            out.append(_inline_includes(part, depth + 1).rstrip("\n"))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- dataset access

@dataclass(frozen=True)
class _Sample:
    split: str
    row: int            # 2-based line in annotations.csv (header is line 1)
    label: int
    supervised: bool
    text: str           # natural encoding
    symbol: Symbol


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise NesyError(f"unknown {name} {value!r} (expected one of {', '.join(choices)})",
                        field=name)


def _manifest(dataset_dir: Path) -> dict | None:
    path = dataset_dir / "manifest.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise NesyError(f"cannot read the manifest: {exc}", file=str(path)) from None


def _dataset_dir(dataset_dir) -> Path:
    d = Path(dataset_dir)
    if not d.is_dir():
        raise NesyError("dataset folder not found", file=str(d))
    if not any((d / s / "annotations.csv").exists() for s in SPLITS):
        raise NesyError("not a KANDY dataset (no <split>/annotations.csv; see docs/formats/kandy-dataset.md)",
                        file=str(d))
    return d


def _read_task(dataset_dir: Path, task_id: int) -> dict[str, list[_Sample]]:
    """Every split's samples of one task, in ``annotations.csv`` order."""
    out: dict[str, list[_Sample]] = {}
    for split in SPLITS:
        path = dataset_dir / split / "annotations.csv"
        if not path.exists():
            continue
        rows: list[_Sample] = []
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = {"task_id", "label", "prolog"} - set(reader.fieldnames or ())
            if missing:
                raise NesyError(f"missing column(s) {', '.join(sorted(missing))}",
                                file=str(path), line=1)
            for line, rec in enumerate(reader, start=2):
                try:
                    tid = int(rec["task_id"])
                except (TypeError, ValueError):
                    raise NesyError(f"bad task_id {rec['task_id']!r}", file=str(path),
                                    field="task_id", line=line) from None
                if tid != task_id:
                    continue
                label = (rec.get("label") or "").strip()
                if label not in ("0", "1"):
                    raise NesyError(f"bad label {label!r} (expected 0 or 1)", file=str(path),
                                    field="label", line=line, task=str(task_id))
                text = (rec.get("prolog") or "").strip()
                try:
                    sym = from_prolog(text)
                except (ValueError, IndexError) as exc:
                    raise NesyError(f"bad sample: {exc}", file=str(path), field="prolog",
                                    line=line, task=str(task_id)) from None
                sup = (rec.get("supervised") or "1").strip() != "0"
                rows.append(_Sample(split, line, int(label), sup, sym.to_prolog(), sym))
        out[split] = rows
    return out


def _task_meta(dataset_dir: Path, task_id: int) -> dict:
    man = _manifest(dataset_dir)
    if man is None:
        return {}
    for t in man.get("tasks", []):
        if int(t.get("id", -1)) == task_id:
            return t
    raise NesyError(f"unknown task id {task_id}", file=str(dataset_dir / "manifest.json"),
                    task=str(task_id))


def _task_ids(dataset_dir: Path) -> list[int]:
    man = _manifest(dataset_dir)
    if man is not None and man.get("tasks"):
        return sorted(int(t["id"]) for t in man["tasks"])
    ids: set[int] = set()
    for split in SPLITS:
        path = dataset_dir / split / "annotations.csv"
        if path.exists():
            with open(path, newline="", encoding="utf-8") as fh:
                ids.update(int(r["task_id"]) for r in csv.DictReader(fh))
    return sorted(ids)


def _load_task(dataset_dir, task_id) -> tuple[Path, int, dict, dict[str, list[_Sample]]]:
    d = _dataset_dir(dataset_dir)
    try:
        tid = int(task_id)
    except (TypeError, ValueError):
        raise NesyError(f"bad task id {task_id!r} (expected an integer)", task=str(task_id)) from None
    meta = _task_meta(d, tid)
    splits = _read_task(d, tid)
    if not any(splits.values()):
        raise NesyError(f"unknown task id {tid}: no samples in any split", file=str(d),
                        task=str(tid))
    return d, tid, meta, splits


def _rule_path(dataset_dir: Path, task_id: int, meta: dict) -> Path | None:
    cands = []
    if meta.get("rule_file"):
        cands.append(dataset_dir / meta["rule_file"])
    cands += [dataset_dir / "rules" / f"{task_id:02d}.pl", dataset_dir / "rules" / f"{task_id}.pl"]
    return next((p for p in cands if p.is_file()), None)


# --------------------------------------------------------------------------- pointer encoding

def pointer_facts(symbol: Symbol, sample_id: str, counter: "itertools.count",
                  prefix: str = "c") -> list[str]:
    """``sample_is/2`` + ``defined_as/3`` facts (text, no final dot) for one sample.

    Objects take the numbers ``next(counter)`` in depth-first pre-order (``c%06d``); an
    atomic sample (no composition) is linked directly: ``sample_is(s00001, circle_red_small)``.
    """
    facts: list[str] = []

    def name(sym: Symbol) -> str:
        if isinstance(sym, Shape):
            return sym.to_prolog()
        me = f"{prefix}{next(counter):06d}"
        slot = len(facts)
        facts.append("")  # reserve: parents before children
        kids = [name(k) for k in sym.children]
        facts[slot] = f"defined_as({me}, {sym.op}, [{', '.join(kids)}])"
        return me

    root = name(symbol)
    return [f"sample_is({sample_id}, {root})"] + facts


def pointer_symbol(facts: list[str], sample_id: str) -> Symbol:
    """Inverse of :func:`pointer_facts` (used by tests and for checking exports)."""
    defs: dict[str, tuple[str, list[str]]] = {}
    root = None
    for f in facts:
        f = f.strip().rstrip(".")
        if f.startswith("sample_is("):
            sid, obj = [x.strip() for x in f[len("sample_is("):-1].split(",")]
            if sid == sample_id:
                root = obj
        elif f.startswith("defined_as("):
            inner = f[len("defined_as("):-1]
            obj, op, rest = inner.split(",", 2)
            kids = [k.strip() for k in rest.strip()[1:-1].split(",") if k.strip()]
            defs[obj.strip()] = (op.strip(), kids)
    if root is None:
        raise ValueError(f"no sample_is/2 fact for {sample_id}")

    def build(name: str) -> Symbol:
        if name in defs:
            op, kids = defs[name]
            return Composite(op, tuple(build(k) for k in kids))
        return from_prolog(name)

    return build(root)


def _pointer_encode(splits: dict[str, list[_Sample]]) -> dict[tuple[str, int], tuple[str, list[str]]]:
    """(split, index in split) -> (sample constant, facts), numbered over train, val, test."""
    samples = itertools.count(1)
    objects = itertools.count(0)
    out = {}
    for split in SPLITS:
        for i, s in enumerate(splits.get(split, [])):
            sid = f"s{next(samples):05d}"
            out[(split, i)] = (sid, pointer_facts(s.symbol, sid, objects))
    return out


# --------------------------------------------------------------------------- export

def _fmt_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        r = repr(v)                 # Prolog floats need a dot: 1e-05 -> 1.0e-05
        return r.replace("e", ".0e", 1) if "e" in r and "." not in r else r
    return str(v)


def _bias_text(encoding: str, kb: str, settings: dict) -> str:
    lines = [
        "% Aleph's operators, so that the file also reads outside Aleph.",
        ":- op(500, fy, #).",
        "",
        "% Portability: classic Aleph 5 (aleph.pl consulted into user) defines set/2 and",
        "% determination/2; the SWI-Prolog pack (library(aleph)) calls them aleph_set/2 and",
        "% aleph:determination/3. Define the two only where they are missing.",
        ":- if(\\+ current_predicate(set/2)).",
        ":- prolog_load_context(module, M),",
        "   assertz(M:(set(K, V) :- aleph:aleph_set(M:K, V))),",
        "   assertz(M:(determination(P, Q) :- aleph:determination(P, Q, M))).",
        ":- endif.",
        "",
        "% Settings (paper, supplementary Tables 2-3).",
    ]
    lines += [f":- set({k}, {_fmt_value(v)})." for k, v in settings.items()]
    head = "valid(+sample)" if encoding == "pointer" else "valid(+obj)"
    lines += ["", "% Mode declarations.", f":- modeh(1, {head})."]
    modes = mode_declarations(encoding, kb)
    lines += [f":- modeb({r}, {t})." for r, t in modes]
    lines += ["", "% Determinations."]
    lines += [f":- determination(valid/1, {pi})." for pi in determinations(encoding, kb)]
    return "\n".join(lines) + "\n"


def _write_task_files(folder: Path, stem: str, tid: int, meta: dict,
                      splits: dict[str, list[_Sample]], encoding: str, kb: str, split: str,
                      settings: dict, supervised_only: bool) -> dict:
    _check_choice("encoding", encoding, ENCODINGS)
    _check_choice("kb", kb, KBS)
    _check_choice("split", split, SPLITS)
    train = [(i, s) for i, s in enumerate(splits.get(split, []))
             if s.supervised or not supervised_only]
    test = list(enumerate(splits.get("test", [])))
    ptr = _pointer_encode(splits) if encoding == "pointer" else {}

    def example(sp: str, i: int, s: _Sample) -> str:
        return f"valid({ptr[(sp, i)][0]})" if encoding == "pointer" else f"valid({s.text})"

    title = (f"KANDY task {tid}" + (f" '{meta['name']}'" if meta.get("name") else "")
             + f", {encoding} encoding, {kb} KB")
    bk = bk_text(encoding, kb)
    parts = [
        f"% {title}: Aleph background knowledge, modes and settings.",
        f"% Examples: {stem}.f (positives), {stem}.n (negatives), split '{split}'.",
        f"% Classic Aleph 5:   ?- [aleph], read_all('{stem}'), induce.",
        f"% SWI-Prolog pack:   ?- use_module(library(aleph)), aleph:read_all(user:'{stem}'), induce(T).",
        "% Written by nesybench (python/nesybench/kandy/ilp.py); do not edit by hand.",
        "",
        _bias_text(encoding, kb, settings),
        f"% ---- Background knowledge: kb/kandy/ilp/{encoding}_{kb}.pl ----",
        bk.rstrip("\n"),
        "",
    ]
    if encoding == "pointer":
        parts.append(f"% ---- Samples of split '{split}' (pointer encoding) ----")
        for i, _ in train:
            parts += [f + "." for f in ptr[(split, i)][1]]
        parts.append("")
    (folder / f"{stem}.b").write_text("\n".join(parts), encoding="utf-8")
    pos = [example(split, i, s) + "." for i, s in train if s.label == 1]
    neg = [example(split, i, s) + "." for i, s in train if s.label == 0]
    (folder / f"{stem}.f").write_text("".join(x + "\n" for x in pos), encoding="utf-8")
    (folder / f"{stem}.n").write_text("".join(x + "\n" for x in neg), encoding="utf-8")

    tl = [f"% {title}: test-split examples, for evaluation (pos/1, neg/1).",
          f"% Consult after {stem}.b.", ""]
    tl += [":- dynamic pos/1.", ":- dynamic neg/1."]
    if encoding == "pointer":
        tl += [":- multifile defined_as/3.", ":- multifile sample_is/2.", ""]
        for i, _ in test:
            tl += [f + "." for f in ptr[("test", i)][1]]
    tl.append("")
    tl += [f"pos({example('test', i, s)})." for i, s in test if s.label == 1]
    tl += [f"neg({example('test', i, s)})." for i, s in test if s.label == 0]
    (folder / f"{stem}_test.pl").write_text("\n".join(tl) + "\n", encoding="utf-8")
    return {"task": tid, "stem": stem, "encoding": encoding, "kb": kb, "split": split,
            "positives": len(pos), "negatives": len(neg),
            "test_positives": sum(s.label == 1 for _, s in test),
            "test_negatives": sum(s.label == 0 for _, s in test)}


def _stem(task_id: int) -> str:
    return f"t{task_id:02d}"


def export_task(dataset_dir: str | os.PathLike, task_id: int, out_dir: str | os.PathLike, *,
                encoding: str = "natural", kb: str = "minimal", split: str = "train",
                settings: dict | None = None, supervised_only: bool = True,
                overwrite: bool = False) -> Path:
    """Write the Aleph files of one task into the new folder ``out_dir``; return the stem path.

    Files (stem ``tNN``): ``tNN.b`` (settings, modes, determinations, background knowledge and,
    for the pointer encoding, the ``defined_as/3``/``sample_is/2`` facts of the exported
    samples), ``tNN.f`` / ``tNN.n`` (positive / negative ``valid/1`` examples of ``split``),
    ``tNN_test.pl`` (the test split as ``pos/1`` / ``neg/1`` facts, plus its pointer facts).
    ``settings`` override :data:`DEFAULT_SETTINGS` and the encoding's ``newvars``
    (:data:`DEFAULT_NEWVARS`; ``None`` values remove one);
    ``supervised_only`` keeps only rows with ``supervised == 1``.
    """
    d, tid, meta, splits = _load_task(dataset_dir, task_id)
    _check_choice("encoding", encoding, ENCODINGS)
    sett = _settings(settings, encoding)
    with atomic_output_dir(out_dir, overwrite=overwrite, inputs=[d]) as tmp:
        _write_task_files(tmp, _stem(tid), tid, meta, splits, encoding, kb, split, sett,
                          supervised_only)
    return Path(out_dir).resolve() / _stem(tid)


def _settings(settings: dict | None, encoding: str) -> dict:
    sett = dict(DEFAULT_SETTINGS)
    sett["newvars"] = DEFAULT_NEWVARS[encoding]
    for k, v in (settings or {}).items():
        if v is None:
            sett.pop(k, None)
        else:
            sett[k] = v
    return sett


def export_all(dataset_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
               encodings: tuple[str, ...] | list[str] = ENCODINGS,
               kbs: tuple[str, ...] | list[str] = ("minimal", "mid"),
               tasks: list[int] | None = None, split: str = "train",
               settings: dict | None = None, supervised_only: bool = True,
               overwrite: bool = False) -> Path:
    """Export every task (or ``tasks``) in every ``encodings`` x ``kbs`` combination.

    Layout: ``out_dir/<encoding>-<kb>/tNN.{b,f,n}`` + ``tNN_test.pl``, and ``out_dir/index.json``
    listing every stem written (with its example counts) and the Aleph settings per encoding. The whole folder appears atomically.
    Returns ``out_dir`` (resolved).
    """
    d = _dataset_dir(dataset_dir)
    for e in encodings:
        _check_choice("encoding", e, ENCODINGS)
    for k in kbs:
        _check_choice("kb", k, KBS)
    ids = list(tasks) if tasks is not None else _task_ids(d)
    sett = {e: _settings(settings, e) for e in encodings}
    loaded = [_load_task(d, t) for t in ids]
    index = []
    with atomic_output_dir(out_dir, overwrite=overwrite, inputs=[d]) as tmp:
        for e in encodings:
            for k in kbs:
                sub = tmp / f"{e}-{k}"
                sub.mkdir()
                for _, tid, meta, splits in loaded:
                    index.append(_write_task_files(sub, _stem(tid), tid, meta, splits, e, k,
                                                   split, sett[e], supervised_only))
                    index[-1]["stem"] = f"{e}-{k}/{_stem(tid)}"
        (tmp / "index.json").write_text(dumps({"dataset": os.path.relpath(d.resolve(), Path(out_dir).resolve()),
                                               "settings": sett,
                                               "exports": index}), encoding="utf-8")
    return Path(out_dir).resolve()


# --------------------------------------------------------------------------- evaluation

@dataclass
class IlpScore:
    """Quality of a learned theory on one split of one task (paper Table 2, supp. §3).

    ``balanced_accuracy`` = ½·TP/(TP+FN) + ½·TN/(TN+FP) (the mean of the defined terms when a
    class is absent); ``precision`` = TP/(TP+FP) (0 when nothing is predicted positive);
    ``recall`` = TP/(TP+FN). Sizes: ``clauses_*`` counts every clause of the theory;
    ``literals_*`` is the largest number of literals of one clause (head + body literals, a
    top-level conjunct is one literal; ``\\+ G``, ``(A ; B)``, ``(A -> B)`` count as one).
    ``c_ratio`` = C_gt / C_lt and ``l_ratio`` = L_gt / L_lt (< 1: the learned theory is larger).
    ``correct``: the theory agrees with the labels (which the ground-truth rule confirms) on
    every sample of the split. ``errors``: samples whose proof raised an error or ran out of
    inferences (counted as not covered).

    The check against the ground truth beyond the split: ``task_disagreements`` of the
    ``task_samples`` samples of the task in all splits (train, val, test), and
    ``fresh_disagreements`` of ``fresh_samples`` samples drawn anew from the task's
    curriculum (``curriculum.yaml`` of the dataset) with labels given by the ground-truth
    rule. ``correct_generalises``: ``correct`` and no disagreement in either check (the fresh
    check is skipped, ``fresh_disagreements`` None, without ``curriculum.yaml``, rule or
    ``fresh``).
    """

    task: int
    encoding: str
    split: str
    tp: int
    fn: int
    tn: int
    fp: int
    errors: int
    balanced_accuracy: float
    precision: float
    recall: float
    clauses_lt: int
    literals_lt: int
    literals_lt_total: int
    clauses_gt: int | None = None
    literals_gt: int | None = None
    c_ratio: float | None = None
    l_ratio: float | None = None
    correct: bool = False
    theory: str = ""
    kb: str = "large"
    task_samples: int = 0
    task_disagreements: int | None = None
    fresh_samples: int = 0
    fresh_disagreements: int | None = None
    correct_generalises: bool | None = None
    predictions: list[int] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("predictions")
        return d


def theory_size(text: str, *, source: str | None = None) -> tuple[int, int, int]:
    """(clauses, max literals of a clause, total literals) of Prolog ``text``.

    Literals of a clause: 1 for the head + one per top-level body conjunct (``true`` alone is
    a fact's body and counts 0). Reads terms only; never runs anything.
    """
    prolog.use("prolog/kandy_ilp.pl")
    try:
        res = prolog.once("kandy_ilp:theory_size(Text, C, L, T)", Text=text)
    except PrologError as exc:
        raise NesyError(f"cannot read theory: {exc.message}", file=source) from None
    if res is None:
        raise NesyError("cannot read theory", file=source)
    return int(res["C"]), int(res["L"]), int(res["T"])


_eval_counter = itertools.count()

#: Fresh samples drawn per evaluated theory for the generalisation check (``fresh=``).
DEFAULT_FRESH = 1000


class _LoadedTheory:
    """A learned theory loaded (sandboxed) into a fresh module over the ``kb`` BK module."""

    def __init__(self, text: str, source: str, tid: int, encoding: str, kb: str):
        prolog.use("prolog/kandy_ilp.pl")
        self.encoding = encoding
        self.bk = prolog.once("kandy_ilp:ilp_bk_module(E, K, M)", E=encoding, K=kb)["M"]
        self.module = f"kandy_ilp_theory_{os.getpid()}_{next(_eval_counter)}"
        # the theory sees its BK and system only, never what another part of the process
        # loaded into `user` (e.g. the generator's kb/kandy/bk.pl with the named objects)
        prolog.once("set_module(M:base(system))", M=self.module)
        try:
            # load_rules (text) rather than load_rules_file: the latter loses the line of a
            # syntax error (safe_load.pl only decodes stream(...) error contexts).
            preds = prolog.load_rules(self.module, text, [self.bk], source=source, task=str(tid))
        except NesyError as exc:
            raise exc.where(file=source, task=str(tid))
        if "valid/1" not in preds:
            prolog.once("dynamic(M:valid/1)", M=self.module)   # an empty theory covers nothing

    def flags(self, args: list[str], pointer: list[str] | None = None) -> list[int]:
        """1 covered, 0 not, -1 error / out of inferences, for each ``valid/1`` argument."""
        if self.encoding == "pointer":
            prolog.once("kandy_ilp:set_pointer_facts(B, Fs)", B=self.bk, Fs=pointer or [])
        try:
            return prolog.once("kandy_ilp:check_examples(M, Ts, Fs)", M=self.module,
                               Ts=args)["Fs"]
        finally:
            if self.encoding == "pointer":
                prolog.once("kandy_ilp:set_pointer_facts(B, [])", B=self.bk)

    def close(self) -> None:
        prolog.once("safe_load:unload_rules(M)", M=self.module)


def _fresh_samples(d: Path, tid: int, meta: dict, n: int) -> list[tuple[Symbol, int]]:
    """``n`` samples of task ``tid`` drawn anew from the dataset's ``curriculum.yaml`` (seed
    derived from the task's seed and "ilp-fresh"), labelled by the ground-truth rule; [] when
    the dataset has no curriculum copy or no rule."""
    from ..io import derive_seed
    from .language import load_curriculum
    from .rules import TaskRule
    from .sampler import draw_symbols
    import dataclasses

    man = _manifest(d) or {}
    cur_file = d / "curriculum.yaml"
    rule = _rule_path(d, tid, meta)
    if n <= 0 or not cur_file.is_file() or rule is None:
        return []
    cur = load_curriculum(cur_file)
    spec = next((t for t in cur.tasks if t.index == tid), None)
    if spec is None:
        return []
    spec = dataclasses.replace(spec, samples=n, patience=max(spec.patience, 10 * n))
    seed = derive_seed(int(meta.get("seed", man.get("seed", 0)) or 0), "ilp-fresh")
    checker = TaskRule(rule.read_text(encoding="utf-8"), source=str(rule), task=str(tid),
                       field="rule_file")
    try:
        accepted, _ = draw_symbols(spec, cur.domain, seed, checker)
    finally:
        checker.close()
    return [(sym, label) for sym, label, _ in accepted]


def evaluate_theory(dataset_dir: str | os.PathLike, task_id: int,
                    theory_file: str | os.PathLike, encoding: str = "natural", *,
                    split: str = "test", kb: str = "large",
                    fresh: int = DEFAULT_FRESH) -> IlpScore:
    """Score the learned theory in ``theory_file`` on ``split`` of task ``task_id``.

    The theory (untrusted Prolog text defining ``valid/1``) is loaded with
    :func:`nesybench.logic.prolog.load_rules` (sandboxed, line-accurate) into a fresh module
    that sees the ``kb`` background knowledge of ``encoding`` (``large`` ⊇ ``mid`` ⊇
    ``minimal``, so the default scores a theory learned with any KB); every sample of the split
    is checked in one Prolog call. The theory is also checked against the ground truth on all
    samples of the task and on ``fresh`` newly drawn samples (0 skips that draw); see
    :class:`IlpScore`. Raises :class:`NesyError` (with file and line) on a syntax error, a
    directive or an unsafe call, and for a missing dataset / unknown task.
    """
    _check_choice("encoding", encoding, ENCODINGS)
    _check_choice("kb", kb, KBS)
    _check_choice("split", split, SPLITS)
    d, tid, meta, splits = _load_task(dataset_dir, task_id)
    samples = splits.get(split, [])
    if not samples:
        raise NesyError(f"task {tid} has no samples in split '{split}'", file=str(d),
                        task=str(tid), field="split")
    theory_path = Path(theory_file)
    if not theory_path.is_file():
        raise NesyError("theory file not found", file=str(theory_path), task=str(tid))
    text = theory_path.read_text(encoding="utf-8")
    fresh_set = _fresh_samples(d, tid, meta, fresh)

    theory = _LoadedTheory(text, str(theory_path), tid, encoding, kb)
    try:
        ptr = _pointer_encode(splits) if encoding == "pointer" else {}

        def split_flags(sp: str) -> list[int]:
            rows = splits.get(sp, [])
            if encoding == "pointer":
                keys = [(sp, i) for i in range(len(rows))]
                return theory.flags([ptr[k][0] for k in keys],
                                    [f for k in keys for f in ptr[k][1]])
            return theory.flags([s.text for s in rows])

        all_flags = {sp: split_flags(sp) for sp in SPLITS if splits.get(sp)}
        flags = all_flags[split]
        fresh_flags: list[int] = []
        if fresh_set:
            if encoding == "pointer":
                objs = itertools.count(0)
                ids = [f"f{i + 1:05d}" for i in range(len(fresh_set))]
                facts = [f for (sym, _), sid in zip(fresh_set, ids)
                         for f in pointer_facts(sym, sid, objs, prefix="g")]
                fresh_flags = theory.flags(ids, facts)
            else:
                fresh_flags = theory.flags([sym.to_prolog() for sym, _ in fresh_set])
    finally:
        theory.close()

    pred = [1 if f == 1 else 0 for f in flags]
    labels = [s.label for s in samples]
    tp = sum(p == 1 and y == 1 for p, y in zip(pred, labels))
    fn = sum(p == 0 and y == 1 for p, y in zip(pred, labels))
    tn = sum(p == 0 and y == 0 for p, y in zip(pred, labels))
    fp = sum(p == 1 and y == 0 for p, y in zip(pred, labels))
    halves = []
    if tp + fn:
        halves.append(tp / (tp + fn))
    if tn + fp:
        halves.append(tn / (tn + fp))
    bacc = sum(halves) / len(halves)
    c_lt, l_lt, l_tot = theory_size(text, source=str(theory_path))
    score = IlpScore(
        task=tid, encoding=encoding, kb=kb, split=split, tp=tp, fn=fn, tn=tn, fp=fp,
        errors=sum(f == -1 for f in flags), balanced_accuracy=bacc,
        precision=tp / (tp + fp) if tp + fp else 0.0,
        recall=tp / (tp + fn) if tp + fn else 0.0,
        clauses_lt=c_lt, literals_lt=l_lt, literals_lt_total=l_tot,
        correct=(fp == 0 and fn == 0), theory=str(theory_path), predictions=pred)
    every = [(f, s.label) for sp, fl in all_flags.items() for f, s in zip(fl, splits[sp])]
    score.task_samples = len(every)
    score.task_disagreements = sum((f == 1) != (y == 1) for f, y in every)
    if fresh_set:
        score.fresh_samples = len(fresh_set)
        score.fresh_disagreements = sum((f == 1) != (y == 1)
                                        for f, (_, y) in zip(fresh_flags, fresh_set))
    score.correct_generalises = (score.correct and score.task_disagreements == 0
                                 and not score.fresh_disagreements)
    rule = _rule_path(d, tid, meta)
    if rule is not None:
        c_gt, l_gt, _ = theory_size(rule.read_text(encoding="utf-8"), source=str(rule))
        score.clauses_gt, score.literals_gt = c_gt, l_gt
        score.c_ratio = c_gt / c_lt if c_lt else None
        score.l_ratio = l_gt / l_lt if l_lt else None
    return score
