"""Neural-LP (Yang, Yang, Cohen 2017, "Differentiable learning of logical rules for knowledge
base reasoning", NeurIPS), in PyTorch on the CPU.

Binary predicates only. TensorLog's view of a chain rule ``q(X,Y) :- r1(X,Z), r2(Z,Y)``: with
``M_r`` the sparse entity-by-entity matrix of relation r (``M_r[a,b] = 1`` iff r(a,b)), the
entities reached from x are ``x · M_r1 · M_r2``. Neural-LP learns, per query relation q and
per step t = 1..T (T = the maximal rule length), an attention a_t over the operators
{M_r, M_r^T (the inverse relation), I (identity)}; the model's answer for q(x, ?) is
``u_T`` with ``u_0 = x`` (one-hot) and ``u_t = Σ_k a_t[k] · u_{t-1} · M_k``, each ``u_t``
normalised to sum 1 (the reference's default). Training maximises ``log u_T[y]`` over the
examples q(x,y) with Adam; the identity operator lets the same T steps express every rule
length 1..T.

* **Examples and graph** (the reference splits its data into facts and queries): the facts
  of q are split at random (``example_share``, default 0.5, with the seed) into examples and
  facts kept in ``M_q``; an example is never in the graph it is answered on, so
  ``q(X,Y) :- q(X,Y)`` is not learnable.
* **Attention**: the reference computes a_t by an RNN over the query's embedding; with one
  model per query relation that RNN's output is a free vector per step, so a_t =
  softmax(θ_q,t) with θ learned directly (no memory attention over earlier steps, whose job,
  rules shorter than T, the identity operator does, as in DRUM and the reference's
  extraction).
* **Rule extraction**: every operator sequence k_1..k_T has weight Π_t a_t[k_t]; identity
  steps are dropped, equal rules summed; confidences are divided by the largest (the
  reference's normalisation); rules with confidence >= ``min_conf`` (0.05), at most
  ``max_rules`` (10) per query relation, are written.
* Deterministic: ``torch.manual_seed(seed)``, full-batch training, one thread for the sparse
  products.
"""
from __future__ import annotations

import itertools
import random

from . import Dataset, Learner, bar, Rule


