#!/usr/bin/env bash
# Runs every libFuzzer target for a while (default 60 s each), growing the
# corpora under build-fuzz/corpus-work (the checked-in seeds stay as they are).
#   tests/fuzz/run-fuzz.sh [SECONDS] [TARGET-NAME-FILTER]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SECS=${1:-60}
FILTER=${2:-}
BUILD=$ROOT/build-fuzz
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DGF_FUZZ=ON \
      -DGF_SANITIZE=ON -DGF_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
for bin in "$BUILD"/tests/fuzz/fuzz_*; do
  name=${bin##*/fuzz_}
  [ -n "$FILTER" ] && [[ "$name" != *"$FILTER"* ]] && continue
  work=$BUILD/corpus-work/$name
  mkdir -p "$work"
  echo "== $name ($SECS s)"
  "$bin" -max_total_time="$SECS" -max_len=65536 "$work" "$ROOT/tests/fuzz/corpus/$name"
done
