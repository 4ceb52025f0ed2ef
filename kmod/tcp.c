// SPDX-License-Identifier: GPL-2.0
/*
 * In-kernel TCP server of wire epoch 6 (SPEC.md section 2).
 *
 * Listeners belong to a node and live in its network namespace; listener.c
 * keeps the node's listeners and connections and the order of their
 * shutdown, this file their sockets; the node reaches it through
 * tcp_transport_ops (transport.h) and holds its limits and deadlines.
 * No thread per connection: the sockets' data_ready/write_space/
 * state_change callbacks queue the connection's io work on dfkv_tcp_wq,
 * which makes as much non-blocking progress as the socket allows and
 * returns.  A connection handles one request at a time, receiving the
 * next only once the reply is sent, which keeps replies in strict FIFO
 * order while the client pipelines.  That request is the connection's
 * struct dfkv_req: this file decodes its prefix and moves its payload and
 * reply, the executor (req.c) runs it.  PUT payloads are received
 * straight into the store's pages (bio_vec iterators, no staging buffer)
 * and GET data is lent to the socket without a copy: a struct tcp_lend
 * keeps the entry pinned until the stack frees its last buffer of the
 * pages, retransmits included, since RAM pages are reused in place.
 * What the stack holds this way cannot be evicted, so lending is bounded
 * per connection and per node (lend_charge()); a reply over either bound
 * is sent by copy, which a peer that never reads cannot make pin RAM.
 *
 * Neither a PUT follower, a leader whose commit waits for the disk nor a
 * GET whose value is being read from disk waits in the worker: the
 * connection parks on the entry (reading nothing more) and its io work is
 * queued again when the leader finished, the flush or the cold read
 * ended, so a stalled disk holds no worker.  A frame must arrive whole, payload included,
 * within frame_ms of its first byte, a reply must make progress within
 * frame_ms, both must keep up min_rate (dfkv_conn_deadline()), and a
 * PUT leader gets RAM one part of its value at a time as its payload
 * arrives, under caps per node and per peer address (dfkv_req_recv_more(),
 * dfkv_op_recv_admit()), so peers that send headers and drip, or never
 * read, pin neither workers nor memory.
 *
 * A connection dies through conn_kill(): the first caller queues its
 * release work, which waits for conn_start() to finish publishing it
 * (the listeners' lock), detaches the socket callbacks, waits for the io
 * work and the deadline, gives up the request in flight (dfkv_req_done(): an unfinished
 * PUT is aborted, a pinned GET entry unpinned), drops its leases and
 * frees it.  Node shutdown closes every listener, kills every connection
 * and waits for their release works before the node's operations are
 * drained.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/net.h>
#include <linux/tcp.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/genetlink.h>

#include "compat.h"
#include "tcp.h"
#include "listener.h"
#include "node.h"
#include "req.h"
#include "wire.h"
#include "trace.h"

/* bio_vecs mapped per socket call. */
#define CONN_BVECS	64
/* Progress steps of one io work run before yielding the CPU. */
#define CONN_BUDGET	64

static struct workqueue_struct *dfkv_tcp_wq;

/* A node's TCP side, node->transports[DFKV_LISTENER_TCP]. */
struct tcp_node {
	struct dfkv_listeners ls;	/* first: the transport layer's */
	atomic64_t accepts;
	atomic64_t proto_errors;
	atomic64_t zc_replies;		/* GET replies lent to the socket */
	atomic64_t zc_copied;		/* of those, copied by the stack */
	atomic64_t zc_capped;		/* sent by copy: over a lend bound */
	atomic64_t lent_bytes;		/* entry bytes lent replies pin */
};

static struct tcp_node *tcp_node(struct dfkv_node *node)
{
	return container_of(node->transports[DFKV_LISTENER_TCP],
			    struct tcp_node, ls);
}

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
	CONN_PARKED,		/* waiting: a PUT leader, a flush, a cold read */
	CONN_TX,		/* sending the reply */
};

