"""One exception type for every user-facing failure.

Every error names where it came from (file, task, field, line) so that the CLI can print a
single line such as ``curricula/easy.yaml: task 3 'colours': field positive_set[0].color (line
12): unknown colour 'purple'`` and exit with status 2.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NesyError(Exception):
    """A user-facing error with its location.

    Attributes
    ----------
    message : str   what is wrong, in one sentence
    file : str | None   the file that holds the bad input
    task : str | None   task index and/or name inside that file
    field : str | None  dotted path of the offending field (``positive_set[0].stack[1].color``)
    line : int | None   1-based line number when known
    column : int | None 1-based column when known (printed as ``file:line:column``)
    """

    message: str
    file: str | None = None
    task: str | None = None
    field: str | None = None
    line: int | None = None
    column: int | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def where(self, **kw) -> "NesyError":
        """Return a copy with missing location parts filled from ``kw`` (inner info wins)."""
        for key, value in kw.items():
            if getattr(self, key) is None and value is not None:
                setattr(self, key, value)
        return self

    def __str__(self) -> str:
        parts = []
        if self.file:
            parts.append(str(self.file) + (f":{self.line}" if self.line else "")
                         + (f":{self.column}" if self.line and self.column else ""))
        if self.task is not None:
            parts.append(f"task {self.task}")
        if self.field:
            parts.append(f"field {self.field}")
        if self.line and not self.file:
            parts.append(f"line {self.line}" + (f", column {self.column}" if self.column
                                                 else ""))
        return ": ".join(parts + [self.message])


def yaml_error(exc: Exception, source: str | None = None, **where) -> NesyError:
    """The one wording of a YAML problem, for every reader of user YAML: ``FILE:LINE:COLUMN:
    YAML does not parse: PROBLEM`` (``where`` adds task/field). ``exc`` is a
    ``yaml.YAMLError``; a ``RecursionError`` (nesting deeper than the parser's stack) is worded
    the same way."""
    if isinstance(exc, RecursionError):
        return NesyError("YAML does not parse: nested too deeply", file=source, **where)
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or exc
    context = getattr(exc, "context", None)
    text = " ".join(str(problem).split())
    if context:
        text += f" ({' '.join(str(context).split())})"
    return NesyError(f"YAML does not parse: {text}", file=source,
                     line=mark.line + 1 if mark is not None else None,
                     column=mark.column + 1 if mark is not None else None, **where)


class PrologError(NesyError):
    """An error raised while loading or running Prolog code (syntax, existence, sandbox)."""


class UnsafeRuleError(PrologError):
    """Untrusted Prolog text tried to call something outside the sandbox."""


class BudgetExceeded(NesyError):
    """A time or size budget was hit; partial results may be attached as ``partial``."""


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so that it unwinds exactly like Ctrl-C (workers
    stopped, temporary folders removed) and the command exits with 143. Defined here, below
    every capability, so that :mod:`nesybench.logic.prolog` can raise it without importing the
    command line (also importable as ``nesybench.cli.Terminated``)."""
