#!/usr/bin/env bash
# run.sh - figures of `ganflow launch` recovering a 2-rank CPU job (dcgan at
# 28x28, Fashion-MNIST, batch 64, one thread per rank), against a local MLflow
# server this script starts (and stops) itself. The failures are injected from
# outside, reading the ranks' heartbeat files (<checkpoint-dir>/heartbeat/
# rank-<r>.hb) to know where they are, as tests/launch/test_launch.c does:
#   1. death: KILLS kill -9s of a seeded-random rank, each at a seeded-random
#      step 2..CKPT_EVERY-2 steps past a checkpoint; per kill, the time from
#      the kill to the restarted job's rank 0 (a new pid) beating its first
#      completed step past the resume step, the time to its first beat at all
#      (the restart), the steps lost (from the supervisor's "restart N of M:
#      ... at step A ...; resuming from step B") and the supervisor's own
#      figure ("step N done, X s after the failure was seen"). Then
#      MPIRUN_KILLS more through --launcher mpirun (mpirun's start-up
#      included).
#   2. hang: HANGS SIGSTOPs of a seeded-random rank with --hang-timeout
#      HANG_TIMEOUT: SIGSTOP to the supervisor's "attempt failed: no
#      heartbeat" line, to the restart (first beat of a new rank-0 pid) and
#      to the first new step.
#   3. the price of --checkpoint-every: steady step time (log lines of steps
#      W..N, --log-every 1) with --checkpoint-every 1 and 1000; the
#      difference is one checkpoint's cost; with the checkpoint file's size,
#      a table for --checkpoint-every 10/50/200. At 28x28 (COST_STEPS) and
#      64x64 (--image-size 64, COST_STEPS_64; 0 skips).
#
#   bench/launch/run.sh
#
# Environment (all optional):
#   GANFLOW_BIN_DIR  folder holding ganflow and ganflow-train (or a build dir
#                    with cli/ and trainer/); default: build both, Release, no
#                    CUDA, no tests, into BUILD_DIR
#   BUILD_DIR        (build-bench-launch)
#   DATA             (/usr/share/datasets/fashion-mnist)
#   SEED             victims and kill steps (20261124)
#   KILLS (5)   MPIRUN_KILLS (1)   HANGS (3)   HANG_TIMEOUT (10)
#   CKPT_EVERY       --checkpoint-every of parts 1 and 2 (10)
#   COST_STEPS (60)  COST_STEPS_64 (40)
#   OUT              results folder (/tmp/ganflow-bench-launch, wiped first)
# 2 to 4 minutes with the defaults on 2 cores, plus the build. The load
# average is printed with every figure: the machine may be shared.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
build=${BUILD_DIR:-$root/build-bench-launch}
data=${DATA:-/usr/share/datasets/fashion-mnist}
seed=${SEED:-20261124}
kills=${KILLS:-5}
mpirun_kills=${MPIRUN_KILLS:-1}
hangs=${HANGS:-3}
hang_timeout=${HANG_TIMEOUT:-10}
ckpt_every=${CKPT_EVERY:-10}
cost_steps=${COST_STEPS:-60}
cost_steps64=${COST_STEPS_64:-40}
out=${OUT:-/tmp/ganflow-bench-launch}

