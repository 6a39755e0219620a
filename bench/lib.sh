# lib.sh - shell helpers sourced by the bench/*/run.sh scripts (bash, under
# their `set -euo pipefail`). Not a script of its own; not for anything a
# single benchmark alone needs.

# find_bin NAME SUBDIR: prints $GANFLOW_BIN_DIR/NAME or
# $GANFLOW_BIN_DIR/SUBDIR/NAME, the first that is executable; 1 (with a
# message) when neither is.
find_bin() {
  local d
  for d in "$GANFLOW_BIN_DIR" "$GANFLOW_BIN_DIR/$2"; do
    if [ -x "$d/$1" ]; then echo "$d/$1"; return 0; fi
  done
  echo "run.sh: no $1 in GANFLOW_BIN_DIR=$GANFLOW_BIN_DIR (nor its $2/)" >&2
  return 1
}

# bench_bins BUILD OUT: sets ganflow and train to the binaries to run: from
# GANFLOW_BIN_DIR when set, else built (Release, no CUDA, no tests) into
# BUILD from the source tree $root (the caller sets it), configuring BUILD
# first when it has no CMakeCache.txt, with the logs
# in OUT/configure.log and OUT/build.log (JOBS parallel jobs, default 2).
# Exits the script when a binary is missing or the build fails.
bench_bins() {
  local build=$1 out=$2
  if [ -n "${GANFLOW_BIN_DIR:-}" ]; then
    ganflow=$(find_bin ganflow cli) || exit 1
    train=$(find_bin ganflow-train trainer) || exit 1
  else
    if [ ! -f "$build/CMakeCache.txt" ]; then
      cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
            -DGF_BUILD_TESTS=OFF >"$out/configure.log" 2>&1 ||
        { tail -30 "$out/configure.log" >&2; echo "run.sh: configure failed" >&2; exit 1; }
    fi
    cmake --build "$build" --target ganflow ganflow-train -j "${JOBS:-2}" \
      >"$out/build.log" 2>&1 ||
      { tail -30 "$out/build.log" >&2; echo "run.sh: build failed ($out/build.log)" >&2; exit 1; }
    ganflow=$build/cli/ganflow
    train=$build/trainer/ganflow-train
  fi
}

# bench_train BUILD OUT: sets train to the ganflow-train to measure:
# $GANFLOW_TRAIN when set, else built (Release, no CUDA, no tests) into
# BUILD from $root, configuring BUILD first when it has no CMakeCache.txt,
# the build's log in OUT/build.log. Exits the script when the build fails
# or the binary is missing.
bench_train() {
  local build=$1 out=$2 me=${0##*/}
  if [ -n "${GANFLOW_TRAIN:-}" ]; then
    train=$GANFLOW_TRAIN
  else
    if [ ! -f "$build/CMakeCache.txt" ]; then
      cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=OFF \
            -DGF_BUILD_TESTS=OFF >/dev/null
    fi
    cmake --build "$build" --target ganflow-train -j "${JOBS:-2}" >"$out/build.log" 2>&1 ||
      { tail -30 "$out/build.log" >&2; echo "$me: build failed ($out/build.log)" >&2; exit 1; }
    train=$build/trainer/ganflow-train
  fi
  [ -x "$train" ] || { echo "$me: no ganflow-train at $train" >&2; exit 1; }
}
