#!/usr/bin/env bash
# The whole loop on the local default: installs what is missing, builds,
# starts a local MLflow server (http://127.0.0.1:5000 unless
# GANFLOW_MLFLOW_PORT says otherwise), trains dcgan on Fashion-MNIST for a
# few minutes on the CPU, registers the generator as a new version of
# `fashion-dcgan` (@candidate), promotes it to @production with
# `ganflow promote`, starts ganflow-serve in the background following
# models:/fashion-dcgan@production, saves a generated PNG with curl, and
# prints where to look.
# Run it again after an interruption: training resumes where it stopped.
# Both servers keep running: stop MLflow with deploy/mlflow-local.sh stop
# and ganflow-serve with kill "$(cat .state/serve/ganflow-serve.pid)".
#   GANFLOW_QUICKSTART_STEPS  training steps (dcgan, cond: 3000, about 5
#                             minutes on 2 cores
#                             with AVX-512, about 18 with AVX2 only; fewer
#                             steps, a blurrier generator: README)
#   GANFLOW_QUICKSTART_FID_IMAGES  images per set in FID/KID (100)
#   GANFLOW_QUICKSTART_MODEL  dcgan (the default: the DCGAN of the README)
#                             or cond: a class-conditional DCGAN (hinge
#                             loss, spectral norm, EMA generator) on
#                             Fashion-MNIST's ten named classes, registered
#                             as fashion-cond-dcgan, whose PNG asks
#                             class=Sneaker;
#                             or stylegan2: a small StyleGAN2-ADA (32x32,
#                             channels 1024/32, batch 8, ADA, lazy R1 and
#                             path length) on Fashion-MNIST resized to
#                             32x32, 200 steps by default, registered as
#                             fashion-stylegan2, whose PNG asks psi=0.7
#   GANFLOW_SERVE_PORT        ganflow-serve's port (8080; 0 = any free port)
#   GANFLOW_BUILD_DIR         build folder (build)
#   GANFLOW_STATE_DIR         checkpoints, server pid/log/cache, PNG (.state)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# FID/KID at each evaluation (every 1,000 steps and at step 0 the SWD
# alone) on 100 generated and 100 real images: on 2 cores the FID network
# takes about 7 s per 100 images and FID's eigen-decompositions about 3 s,
# so three evaluations and the reference stay within 15 % of the training
# time. FID at 100 images is biased upwards (not comparable with papers'
# 10k-50k); KID is unbiased.
FID_IMAGES=${GANFLOW_QUICKSTART_FID_IMAGES:-100}
BUILD=${GANFLOW_BUILD_DIR:-build}
STATE=${GANFLOW_STATE_DIR:-$ROOT/.state}
SERVE_PORT=${GANFLOW_SERVE_PORT:-8080}
SERVE_DIR="$STATE/serve"
# The network and its cadence: dcgan's by default.
NET=(--model dcgan --image-size 28 --batch 64)
DEFAULT_STEPS=3000 EVERY=500 EVAL_EVERY=1000
case ${GANFLOW_QUICKSTART_MODEL:-dcgan} in
  dcgan)
    MODEL=fashion-dcgan RUN=dcgan-fashion CKPT=quickstart QUERY="seed=0&n=16"
    RECIPE=(--data /usr/share/datasets/fashion-mnist) ;;
  cond)
    MODEL=fashion-cond-dcgan RUN=cond-dcgan-fashion CKPT=quickstart-cond
    QUERY="seed=0&n=16&class=Sneaker"
    RECIPE=(--data fashion-mnist:/usr/share/datasets/fashion-mnist --cond
            --loss hinge --sn --ema-decay 0.999) ;;
  stylegan2)
    MODEL=fashion-stylegan2 RUN=stylegan2-fashion CKPT=quickstart-stylegan2
    QUERY="seed=0&n=16&psi=0.7"
    RECIPE=(--data /usr/share/datasets/fashion-mnist --ada-kimg 10)
    NET=(--model stylegan2 --image-size 32 --cbase 1024 --cmax 32 --z-dim 64
         --map-layers 2 --batch 8)
    DEFAULT_STEPS=200 EVERY=50 EVAL_EVERY=100 ;;
  *)
    echo "quickstart: GANFLOW_QUICKSTART_MODEL=${GANFLOW_QUICKSTART_MODEL}: dcgan, cond or stylegan2" >&2
    exit 2 ;;
