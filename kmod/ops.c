// SPDX-License-Identifier: GPL-2.0
/*
 * The rules of each operation on a node, shared by every transport through
 * the request executor (req.c): argument rules of SPEC.md section 2, the
 * node's state and limits, the tenant check, counting each finished
 * operation by op and status, and the moves of a request's data (map it,
 * copy it in or out, lend its pages, abandon it): the executor reaches
 * the store only through here.  The caller brackets calls with
 * dfkv_node_enter()/dfkv_node_exit().
 */
#include <linux/slab.h>
#include <linux/kernel.h>

#include "ops.h"
#include "node.h"
#include "listener.h"
#include "trace.h"

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

/* A PUT's entry, slots, pages and stage are charged to the node's creator. */
static int put_begin_charged(struct dfkv_node *node, const struct dfkv_key *key,
			     u64 len, u64 ahead, struct dfkv_put *put)
{
	struct mem_cgroup *old = dfkv_store_charge(&node->store);
	int status = dfkv_store_put_begin(&node->store, key, len, ahead, put);

	set_active_memcg(old);
	return status;
}

int dfkv_op_put_begin(struct dfkv_node *node, const struct dfkv_auth *auth,
		      const struct dfkv_key *key, u64 len, u64 ahead,
		      struct dfkv_put *put)
{
	int status;

	memset(put, 0, sizeof(*put));
	if (!dfkv_auth_allows(node, auth, key, 1))
		status = DFKV_STATUS_FORBIDDEN;
	else if (!len)
		status = DFKV_STATUS_INVALID;
	else if (len > READ_ONCE(node->max_value))
		status = DFKV_STATUS_TOO_LARGE;
	else if (READ_ONCE(node->state) != DFKV_NODE_STATE_UP)
		status = DFKV_STATUS_BUSY;
	else
		status = put_begin_charged(node, key, len, ahead, put);
	if (status != DFKV_STATUS_OK || !put->e)
		done(node, DFKV_OP_PUT, status);
	return status;
}

int dfkv_op_put_end(struct dfkv_node *node, struct dfkv_put *put, int err)
{
	int status;

	if (!put->leader) {
		status = dfkv_store_put_wait(put);
	} else if (err == -EFAULT) {
		/* The caller's memory faulted: its followers get INVALID. */
		dfkv_store_put_end(put, false, DFKV_STATUS_INVALID);
		status = -EFAULT;
	} else {
		status = dfkv_store_put_end(put, !err, DFKV_STATUS_IO_ERROR);
	}
	return done(node, DFKV_OP_PUT, status);
}

int dfkv_op_put_result(struct dfkv_node *node, struct dfkv_put *put)
{
	return done(node, DFKV_OP_PUT, dfkv_store_put_result(put));
}

int dfkv_op_put_flushed(struct dfkv_node *node, struct dfkv_put *put)
{
	return done(node, DFKV_OP_PUT, dfkv_store_put_flushed(put));
}

/*
 * Add len bytes to what a peer address holds (v) unless that passes cap;
 * with one, a peer holding nothing may take len bytes of any size.
 */
static bool peer_charge(atomic64_t *v, u64 len, u64 cap, bool one)
{
	u64 held = atomic64_add_return(len, v);

	if (held <= cap || (one && held == len))
		return true;
	atomic64_sub(len, v);
	return false;
}

/*
 * An eighth of the RAM budget may be reserved by PUTs still receiving,
 * and a quarter of that (at least an extent) by one peer address.  A
 * receiving PUT reserves one part of its value (at most an extent) at a
 * time, so any value up to max_value can be stored, and a peer that
 * sends slowly holds little and only that peer's further PUTs are BUSY.
 */
