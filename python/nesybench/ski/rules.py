"""Prolog rules → knowledge trees → fuzzy truths and threshold-unit graphs.

:func:`load_knowledge` loads a rule file sandboxed (``nesybench.logic.prolog.load_rules_file``
with the vocabulary module ``ski_vocab`` of ``prolog/ski/vocab.pl``) and asks
``prolog/ski/compile.pl`` for one tree per clause (and/or/not/cmp/var/mofn/ref/true, see
that file). Python only evaluates the trees:

* :meth:`Knowledge.truths` — fuzzy truth of every class rule on inputs ``X [..., D]``:
  and = min, or = max, not = 1 − t, m-of-n = clamp(Σt − m + 1, 0, 1), and comparisons as
  ramps of width δ (``gt``: clamp((x − c)/δ, 0, 1), ``ge``: clamp((x − c)/δ + 1, 0, 1),
  ``lt``/``le`` mirrored). δ = 1 by default: every feature of the three data sets is
  integer-valued, where these ramps are exactly the crisp comparisons, and they are
  continuous in between (noisy values). ``>`` rises with x and ``<`` falls with it (PSyKI's
  Łukasiewicz fuzzifier treats ``>`` like ``<``).
* :func:`unit_graph` — Towell's KBANN translation into sigmoid threshold units (used by
  KBANN and by KINS's default modules).
* :func:`psyki_graph` — the sigmoid units of PSyKI's KBANN (its Towell fuzzifier), unit for
  unit (KBANN's ``construction="psyki"``).
* :func:`clipped_net` — the construction of PSyKI's structuring fuzzifier ("netbuilder"):
  clipped linear literals, and = min, or = max, fixed weights (KINS's ``modules="psyki"``).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import KB_DIR
from ..errors import NesyError
from ..logic import prolog

#: default rule file of each data set
KB_FILES = {"bcw": KB_DIR / "ski" / "bcw.pl", "splice": KB_DIR / "ski" / "splice.pl",
            "census": KB_DIR / "ski" / "census.pl"}


@dataclass
class Knowledge:
    """Compiled rules: ``concepts[name]`` is the list of clause trees of that concept, in
    ``order`` (every concept after the ones it refers to). Class concepts are ``class:L``."""

    source: str
    features: list[str]
    classes: list[str]
    concepts: dict[str, list[dict]]
    order: list[str] = field(default_factory=list)
    #: KBANN unit graphs of these rules, one per (ω, δ, m-of-n) (:meth:`unit_graph`), and
    #: their clipped networks, one per δ (:meth:`clipped_net`)
    _graphs: dict = field(default_factory=dict, repr=False, compare=False)

    def unit_graph(self, omega: float = 6.0, delta: float = 1.0,
                   mofn: str = "towell") -> "UnitGraph":
        """:func:`unit_graph` of these rules, built once per (ω, δ, m-of-n) and shared by
        every predictor that uses them (KBANN's network, KINS's modules)."""
        key = (float(omega), float(delta), mofn)
        if key not in self._graphs:
            self._graphs[key] = unit_graph(self, omega=key[0], delta=key[1], mofn=key[2])
        return self._graphs[key]

    def psyki_graph(self, omega: float = 4.0) -> "UnitGraph":
        """:func:`psyki_graph` of these rules, built once per ω and shared."""
        key = ("psyki", float(omega))
        if key not in self._graphs:
            self._graphs[key] = psyki_graph(self, omega=key[1])
        return self._graphs[key]

    def clipped_net(self, delta: float = 1.0) -> "ClippedNet":
        """:func:`clipped_net` of these rules, built once per δ and shared."""
        key = ("clipped", float(delta))
        if key not in self._graphs:
            self._graphs[key] = clipped_net(self, delta=key[1])
        return self._graphs[key]

    def class_concept(self, k: int) -> str | None:
        name = f"class:{self.classes[k]}"
        return name if name in self.concepts else None

    def truths(self, X, delta: float = 1.0):
        """Fuzzy truth of each class's rules, a tensor ``[..., K]`` (0 where a class has
        no rule). ``X``: float tensor ``[..., D]`` in the data set's feature order."""
        import torch  # noqa: PLC0415

        col = {f: j for j, f in enumerate(self.features)}
        memo: dict[str, object] = {}

        def ev(t):
            op = t["op"]
            if op == "true":
                return torch.ones_like(X[..., 0])
            if op == "var":
                return X[..., col[t["feature"]]].clamp(0.0, 1.0)
            if op == "cmp":
                x, c, rel = X[..., col[t["feature"]]], float(t["value"]), t["rel"]
                if rel == ">":
                    v = (x - c) / delta
                elif rel == ">=":
                    v = (x - c) / delta + 1.0
                elif rel == "<":
                    v = (c - x) / delta
                else:
                    v = (c - x) / delta + 1.0
                return v.clamp(0.0, 1.0)
            if op == "not":
                return 1.0 - ev(t["args"][0])
            if op == "ref":
                return concept(t["concept"])
            vals = torch.stack([ev(a) for a in t["args"]], dim=-1)
            if op == "and":
                return vals.amin(-1)
            if op == "or":
                return vals.amax(-1)
            if op == "mofn":
                return (vals.sum(-1) - t["m"] + 1.0).clamp(0.0, 1.0)
            raise NesyError(f"unknown node {op!r} in compiled rules")

        def concept(name):
            if name not in memo:
                memo[name] = torch.stack([ev(c) for c in self.concepts[name]], -1).amax(-1)
            return memo[name]

        out = []
        for k in range(len(self.classes)):
            name = self.class_concept(k)
            out.append(concept(name) if name else torch.zeros_like(X[..., 0]))
        return torch.stack(out, dim=-1)


