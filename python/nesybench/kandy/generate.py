"""Generate a KANDY curriculum into a folder (format: docs/formats/kandy-dataset.md, version 1.1).

``generate(curriculum, out)`` parses the YAML, draws each task's symbols with rejection
sampling (rule checks batched through SWI-Prolog), splits them, renders the images, and
writes annotations, rules and a manifest with checksums into a temporary folder that is
renamed to ``out`` only when everything succeeded. With ``workers > 1`` each job of the
worker processes is one task (or one part of a task, when there are fewer tasks than a few
per worker): the worker draws the task's symbols, renders the pictures from the symbol
objects it drew, in vectorised batches, and writes the files itself; this process only writes
the annotations and the manifest, in task order.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .. import __version__
from ..errors import NesyError
from ..io import atomic_output_dir, checksums, derive_seed, sha256_file, write_json
from ..parallel import _shutdown as _shutdown_pool
from ..parallel import spawn_pool
from ..yamlsafe import safe_load
from .language import Curriculum, TaskSpec, load_curriculum, read_rule_file
from .render import PNG_DEFLATE, RenderConfig, render_chunk
from .rules import TaskRule
from .expand import sample_symbol
from .sampler import SPLITS, Sample, TaskStats, draw_symbols, rng_for, split_samples
from .symbols import json_text, leaves

#: Version of the KANDY dataset format (docs/formats/kandy-dataset.md). 1.1: Hard layouts keep every shape
#: inside the canvas (render._fit_into); annotations are unchanged, pixels of the samples whose
#: layout had a shape larger than its slot differ from 1.0.
FORMAT_VERSION = "1.1"

DEFAULT_SEED = 12345
CSV_COLUMNS = ("filename", "task_id", "label", "supervised", "symbol", "prolog")
#: pictures handed to :func:`~nesybench.kandy.render.render_chunk` at a time (which draws
#: them in vectorised batches): the unit of the progress bar in one process, and the size of
#: the digest lists a job collects
RENDER_CHUNK = 250


@dataclass
class GenerationResult:
    """What :func:`generate` produced.

    Attributes
    ----------
    out : the dataset folder
    tasks : per-task manifest entries (name, seed, stats ...)
    images : number of images written
    seconds : wall-clock time of the whole job
    rule_checks : number of candidate symbols checked by Prolog
    """

    out: Path
    tasks: list[dict] = field(default_factory=list)
    images: int = 0
    seconds: float = 0.0
    rule_checks: int = 0


def render_config_from(curriculum: Curriculum, overrides: dict | None = None) -> RenderConfig:
    """Build the rendering config from a curriculum's ``config`` (reference keys accepted:
    ``canvas_size``, ``padding``, ``bg_color``, ``colors``, ``sizes``, ``size_noise``,
    ``h_sigma``, ``s_sigma``, ``v_sigma``; or a ``render`` mapping of RenderConfig fields),
    then ``overrides``."""
    cfg = curriculum.config
    out: dict = {}
    if "canvas_size" in cfg:
        out["canvas"] = tuple(cfg["canvas_size"]) if isinstance(cfg["canvas_size"], list) \
            else cfg["canvas_size"]
    if "padding" in cfg:
        out["padding"] = cfg["padding"]
    if "bg_color" in cfg:
        out["background"] = cfg["bg_color"]
    for key in ("colors", "sizes"):
        if isinstance(cfg.get(key), list):
            merged = {}
            for item in cfg[key]:
                if isinstance(item, dict):
                    merged.update(item)
            if merged:
                out[key] = merged
    if "size_noise" in cfg:
        out["size_noise"] = cfg["size_noise"]
    if any(k in cfg for k in ("h_sigma", "s_sigma", "v_sigma")):
        d = RenderConfig().hsv_sigma
        out["hsv_sigma"] = (cfg.get("h_sigma", d[0]), cfg.get("s_sigma", d[1]),
                            cfg.get("v_sigma", d[2]))
    if isinstance(cfg.get("render"), dict):
        out.update(cfg["render"])
    out.update(overrides or {})
    try:
        rc = RenderConfig.from_dict(out)
    except NesyError as exc:
        raise exc.where(file=curriculum.source) from None
    missing = [c for c in curriculum.domain.colors if c not in rc.colors]
    if missing:
        raise NesyError(f"no RGB value for colour(s) {missing}", file=curriculum.source,
                        field="config.colors")
    missing = [s for s in curriculum.domain.sizes if s not in rc.sizes]
    if missing:
        raise NesyError(f"no pixel size for size(s) {missing}", file=curriculum.source,
                        field="config.sizes")
    return rc


def generate(curriculum: str | os.PathLike, out: str | os.PathLike, *, seed: int | None = None,
             workers: int = 1, tasks: list[int] | None = None, samples: int | None = None,
             overwrite: bool = False, images: bool = True, render: dict | None = None,
             progress: bool = False) -> GenerationResult:
    """Generate the curriculum at ``curriculum`` into the folder ``out``.

    Parameters
    ----------
    seed : curriculum seed (default: the file's ``config.seed`` or 12345); each task's seed is
        its own ``seed`` field or derived from this one and the task index
    workers : rendering processes (output is byte-identical for any value)
    tasks : indices of the tasks to generate (default: all)
    samples : override every task's ``samples``
    images : False writes annotations and manifest only
    render : overrides of :class:`RenderConfig` fields
    """
    t0 = time.perf_counter()
    cur = load_curriculum(curriculum)
    if seed is None:
        seed = int(cur.config.get("seed", DEFAULT_SEED))
    rconf = render_config_from(cur, render)
    selected = _select(cur, tasks, samples)
    from tqdm import tqdm  # noqa: PLC0415 - only for the progress bars

    result = GenerationResult(out=Path(out).resolve())
    total = sum(t.samples for t in selected)
    digests: dict[str, str] = {}        # what the workers wrote, hashed as they wrote it
    with atomic_output_dir(out, overwrite=overwrite, inputs=[curriculum],
                           known=digests) as tmp, contextlib.ExitStack() as files:
        (tmp / "rules").mkdir()
        writers = {}
        for split_name in SPLITS:
            (tmp / split_name).mkdir()
            fh = files.enter_context(open(tmp / split_name / "annotations.csv", "w",
                                          encoding="utf-8", newline=""))
            writers[split_name] = csv.writer(fh, lineterminator="\n")
            writers[split_name].writerow(CSV_COLUMNS)
        config = rconf.to_dict()
        root = str(tmp)

        seeds = [task.seed if task.seed is not None else derive_seed(seed, "task", task.index)
                 for task in selected]

        def emit(i: int, stats: TaskStats, rows: dict) -> None:
            """Record task ``i``: manifest entry and annotation rows."""
            entry = _task_entry(selected[i], seeds[i], stats, tmp)
            result.rule_checks += entry["stats"]["checked"]
            result.tasks.append(entry)
            for split_name, split_rows in rows.items():
                writers[split_name].writerows(split_rows)

        bar = tqdm(total=total, desc="images" if images else "symbols", unit="sample",
                   disable=not progress)
        drawing = [(task, cur.domain, cur.source, seeds[i]) for i, task in enumerate(selected)]
        if images and workers > 1:
            for written in _in_pool(drawing, emit, config, root, workers):
                digests.update(written)
                bar.update(len(written))
                result.images += len(written)
        else:
            # one process: each task's symbols, then its pictures (one task in memory at once)
            for i, args in enumerate(drawing):
                stats, rows, jobs = _draw_task(args)
                emit(i, stats, rows)
                if not images:
                    bar.update(len(jobs))
                    continue
                for k in range(0, len(jobs), RENDER_CHUNK):
                    written = render_chunk((config, root, jobs[k:k + RENDER_CHUNK]))
                    digests.update(written)
                    bar.update(len(written))
                    result.images += len(written)
        bar.close()
        files.close()  # annotation tables complete before they are hashed
        _copy_curriculum(Path(curriculum), tmp)
        manifest = {
            "format": "nesybench-kandy", "version": FORMAT_VERSION, "generator": __version__,
            "seed": seed,
            "config": {"render": rconf.to_dict(), "images": images,
                       "png_deflate": PNG_DEFLATE if images else None,
                       "domain": dataclasses.asdict(cur.domain),
                       "curriculum_config": cur.config},
            "curriculum": {"file": Path(curriculum).name,
                           "sha256": sha256_file(curriculum)},
            "tasks": result.tasks,
        }
        manifest["files"] = checksums(tmp, known=digests)
        write_json(tmp / "manifest.json", manifest)
    result.seconds = time.perf_counter() - t0
    return result


def _select(cur: Curriculum, tasks, samples) -> list[TaskSpec]:
    selected = cur.tasks
    if tasks is not None:
        bad = [t for t in tasks if not 0 <= t < len(cur.tasks)]
        if bad:
            raise NesyError(f"no task {bad[0]} (the curriculum has tasks 0..{len(cur.tasks) - 1})",
                            file=cur.source)
        selected = [cur.tasks[t] for t in sorted(set(tasks))]
    if samples is not None:
        if samples < 3:
            raise NesyError("--samples must be >= 3")
        selected = [dataclasses.replace(t, samples=samples) for t in selected]
        for t in selected:
            if min(t.split_sizes()) < 1:
                raise NesyError(f"{samples} samples leave a split empty", file=cur.source,
                                task=t.label, field="samples")
    return selected


def _draw_task(args) -> tuple[TaskStats, dict, list]:
    """Worker entry point (picklable, top level): draw one task's symbols (rule checks in this
    process's SWI-Prolog) and split them. ``args = (task, domain, curriculum_source,
    task_seed)``. Returns the statistics, the annotation rows per split and the render jobs
    (``(symbol, render seed, noisy_color, noisy_size, relpath)``, the symbol objects as
    drawn: the process that draws a task renders it, so nothing is parsed again)."""
    task, domain, source, task_seed = args
    rule = None
    if task.rule_text is not None:
        rule = TaskRule(task.rule_text, source=task.rule_source, line_offset=task.rule_line,
                        task=task.label,
                        field="positive_rule" if task.rule_source == source else "rule_file")
    try:
        accepted, stats = draw_symbols(task, domain, task_seed, rule)
    finally:
        if rule is not None:
            rule.close()
    rows: dict[str, list] = {}
    jobs = []
    for split_name, samples in split_samples(task, accepted, task_seed, stats).items():
        rows[split_name] = []
        for s in samples:
            rel = f"{s.task_id:02d}/{s.index:05d}.png"
            rows[split_name].append(_row(s, rel))
            jobs.append((s.symbol, derive_seed(task_seed, "render", split_name, s.index),
                         task.noisy_color, task.noisy_size, f"{split_name}/{rel}"))
    return stats, rows, jobs


def _task_entry(task: TaskSpec, task_seed: int, stats: TaskStats, tmp: Path) -> dict:
    """The task's manifest entry; writes its rule to ``rules/NN.pl``."""
    rule_file = None
    if task.rule_text is not None:
        rule_file = f"rules/{task.index:02d}.pl"
        (tmp / rule_file).write_text(task.rule_text.rstrip() + "\n", encoding="utf-8")
    return {
        "id": task.index, "name": task.name, "seed": task_seed, "samples": task.samples,
        "splits": dict(zip(SPLITS, task.split_sizes())), "gamma": task.gamma, "beta": task.beta,
        "noisy_color": task.noisy_color, "noisy_size": task.noisy_size,
        "patience": task.patience, "rule_file": rule_file, "description": task.description,
        "stats": stats.to_dict(),
    }


