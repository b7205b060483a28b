"""Shared pieces of the property-based tests (tests/test_fuzz.py) and the long fuzz run
(benchmarks/fuzz.py): input generators that mutate valid seeds, and the one property every
parser and CLI entry point must have:

    exit status 0 (or a documented status such as 1 for `kandy check`), or exit 2 with exactly
    one line on stderr starting with ``nesybench: error:``; no traceback; no output folder or
    temporary folder left behind after a failure.
"""
from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from hypothesis import strategies as st

from nesybench.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FUZZ_DIR = ROOT / "tests" / "data" / "fuzz"

KANDY_KEYS = ["name", "samples", "train_split", "val_split", "gamma", "beta", "noisy_color",
              "noisy_size", "positive_set", "negative_set", "positive_rule", "rule_file", "seed",
              "patience", "config", "tasks", "shape", "color", "size", "in", "stack", "repeat",
              "repeat_before", "palindrome", "n", "list", "min", "max", "union", "store",
              "recall", "alias", "sort", "keys", "order", "argsort", "idx", "any_composition"]
RS_KEYS = ["name", "concepts", "knowledge", "formula", "coef", "maps", "support", "supervised",
           "depends", "labels", "facts", "generate", "domain", "count", "map", "range",
           "sample", "seed", "prop_in_dist", "file", "samples", "render", "train", "generator",
           "n_config", "blender", "preset", "bounces", "camera_jitter", "light_jitter"]

scalars = (st.none() | st.booleans() | st.integers(-10**7, 10**7)
           | st.floats(allow_nan=False, allow_infinity=False, width=32)
           | st.text(max_size=10) | st.sampled_from(["~", "circle", "red", "small", "0,1", "all",
                                                   "shared", "kb/shortcuts/xor.lp", "valid(X)."]))


def values(keys: list[str]):
    return st.recursive(
        scalars,
        lambda kids: st.lists(kids, max_size=4)
        | st.dictionaries(st.sampled_from(keys) | st.text(max_size=6) | st.integers(0, 9), kids,
                          max_size=4),
        max_leaves=16)


def _slots(obj, out):
    """Every (container, key) in a nested structure."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((obj, k))
            _slots(v, out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((obj, i))
            _slots(v, out)
    return out


@st.composite
def mutated_yaml(draw, seeds: list[Path], keys: list[str]) -> str:
    """A valid seed file with a few structural mutations (replace/delete/insert a value,
    deep nesting), or a text-level mutation of its bytes."""
    seed = draw(st.sampled_from(seeds))
    text = seed.read_text(encoding="utf-8")
    if draw(st.integers(0, 4)) == 0:                       # text-level
        pos = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 20))
        ins = draw(st.text(alphabet=st.sampled_from(list(":-[]{}~,|>&*!#'\"\n ab0\t\\%")),
                           max_size=8))
        return text[:pos] + ins + text[pos + cut:]
    data = yaml.safe_load(text)
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(data, [])
        if not slots:
            break
        container, key = slots[draw(st.integers(0, len(slots) - 1))]
        action = draw(st.sampled_from(["replace", "delete", "insert", "nest", "grow"]))
        if action == "replace":
            container[key] = draw(values(keys))
        elif action == "delete":
            del container[key]
        elif action == "insert":
            if isinstance(container, dict):
                container[draw(st.sampled_from(keys))] = draw(values(keys))
            else:
                container.insert(key, draw(values(keys)))
        elif action == "nest":
            v = container[key]
            for _ in range(draw(st.integers(1, 120))):
                v = {draw(st.sampled_from(["stack", "in", "side_by_side"])): [v]}
            container[key] = v
        else:
            v = container[key]
            if isinstance(v, int) and not isinstance(v, bool):
                container[key] = draw(st.sampled_from([-1, 0, 10**9, 2**70]))
    try:
        return yaml.safe_dump(data, sort_keys=False)
    except (yaml.YAMLError, RecursionError):
        return text


@st.composite
def mutated_text(draw, seeds: list[str]) -> str:
    """A Prolog/ASP text with random insertions/deletions of syntax characters."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 6))
        ins = draw(st.text(alphabet=st.sampled_from(list("():-,.[]|_XYZab0 \n'\"%\\:-=><+*")),
                           max_size=6))
        text = text[:pos] + ins + text[pos + cut:]
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
        text = "p(X, " + "f(" * 3000 + "X" + ")" * 3000 + ") :- q(X, X).\n"
    return text


