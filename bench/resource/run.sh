#!/usr/bin/env bash
# run.sh - the seed paper's Table 1 on our own hardware: the same dcgan
# training (28x28 Fashion-MNIST, --batch 64, one thread per rank,
# --exact-reduce, so that every world size trains the same bits) under
#   fixed   a fixed allocation: `ganflow launch --nproc 2`, both slots held
#           from start to end;
#   aware   ganflow following a capacity trace (`--elastic-capacity
#           file:...`), a file this script rewrites as the trace says:
#           slots that arrive, spot slots taken back with a notice;
# REPS times each, alternating, against a local MLflow server this script
# starts (and stops). Both end with byte-identical generators (checked:
# the final checkpoints' tensors), so they reach the same quality (the
# final swd/avg, printed) at the same step; what differs is what it took.
#
# Per run, from MLflow: wall time (the launch, start to exit), the slot-
# hours paid for (cost/slot_hours: each rank's slot for the time its
# process ran, restarts included), the cost at the on-demand and at the
# spot price per slot-hour (PRICE_ON_DEMAND, PRICE_SPOT), the energy
# (energy/joules: RAPL where readable, else the CPU-time estimate at 10 W
# per core: the tag says which), mean machine CPU utilisation
# (system/.../cpu_utilization_percentage), the peak RSS (of the one rank,
# or the ranks' peaks added, whichever is larger), restarts and capacity
# changes. Printed as the seed's table, with
# min / median / max over the repetitions, into $OUT/results.txt.
#
#   bench/resource/run.sh [TRACE]
#
# TRACE (bench/resource/trace.txt): lines "SECONDS CAPACITY", CAPACITY the
# capacity file's lines joined by " | ", with leaving=+S for a notice S
# seconds after that moment; the first line is at 0.
#
# Environment (all optional):
#   GANFLOW_BIN_DIR  folder holding ganflow and ganflow-train (or a build dir
#                    with cli/ and trainer/); default: build both, Release,
#                    no CUDA, no tests, into BUILD_DIR
#   BUILD_DIR (build-bench-resource)   DATA (/usr/share/datasets/fashion-mnist)
#   STEPS (600)  EVAL_EVERY (200)  EVAL_IMAGES (500)  REPS (3)
#   PRICE_ON_DEMAND (0.0446: a c7i.2xlarge's 0.357 USD/h over its 8 vCPUs)
#   PRICE_SPOT (0.0152: its spot price, 0.1214 USD/h over 8)
#   OUT (/tmp/ganflow-bench-resource, wiped first)
# About 3 minutes per run with the defaults on 2 cores. Run it on a quiet
# machine: the load average is printed with every run.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
trace=${1:-$here/trace.txt}
build=${BUILD_DIR:-$root/build-bench-resource}
data=${DATA:-/usr/share/datasets/fashion-mnist}
steps=${STEPS:-600}
eval_every=${EVAL_EVERY:-200}
eval_images=${EVAL_IMAGES:-500}
reps=${REPS:-3}
p_od=${PRICE_ON_DEMAND:-0.0446}
p_spot=${PRICE_SPOT:-0.0152}
out=${OUT:-/tmp/ganflow-bench-resource}

case $out in /|"") echo "run.sh: refusing OUT=$out" >&2; exit 2 ;; esac
[ -r "$trace" ] || { echo "run.sh: no trace file $trace" >&2; exit 2; }
for v in "$steps" "$eval_every" "$eval_images" "$reps"; do
  case $v in ''|*[!0-9]*) echo "run.sh: STEPS, EVAL_EVERY, EVAL_IMAGES and REPS are numbers" >&2; exit 2 ;; esac
done
rm -rf "$out"
mkdir -p "$out"
py=$root/.venv/bin/python
[ -x "$py" ] || { echo "run.sh: run deploy/install-deps.sh first (no .venv)" >&2; exit 1; }

bench_bins "$build" "$out"

