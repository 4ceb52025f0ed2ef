// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel TCP server of wire epoch 6 (SPEC.md section 2).
 *
 * Listeners belong to a node and live in its network namespace; listener.c
 * keeps the node's listeners and connections and the order of their
 * shutdown, this file their sockets.  No thread per connection: the
 * sockets' data_ready/write_space/state_change callbacks queue the
 * connection's io work on dfkv_tcp_wq, which makes as much non-blocking
 * progress as the socket allows and returns.  A connection handles one
 * request at a time, receiving the next only once the reply is sent,
 * which keeps replies in strict FIFO order while the client pipelines.
 * PUT payloads are received straight into the store's pages and GET data
 * is sent from them (bio_vec iterators, one copy into the socket buffer,
 * no staging buffer).
 *
 * A PUT follower does not wait in the worker: the connection parks on the
 * leader's entry (reading nothing more) and its io work is queued again
 * when the leader finished.  A frame must arrive whole, payload included,
 * within first_request_ms of its first byte, and the RAM that PUTs still
 * receiving hold is bounded per node (dfkv_op_recv_admit()), so peers
 * that send headers and drip pin neither workers nor memory.
 *
 * A connection dies through conn_kill(): the first caller queues its
 * release work, which detaches the socket callbacks, waits for the io
 * work, finishes the request in flight (an unfinished PUT is aborted, a
 * pinned GET entry unpinned, leases dropped) and frees it.  Node shutdown
 * closes every listener, kills every connection and waits for their
 * release works before the node's operations are drained.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/net.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <asm/unaligned.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/genetlink.h>

#include "tcp.h"
#include "rdma.h"
#include "node.h"
#include "ops.h"
#include "wire.h"

/* bio_vecs mapped per socket call. */
#define CONN_BVECS	64
/* Progress steps of one io work run before yielding the CPU. */
#define CONN_BUDGET	64

static struct workqueue_struct *dfkv_tcp_wq;

struct dfkv_tcp_listener {
	struct dfkv_listener base;
	struct socket *sock;
	struct work_struct accept_work;
	void (*saved_data_ready)(struct sock *sk);
};

enum conn_state {
	CONN_RX_HDR,		/* reading a request prefix */
	CONN_RX_PUT,		/* PUT payload into the reserved entry */
	CONN_RX_BUF,		/* key list, HELLO or AUTH payload into rx_buf */
	CONN_RX_DISCARD,	/* payload nobody needs */
	CONN_PARKED,		/* PUT follower waiting for its leader */
	CONN_TX,		/* sending the reply */
};

struct dfkv_tcp_conn {
	struct dfkv_conn_core core;	/* in dfkv_tcp_node.ls */
	struct dfkv_node *node;
	struct socket *sock;
	struct work_struct io_work;
	struct delayed_work deadline_work;
	unsigned long accepted;		/* jiffies */
	unsigned long frame_start;	/* jiffies, first byte of a frame */
	unsigned long last_active;	/* jiffies */
	bool got_request;
	bool in_op;			/* holds a dfkv_node_enter() */
	bool close_after_reply;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	struct dfkv_lease_owner owner;
	struct dfkv_auth auth;

	enum conn_state state;
	struct dfkv_wire_rx rx;		/* the frame being received */
	u8 op;
	struct dfkv_key key;
	u64 offset;
	u64 length;
	void *rx_buf;
	struct dfkv_put put;
	u64 admitted;			/* dfkv_op_recv_admit()ted bytes */
	struct dfkv_put_waiter waiter;	/* while CONN_PARKED */

	u8 rhdr[DFKV_RESP_PREFIX_LEN];
	size_t rhdr_sent;
	struct dfkv_read rd;		/* pinned GET entry, if rd.e */
	u64 tx_off;			/* GET: value offset of the range */
	u64 tx_len;
	u64 tx_sent;
	void *tx_buf;			/* kmalloc'd reply data */
	struct bio_vec bv[CONN_BVECS];
};

static void conn_kill(struct dfkv_tcp_conn *c)
{
	dfkv_conn_kill(&c->core);
}

