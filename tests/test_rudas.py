"""RuDaS: paper values, category definitions, ratios, clingo cross-check, bad input."""
from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path

import pytest

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.io import checksums
from nesybench.logic import asp
from nesybench.rudas import RudasParams, chase, evaluate, generate, r_score, rule_distance

def _rnd(x):
    return int(x + 0.5)   # Prolog round/1: halves away from zero


R1 = "p1(A,B) :- p2(A,A), p3(B,B), p4(A,B)"
R2 = "p1(X,X) :- p2(Y,X), p2(X,X)"


# --- §5.3 R-score ------------------------------------------------------------------------

def test_example_5_3_rule_distance():
    assert rule_distance(R1, R2) == pytest.approx(0.5625)
    assert r_score([R1], [R2]) == pytest.approx(1 - 0.5625)


def test_r_score_of_a_program_that_derives_nothing_true():
    """A generated CHAIN-XS-2 rule set and the four rules FOIL learned for it (H-score 0:
    nothing they derive is true), by hand with §5.3: p5's best match is the fourth rule,
    head 0 + p4 0 + p0(X0,X2)~p0(X1,X2) 1/4 over n_a = 3, so 1/12; p4's two learned rules
    share no body predicate with it, (0 + 1 + 1)/3 = 2/3. R = 1 - (1/12 + 2/3)/2 = 0.625.
    The head predicate and partial argument matches score although nothing derived is
    true; leaving out the p4 rules costs 1 for p4: 1 - (1/12 + 1)/2 = 11/24."""
    original = ["p5(X0,X1) :- p4(X0,X1), p0(X0,X2)", "p4(X0,X1) :- p0(X2,X1), p0(X0,X2)"]
    learned = ["p4(X0,X1) :- p5(X0,X1), p1(X2,X1)", "p4(X0,X1) :- p5(X0,X1), p2(X2,X1)",
               "p5(X0,X1) :- p4(X0,X1), p5(X2,X1)", "p5(X0,X1) :- p4(X0,X1), p0(X1,X2)"]
    assert rule_distance(original[0], learned[3]) == pytest.approx(1 / 12)
    assert rule_distance(original[0], learned[2]) == pytest.approx(1 / 3)
    assert rule_distance(original[1], learned[0]) == pytest.approx(2 / 3)
    assert r_score(original, learned) == pytest.approx(0.625)
    assert r_score(original, learned[2:]) == pytest.approx(11 / 24)


def test_rule_distance_identity_and_renaming():
    assert rule_distance("p(X,Y) :- q(X,Z), r(Z,Y)", "p(A,B) :- r(C,B), q(A,C)") == 0
    # best renaming: head 0, body both positions differ (2 x 1/4), n_a = 2
    assert rule_distance("p(X,Y) :- q(X,Y)", "p(X,Y) :- q(Y,X)") == pytest.approx(0.5 / 2)


@pytest.mark.parametrize("a,b", [
    ("p(X,Y) :- q(X,Y)", "p(X,X) :- q(X,Y), q(Y,X), s(X)"),       # lengths, repeated head var
    ("p(X,Y) :- q(X,Y,Z)", "p(X,Y) :- q(X,Y)"),                    # arities
    ("p(X,Y) :- q(X,c1)", "p(c2,Y) :- q(c1,Y)"),                   # constants
    ("p(c1,c2)", "p(X,Y) :- q(X,Y)"),                              # empty body
    ("p(X) :- q(X)", "r(X) :- q(X)"),                              # other head predicate
])
def test_rule_distance_never_crashes(a, b):
    d = rule_distance(a, b)
    assert 0 <= d <= 1
    assert 0 <= r_score([a], [b]) <= 1


def test_r_score_missing_head_predicate_counts_one():
    assert r_score(["p(X) :- q(X)", "r(X) :- q(X)"], ["p(Y) :- q(Y)"]) == pytest.approx(0.5)


