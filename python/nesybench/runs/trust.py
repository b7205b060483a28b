"""What in a spec runs a program: shell learners and Prolog files given to a learner.

A spec (a sweep spec, a study folder's stored cells, a RuDaS experiment spec) is data that
may come from someone else. Two things in it would run code that nesybench does not ship:

* a shell learner: a mapping with ``system: cmd``, or a ``command`` key, at any depth
  (``systems:``, ``options:``, ``learners:``, a study's ``params``);
* a Prolog file named for a learner: an ``aleph`` key (Aleph's ``aleph.pl``, consulted
  unsandboxed by ``swipl``).

:func:`commands_in` lists where they are; :func:`require_allowed` refuses them unless the
user passed ``--allow-commands`` on this invocation (``allow_commands=True`` in Python).
"""
from __future__ import annotations

from ..errors import NesyError

#: learner systems that run a shell command
COMMAND_SYSTEMS = frozenset({"cmd"})
#: keys whose (non-empty) value is a program to run or a Prolog file to consult
COMMAND_KEYS = {"command": "a shell command", "aleph": "a Prolog file (Aleph) run unsandboxed"}

#: deeper than this a spec is refused (nothing legitimate nests so far)
_MAX_DEPTH = 64


def commands_in(value, where: str = "params") -> list[tuple[str, str]]:
    """``(field, what)`` for each shell learner or learner Prolog file in ``value`` (a
    parsed spec: mappings, lists and scalars), searched at every depth."""
    found: list[tuple[str, str]] = []
    stack = [(value, where, 0)]
    while stack:
        v, at, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise NesyError(f"nested deeper than {_MAX_DEPTH} levels", field=at)
        if isinstance(v, dict):
            system = v.get("system")
            if isinstance(system, str) and system.strip().lower() in COMMAND_SYSTEMS:
                found.append((f"{at}.system", "a shell learner (system: cmd)"))
            for k, x in v.items():
                key = str(k)
                if key.strip().lower() in COMMAND_KEYS and x not in (None, "", False):
                    found.append((f"{at}.{key}", COMMAND_KEYS[key.strip().lower()]))
                stack.append((x, f"{at}.{key}", depth + 1))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                stack.append((x, f"{at}[{i}]", depth + 1))
    found.sort()
    return found


def require_allowed(found: list[tuple[str, str]], allow_commands: bool, *,
                    source=None, resume: bool = False) -> None:
    """Refuse (one :class:`NesyError`) when ``found`` lists something and the user did not
    pass ``--allow-commands``."""
    if not found or allow_commands:
        return
    fld, what = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    how = ("this study runs programs; resume it with --allow-commands after reading its "
           "spec.yaml" if resume else
           "pass --allow-commands to run the programs this spec names (a spec from someone "
           "else would run code)")
    raise NesyError(f"{what}{more}; {how}", file=None if source is None else str(source),
                    field=fld)
