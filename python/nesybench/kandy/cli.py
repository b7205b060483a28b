"""``nesybench kandy ...``: generate curricula, look at them, export them to ILP systems."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ..clitypes import ShippedFile, quiet_option
from ..errors import NesyError
from ..io import strict
from ..parallel import default_workers


def _tasks_option(value: str | None) -> list[int] | None:
    """``0,3,5-7`` -> [0, 3, 5, 6, 7]; an empty selection or a range like ``5-3`` is an error
    (it would silently produce an empty dataset)."""
    if value is None:
        return None
    out = []
    usage = f"--tasks takes task indices like 0,3,5-7; got {value!r}"
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise NesyError(f"{usage} ({part} is an empty range)")
                if hi - lo > 100_000:
                    raise NesyError(f"{usage} ({part} is too large a range)")
                out.extend(range(lo, hi + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise NesyError(usage) from None
    if not out:
        raise NesyError(f"{usage} (no task selected)")
    if min(out) < 0:
        raise NesyError(f"{usage} (indices are >= 0)")
    return out


def _workers_option(workers: int) -> int:
    if workers < 1:
        raise NesyError(f"--workers must be >= 1, got {workers}")
    return workers


def _json(obj, indent: int | None = 2) -> str:
    """Strict JSON for ``--json``: NaN → null, anything else not JSON-able as its text."""
    return json.dumps(strict(obj), indent=indent, default=str, allow_nan=False)


@click.group("kandy")
def group():
    """KANDY curricula of Kandinsky-pattern tasks (Lorello, Lippi and Melacci, the KANDY benchmark)."""


@group.command("generate")
@click.argument("curriculum", type=ShippedFile("kandy-curriculum"))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="Dataset folder to create (written atomically).")
@click.option("--seed", type=int, default=None,
              help="Curriculum seed (default: the file's config.seed, else 12345).")
@click.option("--workers", "-j", type=int, default=default_workers(), show_default=True,
              help="Rendering processes; the output is identical for any value.")
@click.option("--tasks", "tasks", default=None, help="Only these task indices, e.g. 0,3,5-7.")
@click.option("--samples", type=int, default=None, help="Override every task's sample count.")
@click.option("--no-images", is_flag=True, help="Write annotations and manifest only.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def generate_cmd(curriculum, out, seed, workers, tasks, samples, no_images, overwrite, as_json,
                 quiet):
    """Generate CURRICULUM (a YAML task list, or a shipped one's name: easy, hard, easy_large
    ...) into --out: images, annotations, manifest."""
    from .generate import generate

    if samples is not None and not 3 <= samples <= 10_000_000:
        raise NesyError(f"--samples must be in 3..10000000, got {samples}")
    res = generate(curriculum, out, seed=seed, workers=_workers_option(workers),
                   tasks=_tasks_option(tasks),
                   samples=samples, overwrite=overwrite, images=not no_images,
                   progress=not quiet and not as_json)
    summary = {
        "out": str(res.out), "images": res.images, "seconds": round(res.seconds, 3),
        "rule_checks": res.rule_checks,
        "tasks": [{"id": t["id"], "name": t["name"], **{k: t["stats"][k] for k in (
            "unique_symbols", "positives", "negatives", "rejected_by_rule",
            "rejected_by_duplicate", "with_replacement")}} for t in res.tasks],
    }
    if as_json:
        click.echo(_json(summary))
        return
    for t in summary["tasks"]:
        flag = "  (with replacement)" if t["with_replacement"] else ""
        click.echo(f"task {t['id']:2d} {t['name'][:40]:40s} {t['unique_symbols']:5d} unique "
                   f"(+{t['positives']}/-{t['negatives']}), rejected {t['rejected_by_rule']} by "
                   f"rule, {t['rejected_by_duplicate']} duplicates{flag}")
    click.echo(f"wrote {res.images} images to {res.out} in {res.seconds:.1f} s")


@group.command("validate")
@click.argument("curriculum", type=ShippedFile("kandy-curriculum"))
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def validate_cmd(curriculum, as_json, quiet):
    """Parse CURRICULUM (a file, or a shipped name: easy, hard ...) and load every task's rule
    (syntax, sandbox) without generating."""
    from .language import load_curriculum
    from .rules import TaskRule

    cur = load_curriculum(curriculum)
    report = []
    for task in cur.tasks:
        preds = []
        if task.rule_text is not None:
            rule = TaskRule(task.rule_text, source=task.rule_source, line_offset=task.rule_line,
                            task=task.label)
            preds = rule.predicates
            rule.close()
        report.append({"id": task.index, "name": task.name, "rule_predicates": preds})
    if as_json:
        click.echo(_json({"file": curriculum, "tasks": report}))
    else:
        click.echo(f"{curriculum}: {len(report)} tasks OK")


@group.command("check")
@click.argument("rule", type=ShippedFile("kandy-rule"))
@click.argument("samples", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@quiet_option
def check_cmd(ctx, rule, samples, as_json, quiet):
    """Check SAMPLES (natural-encoding Prolog terms) against the valid/1 rule in RULE.

    Exit status: 0 when every sample is valid, 1 when some sample is invalid, 2 when the rule
    or a sample is malformed (not a KANDY sample in the natural encoding).

    RULE is a file or a shipped rule's name (easy/t00 ... easy/t19, hard/t00 ... hard/t17).

    Example: nesybench kandy check easy/t15
    'side_by_side([stack([triangle_red_small, square_red_small])])'
    """
    from .rules import TaskRule
    from .symbols import from_prolog

    for i, s in enumerate(samples):
        try:
            from_prolog(s)
        except (ValueError, IndexError, KeyError, RecursionError):
            raise NesyError(f"sample {i + 1} is not a KANDY sample in the natural encoding "
                            f"(e.g. side_by_side([circle_red_small])): {s[:60]!r}") from None
    try:
        from ..folder import read_input_text  # noqa: PLC0415
        text = read_input_text(rule)        # a regular file, bounded
    except UnicodeDecodeError:
        raise NesyError("rule file is not UTF-8 text", file=rule) from None
    r = TaskRule(text, source=rule, field="rule")
    flags = r.check(list(samples))
    if as_json:
        click.echo(_json([{"sample": s, "valid": f} for s, f in zip(samples, flags)], None))
    else:
        for s, f in zip(samples, flags):
            click.echo(f"{'valid  ' if f else 'invalid'}  {s}")
    if not all(flags):
        ctx.exit(1)


@group.command("show")
@click.argument("dataset", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Folder for the PNG grids (default: DATASET/grids).")
@click.option("-n", "n", type=int, default=8, show_default=True,
              help="Samples per class and task.")
@click.option("--overwrite", is_flag=True,
              help="Replace --out if it exists (only an empty folder or a nesybench output).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def show_cmd(dataset, out, n, overwrite, quiet):
    """Write one PNG per task: positives vs negatives, with the rule printed."""
    from .show import write_task_grids

    paths = write_task_grids(dataset, out or str(Path(dataset) / "grids"), n=n,
                             overwrite=overwrite or out is None, progress=not quiet)
    click.echo(f"wrote {len(paths)} grids to {Path(paths[0]).parent if paths else out}")


@group.command("browse")
@click.argument("dataset", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Folder for the HTML browser (default: DATASET/browse, replaced if present).")
@click.option("--overwrite", is_flag=True,
              help="Replace --out if it exists (only an empty folder or a nesybench output).")
@quiet_option
def browse_cmd(dataset, out, overwrite, quiet):
    """Write a static HTML browser of a generated curriculum (open index.html)."""
    from .browse import write_browser

    path = write_browser(dataset, out, overwrite=overwrite)
    click.echo(f"browser page: {path}")


@group.command("ilp-export")
@click.argument("dataset", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--encoding", type=click.Choice(["natural", "pointer", "both"]), default="both",
              show_default=True)
@click.option("--kb", type=click.Choice(["minimal", "mid", "large", "both", "all"]),
              default="both", show_default=True,
              help="Background knowledge: minimal (17 predicates), mid (the paper's 39), large "
                   "(mid + the cheat predicates); both = minimal and mid (the paper's Table 1), "
                   "all = the three.")
@click.option("--tasks", "tasks", default=None, help="Only these task indices, e.g. 0,3,5-7.")
@click.option("--overwrite", is_flag=True)
@quiet_option
def ilp_export_cmd(dataset, out, encoding, kb, tasks, overwrite, quiet):
    """Export every task of DATASET as Aleph files (.b/.f/.n) per encoding and KB."""
    from . import ilp

    encs = ("natural", "pointer") if encoding == "both" else (encoding,)
    kbs = {"both": ("minimal", "mid"), "all": ("minimal", "mid", "large")}.get(kb, (kb,))
    path = ilp.export_all(dataset, out, encodings=encs, kbs=kbs, tasks=_tasks_option(tasks),
                          overwrite=overwrite)
    click.echo(f"Aleph files in {path}")


@group.command("ilp-eval")
@click.argument("dataset", type=click.Path(file_okay=False, exists=True))
@click.argument("task", type=int)
@click.argument("theory", type=click.Path(dir_okay=False))
@click.option("--encoding", type=click.Choice(["natural", "pointer"]), default="natural",
              show_default=True)
@click.option("--split", type=click.Choice(["train", "val", "test"]), default="test",
              show_default=True)
@click.option("--kb", type=click.Choice(["minimal", "mid", "large"]), default="large",
              show_default=True,
              help="Background knowledge the theory may call (large contains the other two).")
@click.option("--fresh", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Fresh samples drawn from the dataset's curriculum.yaml to check the "
                   "theory against the ground-truth rule (0: skip).")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def ilp_eval_cmd(dataset, task, theory, encoding, split, kb, fresh, as_json, quiet):
    """Score a learned THEORY for TASK on a split: balanced accuracy, precision, recall,
    compression ratios C_gt/C_lt and L_gt/L_lt (paper Table 2), and its disagreements with the
    ground-truth rule on all the task's samples and on --fresh new ones."""
    from . import ilp

    score = ilp.evaluate_theory(dataset, task, theory, encoding=encoding, split=split, kb=kb,
                                fresh=fresh)
    data = score.to_dict()
    if as_json:
        click.echo(_json(data))
    else:
        for k, v in data.items():
            click.echo(f"{k:>22s}: {v}")


