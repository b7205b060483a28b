"""The ILP language bias of KANDY: encodings, background-knowledge sizes, Aleph settings, mode
declarations, determinations, and the background knowledge as one text.

Paper, supplementary §2 and §4.5 (the knowledge bases) and Tables 2–4 (the settings).
"""
from __future__ import annotations

import re
from pathlib import Path

from ... import KB_DIR
from ...errors import NesyError

ENCODINGS = ("natural", "pointer")
KBS = ("minimal", "mid", "large")
SPLITS = ("train", "val", "test")

#: Aleph settings written into every .b file (supplementary Table 2 constants; clauselength is
#: the Easy ``max_size`` of Table 3). Override per export with ``settings=``.
DEFAULT_SETTINGS: dict[str, object] = {
    "i": 5,
    "clauselength": 6,
    "minacc": 0.5,
    "noise": 5,
    "minpos": 2,
    "depth": 15,
    "nodes": 20000,
}

#: Aleph ``newvars`` (the paper's ``max_vars``, the largest number of new variables in a clause)
#: per encoding: the best Easy values of supplementary Table 4 (NAT 12, PTR 6). Written after
#: :data:`DEFAULT_SETTINGS`; ``settings={"newvars": N}`` overrides it, ``None`` drops it.
DEFAULT_NEWVARS: dict[str, int] = {"natural": 12, "pointer": 6}

# Mode declarations (recall, template). Types: sample (pointer example constant), obj (an atomic
# shape, a composition term or a pointer constant), list (of obj), int, and the constants shape,
# color, size, op (compositional operator), name (named object).
_MODES_MIN_COMMON = [
    (1, "extract_shape(+obj, #shape)"),
    (1, "extract_color(+obj, #color)"),
    (1, "extract_size(+obj, #size)"),
    ("*", "exists_shape(#shape, +list)"),
    ("*", "exists_color(#color, +list)"),
    ("*", "exists_size(#size, +list)"),
    (1, "same_shape(#shape, +list)"),
    (1, "same_color(#color, +list)"),
    (1, "same_size(#size, +list)"),
    ("*", "contains(+obj, -obj)"),
    ("*", "recursive_contains(+obj, -obj)"),
]
_MODES_STRUCT = {
    "natural": [
        (1, "extract_operator(+obj, #op)"),
        (1, "extract_children(+obj, -list)"),
        (1, "extract_op_and_chld(+obj, #op, -list)"),
        (1, "atom(+obj)"),
    ],
    "pointer": [
        (1, "sample_is(+sample, -obj)"),
        (1, "defined_as(+obj, #op, -list)"),
    ],
}
_MODES_BUILTIN_MIN = [
    (1, "reverse(+list, -list)"),
    (1, "length(+list, -int)"),
    (1, "length(+list, #int)"),
]
_MODES_MID = [
    ("*", "recursive_contains2(+obj, -obj, -int)"),
    ("*", "contains_composition(+obj, #op)"),
    ("*", "contains_composition_depth(+obj, #op, -int)"),
    (1, "same_attribute(+list)"),
    (1, "same_non_size(+list)"),
    (1, "all_same(-obj, +list)"),
    (1, "expand2(+list, -obj, -obj)"),
    (1, "expand4(+list, -obj, -obj, -obj, -obj)"),
    (1, "expand8(+list, -obj, -obj, -obj, -obj, -obj, -obj, -obj, -obj)"),
    (1, "expand9(+list, -obj, -obj, -obj, -obj, -obj, -obj, -obj, -obj, -obj)"),
    (1, "odd(+int)"),
    (1, "even(+int)"),
    (1, "first(+list, -obj)"),
    (1, "last(+list, -obj)"),
    (1, "prepend(+obj, +list, -list)"),
    (1, "droplast(+list, -list)"),
    (1, "middle(+list, -list)"),
    (1, "getmiddle(+list, -obj)"),
    (1, "dropmiddle(+list, -list)"),
    (1, "less_eq(+int, +int)"),
    (1, "less(+int, +int)"),
    (1, "greater(+int, +int)"),
    (1, "same(+obj, +obj)"),
    (1, "different(+obj, +obj)"),
    (1, "delete(+list, +obj, -list)"),
    ("*", "nth0(-int, +list, -obj)"),
    ("*", "member(-obj, +list)"),
]
# The LARGE KB's "cheat" predicates (paper footnote 9, supplementary §4.5.2).
_MODES_LARGE = [
    (1, "house(+obj)"),
    (1, "car(+obj)"),
    (1, "tower(+obj)"),
    (1, "wagon(+obj)"),
    (1, "traffic_light(+obj)"),
    ("*", "is_named_object(+obj, #name)"),
    (1, "symmetric_list(+list)"),
    ("*", "forall_shared_shape(+obj, #shape)"),
    ("*", "forall_shared_color(+obj, #color)"),
    ("*", "forall_shared_named_obj(+obj, #name)"),
    (1, "pseudo_palindrome(+list)"),
    (1, "pseudo_palindrome2(+list)"),
]



