"""numpy's ``Generator.integers`` and ``Generator.permutation`` on a PCG64 stream, in Python.

Drawing one KANDY symbol takes a few dozen small random choices (an alternative, a value
per attribute, a permutation of a short list). Each call of a numpy ``Generator`` method
costs about a microsecond of argument handling, more than the choice itself;
:class:`PCG64Draws` makes the same choices from the same 64-bit words of the bit generator,
fetched in blocks, at a third of the cost. It follows numpy's algorithms exactly, so a seed
gives the same symbols either way (the tests compare them call by call with numpy):

* ``next_uint32`` of PCG64: the low half of a fresh 64-bit word, the high half kept for the
  next call;
* ``integers(low, high)`` with ``high - low <= 2**32``: Lemire's multiply-and-reject on one
  32-bit word (numpy's ``buffered_bounded_lemire_uint32``), nothing drawn when
  ``high - low == 1``;
* ``permutation(n)``: ``shuffle(arange(n))``, Fisher–Yates from the last item down, each
  index drawn by masking 32-bit words to the next power of two and rejecting what is above
  (numpy's ``random_interval``).

Only for a ``Generator`` over a fresh ``PCG64`` that nothing else draws from afterwards: the
block of words taken ahead leaves the wrapped generator further along its stream.
"""
from __future__ import annotations

import numpy as np

_MASK32 = 0xFFFFFFFF
#: 64-bit words fetched from the bit generator at a time
_BLOCK = 256


class PCG64Draws:
    """``integers`` and ``permutation`` of the numpy ``Generator`` ``generator`` (over a
    :class:`numpy.random.PCG64` that has not drawn yet), bit for bit, as Python ints and
    lists."""

    __slots__ = ("_bitgen", "_words", "_half")

    def __init__(self, generator: np.random.Generator):
        bitgen = generator.bit_generator
        if not isinstance(bitgen, np.random.PCG64) or bitgen.state["has_uint32"]:
            raise TypeError("PCG64Draws needs a Generator over a PCG64 that has not drawn yet")
        self._bitgen = bitgen
        self._words: list[int] = []         # the block, last word first out
        self._half: int | None = None       # the high half of the last word, not used yet

    def _uint32(self) -> int:
        half = self._half
        if half is not None:
            self._half = None
            return half
        words = self._words
        if not words:
            words.extend(reversed(self._bitgen.random_raw(_BLOCK).tolist()))
        word = words.pop()
        self._half = word >> 32
        return word & _MASK32

    def _at_most(self, span: int) -> int:
        """A uniform integer in [0, span], 0 <= span < 2**32 (Lemire's method)."""
        if span == 0:
            return 0
        if span == _MASK32:
            return self._uint32()
        bound = span + 1
        m = self._uint32() * bound
        if (m & _MASK32) < bound:
            threshold = (_MASK32 - span) % bound
            while (m & _MASK32) < threshold:
                m = self._uint32() * bound
        return m >> 32

    def integers(self, low: int, high: int | None = None, size: int | None = None):
        """``Generator.integers(low, high, size)`` (``high`` exclusive; one argument is
        ``high`` with ``low = 0``): an int, or a list of ``size`` ints."""
        if high is None:
            low, high = 0, low
        span = high - 1 - low
        if not 0 <= span <= _MASK32:
            raise ValueError(f"integers({low}, {high}): the range must hold 1 to 2**32 values")
        if size is None:
            return low + self._at_most(span)
        return [low + self._at_most(span) for _ in range(size)]

    def permutation(self, n: int) -> list[int]:
        """``Generator.permutation(n)`` as a list."""
        items = list(range(n))
        uint32 = self._uint32
        for i in range(n - 1, 0, -1):
            if i > _MASK32:
                raise ValueError("permutation of more than 2**32 items")
            mask = (1 << i.bit_length()) - 1
            j = uint32() & mask
            while j > i:
                j = uint32() & mask
            items[i], items[j] = items[j], items[i]
        return items
