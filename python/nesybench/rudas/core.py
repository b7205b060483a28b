"""Python entry points of RuDaS (all logic is in ``prolog/rudas/*.pl``).

* :func:`generate` writes one dataset folder (RuDaS layout + ``manifest.json`` +
  ``rule_graph.dot``) atomically;
* :func:`generate_suite` writes a RuDaS-v0-like suite (paper Table 1) in parallel;
* :func:`evaluate` compares a learned rule file with a dataset's rules (paper §5);
* :func:`chase` runs the forward chainer on rule/fact files.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import __version__
from ..errors import BudgetExceeded, NesyError
from ..io import (FORMAT_VERSION, atomic_output_dir, checksums, derive_seed, dumps,
                  progress_delay)
from ..logic import prolog

PL = "prolog/rudas/rudas.pl"

#: size class -> (min, max) number of training facts (paper §3)
SIZE_CLASSES = {"xs": (50, 100), "s": (101, 1000), "m": (1001, 10000), "l": (10001, 100000),
                "xl": (100001, 500000), "x2l": (500001, 2500000)}


@dataclass
class RudasParams:
    """Generator parameters (paper §3-4). ``None`` means the Prolog default
    (``rudas_generate:resolve_params/2``), e.g. ``n_predicates``/``n_constants`` derived from
    the category, depth and size class.

    p_h, p_v, p_c are the term probabilities of §4 (p_f = 1 - p_h - p_v - p_c); n_ow,
    noise_minus, noise_plus are fractions in [0, 1]; n_dg / n_skip the diversification
    integers; eval_ratio the size of S' ∪ C' relative to the training target.
    """

    seed: int = 0
    category: str = "chain"
    size: str = "xs"
    depth: int = 2
    n_facts: int | None = None
    min_components: int = 1
    max_components: int = 1
    n_predicates: int | None = None
    n_constants: int | None = None
    min_arity: int = 2
    max_arity: int = 2
    max_body: int = 2
    max_rules: int | None = None
    max_or: int = 2
    n_ow: float = 0.3
    noise_minus: float = 0.2
    noise_plus: float = 0.1
    n_dg: int = 2
    n_skip: int = 4
    p_h: float = 0.2
    p_v: float = 0.6
    p_c: float = 0.02
    p_recursion: float = 0.0
    common_target: bool = False
    ow_split: bool = True
    eval_ratio: float = 0.25
    aleph: bool = True

    #: bounds checked by :meth:`validate` (the generator's own consistency checks follow)
    LIMITS = {"depth": (1, 20), "n_facts": (1, 2_500_000), "min_components": (1, 100),
              "max_components": (1, 100), "n_predicates": (1, 100_000),
              "n_constants": (1, 10_000_000), "min_arity": (1, 10), "max_arity": (1, 10),
              "max_body": (1, 10), "max_rules": (1, 10_000), "max_or": (1, 20),
              "n_dg": (0, 1000), "n_skip": (0, 1000), "seed": (0, 2 ** 63 - 1)}
    FRACTIONS = ("n_ow", "noise_minus", "noise_plus", "p_h", "p_v", "p_c", "p_recursion",
                 "eval_ratio")

    def validate(self) -> "RudasParams":
        """The checking function for the generator parameters: types and ranges (one
        :class:`NesyError` naming the field); returns ``self``."""
        for name, (lo, hi) in self.LIMITS.items():
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise NesyError(f"{name} must be an integer in {lo}..{hi}, got {v!r}",
                                field=f"rudas parameters.{name}")
        for name in self.FRACTIONS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise NesyError(f"{name} must be a number in [0, 1], got {v!r}",
                                field=f"rudas parameters.{name}")
        if self.p_h + self.p_v + self.p_c > 1.0 + 1e-9:
            raise NesyError("p_h + p_v + p_c must be <= 1 (p_f = 1 - p_h - p_v - p_c)",
                            field="rudas parameters.p_h")
        if str(self.size).lower() not in SIZE_CLASSES:
            raise NesyError(f"size must be one of {', '.join(SIZE_CLASSES)}, got {self.size!r}",
                            field="rudas parameters.size")
        if str(self.category).lower() not in ("chain", "rdg", "drdg", "mixed"):
            raise NesyError(f"category must be chain, rdg, drdg or mixed, got {self.category!r}",
                            field="rudas parameters.category")
        return self

    def to_prolog(self) -> dict:
        out = {}
        for k, v in asdict(self).items():
            if v is None:
                continue
            if isinstance(v, bool):
                v = "true" if v else "false"
            elif isinstance(v, str):
                v = v.lower()
            out[k] = v
        return out


#: generator profiles (``--profile``): parameter values fixed by a published dataset family.
#: ``rudas-v0``: the RuDaS-v0 datasets on which the paper's Section 6 (Tables 2-5) measured
#: the rule learners: binary predicates, rules of at most two body atoms, no constants.
PROFILES = {"rudas-v0": {"p_c": 0.0, "min_arity": 2, "max_arity": 2, "max_body": 2}}


def apply_profile(params: dict, profile: str | None, explicit: set[str] = frozenset()) -> dict:
    """``params`` with the values of ``profile`` (a key of :data:`PROFILES`) filled in. A
    parameter in ``explicit`` (set by the user) that contradicts the profile is an error."""
    if profile is None:
        return dict(params)
    if profile not in PROFILES:
        raise NesyError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})",
                        field="profile")
    out = dict(params)
    for k, v in PROFILES[profile].items():
        if k in explicit and out.get(k) != v:
            raise NesyError(f"profile {profile} fixes {k} = {v}; {k} = {out.get(k)} contradicts "
                            "it (leave the option out)", field=k)
        out[k] = v
    return out


@dataclass
class GenerateResult:
    """Where a dataset went and what it holds (``manifest`` is ``manifest.json``)."""

    path: Path
    manifest: dict = field(default_factory=dict)


class PhaseBar:
    """A tqdm bar on stderr fed by the Prolog side's progress reports (``prolog/progress.pl``)
    while one long Prolog call runs: the description is the current phase, the bar is
    determinate when the phase has a total (e.g. training facts against the size target)
    and a counter with elapsed time otherwise (facts derived so far). A ticker thread
    redraws it every ``interval`` seconds so that the elapsed time moves between reports
    (janus releases the GIL while Prolog runs, so the thread gets to run). Nothing is drawn
    before :func:`nesybench.io.progress_delay` seconds (a quick call, or one that fails on
    bad input, leaves stderr to its one error line).

    Use as ``with PhaseBar("rudas generate", unit="fact") as bar: ...`` around the call; a
    disabled bar (``enabled=False``) installs nothing. Reports never change the results.
    """

    #: phases counted in something else than the bar's unit
    UNITS = {"R-score": "rule"}

    def __init__(self, title: str, *, unit: str = "fact", enabled: bool = True,
                 interval: float = 0.5, delay: float | None = None):
        self.title, self.unit, self.enabled, self.interval = title, unit, enabled, interval
        self.delay = progress_delay() if delay is None else delay
        self.phase: str | None = None
        self.phases: list[str] = []        # phases seen, in order (tests and debugging)
        self.shown = False
        self._bar = None
        self._stop = None
        self._lock = None

    def __enter__(self):
        if not self.enabled:
            return self
        import threading  # noqa: PLC0415
        import time  # noqa: PLC0415
        from tqdm import tqdm  # noqa: PLC0415
        # tqdm's own delay keeps __init__ and close() silent until we draw (self._show sets
        # it to 0); a huge one, as start_t + a tiny delay rounds to start_t
        self._bar = tqdm(total=None, desc=self.title, unit=self.unit, leave=False,
                         dynamic_ncols=True, delay=1e9)
        self._t0 = time.monotonic()
        self._clock = time.monotonic
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._cm = prolog.progress(self._event)
        self._cm.__enter__()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()
        return self

    def _show(self) -> bool:
        """Draw from now on once the delay is over; True when the bar is shown."""
        if not self.shown and self._clock() - self._t0 >= self.delay:
            self.shown = True
            self._bar.delay = 0
            self._bar.refresh()
        return self.shown

    def _tick(self):
        while not self._stop.wait(self.interval):
            with self._lock:
                if self._bar is not None and not self._show():
                    continue
                if self._bar is not None:
                    self._bar.refresh()

    def _event(self, phase: str, done: int, total: int | None) -> None:
        with self._lock:
            bar = self._bar
            if bar is None:
                return
            shown = self._show()
            if phase != self.phase:
                self.phase = phase
                self.phases.append(phase)
                bar.unit = self.UNITS.get(phase, self.unit)
                bar.set_description_str(f"{self.title}: {phase}", refresh=False)
                bar.total = total              # reset(total=None) would keep the old total
                if shown:
                    bar.reset(total=total)
                else:
                    bar.n = bar.last_print_n = 0
            elif total != bar.total:
                bar.total = total
            n = min(done, total) if total is not None else done
            if shown:
                bar.update(n - bar.n)
            else:
                bar.n = n

    def __exit__(self, *exc):
        if self._bar is None:
            return False
        self._stop.set()
        self._thread.join()
        self._cm.__exit__(*exc)
        with self._lock:
            self._bar.close()
            self._bar = None
        return False


def _generate_into(params: RudasParams, tmp: Path, progress: bool = False) -> dict:
    prolog.use(PL)
    with PhaseBar(f"rudas generate {params.size}", unit="fact", enabled=progress):
        res = prolog.once("rudas_generate:generate_safe(P, Dir, S, E)", P=params.to_prolog(),
                          Dir=str(tmp))
    if res is None:
        raise NesyError("the RuDaS generator failed unexpectedly")
    if res["E"]:
        raise NesyError(str(res["E"]), field="rudas parameters")
    summary = _plain(res["S"])
    manifest = {
        "format": "rudas", "format_version": FORMAT_VERSION, "generator": f"nesybench {__version__}",
        "params": summary["params"], "seed": params.seed,
        "counts": summary["counts"], "targets": summary["targets"],
        "uncovered_rules": summary["uncovered"],
        "predicates": summary["predicates"], "components": summary["components"],
        "rule_graph": {"nodes": summary["nodes"],
                       "edges": [{"child": n["id"], "parent": n["parent"]}
                                 for n in summary["nodes"] if n["parent"] != "none"]
                       + recursive_edges(summary["nodes"])},
    }
    (tmp / "rule_graph.dot").write_text(rule_graph_dot(summary["nodes"]), encoding="utf-8")
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg", "-o", str(tmp / "rule_graph.svg"),
                        str(tmp / "rule_graph.dot")], check=False, capture_output=True)
    manifest["files"] = checksums(tmp)
    (tmp / "manifest.json").write_text(dumps(manifest), encoding="utf-8")
    return manifest


def generate(params: RudasParams, out: str | os.PathLike, *, overwrite: bool = False,
             progress: bool = False) -> GenerateResult:
    """Generate one dataset into ``out`` (appears whole or not at all). ``progress``: a
    :class:`PhaseBar` on stderr (phases: rules, training facts against the size target,
    evaluation facts, writing files); the files are the same with or without it."""
    params.validate()
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        manifest = _generate_into(params, tmp, progress)
    return GenerateResult(Path(out), manifest)


def _plain(x):
    """janus values -> JSON-able Python (Prolog ``inf`` stays the string ``"inf"``)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (int, float, bool)) or x is None:
        return x
    return str(x)


