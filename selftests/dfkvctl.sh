#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dfkvctl end to end, inside the test VM as root: versions on both sides,
# node add/list/show/set/del and their errors (with the kernel's
# extended-ack text), put/get round trips through /dev/dfkv (byte-exact,
# ranges), exist/rm/probe, namespace+key identities, stats as a table and
# JSON, GET misses by cause, listeners and connection limits (node show, stats, listener list,
# a raw TCP client moving the connection counters), and monitor's events.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
# Run a private copy: a concurrent build may replace the binary under us.
cp "$DFKVCTL" "$T/dfkvctl" || { echo "Bail out! no $DFKVCTL"; exit 1; }
DFKVCTL=$T/dfkvctl
N=kv0
K1=0123456789abcdef:00112233445566778899aabbccddeeff
K2=0123456789abcdef:ffeeddccbbaa99887766554433221100
K3=fedcba9876543210:0f0e0d0c0b0a09080706050403020100

t_version_unloaded() {
	dfkv_unload
	expect 3 "$DFKVCTL" version &&
	has "$T/out" "dfkvctl " && has "$T/err" "not loaded"
}

t_version() {
	expect 0 "$DFKVCTL" version &&
	has "$T/out" "dfkvctl " && has "$T/out" "libdfkv " &&
	has "$T/out" "dfkv.ko " && has "$T/out" "(ABI 1)"
}

t_help() {
	for c in version node listener tenant stats monitor put get exist rm probe key; do
		"$DFKVCTL" "$c" --help >"$T/out" 2>&1 || { echo "$c --help failed"; return 1; }
		has "$T/out" "SYNOPSIS" && has "$T/out" "dfkvctl $c" || return 1
	done
	expect 0 "$DFKVCTL" help && has "$T/out" "COMMANDS" &&
	expect 2 "$DFKVCTL" no-such-command
}

t_node_add() {
	expect 0 "$DFKVCTL" node add "$N" --ram 64M --max-value 1M &&
	expect 0 "$DFKVCTL" node add kv1 --ram 16M --no-evict
}

t_node_list() {
	expect 0 "$DFKVCTL" node list &&
	grep -Eq "^$N +up +on +64.0 MiB" "$T/out" &&
	grep -Eq "^kv1 +up +off +16.0 MiB" "$T/out" ||
	{ cat "$T/out"; return 1; }
}

t_node_show() {
	expect 0 "$DFKVCTL" node show "$N" --bytes &&
	has "$T/out" "node $N" && grep -Eq "ram budget +67108864$" "$T/out" &&
	grep -Eq "max value +1048576$" "$T/out" &&
	grep -Eq "state +up$" "$T/out" && has "$T/out" "hit ratio"
}

t_err_duplicate() {
	expect 3 "$DFKVCTL" node add "$N" --ram 64M &&
	has "$T/err" "a node with this name exists"
}

t_err_bad_name() {
	expect 3 "$DFKVCTL" node add "bad/name" --ram 64M &&
	has "$T/err" "node names are 1-31 characters"
}

t_err_usage() {
	expect 2 "$DFKVCTL" node add kv9 &&
	has "$T/err" "--ram SIZE is required" &&
	expect 2 "$DFKVCTL" node add kv9 --ram 12Q &&
	expect 2 "$DFKVCTL" node set "$N" &&
	expect 2 "$DFKVCTL" node set "$N" --state sleepy
}

t_err_range() {
	# Below the kernel's minimum RAM budget: its policy answers.
	expect 3 "$DFKVCTL" node add kv9 --ram 4K && has "$T/err" "(--ram)" &&
	# More than the host can back (the VM has a few GiB).
	expect 3 "$DFKVCTL" node add kv9 --ram 1T &&
	has "$T/err" "the host cannot back this RAM budget" &&
	expect 0 "$DFKVCTL" node add kv9 --ram 16M &&
	expect 0 "$DFKVCTL" node del kv9 &&
	expect 3 "$DFKVCTL" node set "$N" --max-value 4G &&
	has "$T/err" "(--max-value)" &&
	expect 1 "$DFKVCTL" node show nosuch &&
	has "$T/err" "no node of that name"
}

