#!/usr/bin/env bash
# Pushes the packaged chart to an OCI registry and signs it keylessly with
# cosign, as the release's last step (after goreleaser):
#   hack/release/publish-chart.sh dist/tether-X.Y.Z.tgz
# Users install it with: helm install tether oci://ghcr.io/tether-dev/charts/tether --version X.Y.Z
# DRY_RUN=1 checks the package and prints the commands instead (make release-snapshot).
set -euo pipefail
chart=$1
registry=${CHART_REGISTRY:-oci://ghcr.io/tether-dev/charts}
helm=${HELM:-helm}
fail() { echo "publish-chart: $*" >&2; exit 1; }

[ -f "$chart" ] || fail "no chart package $chart"
case "$registry" in oci://*) ;; *) fail "CHART_REGISTRY must be an oci:// reference, not $registry" ;; esac
name=$(tar -xzOf "$chart" tether/Chart.yaml | sed -n 's/^name: *//p')
version=$(tar -xzOf "$chart" tether/Chart.yaml | sed -n 's/^version: *//p')
[ "$name" = tether ] || fail "$chart holds chart '$name', want tether"
[ "$(basename "$chart")" = "tether-$version.tgz" ] || fail "$chart does not hold version $version"
"$helm" lint --strict "$chart" >/dev/null || fail "helm lint refuses $chart"

ref="${registry#oci://}/tether:$version"
if [ "${DRY_RUN:-}" = 1 ]; then
  echo "would run: $helm push $chart $registry"
  echo "would run: cosign sign --yes $ref@<digest helm push printed>"
  exit 0
fi
out=$("$helm" push "$chart" "$registry" 2>&1) || fail "helm push: $out"
echo "$out"
digest=$(echo "$out" | sed -n 's/^Digest: *//p')
[ -n "$digest" ] || fail "helm push printed no digest"
cosign sign --yes "$ref@$digest"