struct dfkv_tcp_conn {
	struct dfkv_conn_core core;	/* in tcp_node.ls */
	refcount_t ref;			/* the release work's, each lend's */
	atomic64_t lent_bytes;		/* entry bytes its lends pin */
	struct dfkv_node *node;
	struct socket *sock;
	struct work_struct io_work;
	bool close_after_reply;
	void (*saved_data_ready)(struct sock *sk);
	void (*saved_write_space)(struct sock *sk);
	void (*saved_state_change)(struct sock *sk);
	struct dfkv_sess sess;		/* its grants and leases */

	enum conn_state state;
	struct dfkv_wire_rx rx;		/* the frame being received */
	struct dfkv_req req;		/* the request in flight */

	u8 rhdr[DFKV_RESP_PREFIX_LEN];
	size_t rhdr_sent;
	struct tcp_lend *lend;		/* the GET reply's, being sent */
	bool tx_copy;			/* the reply goes by copy */
	bool lent;			/* some reply lent pages */
	u64 tx_len;
	u64 tx_sent;
	struct bio_vec bv[CONN_BVECS];
};

/*
 * GET data lent to the socket (msghdr.msg_ubuf, MSG_ZEROCOPY): its own
 * pin on the entry and the node entered, so neither the bytes nor the
 * node go while the stack holds the pages, and a reference on the
 * connection, whose lent bytes it is charged to.  zc.ubuf.refcnt counts
 * the stack's references and the sender's, dropped when the reply is
 * sent; the last one queues the give-back, which may not run where the
 * stack lets go (softirq).
 */
struct tcp_lend {
	struct dfkv_ubuf zc;
	struct dfkv_read rd;
	struct dfkv_node *node;
	struct dfkv_tcp_conn *conn;
	u64 charged;			/* to conn->lent_bytes and the node's */
	struct work_struct back;
	bool copied;			/* the stack copied some of it */
};

static struct kmem_cache *tcp_lend_cache;

/*
 * Bounds of lent bytes: a quarter of the node's RAM capacity, and per
 * connection its socket's send buffer (what a peer that reads nothing
 * can make it queue).  A lend is charged the whole length of its entry,
 * the RAM its pin keeps from eviction, however short the reply.
 */
static u64 lend_node_cap(struct dfkv_node *node)
{
	return div_u64(node->store.capacity, 4);
}

/* Add @len to @v unless that passes @cap; never above it, even briefly. */
static bool lend_add(atomic64_t *v, u64 len, u64 cap)
{
	s64 old = atomic64_read(v);

	do {
		if ((u64)old + len > cap)
			return false;
	} while (!atomic64_try_cmpxchg(v, &old, old + len));
	return true;
}

static bool lend_charge(struct dfkv_tcp_conn *c, u64 len)
{
	struct tcp_node *tn = tcp_node(c->node);
	u64 conn_cap = max(READ_ONCE(c->sock->sk->sk_sndbuf), 0);

	if (!lend_add(&c->lent_bytes, len, conn_cap))
		goto capped;
	if (!lend_add(&tn->lent_bytes, len, lend_node_cap(c->node))) {
		atomic64_sub(len, &c->lent_bytes);
		goto capped;
	}
	return true;
capped:
	atomic64_inc(&tn->zc_capped);
	return false;
}

static void lend_uncharge(struct dfkv_tcp_conn *c, u64 len)
{
	atomic64_sub(len, &tcp_node(c->node)->lent_bytes);
	atomic64_sub(len, &c->lent_bytes);
}

static void conn_put(struct dfkv_tcp_conn *c)
{
	if (!refcount_dec_and_test(&c->ref))
		return;
	WARN_ON_ONCE(atomic64_read(&c->lent_bytes));
	kfree(c);
}

static void tcp_lend_back(struct work_struct *work)
{
	struct tcp_lend *l = container_of(work, struct tcp_lend, back);

	if (READ_ONCE(l->copied))
		atomic64_inc(&tcp_node(l->node)->zc_copied);
	lend_uncharge(l->conn, l->charged);
	conn_put(l->conn);
	dfkv_req_lent_back(l->node, &l->rd);
	kmem_cache_free(tcp_lend_cache, l);
}

