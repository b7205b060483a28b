"""ProbLog programs with neural predicates: parse, check and ground once per query shape.

A program is ordinary ProbLog (clauses, probabilistic facts ``0.3::f.``, annotated
disjunctions ``0.2::a; 0.5::b.``) plus DeepProbLog's neural predicates::

    nn(digit_net, [X], Y, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) :: digit(X, Y).

which stands for the annotated disjunction ``p_0::digit(X,0); ...; p_9::digit(X,9)`` whose
probabilities ``p_v`` are the output of network ``digit_net`` on input ``X``.

*Grounding once per query shape.* A query shape is a list of query atoms over **placeholder
constants** (``addition(x1, x2, Z)``): the inputs are symbols, not tensors, so one ground
program (and one compiled circuit) serves every example of that shape. Each query atom is one
*label*; its free variables are the label's value (``Z`` above: one label whose values are the
sums that can be derived), a ground query atom is a Boolean label with values ``[0, 1]``.

Grounding uses the ``problog`` package (its engine and ``LogicDAG``, made by
:mod:`nesybench.nesy.program.acyclic` without cycle bookkeeping when there is no cycle); this module
turns the result into a :class:`GroundProgram`, a plain DAG of and/or/not nodes over choice
variables that :mod:`nesybench.nesy.inference.compile` compiles into an SDD.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NesyError
from .sandbox import ProgramChecker, check_program, engine_builtin_names, position

NN_FUNCTOR = "nn"
#: probability of a ground neural choice: ``nesy__nn(Net, Inputs, V, K)``, ``K`` the index of its
#: ``nn/4`` declaration in :attr:`Parsed.nn_values` (the value list is kept out of the term:
#: copying it into every ground atom cost a third of grounding DeepProbLog's Forth addition)
NN_PROB = "nesy__nn"
LABEL_FUNCTOR = "nesy__label"

@dataclass
class Choice:
    """One categorical random variable of the ground program (an annotated disjunction).

    ``values`` are the outcomes (Python ints/strs or ``str(term)``); ``probs`` the numeric
    probabilities (``None`` for a neural choice, whose probabilities are an input);
    ``net``/``inputs`` name the network and its (placeholder) input terms for neural choices.
    A probabilistic fact is a choice with values ``[1, 0]`` (true/false); ``learnable`` marks
    a ``t(P)::f`` fact whose probability is a trained parameter (initial value ``P``)."""

    key: str
    values: list
    probs: list[float] | None = None
    net: str | None = None
    inputs: tuple[str, ...] = ()
    fact: bool = False
    learnable: bool = False

    @property
    def neural(self) -> bool:
        return self.net is not None


@dataclass
class Label:
    """One label: the query atom ``query`` and, per value, the DAG node proving it."""

    query: str
    values: list
    nodes: list[int]
    #: per value, the ground query atom as ProbLog prints it (``p(1)``, ``r(1-0)``); for a
    #: ground query, the query itself (one entry, for value 1)
    atoms: list[str] = field(default_factory=list)
    #: the query atom as parsed (ProbLog's term), for code that needs its structure
    term: object = None


@dataclass
class GroundProgram:
    """A ground program as a DAG over choice literals.

    ``nodes[i]`` (``i ≥ 1``) is ``("lit", choice_index, value_index)``, ``("and", kids)`` or
    ``("or", kids)``; a kid ``-j`` is the negation of node ``j``; node id ``0`` is *true* and
    ``None`` is *false*. ``choices`` lists the random variables (neural ones first, in the order
    the concept probabilities are passed), ``labels`` the labels of the query shape."""

    choices: list[Choice]
    nodes: list
    labels: list[Label]
    source: str | None = None
    text_hash: str = ""
    #: ``(atom, node, observed value)`` of each ``evidence/1,2`` statement (node as in ``nodes``)
    evidence: list = field(default_factory=list)
    #: which grounder made it (``prolog`` or ``problog``), and why ProbLog's engine ran where
    #: the SWI-Prolog grounder was asked for first (the construct it does not handle)
    grounder: str = "problog"
    grounder_note: str | None = None

    @property
    def concepts(self) -> list[Choice]:
        return [c for c in self.choices if c.neural]


# -- parsing ---------------------------------------------------------------------------------
def read_program(text_or_path) -> tuple[str, str | None]:
    """Program text and its file name (``None`` for literal text)."""
    if isinstance(text_or_path, Path) or (isinstance(text_or_path, str) and "\n" not in text_or_path
                                          and text_or_path.endswith((".pl", ".pro", ".problog"))):
        p = Path(text_or_path)
        if not p.exists():
            raise NesyError("program file not found", file=str(p))
        from ...folder import read_input_text   # a regular file of bounded size (no /dev/zero)
        return read_input_text(p), str(p)
    return str(text_or_path), None


def _where(text: str, location) -> dict:
    """``line``/``column`` keyword arguments of :class:`NesyError` for a ProbLog location."""
    w = position(text, location)
    return {"line": w.line, "column": w.column}


def _py(term):
    """A problog constant term as a Python int/float/str (a term with variables, which
    ProbLog's engine answers with, as the text ProbLog prints for it)."""
    from problog.logic import Constant
    if isinstance(term, Constant):
        return term.value
    if term is None or isinstance(term, int):       # a variable of ProbLog's engine
        return "_" if term is None else f"X{-term}" if term < 0 else f"A{term + 1}"
    if term.is_var():
        raise ValueError("variable")
    s = _text(term)
    return s[1:-1] if s.startswith("'") and s.endswith("'") else s


class _Subst(dict):
    """A substitution that leaves unmentioned variables as they are."""

    def __missing__(self, name):
        from problog.logic import Var
        return Var(name)


class Parsed(list):
    """The clauses of a parsed program, and the value list of each ``nn/4`` declaration."""

    def __init__(self, *args):
        super().__init__(*args)
        self.nn_values: list[list] = []


def parse(text: str, source: str | None = None, networks=None) -> Parsed:
    """Parse ProbLog text into clauses with neural predicates rewritten as annotated
    disjunctions. Raises :class:`NesyError` (file, line, column) on syntax errors, unknown
    networks, malformed ``nn/4`` annotations and anything outside the allow-list of
    :mod:`nesybench.nesy.program.sandbox` (checked before ProbLog loads anything)."""
    from problog.errors import ProbLogError
    from problog.logic import AnnotatedDisjunction, Clause, Constant, Or, Term, Var, term2list
    from problog.program import PrologString

    import warnings
    try:
        with warnings.catch_warnings():
            # ProbLog's reader warns on every == and \== ("might give unexpected results"):
            # advice about ProbLog's own semantics, which nesybench follows, not an error
            warnings.simplefilter("ignore", UserWarning)
            clauses = list(PrologString(text))
    except ProbLogError as exc:
        raise NesyError(f"program does not parse: {getattr(exc, 'base_message', exc)}",
                        file=source, **_where(text, getattr(exc, "location", None))) from None
    except RecursionError:
        raise NesyError("program does not parse: a term is nested too deeply",
                        file=source) from None
    clauses = [_name_anonymous(cl) for cl in check_program(clauses, text, source)]
    known = None if networks is None else set(networks)
    out = Parsed()
    for cl in clauses:
        where = _where(text, getattr(cl, "location", None))
        head = cl.head if isinstance(cl, Clause) else cl
        prob = getattr(head, "probability", None)
        if isinstance(prob, Term) and prob.functor == "t" and prob.arity == 1 and \
                prob.args[0].is_var():          # t(_)::f. a learnable fact starting at 0.5
            head = head.with_probability(Term("t", Constant(0.5)))
            cl = Clause(head, cl.body) if isinstance(cl, Clause) else head
            prob = head.probability
        if isinstance(cl, (AnnotatedDisjunction, Or)):
            try:
                out.append(_free_parameters(cl))
            except NesyError as exc:
                raise exc.where(file=source, **where) from None
            continue
        if isinstance(prob, Term) and prob.functor == NN_FUNCTOR:
            if prob.arity in (2, 3):
                what = ("a neural fact nn(Net, Inputs) (write it as nn(Net, Inputs, V, [0, 1]) "
                        "over a Boolean value)" if prob.arity == 2 else
                        "a tensor-valued network nn(Net, Inputs, Output) (only categorical "
                        "outputs nn(Net, Inputs, Out, [Values]) are supported)")
                raise NesyError(f"not supported: {what}", file=source, **where)
            if prob.arity != 4:
                raise NesyError(f"nn/{prob.arity} annotation: expected nn(Net, [Inputs], Out, "
                                "[Values])", file=source, **where)
            net, inputs, outv, values = prob.args
            try:
                values = term2list(values, deep=False)
                term2list(inputs, deep=False)
            except Exception:
                raise NesyError("nn/4: inputs and values must be lists", file=source,
                                **where) from None
            if not isinstance(outv, Var):
                raise NesyError("nn/4: the output argument must be a variable", file=source,
                                **where)
            if not values or len(set(map(str, values))) != len(values):
                raise NesyError("nn/4: the value list must be non-empty and without repeats",
                                file=source, **where)
            if net.is_var() or (known is not None and str(net) not in known):
                raise NesyError(f"neural predicate {head.signature} uses unknown network "
                                f"{net!s} (known: {', '.join(sorted(known or []))})",
                                file=source, **where)
            heads = []
            decl = Constant(len(out.nn_values))
            out.nn_values.append(values)
            for v in values:
                h = head.with_probability(None).apply(_Subst({outv.name: v}))
                heads.append(h.with_probability(Term(NN_PROB, net, inputs, v, decl)))
            body = cl.body if isinstance(cl, Clause) else Term("true")
            out.append(AnnotatedDisjunction(heads, body))
        else:
            out.append(cl)
    return out


def _name_anonymous(cl):
    """``cl`` with each anonymous variable ``_`` of its body renamed apart (``_Anon1``, ...).
    The meaning is the same; ProbLog's clause compiler crashes on a bare ``_`` as an argument of
    ``findall/3`` and the other aggregates, which it mistakes for its own wrapper."""
    from problog.logic import AnnotatedDisjunction, Clause
    rename = _anonymous_renamer("_Anon")

    if isinstance(cl, AnnotatedDisjunction):
        return AnnotatedDisjunction(cl.heads, rename(cl.body))
    if isinstance(cl, Clause) and cl.head is not None:
        return Clause(cl.head, rename(cl.body), location=getattr(cl, "location", None))
    return cl


def _free_parameters(cl):
    """An annotated disjunction whose learnable heads carry their initial values: ``t(P)``
    keeps ``P``, the ``t(_)`` heads share what the others leave, and the whole is normalised to
    sum 1 (DeepProbLog's reading: the parameters are a distribution over the heads). Fixing the
    values here, over every head of the clause, keeps them right when grounding reaches only
    some heads (the rest become one residual outcome)."""
    from problog.logic import AnnotatedDisjunction, Constant, Term
    from .sandbox import _disjuncts

    heads = list(cl.heads) if isinstance(cl, AnnotatedDisjunction) else list(_disjuncts(cl))
    body = cl.body if isinstance(cl, AnnotatedDisjunction) else Term("true")
    learn = [_learnable(h.probability) for h in heads]
    if not any(learn):
        return cl
    if not all(learn):
        raise NesyError("an annotated disjunction has learnable t(_) heads and fixed ones; make "
                        "every head learnable or none")
    init = [None if h.probability.args[0].is_var() else _numeric(h.probability.args[0], None)
            for h in heads]
    fixed = sum(x for x in init if x is not None)
    n_free = init.count(None)
    share = max(1.0 - fixed, 0.0) / n_free if n_free else 0.0
    init = [share if x is None else x for x in init]
    total = sum(init)
    if total <= 0:
        raise NesyError("a learnable annotated disjunction starts with all-zero parameters")
    heads = [h.with_probability(Term("t", Constant(x / total))) for h, x in zip(heads, init)]
    return AnnotatedDisjunction(heads, body)


# -- grounding -------------------------------------------------------------------------------
def _query_term(q: str, source):
    from problog.errors import ProbLogError
    from problog.program import PrologString
    try:
        terms = list(PrologString(q.strip().rstrip(".") + "."))
    except ProbLogError as exc:
        raise NesyError(f"query {q!r} does not parse: {getattr(exc, 'base_message', exc)}",
                        file=source, field="query") from None
    if len(terms) != 1:
        raise NesyError(f"query {q!r} must be one atom", file=source, field="query")
    return terms[0]


def _free_vars(term) -> list:
    seen: dict[str, object] = {}
    for t in _walk_vars(term):
        seen.setdefault(t.name, t)
    return list(seen.values())


def _walk_vars(term):
    from problog.logic import Term, Var
    if isinstance(term, Var):
        yield term
    elif isinstance(term, Term):
        for a in term.args:
            yield from _walk_vars(a)


def _split_queries(clauses, text, source) -> tuple[list, list, list]:
    """The clauses without ``query/1`` statements; those queries as ``(term, where)`` (the
    parsed term itself: a query is read once, never printed and read again); and the query
    rules ``query(Q) :- Body.`` as ``(Q, Body, where)``."""
    from problog.logic import Clause, Term
    rest, found, rules = [], [], []
    for cl in clauses:
        if isinstance(cl, Term) and not isinstance(cl, Clause) and cl.functor == "query" \
                and cl.arity == 1 and cl.probability is None:
            found.append((cl.args[0], _where(text, getattr(cl, "location", None))))
        elif isinstance(cl, Clause) and isinstance(cl.head, Term) and \
                cl.head.functor == "query" and cl.head.arity == 1 and \
                cl.head.probability is None:
            rules.append((cl.head.args[0], cl.body, _where(text, getattr(cl, "location",
                                                                          None))))
        else:
            rest.append(cl)
    return rest, found, rules


def ground(text_or_path, queries=None, *, networks=None, concept_order=None,
           concept_decls=None, budget=None, clock=None, grounder: str | None = None,
           empty_ok: bool = False) -> GroundProgram:
    """Ground ``program`` for the query shape ``queries`` (list of atoms over placeholders).

    ``queries`` may be omitted when the program states its own ``query/1`` facts (giving both
    is an error: the shape would be ambiguous). ``evidence/1`` and ``evidence/2`` statements
    condition every label (``GroundProgram.evidence``; the circuit computes ``P(q | e)``).
    ``budget`` (:class:`~nesybench.nesy.program.budget.Budget`, default limits) bounds the grounding.

    ``grounder`` (default: the budget's, ``auto``): ``auto`` grounds in SWI-Prolog
    (:mod:`nesybench.nesy.program.swi_ground`) and uses ProbLog's engine only for a construct that
    grounder does not handle (``GroundProgram.grounder`` says which one ran, and
    ``grounder_note`` why); ``prolog`` never falls back; ``problog`` is ProbLog's engine.

    ``concept_order`` optionally lists ``(net, inputs_str)`` keys or input placeholder strings
    in the order the concept probabilities will be passed (default: order of appearance);
    ``concept_decls`` maps a key of ``concept_order`` to ``(net, values)`` for concepts the
    labels do not depend on (they get a choice of their own, which does not change any label
    probability).
    Raises :class:`NesyError` if a query grounds to nothing (``empty_ok``: such a label has no
    values instead, as ProbLog answers a non-ground query with no answer).

    Every grounder computes arithmetic with ProbLog's function table, each integer result
    bounded before it is computed (:mod:`nesybench.nesy.program.arith`)."""
    from .arith import guarded

    with guarded():
        return _ground(text_or_path, queries, networks=networks, concept_order=concept_order,
                       concept_decls=concept_decls, budget=budget, clock=clock,
                       grounder=grounder, empty_ok=empty_ok)


def _ground(text_or_path, queries, *, networks, concept_order, concept_decls, budget, clock,
            grounder, empty_ok=False) -> GroundProgram:
    from .budget import GROUNDERS, Budget

    text, source = read_program(text_or_path)
    parsed = parse(text, source, networks)
    clauses, own_queries, query_rules = _split_queries(parsed, text, source)
    if isinstance(queries, str):
        queries = [queries]
    queries = list(queries or [])
    if queries and (own_queries or query_rules):
        raise NesyError("the program states its own query/1 and a query was given as well; "
                        "keep one of them", file=source,
                        **(own_queries[0][1] if own_queries else query_rules[0][2]))
    clock = clock or (budget or Budget()).start()
    grounder = grounder or clock.budget.grounder
    if grounder not in GROUNDERS:
        raise NesyError(f"unknown grounder {grounder!r} (choose from {', '.join(GROUNDERS)})",
                        field="grounder")
    checker = ProgramChecker(text, source)
    checker.known = _defined(clauses)
    if queries:
        terms = [_query_term(q, source) if isinstance(q, str) else q for q in queries]
    else:
        terms = [q for q, _ in own_queries]
        if query_rules:
            terms += _expand_query_rules(query_rules, clauses, parsed, text, source, clock,
                                         grounder, checker)
    if not terms and not query_rules:
        raise NesyError("the query shape has no query atom", file=source, field="query")
    qterms, qvars = [], []
    for t in terms:
        qt = _name_anonymous_query(t)
        try:
            checker.check_atom(qt, "query", qt)
        except NesyError as exc:
            raise NesyError(exc.message, file=source, field="query") from None
        qterms.append(qt)
        qvars.append(_free_vars(qt))
    queries = [q if isinstance(q, str) else str(q) for q in (queries or terms)]
    raw, used, note = _run_grounder(clauses, qterms, qvars, parsed, text, source, clock,
                                    grounder)
    gp = _assemble(*raw, queries=queries, qvars=qvars, source=source,
                   concept_order=concept_order, concept_decls=concept_decls, qterms=qterms,
                   empty_ok=empty_ok)
    gp.text_hash = hashlib.sha256(text.encode()).hexdigest()
    gp.grounder, gp.grounder_note = used, note
    return gp


def _run_grounder(clauses, qterms, qvars, parsed, text, source, clock, grounder):
    """``(raw, used, note)``: the grounder's lists (see :func:`_from_swi`), the grounder that
    made them, and why ProbLog's engine ran where the SWI-Prolog grounder was asked first."""
    raw, used, note = None, "problog", None
    if grounder != "problog":
        from .swi_ground import Refused, Unsupported, ground_swi, split_evidence
        from .sandbox import ENGINE_BUILTINS, PYTHON_HELPERS
        rest, evidence = split_evidence(clauses)
        try:
            try:
                raw = _from_swi(ground_swi(rest, list(zip(qterms, qvars)), evidence,
                                           clock=clock, source=source,
                                           where=lambda cl: _where(text, getattr(
                                               cl, "location", None))),
                                parsed.nn_values, source)
            except Refused as exc:
                if str(exc) in ENGINE_BUILTINS:    # a builtin of ProbLog's engine, not here
                    raise Unsupported(f"the builtin {PYTHON_HELPERS.get(str(exc), exc)}") \
                        from None
                raise refusal(str(exc), source, **exc.where) from None
            used = "prolog"
        except Unsupported as exc:
            if grounder == "prolog":
                raise NesyError(f"the SWI-Prolog grounder does not handle {exc}; ground this "
                                "program with --grounder problog", file=source) from None
            note = str(exc)
    if raw is None:
        raw = _ground_problog(clauses, qterms, qvars, parsed, text, source, clock)
    return raw, used, note


def _expand_query_rules(rules, clauses, parsed, text, source, clock, grounder, checker) -> list:
    """The queries of ProbLog's query rules ``query(Q) :- Body.``: ``Q`` under each
    substitution of its variables that ``Body`` makes possible (in some world; the body's
    probabilities do not weigh the query, as in ProbLog), in the order found, without repeats.

    Each rule becomes a helper clause ``nesy__qrule_K(V1, ..., Vn) :- Body.`` over the
    variables ``Q`` shares with ``Body``, grounded once with every rule's helper as a query."""
    from problog.logic import Clause, Term
    extra, heads, rule_vars = [], [], []
    for k, (q, body, _) in enumerate(rules):
        body_names = {v.name for v in _walk_vars(body)}
        shared = [v for v in _free_vars(q) if v.name in body_names]
        head = Term(f"nesy__qrule_{k}", *shared)
        extra.append(Clause(head, body))
        heads.append(head)
        rule_vars.append(shared)
    raw, _, _ = _run_grounder(clauses + extra, heads, rule_vars, parsed, text, source, clock,
                              grounder)
    seen, out = set(), []
    for j, _val, nid, terms in raw[2]:
        if nid is None:
            continue                       # not possible in any world
        q = rules[j][0]
        inst = q.apply(_Subst({v.name: t for v, t in zip(rule_vars[j], terms)}))
        if str(inst) not in seen:
            seen.add(str(inst))
            out.append(inst)
    return out


def _name_anonymous_query(qt):
    """``qt`` with each anonymous variable ``_`` named apart (``_Q1``, ...): each is a free
    variable of the query whose answers are told apart, as ProbLog's ``query(p(_))``."""
    return _anonymous_renamer("_Q")(qt)


def _anonymous_renamer(prefix: str):
    """A function renaming each anonymous variable ``_`` of a term apart (``prefix`` 1, 2, ...,
    counting on across the calls of one renamer)."""
    from problog.logic import Term, Var
    count = [0]

    def rename(t):
        if isinstance(t, Var):
            if t.name != "_":
                return t
            count[0] += 1
            return Var(f"{prefix}{count[0]}")
        if isinstance(t, Term) and t.args:
            return t.with_args(*(rename(a) for a in t.args))
        return t
    return rename


def _from_swi(raw, nn_values, source):
    """``(choices, nodes, labels, evidence)`` of the SWI-Prolog grounder's lists (see
    :func:`nesybench.nesy.program.swi_ground.ground_swi`), as :func:`_ground_problog` returns them:
    :class:`Choice` objects in the grounder's order, the node table (literals over those
    choices), label answers ``(j, value, node)`` and evidence ``(atom text, node, observed)``
    (node ``None``: false)."""
    from .swi_ground import check_probability, decode, learnable_value
    raw_choices, raw_nodes, raw_labels, raw_evidence = raw

    choices: list = []
    value_pos: list[dict] = []
    for ckind, key, values in raw_choices:
        if ckind == "nn":
            net, inputs, decl = key
            net, inputs = str(decode(net)), [str(decode(x)) for x in inputs]
            vals = [_plain(x) for x in nn_values[int(decl)]]
            choices.append(Choice(key=f"{net}({', '.join(inputs)})", values=vals, net=net,
                                  inputs=tuple(inputs)))
            value_pos.append({i: i for i in range(len(vals))})
        elif ckind == "fact":
            (_, _, d), = values
            learn = isinstance(d, tuple)
            p = learnable_value(d[1], source) if learn else float(d)
            p = 0.5 if p is None else p
            check_probability(p, source)
            choices.append(Choice(key=str(decode(key)), values=[1, 0], probs=[p, 1.0 - p],
                                  fact=True, learnable=learn))
            value_pos.append({0: 0})
        else:
            learn = [isinstance(d, tuple) for _, _, d in values]
            if any(learn) and not all(learn):
                heads = [str(decode(h)) for _, h, _ in values]
                raise NesyError(f"annotated disjunction {heads}: either every head is "
                                "learnable t(_) or none is", file=source)
            probs = []
            for _, _, d in values:
                p = learnable_value(d[1], source) if isinstance(d, tuple) else float(d)
                check_probability(p if p is not None else 0.0, source)
                probs.append(p)
            choices.append(Choice(key=f"ad{len(choices)}",
                                  values=[str(decode(h)) for _, h, _ in values],
                                  probs=probs, learnable=all(learn)))
            value_pos.append({i: k for k, (i, _, _) in enumerate(values)})
    nodes: list = [None]
    raw_nodes.reverse()
    while raw_nodes:           # consumed as converted: one copy of a large table at a time
        n = raw_nodes.pop()
        kind = n[0]
        if kind == 0:
            nodes.append(("lit", n[1], value_pos[n[1]][n[2]]))
        else:
            del n[0]
            nodes.append(("and" if kind == 1 else "or", n))
    labels = []
    for j, vals, nid in raw_labels:
        if nid == "false":
            continue
        terms = [decode(v) for v in vals]
        vals = [v if isinstance(v, (int, float)) else _py(t) for v, t in zip(vals, terms)]
        val = (vals[0] if len(vals) == 1 else tuple(vals)) if vals else 1
        labels.append((int(j), val, int(nid), terms))
    ev = [(str(decode(atom)), None if nid == "false" else int(nid), bool(v))
          for _, atom, nid, v in raw_evidence]
    return choices, nodes, labels, ev


def _plain(v):
    """A value from Prolog (or ProbLog's value list) as :func:`_py` gives it: numbers as
    numbers, atoms without quotes."""
    if isinstance(v, (int, float, str)):
        return v
    return _py(v)


def refusal(sig: str, source, **where) -> NesyError:
    """The one-line refusal of a call to ``sig`` (``name/arity``), a predicate the program
    does not define and the engine does not have."""
    if sig in engine_builtin_names() or sig.startswith("_"):
        return NesyError(f"program refused: {sig} was called, and it is not allowed in a "
                         "program (file, database, output and engine builtins do not exist "
                         "in nesybench's engine; see nesybench.nesy.program.sandbox)", file=source,
                         **where)
    return NesyError(f"program refused: {sig} was called, and it is neither defined in the "
                     "program nor an allowed builtin", file=source, **where)


def _ground_problog(clauses, qterms, qvars, parsed, text, source, clock):
    """Ground with ProbLog's engine (allow-listed builtins only): ``(choices, nodes, labels,
    evidence)`` as :func:`nesybench.nesy.program.swi_ground.ground_swi` returns them."""
    from problog.errors import ProbLogError
    from problog.logic import Clause, Term, Constant, term2list
    from problog.program import SimpleProgram

    from .acyclic import to_dag
    from .budget import budgeted_grounding

    prog = SimpleProgram()
    for cl in clauses:
        prog.add_clause(cl)
    for j, (qt, vs) in enumerate(zip(qterms, qvars)):
        head = Term(LABEL_FUNCTOR, Constant(j), *vs)
        prog.add_clause(Clause(head, qt))
        prog.add_clause(Term("query", Term(LABEL_FUNCTOR, Constant(j), *vs)))
    try:
        eng, target = budgeted_grounding(clock)
        with clock.watch("grounding"):
            lf = eng.ground_all(eng.prepare(prog), target=target)
            dag = to_dag(lf)   # ProbLog's DAG; no quadratic cycle bookkeeping when acyclic
    except ProbLogError as exc:
        raise _grounding_error(exc, text, source) from None
    except RecursionError:
        raise NesyError("grounding failed: recursion too deep", file=source) from None
    except NesyError:
        raise
    except Exception as exc:    # noqa: BLE001 - ProbLog's engine's own Python errors
        # (OverflowError from atom_number on inf, an AttributeError on an odd term): the
        # program's error, one line, never a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise NesyError(f"grounding failed: ProbLog's engine raised {type(exc).__name__}"
                        + (f": {first}" if first else ""), file=source) from None

    # choices: group atoms by their annotated-disjunction group
    choice_of: dict = {}   # dag atom id -> (choice index, value index)
    choices: list[Choice] = []
    group_index: dict = {}
    for nid, node, kind in dag:
        if kind != "atom":
            continue
        if node.is_extra:
            continue
        p = node.probability
        if isinstance(p, Term) and p.functor == NN_PROB:
            net, inputs, v, decl = p.args
            ins = tuple(str(x) for x in term2list(inputs, deep=False))
            gkey = ("nn", str(node.group))
            if gkey not in group_index:
                vals = [_py(x) for x in parsed.nn_values[int(decl)]]
                group_index[gkey] = len(choices)
                choices.append(Choice(key=f"{net}({', '.join(ins)})", values=vals, net=str(net),
                                      inputs=ins))
            ci = group_index[gkey]
            vi = [str(x) for x in choices[ci].values].index(str(_py(v)))
        elif node.group is not None:
            gkey = ("ad", str(node.group))
            learn = _learnable(p)
            if gkey not in group_index:
                group_index[gkey] = len(choices)
                choices.append(Choice(key=f"ad{len(choices)}", values=[], probs=[],
                                      learnable=learn))
            ci = group_index[gkey]
            ch = choices[ci]
            ch.values.append(str(node.name.args[2]) if node.name is not None and
                             node.name.functor == "choice" and len(node.name.args) > 2
                             else str(node.name))
            if learn != ch.learnable:
                raise NesyError(f"annotated disjunction {ch.values}: either every head is "
                                "learnable t(_) or none is", file=source)
            ch.probs.append(_initial(p, source) if learn else _numeric(p, source, text))
            vi = len(ch.values) - 1
        else:
            ci = len(choices)
            learn = _learnable(p)
            if learn:       # t(P)::f. a learnable fact, P its initial value (t(_): 0.5)
                pr = _initial(p, source)
                pr = 0.5 if pr is None else pr
            else:
                pr = _numeric(p, source, text) if p is not None else 1.0
            choices.append(Choice(key=str(node.name), values=[1, 0], probs=[pr, 1.0 - pr],
                                  fact=True, learnable=learn))
            vi = 0
        choice_of[nid] = (ci, vi)

    nodes: list = [None]
    for nid, node, kind in dag:
        if kind == "atom":
            if nid in choice_of:
                ci, vi = choice_of[nid]
                nodes.append(("lit", ci, vi))
            else:
                nodes.append(("or", []))   # extra atom: never true
        elif kind == "conj":
            nodes.append(("and", list(node.children)))
        elif kind == "disj":
            nodes.append(("or", list(node.children)))
        else:
            raise NesyError(f"unsupported ground node {kind}", file=source)
        assert len(nodes) - 1 == nid, "LogicDAG node ids must be dense"
    evidence = [(str(atom), nid, value > 0) for atom, nid, value in dag.evidence_all()]
    labels = []
    for qterm, nid in dag.queries():
        if nid is None:
            continue   # impossible value
        args = qterm.args[1:]
        if args:
            val = tuple(_py(a) for a in args)
            val = val[0] if len(val) == 1 else val
        else:
            val = 1
        labels.append((int(qterm.args[0]), val, nid, list(args)))
    return choices, nodes, labels, evidence


