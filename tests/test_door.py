"""One door for everything from outside, checked over the whole package's syntax tree.

Every read of a path in ``python/nesybench`` goes through the contained reader
(``nesybench.folder``: ``DataFolder`` for a folder, ``read_input``/``read_user_file`` for one
file), through ``nesybench.yamlsafe`` for YAML and ``nesybench.unpickle`` for pickles, or
through a named helper for the files nesybench ships or keeps (``nesybench.paths.shipped``,
``cache_root`` ...). tests/door_scan.py finds every other call that opens, parses or lists a
path, every ``ROOT / value`` lookup in the installation, and every output path resolved before
its writer checks it. Each such call site must be listed below with its reason; a new one
fails this test, and so does an entry whose call site is gone.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from door_scan import scan_package, scan_source  # noqa: E402

PKG = Path(__file__).resolve().parents[1] / "python" / "nesybench"

#: the door itself: these modules read for everyone else
DOOR = {"folder.py": "the contained reader of folders and input files",
        "yamlsafe.py": "the YAML loader (bounded aliases, no duplicate keys)",
        "unpickle.py": "the numpy-only unpickler",
        "paths.py": "the registry of shipped names and the user cache"}

_OWN_OUTPUT = "an output folder nesybench is writing or replacing (the writer side: " \
              "io.atomic_output_dir's rules apply)"
_PROC = "a /proc file of a process nesybench started"
_STORE = "JSON nesybench wrote into a study's SQLite store (read back as data; a damaged " \
         "store is one error line, tests/data/fuzz/surface/*-study-damaged.json)"
_CACHE = "a data file in the user cache, fetched by nesybench with its SHA-256 pinned " \
         "(datafiles.verify checks it before it is read)"
_STUDY = "an artifact nesybench wrote into a study folder of its own"

#: (module, function, what) -> why the call site may read a path itself
ALLOWED: dict[tuple[str, str, str], str] = {
    ("data/__init__.py", "_load", "data_root() / a value"):
        "a value of the built-in data-set registry (names()), looked up by the user's key",
    ("data/export.py", "export", "Path.rglob"): "sizes the temporary export it just wrote",
    ("datafiles.py", "fetch", "Path.read_bytes"): _CACHE,
    ("datafiles.py", "verify", "Path.read_bytes"): _CACHE,
    ("doctor.py", "check_shipped", "ROOT / a value"):
        "a loop over three literal shipped names",
    ("doctor.py", "janus_preflight", "json.loads"):
        "the lines of JSON the preflight subprocess doctor started printed (no file)",
    ("io.py", "check_replaceable", "Path.iterdir"): _OWN_OUTPUT + "; names only",
    ("io.py", "check_replaceable", "os.listdir"): _OWN_OUTPUT + "; names only",
    ("io.py", "remove_output_folder", "os.listdir"): _OWN_OUTPUT + "; names only",
    ("io.py", "_files_under", "os.listdir"): _OWN_OUTPUT + "; names only",
    ("io.py", "_folder_digest", "os.listdir"):
        "the digest of an output folder nesybench wrote (names, lstat, no link followed)",
    ("io.py", "_scan", "os.listdir"):
        "the listing of an output folder nesybench wrote (names, lstat, no link followed)",
    ("logic/prolog.py", "janus_library_version", "os.listdir"):
        "the installed janus_swi package's own folder (its extension module)",
    ("logic/prolog.py", "home_version", "open"):
        "the first 64 KiB of include/SWI-Prolog.h of the SWI-Prolog home the user's "
        "SWI_HOME_DIR names (the version check before janus starts; nothing is parsed but "
        "one #define)",
    ("logic/prolog.py", "home_version", "Path.glob"):
        "the swipl executables under the SWI_HOME_DIR the user set (asked for their version)",
    ("rudas/experiment.py", "run_experiment", "Path.iterdir"):
        "whether --out is empty (names only), before nesybench writes into it",
    ("runs/cell.py", "keep_or_remove_scratch", "Path.iterdir"):
        "whether a cell's own scratch folder is empty",
    ("runs/runner.py", "_check_folder", "Path.iterdir"):
        "the names in --out, before nesybench writes a study into it",
    ("runs/runner.py", "_prepare_study", "Path.iterdir"):
        "the names in --out, before nesybench writes a study into it",
    ("runs/store.py", "Store._connect", "sqlite3.connect"):
        "the study's results.sqlite after runs.store.store_file checked it (a regular file "
        "inside the study, no link out, one hard link); the driver's own store",
    ("runs/store.py", "Store._connect_ro", "sqlite3.connect"):
        "the study's results.sqlite after runs.store.store_file checked it, opened "
        "mode=ro&immutable=1 (no -wal/-shm written) by the reading commands",
    ("runs/watchdog.py", "children_of", "Path.iterdir"): _PROC,
    ("runs/watchdog.py", "_tree", "Path.iterdir"): _PROC,
    ("shortcuts/generate.py", "_link", "shutil.copy"):
        "a file of the data set nesybench is generating, into its own output folder",
    ("ski/cli.py", "_studies", "Path.iterdir"):
        "the names of the sub-folders of a SKI study folder (each then read by its reader)",
    ("io.py", "check_replaceable", "check_output_path(a resolved path)"):
        "check_output_path gets the path as given; the name is resolved later in the function",
    ("io.py", "pid_alive", "Path.read_text"): _PROC,
    ("io.py", "sha256_file", "open"): _OWN_OUTPUT,
    ("io.py", "sweep_stale_temps", "Path.glob"): "nesybench's own temporary siblings of --out",
    ("io.py", "sweep_stale_temps", "Path.read_text"):
        "the PID file nesybench wrote into its own temporary folder",
    ("io.py", "unexpected_files", "Path.read_text"):
        "the marker of a folder about to be replaced: not a link, size-bounded, strict JSON",
    ("irt/data.py", "check_npy_header", "open"):
        "reads 1 KiB of the .npy header after check_input_file (a regular file)",
    ("irt/data.py", "load_builtin", "np.load"): _CACHE,
    ("irt/data.py", "load_responses", "np.load"):
        "a .npy named on the command line: header checked first, no pickles",
    ("kandy/ilp/bias.py", "_inline_includes", "Path.read_text"):
        "background knowledge nesybench ships (bk_file: checked choices), and its includes",
    ("kandy/language.py", "load_curriculum", "yaml.load"):
        "a subclass of yamlsafe.SafeLoader (aliases bounded, duplicate keys refused)",
    ("kandy/render.py", "_cached_config", "json.loads"):
        "JSON this process dumped as a cache key",
    ("logic/prolog.py", "resolve", "ROOT / a value"):
        "nesybench's own Prolog module names (prolog/..., kb/...), never user input",
    ("nesy/program/budget.py", "resident_mb", "open"): "/proc/self/statm: this process's own memory",
    ("nesy/inference/isolate.py", "_vm_size_bytes", "open"):
        "/proc/self/status: the child's own address-space size",
    ("nesy/inference/isolate.py", "_child", "json.loads"):
        "the request its parent wrote on standard input (a path the parent checked, budgets)",
    ("nesy/inference/isolate.py", "_reply", "json.loads"):
        "the reply the child process of nesybench wrote on its standard output",
    ("kandy/cli.py", "plot_cmd", "Path.iterdir"):
        "whether the user's own --out folder is empty (names only, nothing is read)",
    ("parallel.py", "_probe_ray", "json.loads"):
        "the reply nesybench's own probe process printed",
    ("rudas/experiment.py", "run_experiment", "Path.read_text"):
        "the marker of an experiment folder nesybench writes in place (strict JSON)",
    ("rudas/learners/aleph.py", "Aleph.run", "Path.read_text"):
        "the log and theory Aleph wrote into nesybench's temporary folder",
    ("runs/demo.py", "fault_cell", "Path.read_text"): "a demo cell's own counter file",
    ("runs/report.py", "plot", "json.loads"): _STORE,
    ("runs/runner.py", "_check_artifacts", "Path.rglob"): _STUDY,
    ("runs/runner.py", "lock_holder", "open"): "a study's lock file, written by nesybench",
    ("runs/store.py", "Store.add_cells", "json.loads"): _STORE,
    ("runs/store.py", "Store.note", "json.loads"): _STORE,
    ("runs/store.py", "Store.open", "Path.glob"): "leftovers of nesybench creating a store",
    ("runs/store.py", "remove_creation_leftovers", "Path.glob"):
        "leftovers of nesybench creating a store",
    ("runs/watchdog.py", "_alive", "Path.read_text"): _PROC,
    ("runs/watchdog.py", "_stat", "Path.read_text"): _PROC,
    ("runs/watchdog.py", "main", "os.open"): "the watchdog's own log",
    ("runs/worker.py", "read_frame", "pickle.load"):
        "frames on the pipe between nesybench and the worker process it started",
    ("shortcuts/render/blender.py", "_done", "Path.read_text"):
        "the resume folder nesybench made (its marker checked by open_partial)",
    ("shortcuts/render/blender.py", "_done", "json.loads"): "the resume folder nesybench made",
    ("shortcuts/render/blender.py", "_render_job", "os.open"): "a log nesybench writes",
    ("shortcuts/render/blender.py", "_render_job", "open"):
        "the PNG Blender has just rendered into nesybench's own output folder",
    ("shortcuts/generate.py", "generate", "Path.read_text"): "the resume folder nesybench made",
    ("shortcuts/generate.py", "generate", "json.loads"): "the resume folder nesybench made",
    ("ski/data.py", "_bcw", "Path.read_bytes"): _CACHE,
    ("ski/data.py", "_census", "Path.read_text"): _CACHE,
    ("ski/data.py", "_read_bcw_file", "Path.read_text"): _CACHE,
    ("ski/data.py", "_splice", "Path.read_text"): _CACHE,
    ("ski/native.py", "_cpu_key", "Path.read_text"): "/proc/cpuinfo (a cache key)",
}

#: call sites that still read a user's path themselves; each says what is left to do. Keep
#: this list empty: move the read to nesybench.folder and delete the entry.
PENDING: dict[tuple[str, str, str], str] = {}


def _findings():
    return [f for f in scan_package(PKG) if f.module not in DOOR]


def test_every_read_goes_through_the_door():
    listed = ALLOWED.keys() | PENDING.keys()
    new = sorted({str(f) for f in _findings() if f.key not in listed})
    assert not new, ("read through nesybench.folder (DataFolder, read_input, parse_json), "
                     "look shipped files up with nesybench.paths.shipped, and check an output "
                     "path before resolving it; or list the call site with its reason in "
                     "tests/test_door.py:\n" + "\n".join(new))


def test_no_stale_entries():
    found = {f.key for f in _findings()}
    stale = sorted(k for k in ALLOWED.keys() | PENDING.keys() if k not in found)
    assert not stale, "call sites no longer in the package; remove them:\n" + \
        "\n".join(map(str, stale))
    assert not ALLOWED.keys() & PENDING.keys()
    assert all(isinstance(r, str) and len(r) > 10 for r in {**ALLOWED, **PENDING}.values())


#: the holes the door had, as they were written (the scanner must name each)
OLD_HOLES = {
    "bddoia index": ("read", '''
def _load_index(path):
    if path.stat().st_size > MAX_PKL_BYTES:
        raise NesyError("index too large", file=str(path))
    obj = restricted_load(path.read_bytes())
'''),
    "bddoia tensor": ("read", '''
def _tensor(path, root):
    real = path.resolve(strict=True)
    t = torch.load(real, map_location="cpu", weights_only=True)
'''),
    "knowledge root lookup": ("install-root", '''
def load_rs(folder, kn, where):
    for base in (folder, DataFolder(ROOT)):
        if base.exists(kn, **where):
            return base.read_text(kn, **where)
'''),
    "task knowledge root lookup": ("install-root", '''
def load_task(k, base):
    kp = Path(k)
    cand = [kp] if kp.is_absolute() else [ROOT / kp, base / kp]
'''),
    "browse writer": ("resolved-output", '''
def write_static_browser(dataset_dir, out_dir, *, overwrite, build_data, variable, html):
    root = Path(dataset_dir)
    out = (Path(out_dir) if out_dir is not None else root / "browse").resolve()
    data = build_data(root, out)
    with atomic_output_dir(out, overwrite=overwrite or out_dir is None, inputs=[root]) as tmp:
        (tmp / "data.js").write_text(js, encoding="utf-8")
'''),
    "a duplicate-key-blind JSON parse": ("read", '''
def read_support(p):
    data = json.loads(p.read_text())
'''),
}


#: ways to read a file that the scanner once let through (each must be named): the scan is a
#: ratchet; tests/test_door_monitor.py watches the process itself
MISSED_IDIOMS = {
    "Path.open with an encoding": 'def f(p):\n    with p.open(encoding="utf-8") as fh:\n'
                                  '        return fh.read()\n',
    "Path.open r with an encoding": 'def f(p):\n    return p.open("r", encoding="utf-8")\n',
    "Path.open with newline": 'def f(p):\n    return p.open(newline="")\n',
    "pandas read_csv": 'import pandas as pd\ndef f(p):\n    return pd.read_csv(p)\n',
    "pandas unaliased": 'import pandas\ndef f(p):\n    return pandas.read_parquet(p)\n',
    "pandas read_json": 'import pandas as pd\ndef f(p):\n    return pd.read_json(p)\n',
    "pandas read_pickle": 'import pandas as pd\ndef f(p):\n    return pd.read_pickle(p)\n',
    "from pandas import read_csv": 'from pandas import read_csv\ndef f(p):\n'
                                   '    return read_csv(p)\n',
    "sqlite3.connect": 'import sqlite3\ndef f(p):\n    return sqlite3.connect(p)\n',
    "from sqlite3 import connect": 'from sqlite3 import connect\ndef f(p):\n'
                                   '    return connect(p)\n',
    "sqlite3 aliased": 'import sqlite3 as db\ndef f(p):\n    return db.connect(p)\n',
    "numpy aliased": 'import numpy as xp\ndef f(p):\n    return xp.load(p)\n',
    "numpy unaliased": 'import numpy\ndef f(p):\n    return numpy.load(p)\n',
    "from numpy import load": 'from numpy import load\ndef f(p):\n    return load(p)\n',
    "numpy loadtxt unaliased": 'import numpy\ndef f(p):\n    return numpy.loadtxt(p)\n',
    "numpy memmap": 'import numpy as np\ndef f(p):\n    return np.memmap(p)\n',
    "PIL.Image.open": 'import PIL.Image\ndef f(p):\n    return PIL.Image.open(p)\n',
    "from PIL import Image as I": 'from PIL import Image as I\ndef f(p):\n    return I.open(p)\n',
    "torch.jit.load": 'import torch\ndef f(p):\n    return torch.jit.load(p)\n',
    "shutil.copy": 'import shutil\ndef f(p, q):\n    shutil.copy(p, q)\n',
    "shutil.copy2": 'import shutil\ndef f(p, q):\n    shutil.copy2(p, q)\n',
    "shutil.copyfile": 'import shutil\ndef f(p, q):\n    shutil.copyfile(p, q)\n',
    "shutil.copytree": 'import shutil\ndef f(p, q):\n    shutil.copytree(p, q)\n',
    "shutil.move": 'import shutil\ndef f(p, q):\n    shutil.move(p, q)\n',
    "shutil.unpack_archive": 'import shutil\ndef f(p, q):\n    shutil.unpack_archive(p, q)\n',
    "from shutil import copy2 as cp": 'from shutil import copy2 as cp\ndef f(p, q):\n'
                                      '    cp(p, q)\n',
    "Path.iterdir": 'def f(p):\n    return [q.name for q in p.iterdir()]\n',
    "Path(...).iterdir": 'from pathlib import Path\ndef f(s):\n'
                         '    return list(Path(s).iterdir())\n',
    "os.listdir": 'import os\ndef f(p):\n    return os.listdir(p)\n',
    "os.scandir": 'import os\ndef f(p):\n    return list(os.scandir(p))\n',
    "from os import listdir": 'from os import listdir\ndef f(p):\n    return listdir(p)\n',
    "io.open": 'import io\ndef f(p):\n    return io.open(p).read()\n',
    "codecs.open": 'import codecs\ndef f(p):\n    return codecs.open(p).read()\n',
    "json.load of an open file": 'import json\ndef f(p):\n    return json.load(open(p))\n',
    "yaml aliased": 'import yaml as y\ndef f(t):\n    return y.unsafe_load(t)\n',
}


def test_the_scanner_names_the_idioms_it_missed():
    missed = [name for name, code in MISSED_IDIOMS.items()
              if "read" not in {f.rule for f in scan_source(code)}]
    assert not missed, f"the scanner does not name: {missed}"


def test_the_scanner_names_the_old_holes():
    for name, (rule, code) in OLD_HOLES.items():
        assert rule in {f.rule for f in scan_source(code)}, name


def test_the_scanner_accepts_the_door_and_shipped_helpers():
    code = '''
def ok(folder, rel, path, data):
    text = folder.read_text(rel)
    kb = shipped_text("kb/shortcuts/xor.lp")
    spec = shipped("curricula/rs/xor.yaml").read_text()
    t = torch.load(io.BytesIO(data), weights_only=True)
    with open(path, "w") as fh:
        fh.write(text)
    return ROOT / "kb" / "kandy" / "bk.pl"
'''
    assert scan_source(code) == []


def _listdir(path):
    import os
    try:
        os.listdir(path)            # the audit event comes before the call fails on a file
    except NotADirectoryError:
        pass


def test_the_fuzz_hook_sees_sqlite_shutil_and_listings(tmp_path):
    """The in-process audit hook of the fuzz run (tests/fuzzing.py) counts a secret reached
    through sqlite3.connect (a URI too), shutil's copies and os.listdir, not only open()."""
    import os
    import shutil
    import sqlite3

    import fuzzing

    reached = {
        "sqlite3.connect": lambda: sqlite3.connect(f"file:{fuzzing.SECRET}?mode=ro",
                                                   uri=True).close(),
        "shutil.copyfile": lambda: shutil.copyfile(fuzzing.SECRET, tmp_path / "c"),
        "os.listdir": lambda: _listdir(fuzzing.SECRET),
    }
    for name, reach in reached.items():
        before = fuzzing.STATS["outside_reads"]
        with fuzzing.watched():
            reach()
        assert fuzzing.STATS["outside_reads"] > before, name
    assert {"sqlite3.connect", "os.listdir", "shutil.copytree"} <= fuzzing.AUDITED
