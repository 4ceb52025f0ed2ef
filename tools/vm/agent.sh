# SPDX-License-Identifier: GPL-2.0
#
# Host-side programs that drive dfkv.ko in the test VM over the network
# (selftests/connectors/run, tools/bench/connectors, make demo's connector
# step) source this.  The VM boots in the background with tools/vm/
# guest-agent; its port and the nodes' are forwarded from the host's
# loopback (vm-run --fwd), and $DFKVCTL becomes the guest's dfkvctl
# (tools/vm/guest-ctl).  Nodes inside listen on $DFKV_LISTEN_HOST.
# Set DFKV_REPO to the repository first.
#
#   agent_start OUT PORT...  boot, wait for the agent (up to 15 min under
#                            emulation); the VM's console goes to OUT
#   agent_stop               power the guest off; vm-run's status (it
#                            fails on any kernel error report)
#   agent_kill               kill the VM (no agent to ask)

agent_repo=${DFKV_REPO:?set DFKV_REPO (the repository) before sourcing agent.sh}
DFKV_GUEST_PORT=${DFKV_GUEST_PORT:-7399}
export DFKV_GUEST_CTL=127.0.0.1:$DFKV_GUEST_PORT DFKV_LISTEN_HOST=10.0.2.15
agent_ctl=$agent_repo/tools/vm/guest-ctl
agent_vm=""

agent_start() {
	out=$1
	shift
	agent_dir=$(mktemp -d)
	ln -s "$agent_ctl" "$agent_dir/dfkvctl"
	export DFKVCTL=$agent_dir/dfkvctl
	fwd="--fwd $DFKV_GUEST_PORT"
	for p in "$@"; do fwd="$fwd --fwd $p"; done
	# Its own process group, so a VM whose agent never answers is killed
	# whole (vm-run, timeout, qemu).
	# shellcheck disable=SC2086
	setsid "$agent_repo/tools/vm/vm-run" $fwd --timeout 3000 \
		--log "$agent_repo/build/vm/agent-dmesg.log" -- \
		env DFKV_REPO="$agent_repo" "$agent_repo/tools/vm/guest-agent" \
		"$DFKV_GUEST_PORT" >"$out" 2>&1 &
	agent_vm=$!
	"$agent_ctl" --wait 900 dmesg >/dev/null && return 0
	agent_kill
	return 1
}

agent_kill() {
	kill -TERM -- "-$agent_vm" 2>/dev/null
	wait "$agent_vm"
	agent_vm=""
	rm -rf "$agent_dir"
}

agent_stop() {
	[ -n "$agent_vm" ] || return 1
	"$agent_ctl" quit || { agent_kill; return 1; }
	wait "$agent_vm"
	rc=$?
	agent_vm=""
	rm -rf "$agent_dir"
	return $rc
}
