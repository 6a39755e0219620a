#!/usr/bin/env bash
# The whole test suite, from nothing: installs the dependencies, then builds
# and runs ctest twice: a Release build with gcc (build/; -O3 warns about
# what -O2 does not) and a build with clang under AddressSanitizer +
# UndefinedBehaviorSanitizer (build-asan/), so both compilers build every
# target with -Werror and run every test. Before them, tests/build-matrix.sh
# builds gcc's three other build types (gcc's warnings change with -O0, -O2
# and -Os, and only Debug keeps asserts) and clang Release with the CUDA
# host code, which the sanitizer build leaves out (clang's warnings come
# largely from its front end, alike at every -O); about 2 minutes on 2
# cores. tests/build-matrix.sh alone builds all eight pairs. Integration
# tests start their own MLflow servers on free loopback ports. Run as root
# where mmdebstrap is installed (install-deps installs it), it then proves
# both README commands on a bare Debian root (tests/fresh-machine.sh) and
# builds and runs the container image (tests/image.sh).
#
# Skips: after each ctest run the skip gate (tests/ci/ctest_skips.py) prints
# how many tests skipped, each with the reason it printed. Under CI=true
# (as .ci/run is run) a skip outside the `gpu` label is a failure: CI
# installs everything such a test needs. The gate does not stop the run:
# both suites run to the end, then run-all exits 1 naming every such test
# with its reason (a ctest failure still stops it at once, as before).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=$(nproc)
T0=$(date +%s)

"$ROOT/deploy/install-deps.sh"
# Both builds need about 3 GB besides the checkout, and the Release build's
# test data up to about 3 GB more while its tests run (each suite's is
# deleted once it passed).
echo "=== disk: $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') free"

"$ROOT/tests/build-matrix.sh" --compilers gcc --types "Debug RelWithDebInfo MinSizeRel"
"$ROOT/tests/build-matrix.sh" --compilers clang --types Release

# The suites whose skip gate failed (CI=true and a non-gpu skip, or results
# it could not read); the gate's output for each is in DIR/ctest-skips.txt.
SKIP_GATE_FAILED=()

# run_suite DIR CC BUILD_TYPE [CMAKE ARGS...]
run_suite() {
  local dir=$1 cc=$2 type=$3; shift 3
  echo "=== $dir: configure and build ($cc, $type${*:+, $*})"
  cmake -S "$ROOT" -B "$ROOT/$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE="$type" "$@" >"$ROOT/$dir.configure.log" 2>&1 \
    || { cat "$ROOT/$dir.configure.log"; return 1; }
  grep -A8 "ganflow .* configuration" "$ROOT/$dir.configure.log" || true
  cmake --build "$ROOT/$dir" -j"$JOBS"
  echo "=== $dir: ctest"
  local junit=$ROOT/$dir/ctest-junit.xml rc=0 gate=0
  rm -f "$junit" "$ROOT/$dir/ctest-skips.txt"
  # shellcheck disable=SC2086 # CTEST_EXTRA: words on purpose
  (cd "$ROOT/$dir" && ctest --output-on-failure -j"$JOBS" --timeout 900 ${CTEST_EXTRA:-} --output-junit "$junit") || rc=$?
  # The skips, even when ctest failed; under CI=true one outside gpu fails.
  python3 "$ROOT/tests/ci/ctest_skips.py" "$ROOT/$dir" --junit "$junit" \
    >"$ROOT/$dir/ctest-skips.txt" 2>&1 || gate=$?
  cat "$ROOT/$dir/ctest-skips.txt"
  [ "$rc" -eq 0 ] || return "$rc"
  [ "$gate" -eq 0 ] || SKIP_GATE_FAILED+=("$dir")
  # A passed suite's test data (checkpoints, logs, MLflow and database
  # states under tests/*/tmp-* and the fixtures' folders) is of no more use:
  # the next suite gets its disk. A failed suite returned above and keeps it.
  echo "=== $dir: $(du -sh "$ROOT/$dir" | cut -f1) on disk after its tests, $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') left"
  find "$ROOT/$dir/tests" -mindepth 2 -maxdepth 2 -type d \( -name 'tmp-*' -o -name '*-fixture' \) -exec rm -rf {} +
  echo "=== $dir: $(du -sh "$ROOT/$dir" | cut -f1) on disk without its test data"
}

run_suite build gcc Release
# Sanitizers: leaks are reported too; halt on the first UB report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Run once, in the Release build: the test cluster's scenarios and the
# Slurm jobs (minutes of training across hosts and under slurmd; the
# sanitizers see ganflow launch's agents, rendezvous and supervisor in
# launch_local and launch_nodes), and the tests labelled heavy
# (hundreds of images through the FID network against the reference's
# goldens; the sanitizers see the same code on a few images in
# quality_inception_golden, cli_*, trainer_train_fid).
CTEST_EXTRA="-LE cluster|slurm|heavy" run_suite build-asan clang RelWithDebInfo -DGF_SANITIZE=ON -DGF_CUDA=OFF
if [ "${#SKIP_GATE_FAILED[@]}" -gt 0 ]; then
  echo "=== FAIL: tests skipped where CI has what they need (CI=${CI:-}):"
  for dir in "${SKIP_GATE_FAILED[@]}"; do cat "$ROOT/$dir/ctest-skips.txt"; done
  exit 1
fi
echo "=== all tests passed in both builds, skips as listed above ($(($(date +%s) - T0)) s so far)"
unset ASAN_OPTIONS UBSAN_OPTIONS

if [ "$(id -u)" -eq 0 ] && command -v mmdebstrap >/dev/null; then
  # The fresh-machine stage also builds the container image on its bare
  # root (deploy/image/build.sh); tests/image.sh runs that image with runc
  # and Podman, and builds the Dockerfile with podman build.
  IMAGE_OUT=$(mktemp -d "${TMPDIR:-/tmp}/ganflow-image-out.XXXXXX")
  GANFLOW_FRESH_IMAGE_OUT=$IMAGE_OUT "$ROOT/tests/fresh-machine.sh"
  VERSION=$(. "$ROOT/deploy/lib/debian-root.sh" && gf_project_version "$ROOT")
  "$ROOT/tests/image.sh" --layout "$IMAGE_OUT/oci:$VERSION" --png-check "$ROOT/build/tests/deploy/png_check"
  rm -rf "$IMAGE_OUT"
else
  echo "=== fresh-machine and image stages not run: they need root and mmdebstrap"
fi
echo "=== run-all: done in $(($(date +%s) - T0)) s"
