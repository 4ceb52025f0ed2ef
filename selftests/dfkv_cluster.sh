#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# libdfkv against dfkv.ko, inside the test VM as root: three nodes in three
# network namespaces, each reached over a veth pair from the root namespace
# (two over IPv4, one over IPv6, TEST-NET-1 and ULA addresses that exist
# only inside this VM), each created with dfkvctl inside its namespace with
# a TCP listener.  A client in the root namespace (libdfkv, static members)
# spreads 10,000 blocks over them (2,500 on the debug kernel), loads every
# one back byte-exact, and each node's object count matches the Ketama
# ring.  The Python binding's Client stores the golden vectors' objects and
# they land, under their golden block keys, on the golden node.  A node is
# deleted while readers run: its blocks become misses, no call fails or
# hangs, the other two keep serving.  A node in the client's own namespace
# is used through /dev/dfkv (client counters, node accept counter), and
# over TCP when asked.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d)
chmod 755 "$T"
# Private copies: a concurrent build may replace the binaries under us.
cp "$DFKVCTL" "$T/dfkvctl" || { echo "Bail out! no $DFKVCTL"; exit 1; }
CLIENT_SRC=$DFKV_REPO/build/selftests/dfkv_cluster_client
cp "$CLIENT_SRC" "$T/client" || { echo "Bail out! no $CLIENT_SRC"; exit 1; }
DFKVCTL=$T/dfkvctl
CLIENT=$T/client
export PYTHONPATH="$DFKV_REPO/lib/python" DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so"
GOLDEN=$DFKV_REPO/selftests/unit/golden-vectors.json

NBLOCKS=${DFKV_CLUSTER_BLOCKS:-$(rounds 10000)}
MIN=4096
MAX=8192
PORT=7400
NS_A=dfkv-a NS_B=dfkv-b NS_C=dfkv-c
# Node names and weights are those of the golden Ketama vector.
MEMBERS="node-a=192.0.2.2:$PORT,node-b=192.0.2.6:$PORT,node-c=[fd00:df::2]:$PORT@2"
LOCAL_PORT=7490

cleanup() {
	for ns in $NS_A $NS_B $NS_C; do
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

# inns NS CMD...: run CMD inside network namespace NS.
inns() {
	ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# objects NS NODE: the node's object count (dfkvctl stats --json).
objects() {
	inns "$1" "$DFKVCTL" stats "$2" --json | jq -r .stats.objects
}

# nstat NS NODE NAME: one counter of the node's "stats" object.
nstat() {
	inns "$1" "$DFKVCTL" stats "$2" --json | jq -r --arg f "$3" '.stats[$f]'
}

# ns_of NODE: the namespace holding NODE.
ns_of() {
	case "$1" in
	node-a) echo $NS_A ;;
	node-b) echo $NS_B ;;
	node-c) echo $NS_C ;;
	esac
}

# veth NS ROOTIF ROOTADDR NSADDR...: a veth pair from the root namespace
# into NS; addresses with prefix length (IPv6 ones without DAD).
veth() {
	ns=$1 rif=$2 raddr=$3
	shift 3
	ip netns add "$ns" &&
	ip link add "$rif" type veth peer name eth0 netns "$ns" &&
	ip -n "$ns" link set lo up &&
	ip -n "$ns" link set eth0 up &&
	ip link set "$rif" up || return 1
	case "$raddr" in
	*:*) ip addr add "$raddr" dev "$rif" nodad ;;
	*) ip addr add "$raddr" dev "$rif" ;;
	esac || return 1
	for a in "$@"; do
		case "$a" in
		*:*) ip -n "$ns" addr add "$a" dev eth0 nodad ;;
		*) ip -n "$ns" addr add "$a" dev eth0 ;;
		esac || return 1
	done
}

t_netns() {
	modprobe veth 2>/dev/null
	veth $NS_A dfkv-va 192.0.2.1/30 192.0.2.2/30 &&
	veth $NS_B dfkv-vb 192.0.2.5/30 192.0.2.6/30 &&
	veth $NS_C dfkv-vc fd00:df::1/64 fd00:df::2/64 192.0.2.10/30 &&
	ip addr add 192.0.2.9/30 dev dfkv-vc &&
	ip route get 192.0.2.2 | grep -q "dev dfkv-va" &&
	ip -6 route get fd00:df::2 | grep -q "dev dfkv-vc"
}

