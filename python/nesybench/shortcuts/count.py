"""Exact reasoning-shortcut counting (rsbench paper §3.4, Eq. 8).

A concept map α is *optimal* for a task when ``K(α(w)) = K(w)`` for every world ``w`` of the
support; a reasoning shortcut (RS) is an optimal α ≠ id. Classes of maps:

* ``joint``: α maps support worlds to worlds (its value on unseen worlds is not counted).
  Closed form: ``Π_{w∈S} |{w' : K(w') = K(w)}|`` (the count factorises per support world).
* ``disentangled``: α = (α_G)_G, one map per group (``shared``: one per concept, e.g. one
  digit map for all digits; ``separate``: one per variable). ASP (``disentangled.lp``) with
  clingo projection onto ``m/3``; decomposed into independent components when the task
  declares which variables each label reads; unconstrained groups contribute ``|D|^|D|``.
* ``perm``: α(w)_T = β_T(w_π(T)) with π permuting variables of one concept (rsbench-code's
  class); distinct functions are counted. When support and labels are invariant under the
  permutations and no optimal β has a constant component, the count is ``Π|G|! · N_separate``;
  Kandinsky knowledge on any support is counted from its figure structure (perm.py).

All counts are Python ints (arbitrary precision). ``count`` includes the identity,
``count_without_identity`` is the number of RSs.
"""
from __future__ import annotations

import math
import random
import sys
import time
from collections import Counter

import numpy as np
from dataclasses import asdict, dataclass, field

from ..errors import BudgetExceeded, NesyError
from ..io import derive_seed
from ..logic import asp
from . import perm, structure
from .structure import MAX_STATES
from .task import Task, fmt_term

DIS_LP = "prolog/shortcuts/disentangled.lp"
PERM_LP = "prolog/shortcuts/perm.lp"
PERM_FUNCS_LP = "prolog/shortcuts/perm_functions.lp"
PERM_PAIRS_LP = "prolog/shortcuts/perm_pairs.lp"
#: projected models clingo may enumerate per component before we give up
ENUM_BUDGET = 20_000
#: sparse components are counted by elimination first (label table size, largest factor)
QUICK_VE_WORLDS = 200_000
QUICK_VE_FACTOR = 1 << 18

# counts are exact ints with possibly >4300 digits (joint XOR n >= 11); print them whole
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)
#: worlds we are willing to label for the joint closed form
JOINT_WORLDS = 1 << 21
#: image atoms clingo may ground (support worlds x variables x domain size; x variables for
#: the permutation class): grounding cannot be interrupted, so this bounds its time and memory
GROUND_BUDGET = 2_000_000
#: default wall-clock budget of one count (seconds)
TIME_LIMIT = 120.0


def _deadline_left(deadline) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise BudgetExceeded("time budget exhausted while counting (raise --time-limit)")
    return left


def _structured_all(task, st, map_class, maps, sup_ix, perm_count, deadline):
    """Counts on the support of all worlds from the label's structure (structure.py), or
    None when no structured method applies."""
    n = None
    if map_class == "disentangled":
        groups = task.groups(maps)
        if isinstance(st, structure.Additive):
            n = structure.count_additive_all(st, groups, set(sup_ix), deadline)
            method = "structure: additive labels on all worlds (per-group differences, linear in n)"
        elif isinstance(st, structure.Formula):
            n = structure.count_formula_all(st, task, groups, set(sup_ix), deadline)
            method = "structure: read-once formula tree on all worlds"
        if n is None and task.n_worlds <= JOINT_WORLDS:
            n = structure.count_by_enumeration(task, st, groups, structure.all_positions(task),
                                               set(sup_ix), deadline=deadline)
            method = "enumeration of all maps, numpy labels on all worlds"
        if n is None:
            return None
        return CountResult(task.name, "disentangled", maps, task.n_worlds, n, n - 1, method)
    if map_class == "perm":
        if sup_ix or not isinstance(st, structure.Additive):
            return None
        groups = task.groups("shared")
        if any(any(st.f[i] != st.f[ix[0]] for i in ix) for _, _, ix in groups):
            return None   # labels not symmetric under the permutations
        nonconst = all(len(set(st.f[i])) > 1 for i in range(len(task.variables)))
        if perm_count == "functions" and not nonconst:
            return None
        n_sep = structure.count_additive_all(st, task.groups("separate"), set(), deadline)
        total = n_sep * math.prod(math.factorial(len(ix)) for _, _, ix in groups)
        return CountResult(task.name, "perm", "-", task.n_worlds, total, total - 1,
                           "symmetry on all worlds: prod |G|! x per-variable count (structure)",
                           components=[{"separate_maps": n_sep}])
    if map_class == "joint" and task.n_worlds <= JOINT_WORLDS:
        pos = structure.all_positions(task)
        labs = np.concatenate([structure.labels_np(task, st, pos), pos[:, sup_ix]], axis=1)
        _, counts = np.unique(labs, axis=0, return_counts=True)
        total = math.prod(int(c) ** int(c) for c in counts)
        return CountResult(task.name, "joint", "-", task.n_worlds, total, total - 1,
                           "closed-form product over support worlds (numpy labels)")
    return None


