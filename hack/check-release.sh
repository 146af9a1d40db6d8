#!/usr/bin/env bash
# Checks what `make release-snapshot` left in dist/: every archive, the chart
# package at the chart's version, and binaries that report the snapshot version.
set -euo pipefail
dist=$1 chart_version=$2
want="${chart_version}-snapshot+"
fail() { echo "check-release: $*" >&2; exit 1; }

for a in kubectl-tether_v%s_linux_amd64.tar.gz kubectl-tether_v%s_linux_arm64.tar.gz \
         kubectl-tether_v%s_darwin_amd64.tar.gz kubectl-tether_v%s_darwin_arm64.tar.gz \
         kubectl-tether_v%s_windows_amd64.zip \
         tether-operator_v%s_linux_amd64.tar.gz tether-operator_v%s_linux_arm64.tar.gz \
         tether-sample-agents_v%s_linux_amd64.tar.gz tether-sample-agents_v%s_linux_arm64.tar.gz; do
  pattern=$(printf "$a" "${want}*")
  # shellcheck disable=SC2086
  ls "$dist"/$pattern >/dev/null 2>&1 || fail "missing archive $pattern"
done
[ -f "$dist/tether-$chart_version.tgz" ] || fail "missing chart package tether-$chart_version.tgz"
tar -tzf "$dist"/kubectl-tether_v*_linux_amd64.tar.gz | grep -qx kubectl_complete-tether || fail "the plugin archive lacks kubectl_complete-tether"
grep -q "tether-$chart_version.tgz\|kubectl-tether_v" "$dist/checksums.txt" || fail "no checksums"

host_arch=$(go env GOARCH)
if [ "$(go env GOOS)" = linux ]; then
  plugin=$(ls "$dist"/kubectl-tether_linux_"$host_arch"*/kubectl-tether)
  manager=$(ls "$dist"/manager_linux_"$host_arch"*/manager)
  "$plugin" version | grep -q "^kubectl-tether $want" || fail "plugin reports '$("$plugin" version)', want $want..."
  "$manager" --version | grep -q "^tether-operator $want" || fail "operator reports '$("$manager" --version)', want $want..."
  echo "check-release: $("$plugin" version)"
  echo "check-release: $("$manager" --version)"
fi
echo "check-release: $(ls "$dist"/*.tar.gz "$dist"/*.zip "$dist"/*.tgz | wc -l) archives and the chart in $dist"
