#!/usr/bin/env bash
# test_slurm.sh - deploy/slurm/ganflow.sbatch on a real Slurm: a private
# single-node cluster (tests/support/slurm_fixture.sh: own munged, slurmctld,
# slurmd, no cgroups) runs `sbatch --wait --ntasks=2` of the script, which
# runs `ganflow launch --launcher srun` over ganflow-train on Fashion-MNIST
# (mlp, a few steps, 2 CPU ranks) against the MLflow server of the ctest
# fixture `mlflow`. Then, through MLflow's REST API: the run (its id from
# the checkpoint dir's run_id) is FINISHED with params world_size 2 and
# local_batch 8, its loss/d history has every logged step once, and the model
# was registered as a new version (version 1 of a fresh name, READY, made by
# that run, under the alias the job asked for); Slurm's own record of the
# job says COMPLETED 0:0.
#
# Then a stop and a resume, as at a time limit: a longer job gets
# `scancel --batch --signal=TERM` (what --signal=B:TERM@120 does) once it
# has logged a few steps; the script passes the signal on to ganflow launch,
# whose ranks checkpoint: job exit 143, the run KILLED, a checkpoint past the
# last periodic one. The same sbatch again resumes from it into that run,
# which ends FINISHED with every logged step once.
#
# Then --elastic-capacity slurm: the allocation read as the capacity, and
# the job's time limit cut short read as a notice: the ranks checkpoint
# before the job's new EndTime.
#
# GF_SLURM_ONLY=run|stop|capacity runs one of the three. GANFLOW_LAUNCH_ARGS in the
# environment reaches the script (e.g. "--launcher-arg --mpi=pmix" gives MPI
# ranks Slurm's PMIx).
#
#   test_slurm.sh SOURCE_DIR GANFLOW GANFLOW_TRAIN SCRATCH_DIR
#
# Exit 0 pass, 1 fail, 77 skip: Slurm or munge is not installed here (its
# `SKIP: ...` line names the missing binary; under CI=true the skip gate
# fails it). Slurm installed but not working (a daemon refused to start or
# exited, the node never idle) FAILS with the reason from the daemon's log,
# as a missing MLflow fixture or Fashion-MNIST does. Takes ~1 min.
set -uo pipefail

