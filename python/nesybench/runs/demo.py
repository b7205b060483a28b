"""Run functions for demos, tests and the overhead benchmark.

``rs_count_cell`` is a real one: the reasoning-shortcut counter on a task whose number of
concepts is an axis (``curricula/sweeps/xor_counts.yaml``).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np


def toy_cell(params: dict, seed: int, ctx) -> dict:
    """A cheap, seeded cell: a noisy quadratic with a 'curve' over ``steps`` steps.

    params: ``x`` (number), optional ``steps`` (int, default 3), ``fail_if`` (a value of x
    that raises, to exercise failure handling), ``artifact`` (bool: write a small file).
    """
    rng = np.random.default_rng(seed)
    x = float(params.get("x", 0.0))
    if params.get("fail_if") is not None and x == params["fail_if"]:
        raise ValueError(f"toy cell fails on x = {x}")
    for step in range(int(params.get("steps", 3))):
        ctx.log("loss", 1.0 / (step + 1) + 0.01 * rng.standard_normal(), step=step)
    if params.get("artifact"):
        path = ctx.artifact_dir / "values.txt"
        path.write_text(f"{x} {seed}\n", encoding="utf-8")
        ctx.add_artifact(path)
    return {"y": x * x + rng.standard_normal(), "noise": float(rng.random())}


toy_cell.params_schema = {"x": (int, float), "steps": int, "fail_if": (int, float, type(None)),
                          "artifact": bool, "label": str}


def sleep_cell(params: dict, seed: int, ctx) -> dict:
    """Sleeps ``seconds`` (default 0): for measuring executor overhead."""
    s = float(params.get("seconds", 0.0))
    if s:
        time.sleep(s)
    return {"slept": s}


sleep_cell.params_schema = {"seconds": (int, float), "i": int}


def fault_cell(params: dict, seed: int, ctx) -> dict:
    """A cell that misbehaves on purpose, for tests and the fault benchmark.

    params: ``x`` (number); ``fault`` applies when ``x`` is in ``fault_on`` (default: every
    cell): ``raise`` (an exception), ``sigkill`` (SIGKILLs its own process), ``abort``
    (``os.abort()``), ``exit`` (``os._exit(3)``), ``hang`` (sleeps for an hour);
    ``fail_times`` (with ``state``, a folder): fail that many times before succeeding
    (counted in a file per cell under ``state``); ``seconds``: sleep this long first. Logs
    a short curve, writes a line to stderr, and leaves a file in its scratch folder.
    """
    import os  # noqa: PLC0415
    import signal  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    x = params.get("x", 0)
    if params.get("seconds"):
        time.sleep(float(params["seconds"]))
    for step in range(3):
        ctx.log("loss", 1.0 / (step + 1) + x, step=step)
    print(f"fault cell x={x} starting", file=sys.stderr, flush=True)
    (ctx.artifact_dir / "partial.txt").write_text(f"{x}\n", encoding="utf-8")
    if params.get("fail_times"):
        counter = Path(params["state"]) / f"{ctx.cell_id}.count"
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        if n < int(params["fail_times"]):
            raise RuntimeError(f"planned failure {n + 1} of {params['fail_times']}")
    fault = params.get("fault", "none")
    on = params.get("fault_on")
    if on is None or x in on:
        if fault == "raise":
            raise RuntimeError(f"fault cell raises on x = {x}")
        if fault == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == "abort":
            os.abort()
        if fault == "exit":
            os._exit(3)
        if fault == "hang":
            time.sleep(3600)
    (ctx.artifact_dir / "partial.txt").unlink()
    return {"y": float(x) * 2.0, "seed_mod": float(seed % 1000)}


fault_cell.params_schema = {"x": (int, float), "fault": str, "fault_on": list,
                            "fail_times": int, "state": str, "seconds": (int, float)}


def rs_count_cell(params: dict, seed: int, ctx) -> dict:
    """Count the reasoning shortcuts of ``task`` (a YAML path) with ``n`` concepts of its
    first concept group, under ``map_class`` (disentangled, perm, joint)."""
    import yaml  # noqa: PLC0415

    from ..folder import read_input_text  # noqa: PLC0415
    from ..yamlsafe import safe_load  # noqa: PLC0415

    from ..paths import shipped  # noqa: PLC0415
    from ..shortcuts.count import count_rs  # noqa: PLC0415
    from ..shortcuts.task import load_task  # noqa: PLC0415

    # a task nesybench ships is named (curricula/rs/xor.yaml), never looked up in the
    # installation by path; any other task is the user's file
    path = shipped(str(params["task"]), folders=("curricula",)) or Path(str(params["task"]))
    data = safe_load(read_input_text(path))
    if "n" in params:
        data["concepts"][0]["count"] = int(params["n"])
    task = load_task(data, source=str(path), base=Path(path).resolve().parent)
    res = count_rs(task, map_class=params.get("map_class", "disentangled"))
    out = {"log10_count": _log10(res.count), "support": res.support_size,
           "count_seconds": res.seconds}
    if res.count < 2 ** 1000:       # exact counts can exceed any float: keep the log then
        out.update(count=float(res.count), shortcuts=float(res.count_without_identity))
    return out


def _log10(n: int) -> float:
    """log10 of an arbitrarily large positive integer (math.log10 takes Python ints)."""
    return math.log10(max(n, 1))


rs_count_cell.params_schema = {"task": str, "n": int, "map_class": str}
rs_count_cell.params_required = ("task",)
