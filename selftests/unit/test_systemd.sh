#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tools/systemd/dfkv-node.service: systemd-analyze verify finds nothing
# to say about it (run with the built dfkvctl in place of the installed
# one, the only path that differs on a build host), a broken copy is
# caught (the check can fail), and its ExecStart runs the binary where
# `make install` puts it.  The guest runs its Exec lines
# (selftests/dfkv_apply.sh): systemd does not run in the test VM.
repo=$(cd "$(dirname "$0")/../.." && pwd)
unit=$repo/tools/systemd/dfkv-node.service
ctl=$repo/build/tools/dfkvctl
echo "1..3"
rc=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# verify FILE: no message and exit 0 (verify warns on stderr with 0 too).
verify() {
	systemd-analyze verify "$1" >"$tmp/log" 2>&1 && [ ! -s "$tmp/log" ]
}

if ! command -v systemd-analyze >/dev/null || [ ! -x "$ctl" ]; then
	echo "not ok 1 systemd-analyze verify # systemd-analyze or $ctl missing"
	exit 1
fi
sed "s|/usr/local/sbin/dfkvctl|$ctl|" "$unit" >"$tmp/dfkv-node.service"
if verify "$tmp/dfkv-node.service"; then
	echo "ok 1 systemd-analyze verify dfkv-node.service"
else
	sed 's/^/# /' "$tmp/log"
	echo "not ok 1 systemd-analyze verify dfkv-node.service"
	rc=1
fi

sed -e 's/^Type=oneshot/Type=oneshoot/' "$tmp/dfkv-node.service" >"$tmp/broken.service"
if ! verify "$tmp/broken.service"; then
	echo "ok 2 a broken copy fails the check"
else
	echo "not ok 2 a broken copy fails the check"
	rc=1
fi

# The tools' install directory: $(PREFIX)/sbin with PREFIX=/usr/local.
sbin=$(make -s -C "$repo/tools" -pn 2>/dev/null | sed -n 's/^SBINDIR ?\{0,1\}[:]\{0,1\}= //p' | head -n 1)
sbin=$(echo "$sbin" | sed 's|$(PREFIX)|/usr/local|')
if grep -qx "ExecStart=$sbin/dfkvctl apply -f /etc/dfkv/dfkv.conf" "$unit"; then
	echo "ok 3 ExecStart runs $sbin/dfkvctl, where make install puts it"
else
	echo "not ok 3 ExecStart runs $sbin/dfkvctl, where make install puts it"
	rc=1
fi
exit $rc
