#!/usr/bin/env bash
# Makes sure a Chromium is on the PATH for the browser test of
# `kubectl tether ui`: Debian's chromium package, installed with apt when it
# is missing (as root, or through sudo). TETHER_SKIP_BROWSER_TESTS=1 skips
# both the install and the test.
set -euo pipefail
if [ "${TETHER_SKIP_BROWSER_TESTS:-}" = 1 ]; then
  echo "chromium: TETHER_SKIP_BROWSER_TESTS=1, the browser test is skipped"
  exit 0
fi
for name in chromium chromium-browser google-chrome; do
  if command -v "$name" >/dev/null 2>&1; then
    echo "chromium: using $(command -v "$name")"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not found and no apt-get here: install Chromium, or set TETHER_SKIP_BROWSER_TESTS=1 (the browser test fails without it)" >&2
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo -n" # never wait for a password in CI or make test
export DEBIAN_FRONTEND=noninteractive
echo "chromium: not found; installing Debian's chromium with apt-get (a few minutes)"
if ! $sudo apt-get install -y -qq chromium >/dev/null; then
  echo "chromium: updating the package lists first"
  $sudo apt-get update -qq || true
  if ! $sudo apt-get install -y -qq chromium >/dev/null; then
    echo "chromium: could not install it: install Chromium, or set TETHER_SKIP_BROWSER_TESTS=1 (the browser test fails without it)" >&2
    exit 0 # the test says the same, in its own failure
  fi
fi
echo "chromium: installed $(chromium --version 2>/dev/null || echo chromium)"
