#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dkms.conf: DKMS builds dfkv.ko from a copy of the tree against the
# installed kernel headers (in a private DKMS tree; nothing is installed
# system-wide), and its version matches the module's.
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${KDIR:-$("$repo/tools/vm/kdir")}
kver=$(basename "$(dirname "$kdir")")
ver=$(sed -n 's/^DFKV_VERSION := //p' "$repo/kmod/Kbuild")
echo "1..2"
if grep -q "^PACKAGE_VERSION=\"$ver\"$" "$repo/dkms.conf"; then
	echo "ok 1 dkms.conf version matches kmod/Kbuild ($ver)"
else
	echo "not ok 1 dkms.conf version matches kmod/Kbuild ($ver)"
fi
if ! command -v dkms >/dev/null; then
	echo "not ok 2 dkms build # dkms missing (make deps)"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/dfkv-$ver" "$tmp/dkms"
(cd "$repo" && cp -r Kbuild Makefile dkms.conf kmod uapi tools "$tmp/src/dfkv-$ver/")
find "$tmp/src" \( -name '*.o' -o -name '*.ko' -o -name '.*.cmd' -o -name '*.mod*' \) -delete
if dkms build --sourcetree "$tmp/src" --dkmstree "$tmp/dkms" \
	-m dfkv -v "$ver" -k "$kver" >"$tmp/log" 2>&1 &&
   ls "$tmp/dkms/dfkv/$ver/$kver"/*/module/dfkv.ko* >/dev/null 2>&1; then
	echo "ok 2 dkms build against $kver"
else
	sed 's/^/# /' "$tmp/log"
	echo "not ok 2 dkms build against $kver"
	exit 1
fi
