#!/bin/sh
# run.sh - time and peak memory of a full GAN training step (gf_gan_step)
# for mlp, dcgan28 and dcgan64 at batch 64, one process per model, with
# 1 and 2 threads, next to PyTorch eager CPU on the same networks and step
# (torch_baseline.py) when a Python with torch is found.
#   bench/model/run.sh [--batch N] [--steps N] [--models "mlp dcgan28 dcgan64"]
# BUILD_DIR (default build-bench-model) is configured as a Release build
# without CUDA when it does not exist yet; TORCH_PYTHON (default
# /tmp/torch-venv/bin/python) runs the baseline.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench-model}
py=${TORCH_PYTHON:-/tmp/torch-venv/bin/python}
batch=64 steps=10 models="mlp dcgan28 dcgan64" threads="1 2"
while [ $# -gt 0 ]; do
  case $1 in
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "usage: $0 [--batch N] [--steps N] [--models LIST] [--threads LIST]" >&2; exit 2 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
        -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target bench_model -j "${JOBS:-2}" >/dev/null
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //') nproc=$(nproc) load $(cut -d' ' -f1-3 /proc/loadavg)"
have_torch=0
if [ -x "$py" ] && "$py" -c 'import torch' 2>/dev/null; then have_torch=1; fi
for m in $models; do
  for t in $threads; do
    echo "ganflow $("$build/bench/model/bench_model" --model "$m" --batch "$batch" --threads "$t" --steps "$steps")"
    if [ $have_torch = 1 ]; then
      echo "pytorch $("$py" "$here/torch_baseline.py" --model "$m" --batch "$batch" --threads "$t" --steps "$steps")"
    fi
  done
done
