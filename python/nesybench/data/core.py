"""One surface over every data set nesybench makes: :class:`BenchmarkData`.

A data set is a list of *rows* per split. A row is a flat dict of plain values (int, float,
bool, str, or a list of small dicts for structured concepts); an image is kept as its path
relative to the data set folder and read only when a sample or an export needs it. Each kind
(:mod:`nesybench.data.kinds`) declares its :class:`Column` list once; indexing, ``to_pandas``,
``to_torch`` and every export (:mod:`nesybench.data.export`) are built from it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from nesybench.errors import NesyError

#: column types: ``image`` (a PNG file), ``int64``, ``float64``, ``bool``, ``string``,
#: ``objects`` (a list of ``{shape, color, size}`` dicts)
DTYPES = ("image", "int64", "float64", "bool", "string", "objects")


@dataclass(frozen=True)
class Column:
    """One column of a data set's rows.

    name         a lower-case identifier (``[a-z0-9_]``), the same in every export
    dtype        one of :data:`DTYPES`
    description  one sentence for the dataset card and the Croissant field
    names        class names when the integer values index them (``label`` of KANDY)
    """

    name: str
    dtype: str
    description: str
    names: tuple[str, ...] | None = None


@dataclass
class BenchmarkData:
    """A loaded data set (or one split of it), the same surface for every kind.

    * ``len(ds)``, ``ds[i]``: a sample as a dict (``split`` plus the columns; an image column
      holds a ``PIL.Image``), in split order then row order;
    * ``ds["train"]``: the same object restricted to one split (``ds.splits`` lists them);
    * ``ds.to_pandas()``: the rows as a DataFrame (image columns hold the file path relative to
      the data set folder, ``ds.root``);
    * ``ds.to_torch()``: a ``torch.utils.data.Dataset`` of dicts of tensors (shapes and dtypes
      in :attr:`torch_spec`);
    * ``ds.meta``: kind, name, format, generator version, seed, spec and the SHA-256 of every
      source file.
    """

    kind: str
    name: str
    root: Path | None
    columns: list[Column]
    rows_by_split: dict[str, list[dict]]
    meta: dict
    #: per split (in order) rules, task names ...: what the dataset card shows
    card: dict = field(default_factory=dict)
    #: tensor name -> (dtype, shape) of the items of :meth:`to_torch`
    torch_spec: dict = field(default_factory=dict)
    split: str | None = None
    _encode: object = None          # row -> dict of tensors (kind specific)
    #: the :class:`~nesybench.folder.DataFolder` every file of the data set is read through
    folder: object = None

    # -- the uniform surface --------------------------------------------------------------
    @property
    def splits(self) -> list[str]:
        """Split names, in order (only the selected one after ``ds[split]``)."""
        if self.split is not None:
            return [self.split]
        return list(self.rows_by_split)

    def rows(self, split: str | None = None) -> list[dict]:
        """The rows of ``split`` (default: of every selected split, each with its ``split``)."""
        if split is not None:
            self._check_split(split)
            return [{"split": split, **r} for r in self.rows_by_split[split]]
        return [row for s in self.splits for row in self.rows(s)]

    def _check_split(self, split: str) -> None:
        if split not in self.rows_by_split:
            raise NesyError(f"no split {split!r} (splits: {', '.join(self.rows_by_split)})",
                            file=self.name)

    def __len__(self) -> int:
        return sum(len(self.rows_by_split[s]) for s in self.splits)

    def _locate(self, i: int) -> tuple[str, dict]:
        n = len(self)
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"index with an int or a split name, not {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sample {i} out of range ({n} samples)")
        for s in self.splits:
            rows = self.rows_by_split[s]
            if i < len(rows):
                return s, rows[i]
            i -= len(rows)
        raise IndexError(i)  # pragma: no cover - unreachable

    def __getitem__(self, key):
        if isinstance(key, str):
            self._check_split(key)
            if self.split is not None and key != self.split:
                raise NesyError(f"this view holds split {self.split!r} only", file=self.name)
            return BenchmarkData(kind=self.kind, name=self.name, root=self.root,
                                 columns=self.columns, rows_by_split=self.rows_by_split,
                                 meta=self.meta, card=self.card, torch_spec=self.torch_spec,
                                 split=key, _encode=self._encode, folder=self.folder)
        split, row = self._locate(key)
        sample = {"split": split}
        for c in self.columns:
            v = row[c.name]
            if c.dtype == "image":
                v = self.folder.image(v)
            elif c.dtype == "objects":
                v = [dict(o) for o in v]
            sample[c.name] = v
        return sample

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        sizes = ", ".join(f"{s}: {len(self.rows_by_split[s])}" for s in self.splits)
        return f"<{self.kind} data set {self.name!r} ({sizes})>"

    def image_bytes(self, rel: str) -> bytes:
        """The bytes of an image file, by its path relative to :attr:`root` (read through
        :attr:`folder`: inside the folder, a regular file, its SHA-256 checked when the
        manifest lists it), its header checked as :meth:`image` checks it (a picture that
        claims more than ``MAX_IMAGE_PIXELS`` pixels is refused before anything decodes it)."""
        from nesybench.folder import image_size  # noqa: PLC0415

        data = self.folder.read_bytes(rel)
        image_size(data, self.folder.label(rel))
        return data

    def to_pandas(self):
        """The rows of the selected split(s) as a ``pandas.DataFrame``: a ``split`` column,
        then the columns (image columns: the file path relative to :attr:`root`)."""
        import pandas as pd  # noqa: PLC0415

        names = ["split"] + [c.name for c in self.columns]
        return pd.DataFrame(self.rows(), columns=names)

    def to_torch(self):
        """A ``torch.utils.data.Dataset`` over the selected split(s): item ``i`` is a dict of
        tensors, shapes and dtypes as :attr:`torch_spec` says (batch them with a
        ``DataLoader``; the default collate stacks each key)."""
        from nesybench.data.torchview import TorchView  # noqa: PLC0415

        return TorchView(self)

    def class_balance(self) -> dict:
        """Per split, the number of rows per value of the ``label`` column (when there is
        one), as ``{split: {value: count}}``."""
        names = {c.name for c in self.columns}
        if "label" not in names:
            return {}
        out = {}
        for s in self.splits:
            hist: dict = {}
            for r in self.rows_by_split[s]:
                hist[r["label"]] = hist.get(r["label"], 0) + 1
            out[s] = dict(sorted(hist.items(), key=lambda kv: str(kv[0])))
        return out


def image_tensor(im):
    """float32 [C, H, W] in [0, 1] from a decoded picture (``DataFolder.image``; RGB: C = 3,
    grey: C = 1)."""
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    if im.mode not in ("RGB", "L"):
        im = im.convert("RGB")
    arr = np.asarray(im, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return torch.from_numpy(arr.copy()).permute(2, 0, 1).to(torch.float32).div_(255.0)