t_node_set() {
	expect 0 "$DFKVCTL" node set "$N" --state draining --evict off &&
	expect 0 "$DFKVCTL" node show "$N" &&
	grep -Eq "state +draining$" "$T/out" &&
	grep -Eq "eviction +off$" "$T/out" &&
	expect 0 "$DFKVCTL" node set "$N" --state up --evict on --max-value 2M &&
	expect 0 "$DFKVCTL" node show "$N" --bytes &&
	grep -Eq "state +up$" "$T/out" && grep -Eq "eviction +on$" "$T/out" &&
	grep -Eq "max value +2097152$" "$T/out"
}

t_limits() {
	expect 0 "$DFKVCTL" node add lim0 --ram 8M --first-request-ms 5000 \
		--idle-ms 60000 --max-conns 8 &&
	expect 0 "$DFKVCTL" node show lim0 &&
	grep -Eq "limits +first request 5000 ms +idle 60000 ms +max conns 8$" "$T/out" &&
	expect 0 "$DFKVCTL" node set lim0 --first-request-ms 0 --max-conns 2 \
		--frame-ms 2000 --min-rate 1K &&
	expect 0 "$DFKVCTL" node show lim0 &&
	grep -Eq "limits +first request off +idle 60000 ms +max conns 2$" "$T/out" &&
	grep -Eq "^ +frame 2000 ms +min rate .+/s$" "$T/out" &&
	"$DFKVCTL" stats lim0 --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert (d["first_request_ms"], d["idle_ms"], d["max_conns"]) == (0, 60000, 2), d
assert (d["frame_ms"], d["min_rate"]) == (2000, 1024), d
assert d["listeners"] == [], d
s = d["stats"]
assert all(s[k] == 0 for k in ("conns", "accepts", "conns_refused",
    "deadline_drops", "proto_errors")), s' &&
	expect 3 "$DFKVCTL" node set lim0 --max-conns 0 &&
	has "$T/err" "(--max-conns)" &&
	expect 3 "$DFKVCTL" node set lim0 --frame-ms 999 &&
	has "$T/err" "(--frame-ms)" &&
	expect 2 "$DFKVCTL" node set lim0 --idle-ms -1 &&
	expect 2 "$DFKVCTL" node set lim0 --idle-ms 4294967296 &&
	expect 0 "$DFKVCTL" node show lim0 && has "$T/out" "max conns 2" &&
	expect 0 "$DFKVCTL" node del lim0
}

t_listener() {
	expect 0 "$DFKVCTL" listener add "$N" 127.0.0.1 --port 7420 &&
	expect 0 "$DFKVCTL" listener add "$N" '[::1]:7420' &&
	expect 0 "$DFKVCTL" listener add kv1 127.0.0.1:7421 &&
	expect 0 "$DFKVCTL" node show "$N" &&
	grep -Eq "listeners +tcp 127.0.0.1:7420$" "$T/out" &&
	grep -Eq "^ +tcp \[::1\]:7420$" "$T/out" &&
	expect 0 "$DFKVCTL" node list &&
	grep -Eq "^$N .* 127.0.0.1:7420,\[::1\]:7420$" "$T/out" &&
	grep -Eq "^kv1 .* 127.0.0.1:7421$" "$T/out" &&
	expect 0 "$DFKVCTL" listener list &&
	grep -Eq "^$N +tcp +::1 +7420$" "$T/out" &&
	grep -Eq "^kv1 +tcp +127.0.0.1 +7421$" "$T/out" &&
	"$DFKVCTL" listener list "$N" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)["listeners"]
assert sorted((l["node"], l["addr"], l["port"], l["transport"]) for l in d) == [
    ("kv0", "127.0.0.1", 7420, "tcp"), ("kv0", "::1", 7420, "tcp")], d' &&
	"$DFKVCTL" stats "$N" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert {(l["addr"], l["port"]) for l in d["listeners"]} == {
    ("127.0.0.1", 7420), ("::1", 7420)}, d
assert d["max_conns"] >= 1 and d["first_request_ms"] == 30000, d'
}

