"""Edge cases of the figures a paper reports, each against an independent computation: the
definition written out by hand, scipy, scikit-learn, brute force, or samples labelled by hand
from the task descriptions (never the rule text or code under test).

``benchmarks/planted_bugs.py`` plants plausible one-line bugs in a copy of the sources and
checks that these tests catch every one of them.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------- continual-learning metrics
def _forgetting_by_definition(A, z):
    """Chaudhry et al.: for each earlier task j, the best accuracy on j at any time before z
    minus the accuracy on j now; averaged over j < z."""
    terms = []
    for j in range(z):
        best = max(A[k][j] for k in range(z))
        terms.append(best - A[z][j])
    return sum(terms) / len(terms)


def test_forgetting_of_a_rising_accuracy_matrix_is_negative():
    from nesybench.kandy.learn.metrics import average_forgetting
    # every task gets better as later tasks are learned: nothing is forgotten, the measure
    # is below zero (the best earlier accuracy is below today's)
    A = [[0.5, 0.5, 0.5],
         [0.6, 0.7, 0.5],
         [0.8, 0.9, 0.9]]
    assert average_forgetting(A, 1) == pytest.approx(0.5 - 0.6)
    assert average_forgetting(A, 2) == pytest.approx(((0.6 - 0.8) + (0.7 - 0.9)) / 2)
    for z in (1, 2):
        assert average_forgetting(A, z) == pytest.approx(_forgetting_by_definition(A, z))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 5).flatmap(lambda n: st.lists(
    st.lists(st.floats(0, 1, allow_nan=False), min_size=n, max_size=n), min_size=n, max_size=n)))
def test_forgetting_matches_its_definition(A):
    from nesybench.kandy.learn.metrics import average_forgetting
    for z in range(1, len(A)):
        assert average_forgetting(A, z) == pytest.approx(_forgetting_by_definition(A, z), abs=1e-12)


def test_learn_summary_values_not_just_keys():
    from nesybench.kandy.learn.metrics import over_time
    A = np.array([[0.9, 0.5], [0.6, 0.8]])
    s = over_time(A)
    assert s["forgetting"][1] == pytest.approx(0.3)
    assert s["bwt"][1] == pytest.approx(0.0)            # raw BWT 0.6 - 0.9 < 0, clipped
    assert s["avg_acc"][1] == pytest.approx(0.7)


# ------------------------------------------------------------------------- SKI Mann–Whitney
@pytest.mark.parametrize("a, b", [
    ([0.5] * 5, [0.5] * 5),                  # equal constants: no evidence of a difference
    ([0.5] * 5, [0.7] * 5),                  # two different constants: perfectly separated
    ([0.1, 0.2, 0.3], [0.7, 0.8, 0.9]),
    ([0.1, 0.5, 0.5, 0.9], [0.5, 0.5, 0.6]),
])
def test_mann_whitney_agrees_with_scipy(a, b):
    from scipy.stats import mannwhitneyu
    from nesybench.ski.scores import mann_whitney
    got = mann_whitney(a, b)
    if len(set(a) | set(b)) == 1:
        assert got == 1.0
    else:
        assert got == pytest.approx(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if set(a) != set(b) and len(set(a)) == len(set(b)) == 1:
        assert got < 0.05


# ------------------------------------------------------------------------------------- IRT
def _posterior_sd_by_grid(U_row, b, s):
    """Posterior SD of θ under the 1PL P(u=1) = σ(θ − b) and the prior N(0, s²), by a fine
    grid (independent of the fit's quadrature)."""
    grid = np.linspace(-10, 10, 4001)
    z = grid[:, None] - b[None, :]
    loglik = (U_row[None, :] * -np.logaddexp(0, -z) + (1 - U_row[None, :]) * -np.logaddexp(0, z)).sum(1)
    logp = loglik - grid ** 2 / (2 * s ** 2)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    m = (w * grid).sum()
    return math.sqrt((w * (grid - m) ** 2).sum())


def test_irt_1pl_recovers_absolute_difficulties_and_scale_with_ability_sd_2():
    from nesybench.irt.fit import fit_irt, simulate
    U, theta, a, b = simulate(3000, 25, "1pl", seed=4, theta_sd=2.0, b_sd=1.5)
    f = fit_irt(U, "1pl", quad="rect")
    err = np.abs(f.b - b)
    assert np.nanmean(err) < 0.12 and np.nanmax(err) < 0.4     # logits, not rescaled
    assert f.latent_sd == pytest.approx(2.0, rel=0.08)
    assert np.polyfit(b, f.b, 1)[0] == pytest.approx(1.0, abs=0.06)   # slope 1, not 1/2


def test_irt_theta_sd_is_the_posterior_sd():
    from nesybench.irt.fit import fit_irt, simulate
    U, theta, a, b = simulate(400, 15, "1pl", seed=2, theta_sd=1.5)
    f = fit_irt(U, "1pl", quad="rect")
    ref = np.array([_posterior_sd_by_grid(U[j].astype(float), f.b, f.latent_sd)
                    for j in range(0, 400, 20)])
    got = f.theta_sd[::20]
    assert np.max(np.abs(got - ref)) < 0.08
    assert np.all(got < 1.2)                 # a posterior SD, not sqrt(E[θ²]) (≈ |θ|)


def test_irt_2pl_recovers_discriminations_with_ability_sd_not_1():
    from nesybench.irt.fit import fit_irt, simulate
    U, theta, a, b = simulate(4000, 20, "2pl", seed=7, theta_sd=1.0)
    f = fit_irt(U, "2pl", quad="rect")
    assert np.nanmean(np.abs(f.b - b)) < 0.15
    assert np.nanmean(np.abs(f.a - a)) < 0.15


# ---------------------------------------------------------------------------- RS count
def _linear_task(coefs, depends, free_domain):
    from nesybench.shortcuts.task import load_task
    return load_task({"name": "tiny", "knowledge": "kb/shortcuts/linear.lp", "maps": "separate",
                      "concepts": [{"name": "a", "count": 2, "domain": [0, 1]},
                                   {"name": "z", "domain": list(range(free_domain))}],
                      "coef": coefs, "depends": depends})


def test_supervision_on_a_variable_no_label_reads():
    from nesybench.shortcuts.count import brute_force, count_rs
    t = _linear_task({"p": {"a(1)": 1}, "q": {"a(2)": 2}}, {"p": ["a(1)"], "q": ["a(2)"]}, 3)
    for engine in ("asp", "auto"):
        assert count_rs(t, engine=engine, supervised=["z"]).count == \
            brute_force(t, t.support(), maps="separate", supervised=["z"]) == 1
        assert count_rs(t, engine=engine).count == 27


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2), st.integers(0, 2), st.integers(2, 3),
       st.sampled_from([[], ["z"], ["a(1)"], ["a(2)"], ["a(1)", "z"]]), st.booleans())
