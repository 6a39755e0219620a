#!/usr/bin/env bash
# test_cluster_fixture.sh - the self-test of tests/support/cluster.sh: a
# cluster of 3 hosts and every verb, checked from outside.
#
#   test_cluster_fixture.sh CLUSTER_SH NETPROBE_PY TMPDIR
#
#   1. up 3: the address lines, hosts, addr; each host's hostname is its
#      own (the hub's too); exec keeps cwd and environment and returns the
#      command's status; a second up in the same state dir is refused and
#      leaves the cluster alone; a second cluster beside it gets another id
#      and subnet and cannot reach the first.
#   2. node0 reaches node1 and node2 by name (TCP, netprobe.py).
#   3. gateway: a listener on root-namespace loopback answers node1 at the
#      printed hub:PORT2.
#   4. cut node2: a connect from node0 times out after 2 s with neither RST
#      nor ICMP error; heal: it connects again.
#   5. cap node1 100mbit: 12 MB each way takes >= 0.8 s (at most 1.2 x the
#      cap); uncap: at least twice the cap again.
#   6. stop node1: its processes stopped (state T); cont: running again;
#      kill node1: none left in its namespace, the one we started died of
#      SIGKILL.
#   7. down: no namespace, /etc/netns folder, run folder or relay of the
#      cluster left; down again is harmless.
#   8. run 2 CMD, CMD SIGTERMed through run: run exits 143 and leaves
#      nothing; run of a failing CMD returns its status and leaves nothing.
#   9. Not root: up exits 77 naming the reason (checked as root through
#      setpriv as nobody, when setpriv is installed).
#
# Exit 77 (skip) only when not root or a tool is missing (cluster.sh's own
# verdict, or python3); anything else that goes wrong is a failure. Every
# wait is for an event, with a deadline.
set -uo pipefail

[ $# -eq 3 ] || { echo "usage: $0 CLUSTER_SH NETPROBE_PY TMPDIR" >&2; exit 2; }
CLUSTER=$(readlink -f "$1")
PROBE=$(readlink -f "$2")
TMP=$3

FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
note() { echo "$*" >&2; }

now_us() { echo "${EPOCHREALTIME/./}"; }
# wait_for SECONDS CMD...: CMD until it succeeds (0) or SECONDS pass (1).
wait_for() {
  local secs=$1 t0
  shift
  t0=$(now_us)
  until "$@"; do
    [ $(($(now_us) - t0)) -lt $((secs * 1000000)) ] || { "$@"; return; }
    sleep 0.02
  done
}

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed" >&2; exit 77; }

rm -rf "$TMP"
mkdir -p "$TMP"
export GF_CLUSTER_DIR=$TMP/c1
C2=$TMP/c2
BG=() # background pids to end on exit

cleanup() {
  local p
  for p in "${BG[@]}"; do kill -KILL "$p" 2>/dev/null; done
  "$CLUSTER" down
  GF_CLUSTER_DIR=$C2 "$CLUSTER" down
}
trap cleanup EXIT
trap 'exit 143' TERM INT

T_START=$(now_us)

# ---- 1. up ----------------------------------------------------------------
out=$("$CLUSTER" up 3 2>"$TMP/up.err")
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIP: $(cat "$TMP/up.err")" >&2
  exit 77
fi
[ "$rc" -eq 0 ] || { cat "$TMP/up.err" >&2; echo "FAIL: up 3 exited $rc" >&2; exit 1; }
ID=$(sed -n 's/^id=//p' "$GF_CLUSTER_DIR/cluster.state")
note "cluster id $ID"
want=$(printf 'node0 10.231.%s.1\nnode1 10.231.%s.2\nnode2 10.231.%s.3' "$ID" "$ID" "$ID")
[ "$out" = "$want" ] || fail "up printed '$out', want '$want'"
[ "$("$CLUSTER" hosts)" = "$(printf 'node0\nnode1\nnode2')" ] || fail "hosts: $("$CLUSTER" hosts)"
[ "$("$CLUSTER" addr hub)" = "10.231.$ID.254" ] || fail "addr hub: $("$CLUSTER" addr hub)"
[ "$("$CLUSTER" addr node2)" = "10.231.$ID.3" ] || fail "addr node2"
"$CLUSTER" addr node3 >/dev/null 2>&1 && fail "addr node3 (no such host) succeeded"

for h in node0 node1 node2 hub; do
  got=$("$CLUSTER" exec "$h" hostname)
  [ "$got" = "$h" ] || fail "exec $h hostname: '$got'"
done
[ "$(hostname)" != node0 ] || fail "the root namespace's hostname changed"
# shellcheck disable=SC2016 # expanded in the host
got=$(cd "$TMP" && GF_PROBE_VAR=kept "$CLUSTER" exec node1 sh -c 'echo "$PWD $GF_PROBE_VAR"')
[ "$got" = "$(cd "$TMP" && pwd) kept" ] || fail "exec kept neither cwd nor env: '$got'"
"$CLUSTER" exec node1 sh -c 'exit 7'
rc=$?
[ "$rc" -eq 7 ] || fail "exec's status $rc, want 7"
got=$("$CLUSTER" exec node2 getent hosts node0 hub | awk '{print $1}' | tr '\n' ' ')
[ "$got" = "10.231.$ID.1 10.231.$ID.254 " ] || fail "node2's /etc/hosts: '$got'"
"$CLUSTER" up 2 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] || fail "a second up in the same dir exited $rc, want 1"
[ "$("$CLUSTER" exec node2 hostname)" = node2 ] || fail "the refused up broke the cluster"

