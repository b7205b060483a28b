"""Severity of reasoning shortcuts on a target task (rsbench paper §3.4, Eq. 9).

For a concept map α and a target task T with knowledge K_T and concept distribution p_T,
the severity is the expected loss ``E_{c ~ p_T} [ ℓ(K_T(α(c)), K_T(c)) ]``; we use the 0-1 loss
on the label vector (1 when any label differs). The *average severity* of a source task is
the uniform average of the severity over the source's optimal maps α ≠ id. p_T is uniform over
the target's support unless weights are given (one per support world).

Also: :func:`supervision_check` -- does concept supervision on a subset of variables remove
every reasoning shortcut of a task?
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from ..errors import NesyError
from ..logic import asp
from .count import DIS_LP, PERM_FUNCS_LP, PERM_LP, _group_facts, count_rs
from .task import Task, fmt_term


@dataclass
class SeverityResult:
    """``average`` over ``n_maps`` RSs of the source (``exhaustive``: all of them, else the
    first ``limit`` clingo found); ``per_map`` severities in enumeration order (first 100)."""

    source: str
    target: str
    map_class: str
    n_maps: int
    exhaustive: bool
    average: float
    minimum: float
    maximum: float
    harmless: int
    loss: str = "0-1 loss on the label vector"
    per_map: list[float] = field(default_factory=list)
    examples: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)


def _check_compatible(source: Task, target: Task) -> None:
    a = [(v.name, v.domain) for v in source.variables]
    b = [(v.name, v.domain) for v in target.variables]
    if a != b:
        raise NesyError(f"source {source.name!r} and target {target.name!r} must have the same "
                        "concept variables and domains to transfer a concept map",
                        file=target.source)


def enumerate_maps(task: Task, *, map_class: str = "disentangled", maps: str | None = None,
                   support=None, supervised=(), limit: int = 10_000):
    """Up to ``limit`` optimal maps α ≠ id as functions ``world -> world`` plus a printable
    form; returns ``(list of (fn, printable), exhaustive)``."""
    worlds = task.support() if support is None else [task.check_world(w) for w in support]
    sup = [("sup", task.variables[task.var_index(s)].term) for s in supervised]
    facts = [*task.params, *task.world_facts(worlds), *sup,
             *[("active", lab) for lab in task.label_names()]]
    idx = {fmt_term(v.term): i for i, v in enumerate(task.variables)}
    if map_class == "disentangled":
        groups = task.groups(maps)
        res = asp.solve(task.programs(DIS_LP), facts + _group_facts(task, groups),
                        models=limit + 2, project=True)
        g_of = {i: g for g, (_, _, ix) in enumerate(groups) for i in ix}
        out = []
        for atoms in res.models:
            tab = {}
            for a in atoms:
                if a[0] == "m":
                    tab[(a[1], a[2])] = a[3]
            if all(k[1] == v for k, v in tab.items()):
                continue
            fn = (lambda tab: lambda w: tuple(tab[(g_of[i], x)] for i, x in enumerate(w)))(tab)
            pr = {}
            for (g, x), z in sorted(tab.items(), key=str):
                pr.setdefault(groups[g][0], {})[str(x)] = z
            out.append((fn, pr))
    elif map_class == "perm":
        groups = task.groups("shared")
        res = asp.solve(task.programs(PERM_LP, PERM_FUNCS_LP), facts + _group_facts(task, groups),
                        models=limit + 2, project=True)
        out = []
        for atoms in res.models:
            src, tab, const = {}, {}, {}
            for a in atoms:
                if a[0] == "f":
                    src[idx[fmt_term(a[1])]] = idx[fmt_term(a[2])]
                    tab[(idx[fmt_term(a[1])], a[3])] = a[4]
                elif a[0] == "k":
                    const[idx[fmt_term(a[1])]] = a[2]
            n = len(task.variables)
            if not const and all(src[i] == i for i in range(n)) and \
                    all(k[1] == v for k, v in tab.items()):
                continue

            def fn(w, src=src, tab=tab, const=const, n=n):
                return tuple(const[i] if i in const else tab[(i, w[src[i]])] for i in range(n))
            pr = {fmt_term(task.variables[i].term): (
                {"const": const[i]} if i in const else
                {"from": fmt_term(task.variables[src[i]].term),
                 "map": {str(x): z for (j, x), z in tab.items() if j == i}}) for i in range(n)}
            out.append((fn, pr))
    else:
        raise NesyError("severity needs maps defined on every world: --map disentangled or perm "
                        "(joint maps are only defined on the source support)")
    exhaustive = res.exhausted and res.count <= limit + 1
    return out[:limit], exhaustive


def severity(source: Task, target: Task, *, map_class: str = "disentangled",
             maps: str | None = None, limit: int = 10_000, target_support=None,
             weights=None) -> SeverityResult:
    """Average severity of ``source``'s RSs on ``target`` (see module docstring)."""
    t0 = time.perf_counter()
    _check_compatible(source, target)
    rss, exhaustive = enumerate_maps(source, map_class=map_class, maps=maps,
                                     supervised=source.supervised, limit=limit)
    tw = target.support() if target_support is None else \
        [target.check_world(w) for w in target_support]
    if weights is None:
        weights = [1.0] * len(tw)
    if len(weights) != len(tw) or min(weights) < 0 or sum(weights) <= 0:
        raise NesyError("target weights must be one non-negative number per support world")
    z = float(sum(weights))
    images = [[fn(w) for w in tw] for fn, _ in rss]
    uniq = sorted({i for row in images for i in row} | set(tw), key=str)
    lab = dict(zip(uniq, target.labels_of(uniq)))
    per_map = []
    for row in images:
        per_map.append(sum(wt for w, i, wt in zip(tw, row, weights) if lab[i] != lab[w]) / z)
    avg = sum(per_map) / len(per_map) if per_map else 0.0
    return SeverityResult(source.name, target.name, map_class, len(rss), exhaustive,
                          round(avg, 6), round(min(per_map, default=0.0), 6),
                          round(max(per_map, default=0.0), 6),
                          sum(1 for s in per_map if s == 0), per_map=[round(s, 6) for s in per_map[:100]],
                          examples=[pr for _, pr in rss[:3]],
                          seconds=round(time.perf_counter() - t0, 4))


@dataclass
class SupervisionCheck:
    task: str
    supervised: list[str]
    rss_before: int
    rss_after: int
    removes_all: bool

    def to_json(self) -> dict:
        return asdict(self)


def supervision_check(task: Task, supervised, *, map_class: str = "disentangled",
                      maps: str | None = None, support=None) -> SupervisionCheck:
    """Count RSs without and with concept supervision on ``supervised`` variables."""
    before = count_rs(task, map_class=map_class, maps=maps, support=support, supervised=[])
    after = count_rs(task, map_class=map_class, maps=maps, support=support,
                     supervised=list(supervised))
    return SupervisionCheck(task.name, list(supervised), before.count_without_identity,
                            after.count_without_identity, after.count_without_identity == 0)
