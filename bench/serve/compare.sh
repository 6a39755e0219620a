#!/usr/bin/env bash
# compare.sh - one registered model version served side by side by
# ganflow-serve and by MLflow's own scoring server (`mlflow models serve
# --env-manager local`, through the model's python_function flavor), on the
# same machine in one run: wrk POSTs the same MLflow request to /invocations
# of each, {"dataframe_split": {"columns": ["seed"], "data": [[7]]}} for one
# image and 16 seeds for a grid, at 1, 8 and 64 connections; requests/s,
# images/s, p50/p99 latency (wrk --latency), errors, and each server's RSS
# (the MLflow server's process tree: uvicorn and its workers). Before the
# timing, both servers' answers to the same request are compared.
#
#   bench/serve/compare.sh
#
# Environment (all optional; lib.sh lists BUILD_DIR, GANFLOW_SERVE,
# GANFLOW_TRAIN, GANFLOW_CLI, MODEL_ARCH):
#   WORKERS   workers of each server: ganflow-serve --workers (with
#             --threads 1), mlflow models serve --workers (with one BLAS
#             thread each) (2, one per core here)
#   DURATION  seconds per wrk run (10)
#   OUT       results folder (/tmp/ganflow-bench-compare)
# The model is the quickstart's dcgan at 28x28 (MODEL_ARCH=mlp for the mlp).
# ganflow-serve runs with its defaults (dynamic batching: --preferred-batch
# 16, --max-queue-delay-us 500, fp32); more ganflow rows at 64 connections
# follow: one image with --preferred-batch 1 (no shared passes), and one
# image and 16-image grids with --precision bf16 and int8.
# wrk runs on the same machine and takes CPU from either server alike.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
workers=${WORKERS:-2}
duration=${DURATION:-10}
arch=${MODEL_ARCH:-dcgan}
out=${OUT:-/tmp/ganflow-bench-compare}
py=$root/.venv/bin/python
[ -x "$root/.venv/bin/mlflow" ] || { echo "compare.sh: no .venv/bin/mlflow (deploy/install-deps.sh)" >&2; exit 2; }
. "$here/lib.sh"
bench_fresh_out wrk
bench_binaries

trap bench_cleanup EXIT
bench_mlflow_start
name=bench-$arch
bench_train "$name" 1 production
uri="models:/$name@production"
bench_serve_start "$uri" --poll 0 --workers "$workers" --threads 1 \
  --queue 1024 --max-conns 1024
gf_base=$base gf_pid=$serve_pid

mport=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# One BLAS thread per worker, as ganflow-serve's --threads 1: numpy's
# OpenBLAS otherwise spins a thread per core in each worker, and on 2 cores
# under load a 1x1200 @ 1200x1000 product then takes 10 ms instead of 0.09.
OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
PATH=$root/.venv/bin:$PATH "$root/.venv/bin/mlflow" models serve -m "$uri" --env-manager local \
  -h 127.0.0.1 -p "$mport" -w "$workers" >"$out/mlflow-serve.log" 2>&1 &
ml_pid=$!
bench_pids="$bench_pids $ml_pid"
ml_base=http://127.0.0.1:$mport
for _ in $(seq 600); do
  curl -sf "$ml_base/ping" >/dev/null 2>&1 && break
  kill -0 "$ml_pid" 2>/dev/null || { echo "mlflow models serve exited: $(tail -5 "$out/mlflow-serve.log")" >&2; exit 1; }
  sleep 0.2
done
curl -sf "$ml_base/ping" >/dev/null || { echo "mlflow models serve did not become ready" >&2; exit 1; }