# A second cluster at the same time: its own id and subnet, isolated.
out2=$(GF_CLUSTER_DIR=$C2 "$CLUSTER" up 1) || fail "a second cluster did not come up"
ID2=$(sed -n 's/^id=//p' "$C2/cluster.state" 2>/dev/null)
if [ -z "$ID2" ] || [ "$ID2" = "$ID" ]; then fail "second cluster id '$ID2' (first $ID)"; fi
[ "$out2" = "node0 10.231.$ID2.1" ] || fail "second cluster printed '$out2'"

# ---- 2. reach by name -----------------------------------------------------
for h in node1 node2; do
  "$CLUSTER" exec "$h" python3 "$PROBE" serve 0.0.0.0 5000 "$TMP/ready-$h" \
    >"$TMP/serve-$h.log" 2>&1 &
  BG+=($!)
  disown $! # ended by kill node1, down or cleanup; no job notice
done
for h in node1 node2; do
  wait_for 10 test -f "$TMP/ready-$h" || fail "the server on $h did not listen: $(cat "$TMP/serve-$h.log")"
done
for h in node1 node2; do
  got=$("$CLUSTER" exec node0 python3 "$PROBE" send "$h" 5000 1000 1000 5)
  [ "${got%% *}" = "$h" ] || fail "node0 -> $h by name: '$got'"
done
# The second cluster's node0 does not reach the first's node1.
GF_CLUSTER_DIR=$C2 "$CLUSTER" exec node0 python3 "$PROBE" send "10.231.$ID.2" 5000 10 10 1 \
  >/dev/null 2>&1 && fail "cluster $ID2 reached cluster $ID"
GF_CLUSTER_DIR=$C2 "$CLUSTER" down || fail "down of the second cluster"

# ---- 3. gateway -----------------------------------------------------------
python3 "$PROBE" serve 127.0.0.1 0 "$TMP/ready-root" >"$TMP/serve-root.log" 2>&1 &
BG+=($!)
disown $!
wait_for 10 test -f "$TMP/ready-root" || fail "the root listener did not listen"
RPORT=$(cat "$TMP/ready-root")
gw=$("$CLUSTER" gateway "$RPORT")
[[ $gw =~ ^hub:[0-9]+$ ]] || fail "gateway printed '$gw'"
got=$("$CLUSTER" exec node1 python3 "$PROBE" send hub "${gw#hub:}" 100000 100000 5)
[ "${got%% *}" = "$(hostname)" ] || fail "node1 -> $gw -> root 127.0.0.1:$RPORT: '$got'"
[ "$("$CLUSTER" gateway "$RPORT")" = "$gw" ] || fail "a second gateway $RPORT answered otherwise"

