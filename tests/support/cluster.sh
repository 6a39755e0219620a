#!/usr/bin/env bash
# cluster.sh - a cluster of N test hosts on this one machine, for tests of
# ganflow across hosts (mpirun, launch's per-node agent, partitions, lost
# and stalled nodes). Needs root.
#
# Each host is a network namespace with its own address on a Linux bridge
# that lives in a hub namespace (a veth pair per host), its own hostname
# (a UTS namespace kept alive by a bind mount) and its own /etc/hosts naming
# every host and the hub (/etc/netns/<ns>/hosts, which `ip netns exec`
# bind-mounts over /etc/hosts). The filesystem, users and processes' view
# of /proc are shared, as a cluster with NFS homes would share them. Nothing
# is created in the root namespace's network: no link, no route, no address;
# packets go only between the namespaces made here (and to root-namespace
# loopback through `gateway`).
#
# Several clusters may exist at once (ctest -j): each takes a free id
# (1..250) under a lock on /run/ganflow-cluster/lock, and every name and the
# subnet derive from it:
#   namespaces   gfc<id>-hub, gfc<id>-node<i>
#   subnet       10.231.<id>.0/24: node<i> is .<i+1>, the hub .254
#   bridge       gfc<id>br (in the hub), host links gfc<id>n<i> (hub end)
#                and eth0 (host end)
#   run files    /run/ganflow-cluster/c<id>/ (its owner, the UTS files)
#   /etc files   /etc/netns/gfc<id>-<host>/hosts
#
# Interface. The state directory is $GF_CLUSTER_DIR (required by every verb;
# `up` creates it when missing and writes cluster.state in it, `gateway`
# relay.py and relay-PORT.{pid,port,log}; `down` removes them):
#   up N              hosts node0..node{N-1} (1 <= N <= 200) and the hub;
#                     prints "node0 10.231.<id>.1" lines; exit 0, 77 when
#                     not root or a tool (ip, unshare, nsenter, tc, flock)
#                     is missing (one line on stderr says which), 1 on a
#                     failure (after undoing what it made)
#   hosts             the host names, one per line (not the hub)
#   addr HOST         its address (HOST may be "hub")
#   exec HOST CMD...  CMD in HOST's network and UTS namespaces with its
#                     /etc/hosts, in the foreground, cwd and environment
#                     kept; exit status CMD's. HOST may be "hub"
#   rsh [-opts] HOST CMD...
#                     the agent for Open MPI's plm_rsh_agent: like exec,
#                     but "$*" runs through /bin/sh -c (orted's command line
#                     arrives as words to be joined; exec'ing them directly
#                     fails); ssh-style options before HOST are ignored
#   kill HOST         SIGKILL every process in HOST's namespace, again until
#                     none is left (a lost node)
#   cut HOST          HOST's link down at the bridge: its packets vanish, no
#                     RST and no ICMP reaches anyone (a partition)
#   heal HOST         the link up again
#   stop HOST         SIGSTOP every process of HOST, again until all of them
#                     are stopped (a stalled node)
#   cont HOST         SIGCONT them
#   cap HOST RATE     a tbf bandwidth cap (RATE: 100mbit, 1gbit, 500kbit...)
#                     on both directions of HOST's link
#   uncap HOST        the cap removed
#   gateway PORT      makes 127.0.0.1:PORT of the caller's (root) namespace
#                     reachable from every host as hub:PORT2 and prints
#                     "hub:PORT2" (PORT2 is PORT unless that is taken in the
#                     hub); a relay process that ends with `down`. Needs
#                     python3 (77 without). MLflow 3's server checks the
#                     Host header (loopback and private addresses pass), so
#                     give MLflow clients http://$(addr hub):PORT2
#                     rather than http://hub:PORT2
#   down              ends every process of every host and the relays,
#                     removes every namespace, link, bridge, run file and
#                     /etc file of the cluster; idempotent, and safe after a
#                     partial `up`
#   run N CMD...      up N, CMD in the root namespace with GF_CLUSTER_DIR
#                     exported (a temporary one when unset), down on every
#                     exit path (CMD's end, its failure, SIGTERM, SIGINT:
#                     CMD is sent SIGTERM first); exit status CMD's, up's
#                     77/1, or 128+signal. up's address lines go to stderr
#
# Latency is not emulated: this kernel has no netem (tbf, htb, pfifo only),
# so `cap` limits bandwidth and nothing delays packets.
#
# From a C test: set GF_CLUSTER_DIR, run `cluster.sh up N` (77: skip), and
# run `cluster.sh down` both in the cleanup path and from a SIGTERM handler
# (fork + execv of this script, then waitpid: all async-signal-safe);
# `down` after `down` is harmless. A cluster whose owner was SIGKILLed (no
# down ran) is reaped by a later `up` once the owner's state directory no
# longer names it (a test that empties its scratch folder first does that).
# Run kill/stop/cut/down from outside the hosts (the root namespace): `kill
# node0` run inside node0 would end itself.
#
# Example: GF_CLUSTER_DIR=$(mktemp -d) tests/support/cluster.sh run 2 \
#            tests/support/cluster.sh exec node0 hostname
set -uo pipefail