def _assemble(choices, nodes, raw_labels, raw_evidence, *, queries, qvars, source,
              concept_order, concept_decls, qterms=None, empty_ok=False) -> GroundProgram:
    """The :class:`GroundProgram` of a grounder's output: residual outcomes of partial
    annotated disjunctions, neural choices first (in ``concept_order``), evidence checked,
    labels sorted by value."""
    # residual outcome of (partially grounded) numeric annotated disjunctions
    for ch in choices:
        if ch.probs is not None and not ch.fact:
            s = sum(ch.probs)
            if s > 1 + 1e-9:
                raise NesyError(f"annotated disjunction {ch.values} has probabilities summing to "
                                f"{s:g} > 1", file=source)
            if s < 1 - 1e-12:
                ch.values.append("nesy__none")
                ch.probs.append(1.0 - s)
    # neural choices first, in the requested order
    order = sorted(range(len(choices)), key=lambda i: (not choices[i].neural,))
    if concept_order is not None:
        neural = [i for i in order if choices[i].neural]
        keyed = {}
        for i in neural:
            c = choices[i]
            keyed[c.key] = i
            keyed.setdefault(c.inputs[0] if len(c.inputs) == 1 else c.inputs, i)
        for k in concept_order:     # declared concepts the labels do not depend on
            if k not in keyed and concept_decls and k in concept_decls:
                net, vals = concept_decls[k]
                keyed[k] = len(choices)
                neural.append(len(choices))
                choices.append(Choice(key=f"{net}({k})", values=list(vals), net=str(net),
                                      inputs=(k,)))
        try:
            pick = [keyed[k] for k in concept_order]
        except KeyError as exc:
            raise NesyError(f"concept {exc.args[0]!r} does not occur in the ground program "
                            f"(have: {', '.join(choices[i].key for i in neural)})",
                            file=source) from None
        rest = [i for i in neural if i not in pick]
        order = pick + rest + [i for i in order if not choices[i].neural]
    new_index = {old: new for new, old in enumerate(order)}
    choices = [choices[i] for i in order]
    nodes = [("lit", new_index[n[1]], n[2]) if n is not None and n[0] == "lit" else n
             for n in nodes]

    evidence = []
    for atom, nid, observed in raw_evidence:
        if nid is None or (nid == 0 and not observed):    # the observation is impossible
            if observed or nid == 0:
                raise NesyError(f"evidence {atom} = {str(observed).lower()} has probability 0",
                                file=source, field="evidence")
            continue                                       # false atom observed false
        if nid == 0:
            continue                                       # true atom observed true
        evidence.append((atom, nid, observed))

    labels: list[Label] = [Label(query=q, values=[], nodes=[]) for q in queries]
    for j, val, nid, terms in raw_labels:
        labels[j].values.append(val)
        labels[j].nodes.append(nid)
        if qterms is not None:
            labels[j].atoms.append(_answer_atom(qterms[j], qvars[j], terms))
    for lab, qt in zip(labels, qterms or ()):
        lab.term = qt
    for j, (lab, vs) in enumerate(zip(labels, qvars)):
        if not vs:
            lab.atoms = [str(qterms[j])] if qterms is not None else []
            if not lab.nodes:
                lab.values, lab.nodes = [0], [0]    # never provable: always false
            else:
                n = lab.nodes[0]
                lab.values, lab.nodes = [0, 1], [-n if n != 0 else None, n]
                if n == 0:
                    lab.values, lab.nodes = [1], [0]
        if not lab.values:
            if empty_ok:
                lab.atoms = [str(qterms[j])] if qterms is not None else []
                continue
            raise NesyError(f"query {lab.query!r} grounds to nothing: no label value is "
                            "derivable", file=source, field="query")
        if vs and lab.atoms:
            triples = sorted(zip(lab.values, lab.nodes, lab.atoms),
                             key=lambda vn: _sort_key(vn[0]))
            lab.atoms = [a for _, _, a in triples]
        else:
            triples = sorted(zip(lab.values, lab.nodes, lab.values),
                             key=lambda vn: _sort_key(vn[0]))
        lab.values = [v for v, _, _ in triples]
        lab.nodes = [n for _, n, _ in triples]
    return GroundProgram(choices=choices, nodes=nodes, labels=labels, source=source,
                         evidence=evidence)


