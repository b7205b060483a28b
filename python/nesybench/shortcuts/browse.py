"""A static HTML browser for a generated reasoning-shortcut data set (``rs generate``).

:func:`write_browser` writes ``index.html`` (inline CSS and JavaScript, no network) and
``data.js`` (the samples as one JavaScript assignment, so the page works from ``file://``).
Pictures are referenced by paths relative to the browser folder (default ``DATASET/browse``).
The data set is read with :func:`nesybench.data.load_folder` (paths stay inside the folder,
regular files only, checksums checked).

Page: filters by split and by label vector; one card per picture with its labels, its concept
values (for Boolean concepts the names of those that hold) and, for a ``render: blender`` data
set, the annotated objects drawn as boxes over the picture (hover a box for its object).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import NesyError
from ..folder import json_loads
from ..io import write_static_browser


#: driving-scene elements without a box on the page
LONG = ("dashed_line", "solid_line", "wall")


def browser_data(dataset_dir, out_dir) -> dict:
    """What ``data.js`` holds: ``labels``, ``concepts`` (names), ``splits`` and ``samples``
    rows ``{split, image (relative to out_dir), labels [..], concepts [..], size [w, h] | None,
    boxes [[x0, y0, x1, y1, text], ...]}``."""
    from ..data import load_folder  # noqa: PLC0415
    root = Path(dataset_dir).resolve()
    out = Path(out_dir).resolve()
    data = load_folder(root)
    if data.kind != "rs":
        raise NesyError(f"not a reasoning-shortcut data set (a {data.kind} data set; "
                        f"`kandy browse` shows KANDY curricula)", file=str(root))
    enc = data.meta["encodings"]
    label_cols = [c["column"] for c in enc["labels"]]
    concept_cols = [c["column"] for c in enc["concepts"]]
    samples = []
    for split, rows in data.rows_by_split.items():
        for r in rows:
            boxes, size = [], None
            if r.get("scene"):
                try:
                    ann = json_loads(r["scene"])
                    size = [float(v) for v in ann["render"]["resolution"]]
                    if len(size) != 2 or not all(0 < v < 1e5 for v in size):
                        raise ValueError(size)
                    for o in ann.get("objects", []):
                        # lane lines and walls run the length of the road: no box
                        if o.get("bbox") and o.get("kind") not in LONG:
                            text = o.get("concept") or " ".join(
                                str(o[k]) for k in ("size", "color", "material", "shape")
                                if k in o)
                            box = [float(v) for v in o["bbox"]]
                            if len(box) != 4 or not all(abs(v) < 1e5 for v in box):
                                raise ValueError(box)
                            boxes.append([*box, str(text)])
                except (ValueError, KeyError, TypeError):
                    raise NesyError("unreadable scene annotation",
                                    file=str(root / Path(r["image"]).with_suffix(".json"))
                                    ) from None
            rel = Path(os.path.relpath(root / r["image"], out)).as_posix()
            samples.append({"split": split, "image": rel,
                            "labels": [r[c] for c in label_cols],
                            "concepts": [r[c] for c in concept_cols],
                            "size": size, "boxes": boxes})
    return {"title": root.name, "task": data.meta["spec"].get("task"),
            "render": data.meta["spec"].get("render"),
            "labels": [c["name"] for c in enc["labels"]],
            "concepts": [c["name"] for c in enc["concepts"]],
            "splits": list(data.rows_by_split), "samples": samples}


def write_browser(dataset_dir, out_dir=None, *, overwrite: bool = False) -> Path:
    """Write the browser of ``dataset_dir`` into ``out_dir`` (default ``dataset_dir/browse``,
    replaced when a previous browser is there; an explicit ``out_dir`` only with
    ``overwrite``), atomically, and return the path of its ``index.html``."""
    return write_static_browser(dataset_dir, out_dir, overwrite=overwrite,
                                build_data=browser_data,
                                variable="RS_BROWSER_DATA", html=_HTML)


_HTML = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>RS data set browser</title>
<style>
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
         color: #111827; background: #f6f7f9; }
  header { padding: 10px 16px; background: #1f2937; color: #fff; display: flex; gap: 16px;
           align-items: baseline; flex-wrap: wrap; }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { color: #cbd5e1; font-size: 12px; }
  .filters { padding: 8px 16px; display: flex; gap: 12px; align-items: center;
             border-bottom: 1px solid #e5e7eb; background: #fff; flex-wrap: wrap; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr));
          gap: 12px; padding: 12px 16px; }
  .card { background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 8px; }
  .pic { position: relative; width: 100%; }
  .pic img { width: 100%; image-rendering: pixelated; display: block; }
  .pic svg { position: absolute; left: 0; top: 0; width: 100%; height: 100%; }
  .pic rect { fill: none; stroke: #facc15; stroke-width: 1; vector-effect: non-scaling-stroke; }
  .pic rect:hover { stroke: #ef4444; stroke-width: 2; }
  .hide-boxes .pic svg { display: none; }
  .meta2 { color: #6b7280; font-size: 12px; margin-top: 4px; word-break: break-word; }
  .lab { font-weight: 600; }
</style>
</head>
<body>
<header><h1 id="title"></h1><span class="meta" id="meta"></span></header>
<div class="filters">
  <label>split <select id="split"></select></label>
  <label>labels <select id="label"></select></label>
  <label><input type="checkbox" id="boxes" checked> boxes</label>
  <span class="meta2" id="count"></span>
</div>
<div class="grid" id="grid"></div>
<script src="data.js"></script>
<script>
(function () {
  var D = window.RS_BROWSER_DATA;
  function el(tag, text) { var e = document.createElement(tag); if (text !== undefined) e.textContent = text; return e; }
  document.getElementById("title").textContent = D.title;
  document.getElementById("meta").textContent = "task " + D.task + " · render " + D.render +
    " · " + D.samples.length + " pictures";
  var split = document.getElementById("split"), label = document.getElementById("label");
  function opt(sel, v, t) { var o = el("option", t); o.value = v; sel.appendChild(o); }
  opt(split, "", "all"); D.splits.forEach(function (s) { opt(split, s, s); });
  var keys = {};
  D.samples.forEach(function (s) { keys[s.labels.join(",")] = 1; });
  opt(label, "", "all");
  Object.keys(keys).sort().forEach(function (k) { opt(label, k, D.labels.map(function (n, i) { return n + "=" + k.split(",")[i]; }).join(" ")); });
  var boolean = D.samples.length && D.samples.every(function (s) { return s.concepts.every(function (v) { return v === 0 || v === 1; }); });
  function concepts(s) {
    if (boolean) return D.concepts.filter(function (n, i) { return s.concepts[i] === 1; }).join(", ") || "(none)";
    return D.concepts.map(function (n, i) { return n + "=" + s.concepts[i]; }).join(" ");
  }
  function draw() {
    var grid = document.getElementById("grid"); grid.innerHTML = "";
    var shown = D.samples.filter(function (s) {
      return (!split.value || s.split === split.value) && (!label.value || s.labels.join(",") === label.value);
    });
    document.getElementById("count").textContent = shown.length + " shown";
    shown.slice(0, 600).forEach(function (s) {
      var card = el("div"); card.className = "card";
      var pic = el("div"); pic.className = "pic";
      var img = el("img"); img.src = s.image; img.alt = s.image; pic.appendChild(img);
      if (s.size && s.boxes.length) {
        var ns = "http://www.w3.org/2000/svg", svg = document.createElementNS(ns, "svg");
        svg.setAttribute("viewBox", "0 0 " + s.size[0] + " " + s.size[1]);
        s.boxes.forEach(function (b) {
          var r = document.createElementNS(ns, "rect");
          r.setAttribute("x", b[0]); r.setAttribute("y", b[1]);
          r.setAttribute("width", b[2] - b[0]); r.setAttribute("height", b[3] - b[1]);
          var t = document.createElementNS(ns, "title"); t.textContent = b[4]; r.appendChild(t);
          svg.appendChild(r);
        });
        pic.appendChild(svg);
      }
      card.appendChild(pic);
      var l = el("div", D.labels.map(function (n, i) { return n + "=" + s.labels[i]; }).join(" "));
      l.className = "lab"; card.appendChild(l);
      var c = el("div", concepts(s)); c.className = "meta2"; card.appendChild(c);
      var f = el("div", s.split + " · " + s.image); f.className = "meta2"; card.appendChild(f);
      grid.appendChild(card);
    });
  }
  split.onchange = draw; label.onchange = draw;
  document.getElementById("boxes").onchange = function () {
    document.body.classList.toggle("hide-boxes", !this.checked);
  };
  draw();
})();
</script>
</body>
</html>
"""