class NeuralLP(Learner):
    OPTIONS = {"epochs": "training epochs per query relation (default 300)",
               "lr": "Adam learning rate (default 0.05)",
               "example_share": "share of a query relation's facts used as examples (0.5)",
               "min_conf": "minimal normalised rule confidence (default 0.05)",
               "max_rules": "rules per query relation (default 10)",
               "steps": "T, operator steps (default: the maximal rule length)",
               "dense_limit": "largest stacked operator matrix (entries) multiplied dense"}

    def learn(self, ds: Dataset) -> list:
        import torch  # noqa: PLC0415
        self.epochs = self.opt("epochs", 300, int)
        self.lr = self.opt("lr", 0.05, float)
        self.share = self.opt("example_share", 0.5, float)
        self.min_conf = self.opt("min_conf", 0.05, float)
        self.max_rules = self.opt("max_rules", 10, int)
        self.T = self.opt("steps", self.max_body(ds), int)
        self.dense_limit = self.opt("dense_limit", 4_000_000, int)
        rels = sorted(p for p in ds.facts if ds.arity[p] == 2)
        ents = sorted({c for r in rels for f in ds.facts[r] for c in f})
        self.ent = {e: i for i, e in enumerate(ents)}
        self.rels, self.n = rels, len(ents)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            out = []
            queries = [q for q in self.targets(ds) if q in rels]
            for q in bar(queries, "neural-lp", "relation", self.o.progress):
                out += self.learn_query(ds, q)
            return out
        finally:
            torch.set_num_threads(threads)

    def stacked(self, blocks: list):
        """One sparse matrix of the operators' transposes stacked: block k holds M_k^T
        (rows k*n .. k*n+n-1), so that one product gives every ``u · M_k``."""
        import torch  # noqa: PLC0415
        rows, cols = [], []
        for k, (pairs, inverse) in enumerate(blocks):
            for a, b in sorted(pairs):
                i, j = self.ent[a], self.ent[b]
                # (u · M)[j] = Σ_i u[i] M[i, j]: row j of M^T; the inverse swaps i and j
                rows.append(k * self.n + (i if inverse else j))
                cols.append(j if inverse else i)
        idx = torch.tensor([rows, cols], dtype=torch.long).reshape(2, len(rows))
        return torch.sparse_coo_tensor(idx, torch.ones(len(rows)), (len(blocks) * self.n, self.n),
                                       check_invariants=True).coalesce()

    def learn_query(self, ds: Dataset, q: str) -> list[Rule]:
        import torch  # noqa: PLC0415
        facts = sorted(ds.facts[q])
        rng = random.Random(f"{self.o.seed}:neural-lp:{q}")
        rng.shuffle(facts)
        k = max(1, round(self.share * len(facts)))
        examples, kept = facts[:k], set(facts[k:])
        # operators: (relation, forward) and (relation, inverse) for every relation, then I
        ops, blocks = [], []
        for r in self.rels:
            pairs = kept if r == q else ds.facts[r]
            ops += [(r, False), (r, True)]
            blocks += [(pairs, False), (pairs, True)]
        ops.append(None)
        big = self.stacked(blocks)
        K = len(blocks)
        if K * self.n * self.n <= self.dense_limit:
            big = big.to_dense()           # small graphs: a dense product is faster
        mm = torch.mm if big.layout == torch.strided else torch.sparse.mm
        torch.manual_seed(self.o.seed)
        theta = torch.zeros(self.T, len(ops), requires_grad=True)
        with torch.no_grad():
            theta.normal_(0.0, 0.01)
        # Adam (Kingma and Ba 2015) written out: torch.optim's first use imports the
        # compiler stack, seconds for one small parameter
        m1, m2, b1, b2 = torch.zeros_like(theta), torch.zeros_like(theta), 0.9, 0.999
        xs = torch.tensor([self.ent[x] for x, _ in examples])
        ys = torch.tensor([self.ent[y] for _, y in examples])
        u0 = torch.zeros(self.n, len(examples))
        u0[xs, torch.arange(len(examples))] = 1.0
        for step in range(1, self.epochs + 1):
            theta.grad = None
            a = torch.softmax(theta, dim=1)
            u = u0
            for t in range(self.T):
                moved = mm(big, u).reshape(K, self.n, -1)
                nxt = a[t, -1] * u + torch.einsum("k,knb->nb", a[t, :K], moved)
                u = nxt / nxt.sum(dim=0, keepdim=True).clamp_min(1e-20)
            p = u[ys, torch.arange(len(examples))]
            loss = -torch.log(p.clamp_min(1e-20)).mean()
            loss.backward()
            with torch.no_grad():
                g = theta.grad
                m1.mul_(b1).add_(g, alpha=1 - b1)
                m2.mul_(b2).addcmul_(g, g, value=1 - b2)
                denom = (m2 / (1 - b2 ** step)).sqrt_().add_(1e-8)
                theta.sub_(self.lr * (m1 / (1 - b1 ** step)) / denom)
        a = torch.softmax(theta.detach(), dim=1).tolist()
        return self.extract(q, ops, a)

    def extract(self, q: str, ops: list, a: list) -> list[Rule]:
        weights: dict = {}
        for seq in itertools.product(range(len(ops)), repeat=self.T):
            w = 1.0
            for t, k in enumerate(seq):
                w *= a[t][k]
            path = tuple(ops[k] for k in seq if ops[k] is not None)
            if path:
                weights[path] = weights.get(path, 0.0) + w
        if not weights:
            return []
        top = max(weights.values())
        ranked = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))
        out = []
        for path, w in ranked[: self.max_rules]:
            conf = w / top
            if conf < self.min_conf:
                break
            vs = ["X"] + [f"Z{i}" for i in range(1, len(path))] + ["Y"]
            body = tuple((r, (vs[i + 1], vs[i]) if inv else (vs[i], vs[i + 1]))
                         for i, (r, inv) in enumerate(path))
            if body == ((q, ("X", "Y")),):
                continue
            out.append(Rule((q, ("X", "Y")), body, round(conf, 4),
                            f"neural-lp: path weight {w:.4g}"))
        return out
