"""Approximate inference by the K most probable proofs (Scallop's top-k proofs semiring).

Exact inference compiles the ground program into an SDD; Monte Carlo sampling
(:class:`~nesybench.nesy.inference.approx.SampledProgram`) estimates it from sampled worlds.
:class:`TopKProgram` is the third way: it keeps, for every node of the ground DAG, only the
``K`` most probable *proofs* and computes the probability of the labels from those proofs
exactly. This is the top-k proofs semiring of Scallop (Huang et al., *Scallop: From
Probabilistic Deductive Databases to Scalable Differentiable Reasoning*, NeurIPS 2021).

Pick it with ``--inference topk:K`` on ``nesy train`` / ``nesy infer``, or from Python with
``TopKProgram.from_program(text, queries, k=K)`` /
:func:`~nesybench.nesy.inference.approx.build_program` (``inference="topk:K"``). It implements the
:class:`~nesybench.nesy.inference.semantics.LabelSemantics` interface.

**Proofs.** A proof is a consistent partial assignment of the ground program's categorical
choices (neural predicates, probabilistic facts, annotated disjunctions): for each choice it
mentions, the set of values it allows (a bit mask; a positive literal ``c = v`` allows one
value, its negation every other value). Its probability is ``Π_c Σ_{v allowed} p_c(v)``.
Per example, on the current (detached) probabilities, every node gets at most ``K`` proofs:

* a literal: the one proof ``{c: {v}}``;
* ``or``: the union of its kids' proofs (duplicates merged), the ``K`` most probable kept;
* ``and``: kid by kid, every pair of proofs conjoined (masks intersected; a pair that gives a
  choice no value is inconsistent and dropped), the ``K`` most probable kept after each kid;
* ``not j`` (De Morgan over the proofs of ``j``): ``¬(p_1 ∨ ... ∨ p_n) = ∧_i ∨_{c ∈ p_i}
  {c: not allowed by p_i}``, built with the same ``and``/``or`` (and the same truncation).

**Probability.** A label value's probability is the probability of the disjunction of its
kept proofs, computed exactly: the DNF is split into *disjoint* terms by Shannon expansion
over the choices it mentions (each branch of a choice is a set of its values on which every
proof agrees), so ``P = Σ_terms Π_factors p_c(region)``, a differentiable torch expression
of the concept probabilities (and of the learnable ``t(_)`` parameters). Which proofs are
kept is decided without gradient; the gradient flows through the probability of the kept
proofs. ``forward`` returns ``log P(observed labels)`` (the labels' value nodes conjoined);
with evidence, ``P_K(q ∧ e) / P_K(e)`` (each term a top-k probability).

**Error.** Without negation every kept proof implies its node, so ``P_K(y) ≤ P(y)``: top-k
is a *lower bound*, and it is exact as soon as no node had more than ``K`` candidate proofs
(:attr:`TopKProgram.last_truncated` says, per example, whether any proof was cut in the last
call). The bound is tight where a few proofs carry most of the mass (trained networks, peaked
distributions) and loose where the mass is spread over many proofs (an untrained network on a
sum with many digit combinations). It need not grow monotonically with ``K`` when ``and``
nodes truncate (a larger ``K`` may keep other proofs). Under negation of a truncated node the
complement is taken of a lower bound, so the result is Scallop's approximation, neither a lower
nor an upper bound; it is still exact where nothing was truncated. A label whose kept proofs
are all inconsistent gets probability 0; ``forward`` clamps its log at the smallest normal
number (its gradient is then zero).

**Cost.** Grounding only (no compilation), then per example a pass over the nodes the asked
labels reach, ``O(K^2)`` conjunctions per binary ``and``, and the disjoint expansion of at most
``K`` proofs per asked value (exponential in ``K`` at worst; small for ``K`` up to a few dozen).
The pass runs in Python per example; the final probabilities are one batched torch
evaluation.
"""
from __future__ import annotations

import heapq
import math
import time
from collections import Counter
from operator import itemgetter

