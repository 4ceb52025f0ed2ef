// SPDX-License-Identifier: GPL-2.0
/*
 * The disk commands of the "dfkv" family: DISK_ADD (attach, rebuild),
 * DISK_DEL (graceful detach), DISK_GET and its resumable dump over every
 * node of the caller's network namespace, and the DISK_EVENT
 * notifications.  Every command runs inside the node's operation bracket,
 * so deleting the node waits for it instead of racing it.
 */
#include <linux/module.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "nl_common.h"
#include "node.h"
#include "disk.h"

static int fill_disk_stats(struct sk_buff *skb, struct dfkv_disk *d)
{
	struct dfkv_disk_stats *ds = &d->stats;
	struct dfkv_slab_stats ss;
	struct nlattr *nest;

	dfkv_slab_stats(&d->slab, &ss);
	nest = nla_nest_start(skb, DFKV_A_DISK_STATS);
	if (!nest ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_OBJECTS,
			     atomic64_read(&d->objects)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_USED_BYTES,
			     atomic64_read(&d->used_bytes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_SLOT_BYTES, ss.slot_bytes_used) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_CAPACITY_BYTES,
			     (u64)ss.nr_extents * ss.extent_bytes) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_EXTENTS_BOUND, ss.extents_bound) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_EXTENTS_TOTAL, ss.nr_extents) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_EVICTIONS,
			     atomic64_read(&d->evictions)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_READS,
			     atomic64_read(&ds->reads)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_WRITES,
			     atomic64_read(&ds->writes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_READ_BYTES,
			     atomic64_read(&ds->read_bytes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_WRITE_BYTES,
			     atomic64_read(&ds->write_bytes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_IO_ERRORS,
			     atomic64_read(&ds->io_errors)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_DISK_RECORD_WRITES,
			     atomic64_read(&ds->record_writes)) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_REBUILD_RECORDS,
			     ds->rebuild_records) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_REBUILD_REJECTED,
			     ds->rebuild_rejected) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_REBUILD_MS, ds->rebuild_ms) ||
	    dfkv_nl_put_stat(skb, DFKV_STAT_REBUILD_READ_BYTES,
			     ds->rebuild_read_bytes))
		return -EMSGSIZE;
	nla_nest_end(skb, nest);
	return 0;
}

/* A disk's message; in a dump (cb) checked against the dump's generation. */
static int fill_disk(struct sk_buff *skb, struct dfkv_node *node,
		     struct dfkv_disk *d, const struct dfkv_nl_to *to, u8 cmd,
		     u32 event)
{
	char reason[sizeof(d->reason)];
	u32 state = READ_ONCE(d->state);
	unsigned long irqflags;
	void *hdr;

	hdr = dfkv_nl_put_hdr(skb, to, cmd);
	if (!hdr)
		return -EMSGSIZE;
	/* dfkv_disk_fail() takes fail_lock in bio completion too */
	spin_lock_irqsave(&d->fail_lock, irqflags);
	strscpy(reason, d->reason, sizeof(reason));
	spin_unlock_irqrestore(&d->fail_lock, irqflags);
	/* An event (anyone may listen) carries names and the state only. */
	if (nla_put_string(skb, DFKV_A_NODE_NAME, node->name) ||
	    nla_put_string(skb, DFKV_A_DISK_NAME, d->name) ||
	    nla_put_u32(skb, DFKV_A_DISK_STATE, state) ||
	    (event && nla_put_u32(skb, DFKV_A_EVENT, event)) ||
	    (!event &&
	     (nla_put_string(skb, DFKV_A_DISK_PATH, d->path) ||
	      (state != DFKV_DISK_STATE_UP && reason[0] &&
	       nla_put_string(skb, DFKV_A_DISK_REASON, reason)) ||
	      nla_put_u64_64bit(skb, DFKV_A_DISK_DEV_BYTES,
				d->sb.geom.dev_bytes, DFKV_A_PAD) ||
	      nla_put_u64_64bit(skb, DFKV_A_DISK_EXTENT_BYTES,
				d->sb.geom.extent_bytes, DFKV_A_PAD) ||
	      nla_put_u64_64bit(skb, DFKV_A_DISK_EPOCH, d->sb.epoch,
				DFKV_A_PAD) ||
	      fill_disk_stats(skb, d)))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

void dfkv_nl_notify_disk(const struct genl_family *family,
			 struct dfkv_node *node, struct dfkv_disk *d, u32 event)
{
	struct dfkv_nl_to to = { .family = family };
	struct sk_buff *skb;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return;
	if (fill_disk(skb, node, d, &to, DFKV_CMD_DISK_EVENT, event)) {
		nlmsg_free(skb);
		return;
	}
	dfkv_nl_multicast(family, node, skb);
}

/* The node of a disk command, entered; NULL with extack set. */
static struct dfkv_node *disk_cmd_node(struct genl_info *info)
{
	struct dfkv_node *node = dfkv_nl_req_node(info);

	if (node && !dfkv_node_enter(node)) {
		NL_SET_ERR_MSG(info->extack, "the node is being deleted");
		dfkv_node_put(node);
		node = NULL;
	}
	return node;
}

static void disk_cmd_done(struct dfkv_node *node)
{
	dfkv_node_exit(node);
	dfkv_node_put(node);
}

int dfkv_nl_disk_add_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node *node;
	u64 extent = 0;
	int err;

	/*
	 * Opening a block device by path checks no file permission, so
	 * attaching one needs CAP_SYS_ADMIN (in the initial user namespace,
	 * like the CAP_NET_ADMIN of GENL_ADMIN_PERM) on top of the family's.
	 */
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(info->extack, "attaching a disk needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	if (GENL_REQ_ATTR_CHECK(info, DFKV_A_DISK_PATH))
		return -EINVAL;
	node = disk_cmd_node(info);
	if (!node)
		return -ENOENT;
	if (info->attrs[DFKV_A_DISK_EXTENT_BYTES])
		extent = nla_get_u64(info->attrs[DFKV_A_DISK_EXTENT_BYTES]);
	/*
	 * The node is REBUILDING from here until the disk is attached or
	 * refused; a device still held by a deleted node of the same name
	 * (a restart) is free once it let go.
	 */
	dfkv_node_attach_begin(node);
	for (;;) {
		err = dfkv_tier_disk_add(&node->tier,
					 nla_data(info->attrs[DFKV_A_DISK_PATH]),
					 info->attrs[DFKV_A_DISK_NAME] ?
					 nla_data(info->attrs[DFKV_A_DISK_NAME]) :
					 NULL,
					 nla_get_flag(info->attrs[DFKV_A_DISK_FORMAT]),
					 extent, info->extack);
		if (err != -EBUSY || !dfkv_nodes_wait_retired(node))
			break;
	}
	dfkv_node_attach_end(node);
	disk_cmd_done(node);
	return err;
}

int dfkv_nl_disk_del_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node *node;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, DFKV_A_DISK_NAME))
		return -EINVAL;
	node = disk_cmd_node(info);
	if (!node)
		return -ENOENT;
	err = dfkv_tier_disk_del(&node->tier,
				 nla_data(info->attrs[DFKV_A_DISK_NAME]),
				 info->extack);
	disk_cmd_done(node);
	return err;
}

