"""`kandy train` refuses an option that no run of the sweep would use (exit 2, one line),
instead of accepting it and ignoring it."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nesybench.cli import main as cli_main
from nesybench.kandy.generate import generate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kandy-opts") / "tiny"
    generate(ROOT / "curricula/kandy/easy.yaml", out, tasks=[0], samples=12,
             render={"canvas": [16, 16]})
    return out


@pytest.mark.parametrize("extra, msg", [
    (["--model", "mlp", "--weights", "W.pt"], "--weights is for"),
    (["--model", "mlp,cnn", "--weights", "W.pt"], "--weights is for"),
    (["--model", "mlp", "--setting", "joint", "--buffer", "50"], "--buffer applies"),
    (["--model", "mlp", "--setting", "independent", "--replay-weight", "2"],
     "--replay-weight applies"),
    (["--model", "mlp", "--setting", "task-incremental", "--strategy", "ewc",
      "--replay-weight", "2"], "--replay-weight applies"),
    (["--model", "mlp", "--setting", "task-incremental", "--shuffle"], "--shuffle applies"),
    (["--model", "mlp", "--setting", "continual-online", "--epochs", "5"], "single pass"),
])
def test_ignored_option_is_refused(tiny, tmp_path, capsys, extra, msg):
    (tmp_path / "W.pt").write_bytes(b"")
    rc = cli_main(["kandy", "train", str(tiny), "--seeds", "1", "--size", "16", "-q",
                   "--workers", "0", "--out", str(tmp_path / "s")]
                  + [str(tmp_path / "W.pt") if a == "W.pt" else a for a in extra])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


def test_options_that_some_run_uses_are_accepted(tiny, tmp_path, capsys):
    """--buffer and --shuffle in a sweep with a continual-online setting, --epochs 1."""
    rc = cli_main(["kandy", "train", str(tiny), "--seeds", "1", "--size", "16", "-q",
                   "--workers", "0", "--model", "mlp", "--setting", "joint,continual-online",
                   "--buffer", "4", "--shuffle", "--epochs", "1", "--batch", "4",
                   "--out", str(tmp_path / "s")])
    assert rc == 0, capsys.readouterr().err
