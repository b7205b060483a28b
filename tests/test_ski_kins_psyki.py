"""KINS with PSyKI-style modules (``modules="psyki"``): clipped literals, min/max connectives,
fixed weights; the rules computed exactly off the comparison ramps (BCW's rules and random
rule sets against Prolog); the default sigmoid modules unchanged; the ``psyki`` profile."""
import hashlib
import itertools
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nesybench.cli import main
from nesybench.errors import NesyError
from nesybench.logic import prolog
from nesybench.ski import cells, injectors, native, report, rules
from nesybench.ski.ensemble import Members

torch.set_num_threads(1)


def _kb(tmp_path, text, features, classes, name="kb.pl"):
    p = tmp_path / name
    p.write_text(text)
    return p, rules.load_knowledge(p, features, classes)


def _prolog_truths(path, features, classes, X):
    """The rules run as Prolog on every row of ``X``: a 0/1 tensor [N, K]."""
    prolog.use("prolog/ski/vocab.pl")
    mod = "ski_test_psyki_" + hashlib.sha256(path.read_bytes()).hexdigest()[:10]
    prolog.load_rules_file(mod, path, ["ski_vocab"])
    try:
        out = torch.zeros(X.shape[0], len(classes))
        for i in range(X.shape[0]):
            sample = {f: float(v) for f, v in zip(features, X[i].tolist())}
            for k, c in enumerate(classes):
                out[i, k] = float(prolog.once(f"{mod}:class(S, {c})", S=sample) is not None)
    finally:
        prolog.once("safe_load:unload_rules(M)", M=mod)
    return out


def _modules(kn, n_features, n_classes, X, **opts):
    net = injectors.make("kins", n_features, n_classes, [4, 3], kn, modules="psyki", **opts)
    return net.module_truths(net.init_params([0]), X.unsqueeze(0))[0]


# -- the connectives and literals by hand -----------------------------------------------------

HAND = """
class(X, both) :- ge(X, u, 1), ge(X, v, 1).
class(X, either) :- ge(X, u, 1) ; ge(X, v, 1).
class(X, nu) :- \\+ ge(X, u, 1).
class(X, two) :- m_of_n(2, [ge(X, u, 1), ge(X, v, 1), ge(X, w, 1)]).
class(X, any) :- ge(X, u, 1) ; ge(X, v, 1) ; ge(X, w, 1).
"""


def test_min_max_not_mofn_by_hand(tmp_path):
    """ge(X, f, 1) is clamp(f − 1 + 1) = f on [0, 1], so each module is the connective
    applied to the raw values: min, max, 1 − t, clamp(Σ − m + 1) — not the product
    (0.24) nor Łukasiewicz's conjunction (0.1)."""
    _, kn = _kb(tmp_path, HAND, ["u", "v", "w"], ["both", "either", "nu", "two", "any"])
    X = torch.tensor([[0.3, 0.8, 0.6], [0.9, 0.2, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0],
                      [0.0, 0.0, 0.4]])
    got = _modules(kn, 3, 5, X)
    want = torch.tensor([[0.3, 0.8, 0.7, 0.7, 0.8], [0.2, 0.9, 0.1, 0.1, 0.9],
                         [1.0, 1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0, 0.0],
                         [0.0, 0.0, 1.0, 0.0, 0.4]])
    assert torch.allclose(got, want, atol=1e-6), got


def test_comparisons_are_psyki_ramps(tmp_path):
    """gt: clamp(x − c + ½), ge: clamp(x − c + 1), lt: clamp(c − x + ½), le: clamp(c − x + 1)
    (δ = 1); δ scales the ramp: gt with δ = 2 is clamp((x − c)/2 + ½)."""
    text = ("class(X, g) :- gt(X, x, 2).\nclass(X, ge) :- ge(X, x, 2).\n"
            "class(X, l) :- lt(X, x, 2).\nclass(X, le) :- le(X, x, 2).\n")
    _, kn = _kb(tmp_path, text, ["x"], ["g", "ge", "l", "le"])
    x = torch.tensor([[0.5], [1.0], [1.25], [1.5], [2.0], [2.25], [2.5], [3.0], [4.0]])
    got = _modules(kn, 1, 4, x)
    c = 2.0
    want = torch.stack([x[:, 0] - c + 0.5, x[:, 0] - c + 1, c - x[:, 0] + 0.5,
                        c - x[:, 0] + 1], -1).clamp(0, 1)
    assert torch.allclose(got, want, atol=1e-6)
    assert got[4].tolist() == [0.5, 1.0, 0.5, 1.0]       # x = c: a strict literal is ½
    wide = _modules(kn, 1, 4, x, delta=2.0)
    assert torch.allclose(wide[:, 0], ((x[:, 0] - c) / 2 + 0.5).clamp(0, 1), atol=1e-6)


