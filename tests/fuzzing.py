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
           "sample", "seed", "prop_in_dist", "file", "samples", "render", "train"]

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


#: what the fuzz run reports: CLI calls made and the process's peak RSS (KiB) after each
STATS = {"inputs": 0, "peak_rss_kib": 0}


def _write_stats() -> None:
    path = os.environ.get("NESYBENCH_FUZZ_STATS")
    if path:
        Path(path).write_text(json.dumps(STATS), encoding="utf-8")


atexit.register(_write_stats)


def run_cli(args: list[str]) -> Outcome:
    """Run the CLI in-process, capturing stdout/stderr (no exception may escape)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli_main([str(a) for a in args])
    STATS["inputs"] += 1
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


__all__ = ["KANDY_KEYS", "RS_KEYS", "mutated_yaml", "mutated_text", "run_cli", "check_outcome",
           "check_no_leftovers", "save_failure", "fresh", "make_bddoia", "ROOT", "FUZZ_DIR", "random",
           "deep_term", "deep_body", "function_symbol_rules", "huge_grounding",
           "asp_with_directives", "STATS", "spec_naming_code", "HOSTILE_FUNCTIONS", "CANARY"]