t_listener_errors() {
	expect 3 "$DFKVCTL" listener add "$N" 127.0.0.1 --port 7420 &&
	has "$T/err" "already listens there" &&
	expect 3 "$DFKVCTL" listener add kv1 127.0.0.1 --port 7420 &&
	has "$T/err" "cannot bind" &&
	expect 3 "$DFKVCTL" listener add "$N" 192.0.2.77 &&
	has "$T/err" "cannot bind" &&
	expect 3 "$DFKVCTL" listener add "$N" not-an-address &&
	has "$T/err" "not an IPv4 or IPv6 address" &&
	expect 1 "$DFKVCTL" listener add nosuch 127.0.0.1 &&
	has "$T/err" "no node of that name" &&
	expect 1 "$DFKVCTL" listener del "$N" 127.0.0.1 --port 7499 &&
	has "$T/err" "no listener there" &&
	expect 2 "$DFKVCTL" listener add "$N" 127.0.0.1 --port 0 &&
	expect 2 "$DFKVCTL" listener add "$N" &&
	expect 2 "$DFKVCTL" listener frob
}

# A raw epoch-6 client: HELLO, PUT and GET over TCP, then a frame with a
# bad epoch; the node's connection counters move.
t_listener_traffic() {
	python3 - <<'PY' || return 1
import socket, struct
def req(op, payload=b"", tid=b"\x11" * 16, tenant=7, off=0, ln=0):
    return struct.pack("<BB16sQQQQ", 6, op, tid, tenant, off, ln,
                       len(payload)) + payload
def reply(s):
    h = b""
    while len(h) < 18:
        c = s.recv(18 - len(h)); assert c, "closed"; h += c
    ep, st, stored, n = struct.unpack("<BBQQ", h)
    d = b""
    while len(d) < n:
        c = s.recv(n - len(d)); assert c, "closed"; d += c
    return ep, st, stored, d
s = socket.create_connection(("127.0.0.1", 7420), timeout=5)
s.sendall(req(14, struct.pack("<Q", 0)) + req(1, b"over tcp") + req(2))
ep, st, _, d = reply(s)
assert (ep, st, len(d)) == (6, 0, 49 + 3) and d[48:] == b"\x03kv0", (ep, st, d)
caps, maxv = struct.unpack("<QQ", d[:16])
assert (caps, maxv) == (5, 2 << 20), d  # verifies AUTH (AUTH2), not required
assert reply(s)[:3] == (6, 0, 8)
assert reply(s) == (6, 0, 8, b"over tcp")
s.close()
s = socket.create_connection(("::1", 7420), timeout=5)
s.sendall(b"\x05" + req(2)[1:])
try:
    h = s.recv(64)
except ConnectionResetError:
    h = b""
assert h == b"" or h[1] == 4, h          # INVALID (or nothing), then closed
s.close()
PY
	i=0
	while [ $i -lt 50 ]; do
		"$DFKVCTL" stats "$N" --json >"$T/j" &&
		python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["stats"]
sys.exit(0 if s["conns"] == 0 else 1)' "$T/j" && break
		sleep 0.1
		i=$((i + 1))
	done
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["stats"]
assert s["accepts"] == 2 and s["conns"] == 0, s
assert s["proto_errors"] == 1 and s["conns_refused"] == 0, s' "$T/j" &&
	expect 0 "$DFKVCTL" stats "$N" &&
	grep -Eq "connections +open 0 +accepted 2 +refused 0$" "$T/out" &&
	grep -Eq "dropped +deadline 0 +protocol errors 1$" "$T/out" &&
	[ "$("$DFKVCTL" get "$N" 0000000000000007:11111111111111111111111111111111)" = "over tcp" ] &&
	expect 0 "$DFKVCTL" rm "$N" 0000000000000007:11111111111111111111111111111111
}

t_listener_del() {
	expect 0 "$DFKVCTL" listener del "$N" '[::1]' --port 7420 &&
	expect 0 "$DFKVCTL" listener del kv1 127.0.0.1:7421 &&
	expect 0 "$DFKVCTL" listener list &&
	[ "$(grep -c tcp "$T/out")" -eq 1 ] &&
	grep -Eq "^$N +tcp +127.0.0.1 +7420$" "$T/out" &&
	! python3 -c 'import socket; socket.create_connection(("::1", 7420), timeout=2)' 2>/dev/null
}

