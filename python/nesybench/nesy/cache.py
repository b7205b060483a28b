"""On-disk cache of compiled circuits, keyed by a hash of everything that determines them.

Location: ``$NESYBENCH_CACHE/circuits`` if set, else ``~/.cache/nesybench/circuits``. An entry
is a folder ``<key>/`` with ``circuit.sdd`` (PySDD's SDD file), ``circuit.vtree`` and
``meta.json`` (choices, labels, variable map, compile statistics). Entries are written into a
temporary folder and renamed into place, so a crash never leaves a half-written entry.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

ENGINE_VERSION = "nesy-engine-6"


def cache_dir() -> Path:
    """The circuit cache folder (created on first use)."""
    root = os.environ.get("NESYBENCH_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "nesybench"
    return base / "circuits"


def cache_key(*parts) -> str:
    """SHA-256 (hex, 24 chars) of the JSON of ``parts`` plus the engine version."""
    blob = json.dumps([ENGINE_VERSION, *parts], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def lookup(key: str) -> Path | None:
    """The entry folder of ``key`` if it is complete, else ``None``."""
    d = cache_dir() / key
    if (d / "meta.json").exists() and (d / "circuit.sdd").exists():
        return d
    return None


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