static void tcp_lend_put(struct sk_buff *skb, struct ubuf_info *ubuf,
			 bool zerocopy_success)
{
	struct tcp_lend *l = container_of(ubuf, struct tcp_lend, zc.ubuf);

	if (!zerocopy_success)
		WRITE_ONCE(l->copied, true);
	if (refcount_dec_and_test(&ubuf->refcnt))
		queue_work(dfkv_tcp_wq, &l->back);
}

/*
 * The reply's lend, made at its first send; NULL: send by copy, the
 * whole reply (over a bound, out of memory, the node going).
 */
static struct ubuf_info *conn_lend(struct dfkv_tcp_conn *c)
{
	struct tcp_lend *l = c->lend;
	u64 len;

	if (l)
		return &l->zc.ubuf;
	if (c->tx_copy || !c->req.rd.e)
		return NULL;
	len = dfkv_read_len(&c->req.rd);
	if (!lend_charge(c, len))
		goto copy;
	l = kmem_cache_alloc(tcp_lend_cache, GFP_KERNEL);
	if (!l)
		goto err_uncharge;
	if (!dfkv_req_lend(&c->req, &l->rd))
		goto err_free;
	refcount_inc(&c->ref);
	l->conn = c;
	l->charged = len;
	l->node = c->node;
	l->copied = false;
	atomic64_inc(&tcp_node(c->node)->zc_replies);
	INIT_WORK(&l->back, tcp_lend_back);
	dfkv_ubuf_init(&l->zc, tcp_lend_put);
	c->lend = l;
	c->lent = true;
	return &l->zc.ubuf;

err_free:
	kmem_cache_free(tcp_lend_cache, l);
err_uncharge:
	lend_uncharge(c, len);
copy:
	c->tx_copy = true;
	return NULL;
}

/* The reply is sent or given up: the sender's reference goes. */
static void conn_lend_end(struct dfkv_tcp_conn *c)
{
	if (c->lend) {
		tcp_lend_put(NULL, &c->lend->zc.ubuf, true);
		c->lend = NULL;
	}
}

/*
 * A connection that lent pages closes with an abort when the stack still
 * queues data for the peer: its buffers (and pins) go now, not after a
 * slow or absent peer's retransmission timeouts.
 */
static void conn_close_lent(struct dfkv_tcp_conn *c)
{
	struct sock *sk = c->sock->sk;
	bool queued;

	if (!c->lent)
		return;
	lock_sock(sk);
	queued = !tcp_rtx_and_write_queues_empty(sk);
	release_sock(sk);
	if (queued)
		sock_no_linger(sk);
}

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

/* The executor decided the reply of c->req: start sending it. */
static void conn_queue_response(struct dfkv_req *req)
{
	struct dfkv_tcp_conn *c = container_of(req, struct dfkv_tcp_conn, req);
	struct dfkv_req_rsp *rsp = &req->rsp;

	dfkv_wire_put_resp(c->rhdr, DFKV_EPOCH_TCP, rsp->status,
			   rsp->stored_len, rsp->data_len);
	c->rhdr_sent = 0;
	c->tx_len = rsp->data_len;
	c->tx_sent = 0;
	c->tx_copy = false;
	if (rsp->close)
		c->close_after_reply = true;
	c->state = CONN_TX;
}

