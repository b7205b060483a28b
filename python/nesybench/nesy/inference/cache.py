"""On-disk cache of compiled circuits, keyed by a hash of everything that determines them.

Location: ``circuits/`` in the user cache (:func:`nesybench.paths.cache_root`:
``$NESYBENCH_CACHE`` if set, else ``~/.cache/nesybench`` on Linux). An entry
is a folder ``<key>/`` with ``circuit.sdd`` (PySDD's SDD file), ``circuit.vtree`` and
``meta.json`` (choices, labels, variable map, compile statistics). Entries are written into a
temporary folder and renamed into place, so a crash never leaves a half-written entry.
:func:`lookup` reads an entry's ``meta.json`` through the contained reader (a regular file
inside the entry, bounded, strict JSON); an entry it cannot read is removed and compiled
again.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from ...paths import cache_root

ENGINE_VERSION = "nesy-engine-6"


def cache_dir() -> Path:
    """The circuit cache folder (created on first use)."""
    return cache_root() / "circuits"


def cache_key(*parts) -> str:
    """SHA-256 (hex, 24 chars) of the JSON of ``parts`` plus the engine version."""
    blob = json.dumps([ENGINE_VERSION, *parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


#: the largest ``meta.json`` of a cache entry read back
MAX_META_BYTES = 64 << 20


def lookup(key: str) -> tuple[Path, dict] | None:
    """``(entry folder, meta)`` of ``key`` if its entry is complete, else ``None``. The
    entry's ``meta.json`` is read through :class:`~nesybench.folder.DataFolder` (a regular
    file inside the entry, at most :data:`MAX_META_BYTES`, strict JSON, an object); an entry
    that fails is removed (it is compiled and stored again)."""
    from ...errors import NesyError  # noqa: PLC0415
    from ...folder import DataFolder  # noqa: PLC0415
    d = cache_dir() / key
    if not (os.path.isdir(d) and not os.path.islink(d)):
        return None
    try:
        entry = DataFolder(d, allow_hardlinks=False)
        if not (entry.exists("meta.json") and entry.exists("circuit.sdd")):
            return None
        meta = entry.read_json("meta.json", max_bytes=MAX_META_BYTES)
        if not isinstance(meta, dict):
            raise NesyError("not a JSON object", file=str(d / "meta.json"))
    except NesyError:
        shutil.rmtree(d, ignore_errors=True)
        return None
    return d, meta


def store(key: str, sdd, vtree, meta: dict) -> Path:
    """Write an entry atomically and return its folder."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        sdd.save(str(tmp / "circuit.sdd").encode())
        vtree.save(str(tmp / "circuit.vtree").encode())
        (tmp / "meta.json").write_text(json.dumps(meta, sort_keys=True, default=str))
        dest = root / key
        try:
            os.rename(tmp, dest)
        except OSError:     # another process stored it first
            shutil.rmtree(tmp, ignore_errors=True)
        return dest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
