#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Churn under load (issue 25, section 1), inside the test VM as root.
# DFKV_CHURN_NODES nodes (default 5; `make fleet` runs 8), each in its own
# network namespace (ch-0 ..) with an mdsd agent over a real etcd of three
# members in the root namespace; three root mdsd serve the directory to
# four clients using discovery (selftests/churn/client.py: two plain
# libdfkv clients and two opened and keyed through the connectors'
# engine-free modules), two tenants with their secrets on nodes that
# require auth, a mixed PUT/GET/LEASE workload whose every GET is
# checked.  All but the last node start; then, while the workload runs:
# an mdsd killed, an etcd member killed, a node deleted, a node's link
# cut and restored, a node restarted warm (deleted, re-created under its
# name on its disk), a new node joining.  After each event every
# client's ring must reach the directory's epoch, and the clients do
# DFKV_CHURN_OPS more operations before the next one.  Asserted: no
# client error, no wrong byte, every ring converges, the warm node's keys
# hit again.  Measured and printed (churn/report.py; JSON to
# $DFKV_CHURN_JSON): keys moved over ideal, ring convergence time, hit
# rate per second and its recovery, writes dropped.  Every wait is
# bounded; every process started here is killed by PID.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"

export PYTHONPATH="$DFKV_REPO/lib/python" DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so"
CLIENT="python3 -u $DFKV_REPO/selftests/churn/client.py"

NODES=${DFKV_CHURN_NODES:-5}
NKEYS=${DFKV_CHURN_KEYS:-300}
OPS=${DFKV_CHURN_OPS:-$(rounds 200)}
JSON=${DFKV_CHURN_JSON:-$T/churn.json}
LAST=$((NODES - 1))		# the node that joins
WARM=0 GONE=1 CUT=2		# the nodes restarted, deleted, cut off
G=churn
PORT=7400
AGENT_HTTP=127.0.0.1:17590	# inside each namespace: its own loopback
TTL_MS=10000			# mdsd's default (see mdsd_cluster.sh)
M1=127.0.0.1:17580 M2=127.0.0.1:17581 M3=127.0.0.1:17582
ENDPOINTS=http://$M1,http://$M2,http://$M3
# etcd member i (1..3): client port 2379i, peer port 2380i; the
# namespaces reach it through pair 0's root-side address.
ETCD_IN=http://192.0.2.1:23791,http://192.0.2.1:23792,http://192.0.2.1:23793
ETCD_LO=http://127.0.0.1:23791,http://127.0.0.1:23792,http://127.0.0.1:23793
ETCD_PEERS=e1=http://127.0.0.1:23801,e2=http://127.0.0.1:23802,e3=http://127.0.0.1:23803

PIDS=""		# every background process, killed at exit
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	i=0
	while [ $i -lt "$NODES" ]; do
		ip netns del ch-$i 2>/dev/null
		i=$((i + 1))
	done
	losetup -a | grep -qF "$T/warm.img" && losetup -d "$LOOP"
	unload_retrying
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Etcd, with election timeouts for an emulated guest that stalls.
start_etcd() {
	etcd --name e$1 --data-dir "$T/etcd$1" \
		--listen-client-urls "http://127.0.0.1:2379$1,http://192.0.2.1:2379$1" \
		--advertise-client-urls "http://192.0.2.1:2379$1" \
		--listen-peer-urls "http://127.0.0.1:2380$1" \
		--initial-advertise-peer-urls "http://127.0.0.1:2380$1" \
		--initial-cluster "$ETCD_PEERS" --initial-cluster-state new \
		--heartbeat-interval 500 --election-timeout 5000 \
		--listen-metrics-urls "" >>"$T/etcd$1.log" 2>&1 &
	eval "EPID_$1=$!"
	PIDS="$PIDS $!"
}

# mknode I: node cn-I in ch-I, auth required, both tenants' secrets, its
# listener last (the node serves once everything else is in place);
# the warm node is created rebuilding and attaches its disk (DISKARGS:
# --format the first time) before it says up, so its agent registers it
# only then, as `dfkvctl apply` does (Documentation/netlink.md, "Node
# phase").
mknode() {
	phase=""
	[ "$1" = $WARM ] && phase="--phase rebuilding"
	inns ch-$1 "$DFKVCTL" node add cn-$1 --ram 32M --max-value 1M \
		--auth required $phase || return 1
	for t in acme globex; do
		inns ch-$1 "$DFKVCTL" tenant add cn-$1 --tenant "$(cat "$T/$t.hex")" \
			--secret-file "$T/$t.secret" || return 1
	done
	if [ "$1" = $WARM ]; then
		inns ch-$1 "$DFKVCTL" disk add cn-$1 "$LOOP" --name d0 $DISKARGS ||
			return 1
		inns ch-$1 "$DFKVCTL" node set cn-$1 --phase up || return 1
	fi
	inns ch-$1 "$DFKVCTL" listener add cn-$1 "$(naddr_of "$1")" --port $PORT
}

