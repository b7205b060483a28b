"""Kappa, perturbation, bins, masks and the taxonomy, against hand computations."""
import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.irt.curves import (bin_means, cohen_kappa, equal_frequency_bins,
                                  perturbation_masks, scc_table)
from nesybench.irt.perturb import Perturber, nominal_alpha, nominal_distribution
from nesybench.irt.taxonomy import cluster_profiles


def test_kappa_hand_computed():
    # 10 items, two raters over {a, b}:
    #   both a: 4, both b: 3, r1 a / r2 b: 2, r1 b / r2 a: 1
    r1 = ["a"] * 4 + ["b"] * 3 + ["a"] * 2 + ["b"] * 1
    r2 = ["a"] * 4 + ["b"] * 3 + ["b"] * 2 + ["a"] * 1
    # p_o = 7/10; p1(a) = 6/10, p2(a) = 5/10 -> p_e = .6*.5 + .4*.5 = .5; kappa = .2/.5 = .4
    assert cohen_kappa(np.array(r1), np.array(r2)) == pytest.approx(0.4)
    # against sklearn on random labels
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    b[:120] = a[:120]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))


def test_kappa_edge_cases():
    assert cohen_kappa(np.array([2, 2, 2]), np.array([2, 2, 2])) == 1.0   # identical constants
    assert cohen_kappa(np.array([1, 2]), np.array([1, 2])) == 1.0
    assert np.isnan(cohen_kappa(np.array([]), np.array([])))
    # a constant rater against a varying one agrees only by chance: kappa 0
    assert cohen_kappa(np.array([0, 0, 0, 0]), np.array([0, 1, 0, 1])) == pytest.approx(0.0)


def test_nominal_alpha_formula():
    assert nominal_alpha(0.0) == 0.0
    assert nominal_alpha(0.2) == pytest.approx(1 - np.exp(-0.2))     # 0.18127
    assert nominal_alpha(0.2) == pytest.approx(0.181269, abs=1e-6)
    p = np.array([0.5, 0.3, 0.2])
    pp = nominal_distribution(2, p, 0.2)
    a = 1 - np.exp(-0.2)
    assert pp == pytest.approx([a * 0.5, a * 0.3, a * 0.2 + (1 - a)])
    assert pp.sum() == pytest.approx(1.0)


def test_perturber_uses_training_statistics():
    rng = np.random.default_rng(1)
    Xtr = np.column_stack([rng.normal(0, 3.0, 5000), rng.integers(0, 3, 5000)])
    # the nominal column: frequencies 0.6 / 0.3 / 0.1 in training
    Xtr[:, 1] = np.repeat([0, 1, 2], [3000, 1500, 500])
    per = Perturber(0.2, np.array([False, True])).fit(Xtr, [None, 3])
    assert per.sigma[0] == pytest.approx(Xtr[:, 0].std())
    assert per.freqs[0] == pytest.approx([0.6, 0.3, 0.1])
    Xte = np.column_stack([np.zeros(40000), np.full(40000, 2.0)])
    out = per.apply(Xte, np.random.default_rng(2))
    # numeric: x' - x ~ N(0, (σν)²)
    assert out[:, 0].std() == pytest.approx(per.sigma[0] * 0.2, rel=0.03)
    # nominal: P(x' = c) = p'(c) = α p_c + (1 − α) [c = 2]
    want = nominal_distribution(2, per.freqs[0], 0.2)
    got = np.bincount(out[:, 1].astype(int), minlength=3) / out.shape[0]
    assert got == pytest.approx(want, abs=0.01)


def test_equal_frequency_bins():
    rng = np.random.default_rng(3)
    b = rng.normal(size=103)
    b[[5, 17]] = np.nan
    bins = equal_frequency_bins(b, 5)
    assert bins[5] == -1 and bins[17] == -1
    sizes = np.bincount(bins[bins >= 0])
    assert sizes.tolist() == [21, 20, 20, 20, 20]           # 101 items: sizes differ by ≤ 1
    # bins are ordered: every item of bin k is easier than every item of bin k + 1
    for k in range(4):
        assert b[bins == k].max() <= b[bins == k + 1].min()
    means = bin_means(b, bins, 5)
    assert np.all(np.diff(means) > 0)
    with pytest.raises(NesyError):
        equal_frequency_bins(np.array([0.1, np.nan]), 5)


def test_perturbation_masks_exact_and_nested():
    bins = np.repeat([0, 1, 2, -1], [10, 20, 5, 4])
    m = perturbation_masks(bins, (0.0, 0.2, 0.4, 1.0), seed=7)
    assert m[0].sum() == 0
    for d, delta in enumerate((0.0, 0.2, 0.4, 1.0)):
        for k, n in ((0, 10), (1, 20), (2, 5)):
            assert m[d, bins == k].sum() == round(delta * n)
    assert not m[:, bins == -1].any()
    assert np.all(m[1] <= m[2]) and np.all(m[2] <= m[3])


def test_scc_table_shapes_and_delta_zero():
    bins = np.array([0, 0, 1, 1])
    clean = np.array([1, 2, 1, 2])
    pert = np.array([[1, 2, 1, 2], [1, 2, 2, 1]])
    t = scc_table(clean, pert, bins, 2)
    assert t.shape == (2, 2)
    assert t[0].tolist() == [1.0, 1.0]
    assert t[1, 0] == 1.0 and t[1, 1] == pytest.approx(-1.0)


