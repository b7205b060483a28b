"""Results as pandas DataFrames: sweep studies, KANDY training results, IRT and SKI tables."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nesybench.errors import NesyError


def test_runs_results_to_pandas(tmp_path):
    from nesybench.runs import Study
    from nesybench.runs.runner import run_grid
    from nesybench.runs.spec import GridSpec

    spec = GridSpec(study="toy", function="demo.toy", params={"steps": 3},
                    axes={"x": [0.0, 1.0], "label": ["a", "b"]}, repetitions=2, seed=0)
    run_grid(spec, tmp_path / "s", executor="inline")
    study = Study(tmp_path / "s")
    df = study.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 8
    assert {"cell_id", "x", "label", "rep", "seed", "status"} <= set(df.columns)
    assert (df["status"] == "done").all()
    assert df.equals(study.to_dataframe())
    curves = study.to_pandas("curves")
    assert {"name", "step", "value"} <= set(curves.columns) and len(curves) > 0
    assert len(study.to_pandas("attempts")) == 8
    with pytest.raises(NesyError):
        study.to_pandas("nope")


def test_kandy_train_result_to_pandas():
    from nesybench.kandy.learn.settings import TrainResult

    A = np.array([[0.9, 0.5], [0.8, 0.7]])
    res = TrainResult(config={"setting": "continual"}, task_ids=[0, 3], A=A, A_micro=A - 0.1,
                      thresholds=np.full((2, 2), 0.5), times=[0, 1])
    df = res.to_pandas()
    assert list(df.columns) == ["time", "trained_up_to", "task", "acc", "acc_micro",
                                "threshold"]
    assert len(df) == 4 and df.loc[(df.time == 1) & (df.task == 3), "acc"].item() == 0.7


def test_irt_tables_to_pandas(tmp_path):
    from nesybench.irt import study
    from nesybench.irt.taxonomy import cluster_profiles

    (tmp_path / "kappa.csv").write_text("dataset,model,delta,bin,difficulty,kappa\n"
                                        "letter,knn,0.1,0,-1.5,0.9\nletter,knn,0.1,1,0.5,0.7\n")
    df = study.to_pandas(tmp_path, "kappa")
    assert len(df) == 2 and df["kappa"].dtype == float
    with pytest.raises(NesyError):
        study.to_pandas(tmp_path, "difficulty")
    tax = cluster_profiles(np.random.default_rng(0).random((5, 4)), list("abcde"), k=2)
    t = tax.to_pandas()
    assert sorted(t["model"]) == list("abcde") and set(t["cluster"]) <= {1, 2}
    assert list(t["leaf"]) == list(range(5))


def test_ski_table_to_pandas(monkeypatch):
    from nesybench.ski import report

    rows = [{"dataset": "bcw", "degradation": "drop", "injector": "kbann", "rho": 1.0,
             "R": 0.5, "p": 0.02}]
    monkeypatch.setattr(report, "table1", lambda path: rows)
    df = report.to_pandas("study")
    assert list(df["injector"]) == ["kbann"] and df["R"].item() == 0.5
