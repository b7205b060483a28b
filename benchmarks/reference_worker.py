"""A reference system (DeepProbLog) in a worker process, driven by JSON lines.

The benchmarks that run DeepProbLog like for like start it in its own interpreter, so that its
package (installed with ``pip install --no-deps --target DIR deepproblog==2.1.0``) comes from
the directory the user names with ``--reference-path`` and never shadows anything of ours. The
worker is the benchmark script itself, started as ``SCRIPT --dpl-worker SPEC``: ``SPEC`` is a
``torch.save`` file with everything it needs (tensors, indices, hyperparameters); it answers
each command read from stdin with one JSON line on stdout (lines not starting with ``{`` are
the reference's own prints and are skipped).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile

import torch


class WorkerProcess:
    """``script --dpl-worker SPEC`` in ``args.reference_python`` with ``args.reference_path``
    and the benchmarks folder on its ``PYTHONPATH``; :meth:`ask` sends one command and returns
    the worker's JSON answer; the first answer (:attr:`hello`) is read on start. A worker that
    dies raises ``RuntimeError`` with its last error line."""

    def __init__(self, spec: dict, args, script: str):
        self.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(self.tmp.name, "spec.pt")
        torch.save(spec, path)
        env = dict(os.environ)
        paths = [p for p in [args.reference_path, os.path.dirname(os.path.abspath(__file__))] if p]
        env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
        self.err = open(os.path.join(self.tmp.name, "stderr"), "w+")
        self.proc = subprocess.Popen([args.reference_python, os.path.abspath(script),
                                      "--dpl-worker", path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
        self.hello = self._read()

    @property
    def folder(self) -> str:
        """A scratch folder the worker may also write to (removed by :meth:`close`)."""
        return self.tmp.name

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        while line and not line.startswith("{"):      # the reference's own prints
            line = self.proc.stdout.readline()
        if not line:
            self.err.seek(0)
            lines = self.err.read().strip().splitlines() or ["failed"]
            errs = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception)\b", ln)]
            raise RuntimeError((errs or lines)[-1])
        return json.loads(line)

    def ask(self, cmd: dict) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except Exception:  # noqa: BLE001
            self.proc.kill()
        self.err.close()
        self.tmp.cleanup()
