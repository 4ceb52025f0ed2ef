#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# libdfkv's RDMA rails (lib/rail.c, lib/rdma.c) over Soft-RoCE, inside the
# test VM as root: a client with two rails loses one and gets it back.
#
# The 6.1 kernel's rdma_rxe carries RoCE in the initial namespace only
# (see dfkv_rdma.sh), so everything lives there: two veth pairs, rc1-rn1
# and rc2-rn2, an rxe device on each end (rxe_c1, rxe_c2 the client's
# rails, named by rdma_devices; rxe_n1, rxe_n2 the node's).  The node's
# address N is on rn1 and on rn2, its RDMA listener on 0.0.0.0; each
# client end has an address of its own (C1, C2).  A connection bound to
# C1 resolves N through its bound interface rc1 (no route says
# otherwise: on link), so its RoCE packets cross rc1-rn1 and reach
# rxe_n1 for N; the node answers C1 through rn1 (a host route).  Local
# source addresses on the wire need accept_local; the neighbours are
# static (address resolution is not what is tested).
#
# The client (rails.py) hammers the node over both rails, every GET
# checked; rc2 goes down mid-run: rxe_c2's port leaves ACTIVE, the rail
# is quarantined and its requests move to rxe_c1, with no client error,
# miss or wrong byte; rc2 comes back up and rxe_c2 carries requests
# again.
. "$(dirname "$0")/lib.sh"

N=192.0.2.130 C1=192.0.2.131 C2=192.0.2.132
DFKVCTL=${DFKVCTL:-$DFKV_REPO/build/tools/dfkvctl}
T=$(mktemp -d)
RP_FILTER=$(sysctl -n net.ipv4.conf.all.rp_filter)

cleanup() {
	rm -rf "$T"
	sysctl -qw net.ipv4.conf.all.rp_filter="$RP_FILTER"
	"$DFKVCTL" node del kvr 2>/dev/null
	for d in rxe_c1 rxe_c2 rxe_n1 rxe_n2; do
		rdma link del $d 2>/dev/null
	done
	ip link del rc1 2>/dev/null
	ip link del rc2 2>/dev/null
	dfkv_unload
}
trap cleanup EXIT

# pair I CI: veth rcI-rnI, CI on rcI, N on rnI, rxe on both, the
# node's host route back to CI through rnI.
pair() {
	c=$2
	ip link add rc$1 type veth peer name rn$1 &&
	for d in rc$1 rn$1; do
		sysctl -qw net.ipv4.conf.$d.accept_local=1 &&
		sysctl -qw net.ipv4.conf.$d.rp_filter=0 || return 1
	done &&
	ip addr add $c/32 dev rc$1 && ip addr add $N/32 dev rn$1 &&
	ip link set rc$1 up && ip link set rn$1 up &&
	ip route add $c/32 dev rn$1 &&
	ip neigh replace $N lladdr "$(cat /sys/class/net/rn$1/address)" \
		dev rc$1 nud permanent &&
	ip neigh replace $c lladdr "$(cat /sys/class/net/rc$1/address)" \
		dev rn$1 nud permanent &&
	rdma link add rxe_c$1 type rxe netdev rc$1 &&
	rdma link add rxe_n$1 type rxe netdev rn$1
}

setup() {
	modprobe -a rdma_rxe rdma_ucm ib_uverbs veth &&
	sysctl -qw net.ipv4.conf.all.rp_filter=0 &&
	pair 1 $C1 && pair 2 $C2 &&
	dfkv_load &&
	"$DFKVCTL" node add kvr --ram 64M &&
	"$DFKVCTL" listener add kvr 0.0.0.0 --transport rdma
}

# The client's run, its phases and counters kept in $T/rails (shown after
# the case, passed or not).
rails() {
	PYTHONPATH="$DFKV_REPO/lib/python" \
	DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so" \
	python3 "$DFKV_REPO/selftests/rails.py" $N rxe_c1,rxe_c2 rc2 rn2 $C2 \
		>"$T/rails" 2>&1
}

tap_plan 2
tap_check "two veth pairs, four rxe devices, node on both" setup
tap_check "rail rxe_c2 cut and back: quarantined, traffic moved and back, every byte right" \
	rails
sed 's/^/# /' "$T/rails"
tap_done
