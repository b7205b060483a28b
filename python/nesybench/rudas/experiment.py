"""``nesybench rudas experiment``: the paper's Section 6 end to end (Cornelio and Thost,
*RuDaS: synthetic datasets for rule learning and evaluation tools*).

An experiment spec (YAML, e.g. ``curricula/rudas/experiment.yaml``) names the rule learners
and the dataset grid. The command

1. generates the datasets (RuDaS-v0 rule parameters: no constants, arity 2, at most two
   body atoms) into ``OUT/datasets/`` — the *overall* part (Tables 2, 4, 5: categories ×
   sizes × depths, ``per_cell`` datasets each, one noise setting) and the *noise* part
   (Table 3: RDG/DRDG × sizes × depths × the conditions complete / incomplete / incomplete +
   noise);
2. runs every learner on every dataset through the sweep runner (:mod:`nesybench.runs`, run
   function ``rudas.learn`` = :func:`learn_cell`; one cell per dataset and learner, with the
   spec's per-cell time limit; the study is ``OUT/study``, so ``nesybench runs status``
   reads it; a rerun resumes);
3. evaluates each learned program (§5 metrics, :func:`nesybench.rudas.core.evaluate`) once
   per confidence threshold of the grid (each distinct set of kept rules once);
4. picks each system's threshold by grid search over all datasets (the paper: "a
   system-specific threshold, obtained using grid search over all datasets"; the criterion
   here is the mean H-score, the paper's headline metric), and writes Tables 2–5 (Markdown
   and CSV), Figure 2 (PNG) and ``thresholds.json``.
"""
from __future__ import annotations

import copy
import csv
import io
import math
import time
from dataclasses import asdict
from pathlib import Path

import yaml

from ..errors import NesyError
from ..io import (MARKER, check_output_path, derive_seed, dumps, remove_output_folder,
                  unexpected_files, write_marker)
from ..folder import DataFolder, json_loads, read_input_text
from ..yamlsafe import safe_load

#: metrics written per threshold (the evaluator's names)
METRICS = ("herbrand_accuracy", "accuracy", "f1", "h_score", "precision", "recall", "r_score")
#: Table 2's rows: (label, metric) in the paper's order
TABLE2_ROWS = (("H-accuracy", "herbrand_accuracy"), ("Accuracy", "accuracy"),
               ("F1-score", "f1"), ("H-score", "h_score"), ("Precision", "precision"),
               ("Recall", "recall"), ("R-score", "r_score"))
CONDITIONS = {"complete": "Complete", "incomplete": "Incomplete", "noisy": "Incomplete + Noise"}
SYSTEM_LABELS = {"foil": "FOIL", "amie": "AMIE+", "neural-lp": "Neural-LP", "ntp": "NTP",
                 "aleph": "Aleph"}

#: the paper's Tables 2-5 (FOIL, AMIE+, Neural-LP, NTP), for the side-by-side view
PAPER = {
    "table2": {"FOIL": [0.9873, 0.9872, 0.2151, 0.1520, 0.5963, 0.2264, 0.2728],
               "AMIE+": [0.8498, 0.8494, 0.3031, 0.2321, 0.2982, 0.7311, 0.3350],
               "Neural-LP": [0.9850, 0.9849, 0.1621, 0.1025, 0.1687, 0.2433, 0.1906],
               "NTP": [0.9221, 0.9219, 0.1125, 0.0728, 0.1021, 0.3921, 0.1811]},
    "table3": {"FOIL": [0.4053, 0.1919, 0.0849], "AMIE+": [0.2021, 0.2098, 0.2075],
               "Neural-LP": [0.0633, 0.0692, 0.0649], "NTP": [0.0482, 0.0617, 0.0574]},
    "table4": {"FOIL": [0.2024, 0.0877, 0.1633], "AMIE+": [0.3395, 0.2275, 0.1293],
               "Neural-LP": [0.1291, 0.1050, 0.0734], "NTP": [0.1239, 0.0538, 0.0368]},
    "table5": {"FOIL": [0.2815, 0.2074, 0.0356, 0.0934],
               "AMIE+": [0.1449, 0.1319, 0.4392, 0.2124],
               "Neural-LP": [0.1155, 0.0673, 0.1281, 0.0992],
               "NTP": [0.1512, 0.0432, 0.0652, 0.0374]},
}

