#!/usr/bin/env bash
# run.sh - ganflow-serve under load: wrk (Debian package) against
# GET /v1/models/NAME/generate for one 28x28 image (n=1) and a 16-image grid
# (n=16) at 1, 8 and 64 connections; requests/s, images/s, p50 and p99
# latency, non-2xx answers; the server's RSS with one model loaded (idle,
# after the load) and its peak. The model is a --model mlp generator
# trained for a few steps by ganflow-train and registered in a local MLflow
# server that this script starts (and stops) itself.
#
#   bench/serve/run.sh
#
# Environment (all optional):
#   BUILD_DIR      where to build Release binaries (build-bench-serve)
#   GANFLOW_SERVE, GANFLOW_TRAIN   binaries to use instead of building
#   WORKERS        --workers of the server (2)     THREADS --threads (1)
#   BATCH_ROWS     --batch-rows of the server (0: each request its own pass)
#   DURATION       seconds per wrk run (10)
#   MODEL_ARCH     mlp or dcgan (mlp; dcgan is trained at --image-size 28)
#   OUT            results folder (/tmp/ganflow-bench-serve)
# wrk runs on the same machine: on 2 cores it takes CPU from the server, so
# the figures are a lower bound of what the server does alone.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench-serve}
workers=${WORKERS:-2}
threads=${THREADS:-1}
batch_rows=${BATCH_ROWS:-0}
duration=${DURATION:-10}
arch=${MODEL_ARCH:-mlp}
out=${OUT:-/tmp/ganflow-bench-serve}
case $out in /|"") echo "run.sh: refusing OUT=$out" >&2; exit 2 ;; esac
command -v wrk >/dev/null || { echo "run.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"

if [ -n "${GANFLOW_SERVE:-}" ] && [ -n "${GANFLOW_TRAIN:-}" ]; then
  serve=$GANFLOW_SERVE
  train=$GANFLOW_TRAIN
else
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
          -DGF_BUILD_TESTS=OFF >/dev/null
  fi
  cmake --build "$build" -j"$(nproc)" --target ganflow-serve ganflow-train >/dev/null
  serve=$build/serve/ganflow-serve
  train=$build/trainer/ganflow-train
fi

# A local MLflow server with one registered generator.
export GANFLOW_MLFLOW_STATE=$out/mlflow GANFLOW_MLFLOW_PORT=0
"$root/deploy/mlflow-local.sh" start >/dev/null
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  "$root/deploy/mlflow-local.sh" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
export MLFLOW_TRACKING_URI=$("$root/deploy/mlflow-local.sh" uri)
size_flag=()
[ "$arch" = dcgan ] && size_flag=(--image-size 28)
"$train" --data /usr/share/datasets/fashion-mnist --model "$arch" "${size_flag[@]}" \
  --steps 20 --batch 32 --threads 2 --sample-every 0 --eval-every 0 \
  --checkpoint-dir "$out/ck" --experiment bench-serve \
  --register-model "bench-$arch" --alias production >"$out/train.log" 2>&1

"$serve" --model "models:/bench-$arch@production" --listen 127.0.0.1:0 \
  --port-file "$out/port" --cache-dir "$out/cache" --poll 0 \
  --workers "$workers" --threads "$threads" --batch-rows "$batch_rows" \
  --queue 1024 --max-conns 1024 >"$out/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 300); do
  [ -s "$out/port" ] && curl -sf "http://127.0.0.1:$(cat "$out/port")/v2/health/ready" >/dev/null && break
  sleep 0.1
done
base="http://127.0.0.1:$(cat "$out/port")"
rss_kb() { awk -v k="$1" '$1 == k":" { print $2 }' "/proc/$serve_pid/status"; }
rss_idle=$(rss_kb VmRSS)

{
  echo "ganflow-serve bench: $arch generator, $workers workers x $threads thread(s), --batch-rows $batch_rows, wrk ${duration}s per row"
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-6s %-4s %10s %10s %10s %10s %8s\n' conns n "req/s" "images/s" "p50 ms" "p99 ms" non2xx
} | tee "$out/results.txt"

to_ms() { # wrk latency "812.00us" / "1.20ms" / "2.01s" -> ms
  awk -v v="$1" 'BEGIN { u = v; sub(/[0-9.]+/, "", u); x = v + 0;
    if (u == "us") x /= 1000; else if (u == "s") x *= 1000; printf "%.3f", x }'
}
for n in 1 16; do
  for c in 1 8 64; do
    t=$(( c < 2 ? c : 2 ))
    wrk -t"$t" -c"$c" -d"${duration}s" --latency \
      "$base/v1/models/bench-$arch/generate?seed=7&n=$n" >"$out/wrk-c$c-n$n.txt" 2>&1
    f=$out/wrk-c$c-n$n.txt
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$f")
    p50=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$f")")
    p99=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$f")")
    bad=$(awk '/Non-2xx/ { print $NF }' "$f")
    printf '%-6s %-4s %10.0f %10.0f %10s %10s %8s\n' "$c" "$n" "$rps" \
      "$(awk -v r="$rps" -v n="$n" 'BEGIN { print r * n }')" "$p50" "$p99" \
      "${bad:-0}" | tee -a "$out/results.txt"
  done
done
{
  echo "RSS with the model loaded: idle $((rss_idle / 1024)) MB, after the runs $(( $(rss_kb VmRSS) / 1024 )) MB, peak $(( $(rss_kb VmHWM) / 1024 )) MB"
} | tee -a "$out/results.txt"
