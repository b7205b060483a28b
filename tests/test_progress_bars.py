"""Progress bars of long commands (CLI consistency): `rudas generate`, `rudas
evaluate` (fed by Prolog's progress reports, prolog/progress.pl) and `rs generate`.

A bar goes to stderr; -q/--quiet and --json turn it off; the output bytes are the same with
and without it.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nesybench.logic import prolog
from nesybench.rudas.core import PhaseBar, RudasParams, evaluate, generate

ROOT = Path(__file__).resolve().parents[1]

#: bars are drawn on a clock and a Prolog thread runs beside Python: the stress runs take them
pytestmark = pytest.mark.timing


def cli(*args, delay="0"):
    """Run the CLI; ``delay``: NESYBENCH_PROGRESS_DELAY (0: draw the bar at once)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), NESYBENCH_PROGRESS_DELAY=delay)
    return subprocess.run([sys.executable, "-m", "nesybench", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def tree(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def closure(tmp_path_factory):
    """A dataset whose learned program (transitive closure of a 120-edge chain) derives
    7,260 facts, and the learned file."""
    d = tmp_path_factory.mktemp("closure")
    (d / "rules.txt").write_text("p(X,Y) :- e(X,Y).\n")
    (d / "eval-support.txt").write_text("".join(f"e(c{i},c{i + 1}).\n" for i in range(120)))
    learned = d / "learned.pl"
    learned.write_text("p(X,Y) :- e(X,Y).\np(X,Z) :- e(X,Y), p(Y,Z).\n")
    return d, learned


def test_phase_bar_sees_generator_phases_and_output_is_unchanged(tmp_path):
    seen = []
    with prolog.progress(lambda ph, done, total: seen.append((ph, done, total))):
        generate(RudasParams(seed=5, size="s"), tmp_path / "a")
    generate(RudasParams(seed=5, size="s"), tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    phases = [p for p, _, _ in seen]
    assert phases[0] == "rules" and phases[-1] == "writing files"
    assert "training facts" in phases and "evaluation facts" in phases
    target = json.loads((tmp_path / "a" / "manifest.json").read_text())["params"]["target"]
    assert {t for p, _, t in seen if p == "training facts"} == {target}
    train = [d for p, d, _ in seen if p == "training facts"]
    assert train == sorted(train) and train[-1] > 0       # the estimate only grows
    # outside the block, nothing reaches Python
    seen.clear()
    generate(RudasParams(seed=5, size="xs"), tmp_path / "c")
    assert seen == []


def test_evaluate_reports_chase_counts_and_r_score(closure):
    d, learned = closure
    seen = []
    with prolog.progress(lambda ph, done, total: seen.append((ph, done, total))):
        m = evaluate(d, learned)
    assert m == evaluate(d, learned, progress=True) == evaluate(d, learned)
    learned_counts = [n for p, n, _ in seen if p == "chasing learned rules"]
    assert learned_counts[-1] == m["n_learned"] == 120 * 121 // 2
    assert learned_counts == sorted(learned_counts)     # facts derived so far only grow
    assert max(n for p, n, _ in seen if p == "chasing original rules") == 120
    assert [(n, t) for p, n, t in seen if p == "R-score"] == [(0, 1), (1, 1)]


def test_python_thread_runs_during_a_long_prolog_call():
    """janus releases the GIL while Prolog runs: the bar's ticker thread redraws meanwhile.
    No clock: each redraw records whether a Prolog call was running; the goal grows until
    two redraws fall inside one call (a generous number of tries for a loaded machine)."""
    bar = PhaseBar("busy", interval=0.01, delay=0)
    state = {"inside": False}
    inside = []
    with bar:
        bar._bar.refresh = lambda *a, **k: inside.append(state["inside"])
        bar._bar.close = lambda: None
        n = 200_000
        for _ in range(12):
            del inside[:]
            state["inside"] = True
            prolog.once(f"numlist(1, {n}, _L), sum_list(_L, _S), numlist(1, {n}, _M), "
                        "msort(_M, _)")
            state["inside"] = False
            if inside.count(True) >= 2:
                break
            n *= 2
    assert inside.count(True) >= 2


def test_rudas_cli_bars_on_stderr_and_quiet(tmp_path, closure):
    d, learned = closure
    r = cli("rudas", "generate", "--out", tmp_path / "bar", "--size", "s", "--seed", 2)
    assert r.returncode == 0, r.stderr
    assert "rudas generate s: training facts" in r.stderr and "fact" in r.stderr
    for flag in ("-q", "--quiet", "--json"):
        r2 = cli("rudas", "generate", "--out", tmp_path / f"q{flag}", "--size", "s", "--seed",
                 2, flag)
        assert r2.returncode == 0 and r2.stderr == "", r2.stderr
        assert tree(tmp_path / f"q{flag}") == tree(tmp_path / "bar")
    r = cli("rudas", "evaluate", d, learned)
    assert r.returncode == 0, r.stderr
    assert "rudas evaluate: chasing learned rules" in r.stderr
    assert "rudas evaluate: R-score" in r.stderr
    q = cli("rudas", "evaluate", d, learned, "-q")       # quiet: nothing but errors
    assert q.returncode == 0 and q.stderr == "" and q.stdout == "" and r.stdout
    j = cli("rudas", "evaluate", d, learned, "--json")
    assert j.returncode == 0 and j.stderr == ""
    assert json.loads(j.stdout)["n_learned"] == 7260


def test_rs_generate_bar_and_quiet(tmp_path):
    args = ["rs", "generate", ROOT / "curricula/rs/mnist_logic.yaml", "--samples", "train=6",
            "--samples", "val=2", "--samples", "test=2", "--samples", "ood=2"]
    r = cli(*args, "--out", tmp_path / "bar")
    assert r.returncode == 0, r.stderr
    assert "rs generate" in r.stderr and "12/12" in r.stderr and "img" in r.stderr
    for flag in ("-q", "--json"):
        q = cli(*args, "--out", tmp_path / f"q{flag}", flag)
        assert q.returncode == 0 and q.stderr == "", q.stderr
        assert tree(tmp_path / f"q{flag}") == tree(tmp_path / "bar")


def test_no_bar_before_the_delay_so_quick_runs_and_errors_keep_stderr_clean(tmp_path, closure):
    d, learned = closure
    r = cli("rudas", "generate", "--out", tmp_path / "xs", "--size", "xs", delay="30")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    r = cli("rudas", "evaluate", d, learned, delay="30")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    bad = tmp_path / "bad.pl"
    bad.write_text("p(X,Y) :- e(X,Y\n")
    r = cli("rudas", "evaluate", d, bad)               # a bar at once, still one error line
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("nesybench: error:")
