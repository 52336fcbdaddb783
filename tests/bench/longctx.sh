#!/usr/bin/env bash
# longctx.sh -- prompt and decode speed at growing context depth (docs/ENGINE.md
# "Long context"): `strata bench -d D` at each depth with the tiled CPU attention,
# against a baseline measured in the same run: the per-row attention it replaced
# (STRATA_CPU_ATTN=plain, up to --plain-max depth: it gets slow) and llama-bench -d
# when llama-bench is on PATH (same GGUF, threads and sizes). Not a ctest: speed is
# never asserted, only printed.
#
#   tests/bench/longctx.sh [--quick] [--32k] [--plain-max D] [STRATA [MODEL]]
#
#   --quick        depths 0 1024 4096, pp128 / tg16, one repetition
#   (default)      depths 0 4096 16384, pp512 / tg32, two repetitions
#   --32k          also depth 32768
#   --plain-max D  deepest depth the plain baseline runs at (default 4096)
#   STRATA         the strata binary (default build-bench/src/strata, else build/src/strata)
#   MODEL          a GGUF (default: the medium preset at q4_k_m, made next to STRATA)
# Threads: STRATA_BENCH_THREADS (default: all cores). With STRATA_BENCH_SUMMARY set
# (scripts/bench.sh) the ratios are appended to it as summary rows.
set -euo pipefail
cd "$(dirname "$0")/../.."

quick=0 deep=0 plain_max=4096 args=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --quick) quick=1 ;;
    --32k) deep=1 ;;
    --plain-max) plain_max=$2; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) args+=("$1") ;;
    esac
    shift
done
strata=${args[0]:-}
if [[ -z $strata ]]; then
    strata=build-bench/src/strata
    [[ -x $strata ]] || strata=build/src/strata
fi
[[ -x $strata ]] || { echo "longctx.sh: no strata binary at $strata (build first)" >&2; exit 1; }
model=${args[1]:-$(dirname "$strata")/longctx-medium-q4_k_m.gguf}
if [[ ! -f $model ]]; then
    "$strata" make-model "$model" --preset medium --quant q4_k_m --seed 1 >/dev/null
fi
T=${STRATA_BENCH_THREADS:-$(nproc)}
if [[ $quick -eq 1 ]]; then
    depths=(0 1024 4096) P=128 N=16 R=1
else
    depths=(0 4096 16384) P=512 N=32 R=2
fi
[[ $deep -eq 1 ]] && depths+=(32768)
llama=$(command -v llama-bench || true)

# "test avg" per row of a llama-bench style markdown table (strata's or llama-bench's):
# the test column is the second to last, t/s the last.
md_rows() { awk -F'|' 'NF > 4 && $(NF-1) ~ /[0-9]/ { t = $(NF-2); gsub(/^ +| +$/, "", t);
                                                    split($(NF-1), a, "±"); gsub(/ /, "", a[1]);
                                                    print t "|" a[1] }'; }
fig() { awk -F'|' -v t="$2" '$1 == t { print $2 }' <<<"$1"; }
ratio() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", b / a }'; fi; }

echo "== longctx: $strata, $model, $T threads, pp$P / tg$N, depths ${depths[*]}," \
     "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
rows=()
for d in "${depths[@]}"; do
    tiled=$("$strata" bench -m "$model" -p "$P" -n "$N" -d "$d" -t "$T" -r "$R" 2>/dev/null |
            md_rows)
    plain=""
    if [[ $d -le $plain_max ]]; then
        plain=$(STRATA_CPU_ATTN=plain "$strata" bench -m "$model" -p "$P" -n "$N" -d "$d" \
                -t "$T" -r "$R" 2>/dev/null | md_rows)
    fi
    lb=""
    if [[ -n $llama ]]; then
        lb=$("$llama" -m "$model" -p "$P" -n "$N" -d "$d" -t "$T" -r "$R" -o md 2>/dev/null |
             md_rows || true)
    fi
    for t in "pp$P" "tg$N"; do
        name=$t; [[ $d -gt 0 ]] && name="$t @ d$d"
        a=$(fig "$tiled" "$name") b=$(fig "$plain" "$name") c=$(fig "$lb" "$name")
        rows+=("$name|${b:--}|${a:--}|$(ratio "$b" "$a")|${c:--}|$(ratio "$c" "$a")")
        if [[ -n ${STRATA_BENCH_SUMMARY:-} && -n $a ]]; then
            [[ -n $b ]] && printf 'longctx\t%s t/s: plain vs tiled attention\t%s t/s\t%s t/s\t%s\n' \
                "$name" "$b" "$a" "$(ratio "$b" "$a")" >> "$STRATA_BENCH_SUMMARY"
            [[ -n $c ]] && printf 'longctx\t%s t/s: llama-bench vs strata\t%s t/s\t%s t/s\t%s\n' \
                "$name" "$c" "$a" "$(ratio "$c" "$a")" >> "$STRATA_BENCH_SUMMARY"
        fi
    done
done
echo
echo "| test | plain t/s | tiled t/s | tiled / plain | llama-bench t/s | strata / llama-bench |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for r in "${rows[@]}"; do
    IFS='|' read -r n b a rp c rc <<<"$r"
    echo "| $n | $b | $a | ${rp:--} | $c | ${rc:--} |"
done
[[ -n $llama ]] || echo "(llama-bench is not on PATH: no llama.cpp column)"
