"""Label semantics: from concept distributions to the probability of the labels.

A *label semantics* turns one categorical distribution per concept variable into the exact
probability of the observed labels under the task's knowledge K (the DeepProbLog / semantic
loss semantics, concept variables independent given the input)::

    P(y | x) = Σ_w [K(w) = y] Π_i p_i(w_i | x)                                   (1)

Two implementations share the :class:`LabelSemantics` interface: :class:`WorldEnumeration`
(this module: every world of the concept space is labelled once through the task's knowledge
and (1) is a masked log-sum-exp over the world table) and the compiled-circuit engine
(``nesybench.nesy.inference.circuit``, ``CompiledProgram.from_task(task)``), which scales past the world
budget. :func:`nesybench.nesy.learn.engines.build_semantics` picks one by name.

When the task declares which variables each label reads (``depends:``), labels that share no
variable form independent *components*; (1) factorises over them and each component is
enumerated over its own variables only (the 21-concept driving task: 512 + 64 + 64 worlds
instead of 2^21).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ...errors import NesyError
from ...folder import read_input
from ...paths import cache_root

#: worlds (per component) that :class:`WorldEnumeration` is willing to label and sum over
WORLD_BUDGET = 1 << 20
#: worlds per clingo call when labelling the table (progress granularity)
LABEL_CHUNK = 20_000


class LabelSemantics(torch.nn.Module):
    """Exact label probabilities from concept probabilities (module docstring, Eq. 1).

    Attributes
    ----------
    concept_domains : list[int]   k_i, the number of values of each concept variable (in order)
    label_domains : list[list]    the value list of each label (in order)
    """

    concept_domains: list[int]
    label_domains: list[list]

    def forward(self, concept_probs: list[Tensor], labels: Tensor) -> Tensor:
        """``concept_probs[i]``: (B, k_i) rows summing to 1; ``labels``: (B, n_labels) index of
        each label's value in ``label_domains[j]``. Returns log P(labels | concept_probs),
        shape (B,), exact and differentiable."""
        raise NotImplementedError

    def label_marginals(self, concept_probs: list[Tensor]) -> list[Tensor]:
        """P(label_j = v) for each label j: a list of (B, m_j) tensors."""
        raise NotImplementedError


@dataclass
class Component:
    """Labels that share variables, with the table of the worlds over those variables.

    vars    indices of the concept variables (task order)
    labels  indices of the labels
    values  (W, len(vars)) int64: value index of each variable in each world, worlds in
            ``itertools.product`` order (the first variable varies slowest)
    label_ix (W, len(labels)) int64: index of each label's value in ``label_domains``
    """

    vars: list[int]
    labels: list[int]
    values: np.ndarray
    label_ix: np.ndarray


def cache_dir() -> Path:
    """``nesy/`` in the user cache folder (``$NESYBENCH_CACHE``, else the platform's; world
    tables)."""
    return cache_root() / "nesy"


def task_fingerprint(task) -> str:
    """SHA-256 of what determines the labels: variables, knowledge text, parameters."""
    h = hashlib.sha256()
    h.update(json.dumps([[v.name, list(v.domain)] for v in task.variables]).encode())
    for k in task.knowledge:            # a shipped or a user's file: one input file each
        h.update(read_input(k))
    h.update(repr(sorted(map(repr, task.params))).encode())
    h.update(json.dumps([task.labels, task.depends], sort_keys=True).encode())
    return h.hexdigest()


_MEMO: dict[str, tuple] = {}


def _components(task) -> list[tuple[list[int], list[str] | None]]:
    """Variable index sets with the label names they carry (``None``: all labels)."""
    if not task.depends or not task.labels or set(task.depends) != set(task.labels):
        return [(list(range(len(task.variables))), None)]
    parent = {lab: lab for lab in task.depends}

    def find(a):
        while parent[a] != a:
            a = parent[a]
        return a
    owner: dict[int, str] = {}
    for lab, names in task.depends.items():
        for n in names:
            i = task.var_index(n)
            if i in owner:
                parent[find(lab)] = find(owner[i])
            else:
                owner[i] = lab
    groups: dict[str, list[str]] = {}
    for lab in task.labels:
        groups.setdefault(find(lab), []).append(lab)
    out = []
    for labs in groups.values():
        vs = sorted({task.var_index(n) for lab in labs for n in task.depends[lab]})
        out.append((vs, labs))
    return out


#: the most bytes a cached world table may declare (decompressed); a world table of
#: WORLD_BUDGET worlds is far smaller
MAX_WORLD_CACHE_BYTES = 1 << 30


def _read_world_cache(name: str) -> tuple[list[Component], list[list]] | None:
    """The world table cached as ``name`` in :func:`cache_dir`, read through the contained
    reader (a regular file inside the cache, bounded; the ``.npz`` entries' declared sizes
    checked before NumPy opens it, no pickles; its ``meta`` strict JSON), or None when it is
    missing or damaged (it is then rebuilt). The ratio bound is not applied: nesybench writes
    these tables compressed, and the sum of the declared sizes is bounded."""
    from ...folder import load_npz, parse_json, read_cache_entry  # noqa: PLC0415
    entry = read_cache_entry(cache_dir(), name, max_bytes=MAX_WORLD_CACHE_BYTES)
    if entry is None:
        return None
    data, label = entry
    try:
        z = load_npz(data, label, max_bytes=MAX_WORLD_CACHE_BYTES,
                     max_ratio=MAX_WORLD_CACHE_BYTES)
        meta = parse_json(str(z["meta"]), label)
        return ([Component(c["vars"], c["labels"], z[f"v{k}"], z[f"l{k}"])
                 for k, c in enumerate(meta["components"])], meta["label_domains"])
    except (NesyError, KeyError, TypeError, ValueError):
        return None     # a damaged cache is rebuilt


def world_table(task, *, budget: int = WORLD_BUDGET, cache: bool = True,
                progress: bool = False) -> tuple[list[Component], list[list]]:
    """Label every world (per component) through the task's knowledge, once.

    Returns the components and the label domains (sorted distinct values per label). Cached
    in memory and on disk (:func:`cache_dir`) under the task fingerprint.
    """
    comps = _components(task)
    for vs, _ in comps:
        n = 1
        for i in vs:
            n *= len(task.variables[i].domain)
        if n > budget:
            raise NesyError(f"world enumeration needs {n} worlds (budget {budget}); use the "
                            "compiled-circuit engine (--semantics circuit, nesybench.nesy.inference.circuit) "
                            "or declare `depends:` in the task so that labels decompose",
                            file=task.source, task=task.name)
    key = task_fingerprint(task)
    if key in _MEMO:
        return _MEMO[key]
    path = cache_dir() / f"worlds-{key[:24]}.npz"
    if cache:
        out = _read_world_cache(path.name)
        if out is not None:
            _MEMO[key] = out
            return out
    names = task.label_names() if task.labels else None
    raw: list[tuple[list[int], list[int], np.ndarray, list[tuple]]] = []
    first = [v.domain[0] for v in task.variables]
    for vs, labs in comps:
        doms = [task.variables[i].domain for i in vs]
        combos = list(itertools.product(*[range(len(d)) for d in doms]))
        worlds = []
        for c in combos:
            w = list(first)
            for i, x in zip(vs, c):
                w[i] = task.variables[i].domain[x]
            worlds.append(tuple(w))
        labels: list[tuple] = []
        chunks = range(0, len(worlds), LABEL_CHUNK)
        if progress and len(worlds) > LABEL_CHUNK:
            from tqdm import tqdm  # noqa: PLC0415
            chunks = tqdm(chunks, desc=f"labelling {len(worlds)} worlds", unit="chunk")
        for s in chunks:
            labels.extend(task.labels_of(worlds[s:s + LABEL_CHUNK]))
        names = task.label_names()
        lab_ix = list(range(len(names))) if labs is None else [names.index(x) for x in labs]
        raw.append((vs, lab_ix, np.array(combos, dtype=np.int64).reshape(len(combos), len(vs)),
                    [tuple(lab[j] for j in lab_ix) for lab in labels]))
    domains: list[list] = [[] for _ in names]
    for _, lab_ix, _, labs in raw:
        for col, j in enumerate(lab_ix):
            domains[j] = sorted({lab[col] for lab in labs},
                                key=lambda v: (0, v, "") if isinstance(v, int) else (1, 0, str(v)))
    comps_out = []
    for vs, lab_ix, values, labs in raw:
        index = [{v: a for a, v in enumerate(domains[j])} for j in lab_ix]
        lix = np.array([[index[c][lab[c]] for c in range(len(lab_ix))] for lab in labs],
                       dtype=np.int64).reshape(len(labs), len(lab_ix))
        comps_out.append(Component(vs, lab_ix, values, lix))
    out = (comps_out, domains)
    _MEMO[key] = out
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            meta = {"components": [{"vars": c.vars, "labels": c.labels} for c in comps_out],
                    "label_domains": domains}
            arrays = {f"v{k}": c.values for k, c in enumerate(comps_out)}
            arrays.update({f"l{k}": c.label_ix for k, c in enumerate(comps_out)})
            tmp = path.with_name(path.name + f".{os.getpid()}.part.npz")
            np.savez_compressed(tmp, meta=np.array(json.dumps(meta)), **arrays)
            os.replace(tmp, path)
        except OSError:
            pass  # the cache is an optimisation
    return out


def log_joint(log_probs: list[Tensor], combine: str = "sum") -> Tensor:
    """Log weight of every world of the given variables, (B, Π k_i), ``itertools.product``
    order. ``combine='sum'``: Σ_i log p_i(w_i) (product of probabilities);
    ``'min'``: min_i log p_i(w_i) (Gödel t-norm)."""
    b = log_probs[0].shape[0]
    out = log_probs[0]
    for lp in log_probs[1:]:
        a = out.unsqueeze(-1)
        c = lp.reshape(b, *([1] * (out.dim() - 1)), lp.shape[1])
        out = a + c if combine == "sum" else torch.minimum(a, c)
    return out.reshape(b, -1)


class WorldEnumeration(LabelSemantics):
    """Exact label semantics by enumerating the worlds of a shortcut task (Eq. 1).

    ``P(y)`` is computed in log space: ``log P(y) = logsumexp_{w : K(w) = y} Σ_i log p_i(w_i)``,
    one masked log-sum-exp over a (B, W) tensor per component; the label table is computed
    once through the task's knowledge (ASP or Prolog, via :mod:`nesybench.shortcuts.task`).
    """

    def __init__(self, task, *, budget: int = WORLD_BUDGET, cache: bool = True,
                 progress: bool = False):
        super().__init__()
        self.task_name = task.name
        self.concept_domains = [len(v.domain) for v in task.variables]
        self.concept_values = [list(v.domain) for v in task.variables]
        self.label_names = None
        self.components, self.label_domains = world_table(task, budget=budget, cache=cache,
                                                          progress=progress)
        self.label_names = task.label_names()
        for k, c in enumerate(self.components):
            strides = []
            s = 1
            for j in reversed(c.labels):
                strides.append(s)
                s *= len(self.label_domains[j])
            strides = torch.tensor(list(reversed(strides)), dtype=torch.int64)
            self.register_buffer(f"_strides{k}", strides, persistent=False)
            self.register_buffer(f"_code{k}", torch.from_numpy(c.label_ix) @ strides,
                                 persistent=False)
            self.register_buffer(f"_lab{k}", torch.from_numpy(c.label_ix), persistent=False)

    @classmethod
    def from_task(cls, task, **kw) -> "WorldEnumeration":
        return cls(task, **kw)

    @property
    def n_worlds(self) -> int:
        return sum(len(c.values) for c in self.components)

    def _check(self, concept_probs: list[Tensor]) -> None:
        if len(concept_probs) != len(self.concept_domains):
            raise NesyError(f"{len(concept_probs)} concept distributions given, the task has "
                            f"{len(self.concept_domains)} concept variables", task=self.task_name)
        for i, (p, k) in enumerate(zip(concept_probs, self.concept_domains)):
            if p.dim() != 2 or p.shape[1] != k:
                raise NesyError(f"concept {i}: expected (B, {k}) probabilities, got "
                                f"{tuple(p.shape)}", task=self.task_name)

    def component_log_joint(self, k: int, concept_probs: list[Tensor],
                            combine: str = "sum") -> Tensor:
        """(B, W_k) log weights of component ``k``'s worlds."""
        c = self.components[k]
        logs = [torch.log(concept_probs[i].clamp_min(1e-30)) for i in c.vars]
        return log_joint(logs, combine)

    def label_mask(self, k: int, labels: Tensor) -> Tensor:
        """(B, W_k) bool: worlds of component ``k`` whose labels equal ``labels`` (B, n_labels)."""
        strides = getattr(self, f"_strides{k}")
        y = labels[:, self.components[k].labels].to(torch.int64) @ strides
        return getattr(self, f"_code{k}").unsqueeze(0) == y.unsqueeze(1)

    def forward(self, concept_probs: list[Tensor], labels: Tensor) -> Tensor:
        self._check(concept_probs)
        total = None
        for k in range(len(self.components)):
            lj = self.component_log_joint(k, concept_probs)
            mask = self.label_mask(k, labels)
            lp = torch.logsumexp(lj.masked_fill(~mask, float("-inf")), dim=1)
            total = lp if total is None else total + lp
        return total

    def label_marginals(self, concept_probs: list[Tensor]) -> list[Tensor]:
        self._check(concept_probs)
        out: list[Tensor | None] = [None] * len(self.label_domains)
        for k, c in enumerate(self.components):
            lj = self.component_log_joint(k, concept_probs)
            joint = torch.softmax(lj, dim=1)          # exact up to normalisation round-off
            lab = getattr(self, f"_lab{k}")
            for col, j in enumerate(c.labels):
                onehot = torch.nn.functional.one_hot(lab[:, col], len(self.label_domains[j]))
                out[j] = joint @ onehot.to(joint.dtype)
        return out  # type: ignore[return-value]