def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    """One error naming ``name`` and the allowed values when ``value`` is not among them."""
    if value not in choices:
        raise NesyError(f"unknown {name} {value!r} (expected one of {', '.join(choices)})",
                        field=name)


def mode_declarations(encoding: str, kb: str) -> list[tuple[object, str]]:
    """The ``modeb`` (recall, template) pairs offered to the learner for ``encoding`` x ``kb``."""
    check_choice("encoding", encoding, ENCODINGS)
    check_choice("kb", kb, KBS)
    modes = _MODES_MIN_COMMON + _MODES_STRUCT[encoding] + _MODES_BUILTIN_MIN
    if kb in ("mid", "large"):
        modes = modes + _MODES_MID
    if kb == "large":
        modes = modes + _MODES_LARGE
    return modes


def determinations(encoding: str, kb: str) -> list[str]:
    """The ``Name/Arity`` of every body predicate the learner may use (one
    ``determination(valid/1, Name/Arity)`` each), in mode order without repeats."""
    seen: list[str] = []
    for _, t in mode_declarations(encoding, kb):
        name = t.split("(", 1)[0]
        pi = f"{name}/{t.count(',') + 1}"
        if pi not in seen:
            seen.append(pi)
    return seen


def bk_file(encoding: str, kb: str) -> Path:
    """Path of the background-knowledge file ``kb/kandy/ilp/<encoding>_<kb>.pl``."""
    check_choice("encoding", encoding, ENCODINGS)
    check_choice("kb", kb, KBS)
    return KB_DIR / "kandy" / "ilp" / f"{encoding}_{kb}.pl"


_INCLUDE = re.compile(r"^:- include\('([^']+)'\)\.\s*$")


def bk_text(encoding: str, kb: str) -> str:
    """The knowledge base as one stand-alone text: each ``:- include('part.pl').`` line of
    :func:`bk_file` replaced by that part (paths relative to the including file), as Aleph
    reads the exported ``.b`` file on its own."""
    return _inline_includes(bk_file(encoding, kb))


def _inline_includes(path: Path, depth: int = 0) -> str:
    if depth > 8:
        raise NesyError("include nesting too deep", file=str(path))
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = _INCLUDE.match(line)
        if m:
            part = (path.parent / m[1]).resolve()
            out.append(f"% ---- {part.relative_to(KB_DIR.parent).as_posix()} ----")
            out.append(_inline_includes(part, depth + 1).rstrip("\n"))
        else:
            out.append(line)
    return "\n".join(out) + "\n"



def aleph_settings(settings: dict | None, encoding: str) -> dict:
    """:data:`DEFAULT_SETTINGS` and the encoding's ``newvars`` (:data:`DEFAULT_NEWVARS`),
    then ``settings`` (a ``None`` value removes that setting)."""
    sett = dict(DEFAULT_SETTINGS)
    sett["newvars"] = DEFAULT_NEWVARS[encoding]
    for k, v in (settings or {}).items():
        if v is None:
            sett.pop(k, None)
        else:
            sett[k] = v
    return sett


def _fmt_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        r = repr(v)                 # Prolog floats need a dot: 1e-05 -> 1.0e-05
        return r.replace("e", ".0e", 1) if "e" in r and "." not in r else r
    return str(v)


def bias_text(encoding: str, kb: str, settings: dict) -> str:
    """The head of an exported ``.b`` file: Aleph's operators, portability shims between
    classic Aleph and the SWI-Prolog pack, ``settings``, modes and determinations."""
    lines = [
        "% Aleph's operators, so that the file also reads outside Aleph.",
        ":- op(500, fy, #).",
        "",
        "% Portability: classic Aleph 5 (aleph.pl consulted into user) defines set/2 and",
        "% determination/2; the SWI-Prolog pack (library(aleph)) calls them aleph_set/2 and",
        "% aleph:determination/3. Define the two only where they are missing.",
        ":- if(\\+ current_predicate(set/2)).",
        ":- prolog_load_context(module, M),",
        "   assertz(M:(set(K, V) :- aleph:aleph_set(M:K, V))),",
        "   assertz(M:(determination(P, Q) :- aleph:determination(P, Q, M))).",
        ":- endif.",
        "",
        "% Settings (paper, supplementary Tables 2-3).",
    ]
    lines += [f":- set({k}, {_fmt_value(v)})." for k, v in settings.items()]
    head = "valid(+sample)" if encoding == "pointer" else "valid(+obj)"
    lines += ["", "% Mode declarations.", f":- modeh(1, {head})."]
    modes = mode_declarations(encoding, kb)
    lines += [f":- modeb({r}, {t})." for r, t in modes]
    lines += ["", "% Determinations."]
    lines += [f":- determination(valid/1, {pi})." for pi in determinations(encoding, kb)]
    return "\n".join(lines) + "\n"