RUN_ROOT=/run/ganflow-cluster # ids, lock, UTS files; shared by all clusters
MAX_ID=250                    # ids 1..250: subnets 10.231.1.0 .. 10.231.250.0
MAX_HOSTS=200                 # node<i> is .<i+1>; .254 is the hub
WAIT_S=10                     # deadline for kill/stop/relay start, seconds

SELF=$(readlink -f "$0")

die77() { echo "cluster.sh: $*" >&2; exit 77; }
die1() { echo "cluster.sh: $*" >&2; exit 1; }
usage() { echo "cluster.sh: usage: $*" >&2; exit 2; }

need_dir() {
  [ -n "${GF_CLUSTER_DIR:-}" ] || usage "GF_CLUSTER_DIR must name the cluster's state directory"
}

# Root and the tools, or 77 with the reason.
need_tools() {
  [ "$(id -u)" -eq 0 ] || die77 "needs root (network namespaces, bridges, bind mounts)"
  local t
  for t in ip unshare nsenter tc flock; do
    command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
    command -v "$t" >/dev/null 2>&1 ||
      die77 "$t not installed (iproute2 has ip and tc, util-linux unshare, nsenter and flock)"
  done
}

# Deadlines: now in microseconds (bash's EPOCHREALTIME), and whether
# seconds s have passed since t0.
now() { echo "${EPOCHREALTIME/./}"; }
past() { [ $(($(now) - $1)) -ge $(($2 * 1000000)) ]; }

# ---- state ----------------------------------------------------------------

STATE_ID="" # the cluster's id; set by load_state
STATE_N=""  # its number of hosts

state_file() { echo "$GF_CLUSTER_DIR/cluster.state"; }

# Reads id and n from the state file; returns 1 when there is none.
load_state() {
  local f
  f=$(state_file)
  [ -f "$f" ] || return 1
  STATE_ID=$(sed -n 's/^id=//p' "$f")
  STATE_N=$(sed -n 's/^n=//p' "$f")
  [ -n "$STATE_ID" ] || return 1
  [ -n "$STATE_N" ] || STATE_N=0
}

need_state() {
  load_state || die1 "no cluster is up in $GF_CLUSTER_DIR"
}

ns_of() { # HOST -> its namespace name, or 1 when there is no such host
  case "$1" in
    hub) echo "gfc$STATE_ID-hub" ;;
    node*)
      local i=${1#node}
      [[ $i =~ ^(0|[1-9][0-9]*)$ ]] && [ "$i" -lt "$STATE_N" ] || return 1
      echo "gfc$STATE_ID-node$i"
      ;;
    *) return 1 ;;
  esac
}

addr_of() { # HOST -> its address
  case "$1" in
    hub) echo "10.231.$STATE_ID.254" ;;
    *) echo "10.231.$STATE_ID.$((${1#node} + 1))" ;;
  esac
}

