#!/usr/bin/env bash
# slurm_fixture.sh - a private single-node Slurm for tests, run as the
# current user (root in CI), everything in one temporary folder: its own
# munged (own key, own socket), slurmctld and slurmd in the foreground on
# free loopback ports, no cgroups (proctrack/linuxproc, task/none), no
# accounting. Nothing outside the folder is read or written: the system's
# /etc/slurm, /etc/munge and /run/munge stay untouched, so it runs beside a
# real Slurm or none.
#
#   slurm_fixture.sh start DIR   starts it in DIR (created; must be empty or
#                                absent), waits until `sinfo` shows the node
#                                idle, writes DIR/env (`export SLURM_CONF=...`)
#                                and returns; exit 0 up, 77 not installed
#                                here (a binary missing: one line on stderr
#                                names it), 1 installed but not working (a
#                                daemon refused to start or exited, the
#                                munge round trip failed, the node not idle:
#                                the reason from its log on stderr)
#   slurm_fixture.sh stop DIR    ends the daemons it started there (by their
#                                pid files) and any job still running
#   slurm_fixture.sh run CMD...  start in a fresh folder under ${TMPDIR:-/tmp},
#                                run CMD with SLURM_CONF set, stop, remove the
#                                folder (kept when CMD or the start failed);
#                                exit status: CMD's, or start's 77/1
#
# 77 is for a machine without Slurm or munge: the test using it skips, and
# under CI=true the skip gate (tests/ci/ctest_skips.py) fails it, since CI
# installs both. Installed daemons that fail are a failure everywhere.
#
# Example: tests/support/slurm_fixture.sh run srun -n 2 hostname
#
# The folder path goes into unix socket names (munge.sock, 108 bytes at
# most), so keep it short: `run` makes it with mktemp under ${TMPDIR:-/tmp}.
set -uo pipefail

SLURM_FIXTURE_WAIT=${SLURM_FIXTURE_WAIT:-60} # seconds for the node to be idle

# die77: not installed (one line: the test's SKIP reason); die1: a failure.
die77() { echo "slurm_fixture: $*" >&2; exit 77; }
die1() { echo "slurm_fixture: $*" >&2; exit 1; }