def _random_rule(rng: random.Random, max_body: int) -> str:
    vs = ["X", "Y", "Z", "W"][: rng.randint(2, 4)]

    def term():
        return rng.choice(["c0", "c1"]) if rng.random() < 0.15 else rng.choice(vs)

    preds = [("q", 2), ("r", 2), ("s", 1), ("t", 3)]
    body = []
    for _ in range(rng.randint(0, max_body)):
        n, a = rng.choice(preds)
        body.append(f"{n}({','.join(term() for _ in range(a))})")
    head = "p(X,Y)"
    # keep it a rule whose head variables occur (R-score does not need safety, but stay close)
    return head + (" :- " + ", ".join(body) if body else "")


def test_rule_distance_fast_equals_brute_force_on_random_small_rules():
    """Regression oracle: the branch-and-bound / Hungarian d_R equals the literal
    definition (every renaming x every permutation) on 300 random pairs of rules with up to
    three body atoms, constants, repeated variables and arities 1-3."""
    rng = random.Random(14)
    for _ in range(300):
        a, b = _random_rule(rng, 3), _random_rule(rng, 3)
        assert rule_distance(a, b) == pytest.approx(rule_distance(a, b, method="brute"),
                                                    abs=1e-12), (a, b)


def test_r_score_of_nine_atom_learned_bodies():
    """9-atom learned bodies (factorial for the old permutation search: 9! pairings
    per renaming) against hand-computed distances."""
    extra = ", ".join(f"s{i}(A,B)" for i in range(7))
    learned = f"p(A,B) :- q(A,C), r(C,B), {extra}"
    # original padded with 7 placeholders (1 each), n_a = 9 + 1; head, q and r match exactly
    assert rule_distance("p(X,Y) :- q(X,Z), r(Z,Y)", learned) == pytest.approx(7 / 10)
    nine = ", ".join(f"q{i}(X{i},X{i + 1})" for i in range(9))
    renamed = ", ".join(f"q{i}(V{i},V{i + 1})" for i in reversed(range(9)))
    assert rule_distance(f"p(X0,X9) :- {nine}", f"p(V0,V9) :- {renamed}") == 0
    assert r_score([f"p(X0,X9) :- {nine}", "p(X,Y) :- q(X,Z), r(Z,Y)"],
                   [f"p(V0,V9) :- {renamed}", learned]) == pytest.approx(1 - (0 + 0.7) / 2)


@pytest.mark.timing
def test_r_score_stops_at_its_time_limit():
    """R-score is under a time budget; when it runs out the result is the best
    bound found (a lower bound of the R-score) and flagged partial."""
    from nesybench.logic import prolog
    prolog.use("prolog/rudas/rudas.pl")
    rng = random.Random(3)

    def big():
        vs = [f"V{i}" for i in range(12)]
        atoms = [f"{rng.choice('qrs')}({rng.choice(vs)},{rng.choice(vs)})" for _ in range(12)]
        return f"p(V0,V1) :- {', '.join(atoms)}"

    a, b = big(), big()
    res = prolog.once("rudas:text_rule(A, _R1), rudas:text_rule(B, _R2), "
                      "rudas_metrics:r_score([_R1], [_R2], _{time_limit:0.05}, S, P)", A=a, B=b)
    assert res["P"] in (True, "true")
    assert 0.0 <= float(res["S"]) <= 1.0


# --- §5.1-5.2 Herbrand and IR measures on a hand-made dataset ------------------------------

def _hand_dataset(tmp: Path) -> Path:
    ds = tmp / "hand"
    ds.mkdir()
    (ds / "rules.txt").write_text("t(X0,X1) :- e(X0,X1).\n")
    (ds / "eval-support.txt").write_text("e(a,b).\ne(b,c).\ne(c,d).\n")
    (ds / "train.txt").write_text("e(a,b).\n")
    return ds


