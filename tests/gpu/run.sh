#!/usr/bin/env bash
# run.sh -- the GPU check, as ONE script for the device machine (an H200,
# 16 cores; budget: the script ends by ~7.7 minutes whatever happens).
# Prepare here first:
#     tests/gpu/fetch_debs.sh        (.deps/debs, git-ignored; --no-server: tests only)
# then run there, with carry [".deps"]:
#     tests/gpu/run.sh
#
# Order = priority, every step under a time limit cut to what is left:
#   1. tools and versions (nvcc, cmake, compilers, glibc), unpack the carried
#      .debs into .deps/root and point pkg-config, the compiler and the loader
#      at them; pkg-config = the machine's, else the carried pkgconf when it
#      runs here (it needs glibc 2.34), else tests/gpu/pkg-config.py;
#   2. configure once (sm_90; the server too when its libraries are found),
#      build the kernels and gpu_bench; then, IN THE BACKGROUND, write the
#      models one after the other (a3b Q4_K 17 GB, mtp-demo, next-a3b Q4_K:
#      single-threaded, ~1.5 min each; in /dev/shm when it has 48 GiB free)
#      while the CUDA suites are built and run;
#   3. ctest -L cuda (cuda_kern_host, cuda_status, cuda_ops: every op against the CPU,
#      cuda_model: the whole model, graphs and MTP against the CPU); on a
#      failure each tcase of cuda_ops again in its own process (a sticky CUDA
#      error kills every later test of a process), and the first failing
#      tcase under compute-sanitizer (which kernel, which address), or
#      cuda_model under it when only that failed;
#   4. gpu_bench kern: the a3b decode matvec shapes (wq, wk/wv, wo, experts, F32
#      router) at np 1 and 4 with weights read from HBM, each weight type alone at
#      32768x2048, eager and graphed (GB/s), and the delta rule on a 512-row prompt
#      read, chunked against row by row;
#      tests/gpu/attn_check.cu: both attention kernels against float64, timed;
#      tests/gpu/small_kern.cu: norms, norm+rope, MoE route/group/combine and
#      quantize_q8_1 at the a3b shape, us per graphed launch (~15 s);
#   5. gpu_bench run on a3b Q4_K: prompt 512, decode np 1 and 4 (greedy ids
#      drawn on the device, sampled ids (top-k 40 / top-p / min-p) drawn on
#      the device, then whole logits copied back); then decode np 1 again with
#      STRATA_CUDA_FUSE=0 (~30 s, mostly the load): launches per token and
#      tok/s fused vs unfused, and their ratio, in the summary;
#   6. strata (built in the same tree): strata bench --backend cuda on a3b Q4_K,
#      the same at depth 16K (-d 16384), strata bench --mtp on mtp-demo at np 1 and 4;
#   7. the Next family (next-a3b Q4_K: qwen35moe) if time is left: gpu_bench run,
#      strata bench at depth 0 and 16K; then strata bench --mtp on next-mtp-demo
#      at np 4 (qwen35moe MTP: rollbacks of the recurrent state), if 30 s are left.
# Outputs: build-gpu/logs/STEP.log per step; $OUT/summary.txt is rewritten
# after every line and $OUT/gpu-logs.tar.gz after every step, so a run
# killed at its limit still returns what it had. Exit status: 0 when the
# build and the CUDA tests passed (speed is reported, not judged).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
T0=$(date +%s)
BUDGET=${GPU_CHECK_BUDGET:-460}         # seconds; the device call's limit is 600
LOGS=$ROOT/build-gpu/logs
rm -rf "$LOGS" && mkdir -p "$LOGS"
SUMMARY=$LOGS/summary.txt
: >"$SUMMARY"
JOBS=$(nproc 2>/dev/null || echo 8)
STATUS=0
# The models (a3b Q4_K 17.3 GB, next-a3b Q4_K ~19 GB) go to /dev/shm when it has room:
# writing them is disk-bound where the page cache cannot hold them (254 s for
# the Q4_K file on a loaded dev machine, 28 s of it CPU), in RAM it is CPU-bound.
SHM_FREE=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print int($4 / 1048576)}')
if [[ -z ${GPU_MODELS_DIR:-} ]] && (( ${SHM_FREE:-0} >= 48 )); then
    GPU_MODELS_DIR=/dev/shm/strata-models