def test_taxonomy_recovers_constructed_clusters():
    rng = np.random.default_rng(4)
    centres = np.array([[1.0] * 6, [0.5] * 6, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]])
    labels, rows, truth = [], [], []
    for c, centre in enumerate(centres):
        for i in range(4):
            labels.append(f"m{c}{i}")
            rows.append(centre + rng.normal(0, 0.02, 6))
            truth.append(c)
    tax = cluster_profiles(np.array(rows), labels, k=3)
    # same cluster iff same centre
    for i in range(12):
        for j in range(12):
            assert (tax.clusters[i] == tax.clusters[j]) == (truth[i] == truth[j])
    groups = sorted(sorted(g) for g in tax.groups())
    assert groups == [[f"m{c}{i}" for i in range(4)] for c in range(3)]
    assert tax.linkage.shape == (11, 4)
    with pytest.raises(NesyError, match="NaN"):
        cluster_profiles(np.array([[np.nan, 1.0], [0.0, 1.0]]), ["a", "b"])


def test_tied_difficulties_stay_in_one_bin():
    """A 1PL difficulty on few respondents takes few values: identical instances must not be
    split between bins by their position in the file (e.g. 204 tied went 197/7 before)."""
    b = np.concatenate([np.full(204, -4.89), np.linspace(-3, 3, 796)])
    b = np.random.default_rng(0).permutation(b)
    bins = equal_frequency_bins(b, 5)
    tied = bins[b == -4.89]
    assert np.unique(tied).size == 1 and tied[0] == 0
    sizes = np.bincount(bins)
    assert sizes.tolist() == [204, 196, 200, 200, 200]      # the tie moves the cut by 4
    # every bin is an interval of difficulties
    for k in range(4):
        assert b[bins == k].max() < b[bins == k + 1].min()
    # a tie bigger than a bin leaves fewer, consecutive bins, none empty
    b2 = np.concatenate([np.zeros(60), np.arange(1.0, 41.0)])
    bins2 = equal_frequency_bins(b2, 5)
    assert np.unique(bins2).tolist() == list(range(bins2.max() + 1))
    assert np.unique(bins2[:60]).size == 1 and (np.bincount(bins2) > 0).all()
    assert np.bincount(bins2).tolist() == [60, 20, 20]


def test_ties_kept_together_property():
    from hypothesis import given, settings, strategies as st

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(-5, 5), min_size=5, max_size=80), st.integers(1, 5))
    def check(values, k):
        b = np.array(values, dtype=float)
        bins = equal_frequency_bins(b, k)
        for v in np.unique(b):
            assert np.unique(bins[b == v]).size == 1
        order = np.argsort(b, kind="stable")
        assert np.all(np.diff(bins[order]) >= 0)              # monotone in b
        assert np.unique(bins).tolist() == list(range(bins.max() + 1))
        if np.unique(b).size == b.size:                       # no ties: sizes differ by ≤ 1
            sizes = np.bincount(bins)
            assert sizes.size == k and sizes.max() - sizes.min() <= 1
    check()


def test_taxonomy_agreement_with_the_paper_by_hand():
    from nesybench.irt.taxonomy import PAPER_TAXONOMY, agreement
    same = agreement(PAPER_TAXONOMY)
    assert same["families"] == 18 and same["pairs"] == 153
    assert same["pairs_alike"] == 153 and same["adjusted_rand"] == pytest.approx(1.0)
    # move NB from the first cluster to the second: its 3 old partners and 7 new ones differ
    moved = [tuple(m for m in PAPER_TAXONOMY[0] if m != "NB"), PAPER_TAXONOMY[1] + ("NB",),
             PAPER_TAXONOMY[2]]
    a = agreement(moved)
    assert a["pairs_alike"] == 153 - 3 - 7 and a["adjusted_rand"] < 1.0
    # families the paper does not have are ignored
    assert agreement([("LDA", "SVMRBF"), ("NB",), ("C5.0",)])["families"] == 2


def test_binning_and_kappa_edges():
    from nesybench.irt.curves import DELTAS, N_BINS
    assert DELTAS == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)          # the paper's proportions δ
    assert N_BINS == 5                                        # and its five difficulty bins
    with pytest.raises(NesyError):
        equal_frequency_bins(np.arange(10.0), 0)
    # a tie straddling the cut between bin 0 (ranks 0-19) and bin 1 (20-39) goes whole to the
    # bin that holds its middle: ranks 16..25 (4 in bin 0, 6 in bin 1) -> bin 1
    b = np.arange(100.0)
    b[16:26] = 16.0
    bins = equal_frequency_bins(b, 5)
    assert set(bins[16:26]) == {1} and bins[15] == 0 and np.bincount(bins)[0] == 16
    # ranks 14..24 (6 in bin 0, 5 in bin 1) -> bin 0
    b = np.arange(100.0)
    b[14:25] = 14.0
    bins = equal_frequency_bins(b, 5)
    assert set(bins[14:25]) == {0} and np.bincount(bins)[0] == 25
    assert cohen_kappa(np.array([1]), np.array([1])) == 1.0
    assert cohen_kappa(np.array([1]), np.array([2])) == 0.0
    assert cohen_kappa(np.array([3, 3, 3]), np.array([3, 3, 3])) == 1.0
