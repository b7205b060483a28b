"""Executors: order, laziness and error handling of the streamed pool."""
import pytest

from nesybench.errors import NesyError
from nesybench.parallel import map_ordered, map_streamed


def _square(x):
    return x * x


def _fail_on_three(x):
    if x == 3:
        raise ValueError("three")
    return x


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_streamed_results_keep_input_order(workers):
    assert list(map_streamed(_square, iter(range(40)), workers=workers, window=3)) == \
        [x * x for x in range(40)]
    assert list(map_streamed(_square, iter(range(40)), workers=workers)) == \
        list(map_ordered(_square, list(range(40)), workers=workers))


def test_streamed_pulls_items_lazily_within_the_window():
    pulled = []

    def items():
        for i in range(100):
            pulled.append(i)
            yield i

    it = map_streamed(_square, items(), workers=2, window=4)
    assert next(it) == 0
    assert len(pulled) <= 4            # the producer is not drained ahead of the workers
    assert list(it) == [x * x for x in range(1, 100)]
    assert len(pulled) == 100


def test_streamed_errors_propagate_from_workers_and_producer():
    with pytest.raises(ValueError, match="three"):
        list(map_streamed(_fail_on_three, iter(range(10)), workers=2))

    def producer():
        yield 1
        yield 2
        raise NesyError("producer broke")

    with pytest.raises(NesyError, match="producer broke"):
        list(map_streamed(_square, producer(), workers=2))
    with pytest.raises(NesyError, match="workers"):
        list(map_streamed(_square, [1], workers=-1))
