// SPDX-License-Identifier: GPL-2.0
/*
 * The request executor (see req.h): the one place that knows, for every
 * op, which of the rules in ops.c to run, in which order, with what the
 * transport decoded, and what the reply carries.  A request holds its
 * node bracket, its PUT reservation or GET pin and its buffers from
 * dfkv_req_begin() to dfkv_req_done(), so a transport's teardown gives
 * back whatever a request in any state holds with that one call.  A PUT
 * follower of a transport with ops->unpark parks on its leader's entry,
 * a leader whose commit waits for the disk and a GET whose value is being
 * read from disk on their own entry, instead of sleeping in a shared
 * worker; a caller without one (an ioctl) sleeps in its own task,
 * killably.  A request that entered its node is timed and traced here,
 * from dfkv_req_begin() to dfkv_req_done(), the same for every
 * transport.  Transports touch the data only through the functions that
 * map it or copy it in, and this file reaches the store only through
 * ops.c; a caller in its own task with a buffer to make ready first
 * (/dev/dfkv) runs its whole op through dfkv_req_run_local(), which sizes
 * the buffer and retries a GET whose value grew.
 */
#include <linux/slab.h>
#include <linux/string.h>

#include "compat.h"
#include "req.h"
#include "node.h"
#include "ops.h"
#include "wire.h"
#include "trace.h"

static void req_wake(struct dfkv_waiter *w)
{
	struct dfkv_req *req = container_of(w, struct dfkv_req, waiter);

	req->ops->unpark(req);
}

void dfkv_req_init(struct dfkv_req *req, struct dfkv_sess *sess,
		   const struct dfkv_req_ops *ops)
{
	memset(req, 0, sizeof(*req));
	req->sess = sess;
	req->node = sess->node;
	req->ops = ops;
	INIT_LIST_HEAD(&req->waiter.node);
	req->waiter.wake = req_wake;
}

static struct dfkv_auth *req_auth(struct dfkv_req *req)
{
	return &req->sess->auth;
}

static struct dfkv_lease_owner *req_owner(struct dfkv_req *req)
{
	return &req->sess->owner;
}

static void answer(struct dfkv_req *req, int status, u64 stored_len)
{
	req->rsp.status = status;
	req->rsp.stored_len = stored_len;
	req->decided = true;
}

/* What the request parks when it must wait: none without ops->unpark. */
static struct dfkv_waiter *req_waiter(struct dfkv_req *req)
{
	return req->ops->unpark ? &req->waiter : NULL;
}

/* The bytes a request that ended moved: a GET's reply data, a PUT's value. */
static u64 req_moved(const struct dfkv_req *req)
{
	return req->op == DFKV_OP_GET ? req->rsp.data_len : req->payload_len;
}

static void queue_response(struct dfkv_req *req)
{
	trace_dfkv_req_reply(&req->key, req_moved(req), req->rsp.status);
	if (req->ops->queue_response)
		req->ops->queue_response(req);
}

/* The admitted part of a PUT's payload is in, or will never be. */
static void recv_release(struct dfkv_req *req)
{
	if (req->admitted)
		dfkv_op_recv_done(req->node, req->peer, req->admitted);
	req->admitted = 0;
}

/*
 * The stage of e (a PUT leader's, a GET's pinned one), if it has one,
 * counts against the request's peer until dfkv_req_done(): false when
 * that is over its share.
 */
static bool stage_admit(struct dfkv_req *req, struct dfkv_entry *e)
{
	return dfkv_op_stage_admit(req->node, req->peer, e, &req->staged);
}

static void put_begin(struct dfkv_req *req)
{
	struct dfkv_node *node = req->node;
	u64 len = req->payload_len, ahead = U64_MAX;
	int status;

	if (req->ops->admit_recv && len) {
		ahead = dfkv_op_recv_part(node, len);
		if (!dfkv_op_recv_admit(node, req->peer, ahead)) {
			answer(req, DFKV_STATUS_BUSY, 0);
			return;
		}
		req->admitted = ahead;
		trace_dfkv_put_reserve(&req->key, ahead, 0);
	}
	status = dfkv_op_put_begin(node, req_auth(req), &req->key, len, ahead,
				   &req->put);
	if (status == DFKV_STATUS_OK && req->put.leader &&
	    !stage_admit(req, req->put.e))
		status = dfkv_op_put_abort(node, &req->put, DFKV_STATUS_BUSY);
	if (status != DFKV_STATUS_OK || !req->put.leader)
		recv_release(req);
	if (status != DFKV_STATUS_OK || !req->put.e) {
		req->put.e = NULL;
		answer(req, status, req->put.stored_len);
	} else if (req->put.leader) {
		req->rx = DFKV_REQ_RX_PUT;
	}
}