import torch

from ...errors import NesyError
from .learnable import LearnableProbabilities
from .semantics import (LabelSemantics, choice_distributions, index_labels,
                        take_fixed_choices, take_ground_interface)
from .spec import DEFAULT_K  # noqa: F401 - proofs kept per node when topk names no number

#: the largest proof set worked out once for all examples (see ``TopKProgram._static``)
STATIC_CAP = 64

_TRUE = (((), 0.0),)      # one empty proof (log-probability 0): the node is true
_FALSE = ()               # no proof: the node is false


def bound_kind(nodes, has_evidence: bool, labels=()) -> str:
    """What a top-k probability of this ground program is to the exact one: ``"lower
    bound"`` (no negation, no evidence: every kept proof implies its node), else ``"no
    bound: negation"`` or ``"no bound: evidence"`` (the complement of a lower bound, or a
    ratio of two, is neither; the module docstring gives an example). Exact wherever no
    proof was cut (:attr:`TopKProgram.last_truncated`)."""
    negated = any(x < 0 for n in nodes[1:] if n is not None and n[0] != "lit" for x in n[1])
    # a label value proved by a negated node (nomaj :- \+ maj.); the value 0 of a Boolean
    # label is the complement of its value 1 by construction, not a negation of the program
    negated = negated or any(
        n is not None and n < 0 and not (v == 0 and lab.values in ([0, 1], [0]))
        for lab in labels for v, n in zip(lab.values, lab.nodes))
    if negated:
        return "no bound: negation"
    return "no bound: evidence" if has_evidence else "lower bound"


