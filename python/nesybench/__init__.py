"""nesybench: logic-programming-centric neuro-symbolic benchmarks.

Capabilities live in one subpackage each (``kandy``, ``rudas``, ``shortcuts``); the bridges to
SWI-Prolog (janus) and clingo live in :mod:`nesybench.logic` and nowhere else.
"""
from importlib.metadata import PackageNotFoundError, version

try:        # the one place the version is kept is pyproject.toml (the package metadata)
    __version__ = version("nesybench")
except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
    __version__ = "0+unknown"

from .paths import data_root  # noqa: E402

#: The folder holding ``prolog/``, ``kb/`` and ``curricula/``: ``nesybench/_data`` in an
#: installed distribution, the repository root in a source tree (see :mod:`nesybench.paths`).
#: Relative paths such as ``kb/kandy/bk.pl`` are resolved against it.
ROOT = data_root()
PROLOG_DIR = ROOT / "prolog"
KB_DIR = ROOT / "kb"
CURRICULA_DIR = ROOT / "curricula"

from .errors import NesyError  # noqa: E402


#: package attributes served by a submodule and imported on first use (PEP 562):
#: ``nesybench.load`` is :func:`nesybench.data.load`. ``import nesybench`` stays light, and the
#: package itself imports none of its capabilities (imports run one way).
_LAZY = {"load": "nesybench.data"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nesybench' has no attribute {name!r}")
    import importlib  # noqa: PLC0415

    return getattr(importlib.import_module(module), name)


__all__ = ["NesyError", "ROOT", "PROLOG_DIR", "KB_DIR", "CURRICULA_DIR", "__version__", "load"]
