"""Approximate inference past the exact limit: Monte Carlo sampling of the ground program.

Exact inference (:class:`~nesybench.nesy.inference.circuit.CompiledProgram`) compiles the ground program
into an SDD; when that circuit does not fit the budget (``--max-circuit-nodes``, ``--timeout``,
``--max-memory``), :class:`SampledProgram` answers the same questions *without compiling*: it
grounds the program the same way (same placeholders, same labels, same concept order) and
estimates every probability from ``S`` worlds sampled from the concept distributions.

Pick it with ``--inference sample:S`` on ``nesy train`` / ``nesy infer``, or from Python with
``SampledProgram.from_program(text, queries, samples=S)`` /
:func:`build_program` (``inference="sample:S"``). It implements the
:class:`~nesybench.nesy.inference.semantics.LabelSemantics` interface, so every model that takes the
exact engine takes it.

**What is approximated.** Per example ``b``, ``S`` worlds ``w_1..w_S`` are drawn independently
from ``Π_c p_c(· | x_b)`` (every neural choice, probabilistic fact and annotated disjunction of
the ground program; learnable ``t(_)`` parameters included). The ground DAG is evaluated on each
world (a vectorised pass, level by level), giving ``f_s = [labels y hold in w_s]``, and

    P̂(y) = (1/S) Σ_s f_s                                                  (unbiased)

``forward`` returns ``log max(P̂(y), 1/(2S))``; ``label_marginals`` returns ``P̂(label_j = v)``
for every value. With evidence, ``P̂(q | e) = Σ_s f_s e_s / Σ_s e_s`` (a ratio estimator:
consistent, biased by O(1/S)).

**Gradients** (the score-function / REINFORCE estimator with a leave-one-out baseline, as in
RLOO): the returned value carries the gradient of the surrogate

    (1/S) Σ_s (f_s − b_s) ∇ log p(w_s | x),   b_s = (Σ_{t≠s} f_t) / (S − 1),

which is an **unbiased** estimate of ``∇P(y)`` (the baseline does not depend on ``w_s``).
``∇ log P̂`` = that estimate divided by ``P̂``: biased for finite ``S`` (a ratio), consistent as
``S → ∞``.

**Error.** Each marginal is a mean of ``S`` Bernoulli draws: standard error
``sqrt(p (1 − p) / S) ≤ 0.5 / sqrt(S)`` (S = 1,000: ≤ 0.016; S = 10,000: ≤ 0.005);
:meth:`SampledProgram.estimate` returns it per value. The variance of the gradient grows as
``P(y)`` shrinks: a label whose probability is far below ``1/S`` is never hit, ``P̂ = 0``, its
loss is clamped at ``log(1/(2S))`` and its gradient is zero. Sampling therefore learns where the
observed labels are not rare under the current networks (few labels, or networks already
partly trained); for a label of probability ~10^-16 (an untrained network on 30 digits) no
feasible ``S`` helps, and exact inference, a decomposed objective or a learned inference model
is needed.

**Cost.** No compilation: grounding only, then per batch ``O(S · B · |ground DAG|)`` boolean
operations and ``S · B`` categorical draws per choice. Time and memory are linear in ``S`` and in
the size of the ground program (not of a circuit), so it runs wherever grounding does.
Results are reproducible for a fixed seed (``seed=`` or the global torch seed).

The other approximate method, ``--inference topk:K`` (:mod:`nesybench.nesy.inference.topk`), keeps the
``K`` most probable proofs of every node instead: deterministic, a lower bound of the exact
probability (without negation), with exact gradients of that bound.
"""
from __future__ import annotations

import math
import time

import torch

from ...errors import NesyError
from .spec import DEFAULT_SAMPLES, parse_inference  # noqa: F401 - part of this API
from .learnable import LearnableProbabilities
from .semantics import (LabelSemantics, choice_distributions, index_labels,
                        take_fixed_choices, take_ground_interface)

#: the inference methods a user can pick (``exact``, ``sample:S`` or ``topk:K``)
INFERENCE = ("exact", "sample", "topk")
#: samples per example when ``sample`` is given without a number
#: booleans held at once while evaluating the ground DAG (nodes x columns); larger batches of
#: samples are evaluated in chunks
CHUNK_ELEMENTS = 1 << 27


