#!/bin/sh
# Prints the Debian packages that hold the shared libraries the given
# executables load (ldd, then dpkg -S), one per line, sorted: what the
# container image installs so that they run, and nothing else. The modules
# installed beside an executable, which it opens with dlopen and ldd cannot
# see from it (<bindir>/../lib/ganflow/*.so: the CUDA backend,
# libganflow_cuda.so, with cuBLAS, cuDNN and NCCL), are read the same way.
# A library no package holds (the CUDA toolkit's, installed by NVIDIA's
# installer) is printed to stderr as "unpackaged: PATH" for the caller to
# copy; any other failure (a library not found, ldd or dpkg failing) exits
# 1.
#   deploy/image/runtime-packages.sh EXE...
# Run inside the root the executables were built in (the image's build
# stage), so that dpkg's database is the one that linked them.
set -eu
[ "$#" -gt 0 ] || { echo "usage: runtime-packages.sh EXE..." >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.files" "$tmp.libs"' EXIT
# The executables and the modules beside them, each once.
files() {
  for exe in "$@"; do
    echo "$exe"
    for m in "$(dirname "$exe")"/../lib/ganflow/*.so "$(dirname "$exe")"/../lib/*/ganflow/*.so; do
      [ -f "$m" ] && readlink -f "$m"
    done
  done | awk '!seen[$0]++'
}
# The loops read from and write to files, not pipes: a pipeline's loop is a
# subshell, whose `exit 1` would not end the script.
files "$@" >"$tmp.files"
while read -r exe; do
  out=$(ldd "$exe") || { echo "runtime-packages: ldd $exe failed" >&2; exit 1; }
  if printf '%s\n' "$out" | grep -q 'not found'; then
    printf '%s\n' "$out" | grep 'not found' >&2
    echo "runtime-packages: $exe needs libraries that are not installed" >&2
    exit 1
  fi
  # "libx.so.1 => /path/libx.so.1 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
  printf '%s\n' "$out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done <"$tmp.files" >"$tmp.libs"
sort -u "$tmp.libs" -o "$tmp.libs"
while read -r lib; do
  # dpkg's database names a file by the path its package shipped: on a
  # merged-/usr system that may be /lib/... for /usr/lib/... or the other
  # way round, and a symlink's own name or its target's.
  real=$(readlink -f "$lib")
  pkg=""
  for p in "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"; do
    pkg=$(dpkg -S "$p" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
  done
  if [ -n "$pkg" ]; then echo "$pkg" >>"$tmp"; else echo "unpackaged: $real" >&2; fi
done <"$tmp.libs"
sort -u "$tmp"
