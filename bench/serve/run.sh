#!/usr/bin/env bash
# run.sh - ganflow-serve under load: wrk (Debian package) against
# GET /v1/models/NAME/generate for one 28x28 image (n=1) and a 16-image grid
# (n=16) at 1, 8 and 64 connections; requests/s, images/s, p50 and p99
# latency, non-2xx answers; the server's RSS with one model loaded (idle,
# after the load) and its peak. The model is a generator (the quickstart's
# dcgan at 28x28 unless MODEL_ARCH=mlp) trained for a few steps by
# ganflow-train and registered in a local MLflow server that this script
# starts (and stops) itself.
#
#   bench/serve/run.sh
#
# Environment (all optional; lib.sh lists BUILD_DIR, GANFLOW_SERVE,
# GANFLOW_TRAIN, GANFLOW_CLI, MODEL_ARCH):
#   WORKERS        --workers of the server (2)     THREADS --threads (1)
#   PREFERRED_BATCH  --preferred-batch of the server (16; 1: no sharing)
#   QUEUE_DELAY_US   --max-queue-delay-us of the server (500)
#   DURATION       seconds per wrk run (10)
#   OUT            results folder (/tmp/ganflow-bench-serve)
# wrk runs on the same machine: on 2 cores it takes CPU from the server, so
# the figures are a lower bound of what the server does alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
workers=${WORKERS:-2}
threads=${THREADS:-1}
pref=${PREFERRED_BATCH:-16}
delay=${QUEUE_DELAY_US:-500}
duration=${DURATION:-10}
arch=${MODEL_ARCH:-dcgan}
out=${OUT:-/tmp/ganflow-bench-serve}
. "$here/lib.sh"
bench_fresh_out wrk
bench_binaries

# A local MLflow server with one registered generator.
trap bench_cleanup EXIT
bench_mlflow_start
bench_train "bench-$arch" 1 production
bench_serve_start "models:/bench-$arch@production" --poll 0 \
  --workers "$workers" --threads "$threads" --preferred-batch "$pref" \
  --max-queue-delay-us "$delay" \
  --queue 1024 --max-conns 1024
rss_kb() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$serve_pid/status"; }
rss_idle=$(rss_kb VmRSS)

{
  echo "ganflow-serve bench: $arch generator, $workers workers x $threads thread(s), --preferred-batch $pref, --max-queue-delay-us $delay, wrk ${duration}s per row"
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-6s %-4s %10s %10s %10s %10s %8s\n' conns n "req/s" "images/s" "p50 ms" "p99 ms" non2xx
} | tee "$out/results.txt"

for n in 1 16; do
  for c in 1 8 64; do
    t=$(( c < 2 ? c : 2 ))
    wrk -t"$t" -c"$c" -d"${duration}s" --latency \
      "$base/v1/models/bench-$arch/generate?seed=7&n=$n" >"$out/wrk-c$c-n$n.txt" 2>&1
    f=$out/wrk-c$c-n$n.txt
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$f")
    p50=$(bench_to_ms "$(awk '$1 == "50%" { print $2 }' "$f")")
    p99=$(bench_to_ms "$(awk '$1 == "99%" { print $2 }' "$f")")
    bad=$(awk '/Non-2xx/ { print $NF }' "$f")
    printf '%-6s %-4s %10.0f %10.0f %10s %10s %8s\n' "$c" "$n" "$rps" \
      "$(awk -v r="$rps" -v n="$n" 'BEGIN { print r * n }')" "$p50" "$p99" \
      "${bad:-0}" | tee -a "$out/results.txt"
  done
done
{
  echo "RSS with the model loaded: idle $((rss_idle / 1024)) MB, after the runs $(( $(rss_kb VmRSS) / 1024 )) MB, peak $(( $(rss_kb VmHWM) / 1024 )) MB"
} | tee -a "$out/results.txt"
