"""The driving knowledge against rsbench's rule functions (rssgen's ``boia_rules``: ``sddoiaK``
in distribution, ``oodSDDoiaK`` for the ambulance), transcribed below as Python Booleans and
compared on every consistent world: one traffic-light state (not red and green at once), a lane
or its absence on each side (``left_lane`` xor ``no_left_lane``, the same on the right) and
``road_clear`` exactly when there is no obstacle ahead. That leaves 2^21 * 3/4 * 1/8 =
196 608 worlds, labelled by the knowledge in clingo calls of 20 000 worlds (the ground-atom
budget of one call)."""
from __future__ import annotations

import itertools

import pytest

from nesybench.shortcuts.task import load_task

NAMES = ("green_light", "follow", "road_clear", "red_light", "traffic_sign", "car", "person",
         "rider", "other_obstacle", "left_lane", "left_green_light", "left_follow",
         "no_left_lane", "left_obstacle", "left_solid_line", "right_lane", "right_green_light",
         "right_follow", "no_right_lane", "right_obstacle", "right_solid_line")

CHUNK = 20_000


def sddoia_k(c: dict) -> dict:
    """rsbench's in-distribution rules (``sddoiaK``); ``c`` uses rsbench's names."""
    red_light = (not c["green_light"] or not c["red_light"]) and c["red_light"]
    obstacle = c["car"] or c["person"] or c["rider"] or c["other_obstacle"]
    road_clear = not obstacle
    move_forward_cond = c["green_light"] or c["follow"] or road_clear
    stop = red_light or c["stop_sign"] or obstacle
    move_forward = (not stop or not move_forward_cond) and move_forward_cond
    can_l = c["left_lane"] or c["left_green_light"] or c["left_follow"]
    cannot_l = c["no_left_lane"] or c["left_obstacle"] or c["left_solid_line"]
    can_r = c["right_lane"] or c["right_green_light"] or c["right_follow"]
    cannot_r = c["no_right_lane"] or c["right_obstacle"] or c["right_solid_line"]
    return {"stop": stop, "forward": move_forward, "left": can_l and not cannot_l,
            "right": can_r and not cannot_r}


def ood_sddoia_k(c: dict) -> dict:
    """rsbench's ambulance rules (``oodSDDoiaK``); ``c`` uses rsbench's names."""
    stop = c["car"] or c["person"] or c["rider"] or c["other_obstacle"]
    move_forward = not stop
    turn_left = c["left_lane"] and not (c["no_left_lane"] or c["left_obstacle"])
    turn_right = c["right_lane"] and not (c["no_right_lane"] or c["right_obstacle"])
    return {"stop": stop, "forward": move_forward, "left": turn_left, "right": turn_right}


def consistent_worlds():
    """Every consistent world as a tuple of 0/1 in :data:`NAMES` order."""
    free = [n for n in NAMES if n not in ("road_clear", "no_left_lane", "no_right_lane")]
    for bits in itertools.product((0, 1), repeat=len(free)):
        w = dict(zip(free, bits))
        if w["red_light"] and w["green_light"]:
            continue
        w["road_clear"] = int(not (w["car"] or w["person"] or w["rider"] or w["other_obstacle"]))
        w["no_left_lane"] = 1 - w["left_lane"]
        w["no_right_lane"] = 1 - w["right_lane"]
        yield tuple(w[n] for n in NAMES)


def rsbench_names(w: tuple) -> dict:
    c = dict(zip(NAMES, map(bool, w)))
    c["stop_sign"] = c.pop("traffic_sign")
    c["clear"] = c.pop("road_clear")
    return c


def test_consistent_worlds():
    worlds = list(consistent_worlds())
    assert len(worlds) == 2 ** 21 * 3 // 32 == 196_608 and len(set(worlds)) == len(worlds)


@pytest.mark.slow
@pytest.mark.parametrize("path, rules", [
    ("curricula/rs/driving_ambulance.yaml", ood_sddoia_k),
    ("curricula/rs/driving.yaml", sddoia_k),
], ids=["ambulance", "in-distribution"])
def test_knowledge_is_rsbench_rules_on_every_consistent_world(path, rules):
    task = load_task(path)
    assert tuple(v.name for v in task.variables) == NAMES
    worlds = list(consistent_worlds())
    got = [y for i in range(0, len(worlds), CHUNK) for y in task.labels_of(worlds[i:i + CHUNK])]
    assert len(got) == len(worlds)
    names = list(task.label_names())
    assert sorted(names) == ["forward", "left", "right", "stop"]
    wrong = []
    for w, y in zip(worlds, got):
        want = rules(rsbench_names(w))
        if any(int(want[n]) != int(v) for n, v in zip(names, y)):
            wrong.append(w)
    assert not wrong, (len(wrong), dict(zip(NAMES, wrong[0])))


def test_ambulance_examples():
    """The cases where rsbench's ambulance differs from the earlier reading: a green left-turn
    light or a car to follow on the left is no reason to turn; a solid line is no bar."""
    task = load_task("curricula/rs/driving_ambulance.yaml")
    base = dict.fromkeys(NAMES, 0)

    def labels(**on):
        w = {**base, "road_clear": 1, "no_left_lane": 1, "no_right_lane": 1, **on}
        return dict(zip(task.label_names(), task.labels_of([tuple(w[n] for n in NAMES)])[0]))

    assert labels(left_green_light=1, no_left_lane=0)["left"] == 0
    assert labels(left_follow=1, no_left_lane=0)["left"] == 0
    assert labels(left_lane=1, no_left_lane=0, left_solid_line=1)["left"] == 1
    assert labels(left_lane=1, no_left_lane=0, left_obstacle=1)["left"] == 0
    assert labels(right_lane=1, no_right_lane=0, right_green_light=0)["right"] == 1
    assert labels(red_light=1, traffic_sign=1) == {"forward": 1, "stop": 0, "left": 0, "right": 0}
    assert labels(person=1, road_clear=0)["stop"] == 1
