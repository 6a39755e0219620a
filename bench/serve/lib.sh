# lib.sh - what run.sh, compare.sh and soak.sh share: Release binaries, a
# local MLflow server of their own, a generator trained and registered in
# it, ganflow-serve started on it. Sourced (bash), after `set -euo pipefail`
# and with $root, $out set.
#
# Environment (all optional):
#   BUILD_DIR      where to build Release binaries (build-bench-serve)
#   GANFLOW_SERVE, GANFLOW_TRAIN, GANFLOW_CLI   binaries to use instead
#   MODEL_ARCH     mlp or dcgan (the scripts' own default; dcgan is trained
#                  at --image-size 28, the quickstart's network)

# bench_fresh_out [wrk]: refuses an empty or / $out, checks that wrk is
# installed when asked, and empties $out.
bench_fresh_out() {
  local me=${0##*/}
  case $out in /|"") echo "$me: refusing OUT=$out" >&2; exit 2 ;; esac
  if [ "${1:-}" = wrk ] && ! command -v wrk >/dev/null; then
    echo "$me: wrk is not installed (apt-get install wrk)" >&2
    exit 2
  fi
  rm -rf "$out"
  mkdir -p "$out"
}

bench_binaries() {
  local build=${BUILD_DIR:-$root/build-bench-serve}
  if [ -n "${GANFLOW_SERVE:-}" ] && [ -n "${GANFLOW_TRAIN:-}" ] && [ -n "${GANFLOW_CLI:-}" ]; then
    serve=$GANFLOW_SERVE train=$GANFLOW_TRAIN cli=$GANFLOW_CLI
    return
  fi
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
          -DGF_BUILD_TESTS=OFF >/dev/null
  fi
  cmake --build "$build" -j"$(nproc)" --target ganflow-serve ganflow-train ganflow \
        ${BENCH_EXTRA_TARGETS:-} >/dev/null
  serve=$build/serve/ganflow-serve train=$build/trainer/ganflow-train cli=$build/cli/ganflow
  bench_build=$build
}

# Starts MLflow (state in $out/mlflow, a free port kept across restarts)
# and sets MLFLOW_TRACKING_URI; bench_cleanup stops it and every pid in
# $bench_pids.
bench_pids=""
bench_mlflow_start() {
  export GANFLOW_MLFLOW_STATE=$out/mlflow GANFLOW_MLFLOW_PORT=0
  "$root/deploy/mlflow-local.sh" start >/dev/null
  MLFLOW_TRACKING_URI=$("$root/deploy/mlflow-local.sh" uri)
  export MLFLOW_TRACKING_URI
}
bench_cleanup() {
  local p
  for p in $bench_pids; do kill "$p" 2>/dev/null || true; done
  for p in $bench_pids; do wait "$p" 2>/dev/null || true; done
  "$root/deploy/mlflow-local.sh" stop >/dev/null 2>&1 || true
}

# bench_train NAME SEED [ALIAS]: trains the $arch generator for 20 steps
# and registers it as a new version of NAME (ALIAS set when given).
bench_train() {
  local name=$1 seed=$2 alias=${3:-}
  local size_flag=() alias_flag=()
  [ "$arch" = dcgan ] && size_flag=(--image-size 28)
  [ -n "$alias" ] && alias_flag=(--alias "$alias")
  "$train" --data /usr/share/datasets/fashion-mnist --model "$arch" "${size_flag[@]}" \
    --steps 20 --batch 32 --threads 2 --seed "$seed" --sample-every 0 --eval-every 0 \
    --checkpoint-dir "$out/ck-$name-$seed" --experiment bench-serve \
    --register-model "$name" "${alias_flag[@]}" >"$out/train-$name-$seed.log" 2>&1
}

# bench_serve_start URI [FLAGS...]: starts ganflow-serve on a free port,
# waits until it is ready; sets serve_pid and base.
bench_serve_start() {
  local uri=$1
  shift
  rm -f "$out/port"
  "$serve" --model "$uri" --listen 127.0.0.1:0 --port-file "$out/port" \
    --cache-dir "$out/cache" "$@" >"$out/serve.log" 2>&1 &
  serve_pid=$!
  bench_pids="$bench_pids $serve_pid"
  local _
  for _ in $(seq 300); do
    [ -s "$out/port" ] && curl -sf "http://127.0.0.1:$(cat "$out/port")/v2/health/ready" >/dev/null && break
    sleep 0.1
  done
  base="http://127.0.0.1:$(cat "$out/port")"
  curl -sf "$base/v2/health/ready" >/dev/null || { echo "ganflow-serve did not become ready: $(tail -3 "$out/serve.log")" >&2; return 1; }
}

# RSS in kB of pid and all its descendants (VmRSS summed).
bench_tree_rss_kb() {
  local pids=$1 all=$1 kids
  while [ -n "$pids" ]; do
    kids=$(for p in $pids; do cat /proc/"$p"/task/*/children 2>/dev/null; done | tr '\n' ' ')
    pids=$(echo "$kids" | xargs)
    all="$all $pids"
  done
  local total=0 p kb
  for p in $all; do
    kb=$(awk '$1 == "VmRSS:" { print $2 }' /proc/"$p"/status 2>/dev/null || true)
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}

# wrk latency "812.00us" / "1.20ms" / "2.01s" -> ms
bench_to_ms() {
  awk -v v="$1" 'BEGIN { u = v; sub(/[0-9.]+/, "", u); x = v + 0;
    if (u == "us") x /= 1000; else if (u == "s") x *= 1000; printf "%.3f", x }'
}
