"""Every shell, Python and Prolog block of README.md and of the pages of docs/ runs
(tests/readme_blocks.py has the convention: skip/replace/exit markers, one scratch folder per
page, fixtures in tests/data/readme/)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from readme_blocks import (Block, blocks, console_samples, doc_files, normalise_output, prolog_queries,
                           shell_commands)

ROOT = Path(__file__).resolve().parents[1]
SWIPL = ROOT / ".deps" / "swipl" / "bin" / "swipl"
LINKED = ("curricula", "kb", "prolog", "tests", "benchmarks", "docs")
BLOCKS = [b for page in doc_files(ROOT)
          for b in blocks(page, page.relative_to(ROOT).as_posix())]


@pytest.fixture(scope="module")
def scratches(tmp_path_factory):
    """One scratch folder per page: a page's blocks run in order and may use what an earlier
    block of the same page wrote."""
    made: dict[str, Path] = {}

    def scratch(page: str) -> Path:
        if page not in made:
            d = tmp_path_factory.mktemp("doc")
            for name in LINKED:
                (d / name).symlink_to(ROOT / name)
            for f in (ROOT / "tests" / "data" / "readme").iterdir():
                if f.is_dir():
                    shutil.copytree(f, d / f.name)
                else:
                    shutil.copy(f, d / f.name)
            made[page] = d
        return made[page]
    return scratch


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
    assert {b.file for b in BLOCKS} >= {"README.md", "docs/guides/kandy.md"}
    skipped = [b for b in BLOCKS if b.skip]
    assert len(skipped) <= len(BLOCKS) // 3, "skip markers are for exceptions"


def test_console_samples_and_their_normal_form():
    block = Block("console", "$ a x \\\n  --y\nout1\nout2\n$ b\n$ c\nz\n", 1)
    assert console_samples(block) == [("a x --y", ["out1", "out2"]), ("b", []), ("c", ["z"])]
    assert normalise_output("wrote 3 to /tmp/s/out/e in 2.2 s  \n[clingo, 0.125 s]\n\n",
                            "/tmp/s") == ["wrote 3 to .../out/e in <T>", "[clingo, <T>]"]


def _page(tmp_path, monkeypatch, body: str) -> Block:
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "page.md").write_text(f"Text.\n\n```console\n{body}```\n\nMore.\n")
    (block,) = blocks(tmp_path / "page.md", "page.md")
    return block


def test_a_sample_that_differs_from_the_output_fails(tmp_path, monkeypatch):
    env = _env()
    block = _page(tmp_path, monkeypatch, "$ echo one; echo in 0.5 s\none\nin 9 s\n$ echo two\n")
    _run_console(block, tmp_path, env)                  # durations are not compared
    block = _page(tmp_path, monkeypatch, "$ echo one\nuno\n")
    with pytest.raises(pytest.fail.Exception, match="output shown for `echo one` is not what"):
        _run_console(block, tmp_path, env)


def test_regenerating_writes_the_real_output_into_the_page(tmp_path, monkeypatch):
    block = _page(tmp_path, monkeypatch,
                  f"$ echo {tmp_path}/out\nold\nlines\n$ echo kept\n$ printf 'a\\nb\\n'\nc\n")
    monkeypatch.setattr(sys.modules[__name__], "REGENERATE", True)
    _run_console(block, tmp_path, _env())
    assert (tmp_path / "page.md").read_text() == (
        f"Text.\n\n```console\n$ echo {tmp_path}/out\n.../out\n$ echo kept\n"
        "$ printf 'a\\nb\\n'\na\nb\n```\n\nMore.\n")


def _thread_states(pid: int) -> str:
    """Linux only: per thread of a live process, its state, kernel wait channel and its
    blocked and pending signal masks (a mask inherited from the test process that blocks
    the signal SWI-Prolog uses to stop its helper threads at halt would show here)."""
    states = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        try:
            stat = (task / "stat").read_text()
            wchan = (task / "wchan").read_text().strip() or "-"
            status = dict(line.split(":\t", 1) for line in
                          (task / "status").read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        states.append(f"{task.name}:{stat.rsplit(')', 1)[1].split()[0]}/{wchan}"
                      f" blk={status.get('SigBlk', '?')} pnd={status.get('SigPnd', '?')}")
    return "; ".join(states) or "unknown"


def _run_swipl(args, cwd, env, where, timeout=120):
    """Run one Prolog block (normally well under a second). A process that outlives
    `timeout` fails the test with its threads' states (:func:`_thread_states`)."""
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        states = _thread_states(proc.pid)
        proc.kill()
        proc.communicate()
        pytest.fail(f"{where}: swipl did not exit within {timeout} s; thread states: {states}")
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


