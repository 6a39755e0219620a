#!/usr/bin/env bash
# The README's two commands on a bare Debian root, as a new user runs them.
#
# Builds a minimal Debian root with mmdebstrap from this machine's own apt
# sources file, copies in what lets it reach the same package registries as
# this machine (CA certificates, apt network settings, pip configuration)
# and the checkout (git archive: committed files plus tracked changes, no
# build output), bind-mounts /proc, /sys and /dev, and inside the root runs
#   1. ./deploy/quickstart.sh with a short training, to the served PNG;
#   2. the test targets' build and a smoke subset of ctest labels;
#   3. with GANFLOW_FRESH_IMAGE_OUT=DIR, deploy/image/build.sh, whose
#      image (OCI layout and archive) it copies to DIR.
# Nothing of this machine's installed packages, builds or .venv goes in: every
# package the two commands need must come from deploy/install-deps.sh.
# No CUDA inside: the build must configure and pass without it.
#
# Needs root and mmdebstrap (deploy/install-deps.sh installs it); exits 77
# (skipped) without them. Every process started inside is stopped and every
# mount undone on any exit; the root is deleted unless the stage failed and
# GANFLOW_FRESH_KEEP=1.
#   GANFLOW_FRESH_DIR      the folder in which a new one holds the root (/var/tmp)
#   GANFLOW_FRESH_SOURCES  apt sources file (the machine's own)
#   GANFLOW_FRESH_STEPS    quickstart training steps (40)
#   GANFLOW_FRESH_LABELS   ctest label regex of the smoke subset (unit|fuzz|deploy;
#                          the label heavy is left out)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
START=$(date +%s)
STEPS=${GANFLOW_FRESH_STEPS:-40}
LABELS=${GANFLOW_FRESH_LABELS:-unit|fuzz|deploy}

say() { echo "=== fresh-machine [$(($(date +%s) - START)) s]: $*"; }

if [ "$(id -u)" -ne 0 ]; then echo "fresh-machine: skipped: needs root (chroot, mounts)"; exit 77; fi
if ! command -v mmdebstrap >/dev/null; then echo "fresh-machine: skipped: mmdebstrap not installed"; exit 77; fi

# shellcheck source=deploy/lib/debian-root.sh
. "$ROOT/deploy/lib/debian-root.sh"
# The machine's own sources: a deb822 file, or the one-line format.
SOURCES=$(gf_apt_sources "${GANFLOW_FRESH_SOURCES:-}") ||
  { echo "fresh-machine: no apt sources file found" >&2; exit 1; }
SUITE=$(gf_suite)

# A new folder of its own (deleted at the end), never one the caller named.
WORK=$(mktemp -d "${GANFLOW_FRESH_DIR:-/var/tmp}/ganflow-fresh.XXXXXX")
CHROOT="$WORK/root"

