"""FOIL (Quinlan 1990, "Learning logical definitions from relations", Machine Learning 5).

For every target predicate, sequential covering: grow one clause at a time from the
positives not yet covered and all negatives, then remove the positives it covers; stop when
none is left or no acceptable clause is found.

* **Examples** are tuples: the positives are the target's training facts; the negatives come
  from the **closed-world assumption**: every tuple of constants that is not a positive
  (at most ``max_negatives``, default 20,000, drawn uniformly with the seed when there are
  more, because |constants|^arity grows fast).
* **Growing a clause**: greedy hill climbing. The clause's tuple sets (bindings of its
  variables) start as the examples; a candidate literal is any training predicate with
  arguments taken from the clause's variables and new variables (at least one old
  variable; the target itself too, which gives recursive clauses, except the head atom
  itself), scored by **FOIL gain** ``t · (log2(p1/(p1+n1)) − log2(p0/(p0+n0)))``, t the
  positive tuples that have an extension. The best literal (ties: fewer new variables, then
  the order of predicates) is added and the tuples extended, until no negative tuple is left,
  the clause reaches the maximal rule length (the dataset's, or ``--max-body``), or no
  literal has positive gain. Literals that leave a head variable unbound at the last
  position are not considered (clauses are safe datalog).
* **Accepting a clause**: its accuracy on the examples (covered positives / covered
  examples) must reach ``min_accuracy`` (FOIL 6's ``-a``, default 0.8) and it must cover a
  new positive. The clause's confidence is that accuracy.

* **Backing up** (Quinlan 1990, §4.3): when the clause the best literal leads to is not
  acceptable, the next best literals at that position are tried (at most ``backup``
  alternatives per position, default 4; ``backup=0`` is plain greedy search).

Not implemented from Quinlan's system: negated literals, equality and constants in literals,
determinate-literal look-ahead and the encoding-length stopping rule (replaced by
``min_accuracy``). Under missing consequences
(open world) the closed-world negatives include true facts, so a correct clause's accuracy
drops (to 0.7 with 30 % missing) and FOIL rejects or over-specialises it, the weakness the
RuDaS paper reports.
"""
from __future__ import annotations

import itertools
import math
import random

from . import Dataset, Learner, bar, Rule


