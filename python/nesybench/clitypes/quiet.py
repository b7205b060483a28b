"""``-q/--quiet`` means one thing in every command: print nothing but errors and warnings.

Each command turns its own progress bars off when ``quiet`` is set (bars go to stderr). What
it would print on stdout (summary lines, tables, timings, "next:" hints) is discarded here, in
one place, for every command that has the option, so that no command can forget it. Standard
output is discarded at the file-descriptor level too, so output written by SWI-Prolog, by C
code or by worker processes started during the command is discarded as well. Errors and
warnings go to stderr and are kept, and so is the exit status.

``--json`` asks for output: with ``-q --json`` the JSON still goes to stdout.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator

import click

#: the help text of ``-q/--quiet`` in every command (and its ending where there is ``--json``)
QUIET_HELP = "print nothing but errors and warnings: no progress bars, no summary"
QUIET_JSON_HELP = " (with --json, the JSON still goes to stdout)"


def quiet_commands(command: click.Command) -> list[tuple[str, click.Command]]:
    """Every command under ``command`` (itself included) with a ``quiet`` parameter, as
    (space-separated path below ``command``, command) pairs."""
    found = []

    def walk(cmd: click.Command, path: str) -> None:
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, f"{path} {name}".strip())
        elif any(p.name == "quiet" for p in cmd.params):
            found.append((path, cmd))

    walk(command, "")
    return found


def make_quiet(command: click.Command) -> click.Command:
    """Give every command under ``command`` that has ``-q/--quiet`` its one meaning (see the
    module's docstring); returns ``command``. Applying it twice changes nothing."""
    for _, cmd in quiet_commands(command):
        if not getattr(cmd.callback, "quiet_wrapped", False):
            cmd.callback = _silenced_when_quiet(cmd.callback)
        has_json = any(p.name == "as_json" for p in cmd.params)
        for param in cmd.params:
            if param.name == "quiet" and isinstance(param, click.Option):
                param.help = QUIET_HELP + (QUIET_JSON_HELP if has_json else "")
    return command


def _silenced_when_quiet(callback: Callable) -> Callable:
    @functools.wraps(callback)
    def run(*args, **kwargs):
        if kwargs.get("quiet") and not kwargs.get("as_json"):
            with stdout_discarded():
                return callback(*args, **kwargs)
        return callback(*args, **kwargs)

    run.quiet_wrapped = True
    return run


@contextlib.contextmanager
def stdout_discarded() -> Iterator[None]:
    """Python's ``sys.stdout`` and file descriptor 1 both go to the null device inside."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:             # no descriptor 1 (a closed stdout): Python's stream only
        saved = None
    with open(os.devnull, "w", encoding="utf-8") as sink:
        if saved is not None:
            os.dup2(sink.fileno(), 1)
        try:
            with contextlib.redirect_stdout(sink):
                yield
        finally:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)


def quiet_option(f: Callable) -> Callable:
    """The ``-q/--quiet`` option of a command (its one meaning is given by :func:`make_quiet`,
    which the top-level command applies to every capability)."""
    return click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)(f)
