"""Reasoning-shortcut counting figures: XOR n = 3..12 and MNIST-Addition n = 1..4 digits.

    .venv/bin/python benchmarks/rs_count.py [--max-xor 12] [--reference PATH/TO/rsbench-code]

Prints counts and seconds per task and map class. With ``--reference`` (a checkout of
unitn-sml/rsbench-code with its Python requirements importable) it also times its counter
(``rsscount/gen-rss-count.py xor -n N -E``, its exact enumeration; needs pyeda) on XOR n <= 7 and prints both figures and
their ratio; without it, or when that checkout cannot run, those columns are skipped.
"""
from __future__ import annotations

import argparse
import math
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from nesybench.shortcuts.count import count_rs  # noqa: E402
from nesybench.shortcuts.task import load_task  # noqa: E402


def xor(n):
    return load_task({"name": f"xor{n}", "knowledge": "kb/shortcuts/xor.lp", "maps": "separate",
                      "concepts": [{"name": "b", "count": n, "domain": [0, 1]}]})


def addition(n):
    return load_task({"name": f"add{n}", "knowledge": "kb/shortcuts/addition.lp",
                      "concepts": [{"name": "d", "count": n, "domain": {"range": [0, 9]},
                                    "map": "digit"}]})


def reference(path: Path, n: int) -> float | None:
    """Seconds the reference counter takes on XOR n (None when it cannot run)."""
    gen = path / "rsscount" / "gen-rss-count.py"
    if not gen.exists():
        return None
    out = Path(tempfile.mkdtemp(prefix=f"rs-ref-xor{n}-"))
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, str(gen), "xor", "-n", str(n), "-E"], cwd=out,
                           capture_output=True, text=True, timeout=600, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return time.perf_counter() - t0 if r.returncode == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-xor", type=int, default=12)
    ap.add_argument("--reference", type=Path, default=None)
    args = ap.parse_args()
    ref = args.reference if args.reference and args.reference.exists() else None
    if args.reference and not ref:
        print(f"# reference checkout {args.reference} not found: skipping its figures")
    print(f"{'task':<10} {'class':<13} {'count (digits)':>22} {'seconds':>8}  check")
    for n in range(3, args.max_xor + 1):
        t = xor(n)
        for cls, expect in (("disentangled", 2 ** (n - 1)),
                            ("perm", math.factorial(n) * 2 ** (n - 1)),
                            ("joint", (2 ** (n - 1)) ** (2 ** n))):
            r = count_rs(t, map_class=cls)
            shown = str(r.count) if r.count < 10 ** 15 else f"~1e{len(str(r.count)) - 1}"
            print(f"xor{n:<7} {cls:<13} {shown:>22} {r.seconds:8.3f}  "
                  f"{'ok' if r.count == expect else 'MISMATCH'}")
        if ref and n <= 7:
            ours = count_rs(t, map_class="perm").seconds
            theirs = reference(ref, n)
            if theirs is None:
                print(f"# reference counter could not run on xor{n}")
            else:
                print(f"# xor{n} reference {theirs:.2f}s vs ours {ours:.3f}s: "
                      f"ratio {theirs / max(ours, 1e-6):.0f}x")
    rng = random.Random(0)
    for n in range(1, 5):
        t = addition(n)
        worlds = list(t.all_worlds())
        for size in (10, 50):
            sup = sorted(rng.sample(worlds, min(size, len(worlds))))
            for cls, maps in (("disentangled", "shared"), ("disentangled", "separate"),
                              ("joint", None)):
                try:
                    r = count_rs(t, map_class=cls, maps=maps, support=sup)
                    shown = str(r.count) if r.count < 10 ** 15 else f"~1e{len(str(r.count)) - 1}"
                    print(f"add{n:<7} {cls[:5] + '/' + (maps or '-'):<13} {shown:>22} "
                          f"{r.seconds:8.3f}  |S|={len(sup)}")
                except Exception as exc:  # noqa: BLE001 - a benchmark reports and moves on
                    print(f"add{n:<7} {cls:<13} {'-':>22} {'-':>8}  {exc}")


if __name__ == "__main__":
    main()