fi
MODELS=${GPU_MODELS_DIR:-$ROOT/build-gpu/models}
mkdir -p "$MODELS"
# For rehearsals on a machine without a GPU: GPU_CHECK_PRESET=medium writes
# small models instead of a3b; GPU_CHECK_PKG_CONFIG=shim forces the Python
# pkg-config (with PKG_CONFIG_LIBDIR=/nonexistent the system .pc files are
# out of sight too).
PRESET=${GPU_CHECK_PRESET:-a3b}
SCALE=${GPU_CHECK_LIMIT_SCALE:-1}      # rehearsals on 2 cores: every step limit x SCALE

pack_logs() {
    [[ -n ${OUT:-} ]] || return 0
    mkdir -p "$OUT"
    cp "$SUMMARY" "$OUT/summary.txt" 2>/dev/null
    tar -czf "$OUT/gpu-logs.tar.gz.tmp" -C "$ROOT/build-gpu" logs 2>/dev/null &&
        mv "$OUT/gpu-logs.tar.gz.tmp" "$OUT/gpu-logs.tar.gz"
}
cleanup() {   # stop the background model writer (ours, by pid), keep what came back
    if [[ -n ${BG_PID:-} ]]; then
        pkill -TERM -P "$BG_PID" 2>/dev/null
        kill "$BG_PID" 2>/dev/null
    fi
    pack_logs
}
trap cleanup EXIT
elapsed() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( BUDGET - $(elapsed) )); }
say() {
    echo "gpu-check [$(elapsed)s] $*" | tee -a "$SUMMARY"
    [[ -n ${OUT:-} ]] && mkdir -p "$OUT" && cp "$SUMMARY" "$OUT/summary.txt"
    return 0
}
# step NAME LIMIT CMD...: run with min(LIMIT, time left) seconds, log to NAME.log
step() {
    local name=$1 limit=$(( $2 * SCALE )) t rc; shift 2
    (( limit > $(left) )) && limit=$(left)
    if (( limit < 5 )); then say "$name: skipped, time budget spent"; return 124; fi
    t=$(date +%s)
    timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
    say "$name: exit $rc in $(( $(date +%s) - t ))s$( ((rc == 124)) && echo ' (TIMED OUT)')"
    ((rc != 0)) && grep -v '^[[:space:]]*$' "$LOGS/$name.log" | tail -n 3 | cut -c1-300 |
        sed 's/^/    | /' | tee -a "$SUMMARY"
    pack_logs
    return $rc
}

# ---- 1. tools ------------------------------------------------------------------
if ! command -v nvcc >/dev/null; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin /opt/cuda/bin; do
        [[ -x $d/nvcc ]] && { export PATH=$d:$PATH; break; }
    done
fi
say "host: $(nproc) cores, $(free -g 2>/dev/null | awk '/Mem:/{print $2 " GiB"}'), $(ldd --version 2>&1 | head -1)"
nvidia-smi >"$LOGS/nvidia-smi.log" 2>&1
say "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "nvcc: $(command -v nvcc || echo MISSING) $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
say "cmake $(cmake --version 2>/dev/null | head -1 | awk '{print $3}'), ninja $(ninja --version 2>/dev/null || echo no), cc $(cc -dumpfullversion 2>/dev/null), python3 $(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || echo no)"
command -v nvcc >/dev/null || { say "FAILED: no nvcc on this machine"; exit 1; }
df -h "$MODELS" | tail -1 | awk -v d="$MODELS" '{print "models in " d ": " $4 " free"}' |
    while read -r l; do say "$l"; done

# The top-level CMakeLists asks for CMake 3.25 (what the dev machine has);
# nothing in it needs more than 3.20, so an older CMake here gets a patched
# copy of the line (this tree is a throwaway copy).
CMV=$(cmake --version 2>/dev/null | head -1 | awk '{print $3}')
if [[ -n $CMV ]] && printf '%s\n3.25\n' "$CMV" | sort -V | head -1 | grep -qv '^3\.25$'; then
    sed -i 's/cmake_minimum_required(VERSION 3\.25)/cmake_minimum_required(VERSION 3.20)/' CMakeLists.txt
    say "cmake $CMV < 3.25: lowered cmake_minimum_required to 3.20 in this copy"
fi