[ $# -eq 4 ] || { echo "usage: $0 SOURCE_DIR GANFLOW GANFLOW_TRAIN SCRATCH_DIR" >&2; exit 2; }
SRC=$1 GANFLOW=$2 TRAIN=$3 WORK=$4
FASHION=/usr/share/datasets/fashion-mnist
STEPS=20
LOG_EVERY=5

fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$SECONDS

state=${GF_TEST_MLFLOW_STATE:-}
[ -n "$state" ] || fail "GF_TEST_MLFLOW_STATE is not set: run through ctest, which starts the MLflow fixture"
URI=$(cat "$state/uri" 2>/dev/null) || fail "no MLflow server: $state/uri missing (did the fixture start?)"
[ -f "$FASHION/train-images-idx3-ubyte.gz" ] || [ -f "$FASHION/train-images-idx3-ubyte" ] ||
  fail "Fashion-MNIST missing in $FASHION (deploy/install-deps.sh installs dataset-fashion-mnist)"
command -v python3 >/dev/null || fail "python3 missing"
command -v curl >/dev/null || fail "curl missing"
for b in "$GANFLOW" "$TRAIN"; do [ -x "$b" ] || fail "binary missing: $b"; done

# The private Slurm; its folder goes into a unix socket name, so it is short.
SLURM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gfslurm.XXXXXX") || fail "mktemp"
cleanup() {
  "$SRC/tests/support/slurm_fixture.sh" stop "$SLURM_DIR"
  if [ "${passed:-0}" = 1 ]; then rm -rf "$SLURM_DIR"; else
    echo "Slurm logs kept in $SLURM_DIR/log" >&2
  fi
}
# Its messages go to a file (next to the folder, which must start empty)
# and then here: on 77 the last one is the one-line reason.
START_ERR=$SLURM_DIR.start.err
"$SRC/tests/support/slurm_fixture.sh" start "$SLURM_DIR" 2>"$START_ERR"
rc=$?
cat "$START_ERR" >&2
if [ "$rc" -ne 0 ]; then
  "$SRC/tests/support/slurm_fixture.sh" stop "$SLURM_DIR"
  if [ "$rc" -eq 77 ]; then
    echo "SKIP: $(tail -n 1 "$START_ERR")" >&2
    rm -rf "$SLURM_DIR" "$START_ERR"
    exit 77
  fi
  rm -f "$START_ERR"
  fail "Slurm is installed but the fixture could not start it (exit $rc, reason above; logs in $SLURM_DIR/log)"
fi
rm -f "$START_ERR"
trap cleanup EXIT
# shellcheck disable=SC1091
. "$SLURM_DIR/env"
echo "Slurm up in $((SECONDS - t0)) s: $(sinfo -h -o '%P %a %D %T %N' | head -n 1)"

# The job's files. GANFLOW_BIN_DIR: the two binaries under one folder, as an
# install would have them.
rm -rf "$WORK"
mkdir -p "$WORK/bin" || fail "cannot make $WORK"
ln -s "$GANFLOW" "$WORK/bin/ganflow" || fail "ln"
ln -s "$TRAIN" "$WORK/bin/ganflow-train" || fail "ln"
uniq="$$-$(date +%s%N)"
EXP="slurm-$uniq"
MODEL="slurm-model-$uniq"
CKPT=$WORK/ckpt
JOBLOG=$WORK/job.out

ONLY=${GF_SLURM_ONLY:-}
api() { curl -sfS --max-time 30 -G "$URI/api/2.0/mlflow/$1" "${@:2}"; }
# wait_log LOG TEXT JOB: waits (at most 120 s) until LOG holds TEXT or the
# job has left the queue; status 0 when LOG holds it.
wait_log() {
  local _
  for _ in $(seq 1 1200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    squeue -h -j "$3" 2>/dev/null | grep -q . || break
    sleep 0.1
  done
  grep -q "$2" "$1" 2>/dev/null
}
exp_ids=()

if [ -z "$ONLY" ] || [ "$ONLY" = run ]; then
t1=$SECONDS
timeout 600 sbatch --wait --parsable --ntasks=2 --cpus-per-task=1 --time=10 \
  --job-name=gftest --output="$JOBLOG" --chdir="$WORK" \
  --export="ALL,GANFLOW_BIN_DIR=$WORK/bin,MLFLOW_TRACKING_URI=$URI,GANFLOW_MAX_RESTARTS=1,MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=0.5" \
  "$SRC/deploy/slurm/ganflow.sbatch" \
  --data "$FASHION" --model mlp --steps "$STEPS" --batch 16 --seed 7 \
  --log-every "$LOG_EVERY" --sample-every 0 --eval-every 0 \
  --checkpoint-every 10 --check-every 1 --checkpoint-dir "$CKPT" \
  --experiment "$EXP" --register-model "$MODEL" --alias slurm \
  >"$WORK/sbatch.out" 2>&1
rc=$?
job=$(head -n 1 "$WORK/sbatch.out" | tr -dc '0-9')
echo "sbatch --wait: exit $rc after $((SECONDS - t1)) s (job ${job:-?})"
if [ "$rc" -ne 0 ]; then
  echo "--- sbatch" >&2; cat "$WORK/sbatch.out" >&2
  echo "--- job log $JOBLOG" >&2; cat "$JOBLOG" >&2 2>/dev/null
  [ -n "$job" ] && scontrol show job "$job" >&2
  fail "the job exited $rc"
fi
grep -q "ganflow launch exited 0" "$JOBLOG" || { cat "$JOBLOG" >&2; fail "the job log lacks 'ganflow launch exited 0'"; }

# Slurm's record (MinJobAge keeps it; there is no accounting database).
if [ -n "$job" ]; then
  info=$(scontrol show job "$job")
  if ! grep -q "JobState=COMPLETED" <<<"$info" || ! grep -q "ExitCode=0:0" <<<"$info"; then
    echo "$info" >&2
    fail "scontrol: job $job not COMPLETED 0:0"
  fi
fi

# MLflow, through its REST API.
RUN_ID=$(cat "$CKPT/run_id" 2>/dev/null) || { cat "$JOBLOG" >&2; fail "no $CKPT/run_id"; }
run_json=$(api runs/get --data-urlencode "run_id=$RUN_ID") || fail "runs/get $RUN_ID"
hist_json=$(api metrics/get-history --data-urlencode "run_id=$RUN_ID" \
  --data-urlencode "metric_key=loss/d" --data-urlencode "max_results=1000") || fail "get-history"
alias_json=$(api registered-models/alias --data-urlencode "name=$MODEL" \
  --data-urlencode "alias=slurm") || fail "no alias slurm on registered model $MODEL"
versions_json=$(api model-versions/search --data-urlencode "filter=name='$MODEL'") ||
  fail "model-versions/search $MODEL"

RUN_JSON=$run_json HIST_JSON=$hist_json ALIAS_JSON=$alias_json \
VERSIONS_JSON=$versions_json RUN_ID=$RUN_ID STEPS=$STEPS LOG_EVERY=$LOG_EVERY \
python3 - <<'EOF' || fail "MLflow checks (above)"
import json, os, sys
bad = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: bad.append(what)
run = json.loads(os.environ["RUN_JSON"])["run"]
info, data = run["info"], run.get("data", {})
params = {p["key"]: p["value"] for p in data.get("params", [])}
tags = {t["key"]: t["value"] for t in data.get("tags", [])}
check(info["status"] == "FINISHED", f"run {info['run_id']} status {info['status']}")
check(params.get("world_size") == "2", f"param world_size {params.get('world_size')}")
check(params.get("local_batch") == "8", f"param local_batch {params.get('local_batch')}")
check(tags.get("ganflow.world_size", "2") == "2", f"tag ganflow.world_size {tags.get('ganflow.world_size')}")
steps, every = int(os.environ["STEPS"]), int(os.environ["LOG_EVERY"])
hist = sorted(m["step"] for m in json.loads(os.environ["HIST_JSON"]).get("metrics", []))
want = list(range(every, steps + 1, every))
check(hist == want, f"loss/d steps {hist} (want {want})")
mv = json.loads(os.environ["ALIAS_JSON"])["model_version"]
check(mv["run_id"] == os.environ["RUN_ID"], f"alias slurm -> version {mv['version']} of run {mv['run_id']}")
check(mv["status"] == "READY", f"version status {mv['status']}")
versions = json.loads(os.environ["VERSIONS_JSON"]).get("model_versions", [])
check([v["version"] for v in versions] == ["1"] and mv["version"] == "1",
      f"a new registered model with one version: {[v['version'] for v in versions]}")
sys.exit(1 if bad else 0)
EOF

exp_ids+=("$(RUN_JSON=$run_json python3 -c 'import json,os; print(json.loads(os.environ["RUN_JSON"])["run"]["info"]["experiment_id"])')")
echo "run: passed in $((SECONDS - t1)) s"
fi

if [ -z "$ONLY" ] || [ "$ONLY" = stop ]; then
t1=$SECONDS
SCKPT=$WORK/stop-ckpt
SLOG=$WORK/stop.out
SSTEPS=2000
SEVERY=100
stop_args=(--data "$FASHION" --model mlp --steps "$SSTEPS" --batch 16 --seed 7
  --log-every "$SEVERY" --sample-every 0 --eval-every 0
  --checkpoint-every 1000 --checkpoint-dir "$SCKPT"
  --experiment "$EXP-stop" --register-model '')
submit_opts=(--ntasks=2 --cpus-per-task=1 --time=10 --output="$SLOG" --chdir="$WORK"
  --export="ALL,GANFLOW_BIN_DIR=$WORK/bin,MLFLOW_TRACKING_URI=$URI,GANFLOW_MAX_RESTARTS=1,MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=0.5")
job=$(sbatch --parsable --job-name=gftest-stop "${submit_opts[@]}" \
  "$SRC/deploy/slurm/ganflow.sbatch" "${stop_args[@]}") || fail "sbatch of the job to stop"
job=${job%%;*}
# Until it has logged a few steps (the ranks started, the run exists).
want_line="step $((3 * SEVERY))/"
wait_log "$SLOG" "$want_line" "$job" ||
  { cat "$SLOG" >&2; fail "stop: the job never reached $want_line"; }
scancel --batch --signal=TERM "$job" || fail "scancel --batch --signal=TERM $job"
for _ in $(seq 1 1200); do
  scontrol show job "$job" 2>/dev/null | grep -qE "JobState=(RUNNING|COMPLETING|PENDING)" || break
  sleep 0.1
done
info=$(scontrol show job "$job")
if ! grep -q "ExitCode=143:0" <<<"$info"; then
  cat "$SLOG" >&2
  grep -E "JobState|ExitCode" <<<"$info" >&2
  fail "stop: job $job did not exit 143 after scancel --batch --signal=TERM"
fi
SRUN_ID=$(cat "$SCKPT/run_id" 2>/dev/null) || fail "stop: no $SCKPT/run_id"
status=$(api runs/get --data-urlencode "run_id=$SRUN_ID" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["info"]["status"])')
[ "$status" = KILLED ] || { cat "$SLOG" >&2; fail "stop: run $SRUN_ID is $status, want KILLED"; }
last=$(find "$SCKPT" -maxdepth 1 -name 'ckpt-*.safetensors' | sort | tail -n 1)
last_step=$(basename "${last:-ckpt-0}" .safetensors | sed 's/^ckpt-0*//')
if [ -z "$last_step" ] || [ $((last_step % 1000)) -eq 0 ]; then
  cat "$SLOG" >&2
  fail "stop: no checkpoint at the stop step (newest: ${last:-none})"
fi
echo "stop: job $job exit 143 after $((SECONDS - t1)) s, run KILLED, checkpoint at step $last_step"

# The same command again: it resumes into the same run.
if ! timeout 600 sbatch --wait --job-name=gftest-resume "${submit_opts[@]}" \
    "$SRC/deploy/slurm/ganflow.sbatch" "${stop_args[@]}" >"$WORK/resume.out" 2>&1; then
  cat "$WORK/resume.out" "$SLOG" >&2
  fail "resume: the job failed"
fi
[ "$(cat "$SCKPT/run_id")" = "$SRUN_ID" ] || fail "resume: another run id in $SCKPT/run_id"
grep -q "resuming from .*ckpt-0*$last_step" "$SLOG" ||
  { cat "$SLOG" >&2; fail "resume: not from the checkpoint at step $last_step"; }
run_json=$(api runs/get --data-urlencode "run_id=$SRUN_ID") || fail "runs/get $SRUN_ID"
hist_json=$(api metrics/get-history --data-urlencode "run_id=$SRUN_ID" \
  --data-urlencode "metric_key=loss/d" --data-urlencode "max_results=10000") || fail "get-history"
RUN_JSON=$run_json HIST_JSON=$hist_json STEPS=$SSTEPS LOG_EVERY=$SEVERY python3 - <<'PY' ||
import json, os, sys
run = json.loads(os.environ["RUN_JSON"])["run"]
steps, every = int(os.environ["STEPS"]), int(os.environ["LOG_EVERY"])
hist = sorted(m["step"] for m in json.loads(os.environ["HIST_JSON"]).get("metrics", []))
want = list(range(every, steps + 1, every))
ok = run["info"]["status"] == "FINISHED" and hist == want
print(("ok   " if ok else "FAIL ") + f"resumed run {run['info']['status']}, loss/d steps "
      + ("each once" if hist == want else f"{hist} (want {want})"))
sys.exit(0 if ok else 1)
PY
  fail "resume: MLflow checks (above)"
exp_ids+=("$(RUN_JSON=$run_json python3 -c 'import json,os; print(json.loads(os.environ["RUN_JSON"])["run"]["info"]["experiment_id"])')")
echo "stop and resume: passed in $((SECONDS - t1)) s"
fi

if [ -z "$ONLY" ] || [ "$ONLY" = capacity ]; then
# --elastic-capacity slurm: the job's allocation is the capacity (2 tasks:
# 2 ranks) and its EndTime a notice. Once the job trains, its time limit is
# cut to end within --capacity-notice-margin: the ranks must checkpoint at
# once (the only checkpoint: --checkpoint-every is the whole run), before
# the new EndTime, and the supervisor then waits for capacity; the test
# ends the job (scancel: launch exits 143) rather than waiting for Slurm.
t1=$SECONDS
CCKPT=$WORK/cap-ckpt
CLOG=$WORK/cap.out
CSTEPS=100000
job=$(sbatch --parsable --job-name=gftest-cap --ntasks=2 --cpus-per-task=1 \
  --time=10 --output="$CLOG" --chdir="$WORK" \
  --export="ALL,MLFLOW_TRACKING_URI=$URI" \
  --wrap "exec $WORK/bin/ganflow launch --nproc 2 --elastic-capacity slurm --capacity-notice-margin 300 --start-timeout 300 -- $WORK/bin/ganflow-train --data $FASHION --model mlp --steps $CSTEPS --batch 16 --seed 7 --threads 1 --log-every 100 --sample-every 0 --eval-every 0 --checkpoint-every $CSTEPS --checkpoint-dir $CCKPT --experiment $EXP-cap --register-model ''") ||
  fail "capacity: sbatch"
job=${job%%;*}
wait_log "$CLOG" "step 300/" "$job" ||
  { cat "$CLOG" >&2; fail "capacity: the job never reached step 300"; }
grep -q "capacity: 1 host, 2 slots, 2 usable" "$CLOG" ||
  { cat "$CLOG" >&2; fail "capacity: the allocation was not read as 1 host of 2 slots"; }
# RunTime as seconds; the limit cut to end 60-120 s from now (a minute's
# granularity), within the 300 s margin: a notice at the next read (5 s).
run_s=$(scontrol show job -o "$job" | tr ' ' '\n' | sed -n 's/^RunTime=//p' |
  awk -F: '{ print ($1 * 3600) + ($2 * 60) + $3 }')
limit=$(( (run_s + 60) / 60 + 1 ))
scontrol update JobId="$job" TimeLimit="$limit" || fail "capacity: scontrol update TimeLimit"
end_local=$(scontrol show job -o "$job" | tr ' ' '\n' | sed -n 's/^EndTime=//p')
end_unix=$(date -d "$end_local" +%s) || fail "capacity: EndTime $end_local"
for _ in $(seq 1 600); do
  grep -q "capacity: .*checkpoint of step .* written" "$CLOG" 2>/dev/null && break
  sleep 0.1
done
grep -q "capacity: .*checkpoint of step .* written" "$CLOG" ||
  { cat "$CLOG" >&2; fail "capacity: no checkpoint after the time limit moved to $end_local"; }
ck=$(find "$CCKPT" -maxdepth 1 -name 'ckpt-*.safetensors' | sort | tail -n 1)
[ -n "$ck" ] || fail "capacity: no checkpoint file"
ck_time=$(stat -c %Y "$ck")
[ "$ck_time" -lt "$end_unix" ] ||
  fail "capacity: checkpoint $ck at $ck_time, not before the job's end $end_unix"
scancel "$job" || fail "capacity: scancel"
for _ in $(seq 1 600); do
  squeue -h -j "$job" 2>/dev/null | grep -q . || break
  sleep 0.1
done
CRUN_ID=$(cat "$CCKPT/run_id" 2>/dev/null) || fail "capacity: no $CCKPT/run_id"
run_json=$(api runs/get --data-urlencode "run_id=$CRUN_ID") || fail "runs/get $CRUN_ID"
ws_json=$(api metrics/get-history --data-urlencode "run_id=$CRUN_ID" \
  --data-urlencode "metric_key=sys/world_size") || fail "get-history sys/world_size"
RUN_JSON=$run_json WS_JSON=$ws_json python3 - <<'PY' ||
import json, os, sys
run = json.loads(os.environ["RUN_JSON"])["run"]
tags = {t["key"]: t["value"] for t in run.get("data", {}).get("tags", [])}
ev = tags.get("ganflow.capacity.1", "")
ws = [m["value"] for m in json.loads(os.environ["WS_JSON"]).get("metrics", [])]
ok = "deadline" in ev and "before the deadline" in ev and ws[:1] == [2.0]
print(("ok   " if ok else "FAIL ") + f"ganflow.capacity.1 = {ev!r}; sys/world_size {ws}")
sys.exit(0 if ok else 1)
PY
  { cat "$CLOG" >&2; fail "capacity: MLflow checks (above)"; }
exp_ids+=("$(RUN_JSON=$run_json python3 -c 'import json,os; print(json.loads(os.environ["RUN_JSON"])["run"]["info"]["experiment_id"])')")
echo "capacity: checkpoint $((end_unix - ck_time)) s before the job's end, passed in $((SECONDS - t1)) s"
fi

# Passed: free what the runs left on the fixture server (checkpoints are
# artifacts) and here.
for exp_id in "${exp_ids[@]}"; do
  case "$exp_id" in '' | *[!0-9]*) ;; *) rm -rf "${state:?}/artifacts/$exp_id" ;; esac
done
rm -rf "$WORK"
passed=1
echo "PASS in $((SECONDS - t0)) s"
