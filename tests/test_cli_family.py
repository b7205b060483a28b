"""The command line is one family: the top-level help lists every command, every command's
--help works, and the shared options (-o/--out, --overwrite, --seed, -j/--workers, --json,
-q/--quiet) mean the same wherever they appear (docs/cli.md)."""
from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from nesybench.cli import CAPABILITIES, cli


def _commands() -> list[tuple[str, str, click.Command]]:
    ctx = click.Context(cli)
    out = []
    for name in sorted(CAPABILITIES):
        grp = cli.get_command(ctx, name)
        if isinstance(grp, click.Group):
            out += [(name, sub, cmd) for sub, cmd in sorted(grp.commands.items())]
        else:
            out.append((name, "", grp))
    return out


COMMANDS = _commands()
IDS = [f"{g} {c}".strip() for g, c, _ in COMMANDS]
#: commands that start worker processes and draw random numbers: -j, -q and --seed all apply
SWEEPS = {"kandy generate", "kandy train", "rudas suite", "nesy sweep", "ski run", "irt study",
          "irt population"}
#: shared options still missing from a command owned elsewhere (strict: remove when added)
PENDING: set[tuple[str, str]] = set()


def _options(cmd: click.Command) -> dict[str, click.Option]:
    return {o: p for p in cmd.params if isinstance(p, click.Option)
            for o in (*p.opts, *p.secondary_opts)}


def test_top_level_help_lists_every_command():
    res = CliRunner().invoke(cli, ["--help"])
    assert res.exit_code == 0
    text = res.output
    lines = {}
    current = None
    for line in text.splitlines():
        words = line.split()
        if words and words[0] in CAPABILITIES and line.startswith("  ") and not line.startswith("   "):
            current = words[0]
        if current:
            lines[current] = lines.get(current, "") + " " + line
        if not line.strip():
            current = None
    for grp, sub, _ in COMMANDS:
        assert grp in lines, f"`nesybench --help` does not list {grp}"
        if sub:
            assert sub in lines[grp].replace(",", " ").replace("(", " ").replace(")", " ").split(), \
                f"`nesybench --help` does not list `{grp} {sub}`"


@pytest.mark.parametrize("grp,sub,cmd", COMMANDS, ids=IDS)
def test_help_works(grp, sub, cmd):
    res = CliRunner().invoke(cli, [grp, *([sub] if sub else []), "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage:" in res.output


@pytest.mark.parametrize("grp,sub,cmd", COMMANDS, ids=IDS)
def test_shared_options_mean_the_same(grp, sub, cmd):
    name = f"{grp} {sub}".strip()
    opts = _options(cmd)
    for pname, popt in PENDING:
        if pname == name:
            assert popt not in opts, f"{name} has {popt} now: remove it from PENDING"
    pairs = [("-j", "--workers"), ("-q", "--quiet"), ("-o", "--out")]
    for short, long in pairs:
        if short in opts:
            assert long in opts and opts[short] is opts[long], f"{name}: {short} is not {long}"
        if long in opts and short != "-o":
            if (name, short) in PENDING:
                pytest.xfail(f"{name}: {short} not yet added")
            assert short in opts and opts[short] is opts[long], f"{name}: {long} without {short}"
    for flag in ("--json", "--quiet", "--overwrite"):
        if flag in opts:
            assert opts[flag].is_flag, f"{name}: {flag} takes a value"
    if "--overwrite" in opts:
        assert "--out" in opts, f"{name}: --overwrite without --out"
    if "--seed" in opts:
        assert isinstance(opts["--seed"].type, click.types.IntParamType), f"{name}: --seed not int"
    if name in SWEEPS:
        missing = [o for o in ("-j", "-q", "--seed") if o not in opts]
        pending = [o for o in missing if (name, o) in PENDING]
        if pending:
            pytest.xfail(f"{name}: {pending} not yet added")
        assert not missing, f"{name} lacks {missing}"
