"""Randomized fault run of the sweep runner: kill it again and again, then check the rows.

A study of ``demo.fault`` cells (good cells that sleep a little, and cells that SIGKILL
themselves, abort, exit with a status or hang past ``--cell-timeout``) is run once cleanly,
then again under faults: ``runs start`` and every following ``runs resume`` is killed at a
random moment by one of

* SIGKILL of the driver alone (what the OOM killer does),
* SIGKILL of the driver's process group (``kill -9`` of a shell job),
* SIGKILL of one of the cells' worker processes,
* SIGTERM or SIGINT of the driver,

until ``--kills`` kills have landed; a last ``resume`` finishes the study. The final rows
(status, final metrics, curves and the cause of each failed cell) must equal the clean
run's exactly, no worker may outlive its driver, and no scratch folder may be left but those
kept for failed cells. Prints one summary line; exit status 1 when any check fails.

    .venv/bin/python benchmarks/runs_faults.py [--kills 20] [--seed 0] [--workers 2]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

SPEC = {"study": "faults", "function": "demo.fault",
        "params": {"fault_on": [1, 3], "seconds": 0.15},
        "axes": {"x": [0, 1, 2, 3, 4, 5], "fault": ["none", "sigkill", "abort", "exit",
                                                    "hang"]}}
KINDS = ("driver SIGKILL", "group SIGKILL", "worker SIGKILL", "driver SIGTERM",
         "driver SIGINT")


def _env(tmp: Path) -> dict:
    env = dict(os.environ, TMPDIR=str(tmp), RAY_TMPDIR="/tmp")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python")] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _args(study: Path, spec: Path, workers: int, timeout: float, executor: str) -> list:
    common = ["-e", executor, "-j", str(workers), "-q", "--cell-timeout", str(timeout)]
    if (study / "results.sqlite").exists():
        return [PY, "-m", "nesybench", "runs", "resume", str(study), *common]
    return [PY, "-m", "nesybench", "runs", "start", str(spec), "--out", str(study), *common]


def _cause(error: str | None) -> str:
    """The kind of failure, without pids, paths or timings."""
    first = (error or "").splitlines()[0] if error else ""
    for key in ("killed by", "exited with status", "timed out after"):
        if key in first:
            return first[first.index(key):]
    lines = (error or "").strip().splitlines()
    return lines[-1] if lines else ""


def snapshot(study: Path) -> dict:
    con = sqlite3.connect(f"file:{study / 'results.sqlite'}?mode=ro", uri=True)
    try:
        cells = {cid: (status, _cause(err) if status == "failed" else "")
                 for cid, status, err in con.execute("SELECT cell_id, status, error FROM cells")}
        metrics: dict = {}
        for cid, name, step, value in con.execute(
                "SELECT cell_id, name, step, value FROM metrics ORDER BY cell_id, rowid"):
            if cells[cid][0] == "done":
                metrics.setdefault(cid, []).append((name, step, value))
    finally:
        con.close()
    return {"cells": cells, "metrics": metrics}


def _proc_table() -> dict[int, tuple[int, int, str]]:
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if fields[0] != "Z":
            out[int(entry.name)] = (int(fields[1]), int(fields[19]), cmd)
    return out


def family(pid: int) -> dict[int, tuple[int, str]]:
    table = _proc_table()
    out: dict = {}
    grew = True
    while grew:
        grew = False
        for p, (ppid, start, cmd) in table.items():
            if (ppid == pid or ppid in out) and p not in out:
                out[p] = (start, cmd)
                grew = True
    return out


def _gone(procs: dict[int, tuple[int, str]], deadline: float = 30.0) -> list[str]:
    """Wait until every process of ``procs`` is gone; returns the ones left."""
    end = time.monotonic() + deadline
    while True:
        table = _proc_table()
        left = [cmd[:60] for p, (start, cmd) in procs.items()
                if p in table and table[p][1] == start]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cell-timeout", type=float, default=2.0)
    ap.add_argument("--executor", choices=["local", "ray"], default="local")
    opts = ap.parse_args()
    rng = random.Random(opts.seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nesybench-faults-") as base:
        base = Path(base)
        tmp = base / "tmp"
        tmp.mkdir()
        spec = base / "faults.yaml"
        spec.write_text(json.dumps(SPEC))
        env = _env(tmp)
        clean = base / "clean"
        r = subprocess.run(_args(clean, spec, opts.workers, opts.cell_timeout, "local"),
                           env=env, capture_output=True, text=True)
        if r.returncode not in (0, 1):
            print(f"runs_faults: the clean run failed: {r.stderr.strip()[-300:]}")
            return 1
        want = snapshot(clean)
        study = base / "study"
        kills = {k: 0 for k in KINDS}
        runs = orphans = 0
        problems: list[str] = []
        while sum(kills.values()) < opts.kills:
            runs += 1
            proc = subprocess.Popen(_args(study, spec, opts.workers, opts.cell_timeout,
                                          opts.executor), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            time.sleep(rng.uniform(0.2, 2.5))
            if proc.poll() is not None:         # finished before the kill: go again
                if proc.returncode not in (0, 1):
                    problems.append(f"run {runs} exited with {proc.returncode}")
                if proc.returncode == 0 and not study.exists():
                    problems.append("finished without a study")
                continue
            kind = rng.choice(KINDS)
            procs = family(proc.pid)
            workers = [p for p, (_, cmd) in procs.items() if "nesybench.runs.worker" in cmd]
            if kind == "worker SIGKILL" and not workers:
                kind = "driver SIGKILL"
            if kind == "driver SIGKILL":
                proc.kill()
            elif kind == "group SIGKILL":
                os.killpg(proc.pid, signal.SIGKILL)
            elif kind == "worker SIGKILL":
                os.kill(rng.choice(workers), signal.SIGKILL)
            elif kind == "driver SIGTERM":
                proc.send_signal(signal.SIGTERM)
            else:
                proc.send_signal(signal.SIGINT)
            kills[kind] += 1
            if kind == "worker SIGKILL":
                rc = proc.wait()                # the sweep goes on and finishes
                if rc not in (0, 1):
                    problems.append(f"after a worker kill the run exited with {rc}")
                continue
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                problems.append(f"{kind}: the driver did not stop")
                proc.kill()
                rc = proc.wait()
            if kind in ("driver SIGTERM", "driver SIGINT") and rc not in (0, 1, 130, 143):
                problems.append(f"{kind}: exit status {rc}")
            left = _gone(procs)
            if left:
                orphans += len(left)
                problems.append(f"{kind}: still running after the driver: {left}")
        # finish: resume until nothing is left
        for _ in range(5):
            runs += 1
            r = subprocess.run(_args(study, spec, opts.workers, opts.cell_timeout,
                                     opts.executor), env=env, capture_output=True, text=True)
            if r.returncode not in (0, 1):
                problems.append(f"final resume exited with {r.returncode}: "
                                f"{r.stderr.strip()[-200:]}")
                continue
            got = snapshot(study)
            if all(s in ("done", "failed") for s, _ in got["cells"].values()):
                break
        got = snapshot(study)
        if got != want:
            diff = [cid for cid in set(want["cells"]) | set(got["cells"])
                    if want["cells"].get(cid) != got["cells"].get(cid) or
                    want["metrics"].get(cid) != got["metrics"].get(cid)]
            problems.append(f"{len(diff)} cells differ from the clean run: {sorted(diff)[:5]}")
        scratch = sorted(p.name for p in tmp.glob("nesybench-cell-*"))
        if scratch:
            problems.append(f"{len(scratch)} scratch folders left: {scratch[:3]}")
        n_failed = sum(s == "failed" for s, _ in want["cells"].values())
    seconds = time.perf_counter() - t0
    what = ", ".join(f"{n} {k}" for k, n in kills.items() if n)
    verdict = "rows identical to a clean run" if not problems else \
        f"{len(problems)} problem(s): {problems[0]}"
    print(f"runs_faults [{opts.executor}, {opts.workers} workers, seed {opts.seed}]: "
          f"{sum(kills.values())} kills ({what}) over {runs} runs of "
          f"{len(want['cells'])} cells ({n_failed} crash or hang); {verdict}; "
          f"{orphans} orphans; {len(scratch)} scratch folders left; {seconds:.0f} s")
    for p in problems[1:]:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
