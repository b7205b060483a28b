"""KANDY ILP export (Aleph files, natural/pointer x minimal/mid) and theory evaluation."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nesybench.errors import NesyError, UnsafeRuleError
from nesybench.kandy import ilp
from nesybench.kandy.symbols import from_json, from_prolog

ROOT = Path(__file__).resolve().parents[1]

# Task 15 (Easy): "contains a house"; task 0 (Hard): a child with two children of one colour.
SAMPLES = {
    15: {
        "train": [
            ("side_by_side([stack([triangle_red_small, square_blue_small]), circle_red_large])", 1),
            ("side_by_side([stack([square_blue_small, triangle_red_small]), circle_red_large])", 0),
            ("stack([stack([triangle_green_large, square_green_large])])", 1),
            ("stack([triangle_red_small, square_red_small])", 0),
            ("grid([circle_blue_small, stack([triangle_red_small, square_red_small]), square_red_large])", 1),
            ("side_by_side([stack([triangle_red_small, square_red_large])])", 0),
            ("in([stack([triangle_cyan_large, square_yellow_large])])", 1),
            ("circle_red_small", 0),
        ],
        "test": [
            ("side_by_side([stack([triangle_blue_large, square_blue_large]), circle_green_small])", 1),
            ("side_by_side([triangle_red_small, square_red_small])", 0),
            ("stack([stack([triangle_red_small, square_green_small]), square_red_small])", 1),
            ("stack([circle_red_small, square_red_small])", 0),
            ("grid([square_red_small, square_blue_small, circle_green_large])", 0),
            ("quadrant_ul([stack([triangle_magenta_small, square_magenta_small])])", 1),
            ("side_by_side([stack([square_red_small, triangle_red_small])])", 0),
            ("circle_red_small", 0),
        ],
    },
    0: {
        "train": [
            ("side_by_side([stack([circle_red_small, square_red_large]), circle_blue_small])", 1),
            ("side_by_side([stack([circle_red_small, square_blue_large])])", 0),
            ("diag_ul_lr([side_by_side([triangle_green_small, triangle_green_large]), stack([square_red_small])])", 1),
            ("stack([circle_red_small, circle_red_small])", 0),
            ("grid([stack([square_cyan_small, circle_cyan_small]), stack([square_red_small])])", 1),
            ("side_by_side([stack([circle_red_small, circle_red_small, circle_red_small])])", 0),
        ],
        "test": [
            ("stack([side_by_side([circle_blue_small, circle_blue_large])])", 1),
            ("stack([side_by_side([circle_blue_small, circle_red_large])])", 0),
        ],
    },
}
RULES = {15: ROOT / "kb/kandy/rules/easy/t15.pl", 0: ROOT / "kb/kandy/rules/hard/t00.pl"}
COMBOS = [(e, k) for e in ilp.ENCODINGS for k in ilp.KBS]


def _swipl() -> str:
    local = ROOT / ".deps" / "swipl" / "bin" / "swipl"
    if local.exists():
        return str(local)
    found = shutil.which("swipl")
    if not found:
        pytest.skip("no swipl binary")
    return found


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A tiny dataset folder in the on-disk format of docs/formats/kandy-dataset.md (no images)."""
    d = tmp_path_factory.mktemp("kandy") / "ds"
    (d / "rules").mkdir(parents=True)
    tasks = []
    for tid, rule in RULES.items():
        shutil.copy(rule, d / "rules" / f"{tid:02d}.pl")
        tasks.append({"id": tid, "name": f"task{tid}", "rule_file": f"rules/{tid:02d}.pl"})
    for split in ("train", "val", "test"):
        (d / split).mkdir()
        with open(d / split / "annotations.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["filename", "task_id", "label", "supervised", "symbol", "prolog"])
            for tid in sorted(SAMPLES):
                for i, (text, label) in enumerate(SAMPLES[tid].get(split, [])):
                    sym = from_prolog(text)
                    w.writerow([f"{tid:02d}/{i:05d}.png", tid, label, 1,
                                json.dumps(sym.to_json(), separators=(",", ":")), text])
    (d / "manifest.json").write_text(json.dumps({"format": "nesybench-kandy", "version": "1.0",
                                                 "tasks": tasks}))
    return d


HOUSE = ("house(C) :- extract_op_and_chld(C, stack, [C1, C2]), extract_shape(C1, triangle),"
         " extract_shape(C2, square), same_size(_, [C1, C2]).\n")


def _check_script(stem: Path, rule: Path, encoding: str, kb: str) -> str:
    """Plain SWI-Prolog (no Aleph): stub Aleph's directives, consult the export and the
    ground-truth rule, and print every example whose classification disagrees."""
    rule_text = rule.read_text()
    if kb != "large" and "house(" in rule_text:
        rule_text += HOUSE     # a large-KB predicate, defined here with minimal-KB ones
    if encoding == "pointer":
        rule_text = re.sub(r"(?m)^valid\(", "nat_valid(", rule_text)
        rule_text += "\nvalid(S) :- sample_is(S, C), nat_valid(C).\n"
    gt = stem.parent / "gt_rule.pl"
    gt.write_text(rule_text)
    return f"""
set(_, _). modeh(_, _). modeb(_, _). determination(_, _).
ex(File, E) :- setup_call_cleanup(open(File, read, S), (repeat, read(S, T),
    (T == end_of_file -> !, fail ; E = T)), close(S)).
bad(pos, E) :- \\+ call(E).
bad(neg, E) :- call(E).
main :-
    consult('{stem}.b'), consult('{gt}'),
    forall(ex('{stem}.f', E), (bad(pos, E) -> format("BAD f ~q~n", [E]) ; true)),
    forall(ex('{stem}.n', E), (bad(neg, E) -> format("BAD n ~q~n", [E]) ; true)),
    aggregate_all(count, ex('{stem}.f', _), NF), aggregate_all(count, ex('{stem}.n', _), NN),
    consult('{stem}_test.pl'),
    forall(pos(E), (bad(pos, E) -> format("BAD tp ~q~n", [E]) ; true)),
    forall(neg(E), (bad(neg, E) -> format("BAD tn ~q~n", [E]) ; true)),
    aggregate_all(count, pos(_), TP), aggregate_all(count, neg(_), TN),
    format("COUNTS ~w ~w ~w ~w~n", [NF, NN, TP, TN]).
:- initialization(main, main).
"""


@pytest.mark.parametrize("encoding,kb", COMBOS)
def test_export_classifies_like_ground_truth(dataset, tmp_path, encoding, kb):
    """Strong property: the exported BK + the ground-truth rule (rewritten with sample_is/2
    for the pointer encoding) classify every exported train and test example correctly."""
    for tid in (15, 0):
        out = tmp_path / f"t{tid}"
        stem = ilp.export_task(dataset, tid, out, encoding=encoding, kb=kb)
        assert stem == out.resolve() / f"t{tid:02d}"
        script = out / "check.pl"
        script.write_text(_check_script(stem, RULES[tid], encoding, kb))
        res = subprocess.run([_swipl(), "-q", str(script)], capture_output=True, text=True,
                             timeout=60)
        assert res.returncode == 0, res.stderr
        assert "BAD" not in res.stdout, res.stdout
        assert "Warning" not in res.stderr and "ERROR" not in res.stderr, res.stderr
        tr, te = SAMPLES[tid]["train"], SAMPLES[tid]["test"]
        counts = [sum(l == 1 for _, l in tr), sum(l == 0 for _, l in tr),
                  sum(l == 1 for _, l in te), sum(l == 0 for _, l in te)]
        assert f"COUNTS {' '.join(map(str, counts))}" in res.stdout


def test_natural_export_content(dataset, tmp_path):
    stem = ilp.export_task(dataset, 15, tmp_path / "x", encoding="natural", kb="minimal")
    b = Path(f"{stem}.b").read_text()
    assert ":- modeh(1, valid(+obj))." in b
    assert ":- modeb(*, contains(+obj, -obj))." in b
    assert ":- determination(valid/1, contains/2)." in b
    assert ":- determination(valid/1, length/2)." in b and b.count("determination(valid/1, length/2)") == 1
    assert ":- set(nodes, 20000)." in b and ":- set(minacc, 0.5)." in b
    assert "house(" not in b          # minimal KB has no named objects
    pos = Path(f"{stem}.f").read_text().splitlines()
    neg = Path(f"{stem}.n").read_text().splitlines()
    assert pos == [f"valid({t})." for t, l in SAMPLES[15]["train"] if l == 1]
    assert neg == [f"valid({t})." for t, l in SAMPLES[15]["train"] if l == 0]
    assert ":- set(newvars, 12)." in b      # max_vars, supplementary Table 4 (NAT)
    mid = Path(f"{ilp.export_task(dataset, 15, tmp_path / 'y', kb='mid')}.b").read_text()
    assert "house(C) :-" not in mid and "modeb(1, house" not in mid   # cheat: LARGE only
    assert "is_named_object(C" not in mid and "non_diag(stack)" not in mid
    large = Path(f"{ilp.export_task(dataset, 15, tmp_path / 'z', kb='large')}.b").read_text()
    assert ":- modeb(1, house(+obj))." in large
    assert ":- determination(valid/1, pseudo_palindrome2/1)." in large
    ptr = Path(f"{ilp.export_task(dataset, 15, tmp_path / 'w', encoding='pointer')}.b").read_text()
    assert ":- set(newvars, 6)." in ptr     # PTR value of Table 4
    no = Path(f"{ilp.export_task(dataset, 15, tmp_path / 'v', settings={'newvars': None})}.b")
    assert "newvars" not in no.read_text()


# The paper's MID KB (main text §4 "Symbolic models": "the MID-size KB contains 39
# predicates"): the clauses the supplementary §4.5 listing defines after its domain definitions,
# without the named objects (which §4.5.2 lists as cheat predicates of the LARGE KB).
PAPER_MID_39 = """shape_props/4 extract_shape/2 extract_color/2 extract_size/2 exists_shape/2
same_shape/2 exists_color/2 same_color/2 exists_size/2 same_size/2 contains/2
recursive_contains/2 recursive_contains2/3 contains_composition/2 contains_composition_depth/3
extract_operator/2 extract_children/2 extract_op_and_chld/3 same_attribute/1 same_non_size/1
all_same/2 expand2/3 expand4/5 expand8/9 expand9/10 odd/1 even/1 first/2 last/2 prepend/3
droplast/2 middle/2 getmiddle/2 dropmiddle/2 less_eq/2 less/2 greater/2 same/2
different/2""".split()
CHEAT = """house/1 car/1 tower/1 wagon/1 traffic_light/1 is_named_object/2 symmetric_list/1
forall_shared_shape/2 forall_shared_color/2 forall_shared_named_obj/2 pseudo_palindrome/1
pseudo_palindrome2/1""".split()
BUILTINS_MID = ["atom/1", "reverse/2", "length/2", "delete/3", "nth0/3", "member/2"]


def _defined(encoding: str, kb: str) -> set[str]:
    from nesybench.logic import prolog
    prolog.use("prolog/kandy_ilp.pl")
    m = prolog.once("kandy_ilp:ilp_bk_module(E, K, M)", E=encoding, K=kb)["M"]
    got = prolog.once("findall(_P, (current_predicate(M:_N/_A), functor(_H, _N, _A), "
                      "predicate_property(M:_H, implementation_module(M)), "
                      "\\+ predicate_property(M:_H, imported_from(_)), "
                      "format(atom(_P), '~w/~w', [_N, _A])), Ps)", M=m)["Ps"]
    return set(got)


def test_determinations_per_kb_match_the_paper():
    """Regression: MID is the paper's 39 predicates, the named objects and the
    other cheat predicates only in LARGE; determination counts per KB and encoding."""
    assert len(PAPER_MID_39) == 39 and len(CHEAT) == 12
    domain = {"color/1", "shape/1", "size/1"}
    # the natural MID file defines exactly the paper's 39 (+ the attribute domain)
    assert _defined("natural", "mid") - domain == set(PAPER_MID_39)
    assert _defined("natural", "large") - domain - {"named_object/1"} == \
        set(PAPER_MID_39) | set(CHEAT)
    det = {(e, k): ilp.determinations(e, k) for e in ilp.ENCODINGS for k in ilp.KBS}
    for e in ilp.ENCODINGS:
        assert len(det[(e, "mid")]) == len(set(det[(e, "mid")]))
        assert not set(CHEAT) & set(det[(e, "mid")])
        assert det[(e, "large")] == det[(e, "mid")] + CHEAT
    # natural: every listed predicate but the string helper shape_props/4, + the 6 built-ins
    assert set(det[("natural", "mid")]) == (set(PAPER_MID_39) - {"shape_props/4"}) | set(BUILTINS_MID)
    assert len(det[("natural", "minimal")]) == 17           # the paper's minimal count
    assert [len(det[(e, k)]) for e in ilp.ENCODINGS for k in ilp.KBS] == [17, 44, 56, 15, 42, 54]
    # pointer: sample_is/2 and defined_as/3 replace the three extract_* and atom/1
    assert set(det[("natural", "mid")]) - set(det[("pointer", "mid")]) == \
        {"extract_operator/2", "extract_children/2", "extract_op_and_chld/3", "atom/1"}
    assert set(det[("pointer", "mid")]) - set(det[("natural", "mid")]) == \
        {"sample_is/2", "defined_as/3"}


def test_cheat_predicates_run_in_both_encodings(dataset, tmp_path):
    """The LARGE KB's cheat predicates give the ground truth in one literal (Hard task 11,
    Easy task 15) in both encodings; a MID theory cannot call them."""
    th = tmp_path / "th.pl"
    th.write_text("valid(C) :- contains(C, X), is_named_object(X, house).\n")
    for enc in ilp.ENCODINGS:
        if enc == "pointer":
            th.write_text("valid(S) :- sample_is(S, C), contains(C, X), is_named_object(X, house).\n")
        s = ilp.evaluate_theory(dataset, 15, th, enc, kb="large", fresh=0)
        assert s.correct and s.errors == 0
    th.write_text("valid(C) :- contains(C, X), house(X).\n")
    with pytest.raises(NesyError, match="house"):
        ilp.evaluate_theory(dataset, 15, th, "natural", kb="mid", fresh=0)


def test_pointer_export_round_trips(dataset, tmp_path):
    stem = ilp.export_task(dataset, 15, tmp_path / "p", encoding="pointer", kb="mid")
    b = Path(f"{stem}.b").read_text()
    assert ":- modeh(1, valid(+sample))." in b
    assert ":- modeb(1, sample_is(+sample, -obj))." in b
    facts = [l for l in b.splitlines() if l.startswith(("defined_as(", "sample_is("))]
    train = SAMPLES[15]["train"]
    for k, (text, _) in enumerate(train, start=1):
        assert ilp.pointer_symbol(facts, f"s{k:05d}") == from_prolog(text)
    # deterministic names: first sample's root is c000000, children numbered depth-first
    assert facts[0] == "sample_is(s00001, c000000)."
    assert facts[1] == "defined_as(c000000, side_by_side, [c000001, circle_red_large])."
    assert "sample_is(s00008, circle_red_small)." in facts
    pos = Path(f"{stem}.f").read_text().split()
    assert pos == [f"valid(s{k:05d})." for k, (_, l) in enumerate(train, 1) if l == 1]
    # test split continues the numbering (val is empty): no clash with training constants
    test = Path(f"{stem}_test.pl").read_text()
    assert f"sample_is(s{len(train) + 1:05d}, " in test
    tfacts = [l for l in test.splitlines() if l.startswith(("defined_as(", "sample_is("))]
    for k, (text, _) in enumerate(SAMPLES[15]["test"], start=len(train) + 1):
        assert ilp.pointer_symbol(tfacts, f"s{k:05d}") == from_prolog(text)


def test_export_all_layout_and_determinism(dataset, tmp_path):
    out = ilp.export_all(dataset, tmp_path / "all")
    assert out == (tmp_path / "all").resolve()
    assert len(list(out.glob("*/*.b"))) == 2 * 2 * 2
    assert (tmp_path / "all" / "pointer-mid" / "t15.b").exists()
    index = json.loads((tmp_path / "all" / "index.json").read_text())
    assert len(index["exports"]) == 8 and index["exports"][0]["stem"] == "natural-minimal/t00"
    ilp.export_all(dataset, tmp_path / "all2", encodings=["pointer"], kbs=["minimal"],
                           tasks=[15], settings={"nodes": 100, "noise": None})
    b1 = (tmp_path / "all" / "pointer-minimal" / "t15.b").read_text()
    b2 = (tmp_path / "all2" / "pointer-minimal" / "t15.b").read_text()
    assert b1.replace("nodes, 20000", "nodes, 100").replace(":- set(noise, 5).\n", "") == b2


def test_ground_truth_theory_scores_perfectly(dataset):
    s = ilp.evaluate_theory(dataset, 15, dataset / "rules" / "15.pl", "natural")
    assert (s.tp, s.fn, s.tn, s.fp) == (3, 0, 5, 0)
    assert s.balanced_accuracy == 1.0 and s.correct
    assert s.c_ratio == 1.0 and s.l_ratio == 1.0 and s.literals_lt == 3


def test_ground_truth_rewritten_for_pointer(dataset, tmp_path):
    th = tmp_path / "ptr_gt.pl"
    th.write_text("valid(S) :- sample_is(S, C), contains(C, C1), house(C1).\n")
    s = ilp.evaluate_theory(dataset, 15, th, "pointer")
    assert s.balanced_accuracy == 1.0 and s.correct and s.errors == 0
    assert (s.clauses_lt, s.literals_lt) == (1, 4) and s.l_ratio == 3 / 4
    s0 = ilp.evaluate_theory(dataset, 0, dataset / "rules" / "00.pl", "natural", split="train")
    assert s0.correct and s0.literals_gt == 5


WRONG_NAT = """% deliberately wrong: any triangle, or a grid
valid(C) :- recursive_contains(C, X), extract_shape(X, triangle), extract_size(X, _).
valid(C) :- extract_operator(C, grid).
"""


@pytest.mark.parametrize("encoding", ilp.ENCODINGS)
def test_wrong_theory_hand_computed(dataset, tmp_path, encoding):
    text = WRONG_NAT
    if encoding == "pointer":
        text = text.replace("valid(C) :- ", "valid(S) :- sample_is(S, C), ")
    th = tmp_path / "wrong.pl"
    th.write_text(text)
    s = ilp.evaluate_theory(dataset, 15, th, encoding, kb="minimal")
    # test split: P1 P3 P6 contain a triangle (TP); N2 N7 have a triangle and N5 is a grid (FP);
    # N4 and N8 stay negative.
    assert (s.tp, s.fn, s.tn, s.fp) == (3, 0, 2, 3)
    assert s.balanced_accuracy == pytest.approx(0.5 * 3 / 3 + 0.5 * 2 / 5)
    assert s.precision == pytest.approx(0.5) and s.recall == 1.0 and not s.correct
    assert s.predictions == [1, 1, 1, 0, 1, 1, 1, 0]
    assert s.clauses_lt == 2 and s.clauses_gt == 1 and s.c_ratio == 0.5
    lits = 4 if encoding == "natural" else 5
    assert s.literals_lt == lits and s.l_ratio == pytest.approx(3 / lits)
    assert s.to_dict()["balanced_accuracy"] == s.balanced_accuracy


def test_empty_theory_covers_nothing(dataset, tmp_path):
    th = tmp_path / "empty.pl"
    th.write_text("% Aleph found nothing\n")
    s = ilp.evaluate_theory(dataset, 15, th)
    assert (s.tp, s.fp) == (0, 0) and s.balanced_accuracy == 0.5 and s.precision == 0.0
    assert s.clauses_lt == 0 and s.c_ratio is None


def test_theory_syntax_error_reports_line(dataset, tmp_path):
    th = tmp_path / "bad.pl"
    th.write_text("valid(C) :- contains(C, X),\n    house(X).\nvalid(C) :- contains(C X).\n")
    with pytest.raises(NesyError) as err:
        ilp.evaluate_theory(dataset, 15, th)
    assert err.value.line == 3 and err.value.file == str(th) and err.value.task == "15"
    assert f"{th}:3" in str(err.value)


def test_unsafe_theory_refused(dataset, tmp_path):
    th = tmp_path / "evil.pl"
    th.write_text("valid(C) :- contains(C, _).\nvalid(C) :- shell('touch /tmp/pwned'), atom(C).\n")
    with pytest.raises(UnsafeRuleError) as err:
        ilp.evaluate_theory(dataset, 15, th)
    assert err.value.line == 2
    th.write_text(":- initialization(halt).\nvalid(_).\n")
    with pytest.raises(UnsafeRuleError):
        ilp.evaluate_theory(dataset, 15, th)


def test_bad_inputs(dataset, tmp_path):
    with pytest.raises(NesyError, match="dataset folder not found"):
        ilp.export_task(tmp_path / "nope", 15, tmp_path / "o")
    with pytest.raises(NesyError) as err:
        ilp.export_task(dataset, 7, tmp_path / "o")
    assert err.value.task == "7"
    with pytest.raises(NesyError, match="unknown encoding"):
        ilp.export_task(dataset, 15, tmp_path / "o", encoding="pointy")
    assert not (tmp_path / "o").exists()
    with pytest.raises(NesyError, match="theory file not found"):
        ilp.evaluate_theory(dataset, 15, tmp_path / "missing.pl")
    ilp.export_task(dataset, 15, tmp_path / "o")
    with pytest.raises(NesyError, match="already exists"):
        ilp.export_task(dataset, 15, tmp_path / "o")
    bad = tmp_path / "badds"
    shutil.copytree(dataset, bad)
    p = bad / "train" / "annotations.csv"
    lines = p.read_text().splitlines()
    assert lines[14].endswith(",circle_red_small")      # task 15's 8th train row, line 15
    lines[14] = lines[14].rsplit(",", 1)[0] + ",circle_red"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(NesyError) as err:
        ilp.export_task(bad, 15, tmp_path / "o2")
    assert err.value.field == "prolog" and err.value.line == 15 and err.value.task == "15"


def test_documented_pack_command_ends_on_empty_theory(tmp_path):
    """Regression: the SWI-pack command of docs/guides/aleph.md, run against a
    stand-in Aleph whose induce/1 learns nothing (leaves T unbound, as the pack does), ends and
    writes an empty theory instead of printing `_.` lines forever."""
    doc = (ROOT / "docs" / "guides" / "aleph.md").read_text()
    m = re.search(r'swipl -g "(use_module\(library\(aleph\)\).*?)"\n', doc, re.S)
    assert m, "the pack command is missing from docs/guides/aleph.md"
    goal = m[1].replace("\\\n", " ")
    stub = tmp_path / "stub_aleph.pl"
    stub.write_text(":- module(aleph, [induce/1]).\nread_all(_).\ninduce(_).\n")
    goal = goal.replace("use_module(library(aleph))", f"use_module('{stub}')")
    res = subprocess.run([_swipl(), "-q", "-g", goal, "-t", "halt(1)"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "t15_theory.pl").read_text() == ""


def _aleph() -> tuple[str, str] | None:
    """(kind, path) of an Aleph to run: NESYBENCH_ALEPH, else `pack aleph` in our swipl."""
    env = os.environ.get("NESYBENCH_ALEPH")
    if env:
        p = Path(env)
        if not p.is_file():
            pytest.fail(f"NESYBENCH_ALEPH={env} is not a file")
        head = p.read_text(errors="replace")[:5000]
        return ("pack" if ":- module(aleph" in head else "classic", str(p))
    res = subprocess.run([_swipl(), "-q", "-g",
                          "absolute_file_name(library(aleph), F, [file_type(prolog), "
                          "access(read), file_errors(fail)]), write(F), halt", "-t", "halt(1)"],
                         capture_output=True, text=True, timeout=30)
    if res.returncode == 0 and res.stdout.strip():
        return ("pack", res.stdout.strip())
    return None


@pytest.mark.parametrize("encoding", ilp.ENCODINGS)
def test_aleph_reads_and_induces(dataset, tmp_path, encoding):
    """Interop with real Aleph: read_all/1 + induce on the export with no edits, then score
    the theory Aleph wrote with evaluate_theory."""
    found = _aleph()
    if found is None:
        pytest.skip("Aleph not available: set NESYBENCH_ALEPH=/path/to/aleph.pl "
                    "(classic Aleph 5 or the SWI-Prolog pack's prolog/aleph.pl) or "
                    "`pack_install(aleph)` in the project's SWI-Prolog")
    kind, path = found
    stem = ilp.export_task(dataset, 15, tmp_path / "al", encoding=encoding, kb="minimal",
                           settings={"nodes": 1000, "i": 3, "clauselength": 5, "noise": 0,
                                     "minpos": 2})
    learned = tmp_path / "learned.pl"
    if kind == "classic":
        goal = (f"consult('{path}'), read_all('{stem}'), induce, write_rules('{learned}'), "
                "write('THEORY-DONE'), nl, halt")
    else:
        goal = (f"use_module('{path}'), aleph:read_all(user:'{stem}'), induce(T), "
                f"(is_list(T) -> true ; T = []), "
                f"setup_call_cleanup(open('{learned}', write, S), "
                "forall(member(C, T), portray_clause(S, C)), close(S)), "
                "write('THEORY-DONE'), nl, halt")
    res = subprocess.run([_swipl(), "-q", "-g", goal, "-t", "halt(1)"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "ERROR" not in out and "Unknown procedure" not in out and "[error]" not in out, out
    assert "THEORY-DONE" in out and "[theory]" in out, out
    assert "valid(A) :-" in out, out         # a general rule, not only ground facts
    s = ilp.evaluate_theory(dataset, 15, learned, encoding, kb="minimal")
    assert s.clauses_lt >= 1 and s.errors == 0 and s.tp >= 1


@pytest.mark.parametrize("encoding", ["natural", "pointer"])
@pytest.mark.parametrize("kb", ["minimal", "mid"])
def test_exported_background_stands_alone(tmp_path, encoding, kb):
    """The .b text inlines the shared parts of kb/kandy/parts/: no include is left, and it
    defines exactly the clauses of the knowledge-base file loaded with its includes."""
    from nesybench.logic import prolog
    text = ilp.bk_text(encoding, kb)
    assert ":- include(" not in text and "same_shape(SH, [H|T])" in text
    alone = tmp_path / "alone.pl"
    alone.write_text(text, encoding="utf-8")
    # internal variables start with "_": janus returns only the named results
    clauses = ("findall(_E, (current_predicate(M:_N/_A), functor(_H, _N, _A), "
               "predicate_property(M:_H, implementation_module(M)), "
               "findall(_C, (clause(M:_H, _B), copy_term(_H-_B, _C), numbervars(_C, 0, _)), _Cs), "
               "format(atom(_E), '~q', [_N/_A-_Cs])), _Es), msort(_Es, Clauses)")
    alone_clauses = prolog.once(f"load_files(M:F, [silent(true)]), {clauses}",
                                M=f"kb_alone_{encoding}_{kb}", F=str(alone))["Clauses"]
    # the module the evaluator loads from kb/kandy/ilp/<encoding>_<kb>.pl (with its includes)
    prolog.use("prolog/kandy_ilp.pl")
    module = prolog.once("kandy_ilp:ilp_bk_module(E, K, M)", E=encoding, K=kb)["M"]
    file_clauses = prolog.once(clauses, M=module)["Clauses"]
    assert len(file_clauses) >= 18 and alone_clauses == file_clauses


def test_eval_checks_theory_against_ground_truth_beyond_the_split(tmp_path):
    """Regression: a theory with zero errors on the small test split ("correct")
    but without the house's same-size test disagrees with the ground truth on fresh samples
    and is reported so; the ground-truth rule itself never disagrees. Both encodings."""
    from nesybench.kandy.generate import generate
    ds = tmp_path / "e15"
    generate(ROOT / "curricula/kandy/easy.yaml", ds, tasks=[15], samples=40, images=False)
    body = ("contains(C, X), extract_op_and_chld(X, stack, [A, B]), "
            "extract_shape(A, triangle), extract_shape(B, square).\n")
    loose = {"natural": f"valid(C) :- {body}",
             "pointer": f"valid(S) :- sample_is(S, C), {body}"}
    for enc, text in loose.items():
        th = tmp_path / f"{enc}.pl"
        th.write_text(text)
        s = ilp.evaluate_theory(ds, 15, th, enc, fresh=300)
        assert s.correct                                     # the old notion: test split only
        assert s.task_samples == 40 and s.fresh_samples == 300
        assert s.fresh_disagreements > 0 and s.correct_generalises is False
        d = s.to_dict()
        assert {"task_disagreements", "fresh_disagreements", "correct_generalises"} <= set(d)
    gt = ilp.evaluate_theory(ds, 15, ds / "rules" / "15.pl", "natural", fresh=300)
    assert gt.correct and gt.task_disagreements == 0 and gt.fresh_disagreements == 0
    assert gt.correct_generalises is True
    # deterministic: the same fresh draw every time
    again = ilp.evaluate_theory(ds, 15, tmp_path / "natural.pl", "natural", fresh=300)
    first = ilp.evaluate_theory(ds, 15, tmp_path / "natural.pl", "natural", fresh=300)
    assert again.fresh_disagreements == first.fresh_disagreements


def test_a_task_is_read_once_for_export_and_scoring(dataset, tmp_path, monkeypatch):
    """The path of an Aleph run: the task is read once (manifest and annotations), and the
    export and the scoring take that same :class:`IlpTask`; the scores equal those of a run
    that reads the dataset path again."""
    from nesybench.kandy.ilp import export as export_mod, task as task_mod

    calls = {"manifest": 0, "samples": 0}
    read_manifest, read_samples = task_mod.read_manifest, task_mod._read_samples

    def count_manifest(root):
        calls["manifest"] += 1
        return read_manifest(root)

    def count_samples(root, tid):
        calls["samples"] += 1
        return read_samples(root, tid)

    monkeypatch.setattr(task_mod, "read_manifest", count_manifest)
    monkeypatch.setattr(export_mod, "read_manifest", count_manifest)
    monkeypatch.setattr(task_mod, "_read_samples", count_samples)
    th = tmp_path / "th.pl"
    th.write_text("valid(C) :- contains(C, X), is_named_object(X, house).\n")
    task = ilp.load_task(dataset, 15)
    stem = ilp.export_task(task, None, tmp_path / "x", encoding="natural", kb="mid")
    once = ilp.evaluate_theory(task, None, th, "natural", kb="large", fresh=0)
    assert calls == {"manifest": 1, "samples": 1}
    again = ilp.evaluate_theory(dataset, 15, th, "natural", kb="large", fresh=0)
    assert calls == {"manifest": 2, "samples": 2}
    assert once.to_dict() == again.to_dict()
    assert Path(f"{stem}.f").read_text().count("valid(") == sum(
        s.label == 1 and s.supervised for s in task.splits["train"])
    # export_all reads the manifest once for all its tasks
    calls.update(manifest=0, samples=0)
    ilp.export_all(dataset, tmp_path / "all", encodings=["natural"], kbs=["minimal"])
    assert calls["manifest"] == 1 and calls["samples"] == len(ilp.task_ids(dataset))


@pytest.mark.parametrize("how, says", [
    ("dotdot", "leaves the data-set folder"),
    ("link", "resolves outside"),
    ("hard", "hard links"),
])
def test_ground_truth_rule_read_inside_the_folder(dataset, tmp_path, how, says):
    """The task's rule file is read through the data set's contained reader: a rule_file
    with `..`, a rules/NN.pl linked or hard-linked to a file outside, is one error line
    (exit 2), never read."""
    from nesybench.cli import main
    d = tmp_path / "ds"
    shutil.copytree(dataset, d)
    secret = tmp_path / "secret.pl"
    secret.write_text("valid(_).\n")
    man = json.loads((d / "manifest.json").read_text())
    if how == "dotdot":
        man["tasks"] = [dict(t, rule_file="../secret.pl") if t["id"] == 15 else t
                        for t in man["tasks"]]
        (d / "manifest.json").write_text(json.dumps(man))
    else:
        (d / "rules" / "15.pl").unlink()
        if how == "link":
            (d / "rules" / "15.pl").symlink_to(secret)
        else:
            os.link(secret, d / "rules" / "15.pl")
    th = tmp_path / "t.pl"
    th.write_text("valid(_).\n")
    with pytest.raises(NesyError) as exc:
        ilp.evaluate_theory(d, 15, th, fresh=0)
    assert says in str(exc.value) and "\n" not in str(exc.value)
    assert main(["kandy", "ilp-eval", str(d), "15", str(th)]) == 2