static bool recv_reserve(struct dfkv_node *node, struct dfkv_peer *peer,
			 u64 len)
{
	u64 cap = div_u64(node->store.capacity, 8);
	u64 peer_cap = max(cap / 4, node->store.slab.extent_bytes);

	if (atomic64_add_return(len, &node->recv_reserved) > cap)
		goto refuse;
	if (peer && !peer_charge(&peer->recv_reserved, len, peer_cap, false))
		goto refuse;
	return true;
refuse:
	atomic64_sub(len, &node->recv_reserved);
	atomic64_inc(&node->recv_refused);
	return false;
}

u64 dfkv_op_recv_part(struct dfkv_node *node, u64 left)
{
	return min(left, node->store.slab.extent_bytes);
}

bool dfkv_op_recv_admit(struct dfkv_node *node, struct dfkv_peer *peer,
			u64 len)
{
	if (recv_reserve(node, peer, len))
		return true;
	done(node, DFKV_OP_PUT, DFKV_STATUS_BUSY);
	return false;
}

void dfkv_op_recv_done(struct dfkv_node *node, struct dfkv_peer *peer,
		       u64 len)
{
	atomic64_sub(len, &node->recv_reserved);
	if (peer)
		atomic64_sub(len, &peer->recv_reserved);
}

int dfkv_op_put_more(struct dfkv_node *node, struct dfkv_peer *peer,
		     struct dfkv_put *put, u64 len)
{
	int status = DFKV_STATUS_BUSY;
	struct mem_cgroup *old;

	if (recv_reserve(node, peer, len)) {
		trace_dfkv_put_reserve(&put->e->key, len, 0);
		old = dfkv_store_charge(&node->store);
		status = dfkv_store_put_reserve(put, put->reserved + len);
		set_active_memcg(old);
		if (status == DFKV_STATUS_OK)
			return status;
		dfkv_op_recv_done(node, peer, len);
	}
	return dfkv_op_put_abort(node, put, status);
}

int dfkv_op_put_abort(struct dfkv_node *node, struct dfkv_put *put, int status)
{
	return done(node, DFKV_OP_PUT, dfkv_store_put_end(put, false, status));
}

/*
 * A peer address may hold a quarter of the node's stage bound in stages,
 * or one value of any size while it holds none (so a lone client stores
 * and loads any value up to max_value): a peer that announces large PUTs
 * and drips them, or reads large cold values and leaves the replies
 * unread, holds at most that, and the rest of the bound serves others.
 */
bool dfkv_op_stage_admit(struct dfkv_node *node, struct dfkv_peer *peer,
			 struct dfkv_entry *e, u64 *held)
{
	u64 len = dfkv_entry_staged(e);
	u64 share = dfkv_store_stage_bound(&node->store) / 4;

	*held = 0;
	if (!peer || !len)
		return true;
	if (!peer_charge(&peer->staged, len, share, true)) {
		this_cpu_inc(node->stats.pcpu->stage_busy);
		return false;
	}
	*held = len;
	return true;
}

void dfkv_op_stage_done(struct dfkv_peer *peer, u64 held)
{
	if (held)
		atomic64_sub(held, &peer->staged);
}

/* The store's part of a GET came out as status: the range it reads. */
static int get_range(struct dfkv_node *node, int status, u64 offset,
		     u64 length, u64 cap, struct dfkv_read *rd,
		     u64 *stored_len, u64 *data_len)
{
	*stored_len = 0;
	*data_len = 0;
	if (status != DFKV_STATUS_OK)
		return done(node, DFKV_OP_GET, status);
	*stored_len = dfkv_read_len(rd);
	status = dfkv_range(*stored_len, offset, length, data_len);
	if (status == DFKV_STATUS_OK && *data_len > cap)
		status = DFKV_STATUS_TOO_LARGE;
	if (status != DFKV_STATUS_OK) {
		*data_len = 0;
		dfkv_store_get_end(rd);
		return done(node, DFKV_OP_GET, status);
	}
	return DFKV_STATUS_OK;
}