@group.command("import-reference")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False),
              help="Data set folder to create (written atomically).")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest's tasks as JSON.")
@quiet_option
def import_reference_cmd(folder, out, overwrite, as_json, quiet):
    """Convert a data set written by the reference KANDY generator (FOLDER with
    samples/sets/{train,val,test}/annotations.csv and the PNGs) into a nesybench KANDY data
    set with a manifest: train, ilp-export and the other commands then read it."""
    from .reference import import_reference, main_summary

    man = import_reference(folder, out, overwrite=overwrite)
    if as_json:
        click.echo(_json({"out": str(Path(out).resolve()), "tasks": man["tasks"]}))
        return
    for t in man["tasks"]:
        sp = t["splits"]
        click.echo(f"task {t['id']:2d} {t['name'][:40]:40s} train {sp['train']}, val "
                   f"{sp['val']}, test {sp['test']} (+{t['stats']['positives']}/"
                   f"-{t['stats']['negatives']})")
    click.echo(f"{main_summary(man)} into {Path(out).resolve()}")


# --------------------------------------------------------------------------- learning

def _names(value: str, what: str, choices) -> list[str]:
    out = [v.strip() for v in value.split(",") if v.strip()]
    if not out:
        raise NesyError(f"--{what} needs at least one name")
    return out


