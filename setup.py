"""Build hook: the wheel carries the logic core as package data.

The repository keeps ``prolog/``, ``kb/`` and ``curricula/`` at its top level, where people
read and edit them. A built wheel carries them inside the package as
``nesybench/_data/{prolog,kb,curricula}``, where :mod:`nesybench.paths` finds them through
``importlib.resources``; the sdist carries them at the top level (MANIFEST.in), so a wheel
built from it is the same. An editable install copies nothing: it reads the source tree.
Everything else is in pyproject.toml.
"""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA_FOLDERS = ("prolog", "kb", "curricula")
SKIP = {"__pycache__", ".pytest_cache"}


def data_files() -> list[Path]:
    """Every file under the three folders, relative to the source root (sorted)."""
    out = []
    for folder in DATA_FOLDERS:
        for path in sorted((HERE / folder).rglob("*")):
            rel = path.relative_to(HERE)
            if path.is_file() and not SKIP.intersection(rel.parts) \
                    and not any(p.startswith(".") for p in rel.parts) \
                    and path.suffix not in (".pyc", ".qlf"):
                out.append(rel)
    return out


class BuildWithData(build_py):
    """``build_py``, then the three folders copied under ``nesybench/_data``."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for rel in data_files():
            dest = Path(self.build_lib) / "nesybench" / "_data" / rel
            self.mkpath(str(dest.parent))
            self.copy_file(str(HERE / rel), str(dest), preserve_mode=False)

    def get_outputs(self, include_bytecode=True):
        extra = [str(Path(self.build_lib) / "nesybench" / "_data" / rel) for rel in data_files()]
        return super().get_outputs(include_bytecode) + \
            ([] if getattr(self, "editable_mode", False) else extra)


setup(cmdclass={"build_py": BuildWithData})
