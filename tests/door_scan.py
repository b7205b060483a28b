"""The scanner behind tests/test_door.py: every place in a package's source that reads,
parses or lists a path itself, builds a path in the installation from a value, or hands an
already resolved path to an output writer.

Three rules, over the syntax tree of every module:

* **read** -- a call that opens, parses or lists a path: ``open`` (not in a write mode),
  ``Path.read_text()``/``read_bytes()``/``open()`` (a ``DataFolder``'s ``read_text(rel)``
  names a relative path and is the door), ``json.load(s)``, ``yaml.*load*``,
  ``np.load``/``loadtxt``/``fromfile``, ``torch.load``, ``pickle.load(s)``, ``Image.open``,
  ``zipfile.ZipFile``, ``tarfile.open``, ``gzip.open``, ``lzma.open``, ``os.open``,
  ``os.walk``, ``glob.glob``, ``Path.glob``/``rglob``. Allowed without a listing when the
  path comes from a named helper for files nesybench ships or keeps (:data:`HELPERS`:
  ``shipped``, ``cache_root`` ..., the install root ``ROOT``, or ``__file__``).
* **install-root** -- ``ROOT / x`` (or ``KB_DIR``, ``CURRICULA_DIR``, ``data_root()``) with
  ``x`` not a literal, and a ``DataFolder`` over the install root: a user's string looked
  up in the installation; shipped files are looked up by name (``nesybench.paths.shipped``).
* **resolved-output** -- the output path given to ``atomic_output_dir`` and the other
  writers was resolved (``.resolve()``, ``realpath``) first, so a link in it was followed
  before the writer could refuse it.

A finding is ``(module, function, rule, what)``; the test compares them with its allow-list.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

#: calls whose result is a path nesybench itself ships or keeps (or the text of one)
HELPERS = {"shipped", "shipped_text", "shipped_names", "data_root", "cache_root",
           "platform_cache", "source_tree", "project_swipl", "files", "bk_file",
           "gettempdir", "mkdtemp", "mkstemp", "TemporaryDirectory"}
#: names bound to the install root or a shipped folder (``nesybench.ROOT`` ...)
ROOT_NAMES = {"ROOT", "KB_DIR", "CURRICULA_DIR", "PROLOG_DIR"}
#: output writers whose path must not be resolved before they check it
WRITERS = {"atomic_output_dir", "atomic_output_file", "check_replaceable", "check_output_file",
           "write_output_file", "remove_output_folder", "check_output_path", "check_no_links"}

_MODULE_CALLS = {
    ("json", "load"): "json.load", ("json", "loads"): "json.loads",
    ("np", "load"): "np.load", ("numpy", "load"): "np.load", ("np", "loadtxt"): "np.load",
    ("np", "genfromtxt"): "np.load", ("np", "fromfile"): "np.load",
    ("torch", "load"): "torch.load", ("pickle", "load"): "pickle.load",
    ("pickle", "loads"): "pickle.load", ("Image", "open"): "Image.open",
    ("zipfile", "ZipFile"): "zipfile", ("tarfile", "open"): "tarfile",
    ("tarfile", "TarFile"): "tarfile", ("gzip", "open"): "gzip.open",
    ("lzma", "open"): "lzma.open", ("bz2", "open"): "bz2.open", ("io", "open"): "open",
    ("codecs", "open"): "open", ("os", "open"): "os.open", ("os", "walk"): "os.walk",
    ("glob", "glob"): "glob", ("glob", "iglob"): "glob",
    ("numpy", "loadtxt"): "np.load", ("numpy", "genfromtxt"): "np.load",
    ("numpy", "fromfile"): "np.load", ("numpy", "memmap"): "np.load", ("np", "memmap"): "np.load",
    ("torch.jit", "load"): "torch.load", ("PIL", "Image.open"): "Image.open",
    ("sqlite3", "connect"): "sqlite3.connect",
    ("os", "listdir"): "os.listdir", ("os", "scandir"): "os.listdir",
    ("shutil", "copy"): "shutil.copy", ("shutil", "copy2"): "shutil.copy",
    ("shutil", "copyfile"): "shutil.copy", ("shutil", "copytree"): "shutil.copy",
    ("shutil", "copyfileobj"): None, ("shutil", "move"): "shutil.copy",
    ("shutil", "unpack_archive"): "shutil.copy",
}
#: every reader of pandas (``pd.read_csv`` ...)
_PANDAS_READERS = {"read_csv", "read_table", "read_json", "read_parquet", "read_excel",
                   "read_pickle", "read_feather", "read_fwf", "read_hdf", "read_orc",
                   "read_sas", "read_spss", "read_stata", "read_xml", "read_html"}
_PATH_METHODS = {"read_text": "Path.read_text", "read_bytes": "Path.read_bytes",
                 "glob": "Path.glob", "rglob": "Path.rglob", "iterdir": "Path.iterdir"}


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Names bound by imports anywhere in the module, to what they name: ``xp`` ->
    ``numpy`` (``import numpy as xp``), ``load`` -> ``numpy.load`` (``from numpy import
    load``), ``Image`` -> ``PIL.Image``."""
    out: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else \
                    a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                out[a.asname or a.name] = f"{n.module}.{a.name}"
    return out