class Foil(Learner):
    OPTIONS = {"min_accuracy": "minimal clause accuracy (default 0.8, FOIL 6's -a)",
               "max_negatives": "closed-world negatives sampled per target (default 20000)",
               "max_new_vars": "new variables per literal (default: arity - 1)",
               "backup": "alternative literals tried per position when a clause fails (default 4)",
               "max_clauses": "clauses tried per grown clause (default 200)"}

    def learn(self, ds: Dataset) -> list:
        self.min_acc = self.opt("min_accuracy", 0.8, float)
        self.max_neg = self.opt("max_negatives", 20000, int)
        self.max_new = self.opt("max_new_vars", None, int)
        self.backup = self.opt("backup", 4, int)
        self.max_clauses = self.opt("max_clauses", 200, int)
        self.L = self.max_body(ds)
        self.ds = ds
        self.idx: dict = {}
        rules = []
        targets = self.targets(ds)
        for t in bar(targets, "foil", "target", self.o.progress):
            rules += self.learn_target(t)
        return rules

    # -- examples ------------------------------------------------------------------------

    def negatives(self, target: str, pos: set) -> list:
        ds, n = self.ds, self.ds.arity[target]
        consts = ds.constants
        total = len(consts) ** n
        rng = random.Random(f"{self.o.seed}:foil:{target}")
        if total - len(pos) <= self.max_neg:
            return [t for t in itertools.product(consts, repeat=n) if t not in pos]
        out: set = set()
        while len(out) < self.max_neg:
            t = tuple(rng.choice(consts) for _ in range(n))
            if t not in pos:
                out.add(t)
        return sorted(out)

    def learn_target(self, target: str) -> list[Rule]:
        self.target = target
        pos = self.ds.facts[target]
        neg = self.negatives(target, pos)
        remaining = set(pos)
        out = []
        while remaining:
            clause = self.grow(target, sorted(remaining), neg)
            if clause is None:
                break
            body, covered_pos, n_cov_neg, n_cov_pos_all = clause
            new = covered_pos & remaining
            acc = n_cov_pos_all / (n_cov_pos_all + n_cov_neg) if n_cov_pos_all else 0.0
            if not new or acc < self.min_acc:
                break
            remaining -= new
            head = (target, tuple(f"V{i}" for i in range(self.ds.arity[target])))
            out.append(Rule(head, tuple(body), round(acc, 4),
                            f"foil: covers {len(new)} new of {len(pos)} positives, "
                            f"{n_cov_neg} negatives"))
        return out

    # -- clause growing ------------------------------------------------------------------

    def index(self, pred: str, bound: tuple) -> dict:
        """Facts of ``pred`` keyed by the values at the ``bound`` positions."""
        key = (pred, bound)
        if key not in self.idx:
            d: dict = {}
            for f in self.ds.facts[pred]:
                d.setdefault(tuple(f[i] for i in bound), []).append(f)
            self.idx[key] = d
        return self.idx[key]

    def candidates(self, target: str, nvars: int, body: list, head_args: tuple):
        """Literals (pred, args as variable indices; new variables numbered from nvars)."""
        for pred in sorted(self.ds.facts):
            m = self.ds.arity[pred]
            max_new = m - 1 if self.max_new is None else min(self.max_new, m - 1)
            for args in itertools.product(range(nvars + max_new), repeat=m):
                if not any(a < nvars for a in args):
                    continue
                news = [a for a in args if a >= nvars]
                # new variables in canonical order: first use of nvars, then nvars+1, ...
                seen, ok = [], True
                for a in news:
                    if a not in seen:
                        if a != nvars + len(seen):
                            ok = False
                            break
                        seen.append(a)
                if not ok:
                    continue
                if pred == target and args == head_args:
                    continue
                if (pred, args) in body:
                    continue
                yield pred, args

    def extend(self, tuples: list, pred: str, args: tuple, nvars: int) -> tuple[list, int]:
        """(extended tuples, number of input tuples that have an extension). A literal of the
        target predicate never matches the tuple's own example (the head tuple, its first
        values): a recursive clause may not explain an example by itself."""
        own = self.ds.arity[pred] if pred == self.target else 0
        bound = tuple(i for i, a in enumerate(args) if a < nvars)
        idx = self.index(pred, bound)
        out, t = [], 0
        newpos = {}
        for i, a in enumerate(args):
            if a >= nvars:
                newpos.setdefault(a, []).append(i)
        order = sorted(newpos)
        for tup in tuples:
            key = tuple(tup[args[i]] for i in bound)
            matches = idx.get(key)
            if not matches:
                continue
            any_ext = False
            for f in matches:
                if own and f == tup[:own]:
                    continue
                vals = []
                for a in order:
                    ps = newpos[a]
                    v = f[ps[0]]
                    if any(f[p] != v for p in ps[1:]):
                        break
                    vals.append(v)
                else:
                    out.append(tup + tuple(vals))
                    any_ext = True
            t += any_ext
        return out, t

    def grow(self, target: str, pos: list, neg: list):
        """One acceptable clause from the positives ``pos`` (those left to cover) and the
        negatives ``neg``, or None: (body literals, covered positives of ``pos``, covered
        negatives, covered positives of the whole target)."""
        n = self.ds.arity[target]
        self.budget = self.max_clauses
        found = self.search(target, n, [], [tuple(t) for t in pos], [tuple(t) for t in neg], n)
        if found is None:
            return None
        body, P, N, n_all = found
        lits = [(pred, tuple(f"V{a}" for a in args)) for pred, args in body]
        return lits, {t[:n] for t in P}, len({t[:n] for t in N}), n_all

    def accept(self, target: str, n: int, body: list, P: list, N: list):
        """(covered positives of the whole target) when ``body`` makes an acceptable clause:
        safe, covers a positive left to cover, accuracy >= min_accuracy; else None."""
        if not body or not P or len({a for lit in body for a in lit[1] if a < n}) < n:
            return None
        allp, nv = [tuple(t) for t in self.ds.facts[target]], n
        for pred, args in body:
            allp, _ = self.extend(allp, pred, args, nv)
            nv = max([nv - 1, *args]) + 1
        n_pos = len({t[:n] for t in allp})
        n_neg = len({t[:n] for t in N})
        return n_pos if n_pos and n_pos / (n_pos + n_neg) >= self.min_acc else None

    @staticmethod
    def gain(t: int, p0: int, n0: int, p1: int, n1: int) -> float:
        """FOIL gain of a literal: t · (log2(p1/(p1+n1)) − log2(p0/(p0+n0)))."""
        return t * (math.log2(p1 / (p1 + n1)) - math.log2(p0 / (p0 + n0)))

    def search(self, target: str, n: int, body: list, P: list, N: list, nvars: int):
        """Greedy growth by FOIL gain with backing up: the best literal first; when the
        clause it leads to is not acceptable, the next best (at most ``backup`` alternatives
        per position, ``max_clauses`` clauses in all), as FOIL's checkpoints."""
        self.budget -= 1
        if not N or len(body) == self.L:
            n_all = self.accept(target, n, body, P, N)
            return None if n_all is None else (body, P, N, n_all)
        p0, n0 = len(P), len(N)
        scored = []
        for pred, args in self.candidates(target, nvars, body, tuple(range(n))):
            # keep the clause safe: the literals left must be able to bind every head variable
            bound_head = {a for lit in body for a in lit[1] if a < n} | {a for a in args if a < n}
            room = (self.L - len(body) - 1) * max(self.ds.arity.values())
            if n - len(bound_head) > room:
                continue
            P1, t = self.extend(P, pred, args, nvars)
            if t == 0:
                continue
            N1, _ = self.extend(N, pred, args, nvars)
            p1, n1 = len(P1), len(N1)
            gain = self.gain(t, p0, n0, p1, n1)
            if gain <= 0:
                continue
            new = len({a for a in args if a >= nvars})
            scored.append((-gain, new, len(scored), pred, args, P1, N1))
        scored.sort(key=lambda x: x[:3])
        for _, _, _, pred, args, P1, N1 in scored[: self.backup + 1]:
            if self.budget <= 0:
                break
            found = self.search(target, n, body + [(pred, args)], P1, N1,
                                max([nvars - 1, *args]) + 1)
            if found is not None:
                return found
        n_all = self.accept(target, n, body, P, N)
        return None if n_all is None else (body, P, N, n_all)
