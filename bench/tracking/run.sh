#!/usr/bin/env bash
# Benchmarks the async metric logger against a fresh local MLflow server and
# compares with MLflow's own Python client (async logging) on the same
# server. Targets: >= 5,000 points/s sustained; <= 2 us per call.
#   bench/tracking/run.sh [POINTS [PY_POINTS]]
# PY_POINTS (default 50,000) is smaller: the Python client is far slower,
# and its rate per second is what is compared.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
POINTS=${1:-200000}
PY_POINTS=${2:-50000}
STATE=$(mktemp -d /tmp/ganflow-bench-mlflow.XXXXXX)
export GANFLOW_MLFLOW_STATE=$STATE GANFLOW_MLFLOW_PORT=0
cmake -S "$ROOT" -B "$ROOT/build-bench" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF >/dev/null
cmake --build "$ROOT/build-bench" -j"$(nproc)" --target bench_logger >/dev/null
"$ROOT/deploy/mlflow-local.sh" start
trap '"$ROOT/deploy/mlflow-local.sh" stop >/dev/null; rm -rf "$STATE"' EXIT
export MLFLOW_TRACKING_URI=$(cat "$STATE/uri")
echo "== ganflow C logger"
"$ROOT/build-bench/bench/tracking/bench_logger" "$POINTS"
echo "== MLflow Python client (synchronous=False)"
"$ROOT/.venv/bin/python" "$ROOT/bench/tracking/python_baseline.py" "$PY_POINTS"
