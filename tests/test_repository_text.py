"""The repository speaks of the software only: no absolute paths of a machine, no development
diary (numbered work periods, issue numbers as history, what "did not land"), no references to
files outside the repository (an internal spec, the papers' text files), in any tracked file."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (what is wrong, pattern); case-insensitive
RULES = [
    ("an absolute path of a machine", r"(?<![\w.~-])/(?:work|root|home)/"),
    ("a path outside the repository", r"\.\./shared/|\bshared/papers\b"),
    ("a development diary: a numbered work period", r"\bsessions?[ -]\d+"),
    ("a development diary: an issue number",
     r"\bissues? #?\d+|(?:^|[\s(*])#\d{1,3}\s+(?:closed|done|item|SKI|KANDY|NeSy|RuDaS|IRT|CI)\b"
     r"|\(#\d{1,3}\)"),
    ("a development diary", r"\bdid not land\b|\bCI stop \d+"),
    ("an internal spec instead of the paper", r"\bSPEC §"),
    ("a paper's file name instead of its reference",
     r"\b(?:kandy|rsbench|rudas|ski-robustness|irt-robustness)\.txt\b"),
]
_COMPILED = [(why, re.compile(p, re.IGNORECASE)) for why, p in RULES]
#: this file holds the patterns themselves
EXEMPT = {"tests/test_repository_text.py"}


def hits(text: str) -> list[tuple[int, str, str]]:
    """(line number, what is wrong, the line) for every line of ``text`` that breaks a rule."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for why, rx in _COMPILED:
            if rx.search(line):
                out.append((n, why, line.strip()))
                break
    return out


def _tracked() -> list[str]:
    res = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if res.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in res.stdout.decode().split("\0") if f]


def test_tracked_files_speak_of_the_software_only():
    bad = []
    for name in _tracked():
        if name in EXEMPT:
            continue
        path = ROOT / name
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):      # binary files, removed files
            continue
        bad += [f"{name}:{n}: {why}: {line[:120]}" for n, why, line in hits(text)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("line", [
    "see /work/main/.deps/swipl for the build",
    "cached under /root/.cache/x",
    "the study folder is /home/alice/runs",
    "paper in ../shared/papers/rudas.txt",
    "Session 8 (2026-11-23): the kernel went batch-major",
    "Before session 8 an AVX2 build ran slower",
    "Regression (issue 14.2): shapes were clipped",
    "#11 SKI speed (closed)",
    "session 4's submission did not land",
    "defaults: the reference config, SPEC §1",
    "IRT robustness (paper irt-robustness.txt)",
])
def test_a_diary_line_or_a_machine_path_is_found(line):
    assert hits("fine line\n" + line + "\n") and hits(line)[0][0] == 1


@pytest.mark.parametrize("line", [
    "start_new_session=True, scope=\"session\", an interactive session",
    "python -m pytest ~/notes tests/data/readme/learned.pl",
    "RuDaS §5.2 swaps FP and FN; see the safety guide",
    "rules.txt, train.txt, eval-support.txt",
    "#const n = 3. #show y/3. color: '#7f7f7f', f\"{f}#0\", background=\"#102030\"",
    "https://example.org/home/page",
])
def test_ordinary_lines_pass(line):
    assert hits(line) == []