bool dfkv_req_begin(struct dfkv_req *req)
{
	if (!dfkv_node_enter(req->node)) {
		answer(req, DFKV_STATUS_BUSY, 0);
		return false;
	}
	req->in_op = true;
	req->start_ns = ktime_get_ns();
	trace_dfkv_req_start(req->node->name, req->op, &req->key,
			     req->op == DFKV_OP_GET ? req->length :
			     req->payload_len, req->ops->transport);
	if (req->op == DFKV_OP_PUT) {
		put_begin(req);
	} else if (req->payload_len && !req->payload) {
		/* HELLO, AUTH or a key list to receive */
		req->rx_buf = dfkv_op_payload_alloc(req->node,
						    req->payload_len);
		if (req->rx_buf) {
			req->payload = req->rx_buf;
			req->rx = DFKV_REQ_RX_BUF;
		} else {
			answer(req, DFKV_STATUS_BUSY, 0);
		}
	}
	return true;
}

bool dfkv_req_recv_more(struct dfkv_req *req)
{
	struct dfkv_put *put = &req->put;
	u64 len = dfkv_op_recv_part(req->node, put->e->len - put->reserved);
	int status;

	recv_release(req);
	status = dfkv_op_put_more(req->node, req->peer, put, len);
	if (status == DFKV_STATUS_OK) {
		req->admitted = len;
		return true;
	}
	req->rx = DFKV_REQ_RX_NONE;
	answer(req, status, 0);
	return false;
}

/* A leader's payload is in (or not); a follower takes its leader's result. */
static bool exec_put(struct dfkv_req *req, int err)
{
	struct dfkv_node *node = req->node;
	struct dfkv_put *put = &req->put;
	int status;

	if (!put->leader && req->ops->unpark &&
	    dfkv_op_put_park(put, &req->waiter))
		return false;
	if (put->leader) {
		recv_release(req);
		put->w = req_waiter(req);
		status = dfkv_op_put_end(node, put, err);
		if (status == -EINPROGRESS)
			return false;	/* parked for its flush */
	} else if (!req->ops->unpark) {
		status = dfkv_op_put_end(node, put, 0);	/* sleeps */
	} else {
		status = dfkv_op_put_result(node, put);
	}
	answer(req, status, put->stored_len);
	return true;
}

static void exec_exist(struct dfkv_req *req)
{
	u64 stored;
	int status;

	status = dfkv_op_exist(req->node, req_auth(req), &req->key, &stored);
	answer(req, status, stored);
}

/* A GET's begin or resume came out as status: false while parked. */
static bool get_answer(struct dfkv_req *req, int status, u64 stored, u64 n)
{
	if (status == -EINPROGRESS)
		return false;
	if (status == DFKV_STATUS_OK && !stage_admit(req, req->rd.e)) {
		status = dfkv_op_get_end(req->node, &req->rd,
					 DFKV_STATUS_BUSY);
		n = 0;
	}
	if (status != DFKV_STATUS_OK)
		req->rd.e = NULL;
	answer(req, status, stored);
	req->rsp.data_len = n;
	return true;
}

static bool exec_get(struct dfkv_req *req)
{
	u64 stored, n;
	int status;

	status = dfkv_op_get_begin(req->node, req_auth(req), &req->key,
				   req->offset, req->length, req->cap, &req->rd,
				   req_waiter(req), &stored, &n);
	return get_answer(req, status, stored, n);
}

/* A native key list (ioctl): results in req->lens, nr_hits, lease_id. */
static int exec_keys_native(struct dfkv_req *req)
{
	struct dfkv_req_rsp *rsp = &req->rsp;
	int status;

	switch (req->op) {
	case DFKV_OP_TOUCH:
		return dfkv_op_touch(req->node, req_auth(req), req->keys,
				     req->nr_keys, req->offset);
	case DFKV_OP_PROBE:
		status = dfkv_op_probe(req->node, req_auth(req), req->keys,
				       req->nr_keys, req->lens);
		/* A refused PROBE (INVALID, FORBIDDEN) reports no length. */
		rsp->nr_hits = status == DFKV_STATUS_OK ? req->nr_keys : 0;
		return status;
	default:
		return dfkv_op_lease(req->node, req_auth(req), req_owner(req),
				     req->keys, req->nr_keys, req->length,
				     req->lens, &rsp->nr_hits, &rsp->lease_id);
	}
}

