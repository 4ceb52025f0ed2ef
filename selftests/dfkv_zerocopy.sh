#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Zero-copy GET replies on TCP (tcp.c, struct tcp_lend), inside the test
# VM as root.  A GET's data goes to the socket as the entry's own pages,
# and RAM pages are reused in place for other values, other tenants'
# included: the entry stays pinned until the stack let go of its last
# buffer of them, retransmits included.
#
# A client in a network namespace, behind a veth whose node side drops
# 2% of the packets (netem), GETs a 4 MiB value and stops reading after
# the reply's prefix.  The node's socket buffers take the whole reply, so
# the request is done while the bytes wait for the reader: then the key
# is REMOVEd and the RAM refilled with another tenant's values, and the
# client reads, through the losses: exactly the old bytes.  The entry is
# pinned while the stack holds it (the node's pins gauge: this is what
# fails if the data was copied), and unpinned once the reader has it all.
# A reader that never resumes holds neither the pages nor the node: the
# node's deletion aborts its connection and returns.
#
# Lent bytes are bounded: each lend is charged its whole entry, at most
# a quarter of the node's RAM capacity in all and a connection's send
# buffer on each connection, and a reply over either bound is copied
# (tcp_zc_capped).  Hoarders that send GETs and read nothing fill the
# bounds exactly, never more (tcp_zc_lent_bytes is looked at on every
# wait); an honest reader meanwhile gets whole replies, copied; once the
# hoarders close, the lent bytes are 0 and the node lends again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/disk_lib.sh"

NS=dfkv-zc
IF=dfkv-zc
ADDR=192.0.2.21
PORT=7951
HPORT=7952
SZ=4194304
WMEM=$(sysctl -n net.ipv4.tcp_wmem)

zc_cleanup() {
	ip netns del $NS 2>/dev/null
	sysctl -qw net.ipv4.tcp_wmem="$WMEM"
	disk_cleanup
}
trap zc_cleanup EXIT

tap_plan 8
modprobe veth 2>/dev/null
modprobe sch_netem 2>/dev/null
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }
# Whole replies fit the node's socket buffers (sockets take the size
# their listener had when it was made).
sysctl -qw net.ipv4.tcp_wmem="4096 16777216 16777216"
{ ip netns add $NS &&
	ip link add $IF type veth peer name eth0 netns $NS &&
	ip -n $NS link set lo up && ip -n $NS link set eth0 up &&
	ip link set $IF up && ip addr add $ADDR/30 dev $IF &&
	ip -n $NS addr add 192.0.2.22/30 dev eth0; } ||
	{ echo "Bail out! no veth pair into a network namespace"; exit 1; }

# stalled NAME: the reader NAME (output in $T/NAME) got the prefix.
stalled() { grep -q '^stalled$' "$T/$1" 2>/dev/null; }

# reader NAME SEED: a stallget of key SEED:0 from inside $NS.
reader() {
	DFKV_BLK_PIDFILE="$T/$1.pid" ip netns exec $NS \
		$BLK stallget $ADDR $PORT "$2" 0 $SZ >"$T/$1" 2>&1 &
	wait_until 90 stalled "$1"
}

# reply_queued: the node's socket to the reader holds nearly all of the
# reply (Send-Q: bytes not acknowledged yet; the reader's receive buffer
# took and acknowledged the rest).  The request is done once the pins
# gauge falls from 2 (the request's and the lend's) to 1 (the lend's).
reply_queued() {
	q=$(ss -Htn state established "( sport = :$PORT )" |
		awk '{ print $2 }')
	[ "${q:-0}" -ge $((SZ - 262144)) ]
}

# setup NODE SEED: a 16 MiB node with key SEED:0 of 4 MiB and a listener.
setup() {
	expect 0 "$DFKVCTL" node add "$1" --ram 16M &&
	r=$($BLK put "$1" "$2" 0 1 $SZ) && blk_expect "set" "$r" ok=1 &&
	expect 0 "$DFKVCTL" listener add "$1" $ADDR --port $PORT
}