#: jobs per worker the pool aims at: a curriculum with fewer tasks than that splits each
#: task's pictures into parts (each part's worker draws the task itself, see
#: :func:`_task_job`), so that the workers stay busy until the end
JOBS_PER_WORKER = 2


def _in_pool(drawing: list, emit, config: dict, root: str, workers: int) -> Iterator:
    """Draw every task's symbols and render their pictures in one pool of ``workers``
    processes; yield each job's ``(relpath, sha256)`` list as the job finishes.

    ``drawing`` holds the :func:`_draw_task` arguments of the tasks in order; ``emit(i,
    stats, rows)`` records task ``i`` (manifest entry, annotations). A job is one task, or
    one of ``parts`` equal parts of its pictures when the curriculum has fewer than
    :data:`JOBS_PER_WORKER` tasks per worker. Jobs are queued longest first and their
    files' digests yielded as they finish; the tasks are emitted in task order, so neither
    the files nor the annotations depend on the number of workers or on timing.
    """
    parts = max(1, -(-JOBS_PER_WORKER * workers // max(1, len(drawing))))
    # longest jobs first (LPT), so that the last jobs to start are short ones and no worker
    # is left alone with a large task at the end; each job's output is the same in any order
    order = sorted(range(len(drawing)), key=lambda i: -_estimated_cost(drawing[i]))
    pool = spawn_pool(workers)
    ok = False
    try:
        futures = {pool.submit(_task_job, (drawing[i], config, root, part, parts)): i
                   for i in order for part in range(parts)}
        done: dict[int, tuple] = {}
        following = 0                       # the next task to emit: tasks go out in order
        pending = [parts] * len(drawing)    # jobs of each task not finished yet
        failed: dict[int, BaseException] = {}
        for fut in as_completed(futures):
            i = futures[fut]
            pending[i] -= 1
            try:
                stats, rows, written = fut.result()
            except Exception as exc:        # noqa: BLE001 - re-raised below, in task order
                failed.setdefault(i, exc)
            else:
                if stats is not None:
                    done[i] = (stats, rows)
                    while following in done:
                        emit(following, *done.pop(following))
                        following += 1
                yield written
            if failed:
                # the error of the first failing task in task order, as one process reports
                # it, once every job of the tasks before it has finished
                first = min(failed)
                if not any(pending[:first]):
                    raise failed[first]
        ok = True
    finally:
        # an error (in a worker, here or in the consumer) or Ctrl-C drops the queued work
        _shutdown_pool(pool, hard=not ok)


#: symbols drawn per task to estimate its job's cost (:func:`_estimated_cost`)
PILOT_SYMBOLS = 16


def _estimated_cost(drawing) -> float:
    """A task's relative cost for scheduling: its samples times one plus the mean number of
    shapes of :data:`PILOT_SYMBOLS` symbols drawn from its sets on a random stream of their
    own (the task's data do not depend on it). A task whose sets cannot be drawn from
    counts as its samples alone; its job reports the error."""
    task, domain, _, task_seed = drawing
    rng = rng_for(task_seed, "pilot")
    sets = (task.negative_set, task.positive_set)
    try:
        shapes = [len(leaves(sample_symbol(sets[k % 2], rng, domain)))
                  for k in range(PILOT_SYMBOLS)]
    except (NesyError, RecursionError, MemoryError):
        return float(task.samples)
    return task.samples * (1.0 + sum(shapes) / len(shapes))


#: the task a worker drew last, ``[(key, (stats, rows, jobs))]``: the other parts of that
#: task that reach the same worker render from it instead of drawing it again
_DRAWN: list = []


def _task_job(args) -> tuple[TaskStats | None, dict | None, list]:
    """Worker entry point (picklable, top level): draw one task (:func:`_draw_task`) and
    render part ``part`` of ``parts`` of its pictures, written by this process
    (:func:`~nesybench.kandy.render.render_chunk`). ``args = (drawing, config, root, part,
    parts)``. Returns the statistics and the annotation rows (part 0 only, else ``None``)
    and the ``(relpath, sha256)`` of the files written."""
    drawing, config, root, part, parts = args
    task, _, source, task_seed = drawing
    key = (source, task.index, task.samples, task_seed, task.rule_text)
    if _DRAWN and _DRAWN[0][0] == key:
        stats, rows, jobs = _DRAWN[0][1]
    else:
        _DRAWN.clear()
        stats, rows, jobs = _draw_task(drawing)
        if parts > 1:
            _DRAWN.append((key, (stats, rows, jobs)))
    lo, hi = part * len(jobs) // parts, (part + 1) * len(jobs) // parts
    written = []
    for k in range(lo, hi, RENDER_CHUNK):
        written.extend(render_chunk((config, root, jobs[k:min(k + RENDER_CHUNK, hi)])))
    return (stats, rows, written) if part == 0 else (None, None, written)


_RULE_FILE_LINE = re.compile(r"^(?P<lead>\s*(?:-\s+)?rule_file:\s*)(?P<value>\S.*?)\s*$")


def _copy_curriculum(src: Path, out: Path) -> None:
    """Write ``out/curriculum.yaml``: the curriculum as given, except that every ``rule_file``
    points at a copy under ``rules/files/``, so that the dataset folder regenerates itself
    (``nesybench kandy generate OUT/curriculum.yaml`` gives the same annotations)."""
    from ..folder import read_input_text  # noqa: PLC0415
    lines = read_input_text(src).splitlines(keepends=True)
    copies: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = _RULE_FILE_LINE.match(line.rstrip("\r\n"))
        if not m:
            continue
        try:
            value = safe_load(m["value"])
        except yaml.YAMLError:
            continue
        if not isinstance(value, str):
            continue
        try:        # a file beside the curriculum or a shipped rule, as the parser read it
            label, text = read_rule_file(value, src.parent)
        except NesyError:
            continue    # the parser already refused the rule files of used tasks
        if label not in copies:
            target = Path(label)
            name, k = target.name, 1
            while f"rules/files/{name}" in copies.values():   # same name, other folder
                name, k = f"{target.stem}_{k}{target.suffix}", k + 1
            copies[label] = f"rules/files/{name}"
            (out / "rules" / "files").mkdir(parents=True, exist_ok=True)
            (out / copies[label]).write_bytes(text.encode("utf-8"))
        end = line[len(line.rstrip("\r\n")):]
        lines[i] = f"{m['lead']}{json.dumps(copies[label])}{end}"
    (out / "curriculum.yaml").write_text("".join(lines), encoding="utf-8")


def _row(s: Sample, rel: str) -> tuple:
    return (rel, s.task_id, s.label, s.supervised, json_text(s.symbol), s.prolog)


def read_annotations(dataset: str | os.PathLike, split: str) -> list[dict]:
    """Rows of ``<dataset>/<split>/annotations.csv`` as dicts with typed fields."""
    from ..folder import DataFolder, int64, json_loads  # noqa: PLC0415
    folder = DataFolder(dataset)
    rel = f"{split}/annotations.csv"
    label = folder.label(rel)
    if not folder.exists(rel):
        raise NesyError("annotations not found (is this a generated KANDY dataset?)",
                        file=label)
    _, raw = folder.csv_rows(rel, required=("task_id", "label", "supervised", "symbol"))
    rows = []
    for line, r in raw:
        for k in ("task_id", "label", "supervised"):
            r[k] = int64(r.get(k), file=label, line=line, field=k)
        try:
            r["symbol"] = json_loads(r["symbol"])
        except (TypeError, ValueError, RecursionError):
            raise NesyError("the symbol is not JSON", file=label, line=line) from None
        rows.append(r)
    return rows
