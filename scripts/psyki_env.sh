#!/usr/bin/env bash
# Build the separate Python 3.9 environment that runs PSyKI for benchmarks/ski_psyki.py
# (PSyKI is published for Python 3.9 only and is never imported by nesybench).
#
#   scripts/psyki_env.sh [ENV_DIR]
#   scripts/psyki_env.sh --find-python     # print the Python 3.9 it would use, and stop
#
# ENV_DIR defaults to $XDG_CACHE_HOME/nesybench/psyki-env (~/.cache/nesybench/psyki-env).
# The Python 3.9 interpreter is, in this order: $PSYKI_PYTHON39; `python3.9` on PATH (only if
# it really runs: a pyenv shim for a version that is not selected does not); pyenv's
# versions/3.9.*; `uv python find 3.9`; /usr/bin/python3.9, /usr/local/bin/python3.9,
# /opt/python*/bin/python3.9. Each candidate must report version 3.9.
#
# Environment: PSYKI_PYTHON39 (interpreter), PSYKI_SPEC (pip requirement, default
# "psyki"), PSYKI_PIP_ARGS (extra pip arguments). Java is needed at run time (PSyKI parses
# theories with tuProlog through 2ppy/JPype); the script checks for it and says how to
# install it, but installs no system package itself.
#
# The last line printed is the --reference-python to give benchmarks/ski_psyki.py (and
# NESYBENCH_PSYKI_PYTHON for tests/test_ski_psyki_reference.py).
set -euo pipefail

find_only=0
if [ "${1:-}" = "--find-python" ]; then find_only=1; shift; fi
case "${1:-}" in -*) echo "usage: $0 [ENV_DIR] | --find-python" >&2; exit 2 ;; esac
env_dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/nesybench/psyki-env}"
spec="${PSYKI_SPEC:-psyki}"

say() { printf 'psyki_env: %s\n' "$*" >&2; }

is_py39() {
    # the interpreter runs and is CPython 3.9
    [ -n "$1" ] && "$1" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 9) else 1)' \
        >/dev/null 2>&1
}

find_python39() {
    local c
    if [ -n "${PSYKI_PYTHON39:-}" ]; then
        if is_py39 "$PSYKI_PYTHON39"; then echo "$PSYKI_PYTHON39"; return 0; fi
        say "PSYKI_PYTHON39=$PSYKI_PYTHON39 is not a working Python 3.9"
        return 1
    fi
    if c="$(command -v python3.9 2>/dev/null)" && is_py39 "$c"; then echo "$c"; return 0; fi
    if command -v pyenv >/dev/null 2>&1; then
        local root
        root="$(pyenv root 2>/dev/null || true)"
        for c in $(ls -d "$root"/versions/3.9.*/bin/python 2>/dev/null | sort -V -r); do
            if is_py39 "$c"; then echo "$c"; return 0; fi
        done
    fi
    for c in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9.*/bin/python 2>/dev/null \
            | sort -V -r); do
        if is_py39 "$c"; then echo "$c"; return 0; fi
    done
    if command -v uv >/dev/null 2>&1; then
        if c="$(uv python find 3.9 2>/dev/null)" && is_py39 "$c"; then echo "$c"; return 0; fi
    fi
    for c in /usr/bin/python3.9 /usr/local/bin/python3.9 /opt/python*/bin/python3.9; do
        if is_py39 "$c"; then echo "$c"; return 0; fi
    done
    return 1
}

if ! py39="$(find_python39)"; then
    say "no Python 3.9 interpreter found. Install one, e.g."
    say "  pyenv install 3.9        (then rerun this script)"
    say "  uv python install 3.9"
    say "or point PSYKI_PYTHON39 at one."
    exit 1
fi
say "Python 3.9: $py39 ($("$py39" -c 'import sys; print(sys.version.split()[0])'))"
if [ "$find_only" = 1 ]; then echo "$py39"; exit 0; fi

if command -v java >/dev/null 2>&1; then
    say "Java: $(java -version 2>&1 | head -n 1)"
else
    say "WARNING: no 'java' on PATH. PSyKI parses theories with tuProlog (2ppy), which needs"
    say "a Java runtime (11 or later): install one before running the cross-check, e.g."
    say "  apt-get install -y default-jre-headless      (Debian/Ubuntu, as root)"
    say "The environment is built anyway."
fi

if [ ! -x "$env_dir/bin/python" ]; then
    say "creating $env_dir"
    mkdir -p "$(dirname "$env_dir")"
    "$py39" -m venv "$env_dir"
fi
py="$env_dir/bin/python"
if ! is_py39 "$py"; then
    say "$env_dir exists but its python is not 3.9: remove it or choose another folder"
    exit 1
fi
# shellcheck disable=SC2086
"$py" -m pip install --quiet --upgrade pip ${PSYKI_PIP_ARGS:-}
say "installing $spec (with its TensorFlow; several minutes on a first run)"
# shellcheck disable=SC2086
"$py" -m pip install --quiet "$spec" ${PSYKI_PIP_ARGS:-}

TF_CPP_MIN_LOG_LEVEL=3 "$py" - <<'EOF' >&2
from importlib.metadata import version, PackageNotFoundError
for name in ("psyki", "tensorflow", "2ppy", "JPype1", "numpy", "pandas"):
    try:
        print(f"psyki_env: installed {name} {version(name)}")
    except PackageNotFoundError:
        print(f"psyki_env: installed {name} -")
import psyki.ski  # noqa: F401  (a 0.0.0 placeholder has no injectors)
EOF
say "ready; use"
say "  .venv/bin/python benchmarks/ski_psyki.py --reference-python $py"
say "  NESYBENCH_PSYKI_PYTHON=$py .venv/bin/python -m pytest -q tests/test_ski_psyki_reference.py"
echo "$py"