unpack_deb() { # unpack_deb FILE DEST: dpkg -x, or ar + tar where dpkg is missing
    if command -v dpkg >/dev/null; then
        dpkg -x "$1" "$2"
    else
        local tmp; tmp=$(mktemp -d)
        (cd "$tmp" && ar x "$1" && tar -xf data.tar.* -C "$2")
        rm -rf "$tmp"
    fi
}
DEB_ROOT=$ROOT/.deps/root
if compgen -G ".deps/debs/*.deb" >/dev/null; then
    rm -rf "$DEB_ROOT" && mkdir -p "$DEB_ROOT/bin"
    for f in .deps/debs/*.deb; do unpack_deb "$ROOT/$f" "$DEB_ROOT" || say "cannot unpack $f"; done
    LIBDIR=$DEB_ROOT/usr/lib/x86_64-linux-gnu
    # libmicrohttpd.pc names gnutls in Requires.private; pkgconf insists on
    # finding it even for a shared link. The .so needs the machine's own
    # libgnutls at run time; the .pc only has to exist.
    [[ -f $LIBDIR/pkgconfig/libmicrohttpd.pc ]] &&
        printf 'Name: gnutls\nDescription: stub (tests/gpu/run.sh)\nVersion: 3.7.9\nLibs:\nCflags:\n' \
            >"$LIBDIR/pkgconfig/gnutls.pc"
    export PKG_CONFIG_SYSROOT_DIR=$DEB_ROOT
    export PKG_CONFIG_PATH=$LIBDIR/pkgconfig:$DEB_ROOT/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LIBRARY_PATH=$LIBDIR${LIBRARY_PATH:+:$LIBRARY_PATH}
    if [[ ${GPU_CHECK_PKG_CONFIG:-} == shim ]] || ! command -v pkg-config >/dev/null; then
        if [[ ${GPU_CHECK_PKG_CONFIG:-} != shim ]] &&
           "$DEB_ROOT/usr/bin/pkgconf" --version >/dev/null 2>&1; then
            ln -sf "$DEB_ROOT/usr/bin/pkgconf" "$DEB_ROOT/bin/pkg-config"
            say "pkg-config: the carried pkgconf"
        else
            printf '#!/bin/sh\nexec python3 "%s" "$@"\n' "$ROOT/tests/gpu/pkg-config.py" \
                >"$DEB_ROOT/bin/pkg-config"
            chmod +x "$DEB_ROOT/bin/pkg-config"
            say "pkg-config: tests/gpu/pkg-config.py (the carried pkgconf does not run here)"
        fi
        export PATH=$DEB_ROOT/bin:$PATH
    else
        say "pkg-config: the machine's ($(command -v pkg-config))"
    fi
    say "unpacked $(ls .deps/debs/*.deb | wc -l) carried packages into .deps/root"
else
    say "no .deps/debs: relying on the machine's own Check/cJSON/pkg-config (run tests/gpu/fetch_debs.sh first)"
fi

# ---- 2. configure, build; models in the background ------------------------------
SERVER=OFF
pkg-config --exists libmicrohttpd yaml-0.1 sqlite3 2>/dev/null && SERVER=ON
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
configure() {
    step configure 90 cmake -S . -B build-gpu "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DSTRATA_SERVER=$SERVER -DSTRATA_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90
}
# a build-gpu left by a tree at another path (a copied folder) cannot be reused
if [[ -f build-gpu/CMakeCache.txt ]] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT" build-gpu/CMakeCache.txt; then
    say "build-gpu was configured for another tree: configuring afresh"
    rm -rf build-gpu/CMakeCache.txt build-gpu/CMakeFiles
fi
CONF_OK=0
configure && CONF_OK=1
if ((!CONF_OK)) && [[ $SERVER == ON ]]; then
    grep -E "Error|error" "$LOGS/configure.log" | head -5 | tee -a "$SUMMARY"
    say "configure with the server failed: again without it (no strata bench)"
    SERVER=OFF
    rm -rf build-gpu/CMakeCache.txt build-gpu/CMakeFiles
    configure && CONF_OK=1
fi
((CONF_OK)) || { say "FAILED: configure"; tail -20 "$LOGS/configure.log" | tee -a "$SUMMARY"; exit 1; }
grep -q "CUDA backend ON" "$LOGS/configure.log" || { say "FAILED: CMake found no CUDA compiler"; exit 1; }
# gpu_bench first (it writes the models), the suites while the models are written
step build_bench 200 cmake --build build-gpu -j"$JOBS" --target st_kernels gpu_bench || {
    say "FAILED: build"; grep -E "error|Error" "$LOGS/build_bench.log" | head -20 | tee -a "$SUMMARY"
    exit 1; }

BENCH=build-gpu/tests/gpu_bench
# make_models: write the models one after the other; NAME.done holds the
# exit status (0 = made). a3b falls back to the medium preset when this
# build lacks it (said in the summary).
make_models() {
    local spec name preset quant rc
    for spec in "big-q4_k $PRESET q4_k" "mtp-demo mtp-demo q4_k" "next-q4_k next-$PRESET q4_k"; do
        read -r name preset quant <<<"$spec"
        if [[ -s $MODELS/$name.gguf && $(cat "$MODELS/$name.made" 2>/dev/null) == "$preset $quant" ]]; then
            # a rerun on a warm machine
            echo "bench: reusing $MODELS/$name.gguf ($(cat "$MODELS/$name.made"))" >"$LOGS/make_$name.log"
            echo 0 >"$MODELS/$name.done"
            continue
        fi
        rm -f "$MODELS/$name.gguf"
        timeout 240 "$BENCH" make "$MODELS/$name.gguf" "$preset" "$quant" >"$LOGS/make_$name.log" 2>&1
        rc=$?
        if ((rc != 0)) && grep -q "unknown preset" "$LOGS/make_$name.log" && [[ $preset != medium ]]; then
            timeout 120 "$BENCH" make "$MODELS/$name.gguf" medium "$quant" >>"$LOGS/make_$name.log" 2>&1
            rc=$?
            echo "medium" >"$MODELS/$name.fallback"
        fi
        ((rc == 0)) && echo "$preset $quant" >"$MODELS/$name.made"
        echo "$rc" >"$MODELS/$name.done"
    done
}
rm -f "$MODELS"/*.done "$MODELS"/*.fallback
make_models >"$LOGS/make_models.log" 2>&1 </dev/null &   # not on our stdout: the
BG_PID=$!                                                  # device call waits for it
step build 150 cmake --build build-gpu -j"$JOBS" --target test_cuda_ops test_cuda_kern_host \
    test_cuda_model test_cuda_status || {
    say "FAILED: build"; grep -E "error|Error" "$LOGS/build.log" | head -20 | tee -a "$SUMMARY"
    exit 1; }
# wait_model NAME: 0 when NAME.gguf was made (waits for it, within the budget)
wait_model() {
    while [[ ! -f $MODELS/$1.done ]] && (( $(left) > 10 )); do sleep 2; done
    [[ -f $MODELS/$1.done ]] || { say "model $1: not made in time"; return 1; }
    local rc; rc=$(cat "$MODELS/$1.done")
    [[ -f $MODELS/$1.fallback ]] && say "model $1: the $PRESET preset is not in this build: the medium preset instead"
    ((rc == 0)) || { say "model $1: make failed (exit $rc, make_$1.log)"; return 1; }
    say "model $1: $(grep -h '^bench:' "$LOGS/make_$1.log" | tail -1)"
}

# ---- 3. CUDA tests -----------------------------------------------------------------
CASES=(backend matmul rows attention moe optional fusion)   # the tcases of test_cuda_ops.c
if step ctest_cuda 180 ctest --test-dir build-gpu -L cuda -V --timeout 170; then
    grep -q "Skipped\|Not Run" "$LOGS/ctest_cuda.log" && { say "FAILED: CUDA tests skipped on a GPU machine"; STATUS=1; }
    grep -hE "cuda_ops: |cuda_model: |Checks: |tests passed" "$LOGS/ctest_cuda.log" | head -12 |
        while read -r l; do say "$l"; done
else
    say "FAILED: CUDA tests"; STATUS=1
    grep -E ":[FE]:|unusable|Failed|Timeout" "$LOGS/ctest_cuda.log" | head -25 | tee -a "$SUMMARY"
    FIRST_BAD=
    for c in "${CASES[@]}"; do
        if CK_RUN_CASE=$c step "case_$c" 60 build-gpu/tests/test_cuda_ops; then :; else
            [[ -z $FIRST_BAD ]] && FIRST_BAD=$c
            grep -E ":[FE]:" "$LOGS/case_$c.log" | head -5 | tee -a "$SUMMARY"
        fi
    done
    if [[ -n $FIRST_BAD ]] && command -v compute-sanitizer >/dev/null; then
        CK_RUN_CASE=$FIRST_BAD step "sanitize_$FIRST_BAD" 90 compute-sanitizer --tool memcheck \
            --print-limit 20 build-gpu/tests/test_cuda_ops
        grep -E "=========" "$LOGS/sanitize_$FIRST_BAD.log" | head -30 | tee -a "$SUMMARY"
    elif grep -qE "cuda_model .*(Failed|Exception|Timeout)" "$LOGS/ctest_cuda.log" &&
         command -v compute-sanitizer >/dev/null; then
        # the ops pass one by one but the whole model does not: its kernels' accesses
        step sanitize_model 120 compute-sanitizer --tool memcheck --print-limit 20 \
            build-gpu/tests/test_cuda_model
        grep -E "=========|cuda_model:|:[FE]:" "$LOGS/sanitize_model.log" | head -30 |
            tee -a "$SUMMARY"
    fi
fi

# ---- 4. kernels alone ---------------------------------------------------------------
step bench_kern 60 "$BENCH" kern -b cuda
grep "^bench:" "$LOGS/bench_kern.log" | tee -a "$SUMMARY"
# attention alone: both kernels against float64, then their speed (tests/gpu/attn_check.cu)
if step build_attn 90 nvcc -std=c++17 -O2 -arch=sm_90 -Ikernels -Iinclude -Xcompiler -fopenmp \
        kernels/attention.cu kernels/attention_tc.cu tests/gpu/attn_check.cu \
        -o build-gpu/attn_check -lgomp; then
    step attn_check 120 build-gpu/attn_check || STATUS=1
    grep -E "FAIL|^speed:|all ok|FAILED" "$LOGS/attn_check.log" | head -40 | tee -a "$SUMMARY"
fi
# the small per-layer kernels alone, a3b shape, np 1 and 4 (tests/gpu/small_kern.cu)
if step build_small 60 nvcc -std=c++17 -O2 -arch=sm_90 -Ikernels -Iinclude kernels/norm.cu \
        kernels/rope.cu kernels/moe.cu kernels/quantize.cu tests/gpu/small_kern.cu \
        -o build-gpu/small_kern; then
    step small_kern 30 build-gpu/small_kern || STATUS=1
    grep -E "^speed:" "$LOGS/small_kern.log" | tee -a "$SUMMARY"
fi

# ---- 5. the big model (a3b) at Q4_K ------------------------------------------------------
# fusion_summary: np 1 greedy decode, fused (bench_q4_k) against unfused
# (bench_q4_k_nofuse): launches per token and tokens/s, and their ratio.
fusion_summary() {
    local f u lf lu tf tu
    f=$LOGS/bench_q4_k.log u=$LOGS/bench_q4_k_nofuse.log
    lf=$(grep -m1 "decode np=1 (greedy ids back): .*launches per step" "$f" | sed -E 's/.*: ([0-9.]+) launches per step \(([0-9.]+) per layer.*/\1 (\2 per layer)/')
    lu=$(grep -m1 "decode np=1 (greedy ids back): .*launches per step" "$u" | sed -E 's/.*: ([0-9.]+) launches per step \(([0-9.]+) per layer.*/\1 (\2 per layer)/')
    tf=$(grep -m1 "decode np=1 (greedy ids back): .*tok/s aggregate" "$f" | sed -E 's/.*: ([0-9.]+) tok\/s aggregate.*/\1/')
    tu=$(grep -m1 "decode np=1 (greedy ids back): .*tok/s aggregate" "$u" | sed -E 's/.*: ([0-9.]+) tok\/s aggregate.*/\1/')
    say "fusion (a3b q4_k, np 1 greedy): launches per token fused ${lf:-?}, unfused ${lu:-?}"
    if [[ -n $tf && -n $tu ]]; then
        say "fusion (a3b q4_k, np 1 greedy): ${tf} tok/s fused, ${tu} tok/s unfused, ratio fused/unfused $(awk -v a="$tf" -v b="$tu" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')"
    else
        say "fusion (a3b q4_k, np 1 greedy): tok/s fused ${tf:-?}, unfused ${tu:-?} (a run failed)"
    fi
}
Q4K=
if wait_model big-q4_k; then
    Q4K=$MODELS/big-q4_k.gguf
    step bench_q4_k 120 "$BENCH" run "$Q4K" -b cuda -np 1,4 -n 64 -p 512 -c 4096
    grep "^bench:" "$LOGS/bench_q4_k.log" | sed "s/^/  q4_k: /" | tee -a "$SUMMARY"
    # the same decode with every fusion off (STRATA_CUDA_FUSE=0, read at backend
    # open): np 1 only, no prompt; the model load (~15-30 s) is most of it
    if (( $(left) > 60 )); then
        STRATA_CUDA_FUSE=0 step bench_q4_k_nofuse 60 "$BENCH" run "$Q4K" -b cuda -np 1 -n 64 -p 0 -c 4096
        grep "^bench:" "$LOGS/bench_q4_k_nofuse.log" | sed "s/^/  q4_k unfused: /" | tee -a "$SUMMARY"
        fusion_summary
    else
        say "unfused a3b bench skipped: time budget"
    fi
