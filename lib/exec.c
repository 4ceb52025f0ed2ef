// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv execution (see exec.h): routed requests grouped by transport,
 * skipped while their member cools down, refused when longer than the
 * node takes, run through the transports' exec, and their transport
 * failures turned into misses or dropped writes; the client's per-op
 * result counters and its misses by cause.
 */
#include "exec.h"
#include "transport.h"

static bool is_transport_error(int s)
{
	return s == DFKV_E_UNAVAILABLE || s == DFKV_E_TIMEOUT ||
	       s == DFKV_E_PROTO || s == DFKV_E_AUTH;
}

static bool is_read(uint8_t op)
{
	return op == DFKV_OP_GET || op == DFKV_OP_EXIST ||
	       op == DFKV_OP_PROBE || op == DFKV_OP_LEASE;
}

/*
 * The misses of read r (before a transport failure made it a miss):
 * GET and EXIST one key; PROBE each key (every key when its node was
 * not reached); LEASE one, the first key it did not lease (the node
 * looks no further).
 */
static uint64_t read_misses(const struct dfkv_req *r, bool reached)
{
	uint64_t n = 0;

	switch (r->op) {
	case DFKV_OP_GET:
	case DFKV_OP_EXIST:
		return !reached || r->status == DFKV_STATUS_NOT_FOUND;
	case DFKV_OP_PROBE:
		if (!reached || r->status == DFKV_STATUS_NOT_FOUND)
			return r->nkeys;
		if (r->status == DFKV_STATUS_OK)
			for (uint32_t i = 0; i < r->nkeys; i++)
				n += !r->results[i];
		return n;
	case DFKV_OP_LEASE:
		return !reached || ((r->status == DFKV_STATUS_OK ||
				     r->status == DFKV_STATUS_NOT_FOUND) &&
				    r->nr_hits < r->nkeys);
	}
	return 0;
}

/* Count read r's misses by cause; s: its status from the transport. */
static void count_misses(struct dfkv_client *c, const struct dfkv_req *r,
			 int s)
{
	bool reached = !is_transport_error(s);
	enum dfkv_miss_cause cause = reached ? DFKV_MISS_ABSENT :
		s == DFKV_E_AUTH ? DFKV_MISS_AUTH : DFKV_MISS_UNAVAILABLE;
	uint64_t n = read_misses(r, reached);

	if (n)
		atomic_fetch_add(&c->misses[cause], n);
}

/* A PUT longer than its node's max_value_bytes, once the node told it. */
static bool too_large(const struct dfkv_req *r)
{
	uint64_t max = atomic_load(&r->peer->max_value);

	return r->op == DFKV_OP_PUT && max && r->val_len > max;
}

/* Requests of one transport, for dfkv_execute. */
struct tgroup {
	const struct dfkv_transport_ops *t;
	struct dfkv_req **reqs;
	size_t n;
};

void dfkv_execute(struct dfkv_client *c, struct dfkv_req **reqs, size_t n)
{
	struct tgroup g[DFKV_TRANSPORTS_MAX] = { 0 };
	size_t ng = 0;

	for (size_t i = 0; i < n; i++) {
		struct dfkv_req *r = reqs[i];
		size_t k = 0;

		r->status = DFKV_E_NOT_RUN;
		if (!dfkv_peer_usable(c, r->peer) || !r->peer->t) {
			r->status = r->peer->t ?
				dfkv_peer_down_status(r->peer) :
				DFKV_E_UNAVAILABLE;
			atomic_fetch_add(&c->peer_skips, 1);
			continue;
		}
		if (too_large(r)) {
			r->status = DFKV_STATUS_TOO_LARGE;
			continue;
		}
		while (k < ng && g[k].t != r->peer->t)
			k++;
		if (k == ng) {
			g[ng].t = r->peer->t;
			g[ng].reqs = calloc(n - i, sizeof(*g[ng].reqs));
			if (!g[ng].reqs) {
				r->status = DFKV_E_NOMEM;
				continue;
			}
			ng++;
		}
		g[k].reqs[g[k].n++] = r;
	}
	for (size_t k = 0; k < ng; k++)
		g[k].t->exec(c, g[k].reqs, g[k].n,
			     dfkv_now_ms() + c->opt.io_timeout_ms);
	for (size_t i = 0; i < n; i++) {
		struct dfkv_req *r = reqs[i];
		int s = r->status;

		if (is_read(r->op))
			count_misses(c, r, s);
		if (is_transport_error(s)) {
			switch (r->op) {
			case DFKV_OP_GET:
			case DFKV_OP_EXIST:
			case DFKV_OP_PROBE:
			case DFKV_OP_LEASE:
				r->status = DFKV_STATUS_NOT_FOUND;
				r->stored_len = r->data_len = 0;
				r->nr_hits = 0;
				r->lease_id = 0;
				atomic_fetch_add(&c->degraded_reads, 1);
				break;
			default:
				r->status = DFKV_E_UNAVAILABLE;
				atomic_fetch_add(&c->dropped_writes, 1);
			}
		}
		if (r->op < __DFKV_OP_MAX && r->status < __DFKV_STATUS_MAX &&
		    r->status > __DFKV_E_MIN)
			atomic_fetch_add(&c->ops[r->op][r->status - __DFKV_E_MIN], 1);
	}
	for (size_t k = 0; k < ng; k++)
		free(g[k].reqs);
}
