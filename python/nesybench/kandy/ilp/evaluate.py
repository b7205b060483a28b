"""Scoring a learned theory on a KANDY task (paper Table 2, supplementary §3): coverage of
each split in one sandboxed Prolog call, theory sizes against the ground-truth rule, and the
generalisation check on freshly drawn samples.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...errors import NesyError, PrologError
from ...logic import prolog
from ..symbols import Symbol
from .bias import ENCODINGS, KBS, SPLITS, check_choice
from .pointer import pointer_encode, pointer_facts
from .task import IlpTask, load_task


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


def _fresh_samples(task: IlpTask, n: int) -> list[tuple[Symbol, int]]:
    """``n`` samples of the task drawn anew from the dataset's ``curriculum.yaml`` (seed
    derived from the task's seed and "ilp-fresh"), labelled by the ground-truth rule; [] when
    the dataset has no curriculum copy or no rule."""
    import dataclasses

    from ...io import derive_seed
    from ..language import load_curriculum
    from ..rules import TaskRule
    from ..sampler import draw_symbols

    from ...folder import DataFolder  # noqa: PLC0415

    cur_file = task.root / "curriculum.yaml"
    # the data set's own copy: a regular file inside the folder (no link out), then parsed
    if n <= 0 or not DataFolder(task.root).exists("curriculum.yaml"):
        return []
    rule = task.rule()
    if rule is None:
        return []
    cur = load_curriculum(cur_file)
    spec = next((t for t in cur.tasks if t.index == task.id), None)
    if spec is None:
        return []
    spec = dataclasses.replace(spec, samples=n, patience=max(spec.patience, 10 * n))
    seed = derive_seed(task.seed, "ilp-fresh")
    checker = TaskRule(rule[1], source=rule[0], task=str(task.id), field="rule_file")
    try:
        accepted, _ = draw_symbols(spec, cur.domain, seed, checker)
    finally:
        checker.close()
    return [(sym, label) for sym, label, _ in accepted]


def evaluate_theory(dataset: "str | os.PathLike | IlpTask", task_id: int | None,
                    theory_file: str | os.PathLike, encoding: str = "natural", *,
                    split: str = "test", kb: str = "large",
                    fresh: int = DEFAULT_FRESH) -> IlpScore:
    """Score the learned theory in ``theory_file`` on ``split`` of task ``task_id`` of
    ``dataset`` (a dataset folder, or an :class:`IlpTask` already read).

    The theory (untrusted Prolog text defining ``valid/1``) is loaded with
    :func:`nesybench.logic.prolog.load_rules` (sandboxed, line-accurate) into a fresh module
    that sees the ``kb`` background knowledge of ``encoding`` (``large`` ⊇ ``mid`` ⊇
    ``minimal``, so the default scores a theory learned with any KB); every sample of the split
    is checked in one Prolog call. The theory is also checked against the ground truth on all
    samples of the task and on ``fresh`` newly drawn samples (0 skips that draw); see
    :class:`IlpScore`. Raises :class:`NesyError` (with file and line) on a syntax error, a
    directive or an unsafe call, and for a missing dataset / unknown task.
    """
    check_choice("encoding", encoding, ENCODINGS)
    check_choice("kb", kb, KBS)
    check_choice("split", split, SPLITS)
    task = load_task(dataset, task_id)
    d, tid, splits = task.root, task.id, task.splits
    samples = splits.get(split, [])
    if not samples:
        raise NesyError(f"task {tid} has no samples in split '{split}'", file=str(d),
                        task=str(tid), field="split")
    theory_path = Path(theory_file)
    if not theory_path.is_file():
        raise NesyError("theory file not found", file=str(theory_path), task=str(tid))
    from ...folder import read_input_text  # noqa: PLC0415
    text = read_input_text(theory_path)         # a regular file, bounded
    fresh_set = _fresh_samples(task, fresh)

    theory = _LoadedTheory(text, str(theory_path), tid, encoding, kb)
    try:
        ptr = pointer_encode(splits) if encoding == "pointer" else {}

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
    rule = task.rule()
    if rule is not None:
        c_gt, l_gt, _ = theory_size(rule[1], source=rule[0])
        score.clauses_gt, score.literals_gt = c_gt, l_gt
        score.c_ratio = c_gt / c_lt if c_lt else None
        score.l_ratio = l_gt / l_lt if l_lt else None
    return score