# A free TCP port on 127.0.0.1 (bound then released; the daemons bind it
# right after, a race the loopback range makes unlikely).
free_port() {
  python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

# The lines of a daemon's log that say why it stopped: its fatal lines, else
# its last errors (a fresh slurmctld logs a few about missing state files),
# else its last lines.
why() {
  local log=$1
  [ -f "$log" ] || { echo "(no log $log)"; return; }
  if grep -qiE 'fatal' "$log"; then grep -iE 'fatal' "$log" | tail -n 4
  elif grep -qiE 'error' "$log"; then grep -iE 'error' "$log" | tail -n 8
  else tail -n 8 "$log"; fi
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  if [ -f "$dir/slurm.conf" ] && alive "$dir/slurmctld.pid"; then
    SLURM_CONF=$dir/slurm.conf timeout 10 scancel --full --quiet \
      --user="$(id -un)" >/dev/null 2>&1 || true
  fi
  # slurmd first (it ends its job steps), then slurmctld, then munged.
  local d pid
  for d in slurmd slurmctld munged; do
    [ -f "$dir/$d.pid" ] || continue
    pid=$(cat "$dir/$d.pid")
    if [ -z "$pid" ] || ! kill -TERM "$pid" 2>/dev/null; then
      rm -f "$dir/$d.pid"
      continue
    fi
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$dir/$d.pid"
  done
  # slurmstepd processes left behind by a slurmd that was killed.
  if [ -f "$dir/slurm.conf" ]; then
    for pid in $(pgrep -f "slurmstepd.*" 2>/dev/null); do
      if tr '\0' '\n' </proc/"$pid"/environ 2>/dev/null |
          grep -qx "SLURM_CONF=$dir/slurm.conf"; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done
  fi
}

start() {
  local dir=$1
  local b
  for b in munged mungekey slurmctld slurmd sinfo srun sbatch scontrol; do
    command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v "$b" >/dev/null 2>&1 ||
      die77 "$b not installed (deploy/install-deps.sh installs slurmctld, slurmd, slurm-client and munge)"
  done
  mkdir -p "$dir" || die1 "cannot create $dir"
  dir=$(cd "$dir" && pwd)
  [ -z "$(ls -A "$dir")" ] || die1 "$dir is not empty"
  # Others may pass through (munged wants its socket's folder searchable)
  # but not list or write; the key is 0600.
  chmod 711 "$dir"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  local me host cpus mem
  me=$(id -un)

  # munge: a key of our own and a daemon on our own socket.
  if ! mungekey --create --keyfile="$dir/munge.key" >"$dir/log/mungekey.log" 2>&1; then
    dd if=/dev/urandom of="$dir/munge.key" bs=1 count=1024 status=none ||
      die1 "cannot make a munge key"
  fi
  chmod 600 "$dir/munge.key"
  munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munged.seed" >"$dir/log/munged.out" 2>&1 ||
    die1 "munged (installed) did not start: $(why "$dir/log/munged.log"; cat "$dir/log/munged.out")"
  for _ in $(seq 1 50); do [ -S "$dir/munge.sock" ] && break; sleep 0.1; done
  [ -S "$dir/munge.sock" ] || die1 "munged (installed) made no socket: $(why "$dir/log/munged.log")"
  if command -v munge >/dev/null 2>&1; then
    munge --socket="$dir/munge.sock" -n 2>"$dir/log/munge-check.log" |
      unmunge --socket="$dir/munge.sock" >/dev/null 2>>"$dir/log/munge-check.log" ||
      die1 "munge round trip failed: $(cat "$dir/log/munge-check.log")"
  fi

  # The node as slurmd sees it. A runner with one CPU still gets two slots
  # (config_overrides: slurmd trusts slurm.conf), so 2-task tests can run.
  local line
  line=$(slurmd -C 2>"$dir/log/slurmd-C.log" | head -n 1) ||
    die1 "slurmd -C failed: $(cat "$dir/log/slurmd-C.log")"
  host=$(sed -n 's/.*NodeName=\([^ ]*\).*/\1/p' <<<"$line")
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$line")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$line")
  if [ -z "$host" ] || [ -z "$cpus" ] || [ -z "$mem" ]; then
    die1 "slurmd -C printed no node line: $line $(cat "$dir/log/slurmd-C.log")"
  fi
  [ "$cpus" -ge 2 ] || cpus=2

  local ctld_port d_port
  ctld_port=$(free_port) || die1 "no free port"
  d_port=$(free_port) || die1 "no free port"
  [ "$ctld_port" != "$d_port" ] || d_port=$(free_port)

  cat >"$dir/slurm.conf" <<EOF
# Written by tests/support/slurm_fixture.sh: a private single-node Slurm.
ClusterName=gftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=$me
SlurmdUser=$me
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: processes tracked through /proc, tasks not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
# Short timers: a test waits on them.
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=10
MinJobAge=300
MessageTimeout=20
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  cat >"$dir/env" <<EOF
export SLURM_CONF='$dir/slurm.conf'
EOF
  export SLURM_CONF=$dir/slurm.conf

  # The daemons in the foreground (-D), in the background of this shell,
  # out of its process group so that a ^C of the caller reaches them only
  # through stop.
  setsid slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 </dev/null &
  echo $! >"$dir/slurmctld.pid"
  setsid slurmd -D -N "$host" -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 </dev/null &
  echo $! >"$dir/slurmd.pid"

  local t0=$SECONDS state=""
  while [ $((SECONDS - t0)) -lt "$SLURM_FIXTURE_WAIT" ]; do
    alive "$dir/slurmctld.pid" ||
      { local r; r=$(why "$dir/log/slurmctld.log"; tail -n 5 "$dir/log/slurmctld.out")
        stop "$dir"; die1 "slurmctld (installed) exited: $r"; }
    alive "$dir/slurmd.pid" ||
      { local r; r=$(why "$dir/log/slurmd.log"; tail -n 5 "$dir/log/slurmd.out")
        stop "$dir"; die1 "slurmd (installed) exited: $r"; }
    state=$(sinfo -h -N -n "$host" -o '%T' 2>/dev/null | head -n 1)
    [ "$state" = idle ] && return 0
    sleep 0.5
  done
  local reason
  reason=$(sinfo -h -N -n "$host" -o '%T %E' 2>&1 | head -n 1)
  stop "$dir"
  die1 "node $host not idle after ${SLURM_FIXTURE_WAIT}s (state: ${reason:-none}); logs in $dir/log:
$(why "$dir/log/slurmctld.log")
$(why "$dir/log/slurmd.log")"
}

case "${1:-}" in
  start)
    [ $# -eq 2 ] || die1 "usage: $0 start DIR"
    start "$2"
    ;;
  stop)
    [ $# -eq 2 ] || die1 "usage: $0 stop DIR"
    stop "$2"
    ;;
  run)
    shift
    [ $# -ge 1 ] || die1 "usage: $0 run CMD..."
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/gfslurm.XXXXXX") || die1 "mktemp failed"
    rc=0
    ( start "$tmp" ) || rc=$?
    if [ "$rc" -ne 0 ]; then
      stop "$tmp"
      echo "slurm_fixture: logs kept in $tmp/log" >&2
      exit "$rc"
    fi
    trap 'stop "$tmp"' EXIT
    trap 'exit 143' TERM INT
    SLURM_CONF=$tmp/slurm.conf "$@" || rc=$?
    stop "$tmp"
    trap - EXIT
    if [ "$rc" -eq 0 ]; then rm -rf "$tmp"; else
      echo "slurm_fixture: logs kept in $tmp/log" >&2
    fi
    exit "$rc"
    ;;
  *)
    die1 "usage: $0 start DIR | stop DIR | run CMD..."
    ;;
esac
