"""``nesybench setup-prolog``: a SWI-Prolog janus-swi can be built against, for pip users.

janus-swi has no wheel: pip builds it against the ``swipl`` on ``PATH``, which must be
SWI-Prolog >= 9.1.12 (Debian 12 ships 9.0.4). This command builds a minimal SWI-Prolog from
source into the user cache folder with the script ``make setup`` uses
(``nesybench/logic/build_swipl.sh``, shipped in the wheel), then prints what to run next:
that ``swipl`` first on ``PATH``, and janus-swi rebuilt against it. nesybench finds the build
there by itself (:func:`nesybench.paths.cache_swipl`).
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from importlib import resources

import click

from ..clitypes import quiet_option

from ..errors import NesyError
from ..paths import cache_root

SCRIPT = "build_swipl.sh"
#: janus-swi needs this SWI-Prolog or newer
MIN_VERSION = (9, 1, 12)
JANUS_LINE = "pip install --force-reinstall --no-cache-dir --no-binary janus-swi janus-swi"


def build_script() -> str:
    """The shipped build script's path (the same file ``make setup`` runs)."""
    path = resources.files("nesybench.logic").joinpath(SCRIPT)
    if not path.is_file():
        raise NesyError(f"the SWI-Prolog build script {SCRIPT} is not installed with nesybench")
    return str(path)


def swipl_version(exe: str) -> tuple[int, ...] | None:
    """(9, 3, 24) from ``swipl --dump-runtime-variables``; None when it does not run."""
    try:
        out = subprocess.run([exe, "--dump-runtime-variables"], capture_output=True,
                             text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("PLVERSION="):
            n = line.split("=", 1)[1].strip('";')
            if n.isdigit():
                return int(n) // 10000, int(n) // 100 % 100, int(n) % 100
    return None


def _dotted(v: tuple[int, ...]) -> str:
    return ".".join(map(str, v))


def next_steps(bindir: str) -> list[str]:
    """The lines a user runs after the build: PATH first, then janus-swi against it."""
    return [f'export PATH={shlex.quote(bindir)}:"$PATH"', JANUS_LINE]


@click.command("setup-prolog", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--prefix", type=click.Path(file_okay=False), default=None,
              help="install folder (default: swipl/ in the user cache folder, where nesybench "
                   "looks for it)")
@click.option("--source", default=None, metavar="TARBALL|URL",
              help="the SWI-Prolog source archive, a file or a URL (e.g. "
                   "https://www.swi-prolog.org/download/stable/src/swipl-9.3.24.tar.gz); "
                   "default on Debian/Ubuntu: the swi-prolog source package via apt")
@click.option("--sha256", default=None, help="expected SHA-256 of the source archive")
@click.option("--suite", default="trixie", show_default=True,
              help="Debian suite whose swi-prolog source apt fetches (without --source)")
@click.option("-j", "--workers", "jobs", type=click.IntRange(1, 256), default=None,
              help="compile jobs (default: the number of CPUs)")
@click.option("--no-packages", is_flag=True,
              help="do not install build tools with apt (they must be there)")
@click.option("--force", is_flag=True,
              help="build even when a suitable swipl is already on PATH or in the prefix")
@click.option("--dry-run", is_flag=True, help="print the build command and the next steps only")
@quiet_option
def group(prefix, source, sha256, suite, jobs, no_packages, force, dry_run, quiet) -> None:
    """Build SWI-Prolog >= 9.1.12 from source for janus-swi (about 5-10 minutes).

    janus-swi, nesybench's bridge to SWI-Prolog, has no wheel: pip builds it against the
    `swipl` on PATH. When that is missing or older than 9.1.12, this builds a minimal
    SWI-Prolog into the user cache folder with the same script as `make setup`, printing
    each stage, then prints the two lines to run next (the new swipl first on PATH, and
    janus-swi rebuilt against it). Build tools come from apt where apt exists.
    """
    prefix = os.path.abspath(prefix) if prefix else str(cache_root() / "swipl")
    bindir = os.path.join(prefix, "bin")
    if not force:
        for exe in (os.path.join(bindir, "swipl"), shutil.which("swipl")):
            found = swipl_version(exe) if exe and os.path.isfile(exe) else None
            if found and found >= MIN_VERSION:
                click.echo(f"SWI-Prolog {_dotted(found)} is already at {exe} (--force builds "
                           "anyway); janus-swi is built against the swipl first on PATH:")
                for line in next_steps(os.path.dirname(exe)):
                    click.echo(f"  {line}")
                return
    cmd = ["bash", build_script(), "--prefix", prefix, "--suite", suite]
    cmd += ["--source", source] if source else []
    cmd += ["--sha256", sha256] if sha256 else []
    cmd += ["--jobs", str(jobs)] if jobs else []
    cmd += ["--no-packages"] if no_packages else []
    if dry_run:
        click.echo(shlex.join(cmd))
        for line in next_steps(bindir):
            click.echo(line)
        return
    sys.stdout.flush()
    # stages go to stderr as they come; under -q they are kept back and shown only on failure
    run = subprocess.run(cmd, check=False, stderr=subprocess.PIPE if quiet else None,
                         text=True, errors="replace")
    status = run.returncode
    if status != 0:
        if quiet and run.stderr:
            click.echo("\n".join(run.stderr.splitlines()[-30:]), err=True)
        raise NesyError(f"building SWI-Prolog failed (exit status {status}); the lines above "
                        f"say where, the logs are in {prefix}.build")
    found = swipl_version(os.path.join(bindir, "swipl"))
    if not found or found < MIN_VERSION:
        raise NesyError(f"the built {bindir}/swipl is SWI-Prolog "
                        f"{_dotted(found) if found else '(does not run)'}; janus-swi needs "
                        f">= {_dotted(MIN_VERSION)}: pass a newer --source")
    click.echo(f"SWI-Prolog {_dotted(found)} is in {bindir}. Next, in the environment that "
               "has nesybench:")
    for line in next_steps(bindir):
        click.echo(f"  {line}")