/* A frame the stream cannot carry on from: answer INVALID, then close. */
static void reply_fatal(struct dfkv_tcp_conn *c)
{
	atomic64_inc(&tcp_node(c->node)->proto_errors);
	c->close_after_reply = true;
	dfkv_req_fail(&c->req, DFKV_STATUS_INVALID);
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
	struct dfkv_req *req = &c->req;
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
		dfkv_conn_clock_moved(&c->core.clk, ret);
		c->rhdr_sent += ret;
		*progress = true;
	}
	while (c->tx_sent < c->tx_len) {
		u64 left = c->tx_len - c->tx_sent;

		memset(&msg, 0, sizeof(msg));
		if (req->rsp.data) {
			struct kvec kv = {
				.iov_base = req->rsp.data + c->tx_sent,
				.iov_len = left,
			};

			iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, &kv, 1, left);
		} else {
			size_t mapped;
			unsigned int nr;

			msg.msg_ubuf = conn_lend(c);
			if (msg.msg_ubuf)
				msg.msg_flags = MSG_ZEROCOPY;

			/* GET data, from the pinned entry's pages */
			nr = dfkv_req_map(req, c->tx_sent,
					  min_t(u64, left, MAX_RW_COUNT),
					  c->bv, CONN_BVECS, &mapped);
			if (!mapped)
				return -EIO;
			if (mapped < left)
				msg.msg_flags |= MSG_MORE;
			iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, c->bv, nr,
				      mapped);
		}
		ret = sock_send(c, &msg, left);
		if (ret <= 0)
			return ret;
		dfkv_conn_clock_moved(&c->core.clk, ret);
		c->tx_sent += ret;
		*progress = true;
	}
	return 1;
}

/* The reply went out: release what the request held, expect the next. */
static void request_done(struct dfkv_tcp_conn *c)
{
	conn_lend_end(c);
	if (c->req.rd.e)
		dfkv_req_sent(&c->req, true);
	dfkv_req_done(&c->req);
	dfkv_wire_rx_next(&c->rx);
	c->state = CONN_RX_HDR;
}

/* ---------------------------------------------------------- execution */

/* What the parked request waits for happened: run the connection again. */
static void conn_unpark(struct dfkv_req *req)
{
	conn_queue(container_of(req, struct dfkv_tcp_conn, req));
}

static const struct dfkv_req_ops tcp_req_ops = {
	.queue_response = conn_queue_response,
	.unpark = conn_unpark,
	.admit_recv = true,
	.transport = DFKV_HIST_TCP,
};

/* The request's payload is all in (or there was none): act on it. */
static void payload_done(struct dfkv_tcp_conn *c)
{
	if (!dfkv_req_exec(&c->req, 0))
		c->state = CONN_PARKED;		/* reading nothing more */
}

