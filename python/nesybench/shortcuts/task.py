"""Reasoning-shortcut tasks: concepts, knowledge (ASP, in ``kb/shortcuts/``) and a support.

A task YAML (``curricula/rs/*.yaml``)::

    name: xor3
    concepts:                      # expanded in order into the concept vector
      - {name: b, count: 3, domain: [0, 1]}            # variables b(1), b(2), b(3)
      - {name: shape, count: [2, 3], domain: [circle, square, triangle]}  # shape(1,1)...
      - {name: green_light, domain: [0, 1]}            # a single variable green_light
    knowledge: kb/shortcuts/xor.lp # ASP defining y(K, L, Y) from c(K, T, X)
    formula: "b1 ^ b2 ^ b3"        # optional: for kb/shortcuts/formula.lp
    coef: {s: {d(1): 2, d(2): 1}}  # optional: for kb/shortcuts/linear.lp
    maps: separate                 # shared (one map per concept name) | separate (one per variable)
    support: all                   # | [[0, 1, 1], ...] | {prop_in_dist: 0.5, seed: 0}
                                   # | {sample: 300, seed: 0} | {file: x.csv}
                                   # | {generator: miniboia, n_config: 100, seed: 0}
    supervised: []                 # concept supervision on these variables
    # a concept may add prompts: "a photo of the digit {value}" (or a list of templates):
    # the zero-shot CLIP prompts of its values (nesybench.nesy.learn.clip)
    depends: {stop: [red_light, ...]}   # optional: which variables each label reads (decomposition)

Concept values are ints or lowercase atoms; a *world* is a tuple with one value per variable.
"""
from __future__ import annotations

import functools

import ast
import csv
import io
import itertools
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import ROOT
from ..errors import NesyError, yaml_error
from ..io import derive_seed
from ..logic import asp
from ..paths import data_root, shipped
from ..folder import DataFolder, parse_json, read_input_text
from ..yamlsafe import safe_load

LABELS_LP = "prolog/shortcuts/labels.lp"

_ATOM = re.compile(r"^[a-z][A-Za-z0-9_]*$")


@dataclass
class Variable:
    """One concept variable: ``term`` (ASP term as a Python tuple/str), ``name`` (display),
    ``concept`` (the concept it instantiates), ``domain`` (tuple of values)."""

    name: str
    term: object
    concept: str
    domain: tuple


