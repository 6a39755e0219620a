#!/usr/bin/env bash
# cluster.sh - figures of `ganflow launch --nnodes` across test hosts: for
# each failure between hosts, the time from the fault to its detection by
# node 0 and to the first step of the survivors, and (cut, stall) to the
# round that has the node back. It runs the scenarios of
# tests/cluster/test_cluster_launch.c (which build the hosts with
# tests/support/cluster.sh: network namespaces of this machine) REPEAT times
# each against a local MLflow server it starts and stops itself, and takes
# the figures from the lines the test prints:
#   kill   3 hosts, --nnodes 1:3, node1 SIGKILLed whole mid-step
#   cut    2 hosts, node1's link cut (no RST), healed after the first step
#   stall  2 hosts, node1 SIGSTOPped whole, SIGCONT after the first step
# every one with --hang-timeout 5 and --comm-timeout 10, mlp, batch 32,
# --exact-reduce; each run also checks its final checkpoint against an
# undisturbed job's and MLflow's one point per (key, step).
#
#   bench/launch/cluster.sh            (as root)
#
# Environment: BUILD_DIR (build: a build with tests), REPEAT (5),
# OUT (/tmp/ganflow-bench-cluster, wiped first).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build}
repeat=${REPEAT:-5}
out=${OUT:-/tmp/ganflow-bench-cluster}
bin=$build/tests/cluster/test_cluster_launch
[ "$(id -u)" -eq 0 ] || { echo "cluster.sh: needs root (network namespaces)" >&2; exit 1; }
[ -x "$bin" ] || { echo "cluster.sh: $bin missing: build the tests (cmake --build $build)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
export GANFLOW_MLFLOW_STATE=$out/mlflow GANFLOW_MLFLOW_PORT=0
trap '"$root/deploy/mlflow-local.sh" stop >/dev/null 2>&1 || true' EXIT
"$root/deploy/mlflow-local.sh" start >"$out/mlflow.log" 2>&1
export GF_TEST_MLFLOW_STATE=$GANFLOW_MLFLOW_STATE

"$bin" ref >"$out/ref.log" 2>&1 || { tail -20 "$out/ref.log"; exit 1; }
{
  echo "# ganflow launch --nnodes across test hosts ($(nproc) CPUs, $(date -u +%F))"
  echo "# seconds from the fault; --hang-timeout 5, --comm-timeout 10"
  printf '%-6s %-4s %9s %11s %9s %s\n' scenario run detected first_step rejoined load
} | tee "$out/results.txt"
for sc in kill cut stall; do
  for i in $(seq "$repeat"); do
    log=$out/$sc-$i.log
    rc=0
    "$bin" "$sc" >"$log" 2>&1 || rc=$?
    line=$(grep -m1 "^$sc: fault at" "$log" || true)
    det=$(sed -n 's/.*detected after \([0-9.-]*\) s.*/\1/p' <<<"$line")
    first=$(sed -n 's/.*first new step \([0-9.-]*\) s.*/\1/p' <<<"$line")
    back=$(sed -n 's/.*round of 2 after \([0-9.-]*\) s.*/\1/p' <<<"$line")
    [ "$rc" -eq 0 ] || det="FAILED($rc)"
    printf '%-6s %-4s %9s %11s %9s %s\n' "$sc" "$i" "${det:--}" "${first:--}" \
      "${back:--}" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$out/results.txt"
  done
done
echo "logs in $out"