state=$(mktemp -d /tmp/ganflow-bench-resource-mlflow.XXXXXX)
export GANFLOW_MLFLOW_STATE=$state GANFLOW_MLFLOW_PORT=0 GANFLOW_MLFLOW_WORKERS=1
"$root/deploy/mlflow-local.sh" start >/dev/null
job_pid=
feed_pid=
cleanup() {
  for p in $feed_pid $job_pid; do
    kill -TERM "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  "$root/deploy/mlflow-local.sh" stop >/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
export MLFLOW_TRACKING_URI
MLFLOW_TRACKING_URI=$(cat "$state/uri")
export MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=2

# Replays the trace into capacity file $1, from now: each line's capacity
# at its second, leaving=+S made absolute; written with a rename.
feed() {
  local cap=$1 t0 t rest line now
  t0=$(date +%s.%N)
  while read -r t rest; do
    case $t in ''|'#'*) continue ;; esac
    while :; do
      now=$(date +%s.%N)
      awk -v a="$now" -v b="$t0" -v t="$t" 'BEGIN { exit !(a - b >= t) }' && break
      sleep 0.1
    done
    now=$(date +%s)
    echo "$rest" | tr '|' '\n' | awk -v now="$now" '{
      for (i = 1; i <= NF; i++)
        if ($i ~ /^leaving=\+[0-9]+$/) $i = "leaving=" (now + substr($i, 10))
      if (NF) print }' > "$cap.tmp"
    mv "$cap.tmp" "$cap"
  done < "$trace"
}

results=$out/results.txt
say() { echo "$*" | tee -a "$results"; }
exp=bench-resource-$$

# One run: run KIND REP -> $out/KIND-REP/{log,run_id,wall}
run() {
  local kind=$1 rep=$2 dir=$out/$1-$2 t0 t1 cap extra=()
  mkdir -p "$dir"
  if [ "$kind" = aware ]; then
    cap=$dir/capacity
    # the trace's first capacity before the job starts
    awk '$1 == "0" { $1 = ""; print; exit }' "$trace" | tr '|' '\n' |
      sed -E 's/^ +//; s/ +$//; s/ leaving=\+[0-9]+//' > "$cap"
    feed "$cap" & feed_pid=$!
    extra=(--elastic-capacity "file:$cap" --capacity-notice-margin 3)
  fi
  t0=$(date +%s.%N)
  "$ganflow" launch --nproc 2 --max-restarts 10 --hang-timeout 120 "${extra[@]}" -- \
    "$train" --data "$data" --model dcgan --batch 64 --threads 1 --seed 11 \
    --exact-reduce --exact-shards 2 --steps "$steps" --log-every 10 \
    --checkpoint-every 100 --sample-every 0 --eval-every "$eval_every" \
    --eval-images "$eval_images" --register-model '' \
    --price-per-hour "$p_od" --price-unit gpu \
    --checkpoint-dir "$dir/ckpt" --experiment "$exp" \
    --run-name "$kind-$rep" >"$dir/log" 2>&1 & job_pid=$!
  local rc=0
  wait "$job_pid" || rc=$?
  job_pid=
  t1=$(date +%s.%N)
  if [ -n "$feed_pid" ]; then
    kill -TERM "$feed_pid" 2>/dev/null || true
    wait "$feed_pid" 2>/dev/null || true
    feed_pid=
  fi
  [ "$rc" = 0 ] || { tail -30 "$dir/log" >&2; echo "run.sh: $kind-$rep exit $rc" >&2; exit 1; }
  awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.2f\n", a - b }' > "$dir/wall"
  sed -n 's/.*ganflow-train: run \([0-9a-f]*\),.*/\1/p' "$dir/log" | head -1 > "$dir/run_id"
  say "$kind-$rep: $(cat "$dir/wall") s, load $(cut -d' ' -f1-3 /proc/loadavg)"
}

say "bench/resource: dcgan 28x28, $steps steps of 64, --exact-reduce, 2 slots at most, $(nproc) cores"
say "trace ($trace):"
grep -v '^#' "$trace" | sed 's/^/  /' | tee -a "$results"
for (( r = 1; r <= reps; r++ )); do
  run fixed "$r"
  run aware "$r"
