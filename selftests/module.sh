#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dfkv.ko as a module: repeated load/unload, modinfo, the /dev/dfkv node,
# the netlink family, and unloading while users hold a netlink socket, an
# open /dev/dfkv file (dfkv_stress covers unloading with nodes full of data).
. "$(dirname "$0")/lib.sh"

tap_plan 6

load_unload_20() {
	dfkv_unload || return 1
	i=0
	while [ $i -lt 20 ]; do
		"$DFKV_INSMOD" "$DFKV_KO" || return 1
		rmmod dfkv || return 1
		i=$((i + 1))
	done
}
tap_check "load and unload 20 times" load_unload_20

modinfo_fields() {
	modinfo "$DFKV_KO" | grep -q '^license: *GPL$' &&
	modinfo "$DFKV_KO" | grep -q '^description: *dfkv' &&
	modinfo "$DFKV_KO" | grep -Eq '^version: *[0-9]+\.[0-9]+\.[0-9]+'
}
tap_check "modinfo has license, description, version" modinfo_fields

dev_mode() {
	dfkv_load || return 1
	[ -c /dev/dfkv ] || return 1
	[ "$(stat -c %a /dev/dfkv)" = 600 ]
}
tap_check "/dev/dfkv is a character device with mode 0600" dev_mode

family_registered() {
	python3 - <<'PY'
import socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
name = b"dfkv\0"
attr = struct.pack("=HH", 4 + len(name), 2) + name + b"\0" * ((4 - len(name) % 4) % 4)
msg = struct.pack("=BBH", 3, 1, 0) + attr            # CTRL_CMD_GETFAMILY
hdr = struct.pack("=IHHII", 16 + len(msg), 0x10, 1 | 4, 1, 0)
s.send(hdr + msg)
data = s.recv(65536)
ln, typ = struct.unpack("=IH", data[:6])
raise SystemExit(0 if typ == 0x10 else 1)
PY
}
tap_check "generic netlink family dfkv is registered" family_registered

unload_refused_while_open() {
	exec 3<>/dev/dfkv || return 1
	if rmmod dfkv 2>/dev/null; then exec 3>&-; return 1; fi
	exec 3>&-
	rmmod dfkv
}
tap_check "unload waits for open /dev/dfkv files" unload_refused_while_open

unload_with_netlink_socket() {
	dfkv_load || return 1
	python3 -c '
import socket, subprocess, sys
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 16)
s.bind((0, 0))
sys.exit(subprocess.call(["rmmod", "dfkv"]))'
}
tap_check "unload while a generic netlink socket is open" unload_with_netlink_socket

dfkv_unload
tap_done