# ids FROM TO [SKIP...]: node names cn-FROM .. cn-TO but SKIP, sorted.
ids() {
	from=$1 to=$2
	shift 2
	i=$from
	while [ $i -le "$to" ]; do
		case " $* " in *" $i "*) ;; *) echo cn-$i ;; esac
		i=$((i + 1))
	done | sort | tr '\n' ' ' | sed 's/ $//'
}

epoch_at() { get -f "http://$1/v1/groups/$G/members" | jq -r .epoch; }

# clients_at NAMES: every client's keys route to exactly NAMES (sorted,
# comma-separated): its ring has the membership.
clients_at() {
	for c in 0 1 2 3; do
		read -r _ _ _ _ _ n <"$T/c$c.state" || return 1
		[ "$n" = "$1" ] || return 1
	done
}

# clean: no client has seen an error or a wrong byte.
clean() {
	for c in 0 1 2 3; do
		read -r _ _ _ err wrong _ <"$T/c$c.state" || return 1
		[ "$err" -eq 0 ] && [ "$wrong" -eq 0 ] ||
			{ echo "client $c: $err errors, $wrong wrong"; return 1; }
	done
}

# more_ops: every client does $OPS more operations (the workload runs
# on between events; the hang guard is generous for the debug kernel).
more_ops() {
	for c in 0 1 2 3; do
		read -r _ _ o _ <"$T/c$c.state" || return 1
		eval "want_$c=$((o + OPS))"
	done
	for c in 0 1 2 3; do
		eval "w=\$want_$c"
		until_ok 900 eval 'read -r _ _ o _ <"$T/c$c.state" && [ "$o" -ge "$w" ]' ||
			{ echo "client $c stalled"; cat "$T/c$c.out"; return 1; }
	done
}

# event NAME T0 [EPOCH NAMES]: one line of $T/events for churn/report.py.
event() {
	m=null
	[ -n "${4:-}" ] && m="\"$4\""
	printf '{"name": "%s", "t0": %s, "epoch": %s, "members": %s}\n' \
		"$1" "$2" "${3:-null}" "$m" >>"$T/events"
}

now() { date +%s.%N; }

# settle NAME T0 IDS: the directory shows exactly IDS; the event is
# recorded with the epoch that shows it; every client's ring reaches that
# membership; no client erred; the workload goes on for $OPS operations.
settle() {
	until_ok 120 members_are $M3 "$3" ||
		{ members_at $M3; tail -3 "$T"/agent-*.log; return 1; }
	e=$(epoch_at $M3) || return 1
	names=$(echo "$3" | tr ' ' ,)
	event "$1" "$2" "$e" "$names"
	until_ok 120 clients_at "$names" ||
		{ echo "want $names"; cat "$T"/c?.state; return 1; }
	clean && more_ops && clean
}

if ! command -v etcd >/dev/null; then
	tap_plan 1
	echo "ok 1 churn under load # SKIP etcd not installed"
	exit 0
fi

tap_plan 12
modprobe veth 2>/dev/null
modprobe loop 2>/dev/null
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }

# Setup at top level: background PIDs must stay in this shell.
i=0
while [ $i -lt "$NODES" ]; do
	veth_ns ch-$i ch-v$i $i || break
	i=$((i + 1))
done
for t in acme globex; do
	python3 -c 'import secrets; print(secrets.token_hex(32))' >"$T/$t.secret"
	chmod 600 "$T/$t.secret"
	$CLIENT tenant-hex $t >"$T/$t.hex"
done
truncate -s 256M "$T/warm.img"
LOOP=$(losetup -f --show "$T/warm.img")
for e in 1 2 3; do start_etcd $e; done
until_ok 120 etcdctl --endpoints $ETCD_LO endpoint health
for m in 1 2 3; do
	eval "start_root_mdsd \$M$m M$m"
	PIDS="$PIDS $!"
done
i=0
while [ $i -lt "$NODES" ]; do
	start_agent ch-$i $i $ETCD_IN
	PIDS="$PIDS $(eval echo \$APID_$i)"
	i=$((i + 1))
done

t_setup() {
	DISKARGS=--format
	i=0
	while [ $i -lt $LAST ]; do
		mknode $i || return 1
		i=$((i + 1))
	done
	[ "$(etcdctl --endpoints $ETCD_LO member list | grep -c started)" = 3 ] ||
		{ etcdctl --endpoints $ETCD_LO member list; return 1; }
	for m in $M1 $M2 $M3; do
		until_ok 60 get -f "http://$m/readyz" ||
			{ tail -5 "$T"/mdsd-*.log; return 1; }
	done
	until_ok 120 members_are $M3 "$(ids 0 $((LAST - 1)))" ||
		{ members_at $M3; tail -5 "$T"/agent-*.log; return 1; }
}
tap_check "$LAST of $NODES nodes registered by their agents in a 3-member etcd, 3 mdsd" t_setup

# Clients 0 and 1 of tenant acme, 2 and 3 of globex.
echo "$(now)" >"$T/t0"
set -- "0 lib acme" "1 sglang acme" "2 lib globex" "3 max globex"
for a in "$@"; do
	set -- $a
	$CLIENT run "$1" "$2" "$3" "$T/$3.secret" $ENDPOINTS $G $NKEYS "$T" \
		>"$T/c$1.out" 2>&1 &
	eval "CPID_$1=$!"
	PIDS="$PIDS $!"
