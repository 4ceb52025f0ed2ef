#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What an operator sees of a known workload, inside the test VM as root:
# mdsd's /metrics (agent mode) exports each node's ops, bytes, hits and
# misses per tier, objects and bytes per tier and tenant, latency
# histograms by op and transport, cold reads, flushes, disks and
# transports with the exact values the workload determines, and
# `promtool check metrics` accepts it; the dfkv trace events (tracefs)
# show the same requests, flushes, cold reads, evictions and disk
# changes; and Debian's prometheus, scraping it with tools/monitoring's
# rules, evaluates every dashboard query and rule.  Every wait is
# bounded.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/disk_lib.sh"

MDSD=${MDSD:-$DFKV_REPO/build/tools/mdsd}
cp "$MDSD" "$T/mdsd" || { echo "Bail out! no $MDSD"; exit 1; }
MDSD=$T/mdsd
PORT=17490
B=http://127.0.0.1:$PORT
TCP_PORT=17491
PID=""
TR=""

cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	[ -n "$TR" ] && echo 0 >"$TR/events/dfkv/enable" 2>/dev/null
	disk_cleanup
}
trap cleanup EXIT

# tcp_load PORT: over TCP (wire epoch 6), PUT 3 values of 7000 bytes for
# tenant 0x1111 and GET each twice; prints the statuses.
tcp_load() {
	python3 - "$1" <<'PY'
import socket, struct, sys
REQ = struct.Struct("<BB16sQQQQ")
RESP = struct.Struct("<BBQQ")
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)

def recv(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit("closed")
        b += c
    return b

def call(op, i, payload=b""):
    s.sendall(REQ.pack(6, op, bytes([i]) * 16, 0x1111, 0, 0, len(payload)) +
              payload)
    _, status, _, dlen = RESP.unpack(recv(RESP.size))
    data = recv(dlen)
    return status, data

out = []
for i in range(3):
    out.append(call(1, i, bytes([65 + i]) * 7000)[0])
for _ in range(2):
    for i in range(3):
        st, data = call(2, i)
        out.append(st if data == bytes([65 + i]) * 7000 else "wrong")
s.close()
print(" ".join(str(x) for x in out))
PY
}

scrape() { curl -s --max-time 30 -f "$B/metrics" >"$T/metrics"; }

# m NAME LABELS: the value of one sample of the last scrape.
m() {
	awk -v k="$1{$2}" '$1 == k { print $2; found = 1 } END { if (!found) print "absent" }' \
		"$T/metrics"
}

# is NAME LABELS VALUE: that sample has that value.
is() {
	v=$(m "$1" "$2")
	[ "$v" = "$3" ] || { echo "$1{$2} is $v, expected $3"; return 1; }
}

tap_plan 10

dfkv_load
disk_modules
"$DFKVCTL" node add kvM --ram 32M &&
"$DFKVCTL" listener add kvM 127.0.0.1 --port $TCP_PORT ||
	echo "Bail out! no node"
"$MDSD" --listen 127.0.0.1:$PORT --agent --group metrics --host vmhost \
	>"$T/mdsd.log" 2>&1 &
PID=$!

t_up() { wait_until 60 scrape || { tail -20 "$T/mdsd.log"; return 1; }; }
tap_check "mdsd --agent serves /metrics" t_up

