"""``nesybench rudas ...``: generate, suite, learn, evaluate, table, chase, experiment."""
from __future__ import annotations

from pathlib import Path

import click

from ..clitypes import ShippedFile, quiet_option
from ..errors import NesyError
from ..io import dumps
from ..parallel import default_workers

_METRICS = ("herbrand_distance", "herbrand_accuracy", "h_score", "accuracy", "precision",
            "recall", "f1", "r_score")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def group():
    """RuDaS rule-learning datasets: generate, suite, learn, evaluate, table, chase, experiment."""


@group.command()
@click.option("--out", "-o", required=True, type=click.Path(), help="output dataset folder")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--category", default="chain", show_default=True,
              type=click.Choice(["chain", "rdg", "drdg", "mixed"], case_sensitive=False))
@click.option("--size", default="xs", show_default=True,
              type=click.Choice(["xs", "s", "m", "l", "xl", "x2l"], case_sensitive=False))
@click.option("--depth", default=2, show_default=True, type=int, help="maximal rule-graph depth")
@click.option("--n-facts", type=int, help="exact training-set target inside the size class")
@click.option("--min-components", default=1, show_default=True, type=int)
@click.option("--max-components", default=1, show_default=True, type=int)
@click.option("--n-predicates", type=int, help="default: enough for the rule graph + 2")
@click.option("--n-constants", type=int, help="default: 0.6 x target size (>= 20)")
@click.option("--min-arity", default=2, show_default=True, type=int)
@click.option("--max-arity", default=2, show_default=True, type=int)
@click.option("--max-body", default=2, show_default=True, type=int, help="maximal rule length")
@click.option("--max-rules", type=int, help="maximal number of rules")
@click.option("--max-or", default=2, show_default=True, type=int, help="alternatives below an OR node (DRDG)")
@click.option("--n-ow", default=0.3, show_default=True, type=float, help="open-world degree")
@click.option("--noise-minus", default=0.2, show_default=True, type=float)
@click.option("--noise-plus", default=0.1, show_default=True, type=float)
@click.option("--n-dg", default=2, show_default=True, type=int)
@click.option("--n-skip", default=4, show_default=True, type=int)
@click.option("--p-h", default=0.2, show_default=True, type=float)
@click.option("--p-v", default=0.6, show_default=True, type=float)
@click.option("--p-c", default=0.02, show_default=True, type=float)
@click.option("--p-recursion", default=0.0, show_default=True, type=float)
@click.option("--common-target/--no-common-target", default=False, show_default=True)
@click.option("--ow-split/--no-ow-split", default=True, show_default=True,
              help="delete n_OW separately from target and non-target consequences")
@click.option("--eval-ratio", default=0.25, show_default=True, type=float)
@click.option("--profile", type=click.Choice(["rudas-v0"]),
              help="fix the rule parameters of a published dataset family: rudas-v0 = the "
                   "datasets of the paper's Section 6 (--p-c 0, arity 2, --max-body 2)")
