#!/usr/bin/env bash
# slurm_fixture.sh - a private Slurm for tests, run as the current user
# (root in CI), everything in one temporary folder: its own munged (own key,
# own socket), slurmctld and slurmd in the foreground, no cgroups
# (proctrack/linuxproc, task/none), no accounting. Nothing outside the
# folder is read or written: the system's /etc/slurm, /etc/munge and
# /run/munge stay untouched, so it runs beside a real Slurm or none.
#
# Two shapes:
#   - one node: slurmctld and slurmd on free loopback ports of this host
#     (start, run);
#   - several nodes (cluster-start): on the test cluster of
#     tests/support/cluster.sh (GF_CLUSTER_DIR, already up): slurmctld in
#     the hub's namespace, one `slurmd -N <host>` inside each host's network
#     and UTS namespaces (NodeName = NodeHostname = the host's name, NodeAddr
#     = its address; Debian's slurm-wlm is built with
#     --enable-multiple-slurmd, so %n keeps their spool, log and pid files
#     apart), munged here: its socket is a file in the folder, which every
#     namespace sees, so one munged serves every daemon and client. Slurm's
#     clients reach slurmctld only from inside the cluster: run them with
#     `cluster.sh exec hub|nodeK env SLURM_CONF=DIR/slurm.conf CMD...`.
#
#   slurm_fixture.sh start DIR   one node, in DIR (created; must be empty or
#                                absent); waits until `sinfo` shows the node
#                                idle, writes DIR/env (`export SLURM_CONF=...`)
#                                and returns; exit 0 up, 77 not installed
#                                here (a binary missing: one line on stderr
#                                names it), 1 installed but not working (a
#                                daemon refused to start or exited, the
#                                munge round trip failed, the node not idle:
#                                the reason from its log on stderr)
#   slurm_fixture.sh cluster-start DIR
#                                several nodes: one per host of the cluster
#                                in $GF_CLUSTER_DIR (`cluster.sh hosts`), in
#                                partition `debug`; waits until every node
#                                is idle; DIR/env as for start; exit codes
#                                as for start
#   slurm_fixture.sh node-start DIR HOST
#                                cluster: (re)starts HOST's slurmd - a node
#                                given back after `cluster.sh kill HOST` -
#                                and waits until Slurm shows it idle again
#                                (ReturnToService=2 returns a DOWN node to
#                                service when its slurmd registers)
#   slurm_fixture.sh stop DIR    ends the jobs (scancel), then the daemons it
#                                started there (by their pid files, checked
#                                to be its own), slurmstepd processes and,
#                                on a cluster, any process of a job still in
#                                a host; either shape
#   slurm_fixture.sh run CMD...  one node: start in a fresh folder under
#                                ${TMPDIR:-/tmp}, run CMD with SLURM_CONF set,
#                                stop, remove the folder (kept when CMD or
#                                the start failed); exit status: CMD's, or
#                                start's 77/1
#
# 77 is for a machine without Slurm or munge: the test using it skips, and
# under CI=true the skip gate (tests/ci/ctest_skips.py) fails it, since CI
# installs both. Installed daemons that fail are a failure everywhere.
#
# Example: tests/support/slurm_fixture.sh run srun -n 2 hostname
#
# The cluster's timers are short, for tests that lose a node: a node whose
# slurmd is gone is DOWN after SlurmdTimeout (SLURM_FIXTURE_SLURMD_TIMEOUT,
# 4 s) and the pings that take that long to fail (MessageTimeout, 3 s,
# each): about 12 s after the loss here. A requeued job may start again
# cred_expire (5 s) after its requeue (Slurm's default is 120 s), once the
# old start's processes are gone (KillWait, 5 s); the scheduler runs every
# second.
#
# The folder path goes into unix socket names (munge.sock, 108 bytes at
# most), so keep it short: `run` makes it with mktemp under ${TMPDIR:-/tmp}.
set -uo pipefail

SLURM_FIXTURE_WAIT=${SLURM_FIXTURE_WAIT:-60} # seconds for the nodes to be idle
SLURM_FIXTURE_SLURMD_TIMEOUT=${SLURM_FIXTURE_SLURMD_TIMEOUT:-4} # cluster: SlurmdTimeout
CLUSTER_SH=$(dirname "$(readlink -f "$0")")/cluster.sh

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

