#!/usr/bin/env bash
# run.sh - end-to-end figures of ganflow-train on the CPU, against a local
# MLflow server this script starts (and stops) itself:
#   1. images/s of --model mlp and --model dcgan (28x28x1, Fashion-MNIST) at
#      batch 64, with the step-time split (data wait / compute) that the
#      trainer logs as perf/ metrics, read back from MLflow;
#   2. time from restarting a SIGKILLed run to its first new step: a dcgan
#      run checkpointing every CKPT_EVERY steps is killed with SIGKILL a few
#      steps past a checkpoint, the same command is started again, and the
#      time from exec to the log line of the first step beyond the checkpoint
#      is measured (KILLS times);
#   3. peak RSS (/usr/bin/time -v "Maximum resident set size") of dcgan-28
#      with Fashion-MNIST loaded: the throughput run (no SWD, no samples) and
#      a full run (SWD evaluation, sample grid, checkpoint, registered model);
#   4. PyTorch eager CPU on the same networks and step (bench/model's
#      torch_baseline.py) when TORCH_PYTHON (default /tmp/torch-venv/bin/python)
#      imports torch.
#
#   bench/trainer/run.sh
#
# Environment (all optional):
#   GANFLOW_TRAIN   ganflow-train binary to use (default: build one, Release,
#                   no CUDA, no tests, into BUILD_DIR)
#   BUILD_DIR       (build-bench-trainer)
#   DATA            (/usr/share/datasets/fashion-mnist)
#   THREADS         --threads of every run (2)
#   MLP_STEPS       (400)   DCGAN_STEPS (120)   FULL_STEPS (20)
#   CKPT_EVERY      (10)    KILLS (3)
#   OUT             results folder (/tmp/ganflow-bench-trainer)
#   TORCH_PYTHON    (/tmp/torch-venv/bin/python)
# Runs one training at a time; the machine's load average is printed with
# every figure, since shared machines make single figures noisy.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
build=${BUILD_DIR:-$root/build-bench-trainer}
data=${DATA:-/usr/share/datasets/fashion-mnist}
threads=${THREADS:-2}
mlp_steps=${MLP_STEPS:-400}
dcgan_steps=${DCGAN_STEPS:-120}
full_steps=${FULL_STEPS:-20}
ckpt_every=${CKPT_EVERY:-10}
kills=${KILLS:-3}
out=${OUT:-/tmp/ganflow-bench-trainer}
py_torch=${TORCH_PYTHON:-/tmp/torch-venv/bin/python}
py=$root/.venv/bin/python
[ -x "$py" ] || py=python3