@click.option("--overwrite", is_flag=True)
@click.option("--json", "as_json", is_flag=True, help="print the manifest counts as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.pass_context
def generate(ctx, out, profile, overwrite, as_json, quiet, **kw):
    """Generate one RuDaS dataset folder (RuDaS layout + manifest.json + rule_graph.dot)."""
    from .core import RudasParams, apply_profile, generate as gen  # noqa: PLC0415
    explicit = {k for k in kw
                if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
    kw = apply_profile(kw, profile, explicit)
    params = RudasParams(**{k: (v.lower() if isinstance(v, str) else v) for k, v in kw.items()})
    res = gen(params, out, overwrite=overwrite, progress=not (as_json or quiet))
    if as_json:
        click.echo(dumps({"path": str(res.path), "counts": res.manifest["counts"],
                          "targets": res.manifest["targets"]}), nl=False)
    else:
        c = res.manifest["counts"]
        click.echo(f"{res.path}: {len(res.manifest['rule_graph']['nodes'])} rules, "
                   f"train {c['train']} facts (S {c['support']}, C {c['conseqs']}, "
                   f"test {c['test']}), eval S' {c['eval_support']}, C' {c['eval_conseqs']}")


@group.command()
@click.option("--out", "-o", required=True, type=click.Path())
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--per-cell", type=int, help="datasets per (category, size, depth) cell; default: paper Table 1 counts (196 in all)")
@click.option("--workers", "-j", default=default_workers(), show_default=True, type=int,
              help="generator processes; the output is identical for any value")
@click.option("--profile", default="rudas-v0", show_default=True,
              type=click.Choice(["rudas-v0", "none"]),
              help="rule parameters: rudas-v0 (no constants, arity 2, at most two body atoms) "
                   "or none (the generator defaults)")
@click.option("--overwrite", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def suite(out, seed, per_cell, workers, profile, overwrite, as_json, quiet):
    """Generate a RuDaS-v0-like suite (Table 1: CHAIN/RDG/DRDG x XS/S x depth 2/3)."""
    from .core import generate_suite  # noqa: PLC0415
    if workers < 1:
        raise NesyError(f"--workers must be >= 1, got {workers}")
    if per_cell is not None and per_cell < 1:
        raise NesyError(f"--per-cell must be >= 1, got {per_cell}")
    index = generate_suite(out, seed=seed, per_cell=per_cell, workers=workers,
                           overwrite=overwrite, progress=not (as_json or quiet),
                           profile=None if profile == "none" else profile)
    if as_json:
        click.echo(dumps(index), nl=False)
    else:
        click.echo(f"{out}: {len(index['datasets'])} datasets")


def _eval_opts(f):
    f = click.option("--threshold", default=0.0, show_default=True, type=float,
                     help="keep learned rules with confidence >= threshold (Conf::Rule)")(f)
    f = click.option("--aux", multiple=True,
                     help="further predicate name whose facts are ignored (repeatable); "
                          "predicates the learned file defines are auxiliaries already")(f)
    f = click.option("--max-derived", default=5_000_000, show_default=True, type=int,
                     help="budget: facts the learned rules may derive")(f)
    f = click.option("--time-limit", default=600.0, show_default=True, type=float,
                     help="budget: seconds of forward chaining, then of the R-score")(f)
    f = click.option("--strict-budget", is_flag=True, help="a hit budget is an error (exit 2)")(f)
    return f


@group.command()
@click.argument("dataset", type=click.Path())
@click.argument("learned", type=click.Path())
@_eval_opts
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def evaluate(dataset, learned, threshold, aux, max_derived, time_limit, strict_budget, as_json,
             quiet):
    """Evaluate LEARNED rules (Prolog syntax) on DATASET (paper §5 measures)."""
    from .core import evaluate as ev  # noqa: PLC0415
    m = ev(dataset, learned, threshold=threshold, aux=list(aux), max_derived=max_derived,
           time_limit=time_limit, strict_budget=strict_budget,
           progress=not (as_json or quiet))
    if m["partial"]:
        click.echo(f"nesybench: warning: budget hit ({m['budget']}); metrics are partial", err=True)
    if m.get("r_score_partial"):
        click.echo("nesybench: warning: the R-score ran out of time; it is a lower bound", err=True)
    if as_json:
        click.echo(dumps(m), nl=False)
    else:
        for k in ("tp", "fp", "fn", "tn", "herbrand_base") + _METRICS:
            v = m[k]
            click.echo(f"{k:18s} {v:.4f}" if isinstance(v, float) else f"{k:18s} {v}")
        if m.get("auxiliary"):
            click.echo(f"{'auxiliary':18s} {', '.join(m['auxiliary'])}")


@group.command()
@click.argument("suite_dir", type=click.Path())
@click.argument("learned_dir", type=click.Path())
@_eval_opts
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def table(suite_dir, learned_dir, threshold, aux, max_derived, time_limit, strict_budget, as_json,
          quiet):
    """Evaluate LEARNED_DIR/<dataset>.pl for every dataset of a suite; print a table + means."""
    from .core import evaluate as ev  # noqa: PLC0415
    sd, ld = Path(suite_dir), Path(learned_dir)
    if not (sd / "suite.json").exists():
        raise NesyError("not a RuDaS suite folder (no suite.json)", file=str(sd))
    from ..folder import DataFolder  # noqa: PLC0415
    names = [d["name"] for d in DataFolder(sd).read_json("suite.json")["datasets"]]
    rows = []
    from tqdm import tqdm  # noqa: PLC0415
    for n in tqdm(names, desc="rudas table", unit="dataset", leave=False,
                  disable=as_json or quiet):
        lf = ld / f"{n}.pl"
        if lf.exists():
            m = ev(sd / n, lf, threshold=threshold, aux=list(aux), max_derived=max_derived,
                   time_limit=time_limit, strict_budget=strict_budget)
            rows.append({"name": n, **{k: m[k] for k in _METRICS}, "partial": m["partial"]})
    mean = {k: (sum(r[k] for r in rows) / len(rows) if rows else None) for k in _METRICS}
    if as_json:
        click.echo(dumps({"rows": rows, "mean": mean, "missing": len(names) - len(rows)}), nl=False)
        return
    click.echo(format_table(rows, mean))
    click.echo(f"{len(rows)} evaluated, {len(names) - len(rows)} without a learned file")


def _cell(v) -> str:
    """A metric for the table: integers as they are, floats with 4 significant digits (a
    small distance shows as 3.2e-05, not 0.0000)."""
    if v is None:
        return "-"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return f"{v:.4g}"


def format_table(rows: list[dict], mean: dict) -> str:
    """The text table of `rudas table`: full metric names as headers, columns as wide as
    their widest cell."""
    body = rows + ([{"name": "MEAN", **mean}] if rows else [])
    head = ["dataset", *_METRICS]
    cells = [[r["name"], *(_cell(r[k]) for k in _METRICS)] for r in body]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h)
              for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w)
                       for i, (h, w) in enumerate(zip(head, widths)))]
    for c in cells:
        lines.append("  ".join(x.ljust(w) if i == 0 else x.rjust(w)
                               for i, (x, w) in enumerate(zip(c, widths))))
    return "\n".join(lines)