_TOP_KEYS = {"experiment", "seed", "systems", "profile", "thresholds", "timeout", "evaluation",
             "datasets", "small", "description"}


# --- the spec -------------------------------------------------------------------------------

def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def load_experiment(path, *, small: bool = False, seed: int | None = None,
                    systems: list[str] | None = None, allow_commands: bool = False) -> dict:
    """Read and check an experiment spec; ``small`` applies its ``small:`` overrides,
    ``seed`` and ``systems`` (names of the spec's systems) override. One :class:`NesyError`
    naming the field on bad input.

    A shell learner (``system: cmd``, or a ``command`` at any depth of a system, its
    ``options`` included) runs a shell command, and a learner's ``aleph`` file is Prolog run
    unsandboxed: a spec from someone else would be code. Such a spec is refused unless
    ``allow_commands`` (``--allow-commands``) says the user has read it."""
    p = Path(path)
    if not p.is_file():
        raise NesyError("experiment spec not found", file=str(p))
    try:
        raw = safe_load(read_input_text(p))
    except yaml.YAMLError as exc:
        raise NesyError(f"not YAML: {str(exc).splitlines()[0]}", file=str(p)) from None
    src = str(p)

    def err(msg, fld=None):
        return NesyError(msg, file=src, field=fld)

    if not isinstance(raw, dict):
        raise err("an experiment spec is a mapping (experiment, systems, datasets, ...)")
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        raise err(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP_KEYS))})",
                  unknown[0])
    spec = {k: v for k, v in raw.items() if k != "small"}
    if small:
        if not isinstance(raw.get("small"), dict):
            raise err("--small needs a `small:` mapping of overrides in the spec", "small")
        spec = _merge(spec, raw["small"])
    if seed is not None:
        spec["seed"] = seed
    spec.setdefault("experiment", "rudas-experiment")
    spec.setdefault("seed", 0)
    if isinstance(spec["seed"], bool) or not isinstance(spec["seed"], int):
        raise err(f"must be an integer, got {spec['seed']!r}", "seed")
    # systems: a name, or {name, system, options, command}
    from ..runs.trust import commands_in, require_allowed  # noqa: PLC0415
    from .learners import profile_options  # noqa: PLC0415
    profile = spec.setdefault("profile", "rudas-v0")
    if profile != "none" and not isinstance(profile, str):
        raise err("must be rudas-v0 or none", "profile")
    learners, where = {}, {}
    for i, s in enumerate(spec.get("systems") or []):
        if isinstance(s, str):
            s = {"name": s}
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
            raise err("each system is a name or a mapping with name", f"systems[{i}]")
        bad = sorted(set(s) - {"name", "system", "options", "command"})
        if bad:
            raise err(f"unknown key {bad[0]!r} (name, system, options, command)",
                      f"systems[{i}]")
        if s.get("options") is not None and not isinstance(s["options"], dict):
            raise err("must be a mapping of option names to values", f"systems[{i}].options")
        entry = {"system": s.get("system", s["name"]),
                 "options": profile_options(
                     s.get("system", s["name"]),
                     {str(k): str(v) for k, v in (s.get("options") or {}).items()},
                     None if profile == "none" else profile)}
        if s.get("command") is not None:
            entry["options"]["command"] = str(s["command"])
        if s["name"] in learners:
            raise err(f"system {s['name']!r} listed twice", f"systems[{i}]")
        learners[s["name"]] = entry
        where[s["name"]] = commands_in({**s, "system": entry["system"]}, f"systems[{i}]")
    if not learners:
        raise err("lists no system", "systems")
    if systems:
        missing = [s for s in systems if s not in learners]
        if missing:
            raise NesyError(f"--systems: {missing[0]!r} is not a system of the spec "
                            f"({', '.join(learners)})", field="systems")
        learners = {k: learners[k] for k in systems}
    # a shell learner or a learner's Prolog file, at any depth of a system that will run, is
    # code: refused before anything is written unless the user passed --allow-commands
    require_allowed([f for name in learners for f in where[name]], allow_commands, source=src)
    from .learners import learner_class  # noqa: PLC0415
    for name, entry in learners.items():
        learner_class(entry["system"])          # unknown systems fail here, before anything
    spec["learners"] = learners
    th = spec.get("thresholds") or {}
    grid = th.get("grid", [round(0.1 * i, 1) for i in range(10)])
    if not isinstance(grid, list) or not grid or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t <= 1 for t in grid):
        raise err("must be a list of confidences in [0, 1]", "thresholds.grid")
    fixed = th.get("fixed") or {}
    if not isinstance(fixed, dict) or not all(
            isinstance(v, (int, float)) and 0 <= v <= 1 for v in fixed.values()):
        raise err("must map system names to confidences in [0, 1]", "thresholds.fixed")
    paper = th.get("paper") or {}
    if not isinstance(paper, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
            for v in paper.values()):
        raise err("must map system names to confidences in [0, 1]", "thresholds.paper")
    grid = sorted({float(t) for t in grid} | {float(v) for v in fixed.values()}
                  | {float(v) for v in paper.values()})
    metric = th.get("metric", "h_score")
    if metric not in METRICS:
        raise err(f"must be one of {', '.join(METRICS)}", "thresholds.metric")
    spec["thresholds"] = {"grid": grid, "fixed": {str(k): float(v) for k, v in fixed.items()},
                          "paper": {str(k): float(v) for k, v in paper.items()},
                          "metric": metric}
    timeout = spec.get("timeout", 3600)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise err(f"must be seconds > 0, got {timeout!r}", "timeout")
    spec["timeout"] = float(timeout)
    ev = {"time_limit": 300.0, "max_derived": 1_000_000, **(spec.get("evaluation") or {})}
    if set(ev) - {"time_limit", "max_derived"}:
        raise err("has time_limit and max_derived only", "evaluation")
    spec["evaluation"] = ev
    parts = spec.get("datasets")
    if not isinstance(parts, dict) or not parts or set(parts) - {"overall", "noise"}:
        raise err("maps overall (Tables 2, 4, 5) and/or noise (Table 3) to a grid",
                  "datasets")
    for part, g in parts.items():
        fld = f"datasets.{part}"
        if not isinstance(g, dict):
            raise err("must be a mapping", fld)
        allowed = {"categories", "sizes", "depths", "per_cell", "noise", "conditions"}
        bad = sorted(set(g) - allowed)
        if bad:
            raise err(f"unknown key {bad[0]!r}", fld)
        for key, ok in (("categories", {"chain", "rdg", "drdg"}), ("sizes", {"xs", "s", "m"}),
                        ("depths", None)):
            vals = g.get(key)
            if not isinstance(vals, list) or not vals:
                raise err("must be a non-empty list", f"{fld}.{key}")
            if ok is not None and not set(vals) <= ok:
                raise err(f"values from {', '.join(sorted(ok))}", f"{fld}.{key}")
        n = g.get("per_cell")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise err("must be an integer >= 1", f"{fld}.per_cell")
        if part == "noise":
            conds = g.setdefault("conditions", list(CONDITIONS))
            if not isinstance(conds, list) or not set(conds) <= set(CONDITIONS) or not conds:
                raise err(f"values from {', '.join(CONDITIONS)}", f"{fld}.conditions")
    spec["source"] = src
    return spec