def _run_sweep(spec, out: str, workers: int, quiet: bool, keep_going: bool, force_new: bool,
               allow_commands: bool = False):
    """Run ``spec`` into the study ``out``; returns (Results, failed cells of this study).
    Without ``keep_going`` the sweep stops at the first run that failed for good.
    ``allow_commands``: the spec's programs (Aleph's file) were named on this command line."""
    from ..runs import Results, run_grid

    try:
        res = run_grid(spec, out, executor="inline" if workers == 0 else "local",
                       workers=max(workers, 1), progress=not quiet, fail_fast=not keep_going,
                       force_new=force_new, allow_commands=allow_commands)
    except NesyError as exc:
        if keep_going or "(--fail-fast)" not in str(exc):
            raise
        res = Results(out)
    return res, res.failures()


def _report_failures(fails: list[dict], total: int) -> int:
    """One line per failed run, then "k of n runs failed: ..."; the exit status (0 or 1)."""
    from ..runs.report import failure_lines  # noqa: PLC0415

    for line in failure_lines(fails, total, unit="run", with_seed=True):
        click.echo(line, err=True)
    return 1 if fails else 0


def _print_table(study_dir: str, as_json: bool, per_task: bool = False) -> None:
    from .learn import report

    kind, study = report.open_study(study_dir)
    if kind == "train":
        rows = report.table1(study)
        if as_json:
            click.echo(_json(rows))
        else:
            click.echo(report.format_table1(rows))
    else:
        rows = report.table2(study)
        tasks = report.aleph_task_rows(study) if (per_task or as_json) else None
        if as_json:
            click.echo(_json({"table": rows, "tasks": tasks}))
        else:
            click.echo(report.format_table2(rows, tasks))
    if not rows:
        click.echo("(no finished cells yet)", err=True)


