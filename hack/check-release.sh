#!/usr/bin/env bash
# Checks what `make release-snapshot` left in dist/: every archive and its
# SBOM, the krew manifest, install.yaml and tether-crds.yaml, the chart
# package at the chart's version, the images' build plans (both platforms,
# checked by hack/release/offline-docker) and the post hook's install.yaml
# pinned by digest, and binaries that report the snapshot version.
set -euo pipefail
dist=$1 chart_version=$2
want="${chart_version}-snapshot-"
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
tar -xzOf "$dist/tether-$chart_version.tgz" tether/Chart.yaml | grep -q '^kubeVersion:' || fail "the chart names no kubeVersion"
grep -q "would run: .*helm.* push $dist/tether-$chart_version.tgz oci://" "$dist/publish-chart.log" || fail "the chart push (dry run) did not name an OCI registry"

# An SPDX SBOM beside every archive.
for archive in "$dist"/*.tar.gz "$dist"/*.zip; do
  [ -s "$archive.sbom.json" ] || fail "no SBOM for $(basename "$archive")"
  grep -q '"spdxVersion"' "$archive.sbom.json" || fail "$(basename "$archive").sbom.json is not SPDX"
done

# The krew manifest names every plugin archive with its checksum.
krew="$dist/krew/tether.yaml"
[ -f "$krew" ] || fail "no krew manifest ($krew)"
for platform in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64; do
  archive=$(cd "$dist" && ls kubectl-tether_v*_"$platform".* | grep -v "\.sbom\.json$")
  sum=$(sha256sum "$dist/$archive" | cut -d' ' -f1)
  grep -q "releases/download/.*/$archive\$" "$krew" || fail "the krew manifest does not point at $archive"
  grep -q "sha256: $sum" "$krew" || fail "the krew manifest lacks the checksum of $archive"
done

# install.yaml: the operator at the chart's version; tether-crds.yaml: the CRDs.
grep -q "image: ghcr.io/tether-dev/tether:$chart_version\$" "$dist/install.yaml" || fail "install.yaml does not run ghcr.io/tether-dev/tether:$chart_version"
for kind in Namespace CustomResourceDefinition ServiceAccount ClusterRole ClusterRoleBinding Deployment Service; do
  grep -q "^kind: $kind\$" "$dist/install.yaml" || fail "install.yaml has no $kind"
done
[ "$(grep -c '^kind: CustomResourceDefinition$' "$dist/tether-crds.yaml")" = 2 ] || fail "tether-crds.yaml does not hold the two CRDs"
# The images: goreleaser's image step ran for each, for both platforms, and
# the operator's post hook wrote install.yaml with the image's digest.
for img in tether tether-sample-worker tether-sample-orchestrator; do
  plan="$dist/images/$img.txt"
  [ -f "$plan" ] || fail "no build plan for the image $img"
  grep -q "^platforms: linux/amd64,linux/arm64\$" "$plan" || fail "the image $img is not for linux/amd64 and linux/arm64"
  grep -q "^images: ghcr.io/tether-dev/$img:$want" "$plan" || fail "the image $img is not tagged with the snapshot version"
done
grep -q "image: ghcr.io/tether-dev/tether:$want[^@]*@sha256:[0-9a-f]\{64\}\$" "$dist/images/install.from-post-hook.yaml" ||
  fail "the operator image's post hook did not pin install.yaml by tag and digest"
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
