"""Continual-learning metrics on the cases the mutation run found untested, each against an
independent computation: scikit-learn's balanced accuracy, the threshold rule of the
docstring worked out by hand, and the metric definitions on a matrix with fewer rows than
tasks (the metrics of an unfinished run)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from nesybench.kandy.learn import metrics as M


@pytest.mark.parametrize("pred, labels", [
    ([1, 0, 0, 0], [1, 1, 0, 0]),          # TP = FN = 1
    ([1, 0, 1, 0], [1, 1, 0, 0]),          # TP = FN = TN = FP = 1
    ([0, 1, 1, 0, 0], [1, 1, 0, 0, 0]),    # TN = 2, FP = 1, TP = FN = 1
    ([1, 1, 0], [1, 0, 0]),                # TN = FP = 1
])
def test_balanced_accuracy_agrees_with_scikit_learn(pred, labels):
    assert M.balanced_accuracy(pred, labels) == pytest.approx(
        balanced_accuracy_score(labels, pred))


def test_threshold_that_only_a_midpoint_reaches():
    # perfect separation needs 0.6 < τ <= 0.8; 0.5 and the two extremes give 0.5
    assert M.tune_threshold([0.6, 0.8], [0, 1]) == pytest.approx(0.7)


def test_threshold_equal_to_a_score_counts_that_score_as_positive():
    # τ = 0.5 (a score) separates perfectly under `score >= τ`, and it is the candidate
    # closest to 0.5; 0.35 separates as well but lies farther from 0.5
    tau = M.tune_threshold([0.2, 0.5, 0.8], [0, 1, 1])
    assert tau == 0.5
    assert M.balanced_accuracy(np.array([0.2, 0.5, 0.8]) >= tau, [0, 1, 1]) == 1.0


def test_threshold_ties_go_to_the_one_closest_to_a_half():
    # any τ in (0.2, 0.9] separates; 0.5 is a candidate and the closest, 0.55 the midpoint
    assert M.tune_threshold([0.1, 0.2, 0.9, 0.95], [0, 0, 1, 1]) == 0.5


def test_threshold_all_positive_or_all_negative_when_scores_are_reversed():
    # the scores rank the classes backwards: every threshold between the scores is worse
    # than predicting one class for all (balanced accuracy 0.5). Of "all positive" (τ just
    # below the smallest score) and "all negative" (τ just above the largest) the one
    # closer to 0.5 wins.
    tau = M.tune_threshold([0.45, 0.9], [1, 0])
    assert tau < 0.45 and tau == pytest.approx(0.45, abs=1e-4)
    assert M.balanced_accuracy(np.array([0.45, 0.9]) >= tau, [1, 0]) == 0.5
    tau = M.tune_threshold([0.1, 0.2, 0.52], [1, 1, 0])
    assert tau > 0.52 and tau == pytest.approx(0.52, abs=1e-4)
    assert M.balanced_accuracy(np.array([0.1, 0.2, 0.52]) >= tau, [1, 1, 0]) == 0.5


def test_metrics_at_time_zero_are_nan_without_a_warning():
    A = np.array([[0.9, 0.6], [0.7, 0.8]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (M.average_forgetting, M.backward_transfer_raw, M.backward_transfer,
                  M.forward_transfer):
            assert math.isnan(f(A, 0))


def test_over_time_of_the_first_rows_of_a_longer_run():
    # two of three tasks learned so far: the rows of times 0 and 1, three columns
    A = np.array([[0.9, 0.6, 0.5],
                  [0.7, 0.8, 0.55]])
    ot = M.over_time(A)
    assert all(len(v) == 2 for v in ot.values())
    assert ot["avg_acc"] == pytest.approx([0.9, (0.7 + 0.8) / 2])
    assert ot["forgetting"][1] == pytest.approx(0.9 - 0.7)
    assert ot["bwt_raw"][1] == pytest.approx(0.7 - 0.9)
    assert ot["fwt"][1] == pytest.approx(0.6 - 0.5)