static void conn_queue(struct dfkv_tcp_conn *c)
{
	if (!dfkv_conn_dead(&c->core))
		queue_work(dfkv_tcp_wq, &c->io_work);
}

/* Socket callbacks: run in softirq context, only queue work. */
static void conn_data_ready(struct sock *sk)
{
	struct dfkv_tcp_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c)
		conn_queue(c);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void conn_write_space(struct sock *sk)
{
	struct dfkv_tcp_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c && sk_stream_is_writeable(sk)) {
		clear_bit(SOCK_NOSPACE, &sk->sk_socket->flags);
		conn_queue(c);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void conn_state_change(struct sock *sk)
{
	struct dfkv_tcp_conn *c;

	read_lock_bh(&sk->sk_callback_lock);
	c = sk->sk_user_data;
	if (c && sk->sk_state != TCP_ESTABLISHED)
		conn_kill(c);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* ------------------------------------------------------------ replies */

static void reply_start(struct dfkv_tcp_conn *c, int status, u64 stored_len,
			u64 data_len)
{
	dfkv_wire_put_resp(c->rhdr, DFKV_EPOCH_TCP, status, stored_len,
			   data_len);
	c->rhdr_sent = 0;
	c->tx_len = data_len;
	c->tx_sent = 0;
	c->state = CONN_TX;
}

/* Reply with data from a kmalloc'd buffer the connection now owns. */
static void reply_buf(struct dfkv_tcp_conn *c, int status, u64 stored_len,
		      void *buf, size_t len)
{
	c->tx_buf = buf;
	reply_start(c, status, stored_len, buf ? len : 0);
}

/* A frame the stream cannot carry on from: answer INVALID, then close. */
static void reply_fatal(struct dfkv_tcp_conn *c)
{
	atomic64_inc(&c->node->tcp.proto_errors);
	c->close_after_reply = true;
	reply_start(c, DFKV_STATUS_INVALID, 0, 0);
}

static int sock_send(struct dfkv_tcp_conn *c, struct msghdr *msg, size_t len)
{
	int ret;

	msg->msg_flags |= MSG_DONTWAIT | MSG_NOSIGNAL;
	ret = sock_sendmsg(c->sock, msg);
	if (ret == -EAGAIN)
		return 0;
	if (ret < 0)
		return ret;
	return ret ? ret : -EPIPE;
}

/* Send what the socket takes; 1 when the reply is complete. */
static int conn_send(struct dfkv_tcp_conn *c, bool *progress)
{
	struct msghdr msg = {};
	int ret;

	while (c->rhdr_sent < sizeof(c->rhdr)) {
		struct kvec kv = {
			.iov_base = c->rhdr + c->rhdr_sent,
			.iov_len = sizeof(c->rhdr) - c->rhdr_sent,
		};

		msg.msg_flags = c->tx_len ? MSG_MORE : 0;
		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, kv.iov_len);
		ret = sock_send(c, &msg, kv.iov_len);
		if (ret <= 0)
			return ret;
		c->last_active = jiffies;
		c->rhdr_sent += ret;
		*progress = true;
	}
	while (c->tx_sent < c->tx_len) {
		u64 left = c->tx_len - c->tx_sent;

		memset(&msg, 0, sizeof(msg));
		if (c->tx_buf) {
			struct kvec kv = {
				.iov_base = c->tx_buf + c->tx_sent,
				.iov_len = left,
			};

			iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, left);
		} else {
			size_t mapped;
			unsigned int nr;

			nr = dfkv_entry_map(c->rd.e, c->tx_off + c->tx_sent,
					    min_t(u64, left, MAX_RW_COUNT),
					    c->bv, CONN_BVECS, &mapped);
			if (!mapped)
				return -EIO;
			if (mapped < left)
				msg.msg_flags = MSG_MORE;
			iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, c->bv, nr,
				      mapped);
		}
		ret = sock_send(c, &msg, left);
		if (ret <= 0)
			return ret;
		c->last_active = jiffies;
		c->tx_sent += ret;
		*progress = true;
	}
	return 1;
}