int dfkv_op_get_begin(struct dfkv_node *node, const struct dfkv_auth *auth,
		      const struct dfkv_key *key, u64 offset, u64 length,
		      u64 cap, struct dfkv_read *rd, struct dfkv_waiter *w,
		      u64 *stored_len, u64 *data_len)
{
	int status = DFKV_STATUS_FORBIDDEN;

	if (dfkv_auth_allows(node, auth, key, 1))
		status = dfkv_store_get_begin(&node->store, key, rd, w);
	return get_range(node, status, offset, length, cap, rd, stored_len,
			 data_len);
}

int dfkv_op_get_resume(struct dfkv_node *node, u64 offset, u64 length,
		       u64 cap, struct dfkv_read *rd, struct dfkv_waiter *w,
		       u64 *stored_len, u64 *data_len)
{
	return get_range(node, dfkv_store_get_resume(rd, w), offset, length,
			 cap, rd, stored_len, data_len);
}

int dfkv_op_get_end(struct dfkv_node *node, struct dfkv_read *rd, int status)
{
	dfkv_store_get_end(rd);
	return done(node, DFKV_OP_GET, status);
}

void *dfkv_op_payload_alloc(struct dfkv_node *node, size_t len)
{
	struct mem_cgroup *old = dfkv_store_charge(&node->store);
	void *buf = kmalloc(len, GFP_KERNEL_ACCOUNT);

	set_active_memcg(old);
	return buf;
}

bool dfkv_op_put_park(struct dfkv_put *put, struct dfkv_waiter *w)
{
	return dfkv_store_put_park(put, w);
}

unsigned int dfkv_op_put_map(struct dfkv_put *put, u64 off, size_t len,
			     struct bio_vec *bv, unsigned int max,
			     size_t *mapped)
{
	*mapped = 0;
	if (!put->e || off >= put->reserved)
		return 0;
	return dfkv_entry_map(put->e, off, min_t(u64, len, put->reserved - off),
			      bv, max, mapped);
}

unsigned int dfkv_op_get_map(struct dfkv_read *rd, u64 off, size_t len,
			     struct bio_vec *bv, unsigned int max,
			     size_t *mapped)
{
	return dfkv_entry_map(rd->e, off, len, bv, max, mapped);
}

bool dfkv_op_put_copy_in(struct dfkv_put *put, size_t len,
			 struct iov_iter *from)
{
	return dfkv_store_put_copy(put, 0, len, from) == len;
}

void dfkv_op_get_sent(struct dfkv_node *node, struct dfkv_read *rd, u64 n)
{
	dfkv_store_sent(rd, n);
	dfkv_op_get_end(node, rd, DFKV_STATUS_OK);
}

bool dfkv_op_get_copy_out(struct dfkv_node *node, struct dfkv_read *rd,
			  u64 off, u64 n, struct iov_iter *to, int fail)
{
	bool whole = dfkv_store_read(rd, off, n, to) == n;

	dfkv_op_get_end(node, rd, whole ? DFKV_STATUS_OK : fail);
	return whole;
}

void dfkv_op_get_lend(const struct dfkv_read *rd, struct dfkv_read *lent)
{
	dfkv_store_pin_more(rd, lent);
}

void dfkv_op_get_lent_back(struct dfkv_read *lent)
{
	dfkv_store_get_end(lent);
}

void dfkv_op_put_abandon(struct dfkv_put *put, struct dfkv_waiter *w)
{
	dfkv_store_unpark(put->e, w);
	dfkv_store_put_drop(put);
}

void dfkv_op_get_abandon(struct dfkv_node *node, struct dfkv_read *rd,
			 struct dfkv_waiter *w)
{
	dfkv_store_unpark(rd->e, w);
	dfkv_op_get_end(node, rd, DFKV_STATUS_IO_ERROR);
}

