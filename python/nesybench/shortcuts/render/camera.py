"""The camera of the rendered shortcut scenes: CLEVR's camera (before jitter), projection of
world points to pixels, and sRGB colours as Blender's linear ones (numpy only: no Blender
needed)."""
from __future__ import annotations

import numpy as np

#: CLE4EVR's camera before jitter: where rsbench's CLEVR base scene puts it (location, a
#: 35 mm lens on a 32 mm sensor), aimed at the origin as its track-to constraint aims it
CAMERA = {"location": [7.481, -6.508, 5.344], "target": [0.0, 0.0, 0.0], "lens": 35.0,
          "sensor_width": 32.0}


def _camera_basis(cam=None):
    cam = cam or CAMERA
    c = np.array(cam["location"], float)
    f = np.array(cam["target"], float) - c
    f /= np.linalg.norm(f)
    r = np.cross(f, [0.0, 0.0, 1.0])
    r /= np.linalg.norm(r)
    return c, f, r, np.cross(r, f)


def project(points, resolution, camera: dict | None = None) -> np.ndarray:
    """Pixel coordinates ``[n, 2]`` (x right, y down) and depth of world points under the
    camera (default: CLE4EVR's fixed one; Blender's sensor fit AUTO)."""
    w, h = resolution
    cam = camera or CAMERA
    c, f, r, u = _camera_basis(cam)
    d = np.asarray(points, float) - c
    z = d @ f
    s = cam["lens"] / cam["sensor_width"]
    sx, sy = (s, s * w / h) if w >= h else (s * h / w, s)
    nx = (d @ r) / z * sx + 0.5
    ny = (d @ u) / z * sy + 0.5
    return np.stack([nx * w, (1 - ny) * h, z], axis=1)


def _srgb_to_linear(c: float) -> float:
    c /= 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
