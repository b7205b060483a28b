"""KANDY generation: rule agreement, splits, supervision, determinism, bad input, CLI."""
import csv
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nesybench.cli import main as cli_main
from nesybench.errors import NesyError, PrologError, UnsafeRuleError
from nesybench.kandy.generate import generate, read_annotations
from nesybench.kandy.rules import TaskRule
from nesybench.kandy.sampler import supervision_probability
from nesybench.kandy.symbols import COMPOSITIONS, Composite, Shape, from_json, from_prolog

REF = Path(__file__).parent / "data" / "reference_style.yaml"


def _write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_every_sample_agrees_with_its_rule_and_splits_are_disjoint(tmp_path):
    res = generate(REF, tmp_path / "out", seed=7)
    assert res.images == 50
    out = tmp_path / "out"
    rows = {s: read_annotations(out, s) for s in ("train", "val", "test")}
    assert [len(rows[s]) for s in ("train", "val", "test")] == [10 + 15, 5 + 8, 5 + 7]
    for task in (0, 1):
        rule = TaskRule((out / "rules" / f"{task:02d}.pl").read_text())
        texts, labels, seen = [], [], {}
        for split, rs in rows.items():
            for r in rs:
                if r["task_id"] != task:
                    continue
                assert from_json(r["symbol"]) == from_prolog(r["prolog"])
                assert (out / split / r["filename"]).is_file()
                assert seen.setdefault(r["prolog"], split) == split   # no cross-split leakage
                texts.append(r["prolog"])
                labels.append(bool(r["label"]))
        assert rule.check(texts) == labels                             # valid/1 iff positive
        assert len(set(texts)) == len(texts)                          # unique without replacement


def test_manifest_checksums_and_stats(tmp_path):
    generate(REF, tmp_path / "out", seed=7, images=False)
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["format"] == "nesybench-kandy" and man["version"] == "1.1" and man["seed"] == 7
    from nesybench.io import sha256_file
    for rel, digest in man["files"].items():
        assert sha256_file(tmp_path / "out" / rel) == digest
    st = man["tasks"][1]["stats"]
    assert st["unique_symbols"] == 30 and st["positives"] + st["negatives"] == 30
    assert st["candidates"] == 30 + st["rejected_by_rule"] + st["rejected_by_duplicate"]
    assert man["tasks"][0]["rule_file"] == "rules/00.pl"


def _tree_digest(path: Path) -> dict:
    from nesybench.io import checksums
    return checksums(path)


def test_same_seed_same_bytes_across_hash_seeds_and_workers(tmp_path):
    code = ("import sys; from nesybench.kandy.generate import generate; "
            "generate(sys.argv[1], sys.argv[2], seed=3, workers=int(sys.argv[3]))")
    digests = []
    for i, (hashseed, workers) in enumerate([("0", 1), ("12345", 2)]):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        out = tmp_path / f"o{i}"
        subprocess.run([sys.executable, "-c", code, str(REF), str(out), str(workers)],
                       check=True, env=env)
        digests.append(_tree_digest(out))
    assert digests[0] == digests[1]
    other = tmp_path / "o2"
    generate(REF, other, seed=4, workers=1)
    assert _tree_digest(other) != digests[0]


def test_same_bytes_whatever_the_jobs_and_batches(tmp_path, monkeypatch):
    """Workers draw their jobs' pictures in vectorised batches and write the files
    themselves: neither the job size, the batch size nor the worker count changes a byte."""
    import nesybench.kandy.generate as G
    import nesybench.kandy.render as R
    generate(REF, tmp_path / "one", seed=3, workers=1)
    monkeypatch.setattr(G, "RENDER_CHUNK", 7)                  # many small jobs ...
    generate(REF, tmp_path / "jobs", seed=3, workers=2)        # ... over two processes
    monkeypatch.setattr(R, "_BATCH_PIXELS", 3 * 224 * 224)     # three pictures per batch
    generate(REF, tmp_path / "batches", seed=3, workers=1)
    one = _tree_digest(tmp_path / "one")
    assert sum(k.endswith(".png") for k in one) == 50
    assert _tree_digest(tmp_path / "jobs") == one
    assert _tree_digest(tmp_path / "batches") == one
    man = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert man["config"]["png_deflate"] == R.PNG_DEFLATE


