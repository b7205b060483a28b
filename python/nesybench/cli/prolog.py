"""``nesybench prolog``: SWI-Prolog with the nesybench library loaded.

``make setup`` uses a ``swipl`` from ``PATH`` or builds one into ``.deps/swipl/bin``, which is
not on ``PATH``; this command finds that one (the built one first) and starts it with
``prolog/nesybench.pl`` loaded, so that the predicates of the Prolog guide are at hand.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys

import click

from .. import PROLOG_DIR
from ..errors import NesyError
from ..paths import project_swipl

LIBRARY = PROLOG_DIR / "nesybench.pl"


def find_swipl() -> str:
    """The project's SWI-Prolog: ``.deps/swipl/bin/swipl`` when ``make setup`` built one,
    else the ``swipl`` on ``PATH``."""
    built = project_swipl()
    if built is not None:
        return str(built)
    found = shutil.which("swipl")
    if found:
        return found
    raise NesyError("SWI-Prolog not found: run `make setup` (it builds one into .deps/swipl) "
                    "or put a swipl >= 9.1.12 on PATH")


@click.command("prolog", context_settings={"ignore_unknown_options": True,
                                           "help_option_names": ["-h", "--help"]})
@click.option("--print-command", is_flag=True,
              help="print the swipl command line instead of starting it")
@click.argument("swipl_args", nargs=-1, type=click.UNPROCESSED)
def group(print_command: bool, swipl_args: tuple[str, ...]) -> None:
    """Start SWI-Prolog with the nesybench library (prolog/nesybench.pl) loaded.

    Arguments after `--` go to swipl before the library, e.g.
    `nesybench prolog -- -g "untrusted_limits(I, S), print(I-S), nl" -t halt`.
    Queries name files relative to the current folder (run it from the repository root).
    """
    args = [find_swipl(), *swipl_args, str(LIBRARY)]
    if print_command:
        click.echo(shlex.join(args))
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(args[0], args)