/* The reply went out: release what the request held, expect the next. */
static void request_done(struct dfkv_tcp_conn *c)
{
	if (c->rd.e) {
		dfkv_store_sent(&c->rd, c->tx_len);
		dfkv_op_get_end(c->node, &c->rd, DFKV_STATUS_OK);
	}
	kfree(c->tx_buf);
	c->tx_buf = NULL;
	kfree(c->rx_buf);
	c->rx_buf = NULL;
	if (c->in_op) {
		dfkv_node_exit(c->node);
		c->in_op = false;
	}
	dfkv_wire_rx_next(&c->rx);
	c->state = CONN_RX_HDR;
}

/* ---------------------------------------------------------- execution */

/* The payload of an admitted PUT is in, or will never be. */
static void recv_release(struct dfkv_tcp_conn *c)
{
	if (c->admitted)
		dfkv_op_recv_done(c->node, c->admitted);
	c->admitted = 0;
}

/* The leader finished: run the parked follower's connection again. */
static void conn_unpark(struct dfkv_put_waiter *w)
{
	conn_queue(container_of(w, struct dfkv_tcp_conn, waiter));
}

static void exec_keys(struct dfkv_tcp_conn *c)
{
	size_t len;
	void *data;
	int status;

	status = dfkv_op_keys(c->node, &c->auth, &c->owner, c->op, c->rx_buf,
			      c->rx.payload_len / DFKV_BLOCK_KEY_LEN, c->length,
			      &data, &len);
	reply_buf(c, status, 0, data, len);
}

static void exec_hello(struct dfkv_tcp_conn *c)
{
	u8 *buf;
	int status = dfkv_op_hello(c->node, &c->auth, &buf);

	reply_buf(c, status, 0, status == DFKV_STATUS_OK ? buf : NULL,
		  DFKV_HELLO_REPLY_LEN);
}

static void exec_auth(struct dfkv_tcp_conn *c)
{
	bool close;

	reply_start(c, dfkv_op_auth(c->node, &c->auth, c->key.tenant,
				    c->rx_buf, c->rx.payload_len, &close),
		    0, 0);
	if (close)
		c->close_after_reply = true;
}

/* The request (and its payload, if any) is in: run it, start the reply. */
static void exec_request(struct dfkv_tcp_conn *c)
{
	struct dfkv_node *node = c->node;
	u64 stored = 0, n = 0;
	size_t len;
	char *text;
	int status;

	switch (c->op) {
	case DFKV_OP_PUT:
		if (!c->put.leader &&
		    dfkv_store_put_park(&c->put, &c->waiter)) {
			c->state = CONN_PARKED;
			break;
		}
		if (c->put.leader) {
			recv_release(c);
			status = dfkv_op_put_end(node, &c->put, true);
		} else {
			status = dfkv_op_put_result(node, &c->put);
		}
		reply_start(c, status, c->put.stored_len, 0);
		break;
	case DFKV_OP_GET:
		status = dfkv_op_get_begin(node, &c->auth, &c->key, c->offset,
					   c->length, U64_MAX, &c->rd, &stored,
					   &n);
		if (status != DFKV_STATUS_OK)
			c->rd.e = NULL;
		c->tx_off = c->offset;
		reply_start(c, status, stored, n);
		break;
	case DFKV_OP_EXIST:
		status = dfkv_op_exist(node, &c->auth, &c->key, &stored);
		reply_start(c, status, stored, 0);
		break;
	case DFKV_OP_REMOVE:
		reply_start(c, dfkv_op_remove(node, &c->auth, &c->key), 0, 0);
		break;
	case DFKV_OP_STATS:
		status = dfkv_op_stats(node, &text, &len);
		reply_buf(c, status, 0, text, len);
		break;
	case DFKV_OP_RELEASE:
		reply_start(c, dfkv_op_release(node, &c->owner, c->offset), 0,
			    0);
		break;
	case DFKV_OP_HELLO:
		exec_hello(c);
		break;
	case DFKV_OP_AUTH:
		exec_auth(c);
		break;
	default:
		exec_keys(c);
		break;
	}
}

