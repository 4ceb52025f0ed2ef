#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The RAM tier in front of the disks (issue #8), inside the test VM as
# root: the node's tier settings, write-back (readable before its flush,
# durable after it and a graceful restart), ack=disk and dirty 0 (the
# record and payload are on the device when the PUT returns), REMOVE
# racing a flush and a cold read (the key never comes back), the dirty
# watermark (CACHE_FULL for new keys, existing ones readable), cold-read
# promotion and coalescing (16 concurrent GETs, one disk read), and flush
# failures (dm-error: retries, an unhealthy node, never wrong bytes, and
# misses after a restart for the blocks that never reached the disk),
# write-around (a PUT leaves RAM once on the disk, a GET brings it back),
# a disk-only node (no RAM tier: durable when acknowledged, every GET
# from disk), the stage trace events of ack=disk PUTs and cold GETs
# (every boundary fires, in order, with key hashes that join them),
# and a stalled disk holding no worker (RAM hits served while hundreds of
# cold GETs or ack=disk PUTs wait for it, an ioctl waiting for it
# killable), a node deleted while its disk is stalled (gone at once,
# the deleter killable, the teardown finished once the device is back),
# and a disk deleted while it is stalled (the deleter killable, the node
# serving, the disk closed clean once the device is back).
#
# The disk is a dm-linear target over a loop device over a file in /tmp:
# suspending its table holds every bio, which is how the tests pin the
# moments they check ("not flushed yet", "all 16 GETs are waiting")
# without relying on timing; the loop file is the raw image they read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/disk_lib.sh"

N=nt
SZ=65536
disk_modules
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }
L=$(new_loop tier 96M) && DM=$(new_dm dfkvtier "$L") ||
	{ echo "Bail out! no loop or device-mapper device"; exit 1; }
IMG=$T/tier.img

suspend() { dmsetup suspend dfkvtier; }
resume() { dmsetup resume dfkvtier; }

# bg NAME CMD...: run CMD (a dfkv_blk.py command) in the background: its
# output in $T/NAME, its pid in $T/NAME.pid, its exit status in
# $T/NAME.rc once it finished.
bg() {
	name=$1
	shift
	rm -f "$T/$name.pid" "$T/$name.rc"
	(DFKV_BLK_PIDFILE="$T/$name.pid" "$@" >"$T/$name" 2>&1
	 echo $? >"$T/$name.rc") &
}

bg_done() { [ -e "$T/$1.rc" ]; }

# bg_wait NAME: wait for bg NAME to finish; its output on stdout.  The
# device may be suspended meanwhile: the wait stays well below the hung
# task timeout (120 s), then resumes the device and fails.
bg_wait() {
	if ! wait_until 90 bg_done "$1"; then
		resume
		wait_until 300 bg_done "$1"
		echo "$1 did not finish while the device was suspended"
		return 1
	fi
	cat "$T/$1"
}

