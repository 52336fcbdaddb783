#!/usr/bin/env bash
# deps.sh -- install what a fresh Debian 12 machine lacks to build Strata
# (and, with --test, to run every test). Idempotent: installs only what is
# missing. Run as root (or with sudo available).
set -euo pipefail

want_tests=0
[[ "${1:-}" == "--test" ]] && want_tests=1

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    SUDO="sudo"
fi

# libsqlite3-dev: --state-dir keeps stored responses and the activity log in SQLite
pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libcjson-dev libyaml-dev check curl
      libsqlite3-dev)
# libzmq3-dev, libmsgpack-dev: --kv-events (docs/KV-EVENTS.md); without them it compiles out.
pkgs+=(libzmq3-dev libmsgpack-dev)
if [[ $want_tests -eq 1 ]]; then
    # clang + its runtime: the libFuzzer targets; prometheus: promtool for
    # the /metrics format check and deploy/prometheus's rules; nodejs/npm:
    # the OpenAI SDK end-to-end tests.
    pkgs+=(clang libclang-rt-14-dev prometheus python3)
    # python3-zmq, python3-msgpack: the KV-event subscriber tests (tests/e2e/kv_events.cmake).
    pkgs+=(python3-zmq python3-msgpack)
    # python3-yaml: tests/deploy/check_deploy.py reads the deploy/ manifests.
    pkgs+=(python3-yaml)
    # chromium: the dashboard's browser test (tests/e2e/dashboard.test.mjs, playwright-core)
    pkgs+=(chromium)
    command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
    command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "deps: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