@dataclass
class CountResult:
    """Counting outcome. ``count`` includes the identity; ``rss`` lists maps on request
    (disentangled: ``{group: {value: image}}``; joint: ``{world: image}``; perm:
    ``{variable: [source variable, {value: image}]}``)."""

    task: str
    map_class: str
    maps: str
    support_size: int
    count: int
    count_without_identity: int
    method: str
    seconds: float = 0.0
    components: list[dict] = field(default_factory=list)
    rss: list[dict] = field(default_factory=list)
    supervised: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d["count_digits"] = len(str(self.count))
        return d


def count_rs(task: Task, *, map_class: str = "disentangled", maps: str | None = None,
             support=None, supervised=None, list_n: int = 0, seed: int = 0,
             budget: int = ENUM_BUDGET, engine: str = "auto", perm_count: str = "functions",
             time_limit: float | None = TIME_LIMIT, max_states: int = MAX_STATES) -> CountResult:
    """Count (and optionally list ``list_n``) the optimal maps of ``task`` on ``support``.

    ``support``: list of worlds (default: the task's own support); ``supervised``: variable
    names with concept supervision (default: the task's). ``perm_count`` (``--map perm``):
    ``functions`` counts distinct maps α, ``pairs`` counts (permutation, per-variable map)
    pairs as rsbench-code does (they differ when an optimal map has a constant component).
    Budgets: ``budget`` maps enumerated by clingo per component, ``time_limit`` seconds
    (clingo and the dynamic programmes stop with :class:`BudgetExceeded`), ``max_states``
    states of the row-by-row programme (its memory).
    """
    t0 = time.perf_counter()
    if map_class not in ("joint", "disentangled", "perm"):
        raise NesyError(f"unknown map class {map_class!r} (joint, disentangled, perm)")
    if perm_count not in ("functions", "pairs"):
        raise NesyError(f"perm_count must be 'functions' or 'pairs', not {perm_count!r}")
    deadline = time.monotonic() + time_limit if time_limit else None
    sup = list(task.supervised if supervised is None else supervised)
    sup_ix = sorted({task.var_index(s) for s in sup})
    maps = maps or task.maps
    st = structure.recognise(task)
    product_support = support is None and task.support_spec in (None, "all")
    res = None
    if st is not None and product_support and not list_n and engine in ("auto", "struct"):
        res = _structured_all(task, st, map_class, maps, sup_ix, perm_count, deadline)
    if res is None:
        worlds = task.support() if support is None else [task.check_world(w) for w in support]
        worlds = list(dict.fromkeys(worlds))
        if not worlds:
            raise NesyError("the support is empty", file=task.source, task=task.name)
        if st is not None and not list_n and engine in ("auto", "struct") and \
                len(worlds) == task.n_worlds:   # an explicit list of every world
            res = _structured_all(task, st, map_class, maps, sup_ix, perm_count, deadline)
    if res is None:
        if map_class == "joint":
            res = _joint(task, worlds, sup_ix, list_n, seed)
        elif map_class == "disentangled":
            res = _disentangled(task, worlds, maps, sup_ix, list_n, budget, engine,
                                deadline=deadline, max_states=max_states)
        else:
            res = _perm(task, worlds, sup_ix, list_n, budget, perm_count, deadline,
                        engine=engine, max_states=max_states)
    if map_class == "perm":
        res.method += f"; {perm_count} counted"
    res.seconds = round(time.perf_counter() - t0, 4)
    res.supervised = [task.variables[i].name for i in sup_ix]
    if map_class != "disentangled":
        res.maps = "-"
    return res


