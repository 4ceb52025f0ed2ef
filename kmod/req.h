/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One request, whatever carried it (the nvmet_req model).  The TCP
 * connection, the RDMA command and the /dev/dfkv ioctl each embed a
 * struct dfkv_req, fill in what they decoded and hand it to the executor,
 * which runs the op's rules (ops.c) in three steps:
 *
 *   dfkv_req_begin()  the request is known, its payload not yet: enter the
 *                     node; a PUT is admitted and reserves its entry, an
 *                     op with a payload to receive gets a buffer.  req->rx
 *                     says where the payload goes.
 *   dfkv_req_exec()   the payload is in (or could not be had): run the op
 *                     and queue the reply (ops->queue_response()), or park
 *                     a PUT follower until its leader finished, a leader
 *                     until the flush its commit waits for ended, a GET
 *                     until its value's cold read ended (ops->unpark(),
 *                     then dfkv_req_resume()).
 *   dfkv_req_done()   the reply went out or never will: release what the
 *                     request still holds; the req serves the next one.
 *
 * Transports only move bytes, and reach the data only through the
 * functions below (the nvmet_req_alloc_sgls model): the payload into the
 * pages dfkv_req_map() gives (a PUT) or req->rx_buf, the reply of
 * req->rsp out, GET data from the pages dfkv_req_map() gives.  What a
 * request does for its peer across requests (grants, leases) is its
 * session's (sess.h).
 */
#ifndef _DFKV_REQ_H
#define _DFKV_REQ_H

#include <linux/types.h>
#include <linux/uio.h>
#include <linux/dfkv.h>

#include "store.h"
#include "sess.h"

struct dfkv_node;
struct dfkv_req;

struct dfkv_req_ops {
	/*
	 * The reply is in req->rsp (for a GET with data, req->rd.e is
	 * pinned until dfkv_req_sent() or dfkv_req_read()): send it.  NULL
	 * for a caller that runs the request in its own task and reads the
	 * reply once dfkv_req_exec() returned.
	 */
	void (*queue_response)(struct dfkv_req *req);
	/*
	 * A parked request may go on (a PUT follower's leader finished, a
	 * leader's flush or a GET's cold read ended): called under the
	 * entry's lock, it may only queue the work that calls
	 * dfkv_req_resume().  NULL: the caller's own task sleeps for them
	 * instead (killably for a flush or a cold read).
	 */
	void (*unpark)(struct dfkv_req *req);
	/*
	 * PUT payloads arrive over time from a peer: a leader gets RAM for
	 * one part of its value at a time, under the receive caps
	 * (dfkv_op_recv_admit()), and asks for the next with
	 * dfkv_req_recv_more() once it is filled.  Else the whole value's
	 * RAM is reserved at dfkv_req_begin().
	 */
	bool admit_recv;
	/* enum dfkv_hist_transport: whose latency histograms and traces */
	u8 transport;
};

/* Where dfkv_req_begin() wants the request's payload. */
enum dfkv_req_rx {
	DFKV_REQ_RX_NONE,	/* nowhere: drain or ignore it */
	DFKV_REQ_RX_PUT,	/* into the PUT leader's entry, req->put.e */
	DFKV_REQ_RX_BUF,	/* into req->rx_buf, payload_len bytes */
};

/* The reply, as the executor decided it. */
struct dfkv_req_rsp {
	int status;		/* enum dfkv_status, or -errno (ioctl only) */
	u64 stored_len;
	u64 data_len;		/* GET: the range; else bytes at data */
	void *data;		/* kmalloc'd, freed by dfkv_req_done() */
	u32 nr_hits;		/* native key lists: lens filled */
	u64 lease_id;		/* native LEASE */
	bool close;		/* close the connection after this reply */
};

struct dfkv_req {
	/* the caller, set by dfkv_req_init() */
	struct dfkv_sess *sess;
	struct dfkv_node *node;		/* the session's */
	const struct dfkv_req_ops *ops;
	/*
	 * The caller's peer address, set after dfkv_req_init(): the receive
	 * caps (admit_recv) and the stages it holds count against it.
	 */
	struct dfkv_peer *peer;
	struct dfkv_waiter waiter;	/* while parked */

	/* the request, as decoded by the transport */
	u8 op;
	struct dfkv_key key;
	u64 offset;		/* GET range; RELEASE: the lease id; TOUCH: walk */
	u64 length;		/* GET range; LEASE: ttl_ms */
	u64 payload_len;
	u64 cap;		/* GET: most data the reply can carry */
	const void *payload;	/* HELLO, AUTH or a wire key list, if inline */
	const struct dfkv_key *keys;	/* a native key list (ioctl) */
	u64 *lens;		/* its results, nr_keys of them */
	u32 nr_keys;

	/* executor state */
	enum dfkv_req_rx rx;
	bool in_op;		/* holds a dfkv_node_enter() */
	bool decided;		/* rsp is set: nothing more to run */
	u64 start_ns;		/* dfkv_req_begin(), for its latency */
	u64 admitted;		/* dfkv_op_recv_admit()ted bytes */
	u64 staged;		/* dfkv_op_stage_admit()ted bytes */
	void *rx_buf;		/* a payload to receive (DFKV_REQ_RX_BUF) */
	struct dfkv_put put;	/* a PUT's entry, while put.e */
	struct dfkv_read rd;	/* a GET's pinned entry, while rd.e */