def load_knowledge(path: str | Path, features: list[str], classes: list[str]) -> Knowledge:
    """Load, sandbox-check and compile the rule file ``path`` against a data set's features
    and classes. Raises :class:`NesyError` (syntax error with its line, unsafe call, unknown
    feature or class, recursive concepts)."""
    path = Path(path)
    if not path.is_file():
        raise NesyError("rule file not found", file=str(path))
    prolog.use("prolog/ski/vocab.pl")
    prolog.use("prolog/ski/compile.pl")
    from ..folder import read_input_text  # noqa: PLC0415
    text = read_input_text(path)                # a regular file, bounded
    module = "ski_kb_" + hashlib.sha256(
        (str(path.resolve()) + text).encode()).hexdigest()[:12]
    prolog.load_rules_file(module, path, ["ski_vocab"])
    try:
        res = prolog.once("ski_compile:compile_rules(M, F, C, Kind, Msg, Concepts)",
                          M=module, F=list(features), C=list(classes))
    finally:
        prolog.once("safe_load:unload_rules(M)", M=module)
    if res is None:
        raise NesyError("could not compile the rules", file=str(path))
    if res["Kind"] != "ok":
        raise NesyError(str(res["Msg"]), file=str(path))
    concepts = {c["name"]: list(c["clauses"]) for c in res["Concepts"]}
    if not any(n.startswith("class:") for n in concepts):
        raise NesyError("the rules conclude no class(X, Label)", file=str(path))
    return Knowledge(str(path), list(features), list(classes), concepts,
                     _topo_order(concepts, str(path)))


def _refs(tree) -> set[str]:
    if tree["op"] == "ref":
        return {tree["concept"]}
    out = set()
    for a in tree.get("args", []):
        out |= _refs(a)
    return out


def _topo_order(concepts, source) -> list[str]:
    order, state = [], {}

    def visit(n, stack):
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            raise NesyError("recursive concepts cannot become a network: "
                            + " -> ".join(stack + [n]), file=source)
        if n not in concepts:
            raise NesyError(f"concept {n} is used but no rule defines it", file=source)
        state[n] = 1
        for c in concepts[n]:
            for r in sorted(_refs(c)):
                visit(r, stack + [n])
        state[n] = 2
        order.append(n)

    for n in sorted(concepts):
        visit(n, [])
    return order


# -- Towell's translation ------------------------------------------------------------------

@dataclass
class Unit:
    """A sigmoid unit σ(Σ w·input + bias); inputs are ``("x", column)`` or ``("u", unit)``."""

    inputs: list[tuple[tuple[str, int], float]]
    bias: float
    depth: int