u64 dfkv_op_get_want(struct dfkv_node *node, const struct dfkv_auth *auth,
		     const struct dfkv_key *key, u64 offset, u64 length)
{
	u64 len;

	if (!dfkv_auth_may(node, auth, key))
		return 0;
	len = dfkv_store_exist(&node->store, key);
	if (len <= offset)
		return 0;
	return length ? min(length, len - offset) : len - offset;
}

int dfkv_op_exist(struct dfkv_node *node, const struct dfkv_auth *auth,
		  const struct dfkv_key *key, u64 *stored_len)
{
	*stored_len = 0;
	if (!dfkv_auth_allows(node, auth, key, 1))
		return done(node, DFKV_OP_EXIST, DFKV_STATUS_FORBIDDEN);
	*stored_len = dfkv_store_exist(&node->store, key);
	return done(node, DFKV_OP_EXIST, *stored_len ? DFKV_STATUS_OK :
		    DFKV_STATUS_NOT_FOUND);
}

int dfkv_op_remove(struct dfkv_node *node, const struct dfkv_auth *auth,
		   const struct dfkv_key *key)
{
	if (!dfkv_auth_allows(node, auth, key, 1))
		return done(node, DFKV_OP_REMOVE, DFKV_STATUS_FORBIDDEN);
	return done(node, DFKV_OP_REMOVE, dfkv_store_remove(&node->store, key));
}

int dfkv_op_touch(struct dfkv_node *node, const struct dfkv_auth *auth,
		  const struct dfkv_key *keys, u32 n, u64 walk)
{
	bool reverse = walk == DFKV_TOUCH_WALK_REVERSE;
	u32 i;

	if (!n || n > DFKV_KEYS_MAX ||
	    (walk != DFKV_TOUCH_WALK_FORWARD && !reverse))
		return done(node, DFKV_OP_TOUCH, DFKV_STATUS_INVALID);
	if (!dfkv_auth_allows(node, auth, keys, n))
		return done(node, DFKV_OP_TOUCH, DFKV_STATUS_FORBIDDEN);
	/* The key touched last ends most recently used. */
	for (i = 0; i < n; i++)
		dfkv_store_touch(&node->store, &keys[reverse ? n - 1 - i : i]);
	return done(node, DFKV_OP_TOUCH, DFKV_STATUS_OK);
}

int dfkv_op_probe(struct dfkv_node *node, const struct dfkv_auth *auth,
		  const struct dfkv_key *keys, u32 n, u64 *lens)
{
	u32 i;

	if (!n || n > DFKV_KEYS_MAX)
		return done(node, DFKV_OP_PROBE, DFKV_STATUS_INVALID);
	if (!dfkv_auth_allows(node, auth, keys, n))
		return done(node, DFKV_OP_PROBE, DFKV_STATUS_FORBIDDEN);
	for (i = 0; i < n; i++)
		lens[i] = dfkv_store_exist(&node->store, &keys[i]);
	return done(node, DFKV_OP_PROBE, DFKV_STATUS_OK);
}

int dfkv_op_lease(struct dfkv_node *node, const struct dfkv_auth *auth,
		  struct dfkv_lease_owner *owner, const struct dfkv_key *keys,
		  u32 n, u64 ttl_ms, u64 *lens, u32 *nr_hits, u64 *lease_id)
{
	struct mem_cgroup *old;
	int status;

	*nr_hits = 0;
	*lease_id = 0;
	if (n && n <= DFKV_KEYS_MAX && !dfkv_auth_allows(node, auth, keys, n))
		return done(node, DFKV_OP_LEASE, DFKV_STATUS_FORBIDDEN);
	old = dfkv_store_charge(&node->store);
	status = dfkv_lease_grant(&node->leases, owner, keys, n, ttl_ms, lens,
				  nr_hits, lease_id);
	set_active_memcg(old);
	return done(node, DFKV_OP_LEASE, status);
}

int dfkv_op_release(struct dfkv_node *node, struct dfkv_lease_owner *owner,
		    u64 lease_id)
{
	return done(node, DFKV_OP_RELEASE,
		    dfkv_lease_release(&node->leases, owner, lease_id));
}