def _study_options(f):
    """Options every study-running command shares: dataset verification, what a failed run
    does to the others, and replacing a study of another configuration."""
    opts = [
        click.option("--no-verify", is_flag=True,
                     help="Do not check the dataset's files (sha256) and split sizes against "
                          "its manifest (for a deliberately edited curriculum)."),
        click.option("--keep-going/--fail-fast", default=True, show_default=True,
                     help="After a run fails, go on with the other runs (default) or stop at "
                          "the first failure; either way the exit status is 1 when any run "
                          "failed."),
        click.option("--force-new", is_flag=True,
                     help="Replace the study in --out when it holds a different configuration "
                          "(default: refuse; a re-run with the same configuration resumes)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _refuse_ignored_options(models, settings, *, weights, buffer, replay_weight, shuffle,
                            epochs, strategy) -> None:
    """An option that no run of the sweep would use is an error, not silently dropped."""
    from .learn.models import PRETRAINED

    continual = [s for s in settings if s in ("task_incremental", "continual_online")]
    if weights is not None and not any(m in PRETRAINED for m in models):
        raise NesyError(f"--weights is for {', '.join(PRETRAINED)} (pretrained trunks); "
                        f"{', '.join(models)} take(s) none", field="weights")
    if buffer is not None and not continual:
        raise NesyError("--buffer applies to the continual settings (task-incremental, "
                        "continual-online) only", field="buffer")
    if replay_weight is not None:
        names = [x.strip() for x in strategy.split(",")] if strategy else ["replay"]
        if not continual or "replay" not in names:
            raise NesyError("--replay-weight applies to replay (the default strategy of the "
                            "continual settings) only", field="replay_weight")
    if shuffle and "continual_online" not in settings:
        raise NesyError("--shuffle applies to continual-online only", field="shuffle")
    if epochs is not None and epochs != 1 and all(s == "continual_online" for s in settings):
        raise NesyError("--epochs: continual-online makes a single pass (epochs 1)",
                        field="epochs")


@group.command("train")
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--model", default="cnn", show_default=True,
              help="Model(s), comma-separated: mlp, cnn, resnet50, resnet50_h, vit (small "
                   "ViT-16), vit_b16 (ViT-B/16 from scratch), vit_h (ViT-B/16, frozen, "
                   "--weights).")
@click.option("--setting", default="joint", show_default=True,
              help="Setting(s), comma-separated: independent, joint, task-incremental, "
                   "continual-online.")
@click.option("--hparams", type=click.Choice(["easy", "hard", "hard-large"]), default="easy",
              show_default=True, help="The column of the supplementary's optimal "
                                       "hyper-parameter table (per model and setting) used "
                                       "for options not given.")
@click.option("--epochs", type=int, default=None, help="Epochs (per task where the setting "
              "says so). Default: the paper's table.")
@click.option("--batch", type=int, default=None, help="Mini-batch size b.")
@click.option("--lr", type=float, default=None, help="Learning rate.")
@click.option("--optim", type=click.Choice(["sgd", "adam"]), default=None)
@click.option("--buffer", type=int, default=None,
              help="Replay buffer |R| (continual settings; default 200 or 0 per the paper).")
@click.option("--replay-weight", type=float, default=None, help="λ_r (default 1).")
@click.option("--thresholds", type=click.Choice(["all", "seen"]), default="all",
              show_default=True, help="Tune τ_j on validation for every task at every time "
              "step (as the paper's code), or only for tasks trained so far.")
