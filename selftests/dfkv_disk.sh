#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The disk tier of dfkv.ko (issue #5, Documentation/ondisk.md), inside the
# test VM as root, through dfkvctl and /dev/dfkv: refusals that rewrite
# nothing (ext4, another extent size, another device size, another name),
# format and show, byte-exact put/get, remove, graceful restart (node
# delete and re-add, module unload and reload) with every surviving block
# back byte-exact and removed ones gone, corrupted records and payloads
# never served, a device whose record area fails under a write load (a
# dm table with an error segment there) failing the disk closed while the
# node serves RAM and its other disk and routes new blocks to that one,
# then a cold reset, an image of 2,000 records written natively served
# byte-exact, a full disk
# evicting old blocks, blocks spread over two disks, disk events, and a
# clean unload.  (Whole-device write errors, which stop the flushes, are
# dfkv_tier.sh's flush-failure case.)
#
# The main disk is /dev/vda (tools/vm/vm-run --disk 256M) or
# $DFKV_DISK_DEV; the others are loop devices over files in /tmp and a
# dm-linear target over one of them.  A 24 GiB sparse disk holding a few
# hundred blocks shows that an attach reads only the record area in use.
# A node restarted warm stays out of an mdsd agent's directory while its
# disk rebuilds (held there by a dm-delay table), its NODE_GET answering.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/disk_lib.sh"

N=n0
SZ=65536		# value size of the loads
disk_modules
DEV=$(main_dev) || { echo "Bail out! no block device for the disk"; exit 1; }
DEV_BYTES=$(blockdev --getsize64 "$DEV")
K=$($BLK key 2 0)	# the key of a 1 MiB file put and got with dfkvctl
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }

t_refuse_ext4() {
	mkfs.ext4 -q -F "$DEV" >/dev/null 2>&1 || { echo "mkfs.ext4 failed"; return 1; }
	before=$(head_sum "$DEV")
	expect 0 "$DFKVCTL" node add "$N" --ram 64M &&
	expect 3 "$DFKVCTL" disk add "$N" "$DEV" &&
	has "$T/err" "--format" &&
	expect 3 "$DFKVCTL" disk add "$N" "$DEV" --name d0 &&
	after=$(head_sum "$DEV") &&
	[ "$before" = "$after" ] || { echo "the first MiB changed: $before -> $after"; return 1; }
	expect 0 "$DFKVCTL" disk list "$N" &&
	[ ! -s "$T/out" ] || { echo "a refused disk is listed:"; cat "$T/out"; return 1; }
}

t_format_show() {
	expect 0 "$DFKVCTL" disk add "$N" "$DEV" --format --name d0 &&
	expect 0 "$DFKVCTL" disk show "$N" d0 --bytes &&
	has "$T/out" "disk d0 (node $N)" && has "$T/out" "$DEV" &&
	grep -Eq "state +up$" "$T/out" &&
	grep -Eq "device +$DEV_BYTES$" "$T/out" &&
	grep -Eq "extent size +4194304$" "$T/out" || { cat "$T/out"; return 1; }
	[ "$(dstat "$N" d0 dev_bytes)" = "$DEV_BYTES" ] &&
	[ "$(dstat "$N" d0 extent_bytes)" = 4194304 ] &&
	[ "$(dstat "$N" d0 epoch)" -ge 1 ] &&
	[ "$(dstat "$N" d0 extents_total)" -gt 0 ] &&
	[ "$(dstat "$N" d0 objects)" = 0 ] || { "$DFKVCTL" disk show "$N" d0 --json; return 1; }
	expect 0 "$DFKVCTL" disk list &&
	grep -Eq "^$N +d0 +up " "$T/out" || { cat "$T/out"; return 1; }
	[ "$(nstat "$N" disks)" = 1 ] && [ "$(nstat "$N" disks_failed)" = 0 ]
	# A second add of the same device is refused (it is held exclusively).
	expect 3 "$DFKVCTL" disk add "$N" "$DEV" --name d1
}

t_put_get() {
	r=$($BLK put "$N" 1 0 200 $SZ) && blk_expect put "$r" ok=200 &&
	r=$($BLK check "$N" 1 0 200 $SZ) && blk_expect check "$r" ok=200 wrong=0 &&
	head -c 1048576 /dev/urandom >"$T/big" &&
	expect 0 "$DFKVCTL" put "$N" "$K" --file "$T/big" &&
	expect 0 "$DFKVCTL" get "$N" "$K" --out "$T/big.out" &&
	cmp "$T/big" "$T/big.out" &&
	wait_clean "$N" &&
	[ "$(dstat "$N" d0 objects)" = 201 ] || { "$DFKVCTL" disk show "$N" d0; return 1; }
	[ "$(dstat "$N" d0 disk_writes)" -gt 0 ] &&
	[ "$(dstat "$N" d0 disk_record_writes)" -gt 0 ]
}

