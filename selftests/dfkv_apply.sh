#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dfkvctl apply (Documentation/config.md) and tools/systemd/dfkv-node.service,
# inside the test VM as root: a bad file applies nothing; a first apply
# creates the node, its settings, listener, disk (formatting the blank
# virtio disk, "format": "blank") and tenants; a second prints nothing and
# leaves the node as it was; changes print exactly what changed; a dry
# run changes nothing; after blocks were stored and flushed and the module
# reloaded, apply brings the disk back with every block byte-exact; a
# missing disk and a non-blank device are reported by name (exit 3, not
# formatted) while the rest of the file is applied; and the unit's Exec
# lines (modprobe from a module tree that holds the built dfkv.ko, then
# apply) bring the node back after an unload.  systemd does not run in
# the VM: selftests/unit/test_systemd.sh verifies the unit natively.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/disk_lib.sh"

N=n0
SZ=65536
disk_modules
DEV=$(main_dev) || { echo "Bail out! no block device for the disk"; exit 1; }
# The file formats d0 only while it is blank: start from a blank device
# (the suite's earlier disk tests leave their format on the shared disk).
mib=$(( $(blockdev --getsize64 "$DEV") / 1048576 ))
dd if=/dev/zero of="$DEV" bs=1M count=1 conv=fsync 2>/dev/null &&
	dd if=/dev/zero of="$DEV" bs=1M count=1 seek=$((mib - 1)) conv=fsync \
		2>/dev/null ||
	{ echo "Bail out! cannot blank $DEV"; exit 1; }
K=$($BLK key 2 0)	# the key of a 1 MiB file put and got with dfkvctl
UNIT=$DFKV_REPO/tools/systemd/dfkv-node.service
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }

secret() {
	python3 -c 'import secrets; print(secrets.token_hex(32))' >"$1" &&
	chmod 600 "$1"
}
secret "$T/acme.secret" && secret "$T/acme2.secret" &&
	secret "$T/acme3.secret" ||
	{ echo "Bail out! cannot write secrets"; exit 1; }