t_lent_survives() {
	setup zc 51 &&
	zr=$(nstat zc tcp_zc_replies) &&
	expect 0 tc qdisc add dev $IF root netem loss 2% &&
	reader zc1 51 &&
	wait_until 90 reply_queued &&
	wait_until 90 nstat_is zc pins 1 &&
	r=$($BLK rm zc 51 0 1) && blk_expect "removed" "$r" ok=1 &&
	r=$($BLK check zc 51 0 1 $SZ) && blk_expect "gone" "$r" miss=1 &&
	r=$($BLK put zc 52 0 56 262144) && never_wrong "refill" "$r" &&
	expect 0 test "$(nstat zc pins)" = 1 &&
	kill -USR1 "$(cat "$T/zc1.pid")" &&
	wait_until 120 grep -q '^ok=' "$T/zc1" &&
	blk_expect "the old bytes, retransmits too" "$(tail -n 1 "$T/zc1")" \
		ok=1 wrong=0 &&
	wait_until 90 nstat_is zc pins 0 &&
	expect 0 test "$(nstat zc tcp_zc_replies)" = $((zr + 1)) &&
	r=$($BLK check zc 52 0 56 262144) && never_wrong "the refill" "$r" &&
	expect 0 tc qdisc del dev $IF root
}
tap_check "GET data lent to a stalled reader: the old bytes after REMOVE and refill" \
	t_lent_survives

t_node_del() {
	expect 0 "$DFKVCTL" node del zc &&
	setup zd 53 &&
	reader zd1 53 &&
	wait_until 90 reply_queued &&
	wait_until 90 nstat_is zd pins 1 &&
	expect 0 timeout 120 "$DFKVCTL" node del zd &&
	expect 1 "$DFKVCTL" stats zd
}
tap_check "a reader that never resumes: node deletion aborts it and returns" \
	t_node_del
pid=$(cat "$T/zd1.pid" 2>/dev/null) && kill -KILL "$pid" 2>/dev/null

t_copy_path() {
	# Loopback: the stack copies lent pages as it delivers them (its
	# receive path never holds them, tcp_zc_copied counts it); the
	# reply is whole all the same.
	# 64 MiB: the 4 lends fit the node's bound (a quarter of it) at once.
	expect 0 "$DFKVCTL" node add zl --ram 64M &&
	r=$($BLK put zl 54 0 4 $SZ) && blk_expect "set" "$r" ok=4 &&
	expect 0 "$DFKVCTL" listener add zl 127.0.0.1 --port $PORT &&
	r=$($BLK tcpget 127.0.0.1 $PORT 54 0 4 $SZ) &&
	blk_expect "loopback GETs" "$r" ok=4 wrong=0 &&
	wait_until 90 nstat_is zl pins 0 &&
	expect 0 test "$(nstat zl tcp_zc_replies)" = 4 &&
	expect 0 test "$(nstat zl tcp_zc_copied)" = 4 &&
	expect 0 "$DFKVCTL" node del zl
}
tap_check "loopback GETs: whole, unpinned after" t_copy_path

# The hoarding node: 8 keys of 4 MiB, no deadline ends a silent
# connection; sockets take a 16 MiB send buffer (tcp_wmem above).
HSNDBUF=16777216

# ncap: NCAP is zh's bound of lent bytes, a quarter of its capacity (each
# test runs in a subshell of its own: every one that needs it asks).
ncap() { NCAP=$(($(nstat zh capacity_bytes) / 4)); }

# lent_ok NODE: its lent bytes are within its bound (else noted in $T/over).
lent_ok() {
	l=$(nstat "$1" tcp_zc_lent_bytes)
	[ "$l" -le "$NCAP" ] 2>/dev/null && return 0
	echo "lent bytes $l over the bound $NCAP" >>"$T/over"
	return 1
}

# settled NODE N: N GET replies were decided (lent or copied over a bound)
# since the marks zr0 and zk0, the lent bytes in bound on every look.
settled() {
	lent_ok "$1" || return 0	# wait no more: the check below fails
	[ $(($(nstat "$1" tcp_zc_replies) - zr0 + \
		$(nstat "$1" tcp_zc_capped) - zk0)) -ge "$2" ]
}

# marks NODE: zr0 and zk0 are its lent and capped replies now.
marks() {
	zr0=$(nstat "$1" tcp_zc_replies) && zk0=$(nstat "$1" tcp_zc_capped)
}

# since NODE LENT CAPPED LENT_BYTES: replies lent and capped since the
# marks, and the lent bytes, are these.
since() {
	r=$(($(nstat "$1" tcp_zc_replies) - zr0))
	k=$(($(nstat "$1" tcp_zc_capped) - zk0))
	l=$(nstat "$1" tcp_zc_lent_bytes)
	[ ! -s "$T/over" ] || { cat "$T/over"; return 1; }
	[ "$r $k $l" = "$2 $3 $4" ] && return 0
	echo "lent $r capped $k lent bytes $l, expected $2 $3 $4"
	return 1
}

