"""Learnable probabilities of a program — ``t(_)`` facts and annotated disjunctions — and
DeepProbLog's optimiser for them.

A program's ``t(P)::f.`` facts and ``t(_)::a; t(_)::b.`` disjunctions are parameters of the
module that evaluates it (:class:`~nesybench.nesy.inference.circuit.CompiledProgram`,
:class:`~nesybench.nesy.inference.approx.SampledProgram`). They can be held two ways:

``"logit"`` (the default)
    a fact's probability is ``sigmoid(fact_logits[i])``, a disjunction's heads are
    ``softmax`` of its slice of ``ad_logits``. Every value of the parameters is a valid
    distribution, so any torch optimiser (Adam with the networks) can train them.

``"probability"`` (:meth:`LearnableProbabilities.use_probability_parameters`)
    the probabilities themselves are the parameters (``fact_probs``, ``ad_probs``), as
    DeepProbLog stores them. They stay a distribution only under :class:`ProbabilitySGD`,
    DeepProbLog's ``SGD`` optimiser of probabilistic parameters: a gradient step on each
    probability, clipped to [0, 1], then each disjunction divided by its sum (Manhaeve et al.,
    *DeepProbLog: Neural Probabilistic Logic Programming*, NeurIPS 2018; the ``SGD`` class of
    its implementation). Train this way to reproduce a DeepProbLog run: the two
    parametrisations reach different optima at the same learning rate.
"""
from __future__ import annotations

import torch

from ...errors import NesyError

#: the ways a program can hold its learnable probabilities
SPACES = ("logit", "probability")