t_remove() {
	r=$($BLK rm "$N" 1 0 50) && blk_expect rm "$r" ok=50 &&
	r=$($BLK check "$N" 1 0 50 $SZ) && blk_expect removed "$r" miss=50 &&
	r=$($BLK check "$N" 1 50 150 $SZ) && blk_expect kept "$r" ok=150 wrong=0 &&
	wait_until 60 dstat_is "$N" d0 objects 151
}

# After a restart: keys 50..199 of seed 1 and the big file are back
# byte-exact from the records alone, 0..49 stay removed.
survivors() {
	r=$($BLK check "$N" 1 50 150 $SZ) && blk_expect "$1: kept" "$r" ok=150 wrong=0 &&
	r=$($BLK check "$N" 1 0 50 $SZ) && blk_expect "$1: removed" "$r" miss=50 &&
	expect 0 "$DFKVCTL" get "$N" "$K" --out "$T/big.out" &&
	cmp "$T/big" "$T/big.out" &&
	[ "$(dstat "$N" d0 objects)" = 151 ] &&
	[ "$(dstat "$N" d0 rebuild_records)" = 151 ] &&
	[ "$(dstat "$N" d0 rebuild_rejected)" = 0 ] || { "$DFKVCTL" disk show "$N" d0; return 1; }
}

t_restart_node() {
	e0=$(dstat "$N" d0 epoch) &&
	expect 0 "$DFKVCTL" node del "$N" &&
	expect 0 "$DFKVCTL" node add "$N" --ram 64M &&
	expect 0 "$DFKVCTL" disk add "$N" "$DEV" &&
	[ "$(dstat "$N" d0 epoch)" -gt "$e0" ] &&
	survivors "node restart"
}

t_restart_module() {
	dfkv_unload &&
	dfkv_load &&
	expect 0 "$DFKVCTL" node add "$N" --ram 64M &&
	expect 0 "$DFKVCTL" disk add "$N" "$DEV" &&
	survivors "module reload"
}

t_disk_del() {
	# del flushes and closes; the blocks are back after the next add.
	expect 0 "$DFKVCTL" disk del "$N" d0 &&
	expect 1 "$DFKVCTL" disk show "$N" d0 &&
	expect 1 "$DFKVCTL" disk del "$N" d0 &&
	r=$($BLK check "$N" 1 50 150 $SZ) && never_wrong "without its disk" "$r" &&
	expect 0 "$DFKVCTL" disk add "$N" "$DEV" &&
	survivors "disk del and add"
}

# Another geometry: a format of another extent size, then of another
# device size, and another name: refused, nothing rewritten.
t_refuse_geometry() {
	L=$(new_loop geo 64M) &&
	expect 0 "$DFKVCTL" disk add "$N" "$L" --format --extent 1M --name geo &&
	[ "$(dstat "$N" geo extent_bytes)" = 1048576 ] &&
	expect 0 "$DFKVCTL" disk del "$N" geo &&
	before=$(head_sum "$L") &&
	expect 3 "$DFKVCTL" disk add "$N" "$L" --extent 4M &&
	has "$T/err" "--format" &&
	expect 3 "$DFKVCTL" disk add "$N" "$L" --name other &&
	[ "$(head_sum "$L")" = "$before" ] ||
		{ echo "the first MiB changed (extent, name)"; return 1; }
	expect 0 "$DFKVCTL" disk add "$N" "$L" --extent 1M &&
	expect 0 "$DFKVCTL" disk del "$N" geo &&
	before=$(head_sum "$L") &&
	truncate -s 80M "$T/geo.img" && losetup -c "$L" &&
	expect 3 "$DFKVCTL" disk add "$N" "$L" &&
	has "$T/err" "--format" &&
	[ "$(head_sum "$L")" = "$before" ] ||
		{ echo "the first MiB changed (device size)"; return 1; }
	expect 0 "$DFKVCTL" disk add "$N" "$L" --format --name geo &&
	[ "$(dstat "$N" geo extent_bytes)" = 4194304 ] &&
	expect 0 "$DFKVCTL" disk del "$N" geo
}

# reattach DEV: a graceful node restart with DEV re-added (RAM empty).
reattach() {
	expect 0 "$DFKVCTL" node add "$N" --ram 64M &&
	expect 0 "$DFKVCTL" disk add "$N" "$DEV"
}

# Flip a byte of one key's record while the disk is detached: the record
# is rejected at rebuild and the key is a miss; the others are intact.
t_corrupt_record() {
	r=$($BLK put "$N" 3 0 20 $SZ) && blk_expect put "$r" ok=20 &&
	expect 0 "$DFKVCTL" node del "$N" &&
	dev_sync "$DEV" &&
	rec=$($BLK rec "$DEV" 3 5) || { echo "no record of key 5 on $DEV"; return 1; }
	flip "$DEV" $((rec + 0x10)) &&
	reattach &&
	[ "$(dstat "$N" d0 rebuild_rejected)" = 1 ] || { "$DFKVCTL" disk show "$N" d0; return 1; }
	r=$($BLK check "$N" 3 5 1 $SZ) && blk_expect "flipped record" "$r" miss=1 &&
	r=$($BLK check "$N" 3 0 20 $SZ) && blk_expect "the others" "$r" ok=19 wrong=0 &&
	r=$($BLK check "$N" 1 50 150 $SZ) && blk_expect "seed 1" "$r" ok=150 wrong=0
}