# ---- 4. cut / heal --------------------------------------------------------
"$CLUSTER" cut node2 || fail "cut node2"
t0=$(now_us)
"$CLUSTER" exec node0 python3 "$PROBE" send node2 5000 10 10 2 >/dev/null 2>"$TMP/cut.err"
rc=$?
ms=$((($(now_us) - t0) / 1000))
note "cut: connect node0 -> node2 ended with $rc after $ms ms ($(cat "$TMP/cut.err"))"
[ "$rc" -eq 3 ] || fail "cut: connect to node2 ended with $rc ($(cat "$TMP/cut.err")), want 3 (timed out, no RST/ICMP)"
[ "$ms" -ge 1900 ] || fail "cut: the connect ended after $ms ms, before its 2 s timeout"
"$CLUSTER" heal node2 || fail "heal node2"
heal_ok() { "$CLUSTER" exec node0 python3 "$PROBE" send node2 5000 10 10 1 >/dev/null 2>&1; }
wait_for 10 heal_ok || fail "heal: node2 still unreachable after 10 s"

# ---- 5. cap / uncap -------------------------------------------------------
BYTES=12000000
# transfer UP DOWN -> seconds
transfer() {
  "$CLUSTER" exec node0 python3 "$PROBE" send node1 5000 "$1" "$2" 30 | awk '{print $3}'
}
"$CLUSTER" cap node1 100mbit || fail "cap node1 100mbit"
"$CLUSTER" cap node1 fast 2>/dev/null && fail "cap with a bad rate succeeded"
for dir in "into node1:$BYTES 0" "out of node1:0 $BYTES"; do
  # shellcheck disable=SC2086 # UP DOWN
  s=$(transfer ${dir#*:})
  note "capped 100mbit, 12 MB ${dir%%:*}: ${s:-?} s"
  awk -v s="${s:-0}" 'BEGIN { exit !(s >= 0.8) }' ||
    fail "cap: 12 MB ${dir%%:*} took ${s:-?} s, want >= 0.8 (at most 1.2 x 100 Mbit/s)"
done
"$CLUSTER" uncap node1 || fail "uncap node1"
"$CLUSTER" uncap node1 || fail "uncap twice"
for dir in "into node1:$BYTES 0" "out of node1:0 $BYTES"; do
  # shellcheck disable=SC2086 # UP DOWN
  s=$(transfer ${dir#*:})
  note "uncapped, 12 MB ${dir%%:*}: ${s:-?} s"
  awk -v s="${s:-9}" 'BEGIN { exit !(s < 0.48) }' ||
    fail "uncap: 12 MB ${dir%%:*} took ${s:-?} s, want < 0.48 (2 x the old cap)"
done

# ---- 6. stop / cont / kill ------------------------------------------------
NS1=gfc$ID-node1
"$CLUSTER" exec node1 sleep 1000 &
SLEEPER=$!
BG+=("$SLEEPER")
in_ns1() { ip netns pids "$NS1" | grep -qx "$SLEEPER"; }
wait_for 10 in_ns1 || fail "the sleeper did not enter $NS1"
state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }
all_state() { # WANT: every process of node1 in that state
  local p
  for p in $(ip netns pids "$NS1"); do [ "$(state "$p")" = "$1" ] || return 1; done
}
# a signal is delivered when the kernel next schedules its target, so the
# states are waited for (with a deadline), not read once at once
"$CLUSTER" stop node1 || fail "stop node1"
wait_for 10 all_state T || fail "stop: processes of node1 not stopped: $(for p in $(ip netns pids "$NS1"); do echo -n "$p:$(state "$p") "; done)"
"$CLUSTER" cont node1 || fail "cont node1"
sleeper_is() { [ "$(state "$SLEEPER")" = "$1" ]; }
wait_for 10 sleeper_is S || fail "cont: the sleeper is in state $(state "$SLEEPER")"
"$CLUSTER" kill node1 || fail "kill node1"
[ -z "$(ip netns pids "$NS1")" ] || fail "kill: processes left in $NS1: $(ip netns pids "$NS1")"
wait "$SLEEPER"
rc=$?
[ "$rc" -eq 137 ] || fail "kill: the sleeper ended with $rc, want 137 (SIGKILL)"

# ---- 7. down --------------------------------------------------------------
left_of() { # ID: what of cluster ID is left, if anything
  ip netns list | awk '{print $1}' | grep "^gfc$1-"
  ip -o link show | grep "gfc$1"
  ls -d /etc/netns/gfc"$1"-* /run/ganflow-cluster/c"$1" 2>/dev/null
  pgrep -af "gfcluster-relay gfc$1-hub"
}
"$CLUSTER" down || fail "down"
left=$(left_of "$ID")
[ -z "$left" ] || fail "down left: $left"
[ -n "$ID2" ] && { left=$(left_of "$ID2"); [ -z "$left" ] || fail "the second cluster's down left: $left"; }
[ ! -e "$GF_CLUSTER_DIR/cluster.state" ] || fail "down left the state file"
"$CLUSTER" down || fail "down twice"

# ---- 8. run ---------------------------------------------------------------
# shellcheck disable=SC2016 # expanded by the command
GF_CLUSTER_DIR=$TMP/run "$CLUSTER" run 2 bash -c \
  'sed -n "s/^id=//p" "$GF_CLUSTER_DIR/cluster.state" >"$1.tmp" && mv "$1.tmp" "$1"
   exec "$2" exec node0 sleep 1000' _ "$TMP/run-id" "$CLUSTER" 2>"$TMP/run.err" &
RUNPID=$!
BG+=("$RUNPID")
wait_for 10 test -s "$TMP/run-id" || fail "run: the command did not start"
RID=$(cat "$TMP/run-id" 2>/dev/null)
has_proc() { [ -n "$(ip netns pids "gfc$RID-node0" 2>/dev/null)" ]; }
wait_for 10 has_proc || fail "run: nothing running on node0"
kill -TERM "$RUNPID"
ended() { ! kill -0 "$RUNPID" 2>/dev/null; }
wait_for 20 ended || fail "run: still running 20 s after SIGTERM"
wait "$RUNPID"
rc=$?
[ "$rc" -eq 143 ] || fail "run: SIGTERMed, exited $rc, want 143 ($(cat "$TMP/run.err"))"
left=$(left_of "$RID")
[ -z "$left" ] || fail "run: SIGTERM left: $left"

# shellcheck disable=SC2016 # expanded by the command
GF_CLUSTER_DIR=$TMP/run2 "$CLUSTER" run 1 sh -c 'sed -n "s/^id=//p" "$GF_CLUSTER_DIR/cluster.state" >"$0"; exit 5' \
  "$TMP/run2-id" 2>/dev/null
rc=$?
[ "$rc" -eq 5 ] || fail "run: a command exiting 5 gave $rc"
left=$(left_of "$(cat "$TMP/run2-id")")
[ -z "$left" ] || fail "run: a failing command left: $left"

# ---- 9. not root ----------------------------------------------------------
if command -v setpriv >/dev/null 2>&1; then
  err=$(GF_CLUSTER_DIR=$TMP/nobody setpriv --reuid=65534 --regid=65534 \
    --clear-groups bash -s up 3 <"$CLUSTER" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 77 ] || [[ $err != *"needs root"* ]]; then
    fail "up as nobody: exit $rc '$err', want 77 and the reason"
  fi
else
  note "setpriv not installed: the not-root check is left out"
fi

note "cluster_fixture: $((($(now_us) - T_START) / 1000)) ms, $FAILS failure(s)"
[ "$FAILS" -eq 0 ]