def test_random_tiny_tasks_with_supervision_and_depends_match_brute_force(c1, c2, dz, sup, both):
    from nesybench.shortcuts.count import brute_force, count_rs
    coefs = {"p": {"a(1)": c1 or 1}, "q": {"a(2)": c2 or 1}}
    depends = {"p": ["a(1)"], "q": ["a(2)"]}
    if both:
        coefs["p"]["a(2)"] = 1
        depends["p"] = ["a(1)", "a(2)"]
    t = _linear_task(coefs, depends, dz)
    assert count_rs(t, engine="asp", supervised=sup or None).count == \
        brute_force(t, t.support(), maps="separate", supervised=sup)


# ---------------------------------------------------------------------------- RS macro-F1
@pytest.mark.parametrize("true, pred", [
    ([0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 1, 1]),        # class 1 and 2 never right
    ([0, 1, 2, 2], [0, 2, 1, 1]),
    ([0, 0, 0, 1], [0, 0, 0, 0]),                    # class 1 never predicted
])
def test_macro_f1_counts_classes_with_zero_true_positives(true, pred):
    from sklearn.metrics import confusion_matrix, f1_score
    from nesybench.shortcuts.metrics import macro_f1
    labels = sorted(set(true) | set(pred))
    c = confusion_matrix(true, pred, labels=labels)
    assert macro_f1(c) == pytest.approx(f1_score(true, pred, labels=labels, average="macro",
                                                 zero_division=0))


