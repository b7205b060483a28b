"""Load any data set nesybench makes through one call, ``nesybench.load``.

>>> ds = nesybench.load("out/easy")              # doctest: +SKIP
>>> len(ds), ds[0]["label"], ds["train"].to_pandas().shape  # doctest: +SKIP

``path_or_name`` is one of

* a folder written by a generator: a KANDY curriculum (``kandy generate``), a
  reasoning-shortcut / NeSy data set (``rs generate``) or a RuDaS data set (``rudas
  generate``); the kind is read from its ``manifest.json``;
* a KANDY curriculum YAML or an RS task YAML: generated once into the cache folder, then
  reused;
* a CSV or ARFF table (the IRT study's reader: target = last column);
* a built-in name (:func:`names`): ``kandy-easy``, ``kandy-hard`` ... (the shipped curricula,
  also by the bare names every command takes: ``easy``, ``hard``), ``rs-xor``,
  ``rs-mnadd_evenodd`` ... (the shipped RS tasks; ``xor``, ``mnadd_evenodd``), ``irt-letter``,
  ``irt-optdigits``, ``irt-phoneme``, ``ski-bcw``, ``ski-splice``, ``ski-census``.

Generated data sets are cached under ``$NESYBENCH_CACHE`` (default
``$XDG_CACHE_HOME/nesybench``, i.e. ``~/.cache/nesybench``), one folder per source file
content, seed and nesybench version; the first use shows a progress bar.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from nesybench import __version__
from nesybench.data.core import BenchmarkData, Column
from nesybench.errors import NesyError
from nesybench.paths import asset_names, data_root, resolve_asset

__all__ = ["load", "names", "cache_root", "BenchmarkData", "Column"]

IRT_BUILTIN = ("letter", "optdigits", "phoneme")
SKI_BUILTIN = ("bcw", "splice", "census")


def cache_root() -> Path:
    """``$NESYBENCH_CACHE``, else ``$XDG_CACHE_HOME/nesybench``, else ``~/.cache/nesybench``."""
    env = os.environ.get("NESYBENCH_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "nesybench"


#: the kinds of shipped file (:data:`nesybench.paths.ASSET_KINDS`) that generate a data set,
#: and the prefix of their built-in names here
GENERATED_KINDS = {"kandy-curriculum": "kandy", "rs-task": "rs"}


def names() -> dict[str, str]:
    """Built-in names -> what they load (a shipped curriculum or task file, or a table).

    A shipped curriculum or task is also loaded by its bare name (``easy``, ``xor``), the name
    every command takes (:func:`nesybench.paths.asset_names`)."""
    out = {}
    for kind, prefix in GENERATED_KINDS.items():
        for name, reg in asset_names(kind).items():
            out[f"{prefix}-{name.replace('_', '-')}"] = reg
    for n in IRT_BUILTIN:
        out[f"irt-{n}"] = f"IRT table {n}"
    for n in SKI_BUILTIN:
        out[f"ski-{n}"] = f"SKI table {n}"
    return out


def load(path_or_name, split: str | None = None, *, seed: int | None = None,
         progress: bool = True, verify: bool = True,
         allow_hardlinks: bool | None = None) -> BenchmarkData:
    """Load a data set (see the module docstring for what ``path_or_name`` may be).

    ``split`` selects one split (``train``, ``val``, ``test``, ``ood``; RuDaS: ``train``,
    ``test``, ``train_support`` ...); ``seed`` is the generation seed for a curriculum or task
    that is generated here (default: the file's own); ``progress`` shows a bar while
    generating; ``verify=False`` skips checking files against the SHA-256 their manifest
    lists. Anything else than a data set is one :class:`~nesybench.errors.NesyError`: every
    file of a folder is read through :class:`nesybench.folder.DataFolder` (paths stay inside
    the folder, regular files only, no hard-linked file unless ``allow_hardlinks``, bounded
    sizes, checksums checked, a JSON key named once).
    """
    data = _load(str(path_or_name), seed=seed, progress=progress, verify=verify,
                 allow_hardlinks=allow_hardlinks)
    if split is not None:
        data = data[split]
    return data


def _load(spec: str, *, seed, progress, verify=True, allow_hardlinks=None) -> BenchmarkData:
    from nesybench.data import kinds  # noqa: PLC0415

    key = spec.replace("_", "-")
    if not Path(spec).exists():
        if key.startswith(("irt-", "ski-")) and key[4:] in (IRT_BUILTIN + SKI_BUILTIN):
            study, table = key[:3], key[4:]
            if study == "irt" and table in IRT_BUILTIN:
                return kinds.load_irt_table(table, key)
            if study == "ski" and table in SKI_BUILTIN:
                return kinds.load_ski_table(table, key)
        builtin = names()
        if key in builtin and key.startswith(("kandy-", "rs-")):
            return _generated(data_root() / builtin[key], key, seed=seed,
                              progress=progress)
        try:            # a shipped curriculum's or task's bare or registry name: easy, xor
            source = resolve_asset(spec, tuple(GENERATED_KINDS))
        except NesyError:
            import difflib  # noqa: PLC0415

            known = list(builtin) + [n for k in GENERATED_KINDS for n in asset_names(k)]
            near = difflib.get_close_matches(spec, known, n=5, cutoff=0.5)
            raise NesyError("no such data set: neither a path nor a built-in name ("
                            + (f"nearest names: {', '.join(near)}; " if near else "")
                            + "`nesybench data list` lists them all)", file=spec) from None
        prefix = next(p for k, p in GENERATED_KINDS.items() if source.stem in asset_names(k))
        return _generated(source, f"{prefix}-{source.stem.replace('_', '-')}", seed=seed,
                          progress=progress)
    path = Path(spec)
    if path.is_dir():
        return load_folder(path, verify=verify, allow_hardlinks=allow_hardlinks)
    low = path.name.lower()
    if low.endswith((".yaml", ".yml")):
        return _generated(path, path.stem, seed=seed, progress=progress)
    if low.endswith((".csv", ".arff")):
        return kinds.load_irt_table(str(path), path.stem)
    raise NesyError("not a data set nesybench can load (a generated folder, a curriculum or "
                    "task YAML, a CSV/ARFF table, or a built-in name)", file=spec)


def load_folder(root: Path, name: str | None = None, *, verify: bool = True,
                allow_hardlinks: bool | None = None) -> BenchmarkData:
    """A generated folder; its kind comes from ``manifest.json``."""
    from nesybench.data import kinds  # noqa: PLC0415
    from nesybench.folder import DataFolder  # noqa: PLC0415

    root = Path(root)
    name = name or root.resolve().name
    folder = DataFolder(root, verify=verify, allow_hardlinks=allow_hardlinks)
    if not folder.exists("manifest.json"):
        raise NesyError("not a nesybench data set (no manifest.json; generate one with "
                        "`nesybench kandy generate`, `rs generate` or `rudas generate`)",
                        file=str(root))
    man = kinds.read_manifest(folder)
    fmt = man.get("format")
    if fmt == "nesybench-kandy":
        return kinds.load_kandy(folder, man, name)
    if fmt == "nesybench-rs":
        return kinds.load_rs(folder, man, name)
    if fmt == "rudas":
        return kinds.load_rudas(folder, man, name)
    raise NesyError(f"unknown data set format {fmt!r} in manifest.json (known: "
                    "nesybench-kandy, nesybench-rs, rudas)", file=str(root))


def _yaml_kind(path: Path) -> str:
    from nesybench.folder import read_input_text  # noqa: PLC0415
    from nesybench.yamlsafe import load_yaml  # noqa: PLC0415

    data = load_yaml(read_input_text(path), str(path))
    if isinstance(data, dict) and "tasks" in data:
        return "kandy"
    if isinstance(data, dict) and "concepts" in data:
        return "rs"
    raise NesyError("neither a KANDY curriculum (no `tasks`) nor an RS task (no `concepts`)",
                    file=str(path))


def cache_folder(source: Path, name: str, *, seed: int | None) -> Path:
    """Where the data set generated from ``source`` with ``seed`` lives in the cache."""
    from nesybench.folder import read_input  # noqa: PLC0415

    h = hashlib.sha256()
    h.update(read_input(source))
    h.update(json.dumps({"seed": seed, "version": __version__}).encode())
    return cache_root() / f"{name}-{h.hexdigest()[:12]}"


def _generated(source: Path, name: str, *, seed, progress) -> BenchmarkData:
    kind = _yaml_kind(source)
    out = cache_folder(source, name, seed=seed)
    if not (out / "manifest.json").is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        if kind == "kandy":
            from nesybench.kandy.generate import generate  # noqa: PLC0415

            generate(source, out, seed=seed, workers=min(4, os.cpu_count() or 1),
                     overwrite=True, progress=progress)
        else:
            from nesybench.shortcuts.generate import generate  # noqa: PLC0415
            from nesybench.shortcuts.task import load_task  # noqa: PLC0415

            generate(load_task(source), out, seed=0 if seed is None else seed,
                     overwrite=True, progress=progress)
    return load_folder(out, name)