# Processes whose root directory is the chroot: the MLflow server and
# ganflow-serve the quickstart leaves running, and anything a failure left.
chroot_pids() {
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    case "$r" in "$CHROOT" | "$CHROOT"/*) echo "${p#/proc/}" ;; esac
  done
}

cleanup() {
  local rc=$? pids m
  trap - EXIT INT TERM
  pids=$(chroot_pids)
  if [ -n "$pids" ]; then
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 50); do pids=$(chroot_pids); [ -z "$pids" ] && break; sleep 0.2; done
    [ -n "$pids" ] && { kill -KILL $pids 2>/dev/null || true; sleep 0.5; }
  fi
  # Deepest mounts first (/dev/pts, /dev/shm under /dev).
  for m in $(awk -v c="$CHROOT" '$2 == c || index($2, c "/") == 1 { print $2 }' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "fresh-machine: could not unmount $m" >&2
  done
  if awk -v c="$CHROOT" 'index($2, c "/") == 1 { f = 1 } END { exit !f }' /proc/mounts; then
    echo "fresh-machine: mounts remain under $CHROOT; not deleting it" >&2
  elif [ "$rc" -ne 0 ] && [ "${GANFLOW_FRESH_KEEP:-0}" = 1 ]; then
    echo "fresh-machine: root kept for inspection: $CHROOT" >&2
  else
    rm -rf "$WORK"
  fi
  if [ "$rc" -eq 0 ]; then say "passed in $(($(date +%s) - START)) s"
  else echo "=== fresh-machine: FAILED (exit $rc) after $(($(date +%s) - START)) s" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# apt settings of this machine that decide how it reaches its mirrors
# (proxies, a frozen snapshot's Valid-Until), passed on as they are.
gf_apt_opts

say "mmdebstrap $SUITE (minbase) from $SOURCES into $CHROOT"
# dpkg without an fsync per unpacked file (--dpkgopt stays in the root's
# /etc/dpkg/dpkg.cfg.d), as in Debian's official container images
# (docker-apt-speedup): this root is deleted at the end, and
# install-deps.sh's packages go in faster.
mmdebstrap --quiet --variant=minbase --dpkgopt=force-unsafe-io "${GF_APTOPTS[@]}" \
  "$SUITE" "$CHROOT" "$SOURCES"

# What lets the root reach the registries this machine reaches: CA
# certificates (the local ones survive the ca-certificates package's
# regeneration of the bundle), name resolution, pip's configuration.
mkdir -p "$CHROOT/etc/ssl/certs" "$CHROOT/usr/local/share/ca-certificates"
[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$CHROOT/etc/ssl/certs/"
if [ -d /usr/local/share/ca-certificates ]; then
  cp -r /usr/local/share/ca-certificates/. "$CHROOT/usr/local/share/ca-certificates/"
fi
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf" 2>/dev/null || true
cp /etc/hosts "$CHROOT/etc/hosts" 2>/dev/null || true
for f in /etc/pip.conf /etc/xdg/pip/pip.conf "$HOME/.config/pip/pip.conf" "$HOME/.pip/pip.conf"; do
  if [ -f "$f" ]; then
    dest="$CHROOT${f/#$HOME//root}"
    mkdir -p "$(dirname "$dest")"
    cp "$f" "$dest"
  fi
done
# The environment passed in: a login's basics, and the proxy and pip
# variables this machine's registries may need. Nothing else of the host.
ENVV=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
      LANG=C.UTF-8 TERM=dumb CI=true)
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY \
         PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_CERT PIP_DEFAULT_TIMEOUT; do
  [ -n "${!v:-}" ] && ENVV+=("$v=${!v}")
done

# The checkout: tracked files as they are now (a stash commit includes
# uncommitted changes to them; a clean tree archives HEAD).
TREE=$(git -C "$ROOT" stash create 2>/dev/null || true)
mkdir -p "$CHROOT/root/ganflow"
git -C "$ROOT" archive --format=tar "${TREE:-HEAD}" | tar -x -C "$CHROOT/root/ganflow"

for d in proc sys dev; do
  mkdir -p "$CHROOT/$d"
  mount --rbind "/$d" "$CHROOT/$d"
  mount --make-rslave "$CHROOT/$d" 2>/dev/null || true
done

# Runs a command inside the root. In the background with a wait, so that a
# signal to this script runs its traps at once instead of after the command.
in_root() {
  chroot "$CHROOT" /usr/bin/env -i "${ENVV[@]}" /bin/bash -c "cd /root/ganflow && $1" &
  wait $!
}

say "README command 1: ./deploy/quickstart.sh ($STEPS training steps, free ports)"
in_root "GANFLOW_QUICKSTART_STEPS=$STEPS GANFLOW_MLFLOW_PORT=0 GANFLOW_SERVE_PORT=0 ./deploy/quickstart.sh"

PNG="$CHROOT/root/ganflow/.state/serve/fashion-dcgan-seed0.png"
[ -s "$PNG" ] || { echo "fresh-machine: the quickstart left no PNG at ${PNG#$CHROOT}" >&2; exit 1; }
sig=$(head -c 8 "$PNG" | od -An -tx1 | tr -d ' \n')
[ "$sig" = 89504e470d0a1a0a ] || { echo "fresh-machine: ${PNG#$CHROOT} is not a PNG (starts $sig)" >&2; exit 1; }
# IHDR: width and height, big-endian, at bytes 16..23.
read -r w h < <(od -An -tu1 -j16 -N8 "$PNG" |
  awk '{ print $1*16777216 + $2*65536 + $3*256 + $4, $5*16777216 + $6*65536 + $7*256 + $8 }')
say "served PNG: ${w}x${h}, $(stat -c %s "$PNG") bytes"
[ "$w" -gt 0 ] && [ "$h" -gt 0 ] || { echo "fresh-machine: PNG has no pixels" >&2; exit 1; }
in_root "./deploy/mlflow-local.sh stop; kill \$(cat .state/serve/ganflow-serve.pid) 2>/dev/null || true"

say "README command 2's build and a smoke subset of ctest (-L '$LABELS' -LE heavy)"
# Passive OpenMP waiting, as tests/run-all.sh runs every suite: ctest -j
# oversubscribes the cores, where libgomp's spinning waiters burn them.
in_root "cmake --build build -j\$(nproc) && cd build && OMP_WAIT_POLICY=passive ctest --output-on-failure -j\$(nproc) --timeout 600 -L '$LABELS' -LE heavy"


# The container image, built on this bare root with only what install-deps
# installed (mmdebstrap, umoci); the OCI layout and archive are copied out
# for tests/image.sh to run (tests/run-all.sh passes the folder).
if [ -n "${GANFLOW_FRESH_IMAGE_OUT:-}" ]; then
  say "deploy/image/build.sh on the bare root"
  in_root "GANFLOW_SOURCE_COMMIT=$(git -C "$ROOT" rev-parse HEAD) ./deploy/image/build.sh --out /root/image-out"
  mkdir -p "$GANFLOW_FRESH_IMAGE_OUT"
  cp -a "$CHROOT/root/image-out/." "$GANFLOW_FRESH_IMAGE_OUT/"
  say "image: $(grep -h 'unpacked root' "$GANFLOW_FRESH_IMAGE_OUT"/ganflow-*.txt)"
fi