done

"$py" - "$out" "$reps" "$steps" "$p_od" "$p_spot" <<'EOF' | tee -a "$results"
import hashlib, os, statistics, struct, sys, json
from mlflow import MlflowClient
out, reps, steps, p_od, p_spot = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
c = MlflowClient()

def tensors_digest(path):
    # safetensors: the tensors' bytes (the header holds run metadata)
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        f.seek(8 + n)
        return hashlib.sha256(f.read()).hexdigest()

def figures(kind, rep):
    d = f"{out}/{kind}-{rep}"
    rid = open(f"{d}/run_id").read().strip()
    run = c.get_run(rid)
    m, tags = run.data.metrics, run.data.tags
    def hist(key):
        return [p.value for p in c.get_metric_history(rid, key)]
    cpu = [v for k in m if k.endswith("cpu_utilization_percentage") for v in hist(k)]
    # one rank: perf/peak_rss_megabytes; several: perf/rank_<r>/...; the
    # job's peak is the larger of one rank's and the ranks' peaks added
    solo = [max(hist(k)) for k in m if k == "perf/peak_rss_megabytes"]
    ranks = [max(hist(k)) for k in m
             if k.startswith("perf/rank_") and k.endswith("/peak_rss_megabytes")]
    peaks = [max(solo + [sum(ranks)])] if solo or ranks else []
    ck = f"{d}/ckpt/ckpt-{steps:012d}.safetensors"
    return dict(
        wall=float(open(f"{d}/wall").read()),
        slot_h=m.get("cost/slot_hours", float("nan")),
        joules=m.get("energy/joules", float("nan")),
        cpu=statistics.mean(cpu) if cpu else float("nan"),
        rss=sum(peaks) if peaks else float("nan"),
        swd=m.get("swd/avg", float("nan")),
        restarts=int(m.get("sys/restarts", 0)),
        changes=int(tags.get("ganflow.capacity.changes", "0")),
        source=tags.get("ganflow.energy.cpu_source", "?"),
        digest=tensors_digest(ck) if os.path.exists(ck) else "missing")

rows = {k: [figures(k, r) for r in range(1, reps + 1)] for k in ("fixed", "aware")}
digests = {f["digest"] for k in rows for f in rows[k]}
def st(vals, fmt):
    v = sorted(vals)
    return f"{format(v[len(v) // 2], fmt)} ({format(v[0], fmt)}-{format(v[-1], fmt)})"
print()
print(f"median (min-max) over {reps} runs each; prices per slot-hour: on-demand {p_od}, spot {p_spot} USD")
print(f"| | fixed allocation (2 slots) | ganflow following the trace |")
print(f"|---|---|---|")
lines = [
    ("wall time, s", "wall", ".1f"),
    ("slot-hours paid", "slot_h", ".4f"),
    ("cost on demand, USD", None, ".5f"),
    ("cost at the spot price, USD", None, ".5f"),
    ("energy, J", "joules", ".0f"),
    ("mean CPU utilisation, %", "cpu", ".0f"),
    ("peak RSS of the job, MB", "rss", ".0f"),
    ("final swd/avg", "swd", ".2f"),
    ("capacity changes", "changes", "d"),
    ("restarts (failures)", "restarts", "d"),
]
for name, key, fmt in lines:
    cells = []
    for k in ("fixed", "aware"):
        if key is None:
            p = p_od if "demand" in name else p_spot
            vals = [f["slot_h"] * p for f in rows[k]]
        else:
            vals = [f[key] for f in rows[k]]
        cells.append(st(vals, fmt))
    print(f"| {name} | {cells[0]} | {cells[1]} |")
print(f"energy source: {sorted({f['source'] for k in rows for f in rows[k]})}")
print(f"final generators byte-identical across all {2 * reps} runs: {len(digests) == 1 and 'missing' not in digests}")
EOF