# Flip a byte in the middle of one key's payload while the disk is
# detached: the key must not be served with the flipped byte.
t_corrupt_payload() {
	expect 0 "$DFKVCTL" node del "$N" &&
	dev_sync "$DEV" &&
	pay=$($BLK payload "$DEV" 3 7 $SZ) || { echo "no payload of key 7 on $DEV"; return 1; }
	flip "$DEV" $((pay + 1000)) &&
	reattach &&
	r=$($BLK check "$N" 3 7 1 $SZ) && blk_expect "flipped payload" "$r" miss=1 &&
	r=$($BLK check "$N" 3 0 20 $SZ) && never_wrong "seed 3" "$r"
}

# A record with a valid CRC that claims a value as long as the disk's
# whole data area: no value that long can be served (it exceeds the
# node's RAM), and its parts would not fit one allocation on this sparse
# disk of 64 KiB extents.  The rebuild rejects that record alone: the disk
# attaches, the other blocks are byte-exact, that key is a miss.
t_huge_length() {
	LH=$(new_loop huge 24G) &&
	expect 0 "$DFKVCTL" node add nh --ram 64M &&
	expect 0 "$DFKVCTL" disk add nh "$LH" --format --extent 64K --name huge &&
	r=$($BLK put nh 13 0 20 $SZ) && blk_expect put "$r" ok=20 &&
	expect 0 "$DFKVCTL" node del nh &&
	dev_sync "$LH" &&
	$BLK stretch "$LH" 13 5 || { echo "no record of key 5 on $LH"; return 1; }
	dev_sync "$LH" &&
	expect 0 "$DFKVCTL" node add nh --ram 64M &&
	expect 0 "$DFKVCTL" disk add nh "$LH" &&
	[ "$(dstat nh huge state)" = up ] &&
	[ "$(dstat nh huge rebuild_rejected)" = 1 ] &&
	[ "$(dstat nh huge rebuild_records)" = 19 ] &&
	[ "$(dstat nh huge objects)" = 19 ] || { "$DFKVCTL" disk show nh huge; return 1; }
	r=$($BLK check nh 13 5 1 $SZ) && blk_expect "huge length" "$r" miss=1 &&
	r=$($BLK check nh 13 0 20 $SZ) && blk_expect "the others" "$r" ok=19 miss=1 wrong=0 &&
	expect 0 "$DFKVCTL" node del nh
}

# sparse_attach NODE DISK DEV RECORDS: a graceful restart of NODE with
# DEV re-added; its rebuild found RECORDS and read under 1% of DISK's
# record area (extents_total * extent_bytes / 64): the extents below the
# record high-water mark only, not the 24 GiB disk's 378 MiB area.
sparse_attach() {
	expect 0 "$DFKVCTL" node del "$1" &&
	expect 0 "$DFKVCTL" node add "$1" --ram 64M &&
	expect 0 "$DFKVCTL" disk add "$1" "$3" &&
	area=$(($(dstat "$1" "$2" extents_total) * $(dstat "$1" "$2" extent_bytes) / 64)) &&
	got=$(dstat "$1" "$2" rebuild_read_bytes) &&
	[ "$(dstat "$1" "$2" rebuild_records)" = "$4" ] &&
	[ "$got" -gt 0 ] && [ $((got * 100)) -lt "$area" ] ||
		{ echo "record area $area bytes, rebuild read $got"; "$DFKVCTL" disk show "$1" "$2"; return 1; }
}

