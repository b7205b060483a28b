"""Property-based tests (hypothesis) for every parser and the CLI entry points.

Random and mutated KANDY curricula, RS task files, ASP knowledge, Prolog rules, RuDaS learned
programs, prediction CSVs and CLI option values must give exit 0 (or a documented status) or
exit 2 with exactly one stderr line, within the deadline, leaving no output behind. The
examples are derandomized and few (CI); `benchmarks/fuzz.py` runs thousands. Inputs that
once failed are kept in tests/data/fuzz/<kind>/ and re-run by test_corpus.
"""
from __future__ import annotations

import datetime
import glob
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzing import (CANARY, FUZZ_DIR, KANDY_KEYS, ROOT, RS_KEYS, asp_with_directives,
                     check_no_leftovers, check_outcome, deep_body, deep_term, fresh, make_bddoia,
                     function_symbol_rules, huge_grounding, mutated_text, mutated_yaml, run_cli,
                     run_surface_case, spec_naming_code)

#: benchmarks/fuzz.py sets NESYBENCH_FUZZ_SCALE (examples x scale, random instead of the fixed
#: CI examples) and NESYBENCH_FUZZ_SAVE (keep the last failing input of each test in the corpus)
SCALE = int(os.environ.get("NESYBENCH_FUZZ_SCALE", "0") or 0)
SETTINGS = dict(derandomize=not SCALE, database=None, deadline=datetime.timedelta(seconds=30),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def examples(n: int) -> int:
    return n * SCALE if SCALE else n


def keep(kind: str, suffix: str, text: str):
    """Context: on a failed property, save ``text`` as tests/data/fuzz/KIND/last-failure*
    (overwritten while hypothesis shrinks, so the shrunk input remains) when asked to."""
    import contextlib

    @contextlib.contextmanager
    def _keep():
        try:
            yield
        except AssertionError:
            if os.environ.get("NESYBENCH_FUZZ_SAVE"):
                d = FUZZ_DIR / kind
                d.mkdir(parents=True, exist_ok=True)
                (d / f"last-failure{suffix}").write_text(text, encoding="utf-8")
            raise
    return _keep()
KANDY_SEEDS = [ROOT / "tests/data/reference_style.yaml", ROOT / "curricula/kandy/easy.yaml"]
RS_SEEDS = [Path(p) for p in sorted(glob.glob(str(ROOT / "curricula/rs/*.yaml")))
            if "kandinsky" not in p and "driving" not in p and "cle4evr_range" not in p]
RULE_SEEDS = [Path(p).read_text() for p in sorted(glob.glob(str(ROOT / "kb/kandy/rules/easy/t1*.pl")))]
ASP_SEEDS = [(ROOT / "kb/shortcuts/xor.lp").read_text()]
SAMPLE = "side_by_side([stack([triangle_red_small, square_red_small])])"

_scratch = Path(tempfile.mkdtemp(prefix="nesybench-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_scratch():
    yield
    import shutil
    shutil.rmtree(_scratch, ignore_errors=True)


def _dir(name: str) -> Path:
    return fresh(_scratch / name)


@settings(max_examples=examples(15), **SETTINGS)
@given(mutated_yaml(KANDY_SEEDS, KANDY_KEYS))
def test_kandy_validate(text):
    d = _dir("kv")
    (d / "c.yaml").write_text(text, encoding="utf-8")
    with keep("kandy", ".yaml", text):
        check_outcome(run_cli(["kandy", "validate", d / "c.yaml"]), what=text[:2000])


@settings(max_examples=examples(8), **SETTINGS)
@given(mutated_yaml([ROOT / "tests/data/reference_style.yaml"], KANDY_KEYS))
def test_kandy_generate_leaves_nothing_on_failure(text):
    d = _dir("kg")
    (d / "c.yaml").write_text(text, encoding="utf-8")
    res = run_cli(["kandy", "generate", d / "c.yaml", "--out", d / "o", "--no-images",
                   "--samples", "4", "-j", "1", "-q"])
    check_outcome(res, what=text[:2000])
    if res.rc != 0:
        check_no_leftovers(d, {"c.yaml"})


@settings(max_examples=examples(20), **SETTINGS)
@given(mutated_yaml(RS_SEEDS, RS_KEYS))
def test_rs_task_files(text):
    d = _dir("rs")
    (d / "t.yaml").write_text(text, encoding="utf-8")
    with keep("rs", ".yaml", text):
        check_outcome(run_cli(["rs", "count", d / "t.yaml"]), what=text[:2000])


@settings(max_examples=examples(20), **SETTINGS)
@given(mutated_text(ASP_SEEDS))
def test_rs_asp_knowledge(text):
    d = _dir("asp")
    (d / "k.lp").write_text(text, encoding="utf-8")
    (d / "t.yaml").write_text(f"name: t\nconcepts: [{{name: b, count: 2, domain: [0, 1]}}]\n"
                              f"knowledge: {d / 'k.lp'}\n")
    with keep("asp", ".lp", text):
        check_outcome(run_cli(["rs", "count", d / "t.yaml"]), what=text[:2000])


@settings(max_examples=examples(20), **SETTINGS)
@given(mutated_text(RULE_SEEDS), st.sampled_from([SAMPLE, "in([circle_red_small])", "x", "[]"]))
def test_kandy_rules(text, sample):
    d = _dir("rule")
    (d / "r.pl").write_text(text, encoding="utf-8")
    with keep("rule", ".pl", text):
        check_outcome(run_cli(["kandy", "check", d / "r.pl", sample]), ok=(0, 1),
                      what=text[:2000])


@pytest.fixture(scope="module")
def rudas_ds():
    d = _scratch / "rudas-ds"
    if not d.exists():
        assert run_cli(["rudas", "generate", "--out", d, "--seed", "3"]).rc == 0
    return d


@pytest.fixture(scope="module")
def rs_ds():
    d = _scratch / "rs-ds"
    if not d.exists():
        assert run_cli(["rs", "generate", ROOT / "curricula/rs/xor.yaml", "--out", d,
                        "--samples", "6", "-q"]).rc == 0
    return d


@settings(max_examples=examples(15), **SETTINGS)
@given(data=st.data())
def test_rudas_learned_files(rudas_ds, data):
    rules = (rudas_ds / "rules.txt").read_text()
    text = data.draw(mutated_text([rules, "0.5::" + rules.splitlines()[0] + "\n"]))
    d = _dir("rl")
    (d / "l.pl").write_text(text, encoding="utf-8")
    with keep("rudas", ".pl", text):
        check_outcome(run_cli(["rudas", "evaluate", rudas_ds, d / "l.pl", "--time-limit", "5"]),
                      what=text[:2000])


@settings(max_examples=examples(20), **SETTINGS)
@given(st.lists(st.lists(st.sampled_from(["0", "1", "2", "x", "", "-1", "9"]), min_size=0,
                         max_size=5), max_size=6),
       st.sampled_from(["", "digit=d(1)", "digit=d(1),d(2)", "bad", "=", "g=", "digit=d(9)"]))
def test_rs_metrics_csv(rows, shared):
    d = _dir("met")
    header = "label:y,pred_label:y,concept:d(1),pred_concept:d(1)"
    (d / "p.csv").write_text(header + "\n" + "\n".join(",".join(r) for r in rows) + "\n")
    args = ["rs", "metrics", d / "p.csv", "--out", d / "o"] + (["--shared", shared] if shared else [])
    res = run_cli(args)
    check_outcome(res, what=f"{rows} {shared}")
    if res.rc != 0:
        check_no_leftovers(d, {"p.csv"})


ASP_TASK = "name: t\nconcepts: [{{name: b, count: 2, domain: [0, 1]}}]\nknowledge: {lp}\n"


@settings(max_examples=examples(12), **SETTINGS)
@given(st.sampled_from(["kandy", "rudas-evaluate", "rudas-chase", "asp"]), deep_term(),
       deep_body())
def test_deep_terms(rudas_ds, where, term, body):
    """Terms nested far past the readers' bound, anywhere a user file holds a term."""
    d = _dir("deep")
    if where == "kandy":
        text = f"valid(X) :- member(T, X), T = {term}.\nvalid(X) :- {body}.\n"
        (d / "r.pl").write_text(text)
        res, ok = run_cli(["kandy", "check", d / "r.pl", SAMPLE]), (0, 1)
    elif where.startswith("rudas"):
        text = f"p1(X, Y) :- p2(X, {term}).\np0(X, Y) :- {body}.\n"
        (d / "l.pl").write_text(text)
        if where == "rudas-evaluate":
            res = run_cli(["rudas", "evaluate", rudas_ds, d / "l.pl", "--time-limit", "5"])
        else:
            res = run_cli(["rudas", "chase", d / "l.pl", rudas_ds / "train.txt",
                           "--time-limit", "5"])
        ok = (0,)
    else:
        text = f"y(K, y, 0) :- ctx(K), X = {term}.\n"
        (d / "k.lp").write_text(text)
        (d / "t.yaml").write_text(ASP_TASK.format(lp=d / "k.lp"))
        res, ok = run_cli(["rs", "count", d / "t.yaml", "--time-limit", "10"]), (0,)
    with keep("deep", ".txt", text):
        check_outcome(res, ok=ok, what=f"{where}: {text[:200]}")


@settings(max_examples=examples(6), **SETTINGS)
@given(huge_grounding())
def test_huge_groundings(text):
    """Knowledge that grounds to millions of atoms: a one-line budget error, never a
    MemoryError (a small --max-ground-atoms keeps each input short)."""
    d = _dir("ground")
    (d / "k.lp").write_text(text)
    (d / "t.yaml").write_text(ASP_TASK.format(lp=d / "k.lp"))
    res = run_cli(["rs", "count", d / "t.yaml", "--max-ground-atoms", "50000",
                   "--time-limit", "20"])
    with keep("asp", ".lp", text):
        check_outcome(res, what=text)
        if res.rc == 2:
            assert "ground" in res.err or "time" in res.err, res.err


@settings(max_examples=examples(10), **SETTINGS)
@given(function_symbol_rules(), st.sampled_from(["evaluate", "chase"]))
def test_rudas_function_symbols(rudas_ds, text, command):
    """Rules with function symbols are refused by the datalog check (the chase could not
    end), in every RuDaS entry point."""
    d = _dir("fsym")
    (d / "l.pl").write_text(text)
    if command == "evaluate":
        res = run_cli(["rudas", "evaluate", rudas_ds, d / "l.pl", "--time-limit", "5"])
    else:
        res = run_cli(["rudas", "chase", d / "l.pl", rudas_ds / "train.txt", "--time-limit", "5"])
    with keep("rudas", ".pl", text):
        check_outcome(res, what=text)
        assert res.rc == 2, f"{text}: accepted\n{res.out[:500]}"


@settings(max_examples=examples(10), **SETTINGS)
@given(asp_with_directives())
def test_asp_include_and_script(text):
    """``#include``, ``#script`` and the other refused directives: one line naming the file
    and line; an included file is never read (its contents never appear)."""
    d = _dir("incl")
    (d / "k.lp").write_text(text)
    (d / "t.yaml").write_text(ASP_TASK.format(lp=d / "k.lp"))
    res = run_cli(["rs", "count", d / "t.yaml"])
    with keep("asp", ".lp", text):
        check_outcome(res, what=text)
        assert res.rc == 2, f"{text}: accepted"
        assert "root:" not in res.err and "concepts" not in res.err, res.err


OPTION_CASES = [
    (["kandy", "generate", ROOT / "tests/data/reference_style.yaml", "--no-images", "-q",
      "-j", "1", "--samples", "4"], ["--tasks", "--seed", "--samples", "--workers"]),
    (["rs", "count", ROOT / "curricula/rs/xor.yaml"], ["--list", "--seed", "--supervised",
                                                        "--map", "--maps"]),
    (["rudas", "generate"], ["--depth", "--n-ow", "--size", "--seed", "--max-body"]),
]


@settings(max_examples=examples(20), **SETTINGS)
@given(st.sampled_from(OPTION_CASES), st.data())
def test_cli_option_values(case, data):
    base, options = case
    opt = data.draw(st.sampled_from(options))
    val = data.draw(st.sampled_from(["", "-1", "0", "5-3", "abc", "1.5", " , ", "2",
                                     "100000000", "b(1)", "0-0", "nan"]))
    d = _dir("opt")
    args = [*base, opt, val]
    if base[0] in ("kandy",) or base[:2] == ["rudas", "generate"]:
        args += ["--out", d / "o"]
    res = run_cli(args)
    check_outcome(res, what=" ".join(map(str, args)))
    if res.rc != 0:
        check_no_leftovers(d, set())


def _refused_without_running(res, spec_text: str, out: Path) -> None:
    """A spec that names code: exit 2 with one line, no study folder, no command run."""
    check_outcome(res, what=spec_text)
    assert res.rc == 2, f"{spec_text}: accepted"
    assert not out.exists(), f"{spec_text}: wrote {out}"
    assert not Path(CANARY).exists(), f"{spec_text}: a command ran"


@settings(max_examples=examples(25), **SETTINGS)
@given(spec_naming_code())
def test_specs_never_name_code(spec):
    """A sweep spec naming an unregistered function or holding a shell learner / learner
    Prolog file at any depth: refused (without --allow-commands) before anything runs."""
    import yaml  # noqa: PLC0415
    d = _dir("spec")
    text = yaml.safe_dump(spec)
    (d / "s.yaml").write_text(text)
    res = run_cli(["runs", "start", d / "s.yaml", "--out", d / "o", "-e", "inline", "-q"])
    with keep("spec", ".yaml", text):
        _refused_without_running(res, text, d / "o")


OUT_CASES = ["user-file", "user-folder", "edited-file", "symlink", "dangling-symlink",
             "long-name", "long-parent"]


@settings(max_examples=examples(8), **SETTINGS)
@given(st.sampled_from(OUT_CASES), st.booleans())
def test_hostile_out_folders(case, overwrite):
    """--out over a user's files, through a link or with an over-long name: exit 2 with one
    line, and nothing of the user's deleted or created at a link's target."""
    d = _dir("out")
    out = d / "o"
    gen = ["rudas", "generate", "--size", "xs", "--seed", "1", "-q"]
    assert run_cli([*gen, "--out", out]).rc == 0
    keep_file = None
    if case == "user-file":
        keep_file = out / "NOTES.md"
    elif case == "user-folder":
        (out / "mywork").mkdir()
        keep_file = out / "mywork" / "a.txt"
    elif case == "edited-file":
        keep_file = out / "train.txt"
    if keep_file is not None:
        keep_file.write_text("mine")
    target = out
    if case in ("symlink", "dangling-symlink"):
        target = d / "link"
        target.symlink_to(out if case == "symlink" else d / "nowhere")
    elif case == "long-name":
        target = d / ("n" * 300)
    elif case == "long-parent":
        target = d / ("p" * 256) / "o"
    args = [*gen, "--out", target] + (["--overwrite"] if overwrite else [])
    res = run_cli(args)
    check_outcome(res, what=f"{case} {overwrite}")
    assert res.rc == 2, f"{case}: accepted"
    if keep_file is not None:
        assert keep_file.read_text() == "mine"
    assert not (d / "nowhere").exists()


CORPUS = sorted(p for p in FUZZ_DIR.rglob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", CORPUS, ids=[str(p.relative_to(FUZZ_DIR)) for p in CORPUS])
def test_corpus(path, rudas_ds, rs_ds):
    """Shrunk failures found by fuzzing, re-run as plain regression tests."""
    kind = path.parent.name
    d = _dir("corpus")
    if kind == "kandy":
        check_outcome(run_cli(["kandy", "validate", path]))
    elif kind == "rs":
        check_outcome(run_cli(["rs", "count", path]))
    elif kind == "rule":
        check_outcome(run_cli(["kandy", "check", path, SAMPLE]), ok=(0, 1))
    elif kind == "rudas":
        check_outcome(run_cli(["rudas", "evaluate", rudas_ds, path, "--time-limit", "5"]))
    elif kind == "deep":
        text = path.read_text()
        if text.startswith("valid("):
            check_outcome(run_cli(["kandy", "check", path, SAMPLE]), ok=(0, 1))
        elif text.startswith("p1("):
            check_outcome(run_cli(["rudas", "evaluate", rudas_ds, path, "--time-limit", "5"]))
        else:
            # knowledge is a file beside the task file (or a shipped name)
            (d / "k.lp").write_bytes(path.read_bytes())
            (d / "t.yaml").write_text(ASP_TASK.format(lp="k.lp"))
            check_outcome(run_cli(["rs", "count", d / "t.yaml"]))
    elif kind == "asp":
        (d / "k.lp").write_bytes(path.read_bytes())
        (d / "t.yaml").write_text(f"name: t\nconcepts: [{{name: b, count: 2, domain: [0, 1]}}]\n"
                                  f"knowledge: k.lp\n")
        check_outcome(run_cli(["rs", "count", d / "t.yaml"]))
    elif kind == "spec":
        res = run_cli(["runs", "start", path, "--out", d / "o", "-e", "inline", "-q"])
        _refused_without_running(res, path.name, d / "o")
    elif kind == "experiment":
        res = run_cli(["rudas", "experiment", path, "--out", d / "o", "-j", "0", "-q"])
        _refused_without_running(res, path.name, d / "o")
    elif kind in ("rudas-folder", "manifest"):
        # a hostile edit of a generated RuDaS folder: export refuses it with one line and
        # writes nothing (rudas-folder/*: a train.txt; manifest/*: fields merged into the
        # manifest)
        import json  # noqa: PLC0415
        import shutil  # noqa: PLC0415
        ds = d / "ds"
        shutil.copytree(rudas_ds, ds)
        man = json.loads((ds / "manifest.json").read_text())
        if kind == "rudas-folder":
            (ds / "train.txt").write_bytes(path.read_bytes())
            man["files"].pop("train.txt", None)
        else:
            man.update(json.loads(path.read_text()))
        (ds / "manifest.json").write_text(json.dumps(man))
        res = run_cli(["export", ds, "--format", "parquet", "--out", d / "o", "-q"])
        check_outcome(res, what=path.name)
        assert res.rc == 2 and not (d / "o").exists(), f"{path.name}: exported"
    elif kind == "bddoia":
        # a hostile file in a user's BDD-OIA copy: index-* replaces the train split's frame
        # index, inputs-/concepts-/labels-* its first frame's tensor file; the import refuses
        # the copy with one line, writes nothing and unpickles no code
        import shutil  # noqa: PLC0415
        src = make_bddoia(d / "bdd", sizes=(("train", 2), ("val", 1)))
        part = path.name.split("-", 1)[0]
        target = (src / "train_BDD_OIA.pkl" if part == "index"
                  else src / "train" / part / "train_0000.pt")
        shutil.copyfile(path, target)
        canary = Path("/tmp/nesybench-bddoia-canary")
        res = run_cli(["rs", "import-bddoia", src, "--out", d / "o"])
        check_outcome(res, what=path.name)
        assert res.rc == 2 and not (d / "o").exists(), f"{path.name}: imported"
        assert not canary.exists(), f"{path.name}: unpickled code ran"
    elif kind == "surface":
        run_surface_case(path, d, {"rudas_ds": rudas_ds, "rs_ds": rs_ds})
    else:
        pytest.fail(f"unknown corpus kind {kind}")
