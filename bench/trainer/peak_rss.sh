#!/usr/bin/env bash
# peak_rss.sh - peak resident memory of the quickstart's training
# (deploy/quickstart.sh's ganflow-train command: dcgan 28x28 on
# Fashion-MNIST, batch 64, sample grids every 500 steps, SWD + FID + KID
# every 1,000 steps on FID_IMAGES images, checkpoints every 500, a
# registered version), against a local MLflow server this script starts on
# a free loopback port (and stops) itself.
#
#   bench/trainer/peak_rss.sh
#
# Prints the peak RSS twice: /usr/bin/time -v's "Maximum resident set size"
# and the last VmHWM of /proc/PID/status, sampled every 0.2 s together with
# VmRSS (OUT/status.tsv: seconds since start, VmRSS kB, VmHWM kB; read it
# beside the time-stamped OUT/train.log to see which phase raised the
# peak). MB are 2^20 bytes. Then the run's evaluation metrics as MLflow
# stored them (every swd/, fid, kid and kid_std point, printed with 17
# significant digits, so two runs compare exactly with diff) and the
# final checkpoint's tensor digest (its metadata's ganflow.data_sha256):
# equal for equal commands, whatever the memory.
#
# The run gets a feature cache of its own (OUT/cache), so the real set's
# FID reference is computed, as on the quickstart's first run.
#
# Environment (all optional):
#   GANFLOW_TRAIN  ganflow-train binary (default: build one, Release, no
#                  CUDA, no tests, into BUILD_DIR)
#   BUILD_DIR      (build-bench-trainer)
#   DATA           (/usr/share/datasets/fashion-mnist)
#   STEPS          (3000, the quickstart's; 1000 reaches the first FID/KID)
#   FID_IMAGES     (100, the quickstart's)
#   EVAL_EVERY (1000)  SAMPLE_EVERY (500)  CHECKPOINT_EVERY (500): the
#                  quickstart's; smaller ones shorten a massif run
#   MASSIF         1: also run the same command under valgrind --tool=massif
#                  (OUT/massif.out, and ms_print's view in OUT/massif.txt);
#                  only: that run alone. Valgrind runs it 50-100x slower
#                  (a build with CUDA hardly at all: its libraries'
#                  start-up), so give it a build without CUDA, few STEPS,
#                  EVAL_EVERY and FID_IMAGES. It sees the heap (malloc), not
#                  mapped libraries.
#   OUT            results folder (/tmp/ganflow-peak-rss, wiped first)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$root/bench/lib.sh"
build=${BUILD_DIR:-$root/build-bench-trainer}
data=${DATA:-/usr/share/datasets/fashion-mnist}
steps=${STEPS:-3000}
fid_images=${FID_IMAGES:-100}
eval_every=${EVAL_EVERY:-1000}
sample_every=${SAMPLE_EVERY:-500}
ckpt_every=${CHECKPOINT_EVERY:-500}
massif=${MASSIF:-0}
out=${OUT:-/tmp/ganflow-peak-rss}
py=$root/.venv/bin/python
[ -x "$py" ] || py=python3

case $out in /|"") echo "peak_rss.sh: refusing OUT=$out" >&2; exit 2 ;; esac
case $massif in
  0|1|only) ;;
  *) echo "peak_rss.sh: MASSIF=$massif: 0, 1 or only" >&2; exit 2 ;;
esac
[ -x /usr/bin/time ] || { echo "peak_rss.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
if [ "$massif" != 0 ] && ! command -v valgrind >/dev/null; then
  echo "peak_rss.sh: MASSIF=$massif needs valgrind" >&2; exit 1
fi
rm -rf "$out"
mkdir -p "$out"
bench_train "$build" "$out"

state=$(mktemp -d /tmp/ganflow-peak-rss-mlflow.XXXXXX)
export GANFLOW_MLFLOW_STATE=$state GANFLOW_MLFLOW_PORT=0 GANFLOW_MLFLOW_WORKERS=1
"$root/deploy/mlflow-local.sh" start >/dev/null
trainer_pid=
cleanup() {
  [ -n "$trainer_pid" ] && kill -KILL "$trainer_pid" 2>/dev/null || true
  "$root/deploy/mlflow-local.sh" stop >/dev/null || true
  rm -rf "$state"
}
trap cleanup EXIT
export MLFLOW_TRACKING_URI
MLFLOW_TRACKING_URI=$(cat "$state/uri")

# Prefixes each line of stdin with the seconds since $t0.
stamp() {
  while IFS= read -r l; do
    printf '%s %s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')" "$l"
  done
}

# The quickstart's command (deploy/quickstart.sh): checkpoints in $1, run
# name suffix $2.
args() {
  echo --data "$data" --model dcgan --image-size 28 --steps "$steps" \
    --batch 64 --sample-every "$sample_every" --eval-every "$eval_every" \
    --eval-metrics swd,fid,kid --fid-images "$fid_images" \
    --checkpoint-every "$ckpt_every" --checkpoint-dir "$1" \
    --experiment ganflow-quickstart --run-name "dcgan-fashion-$2" \
    --register-model fashion-dcgan --alias candidate
}

