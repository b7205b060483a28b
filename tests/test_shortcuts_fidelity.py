"""The MNAdd-EvenOdd 49, OOD and single-label warnings of `rs generate`."""
import json

import pytest
from click.testing import CliRunner

from nesybench.errors import NesyError
from nesybench.shortcuts.cli import group
from nesybench.shortcuts.count import count_rs
from nesybench.shortcuts.generate import generate
from nesybench.shortcuts.task import load_task

EVENODD = ["0,6", "2,8", "4,6", "4,8", "1,5", "3,7", "1,9", "3,9"]


@pytest.mark.parametrize("hi,per_value", [(9, 36), (10, 49), (11, 49), (12, 49)])
def test_evenodd_49_holds_from_codomain_0_to_10(hi, per_value):
    """With digits mapped into 0..hi the seen digits have 6 x 6 optimal maps for hi = 9 and
    7 x 7 = 49 from hi = 10 on; every unseen value (10, 11, 12) is free (factor hi + 1)."""
    t = load_task({"name": f"evenodd{hi}", "knowledge": "kb/shortcuts/addition.lp",
                   "concepts": [{"name": "d", "count": 2, "domain": {"range": [0, hi]},
                                 "map": "digit"}], "support": EVENODD})
    n = count_rs(t).count
    assert n == per_value * (hi + 1) ** (hi - 9)
    assert n == count_rs(t, engine="asp").count


def _tiny(tmp_path, support, name="t"):
    p = tmp_path / f"{name}.yaml"
    p.write_text(f"name: {name}\nconcepts:\n  - {{name: b, count: 2, domain: [0, 1]}}\n"
                 f"knowledge: kb/shortcuts/xor.lp\nmaps: separate\nsupport: {support}\n")
    return p


def test_ood_samples_without_ood_worlds(tmp_path):
    p = _tiny(tmp_path, "all")
    res = CliRunner().invoke(group, ["generate", str(p), "--out", str(tmp_path / "o1"),
                                     "--samples", "ood=10", "--samples", "train=4",
                                     "--samples", "val=2", "--samples", "test=2"])
    assert res.exit_code == 2 and "no OOD worlds" in res.output
    # the task's own (default) ood size: written as a warning, in the manifest too
    r = generate(load_task(p), tmp_path / "o2", samples={"train": 4, "val": 2, "test": 2})
    assert r.counts["ood"] == 0 and any("no OOD worlds" in w for w in r.warnings)
    man = json.loads((tmp_path / "o2" / "manifest.json").read_text())
    assert man["warnings"] == r.warnings
    with pytest.raises(NesyError, match="no OOD worlds"):
        generate(load_task(p), tmp_path / "o3", samples={"ood": 3})


def test_single_label_support_warns(tmp_path):
    p = _tiny(tmp_path, '["0,0", "1,1"]', "same")
    res = CliRunner().invoke(group, ["generate", str(p), "--out", str(tmp_path / "o"),
                                     "--samples", "train=4", "--samples", "val=2",
                                     "--samples", "test=2", "--samples", "ood=2"])
    assert res.exit_code == 0, res.output
    assert "warning: every support world has the same label" in res.output
    two = generate(load_task(_tiny(tmp_path, '["0,0", "0,1"]', "two")), tmp_path / "o2",
                   samples={"train": 4, "val": 2, "test": 2, "ood": 2})
    assert two.warnings == []
