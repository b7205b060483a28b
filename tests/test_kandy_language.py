"""KANDY task language: every operator's semantics, attribute syntax, YAML features."""
import textwrap
from collections import Counter

import numpy as np
import pytest

from nesybench.errors import NesyError
from nesybench.kandy.expand import sample_symbol
from nesybench.kandy.language import RANDOM_COMPOSITIONS, load_curriculum
from nesybench.kandy.symbols import COMPOSITIONS, Composite, Shape

TR, SQ, CI = "triangle_red_small", "square_green_large", "circle_blue_small"
ATOMS = {TR: "{shape: triangle, color: red, size: small}",
         SQ: "{shape: square, color: green, size: large}",
         CI: "{shape: circle, color: blue, size: small}"}


def _curriculum(tmp_path, positive: str, negative: str | None = None, extra: str = ""):
    negative = negative or "- in: [{shape: ~, color: ~, size: ~}]"
    text = textwrap.dedent("""\
        - name: t
          samples: 10
          train_split: 0.5
          val_split: 0.25
        {extra}  positive_set:
        {pos}
          negative_set:
        {neg}
        """).format(extra=extra, pos=textwrap.indent(positive, "  "),
                    neg=textwrap.indent(negative, "  "))
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_curriculum(path)


def _draw(cur, n=1, seed=0):
    rng = np.random.Generator(np.random.PCG64(seed))
    task = cur.tasks[0]
    return [sample_symbol(task.positive_set, rng, cur.domain) for _ in range(n)]


def _children(sym):
    return [c.to_prolog() for c in sym.children]


def _op(tmp_path, op_yaml: str, seed=0):
    cur = _curriculum(tmp_path, f"- side_by_side:\n  - {op_yaml}")
    return _children(_draw(cur, seed=seed)[0])


def _lst(*names):
    return "[" + ", ".join(ATOMS[n] for n in names) + "]"


# ----------------------------------------------------------------- deterministic operators
def test_first_last(tmp_path):
    assert _op(tmp_path, f"first: {{n: 2, list: {_lst(TR, SQ, CI)}}}") == [TR, SQ]
    assert _op(tmp_path, f"last: {{n: 2, list: {_lst(TR, SQ, CI)}}}") == [SQ, CI]


def test_shift_rotates_right_as_documented(tmp_path):
    # The reference documents shift(2, [a,b,c,d,e]) -> [d,e,a,b,c] but rotates left; we rotate right.
    out = _op(tmp_path, f"shift: {{n: 1, list: {_lst(TR, SQ, CI)}}}")
    assert out == [CI, TR, SQ]
    assert _op(tmp_path, f"shift: {{n: -1, list: {_lst(TR, SQ, CI)}}}") == [SQ, CI, TR]
    assert _op(tmp_path, f"shift_before: {{n: 4, list: {_lst(TR, SQ, CI)}}}") == [CI, TR, SQ]


def test_repeat_mirror_palindrome(tmp_path):
    assert _op(tmp_path, f"repeat: {{n: 2, list: {_lst(TR, SQ)}}}") == [TR, SQ, TR, SQ]
    assert _op(tmp_path, f"mirror: {_lst(TR, SQ, CI)}") == [TR, SQ, CI, CI, SQ, TR]
    assert _op(tmp_path, f"palindrome: {_lst(TR, SQ, CI)}") == [TR, SQ, CI, SQ, TR]
    assert _op(tmp_path, f"palindrome_before: {_lst(TR, SQ)}") == [TR, SQ, TR]


