"""``nesybench irt ...``: population, fit, robustness, taxonomy, study, families."""
from __future__ import annotations

from pathlib import Path

import click

from ..clitypes import ShippedFile, quiet_option
from ..errors import NesyError
from ..io import dumps
from ..paths import asset_label

DEFAULT_DATASETS = "letter,optdigits,phoneme"


def _csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def _floats(value: str) -> list[float]:
    try:
        return [float(v) for v in _csv_list(value)]
    except ValueError:
        raise NesyError(f"expected comma-separated numbers, got {value!r}",
                        field="deltas") from None


def _executor_opts(f):
    f = click.option("--quiet", "-q", is_flag=True, help="no progress bars")(f)
    f = click.option("--workers", "-j", type=int, default=None,
                     help="worker processes (default: the machine's cores)")(f)
    f = click.option("--executor", type=click.Choice(["local", "ray", "inline"]),
                     default="local", show_default=True, help="sweep-runner executor")(f)
    return f


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def group():
    """IRT robustness: instance difficulty from a population of classifiers, noise per
    difficulty bin, system characteristic curves and a robustness taxonomy."""


def _population(out, datasets, models, families, folds, data_seed, target, nominal, executor,
                workers, progress, force_new=False, kind="nesybench"):
    from .study import run_population  # noqa: PLC0415

    return run_population(out, _csv_list(datasets), n_models=models,
                          families=_csv_list(families) or None, folds=folds,
                          data_seed=data_seed, target=target, nominal=_csv_list(nominal),
                          executor=executor, workers=workers, progress=progress,
                          force_new=force_new, kind=kind)


_pop_options = [
    click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
                 help="study folder (created or extended)"),
    click.option("--datasets", default=DEFAULT_DATASETS, show_default=True,
                 help="comma-separated data specs: built-in name or CSV/ARFF path, "
                      "optionally NAME@ROWS for a stratified subsample"),
    click.option("--models", "models", type=int, default=300, show_default=True,
                 help="population size (variants round-robin over the families)"),
    click.option("--families", default="", help="comma-separated family ids (default: all; "
                                               "see `nesybench irt families`)"),
    click.option("--folds", type=int, default=5, show_default=True),
    click.option("--seed", "--data-seed", "data_seed", type=int, default=0, show_default=True,
                 help="seed of the folds and subsamples"),
    click.option("--target", default=None, help="target column of CSV/ARFF files (name or "
                                                "0-based index; default: the last column)"),
    click.option("--nominal", default="", help="comma-separated nominal columns of CSV files"),
    click.option("--force-new", is_flag=True, help="replace a population sweep made with other "
                                                   "folds, seed or family definitions"),
    click.option("--population", "kind", type=click.Choice(["nesybench", "paper"]),
                 default="nesybench", show_default=True,
                 help="respondents: hyper-parameter variants on the folds (the tested models "
                      "among them), or the paper's: separate runs on bootstrap resamples, the "
                      "tested models held out (up to 5,000)"),
]


def _apply(options):
    def deco(f):
        for o in reversed(options):
            f = o(f)
        return f
    return deco


@group.command("population")
@_apply(_pop_options)
@_executor_opts
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def population_cmd(out, datasets, models, families, folds, data_seed, target, nominal,
                   force_new, kind, executor, workers, quiet, as_json):
    """Train the population under stratified k-fold CV through the sweep runner (cached:
    finished cells are never re-run) and write each data set's response matrix U."""
    res = _population(out, datasets, models, families, folds, data_seed, target, nominal,
                      executor, workers, not (as_json or quiet), force_new, kind)
    if as_json:
        click.echo(dumps(res.__dict__), nl=False)
        return
    click.echo(f"{out}: {res.models} models × {len(res.datasets)} data sets, {res.ran} cells "
               f"run now ({res.failed} failed), {res.seconds:.1f} s")
    for d, a in res.accuracy.items():
        click.echo(f"  {d:<22} accuracy mean {a['mean']:.3f}  min {a['min']:.3f}  "
                   f"max {a['max']:.3f}  ({a['models']} models in U)")


@group.command("fit")
@click.option("--study", type=click.Path(file_okay=False), help="study folder (after "
                                                                  "`irt population`)")
@click.option("--responses", type=ShippedFile("irt-responses"),
              help="or a response matrix of your own: .npy or .csv of 0/1, respondents × "
                   "items (NaN, NA or an empty field: not administered); "
                   "`example_responses` is a shipped 30 × 40 one")
