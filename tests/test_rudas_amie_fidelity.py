"""AMIE+ as AMIE+ counts and prunes (Galárraga et al. 2015; AMIE's code as the RuDaS paper ran
it): the PCA confidence assumes completeness on the head relation's more functional argument
(the subject when #subjects ≥ #objects, else the object), and ``min_support`` prunes only
under ``prune_metric=support`` (``-pm support``); under the default, head coverage, the RuDaS
paper's ``-mins 3 -minis 3 -minpca 0.25`` prunes by head coverage 0.01 only. Every expected
value below is computed by hand from the facts written next to it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.rudas import learners as L


def _dataset(root: Path, facts: dict, max_body: int) -> Path:
    root.mkdir()
    lines = [f"{k}({a},{b})." for k in sorted(facts) for a, b in facts[k]]
    (root / "train.txt").write_text("\n".join(lines) + "\n")
    (root / "manifest.json").write_text(json.dumps({"params": {"max_body": max_body}}))
    return root


def _by_body(rules, head: str) -> dict:
    """{body text: (support, PCA confidence, comment)} of the rules for ``head``."""
    out = {}
    for r in rules:
        if r.head[0] == head:
            body = ", ".join(f"{p}({','.join(a)})" for p, a in r.body)
            supp = int(r.comment.split("support ")[1].split(",")[0])
            out[body] = (supp, r.confidence, r.comment)
    return out


# --- counting on the more functional argument -----------------------------------------------

# r has 5 facts over 3 subjects (a, b, c) and 5 objects (1..5): fun(r) = 3/5 < ifun(r) = 5/5,
# so AMIE counts on the object. q(X,Y) => r(X,Y): q ∩ r = {(a,1), (b,2), (c,3)}, support 3.
# Subject-counting denominator: q-pairs whose subject has an r-fact: (a,1) (b,2) (c,3) (a,9)
# = 4 (e, f have none) -> 0.75. Object-counting: q-pairs whose object has an r-fact: (a,1)
# (b,2) (c,3) (e,1) (f,2) = 5 (9 has none) -> 0.60, under the paper's 0.7 acceptance threshold.
TOY = {"q": [("a", "1"), ("b", "2"), ("c", "3"), ("a", "9"), ("e", "1"), ("f", "2")],
       "r": [("a", "1"), ("b", "2"), ("c", "3"), ("a", "4"), ("a", "5")]}


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    return _dataset(tmp_path_factory.mktemp("amie") / "toy", TOY, 1)


def test_pca_counts_on_the_object_of_an_inverse_functional_head(toy):
    got = _by_body(L.learn(toy, "amie", targets=["r"])[0], "r")
    supp, pca, comment = got["q(X,Y)"]
    assert (supp, pca) == (3, 0.6)
    assert "head coverage 0.6000" in comment and "std confidence 0.5000" in comment
    assert "counted on the object" in comment


def test_count_on_subject_is_amies_caos(toy):
    got = _by_body(L.learn(toy, "amie", targets=["r"], options={"count_on": "subject"})[0], "r")
    assert got["q(X,Y)"][:2] == (3, 0.75)
    assert "counted on the subject" in got["q(X,Y)"][2]
    with pytest.raises(NesyError, match="count_on must be functional or subject"):
        L.learn(toy, "amie", targets=["r"], options={"count_on": "object"})


def test_the_toy_rule_crosses_the_papers_threshold(toy, tmp_path):
    """At the paper's AMIE+ threshold 0.7 the rule is dropped under AMIE's counting."""
    out = tmp_path / "r.pl"
    assert main(["rudas", "learn", str(toy), "--system", "amie", "--targets", "r", "-q",
                 "--out", str(out)]) == 0
    lines = [ln for ln in out.read_text().splitlines()
             if "::" in ln and not ln.startswith("%")]
    assert lines == ["0.6000::r(X0,X1) :- q(X0,X1)."]


# A chain body on an object-functional head. r: (a,1) (a,2) (a,3) (b,4): 2 subjects, 4
# objects, so counting is on the object. p: a->m, b->n, c->m, d->o; s: m->1, m->2, n->4, n->5,
# o->3. The body p(X,Z), s(Z,Y) holds for (a,1) (a,2) (b,4) (b,5) (c,1) (c,2) (d,3): 7 pairs,
# 3 of them in r (support 3, head coverage 3/4, standard confidence 3/7 = 0.4286). Pairs whose
# object has an r-fact: all but (b,5): 6, PCA 3/6 = 0.5 (the subject count would be the 4
# pairs of a and b: 0.75).
CHAIN = {"r": [("a", "1"), ("a", "2"), ("a", "3"), ("b", "4")],
         "p": [("a", "m"), ("b", "n"), ("c", "m"), ("d", "o")],
         "s": [("m", "1"), ("m", "2"), ("n", "4"), ("n", "5"), ("o", "3")]}


def test_hand_computed_object_functional_chain_rule(tmp_path):
    ds = _dataset(tmp_path / "chain", CHAIN, 2)
    got = _by_body(L.learn(ds, "amie", targets=["r"])[0], "r")
    key = next(k for k in got if k in ("p(X,V2), s(V2,Y)", "s(V2,Y), p(X,V2)"))
    supp, pca, comment = got[key]
    assert (supp, pca) == (3, 0.5)
    assert "head coverage 0.7500, std confidence 0.4286" in comment
    sub = _by_body(L.learn(ds, "amie", targets=["r"], options={"count_on": "subject"})[0], "r")
    assert sub[key][:2] == (3, 0.75)


def test_a_tie_counts_on_the_subject(tmp_path):
    """fun(r) = ifun(r) is functional (AMIE: fun ≥ ifun). r: (a,1) (a,2) (b,3) (c,3): 3
    subjects, 3 objects. q: (a,1) (b,3) (a,7) (d,2): support 2; subject count (a,1) (b,3)
    (a,7) = 3 -> 0.6667; the object count would be (a,1) (b,3) (d,2) = 3 too, so the rule
    is told apart by the comment."""
    ds = _dataset(tmp_path / "tie", {"r": [("a", "1"), ("a", "2"), ("b", "3"), ("c", "3")],
                                     "q": [("a", "1"), ("b", "3"), ("a", "7"), ("d", "2")]}, 1)
    supp, pca, comment = _by_body(L.learn(ds, "amie", targets=["r"])[0], "r")["q(X,Y)"]
    assert (supp, pca) == (2, 0.6667) and "counted on the subject" in comment


def test_functionality_is_computed_per_head_relation(toy):
    """q as the head: 5 subjects (a, b, c, e, f) of 6 facts, 4 objects (1, 2, 3, 9): q is
    functional and counted on the subject. r(X,Y) => q(X,Y): support 3; r-pairs whose subject
    has a q-fact: all 5 -> 0.6."""
    supp, pca, comment = _by_body(L.learn(toy, "amie", targets=["q"])[0], "q")["r(X,Y)"]
    assert (supp, pca) == (3, 0.6) and "counted on the subject" in comment


# --- pruning: -pm semantics ------------------------------------------------------------------

# p has 6 facts (all subjects and objects distinct: functional, counted on the subject);
# r holds 4 of them (p :- r: support 4, head coverage 4/6), q the other 2 (support 2, head
# coverage 2/6), s holds 3 and 12 pairs whose subjects have p-facts (support 3, head coverage
# 3/6, PCA 3/15 = 0.2). As a head, q has 2 facts.
P = [("a", "b"), ("c", "d"), ("e", "f"), ("g", "h"), ("i", "j"), ("k", "l")]
PRUNE = {"p": P, "r": P[:4], "q": P[4:],
         "s": P[:3] + [(x, f"n{i}") for i, x in enumerate("acegikacegik")]}
ALL = {"r(X,Y)": (4, 1.0), "q(X,Y)": (2, 1.0), "s(X,Y)": (3, 0.2)}


@pytest.fixture(scope="module")
def prune(tmp_path_factory) -> Path:
    return _dataset(tmp_path_factory.mktemp("amie") / "prune", PRUNE, 1)


def _single(ds, head="p", **options) -> dict:
    rules = L.learn(ds, "amie", targets=[head], options={k: str(v) for k, v in options.items()})
    return {k: v[:2] for k, v in _by_body(rules[0], head).items()}


def test_min_support_does_not_prune_under_head_coverage(prune):
    assert _single(prune) == ALL
    assert _single(prune, min_support=3) == ALL              # -mins 3 without -pm
    assert _single(prune, min_support=5) == ALL
    assert _single(prune, min_support=3, prune_metric="headcoverage") == ALL


def test_min_support_prunes_under_support(prune):
    assert _single(prune, min_support=3, prune_metric="support") == {
        "r(X,Y)": (4, 1.0), "s(X,Y)": (3, 0.2)}
    assert _single(prune, min_support=4, prune_metric="support") == {"r(X,Y)": (4, 1.0)}


def test_head_coverage_prunes_only_under_head_coverage(prune):
    # 0.6: r (4/6) stays; s (3/6) and q (2/6) go
    assert _single(prune, min_hc=0.6) == {"r(X,Y)": (4, 1.0)}
    assert _single(prune, min_hc=0.6, prune_metric="support") == ALL


def test_min_initial_support_defaults_to_min_support_under_support(prune):
    # q has 2 facts: -pm support -mins 3 without -minis does not mine it
    assert _single(prune, "q", min_support=3, prune_metric="support") == {}
    assert _single(prune, "q", min_support=3) == {"p(X,Y)": (2, 1.0)}
    assert _single(prune, "q", min_support=2, min_initial_support=1,
                   prune_metric="support") == {"p(X,Y)": (2, 1.0)}
    assert _single(prune, "q", min_initial_support=3) == {}    # -minis under either metric
    with pytest.raises(NesyError, match="prune_metric must be headcoverage or support"):
        _single(prune, prune_metric="pca")


def test_the_rudas_v0_profile_is_the_papers_command(prune, tmp_path):
    """``-mins 3 -minis 3 -minpca 0.25`` with no ``-pm``: head coverage 0.01 prunes, so the
    support-2 rule p :- q is output; PCA 0.2 < 0.25 drops p :- s; q's 2 facts < 3 leave q
    unmined."""
    base = ["rudas", "learn", str(prune), "--system", "amie", "--targets", "p,q", "-q"]

    def rules(extra, name):
        out = tmp_path / name
        assert main(base + extra + ["--out", str(out)]) == 0
        return sorted(ln for ln in out.read_text().splitlines()
                      if "::" in ln and not ln.startswith("%"))

    paper = rules([], "paper.pl")
    assert paper == ["1.0000::p(X0,X1) :- q(X0,X1).", "1.0000::p(X0,X1) :- r(X0,X1)."]
    same = rules(["--profile", "none", "-O", "min_initial_support=3", "-O", "min_pca=0.25"],
                 "same.pl")
    assert same == paper
    support = rules(["-O", "prune_metric=support"], "support.pl")    # -pm support -mins 3
    assert support == ["1.0000::p(X0,X1) :- r(X0,X1)."]
