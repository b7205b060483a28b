"""A task's ground-truth rule, loaded into SWI-Prolog once and checked in batches.

The rule text (a task's ``positive_rule`` or ``rule_file``) is untrusted: it is loaded through
:func:`nesybench.logic.prolog.load_rules` (line-accurate syntax errors, sandbox) into a module
of its own that sees the background knowledge ``kb/kandy/bk.pl``. :class:`TaskRule` sends a
whole batch of candidate samples to ``kandy:check_sample_data/3`` (symbols as data) or
``kandy:check_samples/3`` (texts) in one call.
"""
from __future__ import annotations

import itertools

from ..errors import NesyError, PrologError
from ..logic import prolog
from .symbols import Symbol, to_data

BK_FILE = "kb/kandy/bk.pl"
_counter = itertools.count()


class TaskRule:
    """The ``valid/1`` rule of one task.

    Parameters
    ----------
    text : the Prolog clauses
    source, line_offset : the file holding the text and the line just before it (for errors)
    task : task label for error messages
    """

    def __init__(self, text: str, *, source: str | None = None, line_offset: int = 0,
                 task: str | None = None, field: str = "positive_rule"):
        prolog.use(BK_FILE)
        prolog.use("prolog/kandy.pl")
        self.text = text
        self.task = task
        self.field = field
        self.module = f"kandy_task_{next(_counter)}"
        self.predicates = prolog.load_rules(self.module, text, ["kandy_bk"], source=source,
                                            line_offset=line_offset, task=task, field=field)
        if "valid/1" not in self.predicates:
            raise NesyError("the rule does not define valid/1", file=source, task=task,
                            field=field)
        self.checked = 0

    def check(self, prolog_terms: list[str]) -> list[bool]:
        """Whether each sample (natural-encoding Prolog text, e.g. typed by a user) satisfies
        ``valid/1``. One Prolog call for the whole list."""
        return self._check("check_samples", list(prolog_terms))

    def check_symbols(self, symbols: list[Symbol]) -> list[bool]:
        """Whether each symbol satisfies ``valid/1``: the symbols go to Prolog as data
        (:func:`~nesybench.kandy.symbols.to_data`), not as text to parse. One Prolog call for
        the whole list."""
        return self._check("check_sample_data", [to_data(s) for s in symbols])

    def _check(self, predicate: str, samples: list) -> list[bool]:
        if not samples:
            return []
        try:
            res = prolog.once(
                f"catch((kandy:{predicate}(M, Ts, Fs), Err = \"\"), kandy_check_error(_I, _T, _E), "
                "(kandy:check_error_text(_E, _M), format(string(Err), '~w: ~w', [_T, _M]), Fs = []))",
                M=self.module, Ts=samples)
        except PrologError as exc:
            raise exc.where(task=self.task, field=self.field) from None
        flags = res["Fs"]
        if res["Err"]:
            raise NesyError(f"the rule raised an error on sample {res['Err']}",
                            task=self.task, field=self.field)
        self.checked += len(samples)
        return [f == 1 for f in flags]

    def close(self) -> None:
        prolog.once("safe_load:unload_rules(M)", M=self.module)