@click.option("--strategy", default=None,
              help="Continual-learning strategy(ies), comma-separated: naive, replay, ewc, "
                   "ewc-online, lwf, agem, der, derpp (continual settings only; default replay, the "
                   "paper's class-balanced reservoir).")
@click.option("--ewc-gamma", type=float, default=None,
              help="Online EWC (ewc-online): decay γ of F ← γF + F_t (default 1).")
@click.option("--agem-ref-batch", type=int, default=None,
              help="A-GEM: memory samples per reference gradient (default 256, Chaudhry et "
                   "al. 2019; the whole memory while it holds fewer).")
@click.option("--agem-memory", type=click.Choice(["balanced", "per-task"]), default=None,
              help="A-GEM's episodic memory: one class-balanced reservoir of --buffer items "
                   "(default) or the paper's per-task memories, --buffer // tasks items for "
                   "each finished task.")
@click.option("--shuffle", is_flag=True,
              help="CONTINUAL-ONLINE: stream each task's samples in random order (default: "
                   "the order of annotations.csv, as the reference implementation).")
@click.option("--augment", default=None, is_flag=False, flag_value="all",
              metavar="[all|crop,flip,jitter]",
              help="Augment training batches (random crops, horizontal flips, colour "
                   "jitter; seeded). --augment alone = all three; off by default, as in the "
                   "paper.")
@click.option("--seeds", type=int, default=3, show_default=True, help="Runs per cell.")
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed of the sweep.")
@click.option("--size", type=int, default=64, show_default=True,
              help="Resize images to SIZE×SIZE (0: keep the PNG size).")
@click.option("--tasks", "tasks", default=None, help="Only these task indices, e.g. 0-4.")
@click.option("--device", default="cpu", show_default=True, help="cpu or cuda.")
@click.option("--weights", type=click.Path(dir_okay=False), default=None,
              help="ResNet-50 state_dict for resnet50_h, ViT-B/16 state_dict for vit_h "
                   "(never downloaded).")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Study folder (default studies/kandy-<dataset>); re-running resumes it.")
@click.option("--workers", "-j", type=int, default=1, show_default=True,
              help="Cells run in parallel (0: in this process, with per-epoch bars).")
