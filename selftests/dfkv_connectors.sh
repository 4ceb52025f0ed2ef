#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The engine connectors (Documentation/connectors.md) against a dfkv node,
# inside the test VM as root: one node with a TCP listener on loopback,
# then each engine's test program (selftests/connectors/) with the python
# of that engine's venv (tools/engines/setup-venvs, $DFKV_VENVS, default
# /opt/dfkv/venvs).  A program that fails prints its trace as comments.
# One section per engine.
. "$(dirname "$0")/lib.sh"

T=$(mktemp -d)
chmod 755 "$T"
# A private copy: a concurrent build may replace the binary under us.
cp "$DFKVCTL" "$T/dfkvctl" || { echo "Bail out! no $DFKVCTL"; exit 1; }
VENVS=${DFKV_VENVS:-/opt/dfkv/venvs}
export DFKVCTL="$T/dfkvctl" DFKV_REPO
export DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so"
export PYTHONPATH="$DFKV_REPO/lib/python:$DFKV_REPO/selftests/connectors"
export DFKV_CONN_NODE=cn DFKV_CONN_ADDR=127.0.0.1:7460
export PYTHONDONTWRITEBYTECODE=1 TMPDIR="$T"

cleanup() {
	"$DFKVCTL" node del cn 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

t_node() {
	"$DFKVCTL" node add cn --ram 96M &&
	"$DFKVCTL" listener add cn 127.0.0.1 --port 7460
}

# engine NAME PROGRAM: PROGRAM under venv-NAME's python.
engine() {
	py=$VENVS/venv-$1/bin/python
	[ -x "$py" ] || { echo "no $py: make deps (tools/engines/setup-venvs)"; return 1; }
	start=$(date +%s)
	"$py" "$DFKV_REPO/selftests/connectors/$2"
	rc=$?
	echo "$1: $(($(date +%s) - start)) s"
	return $rc
}

t_teardown() {
	"$DFKVCTL" node del cn && dfkv_unload
}

tap_plan 5
dfkv_load || { echo "Bail out! cannot load $DFKV_KO"; exit 1; }
tap_check "a node with a TCP listener (dfkvctl)" t_node

# vLLM: a TieringOffloadingSpec secondary tier.
tap_check "vLLM: tier built by vLLM's factory stores, loads, misses, survives a node restart" \
	engine vllm vllm_tier.py

# LMCache: a remote storage plugin.
tap_check "LMCache: plugin loaded by LMCache stores, loads, misses, survives a node restart" \
	engine lmcache lmcache_plugin.py

tap_check "teardown, module unload" t_teardown
tap_check "no kernel warnings" sh -c '! dmesg | grep -E "BUG:|WARNING:|Oops|refcount_t"'
tap_done