# 4 device PUTs of 5000 bytes, 4 device GET hits, 2 misses (keys never
# written); 3 TCP PUTs of 7000 bytes and 6 TCP GET hits.
t_ram_workload() {
	r=$($BLK put kvM 3 0 4 5000) && blk_expect put "$r" ok=4 &&
	r=$($BLK check kvM 3 0 4 5000) && blk_expect check "$r" ok=4 &&
	r=$($BLK check kvM 3 10 2 5000) && blk_expect misses "$r" miss=2 &&
	r=$(tcp_load $TCP_PORT) && [ "$r" = "0 0 0 0 0 0 0 0 0" ] ||
		{ echo "tcp: $r"; return 1; }
	scrape &&
	is dfkv_ops_total 'node="kvM",op="put",status="ok"' 7 &&
	is dfkv_ops_total 'node="kvM",op="get",status="ok"' 10 &&
	is dfkv_ops_total 'node="kvM",op="get",status="not_found"' 2 &&
	is dfkv_bytes_in_total 'node="kvM"' 41000 &&
	is dfkv_bytes_out_total 'node="kvM"' 62000 &&
	is dfkv_hits_total 'node="kvM",tier="ram"' 10 &&
	is dfkv_hits_total 'node="kvM",tier="disk"' 0 &&
	is dfkv_misses_total 'node="kvM",tier="ram"' 2 &&
	is dfkv_miss_causes_total 'node="kvM",cause="never_stored"' 2 &&
	is dfkv_miss_causes_total 'node="kvM",cause="evicted"' 0 &&
	is dfkv_miss_causes_total 'node="kvM",cause="removed"' 0 &&
	is dfkv_objects 'node="kvM",tier="ram"' 7 &&
	is dfkv_used_bytes 'node="kvM",tier="ram"' 41000 &&
	is dfkv_objects 'node="kvM",tier="disk"' 0 &&
	is dfkv_indexed_objects 'node="kvM"' 7 &&
	is dfkv_capacity_bytes 'node="kvM",tier="ram"' 33554432 &&
	is dfkv_evictions_total 'node="kvM"' 0 &&
	is dfkv_quota_rejections_total 'node="kvM"' 0 &&
	is dfkv_auth_failures_total 'node="kvM"' 0 &&
	is dfkv_accepts_total 'node="kvM",transport="tcp"' 1 &&
	is dfkv_deadline_drops_total 'node="kvM",transport="tcp"' 0 &&
	is dfkv_tenant_objects 'node="kvM",tenant="0000000000001111"' 3 &&
	is dfkv_tenant_bytes_out_total 'node="kvM",tenant="0000000000001111"' 42000 &&
	is dfkv_tenant_hits_total 'node="kvM",tenant="7e57000000000003"' 4 &&
	is dfkv_tenant_misses_total 'node="kvM",tenant="7e57000000000003"' 2 &&
	is dfkv_tenant_used_bytes 'node="kvM",tenant="7e57000000000003"' 20000
}
tap_check "ops, bytes, tiers, transports and tenants match the workload" t_ram_workload

t_histograms() {
	l='node="kvM",op="get",transport="dev"'
	is dfkv_request_duration_seconds_count "$l" 6 &&
	is dfkv_request_duration_seconds_bucket "$l,le=\"+Inf\"" 6 &&
	is dfkv_request_duration_seconds_count 'node="kvM",op="get",transport="tcp"' 6 &&
	is dfkv_request_duration_seconds_count 'node="kvM",op="put",transport="dev"' 4 &&
	is dfkv_request_duration_seconds_count 'node="kvM",op="put",transport="tcp"' 3 &&
	is dfkv_request_duration_seconds_count 'node="kvM",op="get",transport="rdma"' 0 &&
	is dfkv_cold_read_duration_seconds_count 'node="kvM"' 0 &&
	# the buckets are cumulative: never decreasing, ending at the count
	grep -F "dfkv_request_duration_seconds_bucket{$l," "$T/metrics" |
		awk '{ if ($2 < last) bad = 1; last = $2 } END { exit bad || last != 6 }' ||
		{ grep -F "dfkv_request_duration_seconds_bucket{$l," "$T/metrics"; return 1; }
	s=$(m dfkv_request_duration_seconds_sum "$l") &&
	awk -v s="$s" 'BEGIN { exit !(s > 0) }' || { echo "sum $s"; return 1; }
}
tap_check "GET and PUT latency histograms count every request by transport" t_histograms

