#!/bin/sh
# run.sh - builds and runs the kernels benchmark (bench_kernels.c): per-op
# forward+backward times at the DCGAN 28x28x1 and 64x64x3 shapes, batch 64,
# as GFLOP/s next to this machine's SGEMM rate.
#   bench/kernels/run.sh [--threads N] [--batch N] [--min-time SECONDS]
# BUILD_DIR (default build-bench, next to the sources) is configured as a
# Release build without CUDA when it does not exist yet.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
        -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bench_kernels -j "${JOBS:-2}" >/dev/null
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //') nproc=$(nproc)"
exec "$build/bench/kernels/bench_kernels" "$@"
