"""Output folders that appear whole or not at all, checksums, canonical JSON.

Every generator writes into a temporary sibling of ``--out`` and renames it at the end, so a
failure (bad input, Ctrl-C, SIGTERM, a crash) never leaves a half-written dataset behind.

Safety rules for output folders (docs/guides/safety.md, "Output folders in detail"):

* an existing ``--out`` is replaced only with ``overwrite=True`` **and** only when it is empty
  or holds the marker file :data:`MARKER` that every finished nesybench output carries: a
  JSON record holding the SHA-256 of the folder's manifest (``manifest.json`` when the folder
  has one, else the listing of its top-level names and file sizes), recomputed and compared
  before anything is deleted; an empty marker, or one copied from another folder, is not
  enough;
  anything else (your home folder, ``.``, a folder of your own files) is refused;
* ``--out`` may never be, or contain, one of the command's inputs (``kandy browse DS --out DS``);
* the temporary folder ``.NAME.tmp-XXXX`` holds :data:`PID_FILE` (host and pid of the writer);
  the next run on the same ``--out`` removes such folders whose process is gone (a SIGKILL);
* folders get the permissions of the user's umask (``tempfile.mkdtemp`` alone gives 0700).

Single result files (``rs count --out FILE``) follow the same rules through
:func:`write_output_file`: replaced only with ``overwrite``, never an input, never through a
symbolic link, written to a temporary sibling and renamed.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import socket
import stat as _stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from .errors import NesyError
from .folder import json_loads

FORMAT_VERSION = "1.0"

#: file written at the root of every finished output folder: "nesybench wrote this"
MARKER = ".nesybench-output"
#: file inside a temporary output folder naming the host and pid of the process writing it
PID_FILE = ".nesybench-pid"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: a marker larger than this is not one nesybench wrote (it lists every file: 64 MiB)
MAX_MARKER_BYTES = 64 << 20

#: the manifest a :data:`MARKER` is bound to, when the folder has one
MANIFEST = "manifest.json"
#: what the marker names instead when the folder has no :data:`MANIFEST`
LISTING = "listing"


def _folder_digest(path: Path) -> tuple[str, str] | None:
    """``(what, sha256)`` binding a marker to the folder ``path``: the SHA-256 of its
    :data:`MANIFEST` bytes when it has one (the manifests nesybench writes list every file's
    checksum), else of the sorted listing of its top-level entries (``name<TAB>size`` for a
    file, ``name/`` for a folder; the marker and the writer's pid file left out). ``None``
    when the folder cannot be read. Deterministic: byte-identical outputs get identical
    markers."""
    try:
        man = path / MANIFEST
        if man.is_file() and not man.is_symlink():
            return MANIFEST, sha256_file(man)
        lines = []
        with os.scandir(path) as it:
            for entry in it:
                if entry.name in (MARKER, PID_FILE):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    lines.append(f"{entry.name}/")
                else:
                    lines.append(f"{entry.name}\t{entry.stat(follow_symlinks=False).st_size}")
    except OSError:
        return None
    text = "".join(line + "\n" for line in sorted(lines))
    return LISTING, hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _scan(path: Path, enter):
    """Every entry below the folder ``path`` as ``(relative name, os.DirEntry)``, each folder's
    entries in name order, the marker and the pid file at the top left out; a folder (not a
    symbolic link) is entered when ``enter(name)`` is true."""
    stack = [(path, "")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            name = f"{rel}{entry.name}"
            if not rel and entry.name in (MARKER, PID_FILE):
                continue
            yield name, entry
            if not entry.is_symlink() and entry.is_dir(follow_symlinks=False) and enter(name):
                stack.append((Path(entry.path), name + "/"))


def _folder_entries(path: Path, known: dict[str, str] | None = None
                    ) -> tuple[dict[str, str], list[str], list[str]]:
    """``(files, folders, others)`` under ``path``: every regular file's relative POSIX path
    with its SHA-256 (taken from ``known`` when the writer hashed the bytes it wrote), every
    folder's, and whatever is neither (symbolic links, FIFOs, devices: never written by
    nesybench). The marker and the pid file are left out."""
    known = known or {}
    files: dict[str, str] = {}
    dirs: list[str] = []
    others: list[str] = []
    for name, entry in _scan(path, lambda name: True):
        if entry.is_symlink():
            others.append(name)
        elif entry.is_dir(follow_symlinks=False):
            dirs.append(name)
        elif entry.is_file(follow_symlinks=False):
            files[name] = known[name] if name in known else sha256_file(entry.path)
        else:
            others.append(name)
    return files, sorted(dirs), sorted(others)


def marker_record(path: str | os.PathLike, known: dict[str, str] | None = None) -> dict:
    """The :data:`MARKER` record for the finished folder ``path``: the digest of its manifest
    (see :func:`_folder_digest`) and every file it holds with its SHA-256 (``files``; those
    in ``known``, relative path to digest, are not read again) and every folder
    (``folders``), so ``--overwrite`` can tell nesybench's files from a user's."""
    digest = _folder_digest(Path(path))
    if digest is None:
        raise OSError(f"cannot list {path}")
    what, sha = digest
    files, dirs, _others = _folder_entries(Path(path), known)
    return {"format_version": FORMAT_VERSION, "manifest": what, "sha256": sha,
            "files": files, "folders": dirs, "written_by": "nesybench"}


#: at most this many unexpected files are named when ``--overwrite`` is refused
SHOW_UNEXPECTED = 5


def unexpected_files(path: str | os.PathLike) -> list[str] | None:
    """What in the folder ``path`` its :data:`MARKER` does not list with the same SHA-256:
    a user's file or folder added since, a file changed since, a symbolic link. ``None`` when
    the folder has no valid marker of the current format (then nothing in it may be
    replaced); ``[]`` when every entry is one nesybench wrote."""
    path = Path(path)
    marker = path / MARKER
    try:
        if marker.is_symlink() or not marker.is_file() or \
                marker.stat().st_size > MAX_MARKER_BYTES:
            return None
        data = json_loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and data.get("written_by") == "nesybench"
            and isinstance(data.get("files"), dict) and isinstance(data.get("folders"), list)
            and isinstance(data.get("sha256"), str)):
        return None
    listed, folders = data["files"], set(map(str, data["folders"]))
    bad: list[str] = []
    try:
        for name, entry in _scan(path, lambda name: name in folders):
            if entry.is_symlink():
                bad.append(name)
            elif entry.is_dir(follow_symlinks=False):
                if name not in folders and unexpected_files(entry.path) != []:
                    # not ours, unless a later nesybench output of its own (DS/grids)
                    bad.append(name + "/")
            elif not entry.is_file(follow_symlinks=False) or \
                    listed.get(name) != sha256_file(entry.path):
                bad.append(name)
    except OSError:
        return None
    return sorted(bad)


def is_nesybench_output(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder that a finished nesybench run wrote and nobody changed
    since: its :data:`MARKER` is the JSON record nesybench writes, and every file in the
    folder is one the record lists, with the same SHA-256 (see :func:`unexpected_files`; an
    empty marker, a hand-made one, one copied from another folder, or a folder a user added
    a file to does not make it replaceable). The record holds no random part: finished
    outputs stay byte-identical across runs and worker counts."""
    return unexpected_files(path) == []


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host still runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    proc_stat = Path(f"/proc/{pid}/stat")
    try:
        text = proc_stat.read_text()
        return text[text.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return True


def sweep_stale_temps(out: str | os.PathLike) -> list[Path]:
    """Remove ``.NAME.tmp-*`` siblings of ``out`` left by killed runs; return what was removed.

    Only folders holding :data:`PID_FILE` written on this host by a process that no longer
    exists are removed; anything else is left alone.
    """
    out = Path(out)
    removed = []
    try:
        candidates = list(out.parent.glob(f".{out.name}.tmp-*"))
    except OSError:
        return removed
    host = socket.gethostname()
    for tmp in candidates:
        try:
            owner_host, pid = (tmp / PID_FILE).read_text(encoding="utf-8").split()[:2]
            pid = int(pid)
        except (OSError, ValueError):
            continue
        if owner_host == host and not pid_alive(pid):
            shutil.rmtree(tmp, ignore_errors=True)
            removed.append(tmp)
    return removed


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


#: the longest name of one path component on common file systems (bytes)
NAME_MAX = 255


def check_output_path(out: str | os.PathLike) -> Path:
    """The checks every output path gets before it is used: no component longer than
    :data:`NAME_MAX` bytes, not a symbolic link (a dangling one included: the command would
    write at the link's target). Returns ``out`` as a :class:`Path`; one :class:`NesyError`
    otherwise (never an ``OSError``)."""
    p = Path(out)
    for part in p.parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise NesyError(f"a name in the output path is longer than {NAME_MAX} bytes "
                            f"({part[:40]}...)", file=str(p)[:300] + "...")
    try:
        link = p.is_symlink()
    except OSError as exc:
        raise NesyError(f"cannot use the output path: {exc.strerror or exc}",
                        file=str(p)) from None
    if link:
        raise NesyError("the output path is a symbolic link; give its target (or another "
                        "--out) instead", file=str(p))
    return p


def check_no_links(out: str | os.PathLike, *, below: str | os.PathLike | None = None) -> Path:
    """``out`` checked with ``lstat`` before anything resolves it: neither ``out`` nor (when
    ``below`` is given, e.g. the data set a default output folder lies in) any component
    between ``below`` and ``out`` is a symbolic link. Returns ``out``; one :class:`NesyError`
    otherwise (nothing is written or deleted)."""
    out = check_output_path(out)
    if below is None:
        return out
    base = Path(below)
    try:
        rel = out.relative_to(base)
    except ValueError:
        raise NesyError("the output path is not inside its folder", file=str(out)) from None
    p = base
    for part in rel.parts:
        p = p / part
        try:
            link = _stat.S_ISLNK(os.lstat(p).st_mode)
        except FileNotFoundError:
            break
        except OSError as exc:
            raise NesyError(f"cannot use the output path: {exc.strerror or exc}",
                            file=str(p)) from None
        if link:
            raise NesyError("a symbolic link on the way to the output folder; nothing is "
                            "written or deleted through it (give --out instead)", file=str(p))
    return out


def check_replaceable(out: str | os.PathLike, *, overwrite: bool,
                      inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Apply the safety rules to ``out`` before anything is written; return it resolved.

    Raises :class:`NesyError` when ``out`` is a symbolic link or has an over-long name, is or
    contains an input (a folder or a file), when it exists and ``overwrite`` is False, or when
    it exists and holds anything that its nesybench marker does not list with its SHA-256
    (naming up to :data:`SHOW_UNEXPECTED` such files; nothing is deleted).
    """
    check_output_path(out)
    try:
        out = Path(out).resolve()
        for inp in inputs:
            if inp is None:
                continue
            p = Path(inp).resolve()
            if _inside(p, out):
                raise NesyError("the output folder is or contains an input of this command "
                                f"({p}); choose another --out", file=str(out))
        exists = out.exists() or out.is_symlink()
    except OSError as exc:
        raise NesyError(f"cannot use the output path: {exc.strerror or exc}",
                        file=str(out)) from None
    if exists:
        if not out.is_dir() or out.is_symlink():
            raise NesyError("the output path exists and is not a folder; refusing to replace it",
                            file=str(out))
        if not overwrite:
            raise NesyError("output folder already exists (use --overwrite to replace it)",
                            file=str(out))
        try:
            empty = not any(out.iterdir())
        except OSError as exc:
            raise NesyError(f"cannot read the output folder: {exc.strerror}",
                            file=str(out)) from None
        if not empty and not is_nesybench_output(out):
            bad = unexpected_files(out)
            if bad:
                refuse_unexpected(out, bad)
            try:
                names = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                               for e in os.scandir(out))
            except OSError:
                names = []
            shown = ", ".join(names[:SHOW_UNEXPECTED]) + \
                (f" and {len(names) - SHOW_UNEXPECTED} more"
                 if len(names) > SHOW_UNEXPECTED else "")
            raise NesyError("output folder exists, is not empty and was not written by "
                            f"nesybench (no {MARKER} file listing its files; it holds "
                            f"{shown}); refusing to replace it even with --overwrite",
                            file=str(out))
    return out


def refuse_unexpected(out: str | os.PathLike, bad: list[str], *,
                      flag: str = "--overwrite") -> None:
    """Raise the one-line :class:`NesyError` that names up to :data:`SHOW_UNEXPECTED` of the
    files ``bad`` (relative to the folder ``out``) that nesybench did not write."""
    shown = ", ".join(bad[:SHOW_UNEXPECTED]) + \
        (f" and {len(bad) - SHOW_UNEXPECTED} more" if len(bad) > SHOW_UNEXPECTED else "")
    raise NesyError(f"output folder holds files not written by nesybench (or changed "
                    f"since): {shown}; refusing to replace it even with {flag} (move them "
                    "away first)", file=str(out))


def write_marker(path: str | os.PathLike) -> None:
    """Write (or refresh) the :data:`MARKER` of a folder that nesybench finished writing in
    place (a RuDaS experiment: its datasets, study and report), listing every file in it
    with its SHA-256, so a later ``--overwrite`` may replace exactly these files."""
    path = Path(path)
    (path / MARKER).unlink(missing_ok=True)
    tmp = path / (MARKER + ".part")
    tmp.write_text(dumps(marker_record(path)), encoding="utf-8")
    os.replace(tmp, path / MARKER)


def remove_output_folder(path: str | os.PathLike, *, flag: str = "--overwrite") -> None:
    """Delete the folder ``path`` under the output rules: only when it is empty, a nesybench
    output whose marker lists every file in it with its SHA-256 (see
    :func:`unexpected_files`), or a folder holding only such outputs (a ``datasets/`` folder
    of generated data sets). Otherwise one :class:`NesyError` naming up to
    :data:`SHOW_UNEXPECTED` unexpected files; nothing is deleted."""
    check_output_path(path)
    path = Path(path)
    if not path.exists():
        return
    if not path.is_dir():
        raise NesyError("the output path exists and is not a folder; refusing to replace it",
                        file=str(path))
    bad = unexpected_files(path)
    if bad is None:                          # no marker: every entry must be an output
        bad = []
        try:
            for entry in sorted(os.scandir(path), key=lambda e: e.name):
                if entry.name == PID_FILE:
                    continue
                if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                    bad.append(entry.name)
                elif any(True for _ in os.scandir(entry.path)) and \
                        unexpected_files(entry.path) != []:
                    bad.append(entry.name + "/")
        except OSError as exc:
            raise NesyError(f"cannot read the output folder: {exc.strerror or exc}",
                            file=str(path)) from None
    if bad:
        refuse_unexpected(path, bad, flag=flag)
    try:
        shutil.rmtree(path)
    except OSError as exc:
        raise NesyError(f"cannot remove the output folder: {exc.strerror or exc}",
                        file=str(path)) from None


@contextlib.contextmanager
def atomic_output_dir(out: str | os.PathLike, *, overwrite: bool = False,
                      inputs: Iterable[str | os.PathLike] = (),
                      known: dict[str, str] | None = None) -> Iterator[Path]:
    """Yield a temporary folder that becomes ``out`` when the block succeeds.

    Raises :class:`NesyError` up front when :func:`check_replaceable` refuses ``out`` (it
    exists without ``overwrite``; it is neither empty nor a nesybench output; it is or contains
    one of ``inputs``) or its parent is not writable. On any exception (``KeyboardInterrupt``
    and SIGTERM included) the temporary folder is removed and ``out`` is untouched. The
    finished folder holds :data:`MARKER` and has the permissions of the user's umask.
    ``known``: a dict the block may fill with the SHA-256 of files it wrote (relative POSIX
    path to hex digest), which the marker then takes instead of reading the files again.
    """
    inputs = list(inputs)
    out = check_replaceable(out, overwrite=overwrite, inputs=inputs)
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        sweep_stale_temps(out)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=parent))
    except OSError as exc:
        raise NesyError(f"cannot write the output folder: {exc.strerror or exc}",
                        file=str(out)) from None
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        (tmp / PID_FILE).write_text(f"{socket.gethostname()} {os.getpid()}\n", encoding="utf-8")
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        (tmp / PID_FILE).unlink(missing_ok=True)
        (tmp / MARKER).write_text(dumps(marker_record(tmp, known)), encoding="utf-8")
        # re-check just before replacing: the folder may have changed while we worked
        check_replaceable(out, overwrite=overwrite, inputs=inputs)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except (OSError, NesyError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, NesyError):
            raise
        raise NesyError(f"cannot move the finished output into place: {exc.strerror or exc}",
                        file=str(out)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check_output_file(out: str | os.PathLike, *, overwrite: bool = False,
                      inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """The output rules for a single result file, checked before any work starts.

    Refused with :class:`NesyError`: ``out`` is a symbolic link, has a name over
    :data:`NAME_MAX` bytes, is a folder, or is one of ``inputs`` (same file, any path);
    ``out`` exists and ``overwrite`` is False; its folder does not exist.
    """
    p = check_output_path(out)
    try:
        for inp in inputs:
            if inp is None:
                continue
            try:
                same = p.exists() and os.path.samefile(p, inp)
            except OSError:
                same = False
            if same or p.resolve() == Path(inp).resolve():
                raise NesyError(f"the output file is an input of this command ({inp}); "
                                "choose another --out", file=str(p))
        if p.exists():
            if p.is_dir():
                raise NesyError("the output path is a folder", file=str(p))
            if not overwrite:
                raise NesyError("output file already exists (use --overwrite to replace it)",
                                file=str(p))
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise NesyError("cannot write the result: the folder of the output file does not "
                            "exist", file=str(p))
    except OSError as exc:
        raise NesyError(f"cannot use the output path: {exc.strerror or exc}",
                        file=str(p)) from None
    return p


@contextlib.contextmanager
def atomic_output_file(out: str | os.PathLike, *, overwrite: bool = False,
                       inputs: Iterable[str | os.PathLike] = ()) -> Iterator[Path]:
    """Yield a temporary path beside ``out`` (same suffix, so writers that pick a format by
    suffix, or append one, write exactly this file) that is renamed to ``out`` when the block
    succeeds; on any exception it is removed and ``out`` is untouched. The rules of
    :func:`check_output_file` apply, before the block and again just before the rename."""
    inputs = list(inputs)
    p = check_output_file(out, overwrite=overwrite, inputs=inputs)
    parent = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.stem[:100]}.tmp-", suffix=p.suffix,
                                   dir=parent)
        os.close(fd)
    except OSError as exc:
        raise NesyError(f"cannot write the result: {exc.strerror or exc}", file=str(p)) from None
    tmp = Path(tmp)
    try:
        yield tmp
        if not tmp.is_file() or tmp.is_symlink():
            raise NesyError("the result was not written", file=str(p))
        os.chmod(tmp, 0o666 & ~_umask())
        check_output_file(p, overwrite=overwrite, inputs=inputs)
        os.replace(tmp, p)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise NesyError(f"cannot write the result: {exc.strerror or exc}",
                            file=str(p)) from None
        raise


def write_output_file(out: str | os.PathLike, text: str, *, overwrite: bool = False,
                      inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Write ``text`` to the result file ``out`` atomically, under the output rules.

    Refused with :class:`NesyError` (nothing written): see :func:`check_output_file`. The
    text goes to a temporary sibling first and is renamed over ``out``, so a reader never
    sees half a file.
    """
    with atomic_output_file(out, overwrite=overwrite, inputs=inputs) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(out)


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
    (e.g. render workers hash the bytes they write), so they are not read back. The
    bookkeeping files :data:`MARKER` and :data:`PID_FILE` are never listed.
    """
    root = Path(root)
    known = known or {}
    out = {}
    for rel in sorted(_files_under(os.fspath(root), ""), key=lambda r: r.split("/")):
        if rel not in exclude and rel not in (MARKER, PID_FILE):
            out[rel] = known[rel] if rel in known else sha256_file(root / rel)
    return out


def _files_under(top: str, prefix: str) -> Iterator[str]:
    """POSIX relative paths of the files under ``top`` (as ``Path.rglob`` + ``is_file``
    list them: links to files count, links to folders are not entered), from ``scandir``'s
    entries, which know their type without a ``stat`` per file."""
    with os.scandir(top) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                yield from _files_under(entry.path, rel + "/")
            elif entry.is_file():
                yield rel


def strict(obj):
    """``obj`` with every NaN / infinity (Python or numpy float) replaced by None: JSON has
    neither, and a bare ``NaN`` breaks strict parsers (``jq``, JavaScript, Go)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    return obj


def dumps(obj) -> str:
    """Canonical strict JSON: sorted keys, fixed separators, UTF-8, NaN/inf as null —
    byte-stable across machines."""
    return json.dumps(strict(obj), sort_keys=True, indent=2, ensure_ascii=False,
                      allow_nan=False) + "\n"


def write_json(path: str | os.PathLike, obj) -> None:
    Path(path).write_text(dumps(obj), encoding="utf-8")


def derive_seed(*parts) -> int:
    """A 63-bit seed from any parts (ints/strings), independent of ``PYTHONHASHSEED``."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def progress_delay() -> float:
    """Seconds a progress bar waits before it first draws (``NESYBENCH_PROGRESS_DELAY``,
    default 1.0): a command that ends sooner (or fails on bad input at once) prints nothing
    on stderr but its result or its one error line. Tests set it to 0 to see the bar."""
    raw = os.environ.get("NESYBENCH_PROGRESS_DELAY", "")
    try:
        v = float(raw) if raw else 1.0
    except ValueError:
        v = 1.0
    return max(0.0, v) if v == v else 1.0


def write_static_browser(dataset_dir, out_dir, *, overwrite: bool, build_data, variable: str,
                         html: str) -> Path:
    """Write a static browser page of ``dataset_dir``: ``index.html`` (``html``) and
    ``data.js`` setting ``window.<variable>`` to ``build_data(dataset_dir, out)``, into
    ``out_dir`` (default ``dataset_dir/browse``, replaced when a previous browser is there; an
    explicit ``out_dir`` only with ``overwrite``), atomically; returns the page's path."""
    root = Path(dataset_dir)
    out = Path(out_dir) if out_dir is not None else root / "browse"
    # checked before anything resolves it: a `browse` link inside the data set (or an --out
    # that is a link) would have the page written, and an older page deleted, at its target
    check_no_links(out, below=root if out_dir is None else None)
    data = build_data(root, out)
    # "</" would end the script element early if the data held "</script>"
    js = (f"window.{variable} = "
          + json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
          + ";\n")
    with atomic_output_dir(out, overwrite=overwrite or out_dir is None, inputs=[root]) as tmp:
        (tmp / "data.js").write_text(js, encoding="utf-8")
        (tmp / "index.html").write_text(html, encoding="utf-8")
    return out.resolve() / "index.html"