t_nonroot() {
	if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
		echo "# SKIP: needs root and setpriv"
		return 0
	fi
	expect 3 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$DFKVCTL" node add kv9 --ram 16M &&
	has "$T/err" "Operation not permitted" &&
	expect 3 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$DFKVCTL" listener add kv1 127.0.0.1 &&
	has "$T/err" "Operation not permitted" &&
	expect 0 setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all "$DFKVCTL" node list
}

# A user namespace of one's own makes nobody a dfkv administrator: uid
# 65534 after unshare -Urn is root there, yet creating a node in its own
# network namespace and attaching (formatting) a loop device to it get
# EPERM, and the device's bytes stay as they were.  Root without
# CAP_SYS_ADMIN cannot attach a disk either.
t_userns() {
	if ! setpriv --reuid=65534 --regid=65534 --clear-groups \
		unshare -Urn true; then
		echo "uid 65534 cannot make a user namespace (the VM must not chroot)"
		return 1
	fi
	modprobe loop 2>/dev/null
	head -c 8M /dev/urandom >"$T/userns.img" &&
	loop=$(losetup -f --show "$T/userns.img") || return 1
	before=$(sha256sum <"$loop")
	mkdir -p "$T/u" && chown 65534:65534 "$T/u" || return 1
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		unshare -Urn sh -c '"$1" node add evil --ram 16M >"$2/out" 2>"$2/err"
			[ $? -eq 3 ] || exit 1
			grep -q "Operation not permitted" "$2/err" || exit 2
			"$1" disk add evil "$3" --format >"$2/out" 2>"$2/err"
			[ $? -ne 0 ] || exit 3
			grep -q "Operation not permitted" "$2/err" || exit 4' sh "$DFKVCTL" "$T/u" "$loop"
	rc=$?
	[ $rc -eq 0 ] || { echo "user namespace root case $rc"; cat "$T/u/err"; }
	expect 0 "$DFKVCTL" node add kvdisk --ram 16M &&
	expect 3 setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin \
		"$DFKVCTL" disk add kvdisk "$loop" --format &&
	has "$T/err" "CAP_SYS_ADMIN" &&
	expect 0 "$DFKVCTL" node del kvdisk &&
	after=$(sha256sum <"$loop") &&
	losetup -d "$loop" && [ $rc -eq 0 ] && [ "$before" = "$after" ]
}

t_roundtrip() {
	head -c 300001 /dev/urandom >"$T/val" &&
	expect 0 "$DFKVCTL" put "$N" "$K1" --file "$T/val" &&
	expect 0 "$DFKVCTL" get "$N" "$K1" --out "$T/back" &&
	cmp "$T/val" "$T/back" &&
	"$DFKVCTL" get "$N" "$K1" >"$T/back2" && cmp "$T/val" "$T/back2"
}

t_ranges() {
	dd if="$T/val" of="$T/want" bs=1 skip=1000 count=5000 2>/dev/null &&
	expect 0 "$DFKVCTL" get "$N" "$K1" --offset 1000 --length 5000 -o "$T/r" &&
	cmp "$T/want" "$T/r" &&
	tail -c +290001 "$T/val" >"$T/want" &&
	expect 0 "$DFKVCTL" get "$N" "$K1" --offset 290000 -o "$T/r" &&
	cmp "$T/want" "$T/r" &&
	expect 0 "$DFKVCTL" get "$N" "$K1" --offset 290000 --length 1G -o "$T/r" &&
	cmp "$T/want" "$T/r" &&
	expect 0 "$DFKVCTL" get "$N" "$K1" --offset 300001 -o "$T/r" &&
	[ ! -s "$T/r" ] &&
	expect 3 "$DFKVCTL" get "$N" "$K1" --offset 300002 &&
	has "$T/err" "INVALID"
}

t_put_limits() {
	head -c 3M /dev/zero >"$T/big" &&
	expect 3 "$DFKVCTL" put "$N" "$K3" --file "$T/big" &&
	has "$T/err" "TOO_LARGE" &&
	: >"$T/empty" &&
	expect 3 "$DFKVCTL" put "$N" "$K3" --file "$T/empty" &&
	has "$T/err" "INVALID" &&
	expect 1 "$DFKVCTL" put nosuch "$K3" --value x &&
	has "$T/err" "no node 'nosuch'"
}

