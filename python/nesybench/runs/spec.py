"""Grid specifications: a run function, fixed parameters, axes, repetitions, a base seed.

A spec expands into *cells*. A cell is one call of the run function with the fixed
parameters plus one value per axis and a repetition index. Its identity and its seed come
from the cell's own axis values and repetition (never from its position in the grid or the
worker that runs it), so adding an axis value later leaves every existing cell — and its
results — unchanged.

YAML form (``curricula/sweeps/*.yaml``)::

    study: xor_counts                 # a name for the study
    function: rs.count                # a registered name (runs/registry.py) or module:function
    params: {task: curricula/rs/xor.yaml}   # fixed parameters of every cell
    axes:                             # the product of these ...
      n: {range: [2, 7]}              # 2..6 (python range: start, stop, step)
      map_class: [disentangled, perm, joint]
    zip: [[lr, batch]]                # ... except that axes in one group vary together
    repetitions: 3
    seed: 0
    timeout: 3600                     # seconds per cell (killed and recorded failed after)
    max_attempts: 2                   # a failing cell is run again up to this many times
    resources: {num_cpus: 1, num_gpus: 0.5, memory: 2GB}   # per cell, on Ray

Axis values are compared by value: ``1`` and ``1.0`` are one value (the same cell id, seed
and table row). ``timeout``, ``max_attempts`` and ``resources`` say how cells run, not what
they compute: they are not part of the study's identity and may change between runs.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ..errors import NesyError, yaml_error
from ..folder import read_input_text
from ..io import derive_seed
from ..yamlsafe import safe_load

_SPEC_KEYS = {"study", "function", "params", "axes", "zip", "repetitions", "seed", "description",
              "timeout", "max_attempts", "resources"}
#: how cells run, not what they compute: left out of the study's identity
_EXECUTION_KEYS = ("timeout", "max_attempts", "resources")
_RESOURCE_KEYS = ("num_cpus", "num_gpus", "memory")
_SCALARS = (str, int, float, bool, type(None))
#: the most cells a grid may have (axes product × repetitions), checked before expanding it
MAX_CELLS = 1_000_000
#: the longest ``timeout`` of one cell (30 days), in seconds
MAX_TIMEOUT = 30 * 86400


@dataclass(frozen=True)
class Cell:
    """One run of the grid: ``params`` = fixed parameters + this cell's axis values."""

    cell_id: str
    params: dict
    axes: dict
    rep: int
    seed: int