def _text(term) -> str:
    """``str(term)``, or the term's functor and arguments where ProbLog's printer fails on a
    term its own engine built (``(a -> b) =.. L`` leaves an operator term without arguments)."""
    try:
        return str(term)
    except Exception:       # noqa: BLE001 - ProbLog's printer's own errors
        args = getattr(term, "args", ())
        return f"{getattr(term, 'functor', term)}({', '.join(_text(a) for a in args)})" \
            if args else str(getattr(term, "functor", "?"))


def _answer_atom(qterm, qvars, terms) -> str:
    """The ground query atom of one answer, as ProbLog prints it: ``qterm`` with its free
    variables ``qvars`` bound to the answer's value terms ``terms``."""
    if not qvars:
        return _text(qterm)
    return _text(qterm.apply(_Subst({v.name: t for v, t in zip(qvars, terms)})))


def _defined(clauses) -> set[str]:
    """``name/arity`` of every predicate ``clauses`` define (heads of clauses, facts and
    disjunctions, library clauses included)."""
    from problog.logic import AnnotatedDisjunction, Clause, Or, Term
    from .sandbox import _disjuncts, _signature
    out = set()
    for cl in clauses:
        if isinstance(cl, AnnotatedDisjunction):
            heads = cl.heads
        elif isinstance(cl, Clause):
            heads = [cl.head]
        elif isinstance(cl, Or):
            heads = list(_disjuncts(cl))
        else:
            heads = [cl]
        out.update(_signature(h) for h in heads if isinstance(h, Term))
    return out