def test_sort_by_keys(tmp_path):
    # shape order: circle (0 sides) < triangle (3) < square (4)
    assert _op(tmp_path, f"sort: {{order: asc, keys: [shape], list: {_lst(SQ, TR, CI)}}}") \
        == [CI, TR, SQ]
    assert _op(tmp_path, f"sort: {{order: desc, keys: [shape], list: {_lst(SQ, TR, CI)}}}") \
        == [SQ, TR, CI]
    # colour order is the domain's: red, green, blue, ...
    assert _op(tmp_path, f"sort: {{order: asc, keys: [color], list: {_lst(CI, SQ, TR)}}}") \
        == [TR, SQ, CI]
    # size then shape
    assert _op(tmp_path, f"sort: {{order: asc, keys: [size, shape], list: {_lst(SQ, TR, CI)}}}") \
        == [CI, TR, SQ]


def test_sort_compositions_only_by_n(tmp_path):
    out = _op(tmp_path, "sort: {order: desc, keys: [n], list: [" + ATOMS[TR] +
              ", {stack: " + _lst(SQ, CI) + "}]}")
    assert out == [f"stack([{SQ}, {CI}])", TR]
    with pytest.raises(NesyError, match="only be sorted by the key n"):
        _op(tmp_path, "sort: {order: asc, keys: [shape], list: [" + ATOMS[TR] +
            ", {stack: " + _lst(SQ) + "}]}")


def test_argsort(tmp_path):
    assert _op(tmp_path, f"argsort: {{idx: [2, 0, 1], list: {_lst(TR, SQ, CI)}}}") == [CI, TR, SQ]
    with pytest.raises(NesyError, match="not a permutation"):
        _op(tmp_path, f"argsort: {{idx: [0, 0, 1], list: {_lst(TR, SQ, CI)}}}")


# ----------------------------------------------------------------- random operators
def test_sample_pick_permute_random_shift(tmp_path):
    items = [TR, SQ, CI]
    picks, perms, shifts, samples = set(), set(), set(), set()
    for seed in range(40):
        s = _op(tmp_path, f"sample: {{n: 4, list: {_lst(TR, SQ, CI)}}}", seed)
        assert len(s) == 4 and set(s) <= set(items)
        samples.add(tuple(s))
        p = _op(tmp_path, f"pick: {{n: 2, list: {_lst(TR, SQ, CI)}}}", seed)
        assert len(p) == 2 and len(set(p)) == 2 and set(p) <= set(items)
        picks.add(tuple(p))
        q = _op(tmp_path, f"permute: {_lst(TR, SQ, CI)}", seed)
        assert sorted(q) == sorted(items)
        perms.add(tuple(q))
        r = _op(tmp_path, f"random_shift: {_lst(TR, SQ, CI)}", seed)
        assert tuple(r) in {(TR, SQ, CI), (CI, TR, SQ), (SQ, CI, TR)}
        shifts.add(tuple(r))
    assert len(picks) == 6 and len(perms) == 6 and len(shifts) == 3
    assert any(len(set(s)) < 4 for s in samples)   # with replacement: repeats happen


def test_pick_more_than_available_is_an_error(tmp_path):
    with pytest.raises(NesyError, match="pick n=4"):
        _op(tmp_path, f"pick: {{n: 4, list: {_lst(TR, SQ, CI)}}}")


def test_random_repeat_range(tmp_path):
    lengths = Counter(len(_op(tmp_path, f"random_repeat: {{min: 1, max: 3, list: {_lst(TR, SQ)}}}",
                              seed)) for seed in range(60))
    assert set(lengths) == {2, 4, 6}


def test_before_vs_after_grounding(tmp_path):
    any_obj = "{shape: ~, color: ~, size: ~}"
    # after grounding: three identical copies
    for seed in range(10):
        out = _op(tmp_path, f"repeat: {{n: 3, list: [{any_obj}]}}", seed)
        assert len(set(out)) == 1 and len(out) == 3
    # before grounding: three independent groundings
    assert any(len(set(_op(tmp_path, f"repeat_before: {{n: 3, list: [{any_obj}]}}", seed))) > 1
               for seed in range(10))