# A 24 GiB sparse disk of 64 KiB extents holding a few hundred blocks
# (ondisk.md, "Record high-water mark"): each attach reads only the
# extents below the mark, which PUTs raise past its first steps, a
# rebuild lowers after removals and the PUTs that follow raise again;
# every block is back byte-exact after each graceful restart.  Then a
# crash (the record area failing under a PUT, the disk failed, never
# closed clean): the next attach is a cold reset that drops the mark and
# serves nothing of before, and the blocks stored after it are back
# byte-exact after one more restart (records of before that the scan
# meets are rejected: their generation is below the window).
t_sparse_rebuild() {
	LS=$(new_loop sparse 24G) && DS=$(new_dm dfkvsparse "$LS") &&
	expect 0 "$DFKVCTL" node add ns --ram 64M &&
	expect 0 "$DFKVCTL" disk add ns "$DS" --format --extent 64K --name sp &&
	r=$($BLK put ns 21 0 200 $SZ) && blk_expect put "$r" ok=200 &&
	r=$($BLK rm ns 21 50 150) && blk_expect rm "$r" ok=150 &&
	wait_clean ns &&
	sparse_attach ns sp "$DS" 50 &&
	[ "$(dstat ns sp rebuild_rejected)" = 0 ] &&
	r=$($BLK check ns 21 0 200 $SZ) && blk_expect "after removals" "$r" ok=50 miss=150 &&
	r=$($BLK put ns 22 0 100 $SZ) && blk_expect put "$r" ok=100 &&
	wait_clean ns &&
	sparse_attach ns sp "$DS" 150 &&
	[ "$(dstat ns sp rebuild_rejected)" = 0 ] &&
	r=$($BLK check ns 21 0 50 $SZ) && blk_expect "seed 21" "$r" ok=50 wrong=0 &&
	r=$($BLK check ns 22 0 100 $SZ) && blk_expect "seed 22" "$r" ok=100 wrong=0 &&
	e0=$(dstat ns sp epoch) &&
	dm_table dfkvsparse records "$LS" &&
	$BLK put ns 23 0 5 $SZ >/dev/null &&
	wait_until 120 dstat_is ns sp state failed || { "$DFKVCTL" disk show ns; return 1; }
	dm_table dfkvsparse linear "$LS" &&
	expect 0 "$DFKVCTL" node del ns &&
	expect 0 "$DFKVCTL" node add ns --ram 64M &&
	expect 0 "$DFKVCTL" disk add ns "$DS" &&
	[ "$(dstat ns sp epoch)" -gt "$e0" ] &&
	[ "$(dstat ns sp rebuild_read_bytes)" = 0 ] &&
	[ "$(dstat ns sp objects)" = 0 ] || { "$DFKVCTL" disk show ns sp; return 1; }
	r=$($BLK put ns 24 0 30 $SZ) && blk_expect put "$r" ok=30 &&
	wait_clean ns &&
	sparse_attach ns sp "$DS" 30 &&
	r=$($BLK check ns 24 0 30 $SZ) && blk_expect "seed 24" "$r" ok=30 wrong=0 &&
	r=$($BLK check ns 21 0 50 $SZ) && blk_expect "seed 21 after the crash" "$r" miss=50 &&
	r=$($BLK check ns 22 0 100 $SZ) && blk_expect "seed 22 after the crash" "$r" miss=100 &&
	expect 0 "$DFKVCTL" node del ns
}

# Extents of 256 MiB have 4 MiB of records each, one rebuild chunk: six
# value sizes bind six extents (one per size class), so the scan reads
# more chunks than the four it keeps in flight, each buffer taking the
# next read after its scan; every block is back byte-exact.
t_rebuild_chunks() {
	LC=$(new_loop chunks 24G) &&
	expect 0 "$DFKVCTL" node add nc --ram 64M &&
	expect 0 "$DFKVCTL" disk add nc "$LC" --format --extent 256M --name chunks &&
	for sz in 4096 16384 65536 262144 1048576 4194304; do
		r=$($BLK put nc $((sz % 97)) 0 3 $sz) && blk_expect "put $sz" "$r" ok=3 || return 1
	done
	wait_clean nc &&
	expect 0 "$DFKVCTL" node del nc &&
	expect 0 "$DFKVCTL" node add nc --ram 64M &&
	expect 0 "$DFKVCTL" disk add nc "$LC" &&
	[ "$(dstat nc chunks rebuild_records)" = 18 ] &&
	[ "$(dstat nc chunks rebuild_read_bytes)" -gt $((4 * 4194304)) ] ||
		{ "$DFKVCTL" disk show nc chunks; return 1; }
	for sz in 4096 16384 65536 262144 1048576 4194304; do
		r=$($BLK check nc $((sz % 97)) 0 3 $sz) &&
		blk_expect "check $sz" "$r" ok=3 wrong=0 || return 1
	done
	expect 0 "$DFKVCTL" node del nc
}

# A disk image of 2,000 records written natively (build/bench/dfkv-mkimage:
# the module's codec and allocator, as after a clean close) on a tmpfs
# behind a loop device: the node attaching it rebuilds every record and
# serves every key byte-exact over TCP, and a key never stored is a miss
# (tools/bench/warm-restart, the bench of that restart at 1 M records).
t_mkimage() {
	python3 "$DFKV_REPO/tools/bench/warm-restart" --records 2000 --every 1 \
		--node nimg --json "$T/warm.json" >"$T/out" 2>&1 ||
		{ cat "$T/out"; return 1; }
}

