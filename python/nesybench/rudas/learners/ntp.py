"""An NTP-style rule learner after Rocktäschel and Riedel (2017, "End-to-end differentiable
proving", NeurIPS): rule templates with learnable predicate embeddings, soft unification of
predicate symbols by an RBF kernel, max-proof aggregation, trained with negative sampling in
PyTorch on the CPU; rules decoded by the nearest known predicate.

Binary predicates only (RuDaS-v0 has arity 2). What is built, precisely:

* **Symbols**: every predicate p of the training set has an embedding θ_p ∈ R^d (``dim``,
  default 20). A template instance has one free embedding per body atom, e.g. ``#2``, ``#3``
  of ``h(X,Y) :- #2(X,Z), #3(Z,Y)``. Unification of two predicate symbols scores
  k(u, v) = exp(-‖u − v‖₂), the NTP paper's RBF kernel with μ = 1/√2.
* **Templates** (``templates``, comma-separated): ``same`` ``#2(X,Y)``, ``inverse`` ``#2(Y,X)``,
  ``chain`` ``#2(X,Z), #3(Z,Y)``, and the other orientations of a two-atom chain
  ``chain-fi`` ``#2(X,Z), #3(Y,Z)``, ``chain-if`` ``#2(Z,X), #3(Z,Y)``, ``chain-ii``
  ``#2(Z,X), #3(Y,Z)``. Default ``same,inverse,chain`` (the chain and inverse templates of
  the NTP paper plus one-atom subsumption), ``instances`` (default 1) of each per head.
* **Proofs** of a query q(a, b) through a template instance with head q (the head
  unifies exactly, see below), each scored by the minimum of its unifications, the query
  scored by the maximum over its proofs (NTP's min/max aggregation; no k-max pruning is
  needed because every proof is enumerated): each body atom is proved by a training fact
  r(·,·) on the right constants with score k(#i, θ_r), the variable Z ranging over every
  constant that connects a and b. When proving a training fact, that fact itself is masked
  (as NTP does), so ``q(X,Y) :- q(X,Y)`` earns nothing.
* **Training**: binary cross-entropy of the proof scores of every training fact (label 1)
  and ``neg_per_pos`` corruptions of it (label 0: the subject or the object replaced by a
  random constant, alternately; known facts are not used as negatives), full batch, Adam
  (``lr`` 0.02, ``epochs`` 100); deterministic for a ``seed`` (``torch.manual_seed``, one
  thread, negatives drawn from a seeded ``random.Random``).
* **Decoding**: each body embedding of an instance is replaced by the nearest predicate
  embedding; the rule's confidence is the instance's unification score with those
  predicates, min_i k(#i, θ_decoded(i)) — the factor the rule contributes to every proof it
  takes part in (the NTP paper's decoding). Identical decoded rules keep the best
  confidence; ``h(X,Y) :- h(X,Y)`` is dropped.

What differs from the full NTP, and why:

* **Constants unify exactly, not softly.** NTP embeds constants too, so that a proof can
  use a fact about a *similar* constant; on RuDaS that soft matching is a link predictor
  (the paper combined NTP with ComplEx for the same purpose), it does not change which rules
  are decoded, and it makes every proof step compare against every fact (O(|F|²) per query
  for a two-atom body). With exact constants the proofs of a query are exactly the paths
  through the facts, enumerated once per query, and a RuDaS S dataset trains in seconds on
  one core.
* **Heads unify exactly**: an instance's head is a target predicate h (one set of
  instances per target) instead of a free ``#1`` unified softly, and a query is not proved
  by a fact of a *similar* predicate. With soft heads the first version of this learner
  found p = q ∘ r on a tiny dataset but attached it to the head r and moved θ_p next to
  θ_r (p proved through r's rule at k(θ_p, θ_r) ≈ 0.74): the data were explained, the
  decoded rule was wrong. Exact heads make every decoded rule a rule for the predicate it was trained on.
* **Depth**: rules are not chained into deeper proofs (a body atom is proved by facts only,
  depth 1 of NTP's recursion), which is what RuDaS-v0's two-atom rules need for one step;
  rules learned for one predicate are not used to prove the body of another.
"""
from __future__ import annotations

import random

from . import Dataset, Learner, Rule, bar

#: template name -> body atoms as (first argument, second argument) over X, Y, Z
TEMPLATES = {
    "same": (("X", "Y"),),
    "inverse": (("Y", "X"),),
    "chain": (("X", "Z"), ("Z", "Y")),
    "chain-fi": (("X", "Z"), ("Y", "Z")),
    "chain-if": (("Z", "X"), ("Z", "Y")),
    "chain-ii": (("Z", "X"), ("Y", "Z")),
}


def _kernel(u, v):
    """k(u, v) = exp(-‖u − v‖₂) for every pair of rows: (len(u), len(v))."""
    import torch  # noqa: PLC0415
    d2 = (u[:, None, :] - v[None, :, :]).pow(2).sum(-1)
    return torch.exp(-torch.sqrt(d2 + 1e-12))