def test_herbrand_metrics_hand_computed(tmp_path):
    ds = _hand_dataset(tmp_path)
    learned = tmp_path / "learned.pl"
    # derives t(a,b), t(b,c), t(c,d) wrongly reversed for one rule: I' = {t(b,a), t(c,b), t(d,c)} ∪ ...
    learned.write_text("t(X,Y) :- e(X,Y), e(Y,Z).\nt(Y,X) :- e(X,Y), e(Y,Z).\n")
    m = evaluate(ds, learned)
    # I(R,F) = {t(a,b), t(b,c), t(c,d)}; I' = {t(a,b), t(b,c), t(b,a), t(c,b)}
    assert (m["tp"], m["fp"], m["fn"]) == (2, 2, 1)
    # u: predicates e/2, t/2 over constants {a,b,c,d}: 2 * 4^2 = 32 (each predicate once)
    assert m["herbrand_base"] == 32
    assert m["tn"] == 32 - 5
    assert m["herbrand_distance"] == 3
    assert m["herbrand_accuracy"] == pytest.approx(1 - 3 / 32)
    assert m["h_score"] == pytest.approx(2 / 5)
    assert m["precision"] == pytest.approx(2 / 4)   # standard FP: derived but wrong
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert m["accuracy"] == pytest.approx((2 + 27) / 32)
    assert m["partial"] is False


def test_threshold_aux_and_budget(tmp_path):
    ds = _hand_dataset(tmp_path)
    learned = tmp_path / "l.pl"
    learned.write_text("0.9::t(X,Y) :- e(X,Y).\n0.1::t(Y,X) :- e(X,Y).\n"
                       "aux1(X,Y) :- e(X,Y).\n")
    m = evaluate(ds, learned, threshold=0.5, aux=["aux1"])
    assert (m["tp"], m["fp"], m["fn"], m["rules_used"]) == (3, 0, 0, 2)
    big = tmp_path / "big.pl"
    big.write_text("t(X,Y) :- e(X,Z), e(W,Y).\n")
    m = evaluate(ds, big, max_derived=2)
    assert m["partial"] is True and "facts" in m["budget"] and m["n_learned"] == 2
    with pytest.raises(NesyError):
        evaluate(ds, big, max_derived=2, strict_budget=True)


def test_learned_auxiliary_predicates_are_accepted_in_any_order(tmp_path):
    """predicates the learned file defines are accepted (either clause order),
    and their facts are left out of the metrics as auxiliaries (paper §6)."""
    ds = _hand_dataset(tmp_path)
    plain = tmp_path / "plain.pl"
    plain.write_text("t(X,Y) :- e(X,Y).\n")
    ref = evaluate(ds, plain)
    for text in ("inv_e(X,Y) :- e(Y,X).\nt(X,Y) :- inv_e(Y,X).\n",
                 "t(X,Y) :- inv_e(Y,X).\ninv_e(X,Y) :- e(Y,X).\n"):
        lp = tmp_path / "aux.pl"
        lp.write_text(text)
        m = evaluate(ds, lp)
        assert m["auxiliary"] == ["inv_e/2"]
        for k in ("tp", "fp", "fn", "tn", "herbrand_base", "h_score", "f1"):
            assert m[k] == ref[k], k
    bad = tmp_path / "bad.pl"
    bad.write_text("t(X,Y) :- nowhere(X,Y).\n")
    with pytest.raises(NesyError, match="unknown predicate nowhere/2"):
        evaluate(ds, bad)


def test_every_predicate_of_relations_txt_is_accepted(tmp_path):
    """relations.txt lists the signature, also predicates with no fact anywhere;
    the evaluator accepts rules over every predicate it lists."""
    ds = _hand_dataset(tmp_path)
    (ds / "relations.txt").write_text("t\ne\nzz\n")
    lp = tmp_path / "l.pl"
    lp.write_text("t(X,Y) :- e(X,Y).\nt(X,Y) :- zz(X,Y).\n")
    m = evaluate(ds, lp)
    assert (m["tp"], m["fp"], m["fn"]) == (3, 0, 0) and m["auxiliary"] == []
    (ds / "relations.txt").write_text("t\ne\n")
    with pytest.raises(NesyError, match="zz/2"):
        evaluate(ds, lp)


# --- forward chaining == clingo's least model ----------------------------------------------

