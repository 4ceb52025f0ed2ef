#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# check.sh DIR LOG: boot 2 of the crash test (see run), inside the VM;
# appends TAP cases 2-6 to LOG.
set -u
dir=$1
log=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
ctl=$repo/build/tools/dfkvctl
n=1

tap() {	# tap NAME CMD...: one case
	name=$1
	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n $name" >>"$log"
	else
		echo "$out" | sed 's/^/# /' >>"$log"
		echo "not ok $n $name" >>"$log"
	fi
}

disk_field() {	# disk_field KEY: a number from `disk show --json`
	"$ctl" disk show kv0 vda --json | python3 -c "
import json, sys
d = json.load(sys.stdin)['disks'][0]
print(d['$1'] if '$1' in d else d['stats']['$1'])"
}

attach() {
	"$repo/tools/dfkv-insmod" "${DFKV_KO:-$repo/kmod/dfkv.ko}" &&
	"$ctl" node add kv0 --ram 32M &&
	"$ctl" disk add kv0 /dev/vda
}
tap "the disk attaches after the crash" attach

cold() {
	epoch=$(disk_field epoch) && rebuilt=$(disk_field rebuild_records) &&
	echo "epoch $epoch, records rebuilt $rebuilt" &&
	[ "$epoch" -ge 3 ] && [ "$rebuilt" -eq 0 ]
}
tap "cold reset: a new epoch, no record of the dirty one rebuilt" cold

none_served() {
	for f in "$dir"/v* "$dir"/w*; do
		[ -e "$f" ] || continue
		k=$(basename "$f" | sed 's/^v/k/')
		if "$ctl" get kv0 --ns crash "$k" --out "$dir/got" 2>/dev/null; then
			echo "$k served after the crash"
			return 1
		fi
	done
}
tap "no block of the crashed epoch is served, acknowledged or not" none_served

new_blocks() {
	head -c 300000 /dev/urandom >"$dir/n0" &&
	"$ctl" put kv0 --ns crash n0 --file "$dir/n0" &&
	"$ctl" get kv0 --ns crash n0 --out "$dir/got" && cmp "$dir/n0" "$dir/got"
}
tap "the disk takes new blocks after the reset" new_blocks

graceful() {
	"$ctl" node del kv0 && "$ctl" node add kv0 --ram 32M &&
	"$ctl" disk add kv0 /dev/vda &&
	"$ctl" get kv0 --ns crash n0 --out "$dir/got" && cmp "$dir/n0" "$dir/got" &&
	"$ctl" node del kv0 && rmmod dfkv
}
tap "a graceful restart after it keeps the new block" graceful