done

t_start() {
	t0=$(cat "$T/t0")
	# the first ring: no keys moved yet, its convergence from the start
	until_ok 120 eval '[ -s "$T/c0.state" ] && [ -s "$T/c1.state" ] && [ -s "$T/c2.state" ] && [ -s "$T/c3.state" ]' ||
		{ cat "$T"/c?.out; return 1; }
	settle start "$t0" "$(ids 0 $((LAST - 1)))" &&
	# keys of their own on the node that will restart warm
	n=$($CLIENT seed acme "$T/acme.secret" $ENDPOINTS $G cn-$WARM $LAST \
		"$T/warm-keys") || return 1
	echo "# $n keys seeded on cn-$WARM" | tee -a "$T/diag"
}
tap_check "4 clients (2 tenants, 2 through the connectors' modules) discover the ring and load it" t_start

t_mdsd_killed() {
	t0=$(now)
	kill -9 "$M1PID" || return 1
	event "mdsd killed" "$t0"
	! get -f "http://$M1/readyz" >/dev/null && clean && more_ops
}
tap_check "an mdsd killed: the clients go on through the others" t_mdsd_killed

t_etcd_killed() {
	t0=$(now)
	kill -9 "$EPID_1" || return 1
	event "etcd member killed" "$t0"
	until_ok 60 get -f "http://$M3/readyz" &&
	clean && more_ops && get -f "http://$M2/readyz" >/dev/null
}
tap_check "an etcd member killed: the directory and the clients go on" t_etcd_killed

t_delete() {
	t0=$(now)
	inns ch-$GONE "$DFKVCTL" node del cn-$GONE || return 1
	settle "node deleted" "$t0" "$(ids 0 $((LAST - 1)) $GONE)"
}
tap_check "a node deleted: its keys miss, no error, every ring follows" t_delete

t_cut() {
	t0=$(now)
	ip link set ch-v$CUT down || return 1
	# its agent loses etcd too: its lease lapses after the TTL
	settle "link cut" "$t0" "$(ids 0 $((LAST - 1)) $GONE $CUT)"
}
tap_check "a node's link cut: misses until its lease lapses, no error" t_cut

t_back() {
	t0=$(now)
	ip link set ch-v$CUT up || return 1
	settle "link back" "$t0" "$(ids 0 $((LAST - 1)) $GONE)"
}
tap_check "its link back: the node and its keys return" t_back

t_warm() {
	t0=$(now)
	inns ch-$WARM "$DFKVCTL" node del cn-$WARM || return 1
	until_ok 60 members_are $M3 "$(ids 0 $((LAST - 1)) $GONE $WARM)" ||
		{ members_at $M3; return 1; }
	t1=$(now)
	DISKARGS="" mknode $WARM || return 1
	t2=$(now)
	n=$(inns ch-$WARM "$DFKVCTL" disk show cn-$WARM d0 --json |
		jq -r '.disks[0].stats.rebuild_records')
	echo "# cn-$WARM re-created: node add to listening $(echo "$t2 - $t1" | bc) s, $n records rebuilt" |
		tee -a "$T/diag"
	settle "warm restart" "$t0" "$(ids 0 $((LAST - 1)) $GONE)" || return 1
	r=$($CLIENT recheck acme "$T/acme.secret" $ENDPOINTS $G cn-$WARM \
		$((LAST - 1)) "$T/warm-keys") || { echo "$r"; return 1; }
	echo "# cn-$WARM's seeded keys after its warm restart: hits misses wrong errors $r" |
		tee -a "$T/diag"
	[ "${r%% *}" -gt 0 ]
}
tap_check "a node restarted warm: its keys hit again once it rejoins" t_warm

t_join() {
	t0=$(now)
	mknode $LAST || return 1
	settle "node joined" "$t0" "$(ids 0 $LAST $GONE)"
}
tap_check "a new node joins: the rings follow, about 1/N of the keys move" t_join

# The clients stop at top level: they are this shell's children.
touch "$T/stop"
crc=0
for c in 0 1 2 3; do
	eval "wait \$CPID_$c" || crc=1
done
t_clients() {
	[ $crc -eq 0 ] || { cat "$T"/c?.out; grep -h error "$T"/c?.log | head; return 1; }
	clean
}
tap_check "the clients stop with 0 errors and 0 wrong bytes" t_clients

python3 "$DFKV_REPO/selftests/churn/report.py" "$T" "$JSON" >"$T/report"
rrc=$?
t_report() { [ $rrc -eq 0 ] || { cat "$T/report"; return 1; }; }
tap_check "per-event figures written ($JSON)" t_report

t_teardown() {
	i=0
	while [ $i -lt "$NODES" ]; do
		ip netns del ch-$i || return 1
		i=$((i + 1))
	done
	losetup -d "$LOOP"
}
tap_check "namespaces and the disk go" t_teardown
cat "$T/report" "$T/diag"
tap_done