/* The request's payload is all in (or there was none): act on it. */
static void payload_done(struct dfkv_tcp_conn *c)
{
	if (c->state != CONN_RX_DISCARD || c->put.e)
		exec_request(c);	/* PUT leader or follower, others */
	else
		reply_start(c, c->length, c->put.stored_len, 0);
}

/* A whole prefix is in: check it and decide how to take the payload. */
static void decode_request(struct dfkv_tcp_conn *c)
{
	enum dfkv_wire_rx_event ev;
	struct dfkv_wire_req req;
	u64 plen;
	int status;

	c->got_request = true;
	if (dfkv_wire_parse_req(c->rx.hdr, DFKV_EPOCH_TCP,
				READ_ONCE(c->node->max_value), &req)) {
		reply_fatal(c);
		return;
	}
	c->op = req.op;
	c->key = req.key;
	c->offset = req.offset;
	c->length = req.length;
	plen = req.payload_len;
	ev = dfkv_wire_rx_payload(&c->rx, plen);
	if (!dfkv_node_enter(c->node)) {
		c->close_after_reply = true;
		reply_start(c, DFKV_STATUS_BUSY, 0, 0);
		return;
	}
	c->in_op = true;

	if (c->op == DFKV_OP_PUT) {
		if (dfkv_op_recv_admit(c->node, plen)) {
			c->admitted = plen;
			status = dfkv_op_put_begin(c->node, &c->auth, &c->key,
						   plen, &c->put);
			if (status != DFKV_STATUS_OK || !c->put.leader)
				recv_release(c);
		} else {
			status = DFKV_STATUS_BUSY;
			c->put.e = NULL;
		}
		if (status == DFKV_STATUS_OK && c->put.leader) {
			c->state = CONN_RX_PUT;
		} else if (status == DFKV_STATUS_OK && c->put.e) {
			c->state = CONN_RX_DISCARD;	/* follower */
		} else {
			c->put.e = NULL;
			c->length = status;		/* reply once drained */
			c->state = CONN_RX_DISCARD;
		}
	} else if (plen) {
		struct mem_cgroup *old = dfkv_store_charge(&c->node->store);

		c->rx_buf = kmalloc(plen, GFP_KERNEL_ACCOUNT);
		set_active_memcg(old);
		c->state = c->rx_buf ? CONN_RX_BUF : CONN_RX_DISCARD;
		c->length = DFKV_STATUS_BUSY;	/* if discarded */
	} else {
		c->state = CONN_RX_BUF;
	}
	if (ev == DFKV_RX_FRAME)
		payload_done(c);
}

/* ------------------------------------------------------------ receive */

static int sock_recv(struct dfkv_tcp_conn *c, struct msghdr *msg)
{
	int ret = sock_recvmsg(c->sock, msg, MSG_DONTWAIT | MSG_NOSIGNAL);

	if (ret == -EAGAIN)
		return 0;
	if (ret == 0)
		return -ECONNRESET;	/* peer closed */
	if (ret > 0)
		c->last_active = jiffies;
	return ret;
}

static int recv_kvec(struct dfkv_tcp_conn *c, void *buf, size_t len)
{
	struct kvec kv = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {};

	iov_iter_kvec(&msg.msg_iter, ITER_DEST, &kv, 1, len);
	return sock_recv(c, &msg);
}

