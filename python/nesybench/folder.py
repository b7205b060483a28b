"""The one reader of data-set folders and input files that may come from someone else.

Every loader of a data-set folder (``nesybench.load`` and ``export``, the KANDY / RS / RuDaS
readers, ``kandy import-reference``, the training loaders) reads through a
:class:`DataFolder`; a single input file named on the command line goes through
:func:`read_input`. The rules (docs/guides/safety.md, "Data-set folders"):

* a path named inside the folder (a manifest field, an annotations row) is **relative**: no
  absolute path, no ``..``, no NUL; it resolves inside the folder (a symbolic link inside is
  resolved and must stay inside);
* only **regular files** are read: a FIFO, a device (``/dev/zero``) or a socket is refused
  before it is opened (``os.stat``), and the file is opened with ``O_NOFOLLOW | O_NONBLOCK``
  and checked again on its descriptor;
* **sizes** are bounded before reading: :data:`MAX_FILE_BYTES` per file,
  :data:`MAX_IMAGE_PIXELS` per picture (read from the header, before decoding),
  :data:`MAX_CSV_FIELD` per CSV field;
* the **SHA-256** a manifest lists for a file is checked when the file is read (once per file
  per process; ``verify=False`` skips it): a file that does not match is an error;
* a regular file with more than one **hard link** is refused (it may be a file outside the
  folder linked in; ``allow_hardlinks=True``, ``nesybench --allow-hardlinks``, reads a
  deduplicated store of one's own);
* **JSON** objects name each key once (:func:`parse_json`; a repeated key would silently
  override the first, e.g. an appended ``"checksums": {}``);
* **archives** (zip: ``.pt``, ``.npz``; gzip) are checked before anything is decompressed:
  the sizes their entries declare, and the ratio to the archive's size
  (:func:`check_zip`, :func:`gunzip`);
* every problem is one :class:`~nesybench.errors.NesyError` naming the file (and line or
  field), never an ``OSError``, a PIL error or a ``ValueError``.

This module is the door of :mod:`nesybench`: tests/test_door.py fails on any other module that
opens, parses or lists a path itself (outside a short list of call sites, each with its
reason). Files nesybench ships are found by name through :func:`nesybench.paths.shipped`.

:class:`Schema`-like helpers (:func:`need`, :func:`need_int` ...) check manifest fields so
that a malformed field is one error naming the file and the field.
"""
from __future__ import annotations

import contextlib
import contextvars
import csv
import hashlib
import io
import json
import os
import stat
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from .errors import NesyError

#: the largest file read from a data-set folder (or given as an input file)
MAX_FILE_BYTES = 1 << 30
#: the largest manifest, CSV or text file read whole
MAX_TEXT_BYTES = 256 << 20
#: the most pixels of one picture (Pillow's decompression-bomb limit), checked before decoding
MAX_IMAGE_PIXELS = 89_478_485
#: the longest field of a CSV file (Python's csv default)
MAX_CSV_FIELD = 131_072
#: the most arguments of one fact of a RuDaS fact file
MAX_FACT_ARITY = 64
#: integers read from a data set are int64
INT64 = (-(1 << 63), (1 << 63) - 1)

#: the largest ratio of an archive's declared uncompressed size to its compressed size
MAX_ARCHIVE_RATIO = 100
#: archives whose declared contents stay under this many bytes are not held to the ratio
ARCHIVE_RATIO_FLOOR = 1 << 20
#: the most entries of one zip archive
MAX_ARCHIVE_ENTRIES = 10_000

#: (device, inode, size, mtime) -> the SHA-256 already checked in this process
_VERIFIED: dict[tuple, str] = {}

#: whether hard-linked files may be read from an input folder (``nesybench --allow-hardlinks``)
_ALLOW_HARDLINKS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "nesybench_allow_hardlinks", default=False)