@dataclass
class Task:
    """A reasoning-shortcut task (see module docstring)."""

    name: str
    variables: list[Variable]
    knowledge: list[Path]
    params: list[tuple] = field(default_factory=list)
    maps: str = "shared"
    support_spec: object = "all"
    supervised: list[str] = field(default_factory=list)
    depends: dict[str, list[str]] | None = None
    labels: list[str] | None = None
    source: str | None = None
    raw: dict = field(default_factory=dict)

    # -- worlds ---------------------------------------------------------------------------
    @property
    def n_worlds(self) -> int:
        n = 1
        for v in self.variables:
            n *= len(v.domain)
        return n

    def all_worlds(self):
        return itertools.product(*[v.domain for v in self.variables])

    def var_index(self, name: str) -> int:
        for i, v in enumerate(self.variables):
            if v.name == name or str(v.term) == name:
                return i
        raise NesyError(f"unknown concept variable {name!r} (have: "
                        f"{', '.join(v.name for v in self.variables)})", file=self.source)

    def groups(self, maps: str | None = None) -> list[tuple[str, tuple, list[int]]]:
        """Map groups ``(key, domain, variable indices)``: one per concept name (shared) or
        one per variable (separate)."""
        maps = maps or self.maps
        if maps not in ("shared", "separate"):
            raise NesyError(f"maps must be 'shared' or 'separate', not {maps!r}", file=self.source)
        out: dict[str, tuple[tuple, list[int]]] = {}
        for i, v in enumerate(self.variables):
            key = v.concept if maps == "shared" else v.name
            if key in out and out[key][0] != v.domain:
                raise NesyError(f"variables of concept {v.concept!r} have different domains; "
                                "use separate maps", file=self.source)
            out.setdefault(key, (v.domain, []))[1].append(i)
        return [(k, d, ix) for k, (d, ix) in out.items()]

    def check_world(self, world, where: str = "support") -> tuple:
        w = tuple(world)
        if len(w) != len(self.variables):
            raise NesyError(f"concept vector {list(world)} has {len(w)} values, the task has "
                            f"{len(self.variables)} variables", file=self.source, field=where)
        out = []
        for v, x in zip(self.variables, w):
            x = _coerce(x, v.domain)
            if x not in v.domain:
                raise NesyError(f"value {x!r} of {v.name} in {list(world)} is outside its domain "
                                f"{list(v.domain)}", file=self.source, field=where)
            out.append(x)
        return tuple(out)

    # -- facts ---------------------------------------------------------------------------
    def world_facts(self, worlds) -> list[tuple]:
        facts = []
        for w_id, w in enumerate(worlds):
            facts.append(("support", w_id))
            for v, x in zip(self.variables, w):
                facts.append(("val", w_id, v.term, x))
        return facts

    def programs(self, *encodings: str) -> list:
        return [*encodings, *self.knowledge]

    # -- labels --------------------------------------------------------------------------
    def labels_of(self, worlds) -> list[tuple]:
        """Labels of each world (a tuple ordered by :meth:`label_names`), one clingo call."""
        worlds = list(worlds)
        if not worlds:
            return []
        res = asp.solve(self.programs(LABELS_LP), [*self.params, *self.world_facts(worlds)],
                        models=1)
        if not res.satisfiable:
            raise NesyError("the knowledge is inconsistent (no answer set)", file=self.source)
        found: dict[int, dict] = {}
        for atom in res.models[0]:
            if atom[0] != "y" or len(atom) != 4:
                continue
            _, ctx, lab, val = atom
            if not (isinstance(ctx, tuple) and len(ctx) == 2 and isinstance(ctx[1], int)
                    and 0 <= ctx[1] < len(worlds)):
                raise NesyError(f"the knowledge derives a label for {ctx!r}: the first argument "
                                "of y/3 must be the context K of ctx(K)", file=self.source)
            w_id = ctx[1]
            seen = found.setdefault(w_id, {})
            if lab in seen and seen[lab] != val:
                raise NesyError(f"the knowledge gives label {lab!r} two values ({seen[lab]!r}, "
                                f"{val!r}) on world {list(worlds[w_id])}: it must be a function",
                                file=self.source)
            seen[lab] = val
        names = self.label_names(found)
        out = []
        for w_id, w in enumerate(worlds):
            seen = found.get(w_id, {})
            missing = [n for n in names if n not in seen]
            if missing:
                raise NesyError(f"the knowledge gives no value for label {missing[0]!r} on world "
                                f"{list(w)}", file=self.source)
            out.append(tuple(seen[n] for n in names))
        return out

    def label_names(self, found: dict | None = None) -> list[str]:
        if self.labels:
            return list(self.labels)
        names = sorted({lab for seen in (found or {}).values() for lab in seen}, key=str)
        if not names:
            raise NesyError("the knowledge defines no label y(K, L, Y)", file=self.source)
        self.labels = names
        return names

    # -- support -------------------------------------------------------------------------
    def support(self, spec=None, *, seed: int = 0) -> list[tuple]:
        """The in-distribution worlds (sorted, distinct) from ``spec`` (default: the YAML's)."""
        spec = self.support_spec if spec is None else spec
        if spec in (None, "all"):
            if self.n_worlds > 2_000_000:
                raise NesyError(f"support 'all' has {self.n_worlds} worlds; give an explicit "
                                "support", file=self.source, field="support")
            return list(self.all_worlds())
        if isinstance(spec, dict) and "file" in spec:
            return read_support(self, spec["file"])
        if isinstance(spec, dict) and "sample" in spec:
            rng = random.Random(derive_seed("rs-support-sample", self.name, spec.get("seed", seed)))
            n = int(spec["sample"])
            if n < 1 or n > self.n_worlds:
                raise NesyError(f"support.sample must be in 1..{self.n_worlds}", file=self.source,
                                field="support.sample")
            got: dict = {}
            while len(got) < n:
                got[tuple(rng.choice(v.domain) for v in self.variables)] = True
            return sorted(got, key=_key)
        if isinstance(spec, dict) and "objects" in spec:
            return objects_support(self, spec["objects"])
        if isinstance(spec, dict) and "generator" in spec:
            from .datasets import miniboia  # noqa: PLC0415
            return sorted(set(miniboia.support(self, spec.get("n_config", N_CONFIG),
                                               spec.get("seed", seed), miniboia_labels())),
                          key=_key)
        if isinstance(spec, dict) and "prop_in_dist" in spec:
            p = float(spec["prop_in_dist"])
            if not 0 < p <= 1:
                raise NesyError("prop_in_dist must be in (0, 1]", file=self.source,
                                field="support.prop_in_dist")
            worlds = list(self.all_worlds())
            rng = random.Random(derive_seed("rs-support", self.name, spec.get("seed", seed)))
            rng.shuffle(worlds)
            return sorted(worlds[:max(1, round(p * len(worlds)))], key=_key)
        if isinstance(spec, list):
            seen = {}
            for i, w in enumerate(spec):
                if isinstance(w, str):
                    w = _parse_vector(w)
                seen[self.check_world(w, f"support[{i}]")] = True
            return sorted(seen, key=_key)
        raise NesyError(f"cannot read support {spec!r}", file=self.source, field="support")


    def generated_pools(self, spec=None, *, seed: int = 0) -> tuple[list, list] | None:
        """For a generated support (``{generator: miniboia}``): the worlds ``rs generate`` draws
        its splits from, ``(kept, ood)``: ``kept`` every kept configuration in the generator's
        order, repeats included (rsbench gives each configuration of an action vector the same
        share of its images, so a world kept twice is drawn twice as often), ``ood`` the sorted
        draws that found their action's bucket full, not in the support. None for other
        supports (their OOD worlds are the worlds outside the support)."""
        spec = self.support_spec if spec is None else spec
        if not (isinstance(spec, dict) and "generator" in spec):
            return None
        from .datasets import miniboia  # noqa: PLC0415
        n, s = spec.get("n_config", N_CONFIG), spec.get("seed", seed)
        return (miniboia.support(self, n, s, miniboia_labels()),
                sorted(set(miniboia.left_out(self, n, s, miniboia_labels())), key=_key))

    def rsbench_images(self, sizes: dict, spec=None, *, seed: int = 0) -> dict:
        """For a generated support: each split's images as rsbench's ``configurations_split``
        assigns them (``rs generate``'s ``balance: rsbench``), one world per image, ``{split:
        [world, ...]}`` (:func:`nesybench.shortcuts.datasets.miniboia.rsbench_images`)."""
        spec = self.support_spec if spec is None else spec
        if not (isinstance(spec, dict) and "generator" in spec):
            raise NesyError("balance: rsbench draws images as rsbench's miniBOIA generator "
                            "does, so it needs support: {generator: miniboia}",
                            file=self.source, task=self.name, field="generate.balance")
        from .datasets import miniboia  # noqa: PLC0415
        n, s = spec.get("n_config", N_CONFIG), spec.get("seed", seed)
        return miniboia.split_worlds(self, n, s, miniboia_labels(), sizes)


