#!/usr/bin/env bash
# run.sh - ganflow's generator forward (gf_generator_run, CPU) against ONNX
# Runtime (CPU) on the same weights, on one machine in one run: a dcgan at
# 28x28 trained for 20 steps and registered in a local MLflow (bench/serve/
# lib.sh, as compare.sh does) or the model directory MODEL_DIR, exported
# to ONNX (export_onnx.py, which checks ORT against PyTorch), then per
# thread count: ganflow, ORT, ganflow, ORT (bench_forward, ort_forward.py;
# the first ORT run also compares its images with ganflow's for the same 16
# latents), and a table.
#
#   bench/serve/onnx/run.sh
#
# Environment (all optional; lib.sh lists BUILD_DIR, GANFLOW_SERVE,
# GANFLOW_TRAIN, GANFLOW_CLI):
#   PYTHON         an interpreter with torch, onnx, onnxruntime and
#                  safetensors ($root/.venv-onnx/bin/python); make it with
#                    python3 -m venv .venv-onnx
#                    .venv-onnx/bin/pip install torch \
#                      --index-url https://download.pytorch.org/whl/cpu
#                    .venv-onnx/bin/pip install onnx onnxruntime safetensors numpy
#   MODEL_DIR      a ganflow model directory (MLmodel, config.json,
#                  generator.safetensors) to use instead of training one
#   THREADS        op threads of both, a list ("1"; "1 2" for both)
#   BATCHES        batch sizes ("1 16")
#   BENCH_SECONDS  timed seconds per batch size and run (2)
#   BENCH_FORWARD  the bench_forward binary (else built in BUILD_DIR)
#   GANFLOW_COMMIT what the binaries were built from, for the table's
#                  header (default: this checkout's HEAD)
#   OUT            results folder (/tmp/ganflow-bench-onnx)
# Prints the table to stdout and $OUT/results.txt. ms/pass is the better
# of the two runs' medians; the spread column is |run1 - run2| / best of
# each side.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=${OUT:-/tmp/ganflow-bench-onnx}
threads_list=${THREADS:-1}
batches=${BATCHES:-1 16}
secs=${BENCH_SECONDS:-2}
py=${PYTHON:-$root/.venv-onnx/bin/python}
arch=dcgan
me=${0##*/}

if ! "$py" -c 'import torch, onnx, onnxruntime, safetensors, numpy' 2>/dev/null; then
  cat >&2 <<EOF
$me: $py cannot import torch, onnx, onnxruntime, safetensors and numpy.
Make the interpreter (or name another with PYTHON=...):
  python3 -m venv $root/.venv-onnx
  $root/.venv-onnx/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu
  $root/.venv-onnx/bin/pip install onnx onnxruntime safetensors numpy
EOF
  exit 2
fi

. "$root/bench/serve/lib.sh"
bench_fresh_out
BENCH_EXTRA_TARGETS="bench_forward ${BENCH_EXTRA_TARGETS:-}" bench_binaries
fwd=${BENCH_FORWARD:-${bench_build:+$bench_build/bench/serve/bench_forward}}
if [ -z "$fwd" ] || [ ! -x "$fwd" ]; then
  echo "$me: no bench_forward binary (set BENCH_FORWARD when GANFLOW_SERVE/TRAIN/CLI are given)" >&2
  exit 2
fi

if [ -n "${MODEL_DIR:-}" ]; then
  model_dir=$MODEL_DIR
  [ -f "$model_dir/MLmodel" ] || { echo "$me: MODEL_DIR=$model_dir has no MLmodel" >&2; exit 2; }
else
  trap bench_cleanup EXIT
  bench_mlflow_start
  bench_train bench-onnx 1 || { echo "$me: training failed: $(tail -3 "$out/train-bench-onnx-1.log")" >&2; exit 1; }
  # ganflow generate downloads the registered version and verifies it.
  "$cli" generate --model models:/bench-onnx/1 --seed 7 -n 16 -o "$out/grid-generate.png" \
    --cache-dir "$out/cache" --threads 1 >"$out/generate.log" 2>&1 ||
    { echo "$me: ganflow generate failed: $(tail -3 "$out/generate.log")" >&2; exit 1; }
  model_dir=$(dirname "$(find "$out/cache" -name MLmodel | head -1)")
  bench_cleanup # MLflow is not needed for the timing: free its CPU
  trap - EXIT
fi
echo "model: $model_dir" | tee "$out/results.txt"

"$py" "$here/export_onnx.py" "$model_dir" "$out/generator.onnx" | tee -a "$out/results.txt"

# What was measured: GANFLOW_COMMIT (say it when the binaries come from
# elsewhere, e.g. a clean `git archive` build), else this checkout's HEAD
# and whether base/, kernels/ or model/ differ from it.
commit=${GANFLOW_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${GANFLOW_COMMIT:-}" ] && ! git -C "$root" diff --quiet HEAD -- base kernels model 2>/dev/null; then
  commit="$commit with uncommitted changes in base/, kernels/ or model/"
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for t in $threads_list; do
  for r in 1 2; do
    dumps=() check=()
    if [ "$r" = 1 ]; then
      dumps=(--dump-latents "$out/z-t$t.f32" --dump-f32 "$out/img-t$t.f32" --dump-png "$out/grid-t$t.png")
      check=(--latents "$out/z-t$t.f32" --images "$out/img-t$t.f32")
    fi
    "$fwd" --model-dir "$model_dir" --threads "$t" --batch "$batches" --seconds "$secs" \
      "${dumps[@]}" | tee "$out/ganflow-t$t-r$r.txt"
    "$py" "$here/ort_forward.py" "$out/generator.onnx" --threads "$t" --batch "$batches" \
      --seconds "$secs" "${check[@]}" | tee "$out/ort-t$t-r$r.txt"
  done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# median ms of batch b in file f
med() { awk -v b="$2" '($1 == "ganflow" || $1 == "ort") && $3 == b":" { print $5 }' "$1"; }
{
  echo
  echo "ganflow gf_generator_run (CPU, 1 executor) vs onnxruntime $("$py" -c 'import onnxruntime; print(onnxruntime.__version__)') CPU, ${secs}s per size and run, 2 runs each"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); load average before $load0, after $load1"
  echo "ganflow commit: $commit"
  printf '%-6s %-7s %12s %10s %8s %12s %10s %8s %10s\n' batch threads "gf ms/pass" "gf img/s" "spread" \
    "ort ms/pass" "ort img/s" "spread" "gf/ort"
  for b in $batches; do
    for t in $threads_list; do
      awk -v b="$b" -v t="$t" -v g1="$(med "$out/ganflow-t$t-r1.txt" "$b")" -v g2="$(med "$out/ganflow-t$t-r2.txt" "$b")" \
          -v o1="$(med "$out/ort-t$t-r1.txt" "$b")" -v o2="$(med "$out/ort-t$t-r2.txt" "$b")" 'BEGIN {
        g = (g1 < g2 ? g1 : g2); o = (o1 < o2 ? o1 : o2)
        gs = (g1 > g2 ? g1 - g2 : g2 - g1) / g * 100; os = (o1 > o2 ? o1 - o2 : o2 - o1) / o * 100
        printf "%-6d %-7d %12.3f %10.0f %7.0f%% %12.3f %10.0f %7.0f%% %9.2fx\n", b, t, g, b * 1e3 / g, gs,
          o, b * 1e3 / o, os, o / g }'
    done
  done
  echo "gf/ort: ganflow img/s over ORT img/s (> 1: ganflow faster)"
  grep -h '^cross-check' "$out"/ort-t*-r1.txt | sed 's/^/ORT vs ganflow /'
} | tee -a "$out/results.txt"