# hoard NAME CONNS GETS LEN: a hoarder from inside $NS (output in $T/NAME).
hoard() {
	DFKV_BLK_PIDFILE="$T/$1.pid" ip netns exec $NS \
		$BLK hoard $ADDR $HPORT 61 8 "$4" "$2" "$3" >"$T/$1" 2>&1 &
	wait_until 90 grep -q '^hoarding$' "$T/$1"
}

unhoard() {
	kill -USR1 "$(cat "$T/$1.pid")" &&
	wait_until 90 grep -q '^closed$' "$T/$1"
}

t_hoard_conn() {
	rm -f "$T/over"
	expect 0 "$DFKVCTL" node add zh --ram 128M --idle-ms 0 --min-rate 0 \
		--frame-ms 3600000 &&
	r=$($BLK put zh 61 0 8 $SZ) && blk_expect "set" "$r" ok=8 &&
	ncap &&
	# The connection's bound binds first, then the node's.
	expect 0 test "$NCAP" -ge $((HSNDBUF + SZ)) &&
	expect 0 test "$NCAP" -lt $((HSNDBUF + 8 * SZ)) &&
	expect 0 "$DFKVCTL" listener add zh $ADDR --port $HPORT &&
	marks zh &&
	# One whole key, whose reply stays unacknowledged (the hoarder's
	# receive buffer is full), then 4 KiB of each of 7 more queued
	# behind it: each lend is charged its 4 MiB entry, the connection's
	# send buffer takes 4 of them.
	hoard zh1 1 8 4096 &&
	wait_until 120 settled zh 8 &&
	since zh $((HSNDBUF / SZ)) $((8 - HSNDBUF / SZ)) $HSNDBUF
}
tap_check "a connection that reads nothing: lent bytes up to its send buffer, the rest copied" \
	t_hoard_conn

t_hoard_node() {
	ncap && marks zh &&
	# 8 more connections of one whole GET each: the node's bound, 8
	# lends of 4 MiB in all, takes 4 of them.
	hoard zh2 8 1 0 &&
	wait_until 120 settled zh 8 &&
	n=$(((NCAP - HSNDBUF) / SZ)) &&
	since zh $n $((8 - n)) $((HSNDBUF + n * SZ)) &&
	expect 0 test $((HSNDBUF + n * SZ + SZ)) -gt "$NCAP"
}
tap_check "many connections that read nothing: lent bytes up to the node's bound, the rest copied" \
	t_hoard_node

t_honest() {
	# Another connection meanwhile: whole replies, copied (the bound is
	# full); the hoarders still hold what they held.
	ncap && marks zh &&
	r=$(ip netns exec $NS $BLK tcpget $ADDR $HPORT 61 0 4 $SZ) &&
	blk_expect "honest GETs beside the hoarders" "$r" ok=4 wrong=0 &&
	since zh 0 4 $((NCAP / SZ * SZ)) &&
	lent_ok zh
}
tap_check "an honest reader beside the hoarders gets whole replies" t_honest

t_hoard_gone() {
	ncap && unhoard zh1 && unhoard zh2 &&
	wait_until 120 nstat_is zh tcp_zc_lent_bytes 0 &&
	wait_until 90 nstat_is zh pins 0 &&
	wait_until 90 nstat_is zh conns 0 &&
	# The bound is free again: the same GETs are lent.
	marks zh &&
	r=$(ip netns exec $NS $BLK tcpget $ADDR $HPORT 61 0 4 $SZ) &&
	blk_expect "honest GETs after the hoarders" "$r" ok=4 wrong=0 &&
	wait_until 90 nstat_is zh tcp_zc_lent_bytes 0 &&
	since zh 4 0 0 &&
	wait_until 90 nstat_is zh pins 0 &&
	# Hoarders left holding lends when the node goes.
	hoard zh3 8 1 0 &&
	wait_until 120 settled zh 8 &&
	expect 0 test "$(nstat zh tcp_zc_lent_bytes)" -gt 0 &&
	expect 0 timeout 120 "$DFKVCTL" node del zh &&
	expect 1 "$DFKVCTL" stats zh &&
	unhoard zh3
}
tap_check "hoarders gone: lent bytes back to 0, lending again, node deletion with lends held" \
	t_hoard_gone
for h in zh1 zh2 zh3; do
	pid=$(cat "$T/$h.pid" 2>/dev/null) && kill -KILL "$pid" 2>/dev/null
done

t_unload() {
	expect 0 rmmod dfkv
}
tap_check "unload" t_unload
tap_done
