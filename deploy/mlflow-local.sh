#!/usr/bin/env bash
# Runs a local MLflow tracking server on loopback: a SQLite (default) or
# PostgreSQL backend and a local artifact directory, all under a state folder
# (default .state/mlflow, which git ignores).
#
#   deploy/mlflow-local.sh [--backend sqlite|postgres] start|stop|status|uri
#
# Environment (all optional):
#   GANFLOW_MLFLOW_STATE   state folder                  (.state/mlflow)
#   GANFLOW_MLFLOW_PORT    port; 0 picks a free one      (5000)
#   GANFLOW_MLFLOW_BACKEND sqlite or postgres (the same as --backend)  (sqlite)
#   GANFLOW_MLFLOW_AUTH    1: --app-name basic-auth; user admin, password from
#                          GANFLOW_MLFLOW_ADMIN_PASSWORD, else a random one,
#                          kept in STATE/admin_password (MLflow 3.x refuses
#                          the old default password1234)
#   GANFLOW_MLFLOW_WORKERS server workers                (2)
#   GANFLOW_MLFLOW_JOBS    1: MLflow 3's job runner too (GenAI jobs; off)
#   GANFLOW_MLFLOW_PG_USER the system user PostgreSQL runs as when this script
#                          runs as root (postgres, made by Debian's package)
# A restart with the same state folder reuses the port it had, and the
# backend: a state folder keeps the backend it was made with.
#
# postgres: a PostgreSQL of its own from Debian's postgresql package
# (/usr/lib/postgresql/<newest>/bin), data in STATE/pg/data, listening on
# 127.0.0.1 only on a free port (STATE/pg/port), its unix socket in
# STATE/pg/run (in /tmp/ganflow-pg-<hash> when that path is too long for a
# socket); role and database `mlflow`, whose generated password is in
# STATE/pg_password (mode 0600). Debian's own `main` cluster and service are
# neither used nor touched. initdb and postgres refuse root, so as root they
# run as GANFLOW_MLFLOW_PG_USER (STATE/pg is then that user's); if that user
# cannot reach the state folder (a checkout under a private home), the data
# go to /var/tmp/ganflow-pg-<hash of the state path> and STATE/pg links there.
# `stop` stops MLflow and then PostgreSQL.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${GANFLOW_MLFLOW_STATE:-$ROOT/.state/mlflow}
MLFLOW=${GANFLOW_MLFLOW_BIN:-$ROOT/.venv/bin/mlflow}
PY=$(dirname "$MLFLOW")/python
WORKERS=${GANFLOW_MLFLOW_WORKERS:-2}
BACKEND=${GANFLOW_MLFLOW_BACKEND:-}

die() { echo "mlflow-local: $*" >&2; exit 1; }

CMD=""
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) [ $# -ge 2 ] || die "--backend needs sqlite or postgres"; BACKEND=$2; shift 2 ;;
    --backend=*) BACKEND=${1#--backend=}; shift ;;
    start|stop|status|uri) [ -z "$CMD" ] || die "one command at a time"; CMD=$1; shift ;;
    *) CMD=bad; shift ;;
  esac
done

pid_alive() { [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; }
healthy() { curl -sf --max-time 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1; }

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# ---- PostgreSQL (--backend postgres) ----
PG=$STATE/pg                 # data, run (socket), port, log: PostgreSQL's user's
PG_PASSWORD=$STATE/pg_password

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] ||
    die "no PostgreSQL under /usr/lib/postgresql: run deploy/install-deps.sh first"
  echo "$d"
}

# Runs a PostgreSQL program as the user PostgreSQL runs as.
PG_AS=()
pg_user_setup() {
  if [ "$(id -u)" -eq 0 ]; then
    local u=${GANFLOW_MLFLOW_PG_USER:-postgres}
    id -u "$u" >/dev/null 2>&1 ||
      die "running as root and no user '$u' to run PostgreSQL as (Debian's postgresql package makes 'postgres')"
    PG_AS=(runuser -u "$u" --)
    PG_OWNER=$u
  else
    PG_AS=()
    PG_OWNER=$(id -un)
  fi
}
# From /: the caller's folder may be closed to that user.
pg_run() { (cd / && "${PG_AS[@]}" "$@"); }

pg_running() { [ -f "$PG/data/postmaster.pid" ] && pg_run "$PGBIN/pg_ctl" -D "$PG/data" status >/dev/null 2>&1; }

