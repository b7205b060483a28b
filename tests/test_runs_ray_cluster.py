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


def _node_alive(port: int, env: dict) -> bool:
    """Whether the cluster at the port reports an alive node (nesybench's own probe)."""
    from nesybench.parallel import _RAY_PROBE

    try:
        res = subprocess.run([PY, "-c", _RAY_PROBE, f"127.0.0.1:{port}"], capture_output=True,
                             text=True, env=env, timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return False
    lines = res.stdout.strip().splitlines()
    return bool(lines) and '"alive": {}' not in lines[-1] and '"alive"' in lines[-1]


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory):
    """A Ray head with token authentication on a free loopback port, in a process group of
    its own (`--block`), stopped by signalling that group: never `ray stop`, which would
    stop every Ray instance of the user. One head for the tests of this file."""
    pytest.importorskip("ray")
    tmp_path = tmp_path_factory.mktemp("ray_head")
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
        # The GCS listens before the raylet has registered: wait until the head's node is
        # alive, as nesybench's own probe sees it, so that a loaded machine is no failure.
        while not _node_alive(port, env):
            if head.poll() is not None or time.monotonic() > deadline + 60:
                pytest.skip("the Ray head registered no node in time: "
                            + (tmp_path / "head.log").read_text()[-300:].replace("\n", " "))
            time.sleep(0.5)
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
        monkeypatch.setattr(parallel, "_probe_ray", lambda *a, **k: None)
        import ray
        monkeypatch.setattr(ray, "init", lambda **kw: (_ for _ in ()).throw(
            ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:1")))
        parallel.ray_init("127.0.0.1:1")
    msg = str(err.value)
    assert "\n" not in msg and "RAY_AUTH_MODE=token" in msg and "RAY_AUTH_TOKEN" in msg


class _Listener:
    """A loopback port that accepts TCP and is not Ray: silent, or an HTTP redirect."""

    def __init__(self, mode: str):
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.mode, self.conns = mode, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.mode == "redirect":
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 301 Moved Permanently\r\nLocation: "
                                 b"http://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


def _start(tmp_path, address, env, name):
    """`runs start -e ray --address ADDRESS -q`, killed after 10 s: (status, stderr)."""
    res = subprocess.run([PY, "-m", "nesybench", "runs", "start", str(tmp_path / "spec.yaml"),
                          "--out", str(tmp_path / name), "-e", "ray", "--address", address,
                          "-q"], capture_output=True, text=True, env=env, timeout=10,
                         check=False)
    return res.returncode, res.stdout, res.stderr


@pytest.mark.slow
@pytest.mark.timing
def test_a_refused_token_or_a_foreign_address_is_one_line_within_10_s(ray_head, tmp_path):
    """A wrong token, no token, and addresses that accept TCP but are not a Ray cluster (a
    silent service, an HTTP redirect) each end the command within 10 s with one line on
    stderr that names the cause; none of Ray's own lines get through -q."""
    port, token = ray_head
    (tmp_path / "spec.yaml").write_text(SPEC)
    base = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ADDRESS"):
        base.pop(name, None)
    head = f"127.0.0.1:{port}"
    wrong = dict(base, RAY_AUTH_TOKEN=uuid.uuid4().hex)
    stale = tmp_path / "stale_token"
    stale.write_text(uuid.uuid4().hex)
    cases = [(head, wrong, "refused the token in RAY_AUTH_TOKEN"),
             (head, dict(base, RAY_AUTH_TOKEN_PATH=str(stale)), f"refused the token in {stale}"),
             (head, dict(base, RAY_AUTH_TOKEN_PATH=str(tmp_path / "none")),
              "uses token authentication and no token was sent")]
    listeners = [_Listener("silent"), _Listener("redirect")]
    try:
        cases += [(f"127.0.0.1:{li.port}", dict(base, RAY_AUTH_TOKEN_PATH=str(token)),
                   "accepts connections but does not answer as a Ray cluster")
                  for li in listeners]
        for i, (address, env, cause) in enumerate(cases):
            status, out, err = _start(tmp_path, address, env, f"study{i}")
            assert status == 2 and out == "", (address, err)
            assert err.count("\n") == 1 and err.startswith("nesybench: error: "), err
            assert cause in err and address in err, err
    finally:
        for li in listeners:
            li.close()
    # the right token still connects, and each cell's host names its Ray node
    status, _, err = _start(tmp_path, head, dict(base, RAY_AUTH_TOKEN_PATH=str(token)), "ok")
    assert status == 0, err
    import sqlite3

    with sqlite3.connect(tmp_path / "ok" / "results.sqlite") as db:
        hosts = [h for (h,) in db.execute("SELECT host FROM cells")]
    assert len(hosts) == 2 and all("(ray node " in h for h in hosts), hosts


@pytest.mark.parametrize("answer, stderr, cause", [
    ('{"alive": {"ab12": "10.0.0.5"}, "local": []}', "",
     "has no node on this machine (its nodes: 10.0.0.5)"),
    ('{"alive": {}, "local": ["ab12"]}', "", "has no alive node"),
    ('{"error": "AuthenticationError", "text": "RPC error: InvalidAuthToken"}', "",
     "refused the token in RAY_AUTH_TOKEN"),
    ("", "W gcs_client.cc:210: Unauthenticated: RPC error: InvalidAuthToken: missing",
     "refused the token in RAY_AUTH_TOKEN"),
    ('{"error": "RuntimeError", "text": "something else"}', "",
     "cannot connect to the Ray cluster at 127.0.0.1:6379: something else"),
])
def test_the_probe_of_an_address_names_the_cause(monkeypatch, tmp_path, answer, stderr, cause):
    """What the probe process reports becomes one line: a cluster without a node on this
    machine (where ray.init would wait for minutes), a refused token, another error."""
    from nesybench import parallel
    from nesybench.errors import NesyError

    fake = tmp_path / "probe.sh"
    fake.write_text(f"#!/bin/sh\necho '{answer}'\necho '{stderr}' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setattr(parallel.sys, "executable", str(fake))
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "abc")
    with pytest.raises(NesyError) as err:
        parallel._probe_ray("127.0.0.1:6379")
    assert cause in str(err.value) and "\n" not in str(err.value)


@pytest.mark.timing
def test_a_probe_that_does_not_answer_in_time_is_one_line(monkeypatch, tmp_path):
    from nesybench import parallel
    from nesybench.errors import NesyError

    fake = tmp_path / "probe.sh"
    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setattr(parallel.sys, "executable", str(fake))
    with pytest.raises(NesyError, match="accepts connections but does not answer as a Ray "
                                        "cluster within 0.5 s"):
        parallel._probe_ray("127.0.0.1:6379", timeout=0.5)
    # a healthy answer passes
    fake.write_text("#!/bin/sh\necho '{\"alive\": {\"ab\": \"10.0.0.5\"}, \"local\": [\"ab\"]}'\n")
    parallel._probe_ray("127.0.0.1:6379")
