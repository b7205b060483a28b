"""Extract the runnable code blocks of README.md and docs/ (used by tests/test_readme.py).

Convention (CONTRIBUTING.md, "Documentation examples are tests"):

* fenced blocks whose info string is ``sh``, ``bash``, ``console``, ``python`` or ``prolog``
  are run, in document order, in one scratch folder per page (``curricula/ kb/ prolog/ tests/
  benchmarks/ docs/`` of the repository are linked in; the files of ``tests/data/readme/`` are
  copied in, for names a snippet uses but does not create, e.g. ``learned.pl``);
* HTML comments on the lines just above the opening fence steer a block:
  ``<!-- readme-test: skip REASON -->`` does not run it (use sparingly: a user's MNIST path,
  a multi-minute benchmark), ``<!-- readme-test: replace OLD => NEW -->`` (repeatable) runs
  it with OLD replaced by NEW (small inputs), ``<!-- readme-test: exit N -->`` expects exit
  status N from every command of the block;
* other blocks (``yaml``, ``text``, no info string: file listings, output) are not run;
* in a ``console`` block, the lines after a ``$ `` command up to the next one are its shown
  output: they must equal what the command prints (stdout; stderr when stdout is empty, as
  for an error), up to the scratch folder's path (shown as ``...``) and durations
  (``normalise_output``);
  ``NESYBENCH_REGENERATE_SAMPLES=1`` writes the real output into the page instead;
* in a ``prolog`` block, ``$ swipl FILE...`` and ``$ nesybench prolog`` (which loads
  ``prolog/nesybench.pl``) name the files loaded before the ``?-`` queries.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

RUNNABLE = ("sh", "bash", "console", "python", "prolog")
#: the library ``nesybench prolog`` loads
PROLOG_LIBRARY = "prolog/nesybench.pl"


def doc_files(root: str | Path) -> list[Path]:
    """README.md and every page of docs/, in a fixed order."""
    root = Path(root)
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
_MARK = re.compile(r"^<!--\s*readme-test:\s*(skip|replace|exit)\b\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    lang: str
    text: str
    line: int                      # 1-based line of the opening fence
    section: str = ""
    file: str = "README.md"        # the page, relative to the repository root
    skip: str | None = None
    replace: list[tuple[str, str]] = field(default_factory=list)
    exit: int = 0

    @property
    def id(self) -> str:
        return f"{self.file}:L{self.line}-{self.lang}"

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"

    def prepared(self) -> str:
        text = self.text
        for old, new in self.replace:
            if old not in text:
                raise ValueError(f"{self.where}: replace marker {old!r} not in block")
            text = text.replace(old, new)
        return text


def blocks(readme: str | Path, name: str | None = None) -> list[Block]:
    """The runnable blocks of one Markdown page (``name``: how tests name the page)."""
    lines = Path(readme).read_text(encoding="utf-8").splitlines()
    name = name or Path(readme).name
    out: list[Block] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        m = re.match(r"^```(\w*)\s*$", line)
        if m:
            lang = m.group(1)
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if lang in RUNNABLE:
                b = Block(lang, "\n".join(lines[i + 1:j]) + "\n", i + 1, section, name)
                k = i - 1
                while k >= 0 and lines[k].strip().startswith("<!--"):
                    mm = _MARK.match(lines[k].strip())
                    if mm:
                        kind, arg = mm.groups()
                        if kind == "skip":
                            b.skip = arg or "marked skip"
                        elif kind == "exit":
                            b.exit = int(arg)
                        else:
                            old, sep, new = arg.partition(" =>")
                            if not sep:
                                raise ValueError(f"{name} line {k + 1}: replace needs OLD => NEW")
                            b.replace.append((old, new.strip()))
                    k -= 1
                out.append(b)
            i = j + 1
            continue
        i += 1
    return out


def shell_commands(block: Block) -> list[str]:
    """Commands of a shell block: console blocks keep only ``$ `` lines; continuation lines
    ending in a backslash are joined."""
    cmds, cur = [], ""
    for raw in block.prepared().splitlines():
        if block.lang == "console":
            if not raw.startswith("$ ") and not cur:
                continue
            raw = raw[2:] if raw.startswith("$ ") else raw
        s = raw.rstrip()
        if not s.strip() or (s.lstrip().startswith("#") and not cur):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cmds.append(cur + s)
        cur = ""
    return cmds


def console_samples(block: Block) -> list[tuple[str, list[str]]]:
    """(command, its shown output lines) of each ``$ `` command of a console block, in order.
    The output lines are the lines after the command up to the next ``$ `` line; a command
    with none shows no output (its output is not compared)."""
    out: list[tuple[str, list[str]]] = []
    cur, sample = None, []
    for raw in block.prepared().splitlines():
        if raw.startswith("$ ") and (cur is None or not cur.endswith("\\")):
            if cur is not None:
                out.append((cur, sample))
            cur, sample = raw[2:].rstrip(), []
        elif cur is not None and cur.endswith("\\") and not sample:
            cur = cur[:-1].rstrip() + " " + raw.strip()
        elif cur is not None:
            sample.append(raw)
    if cur is not None:
        out.append((cur, sample))
    return out


#: a duration as commands print it ("in 2.2 s", "0.125 s]", "34 ms", "1 min 5 s")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:e-?\d+)? ?(?:s|ms|min|h)\b")


def normalise_output(text: str, scratch: str | Path | None = None) -> list[str]:
    """Output lines as a sample states them: the scratch folder a command ran in is ``...``,
    each duration is ``<T>`` (a sample's timing is an example, not a promise), trailing
    blanks and blank last lines are dropped."""
    if scratch is not None:
        for form in {str(scratch), str(Path(scratch).resolve())}:
            text = text.replace(form, "...")
    lines = [_DURATION.sub("<T>", line.rstrip()) for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def prolog_queries(block: Block) -> tuple[list[str], list[str]]:
    """(files to load from ``$ swipl FILE`` and ``$ nesybench prolog`` lines, queries) of a
    Prolog block; answer lines (``true.``, ``X = a.``) are ignored."""
    files, queries, cur = [], [], None
    for raw in block.prepared().splitlines():
        s = re.sub(r"\s%.*$", "", raw).strip()
        if s.startswith("$ swipl"):
            files.extend(s.split()[2:])
            continue
        if s == "$ nesybench prolog":
            files.append(PROLOG_LIBRARY)
            continue
        if s.startswith("?-"):
            cur = s[2:].strip()
        elif cur is not None:
            cur += " " + s
        else:
            continue
        body = cur.rstrip()
        if body.endswith("."):
            queries.append(body[:-1])
            cur = None
    return files, queries
