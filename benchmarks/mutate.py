"""Mutation testing of the modules that compute the figures a paper reports.

    .venv/bin/python benchmarks/mutate.py                      # every module (long: hours)
    .venv/bin/python benchmarks/mutate.py -m ski/scores.py     # one module
    .venv/bin/python benchmarks/mutate.py --sample 40 --seed 0 # 40 mutants per module
    make mutate

Each mutant is one small change to one module's syntax tree — an arithmetic operator swapped
(``+``/``-``, ``*``/``/``), a comparison moved by one (``<``/``<=``, ``>``/``>=``, ``==``/``!=``,
``in``/``not in``, ``is``/``is not``), ``and``/``or`` swapped, a unary ``-`` or ``not``
dropped, a number changed (0 ↔ 1, n → n + 1, x → 2x) — written into a temporary copy of the
repository (the working tree is never touched); the module's tests then run against the copy.
A mutant is **killed** when a test fails (or the tests pass their time limit, 5× the clean
run), **survives** otherwise. The report gives, per module, mutants killed of those run and
the kill rate, and lists every survivor with its line so it can be killed by a new test or
recorded as equivalent. Exit 1 when a module's rate is below ``--target`` (85 %).

``TARGETS`` names each module's tests (files or single test functions, the fast ones that
own the module); ``SCOPE`` limits a module's mutants to some of its functions where the rest
of it computes no figure.

The tool is our own: mutmut's coverage phase maps no test to this repository's ``python/``
layout (see the docs' mutation page), and a syntax-tree mutator is a page of code.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from planted_bugs import ROOT, _copy  # noqa: E402  (the same copy of the sources)

PKG = "python/nesybench"

#: module (under python/nesybench) -> the tests that own it
TARGETS: dict[str, list[str]] = {
    "ski/scores.py": ["tests/test_ski_metrics.py", "tests/test_oracles.py",
                      "tests/test_ski_profiles.py::test_auc_and_thirds_by_hand",
                      "tests/test_ski_profiles.py::test_bootstrap_of_R_equals_a_loop_over_resamples"],
    "ski/magnitude.py": ["tests/test_ski_metrics.py", "tests/test_ski_data.py",
                         "tests/test_mutation_survivors_ski.py"],
    "kandy/learn/metrics.py": ["tests/test_kandy_learn.py::test_metrics_against_hand_computation",
                               "tests/test_kandy_learn.py::test_balanced_and_plain_accuracy",
                               "tests/test_kandy_learn.py::test_threshold_tuning",
                               "tests/test_oracles.py::test_forgetting_of_a_rising_accuracy_matrix_is_negative",
                               "tests/test_oracles.py::test_forgetting_matches_its_definition",
                               "tests/test_oracles.py::test_learn_summary_values_not_just_keys",
                               "tests/test_mutation_survivors_learn.py"],
    "shortcuts/metrics.py": ["tests/test_shortcuts_metrics.py",
                             "tests/test_oracles.py::test_macro_f1_counts_classes_with_zero_true_positives",
                             "tests/test_mutation_survivors_shortcuts.py"],
    "irt/curves.py": ["tests/test_irt_robustness.py"],
    "irt/fit.py": ["tests/test_irt_fit.py", "tests/test_irt_scale.py",
                   "tests/test_oracles.py::test_irt_1pl_recovers_absolute_difficulties_and_scale_with_ability_sd_2",
                   "tests/test_oracles.py::test_irt_theta_sd_is_the_posterior_sd",
                   "tests/test_oracles.py::test_irt_2pl_recovers_discriminations_with_ability_sd_not_1",
                   "tests/test_mutation_survivors_irt.py"],
    "nesy/inference/semantics.py": ["tests/test_nesy_semantics_agree.py",
                          "tests/test_nesy_models.py::test_world_enumeration_matches_brute_force",
                          "tests/test_nesy_models.py::test_components_equal_full_enumeration",
                          "tests/test_nesy_models.py::test_world_budget_and_circuit_by_name",
                          "tests/test_nesy_models.py::test_fuzzy_product_and_godel_truth",
                          "tests/test_nesy_engine.py::test_domain_and_shape_mismatch",
                          "tests/test_mutation_survivors_nesy.py"],
    "rudas/experiment.py": ["tests/test_mutation_survivors_rudas.py"],
    # the fast tests (the two that take 16-33 s, the addition brute force and the driving
    # severity, are left out)
    "shortcuts/count.py": [
                           "tests/test_shortcuts_count.py::test_xor_regression_values",
                           "tests/test_shortcuts_count.py::test_xor_perm_sequence_and_n8",
                           "tests/test_shortcuts_count.py::test_and3_perm_is_6",
                           "tests/test_shortcuts_count.py::test_mnist_regressions",
                           "tests/test_shortcuts_count.py::test_evenodd_is_36_not_49",
                           "tests/test_shortcuts_count.py::test_formula_matches_brute_force",
                           "tests/test_shortcuts_count.py::test_perm_symmetric_shortcut_equals_enumeration",
                           "tests/test_shortcuts_count.py::test_supervision_and_brute_force",
                           "tests/test_shortcuts_count.py::test_big_integers_and_listing",
                           "tests/test_shortcuts_count.py::test_decomposition_into_components",
                           "tests/test_shortcuts_count.py::test_bad_inputs",
                           "tests/test_shortcuts_count.py::test_variable_elimination_fallback_matches_enumeration",
                           "tests/test_shortcuts_count.py::test_perm_with_supervision_matches_brute_force",
                           "tests/test_oracles.py::test_supervision_on_a_variable_no_label_reads",
                           "tests/test_oracles.py::test_random_tiny_tasks_with_supervision_and_depends_match_brute_force",
                           "tests/test_mutation_survivors_count.py",
                           "tests/test_shortcuts_scaling.py::test_xor_all_worlds_structured_equals_brute_force",
                           "tests/test_shortcuts_scaling.py::test_xor_large_closed_forms",
                           "tests/test_shortcuts_scaling.py::test_perm_symmetry_on_all_worlds_matches_enumeration",
                           "tests/test_shortcuts_scaling.py::test_read_once_formula_tree_equals_brute_force",
                           "tests/test_shortcuts_scaling.py::test_state_and_time_budgets_raise_clear_errors",
                           "tests/test_shortcuts_scaling.py::test_perm_pairs_match_reference_enumeration",
                           "tests/test_shortcuts_scaling.py::test_multi_digit_addition_row_dp_equals_brute_force",
                           "tests/test_shortcuts_scaling.py::test_kandinsky_numpy_labels_match_asp",
                           "tests/test_shortcuts_perm.py::test_perm_agrees_with_clingo_and_brute_force"],
    "nesy/inference/learnable.py": ["tests/test_nesy_learnable.py",
                          "tests/test_nesy_dpl_programs.py",
                          "tests/test_nesy_approx.py::test_learnable_fact_gradient_sign"],
    "nesy/inference/circuit.py": ["tests/test_nesy_engine.py::test_addition_matches_enumeration_values_and_gradients",
                        "tests/test_nesy_engine.py::test_mixed_program_against_enumeration_problog_and_own_sdd",
                        "tests/test_nesy_engine.py::test_annotated_disjunction_outcomes_sum_to_one",
                        "tests/test_nesy_engine.py::test_mnist_addition_carry_program_matches_enumeration",
                        "tests/test_nesy_engine.py::test_circuit_cache_reused",
                        "tests/test_nesy_engine.py::test_domain_and_shape_mismatch",
                        "tests/test_nesy_engine.py::test_log_input_and_zero_probabilities",
                        "tests/test_nesy_engine.py::test_learnable_fact",
                        "tests/test_nesy_engine.py::test_three_digit_check_compiles_small_and_matches_enumeration",
                        "tests/test_nesy_programs.py", "tests/test_nesy_semantics_agree.py",
                        "tests/test_nesy_dpl_programs.py",
                        "tests/test_nesy_sandbox.py::test_evidence_conditions_the_queries",
                        "tests/test_nesy_sandbox.py::test_evidence_of_probability_zero_is_named",
                        "tests/test_nesy_sandbox.py::test_evidence_with_neural_inputs_is_batched",
                        "tests/test_nesy_sandbox.py::test_fixed_probabilities_are_exact_in_float64",
                        "tests/test_nesy_sandbox.py::test_learnable_ad_initial_values_and_normalisation",
                        "tests/test_nesy_sandbox.py::test_circuit_budget_names_the_limit",
                        "tests/test_mutation_survivors_circuit.py"],
    "runs/store.py": ["tests/test_runs.py::test_store_tables_and_wal",
                      "tests/test_runs.py::test_same_rows_inline_one_and_two_workers",
                      "tests/test_runs.py::test_failing_cells_are_recorded_and_the_sweep_goes_on",
                      "tests/test_runs.py::test_a_different_study_in_the_folder_is_refused_unless_force_new",
                      "tests/test_runs.py::test_adding_axis_values_runs_only_the_new_cells",
                      "tests/test_runs.py::test_corrupt_or_missing_store_is_a_clear_error",
                      "tests/test_runs.py::test_a_second_driver_on_the_same_study_is_refused",
                      "tests/test_runs.py::test_table_aggregates_over_repetitions",
                      "tests/test_runs_faults.py::test_crashing_and_hanging_cells_fail_with_their_cause_local",
                      "tests/test_runs_faults.py::test_a_cell_that_fails_then_succeeds_keeps_one_set_of_metrics",
                      "tests/test_runs_faults.py::test_max_attempts_bounds_the_retries_and_no_retry_failed_leaves_failures",
                      "tests/test_runs_faults.py::test_status_tells_running_from_interrupted_and_sigterm_leaves_no_scratch",
                      "tests/test_runs_faults.py::test_an_interrupted_creation_is_cleaned_on_the_next_start",
                      "tests/test_runs_faults.py::test_a_full_disk_is_one_line_and_leaves_no_partial_file",
                      "tests/test_runs_faults.py::test_a_finished_study_is_readable_on_a_read_only_file_system",
                      "tests/test_runs_faults.py::test_a_damaged_store_is_refused_with_how_to_recover",
                      "tests/test_runs_faults.py::test_resume_after_a_crash_in_the_middle_of_a_commit",
                      "tests/test_runs_faults.py::test_one_and_one_point_zero_are_the_same_cell",
                      "tests/test_runs_faults.py::test_table_counts_failures_and_exports_are_the_same_bytes",
                      "tests/test_mutation_survivors_runs.py"],
}

#: module -> the functions (by name, methods included) whose code is mutated; a module not
#: listed here is mutated whole. For a module that also parses specs and drives runs, this keeps
#: the mutants on the code that computes the reported figures.
SCOPE: dict[str, set[str]] = {
    # the counting paths, not the brute force the tests compare them with
    "shortcuts/count.py": {"_deadline_left", "_structured_all", "count_rs", "_joint",
                           "_group_facts", "_components", "_disentangled", "_ve", "_as_map",
                           "_combine", "_solve", "_perm", "_symmetric"},
    # the report: thresholds by grid search, Tables 2-5 and their cells
    "rudas/experiment.py": {"_mean", "_fmt", "choose_thresholds", "_at", "build_tables",
                            "_detail", "_md", "_csv"},
}

_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
         ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
         ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
         ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Lt: "<", ast.LtE: "<=",
           ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
           ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.And: "and",
           ast.Or: "or"}


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int           # the index-th mutation site of the module, in walk order
    line: int
    what: str


def _docstring_nodes(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def sites(tree) -> list[tuple[ast.AST, str, object]]:
    """Every (node, description, how) mutation site, in ``ast.walk`` order."""
    out = []
    docs = _docstring_nodes(tree)
    # drawing code (functions named plot*) is not mutated: no test reads pixels, so its
    # mutants (a figure size, a label's rotation) would all survive without meaning anything
    drawing = {id(n) for f in ast.walk(tree)
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
               and f.name.startswith("plot") for n in ast.walk(f)}
    for node in ast.walk(tree):
        if id(node) in drawing:
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _SWAP:
            new = _SWAP[type(node.op)]
            out.append((node, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[new]}", ("op", new)))
        elif isinstance(node, ast.BoolOp):
            new = _SWAP[type(node.op)]
            out.append((node, f"{_SYMBOL[type(node.op)]} -> {_SYMBOL[new]}", ("op", new)))
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _SWAP:
                    new = _SWAP[type(op)]
                    out.append((node, f"{_SYMBOL[type(op)]} -> {_SYMBOL[new]}",
                                ("cmp", i, new)))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
            out.append((node, "drop unary " + ("-" if isinstance(node.op, ast.USub) else "not"),
                        ("unary",)))
        elif isinstance(node, ast.Constant) and id(node) not in docs \
                and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            v = node.value
            if isinstance(v, int):
                new = 1 if v == 0 else (0 if v == 1 else v + 1)
            else:
                new = 1.0 if v == 0 else v * 2
            out.append((node, f"{v!r} -> {new!r}", ("const", new)))
    return out


class _Apply(ast.NodeTransformer):
    def __init__(self, target, how):
        self.target, self.how = target, how

    def visit(self, node):
        if node is self.target:
            kind = self.how[0]
            if kind == "op":
                node.op = self.how[1]()
            elif kind == "cmp":
                node.ops[self.how[1]] = self.how[2]()
            elif kind == "unary":
                return self.generic_visit(node).operand
            elif kind == "const":
                return ast.copy_location(ast.Constant(self.how[1]), node)
            return node
        return self.generic_visit(node)


def mutants_of(module: str) -> tuple[str, list[Mutant]]:
    source = (ROOT / PKG / module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    scope = SCOPE.get(module)
    inside = None if scope is None else {
        id(n) for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in scope
        for n in ast.walk(f)}
    out = []
    for i, (node, what, _how) in enumerate(sites(tree)):
        line = getattr(node, "lineno", 0)
        if line and "no mutate" in lines[line - 1]:
            continue
        if inside is not None and id(node) not in inside:
            continue
        out.append(Mutant(module, i, line, what))
    return source, out


def mutated_source(source: str, index: int) -> str:
    tree = ast.parse(source)
    node, _what, how = sites(tree)[index]
    tree = _Apply(node, how).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def _pytest(work: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    # the copy's tests read the data sets cached in the user cache folder, as these do
    env = {**os.environ, "PYTHONPATH": str(work / "python"), "PYTHONDONTWRITEBYTECODE": "1",
           "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "default")}
    t0 = time.perf_counter()
    try:
        res = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                              "no:cacheprovider", *tests], cwd=work, env=env,
                             capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - t0
    return ("pass" if res.returncode == 0 else "fail"), time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--module", action="append",
                    help=f"module under {PKG}/ (repeatable; default: {', '.join(TARGETS)})")
    ap.add_argument("--sample", type=int, default=0,
                    help="run this many mutants per module, drawn with --seed (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.85, help="kill rate each module needs")
    ap.add_argument("--list", action="store_true", help="only count and list the mutants")
    ap.add_argument("--json", action="store_true", help="print the report as JSON at the end")
    ap.add_argument("--report", type=Path, help="also write the JSON report to this file")
    ap.add_argument("--survivors", type=Path, metavar="REPORT",
                    help="run only the mutants that survived in an earlier JSON report "
                         "(matched by module, line and mutation: after new tests, which of "
                         "them are killed now)")
    args = ap.parse_args(argv)
    earlier = None
    if args.survivors is not None:
        try:
            earlier = {r["module"]: set(r["survivors"])
                       for r in json.loads(args.survivors.read_text(encoding="utf-8"))}
        except (OSError, ValueError, KeyError, TypeError) as e:
            ap.error(f"--survivors {args.survivors}: not a report of this script ({e})")
    modules = args.module or (list(earlier) if earlier is not None else list(TARGETS))
    for m in modules:
        if m not in TARGETS:
            ap.error(f"unknown module {m!r} (known: {', '.join(TARGETS)})")
        if earlier is not None and m not in earlier:
            # no mutant would run, and an empty run would read as 100 % killed
            ap.error(f"--survivors {args.survivors}: no report of {m}")
    report = []
    with tempfile.TemporaryDirectory(prefix="nesybench-mutate-") as tmp:
        work = Path(tmp)
        _copy(work)
        for module in modules:
            tests = [t for t in TARGETS[module] if (ROOT / t.split("::")[0]).exists()]
            source, mutants = mutants_of(module)
            if earlier is not None:
                mutants = [m for m in mutants if f"{m.line}: {m.what}" in earlier.get(module, ())]
            if args.sample and len(mutants) > args.sample:
                mutants = sorted(random.Random(args.seed).sample(mutants, args.sample),
                                 key=lambda m: m.index)
            if args.list:
                for m in mutants:
                    print(f"{module}:{m.line}: {m.what}")
                print(f"{module}: {len(mutants)} mutants")
                continue
            clean, base = _pytest(work, tests, timeout=3600)
            if clean != "pass":
                print(f"{module}: the tests fail without a mutation; fix them first")
                return 2
            limit = max(60.0, 5 * base)
            target = work / PKG / module
            killed, survivors = 0, []
            t0 = time.perf_counter()
            for n, m in enumerate(mutants, 1):
                target.write_text(mutated_source(source, m.index), encoding="utf-8")
                outcome, _secs = _pytest(work, tests, limit)
                if outcome == "pass":
                    survivors.append(m)
                else:
                    killed += 1
                print(f"\r{module}: {n}/{len(mutants)} run, {killed} killed", end="",
                      flush=True)
            target.write_text(source, encoding="utf-8")
            rate = killed / len(mutants) if mutants else 1.0
            print(f"\r{module}: {killed}/{len(mutants)} killed ({rate:.0%}), "
                  f"{time.perf_counter() - t0:.0f} s")
            for m in survivors:
                print(f"  survived {module}:{m.line}: {m.what}")
            report.append({"module": module, "mutants": len(mutants), "killed": killed,
                           "rate": rate, "survivors": [f"{m.line}: {m.what}" for m in survivors],
                           "tests": tests})
    if args.list:
        return 0
    low = [r for r in report if r["rate"] < args.target]
    print("mutation: " + "; ".join(f"{r['module']} {r['killed']}/{r['mutants']} "
                                   f"({r['rate']:.0%})" for r in report))
    if args.json:
        print(json.dumps(report, indent=2))
    if args.report is not None:
        args.report.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
