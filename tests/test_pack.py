"""The SWI-Prolog pack: scripts/build_pack.sh builds dist/nesybench-<version>.tgz from pack.pl,
prolog/ and kb/; pack_install puts it into a pack folder, and a plain swipl started elsewhere
loads library(nesybench) from there: KANDY checking, RuDaS generation, chase and metrics, and
the sandboxed rule loading."""
from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from nesybench.paths import project_swipl

ROOT = Path(__file__).resolve().parents[1]


def _swipl() -> str:
    exe = project_swipl() or shutil.which("swipl")
    if exe is None:
        pytest.skip("no swipl: the pack needs SWI-Prolog >= 9.1.12")
    return str(exe)


def _release_version() -> str:
    """pyproject.toml's version (an editable install's metadata may lag behind it)."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1)


def _pack_version() -> str:
    text = (ROOT / "pack.pl").read_text(encoding="utf-8")
    found = re.search(r"^version\('([^']+)'\)\.", text, re.M)
    assert found, "pack.pl states no version('X.Y.Z')."
    return found.group(1)


def test_pack_version_is_the_release_version():
    assert _pack_version() == _release_version()


def test_build_refuses_a_pack_version_that_differs(tmp_path):
    # a copy of the script beside a pack.pl whose version is not pyproject.toml's
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "build_pack.sh", tmp_path / "scripts")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "pack.pl").write_text("name(nesybench).\nversion('0.0.1').\n")
    res = subprocess.run(["bash", str(tmp_path / "scripts" / "build_pack.sh"), str(tmp_path / "d")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        f"build_pack: pack.pl says version '0.0.1', pyproject.toml '{_release_version()}'"]
    assert not (tmp_path / "d").exists()


PROGRAM = r"""
:- initialization(main, main).
ok(Goal) :-
    (   catch(Goal, E, (print_message(error, E), fail))
    ->  true
    ;   format("FAILED ~q~n", [Goal]), halt(1)
    ).
main :-
    use_module(library(nesybench)),
    module_property(nesybench, file(File)), format("file ~w~n", [File]),
    Rule = nesybench('kb/kandy/rules/easy/t15.pl'),
    ( task_valid(Rule, side_by_side([stack([triangle_red_small, square_red_small])]))
    -> writeln('kandy valid') ; writeln('kandy invalid') ),
    ( task_valid(Rule, circle_blue_large) -> writeln('kandy valid') ; writeln('kandy invalid') ),
    ok(contains(stack([triangle_red_small, square_red_small]), X)), format("contains ~w~n", [X]),
    ok(load_rules_text(m_bad, "p(X) :- assert(X).", [], Bad)), Bad = unsafe(Line, _),
    format("sandbox unsafe ~w~n", [Line]),
    ok(load_rules_text(m_good, "p(1).\nq(X) :- p(X).", [], Good)), format("sandbox ~w~n", [Good]),
    ok(rudas_generate(ds, _{category:rdg, size:xs, depth:2, seed:1}, _)),
    ok(rudas_chase(ds, Derived)), length(Derived, N),
    ( N > 0 -> writeln('chase derived') ; writeln('chase empty') ),
    ok(rudas_evaluate(ds, 'ds/rules.txt', M)), get_dict(h_score, M, H), format("h_score ~w~n", [H]),
    ok(r_score_text(["p(X,Y) :- q(X,Y)."], ["p(X,Y) :- q(X,Y)."], R)), format("r_score ~w~n", [R]).
"""


def test_the_pack_installs_and_loads_in_a_plain_swipl(tmp_path):
    swipl = _swipl()
    script = str(ROOT / "scripts" / "build_pack.sh")
    built = subprocess.run(["bash", script, str(tmp_path / "dist")], capture_output=True,
                           text=True, timeout=120, check=True)
    archive = Path(built.stdout.strip())
    version = _release_version()
    assert archive == tmp_path / "dist" / f"nesybench-{version}.tgz"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    top = f"nesybench-{version}"
    for required in ("pack.pl", "prolog/nesybench.pl", "prolog/kandy.pl", "prolog/safe_load.pl",
                     "prolog/rudas/chase.pl", "kb/kandy/bk.pl", "kb/kandy/rules/easy/t15.pl"):
        assert f"{top}/{required}" in names, required
    assert not any("__pycache__" in n or n.endswith(".qlf") for n in names)

    packs = tmp_path / "packs"
    packs.mkdir()
    work = tmp_path / "work"        # outside the source tree: nothing relative reaches it
    work.mkdir()
    install = (f"attach_packs('{packs}', []), "
               f"pack_install('{archive}', [interactive(false), pack_directory('{packs}')])")
    res = subprocess.run([swipl, "-g", install, "-t", "halt"], cwd=work, capture_output=True,
                         text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert (packs / "nesybench" / "pack.pl").is_file()
    assert (packs / "nesybench" / "kb" / "kandy" / "bk.pl").is_file()

    (work / "check.pl").write_text(PROGRAM)
    res = subprocess.run([swipl, "-g", f"attach_packs('{packs}', [])", "check.pl"], cwd=work,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == f"file {packs / 'nesybench' / 'prolog' / 'nesybench.pl'}"
    assert lines[1:] == ["kandy valid", "kandy invalid", "contains triangle_red_small",
                         "sandbox unsafe 1", "sandbox ok([p/1,q/1])", "chase derived",
                         "h_score 1", "r_score 1"], res.stdout + res.stderr
    assert (work / "ds" / "rules.txt").is_file()


def test_the_source_tree_names_its_own_files():
    """In the source tree, nesybench(Path) is the repository root: the same queries work."""
    swipl = _swipl()
    goal = ("use_module(prolog/nesybench), "
            "absolute_file_name(nesybench('kb/kandy/bk.pl'), F, [access(read)]), print(F), nl")
    res = subprocess.run([swipl, "-g", goal, "-t", "halt"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == repr(str(ROOT / "kb" / "kandy" / "bk.pl")).replace('"', "'")
