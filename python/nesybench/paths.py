"""Where nesybench finds the files it ships and where it keeps what it computes or fetches.

**Shipped files.** The logic core (``prolog/``), the knowledge bases (``kb/``) and the task
specifications (``curricula/``) are package data: a built wheel or sdist carries them as
``nesybench/_data/{prolog,kb,curricula}`` (copied there at build time by ``setup.py``), and
they are found through :mod:`importlib.resources`. A source tree (an editable install) has no
``_data`` folder; there the same three folders are the repository's top-level ones, beside
``python/``. :func:`data_root` returns whichever folder holds them, so a path such as
``kb/kandy/bk.pl`` means the same file in both layouts.

**Caches.** World tables, compiled kernels and data files read out of registry wheels go to
one user cache folder, :func:`cache_root`: ``$NESYBENCH_CACHE`` when set, else the platform's
cache folder (``$XDG_CACHE_HOME/nesybench`` or ``~/.cache/nesybench`` on Linux,
``~/Library/Caches/nesybench`` on macOS, ``%LOCALAPPDATA%\\nesybench\\Cache`` on Windows);
never site-packages, the repository or the current folder.
"""
from __future__ import annotations

import os
import sys
from functools import lru_cache
from importlib import resources
from pathlib import Path

#: the three shipped folders
DATA_FOLDERS = ("prolog", "kb", "curricula")
#: the package folder that holds them in a built distribution
PACKAGED = "_data"
#: a file each layout must have; its presence tells the layouts apart
_MARKER = ("prolog", "nesybench.pl")


def _package_dir() -> Path:
    return Path(str(resources.files("nesybench")))


@lru_cache(maxsize=1)
def data_root() -> Path:
    """The folder that holds ``prolog/``, ``kb/`` and ``curricula/``.

    ``nesybench/_data`` inside an installed distribution; in a source tree (no ``_data``), the
    repository root above ``python/nesybench``."""
    package = _package_dir()
    packaged = package / PACKAGED
    if packaged.joinpath(*_MARKER).is_file():
        return packaged
    source = package.parent.parent
    if source.joinpath(*_MARKER).is_file():
        return source
    return packaged  # a broken installation: later look-ups name the missing file


def source_tree() -> Path | None:
    """The repository root when nesybench runs from a source tree, else None (an installed
    distribution). Only development conveniences use it: the SWI-Prolog that ``make setup``
    builds into ``.deps/swipl``."""
    root = data_root()
    return None if root.name == PACKAGED else root


def project_swipl() -> Path | None:
    """``.deps/swipl/bin/swipl`` of a source tree where ``make setup`` built one, else None."""
    tree = source_tree()
    if tree is None:
        return None
    exe = tree / ".deps" / "swipl" / "bin" / "swipl"
    return exe if exe.is_file() and os.access(exe, os.X_OK) else None


def platform_cache() -> Path:
    """The platform's per-user cache folder for nesybench (not created)."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "nesybench"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "nesybench" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".cache") / "nesybench"


def cache_root() -> Path:
    """``$NESYBENCH_CACHE``, else :func:`platform_cache` (not created here)."""
    base = os.environ.get("NESYBENCH_CACHE")
    return Path(base).expanduser() if base else platform_cache()


#: the shipped folders whose files a user's data may name (``knowledge: kb/shortcuts/xor.lp``)
NAMED_FOLDERS = ("kb", "curricula")


@lru_cache(maxsize=1)
def shipped_names() -> frozenset[str]:
    """The registry of files nesybench ships: their names relative to :func:`data_root`
    (``kb/shortcuts/xor.lp``, ``curricula/rs/driving.yaml``, ``prolog/nesybench.pl`` ...),
    listed once from the package's own folders (regular files only)."""
    root = data_root()
    names: set[str] = set()
    for top in DATA_FOLDERS:
        for dirpath, dirnames, filenames in os.walk(root / top):  # the package's own files
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            rel = Path(dirpath).relative_to(root).as_posix()
            for f in filenames:
                if not f.startswith(".") and os.path.isfile(os.path.join(dirpath, f)) and \
                        not os.path.islink(os.path.join(dirpath, f)):
                    names.add(f"{rel}/{f}")
    return frozenset(names)


def shipped(name, *, folders: tuple[str, ...] = DATA_FOLDERS) -> Path | None:
    """The file nesybench ships under the name ``name`` (``kb/shortcuts/xor.lp``), looked up
    in :func:`shipped_names`, or None when it ships no such file. Only names in the registry
    are accepted, under one of ``folders``: a user's string is never resolved against the
    installation (``Makefile``, ``../x``, ``kb/../pyproject.toml`` are not names)."""
    if not isinstance(name, str) or name.split("/", 1)[0] not in folders or \
            name not in shipped_names():
        return None
    return data_root() / name


def shipped_text(name, *, folders: tuple[str, ...] = DATA_FOLDERS) -> str | None:
    """The UTF-8 text of the shipped file ``name`` (see :func:`shipped`), or None when
    nesybench ships no such file."""
    path = shipped(name, folders=folders)
    return None if path is None else path.read_text(encoding="utf-8")
