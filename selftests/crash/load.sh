#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# load.sh DIR: boot 1 of the crash test (see run), inside the VM.
set -u
dir=$1
repo=$(cd "$(dirname "$0")/../.." && pwd)
ctl=$repo/build/tools/dfkvctl

"$repo/tools/dfkv-insmod" "${DFKV_KO:-$repo/kmod/dfkv.ko}" || exit 2
"$ctl" node add kv0 --ram 32M --ack disk || exit 2
"$ctl" disk add kv0 /dev/vda --format --extent 1M || exit 2
# Acknowledged after their records are on the disk.
i=0
while [ $i -lt 8 ]; do
	head -c $((100000 + i * 7919)) /dev/urandom >"$dir/v$i"
	"$ctl" put kv0 --ns crash "k$i" --file "$dir/v$i" || exit 2
	i=$((i + 1))
done
echo 8 >"$dir/acked"
# Then a write-back load, reset while it runs.
"$ctl" node set kv0 --ack ram || exit 2
(
	j=0
	while :; do
		head -c 200000 /dev/urandom >"$dir/w$j"
		"$ctl" put kv0 --ns crash "w$j" --file "$dir/w$j" >/dev/null 2>&1
		j=$((j + 1))
	done
) &
sleep 4
echo "load: reset with $(ls "$dir" | grep -c '^w') write-back puts issued"
sync
echo 1 >/proc/sys/kernel/sysrq
echo b >/proc/sysrq-trigger
sleep 30
echo "load: still running after the reset"
exit 3