@functools.lru_cache(maxsize=1)
def miniboia_labels():
    """``labels_of`` of a task over miniBOIA's concepts (in ``miniboia.CONCEPTS`` order) with
    the in-distribution driving knowledge: what sorts the generator's draws into action
    vectors, whatever the task's own rules (the ambulance tasks get the same worlds)."""
    from .datasets import miniboia  # noqa: PLC0415
    return load_task({"name": "miniboia_rules",
                      "concepts": [{"name": c, "domain": [0, 1]} for c in miniboia.CONCEPTS],
                      "knowledge": "kb/shortcuts/driving.lp",
                      "labels": ["stop", "forward", "left", "right"]}).labels_of


#: configurations per action vector of ``support: {generator: miniboia}`` (rsbench's default)
N_CONFIG = 100
#: the largest n_config accepted (the generator stops after 2,004 draws whatever it is)
MAX_N_CONFIG = 100_000


def _key(w):
    return tuple((0, x) if isinstance(x, int) else (1, str(x)) for x in w)


#: the value that marks an absent object (``support: {objects: [min, max]}``)
ABSENT = "none"


def object_slots(task) -> dict:
    """``{object index: [variable positions]}`` of the variables ``attr(i)`` (a concept with
    ``count``: CLE4EVR's ``color(i)``, ``shape(i)``, ``obj(i)``, ...)."""
    slots: dict = {}
    for k, v in enumerate(task.variables):
        if not (isinstance(v.term, tuple) and len(v.term) == 2):
            raise NesyError(f"support {{objects: ...}} needs per-object concepts attr(i); "
                            f"{v.name} is not one", file=task.source, field="support.objects")
        slots.setdefault(v.term[1], []).append(k)
    return slots


def present_objects(task, world, slots=None) -> int | None:
    """How many objects of ``world`` are present (no attribute ``none``); None when an object
    is neither present nor absent (some attributes ``none``, others not)."""
    slots = object_slots(task) if slots is None else slots
    n = 0
    for ks in slots.values():
        absent = [str(world[k]) == ABSENT for k in ks]
        if all(absent):
            continue
        if any(absent):
            return None
        n += 1
    return n


def slot_order(slots) -> list:
    """The object indices of ``slots`` in numbering order (integers by value, then others by
    name): object 1 first."""
    return sorted(slots, key=lambda i: (0, i) if isinstance(i, int) else (1, str(i)))


def absent_last(task, world, slots=None) -> bool:
    """Whether every absent object of ``world`` (all its attributes ``none``) comes after every
    object that is not absent, in :func:`slot_order`: rsbench numbers a scene's objects
    1..n and puts absent ones last, so a picture of n objects has one concept vector."""
    slots = object_slots(task) if slots is None else slots
    gap = False
    for i in slot_order(slots):
        absent = all(str(world[k]) == ABSENT for k in slots[i])
        if absent:
            gap = True
        elif gap:
            return False
    return True


def objects_support(task, rng_objects) -> list[tuple]:
    """``support: {objects: [min, max]}``: every world whose objects are each present (no
    attribute ``none``) or absent (every attribute ``none``), with ``min``..``max`` present,
    and the absent ones last (:func:`absent_last`; rsbench's range of objects per image, its
    objects numbered from 1). Worlds with other numbers of objects, absent ones last, are
    OOD."""
    lo, hi = rng_objects
    slots = object_slots(task)
    if hi > len(slots):
        raise NesyError(f"support.objects max {hi} exceeds the task's {len(slots)} objects",
                        file=task.source, field="support.objects")
    if lo < len(slots) and not all(ABSENT in [str(x) for x in task.variables[k].domain]
                                   for ks in slots.values() for k in ks):
        raise NesyError(f"support.objects below {len(slots)} objects needs the value "
                        f"{ABSENT!r} in every per-object domain (it marks an absent object)",
                        file=task.source, field="support.objects")
    if task.n_worlds > 2_000_000:
        raise NesyError(f"support {{objects: ...}} filters all {task.n_worlds} worlds; at most "
                        "2,000,000", file=task.source, field="support.objects")
    out = []
    for w in task.all_worlds():
        n = present_objects(task, w, slots)
        if n is not None and lo <= n <= hi and absent_last(task, w, slots):
            out.append(w)
    if not out:
        raise NesyError("support {objects: ...} holds no world", file=task.source,
                        field="support.objects")
    return sorted(out, key=_key)


def _coerce(x, domain):
    if isinstance(x, str) and x.strip().lstrip("-").isdigit() and all(isinstance(d, int) for d in domain):
        return int(x)
    if isinstance(x, str):
        return x.strip()
    return x


def _parse_vector(s: str):
    s = s.strip()
    if "," in s or " " in s:
        return [p for p in re.split(r"[,\s]+", s) if p]
    return list(s)  # rsbench's "0120" strings