# -- joint -----------------------------------------------------------------------------------
def _joint(task, worlds, sup_ix, list_n, seed) -> CountResult:
    if task.n_worlds > JOINT_WORLDS:
        raise NesyError(f"the joint class needs the labels of all {task.n_worlds} worlds "
                        f"(limit {JOINT_WORLDS}); use --map disentangled, which scales with "
                        "the domains, not the number of worlds", file=task.source, task=task.name)
    st = structure.recognise(task)
    if st is not None and not list_n:   # vectorised labelling of all worlds
        pos = structure.all_positions(task)
        labs = np.concatenate([structure.labels_np(task, st, pos), pos[:, sup_ix]], axis=1)
        _, key_id, hist = np.unique(labs, axis=0, return_inverse=True, return_counts=True)
        sizes = [len(v.domain) for v in task.variables]
        stride = np.cumprod([1] + sizes[::-1])[:-1][::-1]
        w_ix = (structure.world_positions(task, worlds) * stride).sum(axis=1)
        total = math.prod(int(h) for h in hist[key_id.reshape(-1)[w_ix]])
        return CountResult(task.name, "joint", "-", len(worlds), total, total - 1,
                           "closed-form product over support worlds (numpy labels)")
    all_w = list(task.all_worlds())
    labels = task.labels_of(all_w)
    key = lambda w, lab: (lab, tuple(w[i] for i in sup_ix))  # noqa: E731
    hist = Counter(key(w, lab) for w, lab in zip(all_w, labels))
    lab_of = dict(zip(all_w, labels))
    total = 1
    for w in worlds:
        total *= hist[key(w, lab_of[w])]
    rss = []
    if list_n:
        rng = random.Random(derive_seed("rs-joint-sample", task.name, seed))
        by_key: dict = {}
        for w, lab in zip(all_w, labels):
            by_key.setdefault(key(w, lab), []).append(w)
        seen = set()
        for _ in range(50 * list_n):
            if len(rss) >= min(list_n, total - 1):
                break
            img = tuple(rng.choice(by_key[key(w, lab_of[w])]) for w in worlds)
            if img == tuple(worlds) or img in seen:
                continue
            seen.add(img)
            rss.append({_fmt(w): _fmt(i) for w, i in zip(worlds, img)})
    return CountResult(task.name, "joint", "-", len(worlds), total, total - 1,
                       "closed-form product over support worlds", rss=rss)


def _fmt(w) -> str:
    return "(" + ",".join(map(str, w)) + ")"


# -- disentangled ------------------------------------------------------------------------------
def _group_facts(task, groups, fixed=()):
    facts = []
    for g, (_, dom, ix) in enumerate(groups):
        for x in dom:
            facts.append(("dom", g, x))
        for i in ix:
            facts.append(("var", task.variables[i].term, g))
        if g in fixed:
            facts.append(("fixed", g))
    return facts


def _components(task, groups) -> tuple[list[tuple[list[int], list[str]]], list[int]]:
    """Independent components ``(group ids, labels)`` and the groups no label reads."""
    names = task.label_names()
    if not task.depends:
        return [(list(range(len(groups))), names)], []
    g_of = {i: g for g, (_, _, ix) in enumerate(groups) for i in ix}
    parent = list(range(len(groups)))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    lab_groups = {}
    for lab in names:
        reads = task.depends.get(lab)
        gs = sorted({g_of[task.var_index(v)] for v in reads}) if reads is not None \
            else list(range(len(groups)))
        lab_groups[lab] = gs
        for a in gs[1:]:
            parent[find(a)] = find(gs[0])
    comps: dict[int, tuple[set, list]] = {}
    for lab, gs in lab_groups.items():
        if gs:
            c = comps.setdefault(find(gs[0]), (set(), []))
            c[0].update(gs)
            c[1].append(lab)
    used = set().union(*[c[0] for c in comps.values()]) if comps else set()
    free = [g for g in range(len(groups)) if g not in used]
    return [(sorted(gs), labs) for gs, labs in comps.values()], free


