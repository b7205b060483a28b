"""Plant plausible one-line bugs, one at a time, in a temporary copy of the sources and check
that the test suite catches each of them.

    .venv/bin/python benchmarks/planted_bugs.py            # every bug, about a minute
    .venv/bin/python benchmarks/planted_bugs.py -k forgetting

For each bug the copy gets the one-line change, then the tests named for it run against the
copy (``PYTHONPATH`` points at its ``python/``); the bug is *caught* when at least one of them
fails. A bug whose line is no longer in the source is reported as ``stale`` (update the table
after a refactoring). Prints one line per bug and a summary; exit 1 when a bug is not caught.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPY = ["python", "kb", "prolog", "tests", "curricula", "pyproject.toml"]


@dataclass(frozen=True)
class Bug:
    name: str
    path: str            # file, relative to the repository root
    old: str             # the exact text the bug replaces (must occur once)
    new: str
    tests: tuple[str, ...]


ORACLES = "tests/test_oracles.py"
BUGS = [
    Bug("CL forgetting: the max includes the current step",
        "python/nesybench/kandy/learn/metrics.py",
        "best = A[:z, :z].max(axis=0)", "best = A[:z + 1, :z].max(axis=0)",
        (f"{ORACLES}::test_forgetting_of_a_rising_accuracy_matrix_is_negative",
         f"{ORACLES}::test_forgetting_matches_its_definition")),
    Bug("CL BWT with the diagonal terms",
        "python/nesybench/kandy/learn/metrics.py",
        "for i in range(1, z + 1) for h in range(i)]",
        "for i in range(1, z + 1) for h in range(i + 1)]",
        ("tests/test_kandy_learn.py", f"{ORACLES}::test_learn_summary_values_not_just_keys")),
    Bug("SKI Mann-Whitney: two different constant samples give p = 1",
        "python/nesybench/ski/scores.py",
        "if np.all(a == a[0]) and np.all(b == a[0]):",
        "if np.all(a == a[0]) and np.all(b == b[0]):",
        (f"{ORACLES}::test_mann_whitney_agrees_with_scipy",)),
    Bug("IRT theta_sd drops the -theta^2 term",
        "python/nesybench/irt/fit.py",
        "np.sqrt(np.maximum(post @ nodes ** 2 - theta ** 2, 0.0))",
        "np.sqrt(np.maximum(post @ nodes ** 2, 0.0))",
        (f"{ORACLES}::test_irt_theta_sd_is_the_posterior_sd",)),
    Bug("IRT 1PL difficulty divided by the ability SD",
        "python/nesybench/irt/fit.py",
        'b_fit = -c if model == "1pl"', 'b_fit = -c / s if model == "1pl"',
        (f"{ORACLES}::test_irt_1pl_recovers_absolute_difficulties_and_scale_with_ability_sd_2",)),
    Bug("IRT 2PL difficulty -c/a -> -c*a",
        "python/nesybench/irt/fit.py",
        "else -c / np.where(np.abs(a) > 1e-8, a, 1e-8)", "else -c * a",
        (f"{ORACLES}::test_irt_2pl_recovers_discriminations_with_ability_sd_not_1",
         "tests/test_irt_fit.py")),
    Bug("RS count: supervision ignored on groups no label reads",
        "python/nesybench/shortcuts/count.py",
        "seen = {w[i] for w in worlds for i in ix if i in sup_ix}", "seen = set()",
        (f"{ORACLES}::test_supervision_on_a_variable_no_label_reads",
         f"{ORACLES}::test_random_tiny_tasks_with_supervision_and_depends_match_brute_force")),
    Bug("RS macro-F1: classes with zero true positives dropped",
        "python/nesybench/shortcuts/metrics.py",
        "present = denom > 0", "present = tp > 0",
        (f"{ORACLES}::test_macro_f1_counts_classes_with_zero_true_positives",)),
    Bug("KANDY sampler: supervision time i/(n-1) -> i/n",
        "python/nesybench/kandy/sampler.py",
        "t = i / (n - 1) if n > 1 else 0.0", "t = i / n if n > 1 else 0.0",
        (f"{ORACLES}::test_supervision_time_runs_from_0_to_1_along_a_split",)),
    Bug("KANDY background knowledge: same_color recursion calls exists_color",
        "kb/kandy/parts/attributes.pl",
        "same_color(CO, [H|T]) :- extract_color(H, CO), same_color(CO, T).",
        "same_color(CO, [H|T]) :- extract_color(H, CO), exists_color(CO, T).",
        (f"{ORACLES}::test_background_knowledge_on_hand_labelled_samples",
         f"{ORACLES}::test_shipped_rules_on_hand_labelled_samples")),
]


def _copy(dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.so", ".hypothesis", ".pytest_cache")
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(src, dst / name)


def run(bug: Bug, work: Path) -> str:
    target = work / bug.path
    original = target.read_text(encoding="utf-8")
    if original.count(bug.old) != 1:
        return "stale"
    target.write_text(original.replace(bug.old, bug.new), encoding="utf-8")
    # the data files are in the user cache folder, which the copy's tests read as well
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(work / "python"), str(work / "tests")]))
    try:
        res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                              *bug.tests], cwd=work, env=env, capture_output=True, text=True,
                             timeout=900)
    finally:
        target.write_text(original, encoding="utf-8")
    if res.returncode == 1:
        return "caught"
    if res.returncode == 0:
        return "NOT CAUGHT"
    return f"error (pytest exit {res.returncode}): {res.stdout[-300:]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="only bugs whose name contains this text")
    args = ap.parse_args(argv)
    bugs = [b for b in BUGS if args.k.lower() in b.name.lower()]
    t0 = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory(prefix="nesybench-planted-") as d:
        work = Path(d)
        _copy(work)
        for bug in bugs:
            verdict = run(bug, work)
            results.append(verdict)
            print(f"{verdict:10s}  {bug.name}", flush=True)
    caught = results.count("caught")
    print(f"planted bugs: {caught}/{len(bugs)} caught, {time.perf_counter() - t0:.0f} s")
    return 0 if caught == len(bugs) else 1


if __name__ == "__main__":
    sys.exit(main())
