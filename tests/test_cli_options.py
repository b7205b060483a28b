"""One option, one meaning, everywhere: the click tree of ``nesybench`` against a table of what
each command does.

* ``prints``: prints something (its answer, a summary, a report) and writes no output of
  its own: has ``-q/--quiet``.
* ``files``: writes files to ``-o/--out``: has ``-q/--quiet``, ``-o/--out`` and
  ``--overwrite``.
* ``study``: writes a resumable study folder ``-o/--out`` (run again, it extends the study
  that is there): has ``-q/--quiet``, ``-o/--out`` and ``--force-new`` (replace a different
  study in ``--out``, the study folder's ``--overwrite``).
* ``session``: an interactive session whose standard output is the session (``prolog``).
"""
from __future__ import annotations

import importlib

import click
import pytest

from nesybench.cli import CAPABILITIES

KIND = {
    "data fetch": "prints",        # into the user cache, never an --out
    "data list": "prints",
    "doctor": "prints",
    "export": "files",
    "irt families": "prints",
    "irt fit": "files",
    "irt population": "study",
    "irt robustness": "prints",
    "irt study": "study",
    "irt taxonomy": "prints",
    "kandy browse": "files",
    "kandy check": "prints",
    "kandy generate": "files",
    "kandy ilp-eval": "prints",
    "kandy ilp-export": "files",
    "kandy ilp-run": "study",
    "kandy import-reference": "files",
    "kandy plot": "files",
    "kandy show": "files",
    "kandy table": "prints",
    "kandy train": "study",
    "kandy validate": "prints",
    "nesy eval": "prints",
    "nesy infer": "prints",
    "nesy probe": "files",
    "nesy report": "prints",
    "nesy sweep": "study",
    "nesy train": "files",
    "prolog": "session",
    "rs browse": "files",
    "rs count": "files",
    "rs generate": "files",
    "rs import-bddoia": "files",
    "rs metrics": "files",
    "rs severity": "files",
    "rudas chase": "prints",
    "rudas evaluate": "prints",
    "rudas experiment": "study",
    "rudas generate": "files",
    "rudas learn": "files",
    "rudas suite": "files",
    "rudas table": "prints",
    "runs export": "files",
    "runs plot": "files",
    "runs resume": "prints",       # continues the study it is given, in place
    "runs start": "study",
    "runs status": "prints",
    "runs table": "prints",
    "setup-prolog": "prints",      # builds into --prefix (the user cache), never an --out
    "ski plot": "files",
    "ski run": "study",
    "ski table": "prints",
}

#: the options each kind must have
NEEDS = {
    "prints": {"-q/--quiet"},
    "files": {"-q/--quiet", "-o/--out", "--overwrite"},
    "study": {"-q/--quiet", "-o/--out", "--force-new"},
    "session": set(),
}

#: what the commands of nesybench/nesy/cli.py still lack, exactly (the engine's own file, changed
#: with it); an entry goes once its command has the option
MISSING: dict[str, set[str]] = {}


def _commands() -> dict[str, click.Command]:
    found = {}

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, f"{path} {name}")
        else:
            found[path] = cmd

    for name, module in CAPABILITIES.items():
        walk(importlib.import_module(module).group, name)
    return found


COMMANDS = _commands()


def _options(cmd: click.Command) -> set[str]:
    """The shared options ``cmd`` has, each only when it has its one spelling and meaning."""
    have = set()
    for p in cmd.params:
        if not isinstance(p, click.Option):
            continue
        names = set(p.opts) | set(p.secondary_opts)
        if p.name == "quiet" and {"-q", "--quiet"} <= names and p.is_flag:
            have.add("-q/--quiet")
        if {"-o", "--out"} <= names and not p.is_flag:
            have.add("-o/--out")
        if p.name == "overwrite" and names == {"--overwrite"} and p.is_flag:
            have.add("--overwrite")
        if p.name == "force_new" and names == {"--force-new"} and p.is_flag:
            have.add("--force-new")
    return have


def test_the_table_names_every_command():
    assert sorted(COMMANDS) == sorted(KIND)
    assert set(MISSING) <= set(KIND)


@pytest.mark.parametrize("path", sorted(KIND))
def test_each_command_has_the_options_of_its_kind(path):
    have = _options(COMMANDS[path])
    missing = NEEDS[KIND[path]] - have
    assert missing == MISSING.get(path, set()), f"{path} ({KIND[path]}) lacks {missing}"


@pytest.mark.parametrize("path", sorted(KIND))
def test_no_command_borrows_a_shared_name_for_another_meaning(path):
    """-q is always --quiet, -o always --out, and --overwrite is only where there is --out."""
    cmd = COMMANDS[path]
    for p in cmd.params:
        names = set(getattr(p, "opts", [])) | set(getattr(p, "secondary_opts", []))
        if "-q" in names or "--quiet" in names:
            assert {"-q", "--quiet"} <= names and p.name == "quiet", path
        if "-o" in names or "--out" in names:
            assert {"-o", "--out"} <= names, path
    have = _options(cmd)
    if "--overwrite" in have or "--force-new" in have:
        assert "-o/--out" in have, path