def _disentangled(task, worlds, maps, sup_ix, list_n, budget, engine="auto", *,
                  deadline=None, max_states=MAX_STATES) -> CountResult:
    if engine not in ("auto", "asp", "elim", "struct"):
        raise NesyError(f"unknown engine {engine!r} (auto, asp, elim, struct)")
    groups = task.groups(maps)
    st = structure.recognise(task)
    if st is not None and not list_n and engine in ("auto", "struct"):
        n, method = None, ""
        if isinstance(st, structure.Additive):
            n = structure.count_additive_support(st, task, groups, worlds, set(sup_ix),
                                                 max_states=max_states, deadline=deadline)
            method = ("structure: additive labels on the support (linear equations solved "
                      "exactly, else a row-by-row dynamic programme)")
        else:
            n = structure.count_by_enumeration(task, st, groups,
                                               structure.world_positions(task, worlds),
                                               set(sup_ix), deadline=deadline)
            method = "enumeration of all maps, numpy labels on the support"
        if n is not None:
            return CountResult(task.name, "disentangled", maps, len(worlds), n, n - 1, method)
    if engine == "struct":
        raise NesyError("no structured counting method applies to this task (engine 'struct' "
                        "needs the shipped xor/addition/linear/formula/kandinsky knowledge)",
                        file=task.source, task=task.name)
    comps, free = _components(task, groups)
    base = [*task.params, *task.world_facts(worlds), *[("sup", task.variables[i].term) for i in sup_ix]]
    total = 1
    info = []
    per_comp_models = []
    seen_vals = [{w[i] for w in worlds for i in ix} for _, _, ix in groups]
    methods = set()
    for gs, labs in comps:
        fixed = [g for g in range(len(groups)) if g not in gs]
        unseen = [(g, x) for g in gs for x in groups[g][1] if x not in seen_vals[g]]
        factor = math.prod(len(groups[g][1]) for g, _ in unseen)
        facts = base + _group_facts(task, groups, fixed) + [("active", lab) for lab in labs] + \
            [("unseen", g, x) for g, x in unseen]
        models: list = []
        keep = max(list_n + 1, 0) if list_n else 0

        def on_model(atoms, models=models, keep=keep):
            if len(models) < keep:
                models.append(atoms)

        n = None
        if engine == "elim":
            n = _ve(task, worlds, groups, gs, labs, sup_ix)
            methods.add("exact variable elimination")
        elif engine == "auto" and not list_n and task.n_worlds <= QUICK_VE_WORLDS:
            try:   # cheap exact elimination first when the interaction graph is sparse
                n = _ve(task, worlds, groups, gs, labs, sup_ix, max_factor=QUICK_VE_FACTOR)
                methods.add("exact variable elimination")
            except BudgetExceeded:
                n = None
        res = _solve(task, [DIS_LP], facts, budget + 1, on_model, deadline) if n is None else None
        if n is not None:
            pass
        elif res.count <= budget:
            n = res.count * factor
            methods.add("clingo projected enumeration")
        elif engine == "asp":
            raise BudgetExceeded(f"more than {budget} maps to enumerate; use engine 'auto'",
                                 file=task.source, task=task.name)
        else:
            try:
                n = _ve(task, worlds, groups, gs, labs, sup_ix)
            except BudgetExceeded:
                raise BudgetExceeded(
                    f"more than {budget} disentangled maps in a component of "
                    f"{[groups[g][0] for g in gs]} and too many worlds or too dense for exact "
                    "elimination; use --map joint (closed form), separate a label's inputs "
                    "with depends:, or restrict the domains", file=task.source,
                    task=task.name) from None
            methods.add("exact variable elimination")
        total *= n
        info.append({"groups": [groups[g][0] for g in gs], "labels": labs, "count": n})
        per_comp_models.append((gs, models, unseen))
    free_seen = []
    for g in free:
        key, dom, ix = groups[g]
        seen = {w[i] for w in worlds for i in ix if i in sup_ix}
        c = len(dom) ** (len(dom) - len(seen))
        total *= c
        info.append({"groups": [key], "labels": [], "count": c, "free": True})
        free_seen.append((g, seen))
    rss = []
    if list_n:
        rss = _combine(groups, per_comp_models, free_seen, list_n)
    method = " + ".join(sorted(methods)) + (f", {len(info)} independent components"
                                            if len(info) > 1 else "")
    return CountResult(task.name, "disentangled", maps, len(worlds), total, total - 1, method,
                       components=info, rss=rss)


