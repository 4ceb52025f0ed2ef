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
#   agent_start OUT PORT...  boot, wait for the agent (while the VM runs,
#                            up to 15 min); the VM's console goes to OUT
#   agent_stop               power the guest off; vm-run's status (it
#                            fails on any kernel error report)
#   agent_kill               kill the VM (no agent to ask)
#   agent_node NAME PORT OPT...  a node NAME (dfkvctl node add OPTs) with a
#                            TCP listener on the forwarded PORT

agent_repo=${DFKV_REPO:?set DFKV_REPO (the repository) before sourcing agent.sh}
DFKV_GUEST_PORT=${DFKV_GUEST_PORT:-7399}
export DFKV_GUEST_CTL=127.0.0.1:$DFKV_GUEST_PORT DFKV_LISTEN_HOST=10.0.2.15
agent_ctl=$agent_repo/tools/vm/guest-ctl
agent_vm=""

agent_start() {
	agent_out=$1
	shift
	agent_dir=$(mktemp -d)
	ln -s "$agent_ctl" "$agent_dir/dfkvctl"
	export DFKVCTL=$agent_dir/dfkvctl
	agent_fwd="--fwd $DFKV_GUEST_PORT"
	for agent_p in "$@"; do agent_fwd="$agent_fwd --fwd $agent_p"; done
	# Its own process group, so a VM whose agent never answers is killed
	# whole (vm-run, timeout, qemu).
	# shellcheck disable=SC2086
	setsid "$agent_repo/tools/vm/vm-run" $agent_fwd --timeout 3000 \
		--log "$agent_repo/build/vm/agent-dmesg.log" -- \
		env DFKV_REPO="$agent_repo" "$agent_repo/tools/vm/guest-agent" \
		"$DFKV_GUEST_PORT" >"$agent_out" 2>&1 &
	agent_vm=$!
	agent_t=0
	until "$agent_ctl" dmesg >/dev/null 2>&1; do
		if ! kill -0 "$agent_vm" 2>/dev/null || [ $agent_t -ge 900 ]; then
			agent_kill
			return 1
		fi
		sleep 1
		agent_t=$((agent_t + 1))
	done
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
	agent_rc=$?
	agent_vm=""
	rm -rf "$agent_dir"
	return $agent_rc
}

agent_node() {
	agent_name=$1 agent_port=$2
	shift 2
	"$DFKVCTL" node add "$agent_name" "$@" &&
	"$DFKVCTL" listener add "$agent_name" "$DFKV_LISTEN_HOST" --port "$agent_port"
}