class TopKProgram(LearnableProbabilities, LabelSemantics):
    """Top-k proofs label semantics of a ground program (module docstring).

    Same attributes as :class:`~nesybench.nesy.inference.circuit.CompiledProgram` (``concept_domains``,
    ``concept_names``, ``concept_values``, ``label_domains``, ``label_queries``, ``evidence``,
    ``learnable_facts``, ``fact_logits``, ``learnable_ads``, ``ad_logits``, ``stats``) plus
    ``k`` (proofs kept per node) and ``last_truncated`` ((B,) bool of the last call: whether
    some node of an example had more than ``k`` candidate proofs, i.e. whether the result may
    differ from exact inference)."""

    def __init__(self, gp, *, k: int = DEFAULT_K, stats: dict | None = None):
        super().__init__()
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise NesyError(f"top-k inference needs an integer k >= 1, not {k!r}", field="k")
        self.k = int(k)
        choices = gp.choices
        take_ground_interface(self, gp)
        self.stats = dict(stats or {})
        self.stats.update({"inference": f"topk:{self.k}", "ground_nodes": len(gp.nodes) - 1})
        take_fixed_choices(self, gp)
        # the DAG, as plain Python lists for the per-example pass
        self.domain_sizes = [len(c.values) for c in choices]
        self.choice_keys = [c.key for c in choices]
        self.choice_values = [list(c.values) for c in choices]
        self.width = max(self.domain_sizes, default=1)
        self.full = [(1 << n) - 1 for n in self.domain_sizes]
        self.nodes = [None] + [n if n[0] != "lit" else ("lit", n[1], 1 << n[2])
                               for n in gp.nodes[1:]]
        self.label_nodes = [list(lab.nodes) for lab in gp.labels]
        self.evidence_nodes = [nid if obs else -nid for _, nid, obs in gp.evidence]
        self.last_truncated = torch.zeros(0, dtype=torch.bool)
        self.stats["bound"] = bound_kind(self.nodes, bool(gp.evidence), gp.labels)
        self._static()

    def _static(self) -> None:
        """The nodes whose complete proof set has at most ``k`` proofs (and was built without
        a set past :data:`STATIC_CAP`): their proofs do not depend on the example, only their
        scores do, so they are worked out once here and scored per batch in one vectorised
        step; the per-example pass runs only above them. ``static``: kid id (negative for
        a negation) -> proof ids into ``static_proofs``."""
        nodes, full, cap = self.nodes, self.full, STATIC_CAP
        sets: dict = {}

        def kid(d):
            return [] if d is None else [()] if d == 0 else sets[d]

        def conj(a, b):
            if a is None or b is None:
                return None
            out: dict = {}
            for p in a:
                for q in b:
                    r = _Proofs.merge(p, q)
                    if r is not None:
                        out[r] = None
                        if len(out) > cap:
                            return None
            return list(out)

        def compute(x):
            if x < 0:
                s = sets[-x]
                if s is None:
                    return None
                if any(not p for p in s):
                    return []
                out = [()]
                for p in s:
                    out = conj(out, [((c, full[c] & ~m),) for c, m in p])
                    if out is None or not out:
                        return out
                    out = list(minimal(dict.fromkeys(out)))
                return out
            node = nodes[x]
            if node[0] == "lit":
                return [((node[1], node[2]),)]
            kids = [kid(d) for d in node[1]]
            if any(k is None for k in kids):
                return None
            if node[0] == "or":
                out = list(dict.fromkeys(p for k in kids for p in k))
                return out if len(out) <= cap else None
            out = [()]
            for k in sorted(kids, key=len):
                out = conj(out, k)
                if out is None or not out:
                    return out
            return out

        for root in range(1, len(nodes)):
            stack = [root]
            while stack:
                x = stack[-1]
                if x in sets:
                    stack.pop()
                    continue
                deps = [-x] if x < 0 else ([] if nodes[x][0] == "lit" else
                                           [d for d in nodes[x][1] if d])
                missing = [d for d in deps if d not in sets]
                if missing:
                    stack.extend(missing)
                    continue
                stack.pop()
                sets[x] = compute(x)
        ids: dict = {}
        self.static = {x: [ids.setdefault(p, len(ids)) for p in s]
                       for x, s in sets.items() if s is not None and len(s) <= self.k}
        self.static_proofs = list(ids)
        regions: dict = {}
        rows = [[regions.setdefault(r, len(regions)) for r in p] for p in self.static_proofs]
        self._region_choice = [c for c, _ in regions]
        self._region_bits = [[(m >> v) & 1 for v in range(self.width)] for _, m in regions]
        L = max([len(r) for r in rows], default=0)
        self._proof_regions = [r + [len(regions)] * (L - len(r)) for r in rows]
        self.stats["static_nodes"] = sum(1 for x in self.static if x > 0)

    def _static_scores(self, probs):
        """Log-probability of every static proof per example, (B, n_static_proofs) numpy."""
        import numpy as np
        B = probs.shape[0]
        if not self.static_proofs:
            return np.zeros((B, 0))
        bits = np.asarray(self._region_bits, dtype=np.float64).reshape(-1, self.width)
        reg = (probs[:, self._region_choice, :] * bits).sum(-1)            # (B, R)
        with np.errstate(divide="ignore"):
            logs = np.concatenate([np.log(reg), np.zeros((B, 1))], 1)
        idx = np.asarray(self._proof_regions, dtype=np.int64).reshape(len(self.static_proofs),
                                                                        -1)
        return logs[:, idx].sum(-1)

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_program(cls, text_or_path, queries, *, networks=None, concept_order=None,
                     concept_decls=None, k: int = DEFAULT_K, budget=None,
                     **ignored) -> "TopKProgram":
        """Ground ``text_or_path`` for ``queries`` (as
        :meth:`CompiledProgram.from_program <nesybench.nesy.inference.circuit.CompiledProgram.from_program>`
        does, under the grounding limits of ``budget``) and keep the ``k`` best proofs
        instead of compiling. Compilation options (``vtree``, ``semiring``, ``use_cache``,
        ``progress``) are accepted and ignored."""
        from ..program.budget import Budget
        from ..program.program import ground

        t0 = time.perf_counter()
        clock = (budget or Budget()).start()
        gp = ground(text_or_path, queries, networks=networks, concept_order=concept_order,
                    concept_decls=concept_decls, clock=clock)
        return cls(gp, k=k, stats={"ground_seconds": round(time.perf_counter() - t0, 4),
                                   "grounder": gp.grounder})

    @classmethod
    def from_task(cls, task, **kw) -> "TopKProgram":
        """The program of a shortcut task (see :mod:`nesybench.nesy.inference.from_task`), top-k."""
        from .from_task import compile_task
        return compile_task(task, cls=cls, **kw)

    # -- probabilities -----------------------------------------------------------------------
    def _table(self, concept_probs, log_input: bool) -> torch.Tensor:
        """Every choice's distribution, ``(B, n_choices, width)`` (zero-padded)."""
        dists = choice_distributions(self, concept_probs, log_input)
        B = max([p.shape[0] for p in dists[:self.n_neural]], default=1)
        if not dists:
            return torch.zeros(B, 0, self.width, dtype=torch.float64,
                               device=self.fixed_probs.device)
        dtype = dists[0].dtype
        rows = [torch.nn.functional.pad(p.to(dtype), (0, self.width - p.shape[1]))
                .expand(B, -1) for p in dists]
        return torch.stack(rows, 1)

    def _passes(self, table):
        """One :class:`_Proofs` pass per example on the detached probabilities."""
        probs = table.detach().double().cpu().numpy()
        scores = self._static_scores(probs)
        return [_Proofs(self, r, sc) for r, sc in zip(probs.tolist(), scores.tolist())]

    def _evaluate(self, table, dnfs) -> torch.Tensor:
        """The exact probability of each ``(example, proofs)`` DNF, shape (len(dnfs),),
        differentiable in ``table``."""
        factors: dict = {}
        terms, owner = [], []
        for d, (b, proofs) in enumerate(dnfs):
            for term in disjoint_terms(proofs, self.domain_sizes):
                terms.append([factors.setdefault((b, c, m), len(factors)) for c, m in term])
                owner.append(d)
        device, dtype = table.device, table.dtype
        out = torch.zeros(len(dnfs), dtype=dtype, device=device)
        if not terms:
            return out
        F = len(factors)
        fb = torch.tensor([key[0] for key in factors], dtype=torch.long, device=device)
        fc = torch.tensor([key[1] for key in factors], dtype=torch.long, device=device)
        bits = torch.tensor([[(key[2] >> v) & 1 for v in range(self.width)] for key in factors],
                            dtype=dtype, device=device).reshape(F, self.width)
        region = (table[fb, fc] * bits).sum(-1) if F else table.new_zeros(0)
        vals = torch.cat([region, torch.ones(1, dtype=dtype, device=device)])
        L = max(1, max(len(t) for t in terms))
        idx = torch.tensor([t + [F] * (L - len(t)) for t in terms], dtype=torch.long,
                           device=device)
        prods = vals[idx].prod(1)
        return out.index_add(0, torch.tensor(owner, dtype=torch.long, device=device), prods)

    def _check_labels(self, labels, B, device):
        labels = torch.as_tensor(labels, device=device)
        if labels.dim() == 1:
            labels = labels[:, None]
        if labels.shape != (B, len(self.label_domains)):
            raise NesyError(f"labels must have shape (B, {len(self.label_domains)}); got "
                            f"{tuple(labels.shape)}")
        for j, dom in enumerate(self.label_domains):
            lj = labels[:, j]
            if (lj < 0).any() or (lj >= len(dom)).any():
                raise NesyError(f"label {self.label_queries[j]!r}: index out of range "
                                f"0..{len(dom) - 1}")
        return labels.long().cpu().tolist()

    def _impossible_evidence(self, pe) -> None:
        bad = torch.nonzero(pe.detach() <= 0).flatten().tolist()
        if bad:
            which = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
            raise NesyError(f"evidence {', '.join(self.evidence)} has no consistent proof among "
                            f"the top {self.k} for {len(bad)} example(s) (rows {which}); raise K "
                            "or use exact inference", field="evidence")

    def forward(self, concept_probs, labels, *, log_input: bool = False):
        """``log P_K(labels | concepts)`` per example, shape (B,): the probability of the kept
        proofs of the observed labels (module docstring), clamped below at the smallest
        normal number."""
        table = self._table(concept_probs, log_input)
        B = table.shape[0]
        rows = self._check_labels(labels, B, table.device)
        passes = self._passes(table)
        dnfs = []
        for b, (pp, lab) in enumerate(zip(passes, rows)):
            goal = [nodes[v] for nodes, v in zip(self.label_nodes, lab)]
            dnfs.append((b, pp.conjunction(goal + self.evidence_nodes)))
        if self.evidence_nodes:
            dnfs += [(b, pp.conjunction(self.evidence_nodes)) for b, pp in enumerate(passes)]
        self.last_truncated = torch.tensor([pp.truncated for pp in passes], dtype=torch.bool)
        p = self._evaluate(table, dnfs)
        tiny = torch.finfo(p.dtype).tiny
        if self.evidence_nodes:
            pq, pe = p[:B], p[B:]
            self._impossible_evidence(pe)
            return torch.log(pq.clamp_min(tiny)) - torch.log(pe)
        return torch.log(p.clamp_min(tiny))

    def label_marginals(self, concept_probs, *, log_input: bool = False):
        """``P_K(label_j = v)``: list of (B, m_j) tensors, each value's kept proofs (conjoined
        with the evidence, then divided by the evidence's top-k probability)."""
        table = self._table(concept_probs, log_input)
        B = table.shape[0]
        passes = self._passes(table)
        dnfs = []
        for b, pp in enumerate(passes):
            for nodes in self.label_nodes:
                dnfs.extend((b, pp.conjunction([nd] + self.evidence_nodes)) for nd in nodes)
        if self.evidence_nodes:
            dnfs += [(b, pp.conjunction(self.evidence_nodes)) for b, pp in enumerate(passes)]
        self.last_truncated = torch.tensor([pp.truncated for pp in passes], dtype=torch.bool)
        p = self._evaluate(table, dnfs)
        n = sum(len(nodes) for nodes in self.label_nodes)
        flat = p[:B * n].reshape(B, n)
        if self.evidence_nodes:
            pe = p[B * n:]
            self._impossible_evidence(pe)
            flat = flat / pe[:, None]
        return list(torch.split(flat, [len(nodes) for nodes in self.label_nodes], dim=1))

    def proofs(self, concept_probs, labels, *, log_input: bool = False) -> list[list]:
        """The kept proofs of the observed labels, per example: a list of ``(probability,
        {choice key: [allowed values]})``, most probable first (for inspection)."""
        table = self._table(concept_probs, log_input)
        rows = self._check_labels(labels, table.shape[0], table.device)
        out = []
        for pp, lab in zip(self._passes(table), rows):
            goal = [nodes[v] for nodes, v in zip(self.label_nodes, lab)]
            out.append([(math.exp(lp), {self.choice_keys[c]: [self.choice_values[c][v]
                                                               for v in range(self.width)
                                                               if (m >> v) & 1]
                                        for c, m in proof})
                        for proof, lp in pp.conjunction_scored(goal + self.evidence_nodes)])
        return out

    def label_index(self, values) -> torch.Tensor:
        """Label values -> index tensor for forward (as ``CompiledProgram.label_index``)."""
        return index_labels(values, self.label_domains)

    def extra_repr(self) -> str:
        return (f"concepts={self.concept_names}, labels={self.label_queries}, k={self.k}, "
                f"ground_nodes={self.stats.get('ground_nodes')}")


