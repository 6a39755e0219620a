#!/usr/bin/env bash
# rss.sh - ganflow-serve's memory against --workers: the server's RSS once
# the model is loaded (the load probes every pass size on every worker, so
# every kernel and laid-out weight exists by then), after 64 requests of a
# 16-image grid, and its peak, with --workers 1, 2 and 4; and the sha256 of
# the grid's PNG, which must not depend on the workers, the precision path
# or the binary. The model is the quickstart's dcgan at 28x28 (20 training
# steps; MODEL_ARCH=mlp for the mlp), registered in a local MLflow server
# this script starts (and stops) itself.
#
#   bench/serve/rss.sh
#   SERVE_BINS="before=/path/to/old/ganflow-serve after=build/serve/ganflow-serve" bench/serve/rss.sh
#
# Environment (all optional; lib.sh lists BUILD_DIR, GANFLOW_SERVE,
# GANFLOW_TRAIN, GANFLOW_CLI, MODEL_ARCH):
#   SERVE_BINS     label=path pairs of ganflow-serve binaries to measure on
#                  the same model (default: this tree's, labelled "this")
#   WORKERS_LIST   (1 2 4)        PRECISIONS (fp32; e.g. "fp32 bf16 int8")
#   OUT            results folder (/tmp/ganflow-bench-serve-rss)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
arch=${MODEL_ARCH:-dcgan}
workers_list=${WORKERS_LIST:-1 2 4}
precisions=${PRECISIONS:-fp32}
out=${OUT:-/tmp/ganflow-bench-serve-rss}
. "$here/lib.sh"
bench_fresh_out
bench_binaries
bins=${SERVE_BINS:-this=$serve}

trap bench_cleanup EXIT
bench_mlflow_start
bench_train "bench-$arch" 1 production
rss_kb() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$serve_pid/status"; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

{
  echo "ganflow-serve RSS: $arch generator (20 steps), --threads 1, --poll 0"
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-8s %-5s %-7s %12s %12s %10s  %s\n' binary prec workers \
    "loaded MB" "64 req MB" "peak MB" "png sha256 (seed 7, n 16)"
} | tee "$out/results.txt"
for bin in $bins; do
  label=${bin%%=*} serve=${bin#*=}
  for prec in $precisions; do
    for w in $workers_list; do
      bench_serve_start "models:/bench-$arch@production" --poll 0 \
        --workers "$w" --threads 1 --precision "$prec"
      loaded=$(rss_kb VmRSS)
      url="$base/v1/models/bench-$arch/generate?seed=7&n=16"
      for _ in $(seq 64); do curl -sf -o /dev/null "$url"; done
      after=$(rss_kb VmRSS) peak=$(rss_kb VmHWM)
      sum=$(curl -sf "$url" | sha256sum | cut -c1-16)
      printf '%-8s %-5s %-7s %12s %12s %10s  %s\n' "$label" "$prec" "$w" \
        "$(mb "$loaded")" "$(mb "$after")" "$(mb "$peak")" "$sum" |
        tee -a "$out/results.txt"
      kill "$serve_pid"
      wait "$serve_pid" 2>/dev/null || true
    done
  done
done
