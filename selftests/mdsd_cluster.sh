#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Discovery through mdsd over a real etcd, inside the test VM as root.
# Nodes live in network namespaces (mc-a .. mc-d), each reached over a
# veth pair from the root namespace (192.0.2.0/24 TEST-NET-1, only inside
# this VM) and each with a TCP listener.  One mdsd --agent --backend etcd
# per namespace registers its namespace's node; an etcd (Debian package)
# in the root namespace is the shared directory; two plain mdsd in the
# root namespace serve it to a Python client (selftests/mdsd_cluster/
# driver.py, a long-lived process driven through a FIFO) that discovers
# the nodes.  A fourth node joins: the ring follows at once and about a
# quarter of the keys move, all to it.  A node is deleted: its keys miss,
# nothing fails.  One root mdsd is killed: the client and the other mdsd
# carry on.  A host agent is killed: its node's lease lapses and the node
# leaves the ring.  etcd restarts on its data dir: membership comes back.
# Every wait is bounded; every process started here is killed by PID.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"

DRIVER=$DFKV_REPO/selftests/mdsd_cluster/driver.py
export PYTHONPATH="$DFKV_REPO/lib/python" DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so"

G=mcgroup
PORT=7400
AGENT_HTTP=127.0.0.1:17590	# inside each namespace: its own loopback
# mdsd's default lease TTL: a shorter one lapsed live agents' leases
# when the emulated guest stalled for seconds (debug kernel, loaded host)
TTL_MS=10000
POLL_MS=3000
GRACE_MS=1000
NKEYS=${DFKV_MDSD_CLUSTER_KEYS:-3000}
EPORT=23791
EPEER=23801
ETCD_IN=http://192.0.2.1:$EPORT		# from the namespaces
ETCD_LO=http://127.0.0.1:$EPORT		# from the root namespace
M1=127.0.0.1:17580
M2=127.0.0.1:17581
ENDPOINTS=http://$M1,http://$M2

EPID="" M1PID="" M2PID="" DPID=""
APID_a="" APID_b="" APID_c="" APID_d=""

cleanup() {
	for p in $DPID $M1PID $M2PID $APID_a $APID_b $APID_c $APID_d $EPID; do
		kill "$p" 2>/dev/null
	done
	sleep 0.5
	for p in $DPID $M1PID $M2PID $APID_a $APID_b $APID_c $APID_d $EPID; do
		kill -9 "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for x in a b c d; do
		ip netns del mc-$x 2>/dev/null
	done
	unload_retrying
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ask CMD...: one command to the driver; its answer on stdout, status 0
# when it starts with "ok".
ask() {
	(echo "$*" >&3) 2>/dev/null || { echo "driver gone"; return 1; }
	IFS= read -r ans <&4 || { echo "driver gone (no answer to '$*')"; return 1; }
	echo "# $* -> $ans" | tee -a "$T/diag"
	case "$ans" in ok*) return 0 ;; esac
	return 1
}

# published_at HOSTPORT ID ADDR: member ID is published with TCP address
# ADDR; prints the directory epoch that says so.
published_at() {
	get -f "http://$1/v1/groups/$G/members" | python3 -c 'import json, sys
d = json.load(sys.stdin)
ok = any(m["id"] == sys.argv[1] and m.get("tcp") == sys.argv[2]
         for m in d["members"])
if not ok:
    sys.exit(1)
print(d["epoch"])' "$2" "$3"
}

# Letter x: namespace mc-x, node node-x, veth pair i = 0..3.
idx() { case "$1" in a) echo 0 ;; b) echo 1 ;; c) echo 2 ;; d) echo 3 ;; esac; }
naddr() { naddr_of "$(idx "$1")"; }
mkns() { veth_ns mc-$1 mc-v$1 "$(idx "$1")"; }

mknode() {
	x=$1
	inns mc-$x "$DFKVCTL" node add node-$x --ram 32M --max-value 1M --no-evict &&
	inns mc-$x "$DFKVCTL" listener add node-$x "$(naddr $x)" --port $PORT
}

