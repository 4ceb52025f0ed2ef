// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd host agent: decoding a node of the NODE_GET dump (its name, state,
 * phase and listeners) and the rule that keeps a node out of the directory
 * while its disks rebuild (agent_node.h).  No I/O: unit-tested natively.
 */
#include <stdio.h>
#include <string.h>

#include "agent_node.h"
#include "genl.h"

/*
 * "HOST:PORT" of a listener: a wildcard address (0.0.0.0, ::) is replaced
 * by --advertise-host (default: the host name); IPv6 gets brackets.
 */
static void listener_addr(const struct mdsd_config *cfg, const char *addr,
			  uint16_t port, char *out, size_t cap)
{
	const char *host = addr;

	if (!strcmp(addr, "0.0.0.0") || !strcmp(addr, "::"))
		host = cfg->advertise_host[0] ? cfg->advertise_host : cfg->host;
	if (!*host) {
		out[0] = '\0';
		return;
	}
	if (strlen(host) > cap - 10) {
		out[0] = '\0';
		return;
	}
	if (strchr(host, ':') && host[0] != '[')
		snprintf(out, cap, "[%.*s]:%u", (int)(cap - 10), host, port);
	else
		snprintf(out, cap, "%.*s:%u", (int)(cap - 10), host, port);
	if (!mds_addr_valid(out))
		out[0] = '\0';
}

static void parse_listeners(const struct mdsd_config *cfg,
			    const struct nlattr *nest, struct agent_node *n)
{
	const struct nlattr *one, *a;

	mnl_attr_for_each_nested(one, nest) {
		const char *addr = NULL;
		uint32_t kind = DFKV_LISTENER_TCP;
		uint16_t port = 0;
		char *dst;

		if (mnl_attr_get_type(one) != DFKV_A_LISTENER)
			continue;
		mnl_attr_for_each_nested(a, one) {
			switch (mnl_attr_get_type(a)) {
			case DFKV_A_LISTEN_ADDR:
				if (!mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
					addr = mnl_attr_get_str(a);
				break;
			case DFKV_A_LISTEN_PORT:
				if (mnl_attr_get_payload_len(a) >= 2)
					port = mnl_attr_get_u16(a);
				break;
			case DFKV_A_LISTEN_TRANSPORT:
				if (mnl_attr_get_payload_len(a) == 4)
					kind = mnl_attr_get_u32(a);
				break;
			}
		}
		dst = kind == DFKV_LISTENER_RDMA ? n->rdma :
		      kind == DFKV_LISTENER_TCP ? n->tcp : NULL;
		if (addr && port && dst && !dst[0])
			listener_addr(cfg, addr, port, dst, MDS_STR_MAX + 1);
	}
}

/* A u32 attribute's value, or def when it is absent or malformed. */
static uint32_t u32_or(const struct nlattr *a, uint32_t def)
{
	return a && mnl_attr_get_payload_len(a) == 4 ? mnl_attr_get_u32(a) : def;
}

bool agent_node_parse(const struct nlmsghdr *nlh,
		      const struct mdsd_config *cfg, struct agent_node *n)
{
	const struct nlattr *tb[DFKV_A_MAX + 1];

	memset(n, 0, sizeof(*n));
	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_NODE_NAME] ||
	    mnl_attr_validate(tb[DFKV_A_NODE_NAME], MNL_TYPE_NUL_STRING))
		return false;
	snprintf(n->name, sizeof(n->name), "%s",
		 mnl_attr_get_str(tb[DFKV_A_NODE_NAME]));
	n->state = u32_or(tb[DFKV_A_NODE_STATE], DFKV_NODE_STATE_UP);
	n->phase = u32_or(tb[DFKV_A_NODE_PHASE], DFKV_NODE_PHASE_UP);
	if (tb[DFKV_A_LISTENERS])
		parse_listeners(cfg, tb[DFKV_A_LISTENERS], n);
	return true;
}

bool agent_node_admit(const struct agent_node *n, bool member)
{
	return member || n->phase != DFKV_NODE_PHASE_REBUILDING;
}
