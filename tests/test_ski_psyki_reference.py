"""PSyKI's KBANN built from our splice theory, untrained, computes the rules.

KBANN's initial network is the theory: before any training its answer must be the crisp
rules' (up to the softness of its sigmoid units at weight ω). These tests build PSyKI's own
network from the theory ``benchmarks/ski_psyki_worker.py`` writes and compare its argmax with
``kb/ski/splice.pl`` evaluated crisply by nesybench (``Knowledge.truths``). They need the
separate PSyKI environment (Python 3.9, ``scripts/psyki_env.sh``): set
``NESYBENCH_PSYKI_PYTHON`` to its Python, or they are skipped. The encoding tests at the end
need nothing but nesybench.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PSYKI_PYTHON = os.environ.get("NESYBENCH_PSYKI_PYTHON")
needs_psyki = pytest.mark.skipif(
    not PSYKI_PYTHON,
    reason="needs the PSyKI environment: build it with scripts/psyki_env.sh and set "
           "NESYBENCH_PSYKI_PYTHON to the Python it prints")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def driver():
    return _load("ski_psyki", ROOT / "benchmarks" / "ski_psyki.py")


@pytest.fixture(scope="module")
def worker():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return _load("ski_psyki_worker", ROOT / "benchmarks" / "ski_psyki_worker.py")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(scope="module")
def splice(driver):
    ds = driver.cells.dataset("splice")
    kn = driver.cells.knowledge(ds)
    return ds, kn, driver.crisp_classes(kn, ds.X)


@needs_psyki
def test_untrained_network_is_the_rules_at_a_large_omega(driver, splice):
    """At ω = 10 the units are nearly crisp: the untrained network's class is the rules'
    class on every row, with the m-of-n threshold that PSyKI's bias m − ω/2 sets (1 of 10
    pyrimidines at ω = 10); on every row where that reading and Towell's 6 of 10 agree, it
    is the class of kb/ski/splice.pl as written."""
    ds, kn, towell = splice
    omega = 10.0
    out = driver.untrained_outputs(PSYKI_PYTHON, ds, omega)
    assert out.shape == (len(ds.y), 3)
    pred = out.argmax(1)
    psyki = driver.crisp_classes(kn, ds.X, lambda m: driver.psyki_mofn_threshold(m, omega))
    assert driver.psyki_mofn_threshold(6, omega) == 1
    np.testing.assert_array_equal(pred, psyki)
    same = psyki == towell
    assert same.sum() > 0.97 * len(pred)
    np.testing.assert_array_equal(pred[same], towell[same])
    # every class of the rules occurs, so each class unit was checked
    assert set(np.unique(towell[same])) == {0, 1, 2}


@needs_psyki
def test_untrained_network_at_psykis_omega_is_the_rules(driver, splice):
    """At PSyKI's ω = 4 the network still answers as the rules on nearly every row: the
    intron-exon rule, which the earlier encoding silenced (ie output <= 0.05, class n on 3,178
    of 3,190 rows), fires where the rules fire."""
    ds, kn, towell = splice
    out = driver.untrained_outputs(PSYKI_PYTHON, ds, 4.0)
    pred = out.argmax(1)
    psyki = driver.crisp_classes(kn, ds.X, lambda m: 1)   # m-of-n as PSyKI's ω = 4 sets it
    assert (pred == psyki).mean() > 0.99
    ie = towell == 1
    assert (pred[ie] == 1).mean() > 0.99
    assert out[ie, 1].min() > 0.3
    n = towell == 2
    assert (pred[n] == 2).mean() > 0.97
    assert (pred == ds.y).mean() > 0.6                    # the rules alone: 0.62


@needs_psyki
def test_the_earlier_encoding_silences_the_ie_rule(driver, splice):
    """The negated-equality encoding of Y (= C or T) inside m_of_n gives each antecedent
    weight −ω under PSyKI's bias m − ω/2: the ie unit never fires. Kept as the regression
    this encoding change fixes."""
    ds, _kn, towell = splice
    out = driver.untrained_outputs(PSYKI_PYTHON, ds, 4.0, encoding="negated-equalities")
    assert out[towell == 1, 1].max() < 0.1
    assert (out.argmax(1) == 1).sum() == 0


# -- the encoding, without PSyKI --------------------------------------------------------------

def test_codes_of_several_bases_are_positive_disjunctions(worker):
    assert worker.literal(-3, "M") == "(X_3a ; X_3c)"
    assert worker.literal(3, "r") == "(X3a ; X3g)"
    assert worker.literal(-15, "Y") == "(X_15c ; X_15t)"
    assert worker.literal(1, "G") == "X1g"
    assert worker.literal(-3, "M", "negated-equalities") == "\\+ (X_3a = 0, X_3c = 0)"
    with pytest.raises(ValueError):
        worker.theory("no-such-encoding")


def test_no_negated_antecedent_inside_m_of_n(worker):
    """PSyKI's m_of_n gives a negated antecedent weight −ω without moving its bias, so every
    antecedent of the pyrimidine rule must be positive."""
    text = worker.theory()
    (mofn,) = re.findall(r"m_of_n\(6, (.*)\)\.$", text, flags=re.M)
    parts = re.findall(r"\(X_\d+c ; X_\d+t\)", mofn)
    assert len(parts) == 10 and "\\+" not in mofn and "=" not in mofn
    assert [int(p[3:p.index("c")]) for p in parts] == list(range(15, 5, -1))


def test_theory_literals_mean_the_rules_codes(worker, splice):
    """Each antecedent the theory writes for a code reads the same multi-hot columns as
    kb/ski/splice.pl: evaluated crisply on the data (a variable is its column, ``;`` is or)
    the ei and ie consensus sequences hold on the same rows as the compiled rules' ones."""
    ds, kn, _ = splice
    col = {f: j for j, f in enumerate(ds.features)}

    def value(lit):
        names = re.findall(r"X(_?)(\d+)([acgt])", lit)
        cols = [col[f"{'-' if neg else ''}{pos}{b}"] for neg, pos, b in names]
        return ds.X[:, cols].max(axis=1) > 0

    def seq_holds(start, codes):
        i = worker.POSITIONS.index(start)
        return np.all([value(worker.literal(worker.POSITIONS[i + k], c))
                       for k, c in enumerate(codes)], axis=0)

    ei = kn.concepts["exon_intron"][0]["args"][0]         # seq(X, -3, 'MAGGTRAGT')
    ie = kn.concepts["intron_exon"][0]["args"][1]         # seq(X, -3, 'YAGG')
    for start, codes, tree in ((-3, "MAGGTRAGT", ei), (-3, "YAGG", ie)):
        expected = _crisp_tree(ds, tree)
        assert expected.sum() > 0
        np.testing.assert_array_equal(seq_holds(start, codes), expected)
    pyr = kn.concepts["pyrimidine_rich"][0]["args"]       # base(X, P, y), P = -15..-6
    for p, tree in zip(range(-15, -5), pyr):
        np.testing.assert_array_equal(value(worker.literal(p, "y")), _crisp_tree(ds, tree))