# -- the rules, exactly, off the ramps ---------------------------------------------------------

@pytest.fixture(scope="module")
def bcw():
    return cells.dataset("bcw")


def test_bcw_modules_compute_the_shipped_rules(bcw):
    """On every BCW row where no strict literal (gt/lt with an integer threshold, as the
    shipped rules have) sits on its threshold, the modules equal the rules run in Prolog;
    on the others a literal is ½ (PSyKI's ramp is centred on c) and so may be the module."""
    kn = cells.knowledge(bcw)
    X = torch.from_numpy(bcw.X[:160])
    got = _modules(kn, 9, 2, X)
    want = _prolog_truths(rules.KB_FILES["bcw"], bcw.features, bcw.classes, X)
    col = {f: j for j, f in enumerate(bcw.features)}

    def strict(t):
        if t["op"] == "cmp" and t["rel"] in (">", "<"):
            yield col[t["feature"]], float(t["value"])
        for a in t.get("args", []):
            yield from strict(a)

    lits = {s for cl in kn.concepts.values() for t in cl for s in strict(t)}
    on_ramp = torch.zeros(X.shape[0], dtype=torch.bool)
    for j, c in lits:
        on_ramp |= X[:, j] == c
    crisp = ~on_ramp
    assert crisp.sum() >= 15
    assert torch.equal(got[crisp], want[crisp])
    # with ½ literals min/max is Kleene's logic: a module that is still 0 or 1 is the
    # rule's truth (the undecided literal does not matter), the others are ½
    assert set(got.unique().tolist()) == {0.0, 0.5, 1.0}
    decided = got != 0.5
    assert torch.equal(got[decided], want[decided])
    assert not (got[crisp] == 0.5).any()
    # shifted half a unit towards the middle of the scale, no literal is on its ramp
    shifted = X + torch.where(X > 0, -0.5, 0.5)       # every strict literal off its threshold
    assert torch.equal(_modules(kn, 9, 2, shifted),
                       _prolog_truths(rules.KB_FILES["bcw"], bcw.features, bcw.classes,
                                      shifted))


FEATS = ["u", "v", "w", "a", "b"]          # u, v, w in 0..3; a, b 0/1


@st.composite
def literal(draw, allow_not=True):
    kind = draw(st.sampled_from(["gt", "lt", "ge", "le", "hot"]))
    if kind == "hot":
        lit = f"hot(X, {draw(st.sampled_from(['a', 'b']))})"
    else:
        f = draw(st.sampled_from(["u", "v", "w"]))
        c = draw(st.integers(0, 2)) + 0.5 if kind in ("gt", "lt") else draw(st.integers(0, 3))
        lit = f"{kind}(X, {f}, {c})"
    if allow_not and draw(st.booleans()) and draw(st.booleans()):
        lit = f"\\+ {lit}"
    return lit


@st.composite
def item(draw, concepts):
    kind = draw(st.sampled_from(["lit", "lit", "or", "mofn", "ref"] if concepts
                                else ["lit", "lit", "or", "mofn"]))
    if kind == "lit":
        return draw(literal())
    if kind == "or":
        return f"({' ; '.join(draw(st.lists(literal(), min_size=2, max_size=3)))})"
    if kind == "mofn":
        ls = draw(st.lists(literal(), min_size=2, max_size=3))
        return f"m_of_n({draw(st.integers(1, len(ls)))}, [{', '.join(ls)}])"
    return draw(st.sampled_from(concepts))


@st.composite
def rule_set(draw):
    text = []
    for _ in range(draw(st.integers(1, 2))):
        body = ", ".join(draw(st.lists(literal(), min_size=1, max_size=2)))
        text.append(f"p(X) :- {body}.")
    for c in ("c0", "c1"):
        for _ in range(draw(st.integers(1, 2))):
            body = ", ".join(draw(st.lists(item(["p(X)", "\\+ p(X)"]), min_size=1,
                                           max_size=3)))
            text.append(f"class(X, {c}) :- {body}.")
    if draw(st.booleans()):
        text.append("class(X, c2) :- \\+ class(X, c0), \\+ class(X, c1).")
    return "\n".join(text) + "\n"


GRID = torch.tensor([[u, v, w, a, b] for u, v, w in itertools.product(range(4), repeat=3)
                     for a, b in ((0, 1), (1, 0), (1, 1), (0, 0))][::3], dtype=torch.float32)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=rule_set())
