"""User ASP knowledge: only the documented subset; #include/#script/#external refused with
file:line before clingo reads anything."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nesybench.errors import BudgetExceeded, NesyError
from nesybench.logic import asp

ROOT = Path(__file__).resolve().parents[1]
RULE = "y(K, L, 1) :- c(K, L, 1).\n"


@pytest.mark.parametrize("text, what", [
    ('#include "/etc/passwd".\n', "#include"),
    ("#script (python)\nimport os\n#end.\n", "#script"),
    ("#external e(1).\n", "#external"),
    ("#program step(t).\n", "#program"),
    ("#heuristic a. [1, sign]\n", "#heuristic"),
])
def test_refused_with_file_and_line(tmp_path, text, what):
    lp = tmp_path / "k.lp"
    lp.write_text(RULE + "% #include in a comment is fine\n" + text)
    with pytest.raises(NesyError, match=what) as info:
        asp.solve([lp])
    assert info.value.file == str(lp) and info.value.line == 3


def test_shipped_knowledge_is_inside_the_subset():
    for lp in sorted((ROOT / "kb" / "shortcuts").glob("*.lp")):
        asp.check_program(lp)


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet=list('#*\nabin cludeshow.'), max_size=40))
def test_directive_scan_never_misses_an_include(text):
    # without comments or strings in front, a trailing #include is always seen
    names = [n for n, _ in asp._directives(text + '\n#include "x".\n')]
    assert "include" in names


# ------------------------------------------------------------------------ grounding budget
BIG = "n(1..1000).\nbig(X, Y, Z) :- n(X), n(Y), n(Z).\n"


def _task(tmp_path, knowledge: str) -> Path:
    (tmp_path / "k.lp").write_text("y(K, y, S \\ 2) :- ctx(K), S = #sum { X, T : c(K, T, X) }.\n"
                                   + knowledge)
    task = tmp_path / "t.yaml"
    task.write_text("name: big\nconcepts:\n  - {name: b, count: 2, domain: [0, 1]}\n"
                    "knowledge: k.lp\nmaps: separate\nsupport: all\n")
    return task


def test_a_huge_grounding_is_one_error_line_with_exit_2(tmp_path):
    import os
    import subprocess
    import sys
    task = _task(tmp_path, BIG)
    with open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "nesybench", "rs", "count", str(task),
                                 "--max-ground-atoms", "200000"],
                                stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    text = (tmp_path / "err").read_text().strip()
    assert proc.returncode == 2, text
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    assert text.startswith(f"nesybench: error: {tmp_path / 'k.lp'}: ")
    assert ("clingo grounding reached 200,001 ground atoms, over the limit of 200,000 "
            "(--max-ground-atoms)") in text
    assert usage.ru_maxrss < 1 << 20                     # KiB: well under 1 GiB


def test_the_budget_counts_ground_atoms_as_clingo_does(tmp_path):
    lp = tmp_path / "k.lp"
    lp.write_text("n(1..30).\np(X, Y) :- n(X), n(Y).\n")
    assert asp.solve([lp], models=1).count == 1                  # 30 + 900 atoms fit
    asp.solve([lp], models=1, max_ground_atoms=930)
    with pytest.raises(BudgetExceeded, match=r"reached 930 ground atoms, over the limit of 929"):
        asp.solve([lp], models=1, max_ground_atoms=929)
    with asp.limits(max_ground_atoms=100):
        with pytest.raises(BudgetExceeded, match="over the limit of 100 "):
            asp.solve([lp], models=1)
    asp.solve([lp], models=1)                                    # the block's limit is gone


@pytest.mark.timing
def test_grounding_past_the_time_limit_stops(tmp_path):
    lp = tmp_path / "k.lp"
    lp.write_text(BIG)
    with pytest.raises(BudgetExceeded, match=r"grounding ran longer than the time limit of "
                                             r"0\.2 s \([\d,]+ ground atoms") as info:
        asp.solve([lp], models=1, time_limit=0.2, max_ground_atoms=10**9)
    assert info.value.file == str(lp)


@pytest.mark.parametrize("term, what", [
    ("X" + "+1" * 20000, "tokens"),              # clingo's grounder recursed: exit 139
    ("- " * 20000 + "X", "tokens"),
    ("f(" * 1001 + "X" + ")" * 1001, "nested"),
])
def test_deep_terms_are_refused_before_clingo_reads_them(tmp_path, term, what):
    lp = tmp_path / "k.lp"
    lp.write_text(RULE + f"y(K, y, 0) :- ctx(K),\n  Z = {term}.\n")
    with pytest.raises(NesyError, match=what) as info:
        asp.check_program(lp)
    assert info.value.file == str(lp) and info.value.line in (2, 3)


def test_a_deep_asp_term_is_exit_2_not_a_crash(tmp_path):
    import subprocess
    import sys
    task = _task(tmp_path, "y(K, y, 0) :- ctx(K), Z = X" + "+1" * 20000 + ".\n")
    res = subprocess.run([sys.executable, "-m", "nesybench", "rs", "count", str(task)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert res.returncode == 2, (res.returncode, res.stderr[-500:])
    assert len(res.stderr.strip().splitlines()) == 1 and "10,000 tokens" in res.stderr


def test_clingo_messages_stay_short(tmp_path):
    lp = tmp_path / "k.lp"
    lp.write_text("y(K, y, 0) :- ctx(K), Z = " + "f(" * 900 + "X" + ")" * 900 + ".\n")
    with pytest.raises(NesyError) as info:
        asp.solve([lp], [("ctx", 0)])
    assert "unsafe" in str(info.value) and len(str(info.value)) < 1000