@_study_options
@click.option("--json", "as_json", is_flag=True, help="Print the table as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
@click.pass_context
def train_cmd(ctx, dataset, model, setting, hparams, epochs, batch, lr, optim, buffer,
              replay_weight, thresholds, strategy, ewc_gamma, agem_ref_batch, agem_memory, shuffle,
              augment, seeds, seed,
              size, tasks, device, weights, out, workers,
              keep_going, force_new, no_verify, as_json, quiet):
    """Train the paper's neural baselines on a generated curriculum DATASET (grid: models ×
    settings × seeds through the sweep runner) and print Table 1's rows."""
    from ..runs import GridSpec
    from .learn.data import read_manifest, select_tasks, verify_dataset
    from .learn.models import PRETRAINED, build_model
    from .learn.settings import normalise_hparams, normalise_setting, resolve_config

    root = Path(dataset).resolve()
    man = read_manifest(root)
    task_list = _tasks_option(tasks)
    entries = select_tasks(man, task_list, source=str(root))
    if not no_verify:
        verify_dataset(root, man, task_list)
    models = _names(model, "model", None)
    settings = [normalise_setting(s) for s in _names(setting, "setting", None)]
    if seeds < 1:
        raise NesyError("--seeds must be >= 1", field="seeds")
    _refuse_ignored_options(models, settings, weights=weights, buffer=buffer,
                            replay_weight=replay_weight, shuffle=shuffle, epochs=epochs,
                            strategy=strategy)
    for m in models:
        for s in settings:
            resolve_config(m, s, hparams=hparams, epochs=epochs, batch=batch, lr=lr,
                           optim=optim, buffer=buffer, replay_weight=replay_weight,
                           device=device, weights=weights if m in PRETRAINED else None)
    for m in models:
        if m in PRETRAINED:          # check the weights file before any run starts
            build_model(m, size=size or 224, heads=len(entries), weights=weights)
    hparams = normalise_hparams(hparams)
    params = {"dataset": str(root), "size": size or None, "hparams": hparams,
              "thresholds": thresholds,
              "tasks": task_list, "device": device, "progress": (workers == 0 and not quiet)}
    if no_verify:
        params["verify"] = False
    if shuffle:
        params["shuffle"] = True
    if augment is not None:
        from .learn.augment import parse_augment

        aug = parse_augment(augment)
        if aug:
            params["augment"] = aug
    for k, v in (("epochs", epochs), ("batch", batch), ("lr", lr), ("optim", optim),
                 ("buffer", buffer), ("replay_weight", replay_weight),
                 ("weights", str(Path(weights).resolve()) if weights else None)):
        if v is not None:
            params[k] = v
    axes = {"model": models, "setting": settings}
    if strategy is not None:
        from .learn.strategies import STRATEGIES

        strategies = _names(strategy, "strategy", None)
        for st in strategies:
            if st not in STRATEGIES:
                raise NesyError(f"unknown strategy {st!r} (expected one of "
                                f"{', '.join(STRATEGIES)})", field="strategy")
        other = [s for s in settings if s not in ("task_incremental", "continual_online")]
        if other:
            raise NesyError(f"--strategy applies to the continual settings (task-incremental, "
                            f"continual-online), not {other[0].replace('_', '-')}; run that "
                            f"setting without --strategy", field="strategy")
        axes["strategy"] = strategies
    if ewc_gamma is not None:
        if "ewc-online" not in (strategies if strategy is not None else []):
            raise NesyError("--ewc-gamma applies to --strategy ewc-online only",
                            field="strategy")
        if not 0 <= ewc_gamma <= 1:
            raise NesyError(f"--ewc-gamma must be in [0, 1], got {ewc_gamma}",
                            field="ewc_gamma")
        params["ewc_gamma"] = ewc_gamma
    if agem_ref_batch is not None:
        if "agem" not in (strategies if strategy is not None else []):
            raise NesyError("--agem-ref-batch applies to --strategy agem only", field="strategy")
        if agem_ref_batch < 1:
            raise NesyError("--agem-ref-batch must be >= 1", field="agem_ref_batch")
        params["agem_ref_batch"] = agem_ref_batch
    if agem_memory is not None:
        if "agem" not in (strategies if strategy is not None else []):
            raise NesyError("--agem-memory applies to --strategy agem only", field="strategy")
        params["agem_memory"] = agem_memory
    spec = GridSpec(study=f"kandy-train-{root.name}", function="kandy.train", params=params,
                    axes=axes, repetitions=seeds, seed=seed)
    out = out or str(Path("studies") / f"kandy-{root.name}")
    if workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}", field="workers")
    res, fails = _run_sweep(spec, out, workers, quiet, keep_going, force_new)
    _print_table(out, as_json)
    if not as_json:
        click.echo(f"study: {out}")
    ctx.exit(_report_failures(fails, len(res.rows(status=None))))


@group.command("table")
@click.argument("study", type=click.Path(file_okay=False))
@click.option("--per-task", is_flag=True, help="Aleph studies: one row per task as well.")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def table_cmd(study, per_task, as_json, quiet):
    """Print Table 1 (a `kandy train` study: model × setting, mean ± sd over seeds) or
    Table 2 (a `kandy ilp-run` study: Aleph per encoding and background knowledge)."""
    _print_table(study, as_json, per_task)


@group.command("plot")
@click.argument("study", type=click.Path(file_okay=False))
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Folder for the PNGs (default STUDY/plots, whose figures are replaced).")
@click.option("--overwrite", is_flag=True,
              help="replace the figures in an --out folder that is not empty")
@quiet_option
def plot_cmd(study, out, overwrite, quiet):
    """Figures 2-6 of a `kandy train` study: accuracy over time, per-task accuracy,
    forgetting/BWT/FWT over time, accuracy matrices."""
    from .learn import report

    if out and not overwrite and Path(out).is_dir() and any(Path(out).iterdir()):
        raise NesyError("--out is a folder that is not empty; --overwrite replaces the "
                        "figures in it", file=out, field="--out")
    kind, st = report.open_study(study)
    if kind != "train":
        raise NesyError("plots are for `kandy train` studies; use `kandy table` for Aleph",
                        file=study)
    for f in report.plot_study(st, out or Path(study) / "plots"):
        click.echo(str(f))


