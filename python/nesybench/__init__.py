"""nesybench: logic-programming-centric neuro-symbolic benchmarks.

Capabilities live in one subpackage each (``kandy``, ``rudas``, ``shortcuts``); the bridges to
SWI-Prolog (janus) and clingo live in :mod:`nesybench.logic` and nowhere else.
"""
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

try:        # the one place the version is kept is pyproject.toml (the package metadata)
    __version__ = version("nesybench")
except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
    __version__ = "0+unknown"

#: Repository root holding ``prolog/``, ``kb/`` and ``curricula/`` (editable install layout).
ROOT = Path(__file__).resolve().parents[2]
PROLOG_DIR = ROOT / "prolog"
KB_DIR = ROOT / "kb"
CURRICULA_DIR = ROOT / "curricula"

from .errors import NesyError  # noqa: E402


def load(path_or_name, split=None, **kwargs):
    """Load any data set nesybench makes (a generated folder, a curriculum or task YAML, a
    CSV/ARFF table or a built-in name such as ``"kandy-easy"``): see
    :func:`nesybench.data.load`."""
    from nesybench.data import load as _load  # noqa: PLC0415 - keeps `import nesybench` light

    return _load(path_or_name, split, **kwargs)


__all__ = ["NesyError", "ROOT", "PROLOG_DIR", "KB_DIR", "CURRICULA_DIR", "__version__", "load"]