# ----------------------------------------------------------------- memory and set operators
def test_store_recall_after_grounding_gives_identical_objects(tmp_path):
    cur = _curriculum(tmp_path, """\
- side_by_side:
  - store: {alias: a, list: [{shape: ~, color: ~, size: ~}]}
  - recall: {alias: a}
  - recall: {alias: a}""")
    for sym in _draw(cur, n=10):
        assert len(set(_children(sym))) == 1 and len(sym.children) == 3


def test_store_before_recall_regrounds_the_template(tmp_path):
    cur = _curriculum(tmp_path, """\
- side_by_side:
  - store_before:
      alias: c
      list:
      - pick_before: {n: 1, list: [{shape: ~, color: red, size: ~}, {shape: ~, color: blue, size: ~}]}
  - recall: {alias: c}
  - recall: {alias: c}""")
    differ = False
    for sym in _draw(cur, n=30):
        colours = {c.color for c in sym.children}
        assert len(colours) == 1                      # same template: same colour
        differ |= len(set(_children(sym))) > 1        # ... grounded afresh
    assert differ


def test_aliases_do_not_leak_between_samples(tmp_path):
    cur = _curriculum(tmp_path, """\
- side_by_side:
  - recall: {alias: a}""")
    with pytest.raises(NesyError, match="recall of alias 'a'"):
        _draw(cur)


def test_set_operators(tmp_path):
    inter = "intersection: [{shape: triangle, color: ~, size: ~}, {shape: ~, color: red, size: ~}, " \
            "{shape: ~, color: ~, size: large}]"
    assert _op(tmp_path, inter) == ["triangle_red_large"]
    union = "union: [{shape: triangle, color: red, size: small}, {shape: square, color: red, size: small}]"
    assert {_op(tmp_path, union, s)[0] for s in range(30)} == {TR, "square_red_small"}
    diff = "difference: [{shape: ~, color: red, size: small}, {shape: triangle|square, color: ~, size: ~}]"
    assert {_op(tmp_path, diff, s)[0] for s in range(10)} == {"circle_red_small"}
    sym = "symmetric_difference: [{shape: triangle|square, color: red, size: small}, " \
          "{shape: square|circle, color: ~, size: ~}]"
    assert {_op(tmp_path, sym, s)[0] for s in range(30)} == {TR, "circle_red_small"}


def test_set_operator_with_recall_of_store_before(tmp_path):
    cur = _curriculum(tmp_path, """\
- side_by_side:
  - store_before: {alias: t, list: [{shape: triangle, color: green|blue, size: small}]}
  - difference:
    - {shape: ~, color: ~, size: ~}
    - recall: {alias: t}""")
    for sym in _draw(cur, n=10):
        assert sym.children[1].shape in ("square", "circle")
        assert sym.children[1].color not in ("green", "blue")
        assert sym.children[1].size == "large"


def test_empty_set_result_is_an_error_naming_the_field(tmp_path):
    with pytest.raises(NesyError) as info:
        _curriculum(tmp_path, "- in:\n  - intersection: [{shape: triangle, color: ~, size: ~}, "
                              "{shape: square, color: ~, size: ~}]")
    assert "empty set of shape" in str(info.value)
    assert info.value.field == "positive_set[0].in[0].intersection" and info.value.line == 7
    assert info.value.file.endswith("c.yaml") and info.value.task == "0 't'"


# ----------------------------------------------------------------- compositions, attributes
@pytest.mark.parametrize("op", COMPOSITIONS)
def test_every_compositional_operator(tmp_path, op):
    cur = _curriculum(tmp_path, f"- {op}: {_lst(TR, SQ)}")
    sym = _draw(cur)[0]
    assert isinstance(sym, Composite) and sym.op == op and _children(sym) == [TR, SQ]


@pytest.mark.parametrize("op", sorted(RANDOM_COMPOSITIONS))
def test_random_compositional_choices(tmp_path, op):
    cur = _curriculum(tmp_path, f"- {op}: {_lst(TR)}")
    seen = {s.op for s in _draw(cur, n=200)}
    assert seen == set(RANDOM_COMPOSITIONS[op])


