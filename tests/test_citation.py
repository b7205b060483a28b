"""How to cite: CITATION.cff, README's BibTeX entry and the papers page state the release's
version, an author, and the identifiers of each benchmark's paper."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def test_citation_cff_is_this_release():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["version"] == _version()
    assert cff["authors"] and cff["license"] == "Apache-2.0"


def test_readme_bibtex_has_an_author_and_this_version():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    entry = re.search(r"@software\{nesybench,.*?\n\}", readme, re.S).group(0)
    assert re.search(r"author\s*=\s*\{\{The nesybench developers\}\}", entry)
    assert re.search(r"version\s*=\s*\{" + re.escape(_version()) + r"\}", entry)


def test_the_papers_are_cited_with_their_identifiers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    papers = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    dois = [r["doi"] for r in cff["references"] if "doi" in r]
    assert set(dois) == {"10.1007/s10994-025-06798-x", "10.1007/978-3-030-97454-1_5"}
    for doi in dois:
        assert papers.count(doi) >= 2, doi           # the table and the BibTeX
    for volume in ("3735", "3169"):                  # SKI (WOA 2024), IRT (EBeM'22)
        assert f"Vol-{volume}" in papers and f"volume = {{{volume}}}" in papers
    # the rsbench text nesybench follows is named beside the published title
    assert "Benchmarks for Reasoning Shortcuts in Neural, Neuro-Symbolic, and Foundation" \
        " Models" in papers
    assert "LNCS 13191" in papers and "arXiv:1909.07095" in papers