def index_labels(values, label_domains) -> torch.Tensor:
    """Label values (B, n_labels) (or (B,) for one label) -> long index tensor into each
    label's domain; a value outside its domain is one :class:`NesyError` (it is impossible
    under the program)."""
    rows = [v if isinstance(v, (list, tuple)) and len(label_domains) > 1 else [v]
            for v in values]
    lookup = [{str(v): i for i, v in enumerate(dom)} for dom in label_domains]
    try:
        idx = [[lookup[j][str(v)] for j, v in enumerate(r)] for r in rows]
    except KeyError as exc:
        raise NesyError(f"label value {exc.args[0]} is impossible under the program "
                        f"(domains: {label_domains})") from None
    return torch.tensor(idx, dtype=torch.long)


def take_ground_interface(obj, gp) -> None:
    """Set on ``obj`` what a model reads of a semantics built on a ground program ``gp``
    (sampling, top-k proofs): ``n_neural``, ``concept_domains``/``names``/``nets``/``values``,
    ``label_domains``, ``label_queries`` and ``evidence``. The neural choices come first in
    every ground program; anything else is an internal error."""
    from ...errors import NesyError
    choices = gp.choices
    neural = [i for i, c in enumerate(choices) if c.net is not None]
    if neural != list(range(len(neural))):
        raise NesyError("internal: neural choices must come first in the ground program")
    obj.n_neural = len(neural)
    obj.concept_domains = [len(choices[i].values) for i in neural]
    obj.concept_names = [choices[i].key for i in neural]
    obj.concept_nets = [choices[i].net for i in neural]
    obj.concept_values = [list(choices[i].values) for i in neural]
    obj.label_domains = [list(lab.values) for lab in gp.labels]
    obj.label_queries = [lab.query for lab in gp.labels]
    obj.label_atoms = [list(lab.atoms) for lab in gp.labels]
    obj.evidence = [atom for atom, _, _ in gp.evidence]


