#!/usr/bin/env bash
# hosts.sh - data-parallel throughput across test hosts on slow links
# (DESIGN §4.6): bench_dist with one rank per host of the test cluster
# (tests/support/cluster.sh: network namespaces on a bridge), ranks over
# gf_comm's tcp engine with torchrun-style variables, each host's link
# capped with tbf. Weak scaling (the per-rank batch fixed) of dcgan-64 and
# the mlp GAN against one rank alone, at every cap, with and without bf16
# gradient compression; optionally the same rows with an older bench_dist
# (before/after an engine change), and the quality cost of compression
# (SWD of ganflow-train after the same steps). Writes
# bench/dist/results-hosts-<hostname>.md (every row with its command) and
# prints it.
#   sudo bench/dist/hosts.sh [BUILD_DIR]     (default build/)
# Needs root (network namespaces); builds nothing: build bench_dist (and
# ganflow-train for QUALITY) first. Run by hand, never as a test.
# Environment:
#   HOSTS        host counts (default "2 4"); 1 rank each
#   MODELS       "d64 mlp" (default): dcgan-64 and the mlp GAN
#   CAPS         link caps (default "none 10gbit 1gbit 100mbit")
#   REPS         runs per configuration; the row is the median by img/s (3)
#   STEPS_64 WARMUP_64 STEPS_MLP WARMUP_MLP   step counts (6 2 / 20 2)
#   BATCH_64 BATCH_MLP   per-rank batch (32 / 64)
#   BEFORE       another bench_dist binary: its rows beside this build's
#                (f32, every host count and cap), alternating the two
#   BEFORE_NAME  what to call it in the table ("before")
#   QUALITY      1: also train with ganflow-train on 2 hosts, with and
#                without --compress bf16, and compare swd/avg (needs
#                MLFLOW_TRACKING_URI reachable from here: it is relayed
#                into the cluster; Fashion-MNIST in QUALITY_DATA)
#   QUALITY_STEPS QUALITY_SEEDS QUALITY_DATA   (400; "1 2";
#                /usr/share/datasets/fashion-mnist)
#   RUN_TIMEOUT  seconds one run may take (600)
#   OUT          the results file
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
bin=$build/bench/dist/bench_dist
cluster=$root/tests/support/cluster.sh
if [[ ! -x $bin ]]; then
  echo "hosts.sh: $bin not found; build it first (cmake --build $build --target bench_dist)" >&2
  exit 2
fi
hosts_list=${HOSTS:-2 4}
caps=${CAPS:-none 10gbit 1gbit 100mbit}
reps=${REPS:-3}
steps64=${STEPS_64:-6} warm64=${WARMUP_64:-2} batch64=${BATCH_64:-32}
stepsmlp=${STEPS_MLP:-20} warmmlp=${WARMUP_MLP:-2} batchmlp=${BATCH_MLP:-64}
before=${BEFORE:-}
before_name=${BEFORE_NAME:-before}
run_timeout=${RUN_TIMEOUT:-600}
out=${OUT:-$here/results-hosts-$(hostname).md}
maxhosts=1
for h in $hosts_list; do ((h > maxhosts)) && maxhosts=$h; done