# A device whose record area fails under a write load (its dm table
# swapped to "error" there): the first failed record write fails the disk
# closed, the node serves RAM and its other disk, nobody gets wrong
# bytes; the blocks the failed disk held (and RAM did not) are absent on
# every path (GET, EXIST, PROBE, LEASE) and can be stored again at once,
# on the other disk; after the device is back, a re-add is a cold reset
# that serves nothing of the dirty epoch.
t_crash() {
	LA=$(new_loop fa 96M) && LB=$(new_loop fb 96M) &&
	DM=$(new_dm dfkvfault "$LA") || return 1
	monitor_start "$T/events" || return 1
	expect 0 "$DFKVCTL" node add nf --ram 16M &&
	expect 0 "$DFKVCTL" disk add nf "$DM" --format --name dm0 &&
	expect 0 "$DFKVCTL" disk add nf "$LB" --format --name lb &&
	e0=$(dstat nf dm0 epoch) &&
	# 300 blocks of 64 KiB, more than the 16 MiB of RAM: the oldest are
	# on the disks only
	for first in 0 100 200; do
		r=$($BLK put nf 5 $first 100 $SZ) && blk_expect put "$r" ok=100 &&
		wait_clean nf || { kill $MON; return 1; }
	done
	[ "$(dstat nf dm0 objects)" -gt 0 ] || { "$DFKVCTL" disk show nf; kill $MON; return 1; }
	dm_table dfkvfault records "$LA" &&
	$BLK put nf 6 0 100 $SZ >/dev/null &&
	wait_until 120 dstat_is nf dm0 state failed || {
		"$DFKVCTL" disk show nf; kill $MON; return 1; }
	[ "$(dstat nf dm0 reason)" != null ] &&
	[ "$(dstat nf dm0 disk_io_errors)" -gt 0 ] &&
	[ "$(dstat nf lb state)" = up ] &&
	[ "$(nstat nf disks_failed)" = 1 ] &&
	expect 0 "$DFKVCTL" node show nf || { kill $MON; return 1; }
	# Reads: from RAM and lb, never wrong bytes; the other node is fine.
	r=$($BLK check nf 5 0 300 $SZ) && never_wrong "seed 5 after the fault" "$r" &&
	[ "$(counts "$r" ok)" -gt 0 ] &&
	r=$($BLK check nf 6 0 100 $SZ) && never_wrong "seed 6 after the fault" "$r" &&
	r=$($BLK check "$N" 1 50 150 $SZ) && blk_expect "node $N" "$r" ok=150 ||
		{ kill $MON; return 1; }
	# Announced once the ring routes around dm0: new blocks go to lb.
	monitor_stop "$T/events" "disk state nf dm0 failed"
	has "$T/events" "disk add nf dm0 state up" &&
	has "$T/events" "disk state nf dm0 failed" &&
	# Its blocks left the index before the event: absent everywhere,
	# and a PUT stores them again (on lb).
	[ "$(dstat nf dm0 objects)" = 0 ] || { "$DFKVCTL" disk show nf dm0; return 1; }
	r=$($BLK lost nf 5 0 300 $SZ) && lost=$(counts "$r" lost) &&
	[ "$lost" -gt 0 ] || { echo "no block of seed 5 was lost: $r"; return 1; }
	blk_expect "lost blocks" "$r" exist=0 probe=0 lease=0 put_ok="$lost" \
		ok="$lost" miss=0 wrong=0 &&
	wait_clean nf && drops=$(nstat nf flush_drops) && onlb=$(dstat nf lb objects) &&
	r=$($BLK put nf 7 0 20 $SZ) && blk_expect "put after the fault" "$r" ok=20 &&
	wait_clean nf &&
	[ "$(nstat nf flush_drops)" = "$drops" ] &&
	[ "$(dstat nf lb objects)" = $((onlb + 20)) ] || {
		"$DFKVCTL" stats nf; return 1; }
	r=$($BLK check nf 7 0 20 $SZ) && blk_expect "seed 7 from RAM and lb" "$r" ok=20 wrong=0 &&
	# The device is back: a cold reset, nothing of the dirty epoch.
	dm_table dfkvfault linear "$LA" &&
	expect 0 "$DFKVCTL" node del nf &&
	expect 0 "$DFKVCTL" node add nf --ram 16M &&
	expect 0 "$DFKVCTL" disk add nf "$DM" &&
	expect 0 "$DFKVCTL" disk add nf "$LB" &&
	[ "$(dstat nf dm0 epoch)" -gt "$e0" ] &&
	[ "$(dstat nf dm0 state)" = up ] &&
	[ "$(dstat nf dm0 rebuild_records)" = 0 ] &&
	[ "$(dstat nf dm0 objects)" = 0 ] || { "$DFKVCTL" disk show nf; return 1; }
	onlb=$(dstat nf lb objects) &&
	r=$($BLK check nf 5 0 300 $SZ) && never_wrong "seed 5 after the cold reset" "$r" &&
	r2=$($BLK check nf 6 0 100 $SZ) && never_wrong "seed 6 after the cold reset" "$r2" &&
	r3=$($BLK check nf 7 0 20 $SZ) && never_wrong "seed 7 after the cold reset" "$r3" &&
	back=$(($(counts "$r" ok) + $(counts "$r2" ok) + $(counts "$r3" ok))) &&
	[ "$back" = "$onlb" ] || { echo "$back blocks back, lb holds $onlb"; return 1; }
	expect 0 "$DFKVCTL" node del nf
}