def choice_distributions(prog, concept_probs, log_input: bool):
    """Per choice of a semantics built on a ground program (``prog``: sampling, top-k
    proofs), (B, k) probabilities (or (1, k) for fixed ones), in choice order."""
    from ...errors import NesyError
    if len(concept_probs) != len(prog.concept_domains):
        raise NesyError(f"expected {len(prog.concept_domains)} concept tensors "
                        f"({', '.join(prog.concept_names)}), got {len(concept_probs)}")
    out = []
    for i, (p, k) in enumerate(zip(concept_probs, prog.concept_domains)):
        if p.dim() != 2 or p.shape[1] != k:
            raise NesyError(f"concept {prog.concept_names[i]} has {k} values; got a tensor "
                            f"of shape {tuple(p.shape)} (expected (B, {k}))")
        out.append(torch.exp(p) if log_input else p)
    dtype = out[0].dtype if out else torch.float64
    device = out[0].device if out else prog.fixed_probs.device
    facts, ads = prog.fact_probabilities(), prog.ad_probabilities()
    for kind, ix in prog.kinds:
        if kind == "fixed":
            out.append(prog.fixed_probs[ix].to(device, dtype)[None])
        elif kind == "fact":
            p = facts[ix].to(device, dtype)
            out.append(torch.stack([p, 1 - p])[None])
        else:
            out.append(ads[ix].to(device, dtype)[None])
    return out