def recursive_edges(nodes: list[dict]) -> list[dict]:
    """Edges of recursion (``--p-recursion``): a rule whose body has an atom of its own head
    predicate is a parent of every rule with that head (itself included; several of them form
    an OR node), marked ``"recursive": true``."""
    out = []
    for n in nodes:
        if n["head"] in n["body"]:
            out += [{"child": m["id"], "parent": n["id"], "recursive": True}
                    for m in nodes if m["head"] == n["head"]]
    return out


def rule_graph_dot(nodes: list[dict]) -> str:
    """Graphviz DOT of the rule graph: one box per rule, an edge child -> parent, an OR node
    (a small circle) where several rules share the head predicate of one body atom; recursion
    (a body atom of the rule's own head predicate) as dashed "rec" edges from every rule with
    that head (a self-loop, or through an OR node)."""
    lines = ["digraph rudas {", "  rankdir=BT;", '  node [shape=box, fontname="monospace"];']
    comps = sorted({n["component"] for n in nodes})
    for c in comps:
        lines.append(f"  subgraph cluster_{c} {{")
        lines.append(f'    label="component {c}";')
        for n in nodes:
            if n["component"] == c:
                label = n["rule"].replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'    {n["id"]} [label="{n["id"]}: {label}"];')
        lines.append("  }")
    groups: dict[tuple, list[str]] = {}
    for n in nodes:
        if n["parent"] != "none":
            groups.setdefault((n["parent"], n["head"]), []).append(n["id"])
    for (parent, head), kids in sorted(groups.items()):
        _or_edges(lines, f'or_{parent}_{head.replace("/", "_")}', parent, kids, "", "")
    rec: dict[str, list[str]] = {}
    for e in recursive_edges(nodes):
        rec.setdefault(e["parent"], []).append(e["child"])
    for parent, kids in sorted(rec.items()):
        _or_edges(lines, f"or_rec_{parent}", parent, kids, ' [style=dashed, label="rec"]',
                  " [style=dashed]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _or_edges(lines: list[str], orid: str, parent: str, kids: list[str], to_parent: str,
              to_or: str) -> None:
    """Edges from ``kids`` to ``parent``: direct for one kid, through an OR node for several
    (``to_parent`` / ``to_or``: DOT attributes of the edges into the parent / the OR node)."""
    if len(kids) > 1:
        lines.append(f'  {orid} [shape=circle, label="OR", fontsize=8];')
        lines.append(f"  {orid} -> {parent}{to_parent};")
        lines.extend(f"  {k} -> {orid}{to_or};" for k in kids)
    else:
        lines.append(f"  {kids[0]} -> {parent}{to_parent};")


