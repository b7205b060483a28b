"""Untrusted Prolog text is bounded: deep or huge terms, non-datalog RuDaS rules, memory
hungry rules and calls outside the allow-list give one error line and exit 2, never a signal.

The deep-term cases run the CLI in a subprocess: a C-stack overflow inside the embedded
Prolog is a segmentation fault (exit -11 / 139), which an in-process test could not survive.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nesybench.errors import UnsafeRuleError
from nesybench.kandy.rules import TaskRule

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "side_by_side([circle_red_small])"


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "nesybench", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


def _one_line_exit_2(res: subprocess.CompletedProcess, contains: str = "") -> str:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nesybench: error:"), res.stderr[-2000:]
    assert contains in lines[0], lines[0]
    return lines[0]


def _deep(n: int) -> str:
    return "f(" * n + "X" + ")" * n


DEEP_CASES = {
    "brackets": "valid(X) :- p(X, " + _deep(20000) + ").\n",
    "conjunction": "valid(X) :- " + "atom(X), " * 50000 + "true.\n",
    "infix": "valid(X) :- X = " + "1+" * 50000 + "1.\n",
    "prefix": "valid(X) :- X = " + "- " * 50000 + "a.\n",
}


@pytest.mark.parametrize("kind", sorted(DEEP_CASES))
def test_kandy_check_deep_rule_is_one_error_not_a_crash(tmp_path, kind):
    rule = tmp_path / "deep.pl"
    rule.write_text("% a rule\n" + DEEP_CASES[kind])
    line = _one_line_exit_2(_cli("kandy", "check", rule, SAMPLE))
    assert f"{rule}:2" in line


def test_rudas_evaluate_and_chase_deep_body_is_one_error(tmp_path):
    from nesybench.rudas.core import RudasParams, generate
    ds = tmp_path / "ds"
    generate(RudasParams(seed=1).validate(), ds)
    learned = tmp_path / "learned.pl"
    learned.write_text("p1(X, Y) :- p1(X, " + _deep(50000).replace("X", "Y") + ").\n")
    _one_line_exit_2(_cli("rudas", "evaluate", ds, learned), f"{learned}:1")
    _one_line_exit_2(_cli("rudas", "chase", learned, ds / "eval-support.txt"), f"{learned}:1")


def test_moderately_nested_terms_are_fine_and_over_the_depth_limit_refused(tmp_path):
    ok = TaskRule("valid(X) :- X \\== " + _deep(900).replace("X", "a") + ".\n")
    assert ok.check([SAMPLE]) == [True]
    ok.close()
    from nesybench.errors import PrologError
    with pytest.raises(PrologError, match="nested more than"):
        TaskRule("valid(X) :- X \\== [" + ",".join(["a"] * 1500) + "].\n")


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 60), st.sampled_from(["f(", "[", "{", "- ", "\\+ "]))
def test_nesting_below_the_limits_reads_like_read_term(n, opener):
    closer = {"f(": ")", "[": "]", "{": "}"}.get(opener, "")
    text = "valid(X) :- Y = (" + opener * n + "a" + closer * n + "), Y \\== X.\n"
    rule = TaskRule(text)
    assert rule.check([SAMPLE]) == [True]
    rule.close()


# --------------------------------------------------------------------- RuDaS datalog check
@pytest.mark.parametrize("rule, why", [
    ("p1(f(X), Y) :- p1(X, Y).", "function terms"),
    ("p1(X, Y) :- p1(g(X), Y).", "function terms"),
    ("p1(X, Z) :- p1(X, Y).", "head variable"),
    ("p1(X, Y) :- \\+ p1(Y, X).", "negation"),
    ("p1(X, Y) :- (p1(Y, X) ; p1(X, X)).", "disjunction"),
    (":- initialization(halt).", "directives"),
])
def test_rudas_chase_applies_the_datalog_check(tmp_path, rule, why):
    rules, facts = tmp_path / "r.pl", tmp_path / "f.txt"
    rules.write_text("p1(X, Y) :- p1(Y, X).\n" + rule + "\n")
    facts.write_text("p1(a, b).\n")
    _one_line_exit_2(_cli("rudas", "chase", rules, facts), f"{rules}:2: ")
    assert why in _cli("rudas", "chase", rules, facts).stderr


def test_rudas_chase_checks_the_facts_too(tmp_path):
    rules, facts = tmp_path / "r.pl", tmp_path / "f.txt"
    rules.write_text("p1(X, Y) :- p1(Y, X).\n")
    facts.write_text("p1(a, b).\np1(f(a), b).\n")
    _one_line_exit_2(_cli("rudas", "chase", rules, facts), f"{facts}:2: function terms")


# ------------------------------------------------------------ memory bound and allow-list
def test_memory_hungry_rule_is_one_line(tmp_path):
    rule = tmp_path / "mem.pl"
    rule.write_text("valid(X) :- length(L, 400000000), L \\== X.\n")
    _one_line_exit_2(_cli("kandy", "check", rule, SAMPLE), "ran out of memory")


def test_atom_space_is_bounded(tmp_path):
    rule = tmp_path / "atoms.pl"
    rule.write_text("valid(X) :- grow(x, 40).\n"
                    "grow(_, 0).\n"
                    "grow(A, N) :- N > 0, atom_concat(A, A, B), M is N - 1, grow(B, M).\n")
    _one_line_exit_2(_cli("kandy", "check", rule, SAMPLE), "MiB of new atoms")


@pytest.mark.parametrize("body", [
    "use_module(library(process))", "abolish_all_tables", "abolish_private_tables",
    "format(atom(_), '~*c', [200000000, 0'x])", "format(atom(_), '~@', [true])",
    "term_to_atom(_, 'f(a)')", "use_module(library('/x'))",
])
def test_allow_list_refuses(body):
    with pytest.raises(UnsafeRuleError, match="not allowed in a rule") as info:
        TaskRule(f"valid(X) :- atom(X), {body}.\n")
    assert "call/N on a variable" not in str(info.value)


def test_allow_list_keeps_the_pure_builtins():
    rule = TaskRule("valid(X) :- findall(Y, (member(Y, [1, 2, 3]), Y > 1), L), "
                    "length(L, N), N =:= 2, format(atom(A), '~w-~a', [X, b]), atom(A), "
                    "atomic_list_concat([a, b], '-', AB), AB == 'a-b', msort([b, a], [a, b]).\n")
    assert rule.check([SAMPLE]) == [True]
    rule.close()


# ------------------------------------------------------------------ cost bounds of small inputs
BILLION_LAUGHS = """study: lol
function: demo.toy
params:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
axes: {x: [1]}
"""

SPEC_BOMBS = {
    "billion laughs": (BILLION_LAUGHS, "aliases"),
    "range 10**9": ("study: s\nfunction: demo.toy\naxes: {x: {range: [1000000000]}}\n",
                    "axes.x"),
    "range 10**30": ("study: s\nfunction: demo.toy\naxes: {x: {range: [1000000000000000000000000000000]}}\n",
                     "axes.x"),
    "linspace 10**9": ("study: s\nfunction: demo.toy\naxes: {x: {linspace: [0, 1, 1000000000]}}\n",
                       "axes.x"),
    "repetitions 10**9": ("study: s\nfunction: demo.toy\naxes: {x: [1]}\nrepetitions: 1000000000\n",
                          "repetitions"),
    "product 10**9": ("study: s\nfunction: demo.toy\naxes: {x: {range: [1000]}, y: {range: [1000]},"
                      " z: {range: [1000]}}\n", "cells"),
    "timeout 1e308": ("study: s\nfunction: demo.toy\naxes: {x: [1]}\ntimeout: 1.0e+308\n",
                      "timeout"),
}


@pytest.mark.parametrize("case", sorted(SPEC_BOMBS))
def test_small_specs_with_huge_costs_are_one_line_and_quick(tmp_path, case):
    import time
    text, contains = SPEC_BOMBS[case]
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "nesybench", "runs", "start", str(spec),
                          "--out", str(tmp_path / "study")], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "python")), timeout=60)
    _one_line_exit_2(res, contains)
    assert time.monotonic() - t0 < 30
    assert not (tmp_path / "study").exists()


def test_yaml_alias_bound_counts_every_use_and_refuses_cycles():
    import yaml
    from nesybench.yamlsafe import MAX_YAML_NODES, safe_load
    assert safe_load("a: &a [1, 2]\nb: [*a, *a]\n") == {"a": [1, 2], "b": [[1, 2], [1, 2]]}
    with pytest.raises(yaml.YAMLError, match="refers to a node that contains it"):
        safe_load("a: &a [1, *a]\n")
    width = int(MAX_YAML_NODES ** 0.5) + 2
    text = "a: &a [" + ",".join(["1"] * width) + "]\nb: [" + ",".join(["*a"] * width) + "]\n"
    with pytest.raises(yaml.YAMLError, match="aliases"):
        safe_load(text)


def test_an_npy_header_claiming_a_huge_shape_is_refused_before_allocation(tmp_path):
    import numpy as np
    npy = tmp_path / "u.npy"
    np.save(npy, np.zeros((2, 2)))
    data = npy.read_bytes()
    npy.write_bytes(data.replace(b"(2, 2)", b"(100000000, 100000000)"))
    _one_line_exit_2(_cli("irt", "fit", "--responses", npy), "claims shape")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_input_files_that_are_fifos_or_dev_zero_are_refused(tmp_path, kind):
    from nesybench.rudas.core import RudasParams, generate
    ds = tmp_path / "ds"
    generate(RudasParams(seed=1, size="xs").validate(), ds)
    bad = tmp_path / "bad.txt"
    if kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to("/dev/zero")
    _one_line_exit_2(_cli("rudas", "chase", ds / "rules.txt", bad), "regular file")
    task = tmp_path / "task.yaml"
    if kind == "fifo":
        os.mkfifo(task)
    else:
        task.symlink_to("/dev/zero")
    _one_line_exit_2(_cli("rs", "count", task), "regular file")
    table = tmp_path / "t.csv"
    if kind == "fifo":
        os.mkfifo(table)
    else:
        table.symlink_to("/dev/zero")
    _one_line_exit_2(_cli("export", table, "--out", tmp_path / "o", "-q"), "regular file")


def test_rudas_chase_has_a_default_budget(monkeypatch):
    from nesybench.cli import main
    from nesybench.rudas import core
    seen = {}

    def fake(rules, facts, **kw):
        seen.update(kw)
        return [], "complete"
    monkeypatch.setattr(core, "chase", fake)
    assert main(["rudas", "chase", "r.txt", "f.txt"]) == 0
    assert seen["max_derived"] == 5_000_000 and seen["time_limit"] == 600.0


@pytest.mark.timing
def test_rudas_r_score_keeps_its_time_limit_on_long_bodies(tmp_path):
    """One node of the R-score's branch and bound (an assignment problem over two bodies of
    80 atoms) ran for seconds past the deadline; the watchdog now stops it there."""
    import time

    from nesybench.rudas.core import RudasParams, evaluate, generate
    ds = tmp_path / "ds"
    generate(RudasParams(category="chain", size="xs", seed=1).validate(), ds)
    body = ", ".join(f"p1(X{i},X{i + 1})" for i in range(80))
    learned = tmp_path / "learned.pl"
    learned.write_text("".join(f"p{k}(X0,X80) :- {body.replace('p1', f'p{(k + j) % 5}')}.\n"
                               for k in range(5) for j in range(4)))
    t0 = time.perf_counter()
    m = evaluate(ds, learned, time_limit=2.0)
    took = time.perf_counter() - t0
    assert m["r_score_partial"] is True
    assert 0.0 <= m["r_score"] <= 1.0
    assert took < 15, f"the R-score ran {took:.1f} s on a 2 s budget"


def test_a_program_file_must_be_a_regular_file_of_bounded_size(tmp_path):
    from nesybench.errors import NesyError
    from nesybench.nesy.program.program import read_program
    with pytest.raises(NesyError, match="not a regular file"):
        read_program(Path("/dev/zero"))
    fifo = tmp_path / "prog.pl"
    os.mkfifo(fifo)
    with pytest.raises(NesyError, match="not a regular file"):
        read_program(fifo)


def test_a_run_folders_config_that_links_out_is_refused(tmp_path, capsys):
    from nesybench.cli import main
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").symlink_to("/etc/passwd")
    assert main(["nesy", "eval", str(run)]) == 2
    err = capsys.readouterr().err
    assert "outside" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------ bounds of a batch of calls
_BUSY = ("safe_load_test:busy(_S) :- get_time(_T0), repeat, get_time(_T), _T - _T0 >= _S, !",
         "safe_load_test:loop(_X) :- safe_load_test:loop(_X)")


def _maplist(items: str, max_inf: int, max_sec: float):
    from nesybench.logic import prolog
    prolog.use("prolog/safe_load.pl")
    for clause in _BUSY:
        prolog.once(f"retractall({clause.split(' :- ')[0]}), assertz(({clause}))")
    res = prolog.once(f"safe_load:bounded_maplist(call, [{items}], Fs, {max_inf}, {max_sec}, _O), "
                      "term_string(_O, S)")
    return res["Fs"], res["S"]


def test_bounded_maplist_flags_and_the_first_call_past_a_bound():
    """Each call's own status: 1/0 for success/failure; the first error, inference limit or
    time limit stops the list and names that call's index (0-based); the flags are those of
    the calls before it."""
    assert _maplist("true, fail, true", 10**6, 5) == ([1, 0, 1], "done")
    flags, outcome = _maplist("true, atom_length(_, _), true", 10**6, 5)
    assert flags == [1] and outcome.startswith("stopped(1,error(error(instantiation_error")
    assert _maplist("true, true, safe_load_test:loop(a)", 10**5, 5) == \
        ([1, 1], "stopped(2,inference_limit(100000))")
    assert _maplist("true, safe_load_test:busy(5), true", 10**12, 0.3) == \
        ([1], "stopped(1,time_limit(0.3))")


def test_bounded_maplist_gives_each_call_its_own_wall_clock_limit():
    """Five calls of 0.2 s under a 0.5 s limit all finish: the deadline is per call, moved
    as each one starts, not one deadline for the list (which would stop the third)."""
    flags, outcome = _maplist(", ".join(["safe_load_test:busy(0.2)"] * 5), 10**12, 0.5)
    assert (flags, outcome) == ([1] * 5, "done")