int dfkv_op_hello(struct dfkv_node *node, struct dfkv_auth *auth,
		  const u8 *payload, u64 len, u8 **reply, size_t *reply_len)
{
	*reply = kmalloc(DFKV_HELLO_REPLY_MAX, GFP_KERNEL);
	if (!*reply)
		return done(node, DFKV_OP_HELLO, DFKV_STATUS_BUSY);
	*reply_len = dfkv_auth_hello(node, auth, payload, len, *reply);
	return done(node, DFKV_OP_HELLO, DFKV_STATUS_OK);
}

int dfkv_op_auth(struct dfkv_node *node, struct dfkv_auth *auth, u64 tenant,
		 const u8 *proof, u64 len, u8 **reply, bool *close)
{
	int status;

	*close = false;
	*reply = NULL;
	if (len != DFKV_AUTH_PROOF_LEN)
		return done(node, DFKV_OP_AUTH, DFKV_STATUS_INVALID);
	*reply = kmalloc(DFKV_AUTH_PROOF_LEN, GFP_KERNEL);
	if (!*reply)
		return done(node, DFKV_OP_AUTH, DFKV_STATUS_BUSY);
	status = dfkv_auth_proof(node, auth, tenant, proof, *reply, close);
	if (status != DFKV_STATUS_OK) {
		kfree_sensitive(*reply);
		*reply = NULL;
	}
	return done(node, DFKV_OP_AUTH, status);
}

static const char *const op_names[__DFKV_OP_MAX] = {
	[DFKV_OP_PUT] = "put", [DFKV_OP_GET] = "get",
	[DFKV_OP_EXIST] = "exist", [DFKV_OP_STATS] = "stats",
	[DFKV_OP_REMOVE] = "remove", [DFKV_OP_TOUCH] = "touch",
	[DFKV_OP_PROBE] = "probe", [DFKV_OP_LEASE] = "lease",
	[DFKV_OP_RELEASE] = "release", [DFKV_OP_HELLO] = "hello",
	[DFKV_OP_AUTH] = "auth",
};

int dfkv_op_stats(struct dfkv_node *node, const struct dfkv_auth *auth,
		  char **text, size_t *len)
{
	struct dfkv_store *st = &node->store;
	struct dfkv_counters *s;
	size_t size = PAGE_SIZE * 2, n = 0;
	char *buf;
	int i, j;

	*text = NULL;
	*len = 0;
	if (!dfkv_auth_any(node, auth))
		return done(node, DFKV_OP_STATS, DFKV_STATUS_FORBIDDEN);
	s = kmalloc(sizeof(*s), GFP_KERNEL);
	buf = kmalloc(size, GFP_KERNEL);
	if (!s || !buf) {
		kfree(s);
		kfree(buf);
		return done(node, DFKV_OP_STATS, DFKV_STATUS_BUSY);
	}
	dfkv_stats_snapshot(&node->stats, s);
	for (i = 0; i < __DFKV_OP_MAX; i++)
		for (j = 0; j < __DFKV_STATUS_MAX; j++)
			if (s->ops[i][j] && op_names[i])
				n += scnprintf(buf + n, size - n,
					       "ops_%s_%d %llu\n", op_names[i], j,
					       s->ops[i][j]);
	n += scnprintf(buf + n, size - n,
		       "bytes_in %llu\nbytes_out %llu\nhits %llu\nmisses %llu\n"
		       "evictions %llu\nobjects %lld\nused_bytes %lld\n"
		       "capacity_bytes %llu\n",
		       s->bytes_in, s->bytes_out, s->hits, s->misses,
		       s->evictions, atomic64_read(&st->objects),
		       atomic64_read(&st->used_bytes), st->capacity);
	kfree(s);
	*text = buf;
	*len = n;
	return done(node, DFKV_OP_STATS, DFKV_STATUS_OK);
}
