#!/usr/bin/env bash
# Installs helm into bin/ as helm's own release builds are made: stamped with
# the Kubernetes version of the client-go it is built with. `helm template`
# and `helm lint` check a chart's kubeVersion against that version; a plain
# `go install` leaves it at v1.20.0, which the chart's kubeVersion refuses.
#   install-helm.sh BIN VERSION
set -euo pipefail
bin=$1 version=$2
gomod=$(go mod download -json "helm.sh/helm/v3@$version" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
client_go=$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -1)
[ -n "$client_go" ] || { echo "install-helm: no k8s.io/client-go in helm $version's go.mod" >&2; exit 1; }
stamp=""
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  stamp="$stamp -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$client_go"
done
GO_INSTALL_LDFLAGS="${stamp# }" GO_INSTALL_SUFFIX="k8s1.$client_go" \
  exec "$(dirname "$0")/go-install.sh" "$bin" helm.sh/helm/v3/cmd/helm "$version"
