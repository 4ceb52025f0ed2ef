// SPDX-License-Identifier: GPL-2.0
/*
 * Operations on a node shared by every transport: argument rules of
 * SPEC.md section 2, the node's state and limits, and counting each
 * finished operation by op and status.  The caller brackets calls with
 * dfkv_node_enter()/dfkv_node_exit().
 */
#include "ops.h"
#include "node.h"

static int done(struct dfkv_node *node, unsigned int op, int status)
{
	if (status >= 0)
		dfkv_stats_op(&node->stats, op, status);
	return status;
}

int dfkv_range(u64 stored_len, u64 offset, u64 length, u64 *out_len)
{
	*out_len = 0;
	if (offset > stored_len)
		return DFKV_STATUS_INVALID;
	if (!length || length > stored_len - offset)
		length = stored_len - offset;
	*out_len = length;
	return DFKV_STATUS_OK;
}

int dfkv_op_put(struct dfkv_node *node, const struct dfkv_key *key, u64 len,
		struct iov_iter *from, u64 *stored_len)
{
	struct dfkv_put put;
	int status;

	*stored_len = 0;
	if (!len)
		return done(node, DFKV_OP_PUT, DFKV_STATUS_INVALID);
	if (len > READ_ONCE(node->max_value))
		return done(node, DFKV_OP_PUT, DFKV_STATUS_TOO_LARGE);
	if (READ_ONCE(node->state) != DFKV_NODE_STATE_UP)
		return done(node, DFKV_OP_PUT, DFKV_STATUS_BUSY);

	status = dfkv_store_put_begin(&node->store, key, len, &put);
	if (status == DFKV_STATUS_OK && put.e && !put.leader) {
		status = dfkv_store_put_wait(&put);
	} else if (status == DFKV_STATUS_OK && put.e) {
		if (dfkv_store_put_copy(&put, 0, len, from) != len) {
			dfkv_store_put_end(&put, false, DFKV_STATUS_INVALID);
			return -EFAULT;
		}
		status = dfkv_store_put_end(&put, true, DFKV_STATUS_OK);
	}
	*stored_len = put.stored_len;
	return done(node, DFKV_OP_PUT, status);
}

int dfkv_op_get(struct dfkv_node *node, const struct dfkv_key *key,
		u64 offset, u64 length, u64 cap, struct iov_iter *to,
		u64 *stored_len, u64 *data_len)
{
	struct dfkv_read rd;
	int status;
	u64 n;

	*stored_len = 0;
	*data_len = 0;
	status = dfkv_store_get_begin(&node->store, key, &rd);
	if (status != DFKV_STATUS_OK)
		return done(node, DFKV_OP_GET, status);
	*stored_len = dfkv_read_len(&rd);
	status = dfkv_range(*stored_len, offset, length, &n);
	if (status == DFKV_STATUS_OK && n > cap)
		status = DFKV_STATUS_TOO_LARGE;
	if (status == DFKV_STATUS_OK && dfkv_store_read(&rd, offset, n, to) != n)
		status = -EFAULT;
	dfkv_store_get_end(&rd);
	if (status == DFKV_STATUS_OK)
		*data_len = n;
	return done(node, DFKV_OP_GET, status);
}

int dfkv_op_exist(struct dfkv_node *node, const struct dfkv_key *key,
		  u64 *stored_len)
{
	*stored_len = dfkv_store_exist(&node->store, key);
	return done(node, DFKV_OP_EXIST, *stored_len ? DFKV_STATUS_OK :
		    DFKV_STATUS_NOT_FOUND);
}

int dfkv_op_remove(struct dfkv_node *node, const struct dfkv_key *key)
{
	return done(node, DFKV_OP_REMOVE, dfkv_store_remove(&node->store, key));
}

int dfkv_op_touch(struct dfkv_node *node, const struct dfkv_key *keys, u32 n)
{
	u32 i;

	if (!n || n > DFKV_KEYS_MAX)
		return done(node, DFKV_OP_TOUCH, DFKV_STATUS_INVALID);
	for (i = 0; i < n; i++)
		dfkv_store_touch(&node->store, &keys[i]);
	return done(node, DFKV_OP_TOUCH, DFKV_STATUS_OK);
}

int dfkv_op_probe(struct dfkv_node *node, const struct dfkv_key *keys, u32 n,
		  u64 *lens)
{
	u32 i;

	if (!n || n > DFKV_KEYS_MAX)
		return done(node, DFKV_OP_PROBE, DFKV_STATUS_INVALID);
	for (i = 0; i < n; i++)
		lens[i] = dfkv_store_exist(&node->store, &keys[i]);
	return done(node, DFKV_OP_PROBE, DFKV_STATUS_OK);
}

int dfkv_op_lease(struct dfkv_node *node, struct dfkv_lease_owner *owner,
		  const struct dfkv_key *keys, u32 n, u64 ttl_ms, u64 *lens,
		  u32 *nr_hits, u64 *lease_id)
{
	return done(node, DFKV_OP_LEASE,
		    dfkv_lease_grant(&node->leases, owner, keys, n, ttl_ms,
				     lens, nr_hits, lease_id));
}

int dfkv_op_release(struct dfkv_node *node, struct dfkv_lease_owner *owner,
		    u64 lease_id)
{
	return done(node, DFKV_OP_RELEASE,
		    dfkv_lease_release(&node->leases, owner, lease_id));
}
