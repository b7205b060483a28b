"""A ProbLog program from someone else: the allow-list, programs built from task files,
evidence and query/1 in the text, budgets, positions, float64 and learnable disjunctions."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from nesybench.errors import BudgetExceeded, NesyError
from nesybench.nesy.program.budget import Budget, budgeted_grounding
from nesybench.nesy.inference.circuit import CompiledProgram
from nesybench.nesy.inference.from_task import prolog_term, quote_atom
from nesybench.nesy.program.program import parse
from nesybench.nesy.program.sandbox import BUILTINS, LIBRARIES, META

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NESYBENCH_CACHE", str(tmp_path / "cache"))


@pytest.fixture()
def payload(tmp_path):
    """A Python file that leaves a marker when anything imports or runs it."""
    marker = tmp_path / "MARKER"
    pay = tmp_path / "pay.py"
    pay.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (tmp_path / "pay.pl").write_text(f":- use_module('{pay}').\n")
    return pay, marker


def compiled(text, queries=None, **kw):
    return CompiledProgram.from_program(text, queries, use_cache=False, **kw)


def marginal(prog, j=0):
    """P(label j = 1) of a program without neural predicates (float64)."""
    dom = prog.label_domains[j]
    m = prog.label_marginals([])[j][0]
    return float(m[dom.index(1)]) if 1 in dom else 0.0


# -- the allow-list --------------------------------------------------------------------------
BYPASSES = [
    "a :- '_use_module'(none, '{pay}').",
    "a :- '_consult'(none, '{pl}').",
    ":- use_module('{pay}').\na.",
    ":- consult('{pl}').\na.",
    "a :- use_module('{pay}').",
    "a :- ['{pl}'].",
    "a :- consult('{pl}').",
    "a :- call('_use_module', none, '{pay}').",
    "a :- once('_use_module'(none, '{pay}')).",
    "a :- \\+ '_use_module'(none, '{pay}').",
    "a :- b ; '_use_module'(none, '{pay}').\nb.",
    "'_use_module'(none, x).\na :- '_use_module'(none, x).",
    "a :- subquery(b, P).\nb.",
    "a :- writeln(hi).",
    "a :- cmd_args(X).",
    "a :- dbg_printdb.",
    "consult(x).\na :- consult(x).",
    "a :- maplist('_use_module'(none), ['{pay}']).",
    "writeln(x)::a.",
]


@pytest.mark.parametrize("body", BYPASSES)
def test_bypasses_are_refused_before_anything_runs(body, payload):
    pay, marker = payload
    text = body.format(pay=pay, pl=pay.with_suffix(".pl")) + "\nquery(a).\n"
    with pytest.raises(NesyError, match="program refused") as err:
        compiled(text)
    assert err.value.line is not None, "the refusal names the line"
    assert not marker.exists(), "the payload ran"


# goals that are variables at load time run on the engine, which has no builtin outside the
# allow-list: reaching one at run time is a refusal, and nothing runs
GUARDED = [
    "a :- G =.. ['_use_module', none, '{pay}'], call(G).",
    "a :- G = '_use_module'(none, '{pay}'), call(G).",
    "a :- G = consult('{pl}'), findall(X, G, L), L = [_].",
    "a :- G = '_use_module'(none, '{pay}'), G.",
    "a :- G = writeln(x), \\+ \\+ G.",
    "a :- G = (true, '_consult'(none, '{pl}')), once(G).",
]


@pytest.mark.parametrize("body", GUARDED)
def test_goals_built_at_run_time_cannot_reach_builtins(body, payload):
    pay, marker = payload
    text = body.format(pay=pay, pl=pay.with_suffix(".pl")) + "\nquery(a).\n"
    with pytest.raises(NesyError, match="program refused: .* was called, and it is not allowed"):
        compiled(text)
    assert not marker.exists(), "the payload ran"


def test_variable_goals_still_run_allowed_predicates():
    # DeepProbLog's Coins example writes and([H|T]) :- H, and(T).
    prog = compiled("0.5::h. 0.4::t.\nand([]).\nand([G|Gs]) :- G, and(Gs).\n"
                    "q :- and([h, t, 1 < 2]).\nr :- G = h, once(G).\nquery(q).\nquery(r).\n")
    assert marginal(prog, 0) == pytest.approx(0.2, abs=1e-15)
    assert marginal(prog, 1) == pytest.approx(0.5, abs=1e-15)


def test_refusal_names_line_column_and_predicate():
    text = "ok.\nb :- ok,\n     writeln(hello).\nquery(b).\n"
    with pytest.raises(NesyError) as err:
        parse(text, "prog.pl")
    e = err.value
    assert (e.file, e.line, e.column) == ("prog.pl", 3, 6)
    assert "writeln/1" in e.message
    assert str(e).startswith("prog.pl:3:6: program refused")


def test_user_predicates_with_builtin_like_names_are_fine():
    # open/2, close/1, read/1 are not ProbLog builtins: a program may define and call them
    prog = compiled("0.3::open(a, b). close(a). read(x).\n"
                    "q :- open(a, B), close(a), read(x).\nquery(q).\n")
    assert marginal(prog) == pytest.approx(0.3, abs=1e-15)


def test_libraries_need_their_import():
    with pytest.raises(NesyError, match=r"member/2 needs :- use_module\(library\(lists\)\)"):
        compiled("q :- member(X, [1, 2]), X > 1.\nquery(q).\n")
    prog = compiled(":- use_module(library(lists)).\n0.4::f.\n"
                    "q :- member(X, [1, 2]), X > 1, f.\nquery(q).\n")
    assert marginal(prog) == pytest.approx(0.4, abs=1e-15)
    with pytest.raises(NesyError, match="library 'db' is not allowed"):
        compiled(":- use_module(library(db)).\na.\nquery(a).\n")


def test_meta_calls_check_their_goals():
    prog = compiled(":- use_module(library(apply)).\n0.5::p(1). 0.5::p(2).\n"
                    "q :- maplist(p, [1, 2]).\nr :- call(p, 1).\n"
                    "s :- findall(X, p(X), L), length(L, 2).\nquery(q).\nquery(r).\n")
    assert marginal(prog, 0) == pytest.approx(0.25, abs=1e-15)
    assert marginal(prog, 1) == pytest.approx(0.5, abs=1e-15)
    with pytest.raises(NesyError, match="writeln/1"):
        compiled("p(1).\nq :- call(writeln, x).\nquery(q).\n")


def test_every_builtin_outside_the_list_is_refused():
    from problog.engine import DefaultEngine
    allowed = BUILTINS | set(META) | {s for lib in LIBRARIES.values() for s in lib}
    for sig in DefaultEngine().get_builtins():
        name, arity = sig.rsplit("/", 1)
        args = ",".join(["x"] * int(arity))
        goal = f"'{name}'({args})" if int(arity) else f"'{name}'"
        text = f"q :- {goal}.\nquery(q).\n"
        if sig in allowed:
            continue
        with pytest.raises(NesyError, match="program refused"):
            parse(text)


# The oracle for "reaches Python, files or the OS" is CPython's audit hook (PEP 578): every
# accepted program is grounded under a hook that records imports, file opens and process
# calls. The goals come from ProbLog's own builtin table, arguments include goals built as data.
_EVENTS = ("import", "open", "os.", "subprocess.", "exec", "compile", "ctypes.", "socket.",
           "shutil.", "sys.settrace", "builtins.input")


@pytest.fixture(scope="module")
def audit():
    seen: list = []
    active = [False]

    import problog
    own_library = str(Path(problog.__file__).parent)   # ProbLog reads its own builtin.pl

    import threading
    main = threading.get_ident()       # the budget's watcher thread is ours, not the program's

    def hook(event, args):
        if not active[0] or not event.startswith(_EVENTS) or threading.get_ident() != main:
            return
        if event == "open" and str(args[0]).startswith(own_library) and \
                args[1] in (None, "r", "rb"):
            return
        if event == "import" and (args[0] in sys.modules or args[0].startswith("problog.")):
            return                     # ProbLog's own modules, imported lazily
        if event == "exec" and str(getattr(args[0], "co_filename", "")).startswith(own_library):
            return
        seen.append((event, args[:1]))
    sys.addaudithook(hook)
    return seen, active


def _builtin_names():
    from problog.engine import DefaultEngine
    return sorted(DefaultEngine().get_builtins())


_ARG = st.sampled_from(["x", "'pay.py'", "library(lists)", "none", "X", "[1, 2]", "1",
                        "'_use_module'(none, 'pay.py')", "G", "consult(x)", "[x]"])


@st.composite
def random_goal(draw, depth=0):
    sig = draw(st.sampled_from(_builtin_names() + ["p/1", "q/0", ",/2", ";/2", "\\+/1"]))
    name, arity = sig.rsplit("/", 1)
    arity = int(arity)
    args = []
    for _ in range(arity):
        if depth < 2 and draw(st.booleans()):
            args.append(draw(random_goal(depth + 1)))
        else:
            args.append(draw(_ARG))
    if name in (",", ";"):
        return f"({args[0]} {name} {args[1]})"
    if name == "\\+":
        return f"\\+ ({args[0]})"
    quoted = "'" + name.replace("'", "\\'") + "'"
    return f"{quoted}({', '.join(args)})" if arity else quoted


# no shrinking: a failing example of nested random goals shrinks for many minutes; the
# unshrunk program is reported as it is
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(goals=st.lists(random_goal(), min_size=1, max_size=3))
def test_random_builtin_goals_never_reach_python_files_or_os(goals, audit, tmp_path_factory):
    from problog.engine import DefaultEngine
    from problog.program import PrologString
    seen, active = audit
    text = "p(1).\nq.\nr :- " + ", ".join(goals) + ".\nquery(r).\n"
    try:
        clauses = parse(text)
    except NesyError:
        return                                   # refused: fine whatever it was
    DefaultEngine()                              # warm: the engine's own imports
    clock = Budget(timeout=0.5, max_memory_mb=None, max_ground_nodes=20_000,
                   max_stack=20_000).start()
    eng, target = budgeted_grounding(clock)
    seen.clear()
    active[0] = True
    try:
        with clock.watch("grounding"):
            eng.ground_all(eng.prepare(PrologString(text)), target=target)
    except Exception:
        pass            # ProbLog errors (type errors, unknown clauses) and budget stops
    finally:
        active[0] = False
    assert not seen, f"accepted program {text!r} caused {seen[:3]}"
    del clauses


# -- programs built from task files ----------------------------------------------------------
@given(st.text(max_size=40))
def test_quoted_atoms_read_back_as_one_atom(name):
    from problog.program import PrologString
    from problog.logic import Term
    try:
        text = quote_atom(name)
    except NesyError:
        assert any(c == "\\" or ord(c) < 32 or 0x7f <= ord(c) < 0xa0 or
                   __import__("unicodedata").category(c).startswith("C") for c in name)
        return
    clauses = list(PrologString(f"p({text}).\n"))
    assert len(clauses) == 1
    arg = clauses[0].args[0]
    assert isinstance(arg, Term) and arg.arity == 0
    got = str(arg.functor)
    if len(got) >= 2 and got[0] == got[-1] == "'":
        got = got[1:-1].replace("\\'", "'")
    assert got == name


def test_prolog_term_quotes_names_and_keeps_numbers():
    assert prolog_term(("d", 1)) == "d(1)"
    assert prolog_term("red_light") == "red_light"
    assert prolog_term("Red") == "'Red'"
    assert prolog_term(("p", "1). q(1")) == "p('1). q(1')"
    assert prolog_term(True) == "1"


def _hostile_task(tmp_path, pay):
    text = (ROOT / "curricula/rs/xor.yaml").read_text().replace(
        "knowledge: kb/shortcuts/xor.lp", f"knowledge: {ROOT / 'kb/shortcuts/xor.lp'}")
    fact = f"1). y(_L,_V) :- '_use_module'(none, '{pay}'), fail. q(1"
    text += f"facts: [[\"p\", \"{fact}\"]]\n"
    text = text.replace("samples: {train: 200, val: 40, test: 40, ood: 40}",
                        "samples: {train: 20, val: 8, test: 8, ood: 8}")
    task = tmp_path / "hostile.yaml"
    task.write_text(text)
    return task


def test_task_file_text_stays_data(tmp_path, payload):
    pay, marker = payload
    prog = CompiledProgram.from_task(_hostile_task(tmp_path, pay), use_cache=False)
    assert prog.concept_domains == [2, 2, 2]
    assert not marker.exists()


def test_task_file_cannot_run_code_through_the_cli(tmp_path, payload):
    pay, marker = payload
    task = _hostile_task(tmp_path, pay)
    env = {**os.environ, "NESYBENCH_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "nesybench", "nesy", "train", str(task),
                        "--semantics", "circuit", "--epochs", "1", "-q",
                        "--out", str(tmp_path / "run")], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "a task file ran Python"


# -- query/1 and evidence in the program -----------------------------------------------------
ALARM = ("0.1::burglary. 0.2::earthquake.\nalarm :- burglary.\nalarm :- earthquake.\n"
         "query(burglary).\n")


def test_evidence_conditions_the_queries():
    prog = compiled(ALARM + "evidence(alarm, true).\n")
    # P(b | alarm) = 0.1 / (1 - 0.9 * 0.8)
    assert marginal(prog) == pytest.approx(0.1 / 0.28, abs=1e-15)
    assert prog.evidence == ["alarm"]
    neg = compiled(ALARM + "evidence(earthquake, false).\nevidence(alarm).\n")
    assert marginal(neg) == pytest.approx(1.0, abs=1e-15)
    neg2 = compiled(ALARM + "evidence(\\+earthquake).\n")
    assert marginal(neg2) == pytest.approx(0.1, abs=1e-15)


def test_evidence_of_probability_zero_is_named():
    with pytest.raises(NesyError, match="evidence"):
        compiled(ALARM + "evidence(burglary, true).\nevidence(alarm, false).\n")
    with pytest.raises(NesyError, match="probability 0"):
        compiled(ALARM + "never :- fail.\nevidence(never, true).\n")


def test_query_in_text_and_on_the_command_line_is_one_clear_error():
    with pytest.raises(NesyError, match="own query/1"):
        compiled(ALARM, "alarm")
    assert compiled(ALARM.replace("query(burglary).\n", ""), "alarm").label_queries == ["alarm"]


def test_evidence_with_neural_inputs_is_batched():
    text = ("nn(net, [X], Y, [0, 1, 2]) :: d(X, Y).\n0.3::noise.\n"
            "big(X) :- d(X, 2).\nbig(X) :- noise, d(X, 1).\nevidence(big(x1)).\n")
    prog = compiled(text, "d(x1, Y)")
    p = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype=torch.float64)
    got = prog.label_marginals([p])[0]
    pe = p[:, 2] + 0.3 * p[:, 1]
    want = torch.stack([torch.zeros(2, dtype=torch.float64), 0.3 * p[:, 1] / pe, p[:, 2] / pe], 1)
    assert torch.allclose(got, want, atol=1e-14)
    lp = prog([p.requires_grad_()], torch.tensor([2, 2]))
    assert torch.allclose(lp.exp(), want[:, 2], atol=1e-14)


def _random_program(rng: random.Random) -> str:
    """Facts, partial annotated disjunctions, rules with (stratified) negation, evidence."""
    n = rng.randint(3, 6)
    lines = []
    for i in range(rng.randint(1, 3)):
        lines.append(f"{rng.choice([0.1, 0.25, 0.5, 0.7, 0.9, rng.random()]):.6f}::a{i}.")
    heads = rng.sample(range(n), 2)
    ps = [rng.uniform(0.05, 0.5) for _ in heads]
    lines.append("; ".join(f"{p:.6f}::b{h}" for p, h in zip(ps, heads)) + ".")
    atoms = [f"a{i}" for i in range(3)] + [f"b{i}" for i in range(n)]
    for i in range(3):
        lines.append(f"a{i} :- fail.")                      # every a_i is defined
    for i in range(n):
        lines.append(f"b{i} :- fail.")
    for k in range(n):
        for _ in range(rng.randint(1, 2)):
            body = []
            for _ in range(rng.randint(1, 3)):
                lit = rng.choice(atoms + [f"c{j}" for j in range(k)])
                neg = rng.random() < 0.3 and not lit.startswith("c") or \
                    (rng.random() < 0.3 and lit.startswith("c"))
                body.append(("\\+ " if neg else "") + lit)
            lines.append(f"c{k} :- {', '.join(body)}.")
    everything = atoms + [f"c{k}" for k in range(n)]
    for q in rng.sample(everything, 2):
        lines.append(f"query({q}).")
    for e in rng.sample(everything, rng.randint(0, 2)):
        lines.append(f"evidence({e}, {rng.choice(['true', 'false'])}).")
    return "\n".join(lines) + "\n"


def test_random_programs_agree_with_problog():
    from problog import get_evaluatable
    from problog.errors import InconsistentEvidenceError
    from problog.program import PrologString
    rng = random.Random(2024)
    checked = 0
    for _ in range(300):
        text = _random_program(rng)
        try:
            want = get_evaluatable("sdd").create_from(PrologString(text)).evaluate()
        except InconsistentEvidenceError:
            with pytest.raises(NesyError, match="probability 0"):
                compiled(text)
            continue
        prog = compiled(text)
        for j, q in enumerate(prog.label_queries):
            exact = {str(k): v for k, v in want.items()}[q]
            assert marginal(prog, j) == pytest.approx(exact, abs=1e-12), text
        checked += 1
    assert checked >= 200


# -- budgets ----------------------------------------------------------------------------------
def test_grounding_budget_names_the_limit_and_size():
    text = "n(0). n(1). n(2). n(3). n(4). n(5). n(6). n(7). n(8). n(9).\n" \
           "0.5::f(X) :- n(X).\nq :- f(A), f(B), A < B, A + B =:= 17.\nquery(q).\n"
    with pytest.raises(BudgetExceeded, match=r"--max-grounding-atoms 5: the ground program "
                                             r"reached \d+ nodes"):
        compiled(text, budget=Budget(max_ground_nodes=5))
    assert marginal(compiled(text)) == pytest.approx(0.25, abs=1e-15)   # f(8) and f(9)


@pytest.mark.timing
def test_unbounded_recursion_stops_at_a_budget():
    text = "nat(0).\nnat(s(N)) :- nat(N).\nquery(nat(X)).\n"
    with pytest.raises(BudgetExceeded, match="--timeout of 1 s"):
        compiled(text, budget=Budget(timeout=1, max_memory_mb=None))


def test_deep_recursion_stops_at_the_stack_budget():
    text = "down(0).\ndown(N) :- N > 0, M is N - 1, down(M).\nq :- down(1000000).\nquery(q).\n"
    with pytest.raises(BudgetExceeded, match="engine stack"):
        compiled(text, budget=Budget(max_stack=4096, timeout=60))


def test_circuit_budget_names_the_limit():
    text = "".join(f"0.5::x{i}. 0.5::y{i}.\n" for i in range(12)) + \
        "q :- " + "; ".join(f"(x{i}, y{(i * 5) % 12})" for i in range(12)) + ".\nquery(q).\n"
    with pytest.raises(BudgetExceeded, match=r"--max-circuit-nodes 10: the SDD reached \d+"):
        compiled(text, budget=Budget(max_circuit_nodes=10))


@pytest.mark.parametrize("limit, message", [
    (["--timeout", "1"], "--timeout of 1 s"),
    # a fresh process: its resident size grows with ProbLog's answer tables (SWI-Prolog's
    # tables grow far more slowly here: the time limit is what stops them)
    (["--max-memory", "32", "--timeout", "600", "--grounder", "problog"], "--max-memory 32 MiB"),
    (["--timeout", "2", "--grounder", "prolog"], "--timeout of 2 s"),
])
def test_budget_errors_are_one_line_exit_2_on_the_cli(tmp_path, limit, message):
    prog = tmp_path / "nat.pl"
    prog.write_text("nat(0).\nnat(s(N)) :- nat(N).\nquery(nat(X)).\n")
    r = subprocess.run([sys.executable, "-m", "nesybench", "nesy", "infer", str(prog), *limit],
                       cwd=ROOT, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "NESYBENCH_CACHE": str(tmp_path)})
    assert r.returncode == 2
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1


# -- numbers ----------------------------------------------------------------------------------
def test_fixed_probabilities_are_exact_in_float64():
    text = "0.1234567890123::a.\n0.3::b; 0.6::c.\nq :- a, \\+ b.\nquery(q).\n"
    prog = compiled(text)
    assert marginal(prog) == pytest.approx(0.1234567890123 * 0.7, abs=1e-16)


def test_parse_errors_name_line_and_column():
    with pytest.raises(NesyError) as err:
        compiled("a.\nb :- a.\nfoo(X :- .\n", "a")
    assert (err.value.line, err.value.column) == (3, 4)


# -- learnable annotated disjunctions ---------------------------------------------------------
def test_learnable_ad_initial_values_and_normalisation():
    prog = compiled("t(0.2)::a; t(_)::b; t(_)::c.\nq :- a.\nq :- b.\nquery(q).\n")
    # a = 0.2, b = c = 0.4 at the start; c is never grounded and becomes the residual
    assert marginal(prog) == pytest.approx(0.6, abs=1e-6)
    assert prog.learnable_ads == [["a", "b", "nesy__none"]]


def test_learnable_ad_learns_the_empirical_distribution():
    prog = compiled("t(_)::colour(red); t(_)::colour(green); t(_)::colour(blue).\n"
                    "query(colour(C)).\n")
    assert prog.label_domains == [["blue", "green", "red"]]
    target = torch.tensor([2] * 50 + [1] * 30 + [0] * 20)   # red 0.5, green 0.3, blue 0.2
    opt = torch.optim.Adam(prog.parameters(), lr=0.05)
    x = torch.zeros((len(target), 0))
    for _ in range(400):
        opt.zero_grad()
        loss = -prog._evaluate(x, *prog._indicators(
            [torch.nn.functional.one_hot(target, 4)], x.dtype)).mean()
        loss.backward()
        opt.step()
    got = prog.label_marginals([])[0][0].detach()
    assert torch.allclose(got, torch.tensor([0.2, 0.3, 0.5], dtype=got.dtype), atol=1e-3)


def test_mixed_learnable_and_fixed_heads_are_refused():
    with pytest.raises(NesyError, match="learnable t\\(_\\) heads and fixed ones") as err:
        compiled("a.\nt(_)::x; 0.5::y.\nquery(x).\n")
    assert err.value.line == 2
