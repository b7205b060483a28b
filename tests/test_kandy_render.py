"""Renderer: operator geometry (pure layout), pixel sizes, colours, noise, determinism, config."""
from __future__ import annotations

import colorsys
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from nesybench.errors import NesyError
from nesybench.kandy.render import (DEFAULT_COLORS, RenderConfig, hex_to_rgb, layout, render,
                                    render_job, render_to_png_bytes)
from nesybench.kandy.symbols import Composite, Shape, from_prolog

CFG = RenderConfig()
QUIET = RenderConfig(noisy_color=False, noisy_size=False)
W, H = CFG.canvas
P = CFG.padding
MID = (P + (W - 2 * P) / 2, P + (H - 2 * P) / 2)


def centres(text, cfg=QUIET, seed=0):
    rng = np.random.Generator(np.random.PCG64(seed))
    return [(cx, cy) for _, (cx, cy, _s) in layout(from_prolog(text), cfg, rng)]


def atoms(n, shape="square", color="red", size="small"):
    return ", ".join(f"{shape}_{color}_{size}" for _ in range(n))


@pytest.mark.parametrize("op,left,top", [
    ("quadrant_ul", True, True), ("quadrant_ur", False, True),
    ("quadrant_ll", True, False), ("quadrant_lr", False, False)])
def test_quadrants(op, left, top):
    (cx, cy), = centres(f"{op}([circle_red_small])")
    assert (cx < MID[0]) == left and (cy < MID[1]) == top
    # centred in its quarter of the drawable area
    q = (W - 2 * P) / 4
    assert cx == pytest.approx(P + (q if left else 3 * q))
    assert cy == pytest.approx(P + (q if top else 3 * q))


def test_quadrant_ll_is_lower_left_not_upper_right():  # the reference draws it at upper right
    (cx, cy), = centres("quadrant_ll([square_blue_large])")
    img = np.asarray(render(from_prolog("quadrant_ll([square_blue_large])"), QUIET))
    blue = np.argwhere((img[:, :, 2] > 200) & (img[:, :, 0] < 50))
    assert blue[:, 1].mean() < W / 2 and blue[:, 0].mean() > H / 2


def test_in_centres_everything():
    for cx, cy in centres(f"in([{atoms(3)}])"):
        assert (cx, cy) == pytest.approx(MID)


def test_stack_top_to_bottom_and_side_by_side_left_to_right():
    st = centres(f"stack([{atoms(4)}])")
    assert all(cx == pytest.approx(MID[0]) for cx, _ in st)
    ys = [cy for _, cy in st]
    assert ys == sorted(ys) and len(set(ys)) == 4
    step = (H - 2 * P) / 4
    assert ys == pytest.approx([P + (i + 0.5) * step for i in range(4)])
    sbs = centres(f"side_by_side([{atoms(3)}])")
    xs = [cx for cx, _ in sbs]
    assert xs == sorted(xs) and len(set(xs)) == 3
    assert all(cy == pytest.approx(MID[1]) for _, cy in sbs)


def test_reduce_bb_narrows_the_secondary_axis():
    inner = f"side_by_side([{atoms(3)}])"
    full = centres(f"stack([{inner}, {inner}])")
    reduced = centres(f"stack_reduce_bb([{inner}, {inner}])")
    spread = lambda cs: max(x for x, _ in cs[:3]) - min(x for x, _ in cs[:3])  # noqa: E731
    assert spread(reduced) == pytest.approx(spread(full) / 2)
    assert [y for _, y in reduced] == pytest.approx([y for _, y in full])
    inner = f"stack([{atoms(3)}])"
    full = centres(f"side_by_side([{inner}, {inner}])")
    reduced = centres(f"side_by_side_reduce_bb([{inner}, {inner}])")
    spread = lambda cs: max(y for _, y in cs[:3]) - min(y for _, y in cs[:3])  # noqa: E731
    assert spread(reduced) == pytest.approx(spread(full) / 2)


def test_diagonals():
    ul = centres(f"diag_ul_lr([{atoms(4)}])")
    assert all(b[0] > a[0] and b[1] > a[1] for a, b in zip(ul, ul[1:]))
    ll = centres(f"diag_ll_ur([{atoms(4)}])")
    assert all(b[0] > a[0] and b[1] < a[1] for a, b in zip(ll, ll[1:]))
    assert ll[0][0] < MID[0] < ll[0][1] and ll[-1][0] > MID[0] > ll[-1][1]


