#!/usr/bin/env bash
# The whole test suite, from nothing, in stages that each print their time:
#
#   deps     deploy/install-deps.sh (what is missing only)
#   build    a Release build with gcc (build/)
#   quick    its unit and fuzz tests (`ctest -L 'unit|fuzz' -LE heavy`): a
#            first answer in under three minutes
#   release  that build's tests labelled cluster, slurm, heavy or gpu: the
#            test cluster's scenarios, Slurm, the heavy goldens (minutes of
#            training across hosts, hundreds of images through the FID
#            network), and what needs the CUDA build
#   asan     a build with clang under AddressSanitizer +
#            UndefinedBehaviorSanitizer (build-asan/, state checkers on) and
#            every test but the cluster, Slurm and heavy ones: the unit and
#            fuzz tests a second time, and the only run of the rest
#            (integration against real MLflow servers, end to end, fault
#            injection, MPI, deploy)
#   matrix   tests/build-matrix.sh --no-tests: what ships (libraries,
#            executables, benchmarks, examples) built by gcc in Debug and
#            MinSizeRel, and RelWithDebInfo where the fresh stage does not
#            build it (gcc's warnings change with -O0, -O2 and -Os, and only
#            Debug keeps asserts and the state checkers), and clang Release
#            with the CUDA host code, which the sanitizer build leaves out
#   fresh    as root where mmdebstrap is installed: both README commands on
#            a bare Debian root (tests/fresh-machine.sh), which also builds
#            the container image
#   image    that image run with runc and Podman, and the Dockerfile built
#            with podman build (tests/image.sh)
#
# Each test runs once per build that can tell something new: the unit and
# fuzz tests in both builds (seconds each); the integration tests under the
# sanitizers, which see memory errors and undefined behaviour besides wrong
# answers, and whose binaries differ from Release's in optimization level
# and compiler only (Release's executables run end to end in the cluster,
# Slurm and heavy tests, the fresh root's quickstart and the image tests);
# the cluster, Slurm and heavy ones in Release, where they take minutes and
# their code runs under the sanitizers in smaller tests (launch_local,
# launch_nodes, quality_inception_golden, cli_*, trainer_train_fid,
# model_sg2_dist_np2).
#
# At the end: each stage's time, the whole run's, and the ten slowest tests
# (tests/ci/slowest.py). The budget is 2,400 s on a 2-core machine; the
# stage times say where it goes. Integration tests start their own MLflow
# servers on free loopback ports.
#
# Skips: after each ctest run the skip gate (tests/ci/ctest_skips.py) prints
# how many tests skipped, each with the reason it printed. Under CI=true
# (as .ci/run is run) a skip outside the `gpu` label is a failure: CI
# installs everything such a test needs. The gate does not stop the run:
# every suite runs to the end, then run-all exits 1 naming every such test
# with its reason (a ctest failure still stops it at once).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
JOBS=$(nproc)
# ctest runs $JOBS tests at once and most start programs with --threads 2
# or more, beside MLflow servers: the cores are oversubscribed throughout.
# libgomp's default wait policy spins a thread that waits for work (up to
# GOMP_SPINCOUNT iterations) on a core another test needs: measured on one
# `ganflow-train --model mlp --steps 120 --threads 2` beside other work,
# 6.5 s of user CPU spinning, 2.1 s passive, and half of a trainer's
# profile inside libgomp's wait loop. Passive waiting sleeps at once.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
T0=$(date +%s)

