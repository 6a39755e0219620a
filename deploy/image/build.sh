#!/usr/bin/env bash
# Builds the container image ganflow:<version> (or <version>-cuda) with no
# registry and no container engine: the same two stages as the Dockerfile,
# each a Debian root made by mmdebstrap from this machine's own apt sources
# (as tests/fresh-machine.sh makes its root), packed as an OCI image layout
# by umoci.
#
#   1. build stage (thrown away): minbase + deploy/image/build-packages.txt;
#      the checkout (git archive: committed files plus tracked changes) is
#      configured as Release without tests, the three executables are built
#      and installed under /usr/local/bin with `cmake --install --strip`
#      (with --cuda, the CUDA backend module they open with dlopen as well,
#      /usr/local/lib/ganflow/libganflow_cuda.so), and
#      deploy/image/runtime-packages.sh lists the packages of the shared
#      libraries they load.
#   2. runtime stage: Debian's `essential` variant (no apt, no compiler, no
#      headers) + those packages + deploy/image/runtime-extra.txt, without
#      documentation, man pages or locales (copyright files kept); the
#      executables (and the CUDA module); a user ganflow (uid and gid 10001) owning
#      /var/lib/ganflow (the working directory; checkpoints under it) and
#      /var/cache/ganflow-serve; /data for datasets.
#   3. umoci: the root as one layer, and the image configuration (user
#      10001:10001, working directory, PATH, port 8080, volumes, labels, the
#      default command `ganflow-serve --listen 0.0.0.0:8080 --cache-dir
#      /var/cache/ganflow-serve`).
#
# Writes, in OUT (default .state/image):
#   oci/                     the OCI image layout, tag <version>[-cuda]
#   ganflow-TAG.oci.tar      the image alone as one archive, named
#                            ganflow:TAG (`podman load -i FILE`, `skopeo copy
#                            oci-archive:FILE docker://REGISTRY/ganflow:TAG`)
#   ganflow-TAG.packages     the runtime root's packages and versions
#   ganflow-TAG.txt          sizes and build time
#
#   deploy/image/build.sh [--cuda] [--out DIR] [--tag TAG]
#   --cuda     the CUDA variant: the build stage compiles with this
#              machine's CUDA toolkit, cuDNN and NCCL (under
#              $GANFLOW_CUDA_HOME, default /usr/local/cuda, bind-mounted
#              read-only), and their runtime libraries (the CUDA module's:
#              the executables link none) are copied into the image
#              (/usr/local/cuda/lib, on the loader's path); a host's
#              NVIDIA driver is mounted in by the container runtime
#              (the NVIDIA Container Toolkit), never part of the image
#   --tag TAG  the tag (default the project version from CMakeLists.txt,
#              plus -cuda with --cuda)
# Needs root, mmdebstrap and umoci (deploy/install-deps.sh installs them).
# Environment: GANFLOW_IMAGE_SOURCES (apt sources file, the machine's own),
# GANFLOW_IMAGE_WORK (the folder for its scratch roots, /var/tmp),
# GANFLOW_SOURCE_COMMIT (the commit of a source tree without .git).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=deploy/lib/debian-root.sh
. "$ROOT/deploy/lib/debian-root.sh"
START=$(date +%s)
say() { echo "=== image [$(($(date +%s) - START)) s]: $*"; }
die() { echo "image: $*" >&2; exit 1; }