def read_support(task: Task, path, *, distinct: bool = True) -> list[tuple]:
    """Concept vectors from a CSV (one row per world, columns named after the variables or in
    task order, optional label columns checked against the knowledge), JSON list or a
    generated dataset folder (its ``train/labels.csv``)."""
    p = Path(path)
    if p.is_dir():          # a data set folder: read through the contained reader
        folder = DataFolder(p)
        p = p / "train" / "labels.csv"
        if not folder.exists("train/labels.csv"):
            raise NesyError("support file not found", file=str(p))
        text = folder.read_text("train/labels.csv")
    elif not p.exists():
        raise NesyError("support file not found", file=str(p))
    else:
        text = read_input_text(p)
    worlds: list[tuple] = []
    given: list[dict] = []
    if p.suffix == ".json":
        data = parse_json(text, str(p))
        if not isinstance(data, list):
            raise NesyError("expected a JSON list of worlds", file=str(p))
        for i, w in enumerate(data):
            if isinstance(w, dict):
                given.append(w.get("labels", {}))
                w = w["concepts"]
            else:
                given.append({})
            worlds.append(task.check_world(w, f"{p.name}[{i}]"))
    else:
        try:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error as exc:
            raise NesyError(f"CSV does not parse: {exc}", file=str(p)) from None
        if not rows:
            raise NesyError("empty support file", file=str(p))
        header = [h[8:] if h.startswith("concept:") else h for h in rows[0]]
        names = [v.name for v in task.variables]
        if all(n in header for n in names):
            idx = [header.index(n) for n in names]
            lab_cols = {h: j for j, h in enumerate(header) if h.startswith("label:")}
            body = rows[1:]
            start = 2
        else:
            idx, lab_cols, body, start = list(range(len(names))), {}, rows, 1
        for r, row in enumerate(body):
            try:
                vec = [row[j] for j in idx]
            except IndexError:
                raise NesyError(f"row has {len(row)} columns, expected {len(names)}", file=str(p),
                                line=r + start) from None
            try:
                worlds.append(task.check_world(vec, f"row {r + start}"))
            except NesyError as exc:
                exc.line = r + start
                exc.file = str(p)
                raise
            given.append({h[6:]: row[j] for h, j in lab_cols.items()})
    if any(given):
        labels = task.labels_of(worlds)
        names = task.label_names()
        for i, (w, lab, g) in enumerate(zip(worlds, labels, given)):
            for k, v in g.items():
                if k in names and str(lab[names.index(k)]) != str(v):
                    raise NesyError(f"label {k}={v} of world {list(w)} is not what the knowledge "
                                    f"produces ({lab[names.index(k)]})", file=str(p), field=f"[{i}]")
    return sorted(dict.fromkeys(worlds), key=_key) if distinct else worlds


# -- validation ------------------------------------------------------------------------------
#: every key a task YAML may hold (a typo such as ``mpas:`` is an error, not a silent default)
TASK_KEYS = {"name", "concepts", "knowledge", "formula", "coef", "maps", "support",
             "supervised", "depends", "labels", "facts", "generate"}
CONCEPT_KEYS = {"name", "count", "domain", "map", "prompts"}
GENERATE_KEYS = {"samples", "render", "blender", "balance"}
SPLIT_NAMES = ("train", "val", "test", "ood")
#: the largest number of values a ``{range: [lo, hi]}`` domain may have
MAX_RANGE = 10_000
#: the most samples one split may ask for
MAX_SAMPLES = 10_000_000


