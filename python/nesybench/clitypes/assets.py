"""Command arguments that take a shipped file by name: ``kandy generate easy``, ``rs count
xor``, ``runs start xor_counts``, ``kandy check easy/t15 ...``.

One parameter type for every such argument; the names come from the one registry of shipped
files (:func:`nesybench.paths.asset_names`), and an existing file always wins over a name.
"""
from __future__ import annotations

import click

from ..paths import ASSET_KINDS, asset_names, resolve_asset


class ShippedFile(click.ParamType):
    """A file path, or the name of a shipped file of ``kinds`` (a key of
    :data:`~nesybench.paths.ASSET_KINDS`, or several). The value passed on is the path as a
    string; an unknown name is one error (exit 2) that lists the nearest names."""

    name = "file"

    def __init__(self, *kinds: str) -> None:
        unknown = [k for k in kinds if k not in ASSET_KINDS]
        if unknown or not kinds:
            raise ValueError(f"unknown asset kinds {unknown}")
        self.kinds = kinds

    def get_metavar(self, param, ctx=None):  # noqa: ARG002 - click's signature
        return None

    def convert(self, value, param, ctx):
        if value is None:
            return None
        return str(resolve_asset(value, self.kinds))

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem  # noqa: PLC0415

        names = [n for k in self.kinds for n in asset_names(k) if n.startswith(incomplete)]
        return [CompletionItem(n) for n in names] + [CompletionItem(incomplete, type="file")]

