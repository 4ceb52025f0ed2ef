#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Crash consistency of the disk tier at every write, inside the test VM as
# root (as fstests' generic/482 does for filesystems): a dm-log-writes
# target records every write a workload makes durable, in the order the
# device made it so, and the log is then replayed onto the device as it
# was when logging began, to every flush, FUA write, superblock write and
# mark (thinned evenly to at most $POINTS, 24 or 6 on the debug kernel;
# every superblock write and mark is kept) and as many points between
# them; the disk is attached at each and every key read back.
#
# The workload: a formatted disk, closed clean; epoch 2 stores ack=disk
# and write-back values, removes some, and closes clean; epoch 3 stores
# more ack=disk values, removes one, and closes clean.  At every point the
# attach must succeed and no key may come back with wrong bytes; where
# the replayed superblock says CLEAN at an epoch, exactly what that
# epoch's graceful close left is served; where it says DIRTY (a crash
# mid-epoch) nothing is, since an unclean epoch is cold-reset, never
# resurrected (SPEC.md 6; Documentation/ondisk.md, "Attach").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/disk_lib.sh"

LW="python3 -S $(cd "$(dirname "$0")" && pwd)/logwrites.py"
POINTS=${DFKV_LOGWRITES_POINTS:-$(rounds 24)}
SZ=262144
N=lw
disk_modules
modprobe dm-log-writes 2>/dev/null
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }
D=$(new_loop lwdata 48M) && LOGDEV=$(new_loop lwlog 160M) ||
	{ echo "Bail out! no loop devices"; exit 1; }

# The keys of seed 61 a replayed point must serve, by the superblock it
# carries: what each of the workload's two epochs left at its graceful
# close (superblocks $S2 and $S3, as the workload read them off the
# device), nothing for the formatted disk and for every DIRTY epoch.
expect_ok() {
	if [ "$1" = "$S2" ]; then
		echo 20
	elif [ "$1" = "$S3" ]; then
		echo 27
	else
		echo 0
	fi
}

# sb_of DEV FILE: DEV's superblock ("clean|dirty EPOCH") into FILE, read
# past the block device's cache.
sb_of() {
	blockdev --flushbufs "$1" && $LW sb "$1" >"$2" &&
		grep -q '^clean ' "$2" ||
		{ echo "$1 is not clean: $(cat "$2")"; return 1; }
}

# session DEV: a node with ack=disk on the disk DEV, which starts an epoch.
session() {
	expect 0 "$DFKVCTL" node add "$N" --ram 16M &&
	expect 0 "$DFKVCTL" node set "$N" --ack disk &&
	expect 0 "$DFKVCTL" disk add "$N" "$1"
}

t_workload() {
	expect 0 "$DFKVCTL" node add "$N" --ram 16M &&
	expect 0 "$DFKVCTL" disk add "$N" "$D" --format --name lw0 &&
	expect 0 "$DFKVCTL" node del "$N" &&
	sb_of "$D" "$T/s1" &&
	cp "$T/lwdata.img" "$T/base.img" &&
	sectors=$(blockdev --getsz "$D") &&
	dmsetup create dfkvlw --table "0 $sectors log-writes $D $LOGDEV" &&
	session /dev/mapper/dfkvlw &&
	r=$($BLK put "$N" 61 0 16 $SZ) && blk_expect "ack=disk" "$r" ok=16 &&
	expect 0 "$DFKVCTL" node set "$N" --ack ram &&
	r=$($BLK put "$N" 61 16 8 $SZ) && blk_expect "write-back" "$r" ok=8 &&
	r=$($BLK rm "$N" 61 0 4) && blk_expect "removed" "$r" ok=4 &&
	wait_clean "$N" &&
	expect 0 "$DFKVCTL" node del "$N" &&
	sb_of "$D" "$T/s2" &&
	dmsetup message dfkvlw 0 mark epoch2 &&
	session /dev/mapper/dfkvlw &&
	r=$($BLK put "$N" 61 24 8 $SZ) && blk_expect "ack=disk" "$r" ok=8 &&
	r=$($BLK rm "$N" 61 4 1) && blk_expect "removed" "$r" ok=1 &&
	expect 0 "$DFKVCTL" node del "$N" &&
	dmsetup message dfkvlw 0 mark epoch3 &&
	dmsetup remove dfkvlw &&
	sb_of "$D" "$T/s3"
}

# check_point IMG: attach a copy of IMG, read every key back.
check_point() {
	cp --sparse=always "$1" "$T/chk.img" &&
	sb=$($LW sb "$T/chk.img") &&
	echo "$sb" >>"$T/seen" &&
	serve=$(expect_ok "$sb") &&
	loop=$(losetup -f --show "$T/chk.img") || return 1
	expect 0 "$DFKVCTL" node add lwc --ram 16M &&
	expect 0 "$DFKVCTL" disk add lwc "$loop" &&
	r=$($BLK check lwc 61 0 32 $SZ) &&
	blk_expect "at $sb (clean closes: $S1, $S2, $S3)" "$r" ok="$serve" wrong=0
	rc=$?
	"$DFKVCTL" node del lwc >/dev/null 2>&1
	losetup -d "$loop"
	return $rc
}

t_replay() {
	S1=$(cat "$T/s1") && S2=$(cat "$T/s2") && S3=$(cat "$T/s3") &&
	$LW points "$LOGDEV" "$POINTS" >"$T/points" &&
	cp "$T/base.img" "$T/replay.img" && : >"$T/seen" || return 1
	at=0
	n=0
	while read -r p; do
		$LW replay "$LOGDEV" "$T/replay.img" "$at" "$p" &&
		check_point "$T/replay.img" ||
			{ echo "replayed to entry $p of the log"; return 1; }
		at=$p
		n=$((n + 1))
	done <"$T/points"
	# the points went through the three clean closes in order, and
	# through a crash (DIRTY) in each epoch between them
	order=$(awk -v s1="$S1" -v s2="$S2" -v s3="$S3" '
		$0 == s1 && !a { a = 1; print "c1" }
		/^dirty / && a == 1 { a = 2; print "d2" }
		$0 == s2 && a == 2 { a = 3; print "c2" }
		/^dirty / && a == 3 { a = 4; print "d3" }
		$0 == s3 && a == 4 { a = 5; print "c3" }' "$T/seen" | tr '\n' ' ')
	[ "$order" = "c1 d2 c2 d3 c3 " ] ||
		{ echo "points seen ($n): $order, expected $S1, dirty, $S2, dirty, $S3"; return 1; }
}

tap_plan 2
tap_check "dm-log-writes: a workload of two epochs, logged" t_workload
tap_check "replayed to every flush, FUA and between: attaches, no wrong bytes, clean epochs whole" t_replay
tap_done