@dataclass
class UnitGraph:
    units: list[Unit]
    class_units: dict[int, int]            # class index -> unit index
    n_features: int

    @property
    def depth(self) -> int:
        return max((u.depth for u in self.units), default=0)


def unit_graph(kn: Knowledge, omega: float = 6.0, delta: float = 1.0,
               mofn: str = "towell") -> UnitGraph:
    """KBANN's rules-to-network translation (Towell & Shavlik).

    A conjunction of P positive and N negated antecedents: weights +ω / −ω, bias
    −(P − ½)ω. A disjunction (several clauses, or ``;``): weight ω per antecedent, bias
    −ω/2. m-of-n: weight ω per antecedent, bias −(m − ½)ω (Towell); ``mofn="psyki"`` uses
    PSyKI's −(m − ½·ω) instead, which is not a threshold at m for ω ≠ 1. A negated
    antecedent in a disjunction or m-of-n counts as its complement (weight −ω, bias +ω).
    Comparisons are one-input units σ(±ω(x − θ)/δ) with θ = c ± δ/2 (crisp on integer
    data). A Boolean feature is an input, not a unit. Identical sub-formulas share a unit.

    ω = 6 by default rather than Towell's 4: with ω = 4 a unit fed by other units (≈0.88
    for true) can miss its threshold (6 of 10 pyrimidine units give 6·0.88·4 < 5.5·4), so
    the initial network would not compute the splice theory.
    """
    col = {f: j for j, f in enumerate(kn.features)}
    units: list[Unit] = []
    memo: dict[str, tuple] = {}
    concept_src: dict[str, tuple] = {}

    def add(inputs, bias):
        depth = 1 + max((units[s[1]].depth if s[0] == "u" else 0) for s, _ in inputs) \
            if inputs else 1
        units.append(Unit(inputs, bias, depth))
        return ("u", len(units) - 1)

    def literal(t):
        """(source, positive?) of a node: inputs and units, negation folded in."""
        if t["op"] == "not":
            src, pos = literal(t["args"][0])
            return src, not pos
        return node(t), True

    def threshold_unit(args, theta):
        lits = [literal(a) for a in args]
        inputs = [(s, omega if pos else -omega) for s, pos in lits]
        n_neg = sum(1 for _, pos in lits if not pos)
        return add(inputs, omega * n_neg - theta * omega)

    def node(t):
        if t["op"] == "__src__":                # an already built clause unit
            return t["src"]
        key = json.dumps(t, sort_keys=True)
        if key in memo:
            return memo[key]
        op = t["op"]
        if op == "var":
            src = ("x", col[t["feature"]])
        elif op == "ref":
            src = concept(t["concept"])
        elif op == "cmp":
            c, rel = float(t["value"]), t["rel"]
            sign = 1.0 if rel in (">", ">=") else -1.0
            theta = c + delta / 2 if rel in (">", "=<") else c - delta / 2
            w = sign * omega / delta
            src = add([(("x", col[t["feature"]]), w)], -w * theta)
        elif op == "true":
            src = threshold_unit([], -0.5)
        elif op == "not":
            src = threshold_unit([t], 0.5)          # a unit computing the complement
        elif op == "and":
            src = threshold_unit(t["args"], len(t["args"]) - 0.5)
        elif op == "or":
            src = threshold_unit(t["args"], 0.5)
        elif op == "mofn":
            m = float(t["m"])
            if mofn == "psyki":
                lits = [literal(a) for a in t["args"]]
                inputs = [(s, omega if pos else -omega) for s, pos in lits]
                src = add(inputs, -(m - 0.5 * omega))
            else:
                src = threshold_unit(t["args"], m - 0.5)
        else:
            raise NesyError(f"unknown node {op!r} in compiled rules")
        memo[key] = src
        return src

    def concept(name):
        if name not in concept_src:
            clauses = kn.concepts[name]
            if len(clauses) == 1:
                concept_src[name] = node(clauses[0])
            else:
                concept_src[name] = threshold_unit(
                    [{"op": "__src__", "src": node(c)} for c in clauses], 0.5)
        return concept_src[name]

    class_units = {}
    for k in range(len(kn.classes)):
        name = kn.class_concept(k)
        if name:
            src = concept(name)
            if src[0] == "x":                   # a class that is one Boolean feature
                src = add([(src, omega)], -omega / 2)
            class_units[k] = src[1]
    return UnitGraph(units, class_units, len(kn.features))