@click.option("--model", "irt_model", type=click.Choice(["1pl", "2pl"]), default="1pl",
              show_default=True, help="1PL (Rasch) as the paper; 2PL as its reference code")
@click.option("--bins", type=click.IntRange(1), default=5, show_default=True,
              help="equal-frequency difficulty bins")
@click.option("--outlier", type=click.FloatRange(0, min_open=True), default=6.0,
              show_default=True, help="the difficulty limit of the outlier rule")
@click.option("--outlier-rule", type=click.Choice(["significant", "paper"]), default=None,
              help="significant: drop an item only when its whole 95 % interval b ± 1.96·se "
                   "is beyond --outlier; paper: drop every |b| above it (the paper's rule). "
                   "Default: paper for a study drawn with --population paper, else "
                   "significant")
@click.option("--slope-prior", type=click.FloatRange(0, min_open=True), default=None,
              help="with --model 2pl and --responses: SD of a normal prior on each log slope "
                   "(BILOG-style, 0.5 is BILOG's; keeps extreme items' slopes from "
                   "collapsing); off by default, the paper's plain marginal ML")
@click.option("--out", "-o", type=click.Path(dir_okay=False),
              help="with --responses: write b, a, theta, kept, se_b, se_a, infit, outfit to "
                   "this .npz file (exactly this path; it must end in .npz)")
@click.option("--overwrite", is_flag=True, help="replace an existing --out file")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def fit_cmd(study, responses, irt_model, bins, outlier, outlier_rule, slope_prior, out, overwrite,
            as_json, quiet):
    """Fit 1PL/2PL IRT (Bock–Aitkin EM) to each data set's responses: difficulties, bins,
    difficulty.csv and figures/difficulty.png."""
    if bool(study) == bool(responses):
        raise NesyError("give either --study or --responses")
    if slope_prior is not None and (not responses or irt_model != "2pl"):
        raise NesyError("--slope-prior applies to a 2PL fit of --responses (give --model 2pl)",
                        field="--slope-prior")
    if responses:
        import numpy as np  # noqa: PLC0415
        shown = asset_label(responses, "irt-responses")

        from .fit import fit_irt  # noqa: PLC0415

        from .data import load_responses  # noqa: PLC0415

        from ..io import atomic_output_file, check_output_file  # noqa: PLC0415

        if out:
            if Path(out).suffix.lower() != ".npz":
                raise NesyError("--out is a NumPy archive written at exactly this path: give "
                                "a file name ending in .npz", file=out, field="--out")
            check_output_file(out, overwrite=overwrite, inputs=[responses])
        U = load_responses(responses)
        try:
            fit = fit_irt(U, irt_model, outlier=outlier, slope_prior=slope_prior,
                          outlier_rule=outlier_rule or "significant")
        except NesyError as exc:
            raise exc.where(file=responses)
        if out:
            with atomic_output_file(out, overwrite=overwrite, inputs=[responses]) as tmp, \
                    open(tmp, "wb") as fh:      # a file object: numpy appends no suffix
                np.savez_compressed(fh, b=fit.b, b_raw=fit.b_raw, a=fit.a, theta=fit.theta,
                                    kept=fit.kept, se_b=fit.se_b, se_a=fit.se_a,
                                    infit=fit.infit, outfit=fit.outfit)
        s = fit.summary()
        _warn_2pl(fit)
        click.echo(dumps(s) if as_json else
                   f"{shown}: {irt_model.upper()} on {s['respondents']} × {s['items']}: "
                   f"b {s['b_mean']:.3f} ± {s['b_sd']:.3f}, {s['kept']} kept, "
                   f"{s['all_right']} all right, {s['all_wrong']} all wrong, {s['outliers']} "
                   f"{_beyond_text(s['outlier_rule'], outlier)}, {s['negative_a']} negative a, "
                   f"{s['misfit']} infit outside 0.7-1.3; {s['iterations']} EM "
                   f"cycles, {s['seconds']:.2f} s", nl=not as_json)
        return
    summ = _fit(study, irt_model, bins, outlier, outlier_rule)
    if as_json:
        click.echo(dumps(summ), nl=False)
    else:
        _print_fit(summ)


def _warn_2pl(fit) -> None:
    """2PL on few respondents: slopes are poorly determined and many come out negative
    (e.g. 22 of 50 on 30 respondents); say so rather than print them silently."""
    import numpy as np  # noqa: PLC0415

    n_fit = int(np.isfinite(fit.b_raw).sum())
    neg = int(fit.negative_a.size)
    if fit.model == "2pl" and n_fit and neg > 0.05 * n_fit:
        click.echo(f"nesybench: warning: {neg} of {n_fit} items have a negative 2PL slope on "
                   f"{fit.theta.size} respondents: too few respondents for 2PL (or items that "
                   "good respondents get wrong); consider --model 1pl", err=True)


