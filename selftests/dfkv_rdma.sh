#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The RDMA transport (wire epoch 7) over Soft-RoCE, inside the test VM as
# root.  A veth pair joins the root namespace (rva) and namespace dfkv-rb
# (rvb), with an rdma_rxe device on each end.  The 6.1 kernel's rdma_rxe
# sends and receives its RoCE packets in the initial namespace only, so
# RDMA traffic between two namespaces cannot flow; the data path is tested
# in the root namespace (node kvr listening on rva's address, the client
# reaching it through rxe_ra) and the namespace rules with the second end
# (an RDMA listener binds to an address of its node's namespace only).
# Every op over RDMA byte-exact and identical over TCP, values from 1 byte
# to DFKV_RDMA_MAX (default 2 MiB) and one of DFKV_RDMA_BIG (default 16
# MiB; rxe moves 2-4 MB/s under TCG, as ib_write_bw/ib_read_bw show: set
# DFKV_RDMA_MAX=8388608 DFKV_RDMA_BIG=67108864 for the full range, about
# eight minutes), batches of 256, scatter-gather; bad input (wrong
# epoch, too many descriptors, lengths that do not add up, bad rkeys, a
# disconnect mid-PUT, a client that posts its receives late or never)
# fails the request or the connection and the node keeps serving; with
# auth=required, HELLO and AUTH ride as SENDs and requests before AUTH,
# with a replayed or wrong proof, or of another tenant are FORBIDDEN, and
# the third failed AUTH disconnects; the
# node's first-request and idle deadlines and its connection limit hold
# for RDMA connections; a PUT whose RDMA READ never starts (a client that
# offers no READ credit) holds only its part of its peer address's
# receive cap (PUTs from that address are BUSY, another address's OK)
# and is dropped by the frame deadline with everything it held; on a
# disk-only node such a connection's PUT and cold GETs hold only its peer
# address's share of the stages (the GETs over it BUSY, counted in
# stage_busy) while another address stores and loads exact; 300 RDMA PUTs of a key whose TCP leader drips
# its payload all park on the leader's entry (no dfkv_rdma worker sleeps
# for it, an unrelated GET is served over RDMA and TCP) and get the
# leader's result, and with a leader that never finishes, deleting the
# node and removing the rxe device end them; the node is deleted, the
# rxe device removed and the module unloaded with RDMA connections open.
# With rdma_expose
# request, request-mw and request-mr the ops and the Python binding run
# again, and a fake node in the client process shows what the keys
# libdfkv sends allow in each mode, libdfkv's default (request) too.  rxe reports type-2B memory windows
# but checks an access with one against its MR's range only, so request
# makes registrations there and request-mw windows (access and lifetime
# checked, not the range).
# vm-run fails the run on any kernel warning.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d)
chmod 755 "$T"
cp "$DFKVCTL" "$T/dfkvctl" || { echo "Bail out! no $DFKVCTL"; exit 1; }
CLIENT_SRC=$DFKV_REPO/build/selftests/dfkv_rdma_client
cp "$CLIENT_SRC" "$T/client" || { echo "Bail out! no $CLIENT_SRC"; exit 1; }
DFKVCTL=$T/dfkvctl
CLIENT=$T/client
NS_B=dfkv-rb
IP_A=192.0.2.65 IP_B=192.0.2.66
# a second address of rva: another peer of kvr's
IP_A2=192.0.2.69
MAX=${DFKV_RDMA_MAX:-2097152}
BIG=${DFKV_RDMA_BIG:-16777216}

inns() {
	ns=$1
	shift
	ip netns exec "$ns" "$@"
}

