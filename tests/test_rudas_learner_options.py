"""Learner options as the published systems have them. AMIE+'s minimum support, minimum
initial support and minimum PCA confidence (``-mins``, ``-minis``, ``-minpca``; ``-mins``
prunes under ``-pm support`` only), with the RuDaS paper's values (3, 3, 0.25) as the ``rudas-v0``
profile's defaults of ``rudas learn`` and ``rudas experiment``; Neural-LP's split of a query
relation's facts into examples and graph facts (the reference's by default); FOIL's
backing-up, implemented and documented."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.rudas import learners as L

# p has 6 facts; r holds 4 of them (p :- r: support 4, PCA 1), q the other 2 (p :- q:
# support 2, PCA 1); s holds 3 of them and 12 pairs whose subjects have p-facts (p :- s:
# support 3, PCA 3/15 = 0.2). As a head, q has 2 facts (q :- p: support 2, PCA 2/2 = 1).
P = [("a", "b"), ("c", "d"), ("e", "f"), ("g", "h"), ("i", "j"), ("k", "l")]
FACTS = {"p": P, "r": P[:4], "q": P[4:],
         "s": P[:3] + [(x, f"n{i}") for i, x in enumerate("acegikacegik")]}


@pytest.fixture(scope="module")
def ds(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("amie") / "ds"
    path.mkdir()
    lines = [f"{k}({a},{b})." for k in sorted(FACTS) for a, b in FACTS[k]]
    (path / "train.txt").write_text("\n".join(lines) + "\n")
    (path / "manifest.json").write_text(json.dumps({"params": {"max_body": 1}}))
    return path


def _single(rules, head):
    """{body predicate: (support, PCA confidence)} of the one-atom rules head(X,Y) :- b(X,Y)."""
    out = {}
    for r in rules:
        if r.head[0] == head and len(r.body) == 1 and r.body[0][1] == ("X", "Y"):
            supp = int(r.comment.split("support ")[1].split(",")[0])
            out[r.body[0][0]] = (supp, r.confidence)
    return out


def test_min_support_drops_a_support_2_rule(ds):
    """Under ``prune_metric=support`` (AMIE+'s ``-pm support``); under head coverage, the
    default, ``min_support`` prunes nothing (``tests/test_rudas_amie_fidelity.py``)."""
    def got(k):
        return _single(L.learn(ds, "amie", targets=["p"], options={
            "min_support": k, "prune_metric": "support"})[0], "p")
    assert got("1") == {"r": (4, 1.0), "q": (2, 1.0), "s": (3, 0.2)}
    assert got("3") == {"r": (4, 1.0), "s": (3, 0.2)}
    assert got("4") == {"r": (4, 1.0)}


def test_min_pca_and_min_initial_support(ds):
    got = _single(L.learn(ds, "amie", targets=["p"], options={"min_pca": "0.25"})[0], "p")
    assert got == {"r": (4, 1.0), "q": (2, 1.0)}            # PCA 0.2 < 0.25
    got = _single(L.learn(ds, "amie", targets=["p"], options={"min_pca": "0.2"})[0], "p")
    assert "s" in got
    assert _single(L.learn(ds, "amie", targets=["q"])[0], "q") == {"p": (2, 1.0)}
    assert L.learn(ds, "amie", targets=["q"], options={"min_initial_support": "3"})[0] == []
    # the older name of the PCA threshold still works, not both at once
    got = _single(L.learn(ds, "amie", targets=["p"], options={"min_conf": "0.25"})[0], "p")
    assert "s" not in got


def test_rudas_v0_profile_is_the_papers_configuration(ds, tmp_path, capsys):
    assert L.LEARNER_PROFILES["rudas-v0"]["amie"] == {
        "min_support": "3", "min_initial_support": "3", "min_pca": "0.25"}
    base = ["rudas", "learn", str(ds), "--system", "amie", "--targets", "p,q", "-q"]

    def rules(extra, name):
        out = tmp_path / name
        assert main(base + extra + ["--out", str(out)]) == 0
        return [ln for ln in out.read_text().splitlines() if "::" in ln]

    default = rules([], "d.pl")                       # -mins 3 -minis 3 -minpca 0.25
    assert any(":- r(X0,X1)" in ln for ln in default)
    # no -pm: head coverage prunes, so the support-2 rule p :- q stays; PCA 0.2 drops p :- s;
    # q (2 facts < 3) is not mined
    assert any(":- q(X0,X1)" in ln for ln in default)
    assert not any(":- s(X0,X1)" in ln or ln.split("::")[1].startswith("q(")
                   for ln in default)
    explicit = rules(["--option", "prune_metric=support"], "e.pl")   # -pm support -mins 3
    assert not any(":- q(X0,X1)" in ln for ln in explicit)
    loose = rules(["--option", "min_initial_support=1"], "l.pl")  # --option wins
    assert any(ln.split("::")[1].startswith("q(X0,X1) :- p(X0,X1)") for ln in loose)
    none = rules(["--profile", "none"], "n.pl")               # AMIE+'s own defaults
    assert any(":- q(X0,X1)" in ln for ln in none) and any(":- s(X0,X1)" in ln for ln in none)
    for opt, msg in (("min_support=x", "min_support must be a int"),
                     ("min_pca=2", "min_pca must be in [0, 1]"),
                     ("min_initial_support=-1", "must be >= 0")):
        assert main(base + ["--option", opt, "--out", str(tmp_path / "bad.pl")]) == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1
    assert main(base + ["--option", "min_pca=0.3", "--option", "min_conf=0.3",
                        "--out", str(tmp_path / "bad.pl")]) == 2
    assert "not both" in capsys.readouterr().err


# --- Neural-LP ----------------------------------------------------------------------------

def _graphs(ds, monkeypatch, **options):
    """The query relation's graph facts of every batch Neural-LP builds for head ``p``."""
    from nesybench.rudas.learners.neural_lp import NeuralLP

    seen = []
    inner = NeuralLP.stacked

    def stacked(self, blocks):
        seen.append(set(blocks[self.rels.index("p") * 2][0]))
        return inner(self, blocks)

    monkeypatch.setattr(NeuralLP, "stacked", stacked)
    L.learn(ds, "neural-lp", targets=["p"], options={"epochs": "2", **options})
    return seen


def test_neural_lp_fact_split_is_the_references_by_default(ds, monkeypatch):
    """The reference (shared database): every fact of p is an example, and a batch is answered
    on every other fact; ``fact_split=share`` is the fixed 50/50 split."""
    P6 = set(P)
    one = _graphs(ds, monkeypatch)                       # 6 facts, one batch of 64: no p fact
    assert one == [set()]
    three = _graphs(ds, monkeypatch, batch_size="2")      # 3 batches of 2: 4 p facts each
    assert len(three) == 3 and all(len(g) == 4 and g < P6 for g in three)
    assert set.union(*[P6 - g for g in three]) == P6      # each fact answered once
    share = _graphs(ds, monkeypatch, fact_split="share")
    assert len(share) == 1 and len(share[0]) == 3         # half the facts in the graph
    for bad in ({"fact_split": "half"}, {"example_share": "0.3"},
                {"fact_split": "share", "batch_size": "8"}):
        with pytest.raises(NesyError):
            L.learn(ds, "neural-lp", targets=["p"], options={"epochs": "1", **bad})


def test_foil_docstring_says_backing_up_is_implemented():
    from nesybench.rudas.learners import foil

    doc = " ".join(foil.__doc__.split()).lower()
    assert "and backing up; the search is plain greedy" not in doc
    assert "backing up" in doc and "backup" in doc and "default 4" in doc
