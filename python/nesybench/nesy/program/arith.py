"""ProbLog's arithmetic, one implementation for every grounder, with its results bounded.

ProbLog evaluates ``is/2`` and the arithmetic comparisons in Python, with the function table
of ``problog.logic`` (``//`` is Python's floor division, ``mod`` and ``rem`` are both
Python's ``%``, ``/`` always gives a float, ``round`` rounds half to even, ``integer(2.5)``
truncates, ``sign`` gives an integer, ...), and stores the result of ``is/2`` as a constant
whose float value is rounded to 15 decimals. The SWI-Prolog grounder
(``prolog/problog_ground.pl``) calls :func:`apply`, :func:`compare` and :func:`result` for
every arithmetic step it does not take on plain integers itself, so both grounders compute
with the same table by construction.

Where nesybench deliberately differs from stock ProbLog, both grounders differ the same way
(:func:`guarded` installs the same bounds in ProbLog's table while ProbLog's engine runs):

* an integer result is bounded *before* it is computed: ``**``, ``^``, ``<<`` and ``*``
  refuse a result of more than :data:`MAX_INT_BITS` bits (ProbLog would compute
  ``7 ** (10 ** 9)`` for minutes, out of reach of any time limit);
* a float overflow (``10.0 ** 400``), a complex result and an operand of the wrong type are
  errors of the program, reported in one line (ProbLog ends with a Python traceback).
"""
from __future__ import annotations

import contextlib
import math
import threading

#: the largest integer result, in bits, that ``**``, ``^``, ``<<`` and ``*`` compute
#: (about 30,000 decimal digits)
MAX_INT_BITS = 100_000

_NUMBERS = (int, float)


class ArithmeticFault(Exception):
    """An arithmetic step the program asked for cannot be computed (the message says why)."""


def _table() -> dict:
    from problog.logic import _arithmetic_functions
    return _arithmetic_functions


def _int_bits(x) -> int:
    return abs(x).bit_length() if isinstance(x, int) else 0


def shown(x) -> str:
    """``x`` for a message: an integer of more than 30 digits by its size (Python refuses to
    write integers of more than 4,300 digits as text)."""
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 100:
        return f"an integer of about {x.bit_length() * 0.30103:,.0f} digits"
    return repr(x) if isinstance(x, str) else str(x)


def check_size(name: str, a, b) -> None:
    """Raise :class:`ArithmeticFault` when integer ``a name b`` would exceed
    :data:`MAX_INT_BITS` bits (checked from the operands' sizes, before computing)."""
    if not (isinstance(a, int) and isinstance(b, int)):
        return
    if name in ("**", "^"):
        if b <= 0 or abs(a) <= 1:
            return
        bits = b * math.log2(abs(a))
    elif name == "<<":
        if b <= 0 or a == 0:
            return
        bits = _int_bits(a) + b
    elif name == "*":
        bits = _int_bits(a) + _int_bits(b)
    else:
        return
    if bits > MAX_INT_BITS:
        raise ArithmeticFault(f"integer result too large: {shown(a)} {name} {shown(b)} would "
                              f"have about "
                              f"{bits:,.0f} bits (nesybench computes at most "
                              f"{MAX_INT_BITS:,} bits)")


def _guard(name: str, fn):
    def checked(*args):
        if len(args) == 2:
            check_size(name, *args)
        try:
            out = fn(*args)
        except OverflowError:
            text = f" {name} ".join(map(shown, args)) if len(args) == 2 else \
                f"{name}({', '.join(map(shown, args))})"
            raise ArithmeticFault(f"float overflow in {text}") from None
        except TypeError:
            raise ArithmeticFault(f"{name}/{len(args)} is not defined for "
                                  f"{', '.join(type(a).__name__ for a in args)} operands"
                                  ) from None
        if isinstance(out, complex):
            raise ArithmeticFault(f"{name}/{len(args)} of {', '.join(map(shown, args))} is not "
                                  "a real number")
        return out
    checked.__wrapped__ = fn
    return checked


