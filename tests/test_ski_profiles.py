"""SKI readings of the paper (--profile): degradations in distribution, early stopping equal
to training for the stop epoch, profile options, the extra robustness columns by hand."""
import numpy as np
import pytest
import torch

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.ski import cells, degrade, injectors, profiles, report, scores, stopping
from nesybench.ski.data import FeatureGroup
from nesybench.ski.ensemble import Members

torch.set_num_threads(1)


def test_bernoulli_drop_rate_and_spread():
    """paper: each row independently with probability p — the kept count is Binomial(n, 1−p)
    per class (the stratified reading keeps exactly n − round(p·n))."""
    y = np.repeat([0, 1], [300, 100])
    p = 0.35
    kept = np.array([[np.sum(y[degrade.drop_bernoulli(y, p, np.random.default_rng(s))] == k)
                      for k in (0, 1)] for s in range(400)])
    for k, n in ((0, 300), (1, 100)):
        mean, var = kept[:, k].mean(), kept[:, k].var(ddof=1)
        assert mean == pytest.approx(n * (1 - p), abs=4 * np.sqrt(n * p * (1 - p) / 400))
        assert var == pytest.approx(n * p * (1 - p), rel=0.25)
    exact = degrade.drop(y, p, np.random.default_rng(0))
    assert np.bincount(y[exact]).tolist() == [300 - 105, 100 - 35]
    # a class that would vanish keeps one row
    tiny = np.repeat([0, 1], [500, 1])
    assert all(1 in tiny[degrade.drop_bernoulli(tiny, 0.95, np.random.default_rng(s))]
               for s in range(50))


def test_raw_noise_has_variance_v_on_the_raw_scale():
    rng = np.random.default_rng(0)
    n = 20000
    X = np.stack([rng.normal(0, 10, n), rng.integers(1, 11, n).astype(float)], axis=1)
    groups = [FeatureGroup("num", "numeric", (0,), X[:, 0].min(), X[:, 0].max(), 10.0),
              FeatureGroup("ord", "ordinal", (1,), 1.0, 10.0, float(X[:, 1].std()))]
    v = 0.4
    raw = degrade.noise(X, groups, v, np.random.default_rng(1), scale="raw") - X
    assert raw[:, 0].var() == pytest.approx(v, rel=0.05)              # N(0, v), not v·σ²
    # ordinal: round(√v·Z), the discretised counterpart, not clipped to 1..10
    z = np.round(np.sqrt(v) * np.random.default_rng(9).standard_normal(200000))
    assert raw[:, 1].var() == pytest.approx(z.var(), rel=0.05)
    noisy = degrade.noise(X, groups, v, np.random.default_rng(1), scale="raw")
    assert noisy[:, 1].max() > 10 or noisy[:, 1].min() < 1
    scaled = degrade.noise(X, groups, v, np.random.default_rng(1)) - X
    assert scaled[:, 0].var() == pytest.approx(v * 100, rel=0.1)        # v·σ², σ = 10


