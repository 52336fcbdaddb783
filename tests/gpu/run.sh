#!/usr/bin/env bash
# run.sh -- the GPU check of issue 7, as ONE script for the device machine
# (an H200; budget: under 8 minutes). Prepare here first:
#     tests/gpu/fetch_debs.sh [--server]       (.deps/debs, git-ignored)
# then run there, with carry [".deps"]:
#     tests/gpu/run.sh
#
# Steps (each logged to build-gpu/logs/STEP.log; at exit the logs are packed
# into $OUT/gpu-logs.tar.gz and the summary copied to $OUT/summary.txt --
# $OUT returns at most 8 files; without $OUT they stay in build-gpu/logs):
#   1. device facts (nvidia-smi), unpack the carried .debs into .deps/root and
#      point pkg-config (the carried pkgconf when the machine has none),
#      the compiler and the loader at them;
#   2. configure + build for sm_90 with -DSTRATA_SERVER=OFF: the kernels, the
#      CUDA backend, the test suites, gpu_bench;
#   3. ctest -L cuda (every op against the CPU backend, the host decoders);
#   4. matmul kernels alone (gpu_bench kern: GB/s eager and graphed), then
#      make the a3b model at Q4_K and IQ3_S (gpu_bench make; falls back to
#      the medium preset, with a clear line, when a3b is not in this build);
#   5. decode/prompt speed with gpu_bench (np 1 and np 4): tokens/s and the
#      fraction of 4.8 TB/s;
#   6. `strata bench --backend cuda` if a strata binary can be built (needs
#      --server debs): the Q4_K model at np 1 and 4, then `strata bench --mtp`
#      on mtp-demo at np 1 and 4 (each without and with MTP); otherwise says why.
# Exit status: 0 when the build and the CUDA tests passed (speed is
# reported, not judged); non-zero otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
OUTDIR=$ROOT/build-gpu/logs            # one log per step
rm -rf "$OUTDIR" && mkdir -p "$OUTDIR"
SUMMARY=$OUTDIR/summary.txt
: >"$SUMMARY"
pack_logs() {
    if [[ -n ${OUT:-} ]]; then
        mkdir -p "$OUT"
        tar -czf "$OUT/gpu-logs.tar.gz" -C "$ROOT/build-gpu" logs 2>/dev/null
        cp "$SUMMARY" "$OUT/summary.txt"
    fi
}
trap pack_logs EXIT
T0=$(date +%s)
JOBS=$(nproc 2>/dev/null || echo 8)
STATUS=0
MODELS=${GPU_MODELS_DIR:-/tmp/strata-gpu-models}

say() { echo "gpu-check [$(( $(date +%s) - T0 ))s] $*" | tee -a "$SUMMARY"; }
step() { # step NAME LIMIT_S CMD... : run with a time limit, log to $OUTDIR/NAME.log
    local name=$1 limit=$2; shift 2
    local t
    t=$(date +%s)
    timeout "$limit" "$@" >"$OUTDIR/$name.log" 2>&1
    local rc=$?
    say "$name: exit $rc in $(( $(date +%s) - t ))s (log $name.log)"
    return $rc
}

# ---- 1. device and carried packages -----------------------------------------
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi >"$OUTDIR/nvidia-smi.log" 2>&1 && say "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
command -v nvcc >/dev/null && say "nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