_bound_error: list = []


def bound_error_class():
    """The grounding error (a ``problog.errors.GroundingError``) that ProbLog's engine raises
    for an arithmetic step this module refuses. Not ProbLog's ``ArithmeticError``: ProbLog
    would write the expression into that one's message, and Python refuses to write an
    integer of more than 4,300 digits."""
    if not _bound_error:
        from problog.errors import GroundingError

        class ArithmeticBound(GroundingError):
            """An arithmetic step refused by ``nesybench.nesy.program.arith``."""

        _bound_error.append(ArithmeticBound)
    return _bound_error[0]


def _for_problog(fn):
    """``fn`` raising :func:`bound_error_class`, which ProbLog's engine reports as a
    grounding error of the program."""
    def call(*args):
        try:
            return fn(*args)
        except ArithmeticFault as exc:
            raise bound_error_class()(f"arithmetic: {exc}") from None
    call.__wrapped__ = fn.__wrapped__
    return call


_lock = threading.RLock()
_depth = 0
_saved: dict = {}


@contextlib.contextmanager
def guarded():
    """ProbLog's function table with every function bounded as :func:`apply` bounds it, for
    the duration of the block (nested blocks share one installation)."""
    global _depth
    with _lock:
        table = _table()
        if _depth == 0:
            _saved.clear()
            _saved.update(table)
            for key, fn in list(table.items()):
                table[key] = _for_problog(_guard(key[0], fn))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                table.clear()
                table.update(_saved)


def apply(name: str, args: list):
    """``[1, Value]`` of ProbLog's function ``name`` over the numbers ``args``, or ``[0,
    Message]`` (unknown function, division by zero, a math domain error, a bound of this
    module). Called by the SWI-Prolog grounder."""
    for a in args:
        if not isinstance(a, _NUMBERS) or isinstance(a, bool):
            return [0, f"{name}/{len(args)}: {shown(a)} is not a number"]
    fn = _table().get((name, len(args)))
    fn = getattr(fn, "__wrapped__", fn)
    if fn is None:
        return [0, f"unknown arithmetic function {name}/{len(args)}"]
    try:
        out = _guard(name, fn)(*args)
    except ArithmeticFault as exc:
        return [0, str(exc)]
    except ValueError as exc:
        return [0, f"{name}/{len(args)}: {exc}"]
    except ZeroDivisionError:
        return [0, "division by zero"]
    if isinstance(out, bool):
        out = int(out)
    return [1, out]


def atom_number(name: str) -> list:
    """ProbLog's ``atom_number(+Atom, -Number)`` of the atom named ``name``: ``[1, Value]``
    (Python's ``float`` of the name, an ``int`` where it is whole), ``[0]`` when the name is
    not a number (the call fails), ``[2, Message]`` where ProbLog's builtin raises (``inf``,
    ``nan``). Called by the SWI-Prolog grounder."""
    try:
        v = float(name)
    except ValueError:
        return [0]
    try:
        return [1, int(v)] if round(v) == v else [1, v]
    except (OverflowError, ValueError) as exc:
        return [2, f"atom_number/2: {exc} (ProbLog's engine raises here)"]


def compare(op: str, a, b) -> int:
    """``1`` when ``a op b`` holds for Python's numbers (``op`` one of ``<``, ``=<``, ``>``,
    ``>=``, ``=:=``, ``=\\=``), else ``0``: ints and floats compare exactly, NaN with nothing."""
    if op == "<":
        return int(a < b)
    if op == "=<":
        return int(a <= b)
    if op == ">":
        return int(a > b)
    if op == ">=":
        return int(a >= b)
    if op == "=:=":
        return int(a == b)
    return int(a != b)


def result(v):
    """The value ``is/2`` stores: ProbLog keeps a float constant rounded to 15 decimals."""
    from problog.logic import Constant
    return Constant(v).value if isinstance(v, float) else v