/*
 * A wire key list: on OK the reply data is PROBE's n le64 stored lengths,
 * or LEASE's le64 lease id, then the leading hits' lengths; TOUCH has
 * none.  BUSY when memory ran out.
 */
static int exec_keys_wire(struct dfkv_req *req)
{
	u32 n = req->payload_len / DFKV_BLOCK_KEY_LEN, i, hits = 0;
	struct dfkv_key *keys;
	u64 *lens, id = 0;
	int status;

	keys = kmalloc_array(n, sizeof(*keys), GFP_KERNEL);
	lens = kcalloc(n + 1, sizeof(*lens), GFP_KERNEL);
	if (!keys || !lens) {
		kfree(keys);
		kfree(lens);
		return DFKV_STATUS_BUSY;
	}
	dfkv_wire_get_keys(req->payload, n, keys);
	switch (req->op) {
	case DFKV_OP_TOUCH:
		status = dfkv_op_touch(req->node, req_auth(req), keys, n,
				       req->offset);
		kfree(lens);
		lens = NULL;
		break;
	case DFKV_OP_PROBE:
		status = dfkv_op_probe(req->node, req_auth(req), keys, n, lens);
		for (i = 0; i < n; i++)
			put_unaligned_le64(lens[i], &lens[i]);
		hits = n;
		break;
	default:
		status = dfkv_op_lease(req->node, req_auth(req), req_owner(req),
				       keys, n, req->length, lens + 1, &hits,
				       &id);
		for (i = 1; i <= hits; i++)
			put_unaligned_le64(lens[i], &lens[i]);
		put_unaligned_le64(id, &lens[0]);
		hits++;
		break;
	}
	kfree(keys);
	if (status != DFKV_STATUS_OK) {
		kfree(lens);
		return status;
	}
	req->rsp.data = lens;
	if (lens)
		req->rsp.data_len = (u64)hits * sizeof(u64);
	return status;
}

static void exec_hello(struct dfkv_req *req)
{
	size_t len;
	u8 *buf;
	int status = dfkv_op_hello(req->node, req_auth(req), req->payload,
				   req->payload_len, &buf, &len);

	answer(req, status, 0);
	if (status == DFKV_STATUS_OK) {
		req->rsp.data = buf;
		req->rsp.data_len = len;
	}
}

/* The failure that closes the connection is answered first. */
static void exec_auth(struct dfkv_req *req)
{
	u8 *proof;

	answer(req, dfkv_op_auth(req->node, req_auth(req), req->key.tenant,
				 req->payload, req->payload_len, &proof,
				 &req->rsp.close), 0);
	if (proof) {
		req->rsp.data = proof;
		req->rsp.data_len = DFKV_AUTH_PROOF_LEN;
	}
}

static void exec_stats(struct dfkv_req *req)
{
	size_t len;
	char *text;

	answer(req, dfkv_op_stats(req->node, req_auth(req), &text, &len), 0);
	req->rsp.data = text;
	req->rsp.data_len = text ? len : 0;
}

/* Why a payload could not be had, as the reply says it. */
static int err_status(int err)
{
	switch (err) {
	case -ENOMEM:
		return DFKV_STATUS_BUSY;
	case -EFAULT:
		return -EFAULT;
	default:
		return DFKV_STATUS_IO_ERROR;
	}
}