class LearnableProbabilities:
    """Mixin of the program modules (``torch.nn.Module`` subclasses): their learnable
    facts and disjunctions. Call :meth:`_init_learnable` from ``__init__``."""

    def _init_learnable(self, fact_init: list[float], ad_init: list[list[float]]) -> None:
        """``fact_init``: the initial probability of each learnable fact; ``ad_init``: the
        initial head probabilities of each learnable disjunction (each summing to 1)."""
        self.parameter_space = "logit"
        # float64, as the circuit: a t(0.1) fact then agrees with ProbLog to ~1e-16 (a float32
        # logit alone is 1e-9 off). The clamp starts t(0)/t(1) 1e-6 inside, at a finite logit
        # whose gradient is large enough for training to move it.
        p0 = torch.tensor(fact_init, dtype=torch.float64).clamp(1e-6, 1 - 1e-6)
        self.fact_logits = torch.nn.Parameter(torch.log(p0) - torch.log1p(-p0))
        flat = [p for ps in ad_init for p in ps]
        self.ad_logits = torch.nn.Parameter(
            torch.log(torch.tensor(flat, dtype=torch.float64).clamp_min(1e-6)))
        self.ad_sizes = [len(ps) for ps in ad_init]
        self.register_parameter("fact_probs", None)
        self.register_parameter("ad_probs", None)

    # -- the probabilities, in either space -------------------------------------------------
    def fact_probabilities(self, dtype: torch.dtype | None = None) -> torch.Tensor:
        """P of each learnable fact, shape (n_facts,), differentiable."""
        if self.parameter_space == "probability":
            p = self.fact_probs
        else:
            p = torch.sigmoid(self.fact_logits)
        return p if dtype is None else p.to(dtype)

    def fact_probability_pair(self, dtype: torch.dtype, *, log: bool = False
                              ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(P, 1 - P)`` of each learnable fact, or their logs with ``log=True`` (computed
        from the logit without cancellation in the logit space)."""
        if self.parameter_space == "probability":
            p = self.fact_probs.to(dtype)
            if not log:
                return p, 1 - p
            tiny = torch.finfo(dtype).tiny
            return torch.log(p.clamp_min(tiny)), torch.log((1 - p).clamp_min(tiny))
        th = self.fact_logits.to(dtype)
        if log:
            return torch.nn.functional.logsigmoid(th), torch.nn.functional.logsigmoid(-th)
        return torch.sigmoid(th), torch.sigmoid(-th)

    def ad_probabilities(self, dtype: torch.dtype | None = None, *,
                         log: bool = False) -> list[torch.Tensor]:
        """The head probabilities (or their logs) of each learnable disjunction, one tensor
        per disjunction, in :attr:`learnable_ads` order."""
        if not self.ad_sizes:
            return []
        if self.parameter_space == "probability":
            flat = self.ad_probs if dtype is None else self.ad_probs.to(dtype)
            parts = torch.split(flat, self.ad_sizes)
            if log:
                tiny = torch.finfo(flat.dtype).tiny
                return [torch.log(t.clamp_min(tiny)) for t in parts]
            return list(parts)
        flat = self.ad_logits if dtype is None else self.ad_logits.to(dtype)
        fn = torch.log_softmax if log else torch.softmax
        return [fn(t, 0) for t in torch.split(flat, self.ad_sizes)]

    def learned_probabilities(self) -> dict[str, float]:
        """``{fact: P}`` and ``{head: P}`` of every learnable fact and disjunction head."""
        with torch.no_grad():
            out = {f: float(p) for f, p in zip(self.learnable_facts,
                                                self.fact_probabilities(torch.float64))}
            for heads, ps in zip(self.learnable_ads, self.ad_probabilities(torch.float64)):
                out.update({h: float(p) for h, p in zip(heads, ps)})
        return out

    # -- switching space ----------------------------------------------------------------------
    def use_probability_parameters(self):
        """Hold the learnable probabilities as probabilities (float64), DeepProbLog's way, for
        :class:`ProbabilitySGD`. Returns the module. The values are kept; ``fact_logits`` and
        ``ad_logits`` become ``None``, so build the optimisers after this call. The
        ``state_dict`` then holds ``fact_probs`` and ``ad_probs``: switch a freshly built
        module too before loading it."""
        if self.parameter_space == "probability":
            return self
        device = self.fact_logits.device
        with torch.no_grad():
            facts = torch.sigmoid(self.fact_logits.double())
            ads = torch.cat([torch.softmax(t, 0) for t in
                             torch.split(self.ad_logits.double(), self.ad_sizes)]
                            ) if self.ad_sizes else torch.zeros(0, dtype=torch.float64)
        self.fact_logits = None
        self.ad_logits = None
        self.fact_probs = torch.nn.Parameter(facts.to(device))
        self.ad_probs = torch.nn.Parameter(ads.to(device))
        self.parameter_space = "probability"
        return self

    def probability_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters :class:`ProbabilitySGD` steps (probability space only)."""
        if self.parameter_space != "probability":
            raise NesyError("the program holds logits; call use_probability_parameters() "
                            "before building a ProbabilitySGD")
        return [self.fact_probs, self.ad_probs]


class ProbabilitySGD(torch.optim.Optimizer):
    """DeepProbLog's optimiser of a program's learnable probabilities.

    Each step moves every probability against its gradient, ``P ← clip(P − lr·∂L/∂P, 0, 1)``,
    then divides each annotated disjunction's heads by their sum. ``program`` must hold its
    probabilities as probabilities (:meth:`LearnableProbabilities.use_probability_parameters`);
    train the networks with their own optimiser beside it. ``lr``: DeepProbLog's ``param_lr``
    (its noisy-addition example uses 1e-3)."""

    def __init__(self, program: LearnableProbabilities, lr: float = 1e-3):
        if not lr > 0:
            raise NesyError(f"lr must be > 0, not {lr}")
        facts, ads = program.probability_parameters()
        super().__init__([facts, ads], {"lr": float(lr)})
        self._ad_sizes = list(program.ad_sizes)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr = group["lr"]
            for p in group["params"]:
                if p.grad is not None:
                    p.sub_(lr * p.grad).clamp_(0.0, 1.0)
        ads = self.param_groups[0]["params"][1]
        if self._ad_sizes:
            # each disjunction back to a distribution; one whose heads all clipped to 0 stays
            # uniform rather than dividing by zero
            for t in torch.split(ads, self._ad_sizes):
                s = t.sum()
                if s > 0:
                    t.div_(s)
                else:
                    t.fill_(1.0 / len(t))
        return loss
