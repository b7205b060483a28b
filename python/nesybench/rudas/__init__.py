"""RuDaS: synthetic rule-learning datasets and rule-learner evaluation.

The logic lives in ``prolog/rudas/`` (generator, semi-naive forward chainer, metrics); this
package is the thin Python layer: :func:`generate`, :func:`generate_suite`, :func:`evaluate`.
"""
from .core import (RudasParams, GenerateResult, generate, generate_suite, evaluate, chase,
                   rule_distance, r_score, suite_grid, SIZE_CLASSES)

__all__ = ["RudasParams", "GenerateResult", "generate", "generate_suite", "evaluate", "chase",
           "rule_distance", "r_score", "suite_grid", "SIZE_CLASSES"]
