"""Prolog users: rudas_generate/3 creates the folders it needs (or names the one it cannot
create), and every RuDaS and KANDY error term prints through prolog:message//1 as one line,
`File:Line: message` where the term names a file, never as `Unknown message`."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nesybench.logic import prolog
from nesybench.paths import project_swipl

ROOT = Path(__file__).resolve().parents[1]
PARAMS = "_{category:rdg, size:xs, depth:2, seed:1}"


@pytest.fixture(scope="module", autouse=True)
def _loaded():
    prolog.use("prolog/rudas/rudas.pl")
    prolog.use("prolog/kandy.pl")


def _q(path: Path) -> str:
    return "'" + str(path).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _message(goal: str) -> str:
    """The text print_message/2 prints for the error ``goal`` throws (one string)."""
    res = prolog.once(
        f"catch(({goal}), _E, true), nonvar(_E), "
        "'$messages':translate_message(_E, _Lines, []), "     # as print_message/2 does
        "with_output_to(string(S), print_message_lines(current_output, '', _Lines))")
    assert res is not None, f"{goal} threw nothing"
    return res["S"].strip()


def test_rudas_generate_creates_missing_parent_folders(tmp_path):
    out = tmp_path / "out" / "deeper" / "ds"
    res = prolog.once(f"rudas:rudas_generate({_q(out)}, {PARAMS}, _S), is_dict(_S)")
    assert res is not None
    assert (out / "rules.txt").is_file() and (out / "train.txt").is_file()


def test_a_folder_that_cannot_be_created_is_named(tmp_path):
    (tmp_path / "afile").write_text("")
    msg = _message(f"rudas:rudas_generate({_q(tmp_path / 'afile' / 'x' / 'ds')}, {PARAMS}, _)")
    assert msg == f"{tmp_path / 'afile'}: cannot create the folder: a file of that name is " \
                  "in the way"
    # bad parameters are refused before any folder is made
    msg = _message(f"rudas:rudas_generate({_q(tmp_path / 'new' / 'ds')}, "
                   "_{category:bogus}, _)")
    assert msg.startswith("RuDaS: category must be") and not (tmp_path / "new").exists()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("msg") / "ds"
    assert prolog.once(f"rudas:rudas_generate({_q(d)}, {PARAMS}, _)") is not None
    return d


def test_rudas_errors_print_file_line_message(tmp_path, dataset):
    bad = tmp_path / "bad.pl"
    bad.write_text("p(X,Y) :- q(X,Y).\np(X :- q.\n")
    learned = tmp_path / "learned.pl"
    learned.write_text("p0(X,Y) :- p1(X,Y).\np(f(X),Y) :- q(X,Y).\n")
    train = dataset / "train.txt"
    assert _message(f"rudas_chase:chase_files({_q(bad)}, {_q(train)}, _)") == \
        f"{bad}:2: syntax error: operator_expected"
    assert _message(f"rudas_chase:chase_files({_q(tmp_path / 'none.pl')}, {_q(train)}, _)") \
        == f"{tmp_path / 'none.pl'}: file not found"
    msg = _message(f"rudas:rudas_evaluate({_q(dataset)}, {_q(learned)}, _)")
    assert msg.startswith(f"{learned}:2: learned rules: "), msg
    assert _message(f"rudas:rudas_evaluate({_q(dataset)}, {_q(tmp_path / 'no.pl')}, _)") == \
        f"{tmp_path / 'no.pl'}: learned rules: file not found"
    assert _message("rudas_generate:resolve_params(_{size:huge}, _)").startswith("RuDaS: ")
    msg = _message(f"rudas_chase:read_rules({_q(dataset / 'rules.txt')}, _R), "
                   f"rudas_chase:read_facts({_q(dataset / 'eval-support.txt')}, _F), "
                   "rudas_chase:chase(_R, _F, _, [max_derived(1)])")
    assert msg.startswith("RuDaS chase stopped by its max_derived budget after deriving "), msg


def test_kandy_errors_print_file_line_message(tmp_path):
    bad = tmp_path / "bad.pl"
    bad.write_text("valid(X) :-\n  foo(X.\n")
    assert _message(f"kandy:task_valid({_q(bad)}, circle_red_small)").startswith(
        f"{bad}:2: syntax error")
    unsafe = tmp_path / "unsafe.pl"
    unsafe.write_text("valid(X) :- assert(X).\n")
    assert _message(f"kandy:task_valid({_q(unsafe)}, circle_red_small)").startswith(
        f"{unsafe}:1: unsafe rule: ")
    loop = tmp_path / "loop.pl"
    loop.write_text("valid(X) :- valid(X).\n")
    msg = _message(f"kandy:task_valid({_q(loop)}, circle_red_small)")
    assert msg.startswith("KANDY rule: sample 0 (circle_red_small): ") and \
        "inferences" in msg, msg


def _thrown_terms() -> set[tuple[str, int]]:
    """name/arity of every rudas_/kandy_/datalog_ term a RuDaS or KANDY file throws."""
    found = set()
    files = [*(ROOT / "prolog" / "rudas").glob("*.pl"), ROOT / "prolog" / "kandy.pl",
             ROOT / "prolog" / "kandy_ilp.pl"]
    for path in files:
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"throw\(((?:rudas|kandy|datalog)_\w*)(\(?)", text):
            arity = 0
            if m.group(2):
                depth, arity, i = 1, 1, m.end()
                while depth:
                    c = text[i]
                    depth += c in "([{"
                    depth -= c in ")]}"
                    arity += c == "," and depth == 1
                    i += 1
            found.add((m.group(1), arity))
    return found


def test_every_rudas_and_kandy_error_term_has_a_message():
    terms = _thrown_terms()
    assert {("rudas_file_error", 3), ("rudas_input_error", 4), ("rudas_error", 1),
            ("rudas_dir_error", 2), ("rudas_budget", 2), ("kandy_rule_error", 2),
            ("kandy_check_error", 3)} <= terms
    for name, arity in sorted(terms):
        res = prolog.once("functor(_T, N, A), clause(prolog:message(_T, _, _), _)",
                          N=name, A=arity)
        assert res is not None, f"no prolog:message//1 rule for {name}/{arity}"


def test_the_header_example_runs_from_an_empty_folder(tmp_path):
    """nesybench.pl's example, typed into a plain swipl started in an empty folder."""
    swipl = project_swipl() or shutil.which("swipl")
    if swipl is None:
        pytest.skip("no swipl")
    goal = (f"rudas_generate('out/ds', {PARAMS}, _), "
            "chase_files('out/ds/rules.txt', 'out/ds/train-support.txt', D), "
            "length(D, N), writeln(N)")
    res = subprocess.run([str(swipl), "-q", "-g", goal, "-t", "halt",
                          str(ROOT / "prolog" / "nesybench.pl")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert int(res.stdout) >= 0 and (tmp_path / "out" / "ds" / "rules.txt").is_file()