def _ve(task, worlds, groups, gs, labs, sup_ix, max_factor=None) -> int:
    """Exact count for one component by variable elimination over map rows (elim.py)."""
    from .elim import count_rows  # noqa: PLC0415
    if task.n_worlds > JOINT_WORLDS:
        raise BudgetExceeded("too many worlds for the label table")
    all_w = list(task.all_worlds())
    names = task.label_names()
    li = [names.index(lab) for lab in labs]
    keys: dict = {}
    lab_id = np.array([keys.setdefault(tuple(lab[i] for i in li), len(keys))
                       for lab in task.labels_of(all_w)])
    doms = [v.domain for v in task.variables]
    stride = [1] * len(doms)
    for i in range(len(doms) - 2, -1, -1):
        stride[i] = stride[i + 1] * len(doms[i + 1])
    pos = [{x: j for j, x in enumerate(d)} for d in doms]
    g_of = {i: g for g, (_, _, ix) in enumerate(groups) for i in ix}
    gset = set(gs)
    rows: dict = {}
    n_dom: list[int] = []
    for w in worlds:
        for i, x in enumerate(w):
            if g_of[i] in gset and (g_of[i], x) not in rows:
                rows[(g_of[i], x)] = len(n_dom)
                n_dom.append(len(groups[g_of[i]][1]))
    factors = []
    for w in worlds:
        wr = sorted({rows[(g_of[i], x)] for i, x in enumerate(w) if g_of[i] in gset})
        grid = np.full([n_dom[r] for r in wr] or [1], sum(
            pos[i][x] * stride[i] for i, x in enumerate(w) if g_of[i] not in gset), dtype=np.int64)
        for i, x in enumerate(w):
            if g_of[i] in gset:
                r = rows[(g_of[i], x)]
                shape = [1] * len(wr)
                shape[wr.index(r)] = n_dom[r]
                grid = grid + (np.arange(n_dom[r]) * stride[i]).reshape(shape)
        me = lab_id[sum(pos[i][x] * stride[i] for i, x in enumerate(w))]
        if wr:
            factors.append((tuple(wr), (lab_id[grid] == me).astype(np.int8)))
    for w in worlds:
        for i in sup_ix:
            if g_of[i] in gset:
                r = rows[(g_of[i], w[i])]
                t = np.zeros(n_dom[r], dtype=np.int8)
                t[pos[i][w[i]]] = 1
                factors.append(((r,), t))
    unseen = math.prod(len(groups[g][1]) ** (len(groups[g][1]) - len(
        {x for (gg, x) in rows if gg == g})) for g in gs)
    return count_rows(n_dom, factors, **({'max_factor': max_factor} if max_factor else {})) * unseen


def _as_map(groups, atoms) -> dict:
    out = {}
    for a in atoms:
        if a[0] == "m":
            out.setdefault(groups[a[1]][0], {})[str(a[2])] = a[3]
    return out


def _combine(groups, per_comp_models, free_seen, list_n):
    """The first ``list_n`` non-identity maps, combining one map of each component.

    A component's maps are its clingo models with every value no support world shows
    (``unseen``, kept at the identity in the encoding and counted as a factor) sent to each
    value of its domain in turn; a group no label reads maps its values freely, except the
    supervised values it shows. Each choice list is cut at ``list_n + 1``: one combination
    at most is the identity, so that many per component always give ``list_n`` others."""
    import itertools  # noqa: PLC0415

    def component(gs, models, unseen):
        own = {groups[g][0] for g in gs}    # a model shows the other groups at the identity
        for atoms in models:
            base = {k: v for k, v in _as_map(groups, atoms).items() if k in own}
            for images in itertools.product(*[groups[g][1] for g, _ in unseen]):
                m = {k: dict(v) for k, v in base.items()}
                for (g, x), z in zip(unseen, images):
                    m[groups[g][0]][str(x)] = z
                yield m

    def free_group(g, seen):
        key, dom, _ = groups[g]
        open_values = [x for x in dom if x not in seen]
        for images in itertools.product(dom, repeat=len(open_values)):
            table = {str(x): x for x in dom}
            table.update({str(x): z for x, z in zip(open_values, images)})
            yield {key: table}

    cap = list_n + 1
    choices = [list(itertools.islice(component(gs, models, unseen), cap))
               for gs, models, unseen in per_comp_models]
    choices += [list(itertools.islice(free_group(g, seen), cap)) for g, seen in free_seen]
    out = []
    for combo in itertools.product(*choices):
        m = {}
        for part in combo:
            m.update(part)
        if all(str(k) == str(v) for g in m.values() for k, v in g.items()):
            continue
        out.append(dict(sorted(m.items())))
        if len(out) >= list_n:
            break
    return out