class _Proofs:
    """The top-k pass of one example: proofs of the nodes it was asked about (memoised).

    A proof is a tuple of ``(choice, mask)`` pairs sorted by choice (a mask never empty and
    never the choice's full domain); a proof set is a tuple of ``(proof, log-probability)``,
    most probable first, at most ``k`` long."""

    def __init__(self, prog: TopKProgram, probs: list[list[float]], scores: list[float]):
        self.prog = prog
        self.k = prog.k
        self.probs = probs
        self.scores = scores          # log-probability of each static proof
        self.memo: dict = {}
        self.logs: dict = {}
        self.truncated = False

    # -- scores ------------------------------------------------------------------------------
    def region(self, c: int, m: int) -> float:
        """``log Σ_{v in m} p_c(v)``."""
        key = (c, m)
        lr = self.logs.get(key)
        if lr is None:
            row = self.probs[c]
            s = sum(row[v] for v in range(len(row)) if (m >> v) & 1)
            lr = math.log(s) if s > 0 else -math.inf
            self.logs[key] = lr
        return lr

    def score(self, proof) -> float:
        return sum(self.region(c, m) for c, m in proof)

    def best(self, scored: dict) -> tuple:
        """The ``k`` most probable of ``{proof: log-probability}`` (ties: first seen)."""
        if len(scored) > self.k:
            self.truncated = True
            return tuple(heapq.nlargest(self.k, scored.items(), key=itemgetter(1)))
        return tuple(sorted(scored.items(), key=itemgetter(1), reverse=True))

    # -- semiring operations -------------------------------------------------------------------
    @staticmethod
    def merge(p, q):
        """The conjunction of two proofs, or ``None`` when inconsistent."""
        if not p:
            return q
        if not q:
            return p
        out, i, j = [], 0, 0
        while i < len(p) and j < len(q):
            (c1, m1), (c2, m2) = p[i], q[j]
            if c1 == c2:
                m = m1 & m2
                if not m:
                    return None
                out.append((c1, m))
                i += 1
                j += 1
            elif c1 < c2:
                out.append(p[i])
                i += 1
            else:
                out.append(q[j])
                j += 1
        out.extend(p[i:])
        out.extend(q[j:])
        return tuple(out)

    def conj(self, a, b, *, prune: bool = False):
        """Top-k of the pairwise conjunctions of two proof sets (``prune``: drop the proofs
        another candidate subsumes first; negation makes many)."""
        if not a or not b:
            return _FALSE
        if len(a) == 1 and not a[0][0]:
            return b
        if len(b) == 1 and not b[0][0]:
            return a
        scored: dict = {}
        for p, lp in a:
            for q, lq in b:
                r = self.merge(p, q)
                if r is not None and r not in scored:
                    scored[r] = lp + lq if not _shares(p, q) else self.score(r)
        return self.best(minimal(scored) if prune else scored)

    def disj(self, sets):
        scored: dict = {}
        for s in sets:
            for p, lp in s:
                if p not in scored:
                    scored[p] = lp
        return self.best(scored)

    def negate(self, s):
        """De Morgan over the proofs of ``s``: the conjunction, over its proofs, of the
        disjunction of each literal's complement."""
        full = self.prog.full
        out = _TRUE
        for p, _ in s:
            if not p:
                return _FALSE
            alts = {}
            for c, m in p:
                r = ((c, full[c] & ~m),)
                alts[r] = self.region(c, full[c] & ~m)
            out = self.conj(out, self.best(alts), prune=True)
            if not out:
                return _FALSE
        return out

    # -- the DAG -------------------------------------------------------------------------------
    def get(self, k):
        """The proof set of kid ``k`` (``None`` false, ``0`` true, ``-j`` not node ``j``)."""
        if k is None:
            return _FALSE
        if k == 0:
            return _TRUE
        got = self.memo.get(k)
        if got is not None:
            return got
        nodes, static = self.prog.nodes, self.prog.static
        stack = [k]
        while stack:
            x = stack[-1]
            if x in self.memo:
                stack.pop()
                continue
            ids = static.get(x)
            if ids is not None:
                proofs, scores = self.prog.static_proofs, self.scores
                self.memo[x] = tuple((proofs[i], scores[i]) for i in ids)
                stack.pop()
                continue
            deps = [-x] if x < 0 else ([] if nodes[x][0] == "lit" else
                                       [d for d in nodes[x][1] if d])
            missing = [d for d in deps if d not in self.memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            self.memo[x] = self._compute(x)
        return self.memo[k]

    def _compute(self, x):
        if x < 0:
            return self.negate(self.memo[-x])
        node = self.prog.nodes[x]
        if node[0] == "lit":
            _, c, m = node
            return (((c, m),), self.region(c, m)),
        kids = [_FALSE if d is None else _TRUE if d == 0 else self.memo[d] for d in node[1]]
        if node[0] == "or":
            return self.disj(kids)
        out = _TRUE
        for s in sorted(kids, key=len):           # the most constrained kids first
            out = self.conj(out, s)
            if not out:
                break
        return out

    def conjunction_scored(self, ks):
        out = _TRUE
        for k in ks:
            out = self.conj(out, self.get(k))
            if not out:
                break
        return tuple(sorted(out, key=itemgetter(1), reverse=True))

    def conjunction(self, ks) -> list:
        """The kept proofs (without scores) of the conjunction of kids ``ks``."""
        return [p for p, _ in self.conjunction_scored(ks)]


def minimal(proofs: dict) -> dict:
    """``proofs`` without those another one subsumes (``q`` is subsumed by ``p`` when every
    choice ``p`` constrains, ``q`` constrains to a subset: ``q`` implies ``p``, so dropping it
    leaves the disjunction unchanged). Order and values kept."""
    keys = list(proofs)
    sets = [dict(p) for p in keys]
    order = sorted(range(len(keys)), key=lambda i: len(keys[i]))
    kept: list[int] = []
    for i in order:
        q = sets[i]
        if not any(all(c in q and not q[c] & ~m for c, m in keys[j]) for j in kept):
            kept.append(i)
    keep = set(kept)
    return {p: proofs[p] for i, p in enumerate(keys) if i in keep}


def _shares(p, q) -> bool:
    """Whether two proofs mention a common choice (then the conjunction's score is recomputed:
    the shared choice's factor must count once)."""
    if len(p) > len(q):
        p, q = q, p
    cs = {c for c, _ in q}
    return any(c in cs for c, _ in p)


def disjoint_terms(proofs, domain_sizes) -> list[tuple]:
    """Disjoint terms of the DNF ``proofs`` (Shannon expansion over the choices they mention).

    Each term is a tuple of ``(choice, mask)`` regions; the terms are mutually exclusive and
    their union is the DNF, so its probability is ``Σ_terms Π p_c(mask)``. The choice split
    next is the one most proofs mention; its values are grouped by which proofs they satisfy,
    and a group that satisfies no proof is dropped."""
    out = []
    stack = [([dict(p) for p in proofs], ())]
    while stack:
        ps, path = stack.pop()
        if not ps:
            continue
        if len(ps) == 1:                       # one proof: its literals are the term
            out.append(path + tuple(sorted(ps[0].items())))
            continue
        if any(not p for p in ps):
            out.append(path)
            continue
        count = Counter(c for p in ps for c in p)
        c = min(count, key=lambda x: (-count[x], x))
        with_c, without = [], []
        holds: list[list[int]] = [[] for _ in range(domain_sizes[c])]  # value -> proofs
        for p in ps:
            m = p.get(c)
            if m is None:
                without.append(p)
                continue
            i = len(with_c)
            with_c.append({d: x for d, x in p.items() if d != c})
            v = 0
            while m:
                if m & 1:
                    holds[v].append(i)
                m >>= 1
                v += 1
        groups: dict = {}
        for v, sig in enumerate(holds):
            key = tuple(sig)
            groups[key] = groups.get(key, 0) | (1 << v)
        for sig, region in reversed(list(groups.items())):
            if not sig and not without:
                continue
            stack.append(([with_c[i] for i in sig] + without, path + ((c, region),)))
    return out