def _random_program(rng: random.Random, n_rules: int):
    preds = [f"q{i}" for i in range(5)]
    rules = []
    for _ in range(n_rules):
        body = []
        vars_ = ["X0", "X1", "X2", "X3"]
        for _ in range(rng.randint(1, 3)):
            body.append((rng.choice(preds), rng.choice(vars_[:3]), rng.choice(vars_ + ["c1"])))
        bvars = sorted({t for _, a, b in body for t in (a, b) if t[0] == "X"})
        head = (rng.choice(preds), rng.choice(bvars), rng.choice(bvars))
        fmt = lambda a: f"{a[0]}({a[1]},{a[2]})"  # noqa: E731
        rules.append(f"{fmt(head)} :- {', '.join(fmt(b) for b in body)}.")
    facts = {(rng.choice(preds), f"c{rng.randint(0, 6)}", f"c{rng.randint(0, 6)}")
             for _ in range(25)}
    return rules, sorted(facts)


@pytest.mark.parametrize("seed", range(6))
def test_chase_agrees_with_clingo(tmp_path, seed):
    rng = random.Random(seed)
    rules, facts = _random_program(rng, rng.randint(2, 6))   # recursion happens often
    rf, ff = tmp_path / "rules.txt", tmp_path / "facts.txt"
    rf.write_text("\n".join(rules) + "\n")
    ff.write_text("".join(f"{p}({a},{b}).\n" for p, a, b in facts))
    derived, status = chase(rf, ff)
    assert status == "complete"
    res = asp.solve([rf, "prolog/rudas/closure.lp"], facts)
    assert len(res.models) == 1
    model = {f"{a[0]}({','.join(str(x) for x in a[1:])})" for a in res.models[0]}
    given = {f"{p}({a},{b})" for p, a, b in facts}
    assert set(derived) == model - given


@pytest.mark.parametrize("seed", range(4))
def test_chase_join_strategies_agree_with_clingo(tmp_path, seed):
    """Bigger random programs (multi-atom bodies, constants, repeated variables, recursion):
    the forward (semi-naive joins), backward (check unknown candidate heads) and automatic
    strategies all give clingo's least model."""
    rng = random.Random(100 + seed)
    rules, facts = _random_program(rng, 12)
    facts = sorted(set(facts) | {(rng.choice([f"q{i}" for i in range(5)]), f"c{rng.randint(0, 9)}",
                                  f"c{rng.randint(0, 9)}") for _ in range(40)})
    rf, ff = tmp_path / "rules.txt", tmp_path / "facts.txt"
    rf.write_text("\n".join(rules) + "\n")
    ff.write_text("".join(f"{p}({a},{b}).\n" for p, a, b in facts))
    res = asp.solve([rf, "prolog/rudas/closure.lp"], facts)
    model = {f"{a[0]}({','.join(str(x) for x in a[1:])})" for a in res.models[0]}
    want = model - {f"{p}({a},{b})" for p, a, b in facts}
    assert want
    for plan, min_work in (("forward", None), ("backward", None), ("auto", None), ("auto", 0)):
        # auto with backward_min_work=0 switches rules between both ways from round to round
        derived, status = chase(rf, ff, plan=plan, backward_min_work=min_work)
        assert status == "complete" and set(derived) == want, (plan, min_work)


def test_chase_agrees_with_clingo_on_generated_dataset(tmp_path):
    ds = tmp_path / "ds"
    generate(RudasParams(category="drdg", size="xs", depth=3, seed=5), ds)
    derived, _ = chase(ds / "rules.txt", ds / "eval-support.txt")
    support = [tuple(l.rstrip(".").replace("(", ",").rstrip(")").split(","))
               for l in (ds / "eval-support.txt").read_text().split()]
    res = asp.solve([ds / "rules.txt", "prolog/rudas/closure.lp"], support)
    model = {f"{a[0]}({','.join(a[1:])})" for a in res.models[0]}
    assert set(derived) == model - {f"{s[0]}({','.join(s[1:])})" for s in support}
    # C' written by the generator is I(R, S')
    assert set(derived) == {l.rstrip(".") for l in (ds / "eval-conseqs.txt").read_text().split()}


# --- generator: categories, sizes, ratios, layout, determinism ----------------------------