def test_attribute_syntax(tmp_path):
    cur = _curriculum(tmp_path, "- in: [{shape: not_triangle, color: red|blue, size: ~}]")
    shapes = _draw(cur, n=200)
    leaves = [s.children[0] for s in shapes]
    assert {x.shape for x in leaves} == {"square", "circle"}
    assert {x.color for x in leaves} == {"red", "blue"}
    assert {x.size for x in leaves} == {"small", "large"}


def test_yaml_anchors_aliases_and_merges(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent("""\
        - &base
          name: first
          samples: 10
          train_split: 0.5
          val_split: 0.25
          positive_set:
          - in: [&red_tri {shape: triangle, color: red, size: small}]
          negative_set:
          - in: [{shape: square, color: ~, size: ~}]
        - <<: *base
          name: second
          positive_set:
          - stack: [*red_tri, *red_tri]
        """))
    cur = load_curriculum(path)
    assert [t.name for t in cur.tasks] == ["first", "second"]
    assert cur.tasks[1].samples == 10
    assert _draw(type(cur)(tasks=[cur.tasks[1]], domain=cur.domain, source=""))[0].to_prolog() \
        == f"stack([{TR}, {TR}])"


def test_reference_format_with_positive_rule(tmp_path, root):
    cur = load_curriculum(root / "tests" / "data" / "reference_style.yaml")
    assert len(cur.tasks) == 2 and cur.tasks[0].rule_text.startswith("valid(C)")
    assert cur.tasks[0].rule_line == 10      # the rule text starts on line 11 of the file


_RULE_TASK = "  rule_file: {rule}\n"


def _rule_curriculum(tmp_path, rule: str):
    return _curriculum(tmp_path, "- in: [{shape: ~, color: ~, size: ~}]",
                       extra=_RULE_TASK.format(rule=rule))


def test_rule_file_beside_the_curriculum_or_a_shipped_name(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "r.pl").write_text("valid(_).\n")
    task = _rule_curriculum(tmp_path, "rules/r.pl").tasks[0]
    assert task.rule_text == "valid(_).\n" and task.rule_source == str(tmp_path / "rules/r.pl")
    task = _rule_curriculum(tmp_path, "kb/kandy/rules/easy/t00.pl").tasks[0]
    assert "valid(" in task.rule_text and task.rule_source.endswith("kb/kandy/rules/easy/t00.pl")


@pytest.mark.parametrize("rule, says", [
    ("../outside.pl", "outside the curriculum's folder"),
    ("../../kb/kandy/rules/easy/t00.pl", "(write kb/kandy/rules/easy/t00.pl)"),
    ("/etc/passwd", "outside the curriculum's folder"),
    ("Makefile", "rule file not found: Makefile"),
    ("kb/kandy/bk.pl", "rule file not found"),
    ("link.pl", "resolves outside"),
    ("big.pl", "over the limit"),
])
def test_rule_file_outside_the_folder_is_one_error(tmp_path, rule, says, monkeypatch):
    import nesybench.kandy.language as language
    (tmp_path / "outside.pl").write_text("valid(_).\n")
    sub = tmp_path / "c"
    sub.mkdir()
    (sub / "link.pl").symlink_to(tmp_path / "outside.pl")
    (sub / "big.pl").write_text("valid(_).\n" * 200)
    monkeypatch.setattr(language, "MAX_RULE_BYTES", 1000)
    with pytest.raises(NesyError) as exc:
        _rule_curriculum(sub, rule)
    msg = str(exc.value)
    assert says in msg and "\n" not in msg and exc.value.field == "rule_file", msg


def test_shipped_curricula_name_their_rules():
    from nesybench.paths import data_root
    for path in sorted((data_root() / "curricula" / "kandy").glob("*.yaml")):
        text = path.read_text()
        assert "../" not in text, path.name
        if "rule_file" in text:
            cur = load_curriculum(path)
            assert all(t.rule_text for t in cur.tasks), path.name
