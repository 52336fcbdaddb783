#!/usr/bin/env bash
# profile.sh -- for the device machine: where a decode step's time goes.
# Builds gpu_bench (no server), writes the a3b Q4_K model, then runs a short
# np 1 decode under Nsight Compute with one metric (each kernel's duration,
# one replay pass) and sums the durations by kernel name: count, total and
# mean per kernel, as a share of the profiled time, into $OUT/profile.txt.
# Run after tests/gpu/fetch_debs.sh here, with carry [".deps"]:
#     tests/gpu/profile.sh [NP] [KERNEL]
# With KERNEL (a kernel name, e.g. attn_split), after the summary: Nsight
# Compute's full section set on that kernel's first decode launches (stall
# reasons, occupancy, memory) into $OUT/kernel.txt.
# ncu serializes kernels and keeps the caches warm between them
# (--cache-control none: its default flush made every small kernel wait on
# cold HBM reads, and the sum exceeded the wall time), so the sum is the
# GPU's busy time without the gaps between launches; gpu_bench's ms/step in
# bench.log is the wall time per step, and the difference is launch and
# host overhead.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
NP=${1:-1}
KERNEL=${2:-}
OUTD=${OUT:-build-gpu}
mkdir -p "$OUTD" build-gpu
export PATH=/usr/local/cuda/bin:$PATH
if compgen -G ".deps/debs/*.deb" >/dev/null; then   # Check, cJSON (as run.sh)
    R=$PWD/.deps/root; rm -rf "$R"; mkdir -p "$R"
    for f in .deps/debs/*.deb; do dpkg -x "$f" "$R" 2>/dev/null ||
        (t=$(mktemp -d); cd "$t" && ar x "$OLDPWD/$f" && tar -xf data.tar.* -C "$R"); done
    L=$R/usr/lib/x86_64-linux-gnu
    export PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_PATH=$L/pkgconfig LD_LIBRARY_PATH=$L LIBRARY_PATH=$L
fi
G=(); command -v ninja >/dev/null && G=(-G Ninja)
# after run.sh its tree is reused as it is (configuring it again without the server
# would rebuild what it built)
[[ -f build-gpu/CMakeCache.txt ]] ||
    cmake -S . -B build-gpu "${G[@]}" -DCMAKE_BUILD_TYPE=Release -DSTRATA_SERVER=OFF \
        -DSTRATA_WERROR=OFF -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUTD/configure.log" 2>&1 || exit 1
cmake --build build-gpu -j"$(nproc)" --target gpu_bench >"$OUTD/build.log" 2>&1 || exit 1
M=/dev/shm/strata-models; mkdir -p $M
[[ -s $M/big-q4_k.gguf ]] || build-gpu/tests/gpu_bench make $M/big-q4_k.gguf a3b q4_k >"$OUTD/make.log" 2>&1
build-gpu/tests/gpu_bench run $M/big-q4_k.gguf -b cuda -np "$NP" -n 32 -p 0 -c 4096 >"$OUTD/bench.log" 2>&1
timeout 300 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base \
    build-gpu/tests/gpu_bench run $M/big-q4_k.gguf -b cuda -np "$NP" -n 4 -p 0 -c 4096 \
    >"$OUTD/ncu.csv" 2>"$OUTD/ncu.err"
echo "ncu exit $?"
python3 - "$OUTD/ncu.csv" >"$OUTD/profile.txt" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr = rows[0]; name = hdr.index("Kernel Name"); val = hdr.index("Metric Value")
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows[1:]:
    k = r[name].split("(")[0]
    tot[k] += float(r[val].replace(",", "")); cnt[k] += 1
all_ns = sum(tot.values())
print(f"{sum(cnt.values())} kernels, {all_ns/1e6:.3f} ms busy in all")
for k, t in sorted(tot.items(), key=lambda kv: -kv[1]):
    print(f"{100*t/all_ns:5.1f}%  {t/1e6:9.3f} ms  {cnt[k]:6d} x {t/cnt[k]/1e3:8.2f} us  {k}")
PY
head -40 "$OUTD/profile.txt"; grep "decode np" "$OUTD/bench.log" | head -3
if [[ -n $KERNEL ]]; then
    timeout 200 ncu --clock-control none --kernel-name "regex:$KERNEL" --launch-skip 40 \
        --launch-count 2 --set full build-gpu/tests/gpu_bench run $M/big-q4_k.gguf -b cuda \
        -np "$NP" -n 4 -p 0 -c 4096 >"$OUTD/kernel.txt" 2>&1
    echo "ncu $KERNEL exit $?"
fi
