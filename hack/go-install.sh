#!/usr/bin/env bash
# Installs a Go tool at a pinned version into bin/, once: go-install.sh BIN PACKAGE VERSION
# GO_INSTALL_LDFLAGS, when set, is passed to the build; GO_INSTALL_SUFFIX then
# names that build apart (BIN-VERSION-SUFFIX), so a plain build is not reused.
set -euo pipefail
bin=$1 pkg=$2 version=$3
target="$bin-$version${GO_INSTALL_SUFFIX:+-$GO_INSTALL_SUFFIX}"
[ -x "$target" ] && [ "$(readlink -- "$bin" 2>/dev/null)" = "$(basename "$target")" ] && exit 0
echo "installing $pkg@$version (first time only)..." >&2
dir=$(dirname "$bin")
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp" go install ${GO_INSTALL_LDFLAGS:+-ldflags "$GO_INSTALL_LDFLAGS"} "$pkg@$version"
mv "$tmp/$(basename "${pkg%/v[0-9]*}")" "$target" 2>/dev/null || mv "$tmp"/* "$target"
ln -sf "$(basename "$target")" "$bin"