@dataclass
class GridSpec:
    """A sweep: ``function`` run on every cell of ``axes`` (product, except ``zip_axes``
    groups that vary together) × ``repetitions``, each with a derived seed."""

    study: str
    function: str
    params: dict = field(default_factory=dict)
    axes: dict = field(default_factory=dict)
    zip_axes: list = field(default_factory=list)
    repetitions: int = 1
    seed: int = 0
    description: str = ""
    timeout: float | None = None
    max_attempts: int = 1
    resources: dict = field(default_factory=dict)
    source: str | None = None

    def __post_init__(self) -> None:
        self.axes = {str(k): _axis_values(v, str(k), self.source) for k, v in self.axes.items()}
        self.validate()

    # -- validation -------------------------------------------------------------------
    def _err(self, msg: str, fld: str | None = None) -> NesyError:
        return NesyError(msg, file=self.source, field=fld)

    def validate(self) -> None:
        if not isinstance(self.study, str) or not self.study.strip():
            raise self._err("must be a non-empty name", "study")
        if not isinstance(self.function, str) or not self.function.strip():
            raise self._err("must name a run function (registered name or module:function)",
                            "function")
        if not isinstance(self.params, dict):
            raise self._err("must be a mapping of parameter names to values", "params")
        for key, value in self.params.items():
            _check_json(value, f"params.{key}", self.source)
        if isinstance(self.repetitions, bool) or not isinstance(self.repetitions, int) \
                or not 1 <= self.repetitions <= MAX_CELLS:
            raise self._err(f"must be an integer from 1 to {MAX_CELLS:,}, got "
                            f"{_short(self.repetitions)}", "repetitions")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise self._err(f"must be an integer, got {self.seed!r}", "seed")
        if self.timeout is not None and (
                isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float))
                or not math.isfinite(self.timeout) or not 0 < self.timeout <= MAX_TIMEOUT):
            raise self._err(f"must be a number of seconds > 0 and at most {MAX_TIMEOUT:,} "
                            f"(30 days), got {self.timeout!r}", "timeout")
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int) \
                or self.max_attempts < 1:
            raise self._err(f"must be an integer >= 1, got {self.max_attempts!r}",
                            "max_attempts")
        if not isinstance(self.resources, dict):
            raise self._err("must be a mapping such as {num_cpus: 1, num_gpus: 0.5, "
                            "memory: 2GB}", "resources")
        for key, value in self.resources.items():
            if key not in _RESOURCE_KEYS:
                raise self._err(f"unknown resource {key!r} (allowed: "
                                f"{', '.join(_RESOURCE_KEYS)})", f"resources.{key}")
            if key == "memory":
                from .executors import parse_bytes  # noqa: PLC0415

                try:
                    parse_bytes(value, f"resources.{key}")
                except NesyError as exc:
                    raise exc.where(file=self.source) from None
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or value < 0:
                raise self._err(f"must be a number >= 0, got {value!r}", f"resources.{key}")
        overlap = set(self.params) & set(self.axes)
        if overlap:
            raise self._err(f"{sorted(overlap)} are both fixed parameters and axes", "axes")
        if "rep" in self.axes or "rep" in self.params:
            raise self._err("'rep' is reserved for the repetition index", "axes")
        if not isinstance(self.zip_axes, list):
            raise self._err("must be a list of lists of axis names", "zip")
        seen: set[str] = set()
        for i, group in enumerate(self.zip_axes):
            if not isinstance(group, list) or len(group) < 2:
                raise self._err("each group must list at least two axes", f"zip[{i}]")
            for name in group:
                if name not in self.axes:
                    raise self._err(f"unknown axis {name!r}", f"zip[{i}]")
                if name in seen:
                    raise self._err(f"axis {name!r} is in two zip groups", f"zip[{i}]")
                seen.add(name)
            lengths = {len(self.axes[n]) for n in group}
            if len(lengths) != 1:
                raise self._err(f"axes {group} must have the same number of values "
                                f"(got {[len(self.axes[n]) for n in group]})", f"zip[{i}]")
        n = self.repetitions
        for name, values in self.axes.items():
            if name not in seen or next(g for g in self.zip_axes if name in g)[0] == name:
                n *= len(values)
            if n > MAX_CELLS:
                raise self._err(f"the grid has more than {MAX_CELLS:,} cells (axes times "
                                "repetitions); split the study", "axes")

    # -- expansion --------------------------------------------------------------------
    def cells(self) -> list[Cell]:
        """Every cell in a stable order (axes in spec order, then repetitions)."""
        zipped = {n for g in self.zip_axes for n in g}
        blocks = []      # each block: list of dicts of axis values
        done: set[str] = set()
        for name in self.axes:
            if name in done:
                continue
            if name in zipped:
                group = next(g for g in self.zip_axes if name in g)
                blocks.append([dict(zip(group, vals))
                               for vals in zip(*(self.axes[n] for n in group))])
                done.update(group)
            else:
                blocks.append([{name: v} for v in self.axes[name]])
                done.add(name)
        out = []
        for combo in itertools.product(*blocks) if blocks else [()]:
            axes = {}
            for part in combo:
                axes.update(part)
            for rep in range(self.repetitions):
                key = cell_key(axes, rep)
                out.append(Cell(cell_id=cell_id_of(key),
                                params={**self.params, **axes}, axes=axes, rep=rep,
                                seed=derive_seed("nesybench.runs", self.seed, key)))
        return out

    # -- serialisation ----------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("source")
        d["zip"] = d.pop("zip_axes")
        for key, default in (("timeout", None), ("max_attempts", 1), ("resources", {})):
            if d[key] == default:       # a spec without them reads (and hashes) as before
                del d[key]
        return d

    def identity(self) -> dict:
        """What must match for two specs to share cells: all but the axes' value lists
        and how cells run (time limit, attempts, resources)."""
        d = self.to_dict()
        d["axes"] = sorted(d["axes"])
        d.pop("description", None)
        for key in _EXECUTION_KEYS:
            d.pop(key, None)
        d["params"] = norm_value(d["params"])
        return d

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()


def norm_value(v):
    """A value as compared by the runner: numbers by value (``1.0`` is ``1``; booleans stay
    booleans), recursively through lists and mappings."""
    if isinstance(v, float) and not isinstance(v, bool) and v.is_integer() and abs(v) < 2 ** 63:
        return int(v)
    if isinstance(v, list):
        return [norm_value(x) for x in v]
    if isinstance(v, dict):
        return {k: norm_value(x) for k, x in v.items()}
    return v


def value_key(v) -> str:
    """Canonical text of an axis value (what ids, merging and table groups compare)."""
    return json.dumps(norm_value(v), sort_keys=True, separators=(",", ":"))


def cell_key(axes: dict, rep: int) -> str:
    """Canonical text of a cell's identity (axis values, compared by value, + repetition)."""
    return json.dumps({"axes": norm_value(axes), "rep": rep}, sort_keys=True,
                      separators=(",", ":"))


