import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The data files and the SKI kernel live in the user cache folder, filled once by `make setup`
# (`nesybench data fetch`). Tests that point NESYBENCH_CACHE at a fresh folder (for world
# tables) still read that one copy, and never download.
from nesybench.paths import cache_root  # noqa: E402

os.environ.setdefault("NESYBENCH_DATA", str(cache_root() / "data"))
os.environ.setdefault("NESYBENCH_KERNELS", str(cache_root() / "kernels"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