# -- PSyKI's KBANN (Towell fuzzifier) ------------------------------------------------------

@dataclass
class Edge:
    """One rule connection of a :func:`psyki_graph` unit: its source (``("x", column)`` or
    ``("u", unit)``) and initial weight (±ω)."""

    src: tuple
    weight: float


def psyki_graph(kn: Knowledge, omega: float = 4.0) -> UnitGraph:
    """The network PSyKI's KBANN injector builds from the rules (its Towell fuzzifier), one
    sigmoid unit σ(Σ w·input − θ) per unit PSyKI builds, written from its behaviour:

    * a conjunction of P positive and N negated antecedents: weights +ω / −ω, θ = (P − ½)ω
      (Towell's); nested conjunctions are one unit (PSyKI flattens ``(a, (b, c))``), and so
      are nested disjunctions;
    * a disjunction: weights ±ω, θ = ω/2 whatever the signs;
    * m-of-n: weights ±ω, θ = m − ω/2 (PSyKI's bias; not a threshold at m for ω ≠ 1);
    * a concept with several clauses: one unit over its clause units, weights ω, θ = ω/2;
      a concept with one clause is that clause's unit; a Boolean feature is an input;
    * a concept that is not a class is built again at every reference (PSyKI builds a
      predicate's network per call); a reference to a class rule reuses the class's unit;
    * identical sub-formulas are not shared;
    * the class units are the outputs, in class order.

    The thresholds θ are constants (PSyKI's unit has no trainable bias) and only the listed
    connections exist: :class:`Unit` ``inputs`` are exactly these edges. Returns a
    :class:`UnitGraph` whose units' biases are −θ.

    Not built (a :class:`~nesybench.errors.NesyError`): comparisons and ``true`` (PSyKI's
    fuzzifier makes trainable constant and clipped units of them, which this construction
    does not reproduce), and a class without rules (PSyKI's output has one unit per class
    rule). A class whose rule is one Boolean feature gets a unit of weight ω, θ = ω/2 (PSyKI
    outputs the feature itself).
    """
    col = {f: j for j, f in enumerate(kn.features)}
    units: list[Unit] = []
    class_src: dict[str, tuple] = {}

    def add(edges, theta):
        depth = 1 + max((units[e.src[1]].depth if e.src[0] == "u" else 0) for e in edges) \
            if edges else 1
        units.append(Unit([(e.src, e.weight) for e in edges], -float(theta), depth))
        return ("u", len(units) - 1)

    def refuse(op):
        raise NesyError(f"KBANN construction psyki builds PSyKI's Towell network for Boolean "
                        f"features, and/or/not, m-of-n and concepts; the rules use {op!r}",
                        file=kn.source, field="construction")

    def literal(t):
        """(source, weight) of an antecedent: negations fold into the sign."""
        if t["op"] == "not":
            src, w = literal(t["args"][0])
            return src, -w
        return node(t), omega

    def flat(t, op):
        """The antecedents of ``t`` with nested ``op`` nodes spliced in (PSyKI's optimise)."""
        out = []
        for a in t["args"]:
            out += flat(a, op) if a["op"] == op else [a]
        return out

    def node(t):
        op = t["op"]
        if op == "var":
            return ("x", col[t["feature"]])
        if op == "ref":
            return concept(t["concept"])
        if op in ("and", "or"):
            edges = [Edge(*literal(a)) for a in flat(t, op)]
            positive = sum(1 for e in edges if e.weight > 0)
            return add(edges, (positive - 0.5) * omega if op == "and" else 0.5 * omega)
        if op == "mofn":
            edges = [Edge(*literal(a)) for a in t["args"]]
            return add(edges, float(t["m"]) - 0.5 * omega)
        if op == "not":
            # a negated body on its own: a unit of one antecedent of weight −ω (θ −ω/2,
            # Towell's conjunction of no positive antecedents)
            return add([Edge(*literal(t))], -0.5 * omega)
        return refuse(op)

    def concept(name):
        if name.startswith("class:") and name in class_src:
            return class_src[name]
        clauses = kn.concepts[name]
        if len(clauses) == 1:
            src = node(clauses[0])
        else:
            src = add([Edge(node(c), omega) for c in clauses], 0.5 * omega)
        if name.startswith("class:"):
            class_src[name] = src
        return src

    class_units = {}
    for k in range(len(kn.classes)):
        name = kn.class_concept(k)
        if not name:
            raise NesyError(f"KBANN construction psyki needs a rule for every class (PSyKI's "
                            f"output has one unit per class rule); {kn.classes[k]} has none",
                            file=kn.source, field="construction")
        src = concept(name)
        if src[0] == "x":                   # a class that is one Boolean feature
            src = add([Edge(src, omega)], 0.5 * omega)
            class_src[name] = src
        class_units[k] = src[1]
    return UnitGraph(units, class_units, len(kn.features))


