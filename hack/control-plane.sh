#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from Go module sources
# into a cache outside the repository, so tests and the demo run a real control
# plane without downloading prebuilt binaries. Prints the binary folder on stdout;
# progress goes to stderr. Skips the build when the binaries are already there.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
STAGING_VERSION="v0${K8S_VERSION#v1}"      # k8s.io/api etc. are v0.x for Kubernetes v1.x
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
CACHE_ROOT="${TETHER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
# -r2: the binaries report their version (-ldflags below), as released
# ones do; Helm checks a chart's kubeVersion against it.
BIN_DIR="$CACHE_ROOT/k8s/$K8S_VERSION-r2"

log() { printf '[control-plane] %s\n' "$*" >&2; }

have() { [ -x "$BIN_DIR/kube-apiserver" ] && [ -x "$BIN_DIR/kube-controller-manager" ] && [ -x "$BIN_DIR/etcd" ]; }

if have; then
  log "using cached binaries in $BIN_DIR"
  echo "$BIN_DIR"
  exit 0
fi

mkdir -p "$BIN_DIR"
# One builder at a time: parallel `make test` and `make demo` share the cache.
exec 9>"$BIN_DIR/.lock"
flock 9
if have; then echo "$BIN_DIR"; exit 0; fi

work="$CACHE_ROOT/build"
mkdir -p "$work/k8s" "$work/etcd"
# The go command's module chatter (go: added ..., go: downloading ...) goes to a
# log; it is shown only when a step fails.
build_log="$work/build.log"
: > "$build_log"
quiet() {
  if ! "$@" >>"$build_log" 2>&1; then
    log "failed: $*"
    tail -n 40 "$build_log" >&2
    log "full log: $build_log"
    return 1
  fi
}

if [ ! -x "$BIN_DIR/etcd" ]; then
  log "building etcd $ETCD_VERSION (about 1 minute on a cold cache)..."
  cd "$work/etcd"
  cat > go.mod <<MOD
module tether.local/etcd

go 1.26.0
MOD
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  quiet go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  quiet go mod tidy
  quiet go build -o "$BIN_DIR/etcd.tmp" .
  mv "$BIN_DIR/etcd.tmp" "$BIN_DIR/etcd"
  log "etcd ready"
fi

if [ ! -x "$BIN_DIR/kube-apiserver" ] || [ ! -x "$BIN_DIR/kube-controller-manager" ]; then
  log "building kube-apiserver and kube-controller-manager $K8S_VERSION"
  log "(several minutes on a cold cache: 7-8 min on 2 cores; later runs reuse $BIN_DIR)"
  cd "$work/k8s"
  modinfo=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" 2>>"$build_log")
  gomod=$(printf '%s' "$modinfo" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  {
    echo "module tether.local/k8s"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    # Kubernetes replaces its staging modules with local paths; point them at the
    # published versions instead.
    sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/ {print "\t" $1 " => " $1 " '"$STAGING_VERSION"'"}'
    echo ")"
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  log "resolving modules..."
  quiet go mod tidy
  log "compiling (go build prints nothing until it is done)..."
  start=$(date +%s)
  ( while sleep 60; do log "still compiling... $(( $(date +%s) - start ))s"; done ) &
  ticker=$!
  trap 'kill $ticker 2>/dev/null || true' EXIT
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  version_pkg=k8s.io/component-base/version
  ldflags="-X $version_pkg.gitVersion=$K8S_VERSION -X $version_pkg.gitMajor=1 -X $version_pkg.gitMinor=$minor -X $version_pkg.gitTreeState=clean"
  quiet go build -ldflags "$ldflags" -o "$BIN_DIR/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  kill $ticker 2>/dev/null || true
  log "kube-apiserver and kube-controller-manager ready after $(( $(date +%s) - start ))s"
fi

echo "$BIN_DIR"
