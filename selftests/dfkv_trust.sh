#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Trust against a rogue directory member (SPEC 7 and 9), inside the test
# VM as root, with the real module, mdsd and libdfkv's Python binding:
#
# - a hostile relay: a member of the client's ring that is a TCP proxy to
#   a real node with auth=required (the proxy is in the test) gets no
#   grant there, whether it passes the node's name on (the client sees a
#   node of another name) or rewrites it to its own (the node sees a
#   proof for another node): the client marks it failed (counted per
#   node), its PUTs are dropped and its GETs miss, and no byte of the
#   tenant's values crosses the proxy; the same proxy under the node's
#   own name relays a working session (the control);
# - a rogue member over mdsd: registering a member with the client token
#   is refused; a real node registered with the member token but without
#   the tenant's secret (auth=off) shares the ring with an honest node,
#   and receives no PUT payload and serves no GET, while the honest node's
#   keys all work.
# Everything runs on 127.0.0.1 and every wait is bounded.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d)
MDSD=${MDSD:-$DFKV_REPO/build/tools/mdsd}
cp "$DFKVCTL" "$T/dfkvctl" && cp "$MDSD" "$T/mdsd" ||
	{ echo "Bail out! no $DFKVCTL or $MDSD"; exit 1; }
DFKVCTL=$T/dfkvctl
MDSD=$T/mdsd
NS=trust-ns
REAL=17410	# t-real's listener
ROGUE=17411	# t-rogue's
MPORT=17482	# mdsd

cleanup() {
	"$DFKVCTL" node del t-real 2>/dev/null
	"$DFKVCTL" node del t-rogue 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# nstat NODE NAME: a counter of NODE's stats (-1 when missing).
nstat() {
	v=$("$DFKVCTL" stats "$1" --json | tr -d ' \n' |
		sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p")
	echo "${v:--1}"
}

py() {
	PYTHONPATH="$DFKV_REPO/lib/python" \
	DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so" \
	timeout 300 python3 "$@"
}

setup() {
	dfkv_load || return 1
	"$DFKVCTL" node add t-real --ram 64M --auth required &&
	"$DFKVCTL" listener add t-real 127.0.0.1 --port $REAL &&
	"$DFKVCTL" tenant add t-real --ns $NS --generate-secret "$T/secret" &&
	# the rogue: a real node that knows nothing of the tenant
	"$DFKVCTL" node add t-rogue --ram 64M --auth off &&
	"$DFKVCTL" listener add t-rogue 127.0.0.1 --port $ROGUE
}
tap_plan 5
tap_check "two nodes, the tenant's secret on t-real only" setup

# The relay (one connection at a time, each way a thread) and the client.
cat >"$T/relay.py" <<'PY'
import os, re, socket, sys, threading
import dfkv

mode, node_port, secret, ns = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    sys.argv[4].encode()
seen = bytearray()          # every byte the proxy was sent by the client
lock = threading.Lock()


def pump(src, dst, record, rewrite):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            if record:
                with lock:
                    seen.extend(b)
            if rewrite:     # same length: the frames stay well formed
                b = b.replace(b"t-real", b"t-evil")
            dst.sendall(b)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(ls):
    while True:
        try:
            c, _ = ls.accept()
        except OSError:
            return
        n = socket.create_connection(("127.0.0.1", node_port))
        threading.Thread(target=pump, args=(c, n, True, False),
                         daemon=True).start()
        threading.Thread(target=pump, args=(n, c, False, mode == "rewrite"),
                         daemon=True).start()


ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(16)
threading.Thread(target=serve, args=(ls,), daemon=True).start()
member = "t-real" if mode == "control" else "t-evil"
c = dfkv.Client("%s=127.0.0.1:%d" % (member, ls.getsockname()[1]), ns,
                transport="tcp", tenant_secret=secret, connect_timeout_ms=5000,
                io_timeout_ms=10000)
values = {b"relay-%s-%d" % (mode.encode(), i): os.urandom(100000 + i)
          for i in range(8)}
puts = [c.put(k, v) for k, v in values.items()]
gets = [c.get(k, cap=len(v) + 1) for k, v in values.items()]
fails = re.search(r'dfkv_client_node_auth_failures_total\{node="%s"\} (\d+)'
                  % member, c.stats())
fails = int(fails.group(1)) if fails else -1
c.close()
ls.close()
with lock:
    leaked = sum(1 for v in values.values()
                 for i in range(0, len(v) - 32, 997) if v[i:i + 32] in seen)
print("%s: puts %s gets %s auth failures %d, %d bytes crossed, "
      "%d chunks of values among them" % (mode, puts, [g[0] for g in gets],
                                       fails, len(seen), leaked))
if mode == "control":
    assert puts == [dfkv.OK] * 8
    assert all(g == (dfkv.OK, v) for g, v in zip(gets, values.values()))
    assert fails == 0 and leaked > 0
else:
    assert dfkv.OK not in puts
    assert all(g[0] == dfkv.NOT_FOUND for g in gets)
    assert fails > 0 and leaked == 0
PY

# relay MODE: the client in MODE; t-real stores nothing for the evil ones.
relay() {
	before=$(nstat t-real auth_failures)
	py "$T/relay.py" "$1" $REAL "$T/secret" $NS || return 1
	objs=$(nstat t-real objects) after=$(nstat t-real auth_failures)
	echo "t-real: objects $objs, auth failures $before -> $after"
	case $1 in
	control) [ "$objs" -eq 8 ] ;;
	# the node checked a proof made for t-evil and refused it
	rewrite) [ "$objs" -eq 8 ] && [ "$after" -gt "$before" ] ;;
	# the client saw the name t-real and sent no AUTH at all
	pass) [ "$objs" -eq 8 ] && [ "$after" -eq "$before" ] ;;
	esac
}
tap_check "control: a proxy under the node's own name relays a session" \
	relay control