# A new cluster: data folder, role and database `mlflow` with a new password.
pg_init() {
  rm -rf "$PG" "$PG_PASSWORD"
  mkdir -p "$PG"
  if [ "$(id -u)" -eq 0 ]; then
    chown "$PG_OWNER:" "$PG"
    if ! pg_run test -w "$PG"; then
      # The user cannot reach the state folder: its data go to /var/tmp.
      local real h
      real=$(cd "$STATE" && pwd -P)
      h=$(printf '%s' "$real" | sha256sum | cut -c1-16)
      rmdir "$PG"
      rm -rf "/var/tmp/ganflow-pg-$h"
      install -d -m 0700 -o "$PG_OWNER" -g "$(id -gn "$PG_OWNER")" "/var/tmp/ganflow-pg-$h"
      ln -s "/var/tmp/ganflow-pg-$h" "$PG"
      PG=/var/tmp/ganflow-pg-$h
    fi
  fi
  chmod 0700 "$PG"
  (umask 077; head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PG_PASSWORD")
  # Local (socket) connections: peer, for this script's setup as the
  # superuser; TCP on loopback: SCRAM passwords.
  pg_run "$PGBIN/initdb" -D "$PG/data" --auth-local=peer --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$STATE/pg-initdb.log" 2>&1 ||
    { cat "$STATE/pg-initdb.log" >&2; die "initdb failed"; }
}

pg_start() {
  PGBIN=$(pg_bin)
  pg_user_setup
  [ -f "$PG_PASSWORD" ] && [ -d "$PG/data" ] || pg_init
  [ -L "$PG" ] && PG=$(readlink "$PG")
  if pg_running; then return 0; fi
  # The socket's path must fit in 107 bytes: a deep state folder gets a
  # socket folder under /tmp named after it instead.
  local sock=$PG/run
  if [ ${#sock} -gt 80 ]; then
    sock=/tmp/ganflow-pg-$(printf '%s' "$PG" | sha256sum | cut -c1-16)
  fi
  pg_run mkdir -p -m 0700 "$sock"
  local port try
  for try in 1 2 3; do
    if [ -f "$PG/port" ]; then port=$(cat "$PG/port"); else port=$(free_port); fi
    # Loopback only, and no unix socket but our own folder's.
    if pg_run "$PGBIN/pg_ctl" -D "$PG/data" -l "$PG/postgres.log" -w -t 60 \
         -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories='$sock'" \
         start >/dev/null; then
      pg_run sh -c "echo $port >'$PG/port'"
      break
    fi
    # A port someone took meanwhile: another one.
    pg_run rm -f "$PG/port"
    [ "$try" = 3 ] && { tail -20 "$PG/postgres.log" >&2; die "PostgreSQL did not start"; }
  done
  # Role and database (idempotent); the password goes in on stdin.
  pg_run "$PGBIN/psql" -X -h "$sock" -p "$port" -d postgres -qAt -v ON_ERROR_STOP=1 \
    >/dev/null <<SQL || die "could not create the mlflow role and database"
SELECT 'CREATE ROLE mlflow LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mlflow')\\gexec
ALTER ROLE mlflow PASSWORD '$(cat "$PG_PASSWORD")';
SELECT 'CREATE DATABASE mlflow OWNER mlflow' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'mlflow')\\gexec
SQL
}

pg_stop() {
  [ -e "$PG" ] || return 0
  [ -L "$PG" ] && PG=$(readlink "$PG")
  [ -f "$PG/data/postmaster.pid" ] || return 0
  PGBIN=$(pg_bin)
  pg_user_setup
  if pg_run "$PGBIN/pg_ctl" -D "$PG/data" -m fast -w -t 60 stop >/dev/null 2>&1; then
    echo "PostgreSQL stopped"
  fi
}

pg_uri() {
  [ -L "$PG" ] && PG=$(readlink "$PG")
  echo "postgresql://mlflow:$(cat "$PG_PASSWORD")@127.0.0.1:$(cat "$PG/port")/mlflow"
}

# The backend of this state folder: the one it was made with, else the asked one.
backend_of_state() {
  local had=""
  [ -f "$STATE/backend" ] && had=$(cat "$STATE/backend")
  [ -z "$had" ] && [ -f "$STATE/mlflow.db" ] && had=sqlite
  if [ -n "$had" ] && [ -n "$BACKEND" ] && [ "$had" != "$BACKEND" ]; then
    die "$STATE holds a $had backend, not $BACKEND: use another GANFLOW_MLFLOW_STATE"
  fi
  echo "${had:-${BACKEND:-sqlite}}"
}

cmd_start() {
  [ -x "$MLFLOW" ] || die "no MLflow at $MLFLOW: run deploy/install-deps.sh first"
  case "${BACKEND:-sqlite}" in sqlite|postgres) ;; *) die "unknown backend '$BACKEND' (sqlite or postgres)" ;; esac
  mkdir -p "$STATE/artifacts"
  STATE=$(cd "$STATE" && pwd); PG=$STATE/pg; PG_PASSWORD=$STATE/pg_password
  local backend; backend=$(backend_of_state)
  echo "$backend" >"$STATE/backend"
  if pid_alive && healthy "$(cat "$STATE/port")"; then
    echo "MLflow already running: http://127.0.0.1:$(cat "$STATE/port")"
    return 0
  fi
  local store="sqlite:///$STATE/mlflow.db"
  if [ "$backend" = postgres ]; then
    pg_start
    # Passed in the environment, so the password stays out of ps.
    store=$(pg_uri)
  fi
  local port
  if [ -f "$STATE/port" ]; then
    port=$(cat "$STATE/port")
  else
    port=${GANFLOW_MLFLOW_PORT:-5000}
    [ "$port" = 0 ] && port=$(free_port)
  fi
  echo "$port" >"$STATE/port"
  local args=(server --host 127.0.0.1 --port "$port" --workers "$WORKERS"
              --artifacts-destination "$STATE/artifacts")
  if [ "${GANFLOW_MLFLOW_AUTH:-0}" = 1 ]; then
    if [ ! -f "$STATE/admin_password" ]; then
      (umask 077; printf '%s' "${GANFLOW_MLFLOW_ADMIN_PASSWORD:-$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')}" >"$STATE/admin_password")
    fi
    cat >"$STATE/basic_auth.ini" <<INI
