"""Class-balanced reservoir sampling (CBRS, Chrysakis & Moens, ICML 2020) for experience replay.

A memory of ``capacity`` items, each with a class; here a class is the pair (task, label), so
the buffer stays balanced over tasks and over positives/negatives. For each item of the
stream (class ``c``; ``n_c`` = items of class ``c`` seen so far, this one included;
``m_c`` = items of ``c`` in memory):

1. memory not full → store it;
2. else, if ``c`` is not a *full* class (a class is full once it has been one of the largest in
   a full memory) → replace a uniformly chosen item of one of the currently largest classes
   (those become full);
3. else → with probability ``m_c / n_c`` replace a uniformly chosen stored item of class ``c``.

So a class with few items keeps all of them, while large classes share the rest like plain
reservoir sampling within the class.
"""
from __future__ import annotations

from collections import Counter

import numpy as np


class ClassBalancedReservoir:
    """Holds up to ``capacity`` items (any Python objects, e.g. sample indices) with classes."""

    def __init__(self, capacity: int, seed: int = 0):
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = int(capacity)
        self.items: list = []
        self.classes: list = []
        self.seen: Counter = Counter()
        self.full: set = set()
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.items)

    def counts(self) -> Counter:
        """Items in memory per class."""
        return Counter(self.classes)

    def add(self, item, cls) -> bool:
        """Offer one stream item; returns whether it was stored."""
        self.seen[cls] += 1
        if self.capacity == 0:
            return False
        if len(self.items) < self.capacity:
            self.items.append(item)
            self.classes.append(cls)
            return True
        counts = self.counts()
        if cls not in self.full:
            top = max(counts.values())
            largest = [c for c, k in counts.items() if k == top]
            self.full.update(largest)
            victim_cls = largest[int(self.rng.integers(len(largest)))]
            slots = [i for i, c in enumerate(self.classes) if c == victim_cls]
            slot = slots[int(self.rng.integers(len(slots)))]
        else:
            m_c, n_c = counts.get(cls, 0), self.seen[cls]
            if self.rng.random() >= m_c / n_c:
                return False
            slots = [i for i, c in enumerate(self.classes) if c == cls]
            slot = slots[int(self.rng.integers(len(slots)))]
        self.items[slot] = item
        self.classes[slot] = cls
        return True

    def sample(self, k: int) -> list:
        """``min(k, len)`` stored items drawn uniformly without replacement."""
        if not self.items or k <= 0:
            return []
        idx = self.rng.choice(len(self.items), size=min(k, len(self.items)), replace=False)
        return [self.items[int(i)] for i in idx]