tap_check "a relay passing the node's name on gets nothing, sees no value" \
	relay pass
tap_check "a relay rewriting the name gets no grant, sees no value" \
	relay rewrite

cat >"$T/rogue.py" <<'PY'
import os, sys, time
import dfkv

mds, ctok, secret, ns = sys.argv[1], sys.argv[2], sys.argv[3], \
    sys.argv[4].encode()
c = dfkv.Client(None, ns, transport="tcp", mds_endpoints=mds, group="trust",
                client_id="engine-0", mds_token_file=ctok,
                tenant_secret=secret, connect_timeout_ms=5000,
                io_timeout_ms=10000)
keys = [b"rogue-%d" % i for i in range(64)]
for _ in range(300):        # until the ring has both members
    where = {c.locate(k)[0] for k in keys}
    if where == {"t-real", "t-rogue"}:
        break
    time.sleep(0.1)
assert where == {"t-real", "t-rogue"}, where
values = {k: os.urandom(50000 + i) for i, k in enumerate(keys)}
at = {k: c.locate(k)[0] for k in keys}
puts = {k: c.put(k, v) for k, v in values.items()}
gets = {k: c.get(k, cap=len(v) + 1) for k, v in values.items()}
misses = c.misses()
c.close()
honest = [k for k in keys if at[k] == "t-real"]
rogue = [k for k in keys if at[k] == "t-rogue"]
print("%d keys on t-real, %d on t-rogue" % (len(honest), len(rogue)))
assert all(puts[k] == dfkv.OK and gets[k] == (dfkv.OK, values[k])
           for k in honest)
assert all(puts[k] != dfkv.OK and gets[k][0] == dfkv.NOT_FOUND
           for k in rogue)
# each GET routed to the rogue: a miss because it failed the handshake
assert misses == {"unavailable": 0, "auth": len(rogue), "absent": 0}, misses
print(len(honest))
PY

# PUT of member $1 at port $2 with token file $3: the HTTP status.
put_member() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 15 -X PUT \
		-H "Authorization: Bearer $(cat "$3")" \
		"http://127.0.0.1:$MPORT/v1/groups/trust/members/$1" \
		-d "{\"tcp\":\"127.0.0.1:$2\",\"ttl_ms\":120000}"
}

# mdsd lives only as long as the case (tap_check runs it in a subshell,
# whose children the script's trap cannot see): started, checked, stopped.
t_rogue() {
	umask 077
	for f in mtok ctok; do
		python3 -c 'import secrets; print(secrets.token_hex(32))' \
			>"$T/$f" || return 1
	done
	"$MDSD" --listen 127.0.0.1:$MPORT --member-token-file "$T/mtok" \
		--client-token-file "$T/ctok" </dev/null >"$T/mdsd.log" 2>&1 &
	mpid=$!
	rogue_checks
	rc=$?
	kill "$mpid"
	wait "$mpid"
	[ $rc -eq 0 ] || cat "$T/mdsd.log"
	return $rc
}

rogue_checks() {
	i=0
	until curl -s --max-time 2 http://127.0.0.1:$MPORT/readyz >/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.1
	done
	code=$(put_member t-evil $ROGUE "$T/ctok")
	[ "$code" = 403 ] || { echo "client token registered a member: $code"; return 1; }
	[ "$(put_member t-real $REAL "$T/mtok")" = 200 ] &&
	[ "$(put_member t-rogue $ROGUE "$T/mtok")" = 200 ] || return 1
	before=$(nstat t-real objects)
	n=$(py "$T/rogue.py" http://127.0.0.1:$MPORT "$T/ctok" "$T/secret" $NS |
		tee /dev/stderr | tail -1) || return 1
	objs=$(nstat t-rogue objects) in=$(nstat t-rogue bytes_in)
	after=$(nstat t-real objects)
	echo "t-rogue: objects $objs, bytes in $in; t-real: $before -> $after"
	[ "$objs" -eq 0 ] && [ "$in" -eq 0 ] && [ "$after" -eq $((before + n)) ]
}
tap_check "a rogue member over mdsd: no PUT payload, no GET served" t_rogue

tap_done
