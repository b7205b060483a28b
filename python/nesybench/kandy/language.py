"""The KANDY task language: YAML curricula parsed into a typed, validated tree.

A curriculum file is either a YAML list of tasks (the reference KANDYBenchmark's
``easy.yml``/``hard.yml`` format) or a mapping ``{config: {...}, tasks: [...]}``. Every node of
a positive/negative set is parsed into one of the classes below, with the dotted *field path*
and the *line* it came from, so that every error names file, task, field and line.

Node kinds
----------
:class:`Atom`      ``{shape: S, color: C, size: Z}`` with ``~`` (any), ``not_X``, ``a|b|c``;
:class:`Comp`      a compositional operator (13) or a random choice among them (``any_*``,
                   ``quadrant_or_center``), applied to a list of children;
:class:`ListOp`    a list-expansion operator, after grounding (``repeat``) or before
                   (``repeat_before``), with its parameters;
:class:`Store`     ``store`` / ``store_before``: the list itself, remembered under an alias;
:class:`Recall`    ``recall``: what was stored under an alias;
:class:`SetOp`     ``union``, ``intersection``, ``difference``, ``symmetric_difference`` over
                   atomic templates: one atomic template out.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml

from ..errors import NesyError, yaml_error
from ..yamlsafe import SafeLoader as BoundedSafeLoader
from .symbols import ATTRIBUTES, COMPOSITIONS, Domain

#: Random compositional choices and the operators each picks from (in this order).
#: ``any_non_diag`` picks stack or side_by_side as the reference generator does (the
#: background knowledge's ``non_diag/1`` is broader: it also holds the reduce_bb variants and grid).
RANDOM_COMPOSITIONS = {
    "any_composition": COMPOSITIONS,
    "any_displacement": ("stack", "side_by_side", "stack_reduce_bb", "side_by_side_reduce_bb",
                         "diag_ul_lr", "diag_ll_ur", "grid"),
    "any_line": ("stack", "side_by_side", "stack_reduce_bb", "side_by_side_reduce_bb",
                 "diag_ul_lr", "diag_ll_ur"),
    "any_diag": ("diag_ul_lr", "diag_ll_ur"),
    "any_non_diag": ("stack", "side_by_side"),
    "any_quadrant": ("quadrant_ul", "quadrant_ur", "quadrant_ll", "quadrant_lr"),
    "quadrant_or_center": ("in", "quadrant_ul", "quadrant_ur", "quadrant_ll", "quadrant_lr"),
}

#: List-expansion operators -> their parameters (besides ``list``). ``None``: the value is
#: the list itself (``permute: [...]``).
LIST_OPERATORS: dict[str, tuple[str, ...] | None] = {
    "first": ("n",), "last": ("n",), "shift": ("n",), "repeat": ("n",),
    "mirror": None, "palindrome": None, "sort": ("order", "keys"), "argsort": ("idx",),
    "sample": ("n",), "pick": ("n",), "permute": None, "random_shift": None,
    "random_repeat": ("min", "max"),
}
#: Operators that also exist in a ``*_before`` form (expanded before grounding). Sorting needs
#: grounded attributes, so ``sort``/``argsort`` have none (as in the paper).
BEFORE_FORMS = {"first", "last", "shift", "repeat", "mirror", "palindrome", "sample", "pick",
                "permute", "random_shift", "random_repeat"}
SET_OPERATORS = ("union", "intersection", "difference", "symmetric_difference")
MEMORY_OPERATORS = ("store", "store_before", "recall")

TASK_KEYS = {
    "name": str, "samples": int, "train_split": float, "val_split": float,
    "gamma": float, "beta": float, "noisy_color": bool, "noisy_size": bool,
    "positive_set": list, "negative_set": list, "positive_rule": str, "rule_file": str,
    "seed": int, "patience": int, "description": str,
}
REQUIRED_TASK_KEYS = ("name", "samples", "train_split", "val_split", "positive_set",
                      "negative_set")
TASK_DEFAULTS = {"gamma": 1.0, "beta": 1.0, "noisy_color": True, "noisy_size": True,
                 "patience": 1000}

#: Documented caps (docs/guides/safety.md, "Limits at a glance"): the longest list a list-expansion
#: operator may produce (checked before allocating), the largest ``n``/``max`` parameter, and
#: the deepest nesting of operators in a set.
MAX_LIST_ITEMS = 1000
MAX_DEPTH = 64
#: ``config:`` keys and their types (``task_defaults`` only holds a YAML anchor).
CONFIG_KEYS = {
    "seed": int, "task_defaults": dict, "shapes": list, "colors": list, "sizes": list,
    "canvas_size": (int, list), "padding": (int, float), "bg_color": (str, list),
    "size_noise": (int, float), "h_sigma": (int, float), "s_sigma": (int, float),
    "v_sigma": (int, float), "render": dict,
}


def validate_config(config, source: str | None = None) -> dict:
    """The checking function for a curriculum's ``config:`` mapping (types, ranges, unknown
    keys); returns it as a plain dict. Rendering options are checked again by RenderConfig."""
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise NesyError(f"config must be a mapping, got {config!r}", file=source,
                        field="config", line=_line(config))
    for key, val in config.items():
        if key not in CONFIG_KEYS:
            raise NesyError(f"unknown config key {key!r} (known: {', '.join(sorted(CONFIG_KEYS))})",
                            file=source, field=f"config.{key}", line=_line(config))
        typ = CONFIG_KEYS[key]
        if isinstance(val, bool) or not isinstance(val, typ):
            names = " or ".join(t.__name__ for t in (typ if isinstance(typ, tuple) else (typ,)))
            raise NesyError(f"must be of type {names}, got {val!r}", file=source,
                            field=f"config.{key}", line=_line(config))
    seed = config.get("seed")
    if seed is not None and not 0 <= seed < 2 ** 63:
        raise NesyError(f"seed must be in 0..2^63-1, got {seed}", file=source,
                        field="config.seed", line=_line(config))
    return dict(config)


# --------------------------------------------------------------------------- YAML with lines
class _Map(dict):
    line: int = 0


class _Seq(list):
    line: int = 0


class _LineLoader(BoundedSafeLoader):
    """SafeLoader that remembers the 1-based line of every mapping and sequence.

    Anchors, aliases and merges (``<<: *base``) are resolved by SafeLoader as usual; a
    document expanding past ``nesybench.yamlsafe.MAX_YAML_NODES`` nodes is refused.
    """

    def construct_mapping(self, node, deep=False):
        data = _Map(super().construct_mapping(node, deep=True))
        data.line = node.start_mark.line + 1
        return data

    def construct_sequence(self, node, deep=False):
        data = _Seq(super().construct_sequence(node, deep=True))
        data.line = node.start_mark.line + 1
        return data


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                            _LineLoader.construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
                            _LineLoader.construct_sequence)


def _line(obj, default=None):
    return getattr(obj, "line", default)


# --------------------------------------------------------------------------- nodes
@dataclass(frozen=True)
class Node:
    path: str = field(compare=False)
    line: int | None = field(compare=False)

    @cached_property
    def expands_to_itself(self) -> bool:
        """Whether the before-grounding expansion (:mod:`~nesybench.kandy.expand`) returns this
        node unchanged whatever the random stream and the aliases: no random composition,
        set operator, ``*_before`` operator or ``store_before`` below it. Such a subtree is
        taken as it is instead of being rebuilt node by node. (Kept in the instance's
        ``__dict__``, which a frozen dataclass allows; fields, equality and hash unchanged.)"""
        if isinstance(self, (Atom, Recall)):
            return True
        if isinstance(self, Comp):
            fixed = self.op not in RANDOM_COMPOSITIONS
        elif isinstance(self, (ListOp, Store)):
            fixed = not self.before
        else:                       # set operators depend on the aliases of the sample
            return False
        return fixed and all(child.expands_to_itself for child in self.children)


@dataclass(frozen=True)
class Atom(Node):
    """An atomic template: the allowed values of each attribute, in domain order."""

    shape: tuple[str, ...] = ()
    color: tuple[str, ...] = ()
    size: tuple[str, ...] = ()
    #: which attributes were written as ``~`` (matters inside set operators)
    any: frozenset = frozenset()

    def values(self, attribute: str) -> tuple[str, ...]:
        return getattr(self, attribute)


@dataclass(frozen=True)
class Comp(Node):
    op: str = ""
    children: tuple[Node, ...] = ()


@dataclass(frozen=True)
class ListOp(Node):
    op: str = ""            # base name, e.g. "repeat"
    before: bool = False    # True for the *_before form
    params: tuple = ()      # ((name, value), ...)
    children: tuple[Node, ...] = ()

    def param(self, name):
        return self._params[name]

    @cached_property
    def _params(self) -> dict:
        # kept in the instance's __dict__ (a frozen dataclass allows that; fields unchanged)
        return dict(self.params)


@dataclass(frozen=True)
class Store(Node):
    alias: str = ""
    before: bool = False
    children: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Recall(Node):
    alias: str = ""


@dataclass(frozen=True)
class SetOp(Node):
    op: str = ""
    items: tuple[Node, ...] = ()


# --------------------------------------------------------------------------- tasks
@dataclass
class TaskSpec:
    """One binary-classification task of a curriculum (all fields validated)."""

    index: int
    name: str
    samples: int
    train_split: float
    val_split: float
    gamma: float
    beta: float
    noisy_color: bool
    noisy_size: bool
    positive_set: tuple[Node, ...]
    negative_set: tuple[Node, ...]
    rule_text: str | None = None
    rule_source: str | None = None      # file holding the rule text (YAML or .pl)
    rule_line: int = 0                  # line offset of the rule text inside rule_source
    seed: int | None = None
    patience: int = 1000
    description: str = ""
    line: int | None = None
    source: str | None = None           # the curriculum file

    @property
    def label(self) -> str:
        return f"{self.index} '{self.name}'"

    def split_sizes(self) -> tuple[int, int, int]:
        """Requested (train, val, test) sizes: rounded halves-up, test takes the rest."""
        n_train = int(math.floor(self.samples * self.train_split + 0.5))
        n_val = int(math.floor(self.samples * self.val_split + 0.5))
        return n_train, n_val, self.samples - n_train - n_val


@dataclass
class Curriculum:
    """A parsed curriculum: its tasks, its attribute domain and where it came from."""

    tasks: list[TaskSpec]
    domain: Domain
    source: str
    config: dict = field(default_factory=dict)


# --------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, domain: Domain, source: str, task: str | None):
        self.domain = domain
        self.source = source
        self.task = task

    def error(self, message: str, path: str, line: int | None) -> NesyError:
        return NesyError(message, file=self.source, task=self.task, field=path, line=line)

    # A set (positive/negative) is a list of alternatives.
    def parse_set(self, value, path: str, line) -> tuple[Node, ...]:
        if not isinstance(value, list) or not value:
            raise self.error("must be a non-empty list of alternatives", path, _line(value, line))
        return tuple(self.parse_node(v, f"{path}[{i}]", _line(value, line))
                     for i, v in enumerate(value))

    def parse_list(self, value, path: str, line) -> tuple[Node, ...]:
        if not isinstance(value, list):
            raise self.error("expected a list", path, _line(value, line))
        return tuple(self.parse_node(v, f"{path}[{i}]", _line(value, line))
                     for i, v in enumerate(value))

    def parse_node(self, value, path: str, line) -> Node:
        line = _line(value, line)
        if path.count("[") > MAX_DEPTH:
            raise self.error(f"nested more than {MAX_DEPTH} levels deep", path, line)
        if not isinstance(value, dict):
            raise self.error(f"expected an object or an operator, got {_short(value)}", path, line)
        if not all(isinstance(k, str) for k in value):
            bad = next(k for k in value if not isinstance(k, str))
            raise self.error(f"operator and attribute names are strings, got {bad!r}", path, line)
        keys = set(value)
        if keys & set(ATTRIBUTES) or not keys:
            return self.parse_atom(value, path, line)
        if len(keys) != 1:
            raise self.error(f"an operator node must have exactly one key, got {sorted(map(str, keys))}",
                             path, line)
        (op, arg), = value.items()
        sub = f"{path}.{op}"
        if op in COMPOSITIONS or op in RANDOM_COMPOSITIONS:
            return Comp(sub, line, op=op, children=self.parse_list(arg, sub, line))
        if op in SET_OPERATORS:
            items = self.parse_list(arg, sub, line)
            if not items:
                raise self.error(f"{op} needs at least one item", sub, line)
            for item in items:
                if not isinstance(item, (Atom, Recall, SetOp)):
                    raise self.error(f"{op} takes only atomic objects, recall or set operators",
                                     item.path, item.line)
            node = SetOp(sub, line, op=op, items=items)
            if not _has_recall(node):      # fully static: check it is non-empty right now
                try:
                    resolve_set(node, self.domain, {}, self)
                except NesyError as exc:
                    raise exc.where(file=self.source, task=self.task) from None
            return node
        if op == "recall":
            alias = self.param(arg, "alias", str, sub, line)
            return Recall(sub, line, alias=alias)
        if op in ("store", "store_before"):
            alias = self.param(arg, "alias", str, sub, line)
            kids = self.parse_list(self.param(arg, "list", list, sub, line), f"{sub}.list", line)
            return Store(sub, line, alias=alias, before=op.endswith("_before"), children=kids)
        base, before = (op[:-7], True) if op.endswith("_before") else (op, False)
        if base in LIST_OPERATORS and (not before or base in BEFORE_FORMS):
            return self.parse_list_op(base, before, arg, sub, line)
        raise self.error(f"unknown operator {op!r}", path, line)

    def param(self, arg, name, typ, path, line):
        if not isinstance(arg, dict) or name not in arg:
            raise self.error(f"missing parameter {name!r}", path, line)
        val = arg[name]
        if typ is int and (isinstance(val, bool) or not isinstance(val, int)):
            raise self.error(f"parameter {name!r} must be an integer, got {val!r}",
                             f"{path}.{name}", line)
        if typ is str and not isinstance(val, str):
            raise self.error(f"parameter {name!r} must be a string, got {val!r}",
                             f"{path}.{name}", line)
        if typ is list and not isinstance(val, list):
            raise self.error(f"parameter {name!r} must be a list", f"{path}.{name}", line)
        return val

    def parse_list_op(self, base, before, arg, path, line) -> ListOp:
        names = LIST_OPERATORS[base]
        if names is None:
            kids = self.parse_list(arg, path, line)
            return ListOp(path, line, op=base, before=before, children=kids)
        if not isinstance(arg, dict):
            raise self.error(f"{base} takes parameters {list(names)} and a list", path, line)
        unknown = set(arg) - set(names) - {"list"}
        if unknown:
            raise self.error(f"unknown parameter(s) {sorted(map(str, unknown))} (expected "
                             f"{list(names) + ['list']})", path, line)
        params = []
        for name in names:
            if name == "order":
                val = self.param(arg, name, str, path, line).lower()
                if val not in ("asc", "desc"):
                    raise self.error(f"order must be asc or desc, got {val!r}",
                                     f"{path}.order", line)
            elif name == "keys":
                val = self.param(arg, name, list, path, line)
                bad = [k for k in val if k not in ("n", "shape", "color", "size")]
                if bad or not val:
                    raise self.error(f"sort keys must be a non-empty list of n, shape, color, "
                                     f"size; got {val!r}", f"{path}.keys", line)
                val = tuple(val)
            elif name == "idx":
                val = self.param(arg, name, list, path, line)
                if not all(isinstance(i, int) and not isinstance(i, bool) for i in val):
                    raise self.error("idx must be a list of integers", f"{path}.idx", line)
                val = tuple(val)
            else:
                val = self.param(arg, name, int, path, line)
                if name != "n" or base != "shift":
                    if val < 0:
                        raise self.error(f"{name} must be >= 0, got {val}", f"{path}.{name}",
                                         line)
                    if val > MAX_LIST_ITEMS:
                        raise self.error(f"{name} must be <= {MAX_LIST_ITEMS} (the cap on list "
                                         f"sizes), got {val}", f"{path}.{name}", line)
            params.append((name, val))
        if base == "random_repeat" and dict(params)["min"] > dict(params)["max"]:
            raise self.error("random_repeat needs min <= max", path, line)
        kids = self.parse_list(self.param(arg, "list", list, path, line), f"{path}.list", line)
        return ListOp(path, line, op=base, before=before, params=tuple(params), children=kids)

    def parse_atom(self, value, path, line) -> Atom:
        unknown = set(value) - set(ATTRIBUTES)
        if unknown:
            raise self.error(f"unknown attribute(s) {sorted(map(str, unknown))} (an atomic object has "
                             f"shape, color, size)", path, line)
        resolved = {}
        anys = set()
        for attr in ATTRIBUTES:
            domain = self.domain.values(attr)
            spec = value.get(attr)
            if spec is None or spec == "~":
                resolved[attr] = domain
                anys.add(attr)
                continue
            if not isinstance(spec, str):
                raise self.error(f"{attr} must be a string, got {spec!r}", f"{path}.{attr}", line)
            if spec.startswith("not_"):
                excluded = spec[4:]
                if excluded not in domain:
                    raise self.error(f"unknown {attr} {excluded!r} (known: {', '.join(domain)})",
                                     f"{path}.{attr}", line)
                resolved[attr] = tuple(v for v in domain if v != excluded)
                continue
            choices = [c.strip() for c in spec.split("|")]
            for c in choices:
                if c not in domain:
                    raise self.error(f"unknown {attr} {c!r} (known: {', '.join(domain)})",
                                     f"{path}.{attr}", line)
            resolved[attr] = tuple(v for v in domain if v in choices)
        return Atom(path, line, any=frozenset(anys), **resolved)


def _has_recall(node) -> bool:
    if isinstance(node, Recall):
        return True
    if isinstance(node, SetOp):
        return any(_has_recall(i) for i in node.items)
    return False


def resolve_set(node: SetOp, domain: Domain, aliases: dict, parser_or_ctx) -> Atom:
    """Apply a set operator attribute by attribute, left to right, and return the template.

    Each atomic template stands for the set of values of each attribute. A ``~`` on the
    first item is the whole domain; on a later item it is the operator's neutral element
    (nothing added, removed or toggled; for ``intersection`` the whole domain), as in the
    reference generator. An empty result for any attribute is an error.
    """
    def item_sets(item) -> tuple[dict, frozenset]:
        if isinstance(item, SetOp):
            atom = resolve_set(item, domain, aliases, parser_or_ctx)
        elif isinstance(item, Recall):
            stored = aliases.get(item.alias)
            if stored is None:
                raise NesyError(f"recall of alias {item.alias!r} inside a set operator needs a "
                                f"store_before of that alias earlier in the sample",
                                field=item.path, line=item.line)
            if len(stored) != 1 or not isinstance(stored[0], Atom):
                raise NesyError(f"alias {item.alias!r} recalled inside {node.op} must hold "
                                f"exactly one atomic object", field=item.path, line=item.line)
            atom = stored[0]
        else:
            atom = item
        return {a: set(atom.values(a)) for a in ATTRIBUTES}, atom.any

    result: dict[str, set] = {}
    for i, item in enumerate(node.items):
        sets, anys = item_sets(item)
        for attr in ATTRIBUTES:
            full = set(domain.values(attr))
            current = sets[attr]
            if i == 0:
                result[attr] = set(current)
                continue
            if attr in anys:            # neutral element
                current = full if node.op == "intersection" else set()
            if node.op == "union":
                result[attr] |= current
            elif node.op == "intersection":
                result[attr] &= current
            elif node.op == "difference":
                result[attr] -= current
            else:
                result[attr] ^= current
    for attr in ATTRIBUTES:
        if not result[attr]:
            raise NesyError(f"{node.op} gives an empty set of {attr} values",
                            field=node.path, line=node.line)
    return Atom(node.path, node.line, any=frozenset(),
                **{a: tuple(v for v in domain.values(a) if v in result[a]) for a in ATTRIBUTES})


def _parse_task(raw, index: int, domain: Domain, source: str, base_dir: Path) -> TaskSpec:
    line = _line(raw)
    name = raw.get("name") if isinstance(raw, dict) else None
    label = f"{index}" + (f" '{name}'" if isinstance(name, str) else "")
    parser = _Parser(domain, source, label)
    if not isinstance(raw, dict):
        raise parser.error("a task must be a mapping of fields", "", line)
    unknown = set(raw) - set(TASK_KEYS)
    if unknown:
        raise parser.error(f"unknown field(s) {sorted(map(str, unknown))}", sorted(map(str, unknown))[0], line)
    for key in REQUIRED_TASK_KEYS:
        if key not in raw:
            raise parser.error("required field is missing", key, line)
    values = dict(TASK_DEFAULTS)
    for key, typ in TASK_KEYS.items():
        if key not in raw or key in ("positive_set", "negative_set"):
            continue
        val = raw[key]
        if typ is float and isinstance(val, int) and not isinstance(val, bool):
            val = float(val)
        if typ is int and isinstance(val, bool) or not isinstance(val, typ):
            raise parser.error(f"must be of type {typ.__name__}, got {val!r}", key, line)
        values[key] = val
    if values["samples"] < 3:
        raise parser.error("must be >= 3 (one sample per split at least)", "samples", line)
    for key in ("train_split", "val_split"):
        if not 0.0 < values[key] < 1.0:
            raise parser.error("must be in (0, 1)", key, line)
    if values["train_split"] + values["val_split"] >= 1.0:
        raise parser.error("train_split + val_split must be < 1 (the rest is the test split)",
                           "val_split", line)
    for key in ("gamma", "beta"):
        if not 0.0 <= values[key] <= 1.0:
            raise parser.error("must be in [0, 1]", key, line)
    if values["patience"] < 1:
        raise parser.error("must be >= 1", "patience", line)
    rule_text, rule_source, rule_line = None, None, 0
    if "positive_rule" in values and "rule_file" in values:
        raise parser.error("give either positive_rule or rule_file, not both", "rule_file", line)
    if "positive_rule" in values:
        rule_text, rule_source = values["positive_rule"], source
        rule_line = _scalar_line(source, raw, "positive_rule")
    elif "rule_file" in values:
        try:
            rule_source, rule_text = read_rule_file(values["rule_file"], base_dir)
        except NesyError as exc:
            raise parser.error(exc.message if exc.file in (None, source) else
                               f"{exc.file}: {exc.message}", "rule_file", line) from None
    spec = TaskSpec(
        index=index, name=values["name"], samples=values["samples"],
        train_split=values["train_split"], val_split=values["val_split"],
        gamma=values["gamma"], beta=values["beta"], noisy_color=values["noisy_color"],
        noisy_size=values["noisy_size"],
        positive_set=parser.parse_set(raw["positive_set"], "positive_set", line),
        negative_set=parser.parse_set(raw["negative_set"], "negative_set", line),
        rule_text=rule_text, rule_source=rule_source, rule_line=rule_line,
        seed=values.get("seed"), patience=values["patience"],
        description=values.get("description", ""), line=line, source=source)
    if min(spec.split_sizes()) < 1:
        raise parser.error(f"splits {spec.split_sizes()} leave a split empty", "samples", line)
    return spec


def _scalar_line(source: str, raw, key: str) -> int:
    """Line just before the text of ``key`` in the YAML (so rule line 1 maps onto it)."""
    lines = getattr(raw, "_key_lines", None)
    if lines and key in lines:
        return lines[key]
    return 0


class _KeyLineLoader(_LineLoader):
    """Also remember on which line each key's value starts (for rule-text line numbers)."""

    def construct_mapping(self, node, deep=False):
        data = super().construct_mapping(node, deep)
        key_lines = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                start = value_node.start_mark.line + 1
                # Block scalars (>- or |) start on the line after the indicator.
                if isinstance(value_node, yaml.ScalarNode) and value_node.style in (">", "|"):
                    start += 1
                key_lines[key_node.value] = start - 1
        data._key_lines = key_lines
        return data


_KeyLineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                               _KeyLineLoader.construct_mapping)


#: the shipped folder of KANDY task rules: a curriculum's ``rule_file`` may name one of its
#: files (``kb/kandy/rules/easy/t00.pl``)
RULES_FOLDER = "kb/kandy/rules"
#: the largest rule file read from a curriculum's folder
MAX_RULE_BYTES = 1 << 20


def rule_file_name(value, base_dir) -> tuple[str, str]:
    """Where a curriculum's ``rule_file`` is: ``("folder", rel)`` for a file inside the
    curriculum's folder ``base_dir`` (present there), ``("shipped", name)`` for the name of a
    rule nesybench ships (``kb/kandy/rules/easy/t00.pl``). Anything else is one
    :class:`NesyError`: an absolute path, a path with ``..`` (it would leave the curriculum's
    folder; a shipped rule is named, not reached by ``../../kb/...``), a file that is missing,
    or a link that leaves the folder."""
    from ..folder import DataFolder, relative  # noqa: PLC0415
    from ..paths import shipped  # noqa: PLC0415
    if not isinstance(value, str) or not value.strip():
        raise NesyError(f"expected a file name, got {value!r}")
    text = value.strip().replace("\\", "/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts or text.startswith(("/", "~")):
        top = RULES_FOLDER.split("/")
        hint = next(("/".join(parts[i:]) for i in range(len(parts))
                     if parts[i:i + len(top)] == top
                     and shipped("/".join(parts[i:]), folders=("kb",)) is not None), None)
        raise NesyError(f"rule file {value!r} is outside the curriculum's folder; a rule file "
                        "is a file beside the curriculum or the name of a shipped rule"
                        + (f" (write {hint})" if hint else f" ({RULES_FOLDER}/easy/t00.pl)"))
    rel = relative(value)
    folder = DataFolder(base_dir)
    if folder.exists(rel):                  # inside the folder, a regular file, no link out
        return "folder", rel
    if shipped(rel, folders=("kb",)) is not None and rel.startswith(RULES_FOLDER + "/"):
        return "shipped", rel
    raise NesyError(f"rule file not found: {rel} (neither in the curriculum's folder "
                    f"{base_dir} nor a shipped rule such as {RULES_FOLDER}/easy/t00.pl)")


def read_rule_file(value, base_dir) -> tuple[str, str]:
    """``(label, text)`` of a curriculum's ``rule_file`` (see :func:`rule_file_name`): a file
    of the curriculum's folder read through :class:`~nesybench.folder.DataFolder` (bounded,
    UTF-8), or a shipped rule read by its name."""
    from ..folder import DataFolder  # noqa: PLC0415
    from ..paths import shipped, shipped_text  # noqa: PLC0415
    kind, name = rule_file_name(value, base_dir)
    if kind == "shipped":
        return str(shipped(name, folders=("kb",))), shipped_text(name, folders=("kb",))
    folder = DataFolder(base_dir)
    return folder.label(name), folder.read_text(name, max_bytes=MAX_RULE_BYTES)


def load_curriculum(path: str | os.PathLike, *, domain: Domain | None = None) -> Curriculum:
    """Parse and validate a curriculum YAML file.

    Raises :class:`NesyError` naming file, task, field and line for: a missing or unreadable
    file, malformed YAML, unknown fields/operators/attribute values, bad parameters, static
    set operators with an empty result, missing rule files.
    """
    path = Path(path)
    source = str(path)
    from ..folder import read_input_text  # noqa: PLC0415
    if not path.exists() and not path.is_symlink():
        raise NesyError("curriculum file not found", file=source)
    try:
        text = read_input_text(path)        # a regular file (no FIFO, device), bounded
    except FileNotFoundError:
        raise NesyError("curriculum file not found", file=source) from None
    except UnicodeDecodeError:
        raise NesyError("curriculum is not UTF-8 text", file=source) from None
    except OSError as exc:
        raise NesyError(f"cannot read curriculum: {exc.strerror}", file=source) from None
    try:
        data = yaml.load(text, Loader=_KeyLineLoader)  # noqa: S506 - SafeLoader subclass
    except (yaml.YAMLError, RecursionError) as exc:
        raise yaml_error(exc, source) from None
    config: dict = {}
    if isinstance(data, dict):
        unknown = set(data) - {"tasks", "config"}
        if unknown or "tasks" not in data:
            raise NesyError("a curriculum mapping has the keys 'tasks' (list) and optional "
                            f"'config'; got {sorted(map(str, data))}", file=source, line=_line(data))
        config = validate_config(data.get("config"), source)
        tasks_raw = data["tasks"]
    else:
        tasks_raw = data
    if not isinstance(tasks_raw, list) or not tasks_raw:
        raise NesyError("a curriculum is a non-empty list of tasks", file=source)
    if domain is None:
        domain = domain_from_config(config, source)
    tasks = [_parse_task(raw, i, domain, source, path.parent) for i, raw in enumerate(tasks_raw)]
    return Curriculum(tasks=tasks, domain=domain, source=source, config=config)


def _short(value, n: int = 60) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= n else text[:n] + "..."


def domain_from_config(config: dict, source: str | None = None) -> Domain:
    """Build the attribute :class:`Domain` from a curriculum's ``config`` (defaults otherwise)."""
    default = Domain()
    values = {}
    for key, attr in (("shapes", "shapes"), ("colors", "colors"), ("sizes", "sizes")):
        raw = config.get(key)
        if raw is None:
            values[attr] = getattr(default, attr)
            continue
        names = [next(iter(x)) if isinstance(x, dict) else x for x in raw] \
            if isinstance(raw, list) else list(raw)
        for n in names:
            if not isinstance(n, str) or not n.isalpha() or not n.islower():
                raise NesyError(f"{key} values must be lowercase words, got {n!r}",
                                file=source, field=f"config.{key}")
        values[attr] = tuple(names)
    if not set(values["shapes"]) <= {"triangle", "square", "circle"}:
        raise NesyError("shapes must be among triangle, square, circle (the renderer draws "
                        "these)", file=source, field="config.shapes")
    return Domain(**values)