def test_grid_of_five_is_three_by_three_row_major():
    cs = centres(f"grid([{atoms(5)}])")
    cell = (W - 2 * P) / 3
    want = [(P + (i % 3 + 0.5) * cell, P + (i // 3 + 0.5) * cell) for i in range(5)]
    assert [c for xy in cs for c in xy] == pytest.approx([c for xy in want for c in xy])
    cs4 = centres(f"grid([{atoms(4)}])")
    assert len({round(x, 6) for x, _ in cs4}) == 2 and len({round(y, 6) for _, y in cs4}) == 2


@pytest.mark.parametrize("seed", range(8))
def test_random_children_do_not_overlap_and_stay_inside(seed):
    text = "random([" + ", ".join(["square_red_large", "circle_blue_large", "triangle_green_small",
                                   "circle_red_small", "square_cyan_large",
                                   "stack([circle_red_small, circle_red_small])"]) + "])"
    placed = layout(from_prolog(text), CFG, np.random.Generator(np.random.PCG64(seed)))
    for i, (_, (ax, ay, asz)) in enumerate(placed):
        assert P - 1e-9 <= ax - asz / 2 and ax + asz / 2 <= W - P + 1e-9
        assert P - 1e-9 <= ay - asz / 2 and ay + asz / 2 <= H - P + 1e-9
        for _, (bx, by, bsz) in placed[i + 1:]:
            sep = (asz + bsz) / 2
            assert abs(ax - bx) >= sep or abs(ay - by) >= sep
    # the stacked pair keeps its internal geometry (same x, one above the other)
    (_, (x1, y1, _)), (_, (x2, y2, _)) = placed[-2:]
    assert x1 == pytest.approx(x2) and y1 < y2


def test_random_depends_on_seed():
    text = f"random([{atoms(3)}])"
    assert centres(text, seed=1) != centres(text, seed=2)
    assert centres(text, seed=1) == centres(text, seed=1)


def test_sizes_do_not_shrink_with_depth():
    deep = "stack([grid([side_by_side([diag_ul_lr([square_red_large, circle_red_small])])])])"
    sizes = [s for _, (_, _, s) in layout(from_prolog(deep), QUIET)]
    assert sizes == [25.0, 10.0]
    # and in pixels: the rendered large square is 25 px wide at depth 0 and at depth 4
    def red_extent(text):  # antialiased coverage summed over the shape's bounding rows/cols
        img = np.asarray(render(from_prolog(text), QUIET)).astype(float)
        cov = (127 - img[:, :, 1]) / 127  # green falls from 127 (background) to 0 (red)
        return round(cov.sum(axis=0).max(), 2), round(cov.sum(axis=1).max(), 2)
    flat = red_extent("square_red_large")
    assert flat == pytest.approx((25, 25), abs=0.1)
    assert red_extent("stack([grid([side_by_side([diag_ul_lr([square_red_large])])])])") == flat


def test_size_noise_is_bounded_uniform():
    sizes = []
    for seed in range(40):
        (_, (_, _, s)), = layout(Shape("circle", "red", "large"), CFG,
                                 np.random.Generator(np.random.PCG64(seed)))
        sizes.append(s)
    assert all(23 <= s <= 27 for s in sizes) and np.std(sizes) > 0.5


@pytest.mark.parametrize("color", list(DEFAULT_COLORS))
def test_centre_pixel_colour(color):
    img = np.asarray(render(Shape("circle", color, "large"), QUIET))
    c = tuple(int(v) for v in img[H // 2, W // 2])
    assert c == hex_to_rgb(DEFAULT_COLORS[color])
    # with noise the hue stays where it belongs (wrapped distance), over many seeds
    h0 = colorsys.rgb_to_hsv(*(v / 255 for v in hex_to_rgb(DEFAULT_COLORS[color])))[0]
    for seed in range(25):
        img = np.asarray(render(Shape("square", color, "large"), CFG, seed=seed))
        r, g, b = (v / 255 for v in img[H // 2, W // 2])
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        if s > 0.25 and v > 0.25:  # hue is only meaningful for visible saturation/value
            assert min(abs(h - h0), 1 - abs(h - h0)) < 0.06


def test_background_exact_and_antialiased_edges():
    img = np.asarray(render(from_prolog("in([circle_red_large])"), CFG, seed=3))
    for y, x in [(0, 0), (0, W - 1), (H - 1, 0), (H - 1, W - 1), (10, 100)]:
        assert tuple(img[y, x]) == (127, 127, 127)
    bg = RenderConfig(background="#102030", noisy_color=False)
    img = np.asarray(render(Shape("circle", "red", "small"), bg))
    assert tuple(img[0, 0]) == (16, 32, 48)
    row = img[H // 2, :, 0].astype(int)  # intermediate values on the circle border
    assert any(16 < v < 255 for v in row)


def test_canvas_size_configurable():
    cfg = RenderConfig(canvas=(160, 96))
    img = render(from_prolog("side_by_side([square_red_small, circle_blue_small])"), cfg, seed=0)
    assert img.size == (160, 96) and img.mode == "RGB"


def test_determinism_bytes_and_seeds(tmp_path):
    text = ("grid([random([triangle_red_large, square_blue_small, circle_cyan_large]), "
            "stack([circle_yellow_small, square_magenta_large]), in([triangle_green_large])])")
    a = render_to_png_bytes(text, CFG, 7)
    assert a == render_to_png_bytes(from_prolog(text), CFG, 7)
    assert render(text, CFG, 7).tobytes() == Image.open(io.BytesIO(a)).tobytes()
    assert a != render_to_png_bytes(text, CFG, 8)
    # render_job: picklable args, writes the same bytes, no metadata chunks
    out = tmp_path / "x" / "00000.png"
    sym_json = from_prolog(text).to_json()
    assert render_job((sym_json, CFG.to_dict(), 7, None, None, str(out))) == str(out)
    data = out.read_bytes()
    assert data == a
    assert b"tEXt" not in data and b"iTXt" not in data and b"pHYs" not in data
    # explicit flags override the config
    assert render_to_png_bytes(text, CFG, 7, False, False) == render_to_png_bytes(text, QUIET, 7)
    # the generator's worker path (drawing into the PNG row buffer) writes the same bytes
    import hashlib

    from nesybench.kandy.render import render_array, render_chunk
    done = render_chunk((CFG.to_dict(), str(tmp_path), [(sym_json, 7, None, None, "c/a.png"),
                                                        (sym_json, 8, None, None, "c/b.png")]))
    assert (tmp_path / "c" / "a.png").read_bytes() == a
    assert (tmp_path / "c" / "b.png").read_bytes() == render_to_png_bytes(text, CFG, 8)
    assert done == [("c/a.png", hashlib.sha256(a).hexdigest()),
                    ("c/b.png", hashlib.sha256(render_to_png_bytes(text, CFG, 8)).hexdigest())]
    with pytest.raises(NesyError, match="out="):
        render_array(text, CFG, 7, out=np.zeros((4, 4, 3), dtype=np.uint8))


def test_noise_free_render_ignores_seed_without_random():
    text = "stack([circle_red_small, square_blue_large])"
    assert render(text, QUIET, 1).tobytes() == render(text, QUIET, 2).tobytes()


def test_empty_composite_is_background_only():
    img = np.asarray(render(Composite("stack", ()), CFG, seed=0))
    assert (img == 127).all()


@pytest.mark.parametrize("kw", [
    {"canvas": (0, 224)}, {"canvas": (224,)}, {"canvas": (224.0, 224)}, {"background": "grey"},
    {"background": "#12345"}, {"padding": -1}, {"padding": 112}, {"sizes": {}},
    {"sizes": {"small": 0}}, {"sizes": {"Big_one": 3}}, {"size_noise": -1},
    {"size_noise": float("nan")}, {"hsv_sigma": (0.1, 0.2)}, {"hsv_sigma": (0.1, -0.2, 0.2)},
    {"colors": {"red": "#ff00"}}, {"colors": {}}, {"supersample": 0}, {"noisy_color": "yes"},
    {"patience": 0}])
def test_config_validation(kw):
    with pytest.raises(NesyError):
        RenderConfig(**kw)


def test_config_dict_round_trip_and_unknown_keys():
    cfg = RenderConfig(canvas=(100, 80), sizes={"small": 6, "large": 14}, hsv_sigma=(0, 0.1, 0.1))
    assert RenderConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(NesyError, match="unknown render option"):
        RenderConfig.from_dict({"canvas_size": [224, 224]})


def test_bad_symbols_and_seeds():
    with pytest.raises(NesyError, match="colour 'purple'"):
        render(Shape("circle", "purple", "small"), CFG)
    with pytest.raises(NesyError, match="size 'huge'"):
        render(Shape("circle", "red", "huge"), CFG)
    with pytest.raises(NesyError, match="unknown shape"):
        render(Shape("hexagon", "red", "small"), CFG)
    with pytest.raises(NesyError):
        render({"spiral": []}, CFG)
    with pytest.raises(NesyError):
        render("circle_red_small", CFG, seed=-1)


def test_parallel_jobs_give_the_same_bytes(tmp_path):
    from nesybench.parallel import map_ordered

    texts = ["random([triangle_red_large, square_blue_small, circle_cyan_large])",
             "grid([circle_yellow_small, square_magenta_large, triangle_green_small])",
             "quadrant_lr([stack([circle_red_small, circle_blue_small])])"]
    jobs = [(from_prolog(t).to_json(), CFG.to_dict(), 11 + i, True, True,
             str(tmp_path / f"w{{w}}/{i}.png")) for i, t in enumerate(texts)]
    out = {}
    for w in (1, 2):
        paths = list(map_ordered(render_job, [j[:5] + (j[5].format(w=w),) for j in jobs],
                                 workers=w))
        out[w] = [open(p, "rb").read() for p in paths]
    assert out[1] == out[2]
    assert out[1] == [render_to_png_bytes(t, CFG, 11 + i) for i, t in enumerate(texts)]


def _reference_pixels(placed, rgbs, cfg):
    """Straight per-sample loops (the definition) for the vectorised rasteriser."""
    W_, H_ = cfg.canvas
    ss = cfg.supersample
    img = np.zeros((H_, W_, 3), dtype=np.int64)
    img[:, :] = hex_to_rgb(cfg.background)
    s3 = np.sqrt(3.0)
    for (shape, (cx, cy, size)), rgb in zip(placed, rgbs):
        r = size / 2.0
        for py in range(max(0, int(np.floor(cy - r)) - 1), min(H_, int(np.ceil(cy + r)) + 2)):
            for px in range(max(0, int(np.floor(cx - r)) - 1), min(W_, int(np.ceil(cx + r)) + 2)):
                n = 0
                for ky in range(ss):
                    for kx in range(ss):
                        X = (px + (kx + 0.5) / ss) - cx
                        Y = (py + (ky + 0.5) / ss) - cy
                        if shape.shape == "circle":
                            n += X * X + Y * Y <= r * r
                        elif shape.shape == "square":
                            n += abs(X) <= r and abs(Y) <= r
                        else:
                            hh = size * s3 / 4.0
                            n += Y <= hh and s3 * abs(X) <= Y + hh
                a = (n * 255 + ss * ss // 2) // (ss * ss)
                img[py, px] = (img[py, px] * (255 - a) + np.array(rgb) * a + 127) // 255
    return img.astype(np.uint8)


@pytest.mark.parametrize("text,seed,ss", [
    ("random([triangle_red_large, square_blue_small, circle_cyan_large, triangle_green_small])",
     4, 3),
    ("random([triangle_red_large, square_blue_small, circle_cyan_large, triangle_green_small])",
     4, 4),
    ("in([circle_yellow_large, square_magenta_large, triangle_blue_large])", 9, 2),
    ("in([circle_yellow_large, square_magenta_large, triangle_blue_large])", 9, 8),
    ("quadrant_ul([triangle_red_small])", 1, 3),
])
def test_vectorised_rasteriser_equals_per_sample_definition(text, seed, ss):
    from nesybench.kandy.render import render_array
    # small canvas, several supersamplings (word-sum fast paths for 2/4/8, generic for 3),
    # size noise on, colour noise off (exact RGB expected)
    cfg_q = RenderConfig(canvas=(64, 48), padding=0, supersample=ss, noisy_color=False,
                         sizes={"small": 7, "large": 19})
    cfg = cfg_q
    rng = np.random.Generator(np.random.PCG64(seed))
    placed = layout(from_prolog(text), cfg_q, rng)
    rgbs = [hex_to_rgb(cfg.colors[s.color]) for s, _ in placed]
    expected = _reference_pixels(placed, rgbs, cfg_q)
    assert (render_array(text, cfg_q, seed) == expected).all()
    # shapes partly outside the canvas (negative tile origins) are clipped, not wrapped
    edge = [(Shape("circle", "red", "large"), (1.5, 2.25, 19.0)),
            (Shape("triangle", "blue", "large"), (62.7, 47.1, 19.0))]
    canvas = np.empty((48, 64, 3), dtype=np.uint8)
    canvas[:, :] = hex_to_rgb(cfg.background)
    from nesybench.kandy.render import _draw_all
    _draw_all(canvas, edge, [(255, 0, 0), (0, 0, 255)], ss)
    assert (canvas == _reference_pixels(edge, [(255, 0, 0), (0, 0, 255)], cfg_q)).all()


def test_rasteriser_batches_give_the_same_pixels(monkeypatch):
    import nesybench.kandy.render as R
    text = "random([circle_red_large, triangle_blue_small, square_cyan_large, circle_green_small])"
    whole = R.render_array(text, CFG, 21)
    monkeypatch.setattr(R, "_BATCH_SAMPLES", 1)      # one shape per pass
    assert (R.render_array(text, CFG, 21) == whole).all()


#: SHA-256 over the dataset encodings of :func:`_encoder_pictures`, per encoder
#: (``PNG_DEFLATE``). A dataset's PNG bytes must be a function of the pixels and the encoder
#: named in its manifest, on any machine: this digest, computed once and checked wherever the
#: suite runs, catches an encoder whose bytes depend on the CPU or on the process's memory.
#: A new zlib-ng release may change its bytes: add its digest (and say so in the changelog).
ENCODER_DIGESTS = {
    "zlib-ng 2.3.3 level 2": "9bf836531019877b33beb477de5c6dafe723b9980574238b895cd2c629a01905",
}


def _encoder_pictures():
    """24 pictures built with numpy only (so that the digest tests the encoder, not the
    renderer): flat backgrounds, anti-aliased discs, a patch of noise, odd sizes."""
    rng = np.random.default_rng(2026)
    for k in range(24):
        h, w = (224, 224) if k % 3 else (int(rng.integers(1, 300)), int(rng.integers(1, 300)))
        img = np.empty((h, w, 3), dtype=np.uint8)
        img[:] = rng.integers(0, 256, 3, dtype=np.uint8)
        yy, xx = np.mgrid[0:h, 0:w]
        for _ in range(int(rng.integers(0, 8))):
            cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(2, 40)
            alpha = np.clip(r - np.hypot(yy - cy, xx - cx), 0, 1)[..., None]
            img[:] = (img * (1 - alpha) + rng.integers(0, 256, 3) * alpha).round().astype(np.uint8)
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        patch = img[y0:y0 + 9, x0:x0 + 13]
        patch[:] = rng.integers(0, 256, patch.shape, dtype=np.uint8)
        yield img


def test_dataset_png_bytes_are_a_function_of_pixels_and_encoder():
    import hashlib

    import nesybench.kandy.render as R

    assert R.PNG_DEFLATE in ENCODER_DIGESTS, (
        f"no recorded digest for the encoder {R.PNG_DEFLATE!r}: a dataset written with it "
        "cannot be checked against one written elsewhere")
    digest = hashlib.sha256()
    for img in _encoder_pictures():
        data = R.encode_png(img)
        assert (np.asarray(Image.open(io.BytesIO(data))) == img).all()
        digest.update(data)
    assert digest.hexdigest() == ENCODER_DIGESTS[R.PNG_DEFLATE]


def test_png_encoder_round_trips_through_pillow():
    from nesybench.kandy.render import encode_png, render_array
    px = render_array("grid([circle_red_large, square_blue_small, triangle_cyan_large])", CFG, 5)
    data = encode_png(px)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    img = Image.open(io.BytesIO(data))
    img.load()
    assert img.mode == "RGB" and img.size == (W, H) and img.info == {}
    assert (np.asarray(img) == px).all()
    odd = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
    assert (np.asarray(Image.open(io.BytesIO(encode_png(odd, level=9)))) == odd).all()
    with pytest.raises(NesyError, match="uint8"):
        encode_png(odd.astype(np.int16))


def _inside(placed, cfg) -> bool:
    W, H = cfg.canvas
    return all(cx - s / 2 >= 0 and cy - s / 2 >= 0 and cx + s / 2 <= W and cy + s / 2 <= H
               for _, (cx, cy, s) in placed)


def test_tower_at_the_edge_stays_inside_and_whole():
    """Regression: three large squares stacked in a 1/7-height row at the top
    edge left the canvas in format 1.0; now the tower is moved inward as one group."""
    cfg = RenderConfig(noisy_size=False, noisy_color=False)
    sym = "stack([stack([square_red_large, square_red_large, square_red_large]), " + \
          ", ".join(["circle_blue_small"] * 6) + "])"
    placed = layout(sym, cfg)
    assert _inside(placed, cfg)
    ys = sorted(c[1] for s, c in placed if s.shape == "square")
    assert ys[0] - 12.5 >= 0
    # the tower keeps its inner layout: equal steps between its three squares
    assert ys[1] - ys[0] == pytest.approx(ys[2] - ys[1])


@pytest.mark.parametrize("curriculum", ["easy.yaml", "hard.yaml"])
def test_no_shape_leaves_the_canvas_in_shipped_curricula(tmp_path, curriculum):
    """Every sample of every task of the shipped curricula (as generated, with the dataset's
    per-sample render seeds and size noise): every shape's bounding box lies in the canvas.
    Format 1.0 failed this on 325 of the 1,800 Hard samples."""
    import json
    from pathlib import Path

    from nesybench.io import derive_seed
    from nesybench.kandy.generate import generate, read_annotations, render_config_from
    from nesybench.kandy.language import load_curriculum

    src = Path(__file__).resolve().parents[1] / "curricula" / "kandy" / curriculum
    out = tmp_path / "ds"
    generate(src, out, images=False)
    man = json.loads((out / "manifest.json").read_text())
    cfg = render_config_from(load_curriculum(src))
    tasks = {t["id"]: t for t in man["tasks"]}
    n, bad = 0, []
    for split in ("train", "val", "test"):
        for row in read_annotations(out, split):
            t = tasks[int(row["task_id"])]
            index = int(row["filename"].split("/")[1][:5])
            rng = np.random.Generator(np.random.PCG64(
                derive_seed(t["seed"], "render", split, index)))
            placed = layout(row["prolog"], cfg, rng, t["noisy_size"])
            n += 1
            if not _inside(placed, cfg):
                bad.append((t["id"], row["prolog"]))
    assert n == sum(t["samples"] for t in man["tasks"])
    assert bad == []


def test_batch_rendering_gives_each_picture_its_own_pixels():
    import nesybench.kandy.render as R
    texts = ["random([circle_red_large, triangle_blue_large, square_cyan_large, "
             "circle_green_small])",
             "in([circle_yellow_large, square_magenta_large, triangle_blue_large])",
             "stack([])",                                      # no shape at all
             "grid([triangle_red_small, square_blue_small, circle_cyan_large, "
             "triangle_green_large, square_red_large])",
             "quadrant_lr([triangle_red_small])"]
    # no padding and shapes as large as the canvas: tiles overhang the canvas on every side
    tight = RenderConfig(canvas=(40, 32), padding=0, sizes={"small": 9, "large": 31})
    for cfg in (CFG, tight):
        items = [(t, 30 + i, None, None) for i, t in enumerate(texts)]
        batch = R.render_batch(items, cfg)
        assert batch.shape == (len(texts), cfg.canvas[1], cfg.canvas[0], 3)
        for i, (text, seed, _, _) in enumerate(items):
            assert (batch[i] == R.render_array(text, cfg, seed)).all()
        # a reused canvas buffer: the next batch (smaller here) overwrites it completely
        scratch = []
        first = R.render_batch(items, cfg, scratch=scratch).copy()
        again = R.render_batch(items[::-1][:3], cfg, scratch=scratch)
        assert (first == batch).all() and (again == batch[::-1][:3]).all()


def test_write_pngs_encodes_any_strided_pixels(tmp_path):
    import hashlib

    import nesybench.kandy.render as R
    items = [("grid([circle_red_large, square_blue_small])", s, None, None) for s in (1, 2)]
    pixels = R.render_batch(items, CFG)[:, :, ::-1]     # mirrored: a strided view
    assert not pixels.flags.c_contiguous
    done = R.write_pngs(pixels, tmp_path, ["a/1.png", "b/2.png"])
    for (rel, digest), px in zip(done, pixels):
        data = (tmp_path / rel).read_bytes()
        assert data == R.encode_png(np.ascontiguousarray(px))
        assert digest == hashlib.sha256(data).hexdigest()
        assert (np.asarray(Image.open(io.BytesIO(data))) == px).all()


@given(st.lists(st.tuples(st.sampled_from(sorted(DEFAULT_COLORS.values()) + ["#000000", "#ffffff",
                                                                           "#808080", "#ff0001"]),
                          st.floats(-40, 40, allow_nan=False),
                          st.floats(-40, 40, allow_nan=False),
                          st.floats(-40, 40, allow_nan=False)), min_size=1, max_size=30),
       st.tuples(st.sampled_from([0.0, 0.01, 0.025, 0.2, 1.0]),
                 st.sampled_from([0.0, 0.05, 0.3]), st.sampled_from([0.0, 0.05, 0.3])))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_vectorised_colour_noise_equals_the_scalar_form(cases, sigma):
    """The batch's colour noise (one numpy pass) gives exactly colorsys' per-leaf values,
    hue wrap-around, clipped saturation/value and round-half-even included."""
    from nesybench.kandy.render import _hsv_jitter, _hsv_jitter_many
    rgbs = [hex_to_rgb(c) for c, *_ in cases]
    z = np.array([zs for _, *zs in cases], dtype=np.float64)
    many = _hsv_jitter_many(rgbs, sigma, z).tolist()
    assert many == [list(_hsv_jitter(rgb, sigma, zz)) for rgb, zz in zip(rgbs, z)]


def test_vectorised_colour_noise_edge_values():
    from nesybench.kandy.render import _hsv_jitter, _hsv_jitter_many
    # hue landing just below 0 (wraps to 1.0 after rounding), exactly on sector bounds,
    # grey (s = 0), and values that round half to even
    rgbs = [(255, 0, 0), (255, 0, 0), (128, 128, 128), (0, 255, 0), (255, 255, 0), (1, 2, 3)]
    z = np.array([[-1e-18, 0, 0], [1 / 6 / 0.025, 0, 0], [3.0, 0.0, 0.0],
                  [0.0, -50, 0], [0.0, 0.0, 50], [0.5 / 0.025, 0.5 / 0.3, 0.5 / 0.3]])
    sigma = (0.025, 0.3, 0.3)
    assert _hsv_jitter_many(rgbs, sigma, z).tolist() == \
        [list(_hsv_jitter(rgb, sigma, zz)) for rgb, zz in zip(rgbs, z)]


# -- the fast rasteriser against the per-sample reference (tests/kandy_raster_reference.py) ----

def _raster_reference():
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).parent))
    import kandy_raster_reference  # noqa: PLC0415
    return kandy_raster_reference


def _on_samples(ss):
    """Coordinates (pixels) that lie exactly on a sample, or halfway between two samples, of
    a ``ss``-times supersampled grid, or on a pixel corner or centre."""
    return st.builds(lambda p, k: p + k / (2 * ss), st.integers(-4, 70),
                     st.integers(0, 2 * ss - 1))


_CENTRES = st.integers(1, 8).flatmap(lambda ss: st.tuples(st.just(ss), st.one_of(
    _on_samples(ss), st.floats(-6.0, 75.0, allow_nan=False, width=64),
    st.integers(-6, 75).map(float))))

_SIZES = st.one_of(st.integers(1, 60).map(float), st.floats(1.0, 60.0),
                   st.sampled_from([10.5, 24.999999, 25.000001, 1.0, 2.5, 59.75]),
                   st.integers(2, 120).map(lambda k: k / 2))


@st.composite
def _shape_rows(draw, ss=None):
    """One kind, supersampling and 1-6 shapes (centre x, centre y, size) of a coverage pass;
    sizes may also be chosen so that the outline passes exactly through samples."""
    ss = ss or draw(st.integers(1, 8))
    kind = draw(st.sampled_from(["circle", "square", "triangle"]))
    geoms = []
    for _ in range(draw(st.integers(1, 6))):
        cx = draw(st.one_of(_on_samples(ss), st.floats(-6.0, 75.0), st.integers(0, 70)))
        cy = draw(st.one_of(_on_samples(ss), st.floats(-6.0, 75.0), st.integers(0, 70)))
        size = draw(st.one_of(_SIZES, st.integers(1, 8 * ss * 8).map(lambda k: k / ss)))
        geoms.append((float(cx), float(cy), float(size)))
    return kind, ss, geoms


def _tiles(geoms):
    """Tile origins and sides as :func:`render._draw_batch` sizes them."""
    g = np.array(geoms, dtype=np.float64).reshape(-1, 3)
    r = g[:, 2] / 2.0
    x0, y0 = np.floor(g[:, 0] - r) - 1, np.floor(g[:, 1] - r) - 1
    need = np.maximum(np.ceil(g[:, 0] + r) + 1 - x0, np.ceil(g[:, 1] + r) + 1 - y0)
    return g, x0, y0, -(-need.astype(np.int64) // 4) * 4


@settings(max_examples=300, deadline=None)
@given(_shape_rows())
def test_coverages_equal_the_per_sample_reference(case):
    """Circles and triangles counted from runs of inside samples, squares separably: every
    pixel's alpha equals the reference's test of every sample, for centres on and between
    samples and sizes whose outline passes exactly through samples."""
    import nesybench.kandy.render as R
    ref = _raster_reference()
    kind, ss, geoms = case
    g, x0, y0, tile = _tiles(geoms)
    t = int(tile.max())                     # the largest tile holds every shape of the pass
    args = (kind, g[:, 0], g[:, 1], g[:, 2], x0, y0, t, ss)
    got = R._coverages(*args)
    assert got.dtype == np.uint16 and got.shape == (len(geoms), t, t)
    assert (got == ref.coverages(*args)).all()


@settings(max_examples=100, deadline=None)
@given(_shape_rows(), st.integers(0, 2 ** 32 - 1))
def test_run_ends_that_miss_are_found_by_testing_every_sample(case, seed):
    """Estimates of the run ends that are off by a few samples (as float rounding could make
    them, right at a sample) are caught by the inside test and the row is tested at every
    sample: the pixels stay those of the reference."""
    import nesybench.kandy.render as R
    ref = _raster_reference()
    kind, ss, geoms = case
    g, x0, y0, tile = _tiles(geoms)
    t = int(tile.max())
    args = (kind, g[:, 0], g[:, 1], g[:, 2], x0, y0, t, ss)
    true_estimates = R._run_estimates
    rng = np.random.default_rng(seed)

    def off(*a):
        est = true_estimates(*a)
        return est + rng.integers(-2, 3, est.shape) * (rng.random(est.shape) < 0.3)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(R, "_run_estimates", off)
        got = R._coverages(*args)
    assert (got == ref.coverages(*args)).all()


def _batch_from(geoms_per_picture, rgbs):
    import nesybench.kandy.render as R
    shapes = R._Shapes()
    for b, placed in enumerate(geoms_per_picture):
        shapes.add(b, [(Shape(kind, "red", "small"), geom) for kind, geom in placed],
                   rgbs[b][:len(placed)])
    return shapes


@st.composite
def _pictures(draw, canvas=(40, 32)):
    """1-4 pictures of 0-7 shapes each, anywhere on (and around) a small canvas, with sizes
    up to 60 px (tiles overhang every edge), random colours, and one supersampling."""
    W_, H_ = canvas
    ss = draw(st.integers(1, 8))
    pics, rgbs = [], []
    for _ in range(draw(st.integers(1, 4))):
        placed = []
        for _ in range(draw(st.integers(0, 7))):
            kind = draw(st.sampled_from(["circle", "square", "triangle"]))
            cx = draw(st.one_of(_on_samples(ss).filter(lambda v: -30 < v < W_ + 30),
                                st.floats(-30.0, W_ + 30.0)))
            cy = draw(st.one_of(_on_samples(ss).filter(lambda v: -30 < v < H_ + 30),
                                st.floats(-30.0, H_ + 30.0)))
            placed.append((kind, (float(cx), float(cy), float(draw(_SIZES)))))
        pics.append(placed)
        rgbs.append([tuple(draw(st.integers(0, 255)) for _ in range(3)) for _ in placed])
    return ss, pics, rgbs


@settings(max_examples=150, deadline=None)
@given(_pictures(), st.sampled_from([(127, 127, 127), (0, 0, 0), (255, 255, 255), "array"]))
def test_draw_batch_equals_the_reference_drawing(case, base):
    """Whole batches (layers, tile sizes, tiles overhanging the canvas, a background colour
    or per-picture starting pixels) composite to the reference's pixels."""
    import nesybench.kandy.render as R
    ref = _raster_reference()
    ss, pics, rgbs = case
    B, H_, W_ = len(pics), 32, 40
    if base == "array":
        base = np.random.default_rng(len(pics)).integers(0, 256, (B, H_, W_, 3), dtype=np.uint8)
    work, m = R._draw_batch((B, H_, W_), base, _batch_from(pics, rgbs), ss)
    want, mr = ref.draw_batch((B, H_, W_), base, _batch_from(pics, rgbs), ss)
    assert (work[:, m:m + H_, m:m + W_] == want[:, mr:mr + H_, mr:mr + W_]).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_pictures(), st.sampled_from([(127, 127, 127), (10, 200, 30),
                                                         "array"])), min_size=2, max_size=5))
def test_a_reused_canvas_buffer_gives_every_batch_its_own_pixels(batches):
    """A scratch buffer carried from batch to batch (more or fewer pictures, wider or
    narrower margins, another background, starting pixels given) only has the previous
    batch's tiles reset, yet every batch equals a fresh reference drawing."""
    import nesybench.kandy.render as R
    ref = _raster_reference()
    scratch: list = []
    H_, W_ = 32, 40
    for (ss, pics, rgbs), base in batches:
        B = len(pics)
        if base == "array":
            base = np.random.default_rng(B).integers(0, 256, (B, H_, W_, 3), dtype=np.uint8)
        work, m = R._draw_batch((B, H_, W_), base, _batch_from(pics, rgbs), ss, scratch)
        want, mr = ref.draw_batch((B, H_, W_), base, _batch_from(pics, rgbs), ss)
        assert (work[:, m:m + H_, m:m + W_] == want[:, mr:mr + H_, mr:mr + W_]).all()


@pytest.mark.parametrize("noisy", [True, False])
def test_curriculum_pictures_equal_the_reference_drawing(noisy, monkeypatch):
    """Pictures of the Hard curriculum's first tasks, drawn by :func:`render_batch` in
    batches through one reused buffer, equal the reference drawing pixel for pixel (with
    the dataset's size noise, and without it: integer sizes, centres on sample positions)."""
    from pathlib import Path

    import nesybench.kandy.generate as g
    import nesybench.kandy.render as R
    from nesybench.kandy.language import load_curriculum
    ref = _raster_reference()
    cur = load_curriculum(Path(__file__).resolve().parents[1] / "curricula/kandy/hard.yaml")
    sel = g._select(cur, None, 1000)[:4]
    jobs = [j[:4] for t in sel
            for j in g._draw_task((t, cur.domain, cur.source,
                                   g.derive_seed(12345, "task", t.index)))[2]]
    cfg = g.render_config_from(cur)
    if not noisy:
        cfg = RenderConfig.from_dict({**cfg.to_dict(), "noisy_size": False,
                                      "noisy_color": False})
        jobs = [(sym, seed, False, False) for sym, seed, _, _ in jobs]
    scratch: list = []
    got = [R.render_batch(jobs[k:k + 50], cfg, scratch=scratch).copy()
           for k in range(0, len(jobs), 50)]
    monkeypatch.setattr(R, "_draw_batch", ref.draw_batch)
    want = [R.render_batch(jobs[k:k + 50], cfg) for k in range(0, len(jobs), 50)]
    assert len(jobs) >= 100
    assert all((a == b).all() for a, b in zip(got, want))


def test_a_reused_canvas_buffer_through_more_then_fewer_pictures():
    """One margin: 3 pictures on grey, then on white 1 picture (the buffer, big enough for
    3, filled anew), 3 (two of them filled in the buffer), 1 and 2: the tiles drawn in every
    picture the buffer holds are reset."""
    import nesybench.kandy.render as R
    ref = _raster_reference()
    H_, W_ = 32, 40
    shapes = [("circle", (10.3, 12.0, 9.5)), ("triangle", (30.0, 20.125, 14.0)),
              ("square", (20.5, 8.0, 11.0))]
    scratch: list = []
    for B, base in ((3, (127, 127, 127)), (1, (255, 255, 255)), (3, (255, 255, 255)),
                    (1, (255, 255, 255)), (2, (255, 255, 255))):
        pics = [shapes[b:] + shapes[:b] for b in range(B)]
        rgbs = [[(200, 10 * b, 90), (0, 255, 30), (40, 40, 250)] for b in range(B)]
        work, m = R._draw_batch((B, H_, W_), base, _batch_from(pics, rgbs), 4, scratch)
        want, mr = ref.draw_batch((B, H_, W_), base, _batch_from(pics, rgbs), 4)
        assert (work[:, m:m + H_, m:m + W_] == want[:, mr:mr + H_, mr:mr + W_]).all()


def test_size_and_position_noise_are_numpys_uniform_draws():
    """Layout draws U(lo, hi) as lo + (hi − lo)·random(): the value numpy's uniform(lo, hi)
    gives from the same stream (checked here over many draws and bounds, so a numpy build
    that computed it otherwise would be caught), and leaf sizes follow in drawing order."""
    a, b = np.random.Generator(np.random.PCG64(11)), np.random.Generator(np.random.PCG64(11))
    for lo, hi in ((-2.0, 2.0), (-0.5, 0.5), (3.25, 170.7), (-1e-3, 7.1), (0.0, 1e-300)):
        xs = [float(a.uniform(lo, hi)) for _ in range(20000)]
        assert xs == [lo + (hi - lo) * b.random() for _ in range(20000)]
    sym = from_prolog("side_by_side([stack([triangle_red_small, square_blue_large]), "
                      "circle_green_small, grid([circle_red_large, square_red_small])])")
    cfg = RenderConfig()
    placed = layout(sym, cfg, np.random.Generator(np.random.PCG64(5)), noisy_size=True)
    g = np.random.Generator(np.random.PCG64(5))
    want = [max(1.0, float(cfg.sizes[s.size]) + float(g.uniform(-cfg.size_noise,
                                                                   cfg.size_noise)))
            for s, _ in placed]
    assert [p[2] for _, p in placed] == want