# conf MAX_VALUE ACME_QUOTA SECRET [EXTRA_DISKS [EXTRA_LISTENERS]]: the file
# (with $SECOND set, acme's second_secret_file).
conf() {
	cat >"$T/dfkv.conf" <<EOF
{
  "nodes": [
    {
      "name": "$N",
      "ram": "64M",
      "max_value": "$1",
      "idle_ms": 60000,
      "policy": "writeback",
      "dirty": 50,
      "tenant_quota": "8M",
      "listeners": [ { "addr": "127.0.0.1", "port": 7400 }${5:-} ],
      "disks": [ { "path": "$DEV", "name": "d0", "format": "blank" }${4:-} ],
      "tenants": [
        { "ns": "acme", "secret_file": "$3", "quota": "$2"${SECOND:+, \"second_secret_file\": \"$SECOND\"} },
        { "tenant": "0123456789abcdef", "quota": "4M" }
      ]
    }
  ]
}
EOF
}

apply() {
	expect "$1" "$DFKVCTL" apply -f "$T/dfkv.conf" ${2:-}
}

# Everything apply manages, without counters: node attributes, listeners,
# disks (epoch too: a disk attached again would show) and tenants.
snapshot() {
	{
		"$DFKVCTL" stats "$N" --json
		"$DFKVCTL" disk show "$N" --json
		"$DFKVCTL" tenant list "$N" --json
	} | python3 -c '
import json, sys
dec, text, out = json.JSONDecoder(), sys.stdin.read(), []
while text.strip():
    o, i = dec.raw_decode(text.lstrip())
    text = text.lstrip()[i:]
    o.pop("stats", None)
    for d in o.get("disks", []):
        d.pop("stats", None)
    for t in o.get("tenants", []):
        out.append({k: t[k] for k in ("tenant", "registered", "has_secret",
                                      "own_quota", "quota_bytes")})
    o.pop("tenants", None)
    out.append(o)
print(json.dumps(out, sort_keys=True))'
}

# tenant_field NS_OR_HEX FIELD: a field of the tenant in 'tenant list --json'.
tenant_field() {
	"$DFKVCTL" tenant list "$N" --json | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tenants"]:
    if t["tenant"] == sys.argv[1]:
        print(t[sys.argv[2]])' "$1" "$2"
}

t_bad_file() {
	conf 2M 16M "$T/acme.secret"
	sed -i 's/"dirty": 50/"dirty": 50, "dirtty": 1/' "$T/dfkv.conf"
	apply 2 && has "$T/err" 'unknown key "dirtty"' &&
	expect 0 "$DFKVCTL" node list && [ ! -s "$T/out" ] ||
		{ echo "a bad file created something:"; cat "$T/out"; return 1; }
	printf '{"nodes": [\n' >"$T/dfkv.conf"
	apply 2 && has "$T/err" "line 2"
}

t_first() {
	acme=$("$DFKVCTL" key --ns acme x | cut -c1-16) &&
	conf 2M 16M "$T/acme.secret" &&
	apply 0 &&
	has "$T/out" "node $N: created (ram 64.0 MiB)" &&
	has "$T/out" "node $N: listener tcp 127.0.0.1:7400 added" &&
	has "$T/out" "node $N: disk d0 ($DEV) formatted (the device was blank)" &&
	has "$T/out" "node $N: tenant $acme (ns acme): registered (secret from $T/acme.secret, quota 16.0 MiB)" &&
	has "$T/out" "node $N: tenant 0123456789abcdef: registered (no secret, quota 4.00 MiB)" &&
	[ ! -s "$T/err" ] || { cat "$T/err"; return 1; }
	[ "$(nattr "$N" max_value_bytes)" = 2097152 ] &&
	[ "$(nattr "$N" idle_ms)" = 60000 ] &&
	[ "$(nattr "$N" dirty_pct)" = 50 ] &&
	[ "$(nattr "$N" tenant_quota_bytes)" = 8388608 ] &&
	[ "$(dstat "$N" d0 state)" = up ] &&
	[ "$(tenant_field "$acme" has_secret)" = True ] &&
	[ "$(tenant_field "$acme" quota_bytes)" = 16777216 ] &&
	[ "$(tenant_field 0123456789abcdef quota_bytes)" = 4194304 ] ||
		{ snapshot; return 1; }
	expect 0 "$DFKVCTL" listener list "$N" && grep -q "127.0.0.1 .* 7400" "$T/out"
}

# The second run: no line printed, and the node is what it was.
t_again() {
	before=$(snapshot) &&
	apply 0 && [ ! -s "$T/out" ] && [ ! -s "$T/err" ] ||
		{ echo "the second apply printed:"; cat "$T/out" "$T/err"; return 1; }
	after=$(snapshot)
	[ "$before" = "$after" ] || { echo "before: $before"; echo "after: $after"; return 1; }
}

t_change() {
	acme=$("$DFKVCTL" key --ns acme x | cut -c1-16) &&
	conf 4M 32M "$T/acme2.secret" &&
	apply 0 &&
	has "$T/out" "node $N: max_value 2.00 MiB -> 4.00 MiB" &&
	has "$T/out" "node $N: tenant $acme (ns acme): secret replaced from $T/acme2.secret" &&
	has "$T/out" "node $N: tenant $acme (ns acme): quota 16.0 MiB -> 32.0 MiB" &&
	[ "$(wc -l <"$T/out")" = 3 ] || { cat "$T/out"; return 1; }
	[ "$(nattr "$N" max_value_bytes)" = 4194304 ] &&
	[ "$(tenant_field "$acme" quota_bytes)" = 33554432 ] &&
	apply 0 && [ ! -s "$T/out" ] || { echo "again:"; cat "$T/out"; return 1; }
}

t_dry_run() {
	conf 8M 32M "$T/acme2.secret" &&
	apply 0 --dry-run && has "$T/out" "node $N: max_value 4.00 MiB -> 8.00 MiB" &&
	[ "$(nattr "$N" max_value_bytes)" = 4194304 ] &&
	conf 4M 32M "$T/acme2.secret" && apply 0 && [ ! -s "$T/out" ]
}

# A rotation as the file says it (Documentation/tenants.md): the new
# secret added next to the current one, then the old one dropped while
# the new one's connections keep their grant, each step once.
t_rotation() {
	acme=$("$DFKVCTL" key --ns acme x | cut -c1-16) &&
	SECOND=$T/acme3.secret conf 4M 32M "$T/acme2.secret" && apply 0 &&
	has "$T/out" "node $N: tenant $acme (ns acme): secret added from $T/acme3.secret" &&
	[ "$(wc -l <"$T/out")" = 1 ] && [ "$(tenant_field "$acme" secrets)" = 2 ] &&
	apply 0 && [ ! -s "$T/out" ] || { cat "$T/out" "$T/err"; return 1; }
	# The old secret leaves, under a client of the new one.
	conf 4M 32M "$T/acme3.secret" &&
	PYTHONPATH="$DFKV_REPO/lib/python" \
	DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so" python3 - "$N" "$T" \
		"$DFKVCTL" <<'PY' || { cat "$T/step2.out"; return 1; }
import subprocess, sys
import dfkv
node, t, dfkvctl = sys.argv[1:]


def client(secret):
    return dfkv.Client("%s=127.0.0.1:7400" % node, b"acme", transport="tcp",
                       tenant_secret="%s/%s" % (t, secret))


new = client("acme3.secret")
assert new.put(b"rot-0", b"before") == dfkv.OK
with open(t + "/step2.out", "w") as out:
    subprocess.run([dfkvctl, "apply", "-f", t + "/dfkv.conf"], stdout=out,
                   check=True)
assert new.put(b"rot-1", b"after") == dfkv.OK
assert new.get(b"rot-0") == (dfkv.OK, b"before")
old = client("acme2.secret")
assert old.put(b"rot-2", b"old") != dfkv.OK
# the later cases count the node's blocks
assert [new.remove(k) for k in (b"rot-0", b"rot-1")] == [dfkv.OK] * 2
new.close()
old.close()
PY
	has "$T/step2.out" "node $N: tenant $acme (ns acme): secret from $T/acme3.secret kept, the one the file does not list dropped" &&
	[ "$(wc -l <"$T/step2.out")" = 1 ] && [ "$(tenant_field "$acme" secrets)" = 1 ] &&
	apply 0 && [ ! -s "$T/out" ] || { cat "$T/step2.out" "$T/out"; return 1; }
	# back to the secret the later cases' file names
	conf 4M 32M "$T/acme2.secret" && apply 0 &&
	has "$T/out" "node $N: tenant $acme (ns acme): secret replaced from $T/acme2.secret"
}

# Blocks stored, flushed, the module reloaded: apply restores the node
# and its disk, and every block comes back byte-exact from the disk.
t_reload() {
	r=$($BLK put "$N" 1 0 100 $SZ) && blk_expect put "$r" ok=100 &&
	head -c 1048576 /dev/urandom >"$T/big" &&
	expect 0 "$DFKVCTL" put "$N" "$K" --file "$T/big" &&
	wait_clean "$N" &&
	dfkv_unload && dfkv_load &&
	apply 0 &&
	has "$T/out" "node $N: created (ram 64.0 MiB)" &&
	has "$T/out" "node $N: disk d0 ($DEV) attached: 101 blocks back" &&
	# the listener once the disk is back, and the creation's phase ended
	[ "$(grep -n "disk d0" "$T/out" | cut -d: -f1)" -lt \
	  "$(grep -n "listener tcp" "$T/out" | cut -d: -f1)" ] &&
	nattr_is "$N" phase up || { cat "$T/out"; return 1; }
	r=$($BLK check "$N" 1 0 100 $SZ) && blk_expect "after reload" "$r" ok=100 wrong=0 &&
	expect 0 "$DFKVCTL" get "$N" "$K" --out "$T/big.out" &&
	cmp "$T/big" "$T/big.out" &&
	[ "$(dstat "$N" d0 rebuild_records)" = 101 ] &&
	apply 0 && [ ! -s "$T/out" ]
}

# A node left rebuilding by a run of apply that stopped after creating
# it: the next run attaches its disk and ends the phase.
t_held() {
	expect 0 "$DFKVCTL" node del "$N" &&
	expect 0 "$DFKVCTL" node add "$N" --ram 64M --phase rebuilding &&
	apply 0 &&
	has "$T/out" "node $N: disk d0 ($DEV) attached: 101 blocks back" &&
	has "$T/out" "node $N: phase rebuilding -> up" &&
	nattr_is "$N" phase up || { cat "$T/out"; return 1; }
	apply 0 && [ ! -s "$T/out" ]
}

# A disk that is not there and a device with a file system: reported
# by name, nothing formatted, and the listener of the same file added.
t_missing_disk() {
	L=$(new_loop ext 64M) && mkfs.ext4 -q -F "$L" >/dev/null 2>&1 &&
	before=$(head_sum "$L") &&
	conf 4M 32M "$T/acme2.secret" \
		', { "path": "/dev/dfkv-no-such-disk", "name": "ghost" }, { "path": "'"$L"'", "name": "fs", "format": "blank" }' \
		', { "addr": "127.0.0.1", "port": 7410 }' &&
	apply 3 &&
	has "$T/err" "node $N: disk ghost (/dev/dfkv-no-such-disk) did not come back" &&
	has "$T/err" "node $N: disk fs ($L) did not come back" &&
	has "$T/err" "not blank: not formatted" &&
	has "$T/out" "node $N: listener tcp 127.0.0.1:7410 added" &&
	[ "$(head_sum "$L")" = "$before" ] || { echo "the ext4 device changed"; return 1; }
	expect 1 "$DFKVCTL" disk show "$N" ghost &&
	expect 1 "$DFKVCTL" disk show "$N" fs &&
	# Still missing the next time: reported again, nothing else printed.
	apply 3 && [ ! -s "$T/out" ] && has "$T/err" "disk ghost"
}

# The unit's Exec lines as systemd would run them: modprobe finds the
# built dfkv.ko in a module tree bound over /lib/modules/$(uname -r)
# (the guest's root is the host's, read-only), dfkvctl sits where make
# install puts it (a directory bound over /usr/local/sbin), and the
# configuration file is this test's (/etc/dfkv does not exist here).
t_unit() {
	kver=$(uname -r)
	mods=$T/root/lib/modules/$kver
	conf 4M 32M "$T/acme2.secret"
	expect 0 "$DFKVCTL" node del "$N" && dfkv_unload &&
	mkdir -p "$mods/kernel" "$mods/extra" "$T/sbin" &&
	mount --bind "/lib/modules/$kver/kernel" "$mods/kernel" &&
	cp /lib/modules/"$kver"/modules.builtin* /lib/modules/"$kver"/modules.order "$mods/" &&
	cp "$DFKV_KO" "$mods/extra/" && depmod -b "$T/root" "$kver" &&
	mount --rbind "$mods" "/lib/modules/$kver" &&
	cp "$DFKVCTL" "$T/sbin/" && mount --bind "$T/sbin" /usr/local/sbin ||
		{ unit_cleanup; return 1; }
	ok=0
	sed -n 's/^ExecStart\(Pre\)\{0,1\}=//p' "$UNIT" >"$T/exec"
	[ "$(wc -l <"$T/exec")" = 2 ] || { cat "$T/exec"; ok=1; }
	while read -r line; do
		line=$(echo "$line" | sed "s|/etc/dfkv/dfkv.conf|$T/dfkv.conf|")
		echo "# $line"
		sh -c "$line" >>"$T/unit.out" 2>&1 </dev/null || { ok=1; break; }
	done <"$T/exec"
	unit_cleanup
	cat "$T/unit.out"
	[ $ok = 0 ] && grep -q '^dfkv ' /proc/modules &&
	grep -qF "node $N: disk d0 ($DEV) attached: 101 blocks back" "$T/unit.out" &&
	r=$($BLK check "$N" 1 0 100 $SZ) && blk_expect "after the unit" "$r" ok=100 wrong=0
}

unit_cleanup() {
	umount /usr/local/sbin 2>/dev/null
	umount -R "/lib/modules/$(uname -r)" 2>/dev/null
	umount "$T/root/lib/modules/$(uname -r)/kernel" 2>/dev/null
}

tap_plan 10
tap_check "a bad file applies nothing" t_bad_file
tap_check "first apply creates node, listener, disk, tenants" t_first
tap_check "second apply prints nothing, the node is unchanged" t_again
tap_check "a changed file prints exactly its changes" t_change
tap_check "--dry-run prints, changes nothing" t_dry_run
tap_check "a rotation: the second secret added, then the old one dropped" t_rotation
tap_check "after a module reload apply restores the disk's blocks" t_reload
tap_check "a node left rebuilding: apply attaches its disk, ends the phase" t_held
tap_check "a missing disk and a non-blank one are reported by name" t_missing_disk
tap_check "the unit's Exec lines bring the node back" t_unit
tap_done