# ---- stages -----------------------------------------------------------------
# stage NAME CMD...: runs CMD (under set -e: a failing command ends the run),
# printing the stage's start and its time; the table of every stage's time
# is printed at the end, also when one failed (the EXIT trap).
STAGE_NAMES=()
STAGE_SECS=()
CUR_STAGE=""
CUR_T=0
stage() {
  CUR_STAGE=$1
  CUR_T=$(date +%s)
  shift
  echo "=== stage $CUR_STAGE: start ($((CUR_T - T0)) s into the run)"
  "$@"
  STAGE_NAMES+=("$CUR_STAGE")
  STAGE_SECS+=($(($(date +%s) - CUR_T)))
  echo "=== stage $CUR_STAGE: done in $(($(date +%s) - CUR_T)) s"
  CUR_STAGE=""
}
# The JUnit files of the ctest runs so far, as SUITE=FILE for slowest.py.
JUNITS=()
summary() {
  local rc=$? i
  trap - EXIT
  if [ -n "$CUR_STAGE" ]; then
    STAGE_NAMES+=("$CUR_STAGE (FAILED)")
    STAGE_SECS+=($(($(date +%s) - CUR_T)))
  fi
  echo "=== stage times"
  for i in "${!STAGE_NAMES[@]}"; do
    printf '  %-16s %6d s\n' "${STAGE_NAMES[$i]}" "${STAGE_SECS[$i]}"
  done
  printf '  %-16s %6d s\n' all "$(($(date +%s) - T0))"
  if [ "${#JUNITS[@]}" -gt 0 ]; then
    python3 "$ROOT/tests/ci/slowest.py" -n 10 "${JUNITS[@]}" || true
  fi
  echo "=== run-all: $([ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)") in $(($(date +%s) - T0)) s"
  exit "$rc"
}
trap summary EXIT

deps() {
  "$ROOT/deploy/install-deps.sh"
  # Both builds need about 3 GB besides the checkout, and the Release
  # build's test data up to about 3 GB more while its tests run (each
  # suite's is deleted once it passed).
  echo "=== disk: $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') free"
}

# The suites whose skip gate failed (CI=true and a non-gpu skip, or results
# it could not read); the gate's output for each is in DIR/ctest-skips-*.txt.
SKIP_GATE_FAILED=()

# build DIR CC BUILD_TYPE [CMAKE ARGS...]: configures and builds DIR.
build() {
  local dir=$1 cc=$2 type=$3; shift 3
  echo "=== $dir: configure and build ($cc, $type${*:+, $*})"
  cmake -S "$ROOT" -B "$ROOT/$dir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE="$type" "$@" >"$ROOT/$dir.configure.log" 2>&1 \
    || { cat "$ROOT/$dir.configure.log"; return 1; }
  grep -A8 "ganflow .* configuration" "$ROOT/$dir.configure.log" || true
  cmake --build "$ROOT/$dir" -j"$JOBS"
}

# run_tests DIR PART [CTEST ARGS...]: one ctest run in DIR, its JUnit file
# DIR/ctest-junit-PART.xml, then the skip gate on it.
run_tests() {
  local dir=$1 part=$2; shift 2
  local junit=$ROOT/$dir/ctest-junit-$part.xml skips=$ROOT/$dir/ctest-skips-$part.txt rc=0 gate=0
  echo "=== $dir: ctest ($part${*:+: $*})"
  rm -f "$junit" "$skips"
  (cd "$ROOT/$dir" && ctest --output-on-failure -j"$JOBS" --timeout 900 "$@" --output-junit "$junit") || rc=$?
  JUNITS+=("$dir/$part=$junit")
  # The skips, even when ctest failed; under CI=true one outside gpu fails.
  python3 "$ROOT/tests/ci/ctest_skips.py" "$ROOT/$dir" --junit "$junit" >"$skips" 2>&1 || gate=$?
  cat "$skips"
  [ "$rc" -eq 0 ] || return "$rc"
  [ "$gate" -eq 0 ] || SKIP_GATE_FAILED+=("$skips")
}

