# nesybench — the two commands a newcomer runs: `make demo` and `make test`.
PY := .venv/bin/python
NB := .venv/bin/nesybench
WORKERS ?= 2

.PHONY: setup setup-core demo test docs pack bench fuzz planted mutate clean

setup:            ## SWI-Prolog >= 9.1.12 (cached build if needed) + .venv with every dependency
	@bash scripts/setup.sh

setup-core:       ## only what the commands need (SWI-Prolog, .venv with the package's dependencies)
	@bash scripts/setup.sh --core

demo: setup-core  ## generate the KANDY Easy curriculum and its browser page into out/
	$(NB) kandy generate curricula/kandy/easy.yaml --out out/kandy-easy --overwrite --workers $(WORKERS)
	$(NB) kandy browse out/kandy-easy
	@echo "KANDY Easy curriculum: out/kandy-easy   browser page: out/kandy-easy/browse/index.html"

test: setup       ## the whole test suite (what CI runs), one pytest worker per CPU
	$(PY) -m pytest -q -n auto --dist worksteal

docs: setup       ## the documentation site into site/ (mkdocs build --strict: broken links fail)
	$(PY) -m mkdocs build --strict --site-dir site

pack:             ## the SWI-Prolog pack archive dist/nesybench-<version>.tgz (pack.pl, prolog/, kb/)
	@bash scripts/build_pack.sh dist

bench: setup      ## performance figures (see docs/performance.md)
	$(PY) benchmarks/kandy_generate.py
	$(PY) benchmarks/rudas_bench.py
	$(PY) benchmarks/rs_count.py
	$(PY) benchmarks/runs_overhead.py
	$(PY) benchmarks/irt_fit.py

fuzz: setup       ## the long fuzz run of every parser and CLI entry point (benchmarks/fuzz.py)
	$(PY) benchmarks/fuzz.py

planted: setup    ## plant ten one-line bugs in a copy of the sources; each must fail a test
	$(PY) benchmarks/planted_bugs.py

mutate: setup     ## mutation testing of the modules behind the papers' figures (long; MUTATE_ARGS="--sample 40")
	$(PY) benchmarks/mutate.py $(MUTATE_ARGS)

clean:
	rm -rf out site dist .pytest_cache
