#!/bin/sh
# run.sh - training images/s and achieved TFLOP/s of a full GAN step on the
# CUDA backend (bench_cuda) for dcgan28 and dcgan64 at batch 64 and 256,
# FP32 and TF32, next to PyTorch eager on the same GPU, networks and step
# (torch_cuda.py). TFLOP/s = the step's conv/linear FLOPs
# (torch_cuda.py --flops-only) / median step time.
#   bench/cuda/run.sh [--steps N] [--models "dcgan28 dcgan64"] [--batches "64 256"]
# BUILD_DIR (default build-bench-cuda) is configured as a Release build with
# CUDA for CUDA_ARCHS (default 90) when it does not exist yet; BENCH_CUDA
# names a bench_cuda binary built elsewhere instead (nothing is built then);
# PYTHON (default python3) must import torch with CUDA for the baseline.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench-cuda}
py=${PYTHON:-python3}
steps=50 models="dcgan28 dcgan64" batches="64 256" modes="fp32 tf32"
while [ $# -gt 0 ]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    *) echo "usage: $0 [--steps N] [--models LIST] [--batches LIST] [--modes 'fp32 tf32']" >&2; exit 2 ;;
  esac
done
bench=${BENCH_CUDA:-}
if [ -z "$bench" ]; then
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=ON -DGF_CUDNN=ON \
          -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" -DGF_BUILD_TESTS=OFF >/dev/null
  fi
  cmake --build "$build" --target bench_cuda -j "${JOBS:-8}" >/dev/null
  bench=$build/bench/cuda/bench_cuda
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) gpu: $gpu"
have_torch=0
if "$py" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then have_torch=1; fi
# "<impl> <line>" with the TFLOP/s of the img/s figure in the line appended.
tflops() { # flops batch line
  ips=$(echo "$3" | sed -n 's/.* \([0-9.]*\) img\/s.*/\1/p')
  awk -v f="$1" -v b="$2" -v i="$ips" 'BEGIN { if (i > 0) printf "%.2f", f * i / b / 1e12; else printf "?" }'
}
for m in $models; do
  for b in $batches; do
    flops=$("$py" "$here/torch_cuda.py" --model "$m" --batch "$b" --flops-only 2>/dev/null || echo 0)
    for mode in $modes; do
      flag=""; [ "$mode" = tf32 ] && flag="--tf32"
      line=$("$bench" --model "$m" --batch "$b" --steps "$steps" $flag)
      echo "ganflow $line; $(tflops "$flops" "$b" "$line") TFLOP/s"
      if [ $have_torch = 1 ]; then
        line=$("$py" "$here/torch_cuda.py" --model "$m" --batch "$b" --steps "$steps" $flag)
        echo "pytorch $line; $(tflops "$flops" "$b" "$line") TFLOP/s"
      fi
    done
  done
done
