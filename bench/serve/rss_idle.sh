#!/usr/bin/env bash
# rss_idle.sh - the memory a process of each given build holds on this
# (CPU) machine: ganflow-serve idle after it has loaded a model and answered
# one request, ganflow-train at start (its peak over `--help`: every library
# loaded and relocated, nothing else done) and `ganflow --version`. Made to
# compare a build with the CUDA backend and one without (-DGF_CUDA=OFF) on
# the same flags; docs/benchmarks.md has the figures.
#
#   bench/serve/rss_idle.sh LABEL=BUILD_DIR [LABEL=BUILD_DIR ...]
#   e.g. bench/serve/rss_idle.sh cuda=build cpu=build-cpu
#
# One local MLflow server (started and stopped here), one mlp generator
# trained for 20 steps with the first build's ganflow-train and registered;
# then, per build, REPEAT (3) times: ganflow-serve --model
# models:/NAME/1 --workers 2 --threads 1, ready, one GET /generate (n=1),
# SETTLE (2) seconds, then VmRSS (/proc/PID/status) and Rss / Pss
# (/proc/PID/smaps_rollup). The median of the repeats is printed, with the
# five mappings holding the most Rss in the last run (BREAKDOWN=0: none).
# Output (OUT, default /tmp/ganflow-bench-rss): rss.csv (label, what, run,
# kB) and summary.txt.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-/tmp/ganflow-bench-rss}
repeat=${REPEAT:-3}
settle=${SETTLE:-2}
breakdown=${BREAKDOWN:-1}
arch=mlp
[ "$#" -gt 0 ] || { echo "usage: rss_idle.sh LABEL=BUILD_DIR..." >&2; exit 2; }
. "$here/lib.sh"
bench_fresh_out

labels=() dirs=()
for a in "$@"; do
  case $a in *=*) ;; *) echo "rss_idle.sh: '$a' is not LABEL=BUILD_DIR" >&2; exit 2 ;; esac
  l=${a%%=*} d=${a#*=}
  d=$(cd "$d" && pwd) || exit 2
  for b in serve/ganflow-serve trainer/ganflow-train cli/ganflow; do
    [ -x "$d/$b" ] || { echo "rss_idle.sh: no $d/$b (build it first)" >&2; exit 2; }
  done
  labels+=("$l") dirs+=("$d")
done

# Peak RSS in kB of a command run to its end (its exit status ignored).
peak_kb() {
  "$root/.venv/bin/python" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
field_kb() { awk -v k="$1:" '$1 == k { print $2 }' "$2"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The n mappings (by file) holding the most Rss of pid, "kB file" lines.
top_maps() {
  awk '/^[0-9a-f]+-[0-9a-f]+ / { f = (NF >= 6 ? $6 : "[anon]") }
       $1 == "Rss:" { r[f] += $2 }
       END { for (f in r) print r[f], f }' /proc/"$1"/smaps | sort -rn | head -"$2"
}

trap bench_cleanup EXIT
bench_mlflow_start
train=${dirs[0]}/trainer/ganflow-train
name=rss-$arch
bench_train "$name" 1

csv=$out/rss.csv
echo "label,what,run,kB" >"$csv"
summary=$out/summary.txt
{
  echo "rss_idle.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n): $(nproc) cores," \
       "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)," \
       "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  printf '%-10s %12s %12s %12s %14s %14s\n' build "serve VmRSS" "serve Rss" \
         "serve Pss" "train start" "--version"
} >"$summary"
for i in "${!labels[@]}"; do
  l=${labels[$i]} d=${dirs[$i]}
  serve=$d/serve/ganflow-serve
  for r in $(seq "$repeat"); do
    bench_serve_start "models:/$name/1" --poll 0 --workers 2 --threads 1
    curl -sf -o /dev/null "$base/v1/models/$name/generate?seed=7&n=1" ||
      { echo "rss_idle.sh: $l: the request failed" >&2; exit 1; }
    sleep "$settle"
    echo "$l,serve_vmrss,$r,$(field_kb VmRSS /proc/"$serve_pid"/status)" >>"$csv"
    echo "$l,serve_rss,$r,$(field_kb Rss /proc/"$serve_pid"/smaps_rollup)" >>"$csv"
    echo "$l,serve_pss,$r,$(field_kb Pss /proc/"$serve_pid"/smaps_rollup)" >>"$csv"
    [ "$r" -lt "$repeat" ] || [ "$breakdown" = 0 ] || top_maps "$serve_pid" 5 >"$out/top-$l.txt"
    kill "$serve_pid"
    wait "$serve_pid" 2>/dev/null || true
    echo "$l,train_start,$r,$(peak_kb "$d/trainer/ganflow-train" --help)" >>"$csv"
    echo "$l,cli_version,$r,$(peak_kb "$d/cli/ganflow" --version)" >>"$csv"
  done
  m() { awk -F, -v l="$l" -v w="$1" '$1 == l && $2 == w { print $4 }' "$csv" | median; }
  printf '%-10s %9s kB %9s kB %9s kB %11s kB %11s kB\n' "$l" "$(m serve_vmrss)" \
         "$(m serve_rss)" "$(m serve_pss)" "$(m train_start)" "$(m cli_version)" >>"$summary"
done
if [ "$breakdown" != 0 ]; then
  for l in "${labels[@]}"; do
    echo "ganflow-serve ($l), the mappings holding the most Rss (kB):"
    sed 's/^/  /' "$out/top-$l.txt"
  done >>"$summary"
fi
cat "$summary"
