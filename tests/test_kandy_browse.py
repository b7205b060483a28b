"""Sample grids (show.py) and the static HTML browser (browse.py), the latter in a real
headless Chromium driven by selenium."""
from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from nesybench.errors import NesyError
from nesybench.io import write_json
from nesybench.kandy.browse import browser_data, write_browser
from nesybench.kandy.render import RenderConfig, render_job
from nesybench.kandy.show import read_dataset, sample_grid, write_task_grids
from nesybench.kandy.symbols import from_prolog

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

# (task, split, label, supervised, prolog)
SAMPLES = [
    (0, "train", 1, 1, "stack([triangle_red_small, square_red_large, circle_red_small])"),
    (0, "train", 0, 1, "stack([triangle_blue_small, square_red_large])"),
    (0, "train", 1, 0, "stack([circle_red_large, circle_red_small])"),
    (0, "train", 0, 0, "side_by_side([square_green_large, triangle_yellow_small])"),
    (0, "val", 1, 1, "stack([square_red_small])"),
    (0, "val", 0, 0, "grid([circle_cyan_small, circle_blue_small, square_magenta_large])"),
    (0, "test", 1, 0, "stack([triangle_red_large, triangle_red_small])"),
    (0, "test", 0, 1, "quadrant_ll([circle_green_large])"),
    (1, "train", 1, 1, "diag_ll_ur([triangle_blue_large, square_blue_small, circle_blue_large])"),
    (1, "train", 0, 1, "random([triangle_red_large, square_cyan_small, circle_yellow_large])"),
    (1, "train", 1, 0, "in([square_blue_large, circle_blue_small])"),
    (1, "test", 0, 0, "quadrant_ur([triangle_green_small])"),
]
RULES = {0: "valid(stack(L)) :-\n    forall(member(X, L), color(X, red)).\n",
         1: "valid(S) :- contains(S, blue).\n"}
NAMES = {0: "red stack", 1: "all blue"}


def make_dataset(root: Path) -> Path:
    """A tiny curriculum folder following docs/formats/kandy-dataset.md, images from our renderer."""
    cfg = RenderConfig()
    rows: dict[str, list] = {"train": [], "val": [], "test": []}
    counters: dict = {}
    for i, (tid, split, label, sup, text) in enumerate(SAMPLES):
        idx = counters.setdefault((split, tid), 0)
        counters[(split, tid)] = idx + 1
        fname = f"{tid:02d}/{idx:05d}.png"
        sym = from_prolog(text)
        render_job((sym.to_json(), cfg.to_dict(), 1000 + i, True, True,
                    str(root / split / fname)))
        rows[split].append([fname, tid, label, sup,
                            json.dumps(sym.to_json(), separators=(",", ":")), text])
    for split, rs in rows.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        with open(root / split / "annotations.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["filename", "task_id", "label", "supervised", "symbol", "prolog"])
            w.writerows(rs)
    (root / "rules").mkdir()
    for tid, text in RULES.items():
        (root / "rules" / f"{tid:02d}.pl").write_text(text, encoding="utf-8")
    write_json(root / "manifest.json", {
        "format": "nesybench-kandy", "version": "1.0", "seed": 42, "config": cfg.to_dict(),
        "tasks": [{"id": t, "name": NAMES[t], "rule_file": f"rules/{t:02d}.pl"} for t in NAMES]})
    return root


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("kandy") / "curriculum")


# ----------------------------------------------------------------------------- show.py

def test_read_dataset(dataset):
    manifest, rows = read_dataset(dataset)
    assert manifest["seed"] == 42 and len(rows) == len(SAMPLES)
    assert all(r["path"].exists() for r in rows)
    assert [r["split"] for r in rows][:6] == ["train"] * 6


def test_sample_grid_from_folder_and_rows(dataset):
    img = sample_grid(dataset, 0, n=3)
    assert img.mode == "RGB" and img.width > 3 * 112 and img.height > 2 * 112
    # rows without images on disk are re-rendered from their symbol column
    _, rows = read_dataset(dataset)
    bare = [{k: v for k, v in r.items() if k != "path"} for r in rows]
    img2 = sample_grid(bare, 1, n=2, rule_text="valid(S) :- contains(S, blue).", thumb=64)
    assert img2.width > 2 * 64
    with pytest.raises(NesyError, match="no samples for task 7"):
        sample_grid(dataset, 7)


def test_write_task_grids(dataset, tmp_path):
    paths = write_task_grids(dataset, tmp_path / "grids", n=4)
    assert [p.name for p in paths] == ["task_00.png", "task_01.png"]
    for p in paths:
        with Image.open(p) as im:
            assert im.size[0] > 400
    if os.environ.get("NESYBENCH_KEEP_PICTURES"):  # for looking at them by eye
        shutil.copy(paths[0], os.environ["NESYBENCH_KEEP_PICTURES"] + "/grid_task_00.png")


