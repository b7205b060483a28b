"""PCG64Draws makes numpy Generator's choices, call for call, from the same stream."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nesybench.kandy.draws import PCG64Draws

#: bounds that exercise every branch: nothing drawn (1), small, Lemire's rejection taken
#: often (2**31 + 1), the full 32-bit range (2**32) and just under it
_BOUNDS = st.sampled_from([1, 2, 3, 6, 7, 100, 2**31 + 1, 2**32 - 1, 2**32]) | \
    st.integers(1, 2**32)
_CALLS = st.lists(st.one_of(
    st.tuples(st.just("integers"), _BOUNDS),
    st.tuples(st.just("range"), st.integers(-50, 50), st.integers(1, 40)),
    st.tuples(st.just("size"), st.integers(1, 9), st.integers(0, 7)),
    st.tuples(st.just("permutation"), st.sampled_from([0, 1, 2, 3, 4, 5, 9, 40, 300]))),
    max_size=120)


def _numpy(gen, call):
    kind, *a = call
    if kind == "integers":
        return int(gen.integers(a[0]))
    if kind == "range":
        return int(gen.integers(a[0], a[0] + a[1]))
    if kind == "size":
        return gen.integers(0, a[0], size=a[1]).tolist()
    return gen.permutation(a[0]).tolist()


def _ours(draws, call):
    kind, *a = call
    if kind == "integers":
        return draws.integers(a[0])
    if kind == "range":
        return draws.integers(a[0], a[0] + a[1])
    if kind == "size":
        return draws.integers(0, a[0], size=a[1])
    return draws.permutation(a[0])


@given(st.integers(0, 2**63 - 1), _CALLS)
@settings(max_examples=400, deadline=None, derandomize=True)
def test_every_call_gives_numpys_value(seed, calls):
    gen = np.random.Generator(np.random.PCG64(seed))
    draws = PCG64Draws(np.random.Generator(np.random.PCG64(seed)))
    for call in calls:
        assert _ours(draws, call) == _numpy(gen, call), call


def test_long_runs_cross_the_word_blocks():
    """Thousands of mixed calls, past many blocks of 256 words and odd half-word counts."""
    gen = np.random.Generator(np.random.PCG64(7))
    draws = PCG64Draws(np.random.Generator(np.random.PCG64(7)))
    for k in range(20000):
        call = ("permutation", k % 7) if k % 5 == 0 else ("integers", 2 + k % 13)
        assert _ours(draws, call) == _numpy(gen, call)


def test_only_a_fresh_pcg64():
    with pytest.raises(TypeError):
        PCG64Draws(np.random.Generator(np.random.MT19937(1)))
    used = np.random.Generator(np.random.PCG64(1))
    used.integers(5)                     # a 32-bit half is now buffered in the generator
    with pytest.raises(TypeError):
        PCG64Draws(used)
    with pytest.raises(ValueError):
        PCG64Draws(np.random.Generator(np.random.PCG64(1))).integers(0, 2**33)


class _Scripted(PCG64Draws):
    """Given 32-bit words instead of the stream's (to reach the rejection's exact edge,
    which random words hit once in 2**32 draws)."""

    __slots__ = ("script",)

    def __init__(self, words):
        super().__init__(np.random.Generator(np.random.PCG64(0)))
        self.script = list(words)

    def _uint32(self):
        return self.script.pop(0)


@pytest.mark.parametrize("bound", [3, 7, 2**31 + 1, 2**32 - 5])
def test_lemire_rejects_exactly_below_the_threshold(bound):
    """numpy's buffered_bounded_lemire_uint32: threshold (2**32 - bound) % bound; a word whose
    product leaves threshold - 1 is rejected, one that leaves the threshold is kept."""
    threshold = (2**32 - bound) % bound
    assert bound % 2 and threshold > 0          # odd: a word with any product exists
    inverse = pow(bound, -1, 2**32)
    reject = (threshold - 1) * inverse % 2**32
    keep = threshold * inverse % 2**32
    draws = _Scripted([reject, keep, 12345])
    assert draws.integers(bound) == keep * bound >> 32
    assert draws.script == [12345]          # two words taken: one rejected, one kept
