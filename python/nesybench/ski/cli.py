"""``nesybench ski``: knowledge-injection robustness — run the paper's grid, Table 1, Figure 1."""
from __future__ import annotations

import sys

import click

from ..clitypes import quiet_option

from ..errors import NesyError, yaml_error
from ..io import dumps
from ..paths import resolve_asset

CTX = {"help_option_names": ["-h", "--help"]}


def _fail(exc: NesyError):
    click.echo(f"nesybench: error: {exc}", err=True)
    sys.exit(2)


def _split(values, known, what):
    out = []
    for v in values:
        out += [x.strip() for x in v.split(",") if x.strip()]
    for x in out:
        if x not in known:
            raise NesyError(f"unknown {what} {x!r} (known: {', '.join(known)})", field=what)
    return out or list(known)


@click.group(context_settings=CTX)
def group():
    """Knowledge-injection robustness (KBANN, KINS, KILL vs an MLP under data degradation)."""


@group.command(context_settings=CTX)
@click.option("--datasets", multiple=True, help="bcw, splice, census (comma-separated; default all)")
@click.option("--injectors", multiple=True,
              help="uneducated, kins, kill, kbann (default all; R needs uneducated)")
@click.option("--degradations", multiple=True, help="drop, noise, flip (default all)")
@click.option("--reps", default=30, show_default=True, type=click.IntRange(1),
              help="repetitions per cell (trained as one batched ensemble)")
@click.option("--epochs", default=100, show_default=True, type=click.IntRange(1))
@click.option("--level-stride", default=1, show_default=True, type=click.IntRange(1),
              help="use every k-th level of each degradation (level 0 always)")
@click.option("--levels-per-cell", default=4, show_default=True, type=click.IntRange(1),
              help="consecutive levels of a degradation trained as one ensemble (one cell): "
                   "REPS x K members per step run faster than REPS; 1 = a cell per level")
@click.option("--group-levels", is_flag=True,
              help="all levels of a (data set, degradation, predictor) in one cell")
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="study folder")
@click.option("--executor", type=click.Choice(["local", "ray", "inline"]), default="local",
              show_default=True)
@click.option("--workers", "-j", type=int, default=None, help="worker processes (default: cores)")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--data-path", "data_paths", multiple=True, metavar="DATASET=PATH",
              help="read a data set from UCI file(s) instead of the cache")
@click.option("--kb", "kbs", multiple=True, metavar="DATASET=FILE",
              help="another rule file: a path, or a shipped one's name (bcw, splice, census)")
@click.option("--injector-option", "inj_opts", multiple=True, metavar="INJECTOR.KEY=VALUE",
              help="an injector option, e.g. kbann.mofn=psyki or kill.weight=0.5 (repeatable)")
@click.option("--engine", type=click.Choice(["native", "torch"]), default="native",
              show_default=True,
              help="trainer: the C kernel, or PyTorch autograd (slower; the reference)")
@click.option("--profile", type=click.Choice(["nesybench", "paper", "psyki"]),
              default="nesybench", show_default=True,
              help="reading of the paper: nesybench (stratified drop, noise in feature SDs, "
                   "fixed epochs), paper (Bernoulli drop, raw-scale noise, early stopping), "
                   "psyki (PSyKI's injector settings); see the SKI guide")
@click.option("--force-new", is_flag=True,
              help="replace a study in OUT that was run with other settings")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars")