unpack_deb() { # unpack_deb FILE DEST: dpkg -x, or ar + tar where dpkg is missing
    if command -v dpkg >/dev/null; then
        dpkg -x "$1" "$2"
    else
        local tmp; tmp=$(mktemp -d)
        (cd "$tmp" && ar x "$1" && tar -xf data.tar.* -C "$2")
        rm -rf "$tmp"
    fi
}
if compgen -G ".deps/debs/*.deb" >/dev/null; then
    DEB_ROOT=$ROOT/.deps/root
    rm -rf "$DEB_ROOT" && mkdir -p "$DEB_ROOT"
    for f in .deps/debs/*.deb; do unpack_deb "$ROOT/$f" "$DEB_ROOT"; done
    LIBDIR=$DEB_ROOT/usr/lib/x86_64-linux-gnu
    export PKG_CONFIG_SYSROOT_DIR=$DEB_ROOT
    export PKG_CONFIG_PATH=$LIBDIR/pkgconfig:$DEB_ROOT/usr/share/pkgconfig
    export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LIBRARY_PATH=$LIBDIR${LIBRARY_PATH:+:$LIBRARY_PATH}
    if ! command -v pkg-config >/dev/null && [[ -x $DEB_ROOT/usr/bin/pkgconf ]]; then
        mkdir -p "$DEB_ROOT/bin" && ln -sf "$DEB_ROOT/usr/bin/pkgconf" "$DEB_ROOT/bin/pkg-config"
        export PATH=$DEB_ROOT/bin:$PATH
        say "using the carried pkgconf"
    fi
    say "unpacked $(ls .deps/debs/*.deb | wc -l) carried packages into .deps/root"
else
    say "no .deps/debs: relying on the machine's own Check/cJSON/pkg-config (run tests/gpu/fetch_debs.sh here first)"
fi

# ---- 2. build -------------------------------------------------------------
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
step configure 120 cmake -S . -B build-gpu "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSTRATA_SERVER=OFF -DSTRATA_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 || {
    say "FAILED: configure (see configure.log)"; exit 1; }
grep -q "CUDA backend ON" "$OUTDIR/configure.log" || { say "FAILED: CMake found no CUDA compiler"; exit 1; }
step build 300 cmake --build build-gpu -j"$JOBS" --target st_kernels test_cuda_ops \
    test_cuda_kern_host test_backend_sample test_backend_cpu gpu_bench || {
    say "FAILED: build (see build.log)"; tail -30 "$OUTDIR/build.log"; exit 1; }

# ---- 3. CUDA tests ---------------------------------------------------------------
if step ctest_cuda 240 ctest --test-dir build-gpu -L cuda --output-on-failure; then
    grep -q "Skipped" "$OUTDIR/ctest_cuda.log" && { say "FAILED: CUDA tests skipped on a GPU machine"; STATUS=1; }
else
    say "FAILED: CUDA tests"; STATUS=1
    grep -E "FAIL|:F:|:E:" "$OUTDIR/ctest_cuda.log" | head -20 | tee -a "$SUMMARY"
fi
step ctest_backend 120 ctest --test-dir build-gpu -R "backend_sample|backend_cpu" || STATUS=1

# ---- 4. kernels alone, then models --------------------------------------------
BENCH=build-gpu/tests/gpu_bench
step bench_kern 90 "$BENCH" kern -b cuda && grep "^bench:" "$OUTDIR/bench_kern.log" | tee -a "$SUMMARY"
mkdir -p "$MODELS"
make_model() { # make_model QUANT -> path of the model on stdout-free global MODEL
    MODEL=$MODELS/a3b-$1.gguf
    [[ -s $MODEL ]] && { say "reusing $MODEL"; return 0; }
    if step "make_a3b_$1" 240 "$BENCH" make "$MODEL" a3b "$1"; then return 0; fi
    if grep -q "unknown preset" "$OUTDIR/make_a3b_$1.log"; then
        say "the a3b preset is not in this build: measuring the medium preset instead (not the A3B shape)"
        MODEL=$MODELS/medium-$1.gguf
        step "make_medium_$1" 120 "$BENCH" make "$MODEL" medium "$1" && return 0
    fi
    return 1
}

# ---- 5. speed -------------------------------------------------------------------
for q in q4_k iq3_s; do
    (( $(date +%s) - T0 > 420 )) && { say "time budget reached: skipping $q"; break; }
    make_model "$q" || { say "no model for $q"; continue; }
    [[ $q == q4_k ]] && Q4K_MODEL=$MODEL
    step "bench_$q" 150 "$BENCH" run "$MODEL" -b cuda -np 1,4 -n 64 -p 512 -c 4096
    grep "^bench:" "$OUTDIR/bench_$q.log" | sed "s/^/  $q: /" | tee -a "$SUMMARY"
done

# ---- 6. strata bench (needs the server's libraries) ---------------------------
# `strata bench --backend cuda --gpu 0` on the Q4_K model: np 1 and np 4 (the
# bench always runs np 1, then -np N), prompt 512 and 64 decode steps; then
# `strata bench --mtp` on the mtp-demo preset (drafts agree by construction)
# at np 1 and np 4: each run decodes without and with MTP drafting. Every
# step checks the 8-minute budget first (the limits below keep it inside).
left() { echo $(( 470 - ($(date +%s) - T0) )); }   # seconds left before 8 min, with slack
sbench() { # sbench NAME LIMIT ARGS...: one strata bench step if time is left
    local name=$1 limit=$2; shift 2
    (( $(left) < limit / 2 )) && { say "time budget reached: skipping $name"; return 1; }
    (( limit > $(left) )) && limit=$(left)
    step "$name" "$limit" build-gpu-srv/strata bench "$@"
    grep -E "^\| " "$OUTDIR/$name.log" | sed "s/^/  $name: /" | tee -a "$SUMMARY"
}
if (( $(date +%s) - T0 < 400 )) && pkg-config --exists libmicrohttpd yaml-0.1 2>/dev/null; then
    if step configure_server 60 cmake -S . -B build-gpu-srv "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
            -DSTRATA_WERROR=OFF -DSTRATA_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90 &&
       step build_server 240 cmake --build build-gpu-srv -j"$JOBS" --target strata; then
        HELP=$(build-gpu-srv/strata bench --help 2>&1 || true)
        if ! grep -q -- "--backend" <<<"$HELP"; then
            say "strata bench has no --backend flag: it measures the CPU engine; skipped"
        else
            CUDA_FLAGS=(--backend cuda --gpu 0)
            if [[ -n ${Q4K_MODEL:-} ]]; then
                sbench strata_bench 120 -m "$Q4K_MODEL" "${CUDA_FLAGS[@]}" -p 512 -n 64 -np 4 -r 2
            else
                say "no Q4_K model: strata bench on it skipped"
            fi
            if (( $(left) > 60 )) && step make_mtp 60 "$BENCH" make "$MODELS/mtp-demo.gguf" mtp-demo q4_k; then
                for np in 1 4; do
                    sbench "strata_bench_mtp_np$np" 90 --mtp -m "$MODELS/mtp-demo.gguf" \
                        "${CUDA_FLAGS[@]}" -np "$np" -n 128 -r 2
                done
            fi
        fi
    fi
else
    say "strata bench skipped: no libmicrohttpd/libyaml here (tests/gpu/fetch_debs.sh --server carries them) or no time left"
fi

say "done in $(( $(date +%s) - T0 ))s, status $STATUS"
echo "---- summary ----"
cat "$SUMMARY"
exit $STATUS
