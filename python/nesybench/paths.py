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


def cache_swipl() -> Path | None:
    """``swipl/bin/swipl`` in the user cache folder, where ``nesybench setup-prolog`` builds
    one, else None."""
    exe = cache_root() / "swipl" / "bin" / "swipl"
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


# -- shipped assets by name ------------------------------------------------------------------

#: the kinds of shipped file a command takes by name: kind -> (folder under :func:`data_root`,
#: file suffix, what such a file is). A name is the file's path inside its folder without the
#: suffix: ``easy`` (``curricula/kandy/easy.yaml``), ``xor_counts``, ``easy/t15``.
ASSET_KINDS: dict[str, tuple[str, str, str]] = {
    "kandy-curriculum": ("curricula/kandy", ".yaml", "KANDY curriculum"),
    "rs-task": ("curricula/rs", ".yaml", "reasoning-shortcut task"),
    "sweep": ("curricula/sweeps", ".yaml", "sweep spec"),
    "rudas-experiment": ("curricula/rudas", ".yaml", "RuDaS experiment spec"),
    "kandy-rule": ("kb/kandy/rules", ".pl", "KANDY task rule"),
    "ski-rules": ("kb/ski", ".pl", "SKI rule file"),
    "irt-responses": ("kb/irt", ".csv", "IRT response matrix"),
}


def asset_names(kind: str) -> dict[str, str]:
    """The shipped files of ``kind`` (a key of :data:`ASSET_KINDS`): name -> registry name
    (``"xor"`` -> ``"curricula/rs/xor.yaml"``), sorted by name."""
    folder, suffix, _ = ASSET_KINDS[kind]
    out = {}
    for reg in sorted(shipped_names()):
        if reg.startswith(folder + "/") and reg.endswith(suffix):
            out[reg[len(folder) + 1:-len(suffix)]] = reg
    return out


def asset_label(path, kind: str) -> str:
    """How a command names a file it was given: a shipped file of ``kind`` by its name
    (``example_responses``, the same from a clone and a wheel), any other file as given."""
    folder, suffix, _ = ASSET_KINDS[kind]
    base = data_root() / folder
    p = Path(path)
    if p.suffix == suffix and p.is_absolute() and p.is_relative_to(base):
        return p.relative_to(base).with_suffix("").as_posix()
    return os.fspath(path)


def _key(name: str) -> str:
    return name.replace("-", "_")


def _nearest(value: str, names: list[str], n: int = 5) -> list[str]:
    """The names closest to ``value`` (difflib's ratio, on the whole name and on its last
    part, so ``t15`` finds ``easy/t15``), best first."""
    import difflib  # noqa: PLC0415

    def score(name: str) -> float:
        return max(difflib.SequenceMatcher(None, _key(value), _key(cand)).ratio()
                   for cand in {name, name.rsplit("/", 1)[-1]})
    scored = sorted(((score(name), name) for name in names), key=lambda x: (-x[0], x[1]))
    return [name for s, name in scored[:n] if s >= 0.5]


def resolve_asset(value, kinds: str | tuple[str, ...]) -> Path:
    """The file ``value`` means where a command takes a shipped file of ``kinds``.

    An existing file always wins: ``value`` is returned as given (anything there but a folder,
    so that the command's reader refuses a FIFO or a device in its own words). Otherwise ``value`` is the
    name of a shipped file of one of ``kinds`` (``easy``, ``xor``, ``easy/t15``; ``-`` and
    ``_`` alike) or its registry name (``curricula/rs/xor.yaml``, the same in a source tree
    and an installed wheel). Anything else is one :class:`~nesybench.errors.NesyError` that
    lists the nearest names."""
    from .errors import NesyError  # noqa: PLC0415

    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    text = os.fspath(value)
    if os.path.lexists(text) and not os.path.isdir(text):
        return Path(text)        # whatever it is, the command's own reader judges it
    names: dict[str, str] = {}
    for kind in kinds:
        for name, reg in asset_names(kind).items():
            names.setdefault(name, reg)
    regs = set(names.values())
    if text in regs:
        return data_root() / text
    hits = sorted({reg for name, reg in names.items() if _key(name) == _key(text)})
    if not hits and "/" not in text:  # a last part alone when it names one file (t18)
        hits = sorted({reg for name, reg in names.items()
                       if _key(name.rsplit("/", 1)[-1]) == _key(text)})
    what = " or ".join(ASSET_KINDS[k][2] for k in kinds)
    if len(hits) == 1:
        return data_root() / hits[0]
    if hits:
        both = [name for name, reg in names.items() if reg in hits]
        raise NesyError(f"names more than one shipped {what} ({', '.join(both)}): give one",
                        file=text)
    nearest = _nearest(text, list(names))
    pathlike = "/" in text or os.sep in text or bool(Path(text).suffix)
    if os.path.isdir(text):
        problem = f"a folder, not a {what} file"
    else:
        problem = f"{what} file not found"
    if not pathlike:
        problem += f", and no shipped {what} has that name"
    if nearest:
        hint = f"nearest names: {', '.join(nearest)}; `nesybench data list` lists them all"
    elif pathlike:
        hint = "`nesybench data list` lists the names of the shipped ones"
    else:
        hint = (f"shipped: {', '.join(list(names)[:8])}{' ...' if len(names) > 8 else ''}; "
                "`nesybench data list` lists them all")
    raise NesyError(f"{problem} ({hint})", file=text)