def validate_task_data(data, source: str | None = None) -> None:
    """The one checking function for the task YAML schema (module docstring): unknown keys,
    wrong types and out-of-range values raise :class:`NesyError` naming file, task and field.
    Semantic checks (unknown variables, knowledge files) stay in :func:`load_task`."""
    if not isinstance(data, dict):
        raise NesyError("a task is a YAML mapping", file=source)
    name = data.get("name")
    task = str(name) if isinstance(name, (str, int)) and not isinstance(name, bool) else None

    def bad(msg, field):
        return NesyError(msg, file=source, task=task, field=field)

    unknown = sorted(str(k) for k in data if k not in TASK_KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} (allowed: {', '.join(sorted(TASK_KEYS))})",
                  unknown[0])
    if "name" in data and (not isinstance(name, str) or not name.strip()):
        raise bad("name must be a non-empty string", "name")
    concepts = data.get("concepts")
    if not isinstance(concepts, list) or not concepts:
        raise bad("missing 'concepts' list", "concepts")
    for i, c in enumerate(concepts):
        where = f"concepts[{i}]"
        if not isinstance(c, dict):
            raise bad("each concept is a mapping {name, domain, count?, map?}", where)
        extra = sorted(str(k) for k in c if k not in CONCEPT_KEYS)
        if extra:
            raise bad(f"unknown key {extra[0]!r} (allowed: {', '.join(sorted(CONCEPT_KEYS))})",
                      f"{where}.{extra[0]}")
        if not isinstance(c.get("name"), str) or not _ATOM.match(c["name"]):
            raise bad("each concept needs a lowercase 'name'", f"{where}.name")
        if "map" in c and (not isinstance(c["map"], str) or not _ATOM.match(c["map"])):
            raise bad("map must be a lowercase identifier", f"{where}.map")
        if "prompts" in c:
            ps = [c["prompts"]] if isinstance(c["prompts"], str) else c["prompts"]
            if not isinstance(ps, list) or not ps or not all(
                    isinstance(t, str) and "{value}" in t for t in ps):
                raise bad("prompts must be a text template with {value}, or a list of them",
                          f"{where}.prompts")
        count = c.get("count")
        counts = [count] if not isinstance(count, list) else count
        if count is not None and (not counts or not all(
                isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= 1000 for k in counts)):
            raise bad("count must be an integer in 1..1000 or a list of them", f"{where}.count")
        dom = c.get("domain")
        if isinstance(dom, dict):
            if set(dom) != {"range"}:
                raise bad("a domain mapping is {range: [lo, hi]}", f"{where}.domain")
            rng = dom["range"]
            if not (isinstance(rng, list) and len(rng) == 2 and all(
                    isinstance(x, int) and not isinstance(x, bool) for x in rng)):
                raise bad("range must be [lo, hi] with integers", f"{where}.domain.range")
            if rng[0] > rng[1]:
                raise bad(f"range [{rng[0]}, {rng[1]}] is empty (lo > hi)", f"{where}.domain.range")
            if rng[1] - rng[0] + 1 > MAX_RANGE:
                raise bad(f"range has more than {MAX_RANGE} values", f"{where}.domain.range")
    kn = data.get("knowledge")
    if not kn or not (isinstance(kn, str) or (isinstance(kn, list) and all(
            isinstance(k, str) and k for k in kn))):
        raise bad("missing 'knowledge' (an .lp or .pl file, or a list of .lp files)", "knowledge")
    if "formula" in data and not isinstance(data["formula"], str):
        raise bad("formula must be a string", "formula")
    if "maps" in data and data["maps"] not in ("shared", "separate"):
        raise bad(f"maps must be 'shared' or 'separate', not {data['maps']!r}", "maps")
    if "support" in data:
        _validate_support(data["support"], bad)
    for key in ("supervised", "labels"):
        if key in data and data[key] is not None and not (isinstance(data[key], list) and all(
                isinstance(x, (str, int)) and not isinstance(x, bool) for x in data[key])):
            raise bad(f"{key} must be a list of names", key)
    if data.get("coef") is not None:
        coef = data["coef"]
        if not isinstance(coef, dict):
            raise bad("coef must be a mapping {label: {variable: integer}}", "coef")
        for lab, cs in coef.items():
            if not isinstance(cs, dict):
                raise bad("coef must be a mapping {label: {variable: integer}}", f"coef.{lab}")
            for t, a in cs.items():
                if not isinstance(a, int) or isinstance(a, bool):
                    raise bad(f"coefficient {a!r} is not an integer", f"coef.{lab}.{t}")
                if not _in_clingo(a) or not all(_in_clingo(i) for i in _term_ints(t)):
                    raise bad("coefficients and term indices must fit clingo's 32-bit "
                              f"integers ({CLINGO_INT[0]}..{CLINGO_INT[1]})", f"coef.{lab}.{t}")
    if data.get("depends") is not None:
        dep = data["depends"]
        if not isinstance(dep, dict) or not all(
                isinstance(v, list) and all(isinstance(x, (str, int)) for x in v)
                for v in dep.values()):
            raise bad("depends must be a mapping {label: [variable, ...]}", "depends")
    if data.get("facts") is not None:
        facts = data["facts"]
        if not isinstance(facts, list) or not all(
                isinstance(f, list) and f and isinstance(f[0], str) and _ATOM.match(f[0])
                and all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in f)
                for f in facts):
            raise bad("facts must be a list of [name, arg, ...] lists", "facts")
        for i, f in enumerate(facts):
            if not all(_in_clingo(x) for x in f if isinstance(x, int)):
                raise bad("fact arguments must fit clingo's 32-bit integers "
                          f"({CLINGO_INT[0]}..{CLINGO_INT[1]})", f"facts[{i}]")
    if "generate" in data and data["generate"] is not None:
        gen = data["generate"]
        if not isinstance(gen, dict):
            raise bad("generate must be a mapping {samples: {split: n}, render: ...}", "generate")
        extra = sorted(str(k) for k in gen if k not in GENERATE_KEYS)
        if extra:
            raise bad(f"unknown key {extra[0]!r} (allowed: {', '.join(sorted(GENERATE_KEYS))})",
                      f"generate.{extra[0]}")
        if "render" in gen and not isinstance(gen["render"], str):
            raise bad("render must be a string", "generate.render")
        if gen.get("blender") is not None and not isinstance(gen["blender"], dict):
            raise bad("blender must be a mapping of render options", "generate.blender")
        if "balance" in gen and gen["balance"] not in ("equal", "rsbench"):
            raise bad(f"balance must be equal or rsbench, not {gen['balance']!r}",
                      "generate.balance")
        samples = gen.get("samples")
        if samples is not None:
            if not isinstance(samples, dict):
                raise bad("samples must be a mapping {split: n}", "generate.samples")
            for k, v in samples.items():
                if k not in SPLIT_NAMES:
                    raise bad(f"unknown split {k!r} ({', '.join(SPLIT_NAMES)})",
                              f"generate.samples.{k}")
                if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_SAMPLES:
                    raise bad(f"sample count must be an integer in 0..{MAX_SAMPLES}, not {v!r}",
                              f"generate.samples.{k}")


