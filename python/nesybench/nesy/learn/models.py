"""The model zoo: DPL, fuzzy (product / Gödel t-norm), concept bottleneck, plain NN.

Every model maps an input batch to :class:`Output` — per-label log-probabilities and, when it
has concepts, per-variable concept logits — and has a loss on a batch
``(x, labels, concepts, concept_mask)``:

* **dpl** (DeepProbLog / semantic-loss semantics): concept nets give p_i(· | x); the label
  likelihood is the exact P(y | x) = Σ_w [K(w) = y] Π_i p_i(w_i | x) of any
  :class:`~nesybench.nesy.inference.semantics.LabelSemantics` (world enumeration or compiled circuit);
  loss −log P(y | x). Predicted labels: argmax of the exact label marginals.
* **fuzzy** (LTN-style, product real logic): the knowledge as the DNF "the label is y" ≡
  ∨_{w : K(w) = y} ∧_i (c_i = w_i), with the concept atoms' truth degrees p_i(w_i | x),
  conjunction by the product t-norm T(a, b) = ab and disjunction by the probabilistic sum
  S(a, b) = a + b − ab, so truth(y) = 1 − Π_{w : K(w)=y} (1 − Π_i p_i(w_i)); labels in
  independent components are conjoined by T. Loss −log truth(y) (LTN's satisfaction of the
  one grounded axiom, log-likelihood aggregation, mean over the batch). ``tnorm='godel'``
  uses T = min and S = max instead. Predictions: the label value of highest truth.
* **cbm** (concept bottleneck, "joint" training of Koh et al. 2020): concept nets → concept
  probabilities (concatenated) → MLP label head (one hidden layer of 64) → label logits;
  loss: cross-entropy of the labels.
* **nn**: the same input encoders with a 16-dimensional embedding per concept slot instead
  of concept logits, concatenated → MLP head → label logits (no concepts); its concepts are
  read post hoc by linear probes (:mod:`nesybench.nesy.learn.probe`).
* **clip-logic**: no training; zero-shot CLIP concept probabilities
  (:mod:`nesybench.nesy.learn.clip`) pushed through the task's knowledge with the exact label
  semantics of dpl.

Concept supervision adds the cross-entropy of the supervised (example, variable) concept
labels, weighted by ``concept_weight`` and averaged over the supervised entries (dpl, fuzzy,
cbm; the plain NN has no concepts). The targets are value indices (the data set's concept
annotations) or, with a foundation-model concept source, a list of (B, k_i) probability
tensors (soft cross-entropy −Σ_u q_u log p_u).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...errors import NesyError
from .nets import MLP, ConceptExtractor
from ..inference.semantics import LabelSemantics, WorldEnumeration

MODELS = ("dpl", "fuzzy", "cbm", "nn", "clip-logic")
NN_EMBED = 16


@dataclass
class Output:
    """label_logp[j]: (B, m_j) log-probabilities (or log-truths) of label j's values;
    concept_logits[i]: (B, k_i), or None for models without concepts."""

    label_logp: list[Tensor]
    concept_logits: list[Tensor] | None


class NesyModel(nn.Module):
    kind = "base"

    def __init__(self, variables, label_domains: list[list], layout: str,
                 input_shape: tuple[int, ...], concept_weight: float = 1.0):
        super().__init__()
        self.concept_domains = [len(v.domain) for v in variables]
        self.label_domains = [list(d) for d in label_domains]
        self.concept_weight = concept_weight
        self.layout = layout
        self.extractor = ConceptExtractor(variables, self.concept_domains, layout, input_shape)

    def concept_probs(self, logits: list[Tensor]) -> list[Tensor]:
        return [torch.softmax(z, dim=1) for z in logits]

    def label_loss(self, out: Output, x: Tensor, labels: Tensor) -> Tensor:
        """Default: cross-entropy summed over labels, mean over the batch."""
        return sum(F.nll_loss(lp, labels[:, j]) for j, lp in enumerate(out.label_logp))

    def loss(self, x: Tensor, labels: Tensor, concepts: Tensor | None = None,
             mask: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
        """Total loss and its parts (``label``, ``concept``) as floats."""
        out = self(x)
        lab = self.label_loss(out, x, labels)
        parts = {"label": float(lab.detach())}
        total = lab
        if out.concept_logits is None:
            return total, parts
        return self._add_concept_loss(total, parts, out.concept_logits, concepts, mask)

    def _add_concept_loss(self, total: Tensor, parts: dict, logits: list[Tensor],
                          concepts: Tensor | None, mask: Tensor | None):
        """total + w · mean cross-entropy over the supervised (example, variable) entries."""
        if mask is None or concepts is None or not bool(mask.any()):
            return total, parts
        if isinstance(concepts, (list, tuple)):     # soft targets (foundation-model concepts)
            ce = torch.stack([-(q * F.log_softmax(z, dim=1)).sum(dim=1)
                              for q, z in zip(concepts, logits)], dim=1)
        else:
            ce = torch.stack([F.cross_entropy(z, concepts[:, i], reduction="none")
                              for i, z in enumerate(logits)], dim=1)             # (B, n)
        m = mask.to(ce.dtype)
        con = (ce * m).sum() / m.sum()
        parts["concept"] = float(con.detach())
        return total + self.concept_weight * con, parts


class DPL(NesyModel):
    """Concept nets + an exact :class:`LabelSemantics` (module docstring)."""

    kind = "dpl"

    def __init__(self, variables, semantics: LabelSemantics, layout, input_shape, **kw):
        super().__init__(variables, semantics.label_domains, layout, input_shape, **kw)
        if list(semantics.concept_domains) != self.concept_domains:
            raise NesyError(f"the semantics has concept domains {semantics.concept_domains}, "
                            f"the task {self.concept_domains}")
        self.semantics = semantics

    def forward(self, x: Tensor) -> Output:
        logits = self.extractor(x)
        probs = self.concept_probs(logits)
        marg = self.semantics.label_marginals(probs)
        return Output([torch.log(m.clamp_min(1e-30)) for m in marg], logits)

    def loss(self, x, labels, concepts=None, mask=None):
        logits = self.extractor(x)
        lp = self.semantics(self.concept_probs(logits), labels)
        lab = -lp.mean()
        parts = {"label": float(lab.detach())}
        total = lab
        return self._add_concept_loss(total, parts, logits, concepts, mask)


class Fuzzy(NesyModel):
    """Fuzzy-logic semantics over the world table (module docstring)."""

    kind = "fuzzy"

    def __init__(self, variables, worlds: WorldEnumeration, layout, input_shape,
                 tnorm: str = "product", **kw):
        super().__init__(variables, worlds.label_domains, layout, input_shape, **kw)
        if tnorm not in ("product", "godel"):
            raise NesyError(f"unknown t-norm {tnorm!r} (product, godel)", field="tnorm")
        self.worlds = worlds
        self.tnorm = tnorm

    def log_truth(self, probs: list[Tensor], labels: Tensor) -> Tensor:
        """(B,) log truth degree of "the labels are ``labels``"."""
        total = None
        for k in range(len(self.worlds.components)):
            mask = self.worlds.label_mask(k, labels)
            if self.tnorm == "product":
                a = self.worlds.component_log_joint(k, probs, "sum").exp()
                a = a.clamp(max=1 - 1e-6)
                s = torch.log1p(-a).masked_fill(~mask, 0.0).sum(dim=1)   # log Π (1 - a_w)
                lt = torch.log(-torch.expm1(s).clamp(max=-1e-30))         # log(1 - Π(1 - a_w))
                total = lt if total is None else total + lt
            else:
                a = self.worlds.component_log_joint(k, probs, "min")
                lt = a.masked_fill(~mask, float("-inf")).amax(dim=1)
                total = lt if total is None else torch.minimum(total, lt)
        return total

    def forward(self, x: Tensor) -> Output:
        logits = self.extractor(x)
        probs = self.concept_probs(logits)
        out = []
        b = x.shape[0]
        # the truth of "label j = v", the other labels left free: the DNF over the worlds of
        # j's component whose label j is v
        per_comp: dict[int, Tensor] = {}
        for j, dom in enumerate(self.label_domains):
            k = next(c for c, comp in enumerate(self.worlds.components) if j in comp.labels)
            if k not in per_comp:
                if self.tnorm == "product":
                    a = self.worlds.component_log_joint(k, probs, "sum").exp().clamp(max=1 - 1e-6)
                    per_comp[k] = torch.log1p(-a)
                else:
                    per_comp[k] = self.worlds.component_log_joint(k, probs, "min")
            t = per_comp[k]
            col = self.worlds.components[k].labels.index(j)
            lab = getattr(self.worlds, f"_lab{k}")[:, col]                   # (W,)
            vals = []
            for v in range(len(dom)):
                mask = (lab == v).unsqueeze(0).expand(b, -1)
                if self.tnorm == "product":
                    s = t.masked_fill(~mask, 0.0).sum(dim=1)
                    vals.append(torch.log(-torch.expm1(s).clamp(max=-1e-30)))
                else:
                    vals.append(t.masked_fill(~mask, float("-inf")).amax(dim=1))
            out.append(torch.stack(vals, dim=1))
        return Output(out, logits)

    def loss(self, x, labels, concepts=None, mask=None):
        logits = self.extractor(x)
        lt = self.log_truth(self.concept_probs(logits), labels)
        lab = -lt.mean()
        parts = {"label": float(lab.detach())}
        total = lab
        return self._add_concept_loss(total, parts, logits, concepts, mask)


class CBM(NesyModel):
    """Concept bottleneck: concept probabilities -> MLP label head."""

    kind = "cbm"

    def __init__(self, variables, label_domains, layout, input_shape, **kw):
        super().__init__(variables, label_domains, layout, input_shape, **kw)
        self.head = MLP(sum(self.concept_domains), sum(len(d) for d in self.label_domains),
                        hidden=(64,))

    def forward(self, x: Tensor) -> Output:
        logits = self.extractor(x)
        c = torch.cat(self.concept_probs(logits), dim=1)
        z = torch.split(self.head(c), [len(d) for d in self.label_domains], dim=1)
        return Output([F.log_softmax(t, dim=1) for t in z], logits)


class PlainNN(NesyModel):
    """Input encoders with embeddings (no concepts) -> MLP label head."""

    kind = "nn"

    def __init__(self, variables, label_domains, layout, input_shape, **kw):
        nn.Module.__init__(self)
        self.concept_domains = [len(v.domain) for v in variables]
        self.label_domains = [list(d) for d in label_domains]
        self.concept_weight = 0.0
        self.layout = layout
        self.extractor = ConceptExtractor(variables, [NN_EMBED] * len(variables), layout,
                                          input_shape)
        self.head = MLP(NN_EMBED * len(variables), sum(len(d) for d in self.label_domains),
                        hidden=(64,))

    def forward(self, x: Tensor) -> Output:
        h = torch.cat([F.relu(e) for e in self.extractor(x)], dim=1)
        z = torch.split(self.head(h), [len(d) for d in self.label_domains], dim=1)
        return Output([F.log_softmax(t, dim=1) for t in z], None)


class ClipLogic(nn.Module):
    """CLIP's zero-shot concepts + the task's knowledge (exact semantics); nothing to train.

    ``prepare(data)`` computes a split's concept probabilities at once (through the on-disk
    embedding cache) and remembers them by image content; ``forward`` looks rows up there and
    computes the others."""

    kind = "clip-logic"

    def __init__(self, clip, semantics: LabelSemantics):
        super().__init__()
        self.clip = clip
        self.semantics = semantics
        self.label_domains = [list(d) for d in semantics.label_domains]
        self.concept_domains = [len(v.domain) for v in clip.task.variables]
        self.render: str | None = None
        self._memo: dict[bytes, list[Tensor]] = {}

    def prepare(self, data) -> None:
        from .clip import row_key  # noqa: PLC0415
        self.render = data.render
        probs = self.clip.concept_probs(data)
        for r in range(len(data)):
            self._memo[row_key(data.x[r])] = [p[r] for p in probs]

    def concept_probs_of(self, x: Tensor) -> list[Tensor]:
        from .clip import row_key  # noqa: PLC0415
        keys = [row_key(r) for r in x]
        miss = [i for i, k in enumerate(keys) if k not in self._memo]
        if miss:
            got = self.clip.probs(x[miss].cpu(), self.render)
            for a, i in enumerate(miss):
                self._memo[keys[i]] = [p[a] for p in got]
        return [torch.stack([self._memo[k][i] for k in keys]).to(x.device)
                for i in range(len(self.concept_domains))]

    def forward(self, x: Tensor) -> Output:
        probs = self.concept_probs_of(x)
        marg = self.semantics.label_marginals(probs)
        return Output([torch.log(m.clamp_min(1e-30)) for m in marg],
                      [torch.log(p.clamp_min(1e-30)) for p in probs])


def build_model(kind: str, task, *, layout: str, input_shape, semantics: LabelSemantics | None,
                label_domains: list[list], tnorm: str = "product",
                concept_weight: float = 1.0, clip=None) -> NesyModel:
    """A model of ``kind`` for ``task``. ``semantics`` is needed by dpl (any LabelSemantics)
    and fuzzy (a :class:`WorldEnumeration`); ``clip`` (a
    :class:`~nesybench.nesy.learn.clip.ClipConcepts`) and ``semantics`` by clip-logic."""
    v = task.variables
    if kind == "clip-logic":
        if clip is None or semantics is None:
            raise NesyError("the clip-logic model needs --concept-source clip:PATH_OR_NAME",
                            field="concept_source")
        return ClipLogic(clip, semantics)
    if kind == "dpl":
        if semantics is None:
            raise NesyError("the dpl model needs a label semantics")
        return DPL(v, semantics, layout, input_shape, concept_weight=concept_weight)
    if kind == "fuzzy":
        if not isinstance(semantics, WorldEnumeration):
            semantics = WorldEnumeration(task)
        return Fuzzy(v, semantics, layout, input_shape, tnorm=tnorm, concept_weight=concept_weight)
    if kind == "cbm":
        return CBM(v, label_domains, layout, input_shape, concept_weight=concept_weight)
    if kind == "nn":
        return PlainNN(v, label_domains, layout, input_shape)
    raise NesyError(f"unknown model {kind!r} (choose from {', '.join(MODELS)})", field="model")
