#!/usr/bin/env bash
# Installs a Go tool at a pinned version into bin/, once: go-install.sh BIN PACKAGE VERSION
set -euo pipefail
bin=$1 pkg=$2 version=$3
[ -x "$bin-$version" ] && [ "$(readlink -- "$bin" 2>/dev/null)" = "$(basename "$bin")-$version" ] && exit 0
echo "installing $pkg@$version (first time only)..." >&2
dir=$(dirname "$bin")
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install "$pkg@$version"
mv "$tmp/$(basename "${pkg%/v[0-9]*}")" "$bin-$version" 2>/dev/null || mv "$tmp"/* "$bin-$version"
ln -sf "$(basename "$bin")-$version" "$bin"
