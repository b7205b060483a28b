"""``render: blender``: CLE4EVR scenes rendered with Blender's Python module (``bpy``).

* **Scene descriptions** are a pure function of the task, the seed, the split and the sample
  index (a NumPy ``Generator`` seeded by :func:`~nesybench.io.derive_seed`): the objects'
  concepts come from the sampled world, the nuisances (material, size where they are not
  concepts, position, rotation) from the generator. Positions are drawn without overlap
  (greedy rejection) and given to the objects from left to right in the picture (object 1 is
  the leftmost; ``scene: driving`` is in blender_driving.py); a whole layout is drawn again when an object would leave the picture or
  show less than ``min_visible`` of its projected box behind nearer objects (at most
  ``retries`` layouts).
* **Camera and lights** are rsbench's (its CLEVR base scene's camera and key, fill and back
  lights, aimed at the origin), each coordinate of their positions jittered per sample as
  rsbench jitters them (``camera_jitter`` 0.5, ``light_jitter`` 1.0), from a generator of
  their own seeded like the scene's: part of the scene description.
* **Rendering** builds each scene in code: rsbench's eleven shapes from Blender primitives or
  from an outline (:data:`SHAPES`), Principled BSDF materials (rubber: rough diffuse; metal:
  metallic), a ground plane, and renders it with Cycles on the CPU at the preset's quality
  (:data:`PRESETS`; one thread per process, fixed Cycles seed, smooth shapes shaded with
  normals computed here rather than by Blender: the same pixels on the same machine and
  ``bpy`` version, whatever the process rendered before).
  Renders run in ``workers`` processes started with ``spawn`` (``bpy`` is not fork-safe).
* **Annotations** (``NNNNN.json`` beside each image): the objects with their attributes,
  ground-plane position, rotation, 2D bounding box in pixels (the mesh's vertices projected
  with ``bpy_extras.object_utils.world_to_camera_view``) and camera-space centre, and the
  pairwise relations ``left``/``right``/``front``/``behind`` (``[i, j]``: object i is left of
  object j) from camera-space coordinates.
* **Resumable**: images are rendered into ``.OUT.partial`` beside the output folder; a sample
  whose image and annotation exist there with the scene description's hash is not rendered
  again. The finished files move into the output folder atomically, as for every renderer.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

from ...errors import NesyError
from ...io import derive_seed
from .camera import CAMERA, _camera_basis, _srgb_to_linear, project  # noqa: F401

#: how to install the module (bpy 5.0.1 declares numpy<2: installed without dependencies it
#: runs with the numpy nesybench already has)
INSTALL_HINT = "pip install --no-deps bpy==5.0.1"
BPY_VERSION = "5.0.1"

#: sRGB colours of CLEVR's palette (values of a ``color`` concept)
COLOURS = {"gray": (87, 87, 87), "red": (173, 35, 35), "blue": (42, 75, 215),
           "green": (29, 105, 20), "brown": (129, 74, 25), "purple": (129, 38, 192),
           "cyan": (41, 208, 208), "yellow": (255, 238, 51), "orange": (240, 130, 20),
           "white": (230, 230, 230), "black": (20, 20, 20)}
#: the shapes a ``shape`` concept may take: rsbench's shipped shape models (its CLEVR
#: configuration's shapes folder), each built in code from Blender primitives or a mesh made
#: from its outline (see :func:`_add_shape`)
SHAPES = ("cube", "sphere", "cylinder", "cone", "pyramid", "triangular_pyramid",
          "triangular_prism", "star", "toroid", "diamond", "heart")
#: the shapes a task without a shape concept draws at random (CLEVR's three)
NUISANCE_SHAPES = ("cube", "sphere", "cylinder")
#: height of each shape over its footprint radius r (the largest distance of its outline from
#: its axis; a cube's half-side is r/sqrt 2 as in CLEVR): what stands on the ground and what the
#: visibility check projects. The flat shapes follow the proportions of rsbench's models.
HEIGHT = {"cube": math.sqrt(2), "sphere": 2.0, "cylinder": 2.0, "cone": 2.0, "pyramid": 2.0,
          "triangular_pyramid": 2.0, "triangular_prism": 2.0, "star": 2.0, "toroid": 0.4,
          "diamond": 2.0, "heart": 0.9}
MATERIALS = ("rubber", "metal")
#: object "radius" (half the footprint) per size value: rsbench's CLEVR sizes
SIZES = {"small": 0.3, "medium": 0.5, "large": 0.7}

#: render quality per preset: ``rsbench`` is rsbench's CLE4EVR renderer (320x240, 512 samples
#: per pixel; 12 light bounces, Blender's default that its base scene keeps, and 8 transparent
#: bounces, what its --render_max_bounces sets), ``miniboia`` rsbench's miniBOIA picture size
#: (469x387; rsbench renders it with EEVEE at 128 samples, here Cycles at 128), ``fast`` small
#: and quick (tests, previews)
PRESETS = {"fast": {"resolution": [128, 128], "samples": 16, "bounces": 4},
           "rsbench": {"resolution": [320, 240], "samples": 512, "bounces": 12},
           "miniboia": {"resolution": [469, 387], "samples": 128, "bounces": 12}}
#: earlier preset names, still accepted: ``paper`` (320x240) is rsbench's picture size
PRESET_ALIASES = {"paper": "rsbench"}
#: the preset of a task that names none, per scene (rsbench's own settings)
DEFAULT_PRESET = {"objects": "rsbench", "driving": "miniboia"}
ENGINES = {"cycles": "CYCLES", "eevee": "BLENDER_EEVEE"}
#: camera_jitter and light_jitter are rsbench's: each coordinate of the camera's position
#: moves by up to +-0.5, of each light's by up to +-1.0 (uniform, drawn per sample)
DEFAULTS = {"preset": None, "engine": "cycles", "materials": list(MATERIALS),
            "sizes": list(SIZES), "min_visible": 0.4, "retries": 200, "workers": 1,
            "scene": "auto", "grid": None, "camera_jitter": 0.5, "light_jitter": 1.0}
OPTION_KEYS = {"preset", "resolution", "samples", "bounces", "engine", "materials", "sizes",
               "min_visible", "retries", "workers", "scene", "grid", "camera_jitter",
               "light_jitter"}
#: ``scene``: ``objects`` (CLE4EVR), ``driving`` (miniBOIA, blender_driving.py) or ``auto``
#: (driving when every concept is a miniBOIA concept name)
SCENES = ("auto", "objects", "driving")

# the area where objects stand and their least gap: rsbench's (positions uniform in
# [-3, 3]^2, footprints at least 0.25 apart)
AREA = 3.0
GAP = 0.25
#: CLE4EVR's lights before jitter (rsbench's CLEVR base scene: a key, a fill and a back area
#: light aimed at the origin): position, power in watts, size in metres
LIGHTS = {"key": ([6.447, -2.905, 4.258], 600.0, 0.5),
          "fill": ([-4.671, -4.014, 3.011], 180.0, 0.5),
          "back": ([-1.169, 2.646, 5.816], 300.0, 1.0)}

#: test hook: raise KeyboardInterrupt after this many renders of one run (simulates a kill)
_INTERRUPT_AFTER: int | None = None
PARTIAL_MARKER = ".nesybench-partial"


def _short(x) -> str:
    return " ".join(str(x).split())[:60]


def bpy_available() -> bool:
    import importlib.util  # noqa: PLC0415
    try:
        return importlib.util.find_spec("bpy") is not None
    except (ImportError, ValueError):
        return False


def require_bpy(source=None) -> None:
    if not bpy_available():
        raise NesyError(f"render: blender needs Blender's Python module bpy; install it with "
                        f"'{INSTALL_HINT}' (see docs/install.md)", file=source)


# -- options ----------------------------------------------------------------------------------
def options(task, overrides: dict | None = None) -> dict:
    """The render options: defaults < preset < the task's ``generate.blender`` < ``overrides``
    (CLI). Checked here, before anything is written."""
    src = task.source
    raw = dict((task.raw.get("generate") or {}).get("blender") or {})
    over = {k: v for k, v in (overrides or {}).items() if v is not None}
    for where, d in (("generate.blender", raw), ("option", over)):
        extra = sorted(str(k) for k in d if k not in OPTION_KEYS)
        if extra:
            raise NesyError(f"unknown key {extra[0]!r} (allowed: {', '.join(sorted(OPTION_KEYS))})",
                            file=src, field=f"{where}.{extra[0]}")
    merged = {**DEFAULTS, **raw, **over}
    from . import blender_driving as D  # noqa: PLC0415
    if merged["scene"] not in SCENES:
        raise NesyError(f"unknown scene {merged['scene']!r} ({', '.join(SCENES)})", file=src,
                        field="generate.blender.scene")
    scene = merged["scene"]
    if scene == "auto":
        scene = "driving" if D.is_driving(task) else "objects"
    preset = merged["preset"] if merged["preset"] is not None else DEFAULT_PRESET[scene]
    if isinstance(preset, str):
        preset = PRESET_ALIASES.get(preset, preset)
    if not isinstance(preset, str) or preset not in PRESETS:
        raise NesyError(f"unknown preset {_short(preset)!r} ({', '.join(PRESETS)})", file=src,
                        field="generate.blender.preset")
    o = {**DEFAULTS, **PRESETS[preset], **raw, **over, "preset": preset, "scene": scene}
    res = o["resolution"]
    if (not isinstance(res, (list, tuple)) or len(res) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and 8 <= x <= 4096
                       for x in res)):
        raise NesyError(f"resolution must be [width, height] in pixels (8..4096), not {res!r}",
                        file=src, field="generate.blender.resolution")
    o["resolution"] = [int(res[0]), int(res[1])]
    for k, lo, hi in (("samples", 1, 100_000), ("retries", 1, 100_000), ("workers", 1, 256),
                      ("bounces", 0, 1024)):
        v = o[k]
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise NesyError(f"{k} must be an integer in {lo}..{hi}, not {v!r}", file=src,
                            field=f"generate.blender.{k}")
    mv = o["min_visible"]
    if not isinstance(mv, (int, float)) or isinstance(mv, bool) or not 0 <= mv <= 1:
        raise NesyError(f"min_visible must be a fraction in [0, 1], not {mv!r}", file=src,
                        field="generate.blender.min_visible")
    for k in ("camera_jitter", "light_jitter"):
        v = o[k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 10:
            raise NesyError(f"{k} must be a distance in [0, 10] metres, not {v!r}", file=src,
                            field=f"generate.blender.{k}")
        o[k] = float(v)
    if not isinstance(o["engine"], str) or o["engine"] not in ENGINES:
        raise NesyError(f"unknown engine {o['engine']!r} ({', '.join(ENGINES)})", file=src,
                        field="generate.blender.engine")
    for k, vocab in (("materials", MATERIALS), ("sizes", tuple(SIZES))):
        v = o[k]
        if not isinstance(v, list) or not v or any(x not in vocab for x in v):
            raise NesyError(f"{k} must be a non-empty list of {', '.join(vocab)}, not {v!r}",
                            file=src, field=f"generate.blender.{k}")
    if o["scene"] == "driving":
        o["grid"] = D.grid_options(o["grid"], src)
    elif o["grid"] is not None:
        raise NesyError("grid applies to scene: driving", file=src, field="generate.blender.grid")
    else:
        del o["grid"]
    return o


# -- scene descriptions (pure NumPy) ------------------------------------------------------------
def _objects_of(task, world) -> list[dict]:
    """``[{color, shape[, size, material]}]`` per object index, from the world's concepts
    (``color(i)``/``shape(i)``/``size(i)``/``material(i)``, or an entangled ``obj(i)`` whose
    values are ``colour_shape``)."""
    objs: dict = {}
    for v, x in zip(task.variables, world):
        t = v.term
        if not (isinstance(t, tuple) and len(t) == 2):
            raise NesyError(f"render: blender draws CLE4EVR objects (concepts color(i), "
                            f"shape(i), size(i), material(i) or obj(i)), not {v.name}",
                            file=task.source)
        name, i = t
        d = objs.setdefault(i, {"object": i})
        if name == "obj":
            col, _, shape = str(x).partition("_")
            d["color"], d["shape"] = col, shape
        elif name in ("color", "shape", "size", "material"):
            d[name] = str(x)
        else:
            raise NesyError(f"render: blender has no object attribute {name!r} (color, shape, "
                            f"size, material, obj)", file=task.source)
    # an object with an attribute `none` is absent (support {objects: [min, max]})
    from ..task import slot_order  # noqa: PLC0415
    return [objs[i] for i in slot_order(objs)
            if not any(str(x) == "none" for k, x in objs[i].items() if k != "object")]


def undrawable(task, world) -> str | None:
    """Why ``world`` has no picture of its own, or None: an object with some attributes
    ``none`` and others not (half an object), or an absent object before a present one (the
    picture of n objects is the world with objects 1..n present, as rsbench numbers them).
    Always None for tasks without ``none`` values or without per-object concepts."""
    if not any(str(x) == "none" for x in world):
        return None
    from ..task import absent_last, object_slots, present_objects  # noqa: PLC0415
    try:
        slots = object_slots(task)
    except NesyError:
        return None
    if present_objects(task, world, slots) is None:
        return "has an object with some attributes none and others not"
    if not absent_last(task, world, slots):
        return ("has an absent object before a present one (present objects come first, "
                "absent ones last)")
    return None


def drawable(task, world) -> bool:
    """Whether ``world`` has a picture of its own (:func:`undrawable` gives no reason)."""
    return undrawable(task, world) is None


def check_vocabulary(task, opts: dict | None = None) -> None:
    """Every concept value must be drawable (one line naming the first that is not)."""
    if opts is not None and opts.get("scene") == "driving":
        from . import blender_driving as D  # noqa: PLC0415
        D.check(task)
        return
    vocab = {"color": COLOURS, "shape": SHAPES, "size": SIZES, "material": MATERIALS}
    for v in task.variables:
        name = v.term[0] if isinstance(v.term, tuple) else v.name
        for x in v.domain:
            if str(x) == "none":          # an absent object
                continue
            pairs = ([("color", str(x).partition("_")[0]), ("shape", str(x).partition("_")[2])]
                     if name == "obj" else [(name, str(x))])
            for attr, val in pairs:
                if attr in vocab and val not in vocab[attr]:
                    raise NesyError(f"render: blender cannot draw {attr} {val!r} of {v.name} "
                                    f"(known: {', '.join(vocab[attr])})", file=task.source)


def height(shape: str, radius: float) -> float:
    """How tall an object of ``shape`` and footprint radius ``radius`` stands."""
    return HEIGHT[shape] * radius


def _box_corners(o) -> np.ndarray:
    rad, h = o["radius"], height(o["shape"], o["radius"])
    return np.array([[o["x"] + sx * rad, o["y"] + sy * rad, z]
                     for sx in (-1, 1) for sy in (-1, 1) for z in (0.0, h)])


def _visible_fractions(objs, resolution, camera: dict | None = None) -> list[float] | None:
    """Fraction of each object's projected box not covered by nearer objects' boxes; None when
    a box leaves the picture (``camera``: the sample's, default the camera before jitter)."""
    w, h = resolution
    boxes, depth = [], []
    for o in objs:
        p = project(_box_corners(o), resolution, camera)
        x0, y0, x1, y1 = p[:, 0].min(), p[:, 1].min(), p[:, 0].max(), p[:, 1].max()
        if x0 < 0 or y0 < 0 or x1 > w or y1 > h:
            return None
        boxes.append((int(x0), int(y0), int(math.ceil(x1)), int(math.ceil(y1))))
        depth.append(float(project([[o["x"], o["y"], 0.0]], resolution, camera)[0, 2]))
    ids = np.full((h, w), -1, dtype=int)
    for i in sorted(range(len(objs)), key=lambda k: -depth[k]):      # far first, near paints over
        x0, y0, x1, y1 = boxes[i]
        ids[y0:y1, x0:x1] = i
    out = []
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        area = max(1, (x1 - x0) * (y1 - y0))
        out.append(float((ids == i).sum()) / area)
    return out


def describe(task, world, opts: dict, *, seed: int, split: str, index: int) -> dict:
    """The scene description of one sample: a pure function of its arguments."""
    if opts.get("scene") == "driving":
        from . import blender_driving as D  # noqa: PLC0415
        return D.describe(task, world, opts, seed=seed, split=split, index=index)
    rng = np.random.default_rng(derive_seed("rs-blender", task.name, seed, split, index))
    cam, lights = jitter(opts, derive_seed("rs-blender-jitter", task.name, seed, split, index))
    base = _objects_of(task, world)
    objs = []
    for b in base:
        size = b.get("size") or opts["sizes"][int(rng.integers(len(opts["sizes"])))]
        mat = b.get("material") or opts["materials"][int(rng.integers(len(opts["materials"])))]
        # a task without a colour (shape) concept gets a random one per object: a nuisance
        col = b.get("color") or sorted(COLOURS)[int(rng.integers(len(COLOURS)))]
        shape = b.get("shape") or NUISANCE_SHAPES[int(rng.integers(len(NUISANCE_SHAPES)))]
        objs.append({"object": b["object"], "color": col, "shape": shape, "material": mat,
                     "size": size, "radius": SIZES[size]})
    # positions are drawn apart for the largest object, then given to the objects from left to
    # right in the picture: object 1 is the leftmost, so color(1), shape(1), ... name what a
    # model can see (a concept per object index is learnable and its accuracy meaningful)
    rmax = max((o["radius"] for o in objs), default=0.0)
    for attempt in range(opts["retries"]):
        spots = []
        for _ in objs:
            for _ in range(100):
                x, y = (float(v) for v in rng.uniform(-AREA, AREA, size=2))
                if all(math.hypot(x - q[0], y - q[1]) >= 2 * rmax + GAP for q in spots):
                    break
            else:
                break
            spots.append((round(x, 6), round(y, 6), round(float(rng.uniform(0, 360)), 6)))
        if len(spots) < len(objs):
            continue
        if not objs:                      # every object absent: an empty scene
            placed = []
            break
        px = project([[x, y, 0.0] for x, y, _ in spots], opts["resolution"], cam)[:, 0]
        spots = [spots[i] for i in sorted(range(len(spots)), key=lambda i: (px[i], i))]
        placed = [{**o, "x": x, "y": y, "rotation": r} for o, (x, y, r) in zip(objs, spots)]
        vis = _visible_fractions(placed, opts["resolution"], cam)
        if vis is not None and min(vis) >= opts["min_visible"]:
            break
    else:
        raise NesyError(f"could not place {len(objs)} objects in view with min_visible "
                        f"{opts['min_visible']} in {opts['retries']} layouts; lower min_visible, "
                        f"raise retries or use fewer or smaller objects", file=task.source)
    return {"objects": [{"id": k, **o} for k, o in enumerate(placed)],
            "render": {"resolution": opts["resolution"], "samples": opts["samples"],
                       "bounces": opts["bounces"], "engine": opts["engine"]},
            "camera": cam, "lights": lights, "seed": seed, "split": split, "index": index}


def _moved(point, rng, magnitude: float) -> list[float]:
    """``point`` with each coordinate moved by a uniform draw in [-magnitude, magnitude]."""
    return [round(float(c + magnitude * (2.0 * rng.random() - 1.0)), 6) for c in point]


def jitter(opts: dict, seed: int) -> tuple[dict, dict]:
    """The sample's camera and lights: CLEVR's, each coordinate of their positions moved by up
    to ``camera_jitter`` (``light_jitter``), as rsbench jitters them; they stay aimed at the
    origin (rsbench's base scene aims them with track-to constraints). Drawn from a generator of
    their own (``seed``), so the jitter options leave the objects' draws unchanged."""
    rng = np.random.default_rng(seed)
    cam = {**CAMERA, "location": _moved(CAMERA["location"], rng, opts["camera_jitter"])}
    lights = {name: {"location": _moved(loc, rng, opts["light_jitter"]), "power": power,
                     "size": size} for name, (loc, power, size) in LIGHTS.items()}
    return cam, lights


def description_hash(desc: dict) -> str:
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()


# -- rendering (worker processes) ---------------------------------------------------------------
def _material(bpy, name: str, rgb, kind: str):
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (*[_srgb_to_linear(c) for c in rgb], 1.0)
    if kind == "metal":
        bsdf.inputs["Metallic"].default_value = 1.0
        bsdf.inputs["Roughness"].default_value = 0.25
    else:
        bsdf.inputs["Metallic"].default_value = 0.0
        bsdf.inputs["Roughness"].default_value = 0.9
    return mat


def _settings(bpy, desc: dict):
    """An empty scene with the render settings of ``desc`` (CPU, one thread, fixed seed)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    w, h = desc["render"]["resolution"]
    r = scene.render
    r.engine = ENGINES[desc["render"]["engine"]]
    r.resolution_x, r.resolution_y, r.resolution_percentage = w, h, 100
    r.image_settings.file_format = "PNG"
    r.image_settings.color_mode = "RGB"
    r.use_file_extension = False
    r.threads_mode = "FIXED"
    r.threads = 1
    if r.engine == "CYCLES":
        c = scene.cycles
        c.device = "CPU"
        c.samples = desc["render"]["samples"]
        c.seed = 0
        c.use_adaptive_sampling = False
        c.use_denoising = False
        # the total light path depth of the preset; transparent bounces stay at 8 (Blender's
        # default, what rsbench's --render_max_bounces sets) and glossy paths are blurred as
        # rsbench blurs them (less noise at low sample counts)
        c.max_bounces = desc["render"]["bounces"]
        c.transparent_max_bounces = 8
        c.blur_glossy = 2.0
    return scene


def _aim(ob, target=(0.0, 0.0, 0.0)) -> None:
    """Point a camera or light (its -Z axis) at ``target``, Y up."""
    from mathutils import Vector  # noqa: PLC0415
    ob.rotation_euler = (Vector(target) - ob.location).to_track_quat("-Z", "Y").to_euler()


def _mesh(bpy, name: str, verts, faces, loc, rot):
    """An object made of ``verts`` and ``faces`` (normals made consistent and outward), at
    ``loc`` with rotation ``rot``; it becomes the active object."""
    import bmesh  # noqa: PLC0415
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(v) for v in verts], [], [tuple(f) for f in faces])
    bm = bmesh.new()
    bm.from_mesh(me)
    bmesh.ops.recalc_face_normals(bm, faces=bm.faces)
    bm.to_mesh(me)
    bm.free()
    ob = bpy.data.objects.new(name, me)
    bpy.context.collection.objects.link(ob)
    ob.location, ob.rotation_euler = loc, rot
    bpy.context.view_layer.objects.active = ob
    return ob


def _prism(outline, h: float):
    """Vertices and faces of ``outline`` (points (x, y) in order) extruded from -h/2 to h/2."""
    n = len(outline)
    verts = [(x, y, -h / 2) for x, y in outline] + [(x, y, h / 2) for x, y in outline]
    faces = [list(range(n))[::-1], list(range(n, 2 * n))]
    faces += [[i, (i + 1) % n, n + (i + 1) % n, n + i] for i in range(n)]
    return verts, faces


def star_outline(r: float, points: int = 5, inner: float = 0.45) -> list:
    """A star's outline: ``points`` tips at radius r, notches at ``inner`` * r, one tip
    towards +Y."""
    return [((r if k % 2 == 0 else inner * r) * math.sin(math.pi * k / points),
             (r if k % 2 == 0 else inner * r) * math.cos(math.pi * k / points))
            for k in range(2 * points)]


def heart_outline(r: float, n: int = 48) -> list:
    """A heart's outline (the classic parametric curve) scaled so that it spans [-r, r] across
    and about 1.8 r from its notch to its tip, centred on the origin."""
    out = []
    for k in range(n):
        t = 2 * math.pi * k / n
        x = 16 * math.sin(t) ** 3
        y = 13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)
        out.append((x * r / 16, (y + 2.5) * r / 16))
    return out


def _diamond(r: float, h: float, n: int = 8):
    """A cut gem standing on its tip: the pavilion (a cone from the tip to the girdle of radius
    r at 0.6 h), the crown (up to a table of radius 0.55 r at the top) and the table."""
    verts = [(0.0, 0.0, -h / 2)]
    zg, zt = -h / 2 + 0.6 * h, h / 2
    verts += [(r * math.cos(2 * math.pi * k / n), r * math.sin(2 * math.pi * k / n), zg)
              for k in range(n)]
    verts += [(0.55 * r * math.cos(2 * math.pi * (k + 0.5) / n),
               0.55 * r * math.sin(2 * math.pi * (k + 0.5) / n), zt) for k in range(n)]
    faces = [[0, 1 + (k + 1) % n, 1 + k] for k in range(n)]
    faces += [[1 + k, 1 + (k + 1) % n, 1 + n + k] for k in range(n)]
    faces += [[1 + (k + 1) % n, 1 + n + (k + 1) % n, 1 + n + k] for k in range(n)]
    faces += [[1 + n + k for k in range(n)]]
    return verts, faces


def _add_shape(bpy, o: dict):
    """Add object ``o`` of the description: its shape built from a Blender primitive or from
    its outline, standing on the ground, its origin at the centre of its box."""
    shape, r = o["shape"], o["radius"]
    h = height(shape, r)
    loc = (o["x"], o["y"], h / 2)
    rot = (0.0, 0.0, math.radians(o["rotation"]))
    ops = bpy.ops.mesh
    smooth = shape in ("sphere", "cylinder", "cone", "toroid")
    if shape == "cube":
        ops.primitive_cube_add(size=h, location=loc, rotation=rot)
    elif shape == "sphere":
        ops.primitive_uv_sphere_add(radius=r, segments=32, ring_count=16, location=loc,
                                    rotation=rot)
    elif shape in ("cylinder", "triangular_prism"):
        ops.primitive_cylinder_add(radius=r, depth=h, vertices=32 if shape == "cylinder" else 3,
                                   location=loc, rotation=rot)
    elif shape in ("cone", "pyramid", "triangular_pyramid"):
        ops.primitive_cone_add(radius1=r, radius2=0.0, depth=h, location=loc, rotation=rot,
                               vertices={"cone": 32, "pyramid": 4, "triangular_pyramid": 3}[shape])
    elif shape == "toroid":
        ops.primitive_torus_add(major_radius=0.8 * r, minor_radius=0.2 * r, major_segments=48,
                                minor_segments=16, location=loc, rotation=rot)
    elif shape == "star":
        _mesh(bpy, f"o{o['id']}", *_prism(star_outline(r), h), loc, rot)
    elif shape == "heart":
        _mesh(bpy, f"o{o['id']}", *_prism(heart_outline(r), h), loc, rot)
    elif shape == "diamond":
        _mesh(bpy, f"o{o['id']}", *_diamond(r, h), loc, rot)
    else:
        raise ValueError(shape)
    ob = bpy.context.view_layer.objects.active
    if smooth:
        for poly in ob.data.polygons:
            poly.use_smooth = True
        set_vertex_normals(ob.data, smooth_vertex_normals(ob.data))
    return ob


def smooth_vertex_normals(me) -> np.ndarray:
    """The smooth-shading normals of mesh ``me``, shape (vertices, 3), float32: each vertex's
    adjacent face normals (Newell's method) weighted by the face's angle at the vertex, summed
    in corner order in float64 and normalised (Blender's definition of vertex normals).

    Blender computes the same normals itself, but not reproducibly: the same mesh built twice in
    one process can get normals one float32 ulp apart (the result depends on the process's
    earlier work), enough to move a pixel across an 8-bit rounding boundary. These are a
    function of the vertex positions alone."""
    n_vert = len(me.vertices)
    co = np.empty(3 * n_vert, dtype=np.float32)
    me.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3).astype(np.float64)
    corner_vert = np.empty(len(me.loops), dtype=np.int32)
    me.loops.foreach_get("vertex_index", corner_vert)
    start = np.empty(len(me.polygons), dtype=np.int32)
    total = np.empty(len(me.polygons), dtype=np.int32)
    me.polygons.foreach_get("loop_start", start)
    me.polygons.foreach_get("loop_total", total)
    # a Blender mesh stores each face's corners together, the faces in order
    face = np.repeat(np.arange(len(start)), total)           # the face of each corner
    rank = np.arange(len(corner_vert)) - start[face]
    p = co[corner_vert]
    nxt = co[corner_vert[start[face] + (rank + 1) % total[face]]]
    prv = co[corner_vert[start[face] + (rank - 1) % total[face]]]
    normal = np.zeros((len(start), 3))
    np.add.at(normal, face, np.cross(p, nxt))                 # Newell: twice the vector area
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = np.divide(normal, length, out=np.zeros_like(normal), where=length > 0)
    a, b = prv - p, nxt - p
    cos = (a * b).sum(axis=1) / np.maximum(
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-300)
    angle = np.arccos(np.clip(cos, -1.0, 1.0))
    out = np.zeros((n_vert, 3))
    np.add.at(out, corner_vert, angle[:, None] * normal[face])   # in corner order: reproducible
    length = np.linalg.norm(out, axis=1, keepdims=True)
    return (out / np.where(length > 0, length, 1.0)).astype(np.float32)


def set_vertex_normals(me, normals: np.ndarray) -> None:
    """Give mesh ``me`` the vertex normals ``normals`` (shape (vertices, 3)) as free custom
    normals (a point-domain ``custom_normal`` float vector attribute), which Cycles shades
    with as they are, instead of normals Blender computes."""
    attr = me.attributes.get("custom_normal")
    if attr is not None:
        me.attributes.remove(attr)
    attr = me.attributes.new("custom_normal", "FLOAT_VECTOR", "POINT")
    attr.data.foreach_set("vector", np.ascontiguousarray(normals, dtype=np.float32).ravel())


def _build(bpy, desc: dict):
    scene = _settings(bpy, desc)
    world = bpy.data.worlds.new("world")
    world.use_nodes = True
    bg = world.node_tree.nodes.get("Background")
    if bg is not None:
        bg.inputs["Color"].default_value = (0.05, 0.05, 0.05, 1.0)
    scene.world = world
    bpy.ops.mesh.primitive_plane_add(size=200, location=(0, 0, 0))
    bpy.context.object.data.materials.append(_material(bpy, "ground", (140, 140, 140), "rubber"))
    for name, light in sorted(desc["lights"].items()):
        bpy.ops.object.light_add(type="AREA", location=light["location"])
        lamp = bpy.context.object
        lamp.name = f"Lamp_{name}"
        lamp.data.energy = light["power"]
        lamp.data.size = light["size"]
        _aim(lamp)
    cam_d = desc["camera"]
    bpy.ops.object.camera_add(location=cam_d["location"])
    cam = bpy.context.object
    cam.data.lens = cam_d["lens"]
    cam.data.sensor_width = cam_d["sensor_width"]
    cam.data.sensor_fit = "AUTO"
    _aim(cam, cam_d["target"])
    scene.camera = cam
    objs = []
    for o in desc["objects"]:
        ob = _add_shape(bpy, o)
        ob.data.materials.append(_material(bpy, f"m{o['id']}", COLOURS[o["color"]], o["material"]))
        objs.append(ob)
    bpy.context.view_layer.update()
    return scene, cam, objs


def _annotate(scene, cam, objs, desc: dict) -> dict:
    from bpy_extras.object_utils import world_to_camera_view  # noqa: PLC0415
    w, h = desc["render"]["resolution"]
    inv = cam.matrix_world.inverted()
    out, centres = [], []
    for o, ob in zip(desc["objects"], objs):
        pts = [world_to_camera_view(scene, cam, ob.matrix_world @ v.co) for v in ob.data.vertices]
        xs = [p.x * w for p in pts]
        ys = [(1 - p.y) * h for p in pts]
        box = [max(0.0, min(xs)), max(0.0, min(ys)), min(float(w), max(xs)), min(float(h), max(ys))]
        cc = inv @ ob.matrix_world.translation
        centres.append((cc.x, -cc.z))          # camera space: x right, depth = -z
        out.append({**o, "bbox": [round(v, 2) for v in box],
                    "camera": [round(cc.x, 4), round(cc.y, 4), round(cc.z, 4)]})
    rel = {"left": [], "right": [], "front": [], "behind": []}
    for i, (xi, di) in enumerate(centres):
        for j, (xj, dj) in enumerate(centres):
            if i == j:
                continue
            rel["left" if xi < xj else "right"].append([i, j])
            rel["front" if di < dj else "behind"].append([i, j])
    return {"objects": out, "relations": rel}


#: PNG chunks that carry text or a timestamp: Blender writes the wall-clock date, the render
#: and synchronisation times and similar bookkeeping into them, so that two renders of the same
#: scene would differ in these bytes alone
PNG_TEXT_CHUNKS = frozenset({b"tEXt", b"zTXt", b"iTXt", b"tIME"})
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def strip_png_text(data: bytes, where: str = "PNG") -> bytes:
    """``data`` (a PNG file's bytes) without its text and time chunks (:data:`PNG_TEXT_CHUNKS`);
    every other chunk is kept byte for byte, so the pixels and their encoding are unchanged.
    A file that is not a well-formed sequence of chunks ending in ``IEND`` is a
    :class:`NesyError` naming ``where``."""
    if not data.startswith(PNG_SIGNATURE):
        raise NesyError("not a PNG file (no PNG signature)", file=where)
    out = [PNG_SIGNATURE]
    i = len(PNG_SIGNATURE)
    while True:
        if i + 8 > len(data):
            raise NesyError(f"PNG chunk header cut off at byte {i}", file=where)
        length = int.from_bytes(data[i:i + 4], "big")
        kind = data[i + 4:i + 8]
        end = i + 12 + length
        if length > 0x7FFFFFFF or end > len(data):
            raise NesyError(f"PNG chunk {kind!r} at byte {i} runs past the end of the file",
                            file=where)
        if kind not in PNG_TEXT_CHUNKS:
            out.append(data[i:end])
        i = end
        if kind == b"IEND":
            break
    if i != len(data):
        raise NesyError(f"{len(data) - i} bytes after the PNG's IEND chunk", file=where)
    return b"".join(out)


_BPY = None


def _render_job(job):
    """Render one scene: ``job = (description, png path, annotation path)``. Returns
    ``(png name, bpy version, error line or None)``."""
    global _BPY
    desc, png, ann = job
    try:
        if _BPY is None:
            # Blender writes progress lines ("Saved: ...") to the process's stdout and stderr:
            # a worker's are closed (errors come back through the pool)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            import bpy  # noqa: PLC0415
            _BPY = bpy
        bpy = _BPY
        if desc.get("scene") == "driving":
            from . import blender_driving as D  # noqa: PLC0415
            scene = _settings(bpy, desc)
            cam, parts = D.build(bpy, desc)
            annotate = lambda: D.annotate(scene, cam, parts, desc)  # noqa: E731
        else:
            scene, cam, objs = _build(bpy, desc)
            annotate = lambda: _annotate(scene, cam, objs, desc)  # noqa: E731
        # temporary names of this process's own: a worker of an interrupted run that is still
        # finishing its scene must not write into the file a worker of the resumed run writes
        tmp_png = f"{png}.{os.getpid()}.partial.png"
        scene.render.filepath = tmp_png
        bpy.ops.render.render(write_still=True)
        # the same scene gives the same bytes: drop the chunks holding dates and timings
        with open(tmp_png, "rb") as fh:
            data = strip_png_text(fh.read(), os.path.basename(png))
        with open(tmp_png, "wb") as fh:
            fh.write(data)
        os.replace(tmp_png, png)
        a = {"image": os.path.basename(png), "hash": description_hash(desc), **desc,
             **annotate(), "bpy_version": bpy.app.version_string}
        tmp_ann = f"{ann}.{os.getpid()}.partial"
        with open(tmp_ann, "w", encoding="utf-8") as fh:
            json.dump(a, fh, sort_keys=True, indent=1)
        os.replace(tmp_ann, ann)
        return os.path.basename(png), bpy.app.version_string, None
    except Exception as exc:  # noqa: BLE001 - one line back to the parent
        return os.path.basename(png), None, f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def _done(desc: dict, png: Path, ann: Path) -> bool:
    if not (png.is_file() and ann.is_file()):
        return False
    try:
        return json.loads(ann.read_text(encoding="utf-8")).get("hash") == description_hash(desc)
    except (OSError, ValueError):
        return False


def partial_dir(out) -> Path:
    out = Path(out).absolute()
    return out.parent / f".{out.name}.partial"


def open_partial(out) -> Path:
    """The resume folder beside ``out`` (created with a marker; refused when a folder of that
    name exists that nesybench did not make)."""
    p = partial_dir(out)
    if p.exists() and not (p / PARTIAL_MARKER).is_file():
        raise NesyError("a folder of the resume folder's name exists and is not nesybench's",
                        file=str(p))
    try:
        p.mkdir(parents=True, exist_ok=True)
        (p / PARTIAL_MARKER).write_text("nesybench rs generate resume folder\n", encoding="utf-8")
    except OSError as exc:
        raise NesyError(f"cannot write the resume folder: {exc.strerror or exc}",
                        file=str(p)) from None
    return p


def render_all(jobs: list, *, n_jobs: int, bar=None) -> dict:
    """Render the jobs ``(description, png, annotation)`` not already done; returns
    ``{"rendered": n, "resumed": n, "bpy_version": str|None}``."""
    todo = [j for j in jobs if not _done(j[0], Path(j[1]), Path(j[2]))]
    resumed = len(jobs) - len(todo)
    if bar is not None:
        bar.update(resumed)
    version = None
    if todo:
        import multiprocessing as mp  # noqa: PLC0415
        ctx = mp.get_context("spawn")
        n = min(n_jobs, len(todo))
        with ctx.Pool(n) as pool:
            for k, (name, ver, err) in enumerate(pool.imap_unordered(_render_job, todo), 1):
                if err:
                    raise NesyError(f"Blender could not render {name}: {err}")
                version = ver
                if bar is not None:
                    bar.update()
                if _INTERRUPT_AFTER is not None and k >= _INTERRUPT_AFTER:
                    raise KeyboardInterrupt
    return {"rendered": len(todo), "resumed": resumed, "bpy_version": version}
