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

pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libcjson-dev libyaml-dev check curl)
if [[ $want_tests -eq 1 ]]; then
    # clang + its runtime: the libFuzzer targets; prometheus: promtool for
    # the /metrics format check; nodejs/npm: the OpenAI SDK end-to-end tests.
    pkgs+=(clang libclang-rt-14-dev prometheus python3)
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
