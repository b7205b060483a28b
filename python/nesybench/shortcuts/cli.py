"""``nesybench rs``: reasoning-shortcut tasks, exact RS counting, severity, concept metrics."""
from __future__ import annotations

import json

import click

from ..clitypes import ShippedFile, quiet_option
from ..errors import NesyError
from ..io import dumps
from ..logic import asp
from .task import load_task, read_support

CTX = {"help_option_names": ["-h", "--help"]}


def _emit(obj: dict, as_json: bool, text: str) -> None:
    click.echo(dumps(obj) if as_json else text, nl=not as_json)


def _fail(exc: NesyError):
    click.echo(f"nesybench: error: {' '.join(str(exc).split())}", err=True)
    raise click.exceptions.Exit(2)


def _max_ground_atoms(f):
    """The ``--max-ground-atoms`` option of every command that grounds user ASP knowledge."""
    return click.option(
        "--max-ground-atoms", default=asp.DEFAULT_MAX_GROUND_ATOMS, show_default=True,
        type=click.IntRange(min=1),
        help="ground atoms clingo may produce for the task's .lp knowledge (about 110 MiB "
             "per million); exceeded: error, exit 2")(f)


def _write_result(out: str, d: dict, *, overwrite: bool, inputs: list) -> None:
    """Write the JSON result file ``--out`` under the output rules (nesybench.io): an existing
    file only with ``--overwrite``, never an input, never through a symbolic link, atomically."""
    from ..io import write_output_file  # noqa: PLC0415
    write_output_file(out, dumps(d), overwrite=overwrite, inputs=inputs)


@click.group(context_settings=CTX)
def group():
    """Reasoning shortcuts (rsbench): generate, count, severity, metrics, import-bddoia,
    browse."""


@group.command(context_settings=CTX)
@click.argument("task_yaml", type=ShippedFile("rs-task"))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="output folder")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--mnist", type=click.Path(exists=True, file_okay=False),
              help="folder with MNIST IDX files (default: scikit-learn's bundled digits)")
@click.option("--samples", multiple=True, metavar="SPLIT=N|N",
              help="override split sizes, e.g. train=500; a bare N: N images in all, shared "
                   "over the splits as the defaults are (100/20/20/20)")
@click.option("--overwrite", is_flag=True, help="replace an existing output folder")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar")
@click.option("--workers", "-j", type=click.IntRange(1, 256), default=None,
              help="render: blender: worker processes (default 1)")
@click.option("--preset", type=click.Choice(["rsbench", "miniboia", "fast", "paper"]),
              default=None,
              help="render: blender: rsbench (320x240, 512 samples, 12 bounces; CLE4EVR's "
                   "default), miniboia (469x387, 128 samples; driving scenes' default), fast "
                   "(128x128, 16 samples, 4 bounces); paper is rsbench's earlier name")
@click.option("--resolution", metavar="WxH", default=None,
              help="render: blender: image size in pixels, e.g. 320x240")
@click.option("--render-samples", type=click.IntRange(1, 100_000), default=None,
              help="render: blender: samples per pixel")
@click.option("--engine", type=click.Choice(["cycles", "eevee"]), default=None,
              help="render: blender: render engine (cycles: CPU; eevee needs a GPU)")
@click.option("--balance", type=click.Choice(["equal", "rsbench"]), default=None,
              help="how a miniBOIA support's images spread over its configurations: equal "
                   "(even over the action vectors; the default) or rsbench (rsbench's "
                   "configurations_split; a total N is rsbench's --n_samples); overrides "
                   "generate.balance")
