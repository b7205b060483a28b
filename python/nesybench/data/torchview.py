"""The ``torch.utils.data.Dataset`` that :meth:`BenchmarkData.to_torch` returns (torch is
imported here only, so that loading a data set for pandas does not import it)."""
from __future__ import annotations

import torch


class TorchView(torch.utils.data.Dataset):
    """Item ``i``: a dict of tensors (``data.torch_spec`` gives each one's dtype and shape)."""

    def __init__(self, data):
        self.data = data
        self.spec = dict(data.torch_spec)
        self._rows = data.rows()

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: int) -> dict:
        n = len(self._rows)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sample {i} out of range ({n} samples)")
        return self.data._encode(self.data, self._rows[i])