bool dfkv_req_exec(struct dfkv_req *req, int err)
{
	struct dfkv_node *node = req->node;

	if (req->decided)
		goto out;
	if (req->op == DFKV_OP_PUT) {
		if (!exec_put(req, err))
			return false;
		goto out;
	}
	if (err) {
		answer(req, err_status(err), 0);
		goto out;
	}
	switch (req->op) {
	case DFKV_OP_GET:
		if (!exec_get(req))
			return false;
		break;
	case DFKV_OP_EXIST:
		exec_exist(req);
		break;
	case DFKV_OP_REMOVE:
		answer(req, dfkv_op_remove(node, req_auth(req), &req->key), 0);
		break;
	case DFKV_OP_STATS:
		exec_stats(req);
		break;
	case DFKV_OP_RELEASE:
		answer(req, dfkv_op_release(node, req_owner(req), req->offset),
		       0);
		break;
	case DFKV_OP_HELLO:
		exec_hello(req);
		break;
	case DFKV_OP_AUTH:
		exec_auth(req);
		break;
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE:
		answer(req, req->keys ? exec_keys_native(req) :
		       exec_keys_wire(req), 0);
		break;
	default:
		answer(req, DFKV_STATUS_INVALID, 0);
		break;
	}
out:
	queue_response(req);
	return true;
}

bool dfkv_req_resume(struct dfkv_req *req)
{
	u64 stored, n;
	int status;

	if (req->op == DFKV_OP_GET) {
		status = dfkv_op_get_resume(req->node, req->offset, req->length,
					    req->cap, &req->rd, &req->waiter,
					    &stored, &n);
		if (!get_answer(req, status, stored, n))
			return false;
		queue_response(req);
		return true;
	}
	if (req->put.flushing) {
		status = dfkv_op_put_flushed(req->node, &req->put);
		if (status == -EINPROGRESS)
			return false;
	} else if (READ_ONCE(req->put.e->done)) {
		/* Pairs with the entry lock its leader set done under. */
		status = dfkv_op_put_result(req->node, &req->put);
	} else {
		return false;
	}
	answer(req, status, req->put.stored_len);
	queue_response(req);
	return true;
}

void dfkv_req_fail(struct dfkv_req *req, int status)
{
	answer(req, status, 0);
	queue_response(req);
}

void dfkv_req_sent(struct dfkv_req *req, bool ok)
{
	if (ok) {
		dfkv_op_get_sent(req->node, &req->rd, req->rsp.data_len);
		return;
	}
	dfkv_op_get_end(req->node, &req->rd, DFKV_STATUS_IO_ERROR);
	req->rsp.status = DFKV_STATUS_IO_ERROR;
	req->rsp.data_len = 0;
}

bool dfkv_req_lend(struct dfkv_req *req, struct dfkv_read *lent)
{
	if (!req->rd.e || !dfkv_node_enter(req->node))
		return false;
	dfkv_op_get_lend(&req->rd, lent);
	return true;
}

void dfkv_req_lent_back(struct dfkv_node *node, struct dfkv_read *lent)
{
	dfkv_op_get_lent_back(lent);
	dfkv_node_exit(node);
}

bool dfkv_req_read(struct dfkv_req *req, struct iov_iter *to, int fail)
{
	if (dfkv_op_get_copy_out(req->node, &req->rd, req->offset,
				 req->rsp.data_len, to, fail))
		return true;
	req->rsp.status = fail;
	req->rsp.data_len = 0;
	return false;
}

unsigned int dfkv_req_map(struct dfkv_req *req, u64 off, size_t len,
			  struct bio_vec *bv, unsigned int max, size_t *mapped)
{
	if (req->rd.e)
		return dfkv_op_get_map(&req->rd, req->offset + off, len, bv,
				       max, mapped);
	return dfkv_op_put_map(&req->put, off, len, bv, max, mapped);
}

bool dfkv_req_copy_in(struct dfkv_req *req, struct iov_iter *from)
{
	return dfkv_op_put_copy_in(&req->put, req->payload_len, from);
}

/* A request that entered its node ends: its trace and latency. */
static void req_account(struct dfkv_req *req)
{
	u64 ns = ktime_get_ns() - req->start_ns;
	u8 t = req->ops->transport;

	trace_dfkv_req_end(req->node->name, req->op, &req->key, req_moved(req),
			   req->rsp.status, t, ns);
	if (req->op == DFKV_OP_GET || req->op == DFKV_OP_PUT)
		dfkv_stats_lat(&req->node->stats,
			       dfkv_stats_lat_of(req->op, t), ns);
}

