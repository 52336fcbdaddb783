#!/usr/bin/env bash
# serve.sh -- set up, build and start `strata serve --batch --parallel 4` on
# the built-in default model. Extra arguments go to `strata serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSTRATA_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target strata
exec build/src/strata serve --batch --parallel 4 "$@"
