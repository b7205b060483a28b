"""``render: blender`` for miniBOIA-like driving tasks: road scenes seen from the car's camera.

The scene is built from the sampled concepts (rsbench's order: concepts first, then a scene
in which each true concept is visible and each false one is absent):

==========================  ======================================================================
concept                     element (Blender primitives, no downloaded assets)
==========================  ======================================================================
``red_light``               the red lamp lit on the signal head over the own lane (far gantry)
``green_light``             the green lamp lit on the signal head over the own lane
``left_green_light``        the green lamp lit on a signal head over the left lane
``right_green_light``       the green lamp lit on a signal head over the right lane
``traffic_sign``            a stop sign (red octagon on a pole) on the right pavement
``car``                     a car crossing the own lane (side on)
``follow``                  a car ahead in the own lane driving away (red tail lights)
``person``                  a pedestrian crossing the own lane
``rider``                   a cyclist crossing the own lane
``other_obstacle``          a traffic cone or a road barrier in the own lane
``left_follow``             a car driving away in the left lane
``left_obstacle``           a traffic cone or a road barrier in the left lane
``no_left_lane``            a concrete wall closing the left lane off from the own lane
``left_lane``               a dashed lane line between the own and the left lane
``left_solid_line``         a solid line between the own and the left lane (beside the dashed one)
``right_*``                 the same on the right
``road_clear``              a white straight-ahead arrow painted on the own lane
==========================  ======================================================================

Objects stand on a grid: lanes (left, own, right; the pavements for signs) times ``rows``
cells of ``cell_length`` metres ahead of the car, two slots per cell (a car takes both). A
layout is drawn again when an element leaves the picture or shows less than ``min_visible`` of
its projected box behind nearer ones (at most ``retries`` layouts). Nuisances (colours,
crossing direction, cone or barrier, jitter inside a cell) come from the sample's generator,
so a scene description is a pure function of the task, seed, split and index. rsbench's own
nuisances come from a second generator of the sample (:func:`nuisances`): grass, road and sky
colours, an amber lamp for some red lights, a speed-limit sign, trees, and the camera's
jitter.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import NesyError
from ...io import derive_seed

#: the miniBOIA concepts this scene can show (a task may use any subset; absent ones are 0)
CONCEPTS = ("green_light", "follow", "road_clear", "red_light", "traffic_sign", "car", "person",
            "rider", "other_obstacle", "left_lane", "left_green_light", "left_follow",
            "no_left_lane", "left_obstacle", "left_solid_line", "right_lane",
            "right_green_light", "right_follow", "no_right_lane", "right_obstacle",
            "right_solid_line")
GRID_DEFAULTS = {"rows": 5, "lane_width": 3.5, "cell_length": 5.0}
GRID_LIMITS = {"rows": (2, 12), "lane_width": (2.5, 6.0), "cell_length": (3.0, 12.0)}
Y0 = 7.0             # centre of the first grid row, metres ahead of the camera
CAR_COLOURS = {"blue": (42, 75, 215), "white": (230, 230, 230), "gray": (120, 120, 120),
               "black": (25, 25, 25), "yellow": (235, 200, 30), "cyan": (41, 190, 200),
               "purple": (129, 38, 192), "brown": (129, 74, 25)}
CLOTHES = {"blue": (40, 60, 160), "red": (170, 40, 40), "yellow": (220, 190, 40),
           "white": (220, 220, 220), "black": (30, 30, 30), "purple": (120, 50, 160)}

#: (kind, lane, first row, last row counted from the far end (0: last row), slots)
PLACEMENT = {
    "car": ("car", 0, 0, 1, 2), "follow": ("car", 0, 1, 0, 2),
    "person": ("pedestrian", 0, 0, 1, 1), "rider": ("rider", 0, 0, 1, 1),
    "other_obstacle": ("obstacle", 0, 0, 1, 1),
    "left_follow": ("car", -1, 1, 0, 2), "left_obstacle": ("obstacle", -1, 0, 1, 1),
    "right_follow": ("car", 1, 1, 0, 2), "right_obstacle": ("obstacle", 1, 0, 1, 1),
    "traffic_sign": ("stop_sign", 2, 1, 0, 1),
}
LAMPS = {"red_light": (0, "red"), "green_light": (0, "green"),
         "left_green_light": (-1, "green"), "right_green_light": (1, "green")}
MARKINGS = {"left_lane": ("dashed_line", -1), "left_solid_line": ("solid_line", -1),
            "no_left_lane": ("wall", -1), "right_lane": ("dashed_line", 1),
            "right_solid_line": ("solid_line", 1), "no_right_lane": ("wall", 1),
            "road_clear": ("arrow", 0)}
#: rsbench's miniBOIA nuisances, as colours in Blender's linear RGB: grass, road and sky each
#: one of these per scene, every channel then moved by up to +-0.1 (clamped to [0, 1])
GROUND_COLOURS = {"grey": (0.5, 0.5, 0.5), "green": (0.2, 0.7, 0.3), "brown": (0.6, 0.4, 0.2),
                  "darkyellow": (0.8, 0.6, 0.1)}
ROAD_COLOURS = {"black": (0.0, 0.0, 0.0), "darkgrey": (0.2, 0.2, 0.2)}
SKY_COLOURS = {"light_blue": (0.6, 0.8, 1.0), "blue": (0.0, 0.0, 1.0), "dark_blue": (0.0, 0.0, 0.5),
               "cyan": (0.0, 1.0, 1.0), "white": (1.0, 1.0, 1.0)}
COLOUR_JITTER = 0.1
#: a lit red_light shows the amber lamp instead with this probability: rsbench's stop scenes
#: draw a red light with weight 0.2 and a yellow one (also red_light) with 0.1
AMBER = 1 / 3
#: a scene without traffic_sign shows a speed-limit sign (30) with this probability: rsbench's
#: weight of "another sign" where its stop scenes draw a sign
SPEED_SIGN = 0.2
#: trees stand beside the road in a scene with this probability (rsbench: its tree model is
#: used or not, 0.5 each), 1 to MAX_TREES of them
TREES = 0.5
MAX_TREES = 6
GANTRY_Z = 6.3
LAMP_Z = {"red": 5.6, "amber": 4.85, "green": 4.1}
LAMP_R = 0.35


def is_driving(task) -> bool:
    """Whether every concept of the task is a plain miniBOIA concept name."""
    return bool(task.variables) and all(
        isinstance(v.term, str) and v.term in CONCEPTS for v in task.variables)


def check(task) -> None:
    for v in task.variables:
        if not (isinstance(v.term, str) and v.term in CONCEPTS):
            raise NesyError(f"render: blender draws driving scenes from the miniBOIA concepts "
                            f"({', '.join(CONCEPTS)}), not {v.name}", file=task.source)
        if sorted(str(x) for x in v.domain) != ["0", "1"]:
            raise NesyError(f"driving concept {v.name} must be Boolean (domain [0, 1])",
                            file=task.source)


def grid_options(raw, source=None) -> dict:
    """``generate.blender.grid`` checked: ``{rows, lane_width, cell_length}``."""
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise NesyError("grid must be a mapping {rows, lane_width, cell_length}", file=source,
                        field="generate.blender.grid")
    extra = sorted(str(k) for k in raw if k not in GRID_DEFAULTS)
    if extra:
        raise NesyError(f"unknown key {extra[0]!r} (allowed: {', '.join(GRID_DEFAULTS)})",
                        file=source, field=f"generate.blender.grid.{extra[0]}")
    g = {**GRID_DEFAULTS, **raw}
    for k, (lo, hi) in GRID_LIMITS.items():
        v = g[k]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and lo <= v <= hi
        if k == "rows":
            ok = ok and isinstance(v, int)
        if not ok:
            raise NesyError(f"grid {k} must be {'an integer' if k == 'rows' else 'a number'} "
                            f"in {lo}..{hi}, not {v!r}", file=source,
                            field=f"generate.blender.grid.{k}")
        g[k] = int(v) if k == "rows" else float(v)
    return g


def camera(grid: dict) -> dict:
    """The car's camera: 3.2 m above the road behind the first row, looking down the own lane."""
    far = Y0 + grid["cell_length"] * (grid["rows"] - 1)
    return {"location": [0.0, -1.0, 3.2], "target": [0.0, round((Y0 + far) / 2, 6), -0.5],
            "lens": 28.0, "sensor_width": 36.0}