# --- suite -------------------------------------------------------------------------------

#: paper Table 1: (category, size, depth) -> number of datasets
TABLE1 = {("chain", "xs", 2): 10, ("chain", "xs", 3): 10, ("chain", "s", 2): 10,
          ("chain", "s", 3): 10,
          ("rdg", "xs", 2): 22, ("rdg", "xs", 3): 12, ("rdg", "s", 2): 22, ("rdg", "s", 3): 22,
          ("drdg", "xs", 2): 22, ("drdg", "xs", 3): 12, ("drdg", "s", 2): 22,
          ("drdg", "s", 3): 22}
_OW = (0.2, 0.3, 0.4)
_NM = (0.15, 0.2, 0.3)
_NP = (0.1, 0.2, 0.3)


def suite_grid(seed: int = 0, per_cell: int | None = None,
               categories=("chain", "rdg", "drdg"), sizes=("xs", "s"), depths=(2, 3),
               profile: str | None = "rudas-v0") -> list[tuple[str, RudasParams]]:
    """The RuDaS-v0 grid (Table 1): CHAIN with n_OW=0.3, n_Noise-=0.2, n_Noise+=0.1; RDG and
    DRDG cycling through n_OW ∈ {.2,.3,.4} × n_Noise- ∈ {.15,.2,.3} × n_Noise+ ∈ {.1,.2,.3}.
    ``per_cell`` replaces Table 1's counts; ``profile`` (default ``rudas-v0``: no constants,
    arity 2, at most two body atoms; ``None``: the generator defaults) fixes the rule
    parameters. Returns (name, params) pairs."""
    fixed = apply_profile({}, profile)
    items = []
    for cat in categories:
        for size in sizes:
            for depth in depths:
                n = per_cell if per_cell is not None else TABLE1.get((cat, size, depth), 10)
                for i in range(n):
                    if cat == "chain":
                        ow, nm, np_ = 0.3, 0.2, 0.1
                    else:
                        ow, nm, np_ = _OW[i % 3], _NM[(i // 3) % 3], _NP[(i // 9) % 3]
                    name = f"{cat.upper()}-{size.upper()}-{depth}-{i:03d}"
                    items.append((name, RudasParams(
                        seed=derive_seed(seed, "rudas-suite", name) % (2**31), category=cat,
                        size=size, depth=depth, n_ow=ow, noise_minus=nm, noise_plus=np_,
                        **fixed)))
    return items


def _suite_item(args):
    name, params, root = args
    manifest = _generate_into(params, _mkdir(Path(root) / name))
    return name, manifest["counts"], len(manifest["rule_graph"]["nodes"])


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=False)
    return p


def generate_suite(out, *, seed: int = 0, per_cell: int | None = None, workers: int = 1,
                   overwrite: bool = False, progress: bool = False, **grid) -> dict:
    """Generate the suite into ``out`` (one sub-folder per dataset, ``suite.json`` index);
    ``grid``: further arguments of :func:`suite_grid` (``profile``, ``categories`` ...)."""
    from ..parallel import map_ordered  # noqa: PLC0415
    items = suite_grid(seed, per_cell, **grid)
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        jobs = [(name, p, str(tmp)) for name, p in items]
        it = map_ordered(_suite_item, jobs, workers=workers)
        if progress:
            from tqdm import tqdm  # noqa: PLC0415
            it = tqdm(it, total=len(jobs), desc="rudas suite", unit="dataset")
        rows = [{"name": n, "counts": c, "rules": r} for n, c, r in it]
        index = {"format": "rudas-suite", "format_version": FORMAT_VERSION, "seed": seed,
                 "datasets": rows}
        (tmp / "suite.json").write_text(dumps(index), encoding="utf-8")
    return index


# --- chase and evaluation ---------------------------------------------------------------

def chase(rules_file, facts_file, *, max_derived: int | None = None,
          time_limit: float | None = None, plan: str = "auto",
          backward_min_work: int | None = None) -> tuple[list[str], str]:
    """Forward-chain ``rules_file`` over ``facts_file``: (sorted derived facts as strings,
    status ``complete`` | ``budget(facts)`` | ``budget(time)``). ``plan`` picks how rules
    fire each round: ``auto`` (cost-based), ``forward`` (semi-naive joins from the new
    facts) or ``backward`` (check every unknown candidate head); the result is the same.
    ``backward_min_work``: with ``auto``, the estimated forward work of a rule above which
    firing it backward is considered (default 50,000; 0 mixes both ways on small inputs)."""
    if plan not in ("auto", "forward", "backward"):
        raise NesyError(f"plan must be auto, forward or backward, not {plan!r}")
    check_budget(max_derived, time_limit)
    if backward_min_work is not None and plan != "auto":
        raise NesyError("backward_min_work applies to plan='auto' only")
    prolog.use(PL)
    srcs = []
    for f in (rules_file, facts_file):
        if not Path(f).exists():
            raise NesyError("file not found", file=str(f))
        srcs.append(_read_source(f))  # a regular file, bounded, read by the door
    # both files go through the datalog check of prolog/rudas/datalog.pl (the one that
    # `evaluate` uses): a function term in a head would make the chase run without end
    res = prolog.once("catch((rudas:chase_strings(RF, FF, MD, TL, P, W, D, St), EF = none, EL = 0, EM = \"\"), "
                      "rudas_file_error(EF, EL, EM), (D = [], St = none))", RF=srcs[0],
                      FF=srcs[1], P=plan,
                      W=int(backward_min_work) if backward_min_work is not None else "none",
                      MD=max_derived if max_derived is not None else "none",
                      TL=float(time_limit) if time_limit is not None else "none")
    if res["EF"] != "none":
        raise NesyError(str(res["EM"]), file=str(res["EF"]), line=int(res["EL"]) or None)
    return list(res["D"]), res["St"]


def _source(label: str, text: str) -> dict:
    """A file's text as a source of ``prolog/rudas/datalog.pl`` (``_{label:, text:}``)."""
    return {"label": label, "text": text}


def _read_source(path) -> dict:
    """The file ``path`` a user names, read through the door (a regular file, no FIFO or
    device, bounded; :func:`nesybench.folder.read_input_text`), as a Prolog source."""
    from ..folder import read_input_text  # noqa: PLC0415

    return _source(str(path), read_input_text(path))


def check_budget(max_derived, time_limit) -> None:
    """The checking function for the chase budgets (``--max-derived``, ``--time-limit``)."""
    if max_derived is not None and (isinstance(max_derived, bool) or not isinstance(max_derived, int)
                                    or max_derived < 1):
        raise NesyError(f"--max-derived must be a positive integer, got {max_derived!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(
            time_limit, (int, float)) or not 0 < time_limit < 1e9 or time_limit != time_limit):
        raise NesyError(f"--time-limit must be a positive number of seconds, got {time_limit!r}")


