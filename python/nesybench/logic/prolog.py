"""The SWI-Prolog bridge (janus-swi): one engine per process, batched calls, clear errors.

Everything Python asks of Prolog goes through this module:

* :func:`use` loads a module from ``prolog/`` or ``kb/`` once per process;
* :func:`once` / :func:`solutions` run a goal with Python values bound to its variables
  (lists of strings go in and out as one call, so callers batch their work);
* :func:`progress` routes progress reports of long Prolog work to a Python callback (a bar);
* :func:`load_rules` compiles *untrusted* rule text into a fresh module after reading it
  clause by clause (syntax errors with their line) and checking it with ``library(sandbox)``.

Prolog exceptions become :class:`nesybench.errors.PrologError`.
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import threading
from pathlib import Path

from .. import KB_DIR, PROLOG_DIR, ROOT
from ..paths import cache_swipl, project_swipl
from ..errors import NesyError, PrologError, UnsafeRuleError

_lock = threading.RLock()
_janus = None
_loaded: set[str] = set()


def _swi_home() -> tuple[str | None, str, str | None]:
    """SWI-Prolog's home for janus, what chose it (``SWI_HOME_DIR`` or a ``swipl``) and that
    swipl's version (None when unknown). The candidates are the source tree's build, the
    user cache's (``nesybench setup-prolog``) and the ``swipl`` on PATH; the first whose
    version is the one janus-swi's library is built against wins, else the first found (and
    :func:`_check_versions` then says what is wrong)."""
    if os.environ.get("SWI_HOME_DIR"):
        home = os.environ["SWI_HOME_DIR"]
        return home, "SWI_HOME_DIR", home_version(home)
    candidates = [exe for exe in (project_swipl(), cache_swipl()) if exe]
    on_path = shutil.which("swipl")
    if on_path:
        candidates.append(Path(on_path))
    found = []
    for exe in candidates:
        home, version = _runtime(exe)
        if home:
            found.append((home, str(exe), version))
    if not found:
        return None, "", None
    built = janus_library_version() if len(found) > 1 else None
    return next((f for f in found if built and f[2] == built), found[0])


def home_version(home: str) -> str | None:
    """The version of the SWI-Prolog whose home is ``home`` (``SWI_HOME_DIR``), read without
    starting it: the ``PLVERSION`` of its ``include/SWI-Prolog.h``, else what the ``swipl``
    under its ``bin/`` reports; None when neither is there."""
    import re  # noqa: PLC0415

    header = Path(home) / "include" / "SWI-Prolog.h"
    try:
        with open(header, "rb") as fh:       # a header of the SWI-Prolog install named
            text = fh.read(1 << 16).decode("latin-1")
        m = re.search(r"#\s*define\s+PLVERSION\s+(\d+)", text)
        if m:
            return _version_text(m.group(1))
    except OSError:
        pass
    for exe in sorted(Path(home).glob("bin/*/swipl")) + [Path(home) / "bin" / "swipl"]:
        _, version = _runtime(exe)
        if version:
            return version
    return None


def _runtime(exe: Path) -> tuple[str | None, str | None]:
    """(PLBASE, version) of a ``swipl``; (None, None) when it does not run."""
    if not exe.exists():
        return None, None
    try:
        out = subprocess.run([str(exe), "--dump-runtime-variables"], capture_output=True,
                             text=True, check=False, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    values = dict(line.partition("=")[::2] for line in out.splitlines() if "=" in line)
    home = values.get("PLBASE", "").strip('";') or None
    return home, _version_text(values.get("PLVERSION", "").strip('";'))


def _version_text(plversion: str) -> str | None:
    """``9.3.24`` from ``90324``, None when it is not a number."""
    return (f"{int(plversion) // 10000}.{int(plversion) // 100 % 100}.{int(plversion) % 100}"
            if plversion.isdigit() else None)


def janus_library_version() -> str | None:
    """The SWI-Prolog version the installed janus-swi extension is linked against, read with
    ``PL_version_info`` without starting Prolog (None when it cannot be read)."""
    try:
        spec = importlib.util.find_spec("janus_swi")
        folder = list(spec.submodule_search_locations or [])[0]
        ext = next(os.path.join(folder, f) for f in sorted(os.listdir(folder))
                   if f.startswith("_swipl")
                   and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
        n = ctypes.CDLL(ext, mode=getattr(os, "RTLD_LAZY", 1)).PL_version_info(1)
    except (ImportError, OSError, AttributeError, IndexError, StopIteration, TypeError,
            ValueError):
        return None
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}" if n > 0 else None


def _check_versions(home: str | None, chosen_by: str, home_version: str | None) -> None:
    """Refuse, in one line, to start janus with the home of another SWI-Prolog than the one
    its library is built against: SWI-Prolog would abort the whole process there
    (``incompatible VM-signature``, SIGABRT) instead of raising."""
    built = janus_library_version()
    if chosen_by == "SWI_HOME_DIR" and home and home_version is None:
        # SWI-Prolog aborts the process (exit 134) on a home it cannot use: refuse first
        raise NesyError(f"SWI_HOME_DIR is {home}, which is not the home of an SWI-Prolog "
                        "nesybench can read the version of (no include/SWI-Prolog.h, no "
                        "bin/*/swipl); unset it, or point it at the home of SWI-Prolog "
                        f"{built or 'janus-swi is built against'} (`nesybench doctor` says "
                        "more)")
    if not (home and built and home_version) or built == home_version:
        return
    raise NesyError(
        f"janus-swi is built against SWI-Prolog {built}, but {chosen_by} is SWI-Prolog "
        f"{home_version} (home {home}); put SWI-Prolog {built}'s swipl first on PATH, or "
        "rebuild janus-swi against this one: pip install --force-reinstall --no-binary "
        "janus-swi janus-swi (`nesybench doctor` says more)")


def janus():
    """Return the imported ``janus_swi`` module, starting the engine on first use."""
    global _janus
    with _lock:
        if _janus is None:
            # started whole: a Ctrl-C in the middle would leave a half-started engine
            with _DeferredSignals():
                home, chosen_by, home_version = _swi_home()
                _check_versions(home, chosen_by, home_version)
                if home:
                    os.environ.setdefault("SWI_HOME_DIR", home)
                try:
                    import janus_swi  # noqa: PLC0415 - the one place janus is imported
                except ImportError as exc:  # pragma: no cover - set-up problem
                    raise NesyError(
                        "janus-swi is not importable; run `make setup` (it builds SWI-Prolog "
                        f">= 9.1.12 if needed and installs janus-swi): {exc}") from exc
                _janus = janus_swi
                # Quiet, and fail loudly on unknown predicates everywhere.
                _janus.query_once("set_prolog_flag(verbose, silent)")
                _janus.query_once(
                    "assertz(file_search_path(nesybench, Dir))", {"Dir": str(PROLOG_DIR)})
                _janus.query_once("assertz(file_search_path(kb, Dir))", {"Dir": str(KB_DIR)})
        return _janus


def resolve(path: str | os.PathLike) -> Path:
    """Resolve ``prolog/x.pl`` or ``kb/y.pl`` style paths against :data:`nesybench.ROOT`."""
    p = Path(path)
    if not p.is_absolute():
        p = ROOT / p
    return p


def use(path: str | os.PathLike) -> None:
    """Load the Prolog module file at ``path`` (relative to the repo root) once per process.

    Syntax errors and warnings in our own modules are bugs; they are raised, not printed.
    """
    p = resolve(path)
    key = str(p)
    with _lock:
        if key in _loaded:
            return
        jan = janus()
        if not p.exists():
            raise PrologError(f"Prolog file not found: {p}")
        with _DeferredSignals():
            res = jan.query_once(
                "catch(load_files(user:File, [if(not_loaded), silent(true)]), _E, true),"
                "(var(_E) -> Msg = ok ; message_to_string(_E, Msg))",
                {"File": key})
        msg = res.get("Msg") if res else None
        if msg not in ("ok", None):
            raise PrologError(f"could not load {p}: {msg}", file=str(p))
        _loaded.add(key)


#: the goal text wrapped around every :func:`once` call from the main thread: while Prolog
#: runs, SIGINT/SIGTERM are Prolog's (janus otherwise only delivers them when the call returns,
#: so a looping rule would ignore Ctrl-C); they come back as the exception nesybench_signal(S).
_SIGNAL_WRAP = (
    "setup_call_cleanup((on_signal(int, _NesyOI, throw), on_signal(term, _NesyOT, throw)), "
    "catch(({goal}), error(signal(_NesyS, _), _), throw(nesybench_signal(_NesyS))), "
    "(on_signal(int, _, _NesyOI), on_signal(term, _, _NesyOT)))")


class _DeferredSignals:
    """Hold Python's SIGINT/SIGTERM handlers back while janus is at work (main thread only).

    janus builds Python objects (answers, exception terms) from C. A handler that raises
    there (Ctrl-C's ``KeyboardInterrupt``) leaves janus half-way: a ``Term`` without its record,
    an open query, and the process crashes when it exits. So while a call is in janus a
    signal is only recorded; on the way out the handlers are put back (which also re-installs
    Python's own C handler over the one Prolog's ``on_signal/3`` restored) and the first
    recorded signal's handler runs, in our code. A signal Prolog itself turned into an
    exception is not run a second time.
    """

    _SIGNALS = ("SIGINT", "SIGTERM")

    def __init__(self):
        self.pending: list[int] = []
        self.saved: dict = {}

    def _record(self, signum, frame):
        self.pending.append(signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            import signal  # noqa: PLC0415
            for name in self._SIGNALS:
                sig = getattr(signal, name)
                handler = signal.getsignal(sig)
                if handler is not None:
                    self.saved[sig] = handler
                    if callable(handler):
                        signal.signal(sig, self._record)
        return self

    def __exit__(self, exc_type, exc, tb):
        import signal  # noqa: PLC0415
        for sig, handler in self.saved.items():
            signal.signal(sig, handler)
        if self.pending and not (exc_type is not None
                                 and issubclass(exc_type, (KeyboardInterrupt, SystemExit))):
            sig = self.pending[0]
            self.saved[sig](sig, None)
        return False


def once(goal: str, **inputs):
    """Run ``goal`` once with ``inputs`` bound to its variables.

    Returns a dict of the variable bindings (janus's conversion: atoms and strings become
    ``str``, lists ``list``, integers ``int``), or ``None`` when the goal fails. In the main
    thread the call stays interruptible: Ctrl-C raises ``KeyboardInterrupt`` and SIGTERM the
    CLI's ``Terminated`` even while Prolog is running.
    """
    main = threading.current_thread() is threading.main_thread()
    query = _SIGNAL_WRAP.format(goal=goal) if main else goal
    with _lock:
        jan = janus()
        with _DeferredSignals():
            try:
                res = jan.query_once(query, inputs)
            except jan.PrologError as exc:
                text = str(exc)
                if "nesybench_signal(term)" in text:
                    _raise_signal("term")
                if "nesybench_signal(int)" in text:
                    _raise_signal("int")
                raise PrologError(_clean(text)) from None
    if not res.pop("truth", True):
        return None
    return res


#: the callback of the active :func:`progress` block (None: no bar listening)
_progress_cb = None


@contextlib.contextmanager
def progress(callback):
    """While the block runs, ``nesy_progress:progress(Phase, Done, Total)`` calls in Prolog
    (``prolog/progress.pl``) reach ``callback(phase: str, done: int, total: int | None)``.

    Prolog calls back into Python (janus ``py_call``) from the thread running the query, so
    the callback runs in that thread while the query is in progress; it must be quick and
    must not call Prolog. Outside the block the Prolog side only reads one flag.
    """
    global _progress_cb
    use("prolog/progress.pl")
    with _lock, _DeferredSignals():
        _progress_cb = callback
        janus().query_once("flag(nesy_progress, _, 1)")
    try:
        yield
    finally:
        with _lock, _DeferredSignals():
            _progress_cb = None
            janus().query_once("flag(nesy_progress, _, 0)")


def _progress_event(phase, done, total) -> None:
    """Called from Prolog (``py_call``) by ``nesy_progress:progress/3``."""
    cb = _progress_cb
    if cb is not None:
        cb(str(phase), int(done), None if total in ("none", None) else int(total))


def _raise_signal(sig: str):
    if sig == "term":
        from ..errors import Terminated  # noqa: PLC0415
        raise Terminated()
    raise KeyboardInterrupt()


def solutions(goal: str, **inputs) -> list[dict]:
    """Every solution of ``goal`` as a list of binding dicts (in Prolog's order)."""
    with _lock:
        jan = janus()
        with _DeferredSignals():
            try:
                return [{k: v for k, v in s.items() if k != "truth"}
                        for s in jan.query(goal, inputs)]
            except jan.PrologError as exc:
                raise PrologError(_clean(str(exc))) from None


def load_rules(module: str, text: str, imports: list[str], *, source: str | None = None,
               line_offset: int = 0, task: str | None = None,
               field: str | None = None) -> list[str]:
    """Compile untrusted rule ``text`` into Prolog ``module`` after a sandbox check.

    Parameters
    ----------
    module : name of the fresh module (wiped first)
    imports : modules whose exported predicates the rules may use (e.g. ``["kandy_bk"]``)
    source, line_offset, task, field : where the text came from, for error messages
        (``line_offset`` is added to the line inside ``text``)

    Returns the defined predicates as ``"name/arity"`` strings. Raises
    :class:`~nesybench.errors.PrologError` (syntax error, directive, bad clause) or
    :class:`~nesybench.errors.UnsafeRuleError` (the sandbox refused a call).
    """
    use("prolog/safe_load.pl")
    res = once("safe_load:load_rules_text(M, Text, Imports, _O), safe_load:outcome_parts(_O, Kind, Line, Msg)",
               M=module, Text=text, Imports=list(imports))
    return _outcome(res, source, line_offset, task, field)


def load_rules_file(module: str, path: str | os.PathLike, imports: list[str], *,
                    task: str | None = None) -> list[str]:
    """As :func:`load_rules`, the rules read from ``path`` by Python through the door
    (:func:`nesybench.folder.read_input_text`: a regular file, no FIFO or device, bounded)
    and handed to Prolog as text: Prolog opens no file of a user."""
    from ..folder import read_input_text  # noqa: PLC0415

    p = Path(path)
    if not p.exists():
        raise PrologError("file not found", file=str(p), task=task)
    text = read_input_text(p)
    return load_rules(module, text, imports, source=str(p), task=task)


def _outcome(res: dict | None, source, line_offset, task, field) -> list[str]:
    # Kind: ok | syntax_error | directive | unsafe | bad_clause | too_big | no_file;
    # for ok, Msg is the list of defined predicates as "name/arity" strings.
    if res is None:
        raise PrologError("could not load rules", file=source, task=task, field=field)
    kind, line, msg = res["Kind"], res["Line"], res["Msg"]
    if kind == "ok":
        return list(msg)
    line = (line + line_offset) if line else None
    where = dict(file=source, task=task, field=field, line=line)
    if kind == "syntax_error":
        raise PrologError(f"Prolog {msg}", **where)
    if kind == "directive":
        raise UnsafeRuleError("directives (:- ...) are not allowed in rules", **where)
    if kind == "unsafe":
        raise UnsafeRuleError(f"unsafe rule: {msg}", **where)
    if kind == "bad_clause":
        raise PrologError(f"bad clause: {_clean(str(msg))}", **where)
    if kind == "too_big":
        raise PrologError(f"{msg} (the limit for untrusted Prolog text)", **where)
    if kind == "no_file":
        raise PrologError("file not found", file=source, task=task)
    raise PrologError(f"could not load rules ({kind}: {msg})", **where)


def _clean(msg: str) -> str:
    return " ".join(msg.split())
