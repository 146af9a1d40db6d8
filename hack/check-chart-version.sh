#!/usr/bin/env bash
# The chart's version is the release version: Chart.yaml's version and
# appVersion must be equal, and a release tag vX.Y.Z on HEAD (or RELEASE_TAG)
# must name the same version.
set -euo pipefail
cd "$(dirname "$0")/.."
chart=charts/tether/Chart.yaml
version=$(sed -n 's/^version: *//p' "$chart" | tr -d '"')
app=$(sed -n 's/^appVersion: *//p' "$chart" | tr -d '"')
if [ "$version" != "$app" ]; then
  echo "chart-version-check: $chart has version $version but appVersion $app; release them together" >&2
  exit 1
fi
tag=${RELEASE_TAG:-$(git describe --tags --match 'v*' --exact-match 2>/dev/null || true)}
if [ -n "$tag" ] && [ "${tag#v}" != "$version" ]; then
  echo "chart-version-check: tag $tag but $chart says $version; bump the chart before tagging" >&2
  exit 1
fi
echo "chart-version-check: chart $version${tag:+, tag $tag}"
