#!/usr/bin/env bash
# Build the SWI-Prolog pack archive dist/nesybench-<version>.tgz (the version of pyproject.toml,
# which pack.pl must state too). The archive holds one folder nesybench-<version>/ with pack.pl,
# prolog/ (library(nesybench) and the modules it loads) and kb/ (the knowledge bases).
#   scripts/build_pack.sh [OUT_DIR]      (default: dist)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/dist}

version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$root/pyproject.toml" | head -n 1)
if [ -z "$version" ]; then
  echo "build_pack: no version in pyproject.toml" >&2; exit 1
fi
pack_version=$(sed -n "s/^version('\([^']*\)')\..*/\1/p" "$root/pack.pl")
if [ "$pack_version" != "$version" ]; then
  echo "build_pack: pack.pl says version '$pack_version', pyproject.toml '$version'" >&2; exit 1
fi

name=nesybench-$version
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name"
cp "$root/pack.pl" "$stage/$name/"
for f in README.md CHANGELOG.md LICENSE; do
  if [ -f "$root/$f" ]; then cp "$root/$f" "$stage/$name/"; fi
done
# prolog/ and kb/ without caches or compiled files
(cd "$root" && find prolog kb -type f ! -name '*.qlf' ! -name '*.pyc' ! -path '*/__pycache__/*' \
   ! -name '.*' -print0) | (cd "$root" && xargs -0 cp --parents -t "$stage/$name")

mkdir -p "$out"
archive=$(cd "$out" && pwd)/$name.tgz
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' \
    -czf "$archive" "$name"
echo "$archive"
