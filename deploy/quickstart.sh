#!/usr/bin/env bash
# The main job on the local default: installs what is missing, builds,
# starts a local MLflow server (http://127.0.0.1:5000 unless
# GANFLOW_MLFLOW_PORT says otherwise), trains dcgan on Fashion-MNIST for a
# few minutes on the CPU, registers the generator as a new version of
# `fashion-dcgan` with the alias @production, and prints where to look.
# Run it again after an interruption: training resumes where it stopped.
# The server keeps running; stop it with deploy/mlflow-local.sh stop.
#   GANFLOW_QUICKSTART_STEPS  training steps (3000, about 7 minutes on 2 cores)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
STEPS=${GANFLOW_QUICKSTART_STEPS:-3000}
./deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target ganflow-train ganflow
./deploy/mlflow-local.sh start
export MLFLOW_TRACKING_URI=$(./deploy/mlflow-local.sh uri)
./build/trainer/ganflow-train \
  --data /usr/share/datasets/fashion-mnist --model dcgan --image-size 28 \
  --steps "$STEPS" --batch 64 --sample-every 500 --eval-every 500 \
  --checkpoint-every 500 --checkpoint-dir "$ROOT/.state/checkpoints/quickstart" \
  --experiment ganflow-quickstart --run-name dcgan-fashion \
  --register-model fashion-dcgan --alias production
echo
echo "MLflow UI:        $MLFLOW_TRACKING_URI (experiment ganflow-quickstart)"
echo "Registered model: models:/fashion-dcgan@production"
echo "Checkpoints:      $ROOT/.state/checkpoints/quickstart (ganflow inspect FILE)"