@contextlib.contextmanager
def hardlinks_allowed(allow: bool = True):
    """Within the block, :class:`DataFolder` reads hard-linked files unless told otherwise
    (what ``nesybench --allow-hardlinks`` sets for one command)."""
    token = _ALLOW_HARDLINKS.set(bool(allow))
    try:
        yield
    finally:
        _ALLOW_HARDLINKS.reset(token)


# -- paths ------------------------------------------------------------------------------------
def relative(rel, *, file: str | None = None, field: str | None = None,
             line: int | None = None) -> str:
    """``rel`` checked as a path relative to a folder: a non-empty string, not absolute, with
    no ``..`` part and no NUL; returned as a POSIX path without ``.`` parts."""
    if not isinstance(rel, str) or not rel.strip():
        raise NesyError(f"expected a relative file path, got {_show(rel)}", file=file,
                        field=field, line=line)
    if "\0" in rel or "\\" in rel:
        raise NesyError(f"the path {_show(rel)} holds a NUL or a backslash", file=file,
                        field=field, line=line)
    p = PurePosixPath(rel)
    if p.is_absolute() or rel.startswith("~"):
        raise NesyError(f"the path {_show(rel)} is absolute; paths in a data set are relative "
                        "to its folder", file=file, field=field, line=line)
    if ".." in p.parts:
        raise NesyError(f"the path {_show(rel)} leaves the data-set folder (..)", file=file,
                        field=field, line=line)
    parts = [x for x in p.parts if x not in (".", "")]
    if not parts:
        raise NesyError(f"expected a file path, got {_show(rel)}", file=file, field=field,
                        line=line)
    return "/".join(parts)


def _show(v) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _regular_stat(path: str, label: str) -> os.stat_result:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise NesyError("missing (is the data set complete?)", file=label) from None
    except OSError as exc:
        raise NesyError(f"cannot read: {exc.strerror or exc}", file=label) from None
    if not stat.S_ISREG(st.st_mode):
        what = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO"
                if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "not a regular file")
        raise NesyError(f"not a regular file ({what}); only regular files are read",
                        file=label)
    return st


def _refuse_hardlink(st: os.stat_result, label: str) -> None:
    if st.st_nlink > 1:
        raise NesyError(f"the file has {st.st_nlink} hard links; a file of an input folder "
                        "may not be linked to a file elsewhere (nesybench --allow-hardlinks, "
                        "or allow_hardlinks=True, reads a deduplicated store of your own)",
                        file=label)