# -------------------------------------------------------------- KANDY supervision schedule
@pytest.mark.parametrize("gamma, beta", [(1.0, 0.1), (0.9, 0.3), (0.5, 0.5)])
def test_supervision_schedule_is_the_formula_at_several_points(gamma, beta):
    from nesybench.kandy.sampler import supervision_probability
    sigma = math.log(gamma / beta)
    for t in (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0):
        assert supervision_probability(t, gamma, beta) == pytest.approx(gamma * math.exp(-sigma * t))
    assert supervision_probability(1.0, gamma, beta) == pytest.approx(beta)


def test_supervision_time_runs_from_0_to_1_along_a_split(monkeypatch, tmp_path):
    """The i-th of n samples of a split gets t = i / (n - 1): the first one γ, the last β."""
    import nesybench.kandy.sampler as S
    from nesybench.kandy.generate import generate
    seen: list[float] = []
    real = S.supervision_probability

    def spy(t, gamma, beta):
        seen.append(t)
        return real(t, gamma, beta)
    monkeypatch.setattr(S, "supervision_probability", spy)
    generate(ROOT / "tests/data/reference_style.yaml", tmp_path / "o", tasks=[0], samples=12,
             images=False)
    runs, cur = [], []
    for t in seen:                        # one run per split, each starting at t = 0
        if t == 0.0 and cur:
            runs.append(cur)
            cur = []
        cur.append(t)
    runs.append(cur)
    assert len(runs) >= 2 and all(len(r) >= 2 for r in runs)
    for r in runs:
        n = len(r)
        assert r == pytest.approx([i / (n - 1) for i in range(n)])
        assert r[-1] == 1.0


# ------------------------------------------------- KANDY background knowledge, hand-labelled
def _check(rule_text: str, samples: list[str]) -> list[bool]:
    from nesybench.kandy.rules import TaskRule
    return TaskRule(rule_text, source="oracle", field="rule").check(samples)


#: (rule over one background-knowledge predicate, [(sample, valid?)]), labelled by hand from
#: the predicate's meaning in the KANDY paper's background knowledge
BK_CASES = {
    "same_color": ("valid(C) :- extract_children(C, L), same_color(_, L).", [
        ("in([circle_red_small, square_red_large, triangle_red_small])", True),
        ("in([circle_red_small, square_blue_large, triangle_red_small])", False),
        ("in([circle_red_small, square_red_large, triangle_blue_small])", False),
        ("in([circle_blue_small, square_red_large, triangle_red_small])", False),
        ("in([square_green_small])", True),
    ]),
    "same_shape": ("valid(C) :- extract_children(C, L), same_shape(_, L).", [
        ("in([circle_red_small, circle_blue_large, circle_green_small])", True),
        ("in([circle_red_small, square_red_large, circle_red_small])", False),
        ("in([circle_red_small, circle_red_large, square_red_small])", False),
    ]),
    "same_size": ("valid(C) :- extract_children(C, L), same_size(_, L).", [
        ("in([circle_red_large, square_blue_large])", True),
        ("in([circle_red_large, square_blue_small, triangle_red_large])", False),
    ]),
    "exists_color": ("valid(C) :- extract_children(C, L), exists_color(blue, L).", [
        ("in([circle_red_small, square_blue_large])", True),
        ("in([circle_red_small, square_green_large, triangle_blue_small])", True),
        ("in([circle_red_small, square_green_large])", False),
    ]),
    "exists_shape": ("valid(C) :- extract_children(C, L), exists_shape(square, L).", [
        ("in([circle_red_small, triangle_red_small, square_blue_large])", True),
        ("in([circle_red_small, triangle_red_small])", False),
    ]),
    "exists_size": ("valid(C) :- extract_children(C, L), exists_size(large, L).", [
        ("in([circle_red_small, square_blue_large])", True),
        ("in([circle_red_small, square_blue_small])", False),
    ]),
    "contains": ("valid(C) :- contains(C, X), extract_shape(X, triangle).", [
        ("side_by_side([circle_red_small, triangle_red_small])", True),
        ("side_by_side([circle_red_small, stack([triangle_red_small])])", False),   # nested
    ]),
    "recursive_contains": ("valid(C) :- recursive_contains(C, X), extract_shape(X, triangle).", [
        ("side_by_side([circle_red_small, stack([triangle_red_small])])", True),
        ("side_by_side([circle_red_small, stack([in([square_red_small, triangle_blue_large])])])", True),
        ("side_by_side([circle_red_small, stack([square_red_small])])", False),
    ]),
}