body() { # n -> the request for seeds 7 .. 7+n-1
  local n=$1 rows="" i
  for ((i = 0; i < n; i++)); do rows="$rows${i:+,}[$((7 + i))]"; done
  rows=${rows#,}
  echo "{\"dataframe_split\": {\"columns\": [\"seed\"], \"data\": [$rows]}}"
}

# The same request to both: the answers must hold the same images.
for n in 1 16; do
  body "$n" >"$out/body-$n.json"
  for s in gf ml; do
    b=$gf_base; [ $s = ml ] && b=$ml_base
    curl -sf -H 'Content-Type: application/json' --data-binary @"$out/body-$n.json" \
      "$b/invocations" >"$out/answer-$s-$n.json"
  done
  "$py" - "$out/answer-gf-$n.json" "$out/answer-ml-$n.json" "$n" <<'EOF' | tee -a "$out/results.txt"
import json, sys
import numpy as np
a = np.asarray(json.load(open(sys.argv[1]))["predictions"], dtype=np.float64)
b = np.asarray(json.load(open(sys.argv[2]))["predictions"], dtype=np.float64)
n = int(sys.argv[3])
assert a.shape == b.shape and a.shape[0] == n, (a.shape, b.shape)
d = float(np.abs(a - b).max())
print(f"n={n}: both answer {list(a.shape)}; max |ganflow - mlflow| = {d:.2e}")
assert d <= 1e-4, d
EOF
done

# Latency of one client alone, requests one after another on one kept-alive
# connection with TCP_NODELAY (what curl and urllib3 set): wrk does not set
# it, and against uvicorn a small answer on a kept-alive connection then
# waits ~40 ms for a delayed ACK, which the wrk rows of mlflow at 1 and 8
# connections show.
"$py" - "$gf_base" "$ml_base" <<'EOF' | tee -a "$out/results.txt"
import http.client, json, socket, sys, time
print("one client, one kept-alive TCP_NODELAY connection, 200 requests each:")
for n in (1, 16):
    body = json.dumps({"dataframe_split": {"columns": ["seed"], "data": [[7 + i] for i in range(n)]}})
    row = []
    for name, url in (("ganflow", sys.argv[1]), ("mlflow", sys.argv[2])):
        host, port = url.split("//")[1].split(":")
        c = http.client.HTTPConnection(host, int(port))
        c.connect()
        c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ts = []
        for i in range(220):
            t = time.perf_counter()
            c.request("POST", "/invocations", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            assert r.status == 200, r.status
            if i >= 20:
                ts.append((time.perf_counter() - t) * 1e3)
        ts.sort()
        row.append((name, ts[len(ts) // 2], ts[int(len(ts) * 0.99)]))
    print("  n=%-3d " % n + "   ".join("%s p50 %.2f ms p99 %.2f ms" % r for r in row)
          + "   ratio of p50 %.1fx" % (row[1][1] / row[0][1]))
EOF

cat >"$out/post.lua" <<'EOF'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BODY_FILE"), "r")
wrk.body = f:read("*a")
f:close()
EOF
{
  echo "compare: $arch generator, $workers workers each, wrk ${duration}s per row"
  echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "RSS idle: ganflow-serve $(( $(bench_tree_rss_kb "$gf_pid") / 1024 )) MB, mlflow models serve $(( $(bench_tree_rss_kb "$ml_pid") / 1024 )) MB"
  printf '%-8s %-4s %-6s %10s %10s %10s %10s %8s\n' server n conns "req/s" "images/s" "p50 ms" "p99 ms" errors
} | tee -a "$out/results.txt"
declare -A ips
for n in 1 16; do
  for c in 1 8 64; do
    for s in ganflow mlflow; do
      b=$gf_base; [ $s = mlflow ] && b=$ml_base
      t=$(( c < 2 ? c : 2 ))
      f=$out/wrk-$s-c$c-n$n.txt
      BODY_FILE=$out/body-$n.json wrk -t"$t" -c"$c" -d"${duration}s" --timeout 10s \
        --latency -s "$out/post.lua" "$b/invocations" >"$f" 2>&1 || true
      rps=$(awk '/^Requests\/sec:/ { print $2 }' "$f")
      p50=$(bench_to_ms "$(awk '$1 == "50%" { print $2 }' "$f")")
      p99=$(bench_to_ms "$(awk '$1 == "99%" { print $2 }' "$f")")
      bad=$(awk '/Non-2xx/ { n += $NF } /Socket errors/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$f")
      ips[$s-$n-$c]=$(awk -v r="${rps:-0}" -v n="$n" 'BEGIN { print r * n }')
      printf '%-8s %-4s %-6s %10.0f %10.0f %10s %10s %8s\n' "$s" "$n" "$c" "${rps:-0}" \
        "${ips[$s-$n-$c]}" "$p50" "$p99" "$bad" | tee -a "$out/results.txt"
    done
  done
done
# The same version served otherwise, ganflow alone: without shared passes
# (--preferred-batch 1), and in bf16 and int8 where the processor has them
# (a refusal is printed as such), at 64 connections.
gf_rss_after=$(( $(bench_tree_rss_kb "$gf_pid") / 1024 ))
gf_hwm=$(( $(awk '$1 == "VmHWM:" { print $2 }' /proc/$gf_pid/status) / 1024 ))
kill "$gf_pid" && wait "$gf_pid" 2>/dev/null || true
mv "$out/serve.log" "$out/serve-batching.log"
extra_row() { # label n -- ganflow-serve flags
  local label=$1 n=$2 f
  shift 2
  f=$out/wrk-ganflow-$label-c64-n$n.txt
  BODY_FILE=$out/body-$n.json wrk -t2 -c64 -d"${duration}s" --timeout 10s \
    --latency -s "$out/post.lua" "$base/invocations" >"$f" 2>&1 || true
  rps=$(awk '/^Requests\/sec:/ { print $2 }' "$f")
  printf '%-8s %-4s %-6s %10.0f %10.0f %10s %10s %8s  (%s)\n' ganflow "$n" 64 "${rps:-0}" \
    "$(awk -v r="${rps:-0}" -v n="$n" 'BEGIN { print r * n }')" \
    "$(bench_to_ms "$(awk '$1 == "50%" { print $2 }' "$f")")" \
    "$(bench_to_ms "$(awk '$1 == "99%" { print $2 }' "$f")")" \
    "$(awk '/Non-2xx/ { n += $NF } END { print n + 0 }' "$f")" "$label" | tee -a "$out/results.txt"
}
for variant in nobatch bf16 int8; do
  case $variant in
    nobatch) flags=(--preferred-batch 1) ;;
    *) flags=(--precision "$variant") ;;
  esac
  if ! bench_serve_start "$uri" --poll 0 --workers "$workers" --threads 1 \
       --queue 1024 --max-conns 1024 "${flags[@]}" 2>/dev/null; then
    echo "ganflow  ${flags[*]}: refused here: $(grep -m1 -i 'precision' "$out/serve.log" || tail -1 "$out/serve.log")" | tee -a "$out/results.txt"
    continue
  fi
  extra_row "${flags[*]}" 1
  [ "$variant" = nobatch ] || extra_row "${flags[*]}" 16
  kill "$serve_pid" && wait "$serve_pid" 2>/dev/null || true
  mv "$out/serve.log" "$out/serve-$variant.log"
done
{
  echo "RSS after the runs: ganflow-serve $gf_rss_after MB (peak $gf_hwm MB), mlflow models serve $(( $(bench_tree_rss_kb "$ml_pid") / 1024 )) MB"
  echo "images/s ganflow / mlflow:"
  for n in 1 16; do
    for c in 1 8 64; do
      awk -v a="${ips[ganflow-$n-$c]}" -v b="${ips[mlflow-$n-$c]}" -v n="$n" -v c="$c" \
        'BEGIN { printf "  n=%-3s conns=%-3s %8.1fx\n", n, c, (b > 0 ? a / b : 0) }'
    done
  done
} | tee -a "$out/results.txt"