t_nodes() {
	inns $NS_A "$DFKVCTL" node add node-a --ram 96M --max-value 1M --no-evict &&
	inns $NS_B "$DFKVCTL" node add node-b --ram 96M --max-value 1M --no-evict &&
	inns $NS_C "$DFKVCTL" node add node-c --ram 160M --max-value 1M --no-evict \
		--idle-ms 120000 &&
	inns $NS_A "$DFKVCTL" listener add node-a 192.0.2.2 --port $PORT &&
	inns $NS_B "$DFKVCTL" listener add node-b 192.0.2.6:$PORT &&
	inns $NS_C "$DFKVCTL" listener add node-c '[fd00:df::2]' --port $PORT &&
	inns $NS_C "$DFKVCTL" listener add node-c 192.0.2.10 --port $PORT &&
	# Nodes are per namespace: none is visible from the root namespace.
	[ -z "$("$DFKVCTL" node list)" ] &&
	inns $NS_C "$DFKVCTL" node show node-c >"$T/show" &&
	grep -Eq "listeners +tcp \[fd00:df::2\]:$PORT$" "$T/show" &&
	grep -Eq "^ +tcp 192.0.2.10:$PORT$" "$T/show" &&
	grep -Eq "idle 120000 ms" "$T/show" ||
	{ cat "$T/show"; return 1; }
}

t_spread() {
	"$CLIENT" spread "$MEMBERS" "$NBLOCKS" $MIN $MAX >"$T/spread" ||
	{ cat "$T/spread"; return 1; }
	cat "$T/spread"
	# Every request went over TCP: no member lives in this namespace.
	grep -Eq "^requests tcp [1-9][0-9]* local 0$" "$T/spread" || return 1
	total=0
	for n in node-a node-b node-c; do
		want=$(sed -n "s/^route $n //p" "$T/spread")
		got=$(objects "$(ns_of $n)" $n)
		echo "# $n: $got objects, ring says $want"
		[ -n "$want" ] && [ "$want" -gt 0 ] && [ "$got" = "$want" ] ||
			return 1
		total=$((total + got))
	done
	[ "$total" -eq "$NBLOCKS" ] &&
	# node-c has twice the weight: roughly half the blocks.
	c=$(sed -n "s/^route node-c //p" "$T/spread") &&
	[ "$c" -gt $((NBLOCKS * 2 / 5)) ] && [ "$c" -lt $((NBLOCKS * 3 / 5)) ]
}

t_node_counters() {
	for n in node-a node-b node-c; do
		ns=$(ns_of $n)
		acc=$(nstat "$ns" $n accepts) && hits=$(nstat "$ns" $n hits) &&
		err=$(nstat "$ns" $n proto_errors) || return 1
		echo "# $n: $acc accepts, $hits hits, $err protocol errors"
		[ "$acc" -ge 1 ] && [ "$hits" -ge 1 ] && [ "$err" -eq 0 ] ||
			return 1
	done
}

# The golden objects through the Python Client: the client routes each to
# the golden node, and that node holds it under the golden block key.
t_python_golden() {
	python3 - "$GOLDEN" "$MEMBERS" >"$T/golden" <<'PY' || { cat "$T/golden"; return 1; }
import json, sys
import dfkv
g = json.load(open(sys.argv[1]))
members = sys.argv[2]
ns = {n["name"]: bytes.fromhex(n["ns_hex"]) for n in g["namespaces"]}
routes = {}
for k in g["ketama"]:
    if [(m["name"], m["weight"]) for m in k["members"]] == \
            [("node-a", 1), ("node-b", 1), ("node-c", 2)]:
        routes = {r["id"]: r["node"] for r in k["routes"]}
assert routes, "no golden ring over node-a, node-b, node-c@2"
checked = 0
for o in g["objects"]:
    key = bytes.fromhex(o["key_hex"])
    with dfkv.Client(members, ns[o["ns"]], transport="tcp") as c:
        node, tenant, oid = c.locate(key)
        assert "%016x" % tenant == o["tenant"] and oid.hex() == o["id"], o
        if o["id"] in routes:
            assert node == routes[o["id"]], (node, routes[o["id"]])
        value = b"golden " + o["id"].encode() + b" " + key
        assert c.put(key, value) == dfkv.OK
        st, back = c.get(key)
        assert st == dfkv.OK and back == value, (st, back)
        buf = bytearray(len(value) + 10)
        st, n = c.get(key, buf)
        assert st == dfkv.OK and bytes(buf[:n]) == value
        assert c.exist(key) == (dfkv.OK, len(value))
        st, n, stored = c.get_range(key, 7, 16, buf)
        assert (st, n, stored) == (dfkv.OK, 16, len(value)), (st, n, stored)
        assert bytes(buf[:16]) == value[7:23]
        print(node, o["tenant"] + ":" + o["id"], value.hex())
        checked += 1
assert checked == len(g["objects"])
PY
	while read -r node bk hex; do
		v=$(inns "$(ns_of "$node")" "$DFKVCTL" get "$node" "$bk" | od -An -v -tx1 | tr -d ' \n')
		[ "$v" = "$hex" ] || { echo "$node $bk: '$v', expected '$hex'"; return 1; }
		echo "# $bk on $node"
	done <"$T/golden"
	[ "$(wc -l <"$T/golden")" -ge 4 ]
}