# dfkvctl reads the same histograms over netlink.
t_ctl_latency() {
	"$DFKVCTL" stats kvM --latency >"$T/lat" &&
	grep -Eq '^  get dev +count 6 ' "$T/lat" &&
	grep -Eq '^  put tcp +count 3 ' "$T/lat" || { cat "$T/lat"; return 1; }
	"$DFKVCTL" stats kvM --latency --json | python3 -c '
import json, sys
d = {(h["op"], h.get("transport")): h for h in json.load(sys.stdin)["latency"]}
assert d[("get", "tcp")]["count"] == 6, d
assert sum(b["count"] for b in d[("get", "dev")]["buckets"]) == 6, d
assert ("get", "rdma") not in d, d'
}
tap_check "dfkvctl stats --latency prints the histograms" t_ctl_latency

t_promtool() {
	command -v promtool >/dev/null || { echo "no promtool (tools/install-deps)"; return 1; }
	promtool check metrics <"$T/metrics"
}
tap_check "promtool check metrics accepts /metrics" t_promtool

# The trace events, via tracefs.
t_tracefs() {
	for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
		[ -d "$d/events/dfkv" ] && TR=$d && break
	done
	if [ -z "$TR" ]; then
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
		[ -d /sys/kernel/tracing/events/dfkv ] && TR=/sys/kernel/tracing
	fi
	[ -n "$TR" ] || { echo "no dfkv events in tracefs"; return 1; }
	echo "$TR" >"$T/tracefs"
	for e in dfkv_req_start dfkv_req_end dfkv_cold_read_submit \
		 dfkv_cold_read_done dfkv_flush_submit dfkv_flush_done \
		 dfkv_evict dfkv_disk_state; do
		[ -d "$TR/events/dfkv/$e" ] || { echo "no event $e"; return 1; }
	done
}
tap_check "the dfkv trace events are in tracefs" t_tracefs
TR=$(cat "$T/tracefs" 2>/dev/null)

trace_on() {
	echo 0 >"$TR/tracing_on" && echo >"$TR/trace" &&
	echo 1 >"$TR/events/dfkv/enable" && echo 1 >"$TR/tracing_on"
}

# trace_count PATTERN: lines of the trace with that (extended) regex.
trace_count() { grep -cE "$1" "$T/trace"; }

# A disk node: 3 write-back PUTs flushed, a restart, 3 cold GETs and 3
# from RAM; the trace holds each request, flush, cold read and disk add.
t_disk_workload() {
	[ -n "$TR" ] || return 1
	DEV=$(main_dev) && trace_on &&
	expect 0 "$DFKVCTL" node add kvD --ram 16M &&
	expect 0 "$DFKVCTL" disk add kvD "$DEV" --format --name m0 &&
	r=$($BLK put kvD 9 0 3 65536) && blk_expect put "$r" ok=3 &&
	wait_clean kvD &&
	scrape &&
	is dfkv_flush_duration_seconds_count 'node="kvD"' 3 &&
	is dfkv_flushes_total 'node="kvD"' 3 &&
	is dfkv_flush_retries_total 'node="kvD"' 0 &&
	is dfkv_flush_drops_total 'node="kvD"' 0 &&
	is dfkv_dirty_bytes 'node="kvD"' 0 &&
	is dfkv_flush_backlog 'node="kvD"' 0 &&
	# a graceful restart: the blocks are on the disk only
	expect 0 "$DFKVCTL" node del kvD &&
	expect 0 "$DFKVCTL" node add kvD --ram 16M &&
	expect 0 "$DFKVCTL" disk add kvD "$DEV" &&
	r=$($BLK check kvD 9 0 3 65536) && blk_expect cold "$r" ok=3 &&
	r=$($BLK check kvD 9 0 3 65536) && blk_expect warm "$r" ok=3 &&
	cat "$TR/trace" >"$T/trace" && echo 0 >"$TR/events/dfkv/enable" &&
	scrape &&
	is dfkv_hits_total 'node="kvD",tier="disk"' 3 &&
	is dfkv_hits_total 'node="kvD",tier="ram"' 3 &&
	is dfkv_misses_total 'node="kvD",tier="ram"' 3 &&
	is dfkv_misses_total 'node="kvD",tier="disk"' 0 &&
	is dfkv_cold_reads_total 'node="kvD"' 3 &&
	is dfkv_cold_read_duration_seconds_count 'node="kvD"' 3 &&
	is dfkv_request_duration_seconds_count 'node="kvD",op="get",transport="dev"' 6 &&
	is dfkv_objects 'node="kvD",tier="disk"' 3 &&
	is dfkv_objects 'node="kvD",tier="ram"' 3 &&
	is dfkv_used_bytes 'node="kvD",tier="disk"' 196608 &&
	is dfkv_disk_objects 'node="kvD",disk="m0"' 3 &&
	is dfkv_disk_up 'node="kvD",disk="m0"' 1 &&
	is dfkv_disk_io_errors_total 'node="kvD",disk="m0"' 0 &&
	is dfkv_disks 'node="kvD"' 1 &&
	is dfkv_disks_failed 'node="kvD"' 0
}
tap_check "a disk node's flushes, cold reads and tiers match the workload" t_disk_workload

