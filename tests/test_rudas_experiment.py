"""`nesybench rudas experiment`: a tiny grid end to end (2 datasets x 2 learners, one a shell
learner), the tables and figure written, thresholds by grid search, a failing learner cell
reported with exit status 1, a rerun that resumes without recomputing finished cells, and a
spec of another configuration refused."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from nesybench.cli import main
from nesybench.rudas.experiment import condition_noise, dataset_items, load_experiment
from nesybench.runs.registry import resolve

ROOT = Path(__file__).resolve().parents[1]


def _spec(tmp: Path, counter: Path, *, fail: bool = False, name: str = "spec.yaml") -> Path:
    """amie and a shell learner that counts its runs in ``counter`` and prints one rule
    (or exits 3 with ``fail``)."""
    script = tmp / "learner.sh"
    script.write_text(f"echo run >> {counter}\n"
                      + ("exit 3\n" if fail else "echo '% confidence 0.8'\n"
                                                 "echo 'p0(X,Y) :- p1(X,Y).'\n"))
    spec = {"experiment": "tiny", "seed": 1,
            "systems": ["amie", {"name": "shell", "system": "cmd",
                                 "command": f"sh {script} {{train}}"}],
            "thresholds": {"grid": [0.0, 0.5, 0.9]}, "timeout": 120,
            "datasets": {"overall": {"categories": ["chain"], "sizes": ["xs"], "depths": [2],
                                     "per_cell": 2}}}
    p = tmp / name
    p.write_text(yaml.safe_dump(spec))
    return p


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exp")
    counter = tmp / "runs.txt"
    spec = _spec(tmp, counter)
    out = tmp / "out"
    rc = main(["rudas", "experiment", str(spec), "--out", str(out), "-j", "0", "-q",
               "--allow-commands"])
    return {"tmp": tmp, "spec": spec, "out": out, "rc": rc, "counter": counter}


def test_end_to_end_tables_and_figure(done):
    out = done["out"]
    assert done["rc"] == 0
    assert sorted(p.name for p in (out / "datasets").iterdir()) == ["CHAIN-XS-2-000",
                                                                    "CHAIN-XS-2-001"]
    for t in ("table2", "table4", "table5"):
        assert (out / "tables" / f"{t}.md").is_file() and (out / "tables" / f"{t}.csv").is_file()
    assert not (out / "tables" / "table3.md").exists()        # no noise part in this spec
    assert (out / "figure2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.reader((out / "tables" / "table2.csv").open()))
    assert rows[0] == ["", "AMIE+", "shell"]
    labels = [r[0] for r in rows[1:]]
    assert labels[:7] == ["H-accuracy", "Accuracy", "F1-score", "H-score", "Precision",
                          "Recall", "R-score"]
    assert dict((r[0], r[1:]) for r in rows)["Datasets evaluated"] == ["2", "2"]
    th = json.loads((out / "thresholds.json").read_text())
    assert set(th) == {"amie", "shell"} and th["amie"]["how"] == "grid search"
    # the chosen threshold has the best mean H-score of the grid
    means = th["amie"]["mean_by_threshold"]
    assert means[f"{th['amie']['threshold']:g}"] == max(means.values())
    h = float(dict((r[0], r[1:]) for r in rows)["H-score"][0])
    assert h == pytest.approx(max(means.values()), abs=1e-4)
    report = (out / "report.md").read_text()
    assert "Table 2" in report and "Paper:" in report
    # every cell keeps its learned program
    arts = list((out / "study" / "artifacts").rglob("learned.pl"))
    assert len(arts) == 4


def test_rerun_resumes_without_recomputing(done, capsys):
    runs_before = done["counter"].read_text().count("run")
    assert runs_before == 2                   # the shell learner ran once per dataset
    capsys.readouterr()
    rc = main(["rudas", "experiment", str(done["spec"]), "--out", str(done["out"]), "-j", "0",
               "--json", "--allow-commands"])
    assert rc == 0
    info = json.loads(capsys.readouterr().out)
    assert info["ran"] == 0 and info["skipped"] == 4 and info["failed"] == 0
    assert done["counter"].read_text().count("run") == runs_before


def test_other_configuration_is_refused_then_replaced(done, tmp_path, capsys):
    out = tmp_path / "out"
    import shutil
    shutil.copytree(done["out"], out)
    assert main(["rudas", "experiment", str(done["spec"]), "--out", str(out), "-q",
                 "--seed", "7", "--allow-commands"]) == 2
    assert "--force-new" in capsys.readouterr().err


def test_failing_learner_cell_exit_1_and_reported(tmp_path, capsys):
    counter = tmp_path / "runs.txt"
    spec = _spec(tmp_path, counter, fail=True)
    out = tmp_path / "out"
    rc = main(["rudas", "experiment", str(spec), "--out", str(out), "-j", "0", "-q",
               "--allow-commands"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "2 of 4 cells failed: dataset=CHAIN-XS-2-000, system=shell" in err
    assert "exit status 3" in err
    # the tables are still written from what finished, with the failures counted
    rows = {r[0]: r[1:] for r in csv.reader((out / "tables" / "table2.csv").open())}
    assert rows["Cells failed"] == ["0", "2"] and rows["Datasets evaluated"] == ["2", "0"]
    # a rerun tries the failed cells again (only those)
    rc = main(["rudas", "experiment", str(spec), "--out", str(out), "-j", "0", "--json",
               "--allow-commands"])
    info = json.loads(capsys.readouterr().out)
    assert rc == 1 and info["ran"] == 2 and info["skipped"] == 2


def test_local_workers_and_cell_timeout(tmp_path, capsys):
    """Cells in worker processes (-j 2); a learner that outlives --cell-timeout is a failed
    cell with its cause."""
    script = tmp_path / "slow.sh"
    script.write_text("sleep 30\n")
    spec = {"experiment": "slow", "systems": [{"name": "slow", "system": "cmd",
                                               "command": f"sh {script}"}],
            "datasets": {"overall": {"categories": ["rdg"], "sizes": ["xs"], "depths": [2],
                                     "per_cell": 1}}}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(spec))
    rc = main(["rudas", "experiment", str(p), "--out", str(tmp_path / "o"), "-j", "2", "-q",
               "--cell-timeout", "3", "--allow-commands"])
    err = capsys.readouterr().err
    assert rc == 1 and "timed out after 3" in err and "1 of 1 cells failed" in err


def test_registered_cell_and_paper_grid():
    assert resolve("rudas.learn").__name__ == "learn_cell"
    spec = load_experiment(ROOT / "curricula/rudas/experiment.yaml")
    items = dataset_items(spec)
    over = [i for i in items if i["part"] == "overall"]
    noise = [i for i in items if i["part"] == "noise"]
    assert len(over) == 120 and len(noise) == 144          # the paper's Tables 2 and 3
    assert sum(i["condition"] == "complete" for i in noise) == 48
    assert all(i["params"]["p_c"] == 0 and i["params"]["max_body"] == 2 for i in items)
    assert spec["thresholds"]["fixed"] == {"foil": 0.0}
    small = dataset_items(load_experiment(ROOT / "curricula/rudas/experiment.yaml", small=True))
    assert len(small) == 24
    assert condition_noise("complete", 4) == {"n_ow": 0.0, "noise_minus": 0.0, "noise_plus": 0.0}
    assert condition_noise("noisy", 7)["noise_plus"] == 0.3


@pytest.mark.parametrize("text,msg", [
    ("systems: [nope]\ndatasets: {overall: {categories: [chain], sizes: [xs], depths: [2], "
     "per_cell: 1}}", "unknown system 'nope'"),
    ("systems: [amie]\ndatasets: {overall: {categories: [tree], sizes: [xs], depths: [2], "
     "per_cell: 1}}", "datasets.overall.categories"),
    ("systems: [amie]\nbogus: 1\ndatasets: {}", "unknown key 'bogus'"),
])
def test_bad_spec_is_one_error(tmp_path, capsys, text, msg):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    assert main(["rudas", "experiment", str(p), "--out", str(tmp_path / "o")]) == 2
    assert msg in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_shell_commands_in_a_spec_need_consent(tmp_path, capsys):
    """A spec from someone else must not run code: a `command:` system is refused (exit 2,
    nothing written, the command never runs) unless --allow-commands is given."""
    marker = tmp_path / "ran"
    spec = {"experiment": "x", "systems": [{"name": "sh", "system": "cmd",
                                            "command": f"touch {marker}"}],
            "datasets": {"overall": {"categories": ["rdg"], "sizes": ["xs"], "depths": [2],
                                     "per_cell": 1}}}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(spec))
    out = tmp_path / "o"
    assert main(["rudas", "experiment", str(p), "--out", str(out), "-j", "0", "-q"]) == 2
    err = capsys.readouterr().err
    assert "--allow-commands" in err and "systems[0].command" in err
    assert not marker.exists() and not out.exists()


def test_paper_thresholds_are_the_tables_and_the_grid_search_is_beside(done, tmp_path):
    """With ``thresholds.paper`` in the spec, Tables 2-5 use the paper's thresholds and the
    tables at grid-searched thresholds are written beside, labelled."""
    import shutil

    from nesybench.rudas.experiment import write_report
    out = tmp_path / "copy"
    shutil.copytree(done["out"], out, symlinks=True)
    exp_file = out / "experiment.json"
    exp = json.loads(exp_file.read_text())
    exp["thresholds"]["paper"] = {"amie": 0.9}
    exp_file.write_text(json.dumps(exp))
    rep = write_report(out, plot=False)
    th = json.loads((out / "thresholds.json").read_text())
    grid = json.loads((out / "thresholds-grid.json").read_text())
    assert th["amie"]["threshold"] == 0.9 and th["amie"]["how"] == "the paper's"
    assert grid["amie"]["how"] == "grid search"
    assert th["shell"] == grid["shell"]                 # no paper value: grid search in both
    rows = dict((r[0], r[1:]) for r in csv.reader((out / "tables" / "table2.csv").open()))
    rows_grid = dict((r[0], r[1:]) for r in
                     csv.reader((out / "tables" / "table2-grid.csv").open()))
    means = th["amie"]["mean_by_threshold"]
    assert float(rows["H-score"][0]) == pytest.approx(means["0.9"], abs=1e-4)
    assert float(rows_grid["H-score"][0]) == pytest.approx(max(means.values()), abs=1e-4)
    report = (out / "report.md").read_text()
    assert "## At thresholds grid-searched on these datasets" in report
    assert rep["thresholds_grid"]["amie"]["how"] == "grid search"