def cell_id_of(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _short(v) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _check_json(value, fld: str, source) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise NesyError(f"must be a finite number, got {value!r}", file=source, field=fld)
    if isinstance(value, _SCALARS):
        return
    if isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{fld}[{i}]", source)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise NesyError(f"keys must be strings, got {k!r}", file=source, field=fld)
            _check_json(v, f"{fld}.{k}", source)
        return
    raise NesyError(f"must be a JSON value (number, string, bool, list, mapping), got "
                    f"{type(value).__name__}", file=source, field=fld)


def _axis_values(v, name: str, source) -> list:
    fld = f"axes.{name}"
    if isinstance(v, dict):
        if len(v) != 1:
            raise NesyError("an axis mapping has exactly one of range, linspace, values",
                            file=source, field=fld)
        (kind, arg), = v.items()
        if kind == "values":
            v = arg
        elif kind == "range":
            if not isinstance(arg, list) or not 1 <= len(arg) <= 3 or \
                    not all(isinstance(a, int) and not isinstance(a, bool) for a in arg):
                raise NesyError("range takes [stop], [start, stop] or [start, stop, step] "
                                "integers", file=source, field=fld)
            if len(arg) == 3 and arg[2] == 0:
                raise NesyError("range step must not be 0", file=source, field=fld)
            r = range(*arg)
            try:
                n = len(r)
            except OverflowError:
                n = MAX_CELLS + 1
            if n > MAX_CELLS:
                raise NesyError(f"range has more than {MAX_CELLS:,} values", file=source,
                                field=fld)
            v = list(r)
        elif kind == "linspace":
            if not isinstance(arg, list) or len(arg) != 3 or not isinstance(arg[2], int) \
                    or isinstance(arg[2], bool) or arg[2] < 1 or \
                    not all(isinstance(a, (int, float)) and not isinstance(a, bool)
                            for a in arg[:2]):
                raise NesyError("linspace takes [start, stop, count] with count >= 1",
                                file=source, field=fld)
            a, b, n = arg
            if n > MAX_CELLS:
                raise NesyError(f"linspace count over {MAX_CELLS:,}", file=source, field=fld)
            try:
                finite = all(math.isfinite(float(x)) for x in (a, b))
            except OverflowError:
                finite = False
            if not finite:
                raise NesyError("linspace bounds must be finite", file=source, field=fld)
            v = [round(a + (b - a) * i / (n - 1), 12) if n > 1 else a for i in range(n)]
        else:
            raise NesyError(f"unknown axis form {kind!r} (range, linspace or values)",
                            file=source, field=fld)
    if not isinstance(v, list):
        raise NesyError(f"must be a list of values, got {type(v).__name__}", file=source,
                        field=fld)
    if not v:
        raise NesyError("has no values", file=source, field=fld)
    for i, x in enumerate(v):
        _check_json(x, f"{fld}[{i}]", source)
    keys = [value_key(x) for x in v]
    if len(set(keys)) != len(keys):
        raise NesyError("lists a value twice (numbers compare by value: 1 is 1.0)",
                        file=source, field=fld)
    return v


def load_spec(path_or_dict, *, source: str | None = None) -> GridSpec:
    """Read a grid spec from a YAML file (or an already-parsed mapping)."""
    if isinstance(path_or_dict, GridSpec):
        return path_or_dict
    if isinstance(path_or_dict, dict):
        data = path_or_dict
    else:
        p = Path(path_or_dict)
        source = source or str(p)
        if not p.is_file():
            raise NesyError("spec file not found", file=source)
        try:
            data = safe_load(read_input_text(p))
        except UnicodeDecodeError:
            raise NesyError("spec file is not UTF-8 text", file=source) from None
        except (yaml.YAMLError, RecursionError) as exc:
            raise yaml_error(exc, source) from None
    if not isinstance(data, dict):
        raise NesyError("a grid spec is a mapping (study, function, params, axes, ...)",
                        file=source)
    unknown = set(data) - _SPEC_KEYS
    if unknown:
        raise NesyError(f"unknown key(s) {sorted(unknown)} (allowed: {sorted(_SPEC_KEYS)})",
                        file=source)
    for req in ("study", "function"):
        if req not in data:
            raise NesyError("is missing", file=source, field=req)
    axes = data.get("axes") or {}
    if not isinstance(axes, dict):
        raise NesyError("must be a mapping of axis names to value lists", file=source,
                        field="axes")
    return GridSpec(study=data["study"], function=data["function"],
                    params=data.get("params") or {}, axes=axes,
                    zip_axes=data.get("zip") or [], repetitions=data.get("repetitions", 1),
                    seed=data.get("seed", 0), description=data.get("description") or "",
                    timeout=data.get("timeout"), max_attempts=data.get("max_attempts", 1),
                    resources=data.get("resources") or {}, source=source)