@pytest.mark.parametrize("name", sorted(BK_CASES))
def test_background_knowledge_on_hand_labelled_samples(name):
    rule, cases = BK_CASES[name]
    samples = [s for s, _ in cases]
    assert _check(rule + "\n", samples) == [v for _, v in cases]


#: shipped rules, checked on samples labelled by hand from the task names of the paper
#: (supplementary §4.6): positives first, then negatives
RULE_CASES = {
    "easy/t00.pl": (["in([triangle_red_small, circle_blue_large])"],          # triangle
                    ["in([circle_red_small, square_blue_large])"]),
    "easy/t01.pl": (["in([square_green_small])"],                              # square
                    ["in([circle_red_small, triangle_blue_large])"]),
    "easy/t02.pl": (["in([square_green_small, circle_cyan_large])"],           # circle
                    ["in([square_green_small])"]),
    "easy/t03.pl": (["in([circle_red_small])"],                                # red
                    ["in([circle_blue_small, square_green_large])"]),
    "easy/t04.pl": (["in([square_green_large])"], ["in([square_red_large])"]),  # green
    "easy/t05.pl": (["in([square_blue_large])"], ["in([square_red_large])"]),   # blue
    "easy/t13.pl": (["in([triangle_red_small, square_red_large])",              # same colour
                     "side_by_side([stack([triangle_green_small]), square_green_small])"],
                    ["in([triangle_red_small, square_blue_large])",
                     "in([triangle_red_small, circle_red_large])"]),
    "hard/t00.pl": (["side_by_side([in([circle_red_small, square_red_large])])"],  # dimer, 1 colour
                    ["side_by_side([in([circle_red_small, square_blue_large])])",
                     "side_by_side([in([circle_red_small, square_red_large, triangle_red_small])])"]),
    "hard/t02.pl": (["side_by_side([in([circle_red_small, square_red_large, triangle_red_small])])"],
                    ["side_by_side([in([circle_red_small, square_blue_large, triangle_red_small])])",
                     "side_by_side([in([circle_red_small, square_red_large])])"]),  # trimer, 1 colour
    "hard/t15.pl": (["in([circle_red_small, square_red_large, triangle_red_small])",  # odd: colour
                     "in([circle_red_small, circle_blue_large])"],                    # even: shape
                    ["in([circle_red_small, square_blue_large, triangle_red_small])",
                     "in([circle_red_small, square_red_large])"]),
}


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_shipped_rules_on_hand_labelled_samples(rule):
    pos, neg = RULE_CASES[rule]
    text = (ROOT / "kb" / "kandy" / "rules" / rule).read_text()
    assert _check(text, pos + neg) == [True] * len(pos) + [False] * len(neg)
