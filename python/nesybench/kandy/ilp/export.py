"""Aleph-ready export of KANDY tasks: ``tNN.b`` (settings, modes, determinations, background
knowledge, pointer facts), ``tNN.f``/``tNN.n`` (examples) and ``tNN_test.pl`` (the test split).
"""
from __future__ import annotations

import os
from pathlib import Path

from ...io import atomic_output_dir, dumps
from .bias import ENCODINGS, KBS, SPLITS, aleph_settings, bias_text, bk_text, check_choice
from .pointer import pointer_encode
from .task import IlpTask, Sample, dataset_dir, load_task, read_manifest, task_ids


def _write_task_files(folder: Path, stem: str, task: IlpTask, encoding: str, kb: str,
                      split: str, settings: dict, supervised_only: bool) -> dict:
    tid, meta, splits = task.id, task.meta, task.splits
    check_choice("encoding", encoding, ENCODINGS)
    check_choice("kb", kb, KBS)
    check_choice("split", split, SPLITS)
    train = [(i, s) for i, s in enumerate(splits.get(split, []))
             if s.supervised or not supervised_only]
    test = list(enumerate(splits.get("test", [])))
    ptr = pointer_encode(splits) if encoding == "pointer" else {}

    def example(sp: str, i: int, s: Sample) -> str:
        return f"valid({ptr[(sp, i)][0]})" if encoding == "pointer" else f"valid({s.text})"

    title = (f"KANDY task {tid}" + (f" '{meta['name']}'" if meta.get("name") else "")
             + f", {encoding} encoding, {kb} KB")
    bk = bk_text(encoding, kb)
    parts = [
        f"% {title}: Aleph background knowledge, modes and settings.",
        f"% Examples: {stem}.f (positives), {stem}.n (negatives), split '{split}'.",
        f"% Classic Aleph 5:   ?- [aleph], read_all('{stem}'), induce.",
        f"% SWI-Prolog pack:   ?- use_module(library(aleph)), aleph:read_all(user:'{stem}'), induce(T).",
        "% Written by nesybench (nesybench.kandy.ilp); do not edit by hand.",
        "",
        bias_text(encoding, kb, settings),
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


def export_task(dataset: "str | os.PathLike | IlpTask", task_id: int | None,
                out_dir: str | os.PathLike, *,
                encoding: str = "natural", kb: str = "minimal", split: str = "train",
                settings: dict | None = None, supervised_only: bool = True,
                overwrite: bool = False) -> Path:
    """Write the Aleph files of one task into the new folder ``out_dir``; return the stem path.
    ``dataset``: a dataset folder (with ``task_id``) or an :class:`IlpTask` already read.

    Files (stem ``tNN``): ``tNN.b`` (settings, modes, determinations, background knowledge and,
    for the pointer encoding, the ``defined_as/3``/``sample_is/2`` facts of the exported
    samples), ``tNN.f`` / ``tNN.n`` (positive / negative ``valid/1`` examples of ``split``),
    ``tNN_test.pl`` (the test split as ``pos/1`` / ``neg/1`` facts, plus its pointer facts).
    ``settings`` override :data:`DEFAULT_SETTINGS` and the encoding's ``newvars``
    (:data:`DEFAULT_NEWVARS`; ``None`` values remove one);
    ``supervised_only`` keeps only rows with ``supervised == 1``.
    """
    task = load_task(dataset, task_id)
    check_choice("encoding", encoding, ENCODINGS)
    sett = aleph_settings(settings, encoding)
    with atomic_output_dir(out_dir, overwrite=overwrite, inputs=[task.root]) as tmp:
        _write_task_files(tmp, _stem(task.id), task, encoding, kb, split, sett, supervised_only)
    return Path(out_dir).resolve() / _stem(task.id)



def export_all(dataset: str | os.PathLike, out_dir: str | os.PathLike, *,
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
    d = dataset_dir(dataset)
    for e in encodings:
        check_choice("encoding", e, ENCODINGS)
    for k in kbs:
        check_choice("kb", k, KBS)
    man = read_manifest(d)
    ids = list(tasks) if tasks is not None else task_ids(d, man)
    sett = {e: aleph_settings(settings, e) for e in encodings}
    loaded = [load_task(d, t, manifest=man) for t in ids]
    index = []
    with atomic_output_dir(out_dir, overwrite=overwrite, inputs=[d]) as tmp:
        for e in encodings:
            for k in kbs:
                sub = tmp / f"{e}-{k}"
                sub.mkdir()
                for task in loaded:
                    index.append(_write_task_files(sub, _stem(task.id), task, e, k, split,
                                                   sett[e], supervised_only))
                    index[-1]["stem"] = f"{e}-{k}/{_stem(task.id)}"
        (tmp / "index.json").write_text(dumps({"dataset": os.path.relpath(d.resolve(), Path(out_dir).resolve()),
                                               "settings": sett,
                                               "exports": index}), encoding="utf-8")
    return Path(out_dir).resolve()

