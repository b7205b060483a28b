"""miniBOIA's worlds as rsbench's generator draws them (``support: {generator: miniboia}``).

rsbench's SDD-OIA / miniBOIA generator (``rssgen/sddoia``) does not sample the 21 concepts
uniformly. It draws rounds of four scenes, one per intended action, and keeps each scene in the
bucket of its action vector (stop, forward, left, right under the in-distribution rules) while
that bucket holds fewer than ``n_config`` configurations. One scene is drawn in three steps:

1. **coarse concepts** from the intended action's distributions (:data:`LIGHT`, :data:`AHEAD`,
   :data:`SIGN`, :data:`SIDE`): a traffic light (none, green, red, yellow; yellow counts as
   red), a combination of things ahead (a car to follow, a crossing car, a person, a rider,
   another obstacle), a sign (stop or another one), and for a turn its lane, no solid line and
   maybe a car to follow on that side;
2. **fine concepts**: 20 random bits (rsbench's concept order, :data:`BIT_ORDER`), repaired for
   consistency (:func:`_repair`: the three green lights agree, an obstacle or solid line on a
   side means no car to follow there, a car to follow ahead means no other obstacle, a side
   without its lane has none of that side's concepts and ``no_*_lane`` set), then overwritten
   by the coarse concepts (:func:`_impose`);
3. ``road_clear`` derived: no car, person, rider or other obstacle ahead.

Every world has one light state (red and green never both), ``left_lane`` xor
``no_left_lane``, ``right_lane`` xor ``no_right_lane`` and ``road_clear`` = no obstacle. rsbench
overwrites only what the coarse concepts name, so two of its quirks remain and are kept: the
side green lights follow the main light even where that side has no lane, and a turn scene
keeps the other side's obstacle and follow bits from step 2 after it removes that side's lane.
Its solid-line bits do not survive: a turn scene clears both solid lines (rsbench's
``deal_with_lines``, ``rssgen/rssgen/sddoia/sddoia.py``), so no world of a turn has one.

The loop stops when every bucket is full, or after the round in which rsbench's budget of
2,000 draws is passed (``idx > budget``, checked after each round of four: 501 rounds, 2,004
draws). The actions need different luck: a scene with both turns
open comes only from the stop and forward generators (1/64 each), so with rsbench's default
``n_config`` of 100 its two buckets hold about 8 configurations. The random stream is Python's
``random.Random(seed)`` consumed in rsbench's order, so the configurations of a seed are those
rsbench's generator draws with ``--seed`` of the same value. The support is the set of kept
configurations (a configuration drawn twice is one world); the draws that found their bucket
full are the OOD pool of ``rs generate`` (consistent worlds from the same distributions, not
in the support).

Labels for the buckets come from the in-distribution knowledge ``kb/shortcuts/driving.lp``
(rsbench's ``sddoiaK``) whatever the task's knowledge, so a task under the ambulance knowledge
with the same seed and ``n_config`` has the same worlds: rsbench's OOD split is these
configurations relabelled. (``driving.lp`` reads ``road_clear`` as a concept where ``sddoiaK``
derives it from the obstacles; on the generator's worlds, where ``road_clear`` is derived, the
two agree.)

**Images per configuration** (:func:`rsbench_images`, ``balance: rsbench`` of ``rs
generate``): rsbench's ``configurations_split`` then shuffles each bucket and the order of the
buckets with the same random stream, splits each split's images evenly over the 8 action
vectors (in that shuffled order; the OOD split in the reverse order) and each vector's share
evenly over ``n_config`` configurations, larger shares first; a bucket with fewer
configurations than ``n_config`` leaves the rest of its share undrawn.
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass

from ...errors import NesyError

#: the generator names ``support: {generator: NAME}`` accepts
GENERATORS = ("miniboia",)
#: rsbench's draw budget: the loop ends after the round in which more draws than this were made
BUDGET = 2000
#: rsbench's split ratios of ``--n_samples`` (``--train_ratio`` etc.; each at least 1 image)
RSBENCH_RATIOS = {"train": 0.7, "val": 0.15, "test": 0.15, "ood": 0.1}
#: the ways ``rs generate`` spreads a split's images over a generated support: ``equal``
#: (nesybench's: even over the action vectors, every kept configuration equally likely within
#: one) and ``rsbench`` (rsbench's ``configurations_split``, :func:`rsbench_images`)
BALANCES = ("equal", "rsbench")
#: the 21 concepts a miniBOIA task has (any order in the task file)
CONCEPTS = ("green_light", "follow", "road_clear", "red_light", "traffic_sign", "car", "person",
            "rider", "other_obstacle", "left_lane", "left_green_light", "left_follow",
            "no_left_lane", "left_obstacle", "left_solid_line", "right_lane", "right_green_light",
            "right_follow", "no_right_lane", "right_obstacle", "right_solid_line")
#: the order in which rsbench draws one random bit per fine concept (its ``stop_sign`` is
#: ``traffic_sign`` here; ``road_clear`` is derived, not drawn)
BIT_ORDER = ("red_light", "green_light", "car", "person", "rider", "other_obstacle", "follow",
             "traffic_sign", "left_lane", "left_green_light", "left_follow", "no_left_lane",
             "left_obstacle", "left_solid_line", "right_lane", "right_green_light", "right_follow",
             "no_right_lane", "right_obstacle", "right_solid_line")
AHEAD_CONCEPTS = ("follow", "car", "person", "rider", "other_obstacle")
OBSTACLES = ("car", "person", "rider", "other_obstacle")

# Coarse distributions, (value, weight) in rsbench's order (the order and the float weights fix
# which value a random number picks; random.choices normalises the weights).
#: traffic light per intended action: '' none, G green, R red, Y yellow (drawn as red)
LIGHT = {
    "stop": (("", 0.3), ("G", 0.4), ("R", 0.2), ("Y", 0.1)),
    "forward": (("", 0.6), ("G", 0.4)),
    "turn": (("", 0.3), ("G", 0.4)),
}
#: what is ahead in the own lane: a set of concepts (``follow`` is a car driving the same way,
#: ``car`` one crossing or coming the other way); forward scenes have no obstacle
AHEAD = {
    "any": ((("follow",), 0.05), (("car",), 0.05), (("person",), 0.05), (("rider",), 0.05),
            (("other_obstacle",), 0.05), ((), 0.1), (("person", "rider"), 0.05),
            (("person", "rider", "follow"), 0.05), (("person", "rider", "car"), 0.05),
            (("person", "rider", "other_obstacle"), 0.05), (("person", "other_obstacle"), 0.05),
            (("person", "follow"), 0.05), (("person", "car"), 0.05),
            (("rider", "other_obstacle"), 0.05), (("rider", "follow"), 0.05),
            (("rider", "car"), 0.05)),
    "forward": ((("follow",), 0.5), ((), 0.5)),
}
#: the sign beside the road: 'stop', another sign ('other', no concept) or none ('')
SIGN = {
    "stop": (("", 0.7), ("other", 0.2), ("stop", 0.1)),
    "forward": (("", 0.7), ("other", 0.3)),
}
#: a car to follow in the lane of the turn, or nothing there
SIDE = ((True, 0.5), (False, 0.5))
#: the action vectors (stop, forward, left, right) in rsbench's bucket order
BUCKETS = tuple((s, 1 - s, left, right) for s in (0, 1) for left in (0, 1) for right in (0, 1))


@dataclass(frozen=True)
class Scene:
    """The coarse concepts of one draw: ``action`` the generator (stop, forward, left,
    right), ``light`` ('', G, R, Y), ``ahead`` (concepts ahead in the own lane), ``sign``
    ('', other, stop), ``side_follow`` (a car to follow in the turn's lane; turns only)."""

    action: str
    light: str
    ahead: tuple
    sign: str
    side_follow: bool = False


@dataclass(frozen=True)
class Draws:
    """The generator's output for one ``(n_config, seed)``, worlds as dicts over
    :data:`CONCEPTS`: ``buckets`` (action vector (stop, forward, left, right) -> kept
    configurations, in draw order), ``left_out`` (draws whose bucket was full, in draw order),
    ``rounds`` and ``draws`` made."""

    buckets: dict
    left_out: tuple
    rounds: int
    draws: int


def _pick(rng: random.Random, table):
    values, weights = zip(*table)
    return rng.choices(values, weights=list(weights))[0]


def _scene(rng: random.Random, action: str) -> Scene:
    """Draw the coarse concepts of one scene for ``action`` (rsbench's per-action generators,
    random numbers consumed in its order)."""
    if action == "forward":
        light = _pick(rng, LIGHT["forward"])
        ahead = _pick(rng, AHEAD["forward"])
        sign = _pick(rng, SIGN["forward"]) if light == "" else ""
        return Scene(action, light, ahead, sign)
    if action == "stop":
        light = _pick(rng, LIGHT["stop"])
        ahead = _pick(rng, AHEAD["any"])
        sign = ""
        if light not in ("R", "Y"):
            if any(c in OBSTACLES for c in ahead):
                if light != "G":
                    sign = _pick(rng, SIGN["stop"])
            else:       # nothing stops the car yet: a stop sign and no light
                sign = _pick(rng, (("stop", 1.0),))
                light = _pick(rng, (("", 1.0),))
        return Scene(action, light, ahead, sign)
    light = _pick(rng, LIGHT["turn"])
    ahead = _pick(rng, AHEAD["any"])
    side_follow = _pick(rng, SIDE)
    return Scene(action, light, ahead, "", side_follow)


def _repair(w: dict) -> None:
    """rsbench's consistency repair of the random fine concepts, in place."""
    w["left_green_light"] = w["right_green_light"] = w["green_light"]
    for side in ("left", "right"):
        if w[f"{side}_obstacle"] or w[f"{side}_solid_line"]:
            w[f"{side}_follow"] = 0
    if w["follow"]:
        w["other_obstacle"] = 0
    for side in ("left", "right"):
        if w[f"{side}_lane"]:
            w[f"no_{side}_lane"] = 0
        else:
            for c in ("obstacle", "solid_line", "green_light", "follow"):
                w[f"{side}_{c}"] = 0
            w[f"no_{side}_lane"] = 1


def _impose(w: dict, s: Scene) -> None:
    """Overwrite the fine concepts that the coarse ones of ``s`` fix, in place."""
    w["green_light"] = int(s.light == "G")
    w["red_light"] = int(s.light in ("R", "Y"))
    for c in AHEAD_CONCEPTS:
        w[c] = int(c in s.ahead)
    w["traffic_sign"] = int(s.sign == "stop")
    w["left_green_light"] = w["right_green_light"] = int(s.light == "G")
    if s.action in ("left", "right"):
        other = "right" if s.action == "left" else "left"
        w[f"{s.action}_lane"], w[f"no_{s.action}_lane"] = 1, 0
        w[f"{other}_lane"], w[f"no_{other}_lane"] = 0, 1
        w[f"{s.action}_follow"] = int(s.side_follow)
        w[f"{s.action}_obstacle"] = 0
        w["left_solid_line"] = w["right_solid_line"] = 0     # the turn's line is dashed


def draw_world(rng: random.Random, action: str) -> dict:
    """One world for the intended ``action``: coarse concepts, random fine concepts repaired,
    the coarse ones imposed, ``road_clear`` derived (see the module docstring)."""
    scene = _scene(rng, action)
    w = {c: rng.getrandbits(1) for c in BIT_ORDER}
    _repair(w)
    _impose(w, scene)
    w["road_clear"] = int(not any(w[c] for c in OBSTACLES))
    return w


@functools.lru_cache(maxsize=8)
def draws(n_config: int, seed: int, labels_of) -> Draws:
    """Run the generator: rounds of (forward, stop, left, right) draws from
    ``random.Random(seed)`` until every action vector holds ``n_config`` configurations or the
    budget is spent (see the module docstring). ``labels_of`` sorts draws into action vectors:
    the in-distribution knowledge's labels of worlds over :data:`CONCEPTS` in that order
    (:func:`nesybench.shortcuts.task.miniboia_labels`)."""
    if isinstance(n_config, bool) or not isinstance(n_config, int) or n_config < 1:
        raise NesyError(f"n_config must be a positive integer, not {n_config!r}",
                        field="support.n_config")
    rng = random.Random(seed)
    rounds = []
    while True:                         # the rounds, before knowing where the loop stops
        rounds.append([draw_world(rng, a) for a in ("forward", "stop", "left", "right")])
        if 4 * len(rounds) > BUDGET:
            break
    flat = [w for r in rounds for w in r]
    labels = labels_of([tuple(w[c] for c in CONCEPTS) for w in flat])
    buckets: dict = {b: [] for b in BUCKETS}
    left_out = []
    made = 0
    for k, (w, y) in enumerate(zip(flat, labels)):
        y = tuple(int(v) for v in y)
        if y not in buckets:
            raise NesyError(f"the miniBOIA generator drew {w} with action vector {y}: the "
                            "in-distribution knowledge must stop xor go forward")
        (buckets[y] if len(buckets[y]) < n_config else left_out).append(w)
        made = k + 1
        if made % 4 == 0 and all(len(v) == n_config for v in buckets.values()):
            break
    return Draws({b: tuple(v) for b, v in buckets.items()}, tuple(left_out), made // 4, made)


def even_shares(n: int, m: int) -> list[int]:
    """``n`` items over ``m`` parts as evenly as possible, the larger parts first (rsbench's
    ``distribute_samples``)."""
    base, extra = divmod(n, m)
    return [base + (i < extra) for i in range(m)]


def rsbench_sizes(n_samples: int) -> dict:
    """rsbench's split sizes of ``--n_samples`` images: ``max(int(n·ratio), 1)`` per split."""
    return {k: max(int(n_samples * r), 1) for k, r in RSBENCH_RATIOS.items()}


def rsbench_images(n_config: int, seed: int, labels_of, sizes: dict) -> dict:
    """The images of each split as rsbench's ``configurations_split`` assigns them:
    ``{split: [(world, count), ...]}`` in its order (worlds as dicts over :data:`CONCEPTS`).

    After the generator's draws (:func:`draws`) the same random stream shuffles every bucket
    (in :data:`BUCKETS` order), then the order of the buckets. A split of ``n`` images gives
    the k-th bucket in that order ``even_shares(n, 8)[k]`` images (the OOD split walks the
    buckets in reverse), and the bucket's i-th configuration ``even_shares(share,
    n_config)[i]`` of them, for as many configurations as the bucket holds and as have a
    share above 0. Images of configurations a bucket lacks are not drawn, so a split holds
    fewer than ``n`` images when a bucket is short."""
    d = draws(n_config, seed, labels_of)
    rng = random.Random(seed)
    for _ in range(d.rounds):               # the generator's draws, replayed
        for a in ("forward", "stop", "left", "right"):
            draw_world(rng, a)
    buckets = {b: list(ws) for b, ws in d.buckets.items()}
    for b in BUCKETS:
        rng.shuffle(buckets[b])
    order = list(BUCKETS)
    rng.shuffle(order)
    out = {}
    for split, n in sizes.items():
        walk = order[::-1] if split == "ood" else order
        got = []
        if n > 0:
            for share, b in zip(even_shares(int(n), len(walk)), walk):
                per = [k for k in even_shares(share, n_config) if k]
                got += list(zip(buckets[b], per))
        out[split] = got
    return out


def check_task(task) -> list[int]:
    """The position in ``task``'s variables of each of :data:`CONCEPTS`; refuses a task whose
    concepts are not miniBOIA's 21 Boolean ones."""
    names = [v.name for v in task.variables]
    if sorted(names) != sorted(CONCEPTS) or any(tuple(v.domain) != (0, 1)
                                                for v in task.variables):
        raise NesyError("support {generator: miniboia} needs miniBOIA's 21 concepts, each "
                        f"with domain [0, 1] ({', '.join(CONCEPTS)})", file=task.source,
                        task=task.name, field="support.generator")
    return [names.index(c) for c in CONCEPTS]


def _in_task_order(task, worlds) -> list[tuple]:
    pos = check_task(task)
    order = sorted(range(len(CONCEPTS)), key=lambda i: pos[i])
    return [tuple(w[CONCEPTS[i]] for i in order) for w in worlds]


def support(task, n_config: int, seed: int, labels_of) -> list[tuple]:
    """The distinct kept configurations of ``draws(n_config, seed, labels_of)`` as worlds of
    ``task``."""
    d = draws(n_config, seed, labels_of)
    return _in_task_order(task, [w for ws in d.buckets.values() for w in ws])


def split_worlds(task, n_config: int, seed: int, labels_of, sizes: dict) -> dict:
    """:func:`rsbench_images` as worlds of ``task``, one entry per image: ``{split:
    [world, ...]}``."""
    imgs = rsbench_images(n_config, seed, labels_of, sizes)
    return {split: [w for w, k in zip(_in_task_order(task, [w for w, _ in pairs]),
                                      [k for _, k in pairs]) for _ in range(k)]
            for split, pairs in imgs.items()}


def left_out(task, n_config: int, seed: int, labels_of) -> list[tuple]:
    """The distinct draws that found their bucket full, as worlds of ``task``, less the
    support's worlds."""
    d = draws(n_config, seed, labels_of)
    sup = set(support(task, n_config, seed, labels_of))
    return list(dict.fromkeys(w for w in _in_task_order(task, d.left_out) if w not in sup))