fi

# ---- 6. strata bench (the engine, graphs, MTP) ------------------------------------
sbench() { # sbench NAME LIMIT ARGS...
    local name=$1 limit=$2; shift 2
    (( $(left) < limit / 2 )) && { say "time budget reached: skipping $name"; return 1; }
    step "$name" "$limit" "$STRATA" bench "$@"
    grep -E "^\| " "$LOGS/$name.log" | sed "s/^/  $name: /" | tee -a "$SUMMARY"
}
if [[ $SERVER == ON ]] && (( $(left) > 90 )); then
    STRATA=build-gpu/src/strata                # src/CMakeLists.txt puts it there
    if step build_strata 90 cmake --build build-gpu -j"$JOBS" --target strata &&
       [[ -x $STRATA ]]; then
        CUDA_FLAGS=(--backend cuda --gpu 0)
        [[ -n $Q4K ]] && sbench strata_bench 100 -m "$Q4K" "${CUDA_FLAGS[@]}" -p 512 -n 64 -np 4 -r 2
        # long context on the GPU (issue 19): pp512 and tg32 after 16K tokens
        [[ -n $Q4K ]] && sbench strata_bench_d16k 100 -m "$Q4K" "${CUDA_FLAGS[@]}" -p 512 -n 32 \
            -d 16384 -r 1
        if wait_model mtp-demo; then
            for np in 1 4; do
                sbench "strata_bench_mtp_np$np" 60 --mtp -m "$MODELS/mtp-demo.gguf" \
                    "${CUDA_FLAGS[@]}" -np "$np" -n 128 -r 2
            done
        fi
    else
        grep -E "error|undefined" "$LOGS/build_strata.log" | head -8 | tee -a "$SUMMARY"
    fi