def _beyond_text(rule: str, limit: float) -> str:
    """How a summary line names the outliers of ``rule``."""
    return f"|b| > {limit:g}" if rule == "paper" else f"significantly beyond |b| = {limit:g}"


def _fit(study, irt_model, bins, outlier, outlier_rule=None):
    from .plots import difficulty_histograms  # noqa: PLC0415
    from .study import fit_difficulties  # noqa: PLC0415

    summ = fit_difficulties(study, model=irt_model, n_bins=bins, outlier=outlier,
                            outlier_rule=outlier_rule)
    difficulty_histograms(study, summ, Path(study) / "figures" / "difficulty.png")
    return {d: {k: v for k, v in s.items() if k != "theta_by_model"} for d, s in summ.items()}


def _print_fit(summ):
    for d, s in summ.items():
        paper = (f"   paper {s['paper_b_mean']:.2f} ± {s['paper_b_sd']:.2f}"
                 if s.get("paper_b_mean") is not None else "")
        click.echo(f"  {d:<22} {s['model'].upper()}  b {s['b_mean']:+.2f} ± {s['b_sd']:.2f}"
                   f"{paper}   kept {s['kept']}/{s['items']} (all right {s['all_right']}, "
                   f"all wrong {s['all_wrong']}, "
                   f"{_beyond_text(s['outlier_rule'], s.get('outlier', 6.0))} {s['outliers']}, a<0 "
                   f"{s['negative_a']})  {s['iterations']} cycles {s['seconds']:.2f} s")
        if s.get("note"):
            click.echo(f"    note: {s['note']}")


@group.command("robustness")
@click.option("--study", required=True, type=click.Path(file_okay=False))
@click.option("--models", default="", help="comma-separated FAMILY or FAMILY#VARIANT "
                                            "(default: variant 0 of every family)")
@click.option("--nu", type=float, default=0.2, show_default=True, help="noise level ν")
@click.option("--deltas", default="0,0.2,0.4,0.6,0.8,1", show_default=True,
              help="proportions of each bin perturbed")
@_executor_opts
@click.option("--json", "as_json", is_flag=True)
def robustness_cmd(study, models, nu, deltas, executor, workers, quiet, as_json):
    """Perturb δ of every difficulty bin (numeric N(x, σν), nominal α-mixture) and record
    kappa per (model, bin, δ): kappa.csv and figures/scc_<ds>.png (Figure 4)."""
    summ = _robustness(study, models, nu, deltas, executor, workers, not (as_json or quiet))
    if as_json:
        click.echo(dumps(summ), nl=False)
    else:
        _print_robustness(summ)


def _robustness(study, models, nu, deltas, executor, workers, progress):
    import numpy as np  # noqa: PLC0415

    from .plots import scc_figure  # noqa: PLC0415
    from .study import ds_key, kappa_cube, run_robustness  # noqa: PLC0415

    run = run_robustness(study, models=_csv_list(models) or None, nu=nu,
                         deltas=_floats(deltas), executor=executor, workers=workers,
                         progress=progress)
    dsets, mods, dl, K, KT, B = kappa_cube(study)
    out = {}
    for i, d in enumerate(dsets):
        scc_figure(d, mods, dl, K[i], B[i], Path(study) / "figures" / f"scc_{ds_key(d)}.png")
        scc_figure(d, mods, dl, KT[i], B[i],
                   Path(study) / "figures" / f"scc_true_{ds_key(d)}.png",
                   ylabel="kappa (true labels vs perturbed)")
        last = K[i, :, -1, :]                                # δ = max: (models, bins)
        have = [j for j in range(len(mods)) if np.all(np.isfinite(last[j]))]
        out[d] = {**run.get(d, {}), "bin_means": np.round(B[i], 3).tolist(),
                  "kappa_at_max_delta_by_bin": np.round(last[have].mean(axis=0), 4).tolist(),
                  "kappa_at_max_delta_by_model": {mods[j]: round(float(last[j].mean()), 4)
                                                  for j in have}}
    return out