def test_a_task_split_into_parts_gives_the_same_bytes(tmp_path):
    """With fewer tasks than two per worker, each task's pictures are split into parts that
    several workers draw the task for (or reuse the draw of): the folder is the one process's,
    byte for byte, and the job order (longest first) does not show in the annotations."""
    generate(REF, tmp_path / "one", seed=5, workers=1, tasks=[1], samples=30)
    generate(REF, tmp_path / "parts", seed=5, workers=3, tasks=[1], samples=30)   # 6 parts
    assert _tree_digest(tmp_path / "parts") == _tree_digest(tmp_path / "one")
    generate(REF, tmp_path / "both", seed=5, workers=3, samples=30)       # 2 tasks: 3 parts each
    rows = read_annotations(tmp_path / "both", "train")
    assert [r["task_id"] for r in rows] == sorted(r["task_id"] for r in rows)


def test_supervision_decay():
    assert supervision_probability(0.0, 0.8, 0.2) == pytest.approx(0.8)
    assert supervision_probability(1.0, 0.8, 0.2) == pytest.approx(0.2)
    assert supervision_probability(0.5, 0.8, 0.2) == pytest.approx(0.8 * math.exp(-math.log(4) / 2))
    assert supervision_probability(0.3, 0.5, 0.5) == pytest.approx(0.5)      # gamma = beta
    assert supervision_probability(0.0, 0.7, 0.0) == 0.7                     # beta = 0
    assert supervision_probability(0.1, 0.7, 0.0) == 0.0
    assert supervision_probability(0.5, 0.0, 0.0) == 0.0


def test_supervision_flags_follow_the_schedule(tmp_path):
    path = _write(tmp_path, """\
        - name: sparse
          samples: 400
          train_split: 0.8
          val_split: 0.1
          gamma: 0.9
          beta: 0.1
          positive_set: [{side_by_side: [{shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}]}]
          negative_set: [{stack: [{shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}]}]
        """)
    generate(path, tmp_path / "out", images=False)
    rows = read_annotations(tmp_path / "out", "train")
    first, last = rows[:80], rows[-80:]
    assert sum(r["supervised"] for r in first) > 45          # ~0.8 expected
    assert sum(r["supervised"] for r in last) < 25           # ~0.13 expected


def test_with_replacement_when_symbols_run_out(tmp_path):
    # 2 positives and 2 negatives exist: patience runs out, splits sample with replacement
    path = _write(tmp_path, """\
        - name: tiny
          samples: 40
          train_split: 0.5
          val_split: 0.25
          patience: 50
          positive_set: [{in: [{shape: triangle, color: red, size: ~}]}]
          negative_set: [{in: [{shape: square, color: red, size: ~}]}]
        """)
    generate(path, tmp_path / "out", images=False)
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    st = man["tasks"][0]["stats"]
    assert st["with_replacement"] and st["unique_symbols"] == 4
    assert st["split_sizes"] == {"train": 20, "val": 10, "test": 10}   # exactly as requested
    splits = {s: {r["prolog"] for r in read_annotations(tmp_path / "out", s)}
              for s in ("train", "val", "test")}
    assert not (splits["train"] & splits["val"]) and not (splits["train"] & splits["test"])
    assert not (splits["val"] & splits["test"])


