"""The door, checked by watching the process rather than the source: each reproducer of a read
that once went around ``nesybench.folder`` (Prolog or clingo opening a data set's files, a
study folder's SQLite store, artefacts and tables, a run folder's config.json, export's
pictures, an RS task's knowledge, SWI_HOME_DIR) runs as a nesybench process of its own under
strace (tests/door_monitor.py). It must exit 2 with one line within 30 s, open no file
outside its folder (the files SWI-Prolog, clingo, SQLite and NumPy open natively included)
and none of the canaries, and change nothing outside --out. ``make fuzz`` runs every command
case of tests/data/fuzz/surface/ the same way.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from door_monitor import STRACE, check_case, make_bases, run_watched
from fuzzing import SECRET, SURFACE_DIR

pytestmark = pytest.mark.skipif(STRACE is None, reason="strace is not installed (make setup "
                                                      "installs it)")

#: one hostile case per reproducer (tests/data/fuzz/surface/<name>.json)
MONITORED = [
    "rudas-evaluate-rules-a-fifo",
    "rudas-evaluate-eval-support-a-fifo",
    "rudas-evaluate-rules-a-device",
    "rudas-evaluate-train-a-secret-link",
    "rudas-evaluate-train-hard-linked-to-the-secret",
    "kandy-plot-study-cell-id-leaves-the-study",
    "kandy-plot-study-result-a-fifo",
    "kandy-plot-study-result-a-device",
    "irt-fit-study-responses-a-decompression-bomb",
    "irt-fit-study-responses-pickled-objects",
    "runs-table-store-a-secret-link",
    "runs-table-store-a-link-to-another-study",
    "runs-table-leaves-a-study-byte-identical",
    "nesy-eval-run-config-task-absolute",
    "nesy-eval-run-config-data-absolute",
    "export-picture-png-60000x60000",
    "export-picture-gif-65535x65535",
    "export-file-without-a-checksum",
    "rs-count-knowledge-leaves-the-folder",
    "rs-count-knowledge-a-secret-link",
]


@pytest.fixture(scope="module")
def scratch():
    d = Path(tempfile.mkdtemp(prefix="nesybench-door-monitor-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def bases(scratch):
    return make_bases(scratch / "bases")


@pytest.mark.parametrize("name", MONITORED)
def test_reproducer_stays_inside(name, scratch, bases):
    d = scratch / name
    d.mkdir()
    verdict = check_case(SURFACE_DIR / f"{name}.json", d, bases)
    assert not verdict.problems, f"{name}: " + "; ".join(verdict.problems)


def test_swi_home_dir_of_another_version(scratch):
    """SWI_HOME_DIR naming another SWI-Prolog (or no SWI-Prolog at all) is one line and exit
    2 before janus starts, never an abort (exit 134)."""
    home = scratch / "swi-home-9.0.4"
    (home / "include").mkdir(parents=True)
    (home / "include" / "SWI-Prolog.h").write_text("#define PLVERSION 90004\n")
    for value in (home, scratch / "no-such-home"):
        w = run_watched(["kandy", "check", "kb/kandy/rules/easy/t11.pl",
                         "side_by_side([circle_red_small])"], cwd=Path(__file__).parents[1],
                        env={"SWI_HOME_DIR": str(value)})
        assert w.rc == 2 and not w.hung, (value, w.rc, w.err)
        assert len(w.err.strip().splitlines()) == 1 and "SWI_HOME_DIR" in w.err, w.err


def test_the_monitor_sees_native_opens(scratch):
    """The monitor sees what no Python audit hook does: a file SWI-Prolog opens itself."""
    SECRET.write_text("NESYBENCH-SECRET\n", encoding="utf-8")
    w = run_watched(["prolog", "-g", f"read_file_to_string('{SECRET}', _, []), halt"],
                    cwd=scratch)
    assert any(real == str(SECRET.resolve()) for _, real in w.opens), w.opens[-5:]