# Every host name of the cluster, the hub last.
all_hosts() {
  local i
  for ((i = 0; i < STATE_N; i++)); do echo "node$i"; done
  echo hub
}

host_ns() { # HOST -> namespace, or exit 1 naming the bad host
  ns_of "$1" || die1 "no host '$1' in this cluster (hosts: node0..node$((STATE_N - 1)), hub)"
}

uts_file() { echo "$RUN_ROOT/c$STATE_ID/uts-$1"; }

# The processes in a namespace (ip netns pids lists those whose network
# namespace is it), this shell excluded.
ns_pids() {
  ip netns pids "$1" 2>/dev/null | grep -vx -e "$$" -e "$BASHPID" || true
}

# ---- the lock -------------------------------------------------------------

# Ids and /etc/netns are shared by all clusters: allocation and the /etc
# writes happen under one lock (fd 9).
lock() {
  mkdir -p "$RUN_ROOT" || return 1
  exec 9>"$RUN_ROOT/lock" || return 1
  flock -w 60 9 || { echo "cluster.sh: $RUN_ROOT/lock held for 60 s" >&2; return 1; }
}
unlock() { flock -u 9 2>/dev/null; exec 9>&-; }

any_ns_with_prefix() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -q "^$1"
}

# The id a state directory names ("" when none).
id_in_dir() {
  sed -n 's/^id=//p' "$1/cluster.state" 2>/dev/null
}

# Unmounts and removes the UTS files of run directory c<id>.
drop_run_dir() {
  local d=$RUN_ROOT/c$1 f
  [ -d "$d" ] || return 0
  for f in "$d"/uts-*; do
    [ -e "$f" ] || continue
    umount "$f" 2>/dev/null || umount -l "$f" 2>/dev/null
  done
  rm -rf "$d"
}

# Removes what is left of cluster id when its owner is gone (the owner's
# state directory no longer names it: removed, or reused by another
# cluster, after a SIGKILL that left no chance to run down): its processes,
# namespaces, /etc/netns files and run directory. Under the lock.
reap_id() {
  local id=$1 ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^gfc$id-"); do
    kill_ns "$ns"
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf /etc/netns/gfc"$id"-*
  drop_run_dir "$id"
  ! any_ns_with_prefix "gfc$id-"
}

# Takes the first free id (under the lock): one with no claim and no
# namespace of its prefix, or one whose claim is stale (the owner's state
# directory does not name it), once reap_id has removed its leftovers.
# Namespaces of a prefix with no claim at all are not ours to judge: that
# id is skipped. Writes the claim; prints the id.
alloc_id() {
  local id claim owner
  for ((id = 1; id <= MAX_ID; id++)); do
    claim=$RUN_ROOT/c$id
    if [ -d "$claim" ]; then
      owner=$(cat "$claim/owner" 2>/dev/null)
      [ -n "$owner" ] && [ "$(id_in_dir "$owner")" = "$id" ] && continue
      reap_id "$id" || continue
    elif any_ns_with_prefix "gfc$id-"; then
      continue
    fi
    mkdir -p "$claim" || return 1
    printf '%s\n' "$GF_CLUSTER_DIR" >"$claim/owner" || return 1
    echo "$id"
    return 0
  done
  echo "cluster.sh: all $MAX_ID cluster ids are taken (see $RUN_ROOT)" >&2
  return 1
}

# ---- up -------------------------------------------------------------------

# The /etc/hosts every host sees.
hosts_text() {
  local h
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
  for h in $(all_hosts); do printf '%s\t%s\n' "$(addr_of "$h")" "$h"; done
}

