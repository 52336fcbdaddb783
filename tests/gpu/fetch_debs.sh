#!/usr/bin/env bash
# fetch_debs.sh -- run HERE (a Debian 12 machine with apt): download the .deb
# files the GPU check needs and the GPU machine may lack, into .deps/debs/
# (git-ignored; name ".deps" in the device run's `carry`). tests/gpu/run.sh
# unpacks them there with dpkg -x (or ar + tar) and points pkg-config at them.
#
#   tests/gpu/fetch_debs.sh              Check, cJSON, pkgconf, libmicrohttpd, libyaml, libsqlite3
#   tests/gpu/fetch_debs.sh --no-server  without the server's two (no strata bench there)
#
# Why each: Check (+ subunit) runs the test suites; cJSON is linked by the
# model module (make-model's tokenizer.json import); libmicrohttpd + libyaml
# build `strata` for `strata bench --backend cuda`; pkgconf because CMake
# finds all of these through pkg-config (run.sh falls back to
# tests/gpu/pkg-config.py where the carried pkgconf, built for glibc 2.34+,
# cannot run); libsqlite3 because the server links it (--state-dir). The
# shared libmicrohttpd needs the machine's own libgnutls at run time
# (present on common distributions). About 2 MiB in all.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=.deps/debs
pkgs=(check libsubunit0 libsubunit-dev libcjson1 libcjson-dev pkgconf-bin libpkgconf3)
if [[ "${1:-}" != "--no-server" ]]; then
    pkgs+=(libmicrohttpd12 libmicrohttpd-dev libyaml-0-2 libyaml-dev libsqlite3-0 libsqlite3-dev)
fi
mkdir -p "$dir"
rm -f "$dir"/*.deb
(cd "$dir" && apt-get download "${pkgs[@]}")
echo "fetch_debs: $(ls "$dir"/*.deb | wc -l) packages, $(du -sh "$dir" | cut -f1) in $dir"
echo "fetch_debs: pass carry [\".deps\"] to the device run, then: tests/gpu/run.sh"
