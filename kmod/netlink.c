// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "dfkv" (uapi/linux/dfkv.h, uapi/dfkv.yaml): its
 * definition and registration, and the events it announces.  This file is
 * the top of the family: it names the generated ops table (nl_gen.c),
 * which names the handlers (nl_node.c, nl_disk.c, nl_tenant.c), which
 * share nl_common.c below them; no handler names the family, each replies
 * through the one its request came to (pre_doit hands it over).
 * Policies are strict and per operation (nl_gen.c, generated from
 * uapi/dfkv.yaml); every rejection carries an extended-ack message;
 * mutations, and the reads that tell of tenants or device paths, need
 * CAP_NET_ADMIN in the initial user namespace (SPEC.md 5: GENL_ADMIN_PERM
 * and netlink_capable() check init_user_ns, so a user namespace of the
 * caller's own grants nothing); an event says only which object changed
 * to which state.  Events come from the nodes' notifier chain (node.h),
 * so nodes do not call up into the family.
 */
#include <linux/module.h>
#include <net/genetlink.h>

#include "netlink.h"
#include "nl_common.h"
#include "node.h"

static int nl_pre_doit(const struct dfkv_genl_pre_op *ops, struct sk_buff *skb,
		       struct genl_info *info);

static struct genl_family dfkv_nl_family __ro_after_init = {
	.name = DFKV_GENL_NAME,
	.version = DFKV_GENL_VERSION,
	.netnsok = true,
	.parallel_ops = true,
	.module = THIS_MODULE,
	.pre_doit = nl_pre_doit,
	.ops = dfkv_nl_ops,
	.n_ops = ARRAY_SIZE(dfkv_nl_ops),
	.resv_start_op = DFKV_CMD_VERSION_GET,	/* strict checks for all */
	.mcgrps = dfkv_nl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(dfkv_nl_mcgrps),
};

/* Every doit learns its family from here (dfkv_nl_family_of()). */
static int nl_pre_doit(const struct dfkv_genl_pre_op *ops, struct sk_buff *skb,
		       struct genl_info *info)
{
	info->user_ptr[0] = &dfkv_nl_family;
	return 0;
}

/* A node's or disk's event, from the nodes' notifier chain. */
static int nl_node_event(struct notifier_block *nb, unsigned long event,
			 void *data)
{
	struct dfkv_node_event *ev = data;

	if (ev->disk)
		dfkv_nl_notify_disk(&dfkv_nl_family, ev->node, ev->disk, event);
	else
		dfkv_nl_notify_node(&dfkv_nl_family, ev->node, event);
	return NOTIFY_DONE;
}

static struct notifier_block nl_node_nb = {
	.notifier_call = nl_node_event,
};

int __init dfkv_nl_init(void)
{
	int err = genl_register_family(&dfkv_nl_family);

	if (err)
		return err;
	err = dfkv_node_notifier_register(&nl_node_nb);
	if (err)
		genl_unregister_family(&dfkv_nl_family);
	return err;
}

void dfkv_nl_exit(void)
{
	dfkv_node_notifier_unregister(&nl_node_nb);
	genl_unregister_family(&dfkv_nl_family);
}