# Every swd/, fid, kid and kid_std point of run $1, full precision.
eval_metrics() {
  "$py" - "$MLFLOW_TRACKING_URI" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
uri, run_id = sys.argv[1:]
def get(path, **q):
    url = uri.rstrip("/") + "/api/2.0/mlflow/" + path + "?" + urllib.parse.urlencode(q)
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)
run = get("runs/get", run_id=run_id)["run"]
keys = sorted(m["key"] for m in run["data"].get("metrics", [])
              if m["key"].startswith("swd/") or m["key"] in ("fid", "kid", "kid_std"))
for k in keys:
    pts = get("metrics/get-history", run_id=run_id, metric_key=k, max_results=25000)["metrics"]
    for p in sorted(pts, key=lambda p: int(p.get("step", 0))):
        print("metric %s step %s = %.17g" % (k, p.get("step", 0), float(p["value"])))
EOF
}

# The ganflow.data_sha256 of safetensors file $1's metadata.
data_digest() {
  "$py" - "$1" <<'EOF'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.loads(f.read(n)).get("__metadata__", {}).get("ganflow.data_sha256", "?"))
EOF
}

# The quickstart's command under /usr/bin/time -v, its status sampled;
# prints the peak, the evaluation metrics and the checkpoint's digest.
plain_run() {
  t0=$EPOCHREALTIME
  # shellcheck disable=SC2046  # args prints words without spaces
  GANFLOW_CACHE_DIR=$out/cache /usr/bin/time -v -o "$out/time.txt" \
    "$train" $(args "$out/ckpt" rss) > >(stamp >"$out/train.log") 2>&1 &
  local time_pid=$! comm hwm=0 line rc=0
  # /usr/bin/time's children: the trainer and the shell of stamp (the
  # process substitution); sample the trainer's status until it exits.
  comm=$(basename "$train" | cut -c1-15)
  for _ in $(seq 100); do
    trainer_pid=$(pgrep -P "$time_pid" -x "$comm" || true)
    [ -n "$trainer_pid" ] && break
    sleep 0.05
  done
  while [ -n "$trainer_pid" ] && [ -r "/proc/$trainer_pid/status" ]; do
    line=$(awk -v a="$t0" -v b="$EPOCHREALTIME" '
      /^VmRSS:/ {r = $2} /^VmHWM:/ {h = $2}
      END {if (h != "") printf "%.1f\t%s\t%s\n", b - a, r, h}' \
      "/proc/$trainer_pid/status" 2>/dev/null || true)
    if [ -n "$line" ]; then
      echo "$line" >>"$out/status.tsv"
      hwm=${line##*$'\t'}
    fi
    sleep 0.2
  done
  wait "$time_pid" || rc=$?
  trainer_pid=
  if [ "$rc" != 0 ]; then
    tail -30 "$out/train.log" >&2
    echo "peak_rss.sh: ganflow-train failed ($rc); log $out/train.log" >&2
    exit 1
  fi
  echo "peak RSS: $(awk -F: '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$out/time.txt") MB (/usr/bin/time -v)," \
       "VmHWM $(awk -v k="$hwm" 'BEGIN {printf "%.1f", k / 1024}') MB (last sample)"
  eval_metrics "$(sed -n 's/.*ganflow-train: run \([0-9a-f]*\),.*/\1/p' "$out/train.log" | head -1)"
  local last
  last=$(find "$out/ckpt" -name 'ckpt-*.safetensors' | sort | tail -1)
  [ -z "$last" ] || echo "checkpoint $(basename "$last"): data_sha256 $(data_digest "$last")"
}

# The same command under valgrind's massif (its own checkpoints and cache).
massif_run() {
  t0=$EPOCHREALTIME
  # OpenMP threads that sleep instead of spinning: valgrind runs one thread
  # at a time, and a spinning one starves the thread it waits for.
  # shellcheck disable=SC2046
  GANFLOW_CACHE_DIR=$out/cache-massif OMP_WAIT_POLICY=passive GOMP_SPINCOUNT=0 \
    valgrind --tool=massif --massif-out-file="$out/massif.out" --depth=40 \
    --threshold=0.5 "$train" $(args "$out/ckpt-massif" massif) \
    > >(stamp >"$out/massif-train.log") 2>&1 ||
    { tail -30 "$out/massif-train.log" >&2; echo "peak_rss.sh: the massif run failed" >&2; exit 1; }
  ms_print --threshold=0.5 "$out/massif.out" >"$out/massif.txt"
  echo "massif: heap peak $(awk -F= '/^mem_heap_B=/ {if ($2 + 0 > m) m = $2 + 0} END {printf "%.1f", m / 1048576}' "$out/massif.out") MB; the tree at each detailed snapshot in $out/massif.txt"
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') nproc=$(nproc) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# ganflow-train $train; MLflow $MLFLOW_TRACKING_URI; steps $steps, --fid-images $fid_images"
[ "$massif" = only ] || plain_run
[ "$massif" = 0 ] || massif_run