# Makes host h: namespace, loopback up, hostname, its /etc/hosts was written
# under the lock. For a node, also its link to the bridge.
make_host() {
  local h=$1 ns hub br uts
  ns=$(ns_of "$h") || return 1
  hub=$(ns_of hub)
  br=gfc${STATE_ID}br
  ip netns add "$ns" || return 1
  ip -n "$ns" link set lo up || return 1
  uts=$(uts_file "$h")
  : >"$uts" || return 1
  unshare --uts="$uts" hostname "$h" || return 1
  if [ "$h" = hub ]; then
    ip -n "$ns" link add "$br" type bridge forward_delay 0 || return 1
    ip -n "$ns" addr add "$(addr_of hub)/24" dev "$br" || return 1
    ip -n "$ns" link set "$br" up || return 1
    return 0
  fi
  local vh=gfc${STATE_ID}n${h#node}
  ip -n "$hub" link add "$vh" type veth peer name eth0 netns "$ns" || return 1
  ip -n "$hub" link set "$vh" master "$br" up || return 1
  ip -n "$ns" addr add "$(addr_of "$h")/24" dev eth0 || return 1
  ip -n "$ns" link set eth0 up || return 1
}

up_inner() {
  local n=$1 id h
  mkdir -p "$GF_CLUSTER_DIR" || return 1
  lock || return 1
  id=$(alloc_id) || { unlock; return 1; }
  STATE_ID=$id
  STATE_N=$n
  printf 'id=%s\nn=%s\n' "$id" "$n" >"$(state_file)" || { unlock; return 1; }
  local text
  text=$(hosts_text)
  for h in $(all_hosts); do
    if ! mkdir -p "/etc/netns/$(ns_of "$h")" ||
        ! printf '%s\n' "$text" >"/etc/netns/$(ns_of "$h")/hosts"; then
      unlock
      return 1
    fi
  done
  unlock
  make_host hub || return 1
  for ((i = 0; i < n; i++)); do make_host "node$i" || return 1; done
  for ((i = 0; i < n; i++)); do echo "node$i $(addr_of "node$i")"; done
}

cmd_up() {
  if [ $# -ne 1 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt "$MAX_HOSTS" ]; then
    usage "cluster.sh up N (1..$MAX_HOSTS)"
  fi
  need_tools
  ! load_state || die1 "a cluster (id $STATE_ID) is already up in $GF_CLUSTER_DIR; run down first"
  if ! up_inner "$1"; then
    cmd_down >/dev/null 2>&1
    die1 "up $1 failed (undone)"
  fi
}

# ---- down -----------------------------------------------------------------

# SIGKILL every process of a namespace until none is left; 1 past the
# deadline.
kill_ns() {
  local ns=$1 t0 pids
  t0=$(now)
  while pids=$(ns_pids "$ns"); [ -n "$pids" ]; do
    # shellcheck disable=SC2086 # one pid a word
    kill -KILL $pids 2>/dev/null
    past "$t0" "$WAIT_S" && { echo "cluster.sh: processes left in $ns: $pids" >&2; return 1; }
    sleep 0.02
  done
  return 0
}

# Ends a relay whose pid file is f (only if that pid is still a relay).
end_relay() {
  local f=$1 pid
  pid=$(cat "$f" 2>/dev/null)
  if [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" |
      grep -q "gfcluster-relay"; then
    kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f" "${f%.pid}.port" "${f%.pid}.log"
}

cmd_down() {
  load_state || return 0
  local h ns f rc=0
  for f in "$GF_CLUSTER_DIR"/relay-*.pid; do
    [ -e "$f" ] && end_relay "$f"
  done
  for h in $(all_hosts); do
    ns=$(ns_of "$h")
    [ -e "/run/netns/$ns" ] && { kill_ns "$ns" || rc=1; }
  done
  for h in $(all_hosts); do
    ns=$(ns_of "$h")
    if [ -e "/run/netns/$ns" ]; then
      ip netns del "$ns" 2>/dev/null || { echo "cluster.sh: cannot delete $ns" >&2; rc=1; }
    fi
  done
  lock || return 1
  for h in $(all_hosts); do rm -rf "/etc/netns/$(ns_of "$h")"; done
  rmdir /etc/netns 2>/dev/null # only when no other cluster has files there
  drop_run_dir "$STATE_ID"
  unlock
  rm -f "$(state_file)" "$GF_CLUSTER_DIR"/relay-* "$GF_CLUSTER_DIR/relay.py"
  return "$rc"
}

# ---- host verbs -----------------------------------------------------------

cmd_exec() {
  [ $# -ge 2 ] || usage "cluster.sh exec HOST CMD..."
  need_state
  local ns
  ns=$(host_ns "$1") || exit 1
  local uts
  uts=$(uts_file "$1")
  shift
  exec ip netns exec "$ns" nsenter --uts="$uts" -- "$@"
}

cmd_rsh() {
  # ssh-style options before the host: those of ssh taking a value skip it.
  while [ $# -gt 0 ] && [[ $1 == -* ]]; do
    case "$1" in
      -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
      *) shift ;;
    esac
  done
  [ $# -ge 2 ] || usage "cluster.sh rsh [-opts] HOST CMD..."
  local h=$1
  shift
  cmd_exec "$h" /bin/sh -c "$*"
}

cmd_kill() {
  [ $# -eq 1 ] || usage "cluster.sh kill HOST"
  need_state
  local ns
  ns=$(host_ns "$1") || exit 1
  kill_ns "$ns" || exit 1
}

# SIGSTOP every process of the host until each one is stopped (one forking
# during the first pass is caught by the next).
cmd_stop() {
  [ $# -eq 1 ] || usage "cluster.sh stop HOST"
  need_state
  local ns t0 pids p left
  ns=$(host_ns "$1") || exit 1
  t0=$(now)
  while :; do
    pids=$(ns_pids "$ns")
    left=""
    for p in $pids; do
      # State is the field after the ")" ending the command name.
      case "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)" in
        T | t | Z | X | "") ;;
        *) left="$left $p" ;;
      esac
    done
    [ -z "$left" ] && return 0
    # shellcheck disable=SC2086
    kill -STOP $left 2>/dev/null
    past "$t0" "$WAIT_S" && die1 "processes of $1 not stopped:$left"
    sleep 0.02
  done
}

cmd_cont() {
  [ $# -eq 1 ] || usage "cluster.sh cont HOST"
  need_state
  local ns pids
  ns=$(host_ns "$1") || exit 1
  pids=$(ns_pids "$ns")
  # shellcheck disable=SC2086
  [ -z "$pids" ] || kill -CONT $pids 2>/dev/null
  return 0
}

# The hub end of a node's link.
hub_end() {
  case "$1" in
    node*) echo "gfc${STATE_ID}n${1#node}" ;;
    *) die1 "the hub has no link of its own: name a node" ;;
  esac
}

cmd_link() { # cut|heal HOST
  [ $# -eq 2 ] || usage "cluster.sh $1 HOST"
  need_state
  host_ns "$2" >/dev/null || exit 1
  local vh state=down
  vh=$(hub_end "$2") || exit 1
  [ "$1" = heal ] && state=up
  # Down at the bridge: the host's frames are dropped by the bridge, frames
  # to it have no port to leave by. Nobody answers for the missing host, so
  # a peer's TCP sees silence (retransmits, timeouts), never RST or ICMP.
  ip -n "$(ns_of hub)" link set "$vh" "$state" || die1 "$1 $2 failed"
}

# RATE ("100mbit", "1gbit", "500kbit", "8000000bit", a bare number of bit/s)
# -> bits per second.
rate_bits() {
  local r=${1,,} num unit
  [[ $r =~ ^([0-9]+)([a-z]*)$ ]] || return 1
  num=${BASH_REMATCH[1]}
  unit=${BASH_REMATCH[2]}
  case "$unit" in
    "" | bit) echo "$num" ;;
    kbit) echo $((num * 1000)) ;;
    mbit) echo $((num * 1000000)) ;;
    gbit) echo $((num * 1000000000)) ;;
    *) return 1 ;;
  esac
}