# -- PSyKI's structuring fuzzifier ---------------------------------------------------------

#: slope sign and offset (in units of δ) of each comparison's clipped unit
_CLIP_CMP = {">": (1.0, 0.5), ">=": (1.0, 1.0), "<": (-1.0, 0.5), "=<": (-1.0, 1.0)}


@dataclass
class ClippedNet:
    """The rules as fixed layers of clipped units (:func:`clipped_net`), evaluated level by
    level: one gather-and-reduce per kind of node and depth.

    The state row of a sample is ``[1, 0, literals, level 1, level 2, …]``; ``cols``,
    ``w``, ``b`` give each literal clamp(w·x[col] + b, 0, 1); ``levels[d]`` lists
    ``(kind, idx [n, k], m)`` groups whose ``n`` outputs are appended in that order: ``and``
    the minimum of the ``k`` state entries ``idx`` (padded with the constant 1), ``or`` their
    maximum (padded with 0), ``not`` 1 − the one entry, ``mofn`` clamp(Σ − m + 1, 0, 1)
    (padded with 0). ``out[r]`` is the state entry of the r-th class with rules
    (``classes[r]``).
    """

    cols: object            # long [L]
    w: object               # float [L]
    b: object               # float [L]
    levels: list
    out: object             # long [R]
    classes: list[int]

    def __call__(self, X):
        """Truths ``[..., len(classes)]`` of the class rules on inputs ``X [..., D]``."""
        import torch  # noqa: PLC0415

        lit = torch.addcmul(self.b, X[..., self.cols], self.w).clamp_(0.0, 1.0)
        s = torch.cat([torch.ones_like(lit[..., :1]), torch.zeros_like(lit[..., :1]), lit], -1)
        for level in self.levels:
            outs = []
            for kind, idx, m in level:
                v = s[..., idx]                                 # [..., n, k]
                if kind == "and":
                    outs.append(v.amin(-1))
                elif kind == "or":
                    outs.append(v.amax(-1))
                elif kind == "not":
                    outs.append(1.0 - v[..., 0])
                else:
                    outs.append((v.sum(-1) - m + 1.0).clamp_(0.0, 1.0))
            s = torch.cat([s, *outs], -1)
        return s[..., self.out]