def build_program(text_or_path, queries, *, inference: str = "exact", seed: int | None = None,
                  **kw):
    """The program under ``inference``: a compiled
    :class:`~nesybench.nesy.inference.circuit.CompiledProgram` (``"exact"``), a
    :class:`SampledProgram` (``"sample:S"``) or a
    :class:`~nesybench.nesy.inference.topk.TopKProgram` (``"topk:K"``); ``kw`` as for
    ``from_program``."""
    kind, s = parse_inference(inference)
    if kind == "exact":
        from .circuit import CompiledProgram
        return CompiledProgram.from_program(text_or_path, queries, **kw)
    if kind == "topk":
        from .topk import TopKProgram
        return TopKProgram.from_program(text_or_path, queries, k=s, **kw)
    return SampledProgram.from_program(text_or_path, queries, samples=s, seed=seed, **kw)


class SampledProgram(LearnableProbabilities, LabelSemantics):
    """Monte Carlo label semantics of a ground program (module docstring).

    Same attributes as :class:`~nesybench.nesy.inference.circuit.CompiledProgram` (``concept_domains``,
    ``concept_names``, ``concept_values``, ``label_domains``, ``label_queries``, ``evidence``,
    ``learnable_facts``, ``fact_logits``, ``learnable_ads``, ``ad_logits``, ``stats``) plus
    ``samples`` (S, worlds per example)."""

    def __init__(self, gp, *, samples: int = DEFAULT_SAMPLES, seed: int | None = None,
                 stats: dict | None = None):
        super().__init__()
        if samples < 2:
            raise NesyError("sampling needs at least 2 samples per example", field="samples")
        self.samples = int(samples)
        self.seed = seed
        self._gen: torch.Generator | None = None
        take_ground_interface(self, gp)
        self.stats = dict(stats or {})
        self.stats.update({"inference": f"sample:{self.samples}",
                           "ground_nodes": len(gp.nodes) - 1})
        take_fixed_choices(self, gp)   # fixed distributions, learnable facts and disjunctions
        self._plan(gp)

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_program(cls, text_or_path, queries, *, networks=None, concept_order=None,
                     concept_decls=None, samples: int = DEFAULT_SAMPLES, seed: int | None = None,
                     budget=None, **ignored) -> "SampledProgram":
        """Ground ``text_or_path`` for ``queries`` (as
        :meth:`CompiledProgram.from_program <nesybench.nesy.inference.circuit.CompiledProgram.from_program>`
        does, under the grounding limits of ``budget``) and sample instead of compiling.
        Compilation options (``vtree``, ``semiring``, ``use_cache``, ``progress``) are
        accepted and ignored."""
        from ..program.budget import Budget
        from ..program.program import ground

        t0 = time.perf_counter()
        clock = (budget or Budget()).start()
        gp = ground(text_or_path, queries, networks=networks, concept_order=concept_order,
                    concept_decls=concept_decls, clock=clock)
        return cls(gp, samples=samples, seed=seed,
                   stats={"ground_seconds": round(time.perf_counter() - t0, 4),
                          "grounder": gp.grounder})

    @classmethod
    def from_task(cls, task, **kw) -> "SampledProgram":
        """The program of a shortcut task (see :mod:`nesybench.nesy.inference.from_task`), sampled."""
        from .from_task import compile_task
        return compile_task(task, cls=cls, **kw)

    def _plan(self, gp) -> None:
        """Level-wise evaluation plan of the ground DAG. Rows of the value table: 0 = true,
        1..n = nodes, n+1 = false."""
        nodes = gp.nodes
        n = len(nodes) - 1
        false_row = n + 1

        def row(k):
            return false_row if k is None else abs(k)

        def neg(k):
            return k is not None and k < 0

        level = [0] * (n + 2)
        lits_node, lits_choice, lits_value = [], [], []
        # iterative post-order: level = 1 + max level of the kids (literals: level 0)
        done = [False] * (n + 2)
        done[0] = done[false_row] = True
        for root in range(1, n + 1):
            if done[root]:
                continue
            stack = [(root, False)]
            while stack:
                m, expanded = stack.pop()
                if done[m]:
                    continue
                node = nodes[m]
                if node[0] == "lit":
                    lits_node.append(m)
                    lits_choice.append(node[1])
                    lits_value.append(node[2])
                    done[m] = True
                    continue
                kids = [row(k) for k in node[1]]
                if not expanded:
                    stack.append((m, True))
                    stack.extend((k, False) for k in kids if not done[k])
                    continue
                level[m] = 1 + max((level[k] for k in kids), default=0)
                done[m] = True
        self.n_rows = n + 2
        self.register_buffer("lit_rows", torch.tensor(lits_node, dtype=torch.long),
                             persistent=False)
        self.register_buffer("lit_choice", torch.tensor(lits_choice, dtype=torch.long),
                             persistent=False)
        self.register_buffer("lit_value", torch.tensor(lits_value, dtype=torch.long),
                             persistent=False)
        # nodes of one level evaluated together, bucketed by kid count (powers of two) so a
        # few wide disjunctions do not pad every node of their level to their width
        by_level: dict[tuple, list[int]] = {}
        for m in range(1, n + 1):
            if nodes[m][0] != "lit":
                width = max(1, len(nodes[m][1]))
                by_level.setdefault((level[m], (width - 1).bit_length()), []).append(m)
        self.levels = []       # (rows, kid rows (r, K), negated (r, K), is_and (r, 1))
        for lv in sorted(by_level):
            ms = by_level[lv]
            width = max(1, max(len(nodes[m][1]) for m in ms))
            kid = torch.empty(len(ms), width, dtype=torch.long)
            ng = torch.zeros(len(ms), width, dtype=torch.bool)
            is_and = torch.tensor([nodes[m][0] == "and" for m in ms])
            for r, m in enumerate(ms):
                ks = nodes[m][1]
                # padding: the neutral element (true for and, false for or)
                pad = 0 if nodes[m][0] == "and" else false_row
                kid[r] = torch.tensor([row(k) for k in ks] + [pad] * (width - len(ks)))
                ng[r, :len(ks)] = torch.tensor([neg(k) for k in ks], dtype=torch.bool)
            self.levels.append((torch.tensor(ms), kid, ng, is_and[:, None]))
        import numpy as np
        self._np_levels = [(r.numpy(), k.numpy(), np.where(g.numpy(), -1, 0)[..., None]
                            .astype(np.int64), a[:, 0].numpy()) for r, k, g, a in self.levels]
        # label value rows and signs; evidence rows and signs
        self.label_rows = [torch.tensor([row(k) for k in lab.nodes]) for lab in gp.labels]
        self.label_neg = [torch.tensor([neg(k) for k in lab.nodes], dtype=torch.bool)
                          for lab in gp.labels]
        self.ev_rows = torch.tensor([abs(nd) for _, nd, _ in gp.evidence], dtype=torch.long)
        self.ev_want = torch.tensor([bool(obs) for _, _, obs in gp.evidence], dtype=torch.bool)

    # -- sampling ---------------------------------------------------------------------------
    def _generator(self, device) -> torch.Generator | None:
        if self.seed is None:
            return None
        if self._gen is None or self._gen.device != torch.device(device):
            self._gen = torch.Generator(device=device).manual_seed(self.seed)
        return self._gen

    def _distributions(self, concept_probs, log_input: bool):
        """Per choice, (B, k) probabilities (or (1, k) for fixed ones), in choice order."""
        return choice_distributions(self, concept_probs, log_input)

    def _sample(self, dists, B: int, S: int):
        """``(worlds (B, S, n_choices) long, log p(world) (B, S) differentiable)``."""
        device = dists[0].device if dists else self.fixed_probs.device
        gen = self._generator(device)
        ws, logp = [], None
        for p in dists:
            pe = p.expand(B, -1)
            # inverse-CDF sampling in float64: one uniform per draw, binary search in the CDF
            cdf = pe.detach().double().clamp_min(0).cumsum(1)
            u = torch.rand(B, S, generator=gen, dtype=torch.float64, device=device) * cdf[:, -1:]
            w = torch.searchsorted(cdf, u, right=True).clamp_max(pe.shape[1] - 1)
            ws.append(w)
            lp = torch.log(torch.gather(pe, 1, w).clamp_min(torch.finfo(pe.dtype).tiny))
            logp = lp if logp is None else logp + lp
        if not ws:
            return torch.zeros(B, S, 0, dtype=torch.long, device=device), \
                torch.zeros(B, S, device=device)
        return torch.stack(ws, -1), logp

    @torch.no_grad()
    def _truth(self, worlds):
        """Truth of the DAG's rows on every sampled world, bit-packed: a list of chunks, each
        ``(V (rows, W) int64 numpy array, columns)``; bit ``c`` of a row is world ``c`` of the
        flattened (B*S) samples. Packing 64 worlds per machine word makes one ``and``/``or``
        of the DAG one vectorised bitwise operation over ``B*S/64`` words."""
        import numpy as np
        C = worlds.shape[0] * worlds.shape[1]
        flat = worlds.reshape(C, -1).cpu().numpy()
        step = max(64, (CHUNK_ELEMENTS // max(self.n_rows, 1)) // 64 * 64)
        return [(self._truth_chunk(flat[s:s + step], np), min(step, C - s))
                for s in range(0, C, step)]

    def _truth_chunk(self, flat, np):
        C = flat.shape[0]
        pad = (-C) % 64
        W = (C + pad) // 64
        V = np.zeros((self.n_rows, W), dtype=np.int64)
        V[0] = -1                                                   # true: every bit set
        if len(self.lit_rows):
            lc, lv = self.lit_choice.numpy(), self.lit_value.numpy()
            bits = flat[:, lc] == lv                                # (C, n_lits)
            bits = np.pad(bits.T, ((0, 0), (0, pad)))
            V[self.lit_rows.numpy()] = np.packbits(bits, axis=1).view(np.int64)
        for rows, kid, ng, is_and in self._np_levels:
            vals = V[kid] ^ ng                                      # (r, K, W)
            out = np.empty((len(rows), W), dtype=np.int64)
            if is_and.any():
                out[is_and] = np.bitwise_and.reduce(vals[is_and], axis=1)
            if (~is_and).any():
                out[~is_and] = np.bitwise_or.reduce(vals[~is_and], axis=1)
            V[rows] = out
        return V

    def _columns(self, parts, rows, negs, B, S):
        """Truth (B, S, len(rows)) bool tensor of the given rows (with signs)."""
        import numpy as np
        r, ng = rows.numpy(), negs.numpy()
        cols = []
        for V, c in parts:
            words = V[r] ^ np.where(ng, -1, 0)[:, None]
            cols.append(np.unpackbits(words.view(np.uint8), axis=1)[:, :c].astype(bool))
        out = torch.from_numpy(np.concatenate(cols, 1).T.copy())
        return out.reshape(B, S, len(r)).to(self.fixed_probs.device)

    # -- estimates --------------------------------------------------------------------------
    @staticmethod
    def _surrogate(f, logp):
        """Mean of ``f`` (B, S, ...) over samples, carrying the RLOO score-function gradient."""
        S = f.shape[1]
        mean = f.mean(1)
        if not logp.requires_grad:
            return mean
        base = (f.sum(1, keepdim=True) - f) / (S - 1)
        lp = logp.reshape(*logp.shape, *([1] * (f.dim() - 2)))
        g = ((f - base) * (lp - lp.detach())).mean(1)
        return mean + g

    def _run(self, concept_probs, log_input: bool):
        dists = self._distributions(concept_probs, log_input)
        B = max([p.shape[0] for p in dists[:self.n_neural]], default=1)
        S = self.samples
        worlds, logp = self._sample(dists, B, S)
        parts = self._truth(worlds)
        dtype = dists[0].dtype if dists else torch.float64
        ev = None
        if len(self.ev_rows):
            e = self._columns(parts, self.ev_rows, ~self.ev_want, B, S).all(-1)
            ev = e.to(dtype)
        return parts, logp.to(dtype), ev, B, S, dtype

    def forward(self, concept_probs, labels, *, log_input: bool = False):
        """``log P̂(labels | concepts)`` per example, shape (B,), with score-function gradients
        (module docstring); clamped below at ``log(1 / (2 S))``."""
        parts, logp, ev, B, S, dtype = self._run(concept_probs, log_input)
        labels = torch.as_tensor(labels, device=logp.device)
        if labels.dim() == 1:
            labels = labels[:, None]
        if labels.shape != (B, len(self.label_domains)):
            raise NesyError(f"labels must have shape (B, {len(self.label_domains)}); got "
                            f"{tuple(labels.shape)}")
        f = torch.ones(B, S, dtype=torch.bool, device=logp.device)
        for j, dom in enumerate(self.label_domains):
            lj = labels[:, j].long()
            if (lj < 0).any() or (lj >= len(dom)).any():
                raise NesyError(f"label {self.label_queries[j]!r}: index out of range "
                                f"0..{len(dom) - 1}")
            t = self._columns(parts, self.label_rows[j], self.label_neg[j], B, S)  # (B, S, m)
            f &= torch.gather(t, 2, lj.reshape(B, 1, 1).expand(B, S, 1).to(t.device))[..., 0]
        floor = 1.0 / (2 * S)
        if ev is not None:
            pq = self._surrogate(f.to(dtype) * ev, logp)
            pe = self._surrogate(ev, logp)
            if (ev.sum(1) == 0).any():
                raise NesyError(f"no sampled world satisfies the evidence ({S} samples); "
                                "raise S or use exact inference")
            return torch.log(pq.clamp_min(floor)) - torch.log(pe.clamp_min(floor))
        return torch.log(self._surrogate(f.to(dtype), logp).clamp_min(floor))

    def estimate(self, concept_probs, *, log_input: bool = False):
        """``(marginals, standard errors)``: two lists of (B, m_j) tensors; the marginals as
        :meth:`label_marginals`, the errors ``sqrt(p̂ (1 − p̂) / S)`` (with evidence: of the
        ratio, by the delta method)."""
        parts, logp, ev, B, S, dtype = self._run(concept_probs, log_input)
        margs, errs = [], []
        for j in range(len(self.label_domains)):
            t = self._columns(parts, self.label_rows[j], self.label_neg[j], B, S).to(dtype)
            if ev is None:
                m = self._surrogate(t, logp)
                se = torch.sqrt((m.detach() * (1 - m.detach())).clamp_min(0) / S)
            else:
                n_e = ev.sum(1, keepdim=True)
                if (n_e == 0).any():
                    raise NesyError(f"no sampled world satisfies the evidence ({S} samples); "
                                    "raise S or use exact inference")
                m = self._surrogate(t * ev[..., None], logp) / \
                    self._surrogate(ev, logp)[:, None]
                se = torch.sqrt((m.detach() * (1 - m.detach())).clamp_min(0) / n_e)
            margs.append(m)
            errs.append(se)
        return margs, errs

    def label_marginals(self, concept_probs, *, log_input: bool = False):
        """``P̂(label_j = v)``: list of (B, m_j) Monte Carlo estimates (each value's fraction of
        the ``S`` sampled worlds; standard error ≤ 0.5/sqrt(S)), with score-function
        gradients."""
        return self.estimate(concept_probs, log_input=log_input)[0]

    def label_index(self, values) -> torch.Tensor:
        """Label values -> index tensor for forward (as ``CompiledProgram.label_index``)."""
        return index_labels(values, self.label_domains)

    def extra_repr(self) -> str:
        return (f"concepts={self.concept_names}, labels={self.label_queries}, "
                f"samples={self.samples}, ground_nodes={self.stats.get('ground_nodes')}")


def standard_error_bound(samples: int) -> float:
    """The worst-case standard error of one sampled marginal, ``0.5 / sqrt(S)``."""
    return 0.5 / math.sqrt(samples)


def approximate_answers(path, queries, *, inference: str, budget=None,
                        seed: int | None = None) -> dict:
    """The answers of ``nesy infer --inference sample:S|topk:K`` for the program file ``path``:
    ``{"rows": [...], "evidence": [...], "stats": {...}}``, one row per ground answer (or per
    label value), each ``{"query", "atom", "value", "p"}`` and, when sampled, ``"stderr"``
    (the estimate's standard error). A Boolean query gives one row, its probability of being
    true; a query with no answer gives one row at 0, as the exact path does."""
    kind, n = parse_inference(inference)
    if kind == "sample":
        prog = SampledProgram.from_program(path, queries or None, networks=[], budget=budget,
                                           samples=n, seed=seed)
        margs, errs = prog.estimate([])
    elif kind == "topk":
        prog = build_program(path, queries or None, inference=inference, networks=[],
                             budget=budget)
        margs = prog.label_marginals([])
        errs = [None] * len(margs)
        prog.stats["truncated"] = bool(prog.last_truncated.any())
    else:
        raise NesyError("approximate_answers is for sample:S and topk:K; exact answers are "
                        "nesybench.nesy.inference.marginals.marginals", field="inference")
    rows = []
    for query, atoms, dom, m, e in zip(prog.label_queries, prog.label_atoms, prog.label_domains,
                                       margs, errs):
        boolean = dom in ([0, 1], [0], [1]) and len(atoms) <= 1
        ses = e[0].tolist() if e is not None else [None] * len(dom)
        if boolean:
            atoms = (atoms or [query]) * len(dom)
        for v, atom, pr, se in zip(dom, atoms, m[0].tolist(), ses):
            if boolean and v != 1:
                continue
            row = {"query": query, "atom": atom, "value": None if boolean else v, "p": pr}
            if se is not None:
                row["stderr"] = se
            rows.append(row)
        if boolean and 1 not in dom:
            rows.append({"query": query, "atom": atoms[0] if atoms else query, "value": None,
                         "p": 0.0})
    return {"rows": rows, "evidence": prog.evidence, "stats": prog.stats}
