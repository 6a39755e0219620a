#!/usr/bin/env bash
# precision.sh - the quality cost of bf16 inference on the model users
# serve: trains the quickstart's generator (dcgan, --image-size 28, batch 64,
# Fashion-MNIST; deploy/quickstart.sh) in a local MLflow of its own
# (bench/serve/lib.sh), fetches the registered version's model directory
# with `ganflow generate` (which downloads and verifies it), and runs
# precision_quality on it: fp32 and bf16 images of the same latents
# compared pixel by pixel, by SWD, and by FID/KID against the first N
# data images and against each other; generation time of each (1 thread).
# PRECISION.md has the numbers of one run and what they mean.
#
#   bench/serve/precision.sh
#
# Environment (all optional):
#   MODEL_DIR   a ganflow model directory to use instead of training one
#   STEPS       training steps (3000, the quickstart's: ~6 min on 2 cores)
#   N           images per set (2000)
#   SEED        latents: image k = sample k of SEED (7)
#   DATA        the dataset (/usr/share/datasets/fashion-mnist)
#   PRECISIONS  the precisions set against fp32, in turn ("bf16 int8")
#   BUILD_DIR   Release build folder (build-bench-serve); ganflow-train,
#               ganflow and precision_quality are built there
#   OUT         results folder (/tmp/ganflow-bench-precision), emptied first
#   GANFLOW_COMMIT  what the binaries were built from, for results.txt
#               (default: this checkout's HEAD, and whether the libraries
#               differ from it); say it when building a `git archive` copy
# Writes $OUT/results.txt (also printed). Exit status: precision_quality's
# (3: bf16 refused on this processor, the reason in results.txt), 1 when
# training or fetching fails, 2 on a bad setting.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/ganflow-bench-precision}
steps=${STEPS:-3000}
n=${N:-2000}
seed=${SEED:-7}
data=${DATA:-/usr/share/datasets/fashion-mnist}
build=${BUILD_DIR:-$root/build-bench-serve}
arch=dcgan
me=${0##*/}

. "$root/bench/serve/lib.sh"
bench_fresh_out

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
        -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j"$(nproc)" --target ganflow-train ganflow precision_quality >/dev/null
train=$build/trainer/ganflow-train cli=$build/cli/ganflow
pq=$build/bench/serve/precision_quality

if [ -n "${MODEL_DIR:-}" ]; then
  model_dir=$MODEL_DIR
  [ -f "$model_dir/MLmodel" ] || { echo "$me: MODEL_DIR=$model_dir has no MLflow MLmodel" >&2; exit 2; }
  trained="MODEL_DIR (not trained here)"
else
  trap bench_cleanup EXIT
  bench_mlflow_start
  # The quickstart's run (deploy/quickstart.sh) without its evaluations and
  # sample grids, which do not change the weights: the same data, network,
  # size, batch and steps.
  t0=$(date +%s)
  "$train" --data "$data" --model dcgan --image-size 28 --steps "$steps" \
    --batch 64 --threads 0 --seed 1 --sample-every 0 --eval-every 0 \
    --checkpoint-dir "$out/checkpoints" --experiment bench-precision \
    --run-name dcgan-fashion --register-model bench-precision \
    >"$out/train.log" 2>&1 ||
    { echo "$me: training failed: $(tail -3 "$out/train.log")" >&2; exit 1; }
  trained="dcgan 28x28, $steps steps of batch 64, seed 1, $(( $(date +%s) - t0 )) s"
  "$cli" generate --model models:/bench-precision/1 --seed "$seed" -n 16 \
    -o "$out/grid-fp32.png" --cache-dir "$out/cache" --threads 1 \
    >"$out/generate.log" 2>&1 ||
    { echo "$me: ganflow generate failed: $(tail -3 "$out/generate.log")" >&2; exit 1; }
  "$cli" generate --model models:/bench-precision/1 --seed "$seed" -n 16 \
    -o "$out/grid-bf16.png" --cache-dir "$out/cache" --threads 1 --precision bf16 \
    >>"$out/generate.log" 2>&1 || echo "$me: bf16 grid not written: $(tail -1 "$out/generate.log")" >&2
  model_dir=$(dirname "$(find "$out/cache" -name MLmodel | head -1)")
  bench_cleanup # MLflow is not needed any more: free its CPU
  trap - EXIT
fi

commit=${GANFLOW_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${GANFLOW_COMMIT:-}" ] && ! git -C "$root" diff --quiet HEAD -- base kernels model data quality trainer 2>/dev/null; then
  commit="$commit with uncommitted changes in base/, kernels/, model/, data/, quality/ or trainer/"
fi
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); bf16 flags: $(grep -o -w 'avx512_bf16\|amx_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "ganflow commit: $commit"
  echo "trained: $trained"
  echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/results.txt"
rc=0
for p in ${PRECISIONS:-bf16 int8}; do
  echo "== $p against fp32" >>"$out/results.txt"
  prc=0
  "$pq" --model-dir "$model_dir" --n "$n" --seed "$seed" --data "$data" \
    --precision "$p" >>"$out/results.txt" 2>"$out/precision_quality-$p.log" || prc=$?
  [ "$prc" = 0 ] || { tail -3 "$out/precision_quality-$p.log" >>"$out/results.txt"; rc=$prc; }
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/results.txt"
cat "$out/results.txt"
exit "$rc"
