"""The RuDaS experiment's report on a small hand-made set of evaluated cells: each system's
threshold by grid search (ties to the smaller threshold, missing values left out) or fixed,
and the cells of Tables 2-5, their titles and the Markdown/CSV writers, every number worked
out by hand from the records below (binary fractions, so the means are exact)."""
from __future__ import annotations

import math

import pytest

from nesybench.rudas.experiment import _csv, _md, build_tables, choose_thresholds

GRID = [0.0, 0.5, 0.9]


def _ds(name, part, cat, size, depth, cond=None):
    return {"name": name, "part": part, "category": cat, "size": size, "depth": depth,
            "condition": cond}


DATASETS = [_ds("C2a", "overall", "chain", "xs", 2), _ds("C2b", "overall", "chain", "xs", 2),
            _ds("C2c", "overall", "chain", "xs", 2), _ds("R3", "overall", "rdg", "s", 3),
            _ds("Ninc1", "noise", "rdg", "xs", 2, "incomplete"),
            _ds("Ninc2", "noise", "drdg", "xs", 2, "incomplete"),
            _ds("Nnoisy", "noise", "rdg", "xs", 2, "noisy")]
META = {d["name"]: d for d in DATASETS}


def _rec(system, name, h, seconds):
    """A cell: H-score per grid threshold (F1 = H / 2), the other metrics not recorded."""
    by = {k: {"h_score": v, "f1": None if v is None else v / 2} for k, v in enumerate(h)}
    return {**META[name], "system": system, "learn_seconds": seconds, "rules": 1,
            "by_threshold": by}


NAN = math.nan
RECS = [
    # amie: mean H over its six cells per threshold 0.25, 0.5, 0.5 (None and NaN left out)
    _rec("amie", "C2a", [0.25, 0.5, 0.75], 2.0),
    _rec("amie", "C2b", [0.25, 0.75, None], 4.0),
    _rec("amie", "R3", [0.25, 0.25, NAN], 6.0),
    _rec("amie", "Ninc1", [0.25, 0.5, 0.25], 1.0),
    _rec("amie", "Ninc2", [0.25, 0.75, 0.5], 1.0),
    _rec("amie", "Nnoisy", [0.25, 0.25, 0.5], 1.0),
    # mine: a fixed threshold 0.5
    _rec("mine", "C2a", [0.0, 1.0, 0.0], None),
    _rec("mine", "R3", [0.0, 0.5, 0.0], 1.0),
]
FAILS = [{"axes": {"system": "amie", "dataset": "C2c"}},
         {"axes": {"system": "mine", "dataset": "Ninc1"}}]


def _exp(**kw):
    return {"experiment": "t", "learners": {"amie": {}, "mine": {}, "other": {}},
            "thresholds": {"grid": GRID, "metric": "h_score", "fixed": {"mine": 0.5}},
            "datasets": DATASETS, **kw}


def test_thresholds_by_grid_search_fixed_and_without_cells():
    th = choose_thresholds(_exp(), RECS)
    assert list(th) == ["amie", "mine", "other"]
    assert th["amie"] == {"threshold": 0.5, "index": 1, "how": "grid search",
                          "metric": "h_score", "datasets": 6,
                          "mean_by_threshold": {"0": 0.25, "0.5": 0.5, "0.9": 0.5}}
    assert th["mine"]["threshold"] == 0.5 and th["mine"]["index"] == 1
    assert th["mine"]["how"] == "fixed" and th["mine"]["datasets"] == 2
    # no cell at all: the first threshold of the grid, no means
    assert th["other"]["threshold"] == 0.0 and th["other"]["index"] == 0
    assert th["other"]["mean_by_threshold"] == {"0": None, "0.5": None, "0.9": None}
    # the spec's own list of systems is the one reported
    assert list(choose_thresholds(_exp(systems=["mine"]), RECS)) == ["mine"]


def test_tables_two_to_five_by_hand():
    exp = _exp()
    tables = build_tables(exp, RECS, choose_thresholds(exp, RECS), FAILS)
    assert list(tables) == ["table2", "table3", "table4", "table5"]
    t2 = tables["table2"]
    assert t2["title"] == "Table 2: metrics averaged over the 4 datasets of the overall part"
    assert t2["header"] == ["", "AMIE+", "mine", "other"]
    rows = {r[0]: r[1:] for r in t2["rows"]}
    assert rows["H-score"] == [(0.5 + 0.75 + 0.25) / 3, (1.0 + 0.5) / 2, None]
    assert rows["F1-score"] == [0.25, 0.375, None]
    assert rows["Precision"] == [None, None, None]
    assert rows["Runtime (s, mean)"] == [4.0, 1.0, None]
    assert rows["Threshold"] == [0.5, 0.5, 0.0]
    assert rows["Datasets evaluated"] == [3, 2, 0]
    assert rows["Cells failed"] == [1, 0, 0]          # mine's failure is in the noise part
    t3 = tables["table3"]
    assert t3["title"] == ("Table 3: H-score by missing consequences and noise "
                           "(Incomplete 2, Incomplete + Noise 1 datasets)")
    assert t3["header"] == ["", "Incomplete", "Incomplete + Noise"]
    assert t3["rows"] == [["AMIE+", 0.625, 0.25], ["mine", None, None],
                          ["other", None, None]]
    t4 = tables["table4"]
    assert t4["header"] == ["", "CHAIN", "RDG"]       # drdg occurs in the noise part only
    assert t4["rows"] == [["AMIE+", 0.625, 0.25], ["mine", 1.0, 0.5], ["other", None, None]]
    detail = {(r[0], r[1]): r[2:] for r in t4["detail"]["rows"]}
    assert detail[("AMIE+", "CHAIN")] == [0.625, 0.3125, None, None, None, 3.0, 2]
    assert detail[("mine", "RDG")] == [0.5, 0.25, None, None, None, 1.0, 1]
    assert detail[("other", "CHAIN")] == [None] * 6 + [0]
    t5 = tables["table5"]
    assert t5["header"] == ["", "XS-2", "S-3"]        # overall groups, first seen first
    assert t5["rows"] == [["AMIE+", 0.625, 0.25], ["mine", 1.0, 0.5], ["other", None, None]]


def test_only_the_spec_systems_and_no_noise_part():
    overall = [d for d in DATASETS if d["part"] == "overall"]
    exp = _exp(systems=["mine"], datasets=overall)
    tables = build_tables(exp, RECS, choose_thresholds(exp, RECS), FAILS)
    assert "table3" not in tables
    assert tables["table2"]["header"] == ["", "mine"]
    assert tables["table4"]["rows"] == [["mine", 1.0, 0.5]]


def test_markdown_and_csv_cells():
    rows = [["r", 12.5], ["s", 9.5], ["t", None], ["u", 10.0], ["v", 3], ["w", -12.5]]
    assert _md(["", "A"], rows).splitlines() == [
        "|  | A |", "|---|---|", "| r | 12.50 |", "| s | 9.5000 |", "| t | - |",
        "| u | 10.00 |", "| v | 3 |", "| w | -12.50 |"]
    assert _csv(["a", "b"], [[None, 0.5], ["x", 3], [1 / 3, "y"]]) == \
        "a,b\n,0.5\nx,3\n0.333333,y\n"
