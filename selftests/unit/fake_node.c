// SPDX-License-Identifier: GPL-2.0
/*
 * The in-test epoch-6 dfkv node of the client unit tests (see
 * fake_node.h): accept loop, one thread per connection, the request
 * decoder and an answer for every operation, HELLO and AUTH (SPEC.md 9)
 * checked against the one registered tenant, and the misbehaving modes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_node.h"
#include "util.h"
#include "wire.h"

struct conn_arg {
	struct srv *s;
	int fd;
};

static bool rd_full(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t k = recv(fd, p, n, 0);

		if (k <= 0)
			return false;
		p = (uint8_t *)p + k;
		n -= (size_t)k;
	}
	return true;
}

static bool wr_full(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k <= 0)
			return false;
		p = (const uint8_t *)p + k;
		n -= (size_t)k;
	}
	return true;
}

static struct obj *find(struct srv *s, uint64_t tenant, const uint8_t *id)
{
	for (size_t i = 0; i < s->nobjs; i++)
		if (s->objs[i].tenant == tenant && !memcmp(s->objs[i].id, id, 16))
			return &s->objs[i];
	return NULL;
}

static bool reply(int fd, int mode, uint8_t status, uint64_t stored,
		  const void *data, uint64_t dlen)
{
	struct dfkv_wire_resp r = { DFKV_EPOCH_TCP, status, stored, dlen };
	uint8_t b[DFKV_RESP_PREFIX_LEN];

	if (mode == SRV_BAD_EPOCH)
		r.epoch = 5;
	if (mode == SRV_LONG_DATA && status == 0 && dlen)
		r.data_len = dlen + 1;
	dfkv_wire_resp_encode(&r, b);
	return wr_full(fd, b, sizeof(b)) && (!dlen || wr_full(fd, data, dlen)) &&
	       (r.data_len == dlen || wr_full(fd, "x", 1));
}

/* What a connection of the test node knows of its client (SPEC 9). */
struct conn_auth {
	uint8_t sn[DFKV_AUTH_NONCE_LEN], cn[DFKV_AUTH_NONCE_LEN];
	bool nonces_set, granted;
};

static bool do_hello(int fd, int mode, struct srv *s, struct conn_auth *ca,
		     const struct dfkv_wire_req *q, const uint8_t *payload)
{
	uint8_t r[DFKV_HELLO_REPLY_MAX];
	size_t nl = strlen(s->name);

	if (getrandom(ca->sn, sizeof(ca->sn), 0) != sizeof(ca->sn))
		return false;
	ca->nonces_set = q->payload_len >= DFKV_HELLO_REQ_LEN &&
			 (dfkv_get_le64(payload) & DFKV_CAP_AUTH2);
	if (ca->nonces_set)
		memcpy(ca->cn, payload + 8, sizeof(ca->cn));
	s->hellos++;
	dfkv_wire_u64s_encode((uint64_t[]){
		DFKV_CAP_AUTH | DFKV_CAP_AUTH2 |
		(s->auth_required ? DFKV_CAP_AUTH_REQUIRED : 0),
		SRV_MAX_VALUE }, 2, r);
	memcpy(r + 16, ca->sn, sizeof(ca->sn));
	r[DFKV_HELLO_REPLY_MIN - 1] = (uint8_t)nl;
	memcpy(r + DFKV_HELLO_REPLY_MIN, s->name, nl);
	return reply(fd, mode, 0, 0, r, DFKV_HELLO_REPLY_MIN + nl);
}

static bool do_auth(int fd, int mode, struct srv *s, struct conn_auth *ca,
		    const struct dfkv_wire_req *q, const uint8_t *proof)
{
	uint8_t want[DFKV_AUTH_PROOF_LEN], back[DFKV_AUTH_PROOF_LEN];
	bool ok = ca->nonces_set && q->tenant == s->tenant &&
		  q->payload_len == sizeof(want) &&
		  !dfkv_auth2_proofs(s->secret, s->name, strlen(s->name),
				     ca->sn, ca->cn, q->tenant, want, back) &&
		  !memcmp(want, proof, sizeof(want));

	ca->granted |= ok;
	if (ok)
		s->auth_ok++;
	else
		s->auth_failures++;
	return ok ? reply(fd, mode, 0, 0, back, sizeof(back)) :
		reply(fd, mode, DFKV_STATUS_FORBIDDEN, 0, NULL, 0);
}

