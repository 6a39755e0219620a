#!/usr/bin/env bash
# run.sh - the GAN recipes of ganflow-train on Fashion-MNIST, each trained
# for the same steps with the same batch and threads, scored the same way,
# beside the same recipe trained in PyTorch on the same machine in the same
# run (torch_recipes.py):
#   ganflow: ganflow-train --steps S (its SWD at the end, --eval-images N),
#            then `ganflow eval` of the final checkpoint (FID and KID of N
#            generated images, the EMA generator's when the run has one),
#            and its images/s (perf/images_per_sec over the run: real
#            images read per second) from the log;
#   PyTorch: torch_recipes.py with the same recipe, its N images scored by
#            `ganflow fid` against the same reference, and its images/s;
# both against the first N images of Fashion-MNIST's test set.
#
#   bench/quality/run.sh [--steps S] [--images N] [--threads T] [--recipes LIST]
# Defaults: --steps 2000, --images 2000, every core, every recipe below.
# TORCH_PY names a python with torch; without it the PyTorch columns are
# left out. WORK (/tmp/ganflow-recipes) holds everything, BUILD_DIR
# (build-bench) the build. An MLflow server of its own runs under WORK.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
work=${WORK:-/tmp/ganflow-recipes}
steps=2000
images=2000
threads=$(nproc)
# name|ganflow-train flags (torch_recipes.py takes the same spelling; a
# --model in them overrides the dcgan given first)
all_recipes=(
  "dcgan-bce|"
  "dcgan-hinge-sn|--loss hinge --sn"
  "dcgan-hinge-sn-ema|--loss hinge --sn --ema-decay 0.999"
  "dcgan-wgan-sn-d2|--loss wgan --sn --d-steps 2"
  "dcgan-hinge-sn-ema-diffaug|--loss hinge --sn --ema-decay 0.999 --diffaug color,translation,cutout"
  "dcgan-hinge-sn-r1|--loss hinge --sn --r1 1"
  "cond-dcgan-hinge-sn-ema|--cond --loss hinge --sn --ema-decay 0.999"
  "resnet-hinge-sn-ema|--model resnet --loss hinge --sn --ema-decay 0.999"
  "cond-resnet-hinge-sn-ema|--model resnet --cond --loss hinge --sn --ema-decay 0.999"
)
pick=""
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --recipes) pick=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target ganflow-train ganflow -j "${JOBS:-2}" >/dev/null
mkdir -p "$work"
# The reference: the first N test images as an IDX training set (the layout
# `ganflow eval --data` and `ganflow fid` read), as bench/metrics/quality.sh.
test_dir="$work/fashion-test-$images"
if [ ! -f "$test_dir/train-images-idx3-ubyte" ]; then
  mkdir -p "$test_dir"
  python3 "$here/../metrics/fashion_test_subset.py" "$test_dir" "$images"
fi
export GANFLOW_CACHE_DIR="$work/cache"
GANFLOW_MLFLOW_STATE="$work/mlflow" GANFLOW_MLFLOW_PORT=0 "$root/deploy/mlflow-local.sh" start >/dev/null
trap 'GANFLOW_MLFLOW_STATE="$work/mlflow" "$root/deploy/mlflow-local.sh" stop >/dev/null 2>&1 || true' EXIT
uri=$(cat "$work/mlflow/uri")

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') nproc=$(nproc) load $(cut -d' ' -f1-3 /proc/loadavg); $steps steps of 64, $images images, $threads threads"
echo
echo "| recipe | flags | ganflow SWD | ganflow FID | ganflow KID | ganflow img/s | PyTorch FID | PyTorch KID | PyTorch img/s |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in "${all_recipes[@]}"; do
  name=${r%%|*}
  flags=${r#*|}
  if [ -n "$pick" ] && [[ ",$pick," != *",$name,"* ]]; then continue; fi
  ck="$work/$name/ck"
  final="$ck/ckpt-$(printf %012d "$steps").safetensors"
  log="$work/$name/train.log"
  mkdir -p "$work/$name"
  if [ ! -f "$final" ]; then
    rm -rf "$ck"
    # shellcheck disable=SC2086
    MLFLOW_TRACKING_URI=$uri "$build/trainer/ganflow-train" \
      --data /usr/share/datasets/fashion-mnist --model dcgan --image-size 28 \
      --steps "$steps" --batch 64 --threads "$threads" --seed 1 $flags \
      --sample-every 0 --eval-every "$steps" --eval-images "$images" \
      --log-every $((steps < 50 ? steps : 50)) --checkpoint-every "$steps" --checkpoint-dir "$ck" \
      --experiment "recipes-$name" --register-model '' >"$log" 2>&1
  fi
  swd=$(awk -v k="step $steps:" 'index($0, k) == 1 && /swd\/avg/ { print $4 }' "$log" | tail -1)
  # images/s over the run: the mean of the logged progress lines' figures
  ips=$(awk '/img\/s/ { for (i = 1; i < NF; i++) if ($(i + 1) == "img/s") { s += $i; n++ } }
             END { if (n) printf "%.0f", s / n }' "$log")
  g=$("$build/cli/ganflow" eval "$final" --data "$test_dir" --images "$images" \
       --threads "$threads" 2>>"$work/eval.log")
  gfid=$(awk '$1 == "fid" { printf "%.1f", $2 }' <<<"$g")
  gkid=$(awk '$1 == "kid" { printf "%.4f", $2 }' <<<"$g")
  tfid=-; tkid=-; tips=-
  if [ -n "${TORCH_PY:-}" ]; then
    tout="$work/$name/torch"
    if [ ! -f "$work/$name/torch.log" ] || ! grep -q "images/s" "$work/$name/torch.log"; then
      rm -rf "$tout"
      # shellcheck disable=SC2086
      "$TORCH_PY" "$here/torch_recipes.py" "$tout" --steps "$steps" --images "$images" \
        --threads "$threads" $flags >"$work/$name/torch.log" 2>&1
    fi
    tips=$(awk '$1 == "images/s" { printf "%.0f", $2 }' "$work/$name/torch.log")
    t=$("$build/cli/ganflow" fid "$test_dir" "$tout" --kid --threads "$threads" 2>>"$work/eval.log")
    tfid=$(awk '$1 == "FID:" { printf "%.1f", $2 }' <<<"$t")
    tkid=$(awk '$1 == "KID:" { printf "%.4f", $2 }' <<<"$t")
  fi
  echo "| $name | \`${flags:-(defaults)}\` | ${swd:--} | $gfid | $gkid | ${ips:--} | $tfid | $tkid | $tips |"
done