# -- permutation class ---------------------------------------------------------------------
def _solve(task, programs, facts, models, on_model, deadline):
    """clingo under the time budget (the search is cancelled when the budget runs out; a
    callback also stops enumerations that find models quickly but too many)."""
    left = _deadline_left(deadline)
    n_val = sum(1 for f in facts if f[0] == "val")
    dom = max((len(v.domain) for v in task.variables), default=1)
    size = n_val * dom * (len(task.variables) if PERM_LP in programs else 1)
    if size > GROUND_BUDGET:
        raise BudgetExceeded(
            f"clingo would ground about {size} image atoms ({n_val // max(1, len(task.variables))} "
            f"support worlds; budget {GROUND_BUDGET}), which the time limit cannot interrupt; "
            "use a smaller support, another map class, or knowledge with a structured counter",
            file=task.source, task=task.name)
    hit = []

    def cb(atoms):
        if on_model is not None:
            on_model(atoms)
        if deadline is not None and time.monotonic() > deadline:
            hit.append(True)
            return False
        return True
    res = asp.solve(task.programs(*programs), facts, models=models, project=True,
                    keep_models=False, on_model=cb, time_limit=left, partial_ok=True)
    if hit or res.timed_out:
        raise BudgetExceeded("time budget exhausted while clingo enumerated maps (raise "
                             "--time-limit, or use a smaller support/another map class)",
                             file=task.source, task=task.name)
    return res


def _perm(task, worlds, sup_ix, list_n, budget, perm_count="functions", deadline=None, *,
          engine="auto", max_states=MAX_STATES) -> CountResult:
    st = structure.recognise(task)
    if isinstance(st, structure.Kandinsky) and not list_n and not sup_ix and \
            engine in ("auto", "struct"):
        res = perm.count_kandinsky_perm(task, st, structure.world_positions(task, worlds),
                                        deadline=deadline, max_options=max_states)
        if res is not None:
            total = res.functions if perm_count == "functions" else res.pairs
            return CountResult(task.name, "perm", "-", len(worlds), total, total - 1,
                               "structure: Kandinsky figure options on the support (object/"
                               "figure symmetry, bitsets over the support worlds)",
                               components=[{"pairs": res.pairs, "functions": res.functions,
                                            "figure_options": res.options}])
    groups = task.groups("shared")
    base = [*task.params, *task.world_facts(worlds), *[("sup", task.variables[i].term) for i in sup_ix],
            *[("active", lab) for lab in task.label_names()]]
    method = "clingo projected enumeration"
    # the symmetry test labels every support world with clingo: skip it when the count that
    # follows would exceed the grounding budget anyway (both clingo paths then refuse at once)
    small = len(worlds) * len(task.variables) * max(len(v.domain) for v in task.variables) \
        <= GROUND_BUDGET
    if not list_n and not sup_ix and small and _symmetric(task, worlds, groups):
        sep = task.groups("separate")
        facts = [*task.params, *task.world_facts(worlds), *_group_facts(task, sep),
                 *[("active", lab) for lab in task.label_names()]]
        n_sep = _solve(task, [DIS_LP], facts, budget + 1, None, deadline)
        n_const = _solve(task, [DIS_LP], facts + [("require_const",)], 1, None, deadline)
        if n_sep.count <= budget and (perm_count == "pairs" or not n_const.satisfiable):
            total = n_sep.count * math.prod(math.factorial(len(ix)) for _, _, ix in groups)
            return CountResult(task.name, "perm", "-", len(worlds), total, total - 1,
                               "symmetry: prod |G|! x per-variable count (clingo)",
                               components=[{"separate_maps": n_sep.count}])
    models: list = []

    def on_model(atoms):
        if len(models) < list_n + 1:
            models.append(atoms)

    res = _solve(task, [PERM_LP, PERM_PAIRS_LP if perm_count == "pairs" else PERM_FUNCS_LP],
                 base + _group_facts(task, groups), budget + 1, on_model, deadline)
    if res.count > budget:
        raise BudgetExceeded(f"more than {budget} maps in the permutation class; use --map "
                             "disentangled or --map joint, which scale", file=task.source,
                             task=task.name)
    rss = []
    for atoms in models:
        m = {}
        for a in atoms:
            if a[0] == "f":
                m.setdefault(fmt_term(a[1]), {"from": fmt_term(a[2]), "map": {}})["map"][str(a[3])] = a[4]
            elif a[0] == "k":
                m[fmt_term(a[1])] = {"from": None, "map": {"*": a[2]}}
        if all(v["from"] == k and all(str(x) == str(z) for x, z in v["map"].items())
               for k, v in m.items()):
            continue
        rss.append(dict(sorted(m.items())))
    return CountResult(task.name, "perm", "-", len(worlds), res.count, res.count - 1, method,
                       rss=rss[:list_n])


