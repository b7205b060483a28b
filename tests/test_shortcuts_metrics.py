"""Severity (paper §3.4), supervision check, and concept metrics on hand-made matrices."""
import math

import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.shortcuts import metrics as M
from nesybench.shortcuts.severity import severity, supervision_check
from nesybench.shortcuts.task import load_task


def bits(formula=None, name="t"):
    d = {"name": name, "maps": "separate",
         "concepts": [{"name": "b", "count": 3, "domain": [0, 1]}]}
    if formula:
        d.update(knowledge="kb/shortcuts/formula.lp", formula=formula)
    else:
        d["knowledge"] = "kb/shortcuts/xor.lp"
    return load_task(d)


def test_severity_xor_on_and_and_on_single_bit():
    src = bits()
    r = severity(src, bits("b1 & b2", "and12"))
    assert r.n_maps == 3 and r.exhaustive and r.average == pytest.approx(0.5)
    r = severity(src, bits("b3", "just3"))
    assert r.average == pytest.approx(2 / 3) and r.harmless == 1
    # a source whose RSs are all harmless on the same task: severity 0
    assert severity(src, bits(name="xor_again")).average == 0.0


def test_severity_perm_class_and_incompatible_tasks():
    r = severity(bits("b1 & b2 & b3", "and3"), bits("b1", "first"), map_class="perm")
    assert r.n_maps == 5 and 0 < r.average < 1
    other = load_task("curricula/rs/mnadd_half.yaml")
    with pytest.raises(NesyError, match="same concept variables"):
        severity(bits(), other)
    with pytest.raises(NesyError, match="joint"):
        severity(bits(), bits(name="x2"), map_class="joint")


def test_supervision_check():
    t = bits()
    assert not supervision_check(t, ["b(1)"]).removes_all
    c = supervision_check(t, ["b(1)", "b(2)"])
    assert c.removes_all and c.rss_before == 3 and c.rss_after == 0


def test_collapse_hand_made():
    ident = np.eye(4, dtype=int) * 5
    assert M.collapse(ident, "hard") == pytest.approx(0.0)
    assert M.collapse(ident, "relaxed") == pytest.approx(0.0)
    allone = np.zeros((4, 4), dtype=int)
    allone[:, 2] = 7
    assert M.collapse(allone, "hard") == pytest.approx(1.0)
    assert M.collapse(allone, "relaxed") == pytest.approx(1.0)
    # two of four predicted values used, unevenly
    # paper Appendix B.2: "relaxed" = is the value predicted at all (indicator), "hard" =
    # the mass with which it is predicted (as named in the rsbench paper, Appendix B.2)
    c = np.array([[9, 1, 0, 0], [9, 1, 0, 0], [10, 0, 0, 0], [10, 0, 0, 0]])
    assert M.collapse(c, "relaxed") == pytest.approx(1 - math.log(2) / math.log(4))
    p = np.array([3.8, 0.2]) / 4
    h = -(p * np.log(p)).sum() / math.log(4)
    assert M.collapse(c, "hard") == pytest.approx(1 - h)
    assert M.collapse(c, "hard") > M.collapse(c, "relaxed")