def _lane_x(lane: int, grid: dict) -> float:
    lw = grid["lane_width"]
    return lane * lw if abs(lane) <= 1 else math.copysign(1.5 * lw + 1.4, lane)


def half_extents(o: dict) -> tuple:
    """``(hx, hy, z0, z1)`` of an element's box before its rotation (metres)."""
    k = o["kind"]
    if k == "car":
        return 0.9, 2.1, 0.0, 1.6
    if k == "pedestrian":
        return 0.25, 0.25, 0.0, 1.82
    if k == "rider":
        return 0.2, 0.85, 0.0, 1.75
    if k == "obstacle":
        return (0.3, 0.3, 0.0, 0.75) if o["variant"] == "cone" else (0.7, 0.15, 0.0, 0.85)
    if k == "stop_sign":
        return 0.45, 0.06, 0.0, 2.65
    if k == "lamp":
        return LAMP_R, LAMP_R, o["z"] - LAMP_R, o["z"] + LAMP_R
    raise ValueError(k)


def box_corners(o: dict) -> np.ndarray:
    hx, hy, z0, z1 = half_extents(o)
    t = math.radians(o.get("rotation", 0.0))
    c, s = math.cos(t), math.sin(t)
    return np.array([[o["x"] + sx * hx * c - sy * hy * s, o["y"] + sx * hx * s + sy * hy * c, z]
                     for sx in (-1, 1) for sy in (-1, 1) for z in (z0, z1)])


