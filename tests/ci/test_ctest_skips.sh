#!/usr/bin/env bash
# test_ctest_skips.sh - the skip gate (ctest_skips.py) fires: a throwaway
# ctest project (no compiler, a few shell one-liners) in WORKDIR with
#   not_installed  label unit:        prints output, then "SKIP: <reason>", 77
#   no_device      label gpu;unit:    "skipped: no CUDA device", 77
#   mute_skip      label integration: exits 77 without saying why
#   fine           label unit:        exits 0
# is run once with all four and once without the two non-gpu skips; then
#   CI=true,  all four          the gate exits 1 naming not_installed with
#                               its reason and mute_skip as silent, not
#                               no_device or fine
#   CI unset, all four          it exits 0, still listing the three skips
#   CI=true,  only no_device    it exits 0 (gpu tests may skip)
#   a missing junit file        it exits 2
# No MLflow, ~1 s.
#
#   test_ctest_skips.sh GATE_PY CMAKE CTEST WORKDIR
set -uo pipefail

[ $# -eq 4 ] || { echo "usage: $0 GATE_PY CMAKE CTEST WORKDIR" >&2; exit 2; }
GATE=$1 CMAKE=$2 CTEST=$3 WORK=$4
bad=0
fail() { echo "FAIL: $*" >&2; bad=1; }
REASON="frobnicator is not installed (install-deps installs it)"

rm -rf "$WORK"
mkdir -p "$WORK/src" || { echo "FAIL: cannot make $WORK" >&2; exit 1; }
cat >"$WORK/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(skipgate NONE)
enable_testing()
add_test(NAME not_installed COMMAND sh -c "echo one line of output; echo another; echo 'SKIP: $REASON' >&2; exit 77")
add_test(NAME no_device COMMAND sh -c "echo 'skipped: no CUDA device'; exit 77")
add_test(NAME mute_skip COMMAND sh -c "echo nothing to see; exit 77")
add_test(NAME fine COMMAND sh -c "echo fine")
set_tests_properties(not_installed PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
set_tests_properties(no_device PROPERTIES LABELS "gpu;unit" SKIP_RETURN_CODE 77)
set_tests_properties(mute_skip PROPERTIES LABELS integration SKIP_RETURN_CODE 77)
set_tests_properties(fine PROPERTIES LABELS unit)
EOF
"$CMAKE" -S "$WORK/src" -B "$WORK/build" >"$WORK/configure.log" 2>&1 ||
  { cat "$WORK/configure.log" >&2; echo "FAIL: configure" >&2; exit 1; }

# ctest itself passes: skips are not failures to it.
(cd "$WORK/build" && "$CTEST" --output-junit "$WORK/all.xml" >"$WORK/ctest-all.log" 2>&1) ||
  { cat "$WORK/ctest-all.log" >&2; fail "ctest (all four) exited non-zero"; }
(cd "$WORK/build" && "$CTEST" -E 'not_installed|mute_skip' --output-junit "$WORK/gpu.xml" \
  >"$WORK/ctest-gpu.log" 2>&1) ||
  { cat "$WORK/ctest-gpu.log" >&2; fail "ctest (gpu only) exited non-zero"; }

# gate CI JUNIT OUT: runs the gate with CI set to CI (or unset when empty),
# its output to OUT (and here); its exit status.
gate() {
  local ci=$1 junit=$2 out=$3 rc=0
  if [ -n "$ci" ]; then
    CI=$ci python3 "$GATE" "$WORK/build" --junit "$junit" --ctest "$CTEST" >"$out" 2>&1 || rc=$?
  else
    env -u CI python3 "$GATE" "$WORK/build" --junit "$junit" --ctest "$CTEST" >"$out" 2>&1 || rc=$?
  fi
  echo "--- gate, CI=${ci:-(unset)}, $(basename "$junit"): exit $rc"
  cat "$out"
  return "$rc"
}
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1"): no line with '$2'"; }
hasnt() { ! grep -qF -- "$2" "$1" || fail "$(basename "$1"): unexpected '$2'"; }

rc=0; gate true "$WORK/all.xml" "$WORK/ci.out" || rc=$?
[ "$rc" -eq 1 ] || fail "CI=true with a non-gpu skip: exit $rc, want 1"
has "$WORK/ci.out" "3 tests skipped"
has "$WORK/ci.out" "=== FAIL: build: 2 tests outside the \`gpu\` label skipped under CI=true"
has "$WORK/ci.out" "  not_installed: $REASON"
has "$WORK/ci.out" "  mute_skip: (the test printed no SKIP: line saying why)"
has "$WORK/ci.out" "  no_device [gpu,unit]: no CUDA device"
hasnt "$WORK/ci.out" "  no_device: "
hasnt "$WORK/ci.out" "fine"

rc=0; gate "" "$WORK/all.xml" "$WORK/noci.out" || rc=$?
[ "$rc" -eq 0 ] || fail "CI unset: exit $rc, want 0 (report only)"
has "$WORK/noci.out" "3 tests skipped"
has "$WORK/noci.out" "  not_installed [unit]: $REASON"
has "$WORK/noci.out" "a failure under CI=true, not here"
hasnt "$WORK/noci.out" "FAIL"

rc=0; gate true "$WORK/gpu.xml" "$WORK/gpu.out" || rc=$?
[ "$rc" -eq 0 ] || fail "CI=true, only the gpu test skipped: exit $rc, want 0"
has "$WORK/gpu.out" "1 test skipped"
has "$WORK/gpu.out" "  no_device [gpu,unit]: no CUDA device"
hasnt "$WORK/gpu.out" "FAIL"

rc=0; gate true "$WORK/missing.xml" "$WORK/missing.out" || rc=$?
[ "$rc" -eq 2 ] || fail "a missing junit file: exit $rc, want 2"

if [ "$bad" -ne 0 ]; then
  echo "the gate's checks failed (outputs in $WORK)" >&2
  exit 1
fi
rm -rf "$WORK"
echo "PASS"