# Whether the pid in pid file $1 runs, and is a process of folder $2: its
# command line names the folder (a daemon's names a file there; a child
# not yet exec'd has this script's, which names the folder too). A pid
# reused after the daemon was killed - cluster.sh kill - is someone else's.
alive() {
  local pid
  [ -f "$1" ] && pid=$(cat "$1") && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null &&
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$2"
}

# alive, asked again for half a second before it counts as dead: a daemon
# given SlurmctldPidFile / SlurmdPidFile rewrites the pid file this script
# wrote (truncated, then written), and a check between the two reads it
# empty.
alive_settled() {
  local i
  for i in 1 2 3 4 5; do
    alive "$1" "$2" && return 0
    sleep 0.1
  done
  return 1
}

# The cluster's state folder for a cluster folder (empty for one node).
cluster_of() { cat "$1/cluster" 2>/dev/null; }

# A Slurm client command against the fixture in $dir: here for one node,
# in the hub's namespace for a cluster (only there is slurmctld reachable).
client() {
  local dir=$1 gfc
  shift
  gfc=$(cluster_of "$dir")
  if [ -n "$gfc" ]; then
    GF_CLUSTER_DIR=$gfc SLURM_CONF=$dir/slurm.conf "$CLUSTER_SH" exec hub "$@"
  else
    SLURM_CONF=$dir/slurm.conf "$@"
  fi
}