# ack=disk on a device whose writes all fail: a PUT gets IO_ERROR once
# its flush is given up (the node then turns unhealthy and refuses the
# next ones with BUSY), and its value is not readable after that, not
# from RAM either; blocks acknowledged before the fault are still served
# from RAM.
t_ack_fail() {
	LW=$(new_loop ackf 64M) && DW=$(new_dm dfkvackf "$LW") &&
	expect 0 "$DFKVCTL" node add na --ram 16M --ack disk &&
	expect 0 "$DFKVCTL" disk add na "$DW" --format --name ackf &&
	r=$($BLK put na 14 0 10 $SZ) && blk_expect "before the fault" "$r" ok=10 &&
	dm_table dfkvackf error "$LW" &&
	r=$($BLK put na 15 0 10 $SZ) && io=$(counts "$r" io_error) &&
	busy=$(counts "$r" busy) &&
	[ "${io:-0}" -ge 1 ] && [ $((${io:-0} + ${busy:-0})) = 10 ] ||
		{ echo "writes failing: $r"; return 1; }
	r=$($BLK check na 15 0 10 $SZ) && blk_expect "after IO_ERROR" "$r" miss=10 &&
	r=$($BLK check na 14 0 10 $SZ) && blk_expect "acknowledged before" "$r" ok=10 wrong=0 &&
	[ "$(nstat na objects)" = 10 ] || { "$DFKVCTL" stats na; return 1; }
	dm_table dfkvackf linear "$LW" &&
	expect 0 "$DFKVCTL" node del na
}

# Values of 5000 bytes, flushed after every RAM page held other values'
# bytes: on the device, the bytes after each value up to its page end
# (what the flush wrote of its last page) are zero.
t_tail_zero() {
	LZ=$(new_loop tail 64M) &&
	expect 0 "$DFKVCTL" node add nz --ram 4M &&
	expect 0 "$DFKVCTL" disk add nz "$LZ" --format --extent 1M --name tz &&
	for first in 0 256 512 768; do
		r=$($BLK put nz 16 $first 256 8192) && blk_expect fill "$r" ok=256 &&
		wait_clean nz || return 1
	done
	r=$($BLK put nz 17 0 32 5000) && blk_expect put "$r" ok=32 &&
	wait_clean nz &&
	expect 0 "$DFKVCTL" node del nz &&
	dev_sync "$LZ" &&
	r=$($BLK tail "$LZ" 17 0 32 5000) && blk_expect "page tails" "$r" found=32 dirty=0
}

# Sustained PUTs past a small disk's capacity: old blocks are evicted,
# recent ones read back, and each GET of an evicted one is a miss of
# cause evicted.
t_full() {
	LF=$(new_loop full 24M) &&
	expect 0 "$DFKVCTL" node add nfull --ram 4M --policy writearound &&
	expect 0 "$DFKVCTL" disk add nfull "$LF" --format --extent 1M --name full &&
	cap=$(dstat nfull full capacity_bytes) &&
	n=$((cap * 2 / SZ)) &&
	r=$($BLK put nfull 8 0 $n $SZ) && blk_expect "put past capacity" "$r" ok=$n &&
	ev=$(nstat nfull evictions) &&
	[ "$ev" != absent ] && [ "$ev" -gt 0 ] || { echo "evictions: $ev"; return 1; }
	dev=$(dstat nfull full evictions) &&
	[ "$dev" -gt 0 ] && [ "$dev" -le "$ev" ] || { "$DFKVCTL" disk show nfull; return 1; }
	r=$($BLK check nfull 8 $((n - 20)) 20 $SZ) && blk_expect recent "$r" ok=20 wrong=0 &&
	r=$($BLK check nfull 8 0 $n $SZ) && never_wrong all "$r" &&
	[ "$(counts "$r" miss)" -gt 0 ] || { echo "nothing was evicted: $r"; return 1; }
	# every one of those misses: a key evicted from the disk
	nstat_is nfull miss_evicted "$(counts "$r" miss)" &&
	nstat_is nfull miss_never_stored 0 && nstat_is nfull miss_removed 0 ||
		{ "$DFKVCTL" stats nfull; return 1; }
	[ "$(dstat nfull full used_bytes)" -le "$cap" ] &&
	expect 0 "$DFKVCTL" node del nfull
}

