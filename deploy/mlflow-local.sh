#!/usr/bin/env bash
# Runs a local MLflow tracking server on loopback: SQLite backend and a local
# artifact directory, both under a state folder (default .state/mlflow, which
# git ignores).
#
#   deploy/mlflow-local.sh start|stop|status|uri
#
# Environment (all optional):
#   GANFLOW_MLFLOW_STATE   state folder                  (.state/mlflow)
#   GANFLOW_MLFLOW_PORT    port; 0 picks a free one      (5000)
#   GANFLOW_MLFLOW_AUTH    1: --app-name basic-auth; user admin, password from
#                          GANFLOW_MLFLOW_ADMIN_PASSWORD, else a random one,
#                          kept in STATE/admin_password (MLflow 3.x refuses
#                          the old default password1234)
#   GANFLOW_MLFLOW_WORKERS server workers                (2)
# A restart with the same state folder reuses the port it had.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${GANFLOW_MLFLOW_STATE:-$ROOT/.state/mlflow}
MLFLOW=${GANFLOW_MLFLOW_BIN:-$ROOT/.venv/bin/mlflow}
PY=$(dirname "$MLFLOW")/python
WORKERS=${GANFLOW_MLFLOW_WORKERS:-2}

die() { echo "mlflow-local: $*" >&2; exit 1; }

pid_alive() { [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; }
healthy() { curl -sf --max-time 2 "http://127.0.0.1:$1/health" >/dev/null 2>&1; }

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd_start() {
  [ -x "$MLFLOW" ] || die "no MLflow at $MLFLOW: run deploy/install-deps.sh first"
  mkdir -p "$STATE/artifacts"
  if pid_alive && healthy "$(cat "$STATE/port")"; then
    echo "MLflow already running: http://127.0.0.1:$(cat "$STATE/port")"
    return 0
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
              --backend-store-uri "sqlite:///$STATE/mlflow.db"
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
  # setsid: the server and its workers form one process group, stopped together.
  (cd "$STATE" && exec setsid "$MLFLOW" "${args[@]}" >>"$STATE/server.log" 2>&1 </dev/null) &
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
}

cmd_status() {
  if pid_alive && healthy "$(cat "$STATE/port")"; then
    echo "running: http://127.0.0.1:$(cat "$STATE/port")"
  else
    echo "not running"; return 3
  fi
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  uri) cat "$STATE/uri" 2>/dev/null || die "not running" ;;
  *) echo "usage: $0 start|stop|status|uri" >&2; exit 2 ;;
esac
