"""``nesybench kandy ...``: generate curricula, look at them, export them to ILP systems."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ..errors import NesyError
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


@click.group("kandy")
def group():
    """KANDY curricula of Kandinsky-pattern tasks (paper: kandy.txt)."""


@group.command("generate")
@click.argument("curriculum", type=click.Path(dir_okay=False))
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
    """Generate CURRICULUM (a YAML task list) into --out: images, annotations, manifest."""
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
        click.echo(json.dumps(summary, indent=2))
        return
    for t in summary["tasks"]:
        flag = "  (with replacement)" if t["with_replacement"] else ""
        click.echo(f"task {t['id']:2d} {t['name'][:40]:40s} {t['unique_symbols']:5d} unique "
                   f"(+{t['positives']}/-{t['negatives']}), rejected {t['rejected_by_rule']} by "
                   f"rule, {t['rejected_by_duplicate']} duplicates{flag}")
    click.echo(f"wrote {res.images} images to {res.out} in {res.seconds:.1f} s")


@group.command("validate")
@click.argument("curriculum", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
def validate_cmd(curriculum, as_json):
    """Parse CURRICULUM and load every task's rule (syntax, sandbox) without generating."""
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
        click.echo(json.dumps({"file": curriculum, "tasks": report}, indent=2))
    else:
        click.echo(f"{curriculum}: {len(report)} tasks OK")


@group.command("check")
@click.argument("rule", type=click.Path(dir_okay=False, exists=True))
@click.argument("samples", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def check_cmd(ctx, rule, samples, as_json):
    """Check SAMPLES (natural-encoding Prolog terms) against the valid/1 rule in RULE.

    Exit status: 0 when every sample is valid, 1 when some sample is invalid, 2 when the rule
    or a sample is malformed (not a KANDY sample in the natural encoding).

    Example: nesybench kandy check kb/kandy/rules/easy/t15.pl
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
        text = Path(rule).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise NesyError("rule file is not UTF-8 text", file=rule) from None
    r = TaskRule(text, source=rule, field="rule")
    flags = r.check(list(samples))
    if as_json:
        click.echo(json.dumps([{"sample": s, "valid": f} for s, f in zip(samples, flags)]))
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
def browse_cmd(dataset, out, overwrite):
    """Write a static HTML browser of a generated curriculum (open index.html)."""
    from .browse import write_browser

    path = write_browser(dataset, out, overwrite=overwrite)
    click.echo(f"browser page: {path}")


@group.command("ilp-export")
@click.argument("dataset", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False))
@click.option("--encoding", type=click.Choice(["natural", "pointer", "both"]), default="both",
              show_default=True)
@click.option("--kb", type=click.Choice(["minimal", "mid", "both"]), default="both",
              show_default=True)
@click.option("--tasks", "tasks", default=None, help="Only these task indices, e.g. 0,3,5-7.")
@click.option("--overwrite", is_flag=True)
def ilp_export_cmd(dataset, out, encoding, kb, tasks, overwrite):
    """Export every task of DATASET as Aleph files (.b/.f/.n) per encoding and KB."""
    from . import ilp

    encs = ("natural", "pointer") if encoding == "both" else (encoding,)
    kbs = ("minimal", "mid") if kb == "both" else (kb,)
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
@click.option("--json", "as_json", is_flag=True)
def ilp_eval_cmd(dataset, task, theory, encoding, split, as_json):
    """Score a learned THEORY for TASK on a split: balanced accuracy, precision, recall,
    compression ratios C_gt/C_lt and L_gt/L_lt (paper Table 2)."""
    from . import ilp

    score = ilp.evaluate_theory(dataset, task, theory, encoding=encoding, split=split)
    data = score.to_dict()
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        for k, v in data.items():
            click.echo(f"{k:>22s}: {v}")