def _grounding_error(exc, text: str, source) -> NesyError:
    """One line for a ProbLog error while grounding, with file:line:column where the engine
    gives a position. A call that reached a predicate the engine does not have (a builtin
    outside the allow-list, named in a goal built at run time) is a refusal."""
    from problog.engine import UnknownClause
    where = _where(text, getattr(exc, "location", None))
    message = str(getattr(exc, "base_message", None) or exc).strip().splitlines()[0]
    if isinstance(exc, UnknownClause):
        sig = message.split("'")[1] if message.count("'") >= 2 else message
        return refusal(sig, source, **where)
    return NesyError(f"grounding failed: {message}", file=source, **where)


def _sort_key(v):
    if isinstance(v, tuple):
        return tuple(_sort_key(x) for x in v)
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def _learnable(p) -> bool:
    from problog.logic import Term
    return isinstance(p, Term) and p.functor == "t" and p.arity == 1


def _initial(p, source) -> float | None:
    """The initial value ``P`` of a learnable ``t(P)`` annotation (``None`` for ``t(_)``)."""
    arg = p.args[0]
    if arg.is_var():
        return None
    return _numeric(arg, source)


def _numeric(p, source, text: str | None = None) -> float:
    try:
        v = float(p.compute_value()) if hasattr(p, "compute_value") else float(p)
    except Exception as exc:
        why = f" ({getattr(exc, 'base_message', exc)})" if isinstance(exc, ArithmeticError) \
            or type(exc).__name__ in ("ArithmeticError", "ArithmeticBound") else ""
        loc = getattr(p, "location", None)
        where = _where(text, loc) if text is not None and loc is not None else {}
        raise NesyError(f"probability {p} is not a number{why} (learnable parameters are "
                        "written t(0.5)::fact)", file=source, **where) from None
    if not 0 <= v <= 1:
        raise NesyError(f"probability {v} is outside [0, 1]", file=source)
    return v
