"""Reasoning-shortcut detection: which concept map did a trained model learn?

The learned map of a concept group G (one map per concept with ``maps: shared``, one per
variable with ``separate``) is read off the group's concept confusion matrix C (rows: true
values, columns: predicted values, pooled over the group's variables)::

    α_G(v) = argmax_u C[v, u]            (ties: the smallest index; unobserved rows: α(v) = v)

and classified against the task's knowledge K on its training support S (rsbench §3):

* ``identity``   α = id on every observed value;
* ``shortcut``   α ≠ id and K(α(w)) = K(w) for every w ∈ S: one of the optimal maps that
                 ``nesybench rs count`` counts (a reasoning shortcut);
* ``not_optimal`` some support world's label changes under α (the model did not reach an
                 optimum of the label likelihood, or its concepts are not a deterministic map).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ...errors import NesyError


@dataclass
class ShortcutReport:
    """verdict: identity | shortcut | not_optimal; maps: {group: {value: image}};
    support_errors: support worlds whose label α changes (out of support_size);
    n_optimal / n_shortcuts: the counter's figures for the same map class (None if not
    counted); unobserved: values with no example per group (mapped to themselves)."""

    verdict: str
    maps: dict
    support_size: int
    support_errors: int
    changed: dict = field(default_factory=dict)
    unobserved: dict = field(default_factory=dict)
    n_optimal: int | None = None
    n_shortcuts: int | None = None
    examples_of_errors: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        if self.verdict == "identity":
            return "learned concept map: identity (no reasoning shortcut)"
        moved = "; ".join(f"{g}: " + ", ".join(f"{a}->{b}" for a, b in ch.items())
                          for g, ch in self.changed.items())
        if self.verdict == "shortcut":
            of = f" (one of {self.n_shortcuts} counted)" if self.n_shortcuts is not None else ""
            return f"learned concept map: a reasoning shortcut{of}: {moved}"
        return (f"learned concept map: not optimal ({self.support_errors}/{self.support_size} "
                f"support worlds change label): {moved}")


def group_confusions(task, concepts_true, concepts_pred, maps: str | None = None) -> dict:
    """``{group: (C, values)}`` from (N, n_vars) arrays of concept value indices, pooled over
    each group's variables."""
    t = np.asarray(concepts_true)
    p = np.asarray(concepts_pred)
    out = {}
    for key, dom, ix in task.groups(maps):
        c = np.zeros((len(dom), len(dom)), dtype=np.int64)
        for i in ix:
            np.add.at(c, (t[:, i], p[:, i]), 1)
        out[key] = (c, list(dom))
    return out


def learned_maps(confusions: dict) -> tuple[dict, dict]:
    """``({group: {value: image}}, {group: [unobserved values]})`` (module docstring)."""
    maps, unobserved = {}, {}
    for g, (c, values) in confusions.items():
        c = np.asarray(c)
        if c.shape != (len(values), len(values)):
            raise NesyError(f"confusion matrix of {g!r} is {c.shape}, expected "
                            f"{len(values)} x {len(values)}")
        m = {}
        for a, v in enumerate(values):
            if c[a].sum() == 0:
                unobserved.setdefault(g, []).append(v)
                m[v] = v
            else:
                m[v] = values[int(np.argmax(c[a]))]
        maps[g] = m
    return maps, unobserved


def detect(task, confusions: dict, *, maps: str | None = None, support=None,
           count: bool = True) -> ShortcutReport:
    """Classify the map learned from ``confusions`` (``{group: (C, values)}``, groups as in
    ``task.groups(maps)``) on the task's support (or ``support``)."""
    groups = task.groups(maps)
    missing = [g for g, _, _ in groups if g not in confusions]
    if missing:
        raise NesyError(f"no confusion matrix for concept group {missing[0]!r}", task=task.name)
    alpha, unobserved = learned_maps({g: confusions[g] for g, _, _ in groups})
    group_of = {}
    for g, _, ix in groups:
        for i in ix:
            group_of[i] = g
    worlds = task.support() if support is None else [task.check_world(w) for w in support]
    mapped = [tuple(alpha[group_of[i]][x] for i, x in enumerate(w)) for w in worlds]
    labels = task.labels_of(list(worlds) + mapped)
    n = len(worlds)
    errors = [(list(w), list(m)) for w, m, a, b in zip(worlds, mapped, labels[:n], labels[n:])
              if a != b]
    changed = {g: {v: u for v, u in m.items() if u != v} for g, m in alpha.items()}
    changed = {g: ch for g, ch in changed.items() if ch}
    verdict = "identity" if not changed else ("shortcut" if not errors else "not_optimal")
    rep = ShortcutReport(verdict=verdict, maps=alpha, support_size=n, support_errors=len(errors),
                         changed=changed, unobserved=unobserved, examples_of_errors=errors[:5])
    if count:
        from ...shortcuts.count import count_rs  # noqa: PLC0415
        try:
            res = count_rs(task, maps=maps, support=worlds)
            rep.n_optimal, rep.n_shortcuts = res.count, res.count_without_identity
        except NesyError:
            pass  # counting is context; the verdict above does not depend on it
    return rep