	struct dfkv_req_rsp rsp;
};

/* Once per connection, command or ioctl; the session is bound. */
void dfkv_req_init(struct dfkv_req *req, struct dfkv_sess *sess,
		   const struct dfkv_req_ops *ops);
/*
 * A request a caller runs in its own task (/dev/dfkv's keyed ops): no
 * ops, the caller reads req->rsp once dfkv_req_exec() returned.
 */
void dfkv_req_init_local(struct dfkv_req *req, struct dfkv_sess *sess, u8 op);

/*
 * Start a decoded request.  False when the node is going away (the reply
 * is BUSY); dfkv_req_exec() then only queues it.
 */
bool dfkv_req_begin(struct dfkv_req *req);
/*
 * admit_recv: a PUT leader's payload filled req->put.reserved bytes, short
 * of its whole value: RAM for its next part.  False when the node or the
 * peer is at its cap or the arena is full: the PUT is aborted and its
 * reply decided (req->rx is DFKV_REQ_RX_NONE, the rest of the payload
 * the transport's to drain).
 */
bool dfkv_req_recv_more(struct dfkv_req *req);
/*
 * The payload is in (err 0), or is not: -EIO (a transfer failed, answered
 * IO_ERROR), -ENOMEM (BUSY), -EFAULT (the caller's memory, ioctl only).
 * Runs the op and queues its reply; false when it parked (a PUT
 * follower, a leader waiting for the disk, a GET whose value is being
 * read from disk).  Without ops->unpark a caller killed while waiting
 * for the disk gets -EINTR.
 */
bool dfkv_req_exec(struct dfkv_req *req, int err);
/*
 * A parked request was woken (ops->unpark()): queue its reply; false if
 * what it waits for has not happened (a wakeup of the transport's own).
 */
bool dfkv_req_resume(struct dfkv_req *req);
/*
 * The request's data as pages, for a transport to move: from byte off of
 * a GET reply's range (its pinned entry), or of a PUT leader's value as
 * far as its entry has RAM yet (req->put.reserved).  Fills at most max
 * segments covering at most len bytes and returns their number, *mapped
 * the bytes they cover (0: nothing there).
 */
unsigned int dfkv_req_map(struct dfkv_req *req, u64 off, size_t len,
			  struct bio_vec *bv, unsigned int max, size_t *mapped);
/*
 * A PUT leader's whole value from @from, which holds payload_len bytes
 * (an inline payload): false when fewer came.
 */
bool dfkv_req_copy_in(struct dfkv_req *req, struct iov_iter *from);

/*
 * One PUT, GET, EXIST or REMOVE run in the caller's own task for a
 * caller whose buffer must be made ready (its pages faulted in and
 * referenced) before the request enters the node (/dev/dfkv): a buffer
 * that faults slowly then holds no node, reservation or pin.  The
 * executor sizes the buffer from the op: a PUT the node refuses for its
 * length alone and EXIST/REMOVE get none, a GET only what its range can
 * fill now (0 for a tenant the session may not act for, so a buffer's
 * fault tells nothing about another tenant's key), and is run again
 * with more should the value have grown in between.
 */
struct dfkv_req_local {
	u8 op;
	struct dfkv_key key;
	u64 offset;
	u64 length;		/* GET range; PUT: the value's length */
	u64 cap;		/* the bytes the caller's buffer holds */
	/* make len bytes of the caller's buffer ready, *iter over them */
	int (*buf_get)(struct dfkv_req_local *lo, u64 len,
		       struct iov_iter **iter);
	void (*buf_put)(struct dfkv_req_local *lo);
	/* the reply */
	u64 stored_len;
	u64 data_len;
};

/* The reply's status, or a negative errno (-ENODEV: node going away). */
int dfkv_req_run_local(struct dfkv_sess *sess, struct dfkv_req_local *lo);

/* Answer status without running anything (a frame that does not parse). */
void dfkv_req_fail(struct dfkv_req *req, int status);

/*
 * GET data: the range was sent from req->rd.e by the transport's own
 * means (ok), or could not be (the reply becomes IO_ERROR); unpins.
 */
void dfkv_req_sent(struct dfkv_req *req, bool ok);
/*
 * GET data: copy the range into @to and unpin; on a short copy the reply
 * becomes @fail (a status, or -EFAULT) without data.  Returns whether the
 * copy was whole.
 */
bool dfkv_req_read(struct dfkv_req *req, struct iov_iter *to, int fail);
/*
 * GET data lent past the reply (zero-copy: the network stack holds the
 * pages until it frees its last buffer of them): another pin on the
 * reply's entry, in @lent, and the node entered, so neither the bytes
 * nor the node go while the stack holds them.  False (send by copy): no
 * GET data, or the node is being deleted.  dfkv_req_lent_back() gives
 * both back, in process context.
 */
bool dfkv_req_lend(struct dfkv_req *req, struct dfkv_read *lent);
void dfkv_req_lent_back(struct dfkv_node *node, struct dfkv_read *lent);

/*
 * The reply went out, or the transport gives the request up: release what
 * it holds (an unfinished PUT is aborted, a parked request unparked, a
 * pinned GET entry unpinned, buffers freed, the node left).  A parked
 * request's unpark may have raced: the transport flushes its own work
 * after this.
 */
void dfkv_req_done(struct dfkv_req *req);

#endif /* _DFKV_REQ_H */
