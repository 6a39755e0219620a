#!/usr/bin/env bash
# run.sh - the data-parallel benchmark matrix (DESIGN §4.6): bench_dist at
# one rank and under mpirun at two, for dcgan-28, dcgan-64 and the paper's
# mlp, every all-reduce algorithm, sync BN and exact mode; weak and strong
# scaling. Writes bench/dist/results-<hostname>.md (markdown tables, each
# row with the command it ran) and prints it.
#   bench/dist/run.sh [BUILD_DIR]        (default build/)
# Builds nothing: configure and build bench_dist first, e.g.
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF
#   cmake --build build --target bench_dist
# Environment:
#   REPS       runs of each configuration; the row is the run with the
#              median images/s (default 5)
#   STEPS_28 WARMUP_28 STEPS_64 WARMUP_64 STEPS_MLP WARMUP_MLP
#              timed and warm-up steps per network (see the note on the
#              step counts in README.md before raising them)
#   RUN_TIMEOUT  seconds one bench_dist run may take (default 300)
#   OUT        the results file (default bench/dist/results-<hostname>.md)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
bin=$build/bench/dist/bench_dist
if [[ ! -x $bin ]]; then
  echo "run.sh: $bin not found; build it first:" >&2
  echo "  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF" >&2
  echo "  cmake --build build --target bench_dist" >&2
  exit 2
fi
if ! command -v mpirun >/dev/null; then
  echo "run.sh: mpirun not found (install openmpi-bin)" >&2
  exit 2