# Two disks: blocks spread over both, by name.
t_multi() {
	L1=$(new_loop m1 64M) && L2=$(new_loop m2 64M) &&
	expect 0 "$DFKVCTL" node add nm --ram 32M &&
	expect 0 "$DFKVCTL" disk add nm "$L1" --format &&
	expect 0 "$DFKVCTL" disk add nm "$L2" --format &&
	n1=$(basename "$L1") && n2=$(basename "$L2") &&
	expect 0 "$DFKVCTL" disk list nm &&
	grep -Eq "^nm +$n1 +up " "$T/out" && grep -Eq "^nm +$n2 +up " "$T/out" ||
		{ cat "$T/out"; return 1; }
	r=$($BLK put nm 9 0 100 $SZ) && blk_expect put "$r" ok=100 &&
	wait_clean nm &&
	o1=$(dstat nm "$n1" objects) && o2=$(dstat nm "$n2" objects) &&
	[ "$o1" -gt 0 ] && [ "$o2" -gt 0 ] && [ $((o1 + o2)) = 100 ] ||
		{ echo "objects $o1 + $o2"; return 1; }
	[ "$(nstat nm disks)" = 2 ] &&
	expect 0 "$DFKVCTL" node del nm &&
	expect 0 "$DFKVCTL" node add nm --ram 32M &&
	expect 0 "$DFKVCTL" disk add nm "$L2" &&
	expect 0 "$DFKVCTL" disk add nm "$L1" &&
	r=$($BLK check nm 9 0 100 $SZ) && blk_expect "after restart" "$r" ok=100 wrong=0 &&
	expect 0 "$DFKVCTL" node del nm
}

# Warm rejoin (Documentation/operations.md): node $W, restarted under its
# own name, stays out of the directory of an mdsd --agent (memory
# backend) until its disk is rebuilt, then comes back with every block.
# Its disk is a dm table over a loop device whose "hold" table
# (dm_table) keeps the rebuild's reads until the test swaps the table
# back: the attach then waits inside its rebuild, holding the tier's
# mutex, for as long as the test looks.
W=nw
WP=17490
w_get() { curl -s --max-time 15 "http://127.0.0.1:$WP$1"; }
w_member() { w_get /v1/groups/warm/members | grep -qF "{\"id\":\"$W\","; }
w_absent() { ! w_member; }
# The agent's completed dumps of the nodes.
w_syncs() { w_get /metrics | sed -n 's/^dfkv_mds_agent_syncs_total \([0-9]*\)$/\1/p'; }
# w_dumped N: past N, a whole dump started after the count was N.
w_dumped() { [ "$(w_syncs)" -ge $(($1 + 2)) ]; }
# w_not_registered: after a whole dump more, $W is still no member.
w_not_registered() {
	s=$(w_syncs) && wait_until 60 w_dumped "$s" && w_absent ||
		{ echo "$W registered while rebuilding"; return 1; }
}
# The delay target holds reads: the rebuild's (only it reads past the
# superblock), so the attach is inside its rebuild, under the mutex.
w_reads_held() {
	dmsetup status dfkvwarm |
		awk '$3 == "delay" && $4 > 0 { held = 1 } END { exit !held }'
}
# w_attach: 'disk add' of the held disk in the background (detached from
# the case's output); its exit status in $T/wadd.rc once it returns,
# which it does not before the held reads are released.  The waits while
# it is held stay well below the hung task timeout (120 s).
w_attach() {
	rm -f "$T/wadd.rc"
	("$DFKVCTL" disk add "$W" "$WD" >"$T/wadd" 2>&1
	 echo $? >"$T/wadd.rc") </dev/null >/dev/null 2>&1 &
	wait_until 60 w_reads_held
}
# w_release: the plain table back (its suspend sends the held reads on),
# then the attach's end.
w_release() {
	dm_table dfkvwarm linear "$WL" &&
	wait_until 60 test -e "$T/wadd.rc" &&
	[ "$(cat "$T/wadd.rc")" = 0 ] || { cat "$T/wadd"; return 1; }
}
w_blocks_back() {
	r=$($BLK check "$W" 7 0 100 $SZ) && blk_expect "$1" "$r" ok=100 wrong=0
}

warm_rejoin() {
	wait_until 120 w_member &&
	expect 0 "$DFKVCTL" node del "$W" && wait_until 60 w_absent &&
	dm_table dfkvwarm hold "$WL" &&
	# Created rebuilding (as dfkvctl apply creates a node with disks):
	# not registered before its disk add even begins.
	expect 0 "$DFKVCTL" node add "$W" --ram 32M --phase rebuilding &&
	nattr_is "$W" phase rebuilding && w_not_registered &&
	w_attach &&
	# NODE_GET, the node dump and DISK_GET answer while the rebuild
	# holds the tier's mutex; the attach is still waiting.
	expect 0 "$DFKVCTL" node show "$W" &&
	grep -Eq "phase +rebuilding$" "$T/out" &&
	expect 0 "$DFKVCTL" node list &&
	expect 0 "$DFKVCTL" disk list "$W" &&
	[ ! -e "$T/wadd.rc" ] &&
	# Ending its creation's phase leaves the attach's.
	expect 0 "$DFKVCTL" node set "$W" --phase up &&
	nattr_is "$W" phase rebuilding && w_not_registered &&
	w_release && nattr_is "$W" phase up &&
	wait_until 60 w_member &&
	w_blocks_back "after the warm rejoin" &&
	[ "$(dstat "$W" w0 rebuild_records)" = 100 ] || return 1
	# A member attaching a disk keeps its lease (the ttl is 3 s, the
	# agent dumps every second: 5 dumps outlast it).
	expect 0 "$DFKVCTL" disk del "$W" w0 &&
	dm_table dfkvwarm hold "$WL" && w_attach &&
	nattr_is "$W" phase rebuilding &&
	s=$(w_syncs) && wait_until 60 w_dumped $((s + 3)) && w_member &&
	[ ! -e "$T/wadd.rc" ] &&
	w_release && nattr_is "$W" phase up && w_member &&
	w_blocks_back "after a disk attached to a member" &&
	expect 3 "$DFKVCTL" node set "$W" --phase rebuilding &&
	expect 3 "$DFKVCTL" node add nw2 --ram 8M --phase up
}

