"""Time the RuDaS rule learners per dataset size, and score what they learn.

Generates ``--per-size`` RuDaS-v0 datasets (``--profile rudas-v0``, category ``--category``,
depth 2) of each size class in ``--sizes``, runs every system of ``--systems`` on each
(``nesybench.rudas.learners.learn``, in this process) and prints per system and size the
median runtime, the mean number of rules and the mean H-score / F1 / R-score of the rules
with confidence >= ``--threshold``. ``--reference FILE`` (JSON ``{"system": {"size":
seconds}}``) adds a column of published or reference runtimes next to ours.

    .venv/bin/python benchmarks/rudas_learners.py [--sizes xs,s] [--per-size 3]
        [--systems foil,amie,neural-lp,ntp] [--threshold 0.5] [--reference ref.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.rudas import RudasParams, evaluate, generate  # noqa: E402
from nesybench.rudas.core import apply_profile  # noqa: E402
from nesybench.rudas.learners import learn, render  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="xs,s")
    ap.add_argument("--per-size", type=int, default=3)
    ap.add_argument("--systems", default="foil,amie,neural-lp,ntp")
    ap.add_argument("--category", default="rdg")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference", help="JSON {system: {size: seconds}}")
    a = ap.parse_args()
    ref = json.loads(Path(a.reference).read_text()) if a.reference else {}
    systems = a.systems.split(",")
    print(f"{'system':10s} {'size':4s} {'n':>2s} {'facts':>6s} {'seconds':>8s} "
          f"{'reference':>9s} {'rules':>6s} {'H-score':>7s} {'F1':>6s} {'R-score':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in a.sizes.split(","):
            dsets = []
            for i in range(a.per_size):
                p = RudasParams(**apply_profile(
                    {"seed": a.seed + i, "category": a.category, "size": size, "depth": 2},
                    "rudas-v0"))
                res = generate(p, Path(tmp) / f"{size}-{i}")
                dsets.append((res.path, res.manifest["counts"]["train"]))
            for system in systems:
                secs, nrules, hs, f1, rs = [], [], [], [], []
                for path, _ in dsets:
                    t0 = time.perf_counter()
                    rules, _ = learn(path, system, seed=a.seed)
                    secs.append(time.perf_counter() - t0)
                    out = Path(tmp) / f"{path.name}-{system}.pl"
                    out.write_text(render(rules))
                    m = evaluate(path, out, threshold=a.threshold, time_limit=120)
                    nrules.append(len(rules))
                    hs.append(m["h_score"])
                    f1.append(m["f1"])
                    rs.append(m["r_score"])
                r = ref.get(system, {}).get(size)
                print(f"{system:10s} {size:4s} {len(dsets):2d} "
                      f"{statistics.mean(n for _, n in dsets):6.0f} {statistics.median(secs):8.2f} "
                      f"{(f'{r:.2f}' if r is not None else '-'):>9s} {statistics.mean(nrules):6.1f} "
                      f"{statistics.mean(hs):7.3f} {statistics.mean(f1):6.3f} "
                      f"{statistics.mean(rs):7.3f}", flush=True)


if __name__ == "__main__":
    main()