/* Make receive progress; 0 when the socket has nothing more now. */
static int conn_recv(struct dfkv_tcp_conn *c)
{
	u64 left = dfkv_wire_rx_want(&c->rx);
	struct msghdr msg = {};
	u8 scratch[256];
	int ret;

	switch (c->state) {
	case CONN_RX_HDR:
		ret = recv_kvec(c, c->rx.hdr + c->rx.hdr_got, left);
		if (ret <= 0)
			return ret;
		if (!c->rx.hdr_got)
			c->frame_start = jiffies;
		if (dfkv_wire_rx_got(&c->rx, ret) == DFKV_RX_PREFIX)
			decode_request(c);
		return ret;
	case CONN_RX_PUT: {
		size_t mapped;
		unsigned int nr;

		nr = dfkv_entry_map(c->put.e, c->rx.pay_got,
				    min_t(u64, left, MAX_RW_COUNT), c->bv,
				    CONN_BVECS, &mapped);
		iov_iter_bvec(&msg.msg_iter, ITER_DEST, c->bv, nr, mapped);
		ret = sock_recv(c, &msg);
		break;
	}
	case CONN_RX_BUF:
		ret = recv_kvec(c, c->rx_buf + c->rx.pay_got, left);
		break;
	case CONN_RX_DISCARD:
		ret = recv_kvec(c, scratch, min_t(u64, left, sizeof(scratch)));
		break;
	default:
		return 0;
	}
	if (ret <= 0)
		return ret;
	if (dfkv_wire_rx_got(&c->rx, ret) == DFKV_RX_FRAME)
		payload_done(c);
	return ret;
}

static void conn_io_work(struct work_struct *work)
{
	struct dfkv_tcp_conn *c = container_of(work, struct dfkv_tcp_conn,
					       io_work);
	int budget = CONN_BUDGET, ret;

	while (!dfkv_conn_dead(&c->core) && budget--) {
		bool progress = false;

		if (c->state == CONN_PARKED) {
			int status;

			/* Pairs with the entry lock its leader set done under. */
			if (!READ_ONCE(c->put.e->done))
				return;
			status = dfkv_op_put_result(c->node, &c->put);
			reply_start(c, status, c->put.stored_len, 0);
		}
		if (c->state == CONN_TX) {
			ret = conn_send(c, &progress);
			if (ret == 1) {
				request_done(c);
				if (c->close_after_reply)
					ret = -ECONNRESET;
				progress = true;
			}
		} else {
			ret = conn_recv(c);
			progress = ret > 0;
		}
		if (ret < 0) {
			conn_kill(c);
			return;
		}
		if (!progress)
			return;
	}
	if (!dfkv_conn_dead(&c->core))
		queue_work(dfkv_tcp_wq, &c->io_work);	/* yield, go on */
}

/* Receiving a frame from its first byte to the end of its payload. */
static bool conn_in_frame(struct dfkv_tcp_conn *c)
{
	switch (READ_ONCE(c->state)) {
	case CONN_RX_HDR:
		return READ_ONCE(c->rx.hdr_got);
	case CONN_RX_PUT:
	case CONN_RX_BUF:
	case CONN_RX_DISCARD:
		return true;
	default:
		return false;
	}
}

/* First-request, frame and idle deadlines, checked when due. */
static void conn_deadline_work(struct work_struct *work)
{
	struct dfkv_tcp_conn *c = container_of(to_delayed_work(work),
					       struct dfkv_tcp_conn,
					       deadline_work);
	unsigned long first = msecs_to_jiffies(READ_ONCE(c->node->tcp.first_request_ms));
	unsigned long idle = msecs_to_jiffies(READ_ONCE(c->node->tcp.idle_ms));
	unsigned long now = jiffies, next = now + HZ;
	bool drop = false;

	if (first && !c->got_request) {
		drop = time_after_eq(now, c->accepted + first);
		next = c->accepted + first;
	} else if (first && conn_in_frame(c)) {
		/* A frame that started must finish, payload included. */
		drop = time_after_eq(now, c->frame_start + first);
		next = c->frame_start + first;
	} else if (idle) {
		/* Idle between requests, or a stalled payload or reply. */
		drop = time_after_eq(now, READ_ONCE(c->last_active) + idle);
		next = READ_ONCE(c->last_active) + idle;
	}
	if (drop) {
		atomic64_inc(&c->node->tcp.deadline_drops);
		conn_kill(c);
		return;
	}
	if (time_before_eq(next, now))
		next = now + HZ;
	queue_delayed_work(dfkv_tcp_wq, &c->deadline_work,
			   min_t(unsigned long, next - now, HZ));
}