# --- the datasets ---------------------------------------------------------------------------

_NOISE = {"n_ow": 0.3, "noise_minus": 0.2, "noise_plus": 0.1}
_OW3 = (0.2, 0.3, 0.4)


def condition_noise(cond: str, i: int) -> dict:
    """Noise parameters of the i-th dataset of a Table 3 condition (the paper's §6.2 sets,
    cycled): complete n_OW = n_Noise- = n_Noise+ = 0; incomplete n_OW ∈ {.2,.3,.4}, no noise;
    incomplete + noise n_OW ∈ {.2,.3,.4}, n_Noise- ∈ {.15,.3}, n_Noise+ ∈ {.2,.3}."""
    if cond == "complete":
        return {"n_ow": 0.0, "noise_minus": 0.0, "noise_plus": 0.0}
    if cond == "incomplete":
        return {"n_ow": _OW3[i % 3], "noise_minus": 0.0, "noise_plus": 0.0}
    return {"n_ow": _OW3[i % 3], "noise_minus": (0.15, 0.3)[(i // 3) % 2],
            "noise_plus": (0.2, 0.3)[(i // 6) % 2]}


def dataset_items(spec: dict) -> list[dict]:
    """Every dataset of the spec: name, part, category, size, depth, condition, params."""
    from .core import RudasParams, apply_profile  # noqa: PLC0415
    fixed = apply_profile({}, "rudas-v0")
    out = []
    for part, g in spec["datasets"].items():
        conds = g["conditions"] if part == "noise" else [None]
        for cat in g["categories"]:
            for size in g["sizes"]:
                for depth in g["depths"]:
                    for cond in conds:
                        for i in range(g["per_cell"]):
                            if cond is None:
                                noise = {**_NOISE, **(g.get("noise") or {})}
                                name = f"{cat.upper()}-{size.upper()}-{depth}-{i:03d}"
                            else:
                                noise = condition_noise(cond, i)
                                name = f"{cat.upper()}-{size.upper()}-{depth}-{cond}-{i:03d}"
                            params = RudasParams(
                                seed=derive_seed(spec["seed"], "rudas-experiment", name) % 2**31,
                                category=cat, size=size, depth=int(depth), **noise, **fixed)
                            params.validate()
                            out.append({"name": name, "part": part, "category": cat,
                                        "size": size, "depth": int(depth),
                                        "condition": cond, "params": asdict(params)})
    return out


def _generate_one(args):
    from .core import RudasParams, generate  # noqa: PLC0415
    params, path = args
    res = generate(RudasParams(**params), path)
    return res.manifest["counts"]["train"]


def generate_datasets(items: list[dict], root: Path, *, workers: int = 1,
                      progress: bool = False) -> int:
    """Generate the datasets not yet in ``root`` (a folder without ``manifest.json`` is the
    leftover of an interrupted generation and made again; whether the datasets there belong
    to this spec is checked against ``experiment.json`` by :func:`run_experiment`). Returns
    how many were generated."""
    from ..parallel import map_ordered  # noqa: PLC0415
    root.mkdir(parents=True, exist_ok=True)
    todo = []
    for it in items:
        path = root / it["name"]
        man = path / "manifest.json"
        if man.is_file():
            continue                        # made by this experiment (experiment.json)
        if path.exists():                   # a leftover of an interrupted generation,
            remove_output_folder(path)      # never a folder holding a user's files
        todo.append((it["params"], str(path)))
    it = map_ordered(_generate_one, todo, workers=max(1, workers))
    if progress and todo:
        from tqdm import tqdm  # noqa: PLC0415
        it = tqdm(it, total=len(todo), desc="rudas experiment: datasets", unit="dataset",
                  leave=False)
    for _ in it:
        pass
    return len(todo)


# --- the sweep cell -------------------------------------------------------------------------

def learn_cell(params: dict, seed: int, ctx) -> dict:
    """One learner on one dataset (registered as ``rudas.learn``): learn, then evaluate the
    learned program at every threshold of ``thresholds`` (rules without a confidence count
    as 1). Final metrics: ``learn_seconds``, ``eval_seconds``, ``rules``, and the §5 metrics
    at threshold 0; stepped metrics: each metric at step k = the k-th threshold (and
    ``threshold`` itself, ``rules_kept``, ``partial``). The learned file is an artifact."""
    from .core import evaluate  # noqa: PLC0415
    from .learners import learn, render  # noqa: PLC0415
    entry = params["learners"][params["system"]]
    ds = Path(params["datasets"]) / params["dataset"]
    t0 = time.perf_counter()
    rules, _info = learn(ds, entry["system"], seed=seed % 2**31,
                         options=dict(entry.get("options") or {}))
    learn_s = time.perf_counter() - t0
    header = f"learned by {params['system']} ({entry['system']}) on {params['dataset']}"
    out = ctx.artifact_dir / "learned.pl"
    out.write_text(render(rules, header), encoding="utf-8")
    ctx.add_artifact(out)
    ev = params.get("evaluation") or {}
    t1 = time.perf_counter()
    cache: dict = {}
    final: dict = {}
    for k, t in enumerate(params["thresholds"]):
        kept = tuple(i for i, r in enumerate(rules)
                     if (r.confidence if r.confidence is not None else 1.0) >= t - 1e-12)
        if kept not in cache:
            f = ctx.artifact_dir / f"kept-{len(cache)}.pl"
            f.write_text(render([rules[i] for i in kept]), encoding="utf-8")
            cache[kept] = evaluate(ds, f, time_limit=float(ev.get("time_limit", 300)),
                                   max_derived=int(ev.get("max_derived", 1_000_000)))
            f.unlink()
        m = cache[kept]
        ctx.log("threshold", t, step=k)
        ctx.log("rules_kept", len(kept), step=k)
        ctx.log("partial", float(bool(m["partial"]) or bool(m.get("r_score_partial"))), step=k)
        for name in METRICS:
            ctx.log(name, m[name], step=k)
        if k == 0:
            final = {name: m[name] for name in METRICS}
    return {"learn_seconds": learn_s, "eval_seconds": time.perf_counter() - t1,
            "rules": len(rules), **final}


learn_cell.params_schema = {"dataset": str, "datasets": str, "system": str, "learners": dict,
                            "thresholds": list, "evaluation": dict}
learn_cell.params_required = ("dataset", "datasets", "system", "learners", "thresholds")


def grid_spec(spec: dict, items: list[dict], datasets_root: Path):
    """The sweep (:class:`nesybench.runs.GridSpec`): axes dataset × system."""
    from ..runs import GridSpec  # noqa: PLC0415
    return GridSpec(study=spec["experiment"], function="rudas.learn",
                    params={"datasets": str(datasets_root.resolve()),
                            "learners": spec["learners"],
                            "thresholds": spec["thresholds"]["grid"],
                            "evaluation": spec["evaluation"]},
                    axes={"dataset": [it["name"] for it in items],
                          "system": list(spec["learners"])},
                    repetitions=1, seed=spec["seed"], timeout=spec["timeout"],
                    description=spec.get("description", "RuDaS Section 6 experiment"))


# --- the report -----------------------------------------------------------------------------

def _mean(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(xs) / len(xs) if xs else None


def _fmt(v, nd=4):
    return "-" if v is None else f"{v:.{nd}f}"


def _label(name: str) -> str:
    """The paper's name of a built-in system; a spec's own names as they are."""
    return SYSTEM_LABELS.get(name, name)


def collect(out: Path) -> tuple[dict, list[dict], list[dict]]:
    """(experiment.json, per-cell records with metrics per threshold index, failed cells)."""
    from ..runs import Study  # noqa: PLC0415
    exp = DataFolder(out).read_json("experiment.json")
    meta = {it["name"]: it for it in exp["datasets"]}
    st = Study(out / "study")
    per: dict = {}
    for c in st.curves():
        per.setdefault(c["cell_id"], {}).setdefault(c["step"], {})[c["name"]] = c["value"]
    recs = []
    for r in st.rows():
        if r["dataset"] not in meta or r["system"] not in exp["learners"]:
            continue                      # cells of axis values this spec no longer lists
        recs.append({**meta[r["dataset"]], "system": r["system"],
                     "learn_seconds": r.get("learn_seconds"), "rules": r.get("rules"),
                     "by_threshold": per.get(r["cell_id"], {})})
    fails = [f for f in st.failures()
             if f["axes"].get("dataset") in meta and f["axes"].get("system") in exp["learners"]]
    return exp, recs, fails


def choose_thresholds(exp: dict, recs: list[dict], *, paper: bool = False) -> dict:
    """Per system: the grid threshold with the best mean of the spec's metric over all its
    evaluated datasets (ties: the smaller threshold), or its fixed one; with ``paper=True``
    the paper's own threshold where the spec gives one (``thresholds.paper``)."""
    grid = exp["thresholds"]["grid"]
    metric = exp["thresholds"]["metric"]
    out = {}
    for name in exp.get("systems") or exp["learners"]:
        rs = [r for r in recs if r["system"] == name]
        means = [_mean([r["by_threshold"].get(k, {}).get(metric) for r in rs])
                 for k in range(len(grid))]
        fixed = exp["thresholds"]["fixed"].get(name)
        given = exp["thresholds"].get("paper", {}).get(name) if paper else None
        if given is not None:
            k = grid.index(given)
            how = "the paper's"
        elif fixed is not None:
            k = grid.index(fixed)
            how = "fixed"
        else:
            ok = [(m, -i) for i, m in enumerate(means) if m is not None]
            k = -max(ok)[1] if ok else 0
            how = "grid search"
        out[name] = {"threshold": grid[k], "index": k, "how": how, "metric": metric,
                     "datasets": len(rs),
                     "mean_by_threshold": {f"{t:g}": m for t, m in zip(grid, means)}}
    return out


def _at(rec, k, metric):
    return rec["by_threshold"].get(k, {}).get(metric)


def build_tables(exp: dict, recs: list[dict], thresholds: dict, fails: list[dict]) -> dict:
    """Tables 2-5 as {name: {"title", "header", "rows", "paper"}} (rows: lists of cells)."""
    systems = exp.get("systems") or list(exp["learners"])
    labels = {s: _label(s) for s in systems}
    failed = {}
    for f in fails:
        failed.setdefault(f["axes"]["system"], []).append(f["axes"]["dataset"])

    def sel(s, **kw):
        return [r for r in recs if r["system"] == s and all(r[k] == v for k, v in kw.items())]

    def mean_at(rs, s, metric):
        return _mean([_at(r, thresholds[s]["index"], metric) for r in rs])

    tables = {}
    overall = {s: sel(s, part="overall") for s in systems}
    n_over = sum(1 for it in exp["datasets"] if it["part"] == "overall")
    if n_over:
        rows = [[lab, *(mean_at(overall[s], s, m) for s in systems)] for lab, m in TABLE2_ROWS]
        rows.append(["Runtime (s, mean)", *(_mean([r["learn_seconds"] for r in overall[s]])
                                            for s in systems)])
        rows.append(["Threshold", *(thresholds[s]["threshold"] for s in systems)])
        rows.append(["Datasets evaluated", *(len(overall[s]) for s in systems)])
        part = {it["name"]: it["part"] for it in exp["datasets"]}
        rows.append(["Cells failed", *(sum(1 for d in failed.get(s, [])
                                           if part.get(d) == "overall") for s in systems)])
        tables["table2"] = {"title": f"Table 2: metrics averaged over the {n_over} datasets "
                                     "of the overall part",
                            "header": ["", *(labels[s] for s in systems)], "rows": rows}
    cats = [c for c in ("chain", "rdg", "drdg")
            if any(it["category"] == c for it in exp["datasets"] if it["part"] == "overall")]
    groups = []
    for it in exp["datasets"]:
        g = (it["size"], it["depth"])
        if it["part"] == "overall" and g not in groups:
            groups.append(g)
    conds = [c for c in CONDITIONS if any(it["condition"] == c for it in exp["datasets"])]
    if conds:
        rows = [[labels[s], *(mean_at(sel(s, part="noise", condition=c), s, "h_score")
                              for c in conds)] for s in systems]
        n = {c: sum(1 for it in exp["datasets"] if it["condition"] == c) for c in conds}
        tables["table3"] = {"title": "Table 3: H-score by missing consequences and noise "
                                     f"({', '.join(f'{CONDITIONS[c]} {n[c]}' for c in conds)} "
                                     "datasets)",
                            "header": ["", *(CONDITIONS[c] for c in conds)], "rows": rows}
    if cats:
        tables["table4"] = {
            "title": "Table 4: H-score by dataset category (overall part)",
            "header": ["", *(c.upper() for c in cats)],
            "rows": [[labels[s], *(mean_at(sel(s, part="overall", category=c), s, "h_score")
                                   for c in cats)] for s in systems],
            "detail": _detail(systems, labels, [(c.upper(), {"category": c}) for c in cats],
                              sel, mean_at)}
    if groups:
        gl = [(f"{sz.upper()}-{d}", {"size": sz, "depth": d}) for sz, d in groups]
        tables["table5"] = {
            "title": "Table 5: H-score by dataset size and rule-graph depth (overall part)",
            "header": ["", *(g for g, _ in gl)],
            "rows": [[labels[s], *(mean_at(sel(s, part="overall", **kw), s, "h_score")
                                   for _, kw in gl)] for s in systems],
            "detail": _detail(systems, labels, gl, sel, mean_at)}
    return tables


def _detail(systems, labels, groups, sel, mean_at) -> dict:
    """Every metric and the runtime per system and group, side by side."""
    head = ["system", "group", "H-score", "F1", "Precision", "Recall", "R-score",
            "Runtime (s)", "n"]
    rows = []
    for s in systems:
        for g, kw in groups:
            rs = sel(s, part="overall", **kw)
            rows.append([labels[s], g, *(mean_at(rs, s, m) for m in
                                         ("h_score", "f1", "precision", "recall", "r_score")),
                         _mean([r["learn_seconds"] for r in rs]), len(rs)])
    return {"header": head, "rows": rows}


def _md(header, rows) -> str:
    def cell(v):
        if isinstance(v, float):
            return _fmt(v, 2) if abs(v) >= 10 else _fmt(v)
        return "-" if v is None else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def _csv(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in r])
    return buf.getvalue()


def _paper_md(name: str, header: list) -> str | None:
    p = PAPER.get(name)
    if not p:
        return None
    if name == "table2":
        labs = [lab for lab, _ in TABLE2_ROWS]
        rows = [[lab, *(p[s][i] for s in p)] for i, lab in enumerate(labs)]
        head = ["", *p]
    else:
        cols = {"table3": ["Complete", "Incomplete", "Incomplete + Noise"],
                "table4": ["CHAIN", "RDG", "DRDG"],
                "table5": ["XS-2", "XS-3", "S-2", "S-3"]}[name]
        rows = [[s, *v] for s, v in p.items()]
        head = ["", *cols]
    return _md(head, rows)


def write_report(out: Path, *, plot: bool = True) -> dict:
    """Tables 2-5 (``tables/tableN.md`` / ``.csv``), ``thresholds.json``, ``figure2.png`` and
    ``report.md`` (everything in one page, with the paper's numbers under ours)."""
    exp, recs, fails = collect(out)
    # with the paper's thresholds in the spec, Tables 2-5 use them (the reproduction), and the
    # tables at thresholds grid-searched on these datasets are written beside, labelled
    has_paper = bool(exp["thresholds"].get("paper"))
    th = choose_thresholds(exp, recs, paper=has_paper)
    th_grid = choose_thresholds(exp, recs) if has_paper else None
    tables = build_tables(exp, recs, th, fails)
    tdir = out / "tables"
    tdir.mkdir(exist_ok=True)
    grid_text = ", ".join(f"{t:g}" for t in exp["thresholds"]["grid"])
    parts = [f"# RuDaS experiment {exp['experiment']}", "",
             f"{len(recs)} cells evaluated, {len(fails)} failed; thresholds "
             + ("as the paper's where it gives one, else " if has_paper else "")
             + f"by {exp['thresholds']['metric']} (grid {grid_text}): "
             + ", ".join(f"{s} {v['threshold']:g} ({v['how']})" for s, v in th.items()), ""]
    parts += _tables_text(tables, tdir, "")
    tables_grid = None
    if has_paper:
        tables_grid = build_tables(exp, recs, th_grid, fails)
        parts += ["## At thresholds grid-searched on these datasets", "",
                  f"Each system's threshold maximises the mean {exp['thresholds']['metric']} "
                  "over the datasets of this run (the paper searched over its own datasets): "
                  + ", ".join(f"{s} {v['threshold']:g} ({v['how']})"
                              for s, v in th_grid.items()), ""]
        parts += _tables_text(tables_grid, tdir, "-grid")
        (out / "thresholds-grid.json").write_text(dumps(th_grid), encoding="utf-8")
    (out / "thresholds.json").write_text(dumps(th), encoding="utf-8")
    (out / "report.md").write_text("\n".join(parts), encoding="utf-8")
    fig = None
    if plot and "table2" in tables:
        fig = out / "figure2.png"
        plot_figure2(tables["table2"], fig)
    return {"tables": {k: {"title": v["title"], "header": v["header"], "rows": v["rows"]}
                       for k, v in tables.items()},
            "tables_grid": None if tables_grid is None else {
                k: {"title": v["title"], "header": v["header"], "rows": v["rows"]}
                for k, v in tables_grid.items()},
            "thresholds": th, "thresholds_grid": th_grid, "report": str(out / "report.md"),
            "figure": str(fig) if fig else None, "text": "\n".join(parts),
            "failures": fails}


def _tables_text(tables: dict, tdir: Path, suffix: str) -> list[str]:
    """Write each table as ``tables/<name><suffix>.md``/``.csv`` (and its detail CSV); return
    the report's paragraphs, each table with the paper's numbers under it."""
    parts: list[str] = []
    for name, t in tables.items():
        md = _md(t["header"], t["rows"])
        text = f"**{t['title']}**\n\n{md}\n"
        csv_text = _csv(t["header"], t["rows"])
        if "detail" in t:
            d = t["detail"]
            text += f"\nAll metrics per system and group:\n\n{_md(d['header'], d['rows'])}\n"
            (tdir / f"{name}{suffix}-detail.csv").write_text(_csv(d["header"], d["rows"]),
                                                     encoding="utf-8")
        paper = _paper_md(name, t["header"])
        (tdir / f"{name}{suffix}.md").write_text(text, encoding="utf-8")
        (tdir / f"{name}{suffix}.csv").write_text(csv_text, encoding="utf-8")
        parts += [text, f"Paper:\n\n{paper}\n" if paper else ""]
    return parts


def plot_figure2(table2: dict, path: Path) -> None:
    """Figure 2: Table 2's metrics per system, one line per system over the metrics."""
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    labels = [lab for lab, _ in TABLE2_ROWS]
    systems = table2["header"][1:]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for j, s in enumerate(systems):
        ys = [table2["rows"][i][j + 1] for i in range(len(labels))]
        ax.plot(labels, [math.nan if y is None else y for y in ys], marker="o", label=s)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("mean over datasets")
    ax.set_title("Table 2 metrics per system")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.autofmt_xdate(rotation=30)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".part.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)


# --- the command ------------------------------------------------------------------------------

def run_experiment(spec: dict, out, *, workers: int = 1, overwrite: bool = False,
                   force_new: bool = False, progress: bool = False,
                   cell_timeout: float | None = None, allow_commands: bool = False):
    """Generate, sweep, report. Returns (report dict, run summary, failed cells).
    ``allow_commands``: run the spec's shell learners and learner Prolog files (refused
    otherwise, before anything is written)."""
    from ..runs.trust import commands_in, require_allowed  # noqa: PLC0415
    require_allowed(commands_in(spec["learners"], "systems"), allow_commands,
                    source=spec.get("source"))
    from ..runs import run_grid  # noqa: PLC0415
    out = check_output_path(out)
    marker = out / "experiment.json"
    if out.exists() and any(out.iterdir()) and not marker.is_file():
        raise NesyError("exists and is not a RuDaS experiment folder (no experiment.json)",
                        file=str(out))
    if overwrite and out.exists() and any(out.iterdir()) and unexpected_files(out) is None:
        raise NesyError(f"has no {MARKER} file listing its files (the experiment did not "
                        "finish); resume it without --overwrite, or remove it yourself",
                        file=str(out))
    if overwrite and out.exists():
        # only what nesybench wrote and its marker lists with the same hash (io.py's rule)
        remove_output_folder(out)
    items = dataset_items(spec)
    record = {"experiment": spec["experiment"], "seed": spec["seed"],
              "systems": list(spec["learners"]), "learners": spec["learners"], "thresholds": spec["thresholds"],
              "evaluation": spec["evaluation"], "timeout": spec["timeout"],
              "datasets": items}
    if marker.is_file():
        old = json_loads(marker.read_text(encoding="utf-8"))
        same = {it["name"]: it["params"] for it in old.get("datasets", [])}
        clash = [it["name"] for it in items
                 if it["name"] in same and same[it["name"]] != it["params"]]
        if clash or old.get("seed") != spec["seed"]:
            if not force_new:
                raise NesyError("holds an experiment with other datasets (seed or grid "
                                "parameters differ); --force-new replaces it, --overwrite "
                                "starts afresh", file=str(out))
            remove_output_folder(out / "datasets", flag="--force-new")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).unlink(missing_ok=True)          # written again when the run finishes
    generate_datasets(items, out / "datasets", workers=workers, progress=progress)
    marker.write_text(dumps(record), encoding="utf-8")
    gs = grid_spec(spec, items, out / "datasets")
    res = run_grid(gs, out / "study", executor="inline" if workers == 0 else "local",
                   workers=max(workers, 1), progress=progress, force_new=force_new,
                   cell_timeout=cell_timeout, allow_commands=allow_commands)
    report = write_report(out)
    write_marker(out)
    return report, res.summary, report.pop("failures"), len(items) * len(spec["learners"])