@group.command()
@click.argument("rules", type=click.Path())
@click.argument("facts", type=click.Path())
@click.option("--max-derived", type=int, default=5_000_000, show_default=True,
              help="stop after deriving this many facts")
@click.option("--time-limit", type=float, default=600.0, show_default=True,
              help="stop after this many seconds")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def chase(rules, facts, max_derived, time_limit, as_json, quiet):
    """Forward-chain RULES over FACTS; print the derived facts (I(R,F)). The chase stops at
    --max-derived facts or --time-limit seconds (a warning says which)."""
    from .core import chase as ch  # noqa: PLC0415
    derived, status = ch(rules, facts, max_derived=max_derived, time_limit=time_limit)
    if as_json:
        click.echo(dumps({"derived": derived, "status": status}), nl=False)
    else:
        for f in derived:
            click.echo(f + ".")
        if status != "complete":
            click.echo(f"nesybench: warning: stopped: {status}", err=True)


@group.command()
@click.argument("dataset", type=click.Path())
@click.option("--system", "-s", required=True,
              help="foil | amie | neural-lp | ntp | aleph | cmd, or an installed plug-in "
                   "(entry-point group nesybench.rudas_learners)")
@click.option("--out", "-o", required=True, type=click.Path(),
              help="learned-rules file to write (the input of `rudas evaluate`)")
@click.option("--command", "command",
              help="with --system cmd: shell command template; placeholders {train} {out} "
                   "{dataset} {seed} {max_body} {targets}")
@click.option("--aleph", type=click.Path(), help="with --system aleph: Aleph 5's aleph.pl "
              "(default $NESYBENCH_ALEPH)")
@click.option("--targets", help="comma-separated predicates to learn rules for "
              "(default: every predicate of the training set)")
@click.option("--max-body", type=int, help="maximal rule length (default: the dataset's)")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE",
              help="a setting of the system (repeatable), e.g. -O min_accuracy=0.6")
@click.option("--profile", default="rudas-v0", show_default=True,
              type=click.Choice(["rudas-v0", "none"]),
              help="option defaults of a published configuration: rudas-v0 = the RuDaS "
                   "paper's (amie: min_support=3 min_initial_support=3 min_pca=0.25); none: "
                   "the learners' own defaults. --option values win.")
@click.option("--time-limit", type=float, help="seconds an outside program (cmd, aleph) may run")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--overwrite", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
def learn(dataset, system, out, command, aleph, targets, max_body, options, profile, time_limit,
          seed, overwrite, as_json, quiet):
    """Learn rules from DATASET's training facts with a rule learner; write them to --out.

    Systems: foil (Quinlan 1990), amie (AMIE+-style mining, Galárraga et al. 2015),
    neural-lp (Yang et al. 2017), ntp (NTP-style templates, Rocktäschel and Riedel 2017),
    aleph (your Aleph 5), cmd (any program, --command) and
    plug-ins. The result is scored by `nesybench rudas evaluate DATASET RULES.pl`.
    """
    from ..io import write_output_file  # noqa: PLC0415
    from .learners import learn as run, profile_options, render  # noqa: PLC0415
    opts = {}
    for o in options:
        k, sep, v = o.partition("=")
        if not sep or not k.strip():
            raise NesyError(f"--option must be KEY=VALUE, got {o!r}", field="option")
        opts[k.strip()] = v.strip()
    opts = profile_options(system, opts, None if profile == "none" else profile)
    if command is not None:
        if system != "cmd":
            raise NesyError("--command applies to --system cmd only", field="command")
        opts["command"] = command
    if aleph is not None:
        if system != "aleph":
            raise NesyError("--aleph applies to --system aleph only", field="aleph")
        opts["aleph"] = aleph
    if max_body is not None and not 1 <= max_body <= 10:
        raise NesyError(f"--max-body must be in 1..10, got {max_body}", field="max_body")
    if time_limit is not None and not 0 < time_limit < 1e9:
        raise NesyError(f"--time-limit must be a positive number of seconds, got {time_limit}")
    tl = [t.strip() for t in targets.split(",") if t.strip()] if targets else None
    if targets is not None and not tl:
        raise NesyError("--targets is empty", field="targets")
    from .learners import load_dataset  # noqa: PLC0415
    from ..io import check_output_file  # noqa: PLC0415
    ds = load_dataset(dataset)
    # --out is checked before the learner runs (minutes for some), and again when written
    check_output_file(out, overwrite=overwrite, inputs=[ds.train_file])
    if tl:
        unknown = [t for t in tl if t not in ds.facts]
        if unknown:
            raise NesyError(f"--targets: {unknown[0]} has no training fact", file=str(ds.train_file))
    rules, info = run(ds, system, seed=seed, max_body=max_body, targets=tl, options=opts,
                      progress=not (as_json or quiet), time_limit=time_limit)
    header = (f"learned by nesybench rudas learn --system {system} --seed {seed}\n"
              f"{len(rules)} rules; confidence before '::' where the system gives one")
    write_output_file(out, render(rules, header), overwrite=overwrite,
                      inputs=[ds.train_file])
    info["out"] = str(out)
    if as_json:
        click.echo(dumps(info), nl=False)
    else:
        click.echo(f"{out}: {len(rules)} rules by {system} in {info['seconds']:.2f} s")