@group.command("ilp-run")
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--aleph", "aleph", envvar="NESYBENCH_ALEPH", default=None,
              help="Path of Aleph 5's aleph.pl (or NESYBENCH_ALEPH).")
@click.option("--encoding", default="nat", show_default=True, help="nat, ptr or nat,ptr.")
@click.option("--bk", default="mid", show_default=True, help="min, mid or min,mid.")
@click.option("--timeout", type=float, default=1800, show_default=True,
              help="Seconds per task (the paper: 1800 Easy, 3600 Hard); Aleph is killed then.")
@click.option("--aleph-set", "aleph_set", multiple=True, metavar="KEY=VALUE",
              help="An Aleph setting for every task, e.g. clauselength=8 (repeatable; "
                   "allowed: clauselength, nodes, minacc, noise, i, depth, minpos, newvars, "
                   "evalfn, search, searchtime, ... see the KANDY guide).")
@click.option("--tasks", "tasks", default=None, help="Only these task indices, e.g. 0-4.")
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Study folder (default studies/kandy-<dataset>-aleph).")
@click.option("--workers", "-j", type=int, default=1, show_default=True,
              help="Tasks run in parallel (0: in this process).")
@_study_options
@click.option("--json", "as_json", is_flag=True)
@click.option("--quiet", "-q", is_flag=True)
@click.pass_context
def ilp_run_cmd(ctx, dataset, aleph, encoding, bk, timeout, aleph_set, tasks, out, workers,
                keep_going, force_new, no_verify, as_json, quiet):
    """Run Aleph on every task of DATASET (one swipl process per task, hard time limit),
    score each theory on the test split and print Table 2."""
    from ..runs import GridSpec
    from .learn.aleph import BKS, ENCODINGS, check_aleph, find_swipl, parse_aleph_settings
    from .learn.data import read_manifest, select_tasks, verify_dataset

    root = Path(dataset).resolve()
    settings = parse_aleph_settings(aleph_set)
    if not timeout > 0 or timeout == float("inf"):
        raise NesyError("--timeout must be a finite number of seconds > 0", field="timeout")
    aleph_path = check_aleph(aleph)
    find_swipl()
    man = read_manifest(root, images=False)
    task_list = _tasks_option(tasks)
    ids = [int(t["id"]) for t in select_tasks(man, task_list, source=str(root))]
    if not no_verify:
        verify_dataset(root, man, task_list, images=False)
    encs = _names(encoding, "encoding", None)
    bks = _names(bk, "bk", None)
    for e in encs:
        if e not in ENCODINGS:
            raise NesyError(f"unknown encoding {e!r} (nat or ptr)", field="encoding")
    for b in bks:
        if b not in BKS:
            raise NesyError(f"unknown background knowledge {b!r} (min or mid)", field="bk")
    params = {"dataset": str(root), "aleph": str(aleph_path), "timeout": float(timeout)}
    if settings:
        params["settings"] = settings
    spec = GridSpec(study=f"kandy-aleph-{root.name}", function="kandy.aleph",
                    params=params,
                    axes={"encoding": encs, "bk": bks, "task": ids}, repetitions=1, seed=0)
    out = out or str(Path("studies") / f"kandy-{root.name}-aleph")
    if workers < 0:
        raise NesyError(f"--workers must be >= 0, got {workers}", field="workers")
    # the Aleph file was named on this command line (--aleph): the user's own program
    res, fails = _run_sweep(spec, out, workers, quiet, keep_going, force_new,
                            allow_commands=True)
    # Aleph itself crashing is recorded as the task's row (scored as the empty theory), but
    # the run did not do its job: it counts as failed for the exit status
    for r in res.rows():
        if r.get("crashed"):
            fails.append({"cell_id": r["cell_id"], "seed": r.get("seed"),
                          "axes": {k: r.get(k) for k in ("encoding", "bk", "task")},
                          "error": "Aleph crashed (see the task's aleph log in the study's "
                                   "artifacts)"})
    _print_table(out, as_json, per_task=True)
    if not as_json:
        click.echo(f"study: {out}")
    ctx.exit(_report_failures(fails, len(res.rows(status=None))))
