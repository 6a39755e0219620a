#!/bin/bash
# run.sh - StyleGAN2-ADA training speed on the CPU, ganflow
# (sg2_step_bench: gf_sg2_gan_step) against the official code
# (official_step.py: NVlabs/stylegan2-ada-pytorch's networks and
# StyleGAN2Loss), the Gmain + Dmain phases with ADA at a fixed p, same
# sizes, batch and threads, at each resolution; then G's forward alone.
# The two sides run alternately --repeat times per resolution, one
# process per run, and the table keeps each side's best (lowest) median;
# peak RSS is the largest VmHWM of its runs.
#   bench/stylegan/run.sh --official DIR [--res "32 64 128 256"]
#       [--cbase N] [--cmax N] [--batch N] [--threads 2] [--steps 3]
#       [--warmup 1] [--repeat 3] [--p 0.2] [--no-gfwd] [--reg]
# --reg: the regularizers as training runs them (path length every 4th
#   step, R1 every 16th) on both sides, the mean step (use --steps 16).
# DIR: a copy of the official repository outside the checkout
#   (git -C <clone> archive d72cc7d | tar -x -C DIR). Without --cbase /
#   --cmax the 'auto' preset's channels (16384 / 512 below 512 px); batch
#   0 (the default) is auto's. TORCH_PYTHON (default python3) runs the
#   official side: a Python with torch, numpy and scipy
#   (pip install torch numpy scipy). BUILD_DIR (default build-bench-sg2)
#   is configured as a Release build without CUDA when it does not exist.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench-sg2}
py=${TORCH_PYTHON:-python3}
official="" resl="32 64 128 256" cbase=0 cmax=0 batch=0 threads=2 steps=3
warmup=1 repeat=3 p=0.2 gfwd=1 reg=""
usage() {
  echo "usage: $0 --official DIR [--res LIST] [--cbase N] [--cmax N] [--batch N]" \
       "[--threads N] [--steps N] [--warmup N] [--repeat N] [--p P] [--no-gfwd] [--reg]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --official) official=$2; shift 2 ;;
    --res) resl=$2; shift 2 ;;
    --cbase) cbase=$2; shift 2 ;;
    --cmax) cmax=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --p) p=$2; shift 2 ;;
    --no-gfwd) gfwd=0; shift ;;
    --reg) reg=--reg; shift ;;
    *) usage ;;
  esac
done
[ -n "$official" ] && [ -d "$official/training" ] ||
  { echo "$0: --official DIR must be a copy of stylegan2-ada-pytorch" >&2; usage; }
"$py" -c 'import torch, numpy, scipy' 2>/dev/null ||
  { echo "$0: $py lacks torch/numpy/scipy (pip install torch numpy scipy; TORCH_PYTHON)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
        -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target sg2_step_bench -j "${JOBS:-2}" >/dev/null
bin=$build/bench/stylegan/sg2_step_bench
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //') nproc=$(nproc) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# torch $("$py" -c 'import torch; print(torch.__version__)'), official $(git -C "$official" rev-parse --short HEAD 2>/dev/null || echo "copy at $official")"

# field KEY LINE: the value of KEY=... in LINE
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
# best LIST: the smallest number; worst LIST: the largest
best() { tr ' ' '\n' <<<"$1" | grep . | sort -g | head -1; }
worst() { tr ' ' '\n' <<<"$1" | grep . | sort -g | tail -1; }

args() { echo --res "$1" --cbase "$cbase" --cmax "$cmax" --batch "$batch" \
  --threads "$threads" --steps "$steps" --warmup "$warmup" --p "$p" $reg; }
# measure WHAT RES: runs both sides alternately; sets g_rate o_rate g_rss
# o_rss (best rate: lowest s/kimg, highest img/s) and the sizes line
measure() {
  local what=$1 r=$2 key gr="" orr="" grs="" ors="" line i
  key=$([ "$what" = step ] && echo s_per_kimg || echo img_per_s)
  for i in $(seq "$repeat"); do
    line=$("$bin" --what "$what" $(args "$r")); echo "$line" >&2
    sizes=${line#* }; sizes=${sizes%%:*}
    gr="$gr $(field "$key" "$line")"; grs="$grs $(field vmhwm_mib "$line")"
    line=$("$py" "$here/official_step.py" "$official" --what "$what" $(args "$r") 2>/dev/null)
    echo "$line" >&2
    orr="$orr $(field "$key" "$line")"; ors="$ors $(field vmhwm_mib "$line")"
  done
  if [ "$what" = step ]; then g_rate=$(best "$gr"); o_rate=$(best "$orr")
  else g_rate=$(worst "$gr"); o_rate=$(worst "$orr"); fi
  g_rss=$(worst "$grs"); o_rss=$(worst "$ors")
}

rows="" frows=""
for r in $resl; do
  measure step "$r"
  ratio=$(awk -v a="$o_rate" -v b="$g_rate" 'BEGIN { printf "%.2f", a / b }')
  rows="$rows| $r | $g_rate | $o_rate | $ratio | $g_rss | $o_rss | ${sizes#step } |"$'\n'
  if [ "$gfwd" = 1 ]; then
    measure gfwd "$r"
    ratio=$(awk -v a="$g_rate" -v b="$o_rate" 'BEGIN { printf "%.2f", a / b }')
    frows="$frows| $r | $g_rate | $o_rate | $ratio | $g_rss | $o_rss |"$'\n'
  fi
done
echo
echo "Training step (Gmain + Dmain, ADA p $p, ${reg:+Greg every 4th and Dreg every 16th step: mean}${reg:-no reg: median}), best of $repeat runs of $steps steps after $warmup warm-up"
echo "| px | ganflow s/kimg | official s/kimg | ratio (official / ganflow) | ganflow VmHWM MiB | official VmHWM MiB | sizes |"
echo "|---|---|---|---|---|---|---|"
printf '%s' "$rows"
if [ "$gfwd" = 1 ]; then
  echo
  echo "G forward (eval, noise const), best of $repeat runs"
  echo "| px | ganflow img/s | official img/s | ratio (ganflow / official) | ganflow VmHWM MiB | official VmHWM MiB |"
  echo "|---|---|---|---|---|---|"
  printf '%s' "$frows"
fi