t_trace_disk() {
	[ -s "$T/trace" ] || return 1
	n() { c=$(trace_count "$1"); [ "$c" = "$2" ] || { echo "$c of '$1', expected $2"; return 1; }; }
	n 'dfkv_flush_submit: disk=m0 tenant=7e57000000000009 len=65536 key=[0-9a-f]{8}$' 3 &&
	n 'dfkv_flush_done: disk=m0 tenant=7e57000000000009 len=65536 err=0 ' 3 &&
	n 'dfkv_cold_read_submit: disk=m0 tenant=7e57000000000009 len=65536 key=[0-9a-f]{8}$' 3 &&
	n 'dfkv_cold_read_done: disk=m0 tenant=7e57000000000009 len=65536 err=0 ' 3 &&
	n 'dfkv_req_start: node=kvD op=1 tenant=7e57000000000009 size=65536 transport=0 key=[0-9a-f]{8}$' 3 &&
	n 'dfkv_req_end: node=kvD op=1 tenant=7e57000000000009 size=65536 status=0 transport=0 ' 3 &&
	n 'dfkv_req_start: node=kvD op=2 tenant=7e57000000000009 ' 6 &&
	n 'dfkv_req_end: node=kvD op=2 tenant=7e57000000000009 size=65536 status=0 transport=0 ' 6 &&
	n 'dfkv_disk_state: disk=m0 state=1 event=4$' 2 ||
		{ head -40 "$T/trace"; return 1; }
}
tap_check "the trace shows the requests, flushes, cold reads and disk adds" t_trace_disk

# A 4 MiB node given 10 MiB: every eviction is a dfkv_evict event.
t_trace_evict() {
	[ -n "$TR" ] || return 1
	trace_on &&
	expect 0 "$DFKVCTL" node add kvE --ram 4M &&
	r=$($BLK put kvE 5 0 80 131072) && blk_expect put "$r" ok=80 &&
	cat "$TR/trace" >"$T/trace" && echo 0 >"$TR/events/dfkv/enable" &&
	ev=$(nstat kvE evictions) && [ "$ev" -gt 0 ] &&
	c=$(trace_count 'dfkv_evict: tenant=7e57000000000005 len=131072 ram_only=0$') &&
	[ "$c" = "$ev" ] || { echo "$c evict events, $ev evictions"; return 1; }
	scrape && is dfkv_evictions_total 'node="kvE"' "$ev"
}
tap_check "evictions are traced and counted" t_trace_evict

# Debian's prometheus scrapes the agent after the workloads above, the
# rules loaded: every dashboard query and rule evaluates, those over
# what the agent exports with series (prom_eval.py).  Once it scrapes, a
# node added changes the agent's directory: the epoch-age panel's
# membership change.
t_prometheus() {
	python3 "$DFKV_REPO/selftests/prom_eval.py" 127.0.0.1:$PORT \
		>"$T/prom" 2>&1 &
	pe=$!
	wait_until 180 grep -q '^# scraping' "$T/prom" &&
		expect 0 "$DFKVCTL" node add kvP --ram 4M
	wait "$pe"
	r=$?
	cat "$T/prom"
	return $r
}
tap_check "prometheus evaluates every dashboard query and rule over the agent" t_prometheus

tap_done