def visible_fractions(objs, resolution, cam) -> list[float] | None:
    from .camera import project  # noqa: PLC0415
    w, h = resolution
    boxes, depth = [], []
    for o in objs:
        p = project(box_corners(o), resolution, cam)
        x0, y0, x1, y1 = p[:, 0].min(), p[:, 1].min(), p[:, 0].max(), p[:, 1].max()
        if x0 < 0 or y0 < 0 or x1 > w or y1 > h or p[:, 2].min() <= 0:
            return None
        boxes.append((int(x0), int(y0), int(math.ceil(x1)), int(math.ceil(y1))))
        depth.append(float(p[:, 2].min()))
    ids = np.full((h, w), -1, dtype=int)
    for i in sorted(range(len(objs)), key=lambda k: -depth[k]):
        x0, y0, x1, y1 = boxes[i]
        ids[y0:y1, x0:x1] = i
    return [float((ids == i).sum()) / max(1, (b[2] - b[0]) * (b[3] - b[1]))
            for i, b in enumerate(boxes)]


def describe(task, world, opts: dict, *, seed: int, split: str, index: int) -> dict:
    """The scene description of one driving sample: a pure function of its arguments."""
    rng = np.random.default_rng(derive_seed("rs-blender-driving", task.name, seed, split, index))
    grid = opts["grid"]
    on = {c: 0 for c in CONCEPTS}
    for v, x in zip(task.variables, world):
        on[v.term] = int(x)
    # camera jitter and the other nuisances of rsbench's generator from a generator of their
    # own, so that the layout's draws (and the options that turn them off) stay apart
    extra = np.random.default_rng(derive_seed("rs-blender-driving-nuisance", task.name, seed,
                                              split, index))
    cam = jittered_camera(camera(grid), extra, opts["camera_jitter"])
    scenery = nuisances(on, grid, extra)
    rows = grid["rows"]
    # nuisances first, one draw per concept in a fixed order (the layout retries reuse them)
    nuis = {}
    for c in CONCEPTS:
        nuis[c] = {"car_colour": sorted(CAR_COLOURS)[int(rng.integers(len(CAR_COLOURS)))],
                   "clothes": sorted(CLOTHES)[int(rng.integers(len(CLOTHES)))],
                   "variant": ("cone", "barrier")[int(rng.integers(2))],
                   "side": (90.0, 270.0)[int(rng.integers(2))]}
    for attempt in range(opts["retries"]):
        taken: set = set()
        placed = []
        for c in CONCEPTS:
            if not on[c] or c not in PLACEMENT:
                continue
            kind, lane, first, back, slots = PLACEMENT[c]
            cands = [(r, s) for r in range(first, rows - back) for s in (0, 1)
                     if slots == 1 or s == 0]
            cands = [(r, s) for r, s in cands
                     if not ({(lane, r, s)} if slots == 1 else {(lane, r, 0), (lane, r, 1)})
                     & taken]
            if not cands:
                break
            r, s = cands[int(rng.integers(len(cands)))]
            taken |= {(lane, r, s)} if slots == 1 else {(lane, r, 0), (lane, r, 1)}
            x = _lane_x(lane, grid)
            if slots == 1 and abs(lane) <= 1:
                x += (-0.22 if s == 0 else 0.22) * grid["lane_width"]
            x += float(rng.uniform(-0.08, 0.08)) * grid["lane_width"]
            y = Y0 + r * grid["cell_length"] + float(rng.uniform(-0.15, 0.15)) * grid["cell_length"]
            n = nuis[c]
            o = {"concept": c, "kind": kind, "lane": lane, "row": r, "x": round(x, 6),
                 "y": round(y, 6)}
            if kind == "car":
                o["color"] = n["car_colour"]
                o["rotation"] = n["side"] if c == "car" else round(float(rng.uniform(-4, 4)), 6)
                o["direction"] = "crossing" if c == "car" else "ahead"
            elif kind in ("pedestrian", "rider"):
                o["color"] = n["clothes"]
                o["rotation"] = n["side"]
            elif kind == "obstacle":
                o["variant"] = n["variant"]
                o["rotation"] = 0.0
            else:
                o["rotation"] = 0.0
            placed.append(o)
        else:
            far = Y0 + grid["cell_length"] * (rows - 0.5)
            lamps = [{"concept": c, "kind": "lamp", "lane": LAMPS[c][0], "row": None,
                      "color": _lamp_colour(c, scenery), "x": round(_lane_x(LAMPS[c][0], grid), 6),
                      "y": round(far - 0.25, 6), "z": LAMP_Z[_lamp_colour(c, scenery)],
                      "rotation": 0.0}
                     for c in CONCEPTS if c in LAMPS and on[c]]
            vis = visible_fractions(placed + lamps, opts["resolution"], cam)
            if vis is not None and (not vis or min(vis) >= opts["min_visible"]):
                break
    else:
        raise NesyError(f"could not lay out a driving scene with every true concept in view "
                        f"(min_visible {opts['min_visible']}) in {opts['retries']} layouts; "
                        f"lower min_visible, raise retries or change the grid", file=task.source)
    marks = [{"concept": c, "kind": MARKINGS[c][0], "lane": MARKINGS[c][1], "row": None}
             for c in CONCEPTS if c in MARKINGS and on[c]]
    objs = placed + lamps + marks
    return {"scene": "driving", "concepts": {c: on[c] for c in CONCEPTS},
            "objects": [{"id": k, **o} for k, o in enumerate(objs)], "grid": grid,
            "far": round(far, 6),
            "scenery": scenery,
            "render": {"resolution": opts["resolution"], "samples": opts["samples"],
                       "bounces": opts["bounces"], "engine": opts["engine"]},
            "camera": cam, "seed": seed, "split": split, "index": index}


