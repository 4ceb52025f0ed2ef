# SPDX-License-Identifier: GPL-2.0
#
# Soft-RoCE for the demo and the soak inside the test VM (sourced):
# softroce_up VETH ADDR RXE makes a veth pair VETH0/VETH1, puts ADDR/30 on
# VETH0 and an rdma_rxe device RXE on it, and waits for its port to be
# ACTIVE; softroce_down VETH RXE removes them.

softroce_up() {
	modprobe -a rdma_rxe rdma_ucm ib_uverbs veth || return 1
	ip link add "${1}0" type veth peer name "${1}1" &&
	ip addr add "$2/30" dev "${1}0" &&
	ip link set "${1}0" up && ip link set "${1}1" up &&
	rdma link add "$3" type rxe netdev "${1}0" || return 1
	i=0
	until rdma link show "$3/1" | grep -q 'state ACTIVE'; do
		i=$((i + 1))
		[ $i -lt 100 ] || { rdma link show; return 1; }
		sleep 0.2
	done
}

softroce_down() {
	rdma link del "$2" 2>/dev/null || true
	ip link del "${1}0" 2>/dev/null || true
}
