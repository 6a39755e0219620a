#!/bin/sh
# device_check.sh - one short GPU check for a lent machine that has the CUDA
# driver, python3 with PyTorch (and its nvidia-* wheels: cuDNN, cuBLAS,
# NCCL), compute-sanitizer, but none of ganflow's build dependencies.
#
# Make the bundle here first (it builds Release for sm_90 into build-gpu and
# writes .devgpu/, which .git/info/exclude ignores):
#     bench/cuda/make_bundle.sh            # JOBS, CUDA_ARCHS, BUILD_DIR
# then run on the device machine, from the repository root, carrying
# ".devgpu":
#     sh .devgpu/check.sh                  # results under $OUT
# (device tool: command "sh .devgpu/check.sh", carry [".devgpu"], timeout_s
# 480; bench/cuda/device_check.sh itself also works, reading .devgpu/).
# .devgpu/bundle.tar.gz holds the stripped gpu-test binaries and bench_cuda
# (bin/), the CUDA backend module they open (lib/ganflow/, where they look
# from bin/ as installed executables do), the libraries they need that
# such a machine lacks (lib/: oneDNN, cJSON), ones it most likely has
# (lib-fallback/: used only where ldconfig does not know them) and
# MANIFEST.txt. cuDNN, cuBLAS and NCCL come from
# python3's nvidia wheel folders, else /usr/local/cuda; cudart is static.
#
# Order (each step's log is written under $OUT as it goes; the whole run
# keeps inside CHECK_BUDGET_S, default 400 s):
#   env.log      GPU, driver, library folders, ldd of the binaries, versions
#   tests.log    the ctest 'gpu' tests that need no MLflow server or network
#                file (kernels_cuda_ops, kernels_cuda_gan, kernels_cuda_gan_ops,
#                kernels_cuda_augment, kernels_cuda_cond_ops,
#                kernels_cuda_resample, model_cuda_r1,
#                kernels_cuda_resume,
#                kernels_comm_nccl), each under timeout 120
#   memcheck.log compute-sanitizer memcheck on test_kernels_cuda_ops, or on
#                MEMCHECK_TEST (a binary of bin/) (150 s)
#   bench.log    bench/cuda/run.sh --models dcgan28 --batches "64 256"
#                --steps 50 (fp32 and tf32, PyTorch eager beside)
#   forward.log  the generator forward of ganflow-serve (bench_forward) on
#                CUDA and on the CPU, PyTorch eager beside, for the model
#                directories packed under models/ (make_bundle.sh MODELS=1)
#   summary.txt  the table printed last
# CHECK_STEPS (default "tests memcheck bench forward") picks the steps;
# BENCH_MODELS (default dcgan28) the bench step's models.
# Not run: quality_inception_cuda (needs the 87 MB Inception weights and
# Fashion-MNIST, over the transfer limit), serve_cuda (needs MLflow).
set -u
root=$(pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$here/bundle.tar.gz" ] || [ -d "$here/bin" ] || here=$root/.devgpu
OUT=${OUT:-/tmp/devgpu-out}
mkdir -p "$OUT"
budget=${CHECK_BUDGET_S:-400}
steps=" ${CHECK_STEPS:-tests memcheck bench forward} "
want() { case $steps in *" $1 "*) return 0 ;; esac; return 1; }
t0=$(date +%s)
left() { echo $((budget - ($(date +%s) - t0))); }
min() { if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi; }
summary=$OUT/summary.txt
: >"$summary"
say() { echo "$*"; echo "$*" >>"$summary"; }

# ---- unpack ------------------------------------------------------------------
dest=${DEVGPU_DIR:-/tmp/devgpu}
rm -rf "$dest" && mkdir -p "$dest/use-fallback" "$dest/work" || exit 1
if [ -f "$here/bundle.tar.gz" ]; then
  tar -xzf "$here/bundle.tar.gz" -C "$dest" || { echo "cannot unpack $here/bundle.tar.gz"; exit 1; }
elif [ -d "$here/bin" ]; then
  cp -a "$here/bin" "$here/lib" "$dest/" && { [ ! -d "$here/lib-fallback" ] || cp -a "$here/lib-fallback" "$dest/"; }
else
  echo "no bundle beside $0: run bench/cuda/make_bundle.sh first"; exit 1
fi
bin=$dest/bin

