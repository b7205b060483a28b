"""Rejection sampling of one task's symbols, splitting and supervision (paper §3.1, supp. §4.1-4.2).

Per task:

1. draw a label with p = 0.5, sample a symbol from that label's set, reject it if it was
   generated before (*duplicate*) or if the ground-truth rule disagrees with the label
   (*rule*); stop at ``samples`` unique symbols or after ``patience`` consecutive rejections;
2. split the unique symbols disjointly into train/val/test; when patience ran out, draw each
   split's requested size *with replacement inside that split*, so no symbol crosses splits;
3. mark samples supervised with probability f(t) = γ·e^(−σt), σ = log(γ/β), t ∈ [0, 1] the
   sample's position in its split.

Rule checks are batched: candidates are drawn ahead in blocks and their new canonical texts
go to Prolog in one call; the accept/reject decisions are then replayed in draw order, so the
result does not depend on the block size. Separate random streams (derived from the task
seed) drive symbols, splits and supervision, so neither batching nor worker counts change a
byte of the output.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import NesyError
from ..io import derive_seed
from .draws import PCG64Draws
from .expand import sample_symbol
from .language import TaskSpec
from .rules import TaskRule
from .symbols import Domain, Symbol

SPLITS = ("train", "val", "test")


@dataclass
class TaskStats:
    """Per-task generation statistics (written to the manifest)."""

    unique_symbols: int = 0
    positives: int = 0
    negatives: int = 0
    candidates: int = 0
    rejected_by_rule: int = 0
    rejected_by_duplicate: int = 0
    checked: int = 0
    with_replacement: bool = False
    split_sizes: dict = field(default_factory=dict)
    split_positives: dict = field(default_factory=dict)
    supervised: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Sample:
    """One emitted sample of a split."""

    task_id: int
    split: str
    index: int
    label: int
    supervised: int
    symbol: Symbol
    prolog: str
    #: index of the unique symbol in generation order (shared by repeats with replacement)
    origin: int


def rng_for(task_seed: int, purpose: str) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(derive_seed(task_seed, purpose)))


def supervision_probability(t: float, gamma: float, beta: float) -> float:
    """f(t) = γ·e^(−σt) with σ = log(γ/β), for t ∈ [0, 1].

    Edge cases: γ = 0 gives 0 everywhere; β = 0 (σ = ∞) gives γ at t = 0 and 0 after; γ = β
    gives the constant γ.
    """
    if gamma == 0.0:
        return 0.0
    if beta == 0.0:
        return gamma if t == 0.0 else 0.0
    sigma = math.log(gamma / beta)
    return gamma * math.exp(-sigma * t)


def draw_symbols(task: TaskSpec, domain: Domain, task_seed: int, rule: TaskRule | None, *,
                 block: int = 256, progress=None) -> tuple[list[tuple[Symbol, int, str]], TaskStats]:
    """Phase 1: rejection sampling. Returns ``[(symbol, label, prolog_text)]`` in generation
    order and the statistics."""
    # numpy's integers/permutation of this stream, bit for bit, at a third of the call cost
    rng = PCG64Draws(rng_for(task_seed, "symbols"))
    sets = (task.negative_set, task.positive_set)
    stats = TaskStats()
    seen: set[str] = set()
    accepted: list[tuple[Symbol, int, str]] = []
    misses = 0
    while len(accepted) < task.samples and misses < task.patience:
        # Draw a block ahead; how many depends only on the state, never on timing.
        size = min(block, max(16, 2 * (task.samples - len(accepted))))
        cands = []
        for _ in range(size):
            label = int(rng.integers(2))
            try:
                sym = sample_symbol(sets[label], rng, domain)
            except NesyError as exc:
                raise exc.where(file=task_source(task), task=task.label) from None
            cands.append((sym, label, sym.to_prolog()))
        verdict: dict[str, bool] = {}
        fresh: dict[str, Symbol] = {}       # new texts in draw order, with their symbols
        for sym, _, text in cands:
            if text not in seen and text not in fresh:
                fresh[text] = sym
        if rule is not None:
            # the symbols go to Prolog as data; their texts are the de-duplication keys
            verdict = dict(zip(fresh, rule.check_symbols(list(fresh.values()))))
            stats.checked += len(fresh)
        for sym, label, text in cands:
            if len(accepted) >= task.samples or misses >= task.patience:
                break
            stats.candidates += 1
            if text in seen:
                misses += 1
                stats.rejected_by_duplicate += 1
                continue
            seen.add(text)
            if rule is None or verdict[text] == bool(label):
                accepted.append((sym, label, text))
                misses = 0
            else:
                misses += 1
                stats.rejected_by_rule += 1
        if progress is not None:
            progress(len(accepted))
    stats.unique_symbols = len(accepted)
    stats.positives = sum(1 for a in accepted if a[1] == 1)
    stats.negatives = len(accepted) - stats.positives
    stats.with_replacement = len(accepted) < task.samples
    for label, name in ((1, "positive"), (0, "negative")):
        if not any(a[1] == label for a in accepted):
            raise NesyError(
                f"produced no {name} sample within patience {task.patience} "
                f"({stats.rejected_by_rule} rejected by the rule, "
                f"{stats.rejected_by_duplicate} duplicates): check the {name}_set against the rule",
                file=task_source(task), task=task.label, field=f"{name}_set", line=task.line)
    return accepted, stats


def task_source(task: TaskSpec) -> str | None:
    return task.source


def split_samples(task: TaskSpec, accepted: list[tuple[Symbol, int, str]], task_seed: int,
                  stats: TaskStats) -> dict[str, list[Sample]]:
    """Phases 2 and 3: disjoint splits (with replacement inside a split when symbols ran out)
    and supervision flags."""
    requested = dict(zip(SPLITS, task.split_sizes()))
    rng = rng_for(task_seed, "splits")
    n_unique = len(accepted)
    order = rng.permutation(n_unique)
    if not stats.with_replacement:
        bounds = requested
    else:
        if n_unique < 3:
            raise NesyError(f"only {n_unique} unique symbols: too few to fill three disjoint "
                            f"splits", file=task_source(task), task=task.label, field="samples")
        u_train = max(1, int(math.floor(n_unique * task.train_split + 0.5)))
        u_val = max(1, int(math.floor(n_unique * task.val_split + 0.5)))
        u_train = min(u_train, n_unique - 2)
        u_val = min(u_val, n_unique - u_train - 1)
        bounds = {"train": u_train, "val": u_val, "test": n_unique - u_train - u_val}
    pools, start = {}, 0
    for split in SPLITS:
        # generation order inside a split: supervision decays along it
        pools[split] = sorted(int(i) for i in order[start:start + bounds[split]])
        start += bounds[split]
    sup_rng = rng_for(task_seed, "supervision")
    out: dict[str, list[Sample]] = {}
    for split in SPLITS:
        pool = pools[split]
        if stats.with_replacement:
            picks = [pool[int(i)] for i in rng.integers(0, len(pool), size=requested[split])]
        else:
            picks = pool
        n = len(picks)
        samples = []
        for i, origin in enumerate(picks):
            t = i / (n - 1) if n > 1 else 0.0
            p = supervision_probability(t, task.gamma, task.beta)
            supervised = int(sup_rng.random() < p)
            sym, label, text = accepted[origin]
            samples.append(Sample(task.index, split, i, label, supervised, sym, text, origin))
        out[split] = samples
        stats.split_sizes[split] = n
        stats.split_positives[split] = sum(s.label for s in samples)
        stats.supervised[split] = sum(s.supervised for s in samples)
    return out
