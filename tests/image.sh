#!/usr/bin/env bash
# The container image, run for real: builds it with deploy/image/build.sh
# (or takes a built OCI layout), unpacks it with umoci into an OCI runtime
# bundle and runs its executables with runc, the OCI runtime Docker and
# Podman use, the way they would run the image: in its own root (read-only,
# as Kubernetes' readOnlyRootFilesystem), as its user (10001), with its
# environment and working directory, in its own PID, mount, IPC and UTS
# namespaces. What a container platform adds is added the same way: volumes
# (the dataset read-only at /data/fashion-mnist, a checkpoints volume, a
# scratch volume for the serve cache, a tmpfs at /tmp), and the host's
# network (as `--network host`), where the test's MLflow server listens on
# loopback.
#   1. ganflow-train trains a few steps of dcgan into an MLflow run and
#      registers the generator (version 1);
#   2. ganflow launch --nproc 2 starts 2 ranks (torchrun-style variables,
#      the tcp engine) and trains into a second run;
#   3. ganflow-serve loads that version from the registry, answers
#      /v2/health/ready and a generate request whose PNG libpng decodes
#      (tests/deploy/png_check), and exits 0 on SIGTERM;
# then all three again with Podman (the image loaded from its archive,
# `podman load`, run over runc with the same volumes, user and read-only
# root).
# Each step checks what MLflow recorded (run status, registered version).
#
#   tests/image.sh [--layout DIR:TAG] [--png-check EXE]
#   --layout     an OCI layout and tag built before (deploy/image/build.sh
#                writes .state/image/oci); default: build one now
#   --png-check  tests/deploy/png_check (default build/tests/deploy/png_check)
# Needs root, umoci, runc and podman (deploy/install-deps.sh installs them), the
# project's .venv (MLflow server) and Fashion-MNIST; exits 77 (skipped)
# without root.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=deploy/lib/debian-root.sh
. "$ROOT/deploy/lib/debian-root.sh"
START=$(date +%s)
say() { echo "=== image test [$(($(date +%s) - START)) s]: $*"; }
fail() { echo "=== image test: FAIL: $*" >&2; exit 1; }

LAYOUT="" PNG_CHECK="$ROOT/build/tests/deploy/png_check"
while [ $# -gt 0 ]; do
  case $1 in
    --layout) [ $# -ge 2 ] || fail "--layout needs DIR:TAG"; LAYOUT=$2; shift ;;
    --png-check) [ $# -ge 2 ] || fail "--png-check needs a file"; PNG_CHECK=$2; shift ;;
    *) echo "usage: tests/image.sh [--layout DIR:TAG] [--png-check EXE]" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then echo "image test: skipped: needs root (runc, mounts)"; exit 77; fi
for t in umoci runc curl python3; do
  command -v "$t" >/dev/null || fail "$t not installed (deploy/install-deps.sh installs it)"
done
[ -x "$PNG_CHECK" ] || fail "no png_check at $PNG_CHECK (build the tests first)"
FMNIST=/usr/share/datasets/fashion-mnist
[ -f "$FMNIST/train-images-idx3-ubyte.gz" ] || fail "no Fashion-MNIST in $FMNIST (dataset-fashion-mnist)"

WORK=$(mktemp -d "${GANFLOW_IMAGE_WORK:-/var/tmp}/ganflow-image-test.XXXXXX")
chmod 0755 "$WORK"
CONTAINERS=() PODMAN_CTRS=() PODMAN_IMAGES=()
cleanup() {
  local rc=$? c
  trap - EXIT INT TERM
  for c in "${CONTAINERS[@]}"; do
    runc kill "$c" KILL 2>/dev/null || true
    runc delete --force "$c" 2>/dev/null || true
  done
  for c in "${PODMAN_CTRS[@]}"; do podman rm -f "$c" >/dev/null 2>&1 || true; done
  for c in "${PODMAN_IMAGES[@]}"; do podman rmi -f "$c" >/dev/null 2>&1 || true; done
  GANFLOW_MLFLOW_STATE="$WORK/mlflow" "$ROOT/deploy/mlflow-local.sh" stop >/dev/null 2>&1 || true
  gf_umount_under "$WORK"
  if [ "$rc" -ne 0 ] && [ "${GANFLOW_IMAGE_KEEP:-0}" = 1 ]; then
    echo "image test: kept $WORK" >&2
  else
    rm -rf "$WORK"
  fi
  if [ "$rc" -eq 0 ]; then say "passed in $(($(date +%s) - START)) s"
  else echo "=== image test: FAILED (exit $rc) after $(($(date +%s) - START)) s" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "$LAYOUT" ]; then
  say "building the image (deploy/image/build.sh)"
  "$ROOT/deploy/image/build.sh" --out "$WORK/image"
  TAG=$(gf_project_version "$ROOT")
  LAYOUT="$WORK/image/oci:$TAG"
  ARCHIVE="$WORK/image/ganflow-$TAG.oci.tar"