t_exist() {
	expect 0 "$DFKVCTL" exist "$N" "$K1" && has "$T/out" "300001" &&
	expect 1 "$DFKVCTL" exist "$N" "$K2" && has "$T/err" "NOT_FOUND" &&
	expect 1 "$DFKVCTL" get "$N" "$K2" -o "$T/miss" && [ ! -e "$T/miss" ]
}

t_identity() {
	expect 0 "$DFKVCTL" put "$N" --ns my-model --key block-0 --value "hello kv" &&
	expect 0 "$DFKVCTL" key --ns my-model block-0 &&
	hex=$(cat "$T/out") &&
	# SPEC 1.3 computed independently.
	want=$(python3 -c '
import hashlib, struct
ns, k = b"my-model", b"block-0"
q = lambda b: struct.pack("<Q", len(b)) + b
t = hashlib.sha256(b"DFKVTENANT1" + q(ns)).digest()[:8].hex()
print(t + ":" + hashlib.sha256(q(ns) + q(k)).digest()[:16].hex())') &&
	[ "$hex" = "$want" ] || { echo "key $hex, expected $want"; return 1; }
	[ "$("$DFKVCTL" get "$N" "$hex")" = "hello kv" ] &&
	[ "$("$DFKVCTL" get "$N" --ns my-model block-0)" = "hello kv" ]
}

t_probe() {
	expect 0 "$DFKVCTL" put "$N" "$K3" --value abc &&
	expect 1 "$DFKVCTL" probe "$N" "$K1" "$K2" "$K3" &&
	has "$T/out" "$K1 300001" && has "$T/out" "$K2 absent" &&
	has "$T/out" "$K3 3" && has "$T/err" "1 of 3 keys absent" &&
	expect 0 "$DFKVCTL" probe "$N" "$K1" "$K3"
}

t_rm() {
	expect 0 "$DFKVCTL" rm "$N" "$K3" &&
	expect 1 "$DFKVCTL" exist "$N" "$K3" &&
	expect 0 "$DFKVCTL" rm "$N" "$K3"
}

t_stats_table() {
	expect 0 "$DFKVCTL" stats "$N" &&
	has "$T/out" "hit ratio" && has "$T/out" "capacity" &&
	grep -Eq "^  put +[0-9]" "$T/out" && grep -Eq "^  get +[0-9]" "$T/out" &&
	expect 0 "$DFKVCTL" stats && has "$T/out" "node kv1"
}

t_stats_json() {
	"$DFKVCTL" stats "$N" --json >"$T/j" &&
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stats"]
assert d["name"] == "kv0" and d["state"] == "up", d
assert s["objects"] == 2 and s["used_bytes"] == 300001 + 8, s
assert s["ops"]["put"]["ok"] >= 2 and s["ops"]["exist"]["not_found"] >= 1, s
assert s["hits"] > 0 and 0 < s["hit_ratio"] <= 1, s
assert s["capacity_bytes"] == 64 << 20 and s["slot_bytes"] >= s["used_bytes"], s
' "$T/j" &&
	"$DFKVCTL" stats --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert sorted(n["name"] for n in d["nodes"]) == ["kv0", "kv1"], d'
}

t_stats_tenants() {
	expect 0 "$DFKVCTL" stats "$N" --tenants &&
	has "$T/out" "0123456789abcdef" &&
	"$DFKVCTL" stats "$N" --tenants --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["node"] == "kv0" and len(d["tenants"]) >= 2, d
assert "0123456789abcdef" in [t["tenant"] for t in d["tenants"]], d'
}

# GET misses by cause (Documentation/store.md, "Miss causes") on a
# RAM-only node of 1 MiB, through libdfkv's Python binding over
# /dev/dfkv (dfkvctl get asks EXIST first, never GETs a missing key): a
# key never written is never_stored; a key PUT, removed, then read is
# removed; 40 values of 64 KiB pushed through the node evict some (its
# evictions), and each of those read is evicted.  Every counter moves by
# exactly its own GETs, and the client counts them all absent.
t_miss_causes() {
	expect 0 "$DFKVCTL" node add miss0 --ram 1M &&
	PYTHONPATH="$DFKV_REPO/lib/python" \
	DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so" \
	timeout 300 python3 - "$DFKVCTL" <<'PY' &&
import json, subprocess, sys

import dfkv


def node():
    """The node's (never stored, evicted, removed, evictions, misses)."""
    r = subprocess.run([sys.argv[1], "stats", "miss0", "--json"],
                       check=True, capture_output=True)
    s = json.loads(r.stdout)["stats"]
    return (s["miss_never_stored"], s["miss_evicted"], s["miss_removed"],
            s["evictions"], s["misses"])


C = 65536   # a cap: a GET without one asks EXIST first
c = dfkv.Client("miss0", b"miss-causes", transport="local")
assert node() == (0, 0, 0, 0, 0), node()
assert c.get(b"never", cap=C)[0] == dfkv.NOT_FOUND
assert node() == (1, 0, 0, 0, 1), node()
assert c.put(b"gone", b"removed") == dfkv.OK
assert c.get(b"gone", cap=C) == (dfkv.OK, b"removed")
assert c.remove(b"gone") == dfkv.OK
assert c.get(b"gone", cap=C)[0] == dfkv.NOT_FOUND
assert node() == (1, 0, 1, 0, 2), node()
keys = [b"v%d" % i for i in range(40)]
for k in keys:
    assert c.put(k, bytes(C)) == dfkv.OK, k
gone = [k for k in keys if c.exist(k)[0] == dfkv.NOT_FOUND]
for k in gone:
    assert c.get(k, cap=C)[0] == dfkv.NOT_FOUND, k
n = len(gone)
assert n > 0 and node() == (1, n, 1, n, n + 2), (n, node())
# the client: the 2 + n GETs and the n EXISTs, all answered absent
assert c.misses() == {"unavailable": 0, "auth": 0, "absent": 2 * n + 2}, \
    (n, c.misses())
PY
	expect 0 "$DFKVCTL" stats miss0 &&
	grep -Eq "misses by +never stored 1 +evicted [1-9][0-9]* +removed 1$" "$T/out" &&
	expect 0 "$DFKVCTL" node del miss0
}

# Tenants through dfkvctl (SPEC 9): a generated secret is 64 hex digits
# in a new 0600 file, never printed; bad secret files are refused; list
# and JSON show registration, quota and usage; the node shows its auth.
t_tenants() {
	A=00000000000000aa
	expect 0 "$DFKVCTL" node add ten0 --ram 16M --auth required --tenant-quota 1M &&
	expect 0 "$DFKVCTL" node show ten0 && grep -Eq "auth +required" "$T/out" &&
	expect 0 "$DFKVCTL" tenant add ten0 --tenant $A --generate-secret "$T/a.secret" --quota 2M &&
	[ "$(stat -c %a "$T/a.secret")" = 600 ] &&
	grep -Eqx '[0-9a-f]{64}' "$T/a.secret" &&
	secret=$(cat "$T/a.secret") &&
	expect 3 "$DFKVCTL" tenant add ten0 --tenant $A --secret-file "$T/a.secret" &&
	! "$DFKVCTL" tenant add ten0 --tenant 00000000000000bb --generate-secret "$T/a.secret" 2>/dev/null &&
	[ "$(cat "$T/a.secret")" = "$secret" ] || return 1
	printf '%063d
' 0 >"$T/short" && chmod 600 "$T/short" &&
	! "$DFKVCTL" tenant set ten0 --tenant $A --secret-file "$T/short" 2>/dev/null &&
	cp "$T/a.secret" "$T/open" && chmod 644 "$T/open" &&
	! "$DFKVCTL" tenant set ten0 --tenant $A --secret-file "$T/open" 2>/dev/null &&
	"$DFKVCTL" put ten0 "$A:00112233445566778899aabbccddeeff" --value tenant-a >/dev/null &&
	expect 0 "$DFKVCTL" tenant list ten0 && has "$T/out" "$A" &&
	! grep -qF "$secret" "$T/out" &&
	"$DFKVCTL" tenant list ten0 --json >"$T/json" &&
	! grep -qF "$secret" "$T/json" &&
	python3 - "$T/json" "$A" <<'PY' || return 1
import json, sys
d = json.load(open(sys.argv[1]))
t = {x["tenant"]: x for x in d["tenants"]}[sys.argv[2]]
assert t["registered"] and t["has_secret"] and t["own_quota"], t
assert t["quota_bytes"] == 2 << 20 and t["charged_bytes"] == 8, t
PY
	expect 0 "$DFKVCTL" tenant del ten0 --tenant $A &&
	expect 1 "$DFKVCTL" tenant del ten0 --tenant $A &&
	"$DFKVCTL" tenant list ten0 --json | python3 -c '
import json, sys
t = {x["tenant"]: x for x in json.load(sys.stdin)["tenants"]}[sys.argv[1]]
assert not t["registered"] and not t["has_secret"] and t["quota_bytes"] == 1 << 20, t' $A &&
	expect 0 "$DFKVCTL" node del ten0
}

# The monitor is subscribed once it reports a probe node (no sleep: a
# loaded VM may take seconds to start it).
mon_sees_probe() {
	"$DFKVCTL" node add monprobe --ram 1M >/dev/null 2>&1
	"$DFKVCTL" node del monprobe >/dev/null 2>&1
	grep -q "node del monprobe" "$T/mon"
}

t_monitor() {
	"$DFKVCTL" monitor >"$T/mon" 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 120 ] && ! mon_sees_probe; do
		sleep 0.5
		i=$((i + 1))
	done
	"$DFKVCTL" node add mon0 --ram 8M &&
	"$DFKVCTL" node set mon0 --state unhealthy &&
	"$DFKVCTL" node del mon0 || { kill "$pid"; return 1; }
	i=0
	while [ $i -lt 600 ] && ! grep -q "node del mon0" "$T/mon"; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	has "$T/mon" "node new mon0 state up" &&
	! grep -q "ram" "$T/mon" &&
	has "$T/mon" "node state mon0 unhealthy" &&
	has "$T/mon" "node del mon0"
}