def test_missing_dataset_errors(tmp_path):
    with pytest.raises(NesyError):
        read_dataset(tmp_path / "nope")
    with pytest.raises(NesyError, match="annotations.csv"):
        read_dataset(tmp_path)


# ----------------------------------------------------------------------------- browse.py

def test_browser_files_are_self_contained(dataset, tmp_path):
    index = write_browser(dataset)
    assert index == (dataset / "browse" / "index.html").resolve()
    html = index.read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html and "<script src=\"data.js\">" in html
    data = browser_data(dataset, index.parent)
    assert len(data["samples"]) == len(SAMPLES)
    assert all(s[4].startswith("../") and (index.parent / s[4]).exists() for s in data["samples"])
    # elsewhere: relative paths still resolve
    other = write_browser(dataset, tmp_path / "elsewhere")
    d2 = browser_data(dataset, other.parent)
    assert all((other.parent / s[4]).resolve().exists() for s in d2["samples"])


def _driver(profile: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1280,900",
                 f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM) or not os.path.exists(CHROMEDRIVER):
        pytest.skip("needs Debian's chromium and chromium-driver (/usr/bin/chromium, chromedriver)")
    pytest.importorskip("selenium")
    profile = tempfile.mkdtemp(prefix="nesybench-chromium-")
    drv = _driver(profile)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_browser_in_headless_chromium(dataset, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    index = write_browser(dataset)
    browser.get(index.as_uri())
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#cards .card"))

    def count():
        cards = browser.find_elements(By.CSS_SELECTOR, "#cards .card")
        shown = int(browser.find_element(By.ID, "count").text)
        assert len(cards) == shown
        return shown

    def expect(task=None, split=None, label=None, sup=None):
        return sum(1 for t, s, lab, su, _ in SAMPLES
                   if (task is None or t == task) and (split is None or s == split)
                   and (label is None or lab == label) and (sup is None or su == sup))

    assert count() == len(SAMPLES)
    items = browser.find_elements(By.CSS_SELECTOR, "#task-list li")
    assert [li.get_attribute("data-task") for li in items] == ["all", "0", "1"]
    assert "red stack" in items[1].text and "all blue" in items[2].text
    # the symbolic tree is shown as a nested list
    trees = browser.find_elements(By.CSS_SELECTOR, "#cards .card ul.tree")
    assert "stack" in trees[0].text and "triangle red small" in trees[0].text
    assert trees[0].find_elements(By.CSS_SELECTOR, "ul.tree > li > ul > li")
    # filters
    Select(browser.find_element(By.ID, "f-split")).select_by_value("train")
    assert count() == expect(split="train")
    Select(browser.find_element(By.ID, "f-label")).select_by_value("1")
    assert count() == expect(split="train", label=1)
    Select(browser.find_element(By.ID, "f-supervised")).select_by_value("0")
    assert count() == expect(split="train", label=1, sup=0)
    for card in browser.find_elements(By.CSS_SELECTOR, "#cards .card"):
        assert card.get_attribute("data-split") == "train"
        assert card.get_attribute("data-label") == "1"
        assert "unsupervised" in card.text and "positive" in card.text
    Select(browser.find_element(By.ID, "f-label")).select_by_value("")
    Select(browser.find_element(By.ID, "f-supervised")).select_by_value("")
    # task selection shows the task's rule and only its samples
    browser.find_element(By.CSS_SELECTOR, "#task-list li[data-task='1']").click()
    assert count() == expect(task=1, split="train")
    assert "contains(S, blue)" in browser.find_element(By.ID, "rule").text
    Select(browser.find_element(By.ID, "f-split")).select_by_value("")
    assert count() == expect(task=1)
    Select(browser.find_element(By.ID, "f-split")).select_by_value("val")
    assert count() == 0 and "No sample matches" in browser.find_element(By.ID, "cards").text
    Select(browser.find_element(By.ID, "f-split")).select_by_value("")
    browser.find_element(By.CSS_SELECTOR, "#task-list li[data-task='all']").click()
    assert count() == len(SAMPLES)
    # images load from file:// through relative paths
    WebDriverWait(browser, 10).until(lambda d: d.execute_script(
        "var im = document.querySelector('#cards img'); return im.complete && im.naturalWidth;"))
    assert browser.execute_script(
        "return document.querySelector('#cards img').naturalWidth") == 224
    logs = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]
    assert not logs, logs
    shot = tmp_path / "browser.png"
    assert browser.save_screenshot(str(shot))
    if os.environ.get("NESYBENCH_KEEP_PICTURES"):  # for looking at it by eye
        shutil.copy(shot, os.environ["NESYBENCH_KEEP_PICTURES"] + "/browser.png")
