"""Imports run one way: every import of every module of the package (those inside functions
included) stays in its room or goes down a floor of ``scripts/layout.py``, with no exception
list; and docs/layout.md shows what that script generates from the code."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _layout():
    spec = importlib.util.spec_from_file_location("nesybench_layout",
                                                  ROOT / "scripts" / "layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


L = _layout()


def test_no_import_runs_back_up():
    problems, _ = L.check()
    assert problems == [], "\n".join(problems)


def test_every_module_is_in_a_room():
    assert [m for m in L.modules() if L.room_of(m) is None] == []


def test_layout_page_is_generated_from_the_code():
    current = L.PAGE.read_text(encoding="utf-8")
    assert L.page(current) == current, "run: python scripts/layout.py --write"


def test_the_rooms_of_shortcuts_say_in_two_lines_what_they_hold_and_may_import():
    for package in ("nesybench.shortcuts", "nesybench.shortcuts.render",
                    "nesybench.shortcuts.datasets", "nesybench.clitypes"):
        lines = L._docstring(package)
        assert len(lines) == 2 and all(lines), package
        assert "import" in " ".join(lines).lower(), package


@pytest.mark.parametrize("where, planted", [
    # a lazy import inside a function, up from the task core to the command line
    ("shortcuts/task.py", "\n\ndef _planted():\n    from ..cli import main  # noqa\n"),
    # a module-level import sideways, between two rooms of one floor
    ("kandy/rules.py", "\nfrom ..irt import data as _planted  # noqa\n"),
    # the logic bridge reaching up for a command-line type
    ("logic/prolog.py", "\nimport nesybench.clitypes.quiet  # noqa\n"),
])
def test_a_planted_back_import_fails(tmp_path, where, planted):
    package = tmp_path / "nesybench"
    shutil.copytree(L.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    assert L.check(package)[0] == []
    with (package / where).open("a", encoding="utf-8") as f:
        f.write(planted)
    problems, _ = L.check(package)
    assert problems and all(p.startswith(f"nesybench/{where}:") for p in problems), problems


def test_a_module_outside_every_room_fails(tmp_path):
    package = tmp_path / "nesybench"
    shutil.copytree(L.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "newthing.py").write_text("x = 1\n", encoding="utf-8")
    problems, _ = L.check(package)
    assert problems == ["nesybench/newthing.py: module nesybench.newthing is in no room of "
                        "scripts/layout.py"]