def _graph(manifest):
    nodes = manifest["rule_graph"]["nodes"]
    by_head = defaultdict(list)
    for n in nodes:
        by_head[n["head"]].append(n["id"])
    parents, children = defaultdict(set), defaultdict(set)
    alternatives = []
    for n in nodes:
        for b in set(n["body"]):
            kids = [k for k in by_head.get(b, []) if k != n["id"]]
            alternatives.append(len(kids))
            for k in kids:
                children[n["id"]].add(k)
                parents[k].add(n["id"])
    return nodes, parents, children, alternatives


def _depth(nodes, children):
    roots = [n["id"] for n in nodes if n["parent"] == "none"]
    depth, frontier, seen = 0, roots, set(roots)
    while frontier:
        depth += 1
        frontier = [k for f in frontier for k in children[f] if k not in seen]
        seen.update(frontier)
    return depth


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    out = {}
    root = tmp_path_factory.mktemp("rudas")
    for cat in ("chain", "rdg", "drdg", "mixed"):
        for depth in (2, 3):
            for seed in (1, 2):
                p = RudasParams(category=cat, size="s" if seed == 1 else "xs", depth=depth,
                                seed=seed, max_components=3 if cat == "mixed" else 1)
                out[(cat, depth, seed)] = (p, generate(p, root / f"{cat}-{depth}-{seed}"))
    return out


def test_category_definitions(datasets):
    for (cat, depth, _), (_, res) in datasets.items():
        nodes, parents, children, alts = _graph(res.manifest)
        assert _depth(nodes, children) == depth
        if cat == "chain":
            assert len(nodes) == depth
            assert all(len(parents[n["id"]]) <= 1 and len(children[n["id"]]) <= 1 for n in nodes)
        if cat == "rdg":
            assert max(alts) <= 1                                   # no alternatives
            assert any(len(children[n["id"]]) >= 2 for n in nodes)  # a node with 2 children
        if cat == "drdg":
            assert max(alts) >= 2                                   # an OR node
        if cat == "mixed":
            cats = {c["category"] for c in res.manifest["components"]}
            assert len(res.manifest["components"]) >= 2 and len(cats) >= 2


def test_rules_are_safe_datalog(datasets):
    for _, (_, res) in datasets.items():
        for n in res.manifest["rule_graph"]["nodes"]:
            head, body = n["rule"].rstrip(".").split(" :- ")
            hargs = head[head.index("(") + 1:-1].split(",")
            assert all(a.startswith("X") for a in hargs)           # only variables in heads
            assert all(a in body for a in hargs)                   # every head var in body


def test_sizes_and_ratios(datasets):
    for (cat, _, seed), (p, res) in datasets.items():
        c = res.manifest["counts"]
        lo, hi = (101, 1000) if seed == 1 else (50, 100)
        assert lo <= c["train"] <= hi, (cat, seed, c)
        ds = res.path
        read = lambda f: set((ds / f).read_text().split())          # noqa: E731
        S, C, test, train = read("train-support.txt"), read("train-conseqs.txt"), read("test.txt"), read("train.txt")
        assert not S & C and test <= C and not test & train
        targets = {t.split("/")[0] for t in res.manifest["targets"]}
        is_t = lambda f: f.split("(")[0] in targets                 # noqa: E731
        CT = {f for f in C if is_t(f)}
        assert len(test & CT) == _rnd(p.n_ow * len(CT))
        assert len(test - CT) == _rnd(p.n_ow * len(C - CT))
        assert len(S - train) == _rnd(p.noise_minus * len(S))
        noise = train - S - C
        nt_train = {f for f in train if not is_t(f)}
        t_train = train - nt_train
        assert abs(len(noise - t_train) / len(nt_train) - p.noise_plus) < 0.02 + 1 / len(nt_train)
        assert abs(len(noise & t_train) / max(1, len(t_train)) - p.noise_plus) < 0.02 + 2 / max(1, len(t_train))
        assert read("train-cw.txt") == S | C and read("train-ow.txt") == (S | C) - test
        assert noise <= read("train-cw-n.txt")


