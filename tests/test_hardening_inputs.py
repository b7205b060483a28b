"""Regression tests for bad-input defects: every one gives exit 2 and one stderr
line (or the documented exit status), never a traceback, and leaves no output behind."""
from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest

from nesybench.cli import main as cli_main
from nesybench.errors import NesyError, UnsafeRuleError
from nesybench.kandy.rules import TaskRule

ROOT = Path(__file__).resolve().parents[1]
REF = Path(__file__).parent / "data" / "reference_style.yaml"
T15 = ROOT / "kb" / "kandy" / "rules" / "easy" / "t15.pl"

TASK = """\
- name: x
  samples: 10
  train_split: 0.5
  val_split: 0.25
  positive_set: [{POS}]
  negative_set: [{in: [{shape: square, color: ~, size: ~}]}]
"""
CIRCLE = "{shape: circle, color: ~, size: ~}"


def _run(capsys, *args):
    rc = cli_main([str(a) for a in args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err.strip()


def _one_error(capsys, *args, contains: str = ""):
    rc, _, err = _run(capsys, *args)
    assert rc == 2, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and err.startswith("nesybench: error:")
    assert contains in err, err
    return err


def _kandy(tmp_path, text: str, name="c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


# ------------------------------------------------------------------------ KANDY curriculum
@pytest.mark.parametrize("text,msg", [
    ("config: 5\ntasks: []\n", "config must be a mapping"),
    ("config: {seed: abc}\ntasks: [{name: x}]\n", "config.seed"),
    ("config: {sed: 1}\ntasks: [{name: x}]\n", "unknown config key 'sed'"),
    (TASK.replace("{POS}", "{5: [" + CIRCLE + "]}"), "names are strings"),
    (TASK.replace("{POS}", "{in: [{repeat_before: {n: 10000000, list: [" + CIRCLE + "]}}]}"),
     "cap on list sizes"),
    (TASK.replace("{POS}", "{in: [{repeat: {n: 1000, list: [{repeat: {n: 1000, list: ["
                  + CIRCLE + "]}}]}}]}"), ""),
    (TASK.replace("{POS}", "{stack: [" * 400 + CIRCLE + "]}" * 400), "nested"),
    (TASK.replace("{POS}", "{stack: [" * 70 + CIRCLE + "]}" * 70), "nested more than 64"),
])
def test_bad_curricula_give_one_line(tmp_path, capsys, text, msg):
    path = _kandy(tmp_path, text)
    out = tmp_path / "out"
    if msg == "":          # a nested repeat passes the parser but hits the cap when expanded
        _one_error(capsys, "kandy", "generate", path, "--out", out, "-q", "-j", "1",
                   contains="cap is 1000")
    else:
        _one_error(capsys, "kandy", "validate", path, contains=msg)
        _one_error(capsys, "kandy", "generate", path, "--out", out, "-q", "-j", "1")
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_binary_rule_file_and_binary_curriculum(tmp_path, capsys):
    (tmp_path / "bin.pl").write_bytes(bytes(range(256)) * 4)
    text = TASK.replace("{POS}", "{in: [" + CIRCLE + "]}").replace(
        "  samples: 10\n", "  samples: 10\n  rule_file: bin.pl\n")
    _one_error(capsys, "kandy", "validate", _kandy(tmp_path, text), contains="not UTF-8")
    _one_error(capsys, "kandy", "check", tmp_path / "bin.pl", "in([circle_red_small])",
               contains="not UTF-8")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00garbage")
    _one_error(capsys, "kandy", "validate", tmp_path / "bin.yaml", contains="not UTF-8")


@pytest.mark.parametrize("tasks", ["5-3", "", " , ", "-1", "a-b"])
def test_empty_or_bad_task_selection(tmp_path, capsys, tasks):
    out = tmp_path / "o"
    _one_error(capsys, "kandy", "generate", REF, "--out", out, "--tasks", tasks, "-q",
               contains="--tasks")
    assert not out.exists()


def test_kandy_check_exit_codes(capsys):
    good = "side_by_side([stack([triangle_red_small, square_red_small])])"
    bad = "side_by_side([stack([square_red_small, triangle_red_small])])"
    assert _run(capsys, "kandy", "check", T15, good)[0] == 0
    assert _run(capsys, "kandy", "check", T15, good, bad)[0] == 1
    _one_error(capsys, "kandy", "check", T15, "foo(bar", contains="not a KANDY sample")
    _one_error(capsys, "kandy", "check", T15, "hello world", contains="not a KANDY sample")


def test_kandy_show_into_unwritable_place(capsys, tmp_path):
    ds = tmp_path / "ds"
    assert _run(capsys, "kandy", "generate", REF, "--out", ds, "-q", "-j", "1", "--tasks", "1",
                "--samples", "6", "--no-images")[0] == 0
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_error(capsys, "kandy", "show", ds, "--out", blocker / "sub", "-q",
               contains="cannot write")


# ------------------------------------------------------------------------ sandbox holes
@pytest.mark.parametrize("body", [
    "assertz(seen(X))", "asserta(seen(X))", "retract(seen(_))", "retractall(seen(_))",
    "format(\"hi~n\")", "format(user_error, \"x\", [])", "writeln(X)", "print_message(error, x)",
    "set_prolog_flag(double_quotes, atom)", "op(700, xfx, ===>)", "sleep(100)",
    "findall(Y, (member(Y, [1]), assertz(seen(Y))), _)", "\\+ format(\"x\")",
])
def test_sandbox_refuses_side_effects(body):
    with pytest.raises(UnsafeRuleError, match="not allowed"):
        TaskRule(f"valid(X) :- {body}.\n")


def test_format_into_a_string_is_allowed():
    rule = TaskRule("valid(X) :- format(atom(A), '~w', [X]), atom(A).\n")
    assert rule.check(["side_by_side([circle_red_small])"]) == [True]
    rule.close()


def test_flags_do_not_leak_between_tasks():
    # a task cannot change a flag (refused), and each task's text is read with fixed flags:
    # "ab" is a string in every task, whatever an earlier task tried
    with pytest.raises(UnsafeRuleError):
        TaskRule("valid(_) :- set_prolog_flag(double_quotes, codes).\n")
    rule = TaskRule('valid(_) :- string("ab").\n')
    assert rule.check(["side_by_side([circle_red_small])"]) == [True]
    rule.close()


def test_looping_rule_hits_the_inference_limit():
    rule = TaskRule("valid(X) :- valid(X).\n")
    with pytest.raises(NesyError, match="inferences"):
        rule.check(["side_by_side([circle_red_small])"])
    rule.close()


@pytest.mark.timing
def test_sigint_interrupts_a_looping_rule(tmp_path):
    import subprocess
    import sys
    # no clock: a SIGINT sent while the rule runs must end it with KeyboardInterrupt; without
    # signal handling the rule would run into its inference budget (a NesyError) instead
    script = textwrap.dedent("""
        import os, signal, threading, time
        from nesybench.kandy.rules import TaskRule
        r = TaskRule("valid(X) :- between(1, inf, N), N < 0.\\n")
        state = {"running": False, "done": False, "seen": 0}

        def handler(signum, frame):
            state["seen"] += 1
            if state["seen"] == 1:
                raise KeyboardInterrupt

        def sender():
            while not state["running"]:
                time.sleep(0.001)
            while not state["done"]:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.02)

        signal.signal(signal.SIGINT, handler)
        threading.Thread(target=sender, daemon=True).start()
        try:
            state["running"] = True
            r.check(["side_by_side([circle_red_small])"])
            outcome = "finished"
        except KeyboardInterrupt:
            outcome = "interrupted"
        except Exception as exc:
            outcome = f"not interrupted: {exc}"
        state["done"] = True
        print(outcome)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert res.stdout.strip() == "interrupted", res.stdout + res.stderr



@pytest.mark.timing
def test_ctrl_c_while_prolog_calls_python_is_a_keyboard_interrupt(tmp_path):
    """A signal whose Python handler would run while janus is at work (here: sent by Python
    code that Prolog calls) is held until the call returns, then raised in our code: the
    caller sees KeyboardInterrupt or the CLI's Terminated (not a Prolog error wrapping it),
    and the engine still answers. A handler raising inside janus used to leave a half-built term behind and,
    now and then, crash the process as it exited (a Ctrl-C burst on a looping rule)."""
    import subprocess
    import sys
    script = textwrap.dedent("""
        import os
        from nesybench import cli
        from nesybench.logic import prolog
        cli._install_sigterm()                    # SIGTERM raises Terminated, as in a command
        for call in (prolog.solutions, prolog.once):
            for sig in (2, 15):
                try:
                    call("py_call(os:kill(Pid, Sig)), X = f(_)", Pid=os.getpid(), Sig=sig)
                    print("not-interrupted")
                except KeyboardInterrupt as exc:
                    print(type(exc).__name__)
        print(prolog.once("X is 6 * 7")["X"])
    """)
    # SIGINT at its default, as from a terminal (a background job starts with it ignored)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
                         timeout=120,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert (res.returncode, res.stdout.split(), res.stderr) == \
        (0, ["KeyboardInterrupt", "Terminated"] * 2 + ["42"], "")


# ------------------------------------------------------------------------ RS task files
RS = "name: t\nconcepts: [{name: b, count: 2, domain: [0, 1]}]\nknowledge: kb/shortcuts/xor.lp\n"


@pytest.mark.parametrize("extra,msg", [
    ("mpas: shared\n", "unknown key 'mpas'"),
    ("support: null\n", "support"),
    ("generate: 5\n", "generate must be a mapping"),
    ("generate: {samples: {train: -5}}\n", "generate.samples.train"),
    ("depends: 5\n", "depends must be a mapping"),
    ("coef: {y: {b(1): abc}}\n", "coef.y.b(1)"),
    ("maps: sharde\n", "maps must be"),
    ("support: {sample: -3}\n", "support.sample"),
    # integers clingo cannot hold: refused at load, not an OverflowError in the solver
    ("coef: {y: {b(1): 100000000000000000000000000}}\n", "coef.y.b(1): coefficients"),
    ("coef: {y: {b(9999999999): 1}}\n", "coef.y.b(9999999999)"),
    ("coef: {y: {b(1): 2000000000, b(2): 2000000000}}\n", "can reach 4000000000"),
    ("facts: [[f, 100000000000000000000000000]]\n", "facts[0]"),
])
def test_bad_rs_task_files(tmp_path, capsys, extra, msg):
    p = tmp_path / "t.yaml"
    p.write_text(RS + extra)
    _one_error(capsys, "rs", "count", p, contains=msg)


@pytest.mark.parametrize("concepts,msg", [
    ("[{name: b, count: 2, domain: {range: [5, 1]}}]", "is empty"),
    ("[{name: b, count: 0, domain: [0, 1]}]", "count"),
    ("[{name: b, domain: [0, 1], colour: red}]", "unknown key 'colour'"),
    ("[5]", "concepts[0]"),
])
def test_bad_rs_concepts(tmp_path, capsys, concepts, msg):
    p = tmp_path / "t.yaml"
    p.write_text(f"name: t\nconcepts: {concepts}\nknowledge: kb/shortcuts/xor.lp\n")
    _one_error(capsys, "rs", "count", p, contains=msg)


def test_rs_prolog_knowledge_loop_and_assert(tmp_path, capsys):
    (tmp_path / "loop.pl").write_text("label(W, y, V) :- label(W, y, V).\n")
    (tmp_path / "as.pl").write_text("label(_, y, 1) :- assertz(foo).\n")
    for kb, msg in (("loop.pl", "inferences"), ("as.pl", "not allowed")):
        p = tmp_path / "t.yaml"
        p.write_text(f"name: t\nconcepts: [{{name: b, count: 2, domain: [0, 1]}}]\n"
                     f"knowledge: {tmp_path / kb}\n")
        _one_error(capsys, "rs", "count", p, contains=msg)


def test_rs_cli_options(tmp_path, capsys):
    _one_error(capsys, "rs", "count", ROOT / "curricula/rs/xor.yaml", "--list", "-1",
               contains="--list")
    _one_error(capsys, "rs", "count", ROOT / "curricula/rs/xor.yaml", "--out",
               tmp_path / "no" / "such" / "x.json", contains="cannot write")
    preds = tmp_path / "p.csv"
    preds.write_text("label:y,pred_label:y,concept:d(1),pred_concept:d(1)\n1,1,0,0\n0,1,1,0\n")
    _one_error(capsys, "rs", "metrics", preds, "--shared", "digit=d(9)", contains="d(9)")
    _one_error(capsys, "rs", "metrics", preds, "--shared", "bad", contains="GROUP=VAR")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _one_error(capsys, "rs", "metrics", preds, "--out", blocker / "m", contains="cannot write")
    rc, out, _ = _run(capsys, "rs", "metrics", preds, "--out", tmp_path / "m", "--json")
    assert rc == 0 and (tmp_path / "m" / "metrics.json").exists()


# ------------------------------------------------------------------------ RuDaS
@pytest.mark.parametrize("opt,val", [("--threshold", "2"), ("--threshold", "-0.1"),
                                     ("--max-derived", "-1"), ("--time-limit", "0")])
def test_rudas_evaluate_options(tmp_path, capsys, opt, val):
    _one_error(capsys, "rudas", "evaluate", tmp_path, tmp_path / "l.pl", opt, val,
               contains=opt)


def test_rudas_learned_file_nested_deep_and_binary(tmp_path, capsys):
    ds = tmp_path / "ds"
    assert _run(capsys, "rudas", "generate", "--out", ds)[0] == 0
    deep = tmp_path / "deep.pl"
    deep.write_text("p(X, " + "f(" * 5000 + "X" + ")" * 5000 + ") :- q(X, X).\n")
    _one_error(capsys, "rudas", "evaluate", ds, deep)
    binary = tmp_path / "bin.pl"
    binary.write_bytes(bytes(range(256)) * 4)
    _one_error(capsys, "rudas", "evaluate", ds, binary)


# ------------------------------------------------------------------------ clingo
def test_clingo_unsafe_variable_error_is_one_line(tmp_path, capsys):
    (tmp_path / "k.lp").write_text("y(K, y, V) :- c(K, b(1), X).\n")
    p = tmp_path / "t.yaml"
    p.write_text(f"name: t\nconcepts: [{{name: b, count: 2, domain: [0, 1]}}]\n"
                 f"knowledge: {tmp_path / 'k.lp'}\n")
    _one_error(capsys, "rs", "count", p, contains="unsafe")


@pytest.mark.timing
def test_clingo_time_limit(tmp_path):
    from nesybench.errors import BudgetExceeded
    from nesybench.logic import asp
    prog = tmp_path / "big.lp"
    prog.write_text("{ a(1..80) }.\n")
    with pytest.raises(BudgetExceeded, match="longer than 0.3 s"):
        asp.solve([prog], models=0, keep_models=False, time_limit=0.3)
    assert asp.solve([prog], models=5, keep_models=False).count == 5


# ------------------------------------------------------------------------ Prolog entry point
@pytest.mark.timing
def test_prolog_entry_point_task_valid_reload_limits_and_messages(tmp_path):
    import subprocess
    swipl = ROOT / ".deps" / "swipl" / "bin" / "swipl"
    if not swipl.exists():
        pytest.skip("no project-local swipl (make setup builds it)")
    rule = tmp_path / "r.pl"
    rule.write_text("valid(_).\n")
    (tmp_path / "bad.pl").write_text("valid(X) :-\n  foo(X.\n")
    (tmp_path / "loop.pl").write_text("valid(X) :- valid(X).\n")
    script = tmp_path / "run.pl"
    script.write_text(textwrap.dedent(f"""
        run :-
            S = side_by_side([circle_red_small]),
            ( task_valid('{rule}', S) -> writeln(first_true) ; writeln(first_false) ),
            sleep(1.1),
            setup_call_cleanup(open('{rule}', write, O),
                               format(O, "valid(_) :- fail.~n", []), close(O)),
            ( task_valid('{rule}', S) -> writeln(second_true) ; writeln(second_false) ),
            catch(task_valid('{tmp_path / "bad.pl"}', S), E1, print_message(error, E1)),
            catch(task_valid('{tmp_path / "loop.pl"}', S), E2, print_message(error, E2)),
            untrusted_limits(I, T), writeln(limits(I, T)).
        """))
    res = subprocess.run([str(swipl), "-q", "-g", "run", "-t", "halt",
                          str(ROOT / "prolog" / "nesybench.pl"), str(script)],
                         capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert res.stdout.split() == ["first_true", "second_false", "limits(10000000,10)"], \
        res.stdout + res.stderr
    assert f"{tmp_path / 'bad.pl'}:2: syntax error" in res.stderr
    assert "inferences" in res.stderr and "Unknown message" not in res.stderr