def _read_regular(path: str, label: str, max_bytes: int, *, hardlinks: bool = True,
                  head: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file ``path`` (no FIFO, device, socket; at most
    ``max_bytes``; with ``hardlinks=False`` a file of more than one hard link is refused).
    With ``head``, only the first ``head`` bytes are read, whatever the file's size."""
    st = _regular_stat(path, label)
    if not hardlinks:
        _refuse_hardlink(st, label)
    if head is not None:
        max_bytes = max(st.st_size, head)
    if st.st_size > max_bytes:
        raise NesyError(f"file is {st.st_size:,} bytes, over the limit of {max_bytes:,}",
                        file=label)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise NesyError(f"cannot read: {exc.strerror or exc}", file=label) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NesyError("not a regular file; only regular files are read", file=label)
        if not hardlinks:
            _refuse_hardlink(st, label)
        if head is not None:
            max_bytes = max(st.st_size, head)
        if st.st_size > max_bytes:
            raise NesyError(f"file is {st.st_size:,} bytes, over the limit of {max_bytes:,}",
                            file=label)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(max_bytes + 1 if head is None else head)
    except OSError as exc:
        raise NesyError(f"cannot read: {exc.strerror or exc}", file=label) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > max_bytes:
        raise NesyError(f"file grew over the limit of {max_bytes:,} bytes", file=label)
    return data, st


def read_input(path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of one input file named on the command line: a regular file (a symbolic
    link to one is fine; ``/dev/zero``, a FIFO or a folder is refused) of at most
    ``max_bytes``. One :class:`NesyError` otherwise."""
    return _read_regular(os.fspath(path), str(path), max_bytes)[0]


def read_input_text(path, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """:func:`read_input` decoded as UTF-8."""
    data = read_input(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NesyError(f"not UTF-8 text (byte {exc.start})", file=str(path)) from None


def read_user_file(path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of one file a user names (the same rules as :func:`read_input`): the single
    door for reading a user's file that is not part of a data-set folder."""
    return read_input(path, max_bytes=max_bytes)


def read_cache_entry(root, name: str, *, max_bytes: int) -> tuple[bytes, str] | None:
    """The bytes of ``name`` in nesybench's cache folder ``root`` and its label, read as any
    folder's file (a regular file inside it, no link out, no hard link, at most ``max_bytes``),
    or None when the folder or the entry is missing or refused: a cache entry is recomputed,
    never trusted."""
    if not os.path.isdir(root):
        return None
    try:
        folder = DataFolder(root, allow_hardlinks=False)
        if not folder.exists(name):
            return None
        return folder.read_bytes(name, max_bytes=max_bytes), folder.label(name)
    except (NesyError, OSError):
        return None


def check_input_file(path) -> Path:
    """``path`` checked as an input file without reading it: it exists and is a regular file
    (no FIFO or device, which would hang or never end)."""
    _regular_stat(os.fspath(path), str(path))
    return Path(path)


# -- the folder -------------------------------------------------------------------------------
class DataFolder:
    """A data-set folder read under the rules of this module.

    ``checksums`` maps relative paths to the SHA-256 the folder's manifest lists (checked
    when the file is read, unless ``verify`` is False). A file with more than one hard link is
    refused unless ``allow_hardlinks`` (default: what ``nesybench --allow-hardlinks`` set,
    else False).
    """

    def __init__(self, root, *, checksums: dict | None = None, verify: bool = True,
                 allow_hardlinks: bool | None = None):
        self.root = Path(root)
        self.allow_hardlinks = (_ALLOW_HARDLINKS.get() if allow_hardlinks is None
                                else bool(allow_hardlinks))
        try:
            self.real = os.path.realpath(self.root)
        except (OSError, ValueError) as exc:
            raise NesyError(f"cannot read the folder: {exc}", file=str(root)) from None
        if not os.path.isdir(self.real):
            raise NesyError("not a folder", file=str(root))
        self.checksums: dict[str, str] = dict(checksums or {})
        self.verify = verify
        #: every file read whole (relative paths): what an export checks against the
        #: manifest's checksums
        self.read_log: set[str] = set()

    def label(self, rel: str) -> str:
        return str(self.root / rel)

    def locate(self, rel, *, file: str | None = None, field: str | None = None,
               line: int | None = None) -> Path:
        """The real path of ``rel`` inside the folder (which need not exist); refused when
        ``rel`` is not a relative path or resolves (through a symbolic link) outside."""
        rel = relative(rel, file=file, field=field, line=line)
        try:
            real = os.path.realpath(os.path.join(self.real, rel))
        except (OSError, ValueError) as exc:
            raise NesyError(f"cannot resolve {_show(rel)}: {exc}", file=file or self.label(rel),
                            field=field, line=line) from None
        if not _inside(real, self.real):
            raise NesyError(f"the path {_show(rel)} resolves outside the data-set folder (a "
                            "symbolic link leaving it)", file=file or self.label(rel),
                            field=field, line=line)
        return Path(real)

    def exists(self, rel, **where) -> bool:
        """Whether ``rel`` is a regular file inside the folder (False when it is missing;
        an error when it leaves the folder or is a FIFO, device or folder)."""
        real = self.locate(rel, **where)
        if not os.path.lexists(real):
            return False
        st = _regular_stat(str(real), self.label(relative(rel)))
        if not self.allow_hardlinks:
            _refuse_hardlink(st, self.label(relative(rel)))
        return True

    def check(self, rel, *, file: str | None = None, field: str | None = None,
              line: int | None = None) -> str:
        """``rel`` checked to be a regular file inside the folder; returns it normalised.
        A missing file names ``file``/``line`` (the row that names it) when given."""
        rel = relative(rel, file=file, field=field, line=line)
        real = self.locate(rel, file=file, field=field, line=line)
        try:
            st = _regular_stat(str(real), self.label(rel))
            if not self.allow_hardlinks:
                _refuse_hardlink(st, self.label(rel))
        except NesyError as exc:
            if file is not None:
                raise NesyError(f"{rel}: {exc.message}", file=file, field=field,
                                line=line) from None
            raise
        return rel

    def read_bytes(self, rel, *, max_bytes: int = MAX_FILE_BYTES, **where) -> bytes:
        """The bytes of the regular file ``rel``, its SHA-256 checked when listed."""
        rel = relative(rel, **where)
        real = self.locate(rel, **where)
        data, st = _read_regular(str(real), self.label(rel), max_bytes,
                                 hardlinks=self.allow_hardlinks)
        self.read_log.add(rel)
        want = self.checksums.get(rel)
        if want is not None and self.verify:
            key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            if _VERIFIED.get(key) != want:
                got = hashlib.sha256(data).hexdigest()
                if got != want:
                    raise NesyError(f"SHA-256 mismatch: the manifest lists {want[:16]}..., "
                                    f"the file has {got[:16]}... (the file was changed or "
                                    "the checksum forged; --no-verify skips the check)",
                                    file=self.label(rel))
                _VERIFIED[key] = want
        return data

    def read_text(self, rel, *, max_bytes: int = MAX_TEXT_BYTES, **where) -> str:
        data = self.read_bytes(rel, max_bytes=max_bytes, **where)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NesyError(f"not UTF-8 text (byte {exc.start})",
                            file=self.label(relative(rel))) from None

    def read_json(self, rel, **where):
        return parse_json(self.read_text(rel, **where), self.label(relative(rel)))

    def read_npz(self, rel, **where) -> dict:
        """The arrays of the ``.npz`` archive ``rel`` (:func:`load_npz`: its entries' declared
        sizes checked before anything is decompressed, no pickles)."""
        return load_npz(self.read_bytes(rel, **where), self.label(relative(rel)))

    def read_npy(self, rel, **where):
        """The array of the ``.npy`` file ``rel`` (:func:`load_npy`: no pickles)."""
        return load_npy(self.read_bytes(rel, **where), self.label(relative(rel)))

    def read_head(self, rel, size: int, **where) -> tuple[bytes, int]:
        """``(the first size bytes, the file's size)`` of the regular file ``rel`` (a header
        read before a library opens the file; no SHA-256 check, no size limit: nothing more
        is read)."""
        rel = relative(rel, **where)
        real = self.locate(rel, **where)
        data, st = _read_regular(str(real), self.label(rel), 0, head=size,
                                 hardlinks=self.allow_hardlinks)
        return data, st.st_size

    def sha256(self, rel, **where) -> str:
        """The SHA-256 of ``rel``: the manifest's (checked) when listed, else computed."""
        rel = relative(rel, **where)
        want = self.checksums.get(rel)
        if want is not None and not self.verify:
            return want
        data = self.read_bytes(rel, **where)
        return want if want is not None else hashlib.sha256(data).hexdigest()

    def csv_rows(self, rel, *, required: tuple[str, ...] = ()) -> tuple[list[str],
                                                                        list[tuple[int, dict]]]:
        """``(header, [(line, row), ...])`` of a CSV file (``line`` is 1-based; the header is
        line 1); every field at most :data:`MAX_CSV_FIELD` characters."""
        return parse_csv(self.read_text(rel), self.label(relative(rel)), required=required)

    def image(self, rel, **where):
        """The picture ``rel`` as a loaded ``PIL.Image`` (its pixels counted from the header
        before decoding)."""
        return decode_image(self.read_bytes(rel, **where), self.label(relative(rel)))

    def files(self, rel: str = ".") -> list[str]:
        """The regular files directly inside the folder ``rel`` (relative paths, sorted);
        symbolic links and anything else are left out."""
        base = self.real if rel == "." else str(self.locate(rel))
        out = []
        try:
            with os.scandir(base) as it:
                for e in it:
                    if e.is_file(follow_symlinks=False):
                        out.append(e.name if rel == "." else f"{relative(rel)}/{e.name}")
        except OSError as exc:
            raise NesyError(f"cannot list: {exc.strerror or exc}",
                            file=str(self.root / rel)) from None
        return sorted(out)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


class DuplicateKeyError(ValueError):
    """A JSON object that names a key twice."""

    def __init__(self, key):
        super().__init__(f"duplicate key {_show(key)} in one object (each key once: a "
                         "repeated key would silently replace the first)")
        self.key = key


def _unique_keys(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKeyError(k)
        out[k] = v
    return out


def json_loads(text, *, constants: bool = False):
    """``json.loads`` for text from outside: a key named twice in one object, ``NaN`` and
    ``Infinity`` raise ``ValueError`` (:class:`DuplicateKeyError` for the first).
    ``constants=True`` reads ``NaN`` and ``Infinity`` as floats (for a caller that checks
    each number itself, and names the field)."""
    return json.loads(text, parse_constant=float if constants else _no_constant,
                      object_pairs_hook=_unique_keys)


def parse_json(text, label: str | None = None, *, field: str | None = None,
               line: int | None = None, constants: bool = False):
    """:func:`json_loads` with every problem one :class:`NesyError` naming ``label`` (the
    file), e.g. ``DS/manifest.json: duplicate key 'checksums' in one object ...``."""
    try:
        return json_loads(text, constants=constants)
    except DuplicateKeyError as exc:
        raise NesyError(str(exc), file=label, field=field, line=line) from None
    except (ValueError, RecursionError, TypeError) as exc:
        raise NesyError(f"not JSON: {str(exc)[:200]}", file=label, field=field,
                        line=line) from None


# -- archives ---------------------------------------------------------------------------------
def check_zip(data: bytes, label: str, *, max_bytes: int = MAX_FILE_BYTES,
              max_ratio: int = MAX_ARCHIVE_RATIO) -> list[zipfile.ZipInfo]:
    """The entries of the zip archive ``data`` (a ``.pt`` checkpoint, an ``.npz``), checked
    from its directory **before anything is decompressed**: at most
    :data:`MAX_ARCHIVE_ENTRIES` entries, declared uncompressed sizes summing to at most
    ``max_bytes``, and (over :data:`ARCHIVE_RATIO_FLOOR`) at most ``max_ratio`` times the
    archive's size. One :class:`NesyError` otherwise (a decompression bomb)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError,
            NotImplementedError) as exc:
        raise NesyError(f"not a readable zip archive: {str(exc)[:200]}", file=label) from None
    if len(infos) > MAX_ARCHIVE_ENTRIES:
        raise NesyError(f"the archive has {len(infos):,} entries, over the limit of "
                        f"{MAX_ARCHIVE_ENTRIES:,}", file=label)
    total = 0
    for info in infos:
        if info.file_size < 0 or info.compress_size < 0:
            raise NesyError(f"entry {_show(info.filename)} declares a negative size",
                            file=label)
        total += info.file_size
        if total > max_bytes:
            raise NesyError(f"the archive's entries declare {total:,} bytes or more when "
                            f"decompressed, over the limit of {max_bytes:,} (entry "
                            f"{_show(info.filename)}; a decompression bomb); nothing was "
                            "decompressed", file=label)
    if total > ARCHIVE_RATIO_FLOOR and total > max_ratio * max(len(data), 1):
        raise NesyError(f"the archive's entries declare {total:,} bytes when decompressed, "
                        f"{total / max(len(data), 1):,.0f} times its {len(data):,} bytes (over "
                        f"the ratio {max_ratio}; a decompression bomb); nothing was "
                        "decompressed", file=label)
    return infos


def load_npz(data: bytes, label: str, *, max_bytes: int = MAX_FILE_BYTES,
             max_ratio: int = MAX_ARCHIVE_RATIO) -> dict:
    """The arrays of the ``.npz`` archive ``data`` (``{name: ndarray}``, read eagerly), its
    entries' declared sizes checked by :func:`check_zip` **before NumPy opens it** (a small
    ``.npz`` may declare gigabytes), no pickled objects; every problem one
    :class:`NesyError` naming ``label``."""
    import numpy as np  # noqa: PLC0415

    infos = check_zip(data, label, max_bytes=max_bytes, max_ratio=max_ratio)
    if not all(i.filename.endswith(".npy") for i in infos):
        raise NesyError("not an .npz archive (an entry is not a .npy array)", file=label)
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {name: z[name] for name in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile,
            NotImplementedError) as exc:
        raise NesyError(f"not a readable .npz archive: {' '.join(str(exc).split())[:200]}",
                        file=label) from None


def load_npy(data: bytes, label: str):
    """The array of the ``.npy`` file ``data`` (already read and size-bounded), no pickled
    objects; every problem one :class:`NesyError` naming ``label``."""
    import numpy as np  # noqa: PLC0415

    if not data.startswith(b"\x93NUMPY"):
        raise NesyError("not a .npy array (no NumPy header)", file=label)
    try:
        fh = io.BytesIO(data)
        fmt = np.lib.format
        version = fmt.read_magic(fh)
        header = {(1, 0): fmt.read_array_header_1_0,
                  (2, 0): fmt.read_array_header_2_0}.get(version)
        if header is None:
            raise NesyError(f"unsupported .npy format version {version}", file=label)
        shape, _, dtype = header(fh)
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if dtype.hasobject:
            raise NesyError("the array holds Python objects (pickles are not read)", file=label)
        if declared > len(data):            # checked before NumPy allocates the array
            raise NesyError(f"the header declares {declared:,} bytes of data, the file has "
                            f"{len(data):,}", file=label)
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, ValueError, EOFError, NotImplementedError, MemoryError) as exc:
        raise NesyError(f"not a readable .npy array: {' '.join(str(exc).split())[:200]}",
                        file=label) from None


def gunzip(data: bytes, label: str, *, max_bytes: int = MAX_FILE_BYTES,
           max_ratio: int = MAX_ARCHIVE_RATIO) -> bytes:
    """The decompressed bytes of the gzip data ``data``, decompressed in bounded steps: more
    than ``max_bytes`` (or, over :data:`ARCHIVE_RATIO_FLOOR`, more than ``max_ratio`` times
    the input) is refused as soon as it is reached, never allocated."""
    limit = max_bytes
    if max_ratio * max(len(data), 1) > ARCHIVE_RATIO_FLOOR:
        limit = min(limit, max(max_ratio * len(data), ARCHIVE_RATIO_FLOOR))
    out = bytearray()
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk = rest
            while True:
                piece = d.decompress(chunk, limit + 1 - len(out))
                out += piece
                if len(out) > limit:
                    raise NesyError(f"decompresses to more than {limit:,} bytes (from "
                                    f"{len(data):,}; a decompression bomb); refused",
                                    file=label)
                chunk = d.unconsumed_tail
                if d.eof or not chunk:
                    break
            if not d.eof:
                raise NesyError("not a complete gzip stream (cut short)", file=label)
            rest = d.unused_data
    except zlib.error as exc:
        raise NesyError(f"not readable gzip data: {exc}", file=label) from None
    return bytes(out)


def parse_csv(text: str, label: str, *, required: tuple[str, ...] = ()):
    """``(header, [(line, row dict), ...])`` of CSV ``text``; one error naming ``label`` and
    the line for a field over :data:`MAX_CSV_FIELD` or a CSV syntax error."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[tuple[int, dict]] = []
    try:
        header = next(reader, None)
        if header is None:
            raise NesyError("empty CSV file (no header)", file=label, line=1)
        missing = [c for c in required if c not in header]
        if missing:
            raise NesyError(f"missing column(s) {', '.join(missing)}", file=label, line=1)
        for values in reader:
            if not values:
                continue
            if len(values) > len(header):
                raise NesyError(f"{len(values)} fields, the header has {len(header)}",
                                file=label, line=reader.line_num)
            rows.append((reader.line_num, dict(zip(header, values))))
    except csv.Error as exc:
        raise NesyError(f"CSV does not parse: {exc}", file=label,
                        line=reader.line_num or None) from None
    return header, rows


def decode_image(data: bytes, label: str, *, max_pixels: int = MAX_IMAGE_PIXELS):
    """A loaded ``PIL.Image`` from ``data``; refused (one :class:`NesyError`) when it is not a
    picture, or when its header claims more than ``max_pixels`` pixels (before decoding)."""
    import warnings  # noqa: PLC0415

    from PIL import Image  # noqa: PLC0415

    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        png_size(data, label, max_pixels=max_pixels)       # the header, before Pillow sees it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
            w, h = im.size
            if w * h > max_pixels:
                raise NesyError(f"picture of {w}x{h} pixels, over the limit of {max_pixels:,} "
                                "(decompression bomb)", file=label)
            im.load()
            return im
    except NesyError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise NesyError(f"picture too large (decompression bomb): {exc}", file=label) from None
    except (OSError, SyntaxError, ValueError, TypeError, EOFError, MemoryError,
            Image.UnidentifiedImageError) as exc:
        raise NesyError(f"not a readable picture: {str(exc)[:200]}", file=label) from None


def image_size(data: bytes, label: str, *,
                max_pixels: int = MAX_IMAGE_PIXELS) -> tuple[int, int]:
    """``(width, height)`` of the picture ``data`` from its header, without decoding it (what
    :func:`decode_image` checks first, for a reader that passes the bytes on unchanged, such
    as an export): refused when it is not a picture Pillow reads or its header claims more
    than ``max_pixels`` pixels (a decompression bomb)."""
    import warnings  # noqa: PLC0415

    from PIL import Image  # noqa: PLC0415

    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return png_size(data, label, max_pixels=max_pixels)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                w, h = im.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise NesyError(f"picture too large (decompression bomb): {exc}", file=label) from None
    except (OSError, SyntaxError, ValueError, TypeError, EOFError, MemoryError,
            Image.UnidentifiedImageError) as exc:
        raise NesyError(f"not a readable picture: {str(exc)[:200]}", file=label) from None
    if w * h > max_pixels or not w or not h:
        raise NesyError(f"picture of {w}x{h} pixels, over the limit of {max_pixels:,} "
                        "(decompression bomb) or empty", file=label)
    return w, h


def png_size(data: bytes, label: str, *,
             max_pixels: int = MAX_IMAGE_PIXELS) -> tuple[int, int]:
    """``(width, height)`` from a PNG header; refused when it is not a PNG or claims more than
    ``max_pixels`` pixels."""
    if len(data) < 24 or not data.startswith(b"\x89PNG\r\n\x1a\n") or data[12:16] != b"IHDR":
        raise NesyError("not a PNG image", file=label)
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if w * h > max_pixels or not w or not h:
        raise NesyError(f"picture of {w}x{h} pixels, over the limit of {max_pixels:,} "
                        "(decompression bomb) or empty", file=label)
    return w, h


# -- manifest fields --------------------------------------------------------------------------
def need(obj: dict, key: str, types, *, file: str, field: str | None = None,
         required: bool = True, default=None, what: str | None = None):
    """``obj[key]`` checked to be of ``types`` (``None`` allowed when not ``required`` and
    the key is missing or null: ``default`` is returned)."""
    name = f"{field}.{key}" if field else key
    if not isinstance(obj, dict):
        raise NesyError(f"expected an object, got {_type(obj)}", file=file, field=field)
    if key not in obj or obj[key] is None:
        if required:
            raise NesyError("missing", file=file, field=name)
        return default
    v = obj[key]
    if isinstance(v, bool) and bool not in _tuple(types):
        ok = False
    else:
        ok = isinstance(v, types)
    if not ok:
        raise NesyError(f"expected {what or _names(types)}, got {_type(v)} {_show(v)}",
                        file=file, field=name)
    if isinstance(v, int) and not isinstance(v, bool) and not INT64[0] <= v <= INT64[1]:
        raise NesyError(f"integer {_show(v)} out of the int64 range", file=file, field=name)
    return v


def _tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _names(types) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer",
             float: "a number", bool: "true/false"}
    return " or ".join(names.get(t, t.__name__) for t in _tuple(types))


def _type(v) -> str:
    return {dict: "an object", list: "a list", str: "a string", int: "an integer",
            float: "a number", bool: "true/false", type(None): "null"}.get(type(v),
                                                                            type(v).__name__)


def int64(value, *, file: str, line: int | None = None, field: str | None = None,
          lo: int | None = None, hi: int | None = None) -> int:
    """``value`` (a CSV cell or a JSON number) as an integer in the int64 range (and in
    ``lo..hi`` when given); one error naming ``file``/``line``/``field`` otherwise."""
    if isinstance(value, bool) or isinstance(value, float):
        ok = isinstance(value, float) and value.is_integer()
        v = int(value) if ok else None
    elif isinstance(value, int):
        v = value
    elif isinstance(value, str) and len(value.strip()) <= 40:
        try:
            v = int(value.strip())
        except ValueError:
            v = None
    else:
        v = None
    if v is None:
        raise NesyError(f"expected an integer, got {_show(value)}", file=file, line=line,
                        field=field)
    lo = INT64[0] if lo is None else lo
    hi = INT64[1] if hi is None else hi
    if not lo <= v <= hi:
        raise NesyError(f"integer {v if len(str(v)) < 30 else str(v)[:27] + '...'} out of "
                        f"range ({lo}..{hi})", file=file, line=line, field=field)
    return v


def checksum_map(value, *, file: str, field: str) -> dict[str, str]:
    """A manifest's ``{relative path: sha256 hex}`` map, checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise NesyError(f"expected an object of file paths and SHA-256 digests, got "
                        f"{_type(value)}", file=file, field=field)
    out = {}
    for k, v in value.items():
        rel = relative(k, file=file, field=f"{field}[{_show(k)}]")
        if not (isinstance(v, str) and len(v) == 64
                and all(c in "0123456789abcdef" for c in v)):
            raise NesyError(f"expected a SHA-256 hex digest, got {_show(v)}", file=file,
                            field=f"{field}[{_show(k)}]")
        out[rel] = v
    return out


__all__ = ["DataFolder", "read_input", "read_input_text", "read_user_file", "check_input_file",
           "relative", "parse_json", "json_loads", "DuplicateKeyError", "check_zip", "load_npz",
           "load_npy", "gunzip",
           "hardlinks_allowed",
           "parse_csv", "decode_image", "image_size", "png_size", "need", "int64", "checksum_map",
           "MAX_FILE_BYTES", "MAX_TEXT_BYTES", "MAX_IMAGE_PIXELS", "MAX_CSV_FIELD",
           "MAX_FACT_ARITY"]