fi
host=$(hostname)
out=${OUT:-$here/results-$host.md}
reps=${REPS:-5}
steps28=${STEPS_28:-16} warm28=${WARMUP_28:-2}
steps64=${STEPS_64:-6} warm64=${WARMUP_64:-2}
stepsmlp=${STEPS_MLP:-12} warmmlp=${WARMUP_MLP:-2}
run_timeout=${RUN_TIMEOUT:-300}
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
# The contrast rows: Open MPI's libnbc runs a large MPI_Ireduce as a
# segmented chain that advances one segment per MPI_Test, and the step tests
# only between layers; binomial finishes in two tests (see README.md).
mca_binomial="--mca coll_libnbc_ireduce_algorithm 2"
# The binary as the rows show it: relative to the repository when inside.
shown=${bin#"$root"/}

t_start=$(date +%s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- measuring -------------------------------------------------------------
# One JSON field (string quotes dropped) of the line in $1.
field() { sed -n 's/.*"'"$2"'":"\{0,1\}\([^",}]*\).*/\1/p' <<<"$1"; }

declare -A cache_json cache_err cache_load
# measure KEY NP EXTRA_MPI_ARGS -- BENCH_ARGS...: runs the configuration
# REPS times (cached by key), keeps the median run by images/s in
# cache_json[KEY], or the last error in cache_err[KEY].
measure() {
  local key=$1 np=$2 extra=$3
  shift 4
  [[ -n ${cache_json[$key]+x} || -n ${cache_err[$key]+x} ]] && return 0
  local lines=() r line
  for ((r = 0; r < reps; r++)); do
    local cmd=("$bin" "$@")
    if ((np > 1)); then
      # shellcheck disable=SC2206
      cmd=($mpi $extra -np "$np" "$bin" "$@")
    fi
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    if timeout "$run_timeout" "${cmd[@]}" >"$tmp/o" 2>"$tmp/e"; then
      line=$(grep -m1 '^{' "$tmp/o" || true)
      if [[ -z $line ]]; then
        cache_err[$key]="no JSON line in the output"
        return 0
      fi
      lines+=("$(field "$line" images_per_sec) ${load} ${line}")
    else
      local rc=$?
      local msg
      msg=$(grep -m1 'bench_dist:' "$tmp/e" || tail -n1 "$tmp/e" || true)
      ((rc == 124)) && msg="timed out after ${run_timeout} s"
      cache_err[$key]="exit $rc: ${msg:-no message}"
      echo "  FAILED ($key): ${cache_err[$key]}" >&2
      return 0
    fi
  done
  # median by images/s; the load average (1 min) before that run is kept
  local med
  med=$(printf '%s\n' "${lines[@]}" | sort -g -k1,1 | sed -n "$(((reps + 1) / 2))p")
  med=${med#* }
  cache_load[$key]=${med%% *}
  cache_json[$key]=${med#* }
  echo "  $key: $(field "$med" images_per_sec) img/s" >&2
}

# measure_pair KEY -- BENCH_ARGS...: two independent one-rank processes at
# once (no communicator), REPS times; cache_pair[KEY] = the median of their
# summed images/s. What two busy cores give without any all-reduce: the
# ceiling of 2-rank scaling on this machine.
declare -A cache_pair
measure_pair() {
  local key=$1
  shift 2
  local sums=() r
  for ((r = 0; r < reps; r++)); do
    timeout "$run_timeout" "$bin" "$@" >"$tmp/p1" 2>"$tmp/e1" &
    local pid=$!
    local rc2=0 rc1=0
    timeout "$run_timeout" "$bin" "$@" >"$tmp/p2" 2>"$tmp/e2" || rc2=$?
    wait "$pid" || rc1=$?
    if ((rc1 || rc2)); then
      cache_err[$key]="exit $rc1/$rc2: $(cat "$tmp/e1" "$tmp/e2" | grep -m1 'bench_dist:' || true)"
      echo "  FAILED ($key): ${cache_err[$key]}" >&2
      return 0
    fi
    sums+=("$(awk -v a="$(field "$(grep -m1 '^{' "$tmp/p1")" images_per_sec)" \
                  -v b="$(field "$(grep -m1 '^{' "$tmp/p2")" images_per_sec)" \
                  'BEGIN { printf "%.2f", a + b }')")
  done
  cache_pair[$key]=$(printf '%s\n' "${sums[@]}" | sort -g | sed -n "$(((reps + 1) / 2))p")
  echo "  $key: ${cache_pair[$key]} img/s (two processes)" >&2
}

# The command of a configuration as a row shows it.
command_of() {
  local np=$1 extra=$2
  shift 3
  if ((np > 1)); then
    echo "$mpi${extra:+ $extra} -np $np $shown $*"
  else
    echo "$shown $*"
  fi
}

# Runs and remembers a configuration: key, ranks, extra mpirun arguments,
# then bench_dist's arguments.
declare -A cmd_of
config() {
  local key=$1 np=$2 extra=$3
  shift 3
  cmd_of[$key]=$(command_of "$np" "$extra" -- "$@")
  measure "$key" "$np" "$extra" -- "$@"
}

num() { [[ -n $1 && $1 != null ]] && printf "%.${2}f" "$1" || printf -- '-'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "") printf "%.3f", a / b; else printf "-" }'; }

# ---- the matrix --------------------------------------------------------------
algos=(ring reduce-bcast hierarchical tree)

# a. one network and image size: key prefix, bench args, global batch
matrix() {
  local p=$1 args=$2 batch=$3 st=$4 wu=$5
  # shellcheck disable=SC2086
  set -- $args --batch "$batch" --steps "$st" --warmup "$wu"
  config "$p/1x2" 1 "" "$@" --threads 2
  config "$p/1x1" 1 "" "$@" --threads 1
  for a in "${algos[@]}"; do config "$p/2x1/$a" 2 "" "$@" --threads 1 --allreduce "$a"; done
  for a in reduce-bcast hierarchical; do
    config "$p/2x1/$a/binomial" 2 "$mca_binomial" "$@" --threads 1 --allreduce "$a"
  done
  config "$p/2x1/sync-bn" 2 "" "$@" --threads 1 --sync-bn
  config "$p/1x1/exact" 1 "" "$@" --threads 1 --exact --shards 2
  config "$p/2x1/exact" 2 "" "$@" --threads 1 --exact --shards 2
}

echo "run.sh: $(date -u +%FT%TZ), REPS=$reps, results to $out" >&2
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "dcgan-28" >&2
matrix d28 "--model dcgan --image-size 28" 64 "$steps28" "$warm28"
# weak scaling at 64 per rank: 1x1 batch 64 is d28/1x1
config d28/2x1/ring/b128 2 "" --model dcgan --image-size 28 --batch 128 --steps "$steps28" \
  --warmup "$warm28" --threads 1 --allreduce ring
pair28=(--model dcgan --image-size 28 --batch 64 --steps "$steps28" --warmup "$warm28" --threads 1)
cmd_of[d28/pair]="$shown ${pair28[*]} & $shown ${pair28[*]}"
measure_pair d28/pair -- "${pair28[@]}"
echo "dcgan-64" >&2
matrix d64 "--model dcgan --image-size 64" 64 "$steps64" "$warm64"
# weak scaling at 32 per rank: 2x1 batch 64 is d64/2x1/ring
config d64/1x1/b32 1 "" --model dcgan --image-size 64 --batch 32 --steps "$steps64" \
  --warmup "$warm64" --threads 1
pair64=(--model dcgan --image-size 64 --batch 32 --steps "$steps64" --warmup "$warm64" --threads 1)
cmd_of[d64/pair]="$shown ${pair64[*]} & $shown ${pair64[*]}"
measure_pair d64/pair -- "${pair64[@]}"
echo "mlp" >&2
margs=(--model mlp --image-size 28 --batch 64 --steps "$stepsmlp" --warmup "$warmmlp")
config mlp/1x1 1 "" "${margs[@]}" --threads 1
config mlp/1x2 1 "" "${margs[@]}" --threads 2
for a in "${algos[@]}"; do config "mlp/2x1/$a" 2 "" "${margs[@]}" --threads 1 --allreduce "$a"; done
for a in reduce-bcast hierarchical; do
  config "mlp/2x1/$a/binomial" 2 "$mca_binomial" "${margs[@]}" --threads 1 --allreduce "$a"
done
config mlp/2x1/sync-bn 2 "" "${margs[@]}" --threads 1 --sync-bn
config mlp/2x1/exact 2 "" "${margs[@]}" --threads 1 --exact --shards 2
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
t_end=$(date +%s)

# ---- the report ----------------------------------------------------------------
ips() { field "${cache_json[$1]:-}" images_per_sec; }

# A row of table a: label, key.
row_a() {
  local label=$1 key=$2 j
  j=${cache_json[$key]:-}
  if [[ -z $j ]]; then
    echo "| $label | FAILED: ${cache_err[$key]:-not run} | | | | | | | | | | | | | \`${cmd_of[$key]}\` |"
    return
  fi
  local mb gbps
  mb=$(awk -v b="$(field "$j" bytes_per_step)" 'BEGIN { if (b != "null" && b != "") printf "%.2f", b / 1e6; else printf "-" }')
  gbps=$(num "$(field "$j" bandwidth_GBps)" 3)
  echo "| $label | $(field "$j" world)x$(field "$j" threads_per_rank) | $(field "$j" global_batch)" \
       "| $(num "$(field "$j" images_per_sec)" 1) | $(num "$(field "$j" step_ms)" 1)" \
       "| $(num "$(field "$j" allreduce_ms_per_step)" 1) | $(num "$(field "$j" exposed_ms_per_step)" 1)" \
       "| $(num "$(field "$j" hidden_fraction)" 2) | $mb | $gbps" \
       "| $(num "$(field "$j" buckets_per_step)" 0) | $(ratio "$(ips "$key")" "$(ips "${key%%/*}/1x2")")" \
       "| $(field "$j" ranks_agree) | $(field "$j" loss_d)/$(field "$j" loss_g)" \
       "| ${cache_load[$key]} | \`${cmd_of[$key]}\` |"
}

table_a() {
  local p=$1 title=$2
  echo "### $title"
  echo
  echo "| configuration | ranks x threads | global batch | img/s | step ms | all-reduce ms/step | exposed ms/step | hidden | MB/step | GB/s | buckets/step | vs 1x2 | ranks agree | loss D/G | load | command |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  row_a "1 rank, 2 threads" "$p/1x2"
  row_a "1 rank, 1 thread" "$p/1x1"
  for a in "${algos[@]}"; do row_a "2 ranks, $a" "$p/2x1/$a"; done
  for a in reduce-bcast hierarchical; do row_a "2 ranks, $a, Ireduce binomial (MCA)" "$p/2x1/$a/binomial"; done
  row_a "2 ranks, ring, sync BN" "$p/2x1/sync-bn"
  row_a "1 rank, exact (2 shards)" "$p/1x1/exact"
  row_a "2 ranks, exact (2 shards, tree)" "$p/2x1/exact"
  echo
  echo "Exact mode's cost: 1 rank $(ratio "$(ips "$p/1x1/exact")" "$(ips "$p/1x1")")x" \
       "the default's img/s (1 rank, 1 thread); 2 ranks" \
       "$(ratio "$(ips "$p/2x1/exact")" "$(ips "$p/2x1/ring")")x the default's (2 ranks, ring)." \
       "Sync BN: $(ratio "$(ips "$p/2x1/sync-bn")" "$(ips "$p/2x1/ring")")x ring's img/s."
  echo
}

# A scaling row: label, key at 1 rank, key at 2 ranks.
row_b() {
  local label=$1 k1=$2 k2=$3 i1 i2
  i1=$(ips "$k1") i2=$(ips "$k2")
  local eff
  eff=$(awk -v a="$i2" -v b="$i1" 'BEGIN { if (a != "" && b > 0) printf "%.1f %%", 100 * a / (2 * b); else printf "-" }')
  echo "| $label | $(field "${cache_json[$k1]:-}" global_batch) | $(num "$i1" 1)" \
       "| $(field "${cache_json[$k2]:-}" global_batch) | $(num "$i2" 1) | $(ratio "$i2" "$i1") | $eff" \
       "| \`${cmd_of[$k1]}\` | \`${cmd_of[$k2]}\` |"
}

# A contrast row: two independent processes (label, 1-rank key, pair key).
row_pair() {
  local label=$1 k1=$2 kp=$3 i1 i2
  i1=$(ips "$k1") i2=${cache_pair[$kp]:-}
  local eff
  eff=$(awk -v a="$i2" -v b="$i1" 'BEGIN { if (a != "" && b > 0) printf "%.1f %%", 100 * a / (2 * b); else printf "-" }')
  echo "| $label | $(field "${cache_json[$k1]:-}" global_batch) | $(num "$i1" 1)" \
       "| 2 x $(field "${cache_json[$k1]:-}" global_batch) | $(num "$i2" 1) | $(ratio "$i2" "$i1") | $eff" \
       "| \`${cmd_of[$k1]}\` | \`${cmd_of[$kp]}\` |"
}

# A row of table c: label, key.
row_c() {
  local label=$1 key=$2 j
  j=${cache_json[$key]:-}
  if [[ -z $j ]]; then
    echo "| $label | FAILED: ${cache_err[$key]:-not run} | | | | | | \`${cmd_of[$key]}\` |"
    return
  fi
  local i base
  i=$(ips "$key") base=$(ips mlp/1x1)
  echo "| $label | $(field "$j" world)x$(field "$j" threads_per_rank) | $(num "$i" 0)" \
       "| $(awk -v i="$i" 'BEGIN { printf "%.2f", 60000 / i }') | $(ratio "$i" "$base")" \
       "| $(num "$(field "$j" hidden_fraction)" 2) | ${cache_load[$key]} | \`${cmd_of[$key]}\` |"
}

report() {
  echo "# bench/dist results on $host"
  echo
  echo "- date: $(date -u +%FT%TZ); total run time $((t_end - t_start)) s"
  echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), nproc $(nproc)"
  echo "- $(mpirun --version 2>/dev/null | head -n1); ranks on one host (shared-memory transport)"
  echo "- commit $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "- load average (1/5/15 min): $load_start at the start, $load_end at the end"
  echo "- each row: the median by img/s of $reps runs; steps timed/warm-up:" \
       "dcgan-28 $steps28/$warm28, dcgan-64 $steps64/$warm64, mlp $stepsmlp/$warmmlp"
  echo "- input: synthetic (a fixed pseudo-random pattern in [-1, 1]); no data loading"
  echo "- all-reduce figures: per step (both seams), mean over ranks; GB/s is the" \
       "algorithmic bandwidth of the gradient payload (bytes per step / all-reduce" \
       "time per step); hidden = 1 - exposed / all-reduce; vs 1x2 = img/s over" \
       "1 rank x 2 threads"
  echo "- load: the 1-minute load average before the row's median run; it includes" \
       "this script's own previous runs (about 1-2 right after a 2-rank run), so only" \
       "figures well above 2 point to other work on the machine"
  echo
  echo "## a. Configurations (global batch 64)"
  echo
  table_a d28 "dcgan-28 (28x28x1, ngf = ndf = 64)"
  table_a d64 "dcgan-64 (64x64x3, ngf = ndf = 64)"
  echo "## b. Scaling, 1 thread per rank, ring"
  echo
  echo "Efficiency = img/s at 2 ranks / (2 x img/s at 1 rank). Weak: the per-rank" \
       "batch is fixed (the global batch doubles); strong: the global batch is" \
       "fixed. Target (issue, item 8): >= 95 % weak scaling for dcgan-64 at 2 ranks."
  echo
  echo "| network, scaling | global batch (1 rank) | img/s (1 rank) | global batch (2 ranks) | img/s (2 ranks) | speedup | efficiency | command (1 rank) | command (2 ranks) |"
  echo "|---|---|---|---|---|---|---|---|---|"
  row_b "dcgan-64, weak (32 per rank)" d64/1x1/b32 d64/2x1/ring
  row_b "dcgan-64, strong (64 global)" d64/1x1 d64/2x1/ring
  row_b "dcgan-28, weak (64 per rank)" d28/1x1 d28/2x1/ring/b128
  row_b "dcgan-28, strong (64 global)" d28/1x1 d28/2x1/ring
  row_pair "dcgan-64, two independent 1-rank jobs at once (no all-reduce)" d64/1x1/b32 d64/pair
  row_pair "dcgan-28, two independent 1-rank jobs at once (no all-reduce)" d28/1x1 d28/pair
  echo
  echo "The last two rows are the ceiling of 2-rank scaling on this machine: two" \
       "processes with no communication at all, each on its own core (img/s summed)." \
       "What they lose against 2 x one process alone is the cost of two busy cores" \
       "(shared caches, memory bandwidth, clocks), not of the all-reduce."
  echo
  echo "## c. The paper's table: mlp GAN (z 50), 28x28, global batch 64"
  echo
  echo "Time per epoch = 60,000 images / img/s; speedup over 1 rank x 1 thread."
  echo
  echo "| strategy | ranks x threads | img/s | s per epoch | speedup | hidden | load | command |"
  echo "|---|---|---|---|---|---|---|---|"
  row_c "1 rank (baseline)" mlp/1x1
  row_c "1 rank, 2 threads" mlp/1x2
  for a in "${algos[@]}"; do row_c "2 ranks, $a" "mlp/2x1/$a"; done
  for a in reduce-bcast hierarchical; do row_c "2 ranks, $a, Ireduce binomial (MCA)" "mlp/2x1/$a/binomial"; done
  row_c "2 ranks, ring, sync BN" mlp/2x1/sync-bn
  row_c "2 ranks, exact (2 shards, tree)" mlp/2x1/exact
}

report >"$out"
cat "$out"
echo "run.sh: wrote $out in $((t_end - t_start)) s" >&2
