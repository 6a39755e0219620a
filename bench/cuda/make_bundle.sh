#!/bin/sh
# make_bundle.sh - builds the gpu tests and bench_cuda (Release, CUDA + cuDNN
# + NCCL, no MPI) and packs them for a lent GPU machine that lacks ganflow's
# build dependencies: .devgpu/bundle.tar.gz (bin/: stripped binaries;
# lib/ganflow/: the CUDA backend module they open with dlopen, where they
# look for it, bin/../lib/ganflow; lib/: the libraries such a machine
# lacks; lib-fallback/: ones it most likely has,
# used there only where ldconfig does not know them; MANIFEST.txt) and
# .devgpu/check.sh (a copy of device_check.sh). .devgpu/ is added to
# .git/info/exclude. cuDNN, cuBLAS, NCCL and the driver are not packed: the
# device's PyTorch wheels and driver bring them (cudart is linked statically).
#   bench/cuda/make_bundle.sh        # BUILD_DIR (build-gpu), CUDA_ARCHS (90), JOBS (2)
# Then, on the device machine, from the repository root, carrying ".devgpu":
#   sh .devgpu/check.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
out=$root/.devgpu
targets="test_kernels_cuda_ops test_kernels_cuda_gan test_kernels_cuda_gan_ops test_kernels_cuda_augment test_kernels_cuda_cond_ops test_kernels_cuda_resample test_cuda_r1 test_kernels_resume test_kernels_comm_nccl bench_cuda bench_forward make_model_dir"

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGF_CUDA=ON -DGF_CUDNN=ON \
        -DGF_NCCL=ON -DGF_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
        -DGF_BUILD_TESTS=ON >/dev/null
fi
# shellcheck disable=SC2086
nice -n 10 cmake --build "$build" -j "${JOBS:-2}" --target $targets

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/lib-fallback"
for t in $targets; do
  f=$(find "$build/tests" "$build/bench" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] || { echo "no $t under $build" >&2; exit 1; }
  cp "$f" "$stage/bin/$t"
  strip --strip-debug "$stage/bin/$t"
done
# The CUDA backend module (built with gf_kernels), beside bin/ as installed.
mod=$(find "$build" -path "*/ganflow/libganflow_cuda.so" -type f | head -1)
[ -n "$mod" ] || { echo "no libganflow_cuda.so under $build" >&2; exit 1; }
mkdir -p "$stage/lib/ganflow"
cp "$mod" "$stage/lib/ganflow/"
strip --strip-debug "$stage/lib/ganflow/libganflow_cuda.so"

# Model directories for the forward step (untrained weights: timing only):
# the quickstart's dcgan at 28x28 and a dcgan at 64x64x3.
mkdir -p "$stage/models" "$stage/golden"
cp "$root/tests/kernels/golden/gan_ops.safetensors" \
   "$root/tests/kernels/golden/augment.safetensors" \
   "$root/tests/kernels/golden/cond.safetensors" \
   "$root/tests/kernels/golden/resample.safetensors" "$stage/golden/"
"$stage/bin/make_model_dir" "$stage/models/dcgan28" dcgan 28 1
"$stage/bin/make_model_dir" "$stage/models/dcgan64" dcgan 64 3
manifest=$stage/MANIFEST.txt
{
  echo "ganflow $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- . 2>/dev/null || echo '+dirty') built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  grep -E "^CMAKE_CUDA_ARCHITECTURES|^GF_(CUDA|CUDNN|NCCL|MPI):" "$build/CMakeCache.txt" | tr '\n' ' '; echo
} >"$manifest"
# Every library the binaries load, by soname (ldd lists the transitive ones).
ldd "$stage"/bin/* "$stage"/lib/ganflow/*.so | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
while read -r so path; do
  case $so in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libcuda.so.*|\
    libstdc++.so.*|libgcc_s.so.*)
      echo "system: $so" >>"$manifest" ;;
    libcudnn*|libcublas*|libnccl*|libcudart*|libnvrtc*|libnvJitLink*|libcufft*|libcurand*|libcusparse*|libcusolver*)
      echo "device (python3's nvidia wheels or /usr/local/cuda): $so" >>"$manifest" ;;
    libcrypto.so.*|libssl.so.*|libgomp.so.*|libOpenCL.so.*|libz.so.*)
      cp -L "$path" "$stage/lib-fallback/$so"; echo "lib-fallback: $so <- $path" >>"$manifest" ;;
    *)
      cp -L "$path" "$stage/lib/$so"; echo "lib: $so <- $path" >>"$manifest" ;;
  esac
done

# Nothing may be missing but what the device side brings.
miss=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$stage/lib:$stage/lib-fallback" \
       ldd "$stage"/bin/* "$stage"/lib/ganflow/*.so | grep "not found" | grep -vE "libcudnn|libcublas|libnccl|libcuda\.so" || true)
[ -z "$miss" ] || { echo "missing from the bundle:" >&2; echo "$miss" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
tar -czf "$out/bundle.tar.gz" -C "$stage" bin lib lib-fallback models golden MANIFEST.txt
cp "$here/device_check.sh" "$out/check.sh"
chmod +x "$out/check.sh"
excl=$(git -C "$root" rev-parse --git-common-dir)/info/exclude
case $excl in /*) ;; *) excl=$root/$excl ;; esac
mkdir -p "$(dirname "$excl")"
grep -qx '/.devgpu/' "$excl" 2>/dev/null || echo '/.devgpu/' >>"$excl"

cat "$manifest"
du -b "$out"/* | awk '{printf "%8.2f MiB  %s\n", $1 / 1048576, $2}'
tracked=$(git -C "$root" ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
total=$(( tracked + $(du -cb "$out"/* | tail -1 | cut -f1) ))
awk -v t="$tracked" -v a="$total" 'BEGIN { printf "tracked files %.2f MiB; with the bundle %.2f MiB (limit 64)\n", t / 1048576, a / 1048576 }'
