#!/usr/bin/env bash
# Builds ganflow, tests and benchmarks included, in every build type with
# every compiler the project supports, warnings as errors: the check that a
# fresh clone builds whatever CMAKE_BUILD_TYPE and CC a user picks (-O3 and
# -Os warn about things -O2 does not; clang about things gcc does not).
#
#   tests/build-matrix.sh [--compilers "gcc clang"] [--types "Debug ..."]
#                         [--dir DIR] [--jobs N] [--no-tests]
#                         [-- EXTRA CMAKE ARGS...]
#
# Each pair configures and builds in DIR/<compiler>-<type> (default DIR:
# build-matrix/ in the checkout) and goes on after a failure, so one run
# names every pair that fails; the errors of each failed build (make -k:
# every file that fails, not only the first) are printed, the whole log
# kept as DIR/<compiler>-<type>.log. Exit 0 when all built, 1 otherwise.
# Builds only: the tests run in tests/run-all.sh. --no-tests leaves the
# tests out (-DGF_BUILD_TESTS=OFF): what ships, the benchmarks and examples
# only, about half the code. On 2 cores a pair takes 75-120 s from scratch
# (CUDA included), 40-55 s without the tests.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COMPILERS="gcc clang"
TYPES="Debug Release RelWithDebInfo MinSizeRel"
DIR="$ROOT/build-matrix"
JOBS=$(nproc)
EXTRA=()
TESTS=ON
while [ $# -gt 0 ]; do
  case "$1" in
    --compilers) COMPILERS=$2; shift 2 ;;
    --types) TYPES=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --no-tests) TESTS=OFF; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n "2,19p" "$0"; exit 0 ;;
    *) echo "build-matrix: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for cc in $COMPILERS; do
  command -v "$cc" >/dev/null || { echo "build-matrix: compiler '$cc' not found (deploy/install-deps.sh installs gcc and clang)" >&2; exit 2; }
done
mkdir -p "$DIR"

failed=()
T0=$(date +%s)
for cc in $COMPILERS; do
  for type in $TYPES; do
    b="$DIR/$cc-$type"
    log="$DIR/$cc-$type.log"
    t=$(date +%s)
    if CC=$cc cmake -S "$ROOT" -B "$b" -DCMAKE_BUILD_TYPE="$type" -DGF_WERROR=ON \
         -DGF_BUILD_TESTS="$TESTS" "${EXTRA[@]}" >"$log" 2>&1 &&
       cmake --build "$b" -j"$JOBS" -- -k >>"$log" 2>&1; then
      echo "=== build-matrix: $cc $type: built in $(($(date +%s) - t)) s"
    else
      echo "=== build-matrix: $cc $type: FAILED after $(($(date +%s) - t)) s (log: $log)"
      grep -E 'error:|Error [0-9]|CMake Error' "$log" | grep -v '^g\?make' | sort -u | head -15 | sed 's/^/    /'
      failed+=("$cc-$type")
    fi
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "=== build-matrix: ${#failed[@]} failed: ${failed[*]} ($(($(date +%s) - T0)) s)"
  exit 1
fi
echo "=== build-matrix: every pair built ($(($(date +%s) - T0)) s)"