def clipped_net(kn: Knowledge, delta: float = 1.0) -> ClippedNet:
    """The rules as PSyKI's structuring fuzzifier builds them (written from its description;
    every weight fixed, as for PSyKI's formulae unless marked trainable):

    * a comparison of feature x with constant c is one clipped linear unit
      clamp(±(x − c)/δ + o, 0, 1): ``gt`` x − c + ½, ``ge`` x − c + 1, ``lt`` c − x + ½,
      ``le`` c − x + 1 (δ = 1: PSyKI's unit weights). ``ge``/``le`` are crisp on integer
      data; a strict comparison is ½ at x = c (crisp when c is a half-integer) — its ramp
      is centred on c;
    * a 0/1 feature (``hot``, ``base``) is its value, clamped to [0, 1];
    * a conjunction is the minimum of its antecedents, a disjunction (``;``, or several
      clauses of a concept) their maximum, a negation 1 − t (PSyKI: clamp(|t − 1|), the same
      on [0, 1]), the empty body the constant 1;
    * m-of-n, which PSyKI's fuzzifier does not build, is the clipped count
      clamp(Σt − m + 1, 0, 1), crisp on crisp inputs like the rest.

    Identical sub-formulas share a node. On inputs off every ramp the output is the rules'
    Boolean truth; between, min/max/1 − t are the Gödel (Zadeh) connectives.
    """
    import torch  # noqa: PLC0415

    col = {f: j for j, f in enumerate(kn.features)}
    lits: list[tuple[int, float, float]] = []           # (column, w, b)
    nodes: list[tuple] = []                             # (kind, children, m, depth)
    memo: dict[str, tuple[str, int]] = {}
    concept_src: dict[str, tuple[str, int]] = {}
    ONE, ZERO = ("c", 0), ("c", 1)

    def depth(src):
        return nodes[src[1]][3] if src[0] == "n" else 0

    def add(kind, children, m=0.0):
        d = 1 + max((depth(c) for c in children), default=0)
        nodes.append((kind, children, float(m), d))
        return ("n", len(nodes) - 1)

    def literal(j, w, b):
        lits.append((j, w, b))
        return ("l", len(lits) - 1)

    def node(t):
        if t["op"] == "__src__":
            return t["src"]
        key = json.dumps(t, sort_keys=True)
        if key in memo:
            return memo[key]
        op = t["op"]
        if op == "var":
            src = literal(col[t["feature"]], 1.0, 0.0)
        elif op == "cmp":
            c = float(t["value"])
            sign, off = _CLIP_CMP[t["rel"]]
            src = literal(col[t["feature"]], sign / delta, off - sign * c / delta)
        elif op == "true":
            src = ONE
        elif op == "ref":
            src = concept(t["concept"])
        elif op == "not":
            src = add("not", [node(t["args"][0])])
        elif op in ("and", "or"):
            src = add(op, [node(a) for a in t["args"]])
        elif op == "mofn":
            src = add("mofn", [node(a) for a in t["args"]], t["m"])
        else:
            raise NesyError(f"unknown node {op!r} in compiled rules")
        memo[key] = src
        return src

    def concept(name):
        if name not in concept_src:
            clauses = kn.concepts[name]
            concept_src[name] = node(clauses[0]) if len(clauses) == 1 else \
                add("or", [node(c) for c in clauses])
        return concept_src[name]

    classes, outs = [], []
    for k in range(len(kn.classes)):
        name = kn.class_concept(k)
        if name:
            classes.append(k)
            outs.append(concept(name))
    # state positions: constants, literals, then the nodes level by level, kind by kind
    pos = {ONE: 0, ZERO: 1}
    for i in range(len(lits)):
        pos[("l", i)] = 2 + i
    width = 2 + len(lits)
    levels = []
    for d in range(1, 1 + max((n[3] for n in nodes), default=0)):
        level = []
        for kind in ("and", "or", "not", "mofn"):
            members = [i for i, n in enumerate(nodes) if n[3] == d and n[0] == kind]
            if not members:
                continue
            k = max(1, *(len(nodes[i][1]) for i in members))
            pad = pos[ONE] if kind == "and" else pos[ZERO]
            idx = torch.tensor([[pos[c] for c in nodes[i][1]] + [pad] * (k - len(nodes[i][1]))
                                for i in members], dtype=torch.long)
            m = torch.tensor([nodes[i][2] for i in members])
            level.append((kind, idx, m))
            for j, i in enumerate(members):
                pos[("n", i)] = width + j
            width += len(members)
        levels.append(level)
    return ClippedNet(torch.tensor([j for j, _, _ in lits], dtype=torch.long),
                      torch.tensor([w for _, w, _ in lits]),
                      torch.tensor([b for _, _, b in lits]), levels,
                      torch.tensor([pos[s] for s in outs], dtype=torch.long), classes)