def _lamp_colour(concept: str, scenery: dict) -> str:
    return "amber" if concept == "red_light" and scenery["amber"] else LAMPS[concept][1]


def jittered_camera(cam: dict, rng, magnitude: float) -> dict:
    """``cam`` moved by up to ``magnitude`` along each axis (rsbench's camera jitter), looking
    the same way (its target moves with it: the car's camera is not aimed at a point)."""
    d = [magnitude * (2.0 * float(rng.random()) - 1.0) for _ in range(3)]
    return {**cam, "location": [round(a + b, 6) for a, b in zip(cam["location"], d)],
            "target": [round(a + b, 6) for a, b in zip(cam["target"], d)]}


def _colour(palette: dict, rng) -> dict:
    name = sorted(palette)[int(rng.integers(len(palette)))]
    rgb = [round(min(1.0, max(0.0, c + COLOUR_JITTER * (2.0 * float(rng.random()) - 1.0))), 4)
           for c in palette[name]]
    return {"name": name, "linear": rgb}


def nuisances(on: dict, grid: dict, rng) -> dict:
    """What rsbench varies besides the concepts: grass, road and sky colours, an amber lamp for
    a red light, a speed-limit sign where there is no stop sign, trees beside the road. The
    sign stands on the left pavement and the trees on the grass beyond the pavements, where
    they hide no element of a concept from the camera."""
    out = {"ground": _colour(GROUND_COLOURS, rng), "road": _colour(ROAD_COLOURS, rng),
           "sky": _colour(SKY_COLOURS, rng)}
    out["amber"] = bool(rng.random() < AMBER) and bool(on.get("red_light"))
    sign = bool(rng.random() < SPEED_SIGN) and not on.get("traffic_sign")
    rows, lw, cl = grid["rows"], grid["lane_width"], grid["cell_length"]
    row = int(rng.integers(1, rows))
    out["speed_sign"] = ({"x": round(-_lane_x(2, grid), 6),
                          "y": round(Y0 + row * cl + float(rng.uniform(-0.15, 0.15)) * cl, 6),
                          "limit": 30} if sign else None)
    n = int(rng.integers(1, MAX_TREES + 1)) if rng.random() < TREES else 0
    trees = []
    for _ in range(n):
        side = (-1, 1)[int(rng.integers(2))]
        x = side * (1.5 * lw + 3.0 + float(rng.uniform(2.0, 6.0)))
        y = Y0 + float(rng.uniform(0.0, (rows - 0.5) * cl))
        trees.append({"x": round(x, 6), "y": round(y, 6),
                      "height": round(float(rng.uniform(3.0, 5.5)), 6)})
    out["trees"] = trees
    return out