@dataclass
class Outcome:
    rc: int
    out: str
    err: str


#: what the fuzz run reports: CLI calls made and the process's peak RSS (KiB) after each,
#: tracebacks, calls over :data:`HANG_S` seconds, and reads of a file outside the input
#: (:data:`SECRETS`, seen by an audit hook)
STATS = {"inputs": 0, "peak_rss_kib": 0, "tracebacks": 0, "hangs": 0, "outside_reads": 0}

#: a call running longer than this counts as a hang
HANG_S = 30.0

#: a file no input may reach: hostile cases point symbolic links and paths at it; the audit
#: hook counts every open of it (and of the system files below) while a case runs
SECRET = Path(tempfile.gettempdir()) / (f"secret-for-fuzzing-{os.getuid()}"
                                          f"-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")
SECRETS = {str(SECRET), "/etc/passwd", "/etc/shadow", "/etc/hostname"}
_WATCH = {"on": False}


#: audit events that name a path a process reads (its first argument): Python's own opens,
#: SQLite databases, folder listings and shutil's copies (the files SWI-Prolog, clingo and
#: C libraries open are seen by tests/door_monitor.py, which watches the process)
AUDITED = {"open", "sqlite3.connect", "os.listdir", "os.scandir", "shutil.copyfile",
           "shutil.copytree", "shutil.move", "shutil.copymode", "shutil.copystat",
           "shutil.unpack_archive", "shutil.make_archive", "shutil.rmtree"}


def _audit(event, args):
    if event not in AUDITED or not _WATCH["on"] or not args:
        return
    path = args[0]
    if isinstance(path, int) or path is None:
        return
    try:
        path = os.fsdecode(path)
        if event == "sqlite3.connect" and path.startswith("file:"):
            from urllib.parse import unquote  # noqa: PLC0415
            path = unquote(path[5:].split("?", 1)[0])
        if path in SECRETS or os.path.realpath(path) in SECRETS:
            STATS["outside_reads"] += 1
            _WATCH.setdefault("seen", []).append(path)
    except (TypeError, ValueError, OSError):
        pass


sys.addaudithook(_audit)


@contextlib.contextmanager
def watched():
    """While the block runs, every open of :data:`SECRET` (written here) or of the system
    files in :data:`SECRETS` counts in ``STATS["outside_reads"]``."""
    SECRET.write_text("NESYBENCH-SECRET\n", encoding="utf-8")
    _WATCH["on"] = True
    try:
        yield
    finally:
        _WATCH["on"] = False


def _write_stats() -> None:
    path = os.environ.get("NESYBENCH_FUZZ_STATS")
    if path:
        Path(path).write_text(json.dumps(STATS), encoding="utf-8")


atexit.register(_write_stats)