t_node_del() {
	expect 0 "$DFKVCTL" node del "$N" &&
	expect 0 "$DFKVCTL" node del kv1 &&
	expect 1 "$DFKVCTL" node del "$N" && has "$T/err" "no node of that name" &&
	expect 0 "$DFKVCTL" node list && [ ! -s "$T/out" ] &&
	# Its listener went with it.
	! python3 -c 'import socket; socket.create_connection(("127.0.0.1", 7420), timeout=2)' 2>/dev/null
}

tap_plan 34
tap_check "version without the module" t_version_unloaded
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }
tap_check "version of tool and module" t_version
tap_check "help pages" t_help
tap_check "node add" t_node_add
tap_check "node list" t_node_list
tap_check "node show" t_node_show
tap_check "duplicate node: kernel message" t_err_duplicate
tap_check "bad node name: kernel message" t_err_bad_name
tap_check "usage errors" t_err_usage
tap_check "out-of-range budget, unknown node" t_err_range
tap_check "node set" t_node_set
tap_check "connection limits: add, set, show, JSON, kernel range" t_limits
tap_check "listener add, node show/list, listener list, JSON" t_listener
tap_check "listener errors (kernel messages)" t_listener_errors
tap_check "TCP traffic moves connection counters" t_listener_traffic
tap_check "listener del" t_listener_del
tap_check "non-root cannot add" t_nonroot
tap_check "user namespace root is no administrator; disks need CAP_SYS_ADMIN" t_userns
tap_check "put/get byte-exact round trip" t_roundtrip
tap_check "get ranges" t_ranges
tap_check "put limits (too large, empty, no node)" t_put_limits
tap_check "exist and misses" t_exist
tap_check "namespace+key identity" t_identity
tap_check "probe" t_probe
tap_check "rm" t_rm
tap_check "stats table" t_stats_table
tap_check "stats --json" t_stats_json
tap_check "stats --tenants" t_stats_tenants
tap_check "GET misses by cause: never stored, removed, evicted" t_miss_causes
tap_check "tenants: generated secrets, bad files, list and JSON without secrets" t_tenants
tap_check "monitor prints events" t_monitor
tap_check "node del" t_node_del
tap_check "module unload" dfkv_unload
tap_check "version after unload" t_version_unloaded
tap_done