/* A whole prefix is in: check it and decide how to take the payload. */
static void decode_request(struct dfkv_tcp_conn *c)
{
	struct dfkv_req *req = &c->req;
	enum dfkv_wire_rx_event ev;
	struct dfkv_wire_req wr;

	WRITE_ONCE(c->core.clk.got_request, true);
	if (dfkv_wire_parse_req(c->rx.hdr, DFKV_EPOCH_TCP,
				READ_ONCE(c->node->max_value), &wr)) {
		reply_fatal(c);
		return;
	}
	req->op = wr.op;
	req->key = wr.key;
	req->offset = wr.offset;
	req->length = wr.length;
	req->payload_len = wr.payload_len;
	req->cap = U64_MAX;
	ev = dfkv_wire_rx_payload(&c->rx, wr.payload_len);
	if (!dfkv_req_begin(req)) {
		c->close_after_reply = true;
		dfkv_req_exec(req, 0);
		return;
	}
	switch (req->rx) {
	case DFKV_REQ_RX_PUT:
		c->state = CONN_RX_PUT;
		break;
	case DFKV_REQ_RX_BUF:
		c->state = CONN_RX_BUF;
		break;
	default:
		c->state = CONN_RX_DISCARD;	/* a follower's, a refused one */
		break;
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
		dfkv_conn_clock_moved(&c->core.clk, ret);
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
			WRITE_ONCE(c->core.clk.frame_start, jiffies);
		if (dfkv_wire_rx_got(&c->rx, ret) == DFKV_RX_PREFIX)
			decode_request(c);
		return ret;
	case CONN_RX_PUT: {
		struct dfkv_put *put = &c->req.put;
		size_t mapped;
		unsigned int nr;

		if (c->rx.pay_got == put->reserved &&
		    !dfkv_req_recv_more(&c->req)) {
			c->state = CONN_RX_DISCARD;	/* refused halfway */
			return 1;
		}
		nr = dfkv_req_map(&c->req, c->rx.pay_got,
				  min_t(u64, left, MAX_RW_COUNT), c->bv,
				  CONN_BVECS, &mapped);
		iov_iter_bvec(&msg.msg_iter, ITER_DEST, c->bv, nr, mapped);
		ret = sock_recv(c, &msg);
		if (ret > 0 && !c->rx.pay_got)
			trace_dfkv_put_recv_start(&c->req.key, ret, 0);
		if (ret > 0 && (u64)ret == left)
			trace_dfkv_put_recv_end(&c->req.key, c->rx.pay_got + ret,
						0);
		break;
	}
	case CONN_RX_BUF:
		ret = recv_kvec(c, c->req.rx_buf + c->rx.pay_got, left);
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

		if (c->state == CONN_PARKED && !dfkv_req_resume(&c->req))
			return;
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

/* What the connection is doing, for its deadlines. */
static enum dfkv_conn_phase conn_phase(struct dfkv_conn_core *cc)
{
	struct dfkv_tcp_conn *c = container_of(cc, struct dfkv_tcp_conn, core);

	switch (READ_ONCE(c->state)) {
	case CONN_RX_HDR:
		return READ_ONCE(c->rx.hdr_got) ? DFKV_CONN_RX : DFKV_CONN_WAIT;
	case CONN_RX_PUT:
	case CONN_RX_BUF:
	case CONN_RX_DISCARD:
		return DFKV_CONN_RX;
	case CONN_TX:
		return DFKV_CONN_TX;
	default:
		return DFKV_CONN_WAIT;
	}
}

static void conn_release_work(struct work_struct *work)
{
	struct dfkv_tcp_conn *c = container_of(work, struct dfkv_tcp_conn,
					       core.release_work);
	struct dfkv_listeners *ls = &tcp_node(c->node)->ls;
	struct sock *sk = c->sock->sk;

	/* conn_start() is done with the connection (it holds the lock). */
	mutex_lock(&ls->lock);
	mutex_unlock(&ls->lock);
	write_lock_bh(&sk->sk_callback_lock);
	sk->sk_user_data = NULL;
	sk->sk_data_ready = c->saved_data_ready;
	sk->sk_write_space = c->saved_write_space;
	sk->sk_state_change = c->saved_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
	kernel_sock_shutdown(c->sock, SHUT_RDWR);
	cancel_work_sync(&c->io_work);
	dfkv_conn_deadline_stop(&c->core);

	conn_lend_end(c);
	dfkv_req_done(&c->req);
	/* A parked request's unpark racing us queued io work. */
	cancel_work_sync(&c->io_work);

	conn_close_lent(c);
	sock_release(c->sock);
	dfkv_sess_destroy(&c->sess);
	dfkv_listeners_conn_del(ls, &c->core);
	dfkv_node_put(c->node);
	conn_put(c);		/* the last lend given back may free it */
}

static void conn_start(struct dfkv_tcp_listener *l, struct socket *sock)
{
	struct dfkv_node *node = l->base.node;
	struct tcp_node *tn = tcp_node(node);
	struct sockaddr_storage peer;
	struct dfkv_tcp_conn *c;
	struct sock *sk = sock->sk;
	struct mem_cgroup *old;
	int err;

	if (kernel_getpeername(sock, (struct sockaddr *)&peer) < 0) {
		sock_release(sock);
		return;
	}

	old = dfkv_sess_charge(node);
	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	set_active_memcg(old);
	if (!c) {
		sock_release(sock);
		return;
	}
	refcount_set(&c->ref, 1);
	c->sock = sock;
	c->node = node;
	dfkv_conn_core_init(&c->core, dfkv_tcp_wq, conn_release_work);
	INIT_WORK(&c->io_work, conn_io_work);
	dfkv_sess_init(&c->sess, node, false);
	dfkv_req_init(&c->req, &c->sess, &tcp_req_ops);
	dfkv_conn_clock_init(&c->core.clk, jiffies);
	c->state = CONN_RX_HDR;

	mutex_lock(&tn->ls.lock);
	err = dfkv_listeners_conn_add(&tn->ls, &c->core, node,
				      READ_ONCE(node->limits.max_conns), &peer);
	if (err) {
		if (err == -EBUSY)
			atomic64_inc(&node->limits.refused);
		mutex_unlock(&tn->ls.lock);
		sock_release(sock);
		dfkv_sess_destroy(&c->sess);
		kfree(c);
		return;
	}
	atomic64_inc(&tn->accepts);
	c->req.peer = c->core.peer;

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
	/*
	 * Armed under the listeners' lock, which the release work takes
	 * before it cancels them: a kill racing this start (the peer's
	 * close, the node's shutdown) cannot free the connection with its
	 * deadline timer queued after the cancellation.
	 */
	dfkv_conn_deadline_start(&c->core, dfkv_tcp_wq, &node->limits,
				 DFKV_LISTENER_TCP, conn_phase);
	/* Data may have arrived before the callbacks were set. */
	conn_queue(c);
	mutex_unlock(&tn->ls.lock);
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

static int tcp_listener_add(struct dfkv_node *node, const char *addr, u16 port,
			    struct netlink_ext_ack *extack)
{
	struct tcp_node *tn = tcp_node(node);
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

static int tcp_fill_stats(struct sk_buff *skb, struct dfkv_node *node)
{
	struct tcp_node *tn = tcp_node(node);

	if (nla_put_u64_64bit(skb, DFKV_STAT_CONNS, READ_ONCE(tn->ls.nr_conns),
			      DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_ACCEPTS,
			      atomic64_read(&tn->accepts), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_PROTO_ERRORS,
			      atomic64_read(&tn->proto_errors), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_TCP_ZC_REPLIES,
			      atomic64_read(&tn->zc_replies), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_TCP_ZC_COPIED,
			      atomic64_read(&tn->zc_copied), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_TCP_ZC_LENT_BYTES,
			      atomic64_read(&tn->lent_bytes), DFKV_STAT_PAD) ||
	    nla_put_u64_64bit(skb, DFKV_STAT_TCP_ZC_CAPPED,
			      atomic64_read(&tn->zc_capped), DFKV_STAT_PAD))
		return -EMSGSIZE;
	return 0;
}

static const struct dfkv_transport_ops tcp_transport_ops = {
	.kind = DFKV_LISTENER_TCP,
	.default_port = DFKV_PORT_TCP,
	.node_size = sizeof(struct tcp_node),
	.listener_start = listener_start,
	.listener_free = listener_free,
	.listener_add = tcp_listener_add,
	.fill_stats = tcp_fill_stats,
};

int __init dfkv_tcp_init(void)
{
	int err;

	tcp_lend_cache = KMEM_CACHE(tcp_lend, 0);
	if (!tcp_lend_cache)
		return -ENOMEM;
	dfkv_tcp_wq = alloc_workqueue("dfkv_tcp", WQ_MEM_RECLAIM | WQ_HIGHPRI,
				      0);
	if (!dfkv_tcp_wq) {
		err = -ENOMEM;
		goto err_cache;
	}
	err = dfkv_transport_register(&tcp_transport_ops);
	if (err)
		goto err_wq;
	return 0;

err_wq:
	destroy_workqueue(dfkv_tcp_wq);
err_cache:
	kmem_cache_destroy(tcp_lend_cache);
	return err;
}

/* After the last node: every lend was given back, on dfkv_tcp_wq. */
void dfkv_tcp_exit(void)
{
	dfkv_transport_unregister(&tcp_transport_ops);
	destroy_workqueue(dfkv_tcp_wq);
	kmem_cache_destroy(tcp_lend_cache);
}