def test_layout_and_formats(datasets):
    _, res = datasets[("rdg", 2, 1)]
    ds = res.path
    for f in ("rules.txt", "train.txt", "train-support.txt", "train-conseqs.txt", "train-cw.txt",
              "train-ow.txt", "train-cw-n.txt", "test.txt", "eval-support.txt",
              "eval-conseqs.txt", "eval-cw.txt", "relations.txt", "entities.txt",
              "manifest.json", "rule_graph.dot", "train.tsv", "test.tsv"):
        assert (ds / f).is_file(), f
    target = res.manifest["targets"][0].split("/")[0]
    assert {p.suffix for p in (ds / "aleph").iterdir()} == {".b", ".f", ".n"}
    assert ":- modeh(1, " in (ds / "aleph" / f"{target}.b").read_text()
    assert (ds / "train.tsv").read_text().count("\t") == 2 * sum(
        1 for l in (ds / "train.txt").read_text().splitlines() if l.count(",") == 1)
    assert json.loads((ds / "manifest.json").read_text())["counts"]["train"] == len(
        (ds / "train.txt").read_text().splitlines())


def test_same_seed_byte_identical(tmp_path):
    p = RudasParams(category="drdg", size="s", depth=3, seed=11)
    a, b = generate(p, tmp_path / "a"), generate(p, tmp_path / "b")
    assert checksums(a.path) == checksums(b.path)
    c = generate(RudasParams(category="drdg", size="s", depth=3, seed=12), tmp_path / "c")
    assert checksums(c.path)["train.txt"] != checksums(a.path)["train.txt"]


@pytest.mark.parametrize("seed", [5, 11])
def test_xs_multi_component_stays_in_size_class(tmp_path, seed):
    """Three components of depth 3: one round instantiating all of them overshot XS (164
    and 212 training facts for these seeds); the generator now steps one component at a
    time near its goal."""
    p = RudasParams(category="mixed", size="xs", depth=3, max_components=3, seed=seed)
    res = generate(p, tmp_path / "ds")
    assert 50 <= res.manifest["counts"]["train"] <= 100
    assert len((tmp_path / "ds" / "train.txt").read_text().splitlines()) == res.manifest["counts"]["train"]


def test_size_class_unreachable_is_an_error(tmp_path, capsys):
    # rules whose bodies join widely: one instantiation already yields hundreds of facts
    out = tmp_path / "ds"
    args = ["rudas", "generate", "--out", str(out), "--size", "xs", "--category", "drdg",
            "--depth", "3", "--max-body", "4", "--p-v", "0", "--p-h", "0",
            "--n-constants", "60", "--seed", "0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "size class xs (50..100 facts)" in err
    assert not out.exists()


# --- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("args,msg", [
    (["--depth", "9", "--n-predicates", "5"], "needs at least"),
    (["--size", "m", "--n-constants", "3"], "impossible"),
    (["--category", "rdg", "--max-body", "1"], "max_body"),
    (["--n-ow", "1.5"], "n_ow"),
    (["--category", "mixed"], "max_components"),
])
def test_inconsistent_parameters(tmp_path, capsys, args, msg):
    out = tmp_path / "ds"
    assert main(["rudas", "generate", "--out", str(out), *args]) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text,msg,line", [
    ("t(X,Y) :- e(X,Y).\nt(X,Y) :- e(X Y).\n", "syntax error", 2),
    ("t(X,Y) :- e(X,Z).\n", "unsafe", 1),
    ("t(X,Y) :- e(X,Y).\n\nt(X,Y) :- nope(X,Y).\n", "unknown predicate nope/2", 3),
    (":- halt.\n", "directive", 1),
])
def test_bad_learned_file(tmp_path, capsys, text, msg, line):
    ds = _hand_dataset(tmp_path)
    lf = tmp_path / "learned.pl"
    lf.write_text(text)
    assert main(["rudas", "evaluate", str(ds), str(lf)]) == 2
    err = capsys.readouterr().err
    assert msg in err and f"learned.pl:{line}:" in err


