"""Rule learners for RuDaS datasets and the plug-in interface of ``nesybench rudas learn``.

A learner reads a dataset's training facts (:class:`Dataset`: ``train.txt`` of a dataset
folder) and returns rules (:class:`Rule`, optionally with a confidence); :func:`learn` runs one
and :func:`render` writes them as a learned-rules file that ``nesybench rudas evaluate``
scores (``0.8::p1(X0,X1) :- p2(X0,X2), p3(X2,X1).``).

Built-in systems (one module each): ``foil`` (:mod:`.foil`, Quinlan 1990), ``amie``
(:mod:`.amie`, Galárraga et al. 2015), ``neural-lp`` (:mod:`.neural_lp`, Yang et al. 2017),
``ntp`` (:mod:`.ntp`, an NTP-style learner after Rocktäschel and Riedel 2017), ``aleph`` (:mod:`.aleph`, the user's Aleph 5 in a ``swipl`` process) and ``cmd`` (:mod:`.command`,
any outside program through a command template).

Plug-ins: a distribution may register a class under the entry-point group
``nesybench.rudas_learners``; its name becomes a ``--system``. The class is built with the
keyword options of :class:`LearnerOptions` (``seed``, ``max_body``, ``targets``, ``options``,
``progress``, ``time_limit``) and has ``learn(dataset) -> list`` whose items are
:class:`Rule`, clause strings (``"p(X,Y) :- q(X,Y)"``, optionally ``"0.8::..."``) or
``(clause, confidence)`` pairs.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NesyError
from ...folder import DataFolder

Atom = tuple  # (predicate, (term, ...)); a term is a variable (upper case or _) or a constant

ENTRY_POINT_GROUP = "nesybench.rudas_learners"

#: learner profiles: the options a published configuration sets, per system; options given
#: by the user win. ``rudas-v0``: the RuDaS paper's appendix ran AMIE+ with ``-mins 3 -minis 3
#: -minpca 0.25`` on the RuDaS-v0 datasets (no ``-pm``: AMIE+ pruned by head coverage and its
#: ``-mins`` pruned nothing; the ``amie`` learner does the same, see :mod:`.amie`).
LEARNER_PROFILES = {"rudas-v0": {"amie": {"min_support": "3", "min_initial_support": "3",
                                          "min_pca": "0.25"}}}


def profile_options(system: str, options: dict | None, profile: str | None) -> dict:
    """``options`` over the defaults ``profile`` sets for ``system`` (none for ``None``)."""
    if profile is None:
        return dict(options or {})
    if profile not in LEARNER_PROFILES:
        raise NesyError(f"unknown profile {profile!r} (known: {', '.join(LEARNER_PROFILES)})",
                        field="profile")
    out = dict(LEARNER_PROFILES[profile].get(system, {}))
    given = dict(options or {})
    if system == "amie" and "min_conf" in given:
        out.pop("min_pca", None)          # the older name of the same threshold
    out.update(given)
    return out


#: built-in systems: name -> "module:Class"
BUILTIN = {"foil": "foil:Foil", "amie": "amie:Amie", "neural-lp": "neural_lp:NeuralLP",
           "ntp": "ntp:NTP", "aleph": "aleph:Aleph", "cmd": "command:Command"}


def is_var(t: str) -> bool:
    return t[:1].isupper() or t[:1] == "_"


@dataclass
class Rule:
    """A learned clause ``head :- body`` with an optional confidence in [0, 1] and a comment
    written above it (e.g. the statistics a miner computed)."""

    head: Atom
    body: tuple = ()
    confidence: float | None = None
    comment: str | None = None

    def clause(self) -> str:
        """The clause text with variables renamed X0, X1, ... in order of appearance."""
        names: dict[str, str] = {}

        def term(t):
            if is_var(t):
                if t not in names:
                    names[t] = f"X{len(names)}"
                return names[t]
            return t

        def atom(a):
            return f"{a[0]}({','.join(term(t) for t in a[1])})"

        h = atom(self.head)
        if not self.body:
            return f"{h}."
        return f"{h} :- {', '.join(atom(b) for b in self.body)}."

    def line(self) -> str:
        c = self.clause()
        return c if self.confidence is None else f"{self.confidence:.4f}::{c}"

    def is_safe(self) -> bool:
        bvars = {t for b in self.body for t in b[1] if is_var(t)}
        return all(t in bvars for t in self.head[1] if is_var(t))


@dataclass
class Dataset:
    """What a learner sees of a dataset folder: the training facts (``train.txt``) and the
    maximal rule length (``manifest.json``'s ``params.max_body``, else 2). Nothing of the
    rules or the evaluation sets."""

    path: Path
    facts: dict            # predicate -> set of argument tuples
    arity: dict            # predicate -> arity
    constants: list        # sorted constants of the training facts
    max_body: int = 2

    @property
    def train_file(self) -> Path:
        return self.path / "train.txt"

    @property
    def predicates(self) -> list[str]:
        return sorted(self.facts)


_FACT = re.compile(r"^\s*([a-z]\w*)\((.*)\)\s*\.\s*$")


def load_dataset(path) -> Dataset:
    """Read a dataset folder (``train.txt`` required); one :class:`NesyError` on bad input."""
    p = Path(path)
    tf = p / "train.txt"
    if not p.is_dir() or not tf.is_file():
        raise NesyError("not a RuDaS dataset folder (no train.txt)", file=str(p))
    facts: dict[str, set] = {}
    arity: dict[str, int] = {}
    consts: set[str] = set()
    folder = DataFolder(p)                  # contained: no symbolic link out, regular files
    for i, line in enumerate(folder.read_text("train.txt").splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("%"):
            continue
        m = _FACT.match(s)
        args = tuple(a.strip() for a in m.group(2).split(",")) if m else ()
        if not m or not all(args) or any(is_var(a) or "(" in a for a in args):
            raise NesyError("not a ground fact `p(c1,c2).`", file=str(tf), line=i)
        name = m.group(1)
        if arity.setdefault(name, len(args)) != len(args):
            raise NesyError(f"predicate {name} used with arities {arity[name]} and {len(args)}",
                            file=str(tf), line=i)
        facts.setdefault(name, set()).add(args)
        consts.update(args)
    if not facts:
        raise NesyError("the training set is empty", file=str(tf))
    max_body = 2
    mf = p / "manifest.json"
    if folder.exists("manifest.json"):
        try:
            max_body = int(folder.read_json("manifest.json")["params"]["max_body"])
        except (ValueError, KeyError, TypeError):
            raise NesyError("manifest.json has no integer params.max_body", file=str(mf)) from None
    return Dataset(p, facts, arity, sorted(consts), max_body)


@dataclass
class LearnerOptions:
    """Options every learner is built with (``--seed``, ``--max-body``, ``--targets``,
    ``--option KEY=VALUE``, progress bar, ``--time-limit``)."""

    seed: int = 0
    max_body: int | None = None       # None: the dataset's maximal rule length
    targets: list | None = None       # None: every predicate of the training set
    options: dict = field(default_factory=dict)
    progress: bool = False
    time_limit: float | None = None


class Learner:
    """Base class of the built-in learners: options in ``self.o``; ``opt(name, default,
    type)`` reads a ``--option`` with one clear error on a bad value."""

    #: the ``--option`` keys the learner understands: name -> help text
    OPTIONS: dict = {}

    def __init__(self, **kw):
        self.o = LearnerOptions(**kw)
        unknown = sorted(set(self.o.options) - set(self.OPTIONS))
        if unknown:
            known = ", ".join(sorted(self.OPTIONS)) or "none"
            raise NesyError(f"unknown option {unknown[0]!r} for this system (known: {known})",
                            field="option")

    def opt(self, name: str, default, typ=float):
        v = self.o.options.get(name)
        if v is None:
            return default
        try:
            return typ(v)
        except (TypeError, ValueError):
            raise NesyError(f"option {name} must be a {typ.__name__}, got {v!r}",
                            field="option") from None

    def max_body(self, ds: Dataset) -> int:
        return self.o.max_body if self.o.max_body is not None else ds.max_body

    def targets(self, ds: Dataset) -> list[str]:
        if self.o.targets is None:
            return ds.predicates
        return [t for t in self.o.targets if t in ds.facts]

    def learn(self, ds: Dataset) -> list:  # pragma: no cover - interface
        raise NotImplementedError


# --- parsing learned clauses (plug-in output) -----------------------------------------------

_ATOM = re.compile(r"\s*([a-z]\w*)\s*\(([^()]*)\)\s*")
_CONF = re.compile(r"^\s*%\s*confidence\s+(\S+)\s*$", re.I)


def _atom(text: str, where: dict) -> Atom:
    m = _ATOM.fullmatch(text)
    if not m:
        raise NesyError(f"not an atom `p(X,Y)`: {text.strip()!r}", **where)
    args = tuple(a.strip() for a in m.group(2).split(","))
    if not all(re.fullmatch(r"[A-Za-z_]\w*|\d+", a) for a in args):
        raise NesyError(f"bad argument in {text.strip()!r} (variables and constants only)", **where)
    return (m.group(1), args)


def _confidence(text: str, where: dict) -> float:
    try:
        c = float(text)
    except ValueError:
        c = float("nan")
    if not 0.0 <= c <= 1.0:
        raise NesyError(f"confidence must be a number in [0, 1], got {text!r}", **where)
    return c


def parse_clause(text: str, where: dict | None = None, *, check_safe: bool = True) -> Rule:
    """One clause ``[C::]head[ :- body].`` (final dot optional) as a :class:`Rule`."""
    where = where or {}
    s = text.strip()
    if s.endswith("."):
        s = s[:-1]
    conf = None
    if "::" in s:
        c, s = s.split("::", 1)
        conf = _confidence(c.strip(), where)
    head, sep, body = s.partition(":-")
    atoms = re.findall(r"[^,()]+\([^()]*\)|[^,\s][^,]*", body) if sep else []
    if sep and not body.strip():
        raise NesyError("empty rule body", **where)
    r = Rule(_atom(head, where), tuple(_atom(a, where) for a in atoms), conf)
    if check_safe and not r.is_safe():
        raise NesyError("unsafe rule: a head variable does not occur in the body", **where)
    return r


def parse_rules(text: str, source: str | None = None, *, drop_unsafe: bool = False) -> list[Rule]:
    """The clauses of a learned-rules text: one per line or spread over lines up to the final
    dot; ``%`` comments; ``% confidence C`` on the line before a clause is the same as
    ``C::clause``. A bad clause is one :class:`NesyError` with its line; an unsafe one too,
    unless ``drop_unsafe`` (then it is left out)."""
    rules, cur, start, pending = [], "", 0, None
    for i, raw in enumerate(text.splitlines(), 1):
        m = _CONF.match(raw)
        if m and not cur:
            pending = _confidence(m.group(1), {"file": source, "line": i})
            continue
        line = raw.split("%", 1)[0].strip()
        if not line:
            continue
        if not cur:
            start = i
        cur += " " + line
        if line.endswith("."):
            r = parse_clause(cur, {"file": source, "line": start}, check_safe=not drop_unsafe)
            if pending is not None and r.confidence is None:
                r.confidence = pending
            pending = None
            if r.is_safe():
                rules.append(r)
            cur = ""
    if cur.strip():
        raise NesyError("clause without a final dot", file=source, line=start)
    return rules


def as_rules(items, source: str) -> list[Rule]:
    """A learner's result (Rule, clause string or (clause, confidence)) as :class:`Rule`s."""
    out = []
    for k, it in enumerate(items):
        where = {"file": source, "field": f"rule[{k}]"}
        if isinstance(it, Rule):
            r = it
        elif isinstance(it, str):
            r = parse_clause(it, where)
        elif isinstance(it, (tuple, list)) and len(it) == 2 and isinstance(it[0], str):
            r = parse_clause(it[0], where)
            r.confidence = _confidence(str(it[1]), where) if it[1] is not None else None
        else:
            raise NesyError(f"a learner returned {type(it).__name__}, not a rule", **where)
        if not r.is_safe():
            raise NesyError("unsafe rule: a head variable does not occur in the body", **where)
        out.append(r)
    return out


# --- systems ------------------------------------------------------------------------------

def systems() -> dict:
    """Every ``--system`` name: the built-ins and the installed entry points of
    ``nesybench.rudas_learners`` (name -> loader description)."""
    out = {k: f"nesybench.rudas.learners.{v}" for k, v in BUILTIN.items()}
    for ep in _entry_points():
        out.setdefault(ep.name, ep.value)
    return out


def _entry_points():
    from importlib.metadata import entry_points  # noqa: PLC0415
    return list(entry_points(group=ENTRY_POINT_GROUP))


def learner_class(system: str):
    """The class of ``system`` (a built-in or an entry point); one error for unknown names."""
    if system in BUILTIN:
        import importlib  # noqa: PLC0415
        mod, cls = BUILTIN[system].split(":")
        return getattr(importlib.import_module(f"{__name__}.{mod}"), cls)
    for ep in _entry_points():
        if ep.name == system:
            try:
                return ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plug-in is the user's input
                raise NesyError(f"cannot load plug-in {ep.value}: {exc}",
                                field="system") from None
    raise NesyError(f"unknown system {system!r} (known: {', '.join(systems())})",
                    field="system")


def learn(dataset, system: str, **kw) -> tuple[list[Rule], dict]:
    """Run ``system`` on ``dataset`` (a folder or :class:`Dataset`): (rules, info) where info
    has system, seconds, targets and rules."""
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    cls = learner_class(system)
    learner = cls(**kw)
    t0 = time.perf_counter()
    rules = as_rules(learner.learn(ds) or [], source=f"system {system}")
    info = {"system": system, "dataset": str(ds.path), "seconds": time.perf_counter() - t0,
            "rules": len(rules), "seed": kw.get("seed", 0)}
    return rules, info


def bar(items, desc: str, unit: str, enabled: bool):
    """A tqdm bar on stderr over ``items`` (drawn after :func:`nesybench.io.progress_delay`
    seconds, like the other commands' bars; nothing when not ``enabled``)."""
    from tqdm import tqdm  # noqa: PLC0415
    from ...io import progress_delay  # noqa: PLC0415
    return tqdm(items, desc=desc, unit=unit, leave=False, disable=not enabled,
                delay=progress_delay())


def render(rules: list[Rule], header: str = "") -> str:
    """The learned-rules file: header comment lines, then per rule its comment and clause."""
    lines = [f"% {h}" for h in header.splitlines() if h]
    for r in rules:
        if r.comment:
            lines.append(f"% {r.comment}")
        lines.append(r.line())
    return "\n".join(lines) + "\n"
