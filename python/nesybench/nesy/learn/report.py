"""Summaries of ``nesybench nesy sweep`` studies (read back from the runs store)."""
from __future__ import annotations

import statistics
from pathlib import Path

from ...errors import NesyError
from ...folder import DataFolder


def summarise(study) -> tuple[list[dict], list[dict]]:
    """``(rows, shortcut maps)``: one row per (model, concept_sup) with ``(mean, sd)`` of each
    final metric over the seeds and the test-split verdict counts; one entry per run whose
    learned map was a reasoning shortcut, with the values it moved."""
    from ...runs import Study  # noqa: PLC0415
    path = Path(study)
    if not (path / "results.sqlite").is_file():
        raise NesyError("not a sweep study (no results.sqlite)", file=str(path))
    res = Study(path)
    folder = DataFolder(path)       # the study's artifacts, read contained (no link out)
    groups: dict[tuple, list[dict]] = {}
    for r in res.rows():
        groups.setdefault((r.get("model"), float(r.get("concept_sup", 0.0))), []).append(r)
    order = {m: i for i, m in enumerate(("dpl", "fuzzy", "cbm", "nn", "clip-logic"))}
    rows, maps = [], []
    for (model, sup), rs in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 9),
                                                                   kv[0][1])):
        row: dict = {"model": model, "concept_sup": sup, "runs": len(rs),
                     "verdicts": {"identity": 0, "shortcut": 0, "not_optimal": 0}}
        keys = sorted({k for r in rs for k in r if k.startswith(("test_", "ood_", "val_"))})
        for k in keys:
            vals = [float(r[k]) for r in rs if r.get(k) is not None]
            if vals:
                row[k] = (statistics.fmean(vals), statistics.pstdev(vals))
        for r in rs:
            rel = f"artifacts/{r['cell_id']}/metrics.json"
            if not folder.exists(rel, field="cell_id"):
                continue
            summary = folder.read_json(rel, field="cell_id")
            res_ = summary.get("results") if isinstance(summary, dict) else None
            sc = res_.get("test", {}).get("shortcut") if isinstance(res_, dict) else None
            if sc is not None and not (isinstance(sc, dict) and sc.get("verdict") in
                                       row["verdicts"]):
                raise NesyError("results.test.shortcut is not a verdict of nesybench's",
                                file=folder.label(rel))
            if sc:
                row["verdicts"][sc["verdict"]] += 1
                if sc["verdict"] == "shortcut":
                    maps.append({"model": model, "concept_sup": sup, "seed": r["seed"],
                                 "changed": sc["changed"], "n_shortcuts": sc["n_shortcuts"]})
        rows.append(row)
    return rows, maps