case $out in /|"") echo "run.sh: refusing OUT=$out" >&2; exit 2 ;; esac
rm -rf "$out"
mkdir -p "$out"
bench_train "$build" "$out"
[ -x /usr/bin/time ] || { echo "run.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }

state=$(mktemp -d /tmp/ganflow-bench-trainer-mlflow.XXXXXX)
export GANFLOW_MLFLOW_STATE=$state GANFLOW_MLFLOW_PORT=0 GANFLOW_MLFLOW_WORKERS=1
"$root/deploy/mlflow-local.sh" start >/dev/null
cleanup() {
  [ -n "${trainer_pid:-}" ] && kill -KILL "$trainer_pid" 2>/dev/null || true
  "$root/deploy/mlflow-local.sh" stop >/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
uri=$(cat "$state/uri")
# A freshly started MLflow 3 server may keep the cores busy for some
# seconds after /health answers (its workers importing mlflow; with
# GANFLOW_MLFLOW_JOBS=1 also its job-queue consumers); a training started
# then runs its first steps at a fraction of its speed. Wait (at most 60 s) until the machine is >= 90 % idle over 1 s.
cpu_idle_pct() {
  local a b
  read -r -a a < /proc/stat; sleep 1; read -r -a b < /proc/stat
  local busy=0 idle=0 i
  for i in 1 2 3 6 7 8; do busy=$(( busy + b[i] - a[i] )); done
  idle=$(( b[4] - a[4] + b[5] - a[5] ))
  echo $(( 100 * idle / (busy + idle + 1) ))
}
for _ in $(seq 60); do [ "$(cpu_idle_pct)" -ge 90 ] && break; done
export MLFLOW_TRACKING_URI=$uri MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=2
exp=bench-trainer-$$
results=$out/results.txt

say() { echo "$*" | tee -a "$results"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# Prefixes each line of stdin with the epoch time (bash 5, no fork per line).
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
max_rss_mb() { awk -F: '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$1"; }
run_id_of() { sed -n 's/.*ganflow-train: run \([0-9a-f]*\),.*/\1/p' "$1" | head -1; }

say "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') nproc=$(nproc) threads=$threads load $(load)"
say "# ganflow-train $train; MLflow $uri"

# 1 + 3a. Throughput and step-time split; peak RSS of the training loop.
for m in mlp dcgan; do
  steps=$mlp_steps
  [ $m = dcgan ] && steps=$dcgan_steps
  log=$out/throughput-$m.log
  load0=$(load)
  t0=$EPOCHREALTIME
  /usr/bin/time -v -o "$out/time-$m.txt" "$train" --data "$data" --model $m \
    --batch 64 --threads "$threads" --steps "$steps" --log-every 10 \
    --eval-every 0 --sample-every 0 --checkpoint-every 0 \
    --register-model '' --experiment "$exp" --run-name "throughput-$m" \
    --checkpoint-dir "$out/ckpt-throughput-$m" 2>&1 | stamp >"$log"
  t1=$EPOCHREALTIME
  rid=$(run_id_of "$log")
  first=$(awk 'index($0, " step 10/") {print $1; exit}' "$log")
  last=$(awk -v s=" step $steps/" 'index($0, s) {print $1; exit}' "$log")
  summary=$("$py" "$here/mlflow_metrics.py" "$uri" "$rid" --skip 1)
  loop_ips=$(awk -v a="$first" -v b="$last" -v n=$((steps - 10)) \
    'BEGIN {printf "%.1f", n * 64 / (b - a)}')
  say "$m batch 64: $summary loop_img_per_s(steps 11..$steps, wall)=$loop_ips" \
      "process_wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" \
      "max_rss_mb=$(max_rss_mb "$out/time-$m.txt") load_before=[$load0] load_after=[$(load)]"
done

# 2. Restart after SIGKILL: time from exec to the first step past the checkpoint.
kdir=$out/ckpt-kill
kill_args=(--data "$data" --model dcgan --batch 64 --threads "$threads"
           --steps 100000 --log-every 1 --checkpoint-every "$ckpt_every"
           --eval-every 0 --sample-every 0 --register-model ''
           --experiment "$exp" --run-name kill-restart --checkpoint-dir "$kdir")
wait_line() {  # wait_line FILE PATTERN TIMEOUT_S: 0 when a line matches
  local i
  for i in $(seq 1 $(($3 * 20))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    kill -0 "$trainer_pid" 2>/dev/null || { grep -q -- "$2" "$1" 2>/dev/null; return; }
    sleep 0.05
  done
  return 1
}
log=$out/kill-0.log
"$train" "${kill_args[@]}" 2> >(stamp >"$log") &
trainer_pid=$!
wait_line "$log" "step $((ckpt_every + 3))/" 600 || { echo "run.sh: first kill run did not reach step $((ckpt_every + 3))" >&2; exit 1; }
kill -KILL "$trainer_pid"; wait "$trainer_pid" 2>/dev/null || true
restarts=()
for r in $(seq 1 "$kills"); do
  log=$out/kill-$r.log
  load0=$(load)
  t0=$EPOCHREALTIME
  "$train" "${kill_args[@]}" 2> >(stamp >"$log") &
  trainer_pid=$!
  wait_line "$log" "resuming from" 300 || { echo "run.sh: restart $r did not resume" >&2; cat "$log" >&2; exit 1; }
  from=$(sed -n 's/.*resuming from .* (step \([0-9]*\) of.*/\1/p' "$log" | head -1)
  wait_line "$log" "step $((from + 1))/" 300 || { echo "run.sh: restart $r: no step $((from + 1))" >&2; cat "$log" >&2; exit 1; }
  kill -KILL "$trainer_pid"; wait "$trainer_pid" 2>/dev/null || true
  t_resume=$(awk '/resuming from/ {print $1; exit}' "$log")
  t_run=$(awk '/ganflow-train: run / {print $1; exit}' "$log")
  t_step=$(awk -v s=" step $((from + 1))/" 'index($0, s) {print $1; exit}' "$log")
  secs=$(awk -v a="$t0" -v b="$t_step" 'BEGIN {printf "%.2f", b - a}')
  restarts+=("$secs")
  say "restart $r after SIGKILL: resumed from step $from; exec->'resuming' $(awk -v a="$t0" -v b="$t_resume" 'BEGIN {printf "%.2f", b - a}') s," \
      "exec->run resumed in MLflow $(awk -v a="$t0" -v b="$t_run" 'BEGIN {printf "%.2f", b - a}') s," \
      "exec->step $((from + 1)) logged $secs s; load [$load0]"
done
trainer_pid=
say "restart to first new step: median $(printf '%s\n' "${restarts[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}') s over $kills restarts"

# 3b. Peak RSS of a full dcgan-28 run: SWD (2000 images per set), sample
# grid, checkpoint, model directory and registered version.
log=$out/full-dcgan.log
/usr/bin/time -v -o "$out/time-full.txt" "$train" --data "$data" --model dcgan \
  --batch 64 --threads "$threads" --steps "$full_steps" --log-every 10 \
  --eval-every "$full_steps" --sample-every "$full_steps" \
  --experiment "$exp" --run-name full-dcgan --register-model "bench-dcgan-$$" \
  --checkpoint-dir "$out/ckpt-full" 2>&1 | stamp >"$log"
say "dcgan-28 full run ($full_steps steps, SWD + samples + checkpoint + registered model): max_rss_mb=$(max_rss_mb "$out/time-full.txt") (target <= 300); load [$(load)]"

# 4. PyTorch eager CPU, same networks and step (no data loading, no tracking).
if [ -x "$py_torch" ] && "$py_torch" -c 'import torch' 2>/dev/null; then
  for m in mlp dcgan28; do
    n=30
    [ $m = dcgan28 ] && n=15
    say "pytorch $("$py_torch" "$root/bench/model/torch_baseline.py" --model $m --batch 64 --threads "$threads" --steps $n) load [$(load)]"
  done
else
  say "pytorch: no torch at $py_torch; baseline skipped"
fi
say "# done $(date -u +%Y-%m-%dT%H:%M:%SZ) load $(load); logs in $out"