@_max_ground_atoms
def generate(task_yaml, out, seed, mnist, samples, overwrite, as_json, quiet, workers, preset,
             resolution, render_samples, engine, balance, max_ground_atoms):
    """Generate balanced train/val/test/OOD splits (images + labels.csv + manifest.json)."""
    from .generate import generate as gen  # noqa: PLC0415
    try:
        sizes, total = {}, None
        for s in samples:
            k, eq, v = s.partition("=")
            if not eq and k.isdigit():
                total = int(k)
                continue
            if k not in ("train", "val", "test", "ood") or not v.isdigit():
                raise NesyError(f"--samples expects SPLIT=N with SPLIT in train/val/test/ood, "
                                f"or a total N, not {s!r}")
            sizes[k] = int(v)
        if total is not None and sizes:
            raise NesyError("--samples: give either a total N or SPLIT=N sizes, not both")
        res_opt = None
        if resolution is not None:
            w, sep, h = resolution.lower().partition("x")
            if not (sep and w.isdigit() and h.isdigit()):
                raise NesyError(f"--resolution expects WxH, e.g. 320x240, not {resolution!r}")
            res_opt = [int(w), int(h)]
        with asp.limits(max_ground_atoms=max_ground_atoms):
            task = load_task(task_yaml)
            res = gen(task, out, seed=seed, samples=sizes, total=total, mnist=mnist,
                      overwrite=overwrite, progress=not (as_json or quiet), balance=balance,
                      render_options={"workers": workers, "preset": preset, "resolution": res_opt,
                                      "samples": render_samples, "engine": engine})
    except NesyError as exc:
        _fail(exc)
    for w in res.warnings:
        click.echo(f"nesybench: warning: {w}", err=True)
    d = {"out": res.out, "counts": res.counts, "label_counts": res.label_counts,
         "warnings": res.warnings}
    text = f"wrote {res.out}: " + ", ".join(f"{k} {v}" for k, v in res.counts.items())
    if res.blender is not None:
        d["blender"] = res.blender
        text += f" ({res.blender['rendered']} rendered, {res.blender['resumed']} resumed)"
    _emit(d, as_json, text)


@group.command("import-bddoia", context_settings=CTX)
@click.argument("src", metavar="DIR", type=click.Path(file_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="output folder")
@click.option("--overwrite", is_flag=True, help="replace an existing output folder")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@quiet_option
def import_bddoia(src, out, overwrite, as_json, quiet):
    """Import BDD-OIA from a local copy of rsbench's features (DIR/{split}_BDD_OIA.pkl and
    DIR/{split}/{inputs,concepts,labels}/*.pt) as an RS data set for `nesy train`. Every
    file is read inside DIR (a link out of it, a hard-linked file or a .pt archive that
    declares more than 4 MiB unpacked is refused)."""
    from .datasets.bddoia import import_bddoia as run  # noqa: PLC0415
    try:
        res = run(src, out, overwrite=overwrite)
    except NesyError as exc:
        _fail(exc)
    _emit(res, as_json, f"wrote {res['out']}: " + ", ".join(
        f"{k} {v}" for k, v in res["counts"].items()))


@group.command("browse", context_settings=CTX)
@click.argument("dataset", type=click.Path(file_okay=False))
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="folder for the HTML browser (default: DATASET/browse, replaced if present)")
@click.option("--overwrite", is_flag=True, help="replace an existing --out folder")
@quiet_option
def browse(dataset, out, overwrite, quiet):
    """Write a static HTML browser of a generated RS data set (open index.html): pictures
    with their labels and concepts, filters by split and label, and the annotated objects'
    boxes of a render: blender data set."""
    from .browse import write_browser  # noqa: PLC0415
    try:
        path = write_browser(dataset, out, overwrite=overwrite)
    except NesyError as exc:
        _fail(exc)
    click.echo(f"browser page: {path}")


@group.command(context_settings=CTX)
@click.argument("task_yaml", type=ShippedFile("rs-task"))
@click.option("--support", "support_file", type=click.Path(),
              help="concept vectors (CSV/JSON) or a generated data set folder (its train split); "
                   "default: the task's support")
@click.option("--map", "map_class", type=click.Choice(["joint", "disentangled", "perm"]),
              default="disentangled", show_default=True, help="class of concept maps")
@click.option("--maps", type=click.Choice(["shared", "separate"]), default=None,
              help="disentangled: one map per concept (shared) or per variable (default: task's)")
@click.option("--supervised", default="", help="comma-separated variables with concept supervision")
@click.option("--list", "list_n", default=0, type=int, help="also list up to N reasoning shortcuts")
@click.option("--perm-count", type=click.Choice(["functions", "pairs"]), default="functions",
              show_default=True,
              help="--map perm: count distinct maps (functions) or (permutation, per-variable "
                   "map) pairs as rsbench-code does; they differ when an optimal map has a "
                   "constant component")
