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
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from ..errors import NesyError
from ..io import derive_seed

_SPEC_KEYS = {"study", "function", "params", "axes", "zip", "repetitions", "seed", "description"}
_SCALARS = (str, int, float, bool, type(None))


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
                or self.repetitions < 1:
            raise self._err(f"must be an integer >= 1, got {self.repetitions!r}", "repetitions")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise self._err(f"must be an integer, got {self.seed!r}", "seed")
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
                out.append(Cell(cell_id=hashlib.sha256(key.encode()).hexdigest()[:16],
                                params={**self.params, **axes}, axes=axes, rep=rep,
                                seed=derive_seed("nesybench.runs", self.seed, key)))
        return out

    # -- serialisation ----------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("source")
        d["zip"] = d.pop("zip_axes")
        return d

    def identity(self) -> dict:
        """What must match for two specs to share cells: all but the axes' value lists."""
        d = self.to_dict()
        d["axes"] = sorted(d["axes"])
        d.pop("description", None)
        return d

    def hash(self) -> str:
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()


def cell_key(axes: dict, rep: int) -> str:
    """Canonical text of a cell's identity (axis values + repetition)."""
    return json.dumps({"axes": axes, "rep": rep}, sort_keys=True, separators=(",", ":"))


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
            v = list(range(*arg))
        elif kind == "linspace":
            if not isinstance(arg, list) or len(arg) != 3 or not isinstance(arg[2], int) \
                    or isinstance(arg[2], bool) or arg[2] < 1 or \
                    not all(isinstance(a, (int, float)) and not isinstance(a, bool)
                            for a in arg[:2]):
                raise NesyError("linspace takes [start, stop, count] with count >= 1",
                                file=source, field=fld)
            a, b, n = arg
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
    keys = [json.dumps(x, sort_keys=True) for x in v]
    if len(set(keys)) != len(keys):
        raise NesyError("lists a value twice", file=source, field=fld)
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
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise NesyError("spec file is not UTF-8 text", file=source) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise NesyError(f"YAML syntax error: {getattr(exc, 'problem', exc)}", file=source,
                            line=mark.line + 1 if mark else None) from None
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
                    source=source)