def _print_robustness(summ):
    for d, s in summ.items():
        click.echo(f"  {d}: bins at b = {s['bin_means']}")
        click.echo(f"    mean kappa at δ = 1 per bin (easy → hard): "
                   f"{s['kappa_at_max_delta_by_bin']}")
        worst = sorted(s["kappa_at_max_delta_by_model"].items(), key=lambda kv: kv[1])
        click.echo("    least robust at δ = 1: " + ", ".join(f"{m} {v:.2f}" for m, v in worst[:5])
                   + "; most robust: " + ", ".join(f"{m} {v:.2f}" for m, v in worst[-3:]))


@group.command("taxonomy")
@click.option("--study", required=True, type=click.Path(file_okay=False))
@click.option("--clusters", type=int, default=3, show_default=True,
              help="cut the dendrogram into this many clusters")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def taxonomy_cmd(study, clusters, as_json, quiet):
    """Cluster the models' kappa profiles (Euclidean, complete linkage): taxonomy.json and
    figures/taxonomy.png (Figure 5)."""
    info = _taxonomy(study, clusters)
    if as_json:
        click.echo(dumps({k: v for k, v in info.items() if k != "linkage"}), nl=False)
    else:
        _print_taxonomy(info)


def _taxonomy(study, clusters):
    from .plots import dendrogram  # noqa: PLC0415
    from .study import build_taxonomy  # noqa: PLC0415

    tax, info = build_taxonomy(study, k=clusters)
    dendrogram(tax, Path(study) / "figures" / "taxonomy.png")
    return info


def _print_taxonomy(info):
    click.echo(f"  {info['k']} clusters over {', '.join(info['datasets'])}:")
    for i, g in enumerate(info["groups"], 1):
        click.echo(f"    {i}. " + ", ".join(f"{m} ({info['mean_kappa'][m]:.2f})" for m in g))
    a = info.get("paper_agreement")
    if a and a["pairs"]:
        click.echo(f"  agreement with the paper's three clusters over {a['families']} shared "
                   f"families: {a['pairs_alike']} of {a['pairs']} pairs alike, adjusted Rand "
                   f"{a['adjusted_rand']:.2f}")


@group.command("study")
@_apply(_pop_options)
@click.option("--model", "irt_model", type=click.Choice(["1pl", "2pl"]), default="1pl",
              show_default=True)
@click.option("--bins", type=int, default=5, show_default=True)
@click.option("--nu", type=float, default=0.2, show_default=True)
@click.option("--deltas", default="0,0.2,0.4,0.6,0.8,1", show_default=True)
@click.option("--clusters", type=int, default=3, show_default=True)
@_executor_opts
@click.option("--json", "as_json", is_flag=True)
def study_cmd(out, datasets, models, families, folds, data_seed, target, nominal, force_new,
              kind, irt_model, bins, nu, deltas, clusters, executor, workers, quiet, as_json):
    """The whole study into one folder: population → IRT fit → robustness → taxonomy, with
    the three figures, difficulty.csv, kappa.csv, taxonomy.json and summary.json."""
    from ..io import write_json  # noqa: PLC0415

    progress = not (as_json or quiet)
    pop = _population(out, datasets, models, families, folds, data_seed, target, nominal,
                      executor, workers, progress, force_new, kind)
    fit = _fit(out, irt_model, bins, 6.0, "paper" if kind == "paper" else "significant")
    rob = _robustness(out, "", nu, deltas, executor, workers, progress)
    tax = _taxonomy(out, clusters)
    summary = {"population": pop.__dict__, "fit": fit, "robustness": rob,
               "taxonomy": {k: v for k, v in tax.items() if k != "linkage"}}
    write_json(Path(out) / "summary.json", summary)
    if as_json:
        click.echo(dumps(summary), nl=False)
        return
    click.echo(f"{out}: {pop.models} models × {len(pop.datasets)} data sets "
               f"({pop.ran} population cells run now)")
    _print_fit(fit)
    _print_robustness(rob)
    _print_taxonomy(tax)
    click.echo(f"figures: {Path(out) / 'figures'}")


@group.command("families")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def families_cmd(as_json, quiet):
    """List the model families, how each is approximated, and their variant counts."""
    from .population import FAMILIES, PAPER_FAMILIES  # noqa: PLC0415

    rows = [{"id": f.id, "paper": f.id in PAPER_FAMILIES, "description": f.description,
             "approximation": f.approximation, "variants": len(f.variants),
             "representative": f.variants[0]} for f in FAMILIES.values()]
    if as_json:
        click.echo(dumps(rows), nl=False)
        return
    for r in rows:
        click.echo(f"  {r['id']:<8} {'paper' if r['paper'] else 'extra'}  {r['variants']:>3} "
                   f"variants  {r['description']}: {r['approximation']}  "
                   f"(variant 0: {r['representative']})")
