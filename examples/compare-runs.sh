#!/usr/bin/env bash
# compare-runs.sh - the comparison MLflow users come for: two short
# ganflow-train runs of the same model with different learning rates, then
# the MLflow UI addresses that show them side by side (metrics, system
# metrics, the sample grids per step), and the runs ranked by quality per
# cost (cost/swd_avg_x_usd: the last SWD times the run's dollars; lower is
# better). Opens nothing; prints the addresses and the ranking.
#
#   examples/compare-runs.sh [--model mlp|dcgan] [--steps N] [--price USD]
#                            [--screenshot FILE]
#
# --price USD is the price of this machine per hour (0.357, a 8-vCPU cloud
# machine on demand), logged as the runs' price_usd_per_hour.
#
# The tracking server is MLFLOW_TRACKING_URI when set, else the local one of
# deploy/mlflow-local.sh (started if it is not running). The trainer is
# GANFLOW_TRAIN, else build/trainer/ganflow-train (build it first, README).
# --screenshot FILE takes the chart view with headless chromium (Debian's
# chromium, driven by examples/ui_screenshot.py), and FILE's name with
# -samples the second run's sample grid card opened at the last step: how
# docs/mlflow-compare-runs.png and docs/mlflow-sample-grids.png are made.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
steps=300
model=mlp
shot=""
price=0.357
while [ $# -gt 0 ]; do
  case "$1" in
    --price) price=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --screenshot) shot=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "compare-runs: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $steps in ''|*[!0-9]*) echo "compare-runs: --steps needs a number" >&2; exit 2 ;; esac
train=${GANFLOW_TRAIN:-$ROOT/build/trainer/ganflow-train}
[ -x "$train" ] || { echo "compare-runs: no ganflow-train at $train (build it: see README)" >&2; exit 1; }
data=${DATA:-/usr/share/datasets/fashion-mnist}
py=$ROOT/.venv/bin/python
[ -x "$py" ] || { echo "compare-runs: run deploy/install-deps.sh first (no .venv)" >&2; exit 1; }

if [ -z "${MLFLOW_TRACKING_URI:-}" ]; then
  "$ROOT/deploy/mlflow-local.sh" start >/dev/null
  MLFLOW_TRACKING_URI=$("$ROOT/deploy/mlflow-local.sh" uri)
fi
export MLFLOW_TRACKING_URI
# short runs: a system-metric sample every second (MLflow's default is 10 s)
export MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL=${MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL:-1}
exp=${EXPERIMENT:-compare-lr}
work=$(mktemp -d /tmp/ganflow-compare.XXXXXX)
trap 'rm -rf "$work"' EXIT

ids=()
for lr in 0.0002 0.001; do
  name="$model-lr-d-$lr-$(date +%H%M%S)"
  echo "training $name ($steps steps) ..." >&2
  "$train" --data "$data" --model "$model" --batch 64 --steps "$steps" \
    --lr-d "$lr" --log-every 10 --sample-every $((steps / 3)) \
    --eval-every $((steps / 3)) --eval-images 500 --checkpoint-every 0 \
    --register-model '' --experiment "$exp" --run-name "$name" \
    --price-per-hour "$price" --price-unit node \
    --checkpoint-dir "$work/$name" 2>"$work/$name.log" ||
    { tail -20 "$work/$name.log" >&2; exit 1; }
  ids+=("$(sed -n 's/.*ganflow-train: run \([0-9a-f]*\),.*/\1/p' "$work/$name.log" | head -1)")
done

# The UI's addresses, from the experiment id and the two run ids.
"$py" - "$MLFLOW_TRACKING_URI" "$exp" "${ids[@]}" "$shot" "$steps" "$ROOT" <<'EOF'
import json, subprocess, sys, urllib.parse
from mlflow import MlflowClient
uri, exp, a, b, shot, steps, root = sys.argv[1:8]
c = MlflowClient(uri)
eid = c.get_experiment_by_name(exp).experiment_id
runs = urllib.parse.quote(json.dumps([a, b]))
exps = urllib.parse.quote(json.dumps([eid]))
chart = f"{uri}/#/experiments/{eid}/runs?compareRunsMode=CHART"
print(f"experiment, chart view (metrics, system metrics, sample grids per step):\n  {chart}")
print(f"the two runs side by side (params, metrics):\n  {uri}/#/compare-runs?runs={runs}&experiments={exps}")
for r in (a, b):
    print(f"run {r}:\n  {uri}/#/experiments/{eid}/runs/{r}")
rows = []
for r in (a, b):
    run = c.get_run(r)
    m = run.data.metrics
    rows.append((m.get("cost/swd_avg_x_usd", float("inf")), run.info.run_name,
                 m.get("swd/avg"), m.get("cost/usd"), m.get("energy/joules")))
print("ranked by quality per cost (cost/swd_avg_x_usd, lower is better):")
print(f"  {'run':<32} {'swd/avg':>9} {'cost/usd':>10} {'energy/J':>10} {'swd x usd':>10}")
for score, name, swd, usd, joules in sorted(rows):
    f = lambda v, fmt: format(v, fmt) if v is not None else "-"
    print(f"  {name:<32} {f(swd, '9.2f')} {f(usd, '10.5f')} {f(joules, '10.0f')} {f(score, '10.5f')}")
if shot:
    tool = [sys.executable, f"{root}/examples/ui_screenshot.py"]
    subprocess.run(tool + [chart, shot], check=True)
    base, dot, ext = shot.rpartition(".")
    cards = f"{base}-samples.{ext}" if dot else f"{shot}-samples"
    subprocess.run(tool + [chart, cards, "--open-card", "samples", "--step", steps],
                   check=True)
    print(f"screenshots: the chart view {shot}, the sample grids {cards}")
EOF