esac
STEPS=${GANFLOW_QUICKSTART_STEPS:-$DEFAULT_STEPS}
./deploy/install-deps.sh
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target ganflow-train ganflow ganflow-serve
./deploy/mlflow-local.sh start
export MLFLOW_TRACKING_URI=$(./deploy/mlflow-local.sh uri)
"$BUILD"/trainer/ganflow-train \
  "${RECIPE[@]}" "${NET[@]}" \
  --steps "$STEPS" --sample-every "$EVERY" --eval-every "$EVAL_EVERY" \
  --eval-metrics swd,fid,kid --fid-images "$FID_IMAGES" \
  --checkpoint-every "$EVERY" --checkpoint-dir "$STATE/checkpoints/$CKPT" \
  --experiment ganflow-quickstart --run-name "$RUN" \
  --register-model "$MODEL" --alias candidate

# Promote the version just registered (the one @candidate points to).
VERSION=$("$BUILD"/cli/ganflow models "$MODEL" |
  awk '$4 ~ /(^|,)@candidate(,|$)/ { print $2; exit }')
if [ -z "$VERSION" ]; then
  echo "quickstart: no version of $MODEL carries @candidate" >&2
  exit 1
fi
"$BUILD"/cli/ganflow promote "$MODEL" "$VERSION" --alias production

# ganflow-serve in the background (a previous one is stopped first).
mkdir -p "$SERVE_DIR"
PID_FILE="$SERVE_DIR/ganflow-serve.pid"
if [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
  kill "$(cat "$PID_FILE")"
  for _ in $(seq 50); do kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break; sleep 0.2; done
fi
rm -f "$SERVE_DIR/port"
nohup "$BUILD"/serve/ganflow-serve --model "models:/$MODEL@production" \
  --listen "127.0.0.1:$SERVE_PORT" --port-file "$SERVE_DIR/port" \
  --cache-dir "$SERVE_DIR/cache" --poll 10 \
  >"$SERVE_DIR/ganflow-serve.log" 2>&1 </dev/null &
echo $! >"$PID_FILE"
SERVE_URL=""
for _ in $(seq 300); do
  if [ -s "$SERVE_DIR/port" ]; then
    SERVE_URL="http://127.0.0.1:$(cat "$SERVE_DIR/port")"
    curl -sf "$SERVE_URL/v2/health/ready" >/dev/null 2>&1 && break
  fi
  kill -0 "$(cat "$PID_FILE")" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$SERVE_URL" ] || ! curl -sf "$SERVE_URL/v2/health/ready" >/dev/null; then
  echo "quickstart: ganflow-serve did not become ready; its log:" >&2
  cat "$SERVE_DIR/ganflow-serve.log" >&2
  exit 1
fi
PNG="$SERVE_DIR/$MODEL-seed0.png"
curl -sf -o "$PNG" "$SERVE_URL/v1/models/$MODEL/generate?$QUERY"

echo
echo "MLflow UI:        $MLFLOW_TRACKING_URI (experiment ganflow-quickstart)"
echo "Registered model: models:/$MODEL@production (version $VERSION)"
echo "Checkpoints:      $STATE/checkpoints/$CKPT (ganflow inspect FILE)"
echo "ganflow-serve:    $SERVE_URL  (page: $SERVE_URL/, metrics: $SERVE_URL/metrics)"
echo "                  curl -o out.png '$SERVE_URL/v1/models/$MODEL/generate?${QUERY/seed=0/seed=1}'"
echo "                  stop: kill \$(cat $PID_FILE)"
echo "Generated grid:   $PNG"
