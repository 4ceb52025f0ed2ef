#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What mdsd_cluster.sh and dfkv_churn.sh share, on top of lib.sh: nodes in
# network namespaces reached over veth pairs from the root namespace
# (192.0.2.0/24 TEST-NET-1, only inside the VM: pair i has 192.0.2.(4i+1)
# on the root side, 192.0.2.(4i+2) in the namespace), one mdsd --agent
# per namespace over etcd, bounded waits, and reading a group's members
# from mdsd.  Sourcing it makes T (the scratch directory, readable by the
# namespaces' processes) and private copies of dfkvctl and mdsd there (a
# concurrent build may replace the binaries under a test): DFKVCTL and
# MDSD name them.  The caller sets G (the group), TTL_MS, AGENT_HTTP and
# ETCD_LO before using the rest.

T=$(mktemp -d)
chmod 755 "$T"
MDSD=${MDSD:-$DFKV_REPO/build/tools/mdsd}
cp "$DFKVCTL" "$T/dfkvctl" && cp "$MDSD" "$T/mdsd" ||
	{ echo "Bail out! no $DFKVCTL or $MDSD"; exit 1; }
DFKVCTL=$T/dfkvctl
MDSD=$T/mdsd

inns() {
	ns=$1
	shift
	ip netns exec "$ns" "$@"
}

get() { curl -s --max-time 5 "$@"; }

# until_ok SECS CMD...: retry CMD every 0.2 s for at most SECS seconds
# (wall clock: a slow CMD does not stretch the bound).
until_ok() {
	end=$(($(date +%s) + $1))
	shift
	while [ "$(date +%s)" -lt "$end" ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	"$@"
}

# members_at HOSTPORT: the group's member ids, sorted, one line (jq: it
# starts in a fraction of python3's time in the emulated guest).
members_at() {
	get -f "http://$1/v1/groups/$G/members" |
		jq -r '[.members[].id] | sort | join(" ")'
}
# members_are HOSTPORT IDS: the group has exactly IDS (sorted, one line).
members_are() { [ "$(members_at "$1")" = "$2" ]; }

# Pair I's root-side and namespace-side addresses.
raddr_of() { echo 192.0.2.$(($1 * 4 + 1)); }
naddr_of() { echo 192.0.2.$(($1 * 4 + 2)); }

# veth_ns NS VETH I: namespace NS whose eth0 pairs with VETH in the root
# namespace, addresses of pair I, its default route through the root.
veth_ns() {
	ip netns add "$1" &&
	ip link add "$2" type veth peer name eth0 netns "$1" &&
	ip -n "$1" link set lo up &&
	ip -n "$1" link set eth0 up &&
	ip link set "$2" up &&
	ip addr add "$(raddr_of "$3")/30" dev "$2" &&
	ip -n "$1" addr add "$(naddr_of "$3")/30" dev eth0 &&
	ip -n "$1" route add default via "$(raddr_of "$3")"
}

# start_root_mdsd HOSTPORT NAME: an mdsd in the root namespace over etcd
# URL(s) $ETCD_LO, logging to $T/mdsd-NAME.log; its PID in $NAMEPID.
# Call it at top level.
start_root_mdsd() {
	"$MDSD" --listen "$1" --backend etcd --etcd "$ETCD_LO" --ttl-ms "$TTL_MS" \
		>>"$T/mdsd-$2.log" 2>&1 &
	eval "${2}PID=$!"
}

# start_agent NS ID ETCD: mdsd --agent in namespace NS over etcd URL(s)
# ETCD, logging to $T/agent-ID.log; its PID in $APID_ID.  Call it at top
# level: the background PID must stay in the test's shell.
start_agent() {
	ip netns exec "$1" "$MDSD" --listen "$AGENT_HTTP" --backend etcd \
		--etcd "$3" --agent --group "$G" --ttl-ms "$TTL_MS" \
		--host "$1" -v >>"$T/agent-$2.log" 2>&1 &
	eval "APID_$2=$!"
}

# unload_retrying: at exit, rmmod dfkv, tried for about 5 s while the
# nodes of the namespaces just deleted finish their teardown.
unload_retrying() {
	i=0
	while grep -q '^dfkv ' /proc/modules && [ $i -lt 25 ]; do
		rmmod dfkv 2>/dev/null || sleep 0.2
		i=$((i + 1))
	done
}