#: the pages with runnable blocks, in document order
PAGES = list(dict.fromkeys(b.file for b in BLOCKS))


# One test per page, its blocks in order in one scratch folder: a block may use what an earlier
# block of the same page wrote, so a page's blocks must not be spread over pytest-xdist workers.
@pytest.mark.parametrize("page", PAGES)
def test_readme_page(page, scratches):
    runnable = [b for b in BLOCKS if b.file == page and not b.skip]
    if not runnable:
        pytest.skip(f"{page}: every block is marked skip")
    scratch = scratches(page)
    for block in runnable:
        _run_block(block, scratch)


def _run_block(block, scratch) -> None:
    env = _env()
    if block.lang == "python":
        script = scratch / f"block_{block.line}.py"
        script.write_text(block.prepared())
        res = subprocess.run([sys.executable, str(script)], cwd=scratch, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == block.exit, f"{block.where}:\n{res.stderr[-3000:]}"
        return
    if block.lang == "prolog":
        files, queries = prolog_queries(block)
        assert queries, f"{block.where}: no ?- queries"
        prog = scratch / f"block_{block.line}.pl"
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
        res = _run_swipl(args, scratch, env, block.where)
        assert res.returncode == 0 and "Warning" not in res.stderr, \
            f"{block.where}:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
        return
    if block.lang == "console":
        _run_console(block, scratch, env)
        return
    for cmd in shell_commands(block):
        res = subprocess.run(_shell(cmd), shell=True, cwd=scratch, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == block.exit, \
            f"{block.where}: {cmd}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"


#: set to 1 to write each console command's real output into its page instead of failing
REGENERATE = os.environ.get("NESYBENCH_REGENERATE_SAMPLES") == "1"


def _run_console(block, scratch: Path, env: dict) -> None:
    """Run each ``$ `` command; where the page shows its output, the real output (stdout; stderr
    when stdout is empty, e.g. an error) must be that sample, up to the scratch folder's path
    and durations (``normalise_output``)."""
    stale = []                         # (sample, the real output as the page would show it)
    for cmd, sample in console_samples(block):
        res = subprocess.run(_shell(cmd), shell=True, cwd=scratch, env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == block.exit, \
            f"{block.where}: {cmd}\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
        printed = res.stdout if res.stdout.strip() else res.stderr
        if not sample or normalise_output("\n".join(sample)) == normalise_output(printed, scratch):
            continue
        if not REGENERATE or block.replace:
            pytest.fail(f"{block.where}: the output shown for `{cmd}` is not what it prints "
                        f"(NESYBENCH_REGENERATE_SAMPLES=1 rewrites it):\n"
                        + "\n".join(normalise_output(printed, scratch)))
        real = [line.rstrip() for line in printed.replace(str(scratch), "...").splitlines()]
        while real and not real[-1]:
            real.pop()
        stale.append((sample, real))
    if stale:
        page = ROOT / block.file
        text, body, at = page.read_text(encoding="utf-8"), block.text, 0
        for sample, real in stale:
            old, new = "\n".join(sample) + "\n", "\n".join(real) + "\n"
            at = body.index(old, at)
            body = body[:at] + new + body[at + len(old):]
            at += len(new)
        assert text.count(block.text) == 1, f"{block.where}: the block is not unique in its page"
        page.write_text(text.replace(block.text, body), encoding="utf-8")
