/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mdsd host agent: one node as a NODE_GET dump reports it, and whether the
 * agent puts it in the directory (agent_node.c; the agent's loop is
 * agent.c).
 */
#ifndef MDSD_AGENT_NODE_H
#define MDSD_AGENT_NODE_H

#include <stdbool.h>
#include <stdint.h>
#include <libmnl/libmnl.h>
#include <linux/dfkv.h>

#include "mdsd.h"

struct agent_node {
	char name[DFKV_NODE_NAME_MAX];
	uint32_t state;			/* enum dfkv_node_state */
	uint32_t phase;			/* enum dfkv_node_phase */
	char tcp[MDS_STR_MAX + 1];	/* first listener of each kind */
	char rdma[MDS_STR_MAX + 1];
};

/*
 * Decode one NODE_GET reply into *n (zeroed first): name, state and phase
 * (UP when the module does not report them), the first listener of each
 * transport as "HOST:PORT" (a wildcard address becomes
 * cfg->advertise_host, else cfg->host).  False when it names no node.
 */
bool agent_node_parse(const struct nlmsghdr *nlh,
		      const struct mdsd_config *cfg, struct agent_node *n);

/*
 * Whether a dumped node goes to the directory (registered, or its lease
 * renewed): always when it is already a member; otherwise only once it is
 * UP, not while a disk attach rebuilds its index, so that a restarted
 * node enters the ring warm.  A member attaching one more disk keeps its
 * lease.
 */
bool agent_node_admit(const struct agent_node *n, bool member);

#endif /* MDSD_AGENT_NODE_H */
