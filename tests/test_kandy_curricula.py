"""The shipped KANDY curricula (curricula/kandy/*.yaml) generate what they promise.

* easy.yaml / hard.yaml (small variants, 100 samples per task, no images): every task yields
  both labels in every split, and every emitted sample, re-checked against its task's
  ground-truth rule in one Prolog batch per task, satisfies the rule exactly when labelled
  positive;
* the large / sparse / decay variants parse, carry the paper's samples, splits, γ and β, keep
  the task definitions of their base file, and are up to date with make_variants.py.
"""
from __future__ import annotations

import importlib.util
from collections import defaultdict
from pathlib import Path

import pytest

from nesybench.kandy.generate import generate, read_annotations
from nesybench.kandy.language import load_curriculum
from nesybench.kandy.rules import TaskRule
from nesybench.kandy.sampler import SPLITS

ROOT = Path(__file__).resolve().parents[1]
CURRICULA = ROOT / "curricula" / "kandy"

#: base file -> (number of tasks, rule folder, (train_split, val_split))
BASES = {
    "easy": (20, "easy", (0.5, 0.25)),
    "hard": (18, "hard", (0.8, 0.1)),
}
#: variant -> (samples, gamma, beta), paper §3.2
VARIANTS = {
    "large": (1000, 1.0, 1.0),
    "sparse": (1000, 0.5, 0.5),
    "decay": (1000, 0.8, 0.2),
}


def _make_variants():
    spec = importlib.util.spec_from_file_location("kandy_make_variants",
                                                  CURRICULA / "make_variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=sorted(BASES))
def generated(request, tmp_path_factory):
    base = request.param
    path = CURRICULA / f"{base}.yaml"
    out = tmp_path_factory.mktemp(f"kandy_{base}") / "data"
    result = generate(path, out, images=False)
    rows = {split: read_annotations(out, split) for split in SPLITS}
    return base, load_curriculum(path), result, rows


def test_small_variant_shape(generated):
    base, cur, result, _rows = generated
    n_tasks, folder, (train, val) = BASES[base]
    assert len(cur.tasks) == n_tasks
    for i, task in enumerate(cur.tasks):
        assert (task.samples, task.train_split, task.val_split) == (100, train, val)
        assert (task.gamma, task.beta) == (1.0, 1.0)
        assert task.description, f"task {i} has no description"
        assert Path(task.rule_source) == (ROOT / "kb" / "kandy" / "rules" / folder
                                          / f"t{i:02d}.pl").resolve()
    assert [t["name"] for t in result.tasks] == [t.name for t in cur.tasks]
    for entry in result.tasks:
        assert entry["stats"]["unique_symbols"] == 100, entry["name"]
        assert not entry["stats"]["with_replacement"], entry["name"]


def test_both_labels_in_every_split(generated):
    _base, cur, _result, rows = generated
    for split in SPLITS:
        labels = defaultdict(set)
        for r in rows[split]:
            labels[r["task_id"]].add(r["label"])
        for task in cur.tasks:
            assert labels[task.index] == {0, 1}, f"{split}: task {task.label} has {labels[task.index]}"


def test_every_sample_agrees_with_its_rule(generated):
    _base, cur, _result, rows = generated
    by_task = defaultdict(list)
    for split in SPLITS:
        for r in rows[split]:
            by_task[r["task_id"]].append((r["prolog"], r["label"]))
    for task in cur.tasks:
        samples = by_task[task.index]
        assert len(samples) == task.samples
        rule = TaskRule(task.rule_text, source=task.rule_source, task=task.label,
                        field="rule_file")
        try:
            verdicts = rule.check([text for text, _ in samples])
        finally:
            rule.close()
        wrong = [(text, label) for (text, label), ok in zip(samples, verdicts)
                 if ok != bool(label)]
        assert not wrong, f"task {task.label}: {len(wrong)} mislabelled, e.g. {wrong[:3]}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("base", sorted(BASES))
def test_variant_values_and_same_tasks(base, variant):
    samples, gamma, beta = VARIANTS[variant]
    _n, _folder, (train, val) = BASES[base]
    small = load_curriculum(CURRICULA / f"{base}.yaml")
    cur = load_curriculum(CURRICULA / f"{base}_{variant}.yaml")
    assert len(cur.tasks) == len(small.tasks)
    for task, ref in zip(cur.tasks, small.tasks):
        assert (task.samples, task.train_split, task.val_split) == (samples, train, val)
        assert (task.gamma, task.beta) == (gamma, beta)
        if base == "hard":
            assert task.split_sizes() == (800, 100, 100)
        else:
            assert task.split_sizes() == (500, 250, 250)
        # same task definitions (node equality ignores paths and lines) and rules
        assert (task.name, task.description) == (ref.name, ref.description)
        assert task.positive_set == ref.positive_set
        assert task.negative_set == ref.negative_set
        assert task.rule_text == ref.rule_text


def test_variants_are_up_to_date():
    module = _make_variants()
    files = module.variant_files()
    assert len(files) == len(BASES) * len(VARIANTS)
    for path, text in files.items():
        assert path.is_file(), f"{path.name} missing: run curricula/kandy/make_variants.py"
        assert path.read_text(encoding="utf-8") == text, \
            f"{path.name} is stale: run curricula/kandy/make_variants.py"


def test_make_variants_rewrites_only_the_defaults():
    module = _make_variants()
    text = (CURRICULA / "easy.yaml").read_text(encoding="utf-8")
    out = module.render_variant(text, "easy", "decay")
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines()[1:]) if a != b]
    assert sorted(b.strip() for _a, b in changed) == ["beta: 0.2", "gamma: 0.8",
                                                      "samples: 1000"]
    with pytest.raises(ValueError):
        module.render_variant("tasks: []\n", "easy", "large")


#: tasks of the large variants that cannot reach 1000 unique symbols (documented in easy.yaml)
WITH_REPLACEMENT = {"easy": set(range(9)), "hard": set()}


@pytest.mark.parametrize("base", sorted(BASES))
def test_large_variant_unique_symbols(base, tmp_path):
    result = generate(CURRICULA / f"{base}_large.yaml", tmp_path / "data", images=False)
    for entry in result.tasks:
        stats = entry["stats"]
        expected = entry["id"] in WITH_REPLACEMENT[base]
        assert stats["with_replacement"] == expected, entry["name"]
        assert (stats["unique_symbols"] < 1000) == expected, entry["name"]
        assert stats["positives"] > 0 and stats["negatives"] > 0
        assert sum(stats["split_sizes"].values()) == 1000