export GF_CLUSTER_DIR
GF_CLUSTER_DIR=$(mktemp -d)
tmp=$(mktemp -d)
cleanup() {
  "$cluster" down >/dev/null 2>&1 || true
  rm -rf "$GF_CLUSTER_DIR" "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rc=0
"$cluster" up "$maxhosts" >"$tmp/up" 2>&1 || rc=$?
if ((rc)); then
  cat "$tmp/up" >&2
  echo "hosts.sh: cluster.sh up $maxhosts failed (77: not root or a tool missing)" >&2
  exit "$rc"
fi
master=$("$cluster" addr node0)
port=29600
t_start=$(date +%s)

# One JSON field (string quotes dropped) of the line in $1.
field() { sed -n 's/.*"'"$2"'":"\{0,1\}\([^",}]*\).*/\1/p' <<<"$1"; }

# Caps the links of hosts node0..node{W-1} (none: uncapped).
set_caps() {
  local w=$1 cap=$2 i
  for ((i = 0; i < w; i++)); do
    if [[ $cap == none ]]; then "$cluster" uncap "node$i" >/dev/null 2>&1 || true
    else "$cluster" cap "node$i" "$cap"; fi
  done
}

# run_once W BIN ARGS...: one rank per host node0..node{W-1}; rank 0's
# JSON line in $tmp/line, or a message in $tmp/err (return 1).
run_once() {
  local w=$1 b=$2 i pids=() st=0
  shift 2
  port=$((port + 1))
  for ((i = w - 1; i >= 0; i--)); do
    RANK=$i WORLD_SIZE=$w LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=$master \
      MASTER_PORT=$port timeout "$run_timeout" "$cluster" exec "node$i" "$b" "$@" \
      >"$tmp/o$i" 2>"$tmp/e$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || st=$?; done
  if ((st)) || ! grep -q '^{' "$tmp/o0"; then
    { grep -h 'bench_dist:' "$tmp"/e* || tail -n 2 "$tmp/e0"; } | head -n 1 >"$tmp/err"
    ((st == 124)) && echo "timed out after ${run_timeout} s" >"$tmp/err"
    return 1
  fi
  grep -m1 '^{' "$tmp/o0" >"$tmp/line"
}

declare -A res_json res_err res_load res_cmd
# measure KEY W CAP BIN ARGS...: REPS runs (cached by key); the median by
# img/s in res_json[KEY] with the 1-minute load before it.
measure() {
  local key=$1 w=$2 cap=$3 b=$4 r lines=()
  shift 4
  [[ -n ${res_json[$key]+x} || -n ${res_err[$key]+x} ]] && return 0
  local how="cluster.sh cap node{0..$((w - 1))} $cap; " env
  [[ $cap == none ]] && how="cluster.sh uncap node{0..$((w - 1))}; "
  env="RANK=i WORLD_SIZE=$w LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=$master MASTER_PORT=P "
  ((w == 1)) && how="" env=""
  res_cmd[$key]="$how${env}cluster.sh exec node{i} ${b#"$root"/} $*"
  set_caps "$w" "$cap"
  for ((r = 0; r < reps; r++)); do
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    if ((w == 1)); then
      if ! timeout "$run_timeout" "$cluster" exec node0 "$b" "$@" >"$tmp/o0" 2>"$tmp/e0" ||
          ! grep -m1 '^{' "$tmp/o0" >"$tmp/line"; then
        tail -n 1 "$tmp/e0" >"$tmp/err"
        res_err[$key]=$(cat "$tmp/err")
        echo "  FAILED ($key): ${res_err[$key]}" >&2
        return 0
      fi
    elif ! run_once "$w" "$b" "$@"; then
      res_err[$key]=$(cat "$tmp/err")
      echo "  FAILED ($key): ${res_err[$key]}" >&2
      return 0
    fi
    lines+=("$(field "$(cat "$tmp/line")" images_per_sec) $load $(cat "$tmp/line")")
  done
  local med
  med=$(printf '%s\n' "${lines[@]}" | sort -g -k1,1 | sed -n "$(((reps + 1) / 2))p")
  med=${med#* }
  res_load[$key]=${med%% *}
  res_json[$key]=${med#* }
  echo "  $key: $(field "$med" images_per_sec) img/s" >&2
}

num() { [[ -n ${1:-} && $1 != null ]] && printf "%.${2}f" "$1" || printf -- '-'; }
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a != "" && b > 0) printf "%.3f", a / b; else printf "-" }'; }

# ---- the matrix ---------------------------------------------------------------
read -r -a models <<<"${MODELS:-d64 mlp}"
declare -A margs
margs[d64]="--model dcgan --image-size 64 --steps $steps64 --warmup $warm64 --threads 1"
margs[mlp]="--model mlp --image-size 28 --steps $stepsmlp --warmup $warmmlp --threads 1"
declare -A per
per[d64]=$batch64
per[mlp]=$batchmlp
declare -A mname
mname[d64]="dcgan-64 (64x64x3, ngf = ndf = 64)"
mname[mlp]="mlp GAN (z 50, 28x28)"

echo "hosts.sh: $(date -u +%FT%TZ), REPS=$reps, hosts: $hosts_list, caps: $caps" >&2
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for m in "${models[@]}"; do
  # shellcheck disable=SC2086
  measure "$m/1" 1 none "$bin" ${margs[$m]} --batch "${per[$m]}"
  for h in $hosts_list; do
    for cap in $caps; do
      for z in none bf16; do
        # shellcheck disable=SC2086
        measure "$m/$h/$cap/$z" "$h" "$cap" "$bin" ${margs[$m]} \
          --batch $((per[$m] * h)) --compress "$z"
        if [[ -n $before && $z == none ]]; then
          # shellcheck disable=SC2086
          measure "$m/$h/$cap/before" "$h" "$cap" "$before" ${margs[$m]} \
            --batch $((per[$m] * h))
        fi
      done
    done
  done
done

# Quality: ganflow-train on 2 hosts, the same seeds and steps, f32 and bf16.
declare -A swd_of swd_cmd
if [[ ${QUALITY:-0} == 1 ]]; then
  train=$build/trainer/ganflow-train
  qsteps=${QUALITY_STEPS:-400}
  qdata=${QUALITY_DATA:-/usr/share/datasets/fashion-mnist}
  uri=${MLFLOW_TRACKING_URI:?QUALITY=1 needs MLFLOW_TRACKING_URI}
  mport=$(sed -n 's#.*:\([0-9][0-9]*\)/*$#\1#p' <<<"$uri")
  relay=$("$cluster" gateway "$mport")
  set_caps 2 none
  for qm in dcgan mlp; do
    for seed in ${QUALITY_SEEDS:-1 2}; do
      for z in none bf16; do
        key="$qm/$seed/$z"
        qargs=(--data "$qdata" --model "$qm" --batch 64 --threads 1 --steps "$qsteps"
          --seed "$seed" --log-every 100 --sample-every 0 --eval-every "$qsteps"
          --check-every 10 --compress "$z" --register-model ""
          --checkpoint-dir "$tmp/ck-$qm-$seed-$z" --experiment bench-hosts-quality)
        [[ $qm == dcgan ]] && qargs+=(--image-size 28)
        swd_cmd[$key]="MLFLOW_TRACKING_URI=http://$relay RANK=i WORLD_SIZE=2 ... ${train#"$root"/} ${qargs[*]}"
        port=$((port + 1))
        pids=()
        for i in 1 0; do
          MLFLOW_TRACKING_URI=http://$relay RANK=$i WORLD_SIZE=2 LOCAL_RANK=0 \
            LOCAL_WORLD_SIZE=1 MASTER_ADDR=$master MASTER_PORT=$port \
            timeout "$run_timeout" "$cluster" exec "node$i" "$train" "${qargs[@]}" \
            >"$tmp/q$i" 2>&1 &
          pids+=($!)
        done
        st=0
        for p in "${pids[@]}"; do wait "$p" || st=$?; done
        swd=$(sed -n "s#^step $qsteps: swd/avg \([0-9.]*\).*#\1#p" "$tmp/q0" | tail -n 1)
        ((st)) && swd="FAILED (exit $st: $(tail -n 1 "$tmp/q0"))"
        swd_of[$key]=$swd
        echo "  quality $key: swd/avg $swd" >&2
      done
    done
  done
fi

# ---- the tables ----------------------------------------------------------------
t_end=$(date +%s)
{
  echo "# Data-parallel throughput across test hosts, slow links ($(hostname))"
  echo
  echo "Measured by \`bench/dist/hosts.sh\` on $(date -u +%F), $(((t_end - t_start) / 60)) minutes."
  echo
  echo "- machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); load average at the start: $load_start"
  echo "- hosts: network namespaces of \`tests/support/cluster.sh\` on one bridge, one rank each, torchrun-style variables, gf_comm's tcp engine, 1 thread per rank; \`cap\` is a tbf bandwidth limit on both directions of every host's link (no latency emulation: this kernel has no netem)"
  echo "- all ranks share this machine's $(nproc) cores: 2 hosts use one core each, 4 hosts are oversubscribed 2x (each rank gets about half a core), so 4-host figures measure the cores, not the links"
  echo "- weak scaling: the per-rank batch is fixed (dcgan-64 ${per[d64]}, mlp ${per[mlp]}); efficiency = img/s / (hosts x img/s of one rank alone); per rank = img/s / hosts"
  echo "- each row: the median by img/s of $reps runs; steps timed/warm-up: dcgan-64 $steps64/$warm64, mlp $stepsmlp/$warmmlp; synthetic input"
  echo "- wire MB/step: one rank's gradient payload as it travels (f32, or bf16 with --compress bf16); a ring at H hosts sends 2(H-1)/H of it per rank"
  echo
  for m in "${models[@]}"; do
    base=$(field "${res_json[$m/1]:-}" images_per_sec)
    echo "## ${mname[$m]}"
    echo
    echo "One rank alone: $(num "$base" 1) img/s (\`${res_cmd[$m/1]}\`)."
    echo
    echo "| hosts | cap | compress | img/s | img/s per rank | efficiency | step ms | all-reduce ms/step | exposed ms/step | wire MB/step | ranks agree | load | command |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for h in $hosts_list; do
      for cap in $caps; do
        for z in none bf16 before; do
          key="$m/$h/$cap/$z"
          [[ $z == before && -z $before ]] && continue
          label=$z
          [[ $z == before ]] && label="none ($before_name)"
          if [[ -n ${res_err[$key]+x} ]]; then
            echo "| $h | $cap | $label | FAILED: ${res_err[$key]} | | | | | | | | | \`${res_cmd[$key]}\` |"
            continue
          fi
          j=${res_json[$key]:-}
          ips=$(field "$j" images_per_sec)
          wire=$(field "$j" wire_bytes_per_step)
          [[ -z $wire ]] && wire=$(field "$j" bytes_per_step)
          echo "| $h | $cap | $label | $(num "$ips" 1) | $(num "$(awk -v a="$ips" -v h="$h" 'BEGIN { print a / h }')" 1) | $(ratio "$ips" "$(awk -v b="$base" -v h="$h" 'BEGIN { print b * h }')") | $(num "$(field "$j" step_ms)" 1) | $(num "$(field "$j" allreduce_ms_per_step)" 1) | $(num "$(field "$j" exposed_ms_per_step)" 1) | $(num "$(awk -v b="$wire" 'BEGIN { print b / 1e6 }')" 2) | $(field "$j" ranks_agree) | ${res_load[$key]} | \`${res_cmd[$key]}\` |"
        done
      done
    done
    echo
  done
  echo "## Targets"
  echo
  echo "| target | measured | ratio | met |"
  echo "|---|---|---|---|"
  for h in $hosts_list; do
    a=$(field "${res_json[d64/$h/1gbit/none]:-}" images_per_sec)
    b=$(field "${res_json[d64/$h/none/none]:-}" images_per_sec)
    r=$(ratio "$a" "$b")
    echo "| dcgan-64, $h hosts, 1 Gbit/s >= 90 % of uncapped (f32) | $(num "$a" 1) vs $(num "$b" 1) img/s | $r | $(awk -v r="$r" 'BEGIN { print (r != "-" && r >= 0.9) ? "yes" : "no" }') |"
    a=$(field "${res_json[mlp/$h/100mbit/bf16]:-}" images_per_sec)
    b=$(field "${res_json[mlp/$h/100mbit/none]:-}" images_per_sec)
    r=$(ratio "$a" "$b")
    echo "| mlp, $h hosts, 100 Mbit/s: bf16 >= 1.6x f32 | $(num "$a" 1) vs $(num "$b" 1) img/s | $r | $(awk -v r="$r" 'BEGIN { print (r != "-" && r >= 1.6) ? "yes" : "no" }') |"
  done
  echo
  if [[ ${QUALITY:-0} == 1 ]]; then
    echo "## Quality cost of --compress bf16"
    echo
    echo "ganflow-train on 2 hosts (uncapped), Fashion-MNIST, batch 64 (32 per rank), ${qsteps} steps, \`--check-every 10\` (every rank held the same parameters throughout); swd/avg (x1e3, lower is better) of the eval at the last step. Two seeds show how far runs differ anyway."
    echo
    echo "| model | seed | swd/avg f32 | swd/avg bf16 | command (f32; bf16 adds --compress bf16) |"
    echo "|---|---|---|---|---|"
    for qm in dcgan mlp; do
      for seed in ${QUALITY_SEEDS:-1 2}; do
        echo "| $qm | $seed | ${swd_of[$qm/$seed/none]} | ${swd_of[$qm/$seed/bf16]} | \`${swd_cmd[$qm/$seed/none]}\` |"
      done
    done
    echo
  fi
} >"$out"
cat "$out"