def _toy(E=3, N=60, D=4, K=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(1, N, D, generator=g)
    y = (X[0, :, 0] > 0).long() + (X[0, :, 1] > 0.5).long()
    rows = [torch.arange(N)[: N - 5 * e] for e in range(E)]
    return Members(X, y.unsqueeze(0), rows)


@pytest.mark.parametrize("engine", ["native", "torch"])
def test_early_stopping_equals_training_until_the_stop_epoch(engine):
    """A member stopped at epoch e has exactly the weights of the same member trained for e
    epochs on the same (training part of its) rows."""
    data = _toy()
    seeds = [11, 12, 13]
    net = injectors.make("uneducated", 4, 3, [8], None, epochs=60, batch_size=8,
                         engine=engine, patience=3, lr=0.05)
    net.fit(data, seeds)
    stopped = net.epochs_trained
    assert (stopped < 60).any()                  # lr 0.05 on 60 rows: it does stop early
    train, _val = stopping.split_validation(data, seeds, 0.1)
    for e in range(3):
        ref = injectors.make("uneducated", 4, 3, [8], None, epochs=int(stopped[e]),
                             batch_size=8, engine=engine, lr=0.05)
        ref.fit(train.select([e]), [seeds[e]])
        for a, b in zip(net.params, ref.params):
            assert torch.equal(a[e], b[0]), (e, stopped[e])


def test_validation_split_is_disjoint_and_seeded():
    data = _toy()
    tr, val = stopping.split_validation(data, [1, 2, 3], 0.1)
    for e in range(3):
        a, b = set(tr.rows[e].tolist()), set(val[e].tolist())
        assert not a & b and a | b == set(data.rows[e].tolist())
        assert len(b) == round(0.1 * len(data.rows[e]))
    tr2, val2 = stopping.split_validation(data, [1, 2, 3], 0.1)
    assert all(torch.equal(x, y) for x, y in zip(val, val2))


def test_profile_options_reach_the_predictor_and_the_user_wins():
    ds = cells.dataset("bcw")
    p = cells.make_predictor({"injector": "kbann", "profile": "psyki"}, ds)
    assert (p.opts["omega"], p.opts["extra_units"], p.opts["mofn"]) == (4.0, 0, "psyki")
    p = cells.make_predictor({"injector": "kbann", "profile": "psyki",
                              "options": {"kbann": {"omega": 5}}}, ds)
    assert p.opts["omega"] == 5.0
    p = cells.make_predictor({"injector": "kill", "profile": "paper"}, ds)
    assert p.train_cfg.patience == 10
    assert cells.make_predictor({"injector": "kill"}, ds).train_cfg.patience is None
    with pytest.raises(NesyError, match="unknown profile"):
        profiles.get("keras")


def test_paper_profile_study_records_and_reports(tmp_path, capsys):
    out = tmp_path / "s"
    code = main(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated,kbann",
                 "--degradations", "drop", "--reps", "2", "--epochs", "3", "--level-stride",
                 "5", "--profile", "paper", "--executor", "inline", "--out", str(out), "-q"])
    assert not code
    rows = report.table1(out / "bcw")
    assert rows[0]["profile"] == "paper"
    data = report.collect(out / "bcw")
    levels = sorted(data[("bcw", "drop", "kbann")])
    e, u = data[("bcw", "drop", "kbann")], data[("bcw", "drop", "uneducated")]
    # p over the per-level means and the AUC ratio, by hand
    me = [np.mean(e[lv]["acc"]) for lv in levels]
    mu = [np.mean(u[lv]["acc"]) for lv in levels]
    from scipy.stats import mannwhitneyu
    assert rows[0]["p_levels"] == pytest.approx(
        mannwhitneyu(me, mu, alternative="two-sided").pvalue)
    area = lambda m: np.trapezoid(m, levels) / (levels[-1] - levels[0])  # noqa: E731
    assert rows[0]["R_auc"] == pytest.approx(area(me) / area(mu))
    # R over the high third: level 0 and the last nonzero level(s)
    high = scores.level_thirds(levels)[2]
    pick = [levels[0]] + [levels[i] for i in high]
    want = scores.gain(report.rho_of({lv: e[lv] for lv in pick}),
                       report.rho_of({lv: u[lv] for lv in pick}))
    assert rows[0]["R_high"] == pytest.approx(want)
    capsys.readouterr()
    main(["ski", "table", str(out)])
    assert "profile: paper" in capsys.readouterr().out


def test_auc_and_thirds_by_hand():
    assert scores.auc([0, 0.5, 1.0], [1.0, 0.5, 0.0]) == pytest.approx(0.5)
    assert scores.auc([0, 0.25, 1.0], [1.0, 1.0, 0.0]) == pytest.approx((0.25 + 0.375) / 1.0)
    assert scores.level_thirds([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]) == [[1, 2, 3], [4, 5],
                                                                             [6, 7]]


def test_one_rule_graph_per_knowledge_and_setting():
    ds = cells.dataset("bcw")
    a = cells.make_predictor({"injector": "kbann"}, ds).laid_out()
    b = cells.make_predictor({"injector": "kins"}, ds).laid_out()
    kn = cells.knowledge(ds)
    assert a._graph() is kn.unit_graph(6.0, 1.0, "towell")
    assert kn.unit_graph(6, 1, "towell") is kn.unit_graph(6.0, 1.0, "towell")
    assert kn.unit_graph(4.0, 1.0, "towell") is not kn.unit_graph(6.0, 1.0, "towell")
    assert b.knowledge is kn


def test_bootstrap_of_R_equals_a_loop_over_resamples():
    rng = np.random.default_rng(0)
    levels = [0.0, 0.1, 0.2, 0.3]
    psi = np.abs(rng.normal(1, 0.3, (4, 5)))
    psi[0] = 0
    ae, au = rng.uniform(0.6, 0.9, (4, 5)), rng.uniform(0.6, 0.9, (4, 5))
    got = scores.gain_bootstrap(levels, psi, ae, au, n=3, seed=5)
    idx = np.random.default_rng(5).integers(0, 5, size=(3, 4, 5))
    for b in range(3):
        pm = [psi[lv, idx[b, lv]].mean() for lv in range(4)]
        em = [ae[lv, idx[b, lv]].mean() for lv in range(4)]
        um = [au[lv, idx[b, lv]].mean() for lv in range(4)]
        want = scores.gain(scores.rho(levels, pm, em), scores.rho(levels, pm, um))
        assert got[b] == pytest.approx(want, rel=1e-12)
    assert np.allclose(scores.gain_bootstrap(levels, psi, ae, ae, n=50), 1.0)
