"""User ASP knowledge: only the documented subset; #include/#script/#external refused with
file:line before clingo reads anything."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from nesybench.errors import NesyError
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
