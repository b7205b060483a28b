"""benchmarks/kandy_generate.py --write-docs: what the run printed replaces the page's section."""
from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("kandy_generate_bench",
                                                  ROOT / "benchmarks" / "kandy_generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_write_docs_replaces_only_the_marked_section(tmp_path):
    bench = _bench()
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Perf\n\nbefore\n{bench.DOC_BEGIN}\nold table\n{bench.DOC_END}\nafter\n",
                   encoding="utf-8")
    printed = ("load average         0.10 0.20 0.30 (1, 5, 15 min) before, 2 CPUs\n"
               "round 1: nesybench   4.00 s\n\n"
               "| job | wall time |\n|---|---:|\n| nesybench, 2 workers | 4.00 s |\n\n"
               "reference / nesybench   25.0×  (target >= 20×)\n")
    bench.write_docs(doc, printed, "benchmarks/kandy_generate.py --rounds 3")
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("# Perf\n\nbefore\n") and text.endswith(f"{bench.DOC_END}\nafter\n")
    assert "old table" not in text
    section = text.split(bench.DOC_BEGIN)[1].split(bench.DOC_END)[0]
    assert "`benchmarks/kandy_generate.py --rounds 3`" in section
    assert "| nesybench, 2 workers | 4.00 s |" in section
    assert "```text\nload average" in section and "25.0×" in section
    bench.write_docs(doc, printed, "again")           # idempotent structure: still one section
    assert doc.read_text(encoding="utf-8").count(bench.DOC_BEGIN) == 1


def test_the_page_shows_no_path_of_the_machine(tmp_path):
    bench = _bench()
    command = bench.public_command(["--rounds", "3", "--reference", "checkouts/KANDYBenchmark",
                                    "--reference-python=refvenv/bin/python", "--workdir",
                                    "/dev/shm", "--curriculum",
                                    str(bench.ROOT / "curricula/kandy/hard.yaml")])
    assert command == ("benchmarks/kandy_generate.py --rounds 3 --reference PATH "
                       "--reference-python PY --workdir DIR --curriculum "
                       "curricula/kandy/hard.yaml")
    doc = tmp_path / "p.md"
    doc.write_text(f"{bench.DOC_BEGIN}\n{bench.DOC_END}\n", encoding="utf-8")
    bench.write_docs(doc, f"curriculum  {bench.ROOT}/curricula/kandy/hard.yaml (18 tasks)\n",
                     command)
    assert str(bench.ROOT) not in doc.read_text(encoding="utf-8")
    assert "curriculum  curricula/kandy/hard.yaml (18 tasks)" in doc.read_text(encoding="utf-8")