start_etcd() {
	etcd --name mc --data-dir "$T/etcd" \
		--listen-client-urls "$ETCD_LO,$ETCD_IN" \
		--advertise-client-urls "$ETCD_IN" \
		--listen-peer-urls http://127.0.0.1:$EPEER \
		--initial-advertise-peer-urls http://127.0.0.1:$EPEER \
		--initial-cluster mc=http://127.0.0.1:$EPEER \
		--listen-metrics-urls "" >>"$T/etcd.log" 2>&1 &
	EPID=$!
}

if ! command -v etcd >/dev/null; then
	tap_plan 1
	echo "ok 1 mdsd over etcd across namespaces # SKIP etcd not installed"
	exit 0
fi

tap_plan 12
modprobe veth 2>/dev/null
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }

# Setup at top level: background PIDs must stay in this shell.
for x in a b c d; do mkns $x || break; done
for x in a b c; do mknode $x || break; done
start_etcd
until_ok 60 get -f "$ETCD_LO/health"
start_root_mdsd $M1 M1
start_root_mdsd $M2 M2
for x in a b c; do start_agent mc-$x $x $ETCD_IN; done

t_setup() {
	for x in a b c d; do
		inns mc-$x ip -4 addr show dev eth0 | grep -q "$(naddr $x)/30" ||
			{ echo "no namespace mc-$x"; return 1; }
	done
	for x in a b c; do
		inns mc-$x "$DFKVCTL" node show node-$x | grep -q "$(naddr $x):$PORT" ||
			{ echo "no node-$x listener"; return 1; }
	done
	# the namespaces reach etcd on the root side
	inns mc-c curl -s -f --max-time 10 "$ETCD_IN/health" ||
		{ echo "etcd not reachable from mc-c"; tail -5 "$T/etcd.log"; return 1; }
	until_ok 30 get -f "http://$M1/readyz" &&
	until_ok 10 get -f "http://$M2/readyz" ||
		{ tail -5 "$T"/mdsd-*.log; return 1; }
}
tap_check "4 namespaces, 3 nodes with TCP listeners, etcd, two root mdsd" t_setup

t_agents() {
	until_ok 60 members_are $M1 "node-a node-b node-c" &&
	members_are $M2 "node-a node-b node-c" ||
		{ tail -5 "$T"/agent-*.log; return 1; }
	# each carries its own namespace's listener address
	get "http://$M2/v1/groups/$G/members" >"$T/m" &&
	for x in a b c; do
		grep -qF "{\"id\":\"node-$x\",\"tcp\":\"$(naddr $x):$PORT\"" "$T/m" ||
			{ cat "$T/m"; return 1; }
	done
}
tap_check "one agent per namespace: the nodes are in both root mdsd" t_agents

# The driver: a long-lived client reached through two FIFOs.
mkfifo "$T/cmd" "$T/out"
python3 -u "$DRIVER" "$T/cmd" "$T/out" "$ENDPOINTS" $G $POLL_MS $GRACE_MS \
	$NKEYS 2>"$T/driver.log" &
DPID=$!
exec 3>"$T/cmd" 4<"$T/out"

t_discover() {
	ask open && ask ring 3 20 && ask snap three && ask put
}
tap_check "a client discovers the three nodes and stores $NKEYS keys" t_discover