def test_random_rule_sets_computed_exactly(tmp_path, text):
    """Random rule sets (comparisons, hot, negation, ``;``, m-of-n, a concept, a class
    defined by the others' negation) on integer inputs, strict thresholds at half-integers:
    the untrained modules are exactly the rules' truth as Prolog computes it."""
    classes = ["c0", "c1", "c2"]
    name = "r" + hashlib.sha256(text.encode()).hexdigest()[:10] + ".pl"
    path, kn = _kb(tmp_path, text, FEATS, classes, name)
    got = _modules(kn, 5, 3, GRID)
    want = _prolog_truths(path, FEATS, classes, GRID)
    has = [k for k in range(3) if kn.class_concept(k)]
    assert torch.equal(got, want[:, has]), text


# -- fixed modules, trainable MLP; engines --------------------------------------------------

def _members(bcw, n=200, E=2):
    X = torch.from_numpy(bcw.X)
    return Members(X.unsqueeze(0), torch.from_numpy(bcw.y).unsqueeze(0),
                   [torch.arange(n)] * E)


@pytest.mark.parametrize("layer", [0, 1, None])
def test_forward_is_the_mlp_reading_the_modules(bcw, layer):
    """The logits are the MLP whose layer ``layer`` + 1 reads [h, modules(x)] (weights
    [W | rule_w]); the modules have no parameters."""
    kn = cells.knowledge(bcw)
    net = injectors.make("kins", 9, 2, [16, 8], kn, modules="psyki", layer=layer)
    params = net.init_params([3, 4])
    assert len(params) == 2 * 3 + 1
    x = torch.from_numpy(bcw.X[:50]).unsqueeze(0).expand(2, -1, -1)
    r = kn.clipped_net()(x)
    at = 2 if layer is None else layer
    h = x
    for i in range(3):
        W, b = params[2 * i], params[2 * i + 1]
        if i == at:
            W, h = torch.cat([W, params[-1]], -1), torch.cat([h, r], -1)
        h = torch.einsum("ebi,eoi->ebo", h, W) + b.unsqueeze(1)
        if i < 2:
            h = torch.relu(h)
    assert torch.allclose(net.forward(params, x), h, atol=1e-5)