@click.option("--engine", type=click.Choice(["auto", "struct", "asp", "elim"]), default="auto",
              show_default=True, help="auto: structure-aware counting for the shipped knowledge, "
                                      "else exact elimination / clingo enumeration")
@click.option("--time-limit", default=120.0, show_default=True, type=float,
              help="seconds one count may take (0: no limit); exceeded: error, exit 2")
@click.option("--max-states", default=2_000_000, show_default=True, type=int,
              help="states of the row-by-row dynamic programme, figure options of the "
                   "Kandinsky perm counter (their memory)")
@click.option("--seed", default=0, show_default=True, type=int, help="seed for supports/sampling")
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="also write the JSON result here")
@click.option("--overwrite", is_flag=True, help="replace an existing --out file")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
@_max_ground_atoms
@quiet_option
def count(task_yaml, support_file, map_class, maps, supervised, list_n, perm_count, engine,
          time_limit, max_states, seed, out, overwrite, as_json, max_ground_atoms, quiet):
    """Count the optimal concept maps (incl. and excl. the identity) of TASK_YAML exactly
    (a task file, or a shipped task's name: xor, mnadd_evenodd, driving ...)."""
    from .count import count_rs  # noqa: PLC0415
    try:
        if list_n < 0:
            raise NesyError(f"--list must be >= 0, got {list_n}")
        with asp.limits(max_ground_atoms=max_ground_atoms):
            task = load_task(task_yaml)
            # support 'all' is handled symbolically where the knowledge's structure allows it
            support = read_support(task, support_file) if support_file else (
                None if task.support_spec in (None, "all") else task.support(seed=seed))
            sup = [s.strip() for s in _split_vars(supervised)] if supervised else None
            res = count_rs(task, map_class=map_class, maps=maps, support=support,
                           supervised=sup, list_n=list_n, seed=seed, engine=engine,
                           perm_count=perm_count, time_limit=time_limit or None,
                           max_states=max_states)
        d = res.to_json()
        if out:
            _write_result(out, d, overwrite=overwrite, inputs=[task_yaml, support_file])
    except NesyError as exc:
        _fail(exc)
    text = (f"{res.task}: {res.count} optimal {res.map_class} maps"
            f"{' (' + res.maps + ')' if res.maps != '-' else ''} on {res.support_size} support "
            f"worlds, {res.count_without_identity} reasoning shortcuts  [{res.method}, "
            f"{res.seconds:.3f} s]")
    for m in res.rss:
        text += "\n  " + json.dumps(m)
    _emit(d, as_json, text)