[mlflow]
default_permission = READ
database_uri = sqlite:///$STATE/basic_auth.db
admin_username = admin
admin_password = $(cat "$STATE/admin_password")
authorization_function = mlflow.server.auth:authenticate_request_basic_auth
INI
    export MLFLOW_AUTH_CONFIG_PATH="$STATE/basic_auth.ini"
    [ -f "$STATE/secret_key" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$STATE/secret_key"
    MLFLOW_FLASK_SERVER_SECRET_KEY=$(cat "$STATE/secret_key")
    export MLFLOW_FLASK_SERVER_SECRET_KEY
    args+=(--app-name basic-auth)
  fi
  # MLflow 3's job runner (a huey queue and seven consumer processes, each
  # importing mlflow: about 20 s of CPU at every start, and polling after)
  # serves its GenAI jobs (judges, trace rollups); ganflow's runs, models and
  # registry do not use it. GANFLOW_MLFLOW_JOBS=1 keeps it.
  local jobs=false
  [ "${GANFLOW_MLFLOW_JOBS:-0}" = 1 ] && jobs=true
  # setsid: the server and its workers form one process group, stopped together.
  (cd "$STATE" && MLFLOW_SERVER_ENABLE_JOB_EXECUTION=$jobs MLFLOW_BACKEND_STORE_URI=$store exec setsid "$MLFLOW" "${args[@]}" >>"$STATE/server.log" 2>&1 </dev/null) &
  echo $! >"$STATE/pid"
  local i
  for i in $(seq 1 240); do
    if healthy "$port"; then
      echo "http://127.0.0.1:$port" >"$STATE/uri"
      echo "MLflow tracking server: http://127.0.0.1:$port (UI at the same address)"
      return 0
    fi
    pid_alive || { tail -20 "$STATE/server.log" >&2; die "server exited during start-up"; }
    sleep 0.5
  done
  tail -20 "$STATE/server.log" >&2
  die "server did not answer /health within 120 s"
}

cmd_stop() {
  if pid_alive; then
    local pid; pid=$(cat "$STATE/pid")
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    # The port is free once no process of the group is left listening.
    for i in $(seq 1 40); do
      healthy "$(cat "$STATE/port")" || break
      sleep 0.25
    done
    echo "MLflow stopped"
  else
    echo "MLflow not running"
  fi
  rm -f "$STATE/pid" "$STATE/uri"
  pg_stop
}

cmd_status() {
  if pid_alive && healthy "$(cat "$STATE/port")"; then
    echo "running: http://127.0.0.1:$(cat "$STATE/port")"
    if [ "$(cat "$STATE/backend" 2>/dev/null)" = postgres ]; then
      local p=$PG; [ -L "$p" ] && p=$(readlink "$p")
      echo "backend: PostgreSQL on 127.0.0.1:$(cat "$p/port" 2>/dev/null)"
    fi
  else
    echo "not running"; return 3
  fi
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  uri) cat "$STATE/uri" 2>/dev/null || die "not running" ;;
  *) echo "usage: $0 [--backend sqlite|postgres] start|stop|status|uri" >&2; exit 2 ;;
esac