int dfkv_nl_disk_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct dfkv_node *node;
	struct dfkv_disk *d;
	struct sk_buff *msg;
	int err = -ENOENT;

	if (GENL_REQ_ATTR_CHECK(info, DFKV_A_DISK_NAME))
		return -EINVAL;
	node = disk_cmd_node(info);
	if (!node)
		return -ENOENT;
	d = dfkv_tier_disk_get(&node->tier,
			       nla_data(info->attrs[DFKV_A_DISK_NAME]), 0);
	if (!d) {
		NL_SET_ERR_MSG(info->extack, "no disk of that name on this node");
		goto out;
	}
	err = -ENOMEM;
	msg = nlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (msg) {
		struct dfkv_nl_to to = dfkv_nl_to_reply(info);

		err = fill_disk(msg, node, d, &to, DFKV_CMD_DISK_GET, 0);
		if (!err)
			err = genlmsg_reply(msg, info);
		else
			nlmsg_free(msg);
	}
	dfkv_disk_put(d);
out:
	disk_cmd_done(node);
	return err;
}

/*
 * Disk dump: cb->args[0] is the index of the node, cb->args[1] that of
 * the disk in it, both of what was already sent; an optional NODE_NAME
 * restricts it to one node.  Nodes or disks coming or going between two
 * calls (the nodes' generation and dfkv_tier_gen(), read at the start of
 * each call: the call after a change sees it) set NLM_F_DUMP_INTR on the
 * next message, the final NLMSG_DONE included: the reader retries.
 */
int dfkv_nl_disk_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_dumpit_info *info = genl_dumpit_info(cb);
	struct nlattr *only = info->attrs[DFKV_A_NODE_NAME];
	struct dfkv_net *dn = dfkv_net(sock_net(skb->sk));
	struct dfkv_nl_to to = dfkv_nl_to_dump(cb);
	struct dfkv_node *node;
	long nidx = 0;
	int err = 0;

	mutex_lock(&dn->lock);
	cb->seq = dn->gen + dfkv_tier_gen();
	list_for_each_entry(node, &dn->nodes, list) {
		struct dfkv_disk *d;

		if (nidx++ < cb->args[0])
			continue;
		if (only && strcmp(node->name, nla_data(only))) {
			cb->args[1] = 0;
			continue;
		}
		if (!dfkv_node_enter(node))
			continue;
		while ((d = dfkv_tier_disk_get(&node->tier, NULL,
					       cb->args[1]))) {
			err = fill_disk(skb, node, d, &to, DFKV_CMD_DISK_GET, 0);
			dfkv_disk_put(d);
			if (err)
				break;
			cb->args[1]++;
		}
		dfkv_node_exit(node);
		if (err) {
			nidx--;
			break;
		}
		cb->args[1] = 0;
	}
	mutex_unlock(&dn->lock);
	cb->args[0] = nidx;
	return skb->len;
}