# ----------------------------------------------------------------- bad input
BAD_CASES = {
    "malformed_yaml": ("- name: x\n  samples: a: b\n", "YAML does not parse", 2),
    "unknown_operator": ("""\
        - name: x
          samples: 10
          train_split: 0.5
          val_split: 0.25
          positive_set: [{spiral: [{shape: ~, color: ~, size: ~}]}]
          negative_set: [{in: [{shape: ~, color: ~, size: ~}]}]
        """, "unknown operator 'spiral'", 5),
    "unknown_value": ("""\
        - name: x
          samples: 10
          train_split: 0.5
          val_split: 0.25
          positive_set:
          - in: [{shape: ~, color: purple, size: ~}]
          negative_set: [{in: [{shape: ~, color: ~, size: ~}]}]
        """, "unknown color 'purple'", 6),
    "unknown_field": ("""\
        - name: x
          samples: 10
          train_split: 0.5
          val_splt: 0.25
          positive_set: [{in: [{shape: ~, color: ~, size: ~}]}]
          negative_set: [{in: [{shape: ~, color: ~, size: ~}]}]
        """, "unknown field", 1),
    "rule_syntax": ("""\
        - name: x
          samples: 10
          train_split: 0.5
          val_split: 0.25
          positive_rule: |
            valid(C) :- contains(C, C1).
            valid(C) :- contains(C, C1)), atom(C1).
          positive_set: [{in: [{shape: ~, color: ~, size: ~}]}]
          negative_set: [{in: [{shape: ~, color: ~, size: ~}]}]
        """, "syntax error", 7),
    "unsafe_rule": ("""\
        - name: x
          samples: 10
          train_split: 0.5
          val_split: 0.25
          positive_rule: |
            valid(C) :- contains(C, _), shell('touch /tmp/pwned').
          positive_set: [{in: [{shape: ~, color: ~, size: ~}]}]
          negative_set: [{in: [{shape: ~, color: ~, size: ~}]}]
        """, "not allowed", 6),
    "label_impossible": ("""\
        - name: x
          samples: 10
          train_split: 0.5
          val_split: 0.25
          patience: 30
          positive_rule: |
            valid(C) :- contains(C, C1), extract_shape(C1, triangle).
          positive_set: [{in: [{shape: square, color: ~, size: ~}]}]
          negative_set: [{in: [{shape: circle, color: ~, size: ~}]}]
        """, "produced no positive sample", None),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_gives_one_clear_error_and_no_output(tmp_path, case, capsys):
    text, message, line = BAD_CASES[case]
    path = _write(tmp_path, text)
    out = tmp_path / "out"
    rc = cli_main(["kandy", "generate", str(path), "--out", str(out), "-q", "-j", "1"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and message in err and str(path) in err
    if line is not None:
        assert f"{path}:{line}" in err
    if case not in ("malformed_yaml",):
        assert "task 0 'x'" in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]      # no temp folder left
    assert not Path("/tmp/pwned").exists()


def test_missing_file_and_unwritable_out(tmp_path, capsys):
    assert cli_main(["kandy", "generate", str(tmp_path / "none.yaml"), "--out",
                     str(tmp_path / "o")]) == 2
    assert "curriculum file not found" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli_main(["kandy", "generate", str(REF), "--out", str(blocker / "sub"), "-q"]) == 2
    assert "cannot write the output folder" in capsys.readouterr().err


def test_existing_out_needs_overwrite(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    assert cli_main(["kandy", "generate", str(REF), "--out", str(tmp_path / "o"), "-q"]) == 2
    assert "already exists" in capsys.readouterr().err


def test_cli_json_summary_and_check(tmp_path, capsys, root):
    assert cli_main(["kandy", "generate", str(REF), "--out", str(tmp_path / "o"), "--json",
                     "--no-images", "--tasks", "1", "--samples", "12"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [t["id"] for t in data["tasks"]] == [1] and data["tasks"][0]["unique_symbols"] == 12
    rule = root / "kb" / "kandy" / "rules" / "easy" / "t15.pl"
    assert cli_main(["kandy", "check", str(rule), "--json",       # 1: some sample invalid
                     "side_by_side([stack([triangle_red_small, square_red_small])])",
                     "side_by_side([stack([square_red_small, triangle_red_small])])"]) == 1
    verdicts = [x["valid"] for x in json.loads(capsys.readouterr().out)]
    assert verdicts == [True, False]


def test_rule_errors_raise_typed_exceptions():
    with pytest.raises(PrologError):
        TaskRule("valid(X) :- .\n")
    with pytest.raises(UnsafeRuleError):
        TaskRule("valid(X) :- open(X, write, _).\n")
    with pytest.raises(NesyError, match="valid/1"):
        TaskRule("ok(1).\n")


def test_failure_in_a_later_task_while_workers_render_leaves_nothing(tmp_path, capsys):
    # task 0 renders in the pool while task 1 (drawn afterwards) cannot make a positive
    fine = """\
        - name: fine
          samples: 40
          train_split: 0.5
          val_split: 0.25
          positive_set: [{in: [{shape: circle, color: ~, size: ~}]}]
          negative_set: [{in: [{shape: square, color: ~, size: ~}]}]
        """
    impossible = BAD_CASES["label_impossible"][0].replace("name: x", "name: impossible")
    path = _write(tmp_path, textwrap.dedent(fine) + textwrap.dedent(impossible))
    out = tmp_path / "out"
    rc = cli_main(["kandy", "generate", str(path), "--out", str(out), "-q", "-j", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "task 1 'impossible'" in err and "produced no positive sample" in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


#: a task whose rule accepts nothing: it cannot produce a positive sample
_NO_POSITIVE = """\
    - name: {name}
      samples: {samples}
      train_split: 0.5
      val_split: 0.25
      patience: 30
      positive_rule: >-
        valid(C) :- fail.
      positive_set: [{{shape: triangle, color: ~, size: ~}}]
      negative_set: [{{shape: square, color: ~, size: ~}}]
    """


def test_the_first_failing_task_is_the_one_reported(tmp_path):
    """Jobs run longest first and finish in any order, but of two failing tasks the error is
    the first one's in task order, as with one process: task 1 (large, queued first) fails
    too, with another message."""
    small = _NO_POSITIVE.format(name="first", samples=12)
    large = """\
        - name: second
          samples: 2000
          train_split: 0.5
          val_split: 0.25
          patience: 30
          positive_rule: >-
            valid(C) :- true.
          positive_set: [{side_by_side: [{shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}]}]
          negative_set: [{side_by_side: [{shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}, {shape: ~, color: ~, size: ~}]}]
        """
    path = _write(tmp_path, textwrap.dedent(small) + textwrap.dedent(large))
    for workers in (1, 2):
        with pytest.raises(NesyError) as err:
            generate(path, tmp_path / "out", workers=workers)
        assert "task 0 'first'" in str(err.value) and "no positive sample" in str(err.value)
        assert not (tmp_path / "out").exists()


def test_output_folder_regenerates_itself(tmp_path):
    # two rule files with the same name in different folders, one of them used twice
    for sub, shape in (("a", "circle"), ("b", "square")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "rule.pl").write_text(
            f"valid(C) :- contains(C, C1), extract_shape(C1, {shape}).\n")
    task = """\
        - name: {name}
          samples: 12
          train_split: 0.5
          val_split: 0.25
          rule_file: {rule}
          positive_set: [{{in: [{{shape: {pos}, color: ~, size: ~}}]}}]
          negative_set: [{{in: [{{shape: triangle, color: ~, size: ~}}]}}]
        """
    text = "".join(textwrap.dedent(task).format(name=n, rule=r, pos=p) for n, r, p in
                   [("a", "a/rule.pl", "circle"), ("b", "'b/rule.pl'", "square"),
                    ("a2", "a/rule.pl", "circle")])
    path = _write(tmp_path, text)
    generate(path, tmp_path / "o1", seed=5, images=False)
    copy = (tmp_path / "o1" / "curriculum.yaml").read_text()
    assert 'rule_file: "rules/files/rule.pl"' in copy and 'rule_file: "rules/files/rule_1.pl"' in copy
    assert "extract_shape(C1, square)" in (tmp_path / "o1" / "rules/files/rule_1.pl").read_text()
    generate(tmp_path / "o1" / "curriculum.yaml", tmp_path / "o2", seed=5, images=False)
    for rel in ("train/annotations.csv", "test/annotations.csv", "curriculum.yaml",
                "rules/files/rule_1.pl"):
        assert (tmp_path / "o1" / rel).read_bytes() == (tmp_path / "o2" / rel).read_bytes()


def test_symbol_errors_surface_with_parallel_rendering(tmp_path):
    # with workers, symbols are drawn in the worker processes: their errors are the caller's,
    # as with one process, and no output folder is left behind
    path = _write(tmp_path, _NO_POSITIVE.format(name="impossible", samples=20))
    with pytest.raises(NesyError, match="produced no positive sample"):
        generate(path, tmp_path / "out", workers=2)
    assert not (tmp_path / "out").exists()


_words = st.text(alphabet=st.sampled_from(list("abcxyzäößçéñ") + ["\u0131", "\u00df", "\u03bb"]),
                 min_size=1, max_size=6)
_symbols = st.recursive(
    st.builds(lambda a, b, c: Shape(a, b, c), _words, _words, _words),
    lambda kids: st.builds(lambda op, cs: Composite(op, tuple(cs)),
                           st.sampled_from(COMPOSITIONS), st.lists(kids, max_size=4)),
    max_leaves=20)


@given(_symbols)
@settings(max_examples=300, deadline=None, derandomize=True)
def test_json_text_is_json_dumps_of_to_json(symbol):
    """The annotations' symbol column, built from cached pieces, is byte for byte the compact
    json.dumps of the symbol's dict (non-ASCII letters escaped the same way)."""
    from nesybench.kandy.symbols import json_text
    assert json_text(symbol) == json.dumps(symbol.to_json(), separators=(",", ":"))


_domain_symbols = st.recursive(
    st.builds(Shape, st.sampled_from(["triangle", "square", "circle"]),
              st.sampled_from(["red", "green", "blue", "cyan", "magenta", "yellow"]),
              st.sampled_from(["small", "large"])),
    lambda kids: st.builds(lambda op, cs: Composite(op, tuple(cs)),
                           st.sampled_from(COMPOSITIONS), st.lists(kids, max_size=4)),
    max_leaves=12)
_RULES = sorted(Path(__file__).resolve().parents[1].glob("kb/kandy/rules/*/t*.pl"))


@given(st.sampled_from(_RULES), st.lists(_domain_symbols, min_size=1, max_size=12))
@settings(max_examples=60, deadline=None, derandomize=True)
def test_symbols_checked_as_data_get_the_verdicts_of_their_text(rule_file, symbols):
    """Generation sends the symbols to Prolog as data (nothing parsed); every shipped rule
    gives them the verdicts it gives their natural-encoding text read by SWI-Prolog."""
    rule = TaskRule(rule_file.read_text(), source=str(rule_file))
    try:
        assert rule.check_symbols(symbols) == rule.check([s.to_prolog() for s in symbols])
    finally:
        rule.close()


@pytest.mark.parametrize("curriculum", ["easy", "hard"])
def test_curriculum_samples_checked_as_data_get_the_verdicts_of_their_text(curriculum):
    """The same on what generation checks: candidates drawn from every shipped task's
    positive and negative sets (so that each rule says yes as well as no), with its rule."""
    import numpy as np
    from nesybench.kandy.expand import sample_symbol
    from nesybench.kandy.language import load_curriculum
    cur = load_curriculum(Path(__file__).resolve().parents[1] / f"curricula/kandy/{curriculum}.yaml")
    rng = np.random.Generator(np.random.PCG64(3))
    for task in cur.tasks:
        symbols = [sample_symbol((task.negative_set, task.positive_set)[k % 2], rng, cur.domain)
                   for k in range(40)]
        rule = TaskRule(task.rule_text, task=task.label)
        try:
            by_text = rule.check([s.to_prolog() for s in symbols])
            assert rule.check_symbols(symbols) == by_text, task.label
            assert any(by_text) and not all(by_text), task.label
        finally:
            rule.close()


def test_a_rule_error_on_data_names_the_sample_as_its_text():
    rule = TaskRule("valid(X) :- X = side_by_side(_), atom_length(X, _).\n")
    sample = Composite("side_by_side", (Shape("circle", "red", "small"),
                                        Composite("stack", (Shape("square", "blue", "large"),))))
    try:
        with pytest.raises(NesyError) as by_data:
            rule.check_symbols([Shape("circle", "red", "small"), sample])
        with pytest.raises(NesyError) as by_text:
            rule.check(["circle_red_small", sample.to_prolog()])
        assert str(by_data.value) == str(by_text.value)
        assert sample.to_prolog() in str(by_data.value)
    finally:
        rule.close()