def take_fixed_choices(obj, gp) -> None:
    """Register on ``obj`` (a module with :class:`~nesybench.nesy.inference.learnable.LearnableProbabilities`)
    the non-neural choices of ``gp``: ``obj.kinds`` per choice (``("fixed", row)``,
    ``("fact", i)`` or ``("ad", i)``), the buffer ``fixed_probs`` (rows zero-padded to the
    widest choice) and the learnable facts and disjunctions with their initial values."""
    choices = gp.choices[obj.n_neural:]
    obj.kinds = []
    fixed_rows, obj.learnable_facts, fact_init = [], [], []
    obj.learnable_ads, ad_init = [], []
    kmax = max([len(c.values) for c in choices], default=1)
    for c in choices:
        if c.learnable and c.fact:
            obj.kinds.append(("fact", len(fact_init)))
            fact_init.append(c.probs[0])
            obj.learnable_facts.append(c.key)
        elif c.learnable:
            obj.kinds.append(("ad", len(ad_init)))
            ad_init.append(list(c.probs))
            obj.learnable_ads.append([str(v) for v in c.values])
        else:
            obj.kinds.append(("fixed", len(fixed_rows)))
            fixed_rows.append(list(c.probs) + [0.0] * (kmax - len(c.probs)))
    obj.register_buffer("fixed_probs", torch.tensor(fixed_rows, dtype=torch.float64)
                        .reshape(len(fixed_rows), kmax), persistent=False)
    obj._init_learnable(fact_init, ad_init)