/* With auth required: a request naming a tenant not granted (any key). */
static bool forbidden(const struct srv *s, const struct conn_auth *ca,
		      const struct dfkv_wire_req *q, const struct dfkv_key *keys,
		      uint32_t nk)
{
	bool granted = ca->granted && (nk || q->tenant == s->tenant);

	for (uint32_t i = 0; i < nk; i++)
		granted &= keys[i].tenant == s->tenant;
	return s->auth_required && !granted && q->op != DFKV_OP_RELEASE &&
	       q->op != DFKV_OP_HELLO && q->op != DFKV_OP_AUTH;
}

static void *conn_main(void *arg)
{
	struct conn_arg *ca = arg;
	struct srv *s = ca->s;
	int fd = ca->fd;
	uint8_t hdr[DFKV_REQ_PREFIX_LEN];
	uint8_t *payload = NULL;
	struct conn_auth au = { 0 };

	free(ca);
	while (!s->stop && rd_full(fd, hdr, sizeof(hdr))) {
		struct dfkv_wire_req q;
		struct dfkv_key keys[DFKV_KEYS_MAX];
		uint64_t res[DFKV_KEYS_MAX + 1];
		uint32_t nk = 0;
		int rc = dfkv_wire_req_decode(hdr, sizeof(hdr), SRV_MAX_VALUE, &q);
		int mode = s->mode;
		struct obj *o;
		bool ok = true;

		if (rc) {
			reply(fd, SRV_OK, DFKV_STATUS_INVALID, 0, NULL, 0);
			break;
		}
		free(payload);
		payload = q.payload_len ? malloc(q.payload_len) : NULL;
		if (q.payload_len && (!payload || !rd_full(fd, payload, q.payload_len)))
			break;
		if (mode == SRV_CLOSE)
			break;
		if (mode == SRV_STALL) {
			pthread_mutex_lock(&s->lock);
			s->stalls++;
			pthread_mutex_unlock(&s->lock);
			while (!s->stop && s->mode == SRV_STALL)
				usleep(10000);
			break;
		}
		pthread_mutex_lock(&s->lock);
		s->requests++;
		if (q.op == DFKV_OP_TOUCH || q.op == DFKV_OP_PROBE ||
		    q.op == DFKV_OP_LEASE)
			dfkv_wire_keys_decode(payload, q.payload_len, DFKV_KEYS_MAX,
					      keys, &nk);
		if (forbidden(s, &au, &q, keys, nk)) {
			s->forbidden++;
			q.op = 0;	/* answered below */
			ok = reply(fd, mode, DFKV_STATUS_FORBIDDEN, 0, NULL, 0);
		}
		switch (q.op) {
		case 0:
			break;
		case DFKV_OP_HELLO:
			ok = do_hello(fd, mode, s, &au, &q, payload);
			break;
		case DFKV_OP_AUTH:
			ok = do_auth(fd, mode, s, &au, &q, payload);
			break;
		case DFKV_OP_PUT:
			s->puts++;
			o = find(s, q.tenant, q.id);
			if (!o && s->nobjs < SRV_OBJS) {
				o = &s->objs[s->nobjs++];
				o->tenant = q.tenant;
				memcpy(o->id, q.id, 16);
				o->data = payload;
				o->len = q.payload_len;
				payload = NULL;
			}
			ok = o ? reply(fd, mode, 0, o->len, NULL, 0) :
				reply(fd, mode, DFKV_STATUS_CACHE_FULL, 0, NULL, 0);
			break;
		case DFKV_OP_GET:
			o = find(s, q.tenant, q.id);
			if (!o) {
				ok = reply(fd, mode, DFKV_STATUS_NOT_FOUND, 0, NULL, 0);
			} else if (q.offset > o->len) {
				ok = reply(fd, mode, DFKV_STATUS_INVALID, o->len, NULL, 0);
			} else {
				uint64_t n = o->len - q.offset;

				if (q.length && q.length < n)
					n = q.length;
				ok = reply(fd, mode, 0, o->len, o->data + q.offset, n);
			}
			break;
		case DFKV_OP_EXIST:
			o = find(s, q.tenant, q.id);
			ok = reply(fd, mode, o ? 0 : DFKV_STATUS_NOT_FOUND,
				   o ? o->len : 0, NULL, 0);
			break;
		case DFKV_OP_REMOVE:
			o = find(s, q.tenant, q.id);
			if (o) {
				free(o->data);
				*o = s->objs[--s->nobjs];
			}
			ok = reply(fd, mode, 0, 0, NULL, 0);
			break;
		case DFKV_OP_TOUCH:
		case DFKV_OP_PROBE:
		case DFKV_OP_LEASE: {
			uint8_t out[8 * (DFKV_KEYS_MAX + 1)];
			uint32_t hits = 0;

			if (q.op == DFKV_OP_TOUCH) {
				s->touch_walks[q.offset < 2 ? q.offset : 2]++;
				ok = reply(fd, mode, q.offset < 2 ? 0 :
					   DFKV_STATUS_INVALID, 0, NULL, 0);
				break;
			}
			for (uint32_t i = 0; i < nk; i++) {
				o = find(s, keys[i].tenant, keys[i].id);
				res[i + 1] = o ? o->len : 0;
				if (o && hits == i)
					hits++;
			}
			if (q.op == DFKV_OP_PROBE) {
				dfkv_wire_u64s_encode(res + 1, nk, out);
				ok = reply(fd, mode, 0, 0, out, 8ULL * nk);
			} else {
				res[0] = hits ? ++s->lease_seq : 0;
				dfkv_wire_u64s_encode(res, hits + 1, out);
				ok = reply(fd, mode, 0, 0, out, 8ULL * (hits + 1));
			}
			break;
		}
		case DFKV_OP_RELEASE:
			ok = reply(fd, mode, q.offset ? 0 : DFKV_STATUS_NOT_FOUND,
				   0, NULL, 0);
			break;
		default:
			ok = reply(fd, mode, DFKV_STATUS_UNSUPPORTED, 0, NULL, 0);
		}
		pthread_mutex_unlock(&s->lock);
		if (!ok || mode == SRV_BAD_EPOCH || mode == SRV_LONG_DATA)
			break;
	}
	free(payload);
	shutdown(fd, SHUT_RDWR);
	return NULL;
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;

	while (!s->stop) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		struct conn_arg *ca;
		int fd;

		if (poll(&p, 1, 20) <= 0)
			continue;
		fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
		pthread_mutex_lock(&s->lock);
		if (s->nconns == SRV_CONNS) {
			pthread_mutex_unlock(&s->lock);
			close(fd);
			continue;
		}
		ca = malloc(sizeof(*ca));
		ca->s = s;
		ca->fd = fd;
		s->conns[s->nconns] = fd;
		pthread_create(&s->cthreads[s->nconns], NULL, conn_main, ca);
		s->nconns++;
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

int srv_start(struct srv *s, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int one = 1;

	s->stop = false;
	s->nconns = 0;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(s->lfd, 64))
		return -1;
	getsockname(s->lfd, (struct sockaddr *)&a, &al);
	s->port = ntohs(a.sin_port);
	pthread_mutex_init(&s->lock, NULL);
	return pthread_create(&s->thread, NULL, srv_main, s);
}

void srv_stop(struct srv *s)
{
	s->stop = true;
	pthread_join(s->thread, NULL);
	close(s->lfd);
	for (size_t i = 0; i < s->nconns; i++)
		shutdown(s->conns[i], SHUT_RDWR);
	for (size_t i = 0; i < s->nconns; i++) {
		pthread_join(s->cthreads[i], NULL);
		close(s->conns[i]);
	}
	s->nconns = 0;
}

void srv_free(struct srv *s)
{
	for (size_t i = 0; i < s->nobjs; i++)
		free(s->objs[i].data);
	s->nobjs = 0;
	pthread_mutex_destroy(&s->lock);
}
