/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tests of libdfkv's asynchronous batches share (the VM's
 * selftests/dfkv_client_async.c and selftests/unit/test_client_tcp.c): a
 * set of keys with patterned values in two segments each, submitting a
 * slice of it as one batch, and reaping on the client's eventfd.
 */
#ifndef DFKV_SELFTEST_CLIENT_ASYNC_H
#define DFKV_SELFTEST_CLIENT_ASYNC_H

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dfkv.h>

/* n keys "<tag>-<i>", values of vlen bytes stored from two segments. */
struct async_set {
	size_t n, vlen, split;
	char (*names)[24];
	const void **keys;
	uint64_t *kl;
	uint8_t *vals, *outs;
	struct dfkv_iov *iov;
	const struct dfkv_iov **iovs;
	size_t *cnts;
};

static inline void async_pattern(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

/* Point key i's two segments at base, split at split bytes. */
static inline void async_set_segs(struct async_set *s, uint8_t *base,
				  size_t split)
{
	for (size_t i = 0; i < s->n; i++) {
		uint8_t *v = base + i * s->vlen;

		s->iov[2 * i] = (struct dfkv_iov){ v, split };
		s->iov[2 * i + 1] = (struct dfkv_iov){ v + split,
						       s->vlen - split };
	}
}

/* 0, or -1 when memory ran out (async_set_free cleans up either way). */
static inline int async_set_init(struct async_set *s, const char *tag,
				 size_t n, size_t vlen)
{
	s->n = n;
	s->vlen = vlen;
	s->names = calloc(n, sizeof(*s->names));
	s->keys = calloc(n, sizeof(*s->keys));
	s->kl = calloc(n, sizeof(*s->kl));
	s->vals = malloc(n * vlen);
	s->outs = calloc(n, vlen);
	s->iov = calloc(2 * n, sizeof(*s->iov));
	s->iovs = calloc(n, sizeof(*s->iovs));
	s->cnts = calloc(n, sizeof(*s->cnts));
	if (!s->names || !s->keys || !s->kl || !s->vals || !s->outs ||
	    !s->iov || !s->iovs || !s->cnts)
		return -1;
	for (size_t i = 0; i < n; i++) {
		snprintf(s->names[i], sizeof(s->names[i]), "%.6s-%u", tag,
			 (unsigned int)i);
		s->keys[i] = s->names[i];
		s->kl[i] = strlen(s->names[i]);
		async_pattern(s->vals + i * vlen, vlen, (unsigned int)i);
		s->iovs[i] = &s->iov[2 * i];
		s->cnts[i] = 2;
	}
	async_set_segs(s, s->vals, vlen / 3);
	return 0;
}

/* GETs land in s->outs, split elsewhere than the values were. */
static inline void async_set_outs(struct async_set *s)
{
	async_set_segs(s, s->outs, s->vlen * 2 / 3);
}

static inline void async_set_free(struct async_set *s)
{
	free(s->names);
	free(s->keys);
	free(s->kl);
	free(s->vals);
	free(s->outs);
	free(s->iov);
	free(s->iovs);
	free(s->cnts);
}

/* Keys [from, from + n) of s as one batch of op; NULL when refused. */
static inline struct dfkv_batch *async_submit(struct dfkv_client *c,
					      uint32_t op, struct async_set *s,
					      size_t from, size_t n,
					      uint64_t user)
{
	struct dfkv_batch_desc d = {
		.size = sizeof(d), .op = op, .n = n, .keys = s->keys + from,
		.key_lens = s->kl + from, .user = user,
	};
	struct dfkv_batch *b = NULL;

	if (op == DFKV_OP_PUT || op == DFKV_OP_GET) {
		d.iovs = s->iovs + from;
		d.iovcnts = s->cnts + from;
	}
	return dfkv_submit(c, &d, &b) ? NULL : b;
}

/*
 * Reap until want batches came, polling the eventfd; how many came (a
 * negative dfkv_error from dfkv_reap).  The minute's bound only stops a
 * broken library from hanging a test.
 */
static inline int async_reap(struct dfkv_client *c, struct dfkv_batch **out,
			     int want)
{
	struct pollfd p = { .fd = dfkv_batch_fd(c), .events = POLLIN };
	int got = 0;

	while (got < want && poll(&p, 1, 60000) > 0) {
		int n = dfkv_reap(c, out + got, want - got);

		if (n < 0)
			return n;
		got += n;
	}
	return got;
}

/*
 * Submit s as nb batches of nk operations op (batch i: keys [i * nk,
 * (i + 1) * nk), user i), reap them all on the eventfd and free them:
 * 0 when each came back exactly once, as itself, done, with status OK
 * and every operation OK (GET: s->vlen bytes read); else -1, saying why.
 */
static inline int async_run_all(struct dfkv_client *c, uint32_t op,
				struct async_set *s, size_t nb, size_t nk)
{
	struct dfkv_batch **b = calloc(nb, sizeof(*b));
	struct dfkv_batch **got = calloc(nb, sizeof(*got));
	const char *why = NULL;
	int n = 0;

	if (!b || !got)
		why = "no memory";
	for (size_t i = 0; !why && i < nb; i++) {
		b[i] = async_submit(c, op, s, i * nk, nk, i);
		if (!b[i])
			why = "submit refused";
	}
	if (!why && (n = async_reap(c, got, (int)nb)) != (int)nb)
		why = "not every batch was reaped";
	for (int i = 0; !why && i < n; i++) {
		uint64_t u = dfkv_batch_user(got[i]), len;
		int st;

		if (u >= nb || got[i] != b[u] || !dfkv_batch_done(got[i]) ||
		    dfkv_batch_op(got[i]) != op || dfkv_batch_status(got[i]))
			why = "a batch came back wrong";
		b[u < nb ? u : 0] = NULL;	/* a second time: wrong above */
		for (size_t k = 0; !why && k < nk; k++)
			if (dfkv_batch_result(got[i], k, &st, &len) || st ||
			    (op == DFKV_OP_GET && len != s->vlen))
				why = "an operation failed";
	}
	if (why)
		fprintf(stderr, "# async_run_all: %s\n", why);
	for (int i = 0; i < n; i++)
		dfkv_batch_free(got[i]);
	free(b);
	free(got);
	return why ? -1 : 0;
}

#endif /* DFKV_SELFTEST_CLIENT_ASYNC_H */
