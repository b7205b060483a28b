#!/usr/bin/env bash
# Build a minimal SWI-Prolog (no X11, Java, ODBC, Qt or documentation) from source into PREFIX.
# `make setup` (scripts/setup.sh) and `nesybench setup-prolog` both run this script.
#
#   build_swipl.sh --prefix DIR [--source TARBALL|URL] [--sha256 HEX] [--suite SUITE]
#                  [--jobs N] [--no-packages]
#
# The source: --source names a tarball or a URL of one (e.g. the official source archive,
# https://www.swi-prolog.org/download/stable/src/swipl-9.x.y.tar.gz), checked against
# --sha256 when given; without --source, on Debian or Ubuntu, apt fetches the upstream
# tarball of swi-prolog from SUITE (default trixie) with the checksum apt expects.
# Build tools (cmake, ninja, a C compiler and the libraries below) are installed with apt
# where apt exists (sudo when not root, skipped with --no-packages) and otherwise must be there.
# Each stage prints one line on stderr ("[swipl k/5] ..."), the compile stage every 10 %;
# the full logs stay in PREFIX.build/.
set -euo pipefail

prefix="" source="" want_sum="" suite=trixie jobs="" packages=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2;;
    --source) source=$2; shift 2;;
    --sha256) want_sum=$2; shift 2;;
    --suite) suite=$2; shift 2;;
    --jobs) jobs=$2; shift 2;;
    --no-packages) packages=0; shift;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "build_swipl.sh: unknown argument $1 (see --help)" >&2; exit 2;;
  esac
done
[ -n "$prefix" ] || { echo "build_swipl.sh: --prefix DIR is required" >&2; exit 2; }
# absolute, without creating PREFIX itself: a failed build leaves nothing there
prefix="$(mkdir -p "$(dirname "$prefix")" && cd "$(dirname "$prefix")" && pwd)/$(basename "$prefix")"
work="$prefix.build"
jobs=${jobs:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}

