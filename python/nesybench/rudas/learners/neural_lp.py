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

* **Examples and graph** (``fact_split``): an example is never in the graph it is answered
  on, so ``q(X,Y) :- q(X,Y)`` is not learnable.

  - ``batch`` (default, the reference implementation's shared-database mode): every fact of
    q is an example; the examples are shuffled with the seed and cut into mini-batches of
    ``batch_size`` (64, the reference's default), and a batch is answered on the graph of
    every training fact except the batch itself (q's other facts included). One Adam step
    per batch.
  - ``share``: the facts of q are split once at random (``example_share``, default 0.5, with
    the seed) into examples and facts kept in ``M_q``; one full-batch Adam step per epoch.
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

from ...errors import NesyError
from . import Dataset, Learner, bar, Rule


class NeuralLP(Learner):
    OPTIONS = {"epochs": "training epochs per query relation (default 300)",
               "lr": "Adam learning rate (default 0.05)",
               "fact_split": "batch (the reference's: a batch's graph is every other fact) or "
                             "share (a fixed split by example_share); default batch",
               "batch_size": "examples per batch with fact_split=batch (default 64)",
               "example_share": "share of a query relation's facts used as examples with "
                                "fact_split=share (0.5)",
               "min_conf": "minimal normalised rule confidence (default 0.05)",
               "max_rules": "rules per query relation (default 10)",
               "steps": "T, operator steps (default: the maximal rule length)",
               "dense_limit": "largest stacked operator matrix (entries) multiplied dense"}

    def learn(self, ds: Dataset) -> list:
        import torch  # noqa: PLC0415
        self.epochs = self.opt("epochs", 300, int)
        self.lr = self.opt("lr", 0.05, float)
        self.split = self.opt("fact_split", "batch", str)
        if self.split not in ("batch", "share"):
            raise NesyError(f"option fact_split must be batch or share, got {self.split!r}",
                            field="option")
        self.share = self.opt("example_share", 0.5, float)
        self.batch_size = self.opt("batch_size", 64, int)
        if self.split == "batch" and "example_share" in self.o.options:
            raise NesyError("option example_share applies to fact_split=share only",
                            field="option")
        if self.split == "share" and "batch_size" in self.o.options:
            raise NesyError("option batch_size applies to fact_split=batch only",
                            field="option")
        if self.batch_size < 1 or not 0 < self.share <= 1:
            raise NesyError("option batch_size must be >= 1 and example_share in (0, 1]",
                            field="option")
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
        if self.split == "share":
            k = max(1, round(self.share * len(facts)))
            batches = [(facts[:k], set(facts[k:]))]
        else:
            every = set(facts)
            batches = [(facts[i:i + self.batch_size],
                        every - set(facts[i:i + self.batch_size]))
                       for i in range(0, len(facts), self.batch_size)]
        # operators: (relation, forward) and (relation, inverse) for every relation, then I
        ops = [op for r in self.rels for op in ((r, False), (r, True))] + [None]
        K = len(ops) - 1
        prepared = []
        for examples, kept in batches:
            blocks = []
            for r in self.rels:
                pairs = kept if r == q else ds.facts[r]
                blocks += [(pairs, False), (pairs, True)]
            big = self.stacked(blocks)
            if K * self.n * self.n <= self.dense_limit:
                big = big.to_dense()           # small graphs: a dense product is faster
            xs = torch.tensor([self.ent[x] for x, _ in examples])
            ys = torch.tensor([self.ent[y] for _, y in examples])
            u0 = torch.zeros(self.n, len(examples))
            u0[xs, torch.arange(len(examples))] = 1.0
            prepared.append((big, u0, ys))
        torch.manual_seed(self.o.seed)
        theta = torch.zeros(self.T, len(ops), requires_grad=True)
        with torch.no_grad():
            theta.normal_(0.0, 0.01)
        # Adam (Kingma and Ba 2015) written out: torch.optim's first use imports the
        # compiler stack, seconds for one small parameter
        m1, m2, b1, b2 = torch.zeros_like(theta), torch.zeros_like(theta), 0.9, 0.999
        step = 0
        for _ in range(self.epochs):
            for big, u0, ys in prepared:
                step += 1
                mm = torch.mm if big.layout == torch.strided else torch.sparse.mm
                theta.grad = None
                a = torch.softmax(theta, dim=1)
                u = u0
                for t in range(self.T):
                    moved = mm(big, u).reshape(K, self.n, -1)
                    nxt = a[t, -1] * u + torch.einsum("k,knb->nb", a[t, :K], moved)
                    u = nxt / nxt.sum(dim=0, keepdim=True).clamp_min(1e-20)
                p = u[ys, torch.arange(len(ys))]
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
