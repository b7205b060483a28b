"""Output folders that appear whole or not at all, checksums, canonical JSON.

Every generator writes into a temporary sibling of ``--out`` and renames it at the end, so a
failure (bad input, Ctrl-C, a crash) never leaves a half-written dataset behind.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import NesyError

FORMAT_VERSION = "1.0"


@contextlib.contextmanager
def atomic_output_dir(out: str | os.PathLike, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that becomes ``out`` when the block succeeds.

    Raises :class:`NesyError` up front when ``out`` exists (unless ``overwrite``) or its parent
    is not writable. On any exception the temporary folder is removed and ``out`` is untouched.
    """
    out = Path(out).resolve()
    if out.exists() and not overwrite:
        raise NesyError("output folder already exists (use --overwrite to replace it)",
                        file=str(out))
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    except OSError as exc:
        raise NesyError(f"cannot write the output folder: {exc.strerror}",
                        file=str(out)) from None
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise NesyError(f"cannot move the finished output into place: {exc.strerror}",
                        file=str(out)) from None


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def checksums(root: str | os.PathLike, exclude: tuple[str, ...] = (),
              known: dict[str, str] | None = None) -> dict[str, str]:
    """SHA-256 of every file under ``root`` keyed by its POSIX relative path, sorted.

    ``known`` maps relative paths to digests already computed by whoever wrote those files
    (e.g. render workers hash the bytes they write), so they are not read back.
    """
    root = Path(root)
    known = known or {}
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel not in exclude:
            out[rel] = known[rel] if rel in known else sha256_file(path)
    return out


def dumps(obj) -> str:
    """Canonical JSON: sorted keys, fixed separators, UTF-8 — byte-stable across machines."""
    return json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_json(path: str | os.PathLike, obj) -> None:
    Path(path).write_text(dumps(obj), encoding="utf-8")


def derive_seed(*parts) -> int:
    """A 63-bit seed from any parts (ints/strings), independent of ``PYTHONHASHSEED``."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1