static void conn_release_work(struct work_struct *work)
{
	struct dfkv_tcp_conn *c = container_of(work, struct dfkv_tcp_conn,
					       core.release_work);
	struct sock *sk = c->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = c->saved_data_ready;
	sk->sk_write_space = c->saved_write_space;
	sk->sk_state_change = c->saved_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	kernel_sock_shutdown(c->sock, SHUT_RDWR);
	cancel_work_sync(&c->io_work);
	cancel_delayed_work_sync(&c->deadline_work);

	recv_release(c);
	if (c->put.e && c->put.leader) {
		dfkv_op_put_end(c->node, &c->put, false);
	} else if (c->put.e) {
		/* A follower: no wait; an unpark racing us queued io work. */
		dfkv_store_put_unpark(&c->put, &c->waiter);
		cancel_work_sync(&c->io_work);
	}
	if (c->rd.e)
		dfkv_op_get_end(c->node, &c->rd, DFKV_STATUS_IO_ERROR);
	kfree(c->tx_buf);
	kfree(c->rx_buf);
	dfkv_lease_drop_owner(&c->node->leases, &c->owner);
	if (c->in_op)
		dfkv_node_exit(c->node);

	sock_release(c->sock);
	dfkv_listeners_conn_del(&c->node->tcp.ls, &c->core, c->node);
	dfkv_auth_destroy(&c->auth);
	kfree(c);
}

static void conn_start(struct dfkv_tcp_listener *l, struct socket *sock)
{
	struct dfkv_node *node = l->base.node;
	struct dfkv_tcp_node *tn = &node->tcp;
	struct dfkv_tcp_conn *c;
	struct sock *sk = sock->sk;
	struct mem_cgroup *old;
	int err;

	old = dfkv_store_charge(&node->store);
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	set_active_memcg(old);
	if (!c) {
		sock_release(sock);
		return;
	}
	c->sock = sock;
	c->node = node;
	dfkv_conn_core_init(&c->core, dfkv_tcp_wq, conn_release_work);
	INIT_WORK(&c->io_work, conn_io_work);
	INIT_DELAYED_WORK(&c->deadline_work, conn_deadline_work);
	INIT_LIST_HEAD(&c->waiter.node);
	c->waiter.wake = conn_unpark;
	dfkv_lease_owner_init(&c->owner);
	dfkv_auth_init(&c->auth, false);
	c->accepted = jiffies;
	c->last_active = jiffies;
	c->state = CONN_RX_HDR;

	mutex_lock(&tn->ls.lock);
	err = dfkv_listeners_conn_add(&tn->ls, &c->core, node,
				      READ_ONCE(tn->max_conns));
	if (err) {
		if (err == -EBUSY)
			atomic64_inc(&tn->refused);
		mutex_unlock(&tn->ls.lock);
		sock_release(sock);
		dfkv_auth_destroy(&c->auth);
		kfree(c);
		return;
	}
	atomic64_inc(&tn->accepts);

	tcp_sock_set_nodelay(sk);
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = c;
	/* The accepted socket inherited the listener's data_ready. */
	c->saved_data_ready = l->saved_data_ready;
	c->saved_write_space = sk->sk_write_space;
	c->saved_state_change = sk->sk_state_change;
	sk->sk_data_ready = conn_data_ready;
	sk->sk_write_space = conn_write_space;
	sk->sk_state_change = conn_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	mutex_unlock(&tn->ls.lock);

	queue_delayed_work(dfkv_tcp_wq, &c->deadline_work, HZ);
	/* Data may have arrived before the callbacks were set. */
	conn_queue(c);
}

/* ---------------------------------------------------------- listeners */

