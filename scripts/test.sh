#!/usr/bin/env bash
# test.sh -- set up and run every test: the unit suites and end-to-end
# suites in a plain build and again under AddressSanitizer + UBSan, the fuzz
# targets for a short while (clang/libFuzzer), the CUDA backend's suites on
# the CPU emulator of tests/cuemu (under the sanitizers too), and a CUDA
# compile check when nvcc is present. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test

jobs=$(nproc)
# nvcc is often installed off PATH; CMake finds it through PATH or CUDACXX.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH="/usr/local/cuda/bin:$PATH"
fi

run_ctest() {   # run_ctest BUILD_DIR [ctest args...]
    local dir=$1; shift
    (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@")
}

echo "== plain build (warnings are errors)"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON \
      -DSTRATA_CUDA=OFF >/dev/null
cmake --build build-test -j"$jobs"
run_ctest build-test

echo "== AddressSanitizer + UBSan build"
# -O1, as ASan's documentation recommends: the same checks, and the suites
# run far faster than at Debug's -O0; a Debug build still (asserts kept),
# with -g and -fno-omit-frame-pointer (STRATA_SANITIZE) for the reports.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
      -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=ON -DSTRATA_CUDA=OFF >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-asan -LE "slow|fuzz"

echo "== fuzz targets (clang, libFuzzer)"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DSTRATA_FUZZ=ON \
      -DSTRATA_CUDA=OFF >/dev/null
# Only the fuzz targets (each ctest entry runs the target of its name): the
# rest of the tree is built and tested in the stages above.
fuzz_targets=$(cd build-fuzz && ctest -N -L fuzz | sed -n 's/^ *Test *#[0-9]*: //p')
cmake --build build-fuzz -j"$jobs" --target $fuzz_targets
run_ctest build-fuzz -L fuzz

echo "== CUDA on the CPU (tests/cuemu) under AddressSanitizer + UBSan: the CUDA suites without a GPU"
cmake -S . -B build-cuemu -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=ON \
      -DSTRATA_CUDA_EMU=ON >/dev/null
cmake --build build-cuemu -j"$jobs" --target strata test_cuemu test_cuda_kern_host test_cuda_ops \
      test_cuda_model test_cuda_status
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-cuemu -L cuda

if command -v nvcc >/dev/null 2>&1; then
    echo "== CUDA compile check (sm_90; the CUDA tests skip without a GPU)"
    cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON \
          -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
    cmake --build build-cuda -j"$jobs"
    run_ctest build-cuda -L cuda
fi
echo "== all tests passed"