# drop_test_data DIR: a passed suite's test data (checkpoints, logs, MLflow
# and database states under tests/*/tmp-* and the fixtures' folders) is of
# no more use: the next suite gets its disk. A failed suite keeps it.
drop_test_data() {
  local dir=$1
  echo "=== $dir: $(du -sh "$ROOT/$dir" | cut -f1) on disk after its tests, $(df -h --output=avail "$ROOT" | tail -1 | tr -d ' ') left"
  find "$ROOT/$dir/tests" -mindepth 2 -maxdepth 2 -type d \( -name 'tmp-*' -o -name '*-fixture' \) -exec rm -rf {} +
  echo "=== $dir: $(du -sh "$ROOT/$dir" | cut -f1) on disk without its test data"
}

quick() {
  run_tests build quick -L 'unit|fuzz' -LE heavy
}

# build/'s tests labelled cluster, slurm, heavy or gpu that the quick stage
# left: those outside unit and fuzz, then the heavy ones inside them
# (labels ANDed). Every other test runs in the asan stage.
release() {
  run_tests build rest -L 'cluster|slurm|heavy|gpu' -LE 'unit|fuzz'
  run_tests build heavy -L heavy -L 'unit|fuzz'
  drop_test_data build
}

# gcc's RelWithDebInfo is built here only where the fresh-machine stage
# does not run: that stage builds it, tests included, with -Werror, on the
# bare root (without the CUDA host code, which build/ compiles at -O3,
# and the Debug and MinSizeRel builds at -O0 and -Os).
matrix() {
  local types="Debug MinSizeRel"
  [ "$FRESH_OK" -eq 1 ] || types="Debug RelWithDebInfo MinSizeRel"
  "$ROOT/tests/build-matrix.sh" --no-tests --compilers gcc --types "$types"
  "$ROOT/tests/build-matrix.sh" --no-tests --compilers clang --types Release
}

# Sanitizers: leaks are reported too; halt on the first UB report. Left to
# the Release stage: the test cluster's scenarios and the Slurm jobs
# (minutes of training across hosts and under slurmd; the sanitizers see
# ganflow launch's agents, rendezvous and supervisor in launch_local and
# launch_nodes), and the tests labelled heavy (hundreds of images through
# the FID network against the reference's goldens; the sanitizers see the
# same code on a few images in quality_inception_golden, cli_*,
# trainer_train_fid).
asan() {
  build build-asan clang RelWithDebInfo -DGF_SANITIZE=ON -DGF_CUDA=OFF
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    run_tests build-asan all -LE 'cluster|slurm|heavy'
  drop_test_data build-asan
}

# The fresh-machine stage also builds the container image on its bare root
# (deploy/image/build.sh); the image stage runs that image with runc and
# Podman, and builds the Dockerfile with podman build.
IMAGE_OUT=""
fresh() {
  IMAGE_OUT=$(mktemp -d "${TMPDIR:-/tmp}/ganflow-image-out.XXXXXX")
  GANFLOW_FRESH_IMAGE_OUT=$IMAGE_OUT "$ROOT/tests/fresh-machine.sh"
}
image() {
  local version
  version=$(. "$ROOT/deploy/lib/debian-root.sh" && gf_project_version "$ROOT")
  "$ROOT/tests/image.sh" --layout "$IMAGE_OUT/oci:$version" --png-check "$ROOT/build/tests/deploy/png_check"
  rm -rf "$IMAGE_OUT"
}

FRESH_OK=0
[ "$(id -u)" -eq 0 ] && command -v mmdebstrap >/dev/null && FRESH_OK=1

stage deps deps
stage build build build gcc Release
stage quick quick
stage release release
stage asan asan
stage matrix matrix
if [ "${#SKIP_GATE_FAILED[@]}" -gt 0 ]; then
  echo "=== FAIL: tests skipped where CI has what they need (CI=${CI:-}):"
  for f in "${SKIP_GATE_FAILED[@]}"; do cat "$f"; done
  exit 1
fi
echo "=== all tests passed in both builds, skips as listed above ($(($(date +%s) - T0)) s so far)"

if [ "$FRESH_OK" -eq 1 ]; then
  stage fresh fresh
  stage image image
else
  echo "=== fresh-machine and image stages not run: they need root and mmdebstrap"
fi
