"""Command-line types shared by every capability's ``cli.py``: the shipped-name parameter
type and the one meaning of ``-q/--quiet``. Imports click and the foundation modules only.

It sits below every capability (``docs/layout.md``), so a capability's commands never import
the top-level ``nesybench.cli`` package, which imports them.
"""
from __future__ import annotations

from .assets import ShippedFile
from .quiet import (QUIET_HELP, QUIET_JSON_HELP, make_quiet, quiet_commands, quiet_option,
                    stdout_discarded)

__all__ = ["QUIET_HELP", "QUIET_JSON_HELP", "ShippedFile", "make_quiet", "quiet_commands",
           "quiet_option", "stdout_discarded"]