def _crisp_tree(ds, t):
    col = {f: j for j, f in enumerate(ds.features)}
    if t["op"] == "var":
        return ds.X[:, col[t["feature"]]] > 0
    vals = [_crisp_tree(ds, a) for a in t["args"]]
    return np.all(vals, axis=0) if t["op"] == "and" else np.any(vals, axis=0)


@needs_psyki
def test_psykis_m_of_n_demo(worker):
    """The worker's minimal reproduction of PSyKI's m_of_n: "2 of A, B, C" with positive
    antecedents is already true with one of them (bias m − ω/2), and with negated-equality
    antecedents (weight −ω, the bias unchanged) is not true even with two."""
    import subprocess
    out = subprocess.run([PSYKI_PYTHON, str(ROOT / "benchmarks" / "ski_psyki_worker.py"),
                          "--mofn-demo"], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()[1:]
    assert [ln.split()[0] for ln in lines] == [b.split()[0] for b in worker.MOFN_DEMO]
    assert all(body in ln for body, ln in zip(worker.MOFN_DEMO, lines))
    plain, _, negated, _ = ([float(v) for v in ln.split()[-4:]] for ln in lines)
    assert plain[1] > 0.9 and plain[2] > 0.99
    assert negated[2] < 0.1 and negated[3] <= 0.5