# in_ioctl NAME N: N threads of bg NAME are inside ioctl(2) (syscall 16).
in_ioctl() {
	n=0
	pid=$(cat "$T/$1.pid" 2>/dev/null) || return 1
	for t in /proc/"$pid"/task/*; do
		[ "$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)" = 16 ] && n=$((n + 1))
	done
	[ "$n" -ge "$2" ]
}

# restart: a graceful node restart, the disk re-added without --format.
restart() {
	expect 0 "$DFKVCTL" node del "$1" &&
	expect 0 "$DFKVCTL" node add "$1" --ram "$2" &&
	expect 0 "$DFKVCTL" disk add "$1" "$DM"
}

t_settings() {
	expect 0 "$DFKVCTL" node add "$N" --ram 16M &&
	expect 0 "$DFKVCTL" node show "$N" &&
	grep -Eq "tier policy +writeback, ack ram$" "$T/out" &&
	grep -Eq "dirty watermark 80%" "$T/out" &&
	grep -Eq "numa +interleave$" "$T/out" || { cat "$T/out"; return 1; }
	[ "$(nattr "$N" tier_policy)" = writeback ] &&
	[ "$(nattr "$N" tier_ack)" = ram ] &&
	[ "$(nattr "$N" dirty_pct)" = 80 ] &&
	[ "$(nattr "$N" numa)" = interleave ] &&
	expect 0 "$DFKVCTL" node set "$N" --policy writearound --ack disk --dirty 50 --flush-workers 2 &&
	[ "$(nattr "$N" tier_policy)" = writearound ] &&
	[ "$(nattr "$N" tier_ack)" = disk ] &&
	[ "$(nattr "$N" dirty_pct)" = 50 ] &&
	[ "$(nattr "$N" flush_workers)" = 2 ] &&
	expect 3 "$DFKVCTL" node set "$N" --dirty 101 && has "$T/err" "(--dirty)" &&
	expect 3 "$DFKVCTL" node set "$N" --flush-workers 17 &&
	has "$T/err" "(--flush-workers)" &&
	expect 2 "$DFKVCTL" node set "$N" --numa 0 &&
	expect 2 "$DFKVCTL" node set "$N" --policy sometimes &&
	[ "$(nattr "$N" dirty_pct)" = 50 ] &&
	expect 0 "$DFKVCTL" node add nnuma --ram 4M --numa 0 &&
	[ "$(nattr nnuma numa)" = 0 ] &&
	expect 3 "$DFKVCTL" node add nnuma2 --ram 4M --numa 63 &&
	expect 0 "$DFKVCTL" node del nnuma &&
	expect 0 "$DFKVCTL" node del "$N" &&
	# Defaults again: 0 flush workers set, i.e. 4 per disk.
	expect 0 "$DFKVCTL" node add "$N" --ram 16M &&
	expect 0 "$DFKVCTL" disk add "$N" "$DM" --format --name t0 &&
	[ "$(nattr "$N" flush_workers)" = 0 ] &&
	[ "$(nattr "$N" tier_policy)" = writeback ] &&
	expect 0 "$DFKVCTL" node show "$N" &&
	has "$T/out" "flush workers 4 per disk"
}

# A write-back PUT is visible while its flush cannot happen (the device
# is suspended), and durable after the flush and a graceful restart.
t_writeback() {
	suspend &&
	bg put $BLK put "$N" 20 0 30 $SZ &&
	r=$(bg_wait put) && blk_expect "put, device suspended" "$r" ok=30 &&
	r=$($BLK check "$N" 20 0 30 $SZ) && blk_expect "before the flush" "$r" ok=30 wrong=0 &&
	[ "$(nstat "$N" dirty_bytes)" -ge $((30 * SZ)) ] &&
	[ "$(nstat "$N" ram_puts)" -ge 30 ] &&
	! $BLK rec "$IMG" 20 0 >/dev/null || { resume; "$DFKVCTL" stats "$N"; return 1; }
	resume &&
	wait_clean "$N" &&
	[ "$(nstat "$N" flushed)" -ge 30 ] &&
	[ "$(dstat "$N" t0 objects)" = 30 ] &&
	restart "$N" 16M &&
	r=$($BLK check "$N" 20 0 30 $SZ) && blk_expect "after a restart" "$r" ok=30 wrong=0 &&
	[ "$(nstat "$N" ram_misses)" -ge 30 ]
}

# on_image SEED COUNT: every key's record and payload are on the device
# image (suspended: nothing more can be written).
on_image() {
	n=$($BLK onimage "$IMG" "$1" 0 "$2" $SZ) &&
	[ "$n" = "$2" ] || { echo "$n of $2 keys (seed $1) on the device"; return 1; }
}

# ack=disk, then dirty 0: when the PUT returns, its record and payload
# are on the device; a crash right then (the device frozen) keeps them.
t_ack_disk() {
	expect 0 "$DFKVCTL" node set "$N" --ack disk &&
	r=$($BLK put "$N" 21 0 10 $SZ) && blk_expect "put, ack=disk" "$r" ok=10 &&
	suspend && sync &&
	on_image 21 10 || { resume; return 1; }
	resume &&
	expect 0 "$DFKVCTL" node set "$N" --ack ram --dirty 0 &&
	r=$($BLK put "$N" 22 0 10 $SZ) && blk_expect "put, dirty 0" "$r" ok=10 &&
	suspend && sync &&
	on_image 22 10 || { resume; return 1; }
	resume &&
	expect 0 "$DFKVCTL" node set "$N" --dirty 80 &&
	r=$($BLK check "$N" 21 0 10 $SZ) && blk_expect "ack=disk keys" "$r" ok=10 wrong=0
}

# REMOVE while the flushes of the keys are queued or in flight (held by
# the suspended device): the keys never come back, not after the flushes
# complete, not after a restart.
t_remove_flush() {
	o0=$(dstat "$N" t0 objects) &&
	suspend &&
	bg put $BLK put "$N" 23 0 30 $SZ &&
	r=$(bg_wait put) && blk_expect "put" "$r" ok=30 &&
	bg rm $BLK rm "$N" 23 0 30 &&
	sleep 1 && resume &&
	r=$(bg_wait rm) && blk_expect "rm" "$r" ok=30 &&
	wait_clean "$N" &&
	r=$($BLK check "$N" 23 0 30 $SZ) && blk_expect "after the flushes" "$r" miss=30 &&
	[ "$(dstat "$N" t0 objects)" = "$o0" ] &&
	restart "$N" 16M &&
	r=$($BLK check "$N" 23 0 30 $SZ) && blk_expect "after a restart" "$r" miss=30 &&
	[ "$(dstat "$N" t0 objects)" = "$o0" ]
}

# REMOVE while a cold read of the key waits for the (suspended) device.
t_remove_cold_read() {
	suspend &&
	bg get $BLK check "$N" 20 0 10 $SZ &&
	wait_until 60 in_ioctl get 1 || { resume; return 1; }
	bg rm $BLK rm "$N" 20 0 10 &&
	sleep 1 && resume &&
	r=$(bg_wait get) && never_wrong "reads racing the removes" "$r" &&
	r=$(bg_wait rm) && blk_expect rm "$r" ok=10 &&
	r=$($BLK check "$N" 20 0 10 $SZ) && blk_expect "after the race" "$r" miss=10 &&
	wait_clean "$N" &&
	restart "$N" 16M &&
	r=$($BLK check "$N" 20 0 10 $SZ) && blk_expect "after a restart" "$r" miss=10 &&
	r=$($BLK check "$N" 20 10 20 $SZ) && blk_expect "the others" "$r" ok=20 wrong=0
}

# 16 GETs of one cold block, all waiting for its read: one promotion, 15
# coalesced, one block's worth of disk reads, 16 byte-exact answers.
t_coalesce() {
	restart "$N" 16M &&
	rb=$(dstat "$N" t0 disk_read_bytes) &&
	suspend &&
	bg burst $BLK burst "$N" 20 25 $SZ 16 &&
	wait_until 90 in_ioctl burst 16 || { resume; return 1; }
	resume &&
	r=$(bg_wait burst) && blk_expect "16 GETs" "$r" ok=16 wrong=0 &&
	[ "$(nstat "$N" promoted)" = 1 ] &&
	[ "$(nstat "$N" coalesced)" = 15 ] || { "$DFKVCTL" stats "$N"; return 1; }
	ra=$(dstat "$N" t0 disk_read_bytes) &&
	[ $((ra - rb)) -ge $SZ ] && [ $((ra - rb)) -lt $((2 * SZ)) ] ||
		{ echo "disk read $((ra - rb)) bytes for one $SZ-byte block"; return 1; }
	r=$($BLK check "$N" 20 25 1 $SZ) && blk_expect "then from RAM" "$r" ok=1 &&
	[ "$(nstat "$N" promoted)" = 1 ]
}

# Dirty watermark 10% of 8 MiB with nothing flushing: new keys get
# CACHE_FULL once it is reached, the admitted ones read, and after the
# flush new keys are admitted again.
t_watermark() {
	expect 0 "$DFKVCTL" node del "$N" &&
	expect 0 "$DFKVCTL" node add nw --ram 8M --dirty 10 &&
	expect 0 "$DFKVCTL" disk add nw "$DM" &&
	suspend &&
	bg put $BLK put nw 24 0 40 $SZ &&
	r=$(bg_wait put) || { resume; return 1; }
	ok=$(counts "$r" ok) && full=$(counts "$r" full) &&
	[ "${ok:-0}" -gt 0 ] && [ "${full:-0}" -gt 0 ] &&
	[ $((ok + full)) = 40 ] || { resume; echo "$r"; return 1; }
	[ "$(nstat nw dirty_bytes)" -le $((8 << 20)) ] &&
	r=$($BLK check nw 24 0 "$ok" $SZ) && blk_expect "admitted" "$r" ok="$ok" wrong=0 &&
	r=$($BLK check nw 24 "$ok" "$full" $SZ) && blk_expect "refused" "$r" miss="$full" &&
	r=$($BLK put nw 24 0 1 $SZ) && blk_expect "an existing key" "$r" ok=1 ||
		{ resume; return 1; }
	resume &&
	wait_clean nw &&
	r=$($BLK put nw 25 0 5 $SZ) && blk_expect "after the flush" "$r" ok=5 &&
	expect 0 "$DFKVCTL" node del nw
}

# Flushes failing (dm-error): retries, then the node is unhealthy; reads
# never return wrong bytes; after the device is back and a restart, the
# blocks whose flush never completed are misses.
t_flush_fail() {
	monitor_start "$T/events" || return 1
	expect 0 "$DFKVCTL" node add nf --ram 16M &&
	expect 0 "$DFKVCTL" disk add nf "$DM" &&
	dm_table dfkvtier error "$L" &&
	r=$($BLK put nf 26 0 20 $SZ) && blk_expect "put" "$r" ok=20 &&
	wait_until 300 nattr_is nf state unhealthy ||
		{ kill $MON; "$DFKVCTL" stats nf; return 1; }
	[ "$(nstat nf flush_retries)" -gt 0 ] &&
	r=$($BLK check nf 26 0 20 $SZ) && never_wrong "after the failures" "$r" &&
	r=$($BLK check nf 20 10 20 $SZ) && never_wrong "older keys" "$r" || {
		kill $MON; return 1; }
	monitor_stop "$T/events" "node state nf unhealthy"
	has "$T/events" "node state nf unhealthy" &&
	dm_table dfkvtier linear "$L" &&
	restart nf 16M &&
	r=$($BLK check nf 26 0 20 $SZ) && blk_expect "never flushed" "$r" ok=0 wrong=0 &&
	r=$($BLK check nf 20 10 20 $SZ) && never_wrong "older keys after the restart" "$r" &&
	expect 0 "$DFKVCTL" node del nf
}

unpinned() { [ "$(nstat "$1" pins)" = 0 ]; }

# RAM full of leased (pinned) slots: a PUT of a new key takes the
# synchronous disk path (OK once on the device, counted as a bypass, not
# admitted to RAM), a GET of it reads the disk through a stage, a value
# over the staging bound gets CACHE_FULL, and once the lease is gone PUTs
# are admitted to RAM again.
t_pinned() {
	expect 0 "$DFKVCTL" node add np --ram 8M &&
	expect 0 "$DFKVCTL" disk add np "$DM" &&
	r=$($BLK put np 27 0 64 $SZ) && blk_expect "fill" "$r" ok=64 &&
	wait_clean np &&
	r=$($BLK put np 27 64 64 $SZ) && blk_expect "fill" "$r" ok=64 &&
	wait_clean np || return 1
	bg lease $BLK lease np 27 0 128
	wait_until 60 grep -qF "leased=128 status=0" "$T/lease" || {
		cat "$T/lease"; return 1; }
	puts=$(nstat np ram_puts) && bypass=$(nstat np ram_bypasses) &&
	r=$($BLK put np 28 0 8 $SZ) && blk_expect "RAM pinned" "$r" ok=8 &&
	suspend && sync && on_image 28 8 || { resume; kill $(cat "$T/lease.pid"); return 1; }
	resume &&
	[ "$(nstat np ram_bypasses)" = $((bypass + 8)) ] &&
	[ "$(nstat np ram_puts)" = "$puts" ] &&
	r=$($BLK check np 28 0 8 $SZ) && blk_expect "read through a stage" "$r" ok=8 wrong=0 &&
	r=$($BLK check np 27 0 128 $SZ) && blk_expect "leased keys" "$r" ok=128 wrong=0 &&
	# over the staging bound (an eighth of 8 MiB): CACHE_FULL, and absent
	r=$($BLK put np 30 0 1 2097152) && blk_expect "2 MiB staged" "$r" full=1 &&
	r=$($BLK check np 30 0 1 2097152) && blk_expect "2 MiB absent" "$r" miss=1 ||
		{ kill $(cat "$T/lease.pid"); return 1; }
	kill "$(cat "$T/lease.pid")" &&
	wait_until 60 unpinned np &&
	r=$($BLK put np 29 0 4 $SZ) && blk_expect "lease gone" "$r" ok=4 &&
	[ "$(nstat np ram_puts)" = $((puts + 4)) ] &&
	expect 0 "$DFKVCTL" node del np
}

# A stalled disk holds no worker.  With the device suspended, 600 cold
# GETs over as many TCP connections, more than the TCP workqueue runs at
# once (256 per CPU), all wait for their reads (each has started one)
# while another client's RAM hits on the node are all served, byte-exact;
# an ioctl GET waiting for its read dies when killed.  Once the device is
# back, every cold GET returns its block and no pin is left.
t_stalled_disk() {
	expect 0 "$DFKVCTL" node add ns --ram 16M &&
	expect 0 "$DFKVCTL" disk add ns "$DM" &&
	r=$($BLK put ns 31 0 601 4096) && blk_expect "cold set" "$r" ok=601 &&
	wait_clean ns &&
	restart ns 16M &&
	expect 0 "$DFKVCTL" listener add ns 127.0.0.1 --port 7931 &&
	r=$($BLK put ns 32 0 8 $SZ) && blk_expect "hot set" "$r" ok=8 &&
	wait_clean ns &&
	m=$(nstat ns ram_misses) &&
	suspend &&
	bg cold $BLK tcpget 127.0.0.1 7931 31 0 600 4096 &&
	wait_until 90 nstat_is ns ram_misses $((m + 600)) || { resume; return 1; }
	bg hot $BLK tcpget 127.0.0.1 7931 32 0 8 $SZ &&
	r=$(bg_wait hot) && blk_expect "RAM hits, disk stalled" "$r" ok=8 wrong=0 &&
	! bg_done cold &&
	bg kget $BLK check ns 31 600 1 4096 &&
	wait_until 90 nstat_is ns ram_misses $((m + 601)) &&
	kill -KILL "$(cat "$T/kget.pid")" &&
	bg_wait kget >/dev/null &&
	! bg_done cold || { resume; return 1; }
	resume &&
	r=$(bg_wait cold) && blk_expect "cold GETs" "$r" ok=600 wrong=0 &&
	wait_until 60 unpinned ns &&
	expect 0 "$DFKVCTL" node del ns
}

# The same for ack=disk PUTs waiting for their flushes: 600 over as many
# TCP connections all wait (each was committed to RAM) while RAM hits are
# served; an ioctl PUT waiting for its flush dies when killed (its value
# is still flushed).  Once the device is back every PUT is acknowledged
# and every value reads back.
t_stalled_commit() {
	expect 0 "$DFKVCTL" node add nc --ram 16M &&
	expect 0 "$DFKVCTL" disk add nc "$DM" &&
	expect 0 "$DFKVCTL" listener add nc 127.0.0.1 --port 7932 &&
	r=$($BLK put nc 34 0 8 $SZ) && blk_expect "hot set" "$r" ok=8 &&
	wait_clean nc &&
	expect 0 "$DFKVCTL" node set nc --ack disk &&
	p=$(nstat nc ram_puts) &&
	suspend &&
	bg puts $BLK tcpput 127.0.0.1 7932 33 0 600 4096 &&
	wait_until 90 nstat_is nc ram_puts $((p + 600)) || { resume; return 1; }
	bg hot $BLK tcpget 127.0.0.1 7932 34 0 8 $SZ &&
	r=$(bg_wait hot) && blk_expect "RAM hits, disk stalled" "$r" ok=8 wrong=0 &&
	! bg_done puts &&
	bg kput $BLK put nc 33 600 1 4096 &&
	wait_until 90 nstat_is nc ram_puts $((p + 601)) &&
	kill -KILL "$(cat "$T/kput.pid")" &&
	bg_wait kput >/dev/null &&
	! bg_done puts || { resume; return 1; }
	resume &&
	r=$(bg_wait puts) && blk_expect "ack=disk PUTs" "$r" ok=600 &&
	wait_clean nc &&
	r=$($BLK check nc 33 0 601 4096) && blk_expect "read back" "$r" ok=601 wrong=0 &&
	expect 0 "$DFKVCTL" node del nc
}

# Deleting a node whose disk hangs: the node leaves at once (its name and
# port are free, other nodes serve RAM hits) while its teardown waits for
# the device, and so does the deleter, which dies when killed.  An ioctl
# GET that entered before the deletion still gets its bytes.  Once the
# device is back the teardown flushes what was dirty and closes the disk,
# which attaches to the new node of that name with every value.
no_node() { ! "$DFKVCTL" node show "$1" >/dev/null 2>&1; }

t_stalled_delete() {
	expect 0 "$DFKVCTL" node add nd --ram 16M &&
	expect 0 "$DFKVCTL" disk add nd "$DM" &&
	r=$($BLK put nd 37 0 4 4096) && blk_expect "cold set" "$r" ok=4 &&
	wait_clean nd &&
	restart nd 16M &&
	expect 0 "$DFKVCTL" listener add nd 127.0.0.1 --port 7933 &&
	expect 0 "$DFKVCTL" node add nr --ram 16M &&
	r=$($BLK put nr 36 0 8 $SZ) && blk_expect "RAM set" "$r" ok=8 &&
	m=$(nstat nd ram_misses) &&
	suspend &&
	r=$($BLK put nd 35 0 8 4096) && blk_expect "dirty set" "$r" ok=8 &&
	bg kget $BLK check nd 37 0 1 4096 &&
	wait_until 90 nstat_is nd ram_misses $((m + 1)) || { resume; return 1; }
	"$DFKVCTL" node del nd >"$T/del" 2>&1 &
	del=$!
	wait_until 90 no_node nd &&
	kill -0 "$del" &&
	expect 0 "$DFKVCTL" node add nd --ram 16M &&
	expect 0 "$DFKVCTL" listener add nd 127.0.0.1 --port 7933 &&
	r=$($BLK check nr 36 0 8 $SZ) && blk_expect "RAM hits, disk stalled" "$r" ok=8 wrong=0 &&
	kill -0 "$del" && kill -KILL "$del" &&
	! bg_done kget || { resume; return 1; }
	wait "$del"
	resume &&
	r=$(bg_wait kget) && blk_expect "GET entered before the deletion" "$r" ok=1 wrong=0 &&
	expect 0 "$DFKVCTL" disk add nd "$DM" &&
	r=$($BLK check nd 35 0 8 4096) && blk_expect "flushed by the teardown" "$r" ok=8 wrong=0 &&
	r=$($BLK check nd 37 0 4 4096) && blk_expect "stored before" "$r" ok=4 wrong=0 &&
	expect 0 "$DFKVCTL" node del nd &&
	expect 0 "$DFKVCTL" node del nr
}

# A disk deleted while its device is stalled: the deleter waits inside
# the kernel for the disk's dirty blocks, killably, while the node serves
# RAM hits and answers for its disks; a second deletion joins the one
# going on, and returns once the device is back, the disk closed clean
# with the blocks written before and during the stall.
in_syscall() { [ "$(cut -d' ' -f1 /proc/"$1"/syscall 2>/dev/null)" = "$2" ]; }

t_stalled_disk_del() {
	expect 0 "$DFKVCTL" node add nd --ram 16M &&
	expect 0 "$DFKVCTL" disk add nd "$DM" &&
	r=$($BLK put nd 34 0 8 $SZ) && blk_expect "set" "$r" ok=8 &&
	wait_clean nd &&
	suspend &&
	r=$($BLK put nd 33 0 8 4096) && blk_expect "dirty set" "$r" ok=8 || { resume; return 1; }
	"$DFKVCTL" disk del nd t0 >"$T/ddel" 2>&1 &
	del=$!
	wait_until 90 in_syscall "$del" 44 &&
	r=$($BLK check nd 34 0 8 $SZ) && never_wrong "disk leaving" "$r" &&
	r=$($BLK put nd 35 0 8 4096) && blk_expect "set, disk leaving" "$r" ok=8 &&
	r=$($BLK check nd 35 0 8 4096) && blk_expect "dirty, disk leaving" "$r" ok=8 wrong=0 &&
	expect 0 "$DFKVCTL" disk show nd t0 &&
	expect 3 "$DFKVCTL" disk add nd "$DM" && has "$T/err" "busy" &&
	in_syscall "$del" 44 && kill -KILL "$del" || { resume; return 1; }
	wait "$del"
	"$DFKVCTL" disk del nd t0 >"$T/ddel" 2>&1 &
	del=$!
	wait_until 90 in_syscall "$del" 44 || { resume; return 1; }
	resume &&
	wait "$del" &&
	expect 1 "$DFKVCTL" disk show nd t0 &&
	expect 0 "$DFKVCTL" disk add nd "$DM" &&
	r=$($BLK check nd 33 0 8 4096) && blk_expect "flushed by the deletion" "$r" ok=8 wrong=0 &&
	r=$($BLK check nd 34 0 8 $SZ) && blk_expect "stored before" "$r" ok=8 wrong=0 &&
	r=$($BLK check nd 35 0 8 4096) && blk_expect "set during the deletion" "$r" ok=8 wrong=0 &&
	expect 0 "$DFKVCTL" node del nd
}

t_unload() {
	dfkv_unload && ! grep -q '^dfkv ' /proc/modules
}

# Write-around: a PUT is answered once on the disk and leaves RAM (a
# bypass, RAM holds nothing of it); a whole-value GET reads it back into
# RAM, and the next GET of it is a RAM hit.  (Each case has seeds of its
# own: the disk outlives the nodes, and a PUT of a key it holds keeps the
# value it has.)
t_writearound() {
	expect 0 "$DFKVCTL" node add nw --ram 16M &&
	expect 0 "$DFKVCTL" node set nw --policy writearound &&
	expect 0 "$DFKVCTL" disk add nw "$DM" &&
	objs=$(nstat nw ram_objects) && bypass=$(nstat nw ram_bypasses) &&
	r=$($BLK put nw 38 0 8 $SZ) && blk_expect "set" "$r" ok=8 &&
	expect 0 test "$(nstat nw ram_bypasses)" = $((bypass + 8)) &&
	expect 0 test "$(nstat nw ram_objects)" = "$objs" &&
	expect 0 test "$(nstat nw dirty_bytes)" = 0 &&
	misses=$(nstat nw ram_misses) && hits=$(nstat nw ram_hits) &&
	r=$($BLK check nw 38 0 8 $SZ) && blk_expect "read from disk" "$r" ok=8 wrong=0 &&
	expect 0 test "$(nstat nw ram_misses)" = $((misses + 8)) &&
	expect 0 test "$(nstat nw ram_objects)" = $((objs + 8)) &&
	r=$($BLK check nw 38 0 8 $SZ) && blk_expect "RAM hits" "$r" ok=8 wrong=0 &&
	expect 0 test "$(nstat nw ram_hits)" = $((hits + 8)) &&
	expect 0 test "$(nstat nw ram_misses)" = $((misses + 8)) &&
	expect 0 "$DFKVCTL" node del nw
}

# A disk-only node (--disk-only): no RAM tier.  Without a disk a PUT has
# nowhere to go (CACHE_FULL); with one, a PUT is on the device when it is
# acknowledged and leaves nothing in RAM, and every GET reads the disk
# (a RAM miss each time, nothing cached after it).  The flag stays through
# other flag changes, cannot be turned off, and the values survive a
# restart of the node.
t_disk_only() {
	expect 0 "$DFKVCTL" node add nd --ram 8M --disk-only &&
	expect 0 nattr_is nd disk_only true &&
	r=$($BLK put nd 39 0 1 $SZ) && blk_expect "no disk" "$r" full=1 &&
	expect 0 "$DFKVCTL" node set nd --evict off &&
	expect 0 nattr_is nd disk_only true &&
	expect 0 "$DFKVCTL" disk add nd "$DM" &&
	bypass=$(nstat nd ram_bypasses) &&
	r=$($BLK put nd 39 0 16 $SZ) && blk_expect "put" "$r" ok=16 &&
	suspend && sync &&
	on_image 39 16 || { resume; return 1; }
	resume &&
	expect 0 nstat_is nd ram_bypasses $((bypass + 16)) &&
	expect 0 nstat_is nd ram_objects 0 &&
	expect 0 nstat_is nd dirty_bytes 0 &&
	misses=$(nstat nd ram_misses) &&
	r=$($BLK check nd 39 0 16 $SZ) && blk_expect "read from disk" "$r" ok=16 wrong=0 &&
	r=$($BLK check nd 39 0 16 $SZ) && blk_expect "again" "$r" ok=16 wrong=0 &&
	expect 0 nstat_is nd ram_misses $((misses + 32)) &&
	expect 0 nstat_is nd ram_hits 0 &&
	expect 0 nstat_is nd ram_objects 0 &&
	r=$($BLK put nd 40 0 1 4194304) && blk_expect "4 MiB" "$r" ok=1 &&
	r=$($BLK check nd 40 0 1 4194304) && blk_expect "4 MiB back" "$r" ok=1 wrong=0 &&
	expect 0 nstat_is nd pins 0 &&
	expect 0 "$DFKVCTL" node del nd &&
	expect 0 "$DFKVCTL" node add nd --ram 8M --disk-only &&
	expect 0 "$DFKVCTL" disk add nd "$DM" &&
	r=$($BLK check nd 39 0 16 $SZ) && blk_expect "after a restart" "$r" ok=16 wrong=0 &&
	expect 0 nstat_is nd ram_objects 0 &&
	expect 0 "$DFKVCTL" node del nd
}

# The stage events of ack=disk PUTs and of cold GETs (kmod/trace.h):
# every request's boundaries fire in order with no error, all under its
# key's hash, so the 4 PUTs and the 4 cold GETs of the same keys join
# (tools/bench/stages.py, which the bench's breakdown uses).
t_trace_stages() {
	st="python3 -S $DFKV_REPO/tools/bench/stages.py"
	expect 0 "$DFKVCTL" node add ntr --ram 16M &&
	expect 0 "$DFKVCTL" node set ntr --ack disk &&
	expect 0 "$DFKVCTL" disk add ntr "$DM" &&
	expect 0 $st on &&
	r=$($BLK put ntr 41 0 4 $SZ) && blk_expect "put, ack=disk" "$r" ok=4 &&
	restart ntr 16M &&
	r=$($BLK check ntr 41 0 4 $SZ) && blk_expect "cold GETs" "$r" ok=4 wrong=0 &&
	expect 0 $st off "$T/stages.trace" &&
	expect 0 $st check "$T/stages.trace" &&
	has "$T/out" "put complete=4 incomplete=0" &&
	has "$T/out" "get complete=4 incomplete=0" &&
	has "$T/out" "joined=4 lost=0" &&
	expect 0 "$DFKVCTL" node del ntr
}

# The stage events of PUTs received into RAM over TCP: four 64 KiB
# values in one RAM part each, then one of 3 MiB whose parts (1 MiB
# extents on a 16 MiB node) are each reserved and bound as its payload
# reaches them; every request's boundaries fire in order, with no error,
# under its key's hash.
t_trace_tcp_put() {
	st="python3 -S $DFKV_REPO/tools/bench/stages.py"
	expect 0 "$DFKVCTL" node add ntp --ram 16M &&
	expect 0 "$DFKVCTL" listener add ntp 127.0.0.1 --port 7934 &&
	expect 0 $st on &&
	r=$($BLK tcpput 127.0.0.1 7934 42 0 4 $SZ) && blk_expect "64 KiB" "$r" ok=4 &&
	r=$($BLK tcpput 127.0.0.1 7934 43 0 1 3145728) && blk_expect "3 MiB" "$r" ok=1 &&
	expect 0 $st off "$T/tcp.trace" &&
	expect 0 $st check "$T/tcp.trace" &&
	has "$T/out" "tcp_put complete=5 incomplete=0" &&
	has "$T/out" "tcp_put multipart=1" &&
	has "$T/out" "lost=0" &&
	r=$($BLK check ntp 42 0 4 $SZ) && blk_expect "64 KiB back" "$r" ok=4 wrong=0 &&
	r=$($BLK check ntp 43 0 1 3145728) && blk_expect "3 MiB back" "$r" ok=1 wrong=0 &&
	expect 0 "$DFKVCTL" node del ntp
}

tap_plan 18
tap_check "tier settings: defaults, set, ranges, NUMA" t_settings
tap_check "write-back: readable before the flush, durable after" t_writeback
tap_check "ack=disk and dirty 0: on the device when acknowledged" t_ack_disk
tap_check "REMOVE racing flush: never comes back" t_remove_flush
tap_check "REMOVE racing a cold read: never comes back" t_remove_cold_read
tap_check "16 GETs of a cold block: one read, coalesced" t_coalesce
tap_check "dirty watermark: CACHE_FULL for new keys" t_watermark
tap_check "flush failures: unhealthy, no wrong bytes, misses after a restart" t_flush_fail
tap_check "RAM full of pinned slots: the synchronous disk path" t_pinned
tap_check "write-around: the value leaves RAM, a GET brings it back" t_writearound
tap_check "disk-only: durable when acknowledged, nothing in RAM, GETs from disk" t_disk_only
tap_check "stage events of ack=disk PUTs and cold GETs: in order, joined by key" t_trace_stages
tap_check "stage events of TCP PUTs into RAM: in order, joined by key" t_trace_tcp_put
tap_check "a stalled disk: RAM hits served, cold GETs parked, ioctl killable" t_stalled_disk
tap_check "a stalled disk: ack=disk PUTs parked, ioctl killable" t_stalled_commit
tap_check "a stalled disk: node deletion returns, the deleter killable" t_stalled_delete
tap_check "a stalled disk: disk deletion waits killably, the node goes on" t_stalled_disk_del
tap_check "unload" t_unload
tap_done
