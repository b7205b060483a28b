"""AMIE+-style rule mining (Galárraga, Teflioudi, Hose, Suchanek 2015, "Fast rule mining in
ontological knowledge bases with AMIE+", VLDB Journal 24).

Binary predicates only (others are left out). Rules are mined breadth first from the heads
``r(X,Y)`` by AMIE's refinement operators, **adding a dangling atom** (one variable of the
rule, one new variable) and **adding a closing atom** (two variables of the rule), up to
``max_length`` atoms, head included (default 3, the paper's; at most the dataset's maximal
rule length + 1). Instantiated atoms (constants) are not added: RuDaS-v0 rules have none.

* **Support** of ``B ⇒ r(x,y)``: the distinct pairs (x,y) with r(x,y) in the training facts
  for which B holds; **head coverage** = support / |r|.
* **Pruning** (AMIE+'s ``-pm``, ``prune_metric``): a rule, and with it every refinement
  (support only decreases), is dropped when its *pruning metric* is below its threshold:
  under ``headcoverage`` (the default, as AMIE+'s) the head coverage below ``min_hc`` (AMIE+'s
  ``-minhc``, 0.01); under ``support`` the support below ``min_support`` (``-mins``, default
  1). As in AMIE+, ``min_support`` prunes nothing under ``headcoverage`` and ``min_hc``
  nothing under ``support``: the RuDaS paper's command ``-mins 3 -minis 3 -minpca 0.25``
  (Cornelio and Thost, appendix), which gives no ``-pm``, pruned by head coverage 0.01, and
  the ``rudas-v0`` learner profile (:data:`..LEARNER_PROFILES`, the default of ``rudas
  learn`` and of ``rudas experiment``), which sets those three values, does the same. Under
  ``support`` a ``min_initial_support`` left unset is ``min_support`` (AMIE+'s ``-pm
  support`` without ``-minis``). (AMIE's code changed in mid-2020, after the RuDaS paper:
  since then ``-mins`` without ``-minhc`` switches to support pruning.) The last atom of a
  rule of maximal length is only a closing one (AMIE+'s pruning).
* **Minimum initial support** (``-minis``): a head relation with fewer than
  ``min_initial_support`` facts (default 1) is not mined, whatever the pruning metric.
* AMIE's own constants are ``-mins 100 -minis 100 -minhc 0.01 -minpca 0.1``; the defaults
  here keep 0.01 and 0.1 but use 1 and 1 for the two supports, since a RuDaS dataset has
  few facts per relation (AMIE's ``-minis 100`` would leave most relations unmined).
* Output: **closed** rules (every variable occurs twice or more) with a connected body and
  **PCA confidence** ≥ ``min_pca`` (AMIE+'s ``-minpca``; default 0.1, AMIE+'s; ``min_conf``
  is an older name of the same option). Partial completeness is assumed on the head
  relation's *more functional* argument, as AMIE does (the PCA is stated for relations with
  fun(r) ≥ ifun(r), an inverse-functional relation being read as its inverse; AMIE's code
  picks the head's counting variable that way): with fun(r) = #distinct subjects / |r| and
  ifun(r) = #distinct objects / |r| on the training facts, r is *functional* when fun(r) ≥
  ifun(r). Then PCA = support / #{(x,y) : B(x,y) and ∃y' r(x,y')} (a subject with some
  r-fact has all of them), else support / #{(x,y) : B(x,y) and ∃x' r(x',y)} (an object with
  some r-fact has all of them); the rule's comment says which. ``count_on=subject`` always
  counts on the subject (AMIE's ``-caos``). The standard confidence (support / #{(x,y) :
  B(x,y)}) is reported in the rule's comment. The written confidence is the PCA confidence.
  A rule is output only when its PCA confidence is higher than that of each of its closed
  parents (AMIE+'s skyline; ``skyline=0`` turns it off).
* No body atom equals the head atom, and no atom occurs twice.
"""
from __future__ import annotations

from ...errors import NesyError
from . import Dataset, Learner, bar, Rule


