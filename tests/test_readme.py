"""Every shell, Python and Prolog block of README.md runs (tests/readme_blocks.py has the
convention: skip/replace/exit markers, scratch folder, fixtures in tests/data/readme/)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from readme_blocks import blocks, prolog_queries, shell_commands

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SWIPL = ROOT / ".deps" / "swipl" / "bin" / "swipl"
LINKED = ("curricula", "kb", "prolog", "tests", "benchmarks", "docs")
BLOCKS = blocks(README)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme")
    for name in LINKED:
        (d / name).symlink_to(ROOT / name)
    for f in (ROOT / "tests" / "data" / "readme").iterdir():
        if f.is_dir():
            shutil.copytree(f, d / f.name)
        else:
            shutil.copy(f, d / f.name)
    return d


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "python") + os.pathsep + env.get("PYTHONPATH", "")
    bindir = Path(sys.executable).parent
    env["PATH"] = os.pathsep.join([str(SWIPL.parent), str(bindir), env.get("PATH", "")])
    return env


def _shell(cmd: str) -> str:
    cmd = cmd.strip()
    if cmd.startswith("nesybench "):
        return f"{sys.executable} -m nesybench {cmd[len('nesybench '):]}"
    if cmd.startswith(".venv/bin/python "):
        return f"{sys.executable} {cmd[len('.venv/bin/python '):]}"
    return cmd


def test_markers_are_well_formed():
    for b in BLOCKS:
        b.prepared()              # every replace marker matches its block
    assert any(b.lang == "prolog" for b in BLOCKS) and any(b.lang == "python" for b in BLOCKS)
    skipped = [b for b in BLOCKS if b.skip]
    assert len(skipped) <= len(BLOCKS) // 3, "skip markers are for exceptions"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block(block, scratch):
    if block.skip:
        pytest.skip(f"README line {block.line}: {block.skip}")
    env = _env()
    if block.lang == "python":
        script = scratch / f"readme_{block.line}.py"
        script.write_text(block.prepared())
        res = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == block.exit, f"README line {block.line}:\n{res.stderr[-3000:]}"
        return
    if block.lang == "prolog":
        files, queries = prolog_queries(block)
        assert queries, f"README line {block.line}: no ?- queries"
        prog = scratch / f"readme_{block.line}.pl"
        prog.write_text(":- style_check(-singleton).\n" + "".join(
            f"readme_query({i}, ({q})).\n" for i, q in enumerate(queries)) + textwrap.dedent("""
            run_readme :-
                forall(readme_query(I, G),
                       (   catch(once(G), E, (print_message(error, E), halt(1)))
                       ->  true
                       ;   format(user_error, "query ~w failed~n", [I]), halt(1)
                       )).
            """))
        # options first: swipl passes everything after the first file to the program as argv
        args = [str(SWIPL), "-q", "-g", "run_readme", "-t", "halt", *files, str(prog)]
        res = subprocess.run(args, cwd=scratch, env=env, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0 and "Warning" not in res.stderr, \
            f"README line {block.line}:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
        return
    for cmd in shell_commands(block):
        res = subprocess.run(_shell(cmd), shell=True, cwd=scratch, env=env,
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == block.exit, \
            f"README line {block.line}: {cmd}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