void dfkv_req_done(struct dfkv_req *req)
{
	struct dfkv_node *node = req->node;
	struct dfkv_peer *peer;

	if (req->in_op)
		req_account(req);
	recv_release(req);
	if (req->put.e && req->put.leader && !req->put.flushing)
		dfkv_op_put_end(node, &req->put, -EIO);
	else if (req->put.e)
		dfkv_op_put_abandon(&req->put, &req->waiter);
	if (req->rd.e)
		dfkv_op_get_abandon(node, &req->rd, &req->waiter);
	dfkv_op_stage_done(req->peer, req->staged);
	kfree(req->rx_buf);
	kfree(req->rsp.data);
	if (req->in_op)
		dfkv_node_exit(node);

	/* Ready for the next request, from the same peer. */
	peer = req->peer;
	dfkv_req_init(req, req->sess, req->ops);
	req->peer = peer;
}

/* ------------------------------------------ requests in the caller's task */

/* The caller's task waits for its reply: nothing to queue or unpark. */
static const struct dfkv_req_ops local_ops = {};

void dfkv_req_init_local(struct dfkv_req *req, struct dfkv_sess *sess, u8 op)
{
	dfkv_req_init(req, sess, &local_ops);
	req->op = op;
}

/* One run of lo with the buffer in @it (ready, or empty). */
static int local_run(struct dfkv_sess *sess, struct dfkv_req_local *lo,
		     struct iov_iter *it)
{
	struct dfkv_req req;
	int err = 0;

	dfkv_req_init_local(&req, sess, lo->op);
	req.key = lo->key;
	req.offset = lo->offset;
	req.length = lo->length;
	req.cap = iov_iter_count(it);
	if (lo->op == DFKV_OP_PUT)
		req.payload_len = lo->length;
	if (!dfkv_req_begin(&req)) {
		dfkv_req_done(&req);
		return -ENODEV;
	}
	if (req.rx == DFKV_REQ_RX_PUT && !dfkv_req_copy_in(&req, it))
		err = -EFAULT;
	dfkv_req_exec(&req, err);	/* a follower, a cold GET sleeps here */
	if (req.rd.e)
		dfkv_req_read(&req, it, -EFAULT);
	lo->stored_len = req.rsp.stored_len;
	lo->data_len = req.rsp.data_len;
	err = req.rsp.status;
	dfkv_req_done(&req);
	return err;
}

/* Run lo with len bytes of the caller's buffer made ready, or none. */
static int local_run_buf(struct dfkv_sess *sess, struct dfkv_req_local *lo,
			 u64 len, bool buf)
{
	struct iov_iter none, *it = &none;
	int ret;

	iov_iter_kvec(&none, ITER_SOURCE, NULL, 0, 0);
	if (buf) {
		ret = lo->buf_get(lo, len, &it);
		if (ret)
			return ret;
	}
	ret = local_run(sess, lo, it);
	if (buf)
		lo->buf_put(lo);
	return ret;
}

/* A PUT the node refuses for its length alone needs no buffer. */
static bool local_put_len_ok(struct dfkv_node *node, u64 len)
{
	bool ok;

	if (!dfkv_node_enter(node))
		return true;	/* the op says so */
	ok = len && len <= READ_ONCE(node->max_value);
	dfkv_node_exit(node);
	return ok;
}

/*
 * A GET's buffer holds what its range can fill at a look taken first;
 * should the value change in between (a REMOVE and a longer PUT of the
 * key), a TOO_LARGE the caller's cap would not have given is tried again.
 */
static int local_get(struct dfkv_sess *sess, struct dfkv_req_local *lo)
{
	struct dfkv_node *node = sess->node;
	int tries, ret = 0;

	for (tries = 0; tries < 3; tries++) {
		u64 want;

		if (!dfkv_node_enter(node))
			return -ENODEV;
		want = dfkv_op_get_want(node, &sess->auth, &lo->key,
					lo->offset, lo->length);
		dfkv_node_exit(node);
		want = min(want, lo->cap);
		ret = local_run_buf(sess, lo, want, true);
		if (ret != DFKV_STATUS_TOO_LARGE || want >= lo->cap)
			break;
	}
	return ret;
}

int dfkv_req_run_local(struct dfkv_sess *sess, struct dfkv_req_local *lo)
{
	switch (lo->op) {
	case DFKV_OP_GET:
		return local_get(sess, lo);
	case DFKV_OP_PUT:
		return local_run_buf(sess, lo, lo->length,
				     local_put_len_ok(sess->node, lo->length));
	default:
		return local_run_buf(sess, lo, 0, false);
	}
}