def _split_vars(s: str) -> list[str]:
    """Split ``b(1),b(2),car`` on commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [x for x in [*out, cur] if x.strip()]


@group.command(context_settings=CTX)
@click.argument("source_yaml", type=ShippedFile("rs-task"))
@click.argument("target_yaml", type=ShippedFile("rs-task"))
@click.option("--map", "map_class", type=click.Choice(["disentangled", "perm"]), default="disentangled",
              show_default=True)
@click.option("--maps", type=click.Choice(["shared", "separate"]), default=None)
@click.option("--limit", default=10_000, show_default=True, help="at most this many RSs are averaged")
@click.option("--supervised", default="", help="also check whether supervision on these variables "
                                               "removes all RSs of the source")
@click.option("--target-support", type=click.Path(),
              help="target concept vectors (CSV/JSON or a generated data set folder); each row "
                   "weighs the same, so repeated vectors weigh more (default: target's support)")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="also write the JSON result here")
@click.option("--overwrite", is_flag=True, help="replace an existing --out file")
@click.option("--json", "as_json", is_flag=True)
@_max_ground_atoms
@quiet_option
def severity(source_yaml, target_yaml, map_class, maps, limit, supervised, target_support, seed,
             out, overwrite, as_json, max_ground_atoms, quiet):
    """Average severity (0-1 label loss) of SOURCE's RSs on TARGET's concept distribution."""
    try:
        with asp.limits(max_ground_atoms=max_ground_atoms):
            _severity(source_yaml, target_yaml, map_class, maps, limit, supervised,
                      target_support, out, overwrite, as_json)
    except NesyError as exc:
        _fail(exc)


def _severity(source_yaml, target_yaml, map_class, maps, limit, supervised, target_support,
              out, overwrite, as_json):
    from .severity import severity as sev, supervision_check  # noqa: PLC0415
    src, tgt = load_task(source_yaml), load_task(target_yaml)
    tw = weights = None
    if target_support:
        from collections import Counter  # noqa: PLC0415
        rows = read_support(tgt, target_support, distinct=False)
        hist = Counter(rows)
        tw, weights = list(hist), [float(v) for v in hist.values()]
    res = sev(src, tgt, map_class=map_class, maps=maps, limit=limit, target_support=tw,
              weights=weights)
    d = res.to_json()
    text = (f"{res.n_maps} RSs of {res.source}{'' if res.exhaustive else ' (first ' + str(limit) + ')'}"
            f" on {res.target}: average severity {res.average:.4f} (min {res.minimum:.4f}, "
            f"max {res.maximum:.4f}, {res.harmless} harmless)")
    if supervised:
        chk = supervision_check(src, _split_vars(supervised), map_class=map_class, maps=maps)
        d["supervision"] = chk.to_json()
        text += (f"\nsupervision on {', '.join(chk.supervised)}: {chk.rss_before} -> "
                 f"{chk.rss_after} RSs ({'removes all' if chk.removes_all else 'some remain'})")
    if out:
        _write_result(out, d, overwrite=overwrite,
                      inputs=[source_yaml, target_yaml, target_support])
    _emit(d, as_json, text)


@group.command(context_settings=CTX)
@click.argument("predictions", type=click.Path())
@click.option("--shared", multiple=True, metavar="GROUP=VAR,VAR",
              help="pool concept columns into one confusion matrix, e.g. digit=d(1),d(2)")
@click.option("--out", "-o", type=click.Path(file_okay=False),
              help="write metrics.json and confusion-matrix plots here")
@click.option("--overwrite", is_flag=True, help="replace --out if it exists (a nesybench output)")
@click.option("--seed", default=0, show_default=True, type=int, help="(unused; accepted everywhere)")
@click.option("--json", "as_json", is_flag=True)
@quiet_option
def metrics(predictions, shared, out, overwrite, seed, as_json, quiet):
    """Label/concept accuracy, macro-F1, confusion matrices and concept collapse of PREDICTIONS
    (CSV with label:/pred_label:/concept:/pred_concept: columns)."""
    from . import metrics as M  # noqa: PLC0415
    from ..io import write_json  # noqa: PLC0415
    try:
        lt, lp, ct, cp = M.read_predictions(predictions)
        pools = None
        if shared:
            pools = {}
            for s in shared:
                g, eq, cols = s.partition("=")
                names = [c.strip() for c in _split_vars(cols)]
                if not eq or not g.strip() or not names:
                    raise NesyError(f"--shared expects GROUP=VAR,VAR (e.g. digit=d(1),d(2)), "
                                    f"not {s!r}")
                for c in names:
                    if c not in ct:
                        raise NesyError(f"--shared {s!r}: no concept column {c!r} in the "
                                        f"predictions (have: {', '.join(ct) or 'none'})")
                pools[g.strip()] = names
            used = {c for cs in pools.values() for c in cs}
            pools.update({c: [c] for c in ct if c not in used})
        m = M.compute(lt, lp, ct, cp, shared=pools)
        if out:
            from ..io import atomic_output_dir  # noqa: PLC0415
            with atomic_output_dir(out, overwrite=overwrite, inputs=[predictions]) as tmp:
                M.plot_confusions(m, tmp)
                write_json(tmp / "metrics.json", m.to_json())
    except NesyError as exc:
        _fail(exc)
    f = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
    text = (f"n={m.n} label acc {f(m.label_accuracy)} macro-F1 {f(m.label_macro_f1)}"
            f"{'' if m.label_micro_f1 is None else ' micro-F1 ' + f(m.label_micro_f1)} | concept acc "
            f"{f(m.concept_accuracy)} macro-F1 {f(m.concept_macro_f1)} world acc {f(m.world_accuracy)}"
            f" | collapse hard {f(m.collapse_hard)} relaxed {f(m.collapse_relaxed)}")
    _emit(m.to_json(), as_json, text)
