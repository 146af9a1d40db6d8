#!/usr/bin/env bash
# Regenerates every generated file and fails when the result differs from
# what is committed: generated files are never edited by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
generated=(api config charts docs)
make --no-print-directory manifests generate >/dev/null
[ -f hack/make/chart.mk ] && make --no-print-directory chart >/dev/null
[ -f hack/make/docs.mk ] && make --no-print-directory api-docs >/dev/null
gofmt_out=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$gofmt_out" ]; then
  echo "verify: not gofmt-clean:"; echo "$gofmt_out"; exit 1
fi
existing=()
for p in "${generated[@]}"; do [ -e "$p" ] && existing+=("$p"); done
if ! git diff --quiet -- "${existing[@]}" || [ -n "$(git ls-files --others --exclude-standard -- "${existing[@]}")" ]; then
  echo "verify: generated files differ from the committed ones; run 'make manifests generate' (and 'make chart', 'make api-docs') and commit:"
  git status --short -- "${existing[@]}"
  git --no-pager diff --stat -- "${existing[@]}"
  exit 1
fi
echo "verify: generated files are up to date"
