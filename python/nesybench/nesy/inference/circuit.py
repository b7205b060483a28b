"""Compiled programs as batched PyTorch modules (the DPL label semantics).

:class:`CompiledProgram` implements the ``LabelSemantics`` interface::

    prog = CompiledProgram.from_program('''
        nn(digit_net, [X], Y, [0,1,2,3,4,5,6,7,8,9]) :: digit(X, Y).
        addition(X, Y, Z) :- digit(X, N1), digit(Y, N2), Z is N1 + N2.
    ''', ["addition(x1, x2, Z)"])
    prog.concept_domains        # [10, 10]       (digit_net(x1), digit_net(x2))
    prog.label_domains          # [[0, 1, ..., 18]]
    logp = prog(concept_probs=[p1, p2], labels=torch.tensor([[7], [12]]))  # (B,) log P(label)
    marg = prog.label_marginals([p1, p2])   # [(B, 19)]

The circuit is the SDD of :mod:`nesybench.nesy.inference.compile` evaluated by KLay
(``klaycircuits``: layered sparse gather/scatter, one tensor pass for the whole batch) in the
log semiring (default; ``semiring="real"`` available), with explicit negative-literal weights
(1 for annotated-disjunction outcomes). Gradients are exact (autograd through the circuit).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from ...errors import BudgetExceeded, NesyError
from . import cache as _cache

from .learnable import LearnableProbabilities
from .semantics import LabelSemantics, index_labels

SEMIRINGS = ("log", "real")
#: appended to a compilation budget error: the way past the exact limit
APPROX_HINT = ("; exact inference does not fit this budget: raise the limit, or use approximate "
               "inference (--inference sample:S or topk:K on nesy train/infer; from Python "
               "nesybench.nesy.inference.approx.SampledProgram.from_program(..., samples=S)), which "
               "samples S worlds, or keeps the K most probable proofs, per example instead of "
               "compiling")


def _jsonable(v):
    if isinstance(v, tuple):
        return {"tuple": [_jsonable(x) for x in v]}
    return v


def _unjson(v):
    if isinstance(v, dict) and "tuple" in v:
        return tuple(_unjson(x) for x in v["tuple"])
    return v


class CompiledProgram(LearnableProbabilities, LabelSemantics):
    """A ProbLog program with neural predicates compiled for one query shape.

    Attributes
    ----------
    concept_domains : list[int]      outcomes k_i of each neural choice (concept variable)
    concept_names : list[str]        ``net(inputs)`` of each concept, in input order
    concept_values : list[list]      the declared values of each concept
    label_domains : list[list]       values of each label (query atom), sorted
    label_queries : list[str]        the query atoms
    learnable_facts : list[str]      ``t(P)::f`` facts; their probabilities are parameters, trained
                                     with the nets: ``sigmoid(fact_logits)`` by default, or
                                     ``fact_probs`` themselves (:mod:`~nesybench.nesy.inference.learnable`)
    learnable_ads : list[list[str]]  heads of ``t(_)::a; t(_)::b`` annotated disjunctions:
                                     ``softmax(ad_logits[i])`` per disjunction, or ``ad_probs``
    evidence : list[str]             ``evidence/1,2`` atoms; every output is conditioned on them
                                     (``P(q | e) = P(q ∧ e) / P(e)``, one more circuit pass)
    stats : dict                     compile statistics (seconds, SDD size, vtree, cache hit)
    """

    def __init__(self, meta: dict, sdd_path: str | os.PathLike, *, semiring: str = "log"):
        super().__init__()
        import klay

        if semiring not in SEMIRINGS:
            raise NesyError(f"semiring must be one of {', '.join(SEMIRINGS)}, not {semiring!r}")
        self.semiring = semiring
        self.meta = meta
        self.sdd_path = str(sdd_path)
        choices = meta["choices"]
        vm = meta["varmap"]
        self.n_vars = int(vm["var_count"])
        neural = [i for i, c in enumerate(choices) if c["net"] is not None]
        self.concept_domains = [len(choices[i]["values"]) for i in neural]
        self.concept_names = [choices[i]["key"] for i in neural]
        self.concept_nets = [choices[i]["net"] for i in neural]
        self.concept_values = [[_unjson(v) for v in choices[i]["values"]] for i in neural]
        self.label_domains = [[_unjson(v) for v in lab["values"]] for lab in meta["labels"]]
        self.label_queries = [lab["query"] for lab in meta["labels"]]
        self.stats = dict(meta.get("stats", {}))

        self.evidence = list(meta.get("evidence", []))
        base_pos = torch.ones(self.n_vars, dtype=torch.float64)
        base_neg = torch.ones(self.n_vars, dtype=torch.float64)
        concept_cols = []
        learn_cols, learn_init, self.learnable_facts = [], [], []
        ad_cols, ad_init, self.learnable_ads = [], [], []
        for ci, c in enumerate(choices):
            if c.get("learnable") and c["fact"]:
                learn_cols.append(vm["choice_vars"][ci][0] - 1)
                learn_init.append(c["probs"][0])
                self.learnable_facts.append(c["key"])
            elif c.get("learnable"):
                ad_cols.append([x - 1 for x in vm["choice_vars"][ci]])
                ad_init.append(c["probs"])
                self.learnable_ads.append([str(v) for v in c["values"]])
            xs = vm["choice_vars"][ci]
            if c["net"] is not None:
                concept_cols.extend(x - 1 for x in xs)
            elif c["fact"]:
                base_pos[xs[0] - 1] = c["probs"][0]
                base_neg[xs[0] - 1] = 1.0 - c["probs"][0]
            else:
                for x, p in zip(xs, c["probs"]):
                    base_pos[x - 1] = p
        label_cols = [torch.tensor([x - 1 for x in xs], dtype=torch.long)
                      for xs in vm["label_vars"]]
        for j, cols in enumerate(label_cols):   # default: marginalised (all indicators on)
            base_neg[cols] = 0.0
        # float64: fixed probabilities stay exact when the circuit runs in float64
        self.register_buffer("base_pos", base_pos, persistent=False)
        self.register_buffer("base_neg", base_neg, persistent=False)
        self.register_buffer("concept_cols", torch.tensor(concept_cols, dtype=torch.long),
                             persistent=False)
        self.label_offsets = [0]
        for cols in label_cols:
            self.label_offsets.append(self.label_offsets[-1] + len(cols))
        self.register_buffer("label_cols", torch.cat(label_cols) if label_cols else
                             torch.zeros(0, dtype=torch.long), persistent=False)
        # learnable facts t(P)::f and annotated disjunctions t(_)::a; t(_)::b (learnable.py)
        self._init_learnable(learn_init, ad_init)
        self.register_buffer("learn_cols", torch.tensor(learn_cols, dtype=torch.long),
                             persistent=False)
        self.register_buffer("ad_cols", torch.tensor([x for xs in ad_cols for x in xs],
                                                     dtype=torch.long), persistent=False)
        circ = klay.Circuit()
        circ.add_sdd_from_file(self.sdd_path, [], [])
        self.circuit = circ.to_torch_module(semiring=semiring, compile=False)

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_program(cls, text_or_path, queries, *, networks=None, concept_order=None,
                     concept_decls=None, vtree: str = "blocks", semiring: str = "log",
                     use_cache: bool = True, budget=None, progress: bool = False
                     ) -> "CompiledProgram":
        """Ground ``text_or_path`` (ProbLog text or a ``.pl`` file) for the query shape
        ``queries`` (one atom or a list; placeholders for inputs, free variables for label
        values), compile it (or load it from the circuit cache) and return the module.

        ``networks``: names of the available networks (an ``nn/4`` naming another is an error);
        ``concept_order``: input placeholders (or ``net(inputs)`` keys) in the order the concept
        probabilities will be passed (default: order of first appearance in the ground program);
        ``queries`` may be ``None`` when the program states its own ``query/1`` facts;
        ``budget``: a :class:`~nesybench.nesy.program.budget.Budget` for grounding and compilation
        together (default limits; a hit raises ``BudgetExceeded``); ``progress``: a bar while
        compiling programs with many label values.
        """
        from ..program.budget import Budget
        from .compile import compile_program
        from ..program.program import ground, read_program

        text, source = read_program(text_or_path)
        qs = [queries] if isinstance(queries, str) else list(queries or [])
        budget = budget or Budget()
        key = _cache.cache_key(text, qs, sorted(networks) if networks is not None else None,
                               list(concept_order) if concept_order is not None else None,
                               concept_decls, vtree, budget.grounder)
        if use_cache:
            hit = _cache.lookup(key)            # meta.json read through the contained reader
            if hit is not None:
                hit, meta = hit
                meta.setdefault("stats", {})["cache_hit"] = True
                return cls(meta, hit / "circuit.sdd", semiring=semiring)
        import time
        t0 = time.perf_counter()
        clock = budget.start()
        gp = ground(text if source is None else Path(source), qs, networks=networks,
                    concept_order=concept_order, concept_decls=concept_decls, clock=clock)
        t_ground = time.perf_counter() - t0
        try:
            comp = compile_program(gp, vtree=vtree, clock=clock, progress=progress)
        except BudgetExceeded as exc:
            raise BudgetExceeded(exc.message + APPROX_HINT, file=exc.file or source,
                                 field=exc.field) from None
        meta = {
            "source": source,
            "queries": [lab.query for lab in gp.labels],
            "evidence": [atom for atom, _, _ in gp.evidence],
            "choices": [{"key": c.key, "values": [_jsonable(v) for v in c.values],
                         "probs": c.probs, "net": c.net, "inputs": list(c.inputs),
                         "fact": c.fact, "learnable": c.learnable} for c in gp.choices],
            "labels": [{"query": lab.query, "values": [_jsonable(v) for v in lab.values]}
                       for lab in gp.labels],
            "varmap": {"var_count": comp.varmap.var_count,
                       "choice_vars": comp.varmap.choice_vars,
                       "label_vars": comp.varmap.label_vars},
            "stats": {"ground_seconds": round(t_ground, 4), "grounder": gp.grounder,
                      **({"grounder_note": gp.grounder_note} if gp.grounder_note else {}),
                      "compile_seconds": round(comp.seconds, 4), "sdd_size": comp.size,
                      "sdd_nodes": comp.sdd.count(), "peak_live_size": comp.peak_live,
                      "sdd_collections": comp.collections, "compile_strategy": comp.strategy,
                      "vtree": vtree, "ground_nodes": len(gp.nodes) - 1,
                      "variables": comp.varmap.var_count, "cache_hit": False},
        }
        if use_cache:
            try:
                d = _cache.store(key, comp.sdd, comp.manager.vtree(), meta)
                return cls(meta, d / "circuit.sdd", semiring=semiring)
            except OSError:
                pass   # read-only cache: fall through to a temporary file
        tmp = tempfile.NamedTemporaryFile(suffix=".sdd", delete=False)
        tmp.close()
        comp.sdd.save(tmp.name.encode())
        try:
            return cls(meta, tmp.name, semiring=semiring)
        finally:
            os.unlink(tmp.name)

    @classmethod
    def from_task(cls, task, **kw) -> "CompiledProgram":
        """The program of a shortcut task (see :mod:`nesybench.nesy.inference.from_task`)."""
        from .from_task import compile_task
        return compile_task(task, cls=cls, **kw)

    # -- evaluation ------------------------------------------------------------------------
    def _inputs(self, concept_probs, log_input: bool):
        if len(concept_probs) != len(self.concept_domains):
            raise NesyError(f"expected {len(self.concept_domains)} concept tensors "
                            f"({', '.join(self.concept_names)}), got {len(concept_probs)}")
        for i, (p, k) in enumerate(zip(concept_probs, self.concept_domains)):
            if p.dim() != 2 or p.shape[1] != k:
                raise NesyError(f"concept {self.concept_names[i]} has {k} values; got a tensor "
                                f"of shape {tuple(p.shape)} (expected (B, {k}))")
        if not concept_probs:     # a program without neural predicates: one float64 row
            return torch.zeros((1, 0), dtype=torch.float64, device=self.base_pos.device)
        x = torch.cat(list(concept_probs), dim=1)
        if self.semiring == "log" and not log_input:
            # an exact 0 (softmax underflow, one-hot concepts) would give log 0 = -inf and NaN
            # gradients (0 * inf); clamp to the smallest normal number instead. Pass
            # log-probabilities (log_softmax, log_input=True) for exact gradients there.
            x = torch.log(x.clamp_min(torch.finfo(x.dtype).tiny))
        elif self.semiring == "real" and log_input:
            x = torch.exp(x)
        return x

    def _evaluate(self, x, ind_pos, ind_neg):
        """Circuit value for concept inputs ``x`` (B, sum k) and indicator weights (B, L)."""
        B = x.shape[0]
        pos = self.base_pos.to(x.dtype).expand(B, -1)
        neg = self.base_neg.to(x.dtype).expand(B, -1)
        if self.semiring == "log":
            pos, neg = torch.log(pos), torch.log(neg)
        if len(self.learn_cols):
            fp, fn = self.fact_probability_pair(x.dtype, log=self.semiring == "log")
            pos = pos.index_copy(1, self.learn_cols, fp.expand(B, -1))
            neg = neg.index_copy(1, self.learn_cols, fn.expand(B, -1))
        if self.ad_sizes:
            norm = torch.cat(self.ad_probabilities(x.dtype, log=self.semiring == "log"))
            pos = pos.index_copy(1, self.ad_cols, norm.expand(B, -1))
        pos = pos.index_copy(1, self.concept_cols, x)
        if self.semiring == "log":
            neg = neg.index_copy(1, self.concept_cols, torch.zeros_like(x))
        pos = pos.index_copy(1, self.label_cols, ind_pos)
        neg = neg.index_copy(1, self.label_cols, ind_neg)
        return self.circuit(pos, neg).reshape(B)

    def _indicators(self, onehots, dtype):
        pos = torch.cat(onehots, dim=1).to(dtype)
        neg = 1.0 - pos
        if self.semiring == "log":
            pos, neg = torch.log(pos), torch.log(neg)
        return pos, neg

    def forward(self, concept_probs, labels, *, log_input: bool = False):
        """``log P(labels | concepts)`` per example, shape (B,).

        concept_probs: list of (B, k_i) tensors (rows summing to 1; log-probabilities with
        ``log_input=True``); labels: (B, n_labels) or (B,) LongTensor of value indices into
        :attr:`label_domains`."""
        x = self._inputs(concept_probs, log_input)
        labels = torch.as_tensor(labels, device=x.device)
        if labels.dim() == 1:
            labels = labels[:, None]
        if labels.shape != (x.shape[0], len(self.label_domains)):
            raise NesyError(f"labels must have shape (B, {len(self.label_domains)}); got "
                            f"{tuple(labels.shape)}")
        onehots = []
        for j, dom in enumerate(self.label_domains):
            lj = labels[:, j].long()
            if (lj < 0).any() or (lj >= len(dom)).any():
                raise NesyError(f"label {self.label_queries[j]!r}: index out of range "
                                f"0..{len(dom) - 1}")
            onehots.append(torch.nn.functional.one_hot(lj, len(dom) + 1))   # + "no value"
        ip, ineg = self._indicators(onehots, x.dtype)
        out = self._evaluate(x, ip, ineg)
        out = out if self.semiring == "log" else torch.log(out)
        if self.evidence:
            out = out - self._checked_evidence(x, concept_probs, log_input)
        return out

    def _checked_evidence(self, x, concept_probs, log_input: bool):
        """``log P(e)`` per example (B,), after checking that no example's evidence is
        impossible. An impossible observation (P(e) = 0: logically, through 0/1 weights, or
        through a concept probability of exactly 0) raises :class:`NesyError` naming the
        evidence and the examples: conditioning on it has no meaning, and the clamp that keeps
        log-space gradients finite would otherwise renormalise a ~1e-308 mass silently."""
        log_e = self.log_evidence(x)
        with torch.no_grad():
            exact = log_e
            if self.semiring == "log" and not log_input and concept_probs and \
                    any(bool((p == 0).any()) for p in concept_probs):
                # the inputs were clamped to the smallest normal number: evaluate once more
                # with exact zeros (log 0 = -inf, which the log-semiring circuit carries through)
                exact = self.log_evidence(torch.log(torch.cat(list(concept_probs), dim=1)
                                                    .to(x.dtype)))
            bad = torch.isneginf(exact) | torch.isnan(exact)
        if bool(bad.any()):
            rows = torch.nonzero(bad).flatten().tolist()
            which = ", ".join(map(str, rows[:10])) + (" ..." if len(rows) > 10 else "")
            raise NesyError(f"evidence {', '.join(self.evidence)} is impossible (probability 0) "
                            f"for {len(rows)} of {x.shape[0]} example(s) (rows {which}); "
                            "conditioning on it is undefined", field="evidence")
        return log_e

    def log_evidence(self, x):
        """``log P(e)`` per example (B,) for concept inputs ``x`` in the circuit's semiring:
        the circuit with every label indicator on (all labels marginalised)."""
        B, L = x.shape[0], self.label_offsets[-1]
        ipos = torch.ones(B, L, dtype=x.dtype, device=x.device)
        ineg = torch.zeros(B, L, dtype=x.dtype, device=x.device)
        if self.semiring == "log":
            ipos, ineg = torch.log(ipos), torch.log(ineg)
        val = self._evaluate(x, ipos, ineg)
        return val if self.semiring == "log" else torch.log(val)

    def label_marginals(self, concept_probs, *, log_input: bool = False):
        """``P(label_j = v)`` for each label: list of (B, m_j) tensors (one batched pass over
        B * sum_j m_j rows; the other labels are marginalised by switching their indicators
        on)."""
        x = self._inputs(concept_probs, log_input)
        B = x.shape[0]
        outs = []
        L = self.label_offsets[-1]
        for j, dom in enumerate(self.label_domains):
            m = len(dom)
            ind = torch.ones(m, L, dtype=x.dtype, device=x.device)
            a, b = self.label_offsets[j], self.label_offsets[j + 1]
            ind[:, a:b] = torch.eye(m, m + 1, dtype=x.dtype, device=x.device)
            ipos = ind.repeat(B, 1)                       # (B*m, L)
            ineg = torch.zeros_like(ipos)
            ineg[:, a:b] = 1.0 - ipos[:, a:b]
            if self.semiring == "log":
                ipos, ineg = torch.log(ipos), torch.log(ineg)
            xx = x.repeat_interleave(m, dim=0)
            val = self._evaluate(xx, ipos, ineg).reshape(B, m)
            outs.append(torch.exp(val) if self.semiring == "log" else val)
        if self.evidence:
            z = torch.exp(self._checked_evidence(x, concept_probs, log_input))[:, None]
            outs = [o / z for o in outs]
        return outs

    def label_index(self, values) -> torch.Tensor:
        """Label values (B, n_labels) (or (B,) for one label) -> index tensor for forward."""
        return index_labels(values, self.label_domains)

    def extra_repr(self) -> str:
        return (f"concepts={self.concept_names}, labels={self.label_queries}, "
                f"semiring={self.semiring}, sdd_size={self.stats.get('sdd_size')}")