def run(datasets, injectors, degradations, reps, epochs, level_stride, levels_per_cell,
        group_levels, out, executor, workers, seed, data_paths, kbs, inj_opts, engine,
        profile, force_new, as_json, quiet):
    """Run the grid (data sets × degradations × predictors × levels, REPS each) into OUT."""
    from ..runs import GridSpec, run_grid  # noqa: PLC0415
    from . import cells, degrade, native  # noqa: PLC0415
    from .data import DATASETS  # noqa: PLC0415
    from .injectors import INJECTORS  # noqa: PLC0415
    try:
        dss = _split(datasets, DATASETS, "dataset")
        injs = _split(injectors, list(INJECTORS), "injector")
        degs = _split(degradations, list(degrade.DEGRADATIONS), "degradation")
        paths = _pairs(data_paths, dss, "--data-path")
        kb_files = {ds: str(resolve_asset(f, "ski-rules"))   # a file, or bcw, splice ...
                    for ds, f in _pairs(kbs, dss, "--kb").items()}
        options = _injector_options(inj_opts, injs)
        # everything that can be wrong with data or rules fails here, before the study and
        # before the kernel is compiled (a minute on a first run): data first
        for ds in dss:
            d = cells.dataset(ds, paths.get(ds))
            if any(i != "uneducated" for i in injs):
                cells.knowledge(d, kb_files.get(ds))
        if engine == "native" and not native.available():
            click.echo("nesybench: warning: no C compiler for the native trainer; using "
                       "--engine torch (slower, same model)", err=True)
            engine = "torch"
        if engine == "native" and not native.library_path().is_file():
            if not (quiet or as_json):
                click.echo(f"ski run: compiling the native SKI trainer into "
                           f"{native.kernel_dir()} (once per machine; about a minute)",
                           err=True)
            native.build()
        summaries = []
        for ds in dss:
            params = {"dataset": ds, "reps": reps, "epochs": epochs}
            if profile != "nesybench":          # the default keeps earlier studies' specs
                params["profile"] = profile
            if engine != "native":
                params["engine"] = engine
            if ds in paths:
                params["data_path"] = paths[ds]
            if ds in kb_files:
                params["kb"] = kb_files[ds]
            if options:
                params["options"] = options
            if group_levels:
                params["level_stride"] = level_stride
                axes = {"degradation": degs, "injector": injs}
            else:
                points = []
                for g in degs:
                    lvs = degrade.LEVELS[g][::level_stride]
                    points += [[g, *lvs[i:i + levels_per_cell]]
                               for i in range(0, len(lvs), levels_per_cell)]
                axes = {"point": points, "injector": injs}
            spec = GridSpec(study="ski", function="ski.cell", params=params, axes=axes,
                            repetitions=1, seed=seed,
                            description=f"SKI robustness on {ds} ({profile} profile)")
            res = run_grid(spec, f"{out}/{ds}", executor=executor, workers=workers,
                           progress=not (quiet or as_json), force_new=force_new)
            summaries.append({"dataset": ds, "study": f"{out}/{ds}",
                              **{k: v for k, v in vars(res.summary).items()
                                 if isinstance(v, (int, float, str))}})
    except NesyError as exc:
        _fail(exc)
    if as_json:
        click.echo(dumps({"studies": summaries}))
    else:
        for s in summaries:
            click.echo(f"{s['study']}: " + ", ".join(f"{k} {v}" for k, v in s.items()
                                                   if k not in ("study", "dataset")))
        click.echo(f"next: nesybench ski table {out}; nesybench ski plot {out}")
    failed = sum(int(s.get("failed", 0)) for s in summaries)
    if failed:          # a study with failed cells is not a result: say so and exit 1
        total = sum(int(s.get("total", 0)) for s in summaries)
        click.echo(f"{failed} of {total} cells failed; see `nesybench runs status "
                   f"{summaries[0]['study']} --failed`", err=True)
        sys.exit(1)


def _injector_options(items, injs) -> dict:
    """``INJECTOR.KEY=VALUE`` strings → {injector: {key: value}}, each checked by the
    injector's own ``configure`` (unknown injector or key: one error, nothing written)."""
    import yaml  # noqa: PLC0415

    from ..yamlsafe import safe_load  # noqa: PLC0415

    from .injectors import INJECTORS  # noqa: PLC0415
    out: dict = {}
    for it in items:
        key, sep, raw = it.partition("=")
        inj, dot, name = key.partition(".")
        if not sep or not dot or not name:
            raise NesyError(f"--injector-option expects INJECTOR.KEY=VALUE, not {it!r}",
                            field="--injector-option")
        if inj not in injs:
            raise NesyError(f"--injector-option {it!r}: {inj!r} is not one of the injectors "
                            f"run ({', '.join(injs)})", field="--injector-option")
        try:
            value = safe_load(raw) if raw.strip() else raw
        except (yaml.YAMLError, RecursionError) as exc:
            raise yaml_error(exc, field=f"--injector-option {key}") from None
        INJECTORS[inj](2, 2, [2], None).configure(**{name: value})
        out.setdefault(inj, {})[name] = value
    return out


def _pairs(items, dss, opt):
    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        if not sep or k not in dss:
            raise NesyError(f"{opt} expects DATASET=PATH with DATASET in {', '.join(dss)}, "
                            f"not {it!r}", field=opt)
        out[k] = v
    return out


def _studies(study):
    from pathlib import Path  # noqa: PLC0415

    p = Path(study)
    if (p / "study.sqlite").exists() or (p / "spec.yaml").exists():
        return [p]
    subs = sorted(q for q in p.iterdir() if q.is_dir()) if p.is_dir() else []
    subs = [q for q in subs if (q / "spec.yaml").exists()]
    if not subs:
        raise NesyError("not a ski study folder (run `nesybench ski run --out ...`)",
                        file=str(study))
    return subs


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="print the rows as JSON")
@click.option("--bootstrap", type=click.IntRange(0), default=0, show_default=True,
              help="add R's 95% interval over this many paired resamples of the repetitions")