def _validate_support(spec, bad) -> None:
    if spec == "all":
        return
    if isinstance(spec, list):
        if not spec:
            raise bad("support is empty", "support")
        for i, w in enumerate(spec):
            if not isinstance(w, (str, list)) or (isinstance(w, list) and not all(
                    isinstance(x, (str, int)) and not isinstance(x, bool) for x in w)):
                raise bad("a support world is a list of values or a string like '0,1'",
                          f"support[{i}]")
        return
    if isinstance(spec, dict):
        kinds = [k for k in ("file", "sample", "prop_in_dist", "objects", "generator")
                 if k in spec]
        extra = sorted(str(k) for k in spec
                       if k not in ("file", "sample", "prop_in_dist", "objects", "generator",
                                    "n_config", "seed"))
        if len(kinds) != 1 or extra or ("n_config" in spec and kinds != ["generator"]):
            raise bad("support is 'all', a list of worlds, {file: F}, {sample: N, seed: S}, "
                      "{prop_in_dist: P, seed: S}, {objects: [min, max]} or "
                      "{generator: miniboia, n_config: N, seed: S}", "support")
        if "generator" in spec and spec["generator"] not in ("miniboia",):
            raise bad(f"unknown support generator {_one_line(spec['generator'])[:60]!r} "
                      "(miniboia)", "support.generator")
        if "n_config" in spec and (isinstance(spec["n_config"], bool) or not isinstance(
                spec["n_config"], int) or not 1 <= spec["n_config"] <= MAX_N_CONFIG):
            raise bad(f"n_config must be an integer in 1..{MAX_N_CONFIG}", "support.n_config")
        if "objects" in spec:
            o = spec["objects"]
            if not (isinstance(o, list) and len(o) == 2 and all(
                    isinstance(x, int) and not isinstance(x, bool) for x in o)
                    and 0 <= o[0] <= o[1] <= 10_000):
                raise bad("objects must be [min, max] with 0 <= min <= max", "support.objects")
        if "seed" in spec and (not isinstance(spec["seed"], int) or isinstance(spec["seed"], bool)):
            raise bad("seed must be an integer", "support.seed")
        if "file" in spec and (not isinstance(spec["file"], str) or not spec["file"]):
            raise bad("file must be a path", "support.file")
        if "sample" in spec and (not isinstance(spec["sample"], int) or isinstance(spec["sample"], bool)
                                 or spec["sample"] < 1):
            raise bad("sample must be a positive integer", "support.sample")
        if "prop_in_dist" in spec and (isinstance(spec["prop_in_dist"], bool) or not isinstance(
                spec["prop_in_dist"], (int, float)) or not 0 < spec["prop_in_dist"] <= 1):
            raise bad("prop_in_dist must be a number in (0, 1]", "support.prop_in_dist")
        return
    raise bad(f"cannot read support {spec!r}: give 'all', a list of worlds, {{file: F}}, "
              "{sample: N}, {prop_in_dist: P}, {objects: [min, max]} or {generator: miniboia}",
              "support")


# -- loading ---------------------------------------------------------------------------------
def _one_line(x) -> str:
    return " ".join(str(x).split())


def _term(name: str, idx: tuple):
    return (name, *idx) if idx else name


#: clingo's integers are 32-bit: domain values outside this range cannot reach the solver
CLINGO_INT = (-(2 ** 31), 2 ** 31 - 1)


def _in_clingo(x: int) -> bool:
    return CLINGO_INT[0] <= x <= CLINGO_INT[1]


def _term_ints(t) -> list[int]:
    parsed = _parse_term(t)
    return list(parsed[1:]) if isinstance(parsed, tuple) else []


def _domain(spec, where, source):
    if isinstance(spec, dict) and "range" in spec:
        lo, hi = spec["range"]
        if not (CLINGO_INT[0] <= int(lo) and int(hi) <= CLINGO_INT[1]):
            raise NesyError(f"range [{lo}, {hi}] leaves clingo's 32-bit integers",
                            file=source, field=f"{where}.range")
        return tuple(range(int(lo), int(hi) + 1))
    if isinstance(spec, list) and spec:
        out = []
        for x in spec:
            if isinstance(x, bool) or not isinstance(x, (int, str)) or \
                    (isinstance(x, str) and not _ATOM.match(x)):
                raise NesyError(f"domain value {x!r} must be an int or a lowercase identifier",
                                file=source, field=where)
            if isinstance(x, int) and not CLINGO_INT[0] <= x <= CLINGO_INT[1]:
                raise NesyError(f"domain value {x} leaves clingo's 32-bit integers "
                                f"({CLINGO_INT[0]}..{CLINGO_INT[1]})", file=source, field=where)
            out.append(x)
        if len(set(out)) != len(out):
            raise NesyError("domain has repeated values", file=source, field=where)
        return tuple(out)
    raise NesyError("domain must be a non-empty list or {range: [lo, hi]}", file=source, field=where)


