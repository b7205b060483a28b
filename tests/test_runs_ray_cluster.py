"""A sweep against an explicit Ray cluster address: a head started with `ray start --head`
(token authentication on, as recent Ray starts it when a token exists) on a free loopback
port, and `runs start -e ray --address 127.0.0.1:PORT` with RAY_AUTH_MODE unset, which must
send the token as Ray does for `--address auto`."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

SPEC = """\
study: tiny
function: demo.toy
params: {steps: 2}
axes: {x: [0.0, 1.0], label: [a]}
seed: 3
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def ray_head(tmp_path):
    """A Ray head with token authentication on a free loopback port, in a process group of
    its own (`--block`), stopped by signalling that group: never `ray stop`, which would
    stop every Ray instance of the user."""
    pytest.importorskip("ray")
    ray_cli = shutil.which("ray", path=str(Path(PY).parent)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("the `ray` command is not installed beside this Python")
    token = tmp_path / "auth_token"
    token.write_text(uuid.uuid4().hex)
    port = _free_port()
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    env.pop("RAY_AUTH_TOKEN", None)
    env.pop("RAY_ADDRESS", None)
    log = (tmp_path / "head.log").open("w")
    ray_tmp = tempfile.mkdtemp(prefix="nbray-")   # Ray's socket paths must stay < 108 bytes
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--port", str(port),
         "--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--include-dashboard=false",
         "--disable-usage-stats", "--temp-dir", ray_tmp],
        env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 45
        while not _listening(port):
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.skip("Ray cannot start a head here: "
                            + (tmp_path / "head.log").read_text()[-300:].replace("\n", " "))
            time.sleep(0.5)
        time.sleep(2)             # the GCS listens before the raylet has registered
        yield port, token
    finally:
        if head.poll() is None:
            os.killpg(head.pid, signal.SIGTERM)
            try:
                head.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(head.pid, signal.SIGKILL)
                head.wait()
        log.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timing
def test_a_study_runs_against_an_explicit_address_with_token_auth(ray_head, tmp_path):
    port, token = ray_head
    (tmp_path / "spec.yaml").write_text(SPEC)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), RAY_AUTH_TOKEN_PATH=str(token))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ADDRESS"):
        env.pop(name, None)
    res = subprocess.run([PY, "-m", "nesybench", "runs", "start", str(tmp_path / "spec.yaml"),
                          "--out", str(tmp_path / "study"), "-e", "ray",
                          "--address", f"127.0.0.1:{port}", "-q"],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    table = subprocess.run([PY, "-m", "nesybench", "runs", "status", str(tmp_path / "study")],
                           capture_output=True, text=True, env=env, timeout=60, check=False)
    assert table.returncode == 0, table.stderr
    assert "2 done" in table.stdout or "done 2" in table.stdout, table.stdout


@pytest.mark.timing
def test_a_refused_connection_says_what_to_set(monkeypatch):
    """With RAY_AUTH_MODE unset and no token at hand, a failed connection to an explicit
    address names the variables to set, on one line."""
    pytest.importorskip("ray")
    from nesybench import parallel
    from nesybench.errors import NesyError

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", "/nonexistent/auth_token")
    assert not parallel._ray_token_available()
    parallel._token_auth_for("127.0.0.1:1")
    assert "RAY_AUTH_MODE" not in os.environ
    monkeypatch.setenv("RAY_AUTH_TOKEN", "abc")
    parallel._token_auth_for("127.0.0.1:1")
    assert os.environ["RAY_AUTH_MODE"] == "token"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")          # an explicit choice stands
    parallel._token_auth_for("127.0.0.1:1")
    assert os.environ["RAY_AUTH_MODE"] == "disabled"
    with pytest.raises(NesyError) as err:
        monkeypatch.setattr(parallel, "_check_reachable", lambda *a, **k: None)
        import ray
        monkeypatch.setattr(ray, "init", lambda **kw: (_ for _ in ()).throw(
            ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:1")))
        parallel.ray_init("127.0.0.1:1")
    msg = str(err.value)
    assert "\n" not in msg and "RAY_AUTH_MODE=token" in msg and "RAY_AUTH_TOKEN" in msg
