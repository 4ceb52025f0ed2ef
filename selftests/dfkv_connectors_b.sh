#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The SGLang HiCache and MAX connectors (lib/python/dfkv/connectors) against
# dfkv.ko nodes, inside the test VM as root: two nodes with TCP listeners
# on loopback, each engine's test (selftests/connectors_b/*.py) run with
# the python of its venv (venv-sglang, venv-max under $DFKV_VENVS, default
# /opt/dfkv/venvs: the pinned engine packages of tools/engines/*.txt, made
# by tools/engines/setup-venvs).  One TAP case per test case; an engine
# whose venv is missing fails, naming the venv.
. "$(dirname "$0")/lib.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
chmod 755 "$T"
cp "$DFKVCTL" "$T/dfkvctl" || { echo "Bail out! no $DFKVCTL"; exit 1; }
export DFKVCTL=$T/dfkvctl
export DFKV_LIB="$DFKV_REPO/build/lib/libdfkv.so"
export PYTHONPATH="$DFKV_REPO/lib/python:$HERE/connectors_b"
export DFKV_MEMBERS="kv-a=127.0.0.1:7531,kv-b=127.0.0.1:7532"
export DFKV_NODE_RAM=64M

SGLANG_CASES="loaded_by_the_factory store_and_load_byte_exact leading_hits
leading_hits_are_one_probe misses another_revision_misses_everything
control_settings_keep_identity head_shards_do_not_share_mla_ranks_do
mla_pool_ranks_share_pages unsupported_paths_raise node_deleted_mid_batch_then_recovery"
MAX_CASES="selected_by_the_config missing_tenant_fails_model_load
offload_and_load_byte_exact lookup_masks_and_misses lease_then_load_reads_once
abandon_releases_pins superseded_lookup_loads_nothing
async_lookup_handles probe_pins_nothing another_revision_misses_everything
control_settings_keep_identity replicated_and_sharded_units
node_deleted_then_recovery touch_order_through_eviction"

cleanup() {
	for n in kv-a kv-b kv-small; do
		"$DFKVCTL" node del $n 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

nodes() {
	dfkv_load &&
	for n in kv-a:7531 kv-b:7532; do
		"$DFKVCTL" node add "${n%%:*}" --ram $DFKV_NODE_RAM --max-value 4M &&
		"$DFKVCTL" listener add "${n%%:*}" 127.0.0.1 --port "${n##*:}" ||
		return 1
	done
}

# engine VENV TEST CASES: run TEST (connectors_b/TEST.py) once with
# the python of VENVS/venv-VENV (tools/engines/setup-venvs), then one TAP case per case in CASES and one
# that it ran no other.
engine() {
	venv=$1 name=$2 list=$3
	py=${DFKV_VENVS:-/opt/dfkv/venvs}/venv-$venv/bin/python
	if [ ! -x "$py" ]; then
		for c in $list ran_the_listed_cases; do
			tap_n=$((tap_n + 1))
			echo "not ok $tap_n $name: $c # no $py (make deps: tools/engines/setup-venvs)"
		done
		return
	fi
	start=$(date +%s)
	"$py" "$HERE/connectors_b/$name.py" >"$T/$name.out" 2>&1
	echo "# $name: $(($(date +%s) - start)) s"
	if grep -q '^case .* fail$' "$T/$name.out" ||
	   ! grep -q '^case ' "$T/$name.out"; then
		sed 's/^/# /' "$T/$name.out"
	fi
	for c in $list; do
		tap_check "$name: $c" grep -q "^case $c ok$" "$T/$name.out"
	done
	tap_check "$name: ran_the_listed_cases" sh -c \
		'[ "$(grep -c "^case " "$1")" -eq "$2" ]' sh "$T/$name.out" \
		"$(echo $list | wc -w)"
}

tap_plan $(($(echo $SGLANG_CASES | wc -w) + $(echo $MAX_CASES | wc -w) + 3))
tap_check "two nodes with TCP listeners" nodes
engine sglang sglang_hicache "$SGLANG_CASES"
engine max max_kv "$MAX_CASES"
tap_done