stage() { printf '[swipl %s] %s\n' "$1" "$2" >&2; }
fail() { printf '[swipl] %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
has_apt() { command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; }

apt_updated=0
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  stage "1/5" "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

build_tools() {
  if [ $packages = 1 ] && has_apt; then
    apt_install ca-certificates cmake ninja-build gcc g++ make pkg-config libgmp-dev \
      zlib1g-dev libssl-dev libreadline-dev libedit-dev libpcre2-dev libarchive-dev \
      libyaml-dev libffi-dev python3-dev dpkg-dev
  fi
  local missing=()
  for tool in cmake ninja cc; do command -v $tool >/dev/null 2>&1 || missing+=("$tool"); done
  [ ${#missing[@]} -eq 0 ] || fail "missing build tools: ${missing[*]} (install cmake, ninja" \
    "and a C compiler, plus the GMP, zlib, OpenSSL, readline, PCRE2, libarchive, libyaml" \
    "and libffi development files)"
}

debian_tarball() {            # the upstream tarball of swi-prolog in $suite, via apt
  has_apt || fail "no --source given and no apt here: pass --source with a source tarball" \
    "or its URL (https://www.swi-prolog.org/download/stable/src/)"
  local src_list=/etc/apt/sources.list.d/nesybench-src.sources
  if [ ! -f "$src_list" ]; then
    stage "1/5" "adding a deb-src entry for $suite (source packages only)"
    # Same mirror as the machine's own Debian entry, so nothing here names a host.
    local uri; uri=$(grep -h -m1 -E '^URIs:' /etc/apt/sources.list.d/debian.sources 2>/dev/null | awk '{print $2}')
    [ -n "$uri" ] || uri=$(grep -h -m1 -E '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}')
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$uri" "$suite" | as_root tee "$src_list" >/dev/null
    apt_updated=0
  fi
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  mkdir -p "$work/src"
  # Only the upstream .orig tarball is needed; the mirror may lack the .dsc, so a partial
  # failure of apt-get is fine as long as the tarball arrived with the checksum apt expects.
  ( cd "$work/src" && { ls swi-prolog_*.orig.tar.* >/dev/null 2>&1 || apt-get source --download-only -qq "swi-prolog/$suite" >/dev/null 2>&1 || true; } )
  tarball=$(ls "$work"/src/swi-prolog_*.orig.tar.* 2>/dev/null | head -n 1)
  [ -n "$tarball" ] || fail "could not download the swi-prolog source tarball for $suite"
  [ -n "$want_sum" ] || want_sum=$(cd /tmp && apt-get source --print-uris -qq "swi-prolog/$suite" | awk -v f="$(basename "$tarball")" '$2==f {sub("SHA256:","",$4); print $4}')
}

stage "1/5" "source and build tools (logs in $work)"
mkdir -p "$work"
build_tools
case "$source" in
  "") debian_tarball;;
  http://*|https://*)
    tarball="$work/src/$(basename "${source%%\?*}")"
    mkdir -p "$work/src"
    if [ ! -f "$tarball" ]; then
      stage "1/5" "downloading $source"
      if command -v curl >/dev/null 2>&1; then curl -fsSL -o "$tarball.part" "$source"
      else wget -q -O "$tarball.part" "$source"; fi
      mv "$tarball.part" "$tarball"
    fi;;
  *) [ -f "$source" ] || fail "no such source tarball: $source"; tarball=$source;;
esac
if [ -n "$want_sum" ] && [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$want_sum" ]; then
  fail "checksum mismatch for $tarball (expected SHA-256 $want_sum)"
fi

stage "2/5" "configuring $(basename "$tarball") (cmake)"
rm -rf "$work/tree" "$work/build" "$work/unpack" && mkdir -p "$work/unpack"
# no --strip-components: GNU tar would strip after it drops a leading "/", so "top//abs/path"
# would land at /abs/path; unpacked whole, members stay inside (tar drops "/" and "..")
tar -xf "$tarball" -C "$work/unpack" --no-same-owner \
  || fail "could not unpack $tarball"
tops=("$work"/unpack/*)
[ ${#tops[@]} = 1 ] && [ -d "${tops[0]}" ] && [ ! -L "${tops[0]}" ] \
  || fail "$(basename "$tarball") does not hold one top folder"
mv "${tops[0]}" "$work/tree" && rm -rf "$work/unpack"
cmake -S "$work/tree" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DSWIPL_PACKAGES_X=OFF -DSWIPL_PACKAGES_JAVA=OFF -DSWIPL_PACKAGES_ODBC=OFF \
  -DSWIPL_PACKAGES_QT=OFF -DSWIPL_PACKAGES_GUI=OFF -DINSTALL_DOCUMENTATION=OFF \
  -DBUILD_TESTING=OFF -DUSE_GMP=ON >"$work/cmake.log" 2>&1 \
  || { tail -n 40 "$work/cmake.log" >&2; fail "cmake failed (log: $work/cmake.log)"; }

stage "3/5" "compiling with $jobs jobs (several minutes)"
# ninja numbers its steps [done/total]: one line per 10 % instead of thousands
set +o pipefail
cmake --build "$work/build" -j "$jobs" 2>&1 | tee "$work/build.log" | awk '
  match($0, /^\[[0-9]+\/[0-9]+\]/) {
    split(substr($0, 2, RLENGTH - 2), n, "/"); p = int(100 * n[1] / n[2])
    if (p >= next_p) { printf "[swipl 3/5] compiling: %d %%\n", p > "/dev/stderr"; next_p = p - p % 10 + 10 }
  }'
status=${PIPESTATUS[0]}
set -o pipefail
[ "$status" = 0 ] || { tail -n 40 "$work/build.log" >&2; fail "compiling failed (log: $work/build.log)"; }

stage "4/5" "installing into $prefix"
cmake --install "$work/build" >"$work/install.log" 2>&1 \
  || { tail -n 40 "$work/install.log" >&2; fail "installing failed (log: $work/install.log)"; }
rm -rf "$work/tree" "$work/build"
[ -x "$prefix/bin/swipl" ] || fail "the build installed no $prefix/bin/swipl"
stage "5/5" "done: $prefix/bin/swipl"