else
  TAG=${LAYOUT##*:}
  ARCHIVE="$(dirname "${LAYOUT%:*}")/ganflow-$TAG.oci.tar"
fi

say "unpacking $LAYOUT (umoci)"
umoci unpack --image "$LAYOUT" "$WORK/bundle" >/dev/null
BUNDLE=$WORK/bundle
[ -x "$BUNDLE/rootfs/usr/local/bin/ganflow-serve" ] || fail "the image has no /usr/local/bin/ganflow-serve"
# Nothing of the build: no compiler, no headers.
for f in usr/bin/gcc usr/bin/cc usr/bin/cmake usr/include/png.h usr/include/curl/curl.h usr/bin/apt-get; do
  [ ! -e "$BUNDLE/rootfs/$f" ] || fail "the runtime image holds /$f"
done

say "MLflow server (deploy/mlflow-local.sh, a free loopback port)"
GANFLOW_MLFLOW_STATE="$WORK/mlflow" GANFLOW_MLFLOW_PORT=0 "$ROOT/deploy/mlflow-local.sh" start >/dev/null
URI=$(GANFLOW_MLFLOW_STATE="$WORK/mlflow" "$ROOT/deploy/mlflow-local.sh" uri)
say "MLflow at $URI"

# Volumes: host folders owned by the image's user, as a platform's volume
# with fsGroup/chown gives them.
mkdir -p "$WORK/vol/checkpoints" "$WORK/vol/cache" "$WORK/vol/run"
chown -R 10001:10001 "$WORK/vol"

# spec NAME ARGS...: writes $BUNDLE/config.json for one container: the
# image's own configuration (user, env, cwd, namespaces) as umoci made it,
# with ARGS as the process (as `docker run IMAGE ARGS...` replaces CMD),
# the host network, a read-only root and the volumes.
spec() {
  python3 - "$BUNDLE/config.json" "$URI" "$FMNIST" "$WORK/vol" "$@" <<'PY'
import json, sys
path, uri, fmnist, vol, name, *args = sys.argv[1:]
base = path + ".image"
try:
    c = json.load(open(base))
except FileNotFoundError:
    c = json.load(open(path))
    json.dump(c, open(base, "w"))
assert c["process"]["user"]["uid"] == 10001, c["process"]["user"]
c["process"]["args"] = args
c["process"]["terminal"] = False
c["process"]["env"] = [e for e in c["process"]["env"] if not e.startswith("MLFLOW_")]
c["process"]["env"] += ["MLFLOW_TRACKING_URI=" + uri, "MLFLOW_EXPERIMENT_NAME=image-test"]
c["root"]["readonly"] = True
c["hostname"] = name
ns = c["linux"]["namespaces"]
c["linux"]["namespaces"] = [n for n in ns if n["type"] != "network"]
def bind(src, dst, ro=False):
    c["mounts"].append({"destination": dst, "type": "bind", "source": src,
                        "options": ["rbind", "ro" if ro else "rw", "nosuid", "nodev"]})
bind(fmnist, "/data/fashion-mnist", ro=True)
bind(vol + "/checkpoints", "/var/lib/ganflow/checkpoints")
bind(vol + "/cache", "/var/cache/ganflow-serve")
bind(vol + "/run", "/run/ganflow")
c["mounts"].append({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                    "options": ["nosuid", "nodev", "mode=1777", "size=65536k"]})
# The host's resolver and hosts file, as engines bind them in.
for f in ("/etc/resolv.conf", "/etc/hosts"):
    bind(f, f, ro=True)
json.dump(c, open(path, "w"), indent=1)
PY
}

# The two engines, one interface:
#   ctr_run NAME ARGS...    runs a container to its end (output in
#                           $WORK/NAME.log), returns its exit status
#   ctr_start NAME ARGS...  starts one in the background
#   ctr_alive NAME          is it still running
#   ctr_term NAME           SIGTERM, waits up to 30 s, returns its status
# runc: the bundle's config.json from spec(). Podman (over runc: Debian's
# crun 1.8 refuses this host's hybrid cgroups) with the same volumes, user
# and read-only root; its ulimits given below the host's hard limits
# (Podman's defaults are above them and runc cannot raise them).
PODMAN_ARGS=(--runtime runc --network host --read-only --ulimit nofile=4096:4096
             --ulimit nproc=4096:4096 --tmpfs /tmp:size=64m
             -v "$FMNIST:/data/fashion-mnist:ro" -v "$WORK/vol/checkpoints:/var/lib/ganflow/checkpoints"
             -v "$WORK/vol/cache:/var/cache/ganflow-serve" -v "$WORK/vol/run:/run/ganflow"
             -e "MLFLOW_TRACKING_URI=$URI" -e MLFLOW_EXPERIMENT_NAME=image-test)
ctr_run() {
  local name=$1 rc=0; shift
  if [ "$ENGINE" = runc ]; then
    spec "$name" "$@"
    CONTAINERS+=("gf-$name-$$")
    runc run --bundle "$BUNDLE" "gf-$name-$$" >"$WORK/$name.log" 2>&1 </dev/null || rc=$?
    runc delete --force "gf-$name-$$" 2>/dev/null || true
  else
    podman run --rm --name "gf-$name-$$" "${PODMAN_ARGS[@]}" "$PODMAN_IMAGE" "$@" \
      >"$WORK/$name.log" 2>&1 </dev/null || rc=$?
  fi
  return "$rc"
}
ctr_start() {
  local name=$1; shift
  if [ "$ENGINE" = runc ]; then
    spec "$name" "$@"
    CONTAINERS+=("gf-$name-$$")
    runc run --bundle "$BUNDLE" "gf-$name-$$" >"$WORK/$name.log" 2>&1 </dev/null &
    CTR_PID=$!
  else
    PODMAN_CTRS+=("gf-$name-$$")
    podman run -d --name "gf-$name-$$" "${PODMAN_ARGS[@]}" "$PODMAN_IMAGE" "$@" >/dev/null
  fi
}
ctr_alive() {
  if [ "$ENGINE" = runc ]; then kill -0 "$CTR_PID" 2>/dev/null
  else [ "$(podman inspect -f '{{.State.Running}}' "gf-$1-$$" 2>/dev/null)" = true ]; fi
}
ctr_term() {
  local name=$1 rc=0 deadline=$(($(date +%s) + 30))
  if [ "$ENGINE" = runc ]; then
    runc kill "gf-$name-$$" TERM
    while kill -0 "$CTR_PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    kill -0 "$CTR_PID" 2>/dev/null && { echo "still running 30 s after SIGTERM" >&2; return 124; }
    wait "$CTR_PID" || rc=$?
    runc delete --force "gf-$name-$$" 2>/dev/null || true
  else
    podman stop -t 30 "gf-$name-$$" >/dev/null
    rc=$(podman inspect -f '{{.State.ExitCode}}' "gf-$name-$$")
    podman logs "gf-$name-$$" >"$WORK/$name.log" 2>&1 || true
    podman rm -f "gf-$name-$$" >/dev/null 2>&1 || true
  fi
  return "$rc"
}

mlflow_get() {  # mlflow_get PATH?QUERY: the JSON answer
  curl -fsS --max-time 10 "$URI/api/2.0/mlflow/$1"
}
json() {  # json EXPR: evaluates EXPR on the JSON on stdin (as j)
  python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}
runs_of() {  # the experiment's runs: "run_id status name" lines
  local exp
  exp=$(mlflow_get "experiments/get-by-name?experiment_name=image-test" | json 'j["experiment"]["experiment_id"]')
  curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' \
    -d "{\"experiment_ids\":[\"$exp\"],\"max_results\":100}" "$URI/api/2.0/mlflow/runs/search" |
    json '"\n".join(r["info"]["run_id"] + " " + r["info"]["status"] + " " + r["info"]["run_name"] for r in j.get("runs", []))'
}

TRAIN_ARGS=(--data idx:/data/fashion-mnist --model dcgan --width 8 --batch 16
            --log-every 5 --sample-every 10 --threads 1)
# scenarios: the three entrypoints in containers of $ENGINE; runs and the
# registered model are named after $LABEL (the engine and image).
scenarios() {
  local e=$LABEL model="image-dcgan-$LABEL"
  say "$e 1. ganflow-train: 20 steps, registered as $model"
  ctr_run train-$e ganflow-train "${TRAIN_ARGS[@]}" --steps 20 --run-name "train-$e" \
    --register-model "$model" ||
    { cat "$WORK/train-$e.log"; fail "ganflow-train exited non-zero in the image ($e)"; }
  grep -q " FINISHED train-$e$" <<<"$(runs_of)" || { runs_of; fail "no FINISHED run train-$e"; }
  local ver
  ver=$(mlflow_get "registered-models/get?name=$model" | json 'max(int(v["version"]) for v in j["registered_model"]["latest_versions"])')
  [ "$ver" = 1 ] || fail "$model has no version 1 (got $ver)"
  [ -d "$WORK/vol/checkpoints/image-test/train-$e" ] ||
    fail "no checkpoints in the volume (checkpoints/image-test/train-$e)"
  say "$e: run train-$e FINISHED, $model version 1 registered, checkpoints in the volume"

  say "$e 2. ganflow launch --nproc 2: 2 ranks, 10 steps"
  ctr_run launch-$e ganflow launch --nproc 2 -- ganflow-train "${TRAIN_ARGS[@]}" --steps 10 \
    --run-name "launch-$e" ||
    { cat "$WORK/launch-$e.log"; fail "ganflow launch exited non-zero in the image ($e)"; }
  grep -q " FINISHED launch-$e$" <<<"$(runs_of)" || { runs_of; fail "no FINISHED run launch-$e"; }
  local lid ws
  lid=$(runs_of | awk -v n="launch-$e" '$3 == n { print $1 }')
  ws=$(mlflow_get "runs/get?run_id=$lid" | json '{p["key"]: p["value"] for p in j["run"]["data"].get("params", [])}.get("world_size", "")')
  [ "$ws" = 2 ] || fail "run launch-$e has world_size=$ws, not 2"
  say "$e: run launch-$e FINISHED with world_size 2"

  say "$e 3. ganflow-serve: models:/$model/1"
  rm -f "$WORK/vol/run/port"
  ctr_start serve-$e ganflow-serve --listen 127.0.0.1:0 --cache-dir /var/cache/ganflow-serve \
    --port-file /run/ganflow/port --model "models:/$model/1" --poll 0
  local deadline=$(($(date +%s) + 60)) port=""
  while [ "$(date +%s)" -lt "$deadline" ]; do
    ctr_alive serve-$e || { cat "$WORK/serve-$e.log"; fail "ganflow-serve exited early ($e)"; }
    [ -s "$WORK/vol/run/port" ] && port=$(cat "$WORK/vol/run/port") &&
      curl -fsS --max-time 2 "http://127.0.0.1:$port/v2/health/ready" >/dev/null 2>&1 && break
    port=""
    sleep 0.2
  done
  [ -n "$port" ] || fail "ganflow-serve not ready within 60 s ($e)"
  curl -fsS --max-time 30 -D "$WORK/headers" -o "$WORK/grid-$e.png" \
    "http://127.0.0.1:$port/v1/models/$model/generate?seed=3&n=4" ||
    fail "the generate request failed ($e)"
  grep -qi '^X-Model-Version: 1' "$WORK/headers" || fail "the answer does not name version 1 ($e)"
  local info rc=0
  info=$("$PNG_CHECK" "$WORK/grid-$e.png") || fail "libpng refuses the served PNG ($e)"
  say "$e: served a PNG (libpng: $info), version 1; SIGTERM"
  ctr_term serve-$e || rc=$?
  [ "$rc" -eq 0 ] || { cat "$WORK/serve-$e.log"; fail "ganflow-serve exited $rc after SIGTERM ($e)"; }
}

CMD=$(python3 -c "import json; print(' '.join(json.load(open('$BUNDLE/config.json'))['process']['args']))")
[ "$CMD" = "ganflow-serve --listen 0.0.0.0:8080 --cache-dir /var/cache/ganflow-serve" ] ||
  fail "the image's default command is '$CMD'"
ENGINE=runc LABEL=runc scenarios

command -v podman >/dev/null || fail "podman not installed (deploy/install-deps.sh installs it)"
say "podman: loading $ARCHIVE"
PODMAN_IMAGE=localhost/ganflow-image-test:$TAG-$$
out=$(podman load -q -i "$ARCHIVE" 2>&1) || { echo "$out"; fail "podman load failed"; }
[ "$(printf '%s\n' "$out" | tail -1)" = "Loaded image: localhost/ganflow:$TAG" ] ||
  { echo "$out"; fail "podman load did not name the image ganflow:$TAG"; }
podman tag "localhost/ganflow:$TAG" "$PODMAN_IMAGE"
PODMAN_IMAGES+=("$PODMAN_IMAGE")
podman untag "$PODMAN_IMAGE" "localhost/ganflow:$TAG"
# podman_image_check IMAGE: the user and default command podman sees.
podman_image_check() {
  local user cmd
  user=$(podman image inspect -f '{{.Config.User}}' "$1")
  [ "$user" = 10001:10001 ] || fail "podman sees $1's user as '$user'"
  cmd=$(podman image inspect -f '{{join .Config.Cmd " "}}' "$1")
  [ "$cmd" = "ganflow-serve --listen 0.0.0.0:8080 --cache-dir /var/cache/ganflow-serve" ] ||
    fail "podman sees $1's default command as '$cmd'"
}
podman_image_check "$PODMAN_IMAGE"
ENGINE=podman LABEL=podman scenarios

# The Dockerfile, built by `podman build` as Docker would build it, on base
# images made here: Debian's official images are minbase roots (`slim`
# without documentation, man pages and locales), which mmdebstrap makes from
# the same mirror; no registry is reached. Like them, dpkg in these roots
# does not fsync each file it unpacks (force-unsafe-io: the official images'
# /etc/dpkg/dpkg.cfg.d/docker-apt-speedup). Then the three entrypoints again
# in what it built.
say "Dockerfile: base images (mmdebstrap minbase; slim without docs)"
gf_apt_opts
SUITE=$(gf_suite)
SOURCES=$(gf_apt_sources) || fail "no apt sources file found"
mmdebstrap --quiet --variant=minbase --dpkgopt=force-unsafe-io "${GF_APTOPTS[@]}" \
  "$SUITE" "$WORK/base.tar" "$SOURCES"
mmdebstrap --quiet --variant=minbase --dpkgopt=force-unsafe-io "${GF_APTOPTS[@]}" "${GF_DPKG_SLIM[@]}" \
  "$SUITE" "$WORK/base-slim.tar" "$SOURCES"
BASE=localhost/ganflow-image-test-debian:$SUITE-$$
PODMAN_IMAGES+=("$BASE" "$BASE-slim")
podman import -q "$WORK/base.tar" "$BASE" >/dev/null
podman import -q "$WORK/base-slim.tar" "$BASE-slim" >/dev/null
rm -f "$WORK/base.tar" "$WORK/base-slim.tar"
DF_IMAGE=localhost/ganflow-image-test-dockerfile:$TAG-$$
PODMAN_IMAGES+=("$DF_IMAGE")
say "Dockerfile: podman build (the checkout's tracked files as the context)"
# The context: the files git tracks (with uncommitted changes), as a fresh
# clone has them, not whatever else lies in this checkout.
mkdir "$WORK/context"
tree=$(git -C "$ROOT" stash create 2>/dev/null || true)   # empty for a clean tree
git -C "$ROOT" archive --format=tar "${tree:-HEAD}" | tar -x -C "$WORK/context"
before=$(podman images -q --filter dangling=true | sort)
rc=0
podman build --pull=never --network host --runtime runc \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  --build-arg BUILD_BASE="$BASE" --build-arg RUNTIME_BASE="$BASE-slim" \
  --build-arg GF_SOURCE_COMMIT="$(git -C "$ROOT" rev-parse HEAD)" \
  -t "$DF_IMAGE" "$WORK/context" >"$WORK/podman-build.log" 2>&1 || rc=$?
# The build stage's image is left dangling: remove it (and only it).
for id in $(comm -13 <(echo "$before") <(podman images -q --filter dangling=true | sort)); do
  PODMAN_IMAGES+=("$id")
done
[ "$rc" -eq 0 ] || { tail -40 "$WORK/podman-build.log"; fail "podman build of the Dockerfile failed"; }
say "Dockerfile: built, $(podman image inspect -f '{{.Size}}' "$DF_IMAGE" | awk '{ printf "%d MiB", $1 / 1048576 }')"
podman_image_check "$DF_IMAGE"
for f in /usr/bin/gcc /usr/bin/cmake /usr/include/png.h; do
  podman run --rm --runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    --entrypoint /bin/sh "$DF_IMAGE" -c "[ ! -e $f ]" || fail "the Dockerfile's image holds $f"
done
PODMAN_IMAGE=$DF_IMAGE ENGINE=podman LABEL=dockerfile scenarios
