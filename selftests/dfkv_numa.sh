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

# fill NODE: 10 blocks of 4 MiB, so the arena binds its pages
fill() {
	i=0
	while [ $i -lt 10 ]; do
		"$DFKVCTL" put "$1" --ns numa "b$i" --file "$tmp/block" || return 1
		i=$((i + 1))
	done
}

# placement NODE ARGS...: fill a new node, print the KiB of its arena on
# NUMA nodes 0 and 1, as the kernel counted them page by page (page_to_nid)
placement() {
	name=$1
	shift
	"$DFKVCTL" node add "$name" --ram 48M "$@" || return 1
	fill "$name" || return 1
	"$DFKVCTL" stats "$name" --json | python3 -c '
import json, os, sys
pages = json.load(sys.stdin)["stats"].get("numa_pages", {})
kib = os.sysconf("SC_PAGESIZE") // 1024
print(pages.get("0", 0) * kib, pages.get("1", 0) * kib)'
}

dfkv_load || exit 1

# 40 MiB of values bind at least 40 MiB of pages.
bound() {
	set -- $(placement n1 --numa 1) || return 1
	echo "node0 $1 KiB, node1 $2 KiB"
	[ "$1" -eq 0 ] && [ "$2" -ge 40960 ]
}
tap_check "--numa 1: the arena's pages are on NUMA node 1" bound

# Round-robin run by run (2 MiB extents here: one run each): each node
# holds about half.
interleaved() {
	set -- $(placement n2) || return 1
	echo "node0 $1 KiB, node1 $2 KiB"
	[ $(($1 + $2)) -ge 40960 ] &&
	[ $(($1 * 3)) -ge $(($1 + $2)) ] && [ $(($2 * 3)) -ge $(($1 + $2)) ]
}
tap_check "default: the arena is interleaved over both NUMA nodes" interleaved

shown() {
	"$DFKVCTL" node show n1 | grep -Eq 'numa +1' &&
	"$DFKVCTL" node show n2 | grep -Eq 'numa +interleave' &&
	"$DFKVCTL" node show n1 | grep -Eq 'arena pages +NUMA node 1: '
}
tap_check "node show reports the placement" shown

refused() {
	! out=$("$DFKVCTL" node add n3 --ram 8M --numa 7 2>&1) &&
	echo "$out" | grep -q "NUMA"
}
tap_check "an unknown NUMA node is refused with a message" refused

"$DFKVCTL" node del n1 && "$DFKVCTL" node del n2
tap_done
