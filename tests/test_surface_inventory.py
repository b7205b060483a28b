"""The surface inventory: every click command (lazily loaded groups included) and every public
loader that takes a path or text from outside has hostile cases in the fuzz corpus or in a
property of tests/test_fuzz.py (``tests/fuzzing.py``'s ``SURFACES``, ``LOADERS`` and the
files of tests/data/fuzz/surface/), or is listed as reading no outside input. A new command
without cases fails here, with what to add."""
from __future__ import annotations

import importlib
import json

import click
import pytest

from fuzzing import FUZZ_DIR, LOADERS, NO_INPUT, ROOT, SURFACE_DIR, SURFACES, surface_cases

import nesybench.cli


def _commands(cmd, path, ctx):
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):       # lazy groups load here
            sub = cmd.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path + [name])}: the group does not load"
            yield from _commands(sub, path + [name], click.Context(sub, parent=ctx))
    else:
        yield " ".join(path)


COMMANDS = sorted(_commands(nesybench.cli.cli, [], click.Context(nesybench.cli.cli)))

#: the public entry points that read a path or text from outside (data sets, programs,
#: specs, tables); each is in LOADERS and has surface cases
PUBLIC_LOADERS = [
    "nesybench.load", "nesybench.data.load_folder", "CompiledProgram.from_program",
    "SampledProgram.from_program",
    "nesybench.rudas.learners.load_dataset", "nesybench.rudas.learners.parse_rules",
    "nesybench.rudas.experiment.load_experiment", "nesybench.shortcuts.task.load_task",
    "nesybench.shortcuts.generate.RSDataset", "nesybench.shortcuts.metrics.read_predictions",
    "nesybench.kandy.language.load_curriculum",
    "nesybench.kandy.reference.import_reference", "nesybench.kandy.learn.data.load_data",
    "nesybench.kandy.ilp.task.load_task", "nesybench.nesy.learn.data.NesyData.from_folder",
    "nesybench.ski.data.load", "nesybench.irt.data.load_file",
    "nesybench.irt.data.load_responses", "nesybench.runs.spec.load_spec",
]


def _cases(surface: str) -> list[str]:
    found = [f"surface/{p.name}" for p in surface_cases().get(surface, [])]
    source = (ROOT / "tests" / "test_fuzz.py").read_text(encoding="utf-8")
    for ref in SURFACES.get(surface, []):
        kind, _, name = ref.partition(":")
        if kind == "property":
            assert f"def {name}(" in source, f"SURFACES[{surface!r}]: no property {name}"
            found.append(ref)
        elif kind == "corpus":
            files = [p for p in (FUZZ_DIR / name).glob("*") if p.is_file()]
            assert files, f"SURFACES[{surface!r}]: tests/data/fuzz/{name}/ holds no case"
            found.append(ref)
        else:
            pytest.fail(f"SURFACES[{surface!r}]: {ref!r} is neither property: nor corpus:")
    return found


def test_the_walk_finds_the_lazy_groups():
    for cmd in ("kandy generate", "nesy train", "runs start", "ski run", "irt fit", "export",
                "doctor"):
        assert cmd in COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_hostile_cases(command):
    if command in NO_INPUT:
        assert NO_INPUT[command].strip(), f"{command}: NO_INPUT needs a reason"
        return
    assert _cases(command), (
        f"`nesybench {command}` is an input surface without hostile cases: add a JSON case to "
        f"tests/data/fuzz/surface/ with \"surface\": \"{command}\" and its \"args\" (see "
        "tests/fuzzing.py run_surface_case), or a property/corpus kind to SURFACES, or, if it "
        "reads nothing from outside, an entry with the reason in NO_INPUT")


@pytest.mark.parametrize("loader", PUBLIC_LOADERS)
def test_every_public_loader_has_hostile_cases(loader):
    assert loader in LOADERS, f"{loader}: add it to LOADERS in tests/fuzzing.py"
    assert _cases(loader), (
        f"{loader} reads outside input without hostile cases: add a JSON case with "
        f"\"surface\": \"{loader}\" and its \"call\" arguments to tests/data/fuzz/surface/")


def test_loaders_resolve_and_cases_name_known_surfaces():
    for name, call in LOADERS.items():
        dotted = call.__closure__[0].cell_contents
        mod, _, attr = dotted.partition(":")
        obj = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        assert callable(obj), name
    known = set(COMMANDS) | set(LOADERS)
    for path in sorted(SURFACE_DIR.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        assert case["surface"] in known, f"{path.name}: unknown surface {case['surface']!r}"
        assert ("args" in case) != ("call" in case), f"{path.name}: give args or call"
        if "call" in case:
            assert case["surface"] in LOADERS, f"{path.name}: call needs a loader surface"
    assert set(SURFACES) <= set(COMMANDS) | set(LOADERS)
    assert set(NO_INPUT) <= set(COMMANDS)
