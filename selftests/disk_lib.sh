#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What dfkv_disk.sh and dfkv_tier.sh share, on top of lib.sh: block devices
# for disks (the VM's virtio disk, loop devices over files in /tmp, a
# device-mapper target whose table a test swaps to "error"), reading
# counters out of dfkvctl's JSON, bounded waits, and the block loads of
# dfkv_blk.py.  Source it after lib.sh.

# python3 -S: the standard library only, without the site-packages scan
# at each of the hundreds of starts.
BLK="python3 -S $(cd "$(dirname "$0")" && pwd)/dfkv_blk.py"
T=$(mktemp -d)
chmod 755 "$T"
# A private copy: a concurrent build may replace the binary under us.
cp "$DFKVCTL" "$T/dfkvctl" || { echo "Bail out! no $DFKVCTL"; exit 1; }
DFKVCTL=$T/dfkvctl
# No udev in the VM: libdevmapper makes the /dev/mapper nodes itself.
export DM_DISABLE_UDEV=1

# Test cases run in subshells (tap_check): what they set up is found
# again by name at the end: dm targets named dfkv*, loops over $T files.
disk_cleanup() {
	for d in $(dmsetup ls 2>/dev/null | sed -n 's/^\(dfkv[^[:space:]]*\).*/\1/p'); do
		dmsetup remove --retry "$d" 2>/dev/null
	done
	dfkv_unload 2>/dev/null
	for l in $(losetup -a 2>/dev/null | grep -F "$T/" | cut -d: -f1); do
		losetup -d "$l" 2>/dev/null
	done
	rm -rf "$T"
}
trap disk_cleanup EXIT

# The kernel's block drivers the tests use (no udev loads them in the VM).
disk_modules() {
	for m in virtio_blk loop dm_mod dm_delay; do
		modprobe "$m" 2>/dev/null
	done
	# devtmpfs creates the nodes once the driver probed.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ -b /dev/vda ] && break
		sleep 0.2
	done
}

# The test's main device: $DFKV_DISK_DEV, the VM's /dev/vda, or a loop
# device over a 256 MiB file.
main_dev() {
	if [ -n "${DFKV_DISK_DEV:-}" ]; then
		echo "$DFKV_DISK_DEV"
	elif [ -b /dev/vda ]; then
		echo /dev/vda
	else
		new_loop main 256M
	fi
}

# new_loop NAME SIZE: a loop device over $T/NAME.img; prints its path.
new_loop() {
	truncate -s "$2" "$T/$1.img" || return 1
	losetup -f --show "$T/$1.img"
}

# new_dm NAME DEV: a dm-linear device over all of DEV; prints its path.
# NAME starts with "dfkv" (the cleanup finds it so).
new_dm() {
	sectors=$(blockdev --getsz "$2") &&
	dmsetup create "$1" --table "0 $sectors linear $2 0" || return 1
	echo "/dev/mapper/$1"
}

# dm_table NAME error|linear|records|hold DEV: swap NAME's table under its
# opener: all errors, all DEV, errors for the record area of the dfkv
# format on DEV only (its superblock and data area stay DEV's), or every
# read past the superblock block held for an hour (dm-delay; writes and
# flushes pass): an attach's index rebuild waits until the next swap,
# whose suspend releases the held reads.
dm_table() {
	sectors=$(blockdev --getsz "$3")
	case $2 in
	error)
		table="0 $sectors error" ;;
	hold)
		table="0 8 linear $3 0
8 $((sectors - 8)) delay $3 8 3600000 $3 8 0" ;;
	records)
		dev_sync "$3"
		d=$(python3 -c '
import struct, sys
with open(sys.argv[1], "rb") as f:
    print(struct.unpack_from("<Q", f.read(512), 0x40)[0] // 512)' "$3") ||
			return 1
		table="0 8 linear $3 0
8 $((d - 8)) error
$d $((sectors - d)) linear $3 $d" ;;
	*)
		table="0 $sectors linear $3 0" ;;
	esac
	dmsetup suspend "$1" && dmsetup reload "$1" --table "$table" &&
	dmsetup resume "$1"
}

# Userspace reads of a device the module wrote with bios: drop the
# device's page cache first so they see the device, not old pages.
dev_sync() {
	blockdev --flushbufs "$1"
}

