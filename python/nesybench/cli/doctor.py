"""``nesybench doctor``: one line per component, with what to do about a missing one."""
from __future__ import annotations

import json

import click

from .. import doctor
from ..clitypes import quiet_option


@click.command("doctor", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.pass_context
@quiet_option
def group(ctx: click.Context, as_json: bool, quiet) -> None:
    """Check the installation: the core (swipl >= 9.1.12 and janus, clingo, problog, pysdd,
    klay, torch), the extras (ray, hub, clip, docs, Aleph via NESYBENCH_ALEPH), the native
    SKI kernel and the data cache.

    One line per component: status (ok, missing, old, mismatch = janus-swi built against
    another SWI-Prolog than the swipl whose home it would start with, off = extra not
    installed), version, and where it was found or what to do. janus is started in a
    subprocess first, so a janus that aborts is a line of the report. Exits with 1 when a core
    component is not ok."""
    report = doctor.diagnose()
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        click.echo(doctor.format_report(report))
    if not report.ok:
        ctx.exit(1)