t_midrun() {
	for n in node-a node-c; do
		v=$(echo $n | tr - _)
		eval "before_$v=$(objects "$(ns_of $n)" $n)"
		eval "acc_$v=$(nstat "$(ns_of $n)" $n accepts)"
	done
	timeout 240 "$CLIENT" midrun "$MEMBERS" "$NBLOCKS" $MIN $MAX node-b \
		"ip netns exec $NS_B $DFKVCTL node del node-b" >"$T/mid" 2>&1 ||
	{ cat "$T/mid"; for n in node-a node-c; do
		inns "$(ns_of $n)" "$DFKVCTL" stats $n | grep -E "connections|dropped"
		done; return 1; }
	cat "$T/mid"
	grep -q "^hits node-b 0$" "$T/mid" &&
	inns $NS_B "$DFKVCTL" node list >"$T/list" && [ ! -s "$T/list" ] || return 1
	# The survivors still hold every block, plus the new ones routed to them.
	for n in node-a node-c; do
		v=$(echo $n | tr - _)
		before=$(eval echo "\$before_$v")
		post=$(sed -n "s/^post $n //p" "$T/mid")
		got=$(objects "$(ns_of $n)" $n)
		acc=$(nstat "$(ns_of $n)" $n accepts)
		echo "# $n: $got objects, $before before, $post new; accepts $(eval echo "\$acc_$v") -> $acc"
		[ "$got" -eq $((before + post)) ] || return 1
	done
}

# A node in the client's own namespace: AUTO takes /dev/dfkv (the client's
# counters show only local requests, the node accepts no connection);
# TCP is used when asked for.
t_local_fast_path() {
	"$DFKVCTL" node add node-l --ram 32M &&
	"$DFKVCTL" listener add node-l 127.0.0.1 --port $LOCAL_PORT || return 1
	lm="node-l=127.0.0.1:$LOCAL_PORT"
	"$CLIENT" local "$lm" 500 $MIN $MAX auto >"$T/auto" ||
		{ cat "$T/auto"; return 1; }
	cat "$T/auto"
	grep -Eq "^requests tcp 0 local [1-9]" "$T/auto" &&
	[ "$(here_stat node-l accepts)" -eq 0 ] &&
	[ "$(objects_here node-l)" -eq 500 ] || return 1
	"$CLIENT" local "$lm" 100 $MIN $MAX tcp >"$T/tcp" ||
		{ cat "$T/tcp"; return 1; }
	cat "$T/tcp"
	grep -Eq "^requests tcp [1-9][0-9]* local 0$" "$T/tcp" &&
	acc=$(here_stat node-l accepts) && echo "# node-l: $acc accepts" &&
	[ "$acc" -ge 1 ] && [ "$(objects_here node-l)" -eq 600 ]
}

objects_here() { here_stat "$1" objects; }
here_stat() {
	"$DFKVCTL" stats "$1" --json | jq -r --arg f "$2" '.stats[$f]'
}

# The Python Client on the local node, both ways.
t_python_local() {
	python3 - "node-l=127.0.0.1:$LOCAL_PORT" <<'PY'
import sys
import dfkv
ns = dfkv.ns_build("acme", "m", "r", "vllm-multiwr-v4", "bfloat16", 1, 16,
                   2, "full", (1, 1, 1, 1, 1))
val = bytes(range(256)) * 33
for transport, want in (("auto", "local"), ("tcp", "tcp")):
    with dfkv.Client(sys.argv[1], ns, transport=transport) as c:
        key = b"py-" + transport.encode()
        assert c.put(key, val) == dfkv.OK
        st, back = c.get(key)
        assert st == dfkv.OK and back == val
        assert c.get(b"py-absent")[0] == dfkv.NOT_FOUND
        text = c.stats()
        line = [l for l in text.splitlines() if l.startswith(
            'dfkv_client_requests_total{transport="%s"}' % want)]
        assert line and int(line[0].split()[-1]) > 0, text
        other = "tcp" if want == "local" else "local"
        line = [l for l in text.splitlines() if l.startswith(
            'dfkv_client_requests_total{transport="%s"}' % other)]
        assert not line or int(line[0].split()[-1]) == 0, text
PY
}

t_teardown() {
	# Namespaces go away with their nodes and listeners still in them.
	ip netns del $NS_A && ip netns del $NS_C && ip netns del $NS_B &&
	"$DFKVCTL" node del node-l || return 1
	i=0
	while ! dfkv_unload 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "rmmod dfkv keeps failing"; return 1; }
		sleep 0.2
	done
}

tap_plan 10
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }
tap_check "three namespaces joined by veth (IPv4, IPv6)" t_netns
tap_check "a node with a TCP listener in each namespace (dfkvctl)" t_nodes
tap_check "$NBLOCKS blocks spread, loaded byte-exact, counts match the ring" t_spread
tap_check "node connection counters" t_node_counters
tap_check "Python Client: golden objects on the golden node" t_python_golden
tap_check "node deleted mid-run: misses, no failures, no hangs" t_midrun
tap_check "local node: /dev/dfkv fast path, TCP when asked" t_local_fast_path
tap_check "Python Client on the local node (auto and tcp)" t_python_local
tap_check "teardown with live nodes, module unload" t_teardown
tap_check "no kernel warnings" sh -c '! dmesg | grep -E "BUG:|WARNING:|Oops|refcount_t"'
tap_done
