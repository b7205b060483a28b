"""Aleph (Srinivasan's inverse-entailment ILP system) on RuDaS training facts.

Per target predicate, an Aleph problem is written from the training facts: ``T.b`` (settings,
mode declarations ``modeh(1, t(+c,...))`` and ``modeb(*, r(+c,-c))`` / ``r(-c,+c)`` for every
other predicate, determinations, the facts of every other predicate as background), ``T.f``
(the target's facts) and ``T.n`` (negatives under the closed-world reading: tuples of
constants that are not facts, as many as the positives, drawn with the seed). Then the
user's classic Aleph 5 file runs ``read_all/1``, ``induce/0`` and ``write_rules/1`` in its own
``swipl`` process (the runner of ``nesybench kandy ilp-run``: killed with its process group
after ``--time-limit``, or when this process dies). The rules Aleph writes are read back
(its ground clauses, examples it could not generalise, are kept as facts); Aleph gives no
confidence. An integrity constraint in ``T.b`` keeps Aleph from accepting a clause with a head
variable that is not in the body (clauses must be safe datalog); any such clause it still
writes is left out.

Settings (``--option KEY=VALUE`` replaces them): ``clauselength`` the maximal rule length + 1,
``i`` the maximal rule length, ``minpos`` 2, ``minacc`` 0.5, ``noise`` the number of negatives,
``nodes`` 5000. Aleph is not shipped: ``--aleph PATH`` or ``$NESYBENCH_ALEPH`` names it.
"""
from __future__ import annotations

import os
import random
import subprocess
import tempfile
from pathlib import Path

from ...errors import NesyError
from . import Dataset, Learner, bar, parse_rules


def find_aleph(path=None) -> Path:
    """The classic Aleph 5 file: ``path``, else ``$NESYBENCH_ALEPH``; one error when absent."""
    from ...kandy.learn.aleph import check_aleph  # noqa: PLC0415
    return check_aleph(path or os.environ.get("NESYBENCH_ALEPH"))


_DRIVER = """\
:- set_prolog_flag(verbose, silent).
:- style_check(-singleton).
:- style_check(-discontiguous).
main :-
    catch(( consult({aleph}), read_all({stem}), induce,
            ( write_rules({theory}) -> true ; true ) ),
          E, (print_message(error, E), halt(3))),
    halt(0).
"""


def _q(p) -> str:
    return "'" + str(p).replace("\\", "\\\\").replace("'", "\\'") + "'"


class Aleph(Learner):
    OPTIONS = {"aleph": "path of Aleph 5's aleph.pl (default $NESYBENCH_ALEPH)",
               "clauselength": "Aleph setting", "i": "Aleph setting", "minpos": "Aleph setting",
               "minacc": "Aleph setting", "noise": "Aleph setting", "nodes": "Aleph setting"}

    def learn(self, ds: Dataset) -> list:
        from ...kandy.learn.aleph import find_swipl  # noqa: PLC0415
        aleph = find_aleph(self.o.options.get("aleph"))
        swipl = find_swipl()
        L = self.max_body(ds)
        out = []
        with tempfile.TemporaryDirectory(prefix="nesybench-rudas-aleph-") as work:
            for t in bar(self.targets(ds), "aleph", "target", self.o.progress):
                stem = Path(work) / t
                self.write_problem(ds, t, stem, L)
                theory = Path(work) / f"{t}_theory.pl"
                self.run(swipl, aleph, stem, theory)
                text = theory.read_text(encoding="utf-8") if theory.exists() else ""
                out += [r for r in parse_rules(text, source=f"Aleph theory for {t}",
                                               drop_unsafe=True) if r.head[0] == t]
        return out

    def settings(self, L: int, n_neg: int) -> dict:
        s = {"clauselength": L + 1, "i": L, "minpos": 2, "minacc": 0.5, "noise": n_neg,
             "nodes": 5000}
        for k in list(s):
            if k in self.o.options:
                s[k] = self.opt(k, s[k], type(s[k]))
        return s

    def write_problem(self, ds: Dataset, target: str, stem: Path, L: int) -> None:
        n = ds.arity[target]
        pos = sorted(ds.facts[target])
        rng = random.Random(f"{self.o.seed}:aleph:{target}")
        neg: set = set()
        total = len(ds.constants) ** n
        want = min(len(pos), total - len(pos))
        while len(neg) < want:
            t = tuple(rng.choice(ds.constants) for _ in range(n))
            if t not in ds.facts[target]:
                neg.add(t)

        def atom(p, args):
            return f"{p}({','.join(args)})"

        lines = [f":- set({k}, {v})." for k, v in self.settings(L, len(neg)).items()]
        # an integrity constraint: no hypothesis with a head variable missing from the body
        lines.append("false :- hypothesis(H, B, _), term_variables(H, HV), term_variables(B, BV), "
                     "member(V, HV), \\+ (member(W, BV), W == V).")
        lines.append(f":- modeh(1, {atom(target, ['+c'] * n)}).")
        for p in ds.predicates:
            m = ds.arity[p]
            if p == target:
                continue
            modes = {tuple(["+c"] + ["-c"] * (m - 1))}
            if m >= 2:
                modes.add(tuple(["-c"] * (m - 1) + ["+c"]))
            for md in sorted(modes):
                lines.append(f":- modeb(*, {atom(p, md)}).")
            lines.append(f":- determination({target}/{n}, {p}/{m}).")
        for p in ds.predicates:
            if p != target:
                lines += [atom(p, f) + "." for f in sorted(ds.facts[p])]
        stem.with_suffix(".b").write_text("\n".join(lines) + "\n", encoding="utf-8")
        stem.with_suffix(".f").write_text("".join(atom(target, f) + ".\n" for f in pos),
                                          encoding="utf-8")
        stem.with_suffix(".n").write_text("".join(atom(target, f) + ".\n" for f in sorted(neg)),
                                          encoding="utf-8")

    def run(self, swipl, aleph, stem: Path, theory: Path) -> None:
        from ...kandy.learn.aleph import _die_with_parent, _kill_group  # noqa: PLC0415
        driver = stem.parent / f"{stem.name}_driver.pl"
        driver.write_text(_DRIVER.format(aleph=_q(aleph), stem=_q(stem), theory=_q(theory)),
                          encoding="utf-8")
        log = stem.parent / f"{stem.name}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen([str(swipl), "-q", "-g", "main", "-t", "halt(1)", str(driver)],
                                    stdout=fh, stderr=subprocess.STDOUT, cwd=str(stem.parent),
                                    start_new_session=True,
                                    preexec_fn=_die_with_parent if os.name == "posix" else None)
            try:
                rc = proc.wait(timeout=self.o.time_limit)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise NesyError(f"Aleph did not finish within --time-limit {self.o.time_limit} s",
                                field="system") from None
            except BaseException:
                _kill_group(proc)
                raise
        if rc != 0:
            tail = log.read_text(encoding="utf-8", errors="replace")[-800:]
            raise NesyError(f"Aleph failed (exit status {rc}): {tail.strip()}", field="system")
