"""The ``nesybench`` command: one subcommand group per capability.

Each capability keeps its commands in its own ``cli.py`` (``nesybench.kandy.cli`` ...); this
module only assembles them and turns :class:`~nesybench.errors.NesyError` into one line on
stderr and exit status 2.
"""
from __future__ import annotations

import importlib
import sys

import click

from .. import __version__
from ..errors import NesyError

#: subcommand name -> module holding a click group called ``group``
CAPABILITIES = {
    "kandy": "nesybench.kandy.cli",
    "rudas": "nesybench.rudas.cli",
    "rs": "nesybench.shortcuts.cli",
    "ski": "nesybench.ski.cli",
}


class _LazyGroup(click.Group):
    """Import a capability's commands only when it is used (keeps ``--help`` fast)."""

    def list_commands(self, ctx):
        return sorted(CAPABILITIES)

    def get_command(self, ctx, name):
        module = CAPABILITIES.get(name)
        if module is None:
            return None
        try:
            return importlib.import_module(module).group
        except ModuleNotFoundError as exc:
            if exc.name == module:
                return None
            raise


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nesybench")
def cli():
    """nesybench: logic-programming-centric neuro-symbolic benchmarks.

    \b
    kandy  KANDY curricula of Kandinsky-pattern tasks (generate, show, browse, ilp-export, ilp-eval)
    rudas  RuDaS rule-learning datasets (generate, suite, evaluate)
    rs     reasoning shortcuts (generate, count, severity, metrics)
    ski    knowledge-injection robustness: KBANN/KINS/KILL under degradation (run, table, plot)
    """


def main(argv=None) -> int:
    """Entry point of the console script; returns the exit status."""
    try:
        cli.main(args=argv, prog_name="nesybench", standalone_mode=False)
    except NesyError as exc:
        click.echo(f"nesybench: error: {exc}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("nesybench: aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
