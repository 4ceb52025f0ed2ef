#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# TAP helpers for dfkv's shell selftests, and the module/node setup they
# share.  Source it, call tap_plan N, then one tap_check per test case.
# Runs inside the test VM as root; the repository is at $DFKV_REPO.

DFKV_REPO=${DFKV_REPO:-$(cd "$(dirname "$0")/.." && pwd)}
DFKV_KO=${DFKV_KO:-$DFKV_REPO/kmod/dfkv.ko}
DFKV_INSMOD=${DFKV_INSMOD:-$DFKV_REPO/tools/dfkv-insmod}
DFKVCTL=${DFKVCTL:-$DFKV_REPO/build/tools/dfkvctl}
tap_n=0
tap_failed=0

tap_plan() { echo "TAP version 13"; echo "1..$1"; }

# forks: processes started since boot (/proc/stat), read without one.
forks() {
	while read -r k v; do
		[ "$k" = processes ] && echo "$v" && return
	done </proc/stat
}

# tap_check NAME CMD...: run CMD, report it as one test case, and its
# wall time and processes started in a comment line after it.
tap_check() {
	name=$1
	shift
	tap_n=$((tap_n + 1))
	tap_t0=$(date +%s) tap_p0=$(forks)
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok $tap_n $name"
	else
		tap_failed=$((tap_failed + 1))
		echo "$out" | sed 's/^/# /'
		echo "not ok $tap_n $name"
	fi
	echo "# time: case $tap_n $(($(date +%s) - tap_t0)) s, $(($(forks) - tap_p0)) processes"
}

# rounds N: N, the rounds of a loop that repeats a path for load; a
# quarter of N (at least 1) on the debug kernel (DFKV_VM_DEBUG=1, set by
# tools/vm/vm-run --debug), where KASAN and lockdep make each round
# several times slower and the checkers need the path taken, not taken
# again and again.
rounds() {
	if [ "${DFKV_VM_DEBUG:-0}" = 1 ]; then
		echo $(($1 / 4 > 0 ? $1 / 4 : 1))
	else
		echo "$1"
	fi
}

tap_done() { [ "$tap_failed" -eq 0 ]; exit $?; }

# expect RC CMD...: CMD exits with RC; its output is kept in $T/out and
# $T/err (the caller's temporary directory).
expect() {
	want=$1
	shift
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "exit status $got, expected $want: $*"
		cat "$T/out" "$T/err"
		return 1
	fi
}

# has FILE TEXT: FILE contains TEXT (fixed string).
has() {
	grep -qF -- "$2" "$1" || { echo "no '$2' in:"; cat "$1"; return 1; }
}

# Load dfkv.ko fresh (unloading a previous copy).
dfkv_load() {
	dfkv_unload
	"$DFKV_INSMOD" "$DFKV_KO" "$@"
}

dfkv_unload() {
	if grep -q '^dfkv ' /proc/modules; then
		rmmod dfkv
	fi
}