CUDA=0 OUT="$ROOT/.state/image" TAG=""
while [ $# -gt 0 ]; do
  case $1 in
    --cuda) CUDA=1 ;;
    --out) [ $# -ge 2 ] || die "--out needs a folder"; OUT=$2; shift ;;
    --tag) [ $# -ge 2 ] || die "--tag needs a value"; TAG=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "image: unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case $TAG in *[!A-Za-z0-9_.-]*) die "--tag $TAG: letters, digits, '.', '_' and '-' only" ;; esac

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap's root mode, chroot)"
for t in mmdebstrap umoci; do
  command -v "$t" >/dev/null || die "$t not installed (deploy/install-deps.sh installs it)"
done

VERSION=$(gf_project_version "$ROOT")
[ -n "$VERSION" ] || die "no project version in CMakeLists.txt"
[ -n "$TAG" ] || TAG=$VERSION$([ "$CUDA" = 1 ] && echo -cuda || true)

CUDA_HOME=""
if [ "$CUDA" = 1 ]; then
  CUDA_HOME=$(readlink -f "${GANFLOW_CUDA_HOME:-/usr/local/cuda}")
  [ -x "$CUDA_HOME/bin/nvcc" ] || die "--cuda: no CUDA toolkit at $CUDA_HOME (GANFLOW_CUDA_HOME)"
  ls "$CUDA_HOME"/lib*/libcudnn.so.* >/dev/null 2>&1 || die "--cuda: no cuDNN under $CUDA_HOME"
  ls "$CUDA_HOME"/lib*/libnccl.so.* >/dev/null 2>&1 || die "--cuda: no NCCL under $CUDA_HOME"
fi

SOURCES=$(gf_apt_sources "${GANFLOW_IMAGE_SOURCES:-}") ||
  die "no apt sources file found (GANFLOW_IMAGE_SOURCES)"
SUITE=$(gf_suite)
gf_apt_opts
words() { sed 's/#.*//' "$1" | tr -s ' \n\t' ',' | sed 's/^,//; s/,$//'; }

WORK=$(mktemp -d "${GANFLOW_IMAGE_WORK:-/var/tmp}/ganflow-image.XXXXXX")
cleanup() {
  local rc=$?
  # A failed hook can leave the bind mount of the CUDA toolkit behind.
  gf_umount_under "$WORK"
  rm -rf "$WORK"
  [ "$rc" -eq 0 ] || echo "=== image: FAILED (exit $rc) after $(($(date +%s) - START)) s" >&2
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export SOURCE_DATE_EPOCH
if [ -e "$ROOT/.git" ] && command -v git >/dev/null; then
  # The checkout as it is now (a stash commit holds uncommitted changes to
  # tracked files; a clean tree archives HEAD), and the commit it came from.
  TREE=$(git -C "$ROOT" stash create 2>/dev/null || true)
  git -C "$ROOT" archive --format=tar "${TREE:-HEAD}" >"$WORK/src.tar"
  COMMIT=$(git -C "$ROOT" rev-parse HEAD)
  # Files dated by the commit, so that two builds of one commit match.
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct HEAD)
else
  # A source tree without git (a release archive, a copy): its files but
  # build output, virtual environments and local state; the commit, if
  # known, from GANFLOW_SOURCE_COMMIT.
  tar --exclude='./build*' --exclude='./.venv*' --exclude=./.state -C "$ROOT" -cf "$WORK/src.tar" .
  COMMIT=${GANFLOW_SOURCE_COMMIT:-}
  case $COMMIT in *[!0-9a-f]*) die "GANFLOW_SOURCE_COMMIT=$COMMIT is not a commit id" ;; esac
  SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
fi
JOBS=$(nproc)

CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DGF_BUILD_TESTS=OFF -DGF_SOURCE_COMMIT=$COMMIT"
# --cuda: the toolkit mounted in before the compile, out after it.
MOUNT_CUDA=() UMOUNT_CUDA=()
if [ "$CUDA" = 1 ]; then
  CMAKE_ARGS+=" -DGF_CUDA=ON -DGF_CUDNN=ON -DGF_NCCL=ON -DCMAKE_CUDA_COMPILER=$CUDA_HOME/bin/nvcc"
  MOUNT_CUDA=(--customize-hook="mkdir -p \"\$1$CUDA_HOME\" && mount --bind -o ro \"$CUDA_HOME\" \"\$1$CUDA_HOME\" && ln -sfn \"$CUDA_HOME\" \"\$1/usr/local/cuda\"")
  UMOUNT_CUDA=(--customize-hook="umount \"\$1$CUDA_HOME\"")
else
  CMAKE_ARGS+=" -DGF_CUDA=OFF"