def evaluate(dataset, learned, *, threshold: float = 0.0, aux: list[str] = (),
             max_derived: int = 5_000_000, time_limit: float = 600.0,
             strict_budget: bool = False, progress: bool = False) -> dict:
    """Metrics of §5 for the learned rules in ``learned`` on ``dataset`` (S' = eval-support).

    Returns a dict: tp, fp, fn, tn (standard meaning: FP = derived but not in I(R,S')),
    herbrand_distance, herbrand_accuracy, herbrand_base (u), h_score, accuracy, precision,
    recall, f1, r_score, r_score_partial, n_original, n_learned, rules_learned, rules_used,
    auxiliary, partial, budget.

    Predicates that the learned file defines but the dataset does not (learned auxiliaries,
    e.g. an invented ``inv_p2/2``) are accepted without ``aux`` and their facts left out of
    the metrics (paper §6); ``auxiliary`` lists them as ``"name/arity"``. ``aux`` names further
    predicates to ignore. ``time_limit`` bounds the chase and then the R-score (which gets
    what is left, at least 1 s): a R-score cut short is the best bound found (a lower bound
    of the true R-score) and ``r_score_partial`` is True (``strict_budget`` then raises).
    ``progress``: a :class:`PhaseBar` on stderr (chasing original rules, chasing learned
    rules: facts derived so far; R-score: original rules scored of all).
    """
    check_budget(max_derived, time_limit)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or \
            not 0.0 <= threshold <= 1.0:
        raise NesyError(f"--threshold is a confidence in [0, 1], got {threshold!r}")
    from ..folder import DataFolder  # noqa: PLC0415

    ds = Path(dataset)
    if not ds.is_dir():
        raise NesyError("not a RuDaS dataset folder (not a folder)", file=str(ds))
    # every file is read here, through the door (inside the folder, no link out, regular,
    # bounded), and handed to Prolog as text: Prolog opens no file of the data set
    folder = DataFolder(ds)
    for name in ("rules.txt", "eval-support.txt"):
        if not folder.exists(name):
            raise NesyError(f"not a RuDaS dataset folder (no {name})", file=str(ds))
    sources = {key: _source(folder.label(name), folder.read_text(name))
               for key, name in (("rules", "rules.txt"), ("support", "eval-support.txt"),
                                 ("train", "train.txt"), ("relations", "relations.txt"))
               if folder.exists(name)}
    lp = Path(learned)
    if not lp.exists():
        raise NesyError("file not found", file=str(lp))
    learned_src = _read_source(lp)
    prolog.use(PL)
    with PhaseBar("rudas evaluate", unit="fact", enabled=progress):
        res = prolog.once("rudas_metrics:evaluate_safe(D, F, O, R, E)", D=sources,
                          F=learned_src,
                          O={"threshold": float(threshold), "aux": list(aux),
                             "max_derived": int(max_derived), "time_limit": float(time_limit)})
    if res is None:         # the evaluator failed without naming a clause: still one error
        raise NesyError("the learned rules cannot be evaluated (every rule is "
                        "Head :- Body over predicates of arity >= 1)", file=str(lp))
    err = res["E"]
    if err != "none":
        err = _plain(err)
        raise NesyError(str(err["message"]), file=str(err.get("file") or lp),
                        line=int(err["line"]) or None)
    out = _plain(res["R"])
    for k in ("herbrand_accuracy", "h_score", "accuracy", "precision", "recall", "f1", "r_score"):
        out[k] = float(out[k])
    out["partial"] = out["partial"] in (True, "true")
    out["r_score_partial"] = out["r_score_partial"] in (True, "true")
    out["auxiliary"] = [str(a) for a in out.get("auxiliary", [])]
    if out["partial"] and strict_budget:
        raise BudgetExceeded(f"forward chaining of the learned rules stopped: {out['budget']}",
                             file=str(lp))
    if out["r_score_partial"] and strict_budget:
        raise BudgetExceeded(f"the R-score ran out of time (time_limit {time_limit} s)",
                             file=str(lp))
    return out


def rule_distance(rule1: str, rule2: str, *, method: str = "fast") -> float:
    """d_R (§5.3) of two rules given as Prolog clause text (``"p(X,Y) :- q(X,Y)"``).

    ``method="fast"``: branch and bound over variable renamings, the best body pairing of each
    (partial) renaming solved as an assignment problem (Hungarian algorithm) — milliseconds for
    5-atom bodies, well under a second for 9. ``method="brute"``: every renaming x every
    permutation of the padded body (factorial; the oracle the tests compare against)."""
    if method not in ("fast", "brute"):
        raise NesyError(f"unknown method {method!r} (expected fast or brute)", field="method")
    prolog.use(PL)
    res = prolog.once("rudas:rule_distance_text(M, A, B, D)", M=method, A=rule1, B=rule2)
    return float(res["D"])


def r_score(original: list[str], learned: list[str]) -> float:
    """R-score (§5.3) of two programs given as lists of clause strings."""
    prolog.use(PL)
    res = prolog.once("rudas:r_score_text(A, B, D)", A=list(original), B=list(learned))
    return float(res["D"])
