#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# mdsd's host agent against the real module, inside the test VM as root:
# kernel nodes created with dfkvctl become members of the agent's group
# (before and after mdsd starts), carry their listener or --advertise
# address and their state (unhealthy, draining), wake a long-poll, stay
# while the agent renews their leases, leave when deleted or when the
# module goes away, and come back with it; /metrics exports the nodes'
# stats.  With etcd installed, a second mdsd shares an etcd on loopback
# with the agent's mdsd: killing the agent lets the node's lease lapse.
# Everything runs on 127.0.0.1 and every wait is bounded.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d)
MDSD=${MDSD:-$DFKV_REPO/build/tools/mdsd}
# Private copies: a concurrent build may replace the binaries under us.
cp "$DFKVCTL" "$T/dfkvctl" && cp "$MDSD" "$T/mdsd" ||
	{ echo "Bail out! no $DFKVCTL or $MDSD"; exit 1; }
DFKVCTL=$T/dfkvctl
MDSD=$T/mdsd
PORT=17480
B=http://127.0.0.1:$PORT
G=cache
PID=""
EPID=""
PIDS=""

cleanup() {
	for p in $PID $PIDS $EPID; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

get() { curl -s --max-time 15 "$@"; }
members() { get "$B/v1/groups/$G/members"; }
epoch() { sed -n 's/.*"epoch":\([0-9]*\).*/\1/p'; }

# until_ok SECS CMD...: retry CMD every 0.2 s for at most SECS seconds.
until_ok() {
	n=$(($1 * 5))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
		n=$((n - 1))
	done
	"$@"
}

# has_member NAME [FIELDS]: the group lists NAME (with "FIELDS" following
# its id in the canonical rendering, e.g. '"tcp":"10.0.0.2:7400"').
has_member() {
	members | grep -qF "{\"id\":\"$1\",${2:-}" ||
		{ echo "no member $1 ${2:-}:"; members; return 1; }
}
no_member() {
	! members | grep -qF "{\"id\":\"$1\"," ||
		{ echo "member $1 still there:"; members; return 1; }
}
state_is() { members | grep -qE "\"id\":\"$1\",[^}]*\"state\":\"$2\""; }

# Start mdsd in the background (at top level: tap_check runs its command
# in a subshell, which would lose $PID).
start_mdsd() {
	"$MDSD" --listen 127.0.0.1:$PORT --agent --group $G --ttl-ms 1500 \
		--advertise kvB=10.0.0.2:7400 --host vmhost -v "$@" \
		>>"$T/mdsd.log" 2>&1 &
	PID=$!
}

# stop_mdsd SIG: stop it and keep its exit status in $T/rc.
stop_mdsd() {
	kill "-$1" "$PID"
	{ wait "$PID"; echo $? >"$T/rc"; } 2>/dev/null
	PID=""
}

tap_plan 15

dfkv_load
"$DFKVCTL" node add kvA --ram 16M
start_mdsd
t_up() {
	# generous: software emulation on a busy host is slow
	until_ok 60 get -f "$B/healthz" ||
		{ echo "mdsd log:"; tail -20 "$T/mdsd.log"; return 1; }
}
tap_check "mdsd --agent starts with the module loaded" t_up

t_existing() {
	until_ok 15 has_member kvA &&
	members | grep -qF '"weight":1,"host":"vmhost","state":"up","ttl_ms":1500'
}
tap_check "a node created before mdsd is a member" t_existing

t_new_node() {
	"$DFKVCTL" node add kvB --ram 16M || return 1
	until_ok 10 has_member kvB '"tcp":"10.0.0.2:7400"'
}
tap_check "a new node joins, with its --advertise address" t_new_node

t_listener() {
	"$DFKVCTL" listener --help >/dev/null 2>&1 || { echo "# no listeners"; return 0; }
	"$DFKVCTL" listener add kvA 127.0.0.1 --port 7420 || return 1
	until_ok 10 has_member kvA '"tcp":"127.0.0.1:7420"'
}
tap_check "a node's TCP listener is its tcp address" t_listener

t_state() {
	e0=$(members | epoch)
	"$DFKVCTL" node set kvA --state unhealthy || return 1
	until_ok 10 state_is kvA unhealthy || return 1
	e1=$(members | epoch)
	[ "$e1" -gt "$e0" ] || { echo "epoch $e0 -> $e1"; return 1; }
	"$DFKVCTL" node set kvA --state draining || return 1
	until_ok 10 state_is kvA draining || return 1
	"$DFKVCTL" node set kvA --state up || return 1
	until_ok 10 state_is kvA up
}
tap_check "node state changes reach the member (unhealthy, draining, up)" t_state

t_longpoll() {
	e=$(members | epoch)
	start=$(date +%s)
	get "$B/v1/groups/$G/members?wait_epoch=$e&wait_ms=25000" >"$T/lp" &
	lp=$!
	sleep 0.5
	"$DFKVCTL" node add kvC --ram 16M || return 1
	wait $lp
	took=$(($(date +%s) - start))
	# under emulation dfkvctl and the agent's dump take seconds
	grep -qF '{"id":"kvC",' "$T/lp" && [ "$took" -lt 20 ] ||
		{ echo "took ${took}s:"; cat "$T/lp"; return 1; }
}
tap_check "a long-poll wakes when a node is added" t_longpoll

t_renew() {
	sleep 3.5	# more than twice the TTL
	has_member kvA && has_member kvB && has_member kvC
}
tap_check "the agent keeps the leases alive" t_renew

t_del() {
	"$DFKVCTL" node del kvC || return 1
	until_ok 10 no_member kvC
}
tap_check "a deleted node leaves the group" t_del

t_metrics() {
	get "$B/metrics" >"$T/metrics" || return 1
	for w in 'dfkv_node_up{node="kvA",state="up"} 1' \
		 'dfkv_capacity_bytes{node="kvB",tier="ram"} 16777216' \
		 'dfkv_mds_agent_nodes 2' \
		 'dfkv_mds_members{group="cache",state="up"} 2' \
		 'dfkv_mds_agent_events_total'; do
		grep -qF "$w" "$T/metrics" || { echo "no '$w'"; return 1; }
	done
}
tap_check "/metrics exports node stats and the agent's members" t_metrics

t_unload() {
	"$DFKVCTL" node del kvA && "$DFKVCTL" node del kvB &&
	until_ok 10 no_member kvB || return 1
	"$DFKVCTL" node add kvD --ram 16M || return 1
	until_ok 10 has_member kvD || return 1
	"$DFKVCTL" node del kvD
	# the agent holds netlink sockets, not the module: it unloads
	dfkv_unload || return 1
	until_ok 10 no_member kvD
}
tap_check "the module unloads under the agent" t_unload

t_reload() {
	dfkv_load || return 1
	"$DFKVCTL" node add kvE --ram 16M || return 1
	until_ok 15 has_member kvE
}
tap_check "the agent follows a reloaded module" t_reload

stop_mdsd TERM
t_stop() {
	rc=$(cat "$T/rc")
	[ "$rc" -eq 0 ] || { echo "exit $rc"; tail "$T/mdsd.log"; return 1; }
}
tap_check "mdsd exits 0 on SIGTERM" t_stop

# ---------------------------------------------------------------- etcd

etcd_start() {
	etcd --name t --data-dir "$T/etcd" \
		--listen-client-urls http://127.0.0.1:23790 \
		--advertise-client-urls http://127.0.0.1:23790 \
		--listen-peer-urls http://127.0.0.1:23800 \
		--initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster t=http://127.0.0.1:23800 \
		--listen-metrics-urls "" >"$T/etcd.log" 2>&1 &
	EPID=$!
}

B2=http://127.0.0.1:17481
member_at_b2() { get "$B2/v1/groups/$G/members" | grep -qF "{\"id\":\"$1\","; }

t_etcd_agent() {
	until_ok 60 get -f http://127.0.0.1:23790/health ||
		{ echo "etcd did not start"; tail "$T/etcd.log"; return 1; }
	until_ok 20 get -f "$B2/readyz" || { tail "$T/mdsd2.log"; return 1; }
	until_ok 10 member_at_b2 kvE || { get "$B2/v1/groups/$G/members"; return 1; }
}

t_etcd_lapse() {
	# etcd's shortest lease is about 2 s; allow 10 s under emulation
	until_ok 10 eval '! member_at_b2 kvE' ||
		{ get "$B2/v1/groups/$G/members"; return 1; }
	get -f "$B2/readyz" >/dev/null
}

if command -v etcd >/dev/null; then
	etcd_start
	until_ok 60 get -f http://127.0.0.1:23790/health
	start_mdsd --backend etcd --etcd http://127.0.0.1:23790
	"$MDSD" --listen 127.0.0.1:17481 --backend etcd \
		--etcd http://127.0.0.1:23790 >>"$T/mdsd2.log" 2>&1 &
	PIDS=$!
	tap_check "etcd: the agent's node is seen by another mdsd" t_etcd_agent
	stop_mdsd KILL
	tap_check "etcd: killing the agent lets the node's lease lapse" t_etcd_lapse
else
	tap_n=$((tap_n + 2))
	echo "ok $((tap_n - 1)) etcd agent # SKIP etcd not installed"
	echo "ok $tap_n etcd lease lapse # SKIP etcd not installed"
fi

"$DFKVCTL" node del kvE >/dev/null 2>&1
dfkv_unload
t_clean() { ! grep -E 'error:' "$T/mdsd.log"; }
tap_check "no errors in the mdsd log" t_clean
tap_done
