#!/usr/bin/env bash
# soak.sh - ganflow-serve under a long mixed load while its registry moves
# and fails: soak_load sends REQUESTS requests (10^5) over CONNS (64)
# connections at RATE requests/s (1000), HOSTILE_PCT (5) % of them hostile,
# with a /v2/health/ready probe every 200 ms on a connection of its own,
# while this script
#   t=15 s  promotes the alias to version 2, t=30 s to version 3,
#   t=40 s  stops the MLflow server for 30 s (serving must go on with the
#           loaded version, /v2/health/ready must stay 200),
#   then    promotes the alias back to version 1 as soon as MLflow is back,
#           and times until the server answers with it.
# Three mlp generators (seeds 1, 2, 3) are trained for 20 steps and
# registered as versions 1-3 of one model in a local MLflow server this
# script starts (and stops) itself; ganflow-serve polls it every second.
#
#   bench/serve/soak.sh
#
# Output (OUT, default /tmp/ganflow-bench-soak): soak.csv (one line per
# second: answers, failures, probes, versions answering, server RSS),
# events.log, summary.txt. Exit 0 only when no valid request and no probe
# failed, every hostile request got a 4xx, each promotion was picked up and
# the server is still alive. Environment: REQUESTS, CONNS, RATE,
# HOSTILE_PCT, OUT, and lib.sh's BUILD_DIR, GANFLOW_SERVE, GANFLOW_TRAIN,
# GANFLOW_CLI, SOAK_LOAD (a soak_load binary; else built with the rest).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
requests=${REQUESTS:-100000}
conns=${CONNS:-64}
rate=${RATE:-1000}
hostile=${HOSTILE_PCT:-5}
arch=mlp
out=${OUT:-/tmp/ganflow-bench-soak}
. "$here/lib.sh"
bench_fresh_out
BENCH_EXTRA_TARGETS=soak_load bench_binaries
load=${SOAK_LOAD:-${bench_build:-}/bench/serve/soak_load}
[ -x "$load" ] || { echo "soak.sh: no soak_load binary ($load): set SOAK_LOAD" >&2; exit 2; }

trap bench_cleanup EXIT
bench_mlflow_start
name=soak-$arch
bench_train "$name" 1 production
bench_train "$name" 2
bench_train "$name" 3
bench_serve_start "models:/$name@production" --poll 1 --workers 2 \
  --queue 1024 --max-conns 1024

t0=$(date +%s.%N)
ev() { printf '%6.1f s  %s\n' "$(echo "$(date +%s.%N) $t0" | awk '{ print $1 - $2 }')" "$*" | tee -a "$out/events.log"; }
serving() { curl -s -m 2 "$base/v2/models/$name" | sed -n 's/.*"versions": \["\([0-9]*\)"\].*/\1/p'; }
# Waits until the server answers with version $1; prints the seconds.
await_version() {
  local s=$(date +%s.%N) v
  for _ in $(seq 600); do
    v=$(serving)
    if [ "$v" = "$1" ]; then echo "$(date +%s.%N) $s" | awk '{ printf "%.2f", $1 - $2 }'; return 0; fi
    sleep 0.05
  done
  echo "never"; return 1
}
at() { # sleep until t0 + $1 seconds
  local d
  d=$(echo "$t0 $1 $(date +%s.%N)" | awk '{ d = $1 + $2 - $3; print (d > 0 ? d : 0) }')
  sleep "$d"
}

"$load" --url "$base" --model "$name" --requests "$requests" --conns "$conns" \
  --rate "$rate" --hostile-pct "$hostile" --pid "$serve_pid" \
  --csv "$out/soak.csv" >"$out/load.log" 2>"$out/load.err" &
load_pid=$!
bench_pids="$bench_pids $load_pid"
ev "load started: $requests requests, $conns connections, $rate/s, $hostile % hostile; serving v$(serving)"
fail=0
at 15; ev "promote v2";  "$cli" promote "$name" 2 --alias production >>"$out/events.log" 2>&1
d=$(await_version 2) || fail=1; ev "serving v2 after $d s"
at 30; ev "promote v3";  "$cli" promote "$name" 3 --alias production >>"$out/events.log" 2>&1
d=$(await_version 3) || fail=1; ev "serving v3 after $d s"
at 40; ev "MLflow stopped"; "$root/deploy/mlflow-local.sh" stop >/dev/null 2>&1
ready_down=0 probes_down=0
while [ "$(echo "$t0 $(date +%s.%N)" | awk '{ print ($2 - $1 < 70) }')" = 1 ]; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 "$base/v2/health/ready" || true)
  probes_down=$((probes_down + 1))
  [ "$code" = 200 ] || ready_down=$((ready_down + 1))
  sleep 0.5
done
ev "while MLflow was down: /v2/health/ready answered 200 to $((probes_down - ready_down)) of $probes_down probes; serving v$(serving)"
"$root/deploy/mlflow-local.sh" start >/dev/null; ev "MLflow back at $MLFLOW_TRACKING_URI"
"$cli" promote "$name" 1 --alias production >>"$out/events.log" 2>&1; ev "promote v1"
d=$(await_version 1) || fail=1; ev "serving v1 after $d s"
[ "$ready_down" = 0 ] || fail=1
load_rc=0
wait "$load_pid" || load_rc=$?
ev "load finished (soak_load exit $load_rc)"
kill -0 "$serve_pid" 2>/dev/null && ev "ganflow-serve alive, RSS $(awk '$1 == "VmRSS:" { print $2 }' /proc/$serve_pid/status) kB, peak $(awk '$1 == "VmHWM:" { print $2 }' /proc/$serve_pid/status) kB" || { ev "ganflow-serve died"; fail=1; }
[ "$load_rc" = 0 ] || fail=1
{
  echo "soak: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  tail -2 "$out/load.log"
  echo "RSS (kB) every 10 s:"
  awk -F, 'NR > 1 && ($1 % 10 == 0) { printf "  t=%ss %s\n", $1, $10 }' "$out/soak.csv"
  cat "$out/events.log"
  [ -s "$out/load.err" ] && { echo "first failures:"; head -20 "$out/load.err"; }
  [ "$fail" = 0 ] && echo "PASS" || echo "FAIL"
} | tee "$out/summary.txt"
exit "$fail"