class NTP(Learner):
    OPTIONS = {"templates": "comma-separated: same, inverse, chain, chain-fi, chain-if, "
                            "chain-ii (default same,inverse,chain)",
               "instances": "instances of each template per head predicate (default 1)",
               "dim": "embedding size (default 20)",
               "epochs": "training epochs (default 100)",
               "lr": "Adam learning rate (default 0.02)",
               "neg_per_pos": "corrupted facts per training fact and epoch (default 2)",
               "min_conf": "smallest decoded confidence written (default 0)"}

    def learn(self, ds: Dataset) -> list:
        import torch  # noqa: PLC0415
        from ...errors import NesyError  # noqa: PLC0415
        names = [t.strip() for t in str(self.o.options.get("templates", "same,inverse,chain"))
                 .split(",") if t.strip()]
        bad = [t for t in names if t not in TEMPLATES]
        if bad or not names:
            raise NesyError(f"unknown template {bad[0] if bad else ''!r} (known: "
                            f"{', '.join(TEMPLATES)})", field="option")
        if self.max_body(ds) < 2:
            names = [t for t in names if len(TEMPLATES[t]) <= self.max_body(ds)]
        self.instances = self.opt("instances", 1, int)
        self.dim = self.opt("dim", 20, int)
        self.epochs = self.opt("epochs", 100, int)
        self.lr = self.opt("lr", 0.02, float)
        self.neg = self.opt("neg_per_pos", 2, int)
        self.min_conf = self.opt("min_conf", 0.0, float)
        for k, v in (("instances", self.instances), ("dim", self.dim), ("epochs", self.epochs)):
            if v < 1:
                raise NesyError(f"option {k} must be >= 1, got {v}", field="option")
        preds = sorted(p for p in ds.facts if ds.arity[p] == 2)
        heads = [q for q in self.targets(ds) if q in preds]
        if not preds or not heads or not names:
            return []
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._learn(ds, preds, heads, names)
        finally:
            torch.set_num_threads(threads)

    # -- the fact index --------------------------------------------------------------------
    def _index(self, ds: Dataset, preds: list[str]) -> None:
        import torch  # noqa: PLC0415
        self.pid = {p: i for i, p in enumerate(preds)}
        self.pair: dict = {}
        inc = []
        self.out: dict = {}
        self.inn: dict = {}
        for p in preds:
            for a, b in sorted(ds.facts[p]):
                j = self.pair.get((a, b))
                if j is None:
                    j = self.pair[(a, b)] = len(inc)
                    inc.append([0.0] * len(preds))
                    self.out.setdefault(a, set()).add(b)
                    self.inn.setdefault(b, set()).add(a)
                inc[j][self.pid[p]] = 1.0
        self.inc = torch.tensor(inc)
        self.consts = sorted({c for p in preds for f in ds.facts[p] for c in f})
        self.known = {(p, a, b) for p in preds for a, b in ds.facts[p]}
        self._paths: dict = {}

    def _hop(self, a: str, b: str):
        return self.pair.get((a, b), -1)

    def _neighbours(self, c: str, first: bool, arg: tuple):
        """Constants z such that the atom ``arg`` (over X/Y and Z) has a fact, c bound to
        the non-Z variable."""
        if arg[0] == "Z":
            return self.inn.get(c, set())
        return self.out.get(c, set())

    def _query_hops(self, a: str, b: str, tpl: str) -> list[tuple]:
        """Every grounding of the template's body for the query (a, b): tuples of pair
        indices, one per body atom (facts must exist for every atom)."""
        key = (a, b, tpl)
        got = self._paths.get(key)
        if got is not None:
            return got
        env = {"X": a, "Y": b}
        atoms = TEMPLATES[tpl]
        if len(atoms) == 1:
            (u, v), = atoms
            j = self._hop(env[u], env[v])
            got = [(j,)] if j >= 0 else []
        else:
            (u1, v1), (u2, v2) = atoms
            c1 = env[v1] if u1 == "Z" else env[u1]
            c2 = env[v2] if u2 == "Z" else env[u2]
            zs = self._neighbours(c1, True, (u1, v1)) & self._neighbours(c2, False, (u2, v2))
            got = []
            for z in sorted(zs):
                e = {**env, "Z": z}
                got.append((self.pair[(e[u1], e[v1])], self.pair[(e[u2], e[v2])]))
        self._paths[key] = got
        return got

    # -- training --------------------------------------------------------------------------
    def _learn(self, ds: Dataset, preds: list[str], heads: list[str], names: list[str]):
        import torch  # noqa: PLC0415
        self._index(ds, preds)
        P, d = len(preds), self.dim
        # instances: (head index, template, first body-parameter row)
        inst, nbody = [], 0
        for h in heads:
            for t in names:
                for _ in range(self.instances):
                    inst.append((self.pid[h], t, nbody))
                    nbody += len(TEMPLATES[t])
        torch.manual_seed(self.o.seed)
        emb = torch.randn(P, d) / d ** 0.5
        body = torch.randn(nbody, d) / d ** 0.5
        emb.requires_grad_(True)
        body.requires_grad_(True)
        params = [emb, body]
        m1 = [torch.zeros_like(p) for p in params]
        m2 = [torch.zeros_like(p) for p in params]
        b1, b2 = 0.9, 0.999
        pos = sorted(self.known)
        rng = random.Random(f"{self.o.seed}:ntp")
        by_tpl: dict = {}
        for k, (h, t, r0) in enumerate(inst):
            by_tpl.setdefault(t, []).append((k, h, r0))
        head_of = torch.tensor([h for h, _, _ in inst])
        for step in bar(range(1, self.epochs + 1), "ntp", "epoch", self.o.progress):
            queries, labels = [], []
            for p, a, b in pos:
                queries.append((p, a, b, True))
                labels.append(1.0)
                for n in range(self.neg):
                    for _ in range(5):
                        c = rng.choice(self.consts)
                        q = (p, c, b) if n % 2 == 0 else (p, a, c)
                        if q not in self.known:
                            break
                    else:
                        continue
                    queries.append((*q, False))
                    labels.append(0.0)
            for p_ in params:
                p_.grad = None
            scores = self._scores(queries, emb, body, inst, by_tpl, head_of)
            y = torch.tensor(labels)
            s = scores.clamp(1e-6, 1 - 1e-6)
            loss = -(y * torch.log(s) + (1 - y) * torch.log(1 - s)).mean()
            loss.backward()
            with torch.no_grad():
                for p_, a_, c_ in zip(params, m1, m2):
                    g = p_.grad
                    a_.mul_(b1).add_(g, alpha=1 - b1)
                    c_.mul_(b2).addcmul_(g, g, value=1 - b2)
                    denom = (c_ / (1 - b2 ** step)).sqrt_().add_(1e-8)
                    p_.sub_(self.lr * (a_ / (1 - b1 ** step)) / denom)
        return self._decode(preds, emb.detach(), body.detach(), inst)

    def _scores(self, queries, emb, body, inst, by_tpl, head_of):
        """Max-proof score of every query (predicate, a, b, is_training_fact)."""
        import torch  # noqa: PLC0415
        nq = len(queries)
        qp = torch.tensor([self.pid[p] for p, _, _, _ in queries])
        kbody = _kernel(body, emb)                      # body rows x P
        best = torch.zeros(nq)
        # template instances
        # the query unifies with an instance's head when it has the head's predicate
        headsim = (qp[:, None] == head_of[None, :]).to(kbody.dtype)   # nq x instances
        for tpl, members in by_tpl.items():
            natoms = len(TEMPLATES[tpl])
            ks = [k for k, _, _ in members]
            rows = [[r0 + i for _, _, r0 in members] for i in range(natoms)]
            qi, hops = [], [[] for _ in range(natoms)]
            for n, (p, a, b, _own) in enumerate(queries):
                for g in self._query_hops(a, b, tpl):
                    qi.append(n)
                    for i in range(natoms):
                        hops[i].append(g[i])
            if not qi:
                continue
            qi_t = torch.tensor(qi)
            val = None
            for i in range(natoms):
                h = torch.tensor(hops[i])
                inc = self.inc[h].clone()
                # mask the query's own fact where this atom is grounded on it
                own = torch.tensor([queries[n][3] and hops[i][m] == self._hop(
                    queries[n][1], queries[n][2]) for m, n in enumerate(qi)])
                if own.any():
                    inc[own, qp[qi_t][own]] = 0.0
                kb = kbody[rows[i]]                      # members x P
                s = (inc[:, None, :] * kb[None, :, :]).amax(dim=2)   # groundings x members
                val = s if val is None else torch.minimum(val, s)
            per_q = torch.zeros(nq, len(ks)).scatter_reduce(
                0, qi_t[:, None].expand(-1, len(ks)), val, reduce="amax", include_self=True)
            sc = torch.minimum(headsim[:, ks], per_q).amax(dim=1)
            best = torch.maximum(best, sc)
        return best

    # -- decoding --------------------------------------------------------------------------
    def _decode(self, preds, emb, body, inst) -> list[Rule]:
        kb = _kernel(body, emb)
        conf, near = kb.max(dim=1)
        rules: dict = {}
        for h, t, r0 in inst:
            atoms = TEMPLATES[t]
            c = min(float(conf[r0 + i]) for i in range(len(atoms)))
            bodyatoms = tuple((preds[int(near[r0 + i])], atoms[i]) for i in range(len(atoms)))
            head = (preds[h], ("X", "Y"))
            if bodyatoms == (head,):
                continue
            key = (head, bodyatoms)
            if c >= self.min_conf and (key not in rules or c > rules[key]):
                rules[key] = c
        out = [Rule(head, b, round(c, 4), f"ntp: unification score {c:.4g}")
               for (head, b), c in rules.items()]
        out.sort(key=lambda r: (r.head[0], -r.confidence, r.clause()))
        return out