def _symmetric(task, worlds, groups) -> bool:
    """Support and labels invariant under swapping adjacent variables of every group."""
    wset = set(worlds)
    labels = dict(zip(worlds, task.labels_of(worlds)))
    for _, _, ix in groups:
        for a, b in zip(ix, ix[1:]):
            for w in worlds:
                s = list(w)
                s[a], s[b] = s[b], s[a]
                s = tuple(s)
                if s not in wset or labels[s] != labels[w]:
                    return False
    return True


# -- brute force (tests and cross-checks) ----------------------------------------------------
def brute_force(task: Task, worlds, *, map_class="disentangled", maps=None, supervised=()) -> int:
    """Enumerate every map of the class in Python (small tasks only)."""
    import itertools  # noqa: PLC0415
    worlds = [tuple(w) for w in worlds]
    all_w = list(task.all_worlds())
    lab = dict(zip(all_w, task.labels_of(all_w)))
    sup_ix = {task.var_index(s) for s in supervised}
    if map_class == "joint":
        n = 0
        for img in itertools.product(all_w, repeat=len(worlds)):
            if all(lab[i] == lab[w] and all(i[k] == w[k] for k in sup_ix)
                   for w, i in zip(worlds, img)):
                n += 1
        return n
    if map_class == "disentangled":
        groups = task.groups(maps or task.maps)
        per_group = [list(itertools.product(dom, repeat=len(dom))) for _, dom, _ in groups]
        n = 0
        for choice in itertools.product(*per_group):
            f = {}
            for (_, dom, ix), images in zip(groups, choice):
                table = dict(zip(dom, images))
                for i in ix:
                    f[i] = table
            ok = all(lab[tuple(f[i][x] for i, x in enumerate(w))] == lab[w] for w in worlds)
            ok = ok and all(f[i][w[i]] == w[i] for w in worlds for i in sup_ix)
            n += ok
        return n
    # perm: distinct functions on all worlds
    n_vars = len(task.variables)
    groups = task.groups("shared")
    funcs = set()
    perms = [list(itertools.permutations(ix)) for _, _, ix in groups]
    betas = [list(itertools.product(v.domain, repeat=len(v.domain))) for v in task.variables]
    for pchoice in itertools.product(*perms):
        src = {}
        for (_, _, ix), p in zip(groups, pchoice):
            for t, s in zip(ix, p):
                src[t] = s
        for bchoice in itertools.product(*betas):
            tabs = [dict(zip(task.variables[t].domain, bchoice[t])) for t in range(n_vars)]
            img = lambda w: tuple(tabs[t][w[src[t]]] for t in range(n_vars))  # noqa: E731
            if all(lab[img(w)] == lab[w] and all(img(w)[k] == w[k] for k in sup_ix)
                   for w in worlds):
                funcs.add(tuple(img(w) for w in all_w))
    return len(funcs)