# -- building the scene in Blender (worker processes) -------------------------------------------
class _Kit:
    """Primitive helpers over one bpy scene; every mesh made for element ``owner`` is kept in
    ``parts[owner]`` (for the annotation's bounding boxes)."""

    def __init__(self, bpy):
        self.bpy = bpy
        self.mats: dict = {}
        self.parts: dict = {}

    def mat(self, rgb, *, rough=0.6, metal=0.0, glow=0.0, linear=False):
        """A material of sRGB colour ``rgb`` (0..255), or of linear RGB (0..1) when
        ``linear``."""
        from .camera import _srgb_to_linear  # noqa: PLC0415
        key = (tuple(rgb), rough, metal, glow, linear)
        if key not in self.mats:
            m = self.bpy.data.materials.new(f"m{len(self.mats)}")
            m.use_nodes = True
            b = next(n for n in m.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
            lin = (*(rgb if linear else [_srgb_to_linear(c) for c in rgb]), 1.0)
            b.inputs["Base Color"].default_value = lin
            b.inputs["Metallic"].default_value = metal
            b.inputs["Roughness"].default_value = rough
            if glow:
                b.inputs["Emission Color"].default_value = lin
                b.inputs["Emission Strength"].default_value = glow
                # lamps glow where seen but are not sampled as lights: Cycles weighs emissive
                # meshes in parallel, and that made the same scene's pixels vary between runs
                m.cycles.emission_sampling = "NONE"
            self.mats[key] = m
        return self.mats[key]

    def _finish(self, mat, owner, parent):
        ob = self.bpy.context.object
        ob.data.materials.append(mat)
        if parent is not None:
            ob.parent = parent
        if owner is not None:
            self.parts.setdefault(owner, []).append(ob)
        return ob

    def box(self, loc, size, mat, owner=None, parent=None, rot=(0.0, 0.0, 0.0)):
        self.bpy.ops.mesh.primitive_cube_add(size=1.0, location=loc, rotation=rot)
        self.bpy.context.object.scale = size
        return self._finish(mat, owner, parent)

    def cyl(self, loc, r, depth, mat, owner=None, parent=None, rot=(0.0, 0.0, 0.0), n=16):
        self.bpy.ops.mesh.primitive_cylinder_add(radius=r, depth=depth, vertices=n,
                                                 location=loc, rotation=rot)
        return self._finish(mat, owner, parent)

    def cone(self, loc, r, depth, mat, owner=None, parent=None, rot=(0.0, 0.0, 0.0), n=16):
        self.bpy.ops.mesh.primitive_cone_add(radius1=r, radius2=r * 0.1, depth=depth,
                                             vertices=n, location=loc, rotation=rot)
        return self._finish(mat, owner, parent)

    def ball(self, loc, r, mat, owner=None, parent=None):
        self.bpy.ops.mesh.primitive_uv_sphere_add(radius=r, segments=12, ring_count=6,
                                                  location=loc)
        return self._finish(mat, owner, parent)

    def anchor(self, o):
        self.bpy.ops.object.empty_add(location=(o["x"], o["y"], 0.0),
                                      rotation=(0.0, 0.0, math.radians(o["rotation"])))
        return self.bpy.context.object


WHITE, PAVEMENT = (235, 235, 235), (165, 165, 160)
ORANGE, RED, SKIN, DARK = (240, 110, 20), (200, 20, 20), (225, 180, 145), (20, 20, 22)


def _car(k: _Kit, o):
    p, oid = k.anchor(o), o["id"]
    k.box((0, 0, 0.62), (1.8, 4.2, 0.75), k.mat(CAR_COLOURS[o["color"]], rough=0.3, metal=0.4),
          oid, p)
    k.box((0, -0.25, 1.3), (1.6, 2.2, 0.6), k.mat((40, 50, 60), rough=0.15), oid, p)
    for sx in (-1, 1):
        for sy in (-1, 1):
            k.cyl((sx * 0.85, sy * 1.35, 0.34), 0.34, 0.25, k.mat(DARK, rough=0.9), oid, p,
                  rot=(0.0, math.pi / 2, 0.0))
        k.box((sx * 0.6, -2.11, 0.8), (0.4, 0.04, 0.16), k.mat(RED, glow=4.0), oid, p)


def _pedestrian(k: _Kit, o):
    p, oid = k.anchor(o), o["id"]
    k.cyl((0, 0, 0.45), 0.17, 0.9, k.mat((40, 40, 70), rough=0.9), oid, p)
    k.cyl((0, 0, 1.22), 0.24, 0.65, k.mat(CLOTHES[o["color"]], rough=0.9), oid, p)
    k.ball((0, 0, 1.68), 0.14, k.mat(SKIN, rough=0.8), oid, p)


def _rider(k: _Kit, o):
    p, oid = k.anchor(o), o["id"]
    for sy in (-0.5, 0.5):
        k.cyl((0, sy, 0.33), 0.33, 0.06, k.mat(DARK, rough=0.9), oid, p,
              rot=(0.0, math.pi / 2, 0.0))
    k.box((0, 0, 0.62), (0.06, 1.0, 0.06), k.mat((180, 180, 185), metal=0.8, rough=0.3), oid, p)
    k.cyl((0, 0, 1.15), 0.2, 0.6, k.mat(CLOTHES[o["color"]], rough=0.9), oid, p)
    k.ball((0, 0, 1.58), 0.14, k.mat(SKIN, rough=0.8), oid, p)
    k.ball((0, 0, 1.66), 0.12, k.mat(CLOTHES[o["color"]], rough=0.4), oid, p)   # helmet


def _obstacle(k: _Kit, o):
    p, oid = k.anchor(o), o["id"]
    if o["variant"] == "cone":
        k.cone((0, 0, 0.375), 0.3, 0.75, k.mat(ORANGE, rough=0.7), oid, p)
        k.cyl((0, 0, 0.42), 0.2, 0.1, k.mat(WHITE, rough=0.7), oid, p)
    else:
        k.box((0, 0, 0.55), (1.4, 0.2, 0.5), k.mat(ORANGE, rough=0.7), oid, p)
        for sx in (-0.55, 0.55):
            k.box((sx, 0, 0.15), (0.12, 0.3, 0.3), k.mat(WHITE, rough=0.7), oid, p)


def _stop_sign(k: _Kit, o):
    p, oid = k.anchor(o), o["id"]
    k.cyl((0, 0, 1.1), 0.05, 2.2, k.mat((150, 150, 150), metal=0.8, rough=0.4), oid, p)
    k.cyl((0, -0.06, 2.2), 0.45, 0.05, k.mat(RED, rough=0.5), oid, p, n=8,
          rot=(math.pi / 2, math.pi / 8, 0.0))


def _signals(k: _Kit, desc):
    lamps = [o for o in desc["objects"] if o["kind"] == "lamp"]
    if not lamps:
        return
    grid, far = desc["grid"], desc["far"]
    lw = grid["lane_width"]
    grey = k.mat((70, 70, 70), metal=0.6, rough=0.4)
    x_pole = 1.5 * lw + 0.6
    k.cyl((x_pole, far, GANTRY_Z / 2), 0.12, GANTRY_Z, grey)
    lanes = sorted({o["lane"] for o in lamps})
    x_min = min(_lane_x(ln, grid) for ln in lanes) - 0.4
    k.box(((x_min + x_pole) / 2, far, GANTRY_Z), (x_pole - x_min, 0.15, 0.15), grey)
    for ln in lanes:
        x = _lane_x(ln, grid)
        k.box((x, far + 0.1, LAMP_Z["amber"]), (1.0, 0.5, 2.4), k.mat(DARK, rough=0.6))
        lit = {o["color"]: o["id"] for o in lamps if o["lane"] == ln}
        for colour, rgb in (("red", RED), ("amber", (230, 150, 20)), ("green", (30, 210, 60))):
            if colour in lit:
                k.ball((x, far - 0.25, LAMP_Z[colour]), LAMP_R, k.mat(rgb, glow=12.0),
                       lit[colour])
            else:
                k.ball((x, far - 0.25, LAMP_Z[colour]), LAMP_R,
                       k.mat(tuple(c // 6 for c in rgb), rough=0.3))


def _markings(k: _Kit, desc):
    grid, far = desc["grid"], desc["far"]
    lw = grid["lane_width"]
    end = far + 2 * grid["cell_length"]
    for o in desc["objects"]:
        kind, oid = o["kind"], o["id"]
        xb = o["lane"] * lw / 2          # the own lane's edge on that side
        if kind == "dashed_line":
            y = 1.0
            while y < end:
                k.box((xb + o["lane"] * 0.2, y + 1.0, 0.01), (0.15, 2.0, 0.02),
                      k.mat(WHITE, rough=0.5), oid)
                y += 4.0
        elif kind == "solid_line":
            k.box((xb - o["lane"] * 0.2, (1.0 + end) / 2, 0.01), (0.15, end - 1.0, 0.02),
                  k.mat(WHITE, rough=0.5), oid)
        elif kind == "wall":
            k.box((xb + o["lane"] * 0.65, (2.0 + end) / 2, 0.35), (0.4, end - 2.0, 0.7),
                  k.mat((200, 200, 195), rough=0.8), oid)
        elif kind == "arrow":
            m = k.mat(WHITE, rough=0.5)
            k.box((0, 3.6, 0.01), (0.3, 1.8, 0.02), m, oid)
            k.cyl((0, 4.8, 0.01), 0.55, 0.02, m, oid, n=3, rot=(0.0, 0.0, math.pi / 2))


def _speed_sign(k: _Kit, sign: dict):
    """A round speed-limit sign on a pole, facing the camera: a white disc with a red ring and
    the limit in black (Blender's built-in font, made a mesh)."""
    bpy = k.bpy
    x, y = sign["x"], sign["y"]
    k.cyl((x, y, 1.1), 0.05, 2.2, k.mat((150, 150, 150), metal=0.8, rough=0.4))
    k.cyl((x, y - 0.06, 2.2), 0.45, 0.04, k.mat(RED, rough=0.5), n=32,
          rot=(math.pi / 2, 0.0, 0.0))
    k.cyl((x, y - 0.085, 2.2), 0.36, 0.02, k.mat(WHITE, rough=0.5), n=32,
          rot=(math.pi / 2, 0.0, 0.0))
    bpy.ops.object.text_add(location=(x, y - 0.1, 2.2), rotation=(math.pi / 2, 0.0, 0.0))
    txt = bpy.context.object
    txt.data.body = str(sign["limit"])
    txt.data.align_x, txt.data.align_y = "CENTER", "CENTER"
    txt.data.size = 0.42
    txt.data.extrude = 0.005
    bpy.ops.object.convert(target="MESH")
    k._finish(k.mat(DARK, rough=0.6), None, None)


def _tree(k: _Kit, tree: dict):
    """A tree: a brown trunk and a green cone crown."""
    x, y, h = tree["x"], tree["y"], tree["height"]
    k.cyl((x, y, 0.3 * h / 2), 0.18, 0.3 * h, k.mat((90, 60, 35), rough=0.9))
    k.cone((x, y, 0.3 * h + 0.35 * h), 0.28 * h, 0.7 * h, k.mat((35, 100, 40), rough=0.9), n=12)


BUILDERS = {"car": _car, "pedestrian": _pedestrian, "rider": _rider, "obstacle": _obstacle,
            "stop_sign": _stop_sign}


def build(bpy, desc: dict):
    """Build the driving scene of ``desc`` (after the render settings are set). Returns
    ``(camera object, {element id: [mesh objects]})``."""
    from mathutils import Vector  # noqa: PLC0415
    scene = bpy.context.scene
    scenery = desc["scenery"]
    world = bpy.data.worlds.new("world")
    world.use_nodes = True
    nodes, links = world.node_tree.nodes, world.node_tree.links
    bg = nodes.get("Background")
    if bg is not None:
        # the sky's colour is what the camera sees behind the scene; the scene is lit by a
        # fixed pale blue sky, as rsbench's sky is a coloured backdrop, not a light source
        bg.inputs["Color"].default_value = (0.45, 0.6, 0.85, 1.0)
        bg.inputs["Strength"].default_value = 0.8
        seen = nodes.new("ShaderNodeBackground")
        seen.inputs["Color"].default_value = (*scenery["sky"]["linear"], 1.0)
        seen.inputs["Strength"].default_value = 0.8
        path = nodes.new("ShaderNodeLightPath")
        mix = nodes.new("ShaderNodeMixShader")
        links.new(path.outputs["Is Camera Ray"], mix.inputs[0])
        links.new(bg.outputs["Background"], mix.inputs[1])
        links.new(seen.outputs["Background"], mix.inputs[2])
        out = next(n for n in nodes if n.type == "OUTPUT_WORLD")
        links.new(mix.outputs["Shader"], out.inputs["Surface"])
    scene.world = world
    k = _Kit(bpy)
    grid = desc["grid"]
    lw = grid["lane_width"]
    length = desc["far"] + 60.0
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0, length / 2 - 10, -0.01))
    bpy.context.object.scale = (200.0, length + 20, 1.0)
    bpy.context.object.data.materials.append(k.mat(scenery["ground"]["linear"], rough=0.95,
                                                   linear=True))
    k.box((0, length / 2 - 5, 0.0), (3 * lw, length + 10, 0.01),
          k.mat(scenery["road"]["linear"], rough=0.9, linear=True))
    for side in (-1, 1):
        k.box((side * (1.5 * lw + 1.5), length / 2 - 5, 0.08), (3.0, length + 10, 0.16),
              k.mat(PAVEMENT, rough=0.9))
    bpy.ops.object.light_add(type="SUN", location=(0, 0, 20))
    sun = bpy.context.object
    sun.data.energy = 3.5
    sun.rotation_euler = (math.radians(35), math.radians(15), math.radians(-30))
    for o in desc["objects"]:
        if o["kind"] in BUILDERS:
            BUILDERS[o["kind"]](k, o)
    _signals(k, desc)
    _markings(k, desc)
    if scenery["speed_sign"]:
        _speed_sign(k, scenery["speed_sign"])
    for tree in scenery["trees"]:
        _tree(k, tree)
    cam_d = desc["camera"]
    bpy.ops.object.camera_add(location=cam_d["location"])
    cam = bpy.context.object
    cam.data.lens = cam_d["lens"]
    cam.data.sensor_width = cam_d["sensor_width"]
    cam.data.sensor_fit = "AUTO"
    cam.data.clip_end = 500.0
    cam.rotation_euler = (Vector(cam_d["target"]) - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    bpy.context.view_layer.update()
    return cam, k.parts


def annotate(scene, cam, parts: dict, desc: dict) -> dict:
    """Per element: the 2D box in pixels around all its meshes' vertices (clipped to the
    picture), plus the concept values."""
    from bpy_extras.object_utils import world_to_camera_view  # noqa: PLC0415
    w, h = desc["render"]["resolution"]
    out = []
    for o in desc["objects"]:
        xs, ys = [], []
        for ob in parts.get(o["id"], []):
            for v in ob.data.vertices:
                p = world_to_camera_view(scene, cam, ob.matrix_world @ v.co)
                if p.z > 0:
                    xs.append(p.x * w)
                    ys.append((1 - p.y) * h)
        box = None
        if xs:
            box = [max(0.0, min(xs)), max(0.0, min(ys)), min(float(w), max(xs)),
                   min(float(h), max(ys))]
            box = [round(v, 2) for v in box] if box[0] < box[2] and box[1] < box[3] else None
        out.append({**o, "bbox": box})
    return {"objects": out}
