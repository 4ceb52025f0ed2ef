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
 * Transports only move bytes: the payload into req->put.e or req->rx_buf,
 * the reply of req->rsp out, GET data from the pinned req->rd.e.
 */
#ifndef _DFKV_REQ_H
#define _DFKV_REQ_H

#include <linux/types.h>
#include <linux/uio.h>
#include <linux/dfkv.h>

#include "store.h"

struct dfkv_node;
struct dfkv_auth;
struct dfkv_lease_owner;
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
	struct dfkv_node *node;
	struct dfkv_auth *auth;
	struct dfkv_lease_owner *owner;
	const struct dfkv_req_ops *ops;
	/* admit_recv: the caller's peer address, set after dfkv_req_init() */
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
	void *rx_buf;		/* a payload to receive (DFKV_REQ_RX_BUF) */
	struct dfkv_put put;	/* a PUT's entry, while put.e */
	struct dfkv_read rd;	/* a GET's pinned entry, while rd.e */

	struct dfkv_req_rsp rsp;
};

/* Once per connection, command or ioctl. */
void dfkv_req_init(struct dfkv_req *req, struct dfkv_node *node,
		   struct dfkv_auth *auth, struct dfkv_lease_owner *owner,
		   const struct dfkv_req_ops *ops);

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