# TERM to the daemons of pid files "$@" (those still alive and ours), up
# to 5 s for them all to exit, then KILL; the pid files go.
end_daemons() {
  local dir=$1 f pid pids=()
  shift
  for f in "$@"; do
    [ -f "$f" ] || continue
    if alive "$f" "$dir"; then
      pid=$(cat "$f")
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    fi
    rm -f "$f"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  local left
  for _ in $(seq 1 50); do
    left=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1; done
    [ "$left" = 0 ] && return 0
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  return 0
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  local gfc
  gfc=$(cluster_of "$dir")
  if [ -f "$dir/slurm.conf" ] && alive "$dir/slurmctld.pid" "$dir"; then
    client "$dir" timeout 10 scancel --full --quiet --user="$(id -un)" \
      >/dev/null 2>&1 || true
  fi
  # slurmd first (it ends its job steps), then slurmctld, then munged.
  end_daemons "$dir" "$dir"/slurmd.pid "$dir"/slurmd-*.pid
  end_daemons "$dir" "$dir/slurmctld.pid"
  # slurmstepd processes left behind by a slurmd that was killed and, on a
  # cluster, the processes of a job still in a host (they carry SLURM_CONF
  # from the submitting shell). The root namespace's are never touched
  # there: the test that submitted the job has the same SLURM_CONF.
  if [ -f "$dir/slurm.conf" ]; then
    local f pid mine
    mine=$(readlink /proc/$$/ns/net)
    while read -r f; do
      pid=${f#/proc/}
      pid=${pid%/environ}
      [ "$pid" = $$ ] && continue
      if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] ||
          { [ -n "$gfc" ] && [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" != "$mine" ]; }; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    done < <(grep -lzxF "SLURM_CONF=$dir/slurm.conf" /proc/[0-9]*/environ 2>/dev/null)
  fi
  end_daemons "$dir" "$dir/munged.pid"
}

# The binaries, or 77 naming the missing one.
need_slurm() {
  local b
  for b in munged mungekey slurmctld slurmd sinfo srun sbatch scontrol; do
    command -v "$b" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v "$b" >/dev/null 2>&1 ||
      die77 "$b not installed (deploy/install-deps.sh installs slurmctld, slurmd, slurm-client and munge)"
  done
}

# Makes the folder (DIR must be empty or absent) and starts munged in it;
# prints the folder's absolute path.
prepare() {
  local dir=$1
  mkdir -p "$dir" || die1 "cannot create $dir"
  dir=$(cd "$dir" && pwd)
  [ -z "$(ls -A "$dir")" ] || die1 "$dir is not empty"
  # Others may pass through (munged wants its socket's folder searchable)
  # but not list or write; the key is 0600.
  chmod 711 "$dir"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"

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
  echo "$dir"
}

# The node as slurmd sees this machine: NODE_HOST, NODE_CPUS, NODE_MEM. A
# machine with one CPU still gets two slots (config_overrides: slurmd
# trusts slurm.conf), so 2-task tests can run.
probe_node() {
  local dir=$1 line
  line=$(slurmd -C 2>"$dir/log/slurmd-C.log" | head -n 1) ||
    die1 "slurmd -C failed: $(cat "$dir/log/slurmd-C.log")"
  NODE_HOST=$(sed -n 's/.*NodeName=\([^ ]*\).*/\1/p' <<<"$line")
  NODE_CPUS=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$line")
  NODE_MEM=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$line")
  if [ -z "$NODE_HOST" ] || [ -z "$NODE_CPUS" ] || [ -z "$NODE_MEM" ]; then
    die1 "slurmd -C printed no node line: $line $(cat "$dir/log/slurmd-C.log")"
  fi
  [ "$NODE_CPUS" -ge 2 ] || NODE_CPUS=2
}

# The settings both shapes share.
common_conf() {
  local dir=$1 me
  me=$(id -un)
  cat <<EOF
SlurmUser=$me
SlurmdUser=$me
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
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
InactiveLimit=0
MinJobAge=300
EOF
}

# Waits until every node in "$@" is idle (sinfo through client), the
# daemons named in $2 (pid file DIR/NAME.pid, log DIR/log/NAME.log) alive
# meanwhile; on a failure, stops the fixture and exits 1 with the reason
# from the logs.
wait_idle() {
  local dir=$1 daemons=$2 t0=$SECONDS f d state nodes
  shift 2
  nodes=$(IFS=,; echo "$*")
  while [ $((SECONDS - t0)) -lt "$SLURM_FIXTURE_WAIT" ]; do
    for f in $daemons; do
      alive_settled "$dir/$f.pid" "$dir" && continue
      d=${f%%-*}
      local r
      r=$(why "$dir/log/$f.log"; tail -n 5 "$dir/log/$f.out")
      stop "$dir"
      die1 "$d (installed) exited: $r"
    done
    state=$(client "$dir" sinfo -h -N -n "$nodes" -o '%T' 2>/dev/null | sort -u | tr '\n' ' ')
    [ "$state" = "idle " ] && return 0
    sleep 0.2
  done
  local reason logs=""
  reason=$(client "$dir" sinfo -h -N -n "$nodes" -o '%N %T %E' 2>&1 | tr '\n' ';')
  for f in $daemons; do logs="$logs
$(why "$dir/log/$f.log")"; done
  stop "$dir"
  die1 "nodes $nodes not idle after ${SLURM_FIXTURE_WAIT}s (state: ${reason:-none}); logs in $dir/log:$logs"
}

start() {
  need_slurm
  local dir
  dir=$(prepare "$1") || exit $?
  probe_node "$dir"
  local host=$NODE_HOST ctld_port d_port
  ctld_port=$(free_port) || die1 "no free port"
  d_port=$(free_port) || die1 "no free port"
  [ "$ctld_port" != "$d_port" ] || d_port=$(free_port)

  {
    cat <<EOF
# Written by tests/support/slurm_fixture.sh: a private single-node Slurm.
ClusterName=gftest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
AuthInfo=socket=$dir/munge.sock
SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/log/slurmd.log
EOF
    common_conf "$dir"
    cat <<EOF
# Short timers: a test waits on them.
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=10
MessageTimeout=20
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$NODE_CPUS RealMemory=$NODE_MEM State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  } >"$dir/slurm.conf"
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
  wait_idle "$dir" "slurmctld slurmd" "$host"
}

# slurmd of cluster host $2 started in its namespaces (pid file
# slurmd-HOST.pid, the one slurmd writes too).
start_slurmd() {
  local dir=$1 host=$2
  GF_CLUSTER_DIR=$(cluster_of "$dir") SLURM_CONF=$dir/slurm.conf \
    setsid "$CLUSTER_SH" exec "$host" slurmd -D -N "$host" -f "$dir/slurm.conf" \
    >"$dir/log/slurmd-$host.out" 2>&1 </dev/null &
  echo $! >"$dir/slurmd-$host.pid"
}

cluster_start() {
  need_slurm
  [ -n "${GF_CLUSTER_DIR:-}" ] ||
    die1 "cluster-start: GF_CLUSTER_DIR is not set (bring a cluster up with tests/support/cluster.sh up N first)"
  [ -x "$CLUSTER_SH" ] || die1 "cluster-start: $CLUSTER_SH missing"
  local hosts hub_addr h
  hosts=$("$CLUSTER_SH" hosts 2>&1) || die1 "cluster-start: no cluster up in $GF_CLUSTER_DIR: $hosts"
  hub_addr=$("$CLUSTER_SH" addr hub) || die1 "cluster-start: no hub address"
  local dir
  dir=$(prepare "$1") || exit $?
  (cd "$GF_CLUSTER_DIR" && pwd) >"$dir/cluster" || die1 "cannot write $dir/cluster"
  probe_node "$dir"

  {
    cat <<EOF
# Written by tests/support/slurm_fixture.sh: a private Slurm on the test
# cluster of $(cat "$dir/cluster"): slurmctld in the hub's
# namespace, one slurmd per host in the host's namespaces.
ClusterName=gftest
SlurmctldHost=hub($hub_addr)
SlurmctldPort=6817
SlurmdPort=6818
# cred_expire: a requeued job may start again this long after its requeue
# (120 s by default).
AuthInfo=socket=$dir/munge.sock,cred_expire=5
SlurmdSpoolDir=$dir/spool/%n
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmdLogFile=$dir/log/slurmd-%n.log
EOF
    common_conf "$dir"
    cat <<EOF
# Short timers: a test waits on them. A node that stops answering is DOWN
# once a ping cycle starts SlurmdTimeout after its last answer; a ping of a
# node whose slurmd is gone fails only after MessageTimeout (at most 10) s,
# since a refused connection is retried once a second, and the next cycle
# waits for it.
SlurmctldTimeout=30
SlurmdTimeout=$SLURM_FIXTURE_SLURMD_TIMEOUT
MessageTimeout=3
KillWait=5
SchedulerParameters=sched_interval=1,bf_interval=1
EOF
    for h in $hosts; do
      echo "NodeName=$h NodeAddr=$("$CLUSTER_SH" addr "$h") NodeHostname=$h CPUs=$NODE_CPUS RealMemory=$NODE_MEM State=UNKNOWN"
    done
    echo "PartitionName=debug Nodes=$(paste -sd, - <<<"$hosts") Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$dir/slurm.conf"
  # `ip netns exec` (cluster.sh exec) mounts a fresh /sys for the host's
  # network namespace, without /sys/fs/cgroup: slurmd's cgroup plugin would
  # find no cgroup file system to detect its version from and stop. Named,
  # it is loaded and left unused (proctrack/linuxproc, task/none).
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
  cat >"$dir/env" <<EOF
export SLURM_CONF='$dir/slurm.conf'
EOF
  export SLURM_CONF=$dir/slurm.conf

  GF_CLUSTER_DIR=$(cat "$dir/cluster") \
    setsid "$CLUSTER_SH" exec hub slurmctld -D -i -f "$SLURM_CONF" \
    >"$dir/log/slurmctld.out" 2>&1 </dev/null &
  echo $! >"$dir/slurmctld.pid"
  local daemons=slurmctld
  for h in $hosts; do
    mkdir -p "$dir/spool/$h" || die1 "cannot make $dir/spool/$h"
    start_slurmd "$dir" "$h"
    daemons="$daemons slurmd-$h"
  done
  # shellcheck disable=SC2086 # one host a word
  wait_idle "$dir" "$daemons" $hosts
}

node_start() {
  local dir=$1 host=$2
  dir=$(cd "$dir" 2>/dev/null && pwd) || die1 "node-start: no folder $1"
  [ -n "$(cluster_of "$dir")" ] || die1 "node-start: $dir is not a cluster fixture"
  grep -q "^NodeName=$host " "$dir/slurm.conf" || die1 "node-start: no node $host in $dir/slurm.conf"
  alive "$dir/slurmctld.pid" "$dir" || die1 "node-start: slurmctld is not running"
  end_daemons "$dir" "$dir/slurmd-$host.pid"
  export SLURM_CONF=$dir/slurm.conf
  start_slurmd "$dir" "$host"
  wait_idle "$dir" "slurmctld slurmd-$host" "$host"
}

case "${1:-}" in
  start)
    [ $# -eq 2 ] || die1 "usage: $0 start DIR"
    start "$2"
    ;;
  cluster-start)
    [ $# -eq 2 ] || die1 "usage: $0 cluster-start DIR"
    cluster_start "$2"
    ;;
  node-start)
    [ $# -eq 3 ] || die1 "usage: $0 node-start DIR HOST"
    node_start "$2" "$3"
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
    die1 "usage: $0 start DIR | cluster-start DIR | node-start DIR HOST | stop DIR | run CMD..."
    ;;
esac