else
    say "strata bench skipped: $([[ $SERVER == OFF ]] && echo 'no libmicrohttpd/libyaml/sqlite3 (fetch_debs.sh carries them)' || echo 'no time left')"
fi

# ---- 7. the Next family (qwen35moe: Gated DeltaNet + gated attention), if time is left ----
# next-a3b is the Qwen3.5-35B-A3B shape: three delta-rule layers to one attention layer, so
# the prompt runs the chunked delta rule and decode the recurrent step (docs/ENGINE.md).
if (( $(left) > 60 )) && wait_model next-q4_k; then
    step bench_next 100 "$BENCH" run "$MODELS/next-q4_k.gguf" -b cuda -np 1,4 -n 64 -p 512 -c 4096
    grep "^bench:" "$LOGS/bench_next.log" | sed "s/^/  next q4_k: /" | tee -a "$SUMMARY"
    if [[ -n ${STRATA:-} && -x ${STRATA:-} ]]; then
        sbench strata_bench_next 90 -m "$MODELS/next-q4_k.gguf" --backend cuda --gpu 0 \
            -p 512 -n 64 -np 4 -r 1
        sbench strata_bench_next_d16k 90 -m "$MODELS/next-q4_k.gguf" --backend cuda --gpu 0 \
            -p 512 -n 32 -d 16384 -r 1
    fi
fi

# MTP on the Next family: next-mtp-demo (qwen35moe, drafts built to agree, Q8_0, ~47 MiB,
# written by the bench itself), 4 slots: each rejection restores the slot's recurrent state
# and re-reads the accepted rows from the verify's kept DeltaNet inputs (docs/ENGINE.md).
if [[ -n ${STRATA:-} && -x ${STRATA:-} ]] && (( $(left) > 30 )); then
    sbench strata_bench_mtp_next 45 --mtp --preset next-mtp-demo --backend cuda --gpu 0 \
        -np 4 -n 128 -r 2
fi

say "done in $(elapsed)s, status $STATUS"
echo "---- summary ----"
cat "$SUMMARY"
exit $STATUS