# ---- libraries -----------------------------------------------------------------
env_log=$OUT/env.log
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm)"
  nvidia-smi 2>&1 | head -20
} >"$env_log"
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "nvidia-smi: ${gpu:-none}"
# Fallback libraries only where the system lacks them.
ldc=$(command -v ldconfig || echo /sbin/ldconfig)
for f in "$dest"/lib-fallback/*; do
  [ -e "$f" ] || continue
  n=$(basename "$f")
  if ! "$ldc" -p 2>/dev/null | grep -q "^[[:space:]]*$n "; then
    ln -s "$f" "$dest/use-fallback/$n"; echo "fallback used: $n" >>"$env_log"
  fi
done
# cuDNN / cuBLAS / NCCL / nvrtc: the folders of python3's nvidia wheels.
nvdirs=$(python3 - <<'EOF' 2>>"$env_log"
import glob, os, sys
dirs = []
try:
    import nvidia
    for p in nvidia.__path__:
        for f in sorted(glob.glob(os.path.join(p, "**", "lib*.so*"), recursive=True)):
            d = os.path.dirname(f)
            if d not in dirs:
                dirs.append(d)
except Exception as e:
    print("no nvidia wheels:", e, file=sys.stderr)
print(":".join(dirs))
EOF
)
nvdirs=$(echo "$nvdirs" | tail -1)
cudadirs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && cudadirs="$cudadirs:$d"
done
orig_ldp=${LD_LIBRARY_PATH:-}
LD_LIBRARY_PATH="$dest/lib:$dest/use-fallback${nvdirs:+:$nvdirs}$cudadirs${orig_ldp:+:$orig_ldp}"
export LD_LIBRARY_PATH
# bench/cuda/run.sh runs PyTorch too: only bench_cuda gets the path above.
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LD_LIBRARY_PATH" "$bin/bench_cuda" >"$dest/bench_cuda.sh"
chmod +x "$dest/bench_cuda.sh"
{
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  LD_LIBRARY_PATH=$orig_ldp python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version(), "gpu", torch.cuda.is_available() and torch.cuda.get_device_name(0))' 2>&1 | tail -1
  cat "$dest/MANIFEST.txt" 2>/dev/null
  for b in "$bin"/* "$dest"/lib/ganflow/*.so; do
    echo "== ldd $(basename "$b")"
    ldd "$b" 2>&1 | grep -E "not found|dnnl|cudnn|cublas|nccl|cjson|crypto|gomp|OpenCL|stdc"
  done
} >>"$env_log" 2>&1
missing=$(ldd "$bin"/* "$dest"/lib/ganflow/*.so 2>&1 | grep "not found" | sort -u | tr -s ' \t' ' ' | tr '\n' ';')
echo "libraries not found: ${missing:-none}"
grep '^torch ' "$env_log"

# ---- tests -----------------------------------------------------------------------
tests_log=$OUT/tests.log
: >"$tests_log"
say "$(printf '%-22s %-8s %s' step result seconds)"
run_test() { # name, then the command
  name=$1; shift
  to=$(min 120 "$(left)")
  if [ "$to" -lt 10 ]; then say "$(printf '%-22s %-8s %s' "$name" NOTRUN "(budget)")"; return; fi
  s=$(date +%s)
  echo "===== $name: $* (timeout $to)" >>"$tests_log"
  (cd "$dest/work" && timeout -k 5 "$to" "$@") >>"$tests_log" 2>&1
  rc=$?
  d=$(($(date +%s) - s))
  case $rc in
    0) r=PASS ;; 77) r=SKIP ;; 124|137) r=TIMEOUT ;; *) r="FAIL($rc)" ;;
  esac
  echo "===== $name: rc=$rc $r ${d}s" >>"$tests_log"
  say "$(printf '%-22s %-8s %s' "$name" "$r" "$d")"
}
if want tests; then
  run_test kernels_cuda_ops "$bin/test_kernels_cuda_ops"
  run_test kernels_cuda_gan "$bin/test_kernels_cuda_gan"
  run_test kernels_cuda_gan_ops "$bin/test_kernels_cuda_gan_ops" "$dest/golden/gan_ops.safetensors"
  run_test kernels_cuda_augment "$bin/test_kernels_cuda_augment" "$dest/golden/augment.safetensors"
  run_test kernels_cuda_cond_ops "$bin/test_kernels_cuda_cond_ops" "$dest/golden/cond.safetensors"
  run_test kernels_cuda_resample "$bin/test_kernels_cuda_resample" "$dest/golden/resample.safetensors"
  run_test model_cuda_r1 "$bin/test_cuda_r1"
  run_test kernels_cuda_resume "$bin/test_kernels_resume" cuda
  run_test kernels_comm_nccl "$bin/test_kernels_comm_nccl"
fi

# ---- memcheck on the ops test ------------------------------------------------------
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
     /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
mc_log=$OUT/memcheck.log
to=$(min 150 $(($(left) - 100)))
if ! want memcheck; then
  :
elif [ -z "$cs" ]; then
  say "$(printf '%-22s %-8s %s' memcheck_cuda_ops NOTRUN "(no compute-sanitizer)")"
elif [ "$to" -lt 30 ]; then
  say "$(printf '%-22s %-8s %s' memcheck_cuda_ops NOTRUN "(budget)")"
else
  s=$(date +%s)
  (cd "$dest/work" && timeout -k 5 "$to" "$cs" --tool memcheck --error-exitcode 99 \
     "$bin/${MEMCHECK_TEST:-test_kernels_cuda_ops}") >"$mc_log" 2>&1
  rc=$?
  d=$(($(date +%s) - s))
  case $rc in
    0) r=PASS ;; 77) r=SKIP ;; 99) r=ERRORS ;; 124|137) r=TIMEOUT ;; *) r="FAIL($rc)" ;;
  esac
  # Keep the log under the 16 MiB a returned file may have.
  if [ "$(wc -c <"$mc_log")" -gt 15000000 ]; then
    head -c 15000000 "$mc_log" >"$mc_log.t" && mv "$mc_log.t" "$mc_log"
  fi
  say "$(printf '%-22s %-8s %s  %s' "memcheck ${MEMCHECK_TEST:-test_kernels_cuda_ops}" "$r" "$d" "$(grep 'ERROR SUMMARY' "$mc_log" | tail -1)")"
fi

# ---- bench ---------------------------------------------------------------------------
bench_log=$OUT/bench.log
to=$(($(left) - 5))
if ! want bench; then
  :
elif [ "$to" -lt 30 ]; then
  say "$(printf '%-22s %-8s %s' bench NOTRUN "(budget)")"
else
  s=$(date +%s)
  LD_LIBRARY_PATH=$orig_ldp BENCH_CUDA=$dest/bench_cuda.sh PYTHONUNBUFFERED=1 timeout -k 5 "$to" \
    sh "$root/bench/cuda/run.sh" --models "${BENCH_MODELS:-dcgan28}" --batches "64 256" --steps 50 >"$bench_log" 2>&1
  rc=$?
  d=$(($(date +%s) - s))
  case $rc in 0) r=DONE ;; 124|137) r=TIMEOUT ;; *) r="FAIL($rc)" ;; esac
  say "$(printf '%-22s %-8s %s' bench "$r" "$d")"
fi

# ---- generator forward (ganflow-serve's pass) ---------------------------------------
fw_log=$OUT/forward.log
if want forward && [ -x "$bin/bench_forward" ] && [ -d "$dest/models" ]; then
  s=$(date +%s)
  for md in "$dest"/models/*; do
    [ "$(left)" -gt 20 ] || { echo "forward: budget" >>"$fw_log"; break; }
    m=$(basename "$md")
    {
      echo "===== $m"
      timeout -k 5 "$(min 90 "$(left)")" "$bin/bench_forward" --model-dir "$md" --device cuda \
        --batch "1 16 64 256" --seconds 1 --dump-n 16 --dump-latents "$dest/work/$m.z" \
        --dump-f32 "$dest/work/$m.f32"
      LD_LIBRARY_PATH=$orig_ldp PYTHONUNBUFFERED=1 timeout -k 5 "$(min 90 "$(left)")" \
        python3 "$root/bench/serve/torch_forward.py" "$md" --device cuda --to-host \
        --batch "1 16 64 256" --seconds 1 --latents "$dest/work/$m.z" --dump-f32 "$dest/work/$m.f32"
      timeout -k 5 "$(min 60 "$(left)")" "$bin/bench_forward" --model-dir "$md" --device cpu \
        --threads 1 --batch "1 16" --seconds 1
    } >>"$fw_log" 2>&1
  done
  say "$(printf '%-22s %-8s %s' forward DONE "$(($(date +%s) - s))")"
fi

# First lines of trouble, then the table (the reply carries the end).
if [ -f "$tests_log" ]; then
  grep -E "CHECK failed|REQUIRE failed|FAIL|rc=[1-9]|error while loading|undefined symbol" "$tests_log" \
    | grep -v "rc=77" | head -12 | sed 's|^|tests.log: |'
fi
if [ -f "$mc_log" ]; then
  grep -E "^========= (Invalid|Program hit|Error|Uninitialized|Address|Saved host)" "$mc_log" | head -6 | sed 's|^|memcheck.log: |'
fi
if [ -f "$bench_log" ]; then
  grep -iE "error|traceback|not found|failed" "$bench_log" | head -6 | sed 's|^|bench.log: |'
fi
echo "gpu: ${gpu:-none}; $(grep '^torch ' "$env_log")" >>"$summary"
[ -f "$bench_log" ] && grep -E '^(ganflow|pytorch) ' "$bench_log" >>"$summary"
[ -f "$fw_log" ] && grep -E '^(=====|ganflow batch|torch batch|# batch-inv|# max|# model)' "$fw_log" >>"$summary"
echo
echo "== summary ($(($(date +%s) - t0)) s; logs in \$OUT: env.log tests.log memcheck.log bench.log summary.txt)"
cat "$summary"