# md5 of the first MiB of DEV, read around the page cache.
head_sum() {
	dd if="$1" bs=1M count=1 iflag=direct 2>/dev/null | md5sum | cut -d' ' -f1
}

# flip DEV OFFSET: invert the byte at OFFSET of DEV (which nobody holds).
flip() {
	python3 - "$1" "$2" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
off = int(sys.argv[2])
b = os.pread(fd, 1, off)
os.pwrite(fd, bytes([b[0] ^ 0xff]), off)
os.fsync(fd)
os.close(fd)
PY
	dev_sync "$1"
}

# nstat NODE FIELD: a counter of 'dfkvctl stats NODE --json' ("absent"
# when the node does not report it); nattr NODE FIELD: a node attribute.
# The JSON is read by jq: these run hundreds of times, and a python3
# start costs several times a jq one (more on the debug kernel).
nstat() {
	"$DFKVCTL" stats "$1" --json |
		jq -r --arg f "$2" '.stats | if has($f) then .[$f] else "absent" end'
}

nattr() {
	"$DFKVCTL" stats "$1" --json |
		jq -r --arg f "$2" 'if has($f) then .[$f] else "absent" end'
}

# dstat NODE DISK FIELD: a field of 'dfkvctl disk show NODE DISK --json',
# top level (state, epoch...) or a counter (objects, rebuild_records...).
dstat() {
	"$DFKVCTL" disk show "$1" "$2" --json | jq -r --arg f "$3" '.disks[0] |
		if has($f) then .[$f] elif (.stats | has($f)) then .stats[$f]
		else "absent" end'
}

# wait_until SECONDS CMD...: run CMD every 0.5 s until it succeeds; the
# bound is wall-clock and generous (emulated VMs on loaded hosts).
# dstat_is NODE DISK FIELD VALUE, nattr_is NODE FIELD VALUE, nstat_is
# NODE FIELD VALUE: read the field again on every call (wait_until
# retries the command, not its arguments).
dstat_is() { test "$(dstat "$1" "$2" "$3")" = "$4"; }
nattr_is() { test "$(nattr "$1" "$2")" = "$3"; }
nstat_is() { test "$(nstat "$1" "$2")" = "$3"; }

wait_until() {
	end=$(($(date +%s) + $1))
	shift
	while ! "$@"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "still not true after the wait: $*"
			return 1
		fi
		sleep 0.5
	done
}

# monitor_start FILE: run 'dfkvctl monitor' into FILE in the background
# (its pid in $MON) and return once it receives events: a probe node is
# created and deleted until its event shows up.
monitor_start() {
	"$DFKVCTL" monitor >"$1" 2>&1 &
	MON=$!
	wait_until 120 monitor_sees "$1" || { kill $MON; return 1; }
}

# monitor_stop FILE TEXT: wait for the line with TEXT (the last event
# expected), then stop the monitor.
monitor_stop() {
	wait_until 60 grep -qF -- "$2" "$1"
	kill $MON
}

monitor_sees() {
	"$DFKVCTL" node add monprobe --ram 1M >/dev/null 2>&1
	"$DFKVCTL" node del monprobe >/dev/null 2>&1
	grep -q "node del monprobe" "$1"
}

# The node has nothing left to flush.
node_clean() {
	[ "$(nstat "$1" dirty_bytes)" = 0 ] && [ "$(nstat "$1" flush_backlog)" = 0 ]
}

wait_clean() {
	wait_until 300 node_clean "$1" || {
		"$DFKVCTL" stats "$1"
		return 1
	}
}

# counts LINE KEY: the number after KEY= in a dfkv_blk.py result line.
counts() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# blk_expect WHAT LINE KEY=N...: the result line has these counts.
blk_expect() {
	what=$1
	line=$2
	shift 2
	for kv in "$@"; do
		k=${kv%%=*}
		v=${kv#*=}
		got=$(counts "$line" "$k")
		if [ "${got:-0}" != "$v" ]; then
			echo "$what: $k=${got:-0}, expected $v ($line)"
			return 1
		fi
	done
}

# never_wrong WHAT LINE: no byte of any block differed from what was PUT.
never_wrong() {
	blk_expect "$1" "$2" wrong=0
}