def test_cli_evaluate_json(tmp_path, capsys):
    ds = _hand_dataset(tmp_path)
    assert main(["rudas", "evaluate", str(ds), str(ds / "rules.txt"), "--json"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["h_score"] == 1.0 and m["r_score"] == 1.0 and m["f1"] == 1.0


def test_cli_suite_small(tmp_path, capsys):
    out = tmp_path / "suite"
    assert main(["rudas", "suite", "--out", str(out), "--per-cell", "1", "--json"]) == 0
    index = json.loads(capsys.readouterr().out)
    assert len(index["datasets"]) == 12
    learned = tmp_path / "learned"
    learned.mkdir()
    name = index["datasets"][0]["name"]
    (learned / f"{name}.pl").write_text((out / name / "rules.txt").read_text())
    assert main(["rudas", "table", str(out), str(learned), "--json"]) == 0
    t = json.loads(capsys.readouterr().out)
    assert t["rows"][0]["h_score"] == 1.0 and t["missing"] == 11


# --- productive recursion, every rule instantiated ---------------------------------

def _atoms(text: str) -> list[tuple[str, tuple[str, ...]]]:
    import re
    return [(n, tuple(a.strip() for a in args.split(",")))
            for n, args in re.findall(r"(\w+)\(([^)]*)\)", text)]


def _body_holds(body, facts: set) -> bool:
    """Naive join (XS sizes): some grounding of the body's variables makes every atom a fact."""
    by_pred = defaultdict(list)
    for f in facts:
        by_pred[f[0]].append(f[1])

    def go(i, env):
        if i == len(body):
            return True
        name, args = body[i]
        for tup in by_pred[name]:
            if len(tup) != len(args):
                continue
            env2, ok = dict(env), True
            for a, c in zip(args, tup):
                if a[0].isupper():
                    if env2.setdefault(a, c) != c:
                        ok = False
                        break
                elif a != c:
                    ok = False
                    break
            if ok and go(i + 1, env2):
                return True
        return False

    return go(0, {})


def test_recursion_is_productive_and_drawn(tmp_path):
    """with --p-recursion no rule has its head atom in its body (16 of 48
    recursive rules did, e.g. `p3(X0,X1) :- p3(X0,X1).`), and the manifest and the DOT picture
    carry the recursive edge."""
    n_rec = 0
    for seed in range(8):
        res = generate(RudasParams(category="rdg", size="xs", p_recursion=1.0, seed=seed),
                       tmp_path / f"d{seed}")
        graph = res.manifest["rule_graph"]
        rec_edges = {(e["child"], e["parent"]) for e in graph["edges"] if e.get("recursive")}
        dot = (tmp_path / f"d{seed}" / "rule_graph.dot").read_text()
        for node in graph["nodes"]:
            head_text, _, body_text = node["rule"].rstrip(".").partition(" :- ")
            head, body = _atoms(head_text)[0], _atoms(body_text)
            assert head not in body, node["rule"]
            if node["head"] in node["body"]:
                n_rec += 1
                assert (node["id"], node["id"]) in rec_edges
                assert f'{node["id"]} -> {node["id"]} [style=dashed, label="rec"]' in dot \
                    or f"or_rec_{node['id']}" in dot
    assert n_rec >= 8


def test_every_rule_has_an_instance_in_the_evaluation_set(tmp_path):
    """every rule has an instantiation in S' ∪ C' (MIXED XS: 6 of 283 rules had
    none); the manifest lists the rules without one in the training sets (none here in D)."""
    for seed in range(6):
        res = generate(RudasParams(category="mixed", size="xs", min_components=2,
                                   max_components=2, seed=seed), tmp_path / f"m{seed}")
        unc = res.manifest["uncovered_rules"]
        assert unc["eval"] == [] and unc["train_cw"] == []
        ds = tmp_path / f"m{seed}"
        ecw = {a for line in (ds / "eval-cw.txt").read_text().splitlines()
               for a in _atoms(line)}
        train = {a for line in (ds / "train.txt").read_text().splitlines() for a in _atoms(line)}
        for node in res.manifest["rule_graph"]["nodes"]:
            body = _atoms(node["rule"].rstrip(".").partition(" :- ")[2])
            assert _body_holds(body, ecw), (seed, node["rule"])
            assert _body_holds(body, train) == (node["id"] not in unc["train"]), node["rule"]