fi
BUILD_SCRIPT="set -e
cmake -S /src -B /build $CMAKE_ARGS >/build.log 2>&1 || { cat /build.log; exit 1; }
cmake --build /build -j$JOBS --target ganflow-train ganflow-serve ganflow >>/build.log 2>&1 || { tail -50 /build.log; exit 1; }
DESTDIR=/out cmake --install /build --strip >>/build.log
export LD_LIBRARY_PATH=${CUDA_HOME:+$CUDA_HOME/lib:$CUDA_HOME/lib64}
/src/deploy/image/runtime-packages.sh /out/usr/local/bin/* >/out/runtime-packages.txt 2>/out/unpackaged.txt || { cat /out/unpackaged.txt; exit 1; }"

say "build stage: mmdebstrap $SUITE (minbase) + deploy/image/build-packages.txt, compile ($([ "$CUDA" = 1 ] && echo "CUDA from $CUDA_HOME" || echo CPU))"
mkdir -p "$WORK/stage"
mmdebstrap --quiet --variant=minbase "${GF_APTOPTS[@]}" \
  --include="$(words "$ROOT/deploy/image/build-packages.txt")" \
  --customize-hook='mkdir "$1/src"' \
  --customize-hook="tar-in $WORK/src.tar /src" \
  "${MOUNT_CUDA[@]}" \
  --customize-hook="chroot \"\$1\" sh -c '$BUILD_SCRIPT'" \
  "${UMOUNT_CUDA[@]}" \
  --customize-hook="copy-out /out $WORK/stage" \
  "$SUITE" "$WORK/build-root" "$SOURCES"
rm -rf "$WORK/build-root"
STAGE=$WORK/stage/out
for exe in ganflow ganflow-train ganflow-serve; do
  [ -x "$STAGE/usr/local/bin/$exe" ] || die "the build stage made no /usr/local/bin/$exe"
done
RUNTIME_PKGS=$( (cat "$STAGE/runtime-packages.txt"; words "$ROOT/deploy/image/runtime-extra.txt" | tr ',' '\n') |
  sort -u | tr '\n' ',' | sed 's/,$//')
say "runtime packages: ${RUNTIME_PKGS//,/ }"

# The CUDA variant's libraries: what the executables load (listed by the
# build stage as unpackaged) and what cuDNN and NVRTC open at run time.
CUDA_LIBS=()
if [ "$CUDA" = 1 ]; then
  mapfile -t CUDA_LIBS < <({
    sed -n 's/^unpackaged: //p' "$STAGE/unpackaged.txt"
    ls "$CUDA_HOME"/lib*/libcudnn*.so.[0-9]* "$CUDA_HOME"/lib*/libnvrtc*.so.[0-9]* \
       "$CUDA_HOME"/lib*/libnvJitLink.so.[0-9]* 2>/dev/null
  } | xargs -r readlink -f | sort -u)
  for l in "${CUDA_LIBS[@]}"; do
    case $l in "$CUDA_HOME"/*) ;; *) die "a library outside $CUDA_HOME that no package holds: $l" ;; esac
  done
elif [ -s "$STAGE/unpackaged.txt" ]; then
  cat "$STAGE/unpackaged.txt" >&2
  die "the executables load libraries that no Debian package holds"
fi

RUNTIME_HOOKS=(
  --customize-hook="tar-in $WORK/bin.tar /"
  --customize-hook='echo "ganflow:x:10001:10001:ganflow:/var/lib/ganflow:/bin/sh" >>"$1/etc/passwd"'
  --customize-hook='echo "ganflow:x:10001:" >>"$1/etc/group"'
  --customize-hook='echo "ganflow:!:0::::::" >>"$1/etc/shadow"'
  --customize-hook='mkdir -p "$1/var/lib/ganflow/checkpoints" "$1/var/cache/ganflow-serve" "$1/data" && chown -R 10001:10001 "$1/var/lib/ganflow" "$1/var/cache/ganflow-serve" && chmod 0755 "$1/data"'
)
# The executables, and the CUDA module installed beside them (--cuda).
INSTALLED=(./usr/local/bin)
[ -d "$STAGE/usr/local/lib" ] && INSTALLED+=(./usr/local/lib)
(cd "$STAGE" && tar --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" -cf "$WORK/bin.tar" "${INSTALLED[@]}")
if [ "$CUDA" = 1 ]; then
  mkdir -p "$WORK/cuda/usr/local/cuda/lib" "$WORK/cuda/etc/ld.so.conf.d"
  for l in "${CUDA_LIBS[@]}"; do
    cp -a "$l" "$WORK/cuda/usr/local/cuda/lib/"
    # Every name the loader and cuDNN look for (libx.so.9 -> libx.so.9.8.0).
    for n in "$(dirname "$l")"/*; do
      [ -L "$n" ] && [ "$(readlink -f "$n")" = "$l" ] && cp -a "$n" "$WORK/cuda/usr/local/cuda/lib/"
    done
  done
  echo /usr/local/cuda/lib >"$WORK/cuda/etc/ld.so.conf.d/ganflow-cuda.conf"
  (cd "$WORK/cuda" && tar --owner=0 --group=0 -cf "$WORK/cuda.tar" .)
  RUNTIME_HOOKS+=(--customize-hook="tar-in $WORK/cuda.tar /" --customize-hook='chroot "$1" ldconfig')
fi

say "runtime stage: mmdebstrap $SUITE (essential) + the runtime packages"
mmdebstrap --quiet --variant=essential "${GF_APTOPTS[@]}" \
  --include="$RUNTIME_PKGS" \
  "${GF_DPKG_SLIM[@]}" \
  "${RUNTIME_HOOKS[@]}" \
  --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package} \${Version}\n' >\"$WORK/packages\"" \
  --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/* "$1"/tmp/*' \
  "$SUITE" "$WORK/rootfs" "$SOURCES"
# The executables run in their root, as the image's user would start them.
for exe in ganflow ganflow-train ganflow-serve; do
  chroot --userspec=10001:10001 "$WORK/rootfs" "/usr/local/bin/$exe" --help >/dev/null 2>&1 ||
    die "$exe --help fails inside the runtime root (a library missing?)"
done
# The CUDA variant: the module is found and its libraries load; with no
# driver in the root the answer must be "no CUDA device".
if [ "$CUDA" = 1 ]; then
  [ -f "$WORK/rootfs/usr/local/lib/ganflow/libganflow_cuda.so" ] ||
    die "the CUDA image has no /usr/local/lib/ganflow/libganflow_cuda.so"
  msg=$(chroot --userspec=10001:10001 "$WORK/rootfs" /usr/local/bin/ganflow-train \
          --data /nonexistent --device cuda 2>&1 || true)
  case $msg in
    *"no CUDA device"*) ;;
    *) die "the CUDA module does not load inside the runtime root: $msg" ;;
  esac
fi

say "OCI layout: umoci"
mkdir -p "$OUT"
LAYOUT=$OUT/oci
[ -d "$LAYOUT" ] || umoci init --layout "$LAYOUT"
umoci new --image "$LAYOUT:$TAG"
umoci unpack --image "$LAYOUT:$TAG" "$WORK/bundle" >/dev/null
rmdir "$WORK/bundle/rootfs"
mv "$WORK/rootfs" "$WORK/bundle/rootfs"
umoci repack --image "$LAYOUT:$TAG" --history.created_by="deploy/image/build.sh" "$WORK/bundle"
umoci config --image "$LAYOUT:$TAG" --no-history \
  --author="ganflow" \
  --config.user=10001:10001 \
  --config.workingdir=/var/lib/ganflow \
  --config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.env=HOME=/var/lib/ganflow \
  --config.env=LANG=C.UTF-8 \
  --config.cmd=ganflow-serve --config.cmd=--listen --config.cmd=0.0.0.0:8080 \
  --config.cmd=--cache-dir --config.cmd=/var/cache/ganflow-serve \
  --config.exposedports=8080/tcp \
  --config.volume=/var/lib/ganflow/checkpoints \
  --config.volume=/var/cache/ganflow-serve \
  --config.stopsignal=SIGTERM \
  --config.label=org.opencontainers.image.title=ganflow \
  --config.label=org.opencontainers.image.version="$VERSION" \
  ${COMMIT:+--config.label=org.opencontainers.image.revision="$COMMIT"} \
  --config.label=org.opencontainers.image.base.name="debian:$SUITE" \
  --created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
umoci gc --layout "$LAYOUT"
# The archive holds this image alone, named ganflow:TAG (the name `podman
# load` gives it); the layout keeps every tag built into it.
cp -a "$LAYOUT" "$WORK/archive"
umoci ls --layout "$WORK/archive" | while read -r t; do
  [ "$t" = "$TAG" ] || umoci rm --image "$WORK/archive:$t"
done
umoci tag --image "$WORK/archive:$TAG" "ganflow:$TAG"
umoci rm --image "$WORK/archive:$TAG"
umoci gc --layout "$WORK/archive"
tar --owner=0 --group=0 -C "$WORK/archive" -cf "$OUT/ganflow-$TAG.oci.tar" .
cp "$WORK/packages" "$OUT/ganflow-$TAG.packages"

ROOTFS_MB=$(du -sm "$WORK/bundle/rootfs" | cut -f1)
LAYER_MB=$(( $(stat -c %s "$OUT/ganflow-$TAG.oci.tar") / 1048576 ))
SECS=$(($(date +%s) - START))
{
  echo "image: ganflow:$TAG (commit ${COMMIT:-unknown})"
  echo "unpacked root: $ROOTFS_MB MiB; OCI archive (gzip layer): $LAYER_MB MiB"
  echo "packages: $(wc -l <"$OUT/ganflow-$TAG.packages")"
  echo "build time: $SECS s on $(nproc) cores"
} | tee "$OUT/ganflow-$TAG.txt"
say "done: $LAYOUT:$TAG"
