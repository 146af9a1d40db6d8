#!/usr/bin/env bash
# make test: the control plane is built (on first use: minutes) in the
# background while the generated files are checked, go vet runs and Chromium
# is installed; then every test runs on it, and the time each package took
# is printed at the end (the events go to bin/test.json).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${LOCALBIN:-$PWD/bin}
mkdir -p "$bin"
assets_file="$bin/.control-plane-dir"
hack/control-plane.sh > "$assets_file" &
control_plane=$!
checks() {
  hack/verify.sh
  echo "go vet ./..."
  go vet ./...
  hack/chromium.sh
  go build -o "$bin/testtimes" ./hack/testtimes
}
if ! checks; then
  echo "make test: a check failed; the control-plane build goes on in the background (its cache serves the next run)" >&2
  exit 1
fi
if ! wait "$control_plane"; then
  echo "make test: building the control plane failed (see above)" >&2
  exit 1
fi
assets=$(cat "$assets_file")
# go test starts packages in the order they are named: the slowest first, so
# the long ones do not run alone at the end while the other core waits.
slowest=(./test/e2e ./internal/controller ./test/bench ./internal/shard ./test/interop ./internal/conformance)
module=$(go list -m)
mapfile -t rest < <(go list ./... | sed "s|^$module|.|" | grep -vxF "$(printf '%s\n' "${slowest[@]}")")
echo "running tests (control plane from $assets); the events go to $bin/test.json"
KUBEBUILDER_ASSETS="$assets" go test -json -count=1 -timeout 20m "${slowest[@]}" "${rest[@]}" | tee "$bin/test.json" | "$bin/testtimes"
