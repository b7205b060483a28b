"""The documentation site: the API reference renders the docstrings' Sphinx roles as code
(linked where the object has an entry) and doctest blocks as code
(scripts/griffe_sphinx_roles.py), and has a page for nesybench.data."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: a role as the site would show it, left unconverted: ":class:<code>X</code>" or ":func:`f`"
LITERAL_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|doc):"
                          r"(?:<code>|`)")


def _extension():
    spec = importlib.util.spec_from_file_location(
        "griffe_sphinx_roles", ROOT / "scripts" / "griffe_sphinx_roles.py")
    if importlib.util.find_spec("griffe") is None:
        pytest.skip("griffe (the docs extra) is not installed")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(("text", "expected"), [
    (":class:`NesyError`",
     '<autoref identifier="NesyError" optional><code>NesyError</code></autoref>'),
    (":func:`~nesybench.data.load`",
     '<autoref identifier="nesybench.data.load" optional><code>load</code></autoref>'),
    (":meth:`the loader <nesybench.data.load>`",
     '<autoref identifier="nesybench.data.load" optional><code>the loader</code></autoref>'),
    (":py:mod:`nesybench.paths`",
     '<autoref identifier="nesybench.paths" optional><code>nesybench.paths</code></autoref>'),
    (":doc:`formats/kandy-dataset`", "<code>formats/kandy-dataset</code>"),
    (":data:`A<B`", '<autoref identifier="A&lt;B" optional><code>A&lt;B</code></autoref>'),
    ("plain ``code`` and a :colon: stay", "plain ``code`` and a :colon: stay"),
])
def test_roles_become_code(text, expected):
    assert _extension().convert(text) == expected


def test_doctest_blocks_become_code_blocks():
    text = 'Load.\n\n>>> ds = load("x")\n>>> ds[0]["label"]\n1\n\nSee :func:`load`.'
    out = _extension().convert(text)
    assert out.startswith('Load.\n\n```pycon\n>>> ds = load("x")\n>>> ds[0]["label"]\n1\n```\n')
    assert out.endswith('See <autoref identifier="load" optional><code>load</code></autoref>.')


def test_the_built_site_has_no_literal_role_and_a_data_page(tmp_path):
    _extension()
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs (the docs extra) is not installed")
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(site)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 30
    literal = [f"{p.relative_to(site)}: {m.group(0)}" for p in pages
               for m in LITERAL_ROLE.finditer(p.read_text(encoding="utf-8"))]
    assert literal == [], literal[:10]
    index = (site / "search" / "search_index.json").read_text(encoding="utf-8")
    assert not re.search(r":(?:class|func|meth|mod|data|attr):", index)
    data = (site / "api" / "data" / "index.html").read_text(encoding="utf-8")
    for ident in ("nesybench.data.load", "nesybench.data.core.BenchmarkData",
                  "nesybench.data.export.export"):
        assert f'id="{ident}"' in data, ident
    # a role naming an object with an entry is a link to it
    core = (site / "api" / "core" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<a class="autorefs autorefs-internal"[^>]*href="#nesybench\.', core)