def test_training_moves_the_mlp_not_the_modules(bcw):
    """PSyKI's formulae are not trainable by default: the modules stay what the rules say,
    while the weights reading them (and the MLP) learn. The native engine is not used: a
    one-line warning, then the PyTorch trainer."""
    kn = cells.knowledge(bcw)
    net = injectors.make("kins", 9, 2, [16, 8], kn, modules="psyki", epochs=3)
    X = torch.from_numpy(bcw.X[:100]).unsqueeze(0)
    before = net.module_truths(None, X)
    init = [p.clone() for p in net.init_params([5, 6])]
    with pytest.warns(RuntimeWarning, match="no native kernel: using --engine torch"):
        net.fit(_members(bcw), [5, 6])
    assert torch.equal(net.module_truths(net.params, X), before)
    assert all(not torch.equal(a, b) for a, b in zip(init, net.params))
    assert not torch.equal(init[-1], net.params[-1])          # the columns reading the rules
    with pytest.raises(NesyError, match="no native kernel"):
        net.plan()
    # the torch engine, asked for, gives the same numbers without a warning
    again = injectors.make("kins", 9, 2, [16, 8], kn, modules="psyki", epochs=3,
                           engine="torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again.fit(_members(bcw), [5, 6])
    assert all(torch.equal(a, b) for a, b in zip(again.params, net.params))


@pytest.mark.parametrize("name", ["bcw", "splice", "census"])
@pytest.mark.parametrize("per_member", [False, True])
def test_modules_computed_once_give_the_same_training(name, per_member, monkeypatch):
    """The trainer evaluates the fixed modules once per training set (``constants``), not
    once per mini-batch: every parameter after training is the same to the bit as with the
    modules evaluated on each batch, on the three data sets' rules (splice's with m-of-n),
    for a shared X and for one X per member (noise)."""
    from nesybench.ski.injectors.kins import KINS
    ds = cells.dataset(name)
    kn = cells.knowledge(ds)
    D, K = ds.X.shape[1], len(ds.classes)
    X = torch.from_numpy(ds.X[:300])
    if per_member:       # two different matrices, as a noise cell has
        X = torch.stack([X, (X + 0.3 * torch.randn(X.shape, generator=torch.Generator()
                                                   .manual_seed(1))).to(X.dtype)])
    else:
        X = X.unsqueeze(0)
    data = Members(X, torch.from_numpy(ds.y[:300]).unsqueeze(0),
                   [torch.arange(300), torch.arange(40, 260)])
    runs, calls = [], []
    real = KINS.constants
    for once in (True, False):
        def constants(self, X, once=once):
            calls.append(once)
            return real(self, X) if once else None
        monkeypatch.setattr(KINS, "constants", constants)
        net = injectors.make("kins", D, K, [16, 8], kn, modules="psyki", epochs=2,
                             engine="torch")
        net.fit(data, [7, 8])
        runs.append(net.params)
        if once:
            c = real(net, X)
            assert c.shape == (X.shape[0], 300, len(kn.clipped_net().classes))
            assert torch.equal(c, kn.clipped_net()(X))
    assert calls == [True, False]
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def test_unknown_module_style():
    with pytest.raises(NesyError, match="modules must be one of sigmoid, psyki"):
        injectors.make("kins", 2, 2, [4], rules.Knowledge("x", ["a"], ["p"], {}),
                       modules="lukasiewicz")


# -- the default is unchanged ------------------------------------------------------------------

def _digest(tensors):
    return hashlib.sha256(b"".join(t.numpy().tobytes() for t in tensors)).hexdigest()[:16]


#: digests of KINS's initial parameters (BCW, hidden [16, 8], seeds 11, 12) and of its
#: native-trained parameters (3 epochs, rows 0..299) from before the ``modules`` option
BEFORE = {"": ("5f7e749f1012d310", "88b3e51b823f69bd"),
          "layer=0": ("1f23df7efae538e7", "c5667ffd60b9a25a"),
          "omega=4,mofn=psyki": ("4ed60fb2e3249a0b", None)}


@pytest.mark.parametrize("key", list(BEFORE))
def test_sigmoid_default_is_unchanged(bcw, key):
    opts = dict(kv.split("=") for kv in key.split(",")) if key else {}
    kn = cells.knowledge(bcw)
    a = injectors.make("kins", 9, 2, [16, 8], kn, epochs=3, **opts)
    b = injectors.make("kins", 9, 2, [16, 8], kn, epochs=3, modules="sigmoid", **opts)
    init, trained = BEFORE[key]
    assert _digest(a.init_params([11, 12])) == init
    assert _digest(b.init_params([11, 12])) == init
    if trained is None or not native.available():
        return
    for net in (a, b):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            net.fit(_members(bcw, 300), [11, 12])
        assert _digest(net.params) == trained


# -- the profile -------------------------------------------------------------------------------

def test_psyki_profile_selects_psyki_modules(bcw):
    p = cells.make_predictor({"injector": "kins", "profile": "psyki"}, bcw)
    assert p.opts["modules"] == "psyki"
    assert cells.make_predictor({"injector": "kins"}, bcw).opts["modules"] == "sigmoid"
    assert cells.make_predictor({"injector": "kins", "profile": "paper"},
                                bcw).opts["modules"] == "sigmoid"
    p = cells.make_predictor({"injector": "kins", "profile": "psyki",
                              "options": {"kins": {"modules": "sigmoid"}}}, bcw)
    assert p.opts["modules"] == "sigmoid"


def test_psyki_profile_study_records_it(tmp_path, capsys):
    out = tmp_path / "s"
    with pytest.warns(RuntimeWarning, match="no native kernel"):
        code = main(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated,kins",
                     "--degradations", "flip", "--reps", "2", "--epochs", "2", "--level-stride",
                     "6", "--profile", "psyki", "--executor", "inline", "--out", str(out), "-q"])
    assert not code
    assert report.profile_of(out / "bcw") == "psyki"
    rows = report.table1(out / "bcw")
    assert [r["profile"] for r in rows] == ["psyki"]
    capsys.readouterr()
    main(["ski", "table", str(out)])
    assert "profile: psyki" in capsys.readouterr().out


def test_cli_option_selects_the_module_style(tmp_path):
    out = tmp_path / "o"
    with pytest.warns(RuntimeWarning, match="no native kernel"):
        code = main(["ski", "run", "--datasets", "bcw", "--injectors", "uneducated,kins",
                     "--degradations", "flip", "--reps", "1", "--epochs", "1", "--level-stride",
                     "12", "--injector-option", "kins.modules=psyki", "--executor", "inline",
                     "--out", str(out), "-q"])
    assert not code
    from nesybench.runs import Study
    assert Study(out / "bcw").spec()["params"]["options"] == {"kins": {"modules": "psyki"}}
    with pytest.raises(SystemExit) as exc:
        main(["ski", "run", "--datasets", "bcw", "--injectors", "kins",
              "--injector-option", "kins.modules=product", "--out", str(tmp_path / "x"), "-q"])
    assert exc.value.code == 2
    assert not (tmp_path / "x").exists()