_CANONICAL = {"numpy": "np", "pandas": "pd", "PIL.Image": "Image", "torch": "torch",
              "json": "json", "pickle": "pickle", "yaml": "yaml", "sqlite3": "sqlite3",
              "shutil": "shutil", "os": "os", "glob": "glob", "gzip": "gzip", "lzma": "lzma",
              "bz2": "bz2", "zipfile": "zipfile", "tarfile": "tarfile", "io": "io",
              "codecs": "codecs", "PIL": "PIL"}


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


@dataclass(frozen=True, order=True)
class Finding:
    module: str
    function: str
    rule: str
    what: str
    line: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.module, self.function, self.what)

    def __str__(self) -> str:
        return f"{self.module}:{self.line} in {self.function}: {self.what} ({self.rule})"


def _name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _write_mode(call: ast.Call, pos: int) -> bool:
    mode = None
    if len(call.args) > pos and isinstance(call.args[pos], ast.Constant):
        mode = call.args[pos].value
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
            mode = kw.value.value
    return isinstance(mode, str) and any(c in mode for c in "wax")


def _literal(node, consts: set[str]) -> bool:
    """A string literal, an f-string, a module-level string constant, or a ``/`` chain of
    them (checked choices such as ``f"{encoding}_{kb}.pl"`` count as literals only when
    every part is a literal)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    if isinstance(node, ast.Name) and node.id in consts:
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _literal(node.left, consts) and _literal(node.right, consts)
    return False


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: str, tree: ast.Module):
        self.module = module
        self.findings: list[Finding] = []
        self.stack: list[str] = []
        self.consts = {t.id for n in tree.body if isinstance(n, ast.Assign)
                       and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                       for t in n.targets if isinstance(t, ast.Name)}
        self.aliases = _aliases(tree)
        self.module_derived = self._derived(tree.body, set(ROOT_NAMES))
        self.derived: list[set[str]] = [self.module_derived]
        self.resolved: list[set[str]] = [set()]

    # -- data flow (names bound from helper calls, per function) -------------------------
    def _from_helper(self, node, names: set[str]) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and _name(n.func) in HELPERS:
                return True
            if isinstance(n, ast.Name) and (n.id in names or n.id == "__file__"):
                return True
        return False

    def _derived(self, body, start: set[str]) -> set[str]:
        names = set(start)
        assigns = []
        for stmt in body:
            for n in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef,
                                                             ast.AsyncFunctionDef,
                                                             ast.ClassDef)) else ():
                if isinstance(n, ast.Assign):
                    assigns.append((n.targets, n.value))
                elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and n.value is not None:
                    assigns.append(([n.target], n.value))
                elif isinstance(n, (ast.For, ast.comprehension)):
                    assigns.append(([n.target], n.iter))
                elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                    assigns.append(([n.optional_vars], n.context_expr))
        changed = True
        while changed:
            changed = False
            for targets, value in assigns:
                if self._from_helper(value, names):
                    for t in targets:
                        for x in ast.walk(t):
                            if isinstance(x, ast.Name) and x.id not in names:
                                names.add(x.id)
                                changed = True
        return names

    def _resolved_names(self, body) -> set[str]:
        out = set()
        for stmt in body:
            for n in ast.walk(stmt):
                if isinstance(n, ast.Assign) and self._is_resolved(n.value, set()):
                    out |= {x.id for t in n.targets for x in ast.walk(t)
                            if isinstance(x, ast.Name)}
        return out

    @staticmethod
    def _is_resolved(node, names: set[str]) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Call) and _name(n.func) in ("resolve", "realpath", "abspath"):
                return True
            if isinstance(n, ast.Name) and n.id in names:
                return True
        return False

    # -- scopes ---------------------------------------------------------------------------
    def _scope(self, node):
        self.stack.append(node.name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.derived.append(self._derived(node.body, self.derived[-1]))
            self.resolved.append(self._resolved_names(node.body))
            self.generic_visit(node)
            self.derived.pop()
            self.resolved.pop()
        else:
            self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def _add(self, node, rule: str, what: str) -> None:
        self.findings.append(Finding(self.module, ".".join(self.stack) or "<module>", rule,
                                     what, node.lineno))

    def _ok(self, node) -> bool:
        """The path comes from a helper for shipped or kept files, or the call parses bytes
        already in memory (``io.BytesIO(data)``: read through the door before)."""
        if isinstance(node, ast.Call) and _name(node.func) in ("BytesIO", "StringIO"):
            return True
        return node is not None and self._from_helper(node, self.derived[-1])

    # -- the rules ------------------------------------------------------------------------
    def visit_BinOp(self, node):
        if isinstance(node.op, ast.Div):
            left = node.left
            root = (isinstance(left, ast.Name) and left.id in ROOT_NAMES) or \
                (isinstance(left, ast.Call) and _name(left.func) == "data_root")
            if root and not _literal(node.right, self.consts):
                self._add(node, "install-root", f"{ast.unparse(left)} / a value")
        self.generic_visit(node)

    def _module_call(self, f) -> tuple[str | None, str | None]:
        """``(module, attribute)`` of a call ``mod.attr(...)`` with import aliases undone
        (``xp.load`` of ``import numpy as xp`` is ``("np", "load")``, ``PIL.Image.open`` is
        ``("Image", "open")``, ``load`` of ``from numpy import load`` is ``("np", "load")``)."""
        if isinstance(f, ast.Name):
            full = self.aliases.get(f.id)
            if full and "." in full:
                mod, _, attr = full.rpartition(".")
                return _CANONICAL.get(mod, mod), attr
            return None, None
        if not isinstance(f, ast.Attribute):
            return None, None
        dotted = _dotted(f.value)
        if dotted is None:
            return None, f.attr
        head, _, rest = dotted.partition(".")
        full = self.aliases.get(head, head) + (f".{rest}" if rest else "")
        return _CANONICAL.get(full, full), f.attr

    def visit_Call(self, node):
        f = node.func
        name = _name(f)
        what, target = None, node.args[0] if node.args else None
        mod, attr = self._module_call(f)
        if isinstance(f, ast.Name) and f.id == "open":
            if not _write_mode(node, 1):
                what = "open"
        elif (mod, attr) in _MODULE_CALLS and _MODULE_CALLS[(mod, attr)] is not None:
            what = _MODULE_CALLS[(mod, attr)]
            if what == "open" and _write_mode(node, 1):
                what = None
        elif mod == "pd" and attr in _PANDAS_READERS:
            what = "pandas.read"
        elif mod == "yaml" and attr and "load" in attr:
            what = "yaml.load"
        elif isinstance(f, ast.Attribute):
            base = f.value
            mod = base.id if isinstance(base, ast.Name) else None
            if (mod, f.attr) in _MODULE_CALLS and _MODULE_CALLS[(mod, f.attr)] is not None:
                what = _MODULE_CALLS[(mod, f.attr)]
                if what == "open" and _write_mode(node, 1):
                    what = None
                if what == "os.open":
                    what = "os.open"
            elif mod == "yaml" and "load" in f.attr:
                what = "yaml.load"
            elif f.attr in ("read_text", "read_bytes") and not node.args:
                what, target = _PATH_METHODS[f.attr], base
            elif f.attr in ("glob", "rglob") and mod != "glob":
                what, target = _PATH_METHODS[f.attr], base
            elif f.attr == "iterdir" and not node.args:
                what, target = _PATH_METHODS[f.attr], base
            elif f.attr == "open" and mod not in ("os",) and \
                    (not node.args or isinstance(node.args[0], ast.Constant)) and \
                    not _write_mode(node, 0) and \
                    all(k.arg in ("mode", "encoding", "errors", "newline", "buffering")
                        for k in node.keywords):
                what, target = "Path.open", base
        if what is not None and not self._ok(target):
            self._add(node, "read", what)
        if name == "DataFolder" and node.args and (
                (isinstance(node.args[0], ast.Name) and node.args[0].id in ROOT_NAMES)
                or (isinstance(node.args[0], ast.Call)
                    and _name(node.args[0].func) == "data_root")):
            self._add(node, "install-root", "DataFolder(install root)")
        if name in WRITERS:
            out = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg in ("out", "path")), None)
            if out is not None and self._is_resolved(out, self.resolved[-1]):
                self._add(node, "resolved-output", f"{name}(a resolved path)")
        self.generic_visit(node)


def scan_source(text: str, module: str = "<snippet>") -> list[Finding]:
    tree = ast.parse(text)
    s = _Scanner(module, tree)
    s.visit(tree)
    return sorted(s.findings)


def scan_package(root: Path) -> list[Finding]:
    """Findings of every ``.py`` file under ``root`` (module names relative to it)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        out += scan_source(path.read_text(encoding="utf-8"), path.relative_to(root).as_posix())
    return out
