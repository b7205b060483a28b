"""-q/--quiet means one thing in every command that has it: nothing but errors and warnings.
No progress bars, no summary line, no table, no timing; --json still prints its JSON; the exit
status is unchanged. The click tree is walked for every command with the option, and the cheap
ones are run for real."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from nesybench.cli import CAPABILITIES, cli
from nesybench.clitypes.quiet import QUIET_HELP, make_quiet, quiet_commands
from nesybench.errors import NesyError

ROOT = Path(__file__).resolve().parents[1]
CURRICULA = ROOT / "curricula"


def _all_quiet_commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    found = {}
    for name in sorted(CAPABILITIES):
        top = cli.get_command(ctx, name)
        for path, cmd in quiet_commands(top):
            found[f"{name} {path}".strip()] = cmd
    return found


QUIET = _all_quiet_commands()


def test_every_command_with_quiet_has_the_one_meaning():
    # the commands this was written against; a new one is covered by the same walk
    assert {"rudas learn", "ski run", "data fetch", "kandy generate", "runs start",
            "nesy train", "rs generate", "export"} <= set(QUIET)
    for name, cmd in QUIET.items():
        assert getattr(cmd.callback, "quiet_wrapped", False), name
        (opt,) = [p for p in cmd.params if p.name == "quiet"]
        assert set(opt.opts) == {"-q", "--quiet"} and opt.is_flag, name
        assert opt.help.startswith(QUIET_HELP), name
        assert ("--json" in opt.help) == any(p.name == "as_json" for p in cmd.params), name


def _toy_group() -> click.Group:
    """A command that writes to stdout in every way a real one can."""
    @click.group()
    def group():
        pass

    @group.command()
    @click.option("--json", "as_json", is_flag=True)
    @click.option("--quiet", "-q", is_flag=True)
    @click.option("--fail", is_flag=True)
    @click.option("--status", type=int, default=0)
    @click.pass_context
    def speak(ctx, as_json, quiet, fail, status):
        print("print", flush=True)
        click.echo("echo")
        os.write(1, b"fd\n")
        subprocess.run([sys.executable, "-c", "print('child')"], check=True)
        click.echo("nesybench: warning: kept", err=True)
        if as_json:
            click.echo(json.dumps({"ok": True}))
        if fail:
            raise NesyError("bad input")
        ctx.exit(status)

    return make_quiet(make_quiet(group))       # twice: the same as once


def test_quiet_discards_stdout_at_every_level_and_keeps_errors(capfd):
    group = _toy_group()

    def run(*args):
        try:
            rv = group.main(["speak", *args], standalone_mode=False)
        except click.exceptions.Exit as exc:
            rv = exc.exit_code
        out, err = capfd.readouterr()
        return rv, out, err

    rv, out, err = run()
    assert out.split() == ["print", "echo", "fd", "child"] and rv in (0, None)
    rv, out, err = run("-q")
    assert (out, err) == ("", "nesybench: warning: kept\n")
    rv, out, err = run("-q", "--status", "3")
    assert rv == 3 and out == ""
    rv, out, _ = run("-q", "--json")
    assert json.loads(out.split("\n")[-2]) == {"ok": True}
    with pytest.raises(NesyError):
        group.main(["speak", "-q", "--fail"], standalone_mode=False)
    print("after")                              # stdout is back after an error
    assert capfd.readouterr().out == "after\n"


def _cli(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "NESYBENCH_PROGRESS_DELAY"}
    env["PYTHONPATH"] = str(ROOT / "python")
    return subprocess.run([sys.executable, "-m", "nesybench", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def _silent(res):
    assert res.returncode == 0, res.stderr
    assert (res.stdout, res.stderr) == ("", "")


def test_rudas_learn_and_evaluate_print_nothing_with_quiet(tmp_path):
    _silent(_cli("rudas", "generate", "--out", "ds", "--size", "xs", "--seed", 1, "-q",
                 cwd=tmp_path))
    loud = _cli("rudas", "learn", "ds", "--system", "amie", "--out", "loud.pl", cwd=tmp_path)
    assert loud.returncode == 0 and "rules by amie in" in loud.stdout
    _silent(_cli("rudas", "learn", "ds", "--system", "amie", "--out", "r.pl", "-q",
                 cwd=tmp_path))
    assert (tmp_path / "r.pl").read_text() == (tmp_path / "loud.pl").read_text()
    _silent(_cli("rudas", "evaluate", "ds", "r.pl", "--quiet", cwd=tmp_path))
    both = _cli("rudas", "learn", "ds", "--system", "amie", "--out", "r.pl", "--overwrite",
                "-q", "--json", cwd=tmp_path)
    assert both.returncode == 0 and json.loads(both.stdout)["rules"] > 0
    # an error still reaches stderr, with its exit status
    bad = _cli("rudas", "learn", "nowhere", "--system", "amie", "--out", "x.pl", "-q",
               cwd=tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("nesybench: error:")


def test_ski_run_prints_nothing_with_quiet(tmp_path):
    from nesybench import datafiles
    if not (datafiles.cache_dir() / "ski" / "biopsy.pkl.xz").is_file():
        pytest.skip("the SKI data are not cached (nesybench data fetch)")
    args = ["ski", "run", "--datasets", "bcw", "--injectors", "uneducated", "--degradations",
            "drop", "--reps", "1", "--epochs", "1", "--level-stride", "10", "-j", "1"]
    loud = _cli(*args, "--out", "loud", cwd=tmp_path)
    assert loud.returncode == 0 and "seconds" in loud.stdout, loud.stderr
    _silent(_cli(*args, "--out", "quiet", "-q", cwd=tmp_path))
    assert (tmp_path / "quiet" / "bcw" / "results.sqlite").is_file()


def test_other_cheap_commands_print_nothing_with_quiet(tmp_path):
    _silent(_cli("kandy", "generate", CURRICULA / "kandy" / "easy.yaml", "--out", "easy",
                 "--tasks", "15", "--samples", "4", "--workers", "1", "-q", cwd=tmp_path))
    _silent(_cli("kandy", "show", "easy", "-q", cwd=tmp_path))
    _silent(_cli("export", "easy", "--format", "croissant", "--out", "hub", "-q",
                 cwd=tmp_path))
    _silent(_cli("runs", "start", CURRICULA / "sweeps" / "toy.yaml", "--out", "toy", "-j", "1",
                 "-q", cwd=tmp_path))
    _silent(_cli("runs", "resume", "toy", "-q", cwd=tmp_path))
    _silent(_cli("rs", "generate", CURRICULA / "rs" / "xor.yaml", "--out", "xor", "--samples",
                 "8", "-q", cwd=tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["easy", "hub", "toy", "xor"]