def parse_formula(text: str, variables: list[Variable], source=None) -> list[tuple]:
    """A propositional formula (Python operators ``& | ^ ~``, ``->``/``<->`` or rsbench's
    ``And(a, b)``, ``Or``, ``Not``, ``Xor``, ``Implies``, ``Equal``) -> formula.lp facts."""
    names = {}
    for v in variables:
        names[v.name.replace("(", "").replace(")", "").replace(",", "_")] = v.term
        names[v.name] = v.term
    text = text.replace("<->", " == ").replace("->", " >> ")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise NesyError(f"formula does not parse: {exc.msg}", file=source, field="formula") from None
    facts: list[tuple] = []
    counter = itertools.count(1)
    ops = {ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.RShift: "implies"}
    calls = {"and": "and", "or": "or", "not": "neg", "xor": "xor", "implies": "implies",
             "equal": "iff", "iff": "iff"}

    def walk(node) -> int:
        n = next(counter)
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise NesyError(f"formula uses unknown variable {node.id!r}", file=source,
                                field="formula")
            facts.append(("leaf", n, names[node.id]))
        elif isinstance(node, ast.Constant) and node.value in (0, 1, True, False):
            facts.append(("konst", n, int(node.value)))
        elif isinstance(node, ast.BinOp) and type(node.op) in ops:
            facts.append(("node", n, ops[type(node.op)]))
            facts.append(("arg", n, 1, walk(node.left)))
            facts.append(("arg", n, 2, walk(node.right)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
            facts.append(("node", n, "neg"))
            facts.append(("arg", n, 1, walk(node.operand)))
        elif isinstance(node, ast.BoolOp):
            facts.append(("node", n, "and" if isinstance(node.op, ast.And) else "or"))
            for i, a in enumerate(node.values, 1):
                facts.append(("arg", n, i, walk(a)))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            facts.append(("node", n, "iff"))
            facts.append(("arg", n, 1, walk(node.left)))
            facts.append(("arg", n, 2, walk(node.comparators[0])))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id.lower() in calls:
            facts.append(("node", n, calls[node.func.id.lower()]))
            for i, a in enumerate(node.args, 1):
                facts.append(("arg", n, i, walk(a)))
        else:
            raise NesyError(f"unsupported formula construct: {ast.unparse(node)}", file=source,
                            field="formula")
        return n

    facts.append(("root", walk(tree)))
    return facts


def _parse_term(s: str):
    s = str(s).strip()
    # at most 10 digits an index: longer ones are not ints Python may parse (4,300-digit limit)
    m = re.match(r"^([a-z][A-Za-z0-9_]*)\(((?:\s*\d{1,10}\s*,)*\s*\d{1,10}\s*)\)$", s)
    if m:
        return (m.group(1), *[int(x) for x in m.group(2).split(",")])
    return s


def load_task(path_or_dict, *, source: str | None = None, base=None) -> Task:
    """Read a task YAML (path) or an already-parsed dict into a :class:`Task`. Its
    ``knowledge`` is a shipped name (``kb/shortcuts/xor.lp``), an absolute path or a path
    relative to the task file's folder (for a dict: to ``base``, when given)."""
    if isinstance(path_or_dict, dict):
        data, base = path_or_dict, None if base is None else Path(base)
    else:
        p = Path(path_or_dict)
        source = source or str(p)
        if not p.exists():
            raise NesyError("task file not found", file=source)
        if p.is_dir():
            raise NesyError("task file is a folder", file=source)
        try:
            data = safe_load(read_input_text(p))
        except (yaml.YAMLError, RecursionError) as exc:
            raise yaml_error(exc, source) from None
        except UnicodeDecodeError:
            raise NesyError("task file is not UTF-8 text", file=source) from None
        except OSError as exc:
            raise NesyError(f"cannot read the task file: {exc.strerror or exc}", file=source) from None
        base = p.resolve().parent
    validate_task_data(data, source)
    name = str(data.get("name", Path(source).stem if source else "task"))
    concepts = data.get("concepts")
    if not isinstance(concepts, list) or not concepts:
        raise NesyError("missing 'concepts' list", file=source, task=name, field="concepts")
    variables: list[Variable] = []
    for i, c in enumerate(concepts):
        where = f"concepts[{i}]"
        if not isinstance(c, dict) or not _ATOM.match(str(c.get("name", ""))):
            raise NesyError("each concept needs a lowercase 'name'", file=source, task=name,
                            field=where)
        dom = _domain(c.get("domain"), f"{where}.domain", source)
        count = c.get("count")
        shape = [] if count is None else ([count] if isinstance(count, int) else list(count))
        concept = str(c.get("map", c["name"]))
        for idx in itertools.product(*[range(1, k + 1) for k in shape]):
            term = _term(c["name"], idx)
            vname = c["name"] + (f"({','.join(map(str, idx))})" if idx else "")
            variables.append(Variable(vname, term, concept, dom))
    if len({v.name for v in variables}) != len(variables):
        raise NesyError("concept variables are not unique", file=source, task=name, field="concepts")
    kn = data.get("knowledge")
    if not kn:
        raise NesyError("missing 'knowledge' (an .lp file)", file=source, task=name, field="knowledge")
    files = []
    for k in (kn if isinstance(kn, list) else [kn]):
        # a knowledge base nesybench ships is named (kb/shortcuts/xor.lp: the registry of
        # shipped names); any other relative path is beside the task file, never in the
        # installation
        found = _knowledge_file(k, base, source=source, name=name)
        if found is None:
            raise NesyError(f"knowledge file {k} not found", file=source, task=name, field="knowledge")
        if found.suffix not in (".lp", ".pl"):
            raise NesyError("knowledge must be ASP (.lp, defining y(K, L, Y)) or Prolog (.pl, "
                            "defining label(World, L, Y))", file=source, task=name,
                            field="knowledge")
        files.append(found)
    prolog_kb = [f for f in files if f.suffix == ".pl"]
    if prolog_kb and len(files) > 1:
        raise NesyError("give either one Prolog knowledge file or ASP files, not both",
                        file=source, task=name, field="knowledge")
    task = Task(name=name, variables=variables, knowledge=files, source=source, raw=data,
                maps=str(data.get("maps", "shared")), support_spec=data.get("support", "all"),
                supervised=[str(s) for s in data.get("supervised", []) or []],
                labels=[str(x) for x in data["labels"]] if data.get("labels") else None)
    if prolog_kb:
        _prolog_table(task, prolog_kb[0])
    if "formula" in data:
        task.params += parse_formula(str(data["formula"]), variables, source)
    by_term = {v.term: v for v in variables}
    for lab, coefs in (data.get("coef") or {}).items():
        # clingo's #sum wraps silently past 32 bits: refuse a label whose sum could leave them
        reach = 0
        for t, a in coefs.items():
            task.params.append(("coef", str(lab), _parse_term(t), int(a)))
            v = by_term.get(_parse_term(t))
            if v is not None:
                reach += abs(int(a)) * max((abs(x) for x in v.domain if isinstance(x, int)),
                                           default=0)
        if reach > CLINGO_INT[1]:
            raise NesyError(f"label {lab}: the sum of coefficient × value can reach {reach}, "
                            f"past clingo's 32-bit integers ({CLINGO_INT[1]})", file=source,
                            task=name, field=f"coef.{lab}")
    for f in data.get("facts", []) or []:
        task.params.append(tuple(f))
    if data.get("depends"):
        task.depends = {str(k): [str(x) for x in v] for k, v in data["depends"].items()}
        for k, vs in task.depends.items():
            for x in vs:
                task.var_index(x)
    for s in task.supervised:
        task.var_index(s)
    _check_knowledge(task)
    return task


def _knowledge_file(k, base, *, source, name) -> Path | None:
    """The knowledge file ``k`` of a task: a shipped name (``kb/shortcuts/xor.lp``) or a file
    inside the task file's folder ``base`` (a relative path, or an absolute one that
    resolves there; no ``..``, no symbolic link out, a regular file: the rules of
    :class:`nesybench.folder.DataFolder`); None when there is no such file. A task given as
    a dict without ``base`` (from Python) may name any file."""
    kp = Path(str(k))
    reg = str(k)
    if kp.is_absolute():                 # the full path of a shipped file names it too
        try:
            reg = Path(os.path.relpath(os.path.realpath(kp),
                                       os.path.realpath(data_root()))).as_posix()
        except (OSError, ValueError):
            reg = ""
    kb = shipped(reg, folders=("kb",))
    if kb is not None and kb.exists():
        return kb
    if base is None:
        cand = kp if kp.is_absolute() else None
        return cand if cand is not None and cand.exists() else None
    where = dict(file=source, field="knowledge")
    folder = DataFolder(base)
    rel = str(k)
    if kp.is_absolute():
        real = os.path.realpath(kp)
        if not (real == folder.real or real.startswith(folder.real.rstrip(os.sep) + os.sep)):
            raise NesyError(f"knowledge file {k} is outside the task file's folder (knowledge "
                            "is a shipped name or a file beside the task)", task=name, **where)
        rel = os.path.relpath(real, folder.real)
    try:
        if not folder.exists(rel, **where):
            return None
        return folder.locate(rel, **where)
    except NesyError as exc:
        raise NesyError(f"knowledge file {k}: {exc.message} (knowledge is a shipped name or "
                        "a file inside the task file's folder)", task=name, **where) from None


TABLE_LP = "prolog/shortcuts/table.lp"
PROLOG_WORLDS = 200_000


def _prolog_table(task: Task, path: Path) -> None:
    """Load Prolog knowledge through the sandbox, label every world with it, and replace the
    knowledge by ``table.lp`` plus the table as facts."""
    from ..logic import prolog  # noqa: PLC0415
    if task.n_worlds > PROLOG_WORLDS:
        raise NesyError(f"Prolog knowledge is tabled over all {task.n_worlds} worlds (limit "
                        f"{PROLOG_WORLDS}); write it in ASP (.lp) to scale", file=str(path),
                        task=task.name)
    module = "rs_kb_" + re.sub(r"[^a-z0-9_]", "_", task.name.lower())
    try:
        prolog.load_rules_file(module, path, [], task=task.name)
        prolog.use("prolog/shortcuts/rs_knowledge.pl")
        worlds = [list(w) for w in task.all_worlds()]
        res = prolog.once(
            "catch((rs_knowledge:labels_of(M, Ws, Ls), Err = \"\"), rs_knowledge_error(_W, _S), "
            "(safe_load:status_message(_S, _M), format(string(Err), 'world ~w: ~w', [_W, _M]), "
            "Ls = []))", M=module, Ws=worlds)
        if res is not None and res["Err"]:
            raise NesyError(f"the Prolog knowledge failed on {res['Err']}")
    except NesyError as exc:
        raise exc.where(file=str(path), task=task.name) from None
    if res is None:
        raise NesyError("the Prolog knowledge failed", file=str(path), task=task.name)
    stride, pos = 1, []
    for v in reversed(task.variables):
        pos.append([("wpos", v.term, x, i * stride) for i, x in enumerate(v.domain)])
        stride *= len(v.domain)
    for facts in pos:
        task.params.extend(facts)
    for wid, pairs in enumerate(res["Ls"]):
        for lab, val in pairs:
            task.params.append(("tab", wid, lab, val))
    task.knowledge = [ROOT / TABLE_LP]


def _check_knowledge(task: Task) -> None:
    """Evaluate the knowledge on one world: syntax errors, unsafe rules, missing labels."""
    w = next(iter(task.all_worlds()))
    try:
        task.labels_of([w])
    except NesyError as exc:
        raise exc.where(file=task.source, task=task.name) from None


def fmt_term(t) -> str:
    """ASP-style text of a term given as a Python value: ``('b', 1)`` -> ``b(1)``."""
    if isinstance(t, tuple):
        if t and isinstance(t[0], str):
            return f"{t[0]}({','.join(fmt_term(a) for a in t[1:])})"
        return f"({','.join(fmt_term(a) for a in t)})"
    return str(t)