cleanup() {
	kill $HOLD $LEADER $FOL 2>/dev/null
	wait 2>/dev/null
	qp_trace_off 2>/dev/null
	park_trace_off 2>/dev/null
	inns $NS_B "$DFKVCTL" node del kvb 2>/dev/null
	rdma link del rxe_ra 2>/dev/null
	inns $NS_B rdma link del rxe_rb 2>/dev/null
	ip link del rva 2>/dev/null
	ip netns del $NS_B 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
HOLD=
LEADER=
FOL=

# nstat NAME: a counter of node $STAT_NODE, kvr but in stage_share
# (dfkvctl stats --json; no python: it starts slowly under TCG).
STAT_NODE=kvr
nstat() {
	v=$("$DFKVCTL" stats $STAT_NODE --json | tr -d ' \n' |
		sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p")
	echo "${v:--1}"
}

setup_net() {
	modprobe -a rdma_rxe rdma_ucm ib_uverbs veth || return 1
	ip netns add $NS_B &&
	ip link add rva type veth peer name rvb &&
	ip link set rvb netns $NS_B &&
	ip addr add $IP_A/30 dev rva && ip addr add $IP_A2/30 dev rva &&
	ip link set rva up &&
	inns $NS_B ip addr add $IP_B/30 dev rvb &&
	inns $NS_B ip link set rvb up && inns $NS_B ip link set lo up &&
	rdma link add rxe_ra type rxe netdev rva &&
	inns $NS_B rdma link add rxe_rb type rxe netdev rvb
}

setup_node() {
	dfkv_load || return 1
	"$DFKVCTL" node add kvr --ram 200M --max-value 64M --no-evict &&
	"$DFKVCTL" listener add kvr $IP_A --transport rdma &&
	"$DFKVCTL" listener add kvr $IP_A
}

listed() {
	l=$("$DFKVCTL" listener list kvr)
	echo "$l"
	[ "$(echo "$l" | grep -c kvr)" -eq 2 ] &&
	echo "$l" | grep -q "^kvr *rdma *$IP_A *7401\$" &&
	echo "$l" | grep -q "^kvr *tcp *$IP_A *7400\$"
}

# A second RDMA listener on the same address is refused, so is one on an
# address of no namespace interface; a node of dfkv-rb listens on rvb's
# address, which the root namespace's node cannot, and is deleted with
# its listener.
listener_rules() {
	! "$DFKVCTL" listener add kvr $IP_A --transport rdma 2>/dev/null &&
	! "$DFKVCTL" listener add kvr 198.51.100.7 --transport rdma 2>/dev/null &&
	! "$DFKVCTL" listener add kvr $IP_B --transport rdma 2>/dev/null &&
	inns $NS_B "$DFKVCTL" node add kvb --ram 16M &&
	inns $NS_B "$DFKVCTL" listener add kvb $IP_B --transport rdma &&
	inns $NS_B "$DFKVCTL" listener list kvb | grep -q "rdma .*$IP_B" &&
	inns $NS_B "$DFKVCTL" listener del kvb $IP_B --transport rdma &&
	inns $NS_B "$DFKVCTL" listener add kvb $IP_B --transport rdma &&
	inns $NS_B "$DFKVCTL" node del kvb
}

ops() {
	"$CLIENT" ops $IP_A "$MAX"
}

# rxe under TCG may take longer than the default frame_ms to READ a
# DFKV_RDMA_BIG value: the deadline is raised as for a slow link.
big() {
	"$DFKVCTL" node set kvr --frame-ms 3600000 || return 1
	"$CLIENT" big $IP_A "$BIG"
	rc=$?
	"$DFKVCTL" node set kvr --frame-ms 30000 && [ $rc -eq 0 ]
}

counters() {
	c=$(nstat rdma_accepts) r=$(nstat rdma_reads) w=$(nstat rdma_writes)
	rb=$(nstat rdma_read_bytes) wb=$(nstat rdma_write_bytes)
	echo "accepts $c reads $r writes $w read_bytes $rb write_bytes $wb"
	[ "$c" -ge 2 ] && [ "$r" -gt 0 ] && [ "$w" -gt 0 ] &&
		[ "$rb" -ge "$BIG" ] && [ "$wb" -ge "$BIG" ]
}

raw() {
	"$CLIENT" raw $IP_A "$1"
}

# The Python binding over RDMA with rdma_expose $1: a registered pool, a
# value into and out of it, one outside it, and unregistering; keys of
# the kind the mode makes.
py_rdma() {
	PYTHONPATH="$DFKV_REPO/lib/python" DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so" \
	python3 - "$IP_A" "$1" <<'PY'
import os, re, sys
import dfkv
mode = sys.argv[2]
c = dfkv.Client("kvr=%s:7400" % sys.argv[1], b"py-rdma-" + mode.encode(),
                transport="rdma", rdma_expose=mode)
pool = bytearray(1 << 20)
c.register_memory(pool)
pool[:300000] = os.urandom(300000)
assert c.put(b"py-0", memoryview(pool)[:300000]) == dfkv.OK
st, n = c.get(b"py-0", memoryview(pool)[500000:])
assert st == dfkv.OK and n == 300000 and pool[500000:800000] == pool[:300000]
other = os.urandom(70000)
assert c.put(b"py-1", other) == dfkv.OK
st, data = c.get(b"py-1")
assert st == dfkv.OK and data == other
keys = dict(re.findall(r'request_keys_total\{kind="(\w+)"\} (\d+)',
                       c.stats()))
print("python over rdma, %s: ok, request keys %s" % (mode, keys))
assert int(keys["registration"]) > 0
# rxe: request makes registrations (windows unbounded there), request-mw
# windows
assert (int(keys["window"]) > 0) == (mode == "request-mw" and
                                      os.environ["MW"] == "yes")
c.unregister_memory(pool)
c.close()
PY
}

# Whether rxe_ra reports type-2B memory windows (ibv_devinfo -v).
has_mw() {
	ibv_devinfo -v -d rxe_ra >"$T/devinfo" 2>&1 || return 1
	grep -iE "max_mw|MEM_WINDOW" "$T/devinfo" | sed 's/^/# /'
	grep -q MEM_WINDOW_TYPE_2B "$T/devinfo" &&
	[ "$(sed -n 's/.*max_mw:[[:space:]]*\([0-9]*\).*/\1/p' "$T/devinfo")" -gt 0 ]
}

# rdma_expose $1 against the client's fake node (see dfkv_rdma_client.c):
# keys exactly as wide, as lasting and with the access the mode promises.
exposure() {
	"$CLIENT" expose $IP_A "$1"
}

# After the bad inputs: every connection is gone (the node may still be
# tearing down the last one: waited for), no pin is left, and a new
# client is served.
still_serving() {
	wait_stat rdma_conns 0 && wait_stat pins 0
	conns=$(nstat rdma_conns) pins=$(nstat pins) errs=$(nstat rdma_cq_errors)
	echo "conns $conns pins $pins cq_errors $errs"
	[ "$conns" -eq 0 ] && [ "$pins" -eq 0 ] && [ "$errs" -gt 0 ] &&
		"$CLIENT" ops $IP_A 70000
}

# start_hold: a client keeping traffic on one connection, in the
# background; waits for its first line.
start_hold() {
	"$CLIENT" hold $IP_A 60 >"$T/hold.out" 2>"$T/hold.err" &
	HOLD=$!
	for _ in $(seq 100); do
		grep -q ready "$T/hold.out" 2>/dev/null && break
		sleep 0.1
	done
	sleep 1
	[ "$(nstat rdma_conns)" -ge 1 ]
}

# stop_hold: the client must end by itself (its node went away), soon.
stop_hold() {
	for _ in $(seq 150); do
		kill -0 $HOLD 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $HOLD 2>/dev/null; then
		echo "the client did not notice"
		return 1
	fi
	wait $HOLD
	rc=$?
	HOLD=
	cat "$T/hold.err"
	return $rc
}

node_del_live() {
	start_hold || return 1
	timeout 60 "$DFKVCTL" node del kvr || return 1
	stop_hold
}

# The device goes away under a live connection: the connection is torn
# down, the listener bound to it dies; with the device back, the listener
# is added again and serves.
rxe_remove_live() {
	setup_node_again || return 1
	start_hold || return 1
	timeout 60 rdma link del rxe_ra || return 1
	stop_hold || return 1
	[ "$(nstat rdma_conns)" -eq 0 ] &&
	rdma link add rxe_ra type rxe netdev rva &&
	"$DFKVCTL" listener del kvr $IP_A --transport rdma &&
	"$DFKVCTL" listener add kvr $IP_A --transport rdma &&
	"$CLIENT" ops $IP_A 5000
}

setup_node_again() {
	"$DFKVCTL" node del kvr 2>/dev/null
	"$DFKVCTL" node add kvr --ram 64M --max-value 4M --no-evict &&
	"$DFKVCTL" listener add kvr $IP_A --transport rdma &&
	"$DFKVCTL" listener add kvr $IP_A
}

rmmod_live() {
	setup_node_again || return 1
	start_hold || return 1
	timeout 60 rmmod dfkv || return 1
	stop_hold
}

# wait_stat NAME VALUE: poll a counter of nstat's node until it reads VALUE
# (giving up after a minute).
wait_stat() {
	end=$(($(date +%s) + 60))
	while [ "$(nstat "$1")" -ne "$2" ]; do
		if [ "$(date +%s)" -ge $end ]; then
			echo "$1 is $(nstat "$1"), not $2"
			return 1
		fi
		sleep 0.1
	done
}

stop_idle() {
	kill $HOLD 2>/dev/null
	wait $HOLD
	HOLD=
}

# start_idle NREQ SECONDS: in the background, a raw client that sends
# NREQ requests, then nothing, waiting SECONDS for the node to disconnect
# it; waits for its "ready" (it is connected).
start_idle() {
	"$CLIENT" idle $IP_A "$1" "$2" >"$T/idle.out" 2>"$T/idle.err" &
	HOLD=$!
	for _ in $(seq 300); do
		grep -q ready "$T/idle.out" 2>/dev/null && return 0
		kill -0 $HOLD 2>/dev/null || break
		sleep 0.1
	done
	stop_idle
	cat "$T/idle.out" "$T/idle.err"
	return 1
}

# dropped_idle DROPS: the idle client's connection is gone from the node,
# which disconnected it (the client saw it) as one more deadline drop.
dropped_idle() {
	wait_stat rdma_conns 0
	gone=$?
	[ $gone -eq 0 ] || kill $HOLD
	wait $HOLD
	rc=$?
	HOLD=
	cat "$T/idle.out" "$T/idle.err"
	d=$(nstat deadline_drops)
	echo "deadline_drops $1 -> $d"
	[ $gone -eq 0 ] && [ $rc -eq 0 ] && [ "$d" -eq $(($1 + 1)) ]
}

# A connection that never sends a request is closed first_request_ms
# after it was accepted.
first_request_deadline() {
	"$DFKVCTL" node set kvr --first-request-ms 1000 --idle-ms 300000 ||
		return 1
	drops=$(nstat deadline_drops)
	start_idle 0 120 || return 1
	dropped_idle "$drops"
}

# A connection idle after its request is closed idle_ms later; the first
# request deadline (10 min) cannot be what closes it.
idle_deadline() {
	"$DFKVCTL" node set kvr --first-request-ms 600000 --idle-ms 1000 ||
		return 1
	drops=$(nstat deadline_drops)
	start_idle 1 120 || return 1
	dropped_idle "$drops"
	ok=$?
	"$DFKVCTL" node set kvr --first-request-ms 30000 --idle-ms 300000 &&
		[ $ok -eq 0 ]
}

# The kernel's rdma_create_qp calls (rdma_cma:cm_qp_create), traced in
# an instance of our own.
QPT=/sys/kernel/tracing/instances/dfkv-rdma
qp_trace_on() {
	[ -d /sys/kernel/tracing/instances ] ||
		mount -t tracefs nodev /sys/kernel/tracing || return 1
	mkdir -p $QPT &&
	echo 1 >$QPT/events/rdma_cma/cm_qp_create/enable
}

qp_trace_off() {
	[ -d $QPT ] || return 0
	echo 0 >$QPT/events/rdma_cma/cm_qp_create/enable
	rmdir $QPT
}

# With --max-conns 2 and one connection held (no deadlines), a second is
# accepted and a third rejected BUSY before the node allocates anything
# for it: one kernel QP is created in all (the accepted connection's, so
# the trace works), the rejected one is counted as refused and not as
# accepted, the accepted one still answers; nothing is left afterwards.
conn_limit() {
	"$DFKVCTL" node set kvr --max-conns 2 --first-request-ms 0 \
		--idle-ms 0 || return 1
	qp_trace_on || return 1
	start_idle 0 600 || return 1
	ref=$(nstat conns_refused) acc=$(nstat rdma_accepts)
	: >$QPT/trace
	"$CLIENT" limit $IP_A
	rc=$?
	qps=$(grep -c cm_qp_create $QPT/trace)
	qp_trace_off
	ref=$(($(nstat conns_refused) - ref)) acc=$(($(nstat rdma_accepts) - acc))
	echo "kernel QPs created $qps, refused +$ref, accepted +$acc"
	stop_idle
	wait_stat rdma_conns 0 && [ "$(nstat pins)" -eq 0 ] &&
	"$DFKVCTL" node set kvr --max-conns 1024 --first-request-ms 30000 \
		--idle-ms 300000 &&
	[ $rc -eq 0 ] && [ "$qps" -eq 1 ] && [ "$ref" -eq 1 ] && [ "$acc" -eq 1 ]
}

# wait_above NAME VALUE: poll a counter of node kvr until it exceeds
# VALUE (giving up after a minute).
wait_above() {
	end=$(($(date +%s) + 60))
	while [ "$(nstat "$1")" -le "$2" ]; do
		if [ "$(date +%s)" -ge $end ]; then
			echo "$1 is $(nstat "$1"), still not above $2"
			return 1
		fi
		sleep 0.1
	done
}

# The first part of a PUT kvr receives: an extent (4 MiB) of its RAM.
PART=4194304

# A connection that offers the node no RDMA READ (responder resources 0)
# sends a PUT whose READ never starts: it holds its first part of the
# peer address's receive cap (a quarter of an eighth of 200 MiB, less
# than two parts), so a PUT of a part on another connection from that
# address is BUSY (one more recv_busy) while another address's PUTs are
# OK; closed, it gives its part back.  The frame deadline and the rate
# floor are off meanwhile.
recv_cap() {
	"$DFKVCTL" node set kvr --frame-ms 3600000 --min-rate 0 || return 1
	busy=$(nstat recv_busy)
	held_run cap stalled recv_reserved_bytes $PART \
		"$CLIENT" recvcap $IP_A $IP_A2 "$T/go"
	wait_stat recv_reserved_bytes 0 && wait_stat rdma_conns 0
	freed=$?
	busy=$(($(nstat recv_busy) - busy))
	echo "recv_busy +$busy"
	"$DFKVCTL" node set kvr --frame-ms 30000 --min-rate 65536 &&
	[ $held -eq 0 ] && [ $rc -eq 0 ] && [ $freed -eq 0 ] && [ $busy -eq 1 ]
}

# Such a connection's PUT READ never starts and a GET's WRITE, posted
# after it (rdma_reads counts the READ posted), waits behind it with its
# entry pinned: with the frame deadline at its floor the node drops the
# connection (one more rdma_deadline_drops), which unpins the entry,
# aborts the PUT (its key stays absent) and gives its part back.
stall_deadline() {
	"$DFKVCTL" node set kvr --frame-ms 3600000 --min-rate 0 || return 1
	drops=$(nstat rdma_deadline_drops) reads=$(nstat rdma_reads)
	rm -f "$T/go"
	"$CLIENT" stall $IP_A "$T/go" 120 >"$T/stall.out" 2>"$T/stall.err" &
	HOLD=$!
	wait_line put "$T/stall.out" $HOLD &&
	wait_stat recv_reserved_bytes $PART && wait_above rdma_reads "$reads" &&
	touch "$T/go" && wait_line get "$T/stall.out" $HOLD &&
	wait_stat pins 1
	held=$?
	"$DFKVCTL" node set kvr --frame-ms 1000
	wait_stat rdma_conns 0
	gone=$?
	end_bg $HOLD stall
	rc=$?
	HOLD=
	drops=$(($(nstat rdma_deadline_drops) - drops))
	pins=$(nstat pins) res=$(nstat recv_reserved_bytes)
	echo "rdma_deadline_drops +$drops, pins $pins, recv_reserved_bytes $res"
	"$DFKVCTL" node set kvr --frame-ms 30000 --min-rate 65536 &&
	[ $held -eq 0 ] && [ $gone -eq 0 ] && [ $rc -eq 0 ] &&
	[ $drops -eq 1 ] && [ "$pins" -eq 0 ] && [ "$res" -eq 0 ]
}

# A disk-only node, kvs (16 MiB of stages, a peer address's share 4 MiB,
# 2 MiB values; its RDMA listener on IP_A2, kvr has IP_A's): from IP_A a
# connection offering no RDMA READ sends a PUT, staged, whose READ never
# starts, and 6 GETs of cold values whose WRITEs and replies wait behind
# it. The GET whose read completes first fills the share, the 5 others
# are BUSY: stage_busy +5. Then a PUT from IP_A2 is OK and reads back
# exact with another cold value, counting no stage_busy; closed, the
# connections leave nothing pinned (and every stage given back: a peer
# freed with stages still charged warns, which fails the run).
stage_share() {
	modprobe loop && truncate -s 64M "$T/stage.img" &&
	loop=$(losetup -f --show "$T/stage.img") || return 1
	"$DFKVCTL" node add kvs --ram 16M --max-value 4M --disk-only &&
	"$DFKVCTL" disk add kvs "$loop" --format --name d0 &&
	"$DFKVCTL" listener add kvs $IP_A2 --transport rdma &&
	"$DFKVCTL" node set kvs --frame-ms 3600000 --min-rate 0
	made=$?
	STAT_NODE=kvs
	busy=$(nstat stage_busy)
	held=1 rc=1 freed=1
	if [ $made -eq 0 ]; then
		held_run stg held stage_busy $((busy + 5)) \
			"$CLIENT" stages $IP_A2 $IP_A $IP_A2 "$T/go"
		wait_stat rdma_conns 0 && wait_stat pins 0
		freed=$?
	fi
	busy=$(($(nstat stage_busy) - busy))
	STAT_NODE=kvr
	echo "stage_busy +$busy"
	"$DFKVCTL" node del kvs
	losetup -d "$loop"
	rm -f "$T/stage.img"
	[ $held -eq 0 ] && [ $rc -eq 0 ] && [ $freed -eq 0 ] && [ $busy -eq 5 ]
}

FOLLOWERS=300

# The node's parkings of PUT followers (dfkv_store_put_park), counted by
# a kprobe event enabled in an instance of our own.
PKT=/sys/kernel/tracing/instances/dfkv-park
KPE=/sys/kernel/tracing/kprobe_events
park_trace_on() {
	[ -d /sys/kernel/tracing/instances ] ||
		mount -t tracefs nodev /sys/kernel/tracing || return 1
	echo 'p:dfkv_test/put_park dfkv:dfkv_store_put_park' >>$KPE &&
	mkdir -p $PKT &&
	echo 1 >$PKT/events/dfkv_test/put_park/enable
}

park_trace_off() {
	[ -d $PKT ] || return 0
	echo 0 >$PKT/events/dfkv_test/put_park/enable
	rmdir $PKT
	echo '-:dfkv_test/put_park' >>$KPE
}

# wait_parks N: poll until N followers parked (giving up after a minute).
wait_parks() {
	pend=$(($(date +%s) + 60))
	while [ "$(grep -c put_park $PKT/trace)" -ne "$1" ]; do
		if [ "$(date +%s)" -ge $pend ]; then
			echo "$(grep -c put_park $PKT/trace) followers parked, not $1"
			return 1
		fi
		sleep 0.1
	done
}

# never_in FN: no task sleeps in FN over two seconds of samples.
never_in() {
	for _ in $(seq 20); do
		if grep -qs "$1" /proc/[0-9]*/stack; then
			echo "$(grep -ls "$1" /proc/[0-9]*/stack | wc -l) tasks in $1"
			return 1
		fi
		sleep 0.1
	done
}

# wait_line WORD FILE PID: poll until FILE has a line WORD, while PID
# lives (two minutes at most).
wait_line() {
	lend=$(($(date +%s) + 120))
	until grep -qx "$1" "$2" 2>/dev/null; do
		if ! kill -0 "$3" 2>/dev/null || [ "$(date +%s)" -ge $lend ]; then
			echo "no \"$1\" from $3"
			return 1
		fi
		sleep 0.1
	done
}

# ended PID SECONDS: poll until PID, a child, ended; its status, or 124
# when it still runs after SECONDS.
ended() {
	eend=$(($(date +%s) + $2))
	while kill -0 "$1" 2>/dev/null; do
		[ "$(date +%s)" -lt $eend ] || return 124
		sleep 0.1
	done
	wait "$1"
}

# bounded SECONDS CMD...: run CMD in the background (BPID) until it
# ends, its output kept off tap_check's pipe; its status, or 124 when it
# still runs after SECONDS (a hang in the kernel cannot be killed: it is
# left to end later).
bounded() {
	bs=$1
	shift
	"$@" >"$T/bounded.out" 2>&1 &
	BPID=$!
	ended $BPID "$bs"
	brc=$?
	cat "$T/bounded.out"
	[ $brc -ne 124 ] || echo "$* still runs after $bs s"
	return $brc
}

# end_bg PID NAME: PID must end by itself within two minutes; its status
# and its output.
end_bg() {
	ended "$1" 120
	rc=$?
	if [ $rc -eq 124 ]; then
		echo "$2 still runs after 120 s"
		kill "$1"
		wait "$1"
	fi
	cat "$T/$2.out" "$T/$2.err"
	return $rc
}

# held_run TAG LINE STAT VALUE CMD...: run CMD, a client that holds its
# requests until $T/go exists, in the background (output $T/TAG.out and
# .err); wait for LINE from it and for STAT to reach VALUE (held: 0 when
# both came), then let it go and reap it (rc: its status, end_bg's).
held_run() {
	tag=$1 line=$2 stat=$3 val=$4
	shift 4
	rm -f "$T/go"
	"$@" >"$T/$tag.out" 2>"$T/$tag.err" &
	HOLD=$!
	wait_line "$line" "$T/$tag.out" $HOLD && wait_stat "$stat" "$val"
	held=$?
	touch "$T/go"
	end_bg $HOLD "$tag"
	rc=$?
	HOLD=
}

# start_leader ID finish|never: a TCP PUT of 4096 bytes of ID that stops
# after 100 of them, in the background (LEADER); the node has reserved
# its entry when this returns.
start_leader() {
	rm -f "$T/go"
	"$CLIENT" leader $IP_A "$1" "$T/go" "$2" >"$T/leader.out" \
		2>"$T/leader.err" &
	LEADER=$!
	wait_line ready "$T/leader.out" $LEADER &&
	wait_stat recv_reserved_bytes 4096
}

# start_followers ID finish GOFILE | ID gone: the RDMA followers of ID
# in the background (FOL), until the node has all their requests and has
# served an unrelated GET over RDMA and over TCP; then every follower
# parks on the leader's entry, and no task (a dfkv_rdma worker) sleeps
# for the leader.
start_followers() {
	: >$PKT/trace
	"$CLIENT" followers $IP_A "$1" $FOLLOWERS "$2" ${3:+"$3"} \
		>"$T/fol.out" 2>"$T/fol.err" &
	FOL=$!
	wait_line sent "$T/fol.out" $FOL || return 1
	never_in dfkv_store_put_wait
	asleep=$?
	wait_parks $FOLLOWERS && [ $asleep -eq 0 ]
}

# The leader's payload arrives: every follower is answered OK with the
# stored length, and the block holds the leader's bytes.
followers_finish() {
	"$DFKVCTL" node set kvr --first-request-ms 0 --frame-ms 3600000 \
		--min-rate 0 && park_trace_on || return 1
	start_leader park-1 finish && start_followers park-1 finish "$T/go"
	parked=$?
	touch "$T/go"
	end_bg $FOL fol
	f=$?
	end_bg $LEADER leader
	l=$?
	park_trace_off
	"$DFKVCTL" node set kvr --first-request-ms 30000 --frame-ms 30000 \
		--min-rate 65536 &&
	[ $parked -eq 0 ] && [ $f -eq 0 ] && [ $l -eq 0 ]
}

# A leader that never finishes: NODE_DEL ends every follower's
# connection (none answered OK) and the leader's.
followers_node_del() {
	"$DFKVCTL" node set kvr --first-request-ms 0 --frame-ms 3600000 \
		--min-rate 0 && park_trace_on || return 1
	start_leader park-2 never && start_followers park-2 gone
	parked=$?
	bounded 60 "$DFKVCTL" node del kvr
	d=$?
	[ $d -ne 124 ] || kill $LEADER
	end_bg $FOL fol
	f=$?
	touch "$T/go"
	end_bg $LEADER leader
	l=$?
	[ $d -ne 124 ] || ended $BPID 60 || echo "node del did not end"
	park_trace_off
	[ $parked -eq 0 ] && [ $d -eq 0 ] && [ $f -eq 0 ] && [ $l -eq 0 ]
}

# A leader that never finishes: removing the RDMA device ends every
# follower's connection while the leader still holds its entry.
followers_rxe_del() {
	setup_node_again && "$DFKVCTL" node set kvr --first-request-ms 0 \
		--frame-ms 3600000 --min-rate 0 && park_trace_on || return 1
	start_leader park-3 never && start_followers park-3 gone
	parked=$?
	bounded 60 rdma link del rxe_ra
	d=$?
	rp=$BPID
	end_bg $FOL fol
	f=$?
	touch "$T/go"
	end_bg $LEADER leader
	l=$?
	[ $d -ne 124 ] || ended $rp 60 || echo "rdma link del did not end"
	park_trace_off
	rdma link add rxe_ra type rxe netdev rva && setup_node_again &&
	[ $parked -eq 0 ] && [ $d -eq 0 ] && [ $f -eq 0 ] && [ $l -eq 0 ]
}

# tcheck NAME CMD...: tap_check, then the seconds it took (TCG is slow).
tcheck() {
	t0=$(date +%s)
	tap_check "$@"
	echo "# $(($(date +%s) - t0)) s"
}

tap_plan 39
tcheck "netns, veth and rdma_rxe on both ends" setup_net
tcheck "node with RDMA and TCP listeners" setup_node
tcheck "listeners dump shows both transports" listed
tcheck "listener rules" listener_rules
tcheck "RDMA requested without a device: DFKV_E_NODEV" \
	"$CLIENT" nodev $IP_A
tcheck "every op over RDMA, 1 B to $MAX B, identical over TCP" ops
tcheck "one value of $BIG B" big
tcheck "Python binding over RDMA, registered memory" py_rdma pool
MW=no
has_mw && MW=yes
export MW
echo "# rxe_ra memory windows: $MW"
tcheck "every op over RDMA, request exposure, identical over TCP" \
	"$CLIENT" ops $IP_A 1048576 request
tcheck "every op over RDMA, request-mw exposure (windows)" \
	"$CLIENT" ops $IP_A 1048576 request-mw
tcheck "every op over RDMA, request-mr exposure" \
	"$CLIENT" ops $IP_A 262144 request-mr
tcheck "Python binding over RDMA, request exposure" py_rdma request
tcheck "Python binding over RDMA, request-mw exposure" py_rdma request-mw
tcheck "pool exposure: a pool's key outlives its request (control)" \
	exposure pool
tcheck "request exposure: keys cover one request's range, die with it" \
	exposure request
tcheck "the default exposure is request's: no key outlives its request" \
	exposure default
tcheck "request-mr exposure: keys cover one request's range, die with it" \
	exposure request-mr
tcheck "request-mw exposure: windows live and grant access for one request" \
	exposure request-mw
tcheck "RDMA counters" counters
tcheck "HELLO with a wrong epoch is rejected" raw epoch
tcheck "bad descriptors fail the request only" raw desc
tcheck "bad rkeys fail the connection cleanly" raw rkey
tcheck "disconnect in the middle of a PUT" raw midput
tcheck "a client that posts its receives late is answered" raw norecv
tcheck "a client that never posts receives is disconnected" raw never
tcheck "auth=required: HELLO/AUTH as SENDs, FORBIDDEN without, own tenant only" \
	"$CLIENT" auth $IP_A
tcheck "node keeps serving, nothing pinned, no connection left" \
	still_serving
tcheck "no request within first_request_ms: disconnected" \
	first_request_deadline
tcheck "idle past idle_ms: disconnected" idle_deadline
tcheck "over max_conns: rejected before any allocation, others served" \
	conn_limit
tcheck "a stalled PUT holds its peer's receive cap only: BUSY there, OK elsewhere" \
	recv_cap
tcheck "a request whose READ never starts: dropped at frame_ms, nothing held" \
	stall_deadline
tcheck "a disk-only node's stages per RDMA peer: BUSY over its share, another address served" \
	stage_share
tcheck "$FOLLOWERS RDMA followers of a dripping leader park, then OK" \
	followers_finish
tcheck "node deleted with $FOLLOWERS parked RDMA followers" followers_node_del
tcheck "rxe device removed with $FOLLOWERS parked RDMA followers" \
	followers_rxe_del
tcheck "node deleted with a live RDMA connection" node_del_live
tcheck "rxe device removed with a live RDMA connection" rxe_remove_live
tcheck "module unloaded with a live RDMA connection" rmmod_live
tap_done