static void listener_data_ready(struct sock *sk)
{
	struct dfkv_tcp_listener *l;

	read_lock_bh(&sk->sk_callback_lock);
	l = sk->sk_user_data;
	if (l && sk->sk_state == TCP_LISTEN)
		queue_work(dfkv_tcp_wq, &l->accept_work);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void listener_accept_work(struct work_struct *work)
{
	struct dfkv_tcp_listener *l = container_of(work,
						   struct dfkv_tcp_listener,
						   accept_work);
	struct socket *sock;

	while (!kernel_accept(l->sock, &sock, O_NONBLOCK))
		conn_start(l, sock);
}

static struct dfkv_tcp_listener *to_tcp_listener(struct dfkv_listener *base)
{
	return container_of(base, struct dfkv_tcp_listener, base);
}

/* Under the listeners' lock, once the listener is sure to be added. */
static void listener_start(struct dfkv_listener *base)
{
	struct dfkv_tcp_listener *l = to_tcp_listener(base);
	struct sock *sk = l->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	l->saved_data_ready = sk->sk_data_ready;
	sk->sk_user_data = l;
	sk->sk_data_ready = listener_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
}

static void listener_free(struct dfkv_listener *base)
{
	struct dfkv_tcp_listener *l = to_tcp_listener(base);
	struct sock *sk = l->sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = l->saved_data_ready;
	write_unlock_bh(&sk->sk_callback_lock);
	cancel_work_sync(&l->accept_work);
	sock_release(l->sock);
	kfree(l);
}

static const struct dfkv_listener_ops tcp_listener_ops = {
	.kind = DFKV_LISTENER_TCP,
	.listener_start = listener_start,
	.listener_free = listener_free,
};

int dfkv_tcp_listener_add(struct dfkv_node *node, const char *addr, u16 port,
			  struct netlink_ext_ack *extack)
{
	struct dfkv_tcp_node *tn = &node->tcp;
	struct dfkv_tcp_listener *l;
	struct sockaddr_storage *ss;
	struct sock *sk;
	int err;

	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return -ENOMEM;
	INIT_WORK(&l->accept_work, listener_accept_work);
	err = dfkv_listener_init(&tn->ls, &l->base, node, addr, port, extack);
	if (err)
		goto err_free;
	ss = &l->base.addr;
	err = sock_create_kern(node->net, ss->ss_family, SOCK_STREAM,
			       IPPROTO_TCP, &l->sock);
	if (err)
		goto err_free;
	sk = l->sock->sk;
	sock_set_reuseaddr(sk);
	tcp_sock_set_nodelay(sk);
	err = kernel_bind(l->sock, (struct sockaddr *)ss,
			  ss->ss_family == AF_INET ?
			  sizeof(struct sockaddr_in) :
			  sizeof(struct sockaddr_in6));
	if (err) {
		NL_SET_ERR_MSG(extack, "cannot bind: address in use or not in this namespace");
		goto err_sock;
	}
	err = kernel_listen(l->sock, 128);
	if (err)
		goto err_sock;
	err = dfkv_listeners_add(&tn->ls, &l->base, extack);
	if (err)
		goto err_sock;
	return 0;

err_sock:
	sock_release(l->sock);
err_free:
	kfree(l);
	return err;
}

int dfkv_tcp_listener_del(struct dfkv_node *node, const char *addr, u16 port,
			  struct netlink_ext_ack *extack)
{
	return dfkv_listeners_del(&node->tcp.ls, node, addr, port, extack);
}

int dfkv_tcp_fill_listeners(struct sk_buff *skb, struct dfkv_node *node)
{
	struct nlattr *nest;
	int err;

	nest = nla_nest_start(skb, DFKV_A_LISTENERS);
	if (!nest)
		return -EMSGSIZE;
	err = dfkv_listeners_fill(skb, &node->tcp.ls);
	if (!err)
		err = dfkv_rdma_fill_listeners(skb, node);
	if (err)
		return err;
	nla_nest_end(skb, nest);
	return 0;
}

void dfkv_tcp_node_init(struct dfkv_tcp_node *tn)
{
	dfkv_listeners_init(&tn->ls, &tcp_listener_ops, &tn->nr_conns);
}

void dfkv_tcp_node_shutdown(struct dfkv_node *node)
{
	dfkv_listeners_shutdown(&node->tcp.ls);
}

int __init dfkv_tcp_init(void)
{
	dfkv_tcp_wq = alloc_workqueue("dfkv_tcp", WQ_MEM_RECLAIM | WQ_HIGHPRI,
				      0);
	return dfkv_tcp_wq ? 0 : -ENOMEM;
}

void dfkv_tcp_exit(void)
{
	destroy_workqueue(dfkv_tcp_wq);
}