@group.command()
@click.argument("spec", type=ShippedFile("rudas-experiment"))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="experiment folder: datasets/, the sweep's store, tables/, figure2.png")
@click.option("--small", is_flag=True, help="apply the spec's `small:` overrides (a quick run)")
@click.option("--systems", help="comma-separated: only these systems of the spec")
@click.option("--workers", "-j", default=1, show_default=True, type=int,
              help="cells (and dataset generations) in parallel; 0: in this process")
@click.option("--seed", type=int, help="base seed of datasets and cells (default: the spec's)")
@click.option("--cell-timeout", type=float,
              help="seconds per cell (learning + evaluation); default: the spec's timeout")
@click.option("--overwrite", is_flag=True,
              help="replace a finished experiment in --out (only files nesybench wrote) and "
                   "start afresh")
@click.option("--force-new", is_flag=True,
              help="replace an experiment of another configuration in --out (default: refuse; "
                   "the same configuration resumes)")
@click.option("--allow-commands", is_flag=True,
              help="run the spec's shell learners (system: cmd, a command at any depth) and "
                   "learner Prolog files (aleph); refused otherwise: a spec from someone else "
                   "would run code")
@click.option("--json", "as_json", is_flag=True, help="print the tables and thresholds as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bars and no tables")
@click.pass_context
def experiment(ctx, spec, out, small, systems, workers, seed, cell_timeout, overwrite,
               force_new, allow_commands, as_json, quiet):
    """Run the paper's Section 6: generate the SPEC's RuDaS-v0-like datasets, run every
    learner on each through the sweep runner (per-cell time limit, resumable), evaluate,
    choose each system's confidence threshold by grid search over the datasets, and write
    Tables 2-5 (Markdown, CSV) and Figure 2 (PNG) into --out. Exit status 1 when a cell
    failed."""
    from .experiment import load_experiment, run_experiment  # noqa: PLC0415
    if workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}", field="workers")
    names = [s.strip() for s in systems.split(",") if s.strip()] if systems else None
    sp = load_experiment(spec, small=small, seed=seed, systems=names,
                         allow_commands=allow_commands)
    report, summary, fails, total = run_experiment(
        sp, out, workers=workers, overwrite=overwrite, force_new=force_new,
        progress=not (quiet or as_json), cell_timeout=cell_timeout,
        allow_commands=allow_commands)
    if as_json:
        click.echo(dumps({"tables": report["tables"], "thresholds": report["thresholds"],
                          "report": report["report"], "figure": report["figure"],
                          "cells": total, "ran": summary.ran, "done": summary.done,
                          "failed": len(fails), "skipped": summary.skipped}), nl=False)
    elif not quiet:
        click.echo(report["text"])
        click.echo(f"{out}: {summary.ran} cells run, {summary.skipped} already done; "
                   f"tables in {out}/tables, {out}/report.md"
                   + (f", {report['figure']}" if report["figure"] else ""))
    ctx.exit(_report_failures(fails, total))


def _report_failures(fails: list[dict], total: int) -> int:
    """One line per failed cell, then "k of n cells failed: ..."; the exit status (0 or 1)."""
    from ..runs.report import failure_lines  # noqa: PLC0415

    for line in failure_lines(fails, total, unit="cell", with_seed=False):
        click.echo(line, err=True)
    return 1 if fails else 0
