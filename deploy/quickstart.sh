#!/usr/bin/env bash
# The main job on the local default: installs what is missing, builds,
# starts a local MLflow server (http://127.0.0.1:5000 unless
# GANFLOW_MLFLOW_PORT says otherwise), and logs a demo run to it through the
# C tracking library. The server keeps running; stop it with
# deploy/mlflow-local.sh stop.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
./deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target tracking_demo
./deploy/mlflow-local.sh start
export MLFLOW_TRACKING_URI=$(./deploy/mlflow-local.sh uri)
./build/examples/tracking_demo ganflow-quickstart
echo
echo "MLflow UI: $MLFLOW_TRACKING_URI"
