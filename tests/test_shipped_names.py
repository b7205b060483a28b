"""Every command that takes a task, curriculum, spec or rule file also takes the name of a
shipped one (`kandy generate easy`, `rs count xor`, `runs start xor_counts`, `kandy check
easy/t15`), through the one registry of shipped files (nesybench.paths). An existing file
always wins over a name; an unknown name is one error line, exit 2, with the nearest names;
`nesybench data list` lists the names by kind."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import click
import pytest

from nesybench.cli import CAPABILITIES, cli, main
from nesybench.clitypes import ShippedFile
from nesybench.errors import NesyError
from nesybench.paths import ASSET_KINDS, asset_names, data_root, resolve_asset

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "side_by_side([stack([triangle_red_small, square_red_small])])"

#: every argument or option that takes a shipped file by name: (command, parameter) -> kind
EXPECTED = {
    ("kandy generate", "curriculum"): "kandy-curriculum",
    ("kandy validate", "curriculum"): "kandy-curriculum",
    ("kandy check", "rule"): "kandy-rule",
    ("rs generate", "task_yaml"): "rs-task",
    ("rs count", "task_yaml"): "rs-task",
    ("rs severity", "source_yaml"): "rs-task",
    ("rs severity", "target_yaml"): "rs-task",
    ("nesy train", "task"): "rs-task",
    ("nesy sweep", "task"): "rs-task",
    ("runs start", "spec"): "sweep",
    ("rudas experiment", "spec"): "rudas-experiment",
    ("irt fit", "responses"): "irt-responses",
}
#: a minimal command line around the name (required options), parsed but not run
REQUIRED = {"kandy generate": ["-o", "x"], "kandy check": [SAMPLE], "rs generate": ["-o", "x"],
            "rs severity": ["and3"], "runs start": ["-o", "x"], "rudas experiment": ["-o", "x"],
            "irt fit": []}
#: a name of each kind
NAME = {"kandy-curriculum": "easy", "kandy-rule": "easy/t15", "rs-task": "xor",
        "sweep": "xor_counts", "rudas-experiment": "experiment", "ski-rules": "bcw",
        "irt-responses": "example_responses"}


def _walk(cmd: click.Command, path: str, out: dict) -> None:
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None:
                _walk(sub, f"{path} {name}".strip(), out)
        return
    out[path] = cmd


def _commands() -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    ctx = click.Context(cli)
    for name in sorted(CAPABILITIES):
        _walk(cli.get_command(ctx, name), name, out)
    return out


COMMANDS = _commands()


def test_the_registry_names_every_shipped_file_of_each_kind():
    for kind, (folder, suffix, _) in ASSET_KINDS.items():
        names = asset_names(kind)
        files = sorted((data_root() / folder).rglob(f"*{suffix}"))
        assert len(names) == len(files) > 0, kind
        for name, reg in names.items():
            assert (data_root() / reg).is_file() and reg == f"{folder}/{name}{suffix}"
    assert {"easy", "hard", "easy_large"} <= set(asset_names("kandy-curriculum"))
    assert {"xor", "mnadd_evenodd", "driving_3d"} <= set(asset_names("rs-task"))
    assert {"xor_counts", "toy"} <= set(asset_names("sweep"))
    assert {"easy/t15", "hard/t15", "easy/t19"} <= set(asset_names("kandy-rule"))


def test_exactly_the_commands_that_take_such_a_file_take_a_name():
    found = {(path, p.name): p.type.kinds for path, cmd in COMMANDS.items()
             for p in cmd.params if isinstance(p.type, ShippedFile)}
    assert found == {k: (v,) for k, v in EXPECTED.items()}


@pytest.mark.parametrize(("command", "param"), sorted(EXPECTED))
def test_each_command_resolves_a_name_to_the_shipped_file(command, param, tmp_path,
                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)                  # no repository paths: names only
    kind = EXPECTED[(command, param)]
    cmd = COMMANDS[command]

    def args(value):
        if param == "target_yaml":
            return ["and3", value]
        if param == "responses":
            return ["--responses", value]
        return [value, *REQUIRED.get(command, [])]
    ctx = cmd.make_context(command, args(NAME[kind]))
    expected = data_root() / asset_names(kind)[NAME[kind]]
    assert Path(ctx.params[param]) == expected
    # the registry name a source tree spells as a path means the same file from anywhere
    ctx = cmd.make_context(command, args(asset_names(kind)[NAME[kind]]))
    assert Path(ctx.params[param]) == expected


def test_names_run_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["kandy", "validate", "easy"]) == 0
    assert "20 tasks OK" in capsys.readouterr().out
    assert main(["kandy", "check", "easy/t15", SAMPLE]) == 0
    assert capsys.readouterr().out.startswith("valid ")
    assert main(["kandy", "check", "t18", SAMPLE]) == 1          # a last part naming one rule
    assert capsys.readouterr().out.startswith("invalid ")
    assert main(["rs", "count", "xor"]) == 0
    assert capsys.readouterr().out.startswith("xor: 4 optimal")
    assert main(["rs", "count", "mnadd-evenodd", "--json"]) == 0  # - and _ alike
    assert json.loads(capsys.readouterr().out)["count"] == 36
    assert main(["runs", "start", "xor_counts", "-o", "st", "-j", "0", "-q"]) == 0
    assert (tmp_path / "st" / "results.sqlite").is_file()
    assert main(["irt", "fit", "--responses", "example_responses"]) == 0   # shown by its name
    assert capsys.readouterr().out.startswith("example_responses: 1PL on 30 × 40: b 0.477")


def test_an_existing_file_wins_over_a_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "curricula" / "rs" / "and3.yaml", tmp_path / "xor")
    assert main(["rs", "count", "xor", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["task"] == "and3"
    assert resolve_asset("xor", "rs-task") == Path("xor")
    # a folder of that name is no file: the name still means the shipped task
    (tmp_path / "easy").mkdir()
    assert resolve_asset("easy", "kandy-curriculum") == \
        data_root() / "curricula" / "kandy" / "easy.yaml"


@pytest.mark.parametrize(("args", "nearest"), [
    (["rs", "count", "xorr"], "nearest names: xor"),
    (["kandy", "generate", "esy", "-o", "x"], "nearest names: easy"),
    (["kandy", "validate", "hard_larg"], "nearest names: hard_large"),
    (["runs", "start", "xor_count", "-o", "x"], "nearest names: xor_counts"),
    (["rudas", "experiment", "experimen", "-o", "x"], "nearest names: experiment"),
    (["nesy", "train", "mnadd_evenod"], "nearest names: mnadd_evenodd"),
    (["kandy", "check", "easy/t5", SAMPLE], "nearest names: easy/t05"),
    (["kandy", "check", "t15", SAMPLE], "(easy/t15, hard/t15)"),
    (["ski", "run", "--datasets", "bcw", "--kb", "bcw=bwc", "-o", "s"], "nearest names: bcw"),
])
def test_an_unknown_name_is_one_error_with_the_nearest_names(args, nearest, tmp_path,
                                                             monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    try:
        status = main(args)
    except SystemExit as exc:           # ski run exits through sys.exit on bad input
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("nesybench: error:") and len(err.strip().splitlines()) == 1, err
    assert nearest in err
    assert not (tmp_path / "x").exists() and not (tmp_path / "s").exists()


def test_an_unknown_name_far_from_all_lists_some_and_points_to_data_list():
    with pytest.raises(NesyError, match=r"shipped: toy, xor_counts; `nesybench data list`"):
        resolve_asset("zzzzzz", "sweep")


def test_data_list_lists_the_shipped_names_by_kind(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    head, _, files = out.partition("data files")
    for kind in ASSET_KINDS:
        assert f"  {kind} (" in head
    lines = head.splitlines()
    rs = lines.index(next(x for x in lines if x.startswith("  rs-task (")))
    assert "rs count" in lines[rs] and "mnadd_evenodd" in " ".join(lines[rs + 1:rs + 4])
    assert "easy/t15" in head and "xor_counts" in head
    assert "keel/letter.dat" in files
    assert main(["data", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["shipped"] == {k: list(asset_names(k)) for k in ASSET_KINDS}
    assert listing["shipped"]["sweep"] == ["toy", "xor_counts"]


def test_load_takes_the_bare_name_and_the_prefixed_one(monkeypatch):
    import nesybench.data as data

    seen = []
    monkeypatch.setattr(data, "_generated",
                        lambda source, name, **kw: seen.append((Path(source), name)))
    data.load("easy")
    data.load("kandy-easy")
    data.load("mnadd_evenodd")
    easy = data_root() / "curricula" / "kandy" / "easy.yaml"
    assert seen == [(easy, "kandy-easy"), (easy, "kandy-easy"),
                    (data_root() / "curricula" / "rs" / "mnadd_evenodd.yaml",
                     "rs-mnadd-evenodd")]
    with pytest.raises(NesyError, match="nearest names: xor"):
        data.load("xorr")
