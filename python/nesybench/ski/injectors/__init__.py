"""Predictors: the uneducated MLP and the three injectors, one class each."""
from __future__ import annotations

from ...errors import NesyError
from .base import Predictor
from .kbann import KBANN
from .kill import KILL
from .kins import KINS
from .uneducated import Uneducated

#: name -> class; a new injector is one more entry
INJECTORS: dict[str, type[Predictor]] = {"uneducated": Uneducated, "kins": KINS,
                                         "kill": KILL, "kbann": KBANN}

#: the paper's uneducated hidden layers per data set
HIDDEN = {"bcw": [16, 8], "splice": [64, 32], "census": [32, 16]}


def make(name: str, n_features: int, n_classes: int, hidden, knowledge=None,
         **options) -> Predictor:
    """A configured predictor; educated ones need ``knowledge``."""
    if name not in INJECTORS:
        raise NesyError(f"unknown injector {name!r} (known: {', '.join(INJECTORS)})",
                        field="injector")
    if name != "uneducated" and knowledge is None:
        raise NesyError(f"{name} needs knowledge (a rule file)", field="injector")
    return INJECTORS[name](n_features, n_classes, hidden, knowledge, **options)


__all__ = ["HIDDEN", "INJECTORS", "KBANN", "KILL", "KINS", "Predictor", "Uneducated", "make"]
