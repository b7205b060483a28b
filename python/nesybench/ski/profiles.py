"""Readings of the SKI-robustness paper (Magnini, Ciatto, Omicini et al., SKI robustness):
one name per set of choices, recorded in the study and shown in the table header.

=========== ============================== ============================== ====================
choice      ``nesybench`` (default)        ``paper`` (the words, literally) ``psyki`` (PSyKI's
                                                                            injectors)
=========== ============================== ============================== ====================
drop        round(p·n_k) rows of every      every row independently with   as nesybench
            class k (exact, stratified)     probability p (Bernoulli)
noise       N(0, v·σ_f²) per feature f      N(0, v·I) on the raw scale     as nesybench
            (v means the same on every      (discretised for ordinal;
            feature's scale), clipped to    no clipping)
            the observed range
training    exactly ``epochs`` epochs       early stopping: patience 10 on as nesybench
                                            a held-out tenth, ``epochs``
                                            the limit
KBANN       ω = 6, 8 extra units per        as nesybench                   ω = 4, no extra
            layer, Towell's m-of-n                                         units, PSyKI's m-of-n
KINS        sigmoid modules as KBANN's:     as nesybench                   PSyKI's modules:
            ω = 6, Towell's m-of-n                                         clipped literals,
                                                                           and = min, or = max,
                                                                           fixed weights
=========== ============================== ============================== ====================

Both Mann–Whitney readings (all repetitions at all levels pooled; the per-level mean curves)
are reported under every profile. Categorical and binary features are re-drawn with the same
probability q(v) under every profile (the paper: "analogously to label flipping").
Options given by the user (``--injector-option``) override a profile's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import NesyError


@dataclass(frozen=True)
class Profile:
    name: str
    #: ``stratified`` (exact count per class) or ``bernoulli`` (each row with probability p)
    drop: str = "stratified"
    #: ``scaled`` (N(0, v·σ²) per feature) or ``raw`` (N(0, v) on the raw scale)
    noise: str = "scaled"
    #: early-stopping patience (None: exactly ``epochs`` epochs)
    patience: int | None = None
    #: per-injector option defaults
    injectors: dict = field(default_factory=dict)
    summary: str = ""


PROFILES = {
    "nesybench": Profile("nesybench", summary="stratified drop, noise in feature SDs, fixed "
                                              "epochs, KBANN ω 6 + 8 extra units"),
    "paper": Profile("paper", drop="bernoulli", noise="raw", patience=10,
                     summary="Bernoulli drop, raw-scale noise N(0, v·I), early stopping "
                             "(patience 10, epochs the limit)"),
    "psyki": Profile("psyki", injectors={"kbann": {"omega": 4.0, "extra_units": 0,
                                                   "mofn": "psyki"},
                                         "kins": {"omega": 4.0, "mofn": "psyki",
                                                  "modules": "psyki"}},
                     summary="PSyKI's injector choices: ω 4, no extra KBANN units, PSyKI's "
                             "m-of-n, KINS modules of min/max and clipped units"),
}


def get(name: str | None) -> Profile:
    if name is None:
        return PROFILES["nesybench"]
    if name not in PROFILES:
        raise NesyError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})",
                        field="profile")
    return PROFILES[name]