cmd_cap() {
  [ $# -eq 2 ] || usage "cluster.sh cap HOST RATE"
  need_state
  local ns vh bits burst
  ns=$(host_ns "$1") || exit 1
  vh=$(hub_end "$1") || exit 1
  if ! bits=$(rate_bits "$2") || [ "$bits" -le 0 ]; then
    die1 "cap: '$2' is not a rate (like 100mbit, 1gbit, 500kbit)"
  fi
  # tbf lets a burst of 10 ms of traffic through at once (at least 64 KiB,
  # so that one full-size GSO frame fits); a queue of 100 ms beyond that.
  burst=$((bits / 8 / 100))
  [ "$burst" -ge 65536 ] || burst=65536
  tc -n "$(ns_of hub)" qdisc replace dev "$vh" root tbf rate "${bits}bit" \
    burst "$burst" latency 100ms || die1 "cap $1: tc on the hub side failed"
  tc -n "$ns" qdisc replace dev eth0 root tbf rate "${bits}bit" \
    burst "$burst" latency 100ms || die1 "cap $1: tc on the host side failed"
}

cmd_uncap() {
  [ $# -eq 1 ] || usage "cluster.sh uncap HOST"
  need_state
  local ns vh
  ns=$(host_ns "$1") || exit 1
  vh=$(hub_end "$1") || exit 1
  if tc -n "$(ns_of hub)" qdisc show dev "$vh" root | grep -q tbf; then
    tc -n "$(ns_of hub)" qdisc del dev "$vh" root || die1 "uncap $1 failed"
  fi
  if tc -n "$ns" qdisc show dev eth0 root | grep -q tbf; then
    tc -n "$ns" qdisc del dev eth0 root || die1 "uncap $1 failed"
  fi
}

# ---- gateway --------------------------------------------------------------

# The relay: listens in the hub's namespace, connects in the namespace it
# was started in. A process holds sockets of two namespaces: setns(2) into
# the hub (main thread), make the listening socket, setns back; accepted
# sockets stay in the hub's namespace, connections made afterwards are in
# the root's. One thread per direction per connection; EOF is passed on as
# a half close. argv: marker, hub namespace, target port, wanted port,
# ready file (gets "PORT2 PID" once it listens).
read -r -d '' RELAY_PY <<'EOF'
import ctypes, os, socket, sys, threading
_, _marker, hub_ns, target, want, ready = sys.argv
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
def setns(fd):
    if libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        sys.exit("relay: setns: " + os.strerror(e))
home = os.open("/proc/self/ns/net", os.O_RDONLY)
hub = os.open("/run/netns/" + hub_ns, os.O_RDONLY)
setns(hub)
ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    ls.bind(("0.0.0.0", int(want)))
except OSError:
    ls.bind(("0.0.0.0", 0))
ls.listen(128)
setns(home)
os.close(hub)
os.close(home)
with open(ready + ".tmp", "w") as f:
    f.write("%d %d\n" % (ls.getsockname()[1], os.getpid()))
os.rename(ready + ".tmp", ready)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(c):
    try:
        s = socket.create_connection(("127.0.0.1", int(target)))
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pump, args=(s, c), daemon=True)
    t.start()
    pump(c, s)
    t.join()
    c.close()
    s.close()
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF

cmd_gateway() {
  if [ $# -ne 1 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]] || [ "$1" -gt 65535 ]; then
    usage "cluster.sh gateway PORT"
  fi
  need_state
  local port=$1 py base ready t0 pid
  py=$(command -v python3 || true)
  [ -n "$py" ] || die77 "gateway needs python3 (not installed)"
  base=$GF_CLUSTER_DIR/relay-$port
  ready=$base.port
  # Already relayed: the same answer.
  if [ -f "$ready" ] && [ -f "$base.pid" ] &&
      kill -0 "$(cat "$base.pid")" 2>/dev/null; then
    echo "hub:$(cut -d' ' -f1 "$ready")"
    return 0
  fi
  rm -f "$ready" "$base.pid"
  # Its own files for stdio: a caller reading our stdout through a pipe
  # must see EOF when this script ends, not when the relay does.
  printf '%s\n' "$RELAY_PY" >"$GF_CLUSTER_DIR/relay.py" || die1 "cannot write $GF_CLUSTER_DIR/relay.py"
  "$py" "$GF_CLUSTER_DIR/relay.py" gfcluster-relay "$(ns_of hub)" "$port" "$port" "$ready" \
    </dev/null >"$base.log" 2>&1 &
  pid=$!
  echo "$pid" >"$base.pid"
  t0=$(now)
  until [ -f "$ready" ]; do
    kill -0 "$pid" 2>/dev/null || die1 "gateway $port: the relay exited: $(tail -n 3 "$base.log")"
    past "$t0" "$WAIT_S" && { end_relay "$base.pid"; die1 "gateway $port: the relay did not listen within ${WAIT_S}s"; }
    sleep 0.02
  done
  echo "hub:$(cut -d' ' -f1 "$ready")"
}

# ---- run ------------------------------------------------------------------

RUN_CHILD=""   # run: CMD's pid while it runs
RUN_MADE=""    # run: 1 when GF_CLUSTER_DIR is a temporary folder of its own

run_cleanup() {
  "$SELF" down
  [ -z "$RUN_MADE" ] || rm -rf "$GF_CLUSTER_DIR"
}

# A signal: CMD gets SIGTERM (SIGKILL after WAIT_S), then down; exit code.
run_on_signal() {
  trap - INT TERM EXIT
  if [ -n "$RUN_CHILD" ]; then
    kill -TERM "$RUN_CHILD" 2>/dev/null
    local t0
    t0=$(now)
    while kill -0 "$RUN_CHILD" 2>/dev/null && ! past "$t0" "$WAIT_S"; do
      sleep 0.05
    done
    kill -KILL "$RUN_CHILD" 2>/dev/null
    wait "$RUN_CHILD" 2>/dev/null
  fi
  run_cleanup
  exit "$1"
}

cmd_run() {
  [ $# -ge 2 ] || usage "cluster.sh run N CMD..."
  local n=$1 rc=0
  shift
  if [ -z "${GF_CLUSTER_DIR:-}" ]; then
    GF_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gfcluster.XXXXXX") || die1 "mktemp failed"
    RUN_MADE=1
  fi
  export GF_CLUSTER_DIR
  trap run_cleanup EXIT
  trap 'run_on_signal 143' TERM
  trap 'run_on_signal 130' INT
  "$SELF" up "$n" >&2 || {
    rc=$?
    trap - EXIT
    [ -z "$RUN_MADE" ] || rm -rf "$GF_CLUSTER_DIR"
    exit "$rc"
  }
  # In the background, waited on: a signal's trap runs at once, not after
  # CMD ends. Its stdin stays the caller's.
  "$@" <&0 &
  RUN_CHILD=$!
  wait "$RUN_CHILD"
  rc=$?
  RUN_CHILD=""
  trap - EXIT INT TERM
  run_cleanup
  exit "$rc"
}

# ---- main -----------------------------------------------------------------

verb=${1:-}
[ $# -gt 0 ] && shift
case "$verb" in
  up) need_dir; cmd_up "$@" ;;
  down) need_dir; [ $# -eq 0 ] || usage "cluster.sh down"; cmd_down ;;
  hosts) need_dir; need_state; for ((i = 0; i < STATE_N; i++)); do echo "node$i"; done ;;
  addr)
    need_dir; [ $# -eq 1 ] || usage "cluster.sh addr HOST"; need_state
    host_ns "$1" >/dev/null || exit 1
    addr_of "$1"
    ;;
  exec) need_dir; cmd_exec "$@" ;;
  rsh) need_dir; cmd_rsh "$@" ;;
  kill) need_dir; cmd_kill "$@" ;;
  cut | heal) need_dir; cmd_link "$verb" "$@" ;;
  stop) need_dir; cmd_stop "$@" ;;
  cont) need_dir; cmd_cont "$@" ;;
  cap) need_dir; cmd_cap "$@" ;;
  uncap) need_dir; cmd_uncap "$@" ;;
  gateway) need_dir; cmd_gateway "$@" ;;
  run) need_tools; cmd_run "$@" ;;
  *) usage "cluster.sh up N | hosts | addr HOST | exec HOST CMD... | rsh HOST CMD... | kill HOST | cut HOST | heal HOST | stop HOST | cont HOST | cap HOST RATE | uncap HOST | gateway PORT | down | run N CMD..." ;;
esac
