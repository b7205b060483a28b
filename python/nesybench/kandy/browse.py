"""A static HTML browser for a generated KANDY curriculum (docs/formats/kandy-dataset.md).

:func:`write_browser` writes ``index.html`` (inline CSS and JavaScript, no network, no CDN) and
``data.js`` (the dataset's tasks and samples as one JavaScript assignment, so the page works
when opened from ``file://``, where ``fetch`` of local JSON is blocked). Images are referenced
by paths relative to the browser folder, so the browser must stay next to the dataset (the
default ``DATASET/browse`` does).

Page: a task list (name, sample counts) with an "all tasks" entry; for the selected task its
ground-truth rule; filters by split, label and supervision; sample cards with the image, the
label, the supervision flag, the split, the file name and the symbolic tree as a nested list.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import NesyError
from ..folder import json_loads
from ..io import write_static_browser
from .show import SPLITS, read_dataset, task_info
from .symbols import from_json


def _prolog_of(row: dict) -> str:
    text = (row.get("prolog") or "").strip()
    if text:
        return text
    try:
        return from_json(json_loads(row["symbol"])).to_prolog()
    except (ValueError, KeyError, TypeError) as exc:
        raise NesyError(f"sample {row.get('filename')!r}: unreadable symbol ({exc})") from None


def browser_data(dataset_dir, out_dir) -> dict:
    """The data the page shows (what ``data.js`` holds), image paths relative to ``out_dir``.

    ``samples`` rows are compact arrays ``[task, split index, label, supervised, image,
    prolog]`` (split index into ``splits``).
    """
    root = Path(dataset_dir).resolve()
    out = Path(out_dir).resolve()
    manifest, rows = read_dataset(root)
    info = task_info(manifest, root)
    samples = []
    counts: dict[int, dict] = {}
    for r in rows:
        tid = int(r["task_id"])
        label, sup = int(r["label"]), int(r["supervised"])
        rel = Path(os.path.relpath(r["path"], out)).as_posix()
        samples.append([tid, SPLITS.index(r["split"]), label, sup, rel, _prolog_of(r)])
        c = counts.setdefault(tid, {"total": 0, "positives": 0, "negatives": 0, "supervised": 0})
        c["total"] += 1
        c["positives" if label == 1 else "negatives"] += 1
        c["supervised"] += sup
    tasks = []
    for tid in sorted(set(counts) | set(info)):
        t = info.get(tid, {})
        tasks.append({"id": tid, "name": t.get("name", ""), "rule": t.get("rule", ""),
                      "counts": counts.get(tid, {"total": 0, "positives": 0, "negatives": 0,
                                                 "supervised": 0})})
    return {
        "title": root.name,
        "format": manifest.get("format", ""),
        "version": manifest.get("version", ""),
        "seed": manifest.get("seed"),
        "splits": list(SPLITS),
        # False for a dataset generated with --no-images: the page says so instead of
        # showing broken images
        "images": bool((manifest.get("config") or {}).get("images", True)),
        "tasks": tasks,
        "samples": samples,
    }


def write_browser(dataset_dir, out_dir=None, *, overwrite: bool = False) -> Path:
    """Write the browser of ``dataset_dir`` into ``out_dir`` (default ``dataset_dir/browse``,
    written atomically) and return the path of its ``index.html``.

    The default folder is replaced when a previous browser is there; an explicit ``out_dir``
    only with ``overwrite`` (and never when it is not empty and not a nesybench output, or
    when it is or contains the dataset: see :func:`nesybench.io.atomic_output_dir`)."""
    return write_static_browser(dataset_dir, out_dir, overwrite=overwrite,
                                build_data=browser_data,
                                variable="KANDY_BROWSER_DATA", html=_HTML)


_HTML = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>KANDY browser</title>
<style>
  :root { --pos: #2e8b46; --neg: #c0392b; --muted: #6b7280; --line: #e5e7eb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
         color: #111827; background: #f6f7f9; }
  header { padding: 10px 16px; background: #1f2937; color: #fff; display: flex;
           align-items: baseline; gap: 16px; }
  header h1 { font-size: 18px; margin: 0; }
  header .meta { color: #cbd5e1; font-size: 12px; }
  .layout { display: flex; min-height: calc(100vh - 44px); }
  nav { width: 270px; flex: none; border-right: 1px solid var(--line); background: #fff;
        overflow-y: auto; max-height: calc(100vh - 44px); position: sticky; top: 0; }
  nav ul { list-style: none; margin: 0; padding: 0; }
  nav li { padding: 7px 12px; border-bottom: 1px solid var(--line); cursor: pointer; }
  nav li:hover { background: #f3f4f6; }
  nav li.active { background: #dbeafe; }
  nav .tname { font-weight: 600; }
  nav .tcount { color: var(--muted); font-size: 12px; }
  main { flex: 1; padding: 12px 16px; min-width: 0; }
  #rule { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
          font: 12px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap;
          max-height: 220px; overflow: auto; margin: 0 0 10px; }
  #rule:empty { display: none; }
  .filters { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; margin-bottom: 10px; }
  .filters label { color: var(--muted); }
  .filters select { margin-left: 4px; }
  #summary { font-weight: 600; }
  #cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(190px, 1fr)); gap: 10px; }
  .card { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px;
          border-top: 4px solid var(--muted); }
  .card.pos { border-top-color: var(--pos); }
  .card.neg { border-top-color: var(--neg); }
  .card img { width: 100%; aspect-ratio: 1 / 1; image-rendering: auto; display: block;
              background: #7f7f7f; border-radius: 3px; }
  .badges { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0 4px; }
  .badge { font-size: 11px; padding: 1px 6px; border-radius: 9px; background: #e5e7eb; }
  .badge.pos { background: #d1fae5; color: #065f46; }
  .badge.neg { background: #fee2e2; color: #991b1b; }
  .badge.sup { background: #e0e7ff; color: #3730a3; }
  .fname { color: var(--muted); font-size: 11px; word-break: break-all; }
  ul.tree { margin: 4px 0 0; padding-left: 14px; font-size: 12px; }
  ul.tree ul { padding-left: 14px; margin: 0; }
  ul.tree li { margin: 0; }
  .op { font-weight: 600; color: #374151; }
  .sw { display: inline-block; width: 9px; height: 9px; border-radius: 2px; margin-right: 4px;
        vertical-align: baseline; border: 1px solid #0003; }
  #more { margin: 12px 0; }
  .empty { color: var(--muted); padding: 20px 0; }
</style>
</head>
<body>
<header><h1 id="title">KANDY browser</h1><span class="meta" id="meta"></span></header>
<p id="no-images" hidden style="margin:0;padding:8px 16px;background:#fff7d6;border-bottom:1px solid #e5e7eb">
This data set was generated with <code>--no-images</code>: samples are shown as Prolog terms only
(regenerate without <code>--no-images</code> to see the pictures).</p>
<div class="layout">
  <nav><ul id="task-list"></ul></nav>
  <main>
    <h2 id="task-title" style="margin:4px 0 8px;font-size:17px"></h2>
    <pre id="rule"></pre>
    <div class="filters">
      <label>split<select id="f-split"><option value="">all</option></select></label>
      <label>label<select id="f-label"><option value="">all</option>
        <option value="1">positive</option><option value="0">negative</option></select></label>
      <label>supervised<select id="f-supervised"><option value="">all</option>
        <option value="1">yes</option><option value="0">no</option></select></label>
      <span id="summary"><span id="count">0</span> samples</span>
    </div>
    <div id="cards"></div>
    <button id="more" type="button" hidden>show more</button>
  </main>
</div>
<noscript>This page needs JavaScript.</noscript>
<script src="data.js"></script>
<script>
(function () {
  "use strict";
  var D = window.KANDY_BROWSER_DATA;
  if (D.images === false) { document.getElementById("no-images").hidden = false; }
  var PAGE = 120;
  var COLORS = { red: "#ff0000", green: "#00ff00", blue: "#0000ff", cyan: "#00ffff",
                 magenta: "#ff00ff", yellow: "#ffff00" };
  var state = { task: null, split: "", label: "", supervised: "", shown: PAGE };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  if (!D) { document.body.appendChild(el("p", "empty", "data.js is missing.")); return; }

  // Parse the natural Prolog encoding: op([child, ...]) or shape_color_size.
  function parse(text) {
    var i = 0;
    function ws() { while (i < text.length && text[i] === " ") i++; }
    function node() {
      ws();
      var s = i;
      while (i < text.length && /[A-Za-z0-9_]/.test(text[i])) i++;
      var name = text.slice(s, i);
      if (text.slice(i, i + 2) === "([") {
        i += 2;
        var kids = [];
        ws();
        while (i < text.length && text[i] !== "]") {
          kids.push(node()); ws();
          if (text[i] === ",") i++;
          ws();
        }
        i += 2; // "])"
        return { op: name, kids: kids };
      }
      var p = name.split("_");
      return { shape: p[0], color: p[1], size: p[2] };
    }
    return node();
  }
  function tree(n) {
    var li = el("li");
    if (n.op !== undefined) {
      li.appendChild(el("span", "op", n.op));
      var ul = el("ul");
      n.kids.forEach(function (k) { ul.appendChild(tree(k)); });
      li.appendChild(ul);
    } else {
      var sw = el("span", "sw");
      sw.style.background = COLORS[n.color] || "#999";
      li.appendChild(sw);
      li.appendChild(document.createTextNode(n.shape + " " + n.color + " " + n.size));
    }
    return li;
  }

  document.getElementById("title").textContent = "KANDY browser \u2014 " + D.title;
  document.getElementById("meta").textContent =
    D.tasks.length + " tasks, " + D.samples.length + " samples" +
    (D.format ? " \u00b7 " + D.format + " " + D.version : "") +
    (D.seed !== null && D.seed !== undefined ? " \u00b7 seed " + D.seed : "");
  var fs = document.getElementById("f-split");
  D.splits.forEach(function (s) { var o = el("option", null, s); o.value = s; fs.appendChild(o); });

  var list = document.getElementById("task-list");
  function taskItem(id, name, counts) {
    var li = el("li");
    li.dataset.task = id === null ? "all" : String(id);
    li.appendChild(el("div", "tname", id === null ? "All tasks" : (id + ". " + (name || "task " + id))));
    li.appendChild(el("div", "tcount", counts.total + " samples \u00b7 " + counts.positives +
                      " pos / " + counts.negatives + " neg \u00b7 " + counts.supervised + " supervised"));
    li.addEventListener("click", function () { selectTask(id); });
    list.appendChild(li);
  }
  var tot = { total: 0, positives: 0, negatives: 0, supervised: 0 };
  D.tasks.forEach(function (t) { for (var k in tot) tot[k] += t.counts[k]; });
  taskItem(null, "", tot);
  D.tasks.forEach(function (t) { taskItem(t.id, t.name, t.counts); });

  function selectTask(id) {
    state.task = id; state.shown = PAGE;
    Array.prototype.forEach.call(list.children, function (li) {
      li.classList.toggle("active", li.dataset.task === (id === null ? "all" : String(id)));
    });
    var t = D.tasks.filter(function (x) { return x.id === id; })[0];
    document.getElementById("task-title").textContent =
      id === null ? "All tasks" : "Task " + id + (t && t.name ? ": " + t.name : "");
    document.getElementById("rule").textContent = t && t.rule ? t.rule : "";
    update();
  }
  function matches(s) {
    return (state.task === null || s[0] === state.task) &&
      (state.split === "" || D.splits[s[1]] === state.split) &&
      (state.label === "" || String(s[2]) === state.label) &&
      (state.supervised === "" || String(s[3]) === state.supervised);
  }
  function card(s) {
    var c = el("div", "card " + (s[2] === 1 ? "pos" : "neg"));
    c.dataset.task = s[0]; c.dataset.split = D.splits[s[1]];
    c.dataset.label = s[2]; c.dataset.supervised = s[3];
    if (D.images !== false) {
      var img = el("img"); img.loading = "lazy"; img.src = s[4]; img.alt = s[5];
      c.appendChild(img);
    }
    var b = el("div", "badges");
    b.appendChild(el("span", "badge " + (s[2] === 1 ? "pos" : "neg"), s[2] === 1 ? "positive" : "negative"));
    b.appendChild(el("span", "badge" + (s[3] === 1 ? " sup" : ""), s[3] === 1 ? "supervised" : "unsupervised"));
    b.appendChild(el("span", "badge", D.splits[s[1]]));
    b.appendChild(el("span", "badge", "task " + s[0]));
    c.appendChild(b);
    c.appendChild(el("div", "fname", s[4].split("/").slice(-2).join("/")));
    var ul = el("ul", "tree");
    ul.title = s[5];
    ul.appendChild(tree(parse(s[5])));
    c.appendChild(ul);
    return c;
  }
  function update() {
    var hits = D.samples.filter(matches);
    document.getElementById("count").textContent = hits.length;
    var box = document.getElementById("cards");
    box.textContent = "";
    var frag = document.createDocumentFragment();
    hits.slice(0, state.shown).forEach(function (s) { frag.appendChild(card(s)); });
    box.appendChild(frag);
    if (!hits.length) box.appendChild(el("div", "empty", "No sample matches these filters."));
    var more = document.getElementById("more");
    more.hidden = hits.length <= state.shown;
    more.textContent = "show more (" + Math.max(0, hits.length - state.shown) + " left)";
  }
  [["f-split", "split"], ["f-label", "label"], ["f-supervised", "supervised"]].forEach(function (p) {
    document.getElementById(p[0]).addEventListener("change", function (e) {
      state[p[1]] = e.target.value; state.shown = PAGE; update();
    });
  });
  document.getElementById("more").addEventListener("click", function () {
    state.shown += PAGE; update();
  });
  selectTask(null);
})();
</script>
</body>
</html>
"""

__all__ = ["write_browser", "browser_data"]