def run_cli(args: list[str]) -> Outcome:
    """Run the CLI in-process, capturing stdout/stderr (no exception may escape)."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), watched():
        try:
            rc = cli_main([str(a) for a in args])
        except SystemExit as exc:           # commands that exit themselves
            rc = exc.code if isinstance(exc.code, int) else 1
    STATS["inputs"] += 1
    STATS["hangs"] += time.monotonic() - t0 > HANG_S
    STATS["tracebacks"] += "Traceback" in err.getvalue()
    STATS["peak_rss_kib"] = max(STATS["peak_rss_kib"],
                                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return Outcome(rc, out.getvalue(), err.getvalue())


#: nesting depths of the deep-term inputs: under, at and far over the readers' bound (1,000)
DEPTHS = [200, 999, 1001, 5000, 20000, 50000]


@st.composite
def deep_term(draw) -> str:
    """A term nested very deeply: compound, list, parentheses, an operator chain or a
    prefix-operator tower (what overflows a recursive reader or printer)."""
    n = draw(st.sampled_from(DEPTHS))
    kind = draw(st.sampled_from(["func", "list", "paren", "infix", "prefix", "curly"]))
    if kind == "func":
        return "f(" * n + "X" + ")" * n
    if kind == "list":
        return "[" * n + "X" + "]" * n
    if kind == "paren":
        return "(" * n + "X" + ")" * n
    if kind == "infix":
        return "X" + "+1" * n
    if kind == "prefix":
        return "- " * n + "X"
    return "{" * n + "X" + "}" * n


@st.composite
def deep_body(draw) -> str:
    """A rule body with a deep term in it, or a conjunction of very many goals."""
    if draw(st.booleans()):
        return ", ".join(["q(X, Y)"] * draw(st.sampled_from(DEPTHS)))
    return f"q(X, Y), Y = {draw(deep_term())}"


@st.composite
def function_symbol_rules(draw) -> str:
    """RuDaS-style rules with function symbols (not datalog: the chase would not end)."""
    f = draw(st.sampled_from(["f(X)", "f(f(X))", "s(Y)", "g(X, Y)", "[X]", "f(" * 50 + "X" + ")" * 50]))
    shape = draw(st.sampled_from([
        "p1({f}, Y) :- p1(X, Y).", "p1(X, Y) :- p1({f}, Y).", "p0(X, {f}) :- p1(X, Y), p2(Y, X).",
        "p1({f}, {f}) :- p1(X, Y).", "p2({f}, Y).", "p1(X, Y) :- p2(X, Y), p3({f}, Y)."]))
    lines = [shape.format(f=f)]
    if draw(st.booleans()):
        lines.append("p1(X, Y) :- p2(X, Y).")
    return "\n".join(lines) + "\n"


@st.composite
def huge_grounding(draw) -> str:
    """ASP knowledge whose grounding is large: a cubic join over a range, a quadratic one
    over a big range, or a chain of derived ranges."""
    k = draw(st.sampled_from([60, 100, 300, 1000, 5000]))
    if draw(st.integers(0, 4)) == 0:
        # many derivations of few atoms: the observer sees few rules (at k = 5,000, 25 million
        # joins for 10,000 atoms take 13 s); kept small so that each input stays short
        return draw(st.sampled_from(ASP_RULES)) + (f"n(1..{min(k, 1000)}).\nm(X + Y) :- n(X), "
                                                   "n(Y).\nbig(X, Y) :- m(X), m(Y).\n")
    shape = draw(st.sampled_from([
        "n(1..{k}).\nbig(X, Y, Z) :- n(X), n(Y), n(Z).\n",
        "n(1..{k}).\nbig(X, Y) :- n(X), n(Y).\n",
        "n(1..{k}).\n{{ big(X, Y) }} :- n(X), n(Y).\n",
    ]))
    return draw(st.sampled_from(ASP_RULES)) + shape.format(k=k)


#: valid labelling rules for the two-bit RS task the ASP inputs are run in
ASP_RULES = ["y(K, y, S \\ 2) :- ctx(K), S = #sum { X, T : c(K, T, X) }.\n"]


@st.composite
def asp_with_directives(draw) -> str:
    """ASP knowledge with ``#include``/``#script``/``#external``/``#program`` placed at random
    (start, end, after a comment, inside a rule's line)."""
    directive = draw(st.sampled_from([
        '#include "/etc/passwd".', '#include "k.lp".', "#include <incmode>.",
        '#include "../t.yaml".', "#script (python)\nimport os\nos.system('true')\n#end.",
        "#script (lua) os.exit(1) #end.", "#external e(1).", "#program step(t).",
        "#theory t { }.", "#heuristic y(K, y, 1) : ctx(K). [1, true]", "#edge (a, b).",
        "# include \"/etc/passwd\".", "#INCLUDE \"/etc/passwd\"."]))
    base = draw(st.sampled_from(ASP_RULES))
    where = draw(st.sampled_from(["start", "end", "comment", "block"]))
    if where == "start":
        return directive + "\n" + base
    if where == "end":
        return base + directive + "\n"
    if where == "comment":
        return base + "% a comment\n" + directive + "\n"
    return base + "%* block *%\n" + directive + "\n"


#: run functions a hostile spec may name: importable callables and modules with side effects
HOSTILE_FUNCTIONS = ["builtins:print", "this:x", "os:system", "subprocess:run", "builtins:exec",
                     "nesybench.cli:main", "nesybench.runs.demo:nope", " demo.toy",
                     "demo.toy:toy_cell", "runs.demo.toy", "__import__"]
#: a file that only a command run from a hostile spec would create (in the working folder)
CANARY = "NESYBENCH-FUZZ-CANARY"
#: ways a spec names a program: a shell learner, a command key, a learner's Prolog file
_CODE = [{"system": "cmd"}, {"system": "CMD "}, {"command": f"touch {CANARY}"},
         {"system": "cmd", "options": {"command": f"touch {CANARY}"}},
         {"system": "aleph", "options": {"aleph": f"{CANARY}.pl"}}, {"aleph": f"{CANARY}.pl"}]


@st.composite
def spec_naming_code(draw) -> dict:
    """A sweep spec that names code: a non-registered ``function``, or a registered one
    with a shell learner / learner Prolog file buried at some depth of its params or axes."""
    spec = {"study": "hostile", "function": "demo.toy", "axes": {"x": [1]}}
    if draw(st.booleans()):
        spec["function"] = draw(st.sampled_from(HOSTILE_FUNCTIONS))
        return spec
    spec["function"] = draw(st.sampled_from(["demo.toy", "rudas.learn", "kandy.aleph"]))
    node = draw(st.sampled_from(_CODE))
    for _ in range(draw(st.integers(0, 6))):
        node = draw(st.sampled_from([[node], {"learners": {"x": node}}, {"options": node},
                                     {"systems": [node]}]))
    if draw(st.booleans()):
        spec["params"] = {"payload": node}
    else:
        spec["axes"] = {"payload": [node]}
    return spec


def check_outcome(res: Outcome, *, ok=(0,), what: str = "") -> None:
    """The property: a success status, or 2 with exactly one stderr line."""
    assert "Traceback" not in res.err, f"{what}\n{res.err}"
    if res.rc in ok:
        return
    lines = res.err.strip().splitlines()
    assert res.rc == 2, f"{what}: exit {res.rc}\n{res.err}"
    assert len(lines) == 1 and lines[0].startswith("nesybench: error:"), f"{what}\n{res.err}"


def check_no_leftovers(folder: Path, keep: set[str]) -> None:
    left = sorted(p.name for p in folder.iterdir() if p.name not in keep)
    assert not left, f"left behind: {left}"


def save_failure(kind: str, text: str, suffix: str) -> Path:
    """Keep a failing input in the corpus (tests/data/fuzz/KIND/) so it is re-run forever."""
    import hashlib
    d = FUZZ_DIR / kind
    d.mkdir(parents=True, exist_ok=True)
    p = d / (hashlib.sha256(text.encode()).hexdigest()[:12] + suffix)
    p.write_text(text, encoding="utf-8")
    return p


def make_bddoia(folder: Path, sizes=(("train", 12), ("val", 4), ("test", 4)), seed: int = 0,
                labels=None) -> Path:
    """A tiny BDD-OIA copy in rsbench's layout (``{split}_BDD_OIA.pkl`` +
    ``{split}/{inputs,concepts,labels}/<frame>.pt``): random 2048-d features, random concepts
    and, by default, random actions (``labels(concepts) -> 4 actions`` replaces them)."""
    import pickle  # noqa: PLC0415

    import torch  # noqa: PLC0415
    g = torch.Generator().manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in sizes:
        index = []
        for k in ("inputs", "concepts", "labels"):
            (folder / split / k).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            name = f"{split}_{i:04d}.jpg"
            index.append({"img_path": name, "class_label": [0, 0, 0, 0]})
            c = torch.randint(0, 2, (1, 21), generator=g).float()
            a = torch.randint(0, 2, (1, 5), generator=g).float()
            if labels is not None:
                a[0, :4] = torch.tensor(labels(c[0].tolist()), dtype=torch.float32)
            a[0, 4] = 0
            torch.save(torch.randn(1, 2048, generator=g), folder / split / "inputs" / f"{name[:-4]}.pt")
            torch.save(c, folder / split / "concepts" / f"{name[:-4]}.pt")
            torch.save(a, folder / split / "labels" / f"{name[:-4]}.pt")
        (folder / f"{split}_BDD_OIA.pkl").write_bytes(pickle.dumps(index, protocol=4))
    return folder


def fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


# ------------------------------------------------------------------ the surface inventory
#: every place where outside input enters nesybench, and the fuzz cases that attack it.
#: Commands are named as typed (``"kandy generate"``), public loaders by their dotted name.
#: A surface's cases are hypothesis properties of tests/test_fuzz.py (``"property:NAME"``),
#: corpus folders of tests/data/fuzz/ run through the surface by ``test_corpus``
#: (``"corpus:KIND"``), and the files of tests/data/fuzz/surface/ whose ``surface`` field
#: names it (counted by tests/test_surface_inventory.py, which fails for a command or loader
#: without any). :data:`NO_INPUT` lists the commands that read nothing from outside.
SURFACES: dict[str, list[str]] = {
    "kandy validate": ["property:test_kandy_validate", "corpus:kandy"],
    "kandy generate": ["property:test_kandy_generate_leaves_nothing_on_failure",
                       "property:test_cli_option_values"],
    "kandy check": ["property:test_kandy_rules", "property:test_deep_terms", "corpus:rule"],
    "rs count": ["property:test_rs_task_files", "property:test_rs_asp_knowledge",
                 "property:test_huge_groundings", "property:test_asp_include_and_script",
                 "property:test_deep_terms", "property:test_cli_option_values", "corpus:rs",
                 "corpus:asp"],
    "rs metrics": ["property:test_rs_metrics_csv"],
    "rs import-bddoia": ["corpus:bddoia"],
    "rudas evaluate": ["property:test_rudas_learned_files", "property:test_deep_terms",
                       "property:test_rudas_function_symbols", "corpus:rudas"],
    "rudas chase": ["property:test_deep_terms", "property:test_rudas_function_symbols"],
    "rudas generate": ["property:test_cli_option_values", "property:test_hostile_out_folders"],
    "rudas experiment": ["corpus:experiment"],
    "runs start": ["property:test_specs_never_name_code", "corpus:spec"],
    "export": ["corpus:manifest", "corpus:rudas-folder"],
}

#: commands that read no outside input, with the reason
NO_INPUT: dict[str, str] = {
    "doctor": "reports the installation; reads no user file",
    "data list": "lists the package's own data registry and the cache",
    "irt families": "prints the built-in model families",
    "prolog": "starts swipl with the user's own arguments, as the user (an interactive "
              "shell by design: nothing of another party is read)",
}

#: the public loaders of the inventory, called by surface cases with ``call`` arguments;
#: each must refuse a hostile input with one :class:`~nesybench.errors.NesyError`
def _loader(dotted: str):
    def call(*args):
        import importlib  # noqa: PLC0415
        mod, _, attr = dotted.partition(":")
        obj = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj(*args)
    return call


LOADERS = {
    "nesybench.load": _loader("nesybench.data:load"),
    "nesybench.data.load_folder": _loader("nesybench.data:load_folder"),
    "CompiledProgram.from_program":
        _loader("nesybench.nesy.inference.circuit:CompiledProgram.from_program"),
    "SampledProgram.from_program": _loader("nesybench.nesy.inference.approx:SampledProgram.from_program"),
    "nesybench.rudas.learners.load_dataset": _loader("nesybench.rudas.learners:load_dataset"),
    "nesybench.rudas.learners.parse_rules": _loader("nesybench.rudas.learners:parse_rules"),
    "nesybench.rudas.experiment.load_experiment":
        _loader("nesybench.rudas.experiment:load_experiment"),
    "nesybench.shortcuts.task.load_task": _loader("nesybench.shortcuts.task:load_task"),
    "nesybench.shortcuts.generate.RSDataset":
        _loader("nesybench.shortcuts.generate:RSDataset"),
    "nesybench.shortcuts.metrics.read_predictions":
        _loader("nesybench.shortcuts.metrics:read_predictions"),
    "nesybench.kandy.language.load_curriculum":
        _loader("nesybench.kandy.language:load_curriculum"),
    "nesybench.kandy.reference.import_reference":
        _loader("nesybench.kandy.reference:import_reference"),
    "nesybench.kandy.learn.data.load_data": _loader("nesybench.kandy.learn.data:load_data"),
    "nesybench.kandy.ilp.task.load_task": _loader("nesybench.kandy.ilp.task:load_task"),
    "nesybench.nesy.learn.data.NesyData.from_folder":
        _loader("nesybench.nesy.learn.data:NesyData.from_folder"),
    "nesybench.ski.data.load": _loader("nesybench.ski.data:load"),
    "nesybench.irt.data.load_file": _loader("nesybench.irt.data:load_file"),
    "nesybench.irt.data.load_responses": _loader("nesybench.irt.data:load_responses"),
    "nesybench.runs.spec.load_spec": _loader("nesybench.runs.spec:load_spec"),
    "nesybench.irt.study.to_pandas": _loader("nesybench.irt.study:to_pandas"),
}

SURFACE_DIR = FUZZ_DIR / "surface"


def surface_cases() -> dict[str, list[Path]]:
    """The files of tests/data/fuzz/surface/ by the surface they attack."""
    out: dict[str, list[Path]] = {}
    for path in sorted(SURFACE_DIR.glob("*.json")):
        out.setdefault(json.loads(path.read_text(encoding="utf-8"))["surface"], []).append(path)
    return out


def _fill(value, names: dict[str, str]):
    if isinstance(value, str):
        for k, v in names.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [_fill(v, names) for v in value]
    return value


def lay_out_case(path: Path, d: Path, bases: dict[str, Path]) -> tuple[dict, dict]:
    """Lay out the files of the surface case ``path`` in the scratch folder ``d`` (the keys
    of :func:`run_surface_case`); returns the case and its placeholder values."""
    case = json.loads(path.read_text(encoding="utf-8"))
    names = {"d": str(d), "secret": str(SECRET), "root": str(ROOT)}
    for rel, base in case.get("copy", {}).items():
        shutil.copytree(bases[base], d / rel, symlinks=True)
    for rel, text in case.get("files", {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text(_fill(text, names), encoding="utf-8")
    for rel, (text, zeros) in case.get("gzip", {}).items():
        import gzip  # noqa: PLC0415
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(gzip.compress(_fill(text, names).encode("utf-8") + bytes(zeros)))
    for rel, data in case.get("bytes", {}).items():
        import base64  # noqa: PLC0415
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(base64.b64decode(data))
    for rel, study in case.get("studies", {}).items():
        make_study(d / rel, _fill_tree(study.get("spec", {}), names),
                   _fill_tree(study.get("cells", []), names))
    for rel, (key, entry) in case.get("json_pop", {}).items():
        obj = json.loads((d / rel).read_text(encoding="utf-8"))
        obj.get(key, {}).pop(entry, None)
        (d / rel).write_text(json.dumps(obj), encoding="utf-8")
    for rel, target in case.get("links", {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).unlink(missing_ok=True)
        (d / rel).symlink_to(_fill(target, names))
    for rel, target in case.get("hardlinks", {}).items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).unlink(missing_ok=True)
        os.link(_fill(target, names), d / rel)
    for rel in case.get("fifos", []):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).unlink(missing_ok=True)
        os.mkfifo(d / rel)
    return case, names


def _fill_tree(value, names: dict[str, str]):
    if isinstance(value, dict):
        return {k: _fill_tree(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_tree(v, names) for v in value]
    return _fill(value, names)


def make_study(folder: Path, spec: dict, cells: list[dict]) -> None:
    """A sweep study's ``results.sqlite`` in ``folder`` holding ``spec`` and the cell rows
    ``cells`` (``cell_id``, ``axes``, ``params``, ``status``, final ``metrics``) exactly as
    given (a forged cell id is written as it is)."""
    import sqlite3  # noqa: PLC0415

    from nesybench.runs.store import Store  # noqa: PLC0415
    Store.create(folder, spec, "0" * 16, str(spec.get("study", "study"))).close()
    conn = sqlite3.connect(str(folder / "results.sqlite"), isolation_level=None)
    try:
        for i, c in enumerate(cells):
            conn.execute("INSERT INTO cells (cell_id, params, axes, rep, seed, status) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (c["cell_id"], json.dumps(c.get("params", {})),
                          json.dumps(c.get("axes", {})), 0, i, c.get("status", "done")))
            for name, value in (c.get("metrics") or {}).items():
                conn.execute("INSERT INTO metrics VALUES (?, ?, NULL, ?)",
                             (c["cell_id"], name, value))
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()


def run_surface_case(path: Path, d: Path, bases: dict[str, Path]) -> None:
    """One hostile case of tests/data/fuzz/surface/ (a JSON record):

    ``copy`` {REL: BASE} copies a prepared folder (``rudas_ds``: a generated RuDaS data set,
    ``rs_ds``: a generated RS data set) to ``d/REL``; ``files`` {REL: TEXT} writes files;
    ``gzip`` {REL: [TEXT, N]} writes TEXT followed by N zero bytes, gzip-compressed (a
    small file that decompresses to N bytes); ``bytes`` {REL: BASE64} writes binary files
    (a hostile ``.npz``, a picture); ``studies`` {REL: {spec, cells}} writes a sweep study's
    ``results.sqlite`` (:func:`make_study`: a forged cell id as it is); ``json_pop`` {REL:
    [KEY, ENTRY]} removes ENTRY from the object KEY of a JSON file (a checksum taken out of
    a manifest);
    ``links`` {REL: TARGET} makes symbolic links, ``hardlinks`` {REL: TARGET} hard links,
    ``fifos`` [REL, ...] FIFOs;
    ``unchanged`` [REL, ...] names folders that must be left exactly as they were; then
    ``args`` runs the command (exit status in ``ok``, default ``[2]``, one line)
    or ``call`` calls the loader ``surface`` of :data:`LOADERS` (it must raise one
    NesyError); ``says`` is text the error must hold (the refusal is the one meant).
    Placeholders: ``{d}`` (the scratch folder), ``{secret}`` (:data:`SECRET`),
    ``{root}`` (the repository). Nothing may open the secret, print it or leave ``d/o``
    behind after a refusal. tests/test_door_monitor.py runs the cases as processes of their
    own under strace (every file opened, natively included); for it, ``named_inputs`` [PATH,
    ...] are files named on the command line (read wherever a link to them points) and
    ``progress_lines`` allows the stage lines a build script prints before the error line."""
    from nesybench.errors import NesyError  # noqa: PLC0415
    case, names = lay_out_case(path, d, bases)
    unchanged = {rel: _snapshot(d / rel) for rel in case.get("unchanged", [])}
    before = STATS["outside_reads"]
    _WATCH["seen"] = []
    what = f"{path.name} ({case['surface']})"
    if "args" in case:
        res = run_cli(_fill(case["args"], names))
        check_outcome(res, ok=tuple(case.get("ok", [2])), what=what)
        assert res.rc in case.get("ok", [2]), f"{what}: exit {res.rc}\n{res.err}"
        printed = res.out + res.err
    else:
        STATS["inputs"] += 1
        with watched():
            try:
                LOADERS[case["surface"]](*_fill(case["call"], names))
            except NesyError as exc:
                printed = str(exc)
                assert "\n" not in printed.strip(), f"{what}: {printed}"
            else:
                raise AssertionError(f"{what}: accepted")
    if "says" in case:
        assert _fill(case["says"], names) in printed, f"{what}: not the refusal meant: {printed}"
    assert STATS["outside_reads"] == before, f"{what}: read {_WATCH.get('seen')}"
    assert "NESYBENCH-SECRET" not in printed, f"{what}: printed the secret"
    if case.get("ok", [2]) == [2]:
        assert not (d / "o").exists(), f"{what}: wrote {d / 'o'}"
    for rel, before in unchanged.items():
        assert _snapshot(d / rel) == before, f"{what}: changed {rel}"


def _snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry below ``folder``: its kind, size, mtime and bytes' SHA-256."""
    import hashlib  # noqa: PLC0415
    out = {}
    for p in sorted(folder.rglob("*")):
        st = os.lstat(p)
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and \
            not p.is_symlink() else None
        out[p.relative_to(folder).as_posix()] = (st.st_mode, st.st_size, st.st_mtime_ns,
                                                 digest)
    return out


__all__ = ["KANDY_KEYS", "RS_KEYS", "mutated_yaml", "mutated_text", "run_cli", "check_outcome",
           "check_no_leftovers", "save_failure", "fresh", "make_bddoia", "ROOT", "FUZZ_DIR", "random",
           "deep_term", "deep_body", "function_symbol_rules", "huge_grounding",
           "asp_with_directives", "STATS", "spec_naming_code", "HOSTILE_FUNCTIONS", "CANARY",
           "SURFACES", "NO_INPUT", "LOADERS", "SURFACE_DIR", "surface_cases", "run_surface_case",
           "lay_out_case", "make_study",
           "SECRET", "SECRETS", "watched"]