def test_collapse_names_in_cli_json(tmp_path):
    """`rs metrics --json` reports the indicator version as relaxed, the mass one as hard."""
    import json

    from click.testing import CliRunner

    from nesybench.shortcuts.cli import group
    p = tmp_path / "pred.csv"
    rows = ["concept:c,pred_concept:c"] + [f"{t},{q}" for t, q in
                                            [(0, 0)] * 9 + [(0, 1)] + [(1, 0)] * 10 + [(2, 0)] * 10 + [(3, 0)] * 10]
    p.write_text("\n".join(rows) + "\n")
    res = CliRunner().invoke(group, ["metrics", str(p), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["collapse_relaxed"] == pytest.approx(1 - math.log(2) / math.log(4))
    assert d["collapse_hard"] > d["collapse_relaxed"]
    assert d["per_concept"]["c"]["collapse_relaxed"] == d["collapse_relaxed"]
    text = CliRunner().invoke(group, ["metrics", str(p)]).output
    assert f"collapse hard {d['collapse_hard']:.4f} relaxed {d['collapse_relaxed']:.4f}" in text


def test_f1_and_compute():
    c = np.array([[2, 1], [0, 3]])
    assert M.macro_f1(c) == pytest.approx((4 / 5 + 6 / 7) / 2)
    assert M.micro_f1_multilabel([[1, 0], [1, 1]], [[1, 1], [0, 1]]) == pytest.approx(2 * 2 / (4 + 1 + 1))
    m = M.compute({"y": [0, 1, 1, 0]}, {"y": [0, 1, 0, 0]},
                  {"d(1)": [0, 1, 2, 3], "d(2)": [1, 1, 2, 2]},
                  {"d(1)": [0, 1, 2, 2], "d(2)": [1, 1, 2, 2]},
                  shared={"digit": ["d(1)", "d(2)"]})
    assert m.label_accuracy == 0.75 and m.concept_accuracy == pytest.approx(7 / 8)
    assert m.world_accuracy == 0.75
    assert m.per_concept["digit"]["confusion"][3] == [0, 0, 1, 0]
    assert 0 < m.collapse_hard < 1


def test_plots(tmp_path):
    m = M.compute({"y": [0, 1]}, {"y": [1, 1]}, {"c": [0, 1]}, {"c": [1, 1]})
    files = M.plot_confusions(m, tmp_path)
    assert len(files) == 2 and all((tmp_path / f).stat().st_size > 500 for f in files)


def test_predictions_file_errors(tmp_path):
    p = tmp_path / "p.csv"
    p.write_text("label:y,concept:c,pred_concept:c\n1,0,0\n")
    with pytest.raises(NesyError, match="pred_label:y"):
        M.read_predictions(p)


def test_metric_edges_pinned():
    """Undefined and boundary cases of the concept metrics, each with its value."""
    # numbers sort numerically and before strings
    assert M.confusion(["10", "a", "9"], ["9", "10", "a"])[1] == ["9", "10", "a"]
    assert M.confusion(["5", "a"], ["a", "5"])[1] == ["5", "a"]
    assert M.collapse(np.array([[4.0]])) == 0.0                    # one value: no collapse
    assert M.collapse(np.zeros((3, 3))) == 0.0                      # nothing predicted
    assert M.collapse(np.zeros((3, 3)), "relaxed") == 0.0
    z = np.zeros((4, 2), dtype=int)
    assert M.micro_f1_multilabel(z, z) == 1.0                       # nothing to find
    t = np.array([[1, 0], [0, 1], [0, 0]])
    p = np.array([[1, 1], [0, 0], [1, 0]])                          # tp 1, fp 2, fn 1
    assert M.micro_f1_multilabel(t, p) == pytest.approx(2 / (2 + 2 + 1))
    m = M.compute({"y": []}, {"y": []}, {"c": []}, {"c": []})
    assert m.label_accuracy == 0.0 and m.concept_accuracy == 0.0 and m.world_accuracy == 0.0
    assert m.per_label["y"]["accuracy"] == 0.0
    # one binary label: accuracy and macro-F1, no multilabel micro-F1
    assert M.compute({"y": ["0", "1"]}, {"y": ["1", "1"]}, {}, {}).label_micro_f1 is None
    with pytest.raises(NesyError, match="value 'b' is not one of"):
        M.confusion(["a"], ["b"], values=["a"])
    with pytest.raises(NesyError, match="value 'c' is not one of"):
        M.confusion(["c"], ["a"], values=["a"])


def test_compute_keeps_each_group_its_own_figures():
    ct = {"a": [0, 1, 0, 1], "b": [0, 1, 2, 2]}
    cp = {"a": [0, 1, 0, 1], "b": [0, 0, 0, 0]}
    m = M.compute({"y": ["0", "1", "1", "0"], "z": ["1", "1", "0", "0"]},
                  {"y": ["0", "1", "0", "0"], "z": ["1", "0", "0", "0"]}, ct, cp)
    assert m.per_concept["a"]["macro_f1"] == 1.0 and m.per_concept["a"]["collapse_hard"] == 0.0
    assert m.per_label["y"]["accuracy"] == 0.75 and m.per_label["z"]["accuracy"] == 0.75
    assert m.label_accuracy == 0.5 and m.world_accuracy == 0.25      # both labels / concepts
    assert m.per_concept["b"]["accuracy"] == 0.25
    assert m.per_concept["b"]["macro_f1"] == pytest.approx(M.macro_f1(
        M.confusion(ct["b"], cp["b"])[0]))
    assert m.per_concept["b"]["collapse_hard"] == 1.0 and m.per_concept["b"]["collapse_relaxed"] == 1.0
    # two binary labels with both values present: the multilabel micro-F1 is reported
    tt = np.array([[0, 1], [1, 1], [1, 0], [0, 0]])
    pp = np.array([[0, 1], [1, 0], [0, 0], [0, 0]])
    assert m.label_micro_f1 == pytest.approx(M.micro_f1_multilabel(tt, pp))


def test_read_predictions_checks_rows_and_columns(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("label:y,pred_label:y\n1,1\n0,1\n")
    lt, lp, ct, cp = M.read_predictions(f)
    assert lt == {"y": ["1", "0"]} and lp == {"y": ["1", "1"]} and ct == {} and cp == {}
    f.write_text("label:y,pred_label:y\n1,1,7,8\n")
    with pytest.raises(NesyError, match="row has 4 fields, the header 2") as e:
        M.read_predictions(f)
    assert e.value.line == 2
    f.write_text("x,pred_x\n1,1\n")
    with pytest.raises(NesyError, match="no label:/concept: columns"):
        M.read_predictions(f)
