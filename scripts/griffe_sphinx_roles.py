"""A griffe extension for the documentation site: docstrings use Sphinx's inline roles
(``:class:`NesyError` ``, ``:func:``, ``:mod:``, ``:meth:``, ``:data:``, ``:attr:``, ...),
which mkdocstrings would show literally. Each role becomes inline code, linked to the object's
API entry when the name resolves (an optional cross-reference: no link, no warning, when the
object has no entry on the site). ``:doc:`page` `` becomes the page's name in code. A doctest
block (``>>>`` lines and their output, up to a blank line) becomes a Python code block, as
reST shows it, instead of Markdown text.

mkdocs.yml loads it: ``plugins: mkdocstrings: handlers: python: options: extensions``."""
from __future__ import annotations

import html
import re

import griffe

#: ``:class:`X` ``, ``:py:func:`~a.b` ``, ``:meth:`title <a.b.c>` ``
ROLE = re.compile(r":(?:py:)?(?P<role>class|func|meth|mod|data|attr|exc|obj|const|doc):"
                  r"`(?P<body>[^`\n]+)`")


def _target(body: str) -> tuple[str, str]:
    """(text shown, target name) of a role's body."""
    titled = re.fullmatch(r"(?P<title>.*?)\s*<(?P<target>[^<>]+)>", body)
    if titled and titled["title"]:
        return titled["title"], titled["target"]
    if body.startswith("~"):
        target = body[1:].lstrip(".")
        return target.rsplit(".", 1)[-1], target
    target = body.lstrip(".")
    return target, target


def _resolve(obj: griffe.Object | None, name: str) -> str:
    """The full path of ``name`` as seen from ``obj`` (its module's imports and members)."""
    if obj is None or name.startswith("nesybench."):
        return name
    head, _, rest = name.partition(".")
    scope = obj
    while scope is not None:
        try:
            full = scope.resolve(head)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            scope = scope.parent
            continue
        return f"{full}.{rest}" if rest else full
    return name


def _doctest_blocks(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into (is a doctest block fenced as code, part)."""
    parts: list[tuple[bool, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(">>>"):
            j = i
            while j < len(lines) and lines[j].strip():
                j += 1
            body = "\n".join(line.rstrip() for line in lines[i:j])
            parts.append((True, f"```pycon\n{body}\n```"))
            i = j
        else:
            j = i
            while j < len(lines) and not lines[j].lstrip().startswith(">>>"):
                j += 1
            parts.append((False, "\n".join(lines[i:j])))
            i = j
    return parts


def convert(text: str, obj: griffe.Object | None = None) -> str:
    """``text`` with every Sphinx role replaced by inline code (linked where it resolves) and
    every doctest block fenced as code."""
    return "\n".join(part if code else _roles(part, obj)
                     for code, part in _doctest_blocks(text))


def _roles(text: str, obj: griffe.Object | None) -> str:
    def one(match: re.Match) -> str:
        shown, target = _target(match["body"])
        code = f"<code>{html.escape(shown)}</code>"
        if match["role"] == "doc":
            return code
        ident = html.escape(_resolve(obj, target), quote=True)
        return f'<autoref identifier="{ident}" optional>{code}</autoref>'
    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the roles of every docstring once its object is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:  # noqa: ARG002
        self._walk(pkg, set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value, obj)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, seen)
