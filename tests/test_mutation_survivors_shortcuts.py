"""Shortcut metrics on the cases the mutation run found untested, each against scikit-learn
or a value worked out by hand: macro-F1 over a declared domain with values nobody uses or
over nothing, micro-F1 without a true positive, the hard collapse by its definition, and the
predictions reader given a folder, a repeated column, only concept columns, or truth without
predictions (and the reverse)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import f1_score

from nesybench.errors import NesyError
from nesybench.shortcuts import metrics as M


def test_macro_f1_leaves_out_declared_values_nobody_uses():
    # domain 0..4; values 3 and 4 are neither true nor predicted: they carry no F1 term
    true, pred = [0, 0, 1, 2, 2], [0, 1, 1, 2, 0]
    c, _ = M.confusion(true, pred, values=range(5))
    want = f1_score(true, pred, labels=[0, 1, 2], average="macro")
    assert M.macro_f1(c) == pytest.approx(want)
    m = M.compute({}, {}, {"d": true}, {"d": pred}, domains={"d": list(range(5))})
    assert m.concept_macro_f1 == pytest.approx(want)


def test_read_predictions_from_a_folder(tmp_path):
    (tmp_path / "predictions.csv").write_text("concept:c,pred_concept:c\n1,0\n2,2\n")
    lt, lp, ct, cp = M.read_predictions(tmp_path)
    assert lt == {} and lp == {} and ct == {"c": ["1", "2"]} and cp == {"c": ["0", "2"]}


def test_read_predictions_refuses_a_repeated_column(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("label:y,pred_label:y,label:y\n1,1,0\n")
    with pytest.raises(NesyError, match="repeated column") as e:
        M.read_predictions(f)
    assert e.value.line == 1


def test_macro_f1_of_nothing_and_micro_f1_with_no_true_positive():
    # no class has support or predictions: macro-F1 is pinned to 0
    assert M.macro_f1(np.zeros((0, 0))) == 0.0
    assert M.macro_f1(np.zeros((3, 3))) == 0.0
    # TP = 0, FP = 1, FN = 1: micro-F1 0, as scikit-learn's
    t, p = np.array([[1, 0]]), np.array([[0, 1]])
    assert M.micro_f1_multilabel(t, p) == 0.0 == f1_score(t, p, average="micro")
    t, p = np.array([[1, 0, 1], [0, 0, 1]]), np.array([[0, 1, 1], [0, 1, 0]])
    assert M.micro_f1_multilabel(t, p) == pytest.approx(f1_score(t, p, average="micro"))


def test_hard_collapse_by_its_definition():
    # rows normalised: [1, 0, 0], [0, 1, 0], [0, .5, .5]; column mass p = (1, 1.5, .5),
    # q = (1/3, 1/2, 1/6); collapse = 1 - H(q) / log 3
    c = np.array([[1, 0, 0], [0, 4, 0], [0, 2, 2]])
    q = [1 / 3, 1 / 2, 1 / 6]
    want = 1 - (-sum(x * math.log(x) for x in q)) / math.log(3)
    assert M.collapse(c, "hard") == pytest.approx(want)
    assert M.collapse(c, "relaxed") == pytest.approx(0.0)      # every value is predicted


@pytest.mark.parametrize("text, match", [
    ("label:y\n1\n", "pred_label:y is missing"),
    ("concept:c\n1\n", "pred_concept:c is missing"),
    ("pred_label:y,pred_concept:c\n1,1\n", "no label:/concept: columns"),
])
def test_read_predictions_truth_without_predictions_and_the_reverse(tmp_path, text, match):
    f = tmp_path / "p.csv"
    f.write_text(text)
    with pytest.raises(NesyError, match=match):
        M.read_predictions(f)