@quiet_option
def table(study, as_json, bootstrap, quiet):
    """Table 1: robustness gain R = ρ(educated)/ρ(uneducated) with Mann–Whitney p-values."""
    from .report import table1  # noqa: PLC0415
    try:
        rows = [r for s in _studies(study) for r in table1(s, bootstrap=bootstrap)]
    except NesyError as exc:
        _fail(exc)
    if as_json:
        click.echo(dumps({"rows": rows}))
        return
    profiles = sorted({r.get("profile", "nesybench") for r in rows})
    click.echo(f"profile: {', '.join(profiles)}")
    click.echo("R = rho(educated)/rho(uneducated); p = Mann-Whitney U vs uneducated over all "
               "repetitions, p_lev = over the per-level means; [paper's R]")
    nan = float("nan")
    head = f"{'dataset':8} {'degradation':11} {'injector':8} {'R':>8} {'p':>9} {'p_lev':>9}" \
           f" {'paper':>8} {'rho':>10} {'rho_unedu':>10} {'acc':>6} {'acc_un':>6} levels reps"
    click.echo(head)
    for r in rows:
        paper = "" if r.get("paper_R") is None else f"{r['paper_R']:.4f}"
        click.echo(f"{r['dataset']:8} {r['degradation']:11} {r['injector']:8} "
                   f"{r.get('R', nan):8.4f} {r.get('p', nan):9.2e} {r.get('p_levels', nan):9.2e}"
                   f" {paper:>8} {r['rho']:10.4g} {r.get('rho_uneducated', nan):10.4g} "
                   f"{r.get('acc_mean', nan):6.3f} {r.get('acc_mean_uneducated', nan):6.3f} "
                   f"{r['levels']:6d} {r['reps']:4d}")
    signs = [r for r in rows if "same_sign" in r]
    if signs:
        agree = sum(r["same_sign"] for r in signs)
        click.echo(f"{agree} of {len(signs)} cells on the same side of R = 1 as the paper")
    if bootstrap:
        click.echo("")
        click.echo(f"R's 95% interval over {bootstrap} paired resamples of the repetitions")
        for r in rows:
            if "R_lo" in r:
                side = "contains 1" if r["R_lo"] <= 1 <= r["R_hi"] else \
                    ("above 1" if r["R_lo"] > 1 else "below 1")
                click.echo(f"{r['dataset']:8} {r['degradation']:11} {r['injector']:8} "
                           f"[{r['R_lo']:.4f}, {r['R_hi']:.4f}]  {side}")
    click.echo("")
    click.echo("beside rho (ours, not the paper's): R_auc = ratio of the areas under the mean "
               "accuracy curves; R_low/mid/high = R over each third of the levels")
    click.echo(f"{'dataset':8} {'degradation':11} {'injector':8} {'R_auc':>8} {'R_low':>8} "
               f"{'R_mid':>8} {'R_high':>8}")
    for r in rows:
        click.echo(f"{r['dataset']:8} {r['degradation']:11} {r['injector']:8} "
                   + " ".join(f"{r.get(k, nan):8.4f}"
                              for k in ("R_auc", "R_low", "R_mid", "R_high")))


@group.command(context_settings=CTX)
@click.argument("study", type=click.Path(exists=True, file_okay=False))
@click.option("--out", "-o", type=click.Path(dir_okay=False), default=None,
              help="image file (default STUDY/figure1.png, refreshed on every run); with "
                   "several studies, OUT's stem + '-<study>' + its suffix per study")
@click.option("--overwrite", is_flag=True, help="replace existing --out files")
@quiet_option
def plot(study, out, overwrite, quiet):
    """Figure 1: accuracy vs degradation level (mean ± 95% CI), one panel per data set ×
    degradation."""
    from pathlib import Path  # noqa: PLC0415

    from ..io import atomic_output_file, check_output_file  # noqa: PLC0415
    from .plots import figure1  # noqa: PLC0415
    try:
        subs = _studies(study)
        targets = []
        for s in subs:
            target = Path(out) if (out and len(subs) == 1) else \
                (Path(out).with_name(f"{Path(out).stem}-{s.name}{Path(out).suffix}") if out
                 else s / "figure1.png")
            targets.append(target)
            if out:         # every named file is checked before any is drawn
                check_output_file(target, overwrite=overwrite)
        outs = []
        for s, target in zip(subs, targets):
            with atomic_output_file(target, overwrite=overwrite or not out) as tmp:
                figure1(s, tmp)
            outs.append(target)
    except NesyError as exc:
        _fail(exc)
    for o in outs:
        click.echo(f"wrote {o}")