mknode d
start_agent mc-d d $ETCD_IN
t_join() {
	until_ok 60 members_are $M2 "node-a node-b node-c node-d" ||
		{ members_at $M2; tail -5 "$T/agent-d.log"; return 1; }
	# mdsd has it: the long-poll wakes, the ring follows well within a poll
	ans=$(ask ring 4 $(((POLL_MS + 6000) / 1000))) || { echo "$ans"; return 1; }
	echo "$ans"
	ans=$(ask moved three node-d) || { echo "$ans"; return 1; }
	echo "$ans"
	pm=${ans##* }
	[ "$pm" -ge 100 ] && [ "$pm" -le 450 ] ||
		{ echo "$pm permille moved, want 100..450"; return 1; }
}
tap_check "a fourth node joins: the ring follows, ~1/4 of the keys move to it" t_join

t_delete() {
	ask put && ask snap four || return 1
	inns mc-b "$DFKVCTL" node del node-b || return 1
	until_ok 30 members_are $M2 "node-a node-c node-d" ||
		{ members_at $M2; return 1; }
	ask ring 3 $(((POLL_MS + 6000) / 1000)) &&
	ask check four node-b
}
tap_check "a node is deleted: its keys miss, the others hit, no errors" t_delete

kill -9 "$M1PID"
wait "$M1PID" 2>/dev/null
M1PID=""
t_mdsd_killed() {
	! get -f "http://$M1/readyz" >/dev/null &&
	members_are $M2 "node-a node-c node-d" &&
	ask ops && ask check four node-b
}
tap_check "one root mdsd killed: the other answers, the client keeps working" t_mdsd_killed

kill -9 "$APID_c"
wait "$APID_c" 2>/dev/null
APID_c=""
t_agent_killed() {
	t0=$(date +%s)
	# TTL 10 s; etcd rounds leases up; generous under emulation
	until_ok 40 members_are $M2 "node-a node-d" ||
		{ members_at $M2; return 1; }
	t1=$(date +%s)
	echo "# node-c's lease lapsed after $((t1 - t0)) s" | tee -a "$T/diag"
	# the client, its first endpoint dead, follows through the second
	ask ring 2 $(((POLL_MS + 5000) / 1000)) && ask ops
}
tap_check "a host agent killed: its node's lease lapses, it leaves the ring" t_agent_killed

t_node_c_alive() {
	# the node itself is still there: only its registration went away
	inns mc-c "$DFKVCTL" node list | grep -q node-c
}
tap_check "the unregistered node is still in its namespace" t_node_c_alive

kill "$EPID"
wait "$EPID" 2>/dev/null
EPID=""
t_etcd_down() {
	# mdsd reports itself not ready without etcd (debounced probe)
	until_ok 20 eval '! get -f "http://$M2/readyz"'
}
tap_check "etcd stopped: mdsd is not ready" t_etcd_down
start_etcd

t_etcd_back() {
	until_ok 60 get -f "$ETCD_LO/health" ||
		{ tail -5 "$T/etcd.log"; return 1; }
	until_ok 30 get -f "http://$M2/readyz" ||
		{ tail -5 "$T/mdsd-M2.log"; return 1; }
	# the agents renew (or re-create) their leases: node-a and node-d
	until_ok 30 members_are $M2 "node-a node-d" ||
		{ members_at $M2; tail -5 "$T/agent-a.log"; return 1; }
	ask ring 2 15 && ask ops
}
tap_check "etcd restarted on its data dir: membership comes back" t_etcd_back

t_agent_after_restart() {
	# the agents still follow their namespaces after the restart
	inns mc-a "$DFKVCTL" node add node-a2 --ram 16M &&
	inns mc-a "$DFKVCTL" listener add node-a2 "$(naddr a)" --port $((PORT + 1)) ||
		return 1
	until_ok 30 members_are $M2 "node-a node-a2 node-d" ||
		{ members_at $M2; tail -5 "$T/agent-a.log"; return 1; }
	# Two commands: the agent may register node-a2 between them, before
	# it listens (a member without an address, reachable only through
	# /dev/dfkv on its own host); the listener's event republishes it.
	until_ok 30 published_at $M2 node-a2 "$(naddr a):$((PORT + 1))" ||
		{ get "http://$M2/v1/groups/$G/members"; return 1; }
	e=$(published_at $M2 node-a2 "$(naddr a):$((PORT + 1))") || return 1
	ask ring 3 15 "$e" && ask ops
}
tap_check "after the restart a new node still joins the ring" t_agent_after_restart

# The driver stops at top level: it is this shell's child.  (A subshell
# writes: if the driver died, SIGPIPE ends only that.)
(echo quit >&3) 2>/dev/null
IFS= read -r bye <&4
exec 3>&- 4<&-
wait "$DPID"
drc=$?
DPID=""
t_teardown() {
	[ "$drc" -eq 0 ] && [ "$bye" = "ok bye" ] ||
		{ echo "driver exit $drc, '$bye'"; cat "$T/driver.log"; return 1; }
	for x in a b c d; do ip netns del mc-$x || return 1; done
	i=0
	while ! dfkv_unload 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "rmmod dfkv keeps failing"; return 1; }
		sleep 0.2
	done
}
tap_check "client closes, namespaces go, the module unloads" t_teardown
# What the client saw (moved keys in permille, ring delays in ms).
cat "$T/diag"
tap_done
