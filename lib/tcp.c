// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv TCP transport (SPEC.md section 2, epoch 6).  Each peer keeps a
 * small pool of idle non-blocking connections.  One exec call spreads its
 * requests over up to conns_per_peer connections per peer and drives all
 * of them from one poll() loop (conn.c's, through the callbacks here):
 * frames are written with gathered sendmsg (prefix + the caller's value,
 * no copy), up to batch_concurrency requests in flight per connection, and
 * replies are matched in FIFO order, with GET data received straight into
 * the caller's buffer.  A scatter-gather value is a list of segments on
 * both paths: its buffers are gathered by the same sendmsg, and a reply's
 * data is read into them (readv-style recvmsg) by a cursor walking the
 * segments.  A connection that fails is closed and its peer reported
 * unhealthy; a pooled connection that the node had closed while idle is
 * retried once on a fresh one.  A fresh connection first carries the AUTH2
 * handshake of SPEC.md 9 (auth.c): its HELLO goes out alone, then (with a
 * tenant secret) its AUTH alone, and the exec's requests follow only once
 * the node's name and proof checked out, so a connection costs one or two
 * round trips more.  A node that fails the handshake fails the connection
 * as an unreachable one does.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "conn.h"
#include "transport.h"

#define RBUF_SIZE	16384
#define DIRECT_MIN	4096	/* read GET data straight into the caller's
				 * buffer past this many bytes */
#define IOV_MAX_BATCH	64

struct item {
	struct dfkv_item base;		/* the request */
	struct dfkv_wire_req w;
	uint8_t hdr[DFKV_REQ_PREFIX_LEN];
	const struct iovec *out;	/* payload segments (w.payload_len) */
	size_t nout;
	struct iovec *in;		/* where reply data goes */
	size_t nin;
	struct iovec out1, in1;		/* the segment of a single buffer */
	uint8_t *owned;		/* encoded keys, and the rx buffer */
};

struct tconn {
	struct dfkv_conn base;	/* &dfkv_tcp_transport, the peer */
	int fd;
	bool connecting;
	bool reused;		/* came from the pool */
	uint64_t connect_deadline;

	/* the current exec's work is base.q; of base.q[base.sent], */
	size_t sent_off;	/* the bytes sent so far */
	bool want_out;		/* last send hit EAGAIN */

	/* receive state for q[recvd] */
	uint8_t rbuf[RBUF_SIZE];
	size_t rpos, rlen;
	bool have_hdr;
	struct dfkv_wire_resp resp;
	uint64_t data_off;
	size_t seg;		/* the data's cursor: segment of q[recvd]->in */
	uint64_t seg_off;	/* and offset inside it */

	/* the handshake of a fresh connection: HELLO, then maybe AUTH */
	struct dfkv_handshake hs;
	struct item hs_item[2];	/* HELLO, AUTH */
	bool hs_wait;		/* q[recvd] is HELLO or AUTH, not answered */
};

static struct tconn *tconn_of(struct dfkv_conn *conn)
{
	return dfkv_container_of(conn, struct tconn, base);
}

static struct item *item_of(struct dfkv_item *it)
{
	return dfkv_container_of(it, struct item, base);
}

/* --------------------------------------------------------------- pool */

static int tcp_peer_init(struct dfkv_client *c, struct dfkv_peer *p)
{
	return dfkv_net_peer_init(c, p, p->port);
}

static void conn_close(struct tconn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	free(conn->base.q);
	free(conn);
}

static void conn_close_pooled(void *conn)
{
	conn_close(conn);
}

static void tcp_peer_fini(struct dfkv_client *c, struct dfkv_peer *p)
{
	(void)c;
	dfkv_net_peer_fini(p, conn_close_pooled);
}

static bool conn_hello(struct tconn *conn);

/*
 * Start a non-blocking connect, its HELLO queued first; false when it
 * failed at once.
 */
static bool conn_connect(struct dfkv_client *c, struct tconn *conn,
			 uint64_t now)
{
	struct dfkv_net_peer *np = dfkv_net_peer(conn->base.peer);
	int one = 1;

	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = socket(np->addr.ss_family,
			  SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (conn->fd < 0)
		return false;
	setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	atomic_fetch_add(&c->connects, 1);
	conn->reused = false;
	conn->connect_deadline = now + c->opt.connect_timeout_ms;
	if (!conn_hello(conn)) {
		close(conn->fd);
		conn->fd = -1;
		return false;
	}
	if (!connect(conn->fd, (struct sockaddr *)&np->addr, np->addrlen)) {
		conn->connecting = false;
		return true;
	}
	conn->connecting = errno == EINPROGRESS;
	if (!conn->connecting) {
		close(conn->fd);
		conn->fd = -1;
	}
	return conn->connecting;
}

/* An idle pooled connection that is still open and quiet. */
static bool idle_ok(struct tconn *conn)
{
	struct pollfd pfd = { .fd = conn->fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

static struct tconn *conn_get(struct dfkv_client *c, struct dfkv_peer *p)
{
	struct tconn *conn;

	while ((conn = dfkv_pool_take(&dfkv_net_peer(p)->pool)) &&
	       !idle_ok(conn))
		conn_close(conn);
	if (conn) {
		conn->reused = true;
		return conn;
	}
	(void)c;
	conn = calloc(1, sizeof(*conn));
	if (!conn)
		return NULL;
	conn->fd = -1;
	conn->base.t = &dfkv_tcp_transport;
	conn->base.peer = p;
	return conn;
}

static void conn_put(struct dfkv_client *c, struct tconn *conn, bool healthy)
{
	struct dfkv_net_peer *np = dfkv_net_peer(conn->base.peer);

	dfkv_conn_reset(&conn->base, false);
	if (healthy && conn->fd >= 0 && !conn->connecting && !conn->have_hdr &&
	    conn->rpos == conn->rlen &&
	    dfkv_pool_give(&np->pool, c->opt.conns_per_peer, conn))
		return;
	conn_close(conn);
}

/* ------------------------------------------------------------- framing */

static int item_prepare(struct item *it)
{
	struct dfkv_req *r = it->base.r;

	dfkv_req_wire(r, DFKV_EPOCH_TCP, &it->w);
	it->out = &it->out1;
	it->in = &it->in1;
	switch (r->op) {
	case DFKV_OP_PUT:
		if (r->iov) {
			it->out = r->iov;
			it->nout = r->iovcnt;
		} else {
			it->out1 = (struct iovec){ (void *)r->val,
						   (size_t)r->val_len };
			it->nout = 1;
		}
		break;
	case DFKV_OP_GET:
		if (r->iov) {
			it->in = r->iov;
			it->nin = r->iovcnt;
		} else {
			it->in1 = (struct iovec){ r->buf, (size_t)r->cap };
			it->nin = 1;
		}
		break;
	case DFKV_OP_TOUCH:
	case DFKV_OP_PROBE:
	case DFKV_OP_LEASE:
		it->owned = malloc((size_t)r->nkeys * DFKV_BLOCK_KEY_LEN +
				   8 * ((size_t)r->nkeys + 1));
		if (!it->owned)
			return DFKV_E_NOMEM;
		dfkv_wire_keys_encode(r->keys, r->nkeys, it->owned);
		it->out1 = (struct iovec){ it->owned,
					   (size_t)it->w.payload_len };
		it->nout = 1;
		/* PROBE/LEASE reply data */
		it->in1 = (struct iovec){ it->owned + it->w.payload_len,
					  8 * ((size_t)r->nkeys + 1) };
		it->nin = 1;
		break;
	case DFKV_OP_HELLO:
	case DFKV_OP_AUTH:
		it->out1 = (struct iovec){ (void *)r->val, (size_t)r->val_len };
		it->nout = 1;
		it->in1 = (struct iovec){ r->buf, (size_t)r->cap };
		it->nin = r->buf ? 1 : 0;
		break;
	default:
		break;
	}
	dfkv_wire_req_encode(&it->w, it->hdr);
	return 0;
}

static uint64_t frame_len(const struct item *it)
{
	return DFKV_REQ_PREFIX_LEN + it->w.payload_len;
}

/* ----------------------------------------------------------- handshake */

/*
 * Queue the handshake request r (its item it) as q[at], ahead of the
 * work not sent yet; false when memory ran out.
 */
static bool conn_insert(struct tconn *conn, size_t at, struct item *it,
			struct dfkv_req *r)
{
	memset(it, 0, sizeof(*it));
	it->base.r = r;
	item_prepare(it);	/* allocates nothing for HELLO and AUTH */
	if (!dfkv_conn_push(&conn->base, &it->base))
		return false;
	memmove(conn->base.q + at + 1, conn->base.q + at,
		(conn->base.nq - 1 - at) * sizeof(*conn->base.q));
	conn->base.q[at] = &it->base;
	return true;
}

/* A fresh connection's HELLO goes first, alone (SPEC.md 9). */
static bool conn_hello(struct tconn *conn)
{
	conn->hs_wait = dfkv_handshake_start(&conn->hs, conn->base.peer) &&
			conn_insert(conn, 0, &conn->hs_item[0],
				    &conn->hs.hello);
	return conn->hs_wait;
}

/*
 * HELLO or AUTH (it) was answered: the AUTH, if any, goes next, alone,
 * then the work; DFKV_E_AUTH when the node failed the handshake (its
 * requests fail with it, exec.c makes them misses and dropped writes).
 */
static int conn_hs_next(struct dfkv_client *c, struct tconn *conn,
			const struct item *it)
{
	enum dfkv_hs_next next = it == &conn->hs_item[0] ?
		dfkv_handshake_hello(c, &conn->hs) :
		dfkv_handshake_auth(&conn->hs);

	if (next == DFKV_HS_AUTH)
		return conn_insert(conn, conn->base.recvd, &conn->hs_item[1],
				   &conn->hs.auth) ? 0 : DFKV_E_NOMEM;
	conn->hs_wait = false;
	return next == DFKV_HS_DONE ? 0 : DFKV_E_AUTH;
}

/* ------------------------------------------------------------- replies */

/* A reply is complete: hand its results to the request. */
static void item_complete(struct tconn *conn, struct item *it)
{
	dfkv_req_answer(it->base.r, &conn->resp, it->in1.iov_base);
}

/* Fail every unanswered request of conn with status and close it. */
static void conn_fail(struct dfkv_client *c, struct tconn *conn,
		      int status)
{
	dfkv_conn_fail(c, &conn->base, status);
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	conn->base.active = false;
}

/*
 * An I/O error.  A pooled connection the node closed while it sat idle
 * fails before its first reply: retry its work once on a fresh one.
 */
static void conn_error(struct dfkv_client *c, struct tconn *conn,
		       int status, uint64_t now)
{
	if (conn->reused && conn->base.recvd == 0 &&
	    status == DFKV_E_UNAVAILABLE) {
		conn->base.sent = conn->sent_off = 0;
		conn->rpos = conn->rlen = 0;
		conn->have_hdr = false;
		conn->want_out = false;
		if (conn_connect(c, conn, now))
			return;
	}
	conn_fail(c, conn, status);
}

/*
 * Append it's payload from byte po on to iov[*niov..IOV_MAX_BATCH); false
 * when it did not all fit.
 */
static bool payload_iov(const struct item *it, uint64_t po,
			struct iovec *iov, size_t *niov)
{
	for (size_t s = 0; s < it->nout; s++) {
		const struct iovec *v = &it->out[s];

		if (po >= v->iov_len) {
			po -= v->iov_len;
			continue;
		}
		if (*niov == IOV_MAX_BATCH)
			return false;
		iov[(*niov)++] = (struct iovec){ (uint8_t *)v->iov_base + po,
						 v->iov_len - (size_t)po };
		po = 0;
	}
	return true;
}

/*
 * Send as much as the in-flight window allows (while a HELLO or AUTH is
 * waiting for its reply, nothing behind it); <0 on a socket error.
 */
static int conn_send(struct dfkv_client *c, struct tconn *conn)
{
	size_t end = conn->hs_wait ? conn->base.recvd + 1 : conn->base.nq;

	while (conn->base.sent < end &&
	       conn->base.sent - conn->base.recvd < c->opt.batch_concurrency) {
		struct iovec iov[IOV_MAX_BATCH];
		struct msghdr msg = { .msg_iov = iov };
		size_t niov = 0, off = conn->sent_off;
		ssize_t n;

		/* whole frames, then the part of one that fits */
		for (size_t i = conn->base.sent;
		     i < end && i - conn->base.recvd < c->opt.batch_concurrency &&
		     niov < IOV_MAX_BATCH; i++, off = 0) {
			struct item *it = item_of(conn->base.q[i]);

			if (off < DFKV_REQ_PREFIX_LEN)
				iov[niov++] = (struct iovec){
					it->hdr + off, DFKV_REQ_PREFIX_LEN - off };
			if (!payload_iov(it, off > DFKV_REQ_PREFIX_LEN ?
					 off - DFKV_REQ_PREFIX_LEN : 0,
					 iov, &niov))
				break;
		}
		msg.msg_iovlen = niov;
		n = sendmsg(conn->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				conn->want_out = true;
				return 0;
			}
			if (errno == EINTR)
				continue;
			return -1;
		}
		conn->want_out = false;
		/* advance over what went out */
		while (n > 0) {
			struct item *it = item_of(conn->base.q[conn->base.sent]);
			uint64_t left = frame_len(it) - conn->sent_off;

			if ((uint64_t)n >= left) {
				n -= (ssize_t)left;
				conn->base.sent++;
				conn->sent_off = 0;
				atomic_fetch_add(&c->bytes_out,
						 it->base.r->op == DFKV_OP_PUT ?
						 it->w.payload_len : 0);
			} else {
				conn->sent_off += (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

/* Read into iov; >0 bytes, 0 on EAGAIN, -1 on EOF or error. */
static ssize_t rdv(int fd, struct iovec *iov, size_t niov)
{
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = niov };

	for (;;) {
		ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT);

		if (n > 0)
			return n;
		if (n == 0)
			return -1;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	}
}

static ssize_t rd(int fd, void *dst, size_t len)
{
	struct iovec v = { dst, len };

	return rdv(fd, &v, 1);
}

/* k more bytes of the current reply's data have landed. */
static void data_advance(struct tconn *conn, const struct item *it,
			 uint64_t k)
{
	conn->data_off += k;
	conn->seg_off += k;
	while (conn->seg < it->nin && conn->seg_off >= it->in[conn->seg].iov_len) {
		conn->seg_off -= it->in[conn->seg].iov_len;
		conn->seg++;
	}
}

/* The destination segments from the cursor on, want bytes at most. */
static size_t data_iov(const struct tconn *conn, const struct item *it,
		       uint64_t want, struct iovec *iov)
{
	size_t niov = 0;
	uint64_t off = conn->seg_off;

	for (size_t s = conn->seg; s < it->nin && want && niov < IOV_MAX_BATCH;
	     s++, off = 0) {
		uint64_t k = it->in[s].iov_len - off;

		if (k > want)
			k = want;
		iov[niov++] = (struct iovec){ (uint8_t *)it->in[s].iov_base + off,
					      (size_t)k };
		want -= k;
	}
	return niov;
}

/*
 * Consume replies.  Returns 0 (progress or EAGAIN), -1 on socket error or
 * EOF, DFKV_E_PROTO on a malformed reply.
 */
static int conn_recv(struct dfkv_client *c, struct tconn *conn)
{
	for (;;) {
		struct item *it;
		ssize_t n;

		/* a reply may come for a request still being sent */
		if (conn->base.recvd >= conn->base.nq ||
		    (conn->base.recvd >= conn->base.sent && !conn->sent_off))
			return 0;
		it = item_of(conn->base.q[conn->base.recvd]);
		if (!conn->have_hdr) {
			size_t avail = conn->rlen - conn->rpos;

			if (avail < DFKV_RESP_PREFIX_LEN) {
				memmove(conn->rbuf, conn->rbuf + conn->rpos, avail);
				conn->rpos = 0;
				conn->rlen = avail;
				n = rd(conn->fd, conn->rbuf + avail,
				       RBUF_SIZE - avail);
				if (n <= 0)
					return (int)n;
				conn->rlen += (size_t)n;
				continue;
			}
			if (dfkv_wire_resp_decode(conn->rbuf + conn->rpos, avail,
						  &it->w, &conn->resp))
				return DFKV_E_PROTO;
			if ((it->base.r->op == DFKV_OP_GET ||
			     it->base.r->op == DFKV_OP_HELLO ||
			     it->base.r->op == DFKV_OP_AUTH) &&
			    conn->resp.data_len > it->base.r->cap)
				return DFKV_E_PROTO;
			conn->rpos += DFKV_RESP_PREFIX_LEN;
			conn->have_hdr = true;
			conn->data_off = 0;
			conn->seg = 0;
			conn->seg_off = 0;
		}
		/* data_len fits in it->in: resp_decode and the cap check */
		while (conn->data_off < conn->resp.data_len) {
			uint64_t want = conn->resp.data_len - conn->data_off;
			size_t avail = conn->rlen - conn->rpos;
			struct iovec dst[IOV_MAX_BATCH];

			if (conn->seg >= it->nin)
				return DFKV_E_PROTO;	/* not reached */
			if (avail) {
				const struct iovec *v = &it->in[conn->seg];
				uint64_t k = v->iov_len - conn->seg_off;

				if (k > want)
					k = want;
				if (k > avail)
					k = avail;
				memcpy((uint8_t *)v->iov_base + conn->seg_off,
				       conn->rbuf + conn->rpos, (size_t)k);
				conn->rpos += (size_t)k;
				data_advance(conn, it, k);
				continue;
			}
			conn->rpos = conn->rlen = 0;
			if (want >= DIRECT_MIN) {
				n = rdv(conn->fd, dst,
					data_iov(conn, it, want, dst));
				if (n <= 0)
					return (int)n;
				data_advance(conn, it, (uint64_t)n);
			} else {
				n = rd(conn->fd, conn->rbuf, RBUF_SIZE);
				if (n <= 0)
					return (int)n;
				conn->rlen = (size_t)n;
			}
		}
		if (it->base.r->op == DFKV_OP_GET)
			atomic_fetch_add(&c->bytes_in, conn->resp.data_len);
		item_complete(conn, it);
		conn->have_hdr = false;
		conn->base.recvd++;
		if (it == &conn->hs_item[0] || it == &conn->hs_item[1]) {
			int err = conn_hs_next(c, conn, it);

			if (err)
				return err;
		}
	}
}

/* ---------------------------------------------------------------- exec */

static void tcp_begin(struct dfkv_client *c, size_t n)
{
	atomic_fetch_add(&c->tcp_reqs, n);
}

static int tcp_item_init(struct dfkv_item *it)
{
	return item_prepare(item_of(it));
}

/* Connections for the requests of one peer; returns how many were used. */
static size_t tcp_assign(struct dfkv_client *c, struct dfkv_peer *p,
			 struct dfkv_req *const *reqs, void *items, size_t n,
			 struct dfkv_conn **conns, uint64_t now)
{
	struct item *it = items;
	struct dfkv_conn *held;
	size_t want = dfkv_conn_want(c, p, reqs, n, &held), k = 0;

	for (; k < want; k++) {
		struct tconn *conn = held ? tconn_of(held) : conn_get(c, p);

		if (!conn)
			break;
		conns[k] = &conn->base;
		dfkv_conn_reset(&conn->base, true);
		conn->sent_off = 0;
		if (conn->fd < 0)
			conn_connect(c, conn, now);	/* fd < 0: fails below */
	}
	for (size_t i = 0, rr = 0; i < n; i++) {
		if (it[i].base.r->peer != p)
			continue;
		if (!k || !dfkv_conn_push(conns[rr++ % k], &it[i].base))
			it[i].base.r->status = DFKV_E_NOMEM;
	}
	for (size_t j = 0; j < k; j++)
		if (tconn_of(conns[j])->fd < 0)
			conn_fail(c, tconn_of(conns[j]), DFKV_E_UNAVAILABLE);
	return k;
}

static void tcp_advance(struct dfkv_client *c, struct dfkv_conn *base,
			uint64_t now)
{
	struct tconn *conn = tconn_of(base);
	int rc;

	if (conn->connecting)
		return;
	/* send, receive (which opens the window), send again */
	rc = conn_send(c, conn);
	if (!rc)
		rc = conn_recv(c, conn);
	if (!rc)
		rc = conn_send(c, conn);
	if (rc == -1)
		conn_error(c, conn, DFKV_E_UNAVAILABLE, now);
	else if (rc < 0)
		conn_fail(c, conn, rc);
}

/* A connect has its own deadline; the wait is no longer than it. */
static int tcp_arm(struct dfkv_client *c, struct dfkv_conn *base, uint64_t now,
		   uint64_t deadline, struct pollfd *pfd, uint64_t *wait)
{
	struct tconn *conn = tconn_of(base);

	if (now >= deadline ||
	    (conn->connecting && now >= conn->connect_deadline)) {
		conn_fail(c, conn, conn->connecting ?
			  DFKV_E_UNAVAILABLE : DFKV_E_TIMEOUT);
		return -1;
	}
	pfd->fd = conn->fd;
	pfd->events = conn->connecting || conn->want_out ? POLLOUT : 0;
	if (!conn->connecting)
		pfd->events |= POLLIN;
	pfd->revents = 0;
	if (conn->connecting && conn->connect_deadline - now < *wait)
		*wait = conn->connect_deadline - now;
	return 0;
}

/* Settle connects; data is moved by the next round. */
static void tcp_events(struct dfkv_client *c, struct dfkv_conn *base,
		       const struct pollfd *pfd)
{
	struct tconn *conn = tconn_of(base);
	int err = 0;
	socklen_t el = sizeof(err);

	if (!conn->connecting || !pfd->revents)
		return;
	if (getsockopt(conn->fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
		conn_fail(c, conn, DFKV_E_UNAVAILABLE);
	else
		conn->connecting = false;
}

static void tcp_fail(struct dfkv_client *c, struct dfkv_conn *base,
		     int status)
{
	conn_fail(c, tconn_of(base), status);
}

static bool tcp_settle(struct dfkv_client *c, struct dfkv_conn *base)
{
	struct tconn *conn = tconn_of(base);

	(void)c;
	return conn->fd >= 0 && base->recvd == base->nq;
}

static void tcp_item_release(struct dfkv_client *c, struct dfkv_item *it)
{
	(void)c;
	free(item_of(it)->owned);
}

static const struct dfkv_net_ops tcp_net_ops = {
	.item_size = sizeof(struct item),
	.nfds = 1,
	.begin = tcp_begin,
	.item_init = tcp_item_init,
	.assign = tcp_assign,
	.advance = tcp_advance,
	.arm = tcp_arm,
	.events = tcp_events,
	.fail = tcp_fail,
	.settle = tcp_settle,
	.item_release = tcp_item_release,
};

static void tcp_conn_put(struct dfkv_client *c, struct dfkv_conn *conn,
			 bool healthy)
{
	conn_put(c, tconn_of(conn), healthy);
}

const struct dfkv_transport_ops dfkv_tcp_transport = {
	.name = "tcp",
	.id = DFKV_T_TCP,
	.peer_size = sizeof(struct dfkv_net_peer),
	.init = tcp_peer_init,
	.fini = tcp_peer_fini,
	.exec = dfkv_conn_exec,
	.net = &tcp_net_ops,
	.conn_put = tcp_conn_put,
};