t_warm_rejoin() {
	WL=$(new_loop warm 64M) && WD=$(new_dm dfkvwarm "$WL") &&
	cp "${MDSD:-$DFKV_REPO/build/tools/mdsd}" "$T/mdsd" &&
	echo 0 >"$T/wadd.rc" &&
	expect 0 "$DFKVCTL" node add "$W" --ram 32M &&
	expect 0 "$DFKVCTL" disk add "$W" "$WD" --format --name w0 &&
	r=$($BLK put "$W" 7 0 100 $SZ) && blk_expect put "$r" ok=100 &&
	wait_clean "$W" || return 1
	"$T/mdsd" --listen 127.0.0.1:$WP --agent --group warm --ttl-ms 3000 \
		--host vmhost -v >>"$T/mdsd.log" 2>&1 &
	mp=$!
	warm_rejoin
	rc=$?
	kill "$mp"
	wait "$mp" 2>/dev/null
	# A failed case does not leave an attach held.
	[ "$rc" = 0 ] || {
		[ -e "$T/wadd.rc" ] || w_release
		tail -20 "$T/mdsd.log"
		return 1
	}
	expect 0 "$DFKVCTL" node del "$W"
}

t_disk_events() {
	L=$(new_loop ev 32M) &&
	monitor_start "$T/events" || return 1
	"$DFKVCTL" disk add "$N" "$L" --format --name ev >/dev/null 2>&1
	"$DFKVCTL" disk del "$N" ev >/dev/null 2>&1
	monitor_stop "$T/events" "disk del $N ev"
	has "$T/events" "disk add $N ev state up" &&
	has "$T/events" "disk del $N ev"
}

t_usage() {
	expect 2 "$DFKVCTL" disk add "$N" &&
	expect 2 "$DFKVCTL" disk add "$N" "$DEV" --extent 1X &&
	expect 2 "$DFKVCTL" disk del "$N" &&
	expect 2 "$DFKVCTL" disk show a b c &&
	! "$DFKVCTL" disk add "$N" /dev/no-such-device --format 2>/dev/null &&
	expect 1 "$DFKVCTL" disk del no-such-node d0 &&
	expect 1 "$DFKVCTL" disk show no-such-node &&
	expect 0 "$DFKVCTL" disk --help && has "$T/out" "SYNOPSIS"
}

# Unload with disks attached: clean, and the devices are free again.
t_unload() {
	dfkv_unload &&
	! grep -q '^dfkv ' /proc/modules &&
	python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))' "$DEV" ||
		{ echo "$DEV is still held"; return 1; }
}

tap_plan 22
tap_check "ext4 on the device: refused, nothing rewritten" t_refuse_ext4
tap_check "format, show, list" t_format_show
tap_check "put/get byte-exact, flushed to the disk" t_put_get
tap_check "remove" t_remove
tap_check "node delete and re-add: survivors byte-exact, removed gone" t_restart_node
tap_check "module unload and reload: the same" t_restart_module
tap_check "disk del and add" t_disk_del
tap_check "another extent size, device size or name: refused" t_refuse_geometry
tap_check "corrupted record: rejected, a miss" t_corrupt_record
tap_check "corrupted payload: a miss, never wrong bytes" t_corrupt_payload
tap_check "record of a huge length: rejected alone, the disk attaches" t_huge_length
tap_check "sparse 24 GiB disk: attach reads below the mark only, blocks byte-exact, crash" t_sparse_rebuild
tap_check "rebuild of more chunks than it keeps in flight: every block back" t_rebuild_chunks
tap_check "an image written by dfkv-mkimage: every key served byte-exact" t_mkimage
tap_check "record writes failing under load: disk failed closed, cold reset after" t_crash
tap_check "ack=disk, writes failing: IO_ERROR, then a miss" t_ack_fail
tap_check "a flushed value's last page: zero after the value" t_tail_zero
tap_check "full disk: old blocks evicted, recent ones read" t_full
tap_check "two disks: blocks spread over both" t_multi
tap_check "warm rejoin: not registered while its disk rebuilds, NODE_GET answers, every block back" t_warm_rejoin
tap_check "disk events" t_disk_events
tap_check "usage and kernel errors" t_usage
tap_check "unload with disks attached" t_unload
tap_done
