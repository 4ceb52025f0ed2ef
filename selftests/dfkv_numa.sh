#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The RAM arena's NUMA placement (run in a VM with two NUMA nodes, as
# `make check` does): a node bound to NUMA node 1 takes its pages there,
# the default interleaves them over both, an unknown NUMA node is refused.
. "$(dirname "$0")/lib.sh"

if [ ! -d /sys/devices/system/node/node1 ]; then
	echo "1..0 # SKIP needs a VM with two NUMA nodes (vm-run --numa 2)"
	exit 4
fi
tap_plan 4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; dfkv_unload' EXIT
head -c 4194304 /dev/urandom >"$tmp/block"

# used KiB of NUMA node N
used() { awk '/MemUsed/ { print $4 }' "/sys/devices/system/node/node$1/meminfo"; }

# fill NODE: 10 blocks of 4 MiB, so the arena binds its pages
fill() {
	i=0
	while [ $i -lt 10 ]; do
		"$DFKVCTL" put "$1" --ns numa "b$i" --file "$tmp/block" || return 1
		i=$((i + 1))
	done
}

# placement NODE ARGS...: fill a new node, print the KiB each NUMA node gained
placement() {
	name=$1
	shift
	"$DFKVCTL" node add "$name" --ram 48M "$@" || return 1
	sync
	a0=$(used 0) a1=$(used 1)
	fill "$name" || return 1
	echo $(($(used 0) - a0)) $(($(used 1) - a1))
}

dfkv_load || exit 1

bound() {
	set -- $(placement n1 --numa 1) || return 1
	echo "node0 +$1 KiB, node1 +$2 KiB"
	[ "$2" -ge 32768 ] && [ "$1" -lt "$2" ]
}
tap_check "--numa 1: the arena's pages are on NUMA node 1" bound

interleaved() {
	set -- $(placement n2) || return 1
	echo "node0 +$1 KiB, node1 +$2 KiB"
	[ "$1" -ge 12288 ] && [ "$2" -ge 12288 ]
}
tap_check "default: the arena is interleaved over both NUMA nodes" interleaved

shown() {
	"$DFKVCTL" node show n1 | grep -Eq 'numa +1' &&
	"$DFKVCTL" node show n2 | grep -Eq 'numa +interleave'
}
tap_check "node show reports the placement" shown

refused() {
	! out=$("$DFKVCTL" node add n3 --ram 8M --numa 7 2>&1) &&
	echo "$out" | grep -q "NUMA"
}
tap_check "an unknown NUMA node is refused with a message" refused

"$DFKVCTL" node del n1 && "$DFKVCTL" node del n2
tap_done