class Amie(Learner):
    OPTIONS = {"min_hc": "minimal head coverage, AMIE+'s -minhc (default 0.01); prunes under "
                         "prune_metric=headcoverage",
               "min_support": "minimal support, AMIE+'s -mins (default 1); prunes under "
                              "prune_metric=support only",
               "prune_metric": "headcoverage (default) or support, AMIE+'s -pm",
               "count_on": "functional (default: the head's more functional argument, "
                           "AMIE's) or subject (always, AMIE's -caos): the PCA confidence's "
                           "completeness assumption",
               "min_initial_support": "minimal facts of a head relation, AMIE+'s -minis "
                                      "(default 1; min_support under prune_metric=support)",
               "min_pca": "minimal PCA confidence, AMIE+'s -minpca (default 0.1)",
               "min_conf": "older name of min_pca",
               "max_length": "atoms per rule, head included (default 3)",
               "skyline": "1: output a rule only if it beats its closed parents (default 1)"}

    def learn(self, ds: Dataset) -> list:
        self.min_hc = self.opt("min_hc", 0.01, float)
        if "min_conf" in self.o.options and "min_pca" in self.o.options:
            raise NesyError("give min_pca or min_conf (the same threshold), not both",
                            field="option")
        self.min_conf = self.opt("min_pca", self.opt("min_conf", 0.1, float), float)
        self.min_support = self.opt("min_support", 1, int)
        self.prune_metric = self.opt("prune_metric", "headcoverage", str)
        self.count_on = self.opt("count_on", "functional", str)
        for name, v, known in (("prune_metric", self.prune_metric, ("headcoverage", "support")),
                               ("count_on", self.count_on, ("functional", "subject"))):
            if v not in known:
                raise NesyError(f"option {name} must be {' or '.join(known)}, got {v!r}",
                                field="option")
        default_initial = self.min_support if self.prune_metric == "support" else 1
        self.min_initial = self.opt("min_initial_support", default_initial, int)
        for name, v in (("min_support", self.min_support),
                        ("min_initial_support", self.min_initial)):
            if v < 0:
                raise NesyError(f"option {name} must be >= 0, got {v}", field="option")
        for name, v in (("min_hc", self.min_hc), ("min_pca", self.min_conf)):
            if not 0 <= v <= 1:
                raise NesyError(f"option {name} must be in [0, 1], got {v}", field="option")
        self.max_len = min(self.opt("max_length", 3, int), self.max_body(ds) + 1)
        self.skyline = bool(self.opt("skyline", 1, int))
        self.rels = sorted(p for p in ds.facts if ds.arity[p] == 2)
        self.facts = {r: ds.facts[r] for r in self.rels}
        self.by_s = {r: {} for r in self.rels}
        self.by_o = {r: {} for r in self.rels}
        for r in self.rels:
            for s, o in self.facts[r]:
                self.by_s[r].setdefault(s, set()).add(o)
                self.by_o[r].setdefault(o, set()).add(s)
        out = []
        heads = [t for t in self.targets(ds)
                 if t in self.facts and len(self.facts[t]) >= self.min_initial]
        for r in bar(heads, "amie", "head", self.o.progress):
            out += self.mine(r)
        return out

    # -- evaluation ------------------------------------------------------------------

    def solutions(self, body: tuple, env: dict):
        """Every extension of ``env`` (variable -> constant) that makes ``body`` true."""
        if not body:
            yield env
            return
        # the most bound atom first
        best = min(range(len(body)), key=lambda i: -sum(v in env for v in body[i][1:]))
        rel, a, b = body[best]
        rest = body[:best] + body[best + 1:]
        if a in env and b in env:
            if (env[a], env[b]) in self.facts[rel]:
                yield from self.solutions(rest, env)
        elif a in env:
            for o in self.by_s[rel].get(env[a], ()):
                if a == b:
                    continue
                yield from self.solutions(rest, {**env, b: o})
        elif b in env:
            for s in self.by_o[rel].get(env[b], ()):
                yield from self.solutions(rest, {**env, a: s})
        else:
            for s, o in self.facts[rel]:
                if a == b and s != o:
                    continue
                yield from self.solutions(rest, {**env, a: s, b: o})

    def support(self, head: str, body: tuple) -> int:
        return sum(1 for x, y in self.facts[head]
                   if next(self.solutions(body, {"X": x, "Y": y}), None) is not None)

    def body_pairs(self, body: tuple) -> set:
        return {(e["X"], e["Y"]) for e in self.solutions(body, {})}

    def counts_on_subject(self, head: str) -> bool:
        """Whether the PCA confidence of rules for ``head`` assumes completeness per subject:
        ``head`` is functional, fun(r) = #subjects / |r| ≥ ifun(r) = #objects / |r| on the
        training facts (AMIE's counting variable), or ``count_on=subject``."""
        if self.count_on == "subject":
            return True
        return len(self.by_s[head]) >= len(self.by_o[head])

    def pruned(self, support: int, n_head: int) -> bool:
        """AMIE+'s pruning of a rule and its refinements by the pruning metric (``-pm``)."""
        if self.prune_metric == "support":
            return support < self.min_support
        return support / n_head < self.min_hc

    # -- refinement ------------------------------------------------------------------

    @staticmethod
    def variables(body: tuple) -> list:
        vs = ["X", "Y"]
        for _, a, b in body:
            vs += [v for v in (a, b) if v not in vs]
        return vs

    @staticmethod
    def closed(body: tuple) -> bool:
        count: dict = {"X": 1, "Y": 1}
        for _, a, b in body:
            count[a] = count.get(a, 0) + 1
            count[b] = count.get(b, 0) + 1
        return all(c >= 2 for c in count.values())

    @staticmethod
    def canonical(body: tuple) -> tuple:
        """The body with fresh variables renamed in order of first use, atoms sorted: two
        rules equal up to renaming and atom order get one key (bodies of <= 3 atoms)."""
        import itertools  # noqa: PLC0415
        best = None
        for perm in itertools.permutations(body):
            names: dict = {"X": "X", "Y": "Y"}
            ren = []
            for rel, a, b in perm:
                for v in (a, b):
                    if v not in names:
                        names[v] = f"V{len(names)}"
                ren.append((rel, names[a], names[b]))
            key = tuple(sorted(ren))
            if best is None or key < best:
                best = key
        return best

    def refinements(self, head: str, body: tuple, last: bool):
        vs = self.variables(body)
        fresh = f"V{len(vs)}"
        for rel in self.rels:
            pairs = [(a, b) for a in vs for b in vs if a != b]
            if not last:
                pairs += [(a, fresh) for a in vs] + [(fresh, b) for b in vs]
            for a, b in pairs:
                atom = (rel, a, b)
                if (rel == head and (a, b) == ("X", "Y")) or atom in body:
                    continue
                yield body + (atom,)

    def mine(self, head: str) -> list[Rule]:
        n_head = len(self.facts[head])
        if not n_head:
            return []
        queue, seen, out = [()], {()}, []
        conf_of: dict = {}          # canonical closed body -> PCA confidence
        on_subject = self.counts_on_subject(head)
        known = self.by_s[head] if on_subject else self.by_o[head]   # the complete argument
        while queue:
            nxt = []
            for body in queue:
                n_atoms = len(body) + 1
                if n_atoms >= self.max_len:
                    continue
                last = n_atoms + 1 == self.max_len
                for ref in self.refinements(head, body, last):
                    key = self.canonical(ref)
                    if key in seen:
                        continue
                    seen.add(key)
                    supp = self.support(head, ref)
                    if self.pruned(supp, n_head):
                        continue
                    nxt.append(ref)
                    if self.closed(ref):
                        pairs = self.body_pairs(ref)
                        std = supp / len(pairs) if pairs else 0.0
                        pca_den = sum(1 for x, y in pairs if (x if on_subject else y) in known)
                        pca = supp / pca_den if pca_den else 0.0
                        conf_of[key] = pca
                        parents = [conf_of[self.canonical(ref[:i] + ref[i + 1:])]
                                   for i in range(len(ref))
                                   if len(ref) > 1 and self.canonical(ref[:i] + ref[i + 1:]) in conf_of]
                        if pca < self.min_conf:
                            continue
                        if self.skyline and parents and pca <= max(parents):
                            continue
                        out.append(Rule((head, ("X", "Y")), tuple((r, (a, b)) for r, a, b in ref),
                                        round(pca, 4),
                                        f"amie: support {supp}, head coverage "
                                        f"{supp / n_head:.4f}, std confidence {std:.4f}, "
                                        f"PCA confidence {pca:.4f} (counted on the "
                                        f"{'subject' if on_subject else 'object'})"))
            queue = nxt
        return out