case $out in /|"") echo "run.sh: refusing OUT=$out" >&2; exit 2 ;; esac
[ "$ckpt_every" -ge 4 ] || { echo "run.sh: CKPT_EVERY must be >= 4" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"

bench_bins "$build" "$out"
"$ganflow" launch --help >/dev/null 2>&1 ||
  { echo "run.sh: $ganflow has no 'launch' command" >&2; exit 1; }

state=$(mktemp -d /tmp/ganflow-bench-launch-mlflow.XXXXXX)
export GANFLOW_MLFLOW_STATE=$state GANFLOW_MLFLOW_PORT=0 GANFLOW_MLFLOW_WORKERS=1
"$root/deploy/mlflow-local.sh" start >/dev/null
sup_pid=
cleanup() {
  if [ -n "$sup_pid" ]; then  # its ranks die with it (PR_SET_PDEATHSIG)
    kill -KILL "$sup_pid" 2>/dev/null || true
    wait "$sup_pid" 2>/dev/null || true
  fi
  "$root/deploy/mlflow-local.sh" stop >/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
export MLFLOW_TRACKING_URI
MLFLOW_TRACKING_URI=$(cat "$state/uri")

# The CPU's idle percentage over 1 s.
cpu_idle_pct() {
  local a b
  read -r -a a < /proc/stat; sleep 1; read -r -a b < /proc/stat
  local busy=0 idle=0 i
  for i in 1 2 3 6 7 8; do busy=$(( busy + b[i] - a[i] )); done
  idle=$(( b[4] - a[4] + b[5] - a[5] ))
  echo $(( 100 * idle / (busy + idle + 1) ))
}
# Waits (at most $1 s) until the CPU is >= 90 % idle; prints the last figure.
wait_idle() {
  local i p=0
  for (( i = 0; i < $1; i++ )); do
    p=$(cpu_idle_pct)
    [ "$p" -ge 90 ] && break
  done
  echo "$p"
}

exp=bench-launch-$$
results=$out/results.txt
say() { echo "$*" | tee -a "$results"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# Prefixes each line of stdin with the epoch time (no fork per line).
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
# Microseconds as seconds with 2 decimals.
fmt_s() { printf '%d.%02d' $(( $1 / 1000000 )) $(( $1 % 1000000 / 10000 )); }
# Sleeps without forking: a read that times out on a FIFO nobody writes.
mkfifo "$out/.nap"
exec {nap_fd}<>"$out/.nap"
nap() { read -r -t "$1" -u "$nap_fd" || true; }
# min / median / max of the arguments.
stats() {
  printf '%s\n' "$@" | sort -g |
    awk '{a[NR] = $1} END {printf "min %s / median %s / max %s", a[1], a[int((NR + 1) / 2)], a[NR]}'
}

# Rank $2's heartbeat in folder $1: hb_pid, hb_step, hb_phase; 1 when there
# is none (yet) or the line is not whole.
hb_re='^ganflow-heartbeat 1 rank=([0-9]+) pid=([0-9]+) seq=([0-9]+) step=(-?[0-9]+) phase=([a-z]+) host=[^ ]+ run=[^ ]+'
hb_read() {
  local line=
  { IFS= read -r line < "$1/rank-$2.hb"; } 2>/dev/null || [ -n "$line" ] || return 1
  [[ $line =~ $hb_re ]] || return 1
  hb_pid=${BASH_REMATCH[2]}
  hb_step=${BASH_REMATCH[4]}
  hb_phase=${BASH_REMATCH[5]}
}

say "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') nproc=$(nproc) load $(load)"
say "# ganflow $ganflow, ganflow-train $train; MLflow $MLFLOW_TRACKING_URI; seed $seed"
say "# CPU idle before the first job: $(wait_idle 60) %; load $(load)"

train_common=(--data "$data" --model dcgan --batch 64 --threads 1 --seed 7
              --eval-every 0 --sample-every 0 --register-model ''
              --experiment "$exp")

# ---- a supervised job --------------------------------------------------------
job_dir='' job_hb='' job_log=''
# start_job NAME HANG_TIMEOUT MAX_RESTARTS [LAUNCH OPTIONS...]: a job of
# 100000 steps, checkpoint every CKPT_EVERY, in the background (sup_pid).
start_job() {
  local name=$1 ht=$2 mr=$3
  shift 3
  job_dir=$out/$name
  job_hb=$job_dir/heartbeat
  job_log=$out/$name.log
  "$ganflow" launch --nproc 2 --max-restarts "$mr" --hang-timeout "$ht" \
    --start-timeout 120 "$@" -- "$train" "${train_common[@]}" --steps 100000 \
    --log-every 10 --checkpoint-every "$ckpt_every" --checkpoint-dir "$job_dir" \
    --run-name "$name" > >(stamp >"$job_log") 2>&1 &
  sup_pid=$!
  prev0=-1
}
# SIGTERM to the supervisor (the ranks checkpoint and stop); its exit status
# in stop_rc.
stop_job() {
  local i
  kill -TERM "$sup_pid" 2>/dev/null || true
  for (( i = 0; i < 1200; i++ )); do
    kill -0 "$sup_pid" 2>/dev/null || break
    nap 0.1
  done
  kill -KILL "$sup_pid" 2>/dev/null || true
  stop_rc=0
  wait "$sup_pid" || stop_rc=$?
  sup_pid=
}

# inject SIGNAL VICTIM TARGET: waits until rank 0 of the current attempt (a
# pid other than prev0) has completed step TARGET, sends SIGNAL to rank
# VICTIM, and follows rank 0's beats until the restarted job's first step.
# Sets m_step0 (rank 0's step at the signal), m_vstep and m_vpid (the
# victim's step and pid), m_restart_us and m_step_us (signal to the restart's
# first beat / to its first new step), m_first (its first step, the one
# resumed from), m_new (the step seen); prev0 becomes the pid of the rank 0
# signalled (the attempt the next call waits past). 1 on a timeout.
inject() {
  local sig=$1 victim=$2 target=$3 deadline vpid old0 t0 t
  deadline=$(( $(now_us) + 300000000 ))
  until hb_read "$job_hb" 0 && [ "$hb_pid" != "$prev0" ] &&
        [ "$hb_phase" = train ] && [ "$hb_step" -ge "$target" ]; do
    [ "$(now_us)" -lt "$deadline" ] || { echo "run.sh: rank 0 did not reach step $target" >&2; return 1; }
    kill -0 "$sup_pid" 2>/dev/null || { echo "run.sh: the supervisor ended" >&2; return 1; }
    nap 0.01
  done
  old0=$hb_pid
  m_step0=$hb_step
  hb_read "$job_hb" "$victim" || { echo "run.sh: no heartbeat of rank $victim" >&2; return 1; }
  vpid=$hb_pid
  m_vpid=$vpid
  m_vstep=$hb_step
  t0=$(now_us)
  kill "-$sig" "$vpid"
  m_restart_us=-1
  m_step_us=-1
  m_first=
  deadline=$(( t0 + 180000000 ))
  while [ "$(now_us)" -lt "$deadline" ]; do
    if hb_read "$job_hb" 0 && [ "$hb_pid" != "$old0" ]; then
      t=$(now_us)
      [ "$m_restart_us" -ge 0 ] || m_restart_us=$(( t - t0 ))
      if [ "$hb_phase" = train ]; then
        if [ -z "$m_first" ]; then
          m_first=$hb_step
        elif [ "$hb_step" -gt "$m_first" ]; then
          m_step_us=$(( t - t0 ))
          m_new=$hb_step
          prev0=$old0
          m_t0=$t0
          return 0
        fi
      fi
    fi
    nap 0.005
  done
  echo "run.sh: no new step within 180 s of the $sig" >&2
  return 1
}

# The supervisor's lines about restart N (waits up to 20 s for them): sets
# r_at (step the failed attempt had reached), r_from (resumed from), r_sup
# (its "X s after the failure was seen"), r_seen_us (the "attempt failed"
# line's time stamp minus m_t0).
restart_lines() {
  local n=$1 i l='' f='' d=''
  for (( i = 0; i < 200; i++ )); do
    l=$(grep -m1 "ganflow launch: restart $n of " "$job_log" || true)
    d=$(grep 's after the failure was seen' "$job_log" | sed -n "${n}p" || true)
    [ -n "$l" ] && [ -n "$d" ] && break
    nap 0.1
  done
  r_at='?' r_from='?' r_sup='?' r_seen_us=-1
  [[ $l =~ (at|last\ reported)\ step\ ([0-9]+) ]] && r_at=${BASH_REMATCH[2]}
  [[ $l =~ resuming\ from\ step\ ([0-9]+) ]] && r_from=${BASH_REMATCH[1]}
  [[ $d =~ ,\ ([0-9.]+)\ s\ after\ the\ failure ]] && r_sup=${BASH_REMATCH[1]}
  f=$(grep 'ganflow launch: attempt failed: ' "$job_log" | sed -n "${n}p" | cut -d' ' -f1 || true)
  if [ -n "$f" ]; then r_seen_us=$(( ${f/./} - m_t0 )); fi
}

RANDOM=$seed
# A step 2..CKPT_EVERY-2 past the first checkpoint after step $1.
pick_step() { echo $(( ($1 / ckpt_every + 1) * ckpt_every + 2 + RANDOM % (ckpt_every - 3) )); }

# ---- 1. kill -9 ---------------------------------------------------------------
# kill_series NAME COUNT [LAUNCH OPTIONS...]
kill_series() {
  local name=$1 count=$2 i victim target lost src load0 recs=() steps=() sups=() losts=()
  shift 2
  start_job "$name" 60 $(( count + 1 )) "$@"
  local from=0
  for (( i = 1; i <= count; i++ )); do
    victim=$(( RANDOM % 2 ))
    target=$(pick_step "$from")
    load0=$(load)
    inject KILL "$victim" "$target" || { say "$name: kill $i: failed (log $job_log)"; stop_job; return 1; }
    restart_lines "$i"
    from=$m_first
    # mpirun's failure names no step ("mpirun exited with status 137"):
    # then the victim's last beat gives the step reached
    src=supervisor
    if [ "$r_at" = "?" ]; then r_at=$m_vstep src="victim's heartbeat"; fi
    lost='?'
    [ "$r_from" != "?" ] && lost=$(( r_at - r_from )) && losts+=("$lost")
    recs+=("$(fmt_s "$m_step_us")")
    steps+=("$(fmt_s "$m_restart_us")")
    [ "$r_sup" != "?" ] && sups+=("$r_sup")
    say "$name: kill -9 of rank $victim (pid $m_vpid) at step $m_vstep (rank 0 at $m_step0):" \
        "supervisor saw it $(fmt_s "$r_seen_us") s later; restart (new rank-0 pid beats)" \
        "$(fmt_s "$m_restart_us") s; first new step (step $m_new, resumed from" \
        "$m_first) $(fmt_s "$m_step_us") s; supervisor: ${r_sup} s; lost $lost" \
        "steps (at step $r_at ($src), resuming from $r_from); load [$load0]"
    [ "$r_from" = "$m_first" ] || say "$name: note: rank 0's first step $m_first != the supervisor's resume step $r_from"
  done
  stop_job
  say "$name: $count kills: kill -> first new step: $(stats "${recs[@]}") s;" \
      "kill -> restart: $(stats "${steps[@]}") s;" \
      "supervisor's figure: $( [ ${#sups[@]} -gt 0 ] && stats "${sups[@]}" ) s;" \
      "steps lost: $( [ ${#losts[@]} -gt 0 ] && stats "${losts[@]}" ); supervisor exit $stop_rc (143: stopped by SIGTERM)"
}

kill_series kills-local "$kills" || true
if [ "$mpirun_kills" -gt 0 ]; then
  if command -v mpirun >/dev/null; then
    kill_series kills-mpirun "$mpirun_kills" --launcher mpirun \
      --launcher-arg=--allow-run-as-root --launcher-arg=--oversubscribe \
      --launcher-arg=--bind-to --launcher-arg=none ||
      say "kills-mpirun: failed; see $out/kills-mpirun.log"
  else
    say "kills-mpirun: skipped: no mpirun on PATH"
  fi
fi

# ---- 2. SIGSTOP -----------------------------------------------------------------
hang_series() {
  local i victim target seen=() rst=() recs=() from=0 load0
  start_job hang "$hang_timeout" $(( hangs + 1 ))
  for (( i = 1; i <= hangs; i++ )); do
    victim=$(( RANDOM % 2 ))
    target=$(pick_step "$from")
    load0=$(load)
    inject STOP "$victim" "$target" || { say "hang: SIGSTOP $i: failed (log $job_log)"; stop_job; return 1; }
    restart_lines "$i"
    from=$m_first
    seen+=("$(fmt_s "$r_seen_us")")
    rst+=("$(fmt_s "$m_restart_us")")
    recs+=("$(fmt_s "$m_step_us")")
    say "hang: SIGSTOP of rank $victim (pid $m_vpid) at step $m_vstep, --hang-timeout $hang_timeout:" \
        "'attempt failed: no heartbeat' after $(fmt_s "$r_seen_us") s; restart (new rank-0 pid" \
        "beats) $(fmt_s "$m_restart_us") s; first new step (step $m_new, resumed from" \
        "$m_first) $(fmt_s "$m_step_us") s; supervisor: $r_sup s after it saw the hang;" \
        "load [$load0]"
    say "hang: the supervisor's reason: $(sed -n 's/.*ganflow launch: attempt failed: //p' "$job_log" | sed -n "${i}p")"
  done
  stop_job
  say "hang: $hangs SIGSTOPs: -> detected $(stats "${seen[@]}") s; -> restart $(stats "${rst[@]}") s" \
      "(target <= $(( hang_timeout + 2 ))); -> first new step $(stats "${recs[@]}") s; supervisor exit $stop_rc"
}
if [ "$hangs" -gt 0 ]; then hang_series || true; fi

# ---- 3. --checkpoint-every 1 vs 1000 ------------------------------------------
# cost_run SIZE STEPS WARM EVERY: seconds per step over steps WARM+1..STEPS
# (from the time stamps of their log lines), in cost_s; the checkpoint's
# size in bytes in cost_bytes.
cost_run() {
  local size=$1 n=$2 w=$3 every=$4 name log rc=0 a b f
  name=cost-$size-every$every
  log=$out/$name.log
  "$ganflow" launch --nproc 2 --max-restarts 0 -- "$train" "${train_common[@]}" \
    --image-size "$size" --steps "$n" --log-every 1 --checkpoint-every "$every" \
    --checkpoint-dir "$out/$name" --run-name "$name" > >(stamp >"$log") 2>&1 &
  sup_pid=$!
  wait "$sup_pid" || rc=$?
  sup_pid=
  [ "$rc" = 0 ] || { say "$name: exit $rc (log $log)"; return 1; }
  a=$(awk -v s=" step $w/$n " 'index($0, s) {print $1; exit}' "$log")
  b=$(awk -v s=" step $n/$n " 'index($0, s) {print $1; exit}' "$log")
  cost_s=$(awk -v a="$a" -v b="$b" -v k=$(( n - w )) 'BEGIN {printf "%.4f", (b - a) / k}')
  f=$(find "$out/$name" -maxdepth 1 -name 'ckpt-*.safetensors' | sort | tail -1)
  cost_bytes=$(stat -c %s "$f")
}
cost_table() {  # cost_table SIZE STEPS WARM
  local size=$1 n=$2 w=$3 t1 t1000 bytes load0
  say "# CPU idle before the --checkpoint-every runs at ${size}x$size: $(wait_idle 30) %"
  load0=$(load)
  cost_run "$size" "$n" "$w" 1000 || return 0
  t1000=$cost_s
  cost_run "$size" "$n" "$w" 1 || return 0
  t1=$cost_s
  bytes=$cost_bytes
  say "cost ${size}x$size: step time over steps $(( w + 1 ))..$n: --checkpoint-every 1000" \
      "$t1000 s, --checkpoint-every 1 $t1 s; one checkpoint" \
      "$(awk -v a="$t1" -v b="$t1000" 'BEGIN {printf "%.4f", a - b}') s," \
      "$(awk -v x="$bytes" 'BEGIN {printf "%.1f", x / 1e6}') MB; load [$load0] -> [$(load)]"
  awk -v t1="$t1" -v t="$t1000" -v size="$size" 'BEGIN {
    c = t1 - t; if (c < 0) c = 0
    printf "cost %sx%s: every | overhead %% of step time | steps lost per failure: mean / worst | s lost: mean / worst\n", size, size
    n = split("10 50 200", e, " ")
    for (i = 1; i <= n; i++)
      printf "cost %sx%s: %d | %.2f %% | %g / %d | %.1f / %.1f\n", size, size, e[i],
             100 * c / (e[i] * t), e[i] / 2, e[i], e[i] / 2 * t, e[i] * t
    split("3600 86400", m, " ")
    for (i = 1; i <= 2; i++) {
      y = sqrt(2 * c * m[i])
      printf "cost %sx%s: Young, MTBF %d h: interval sqrt(2 * %.3f s * MTBF) = %.0f s = %.0f steps\n",
             size, size, m[i] / 3600, c, y, (t > 0 ? y / t : 0)
    }
  }' | tee -a "$results"
}
[ "$cost_steps" -gt 10 ] && cost_table 28 "$cost_steps" 10
[ "$cost_steps64" -gt 5 ] && cost_table 64 "$cost_steps64" 5
say "# done $(date -u +%Y-%m-%dT%H:%M:%SZ) load $(load); logs in $out"
