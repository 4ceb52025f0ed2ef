// SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
/*
 * libdfkv asynchronous batches (dfkv.h, "Asynchronous batches"): batch
 * handles, the client's queue of submitted batches, its one completion
 * thread, the eventfd that tells completed batches are waiting, reaping,
 * cancellation, waiting and the teardown dfkv_close runs.
 *
 * A batch is routed and its requests built when it is submitted (route.c,
 * sg.c, keyed.c: the same the synchronous calls use).  The
 * completion thread takes the queued requests in submission order, a
 * round of at most round_size() at a time across every queued batch, and
 * runs each round through dfkv_execute(): the transports' pipelines, peer
 * health and deadlines are the synchronous batches'.  After a round, a
 * batch whose requests all ran, or that was cancelled (the requests not
 * taken yet become DFKV_E_CANCELLED), is finished: its results are
 * collected, it moves to the completed list and the eventfd is signalled.
 * The thread is started by the first submit and stopped by dfkv_close.
 */
#include <errno.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "async.h"
#include "exec.h"
#include "keyed.h"
#include "lease.h"
#include "route.h"
#include "sg.h"

static_assert(sizeof(struct dfkv_batch_desc) == DFKV_BATCH_DESC_SIZE_VER0,
	      "batch descriptor layout");

#define ROUND_MIN	64
#define ROUND_MAX	8192

struct dfkv_batch {
	struct dfkv_client *c;
	struct dfkv_batch *next;		/* queue (pending batches) */
	struct dfkv_batch *dnext, *dprev;	/* completed, not reaped */
	struct dfkv_batch *anext, *aprev;	/* every live batch */
	uint32_t op;
	uint64_t user;
	size_t n;

	/* PUT, GET, EXIST: one request per key */
	struct dfkv_req *r;
	size_t *run;			/* keys whose request is to run */
	size_t nrun, sent;		/* run[0..sent) were taken */

	/* TOUCH, PROBE, LEASE: one request per peer; RELEASE: per node */
	struct dfkv_keyed k;
	bool keyed_sent;
	struct dfkv_lease *rel;		/* RELEASE: the lease, until finished */

	/* results */
	int *st;
	uint64_t *len;
	uint64_t hits;
	struct dfkv_lease *lease;
	int status;

	atomic_bool cancel;
	atomic_bool done;
	bool listed;			/* on the completed list */
	bool freed;			/* the caller let go of it */
};

struct dfkv_async {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* the thread: queue or stop */
	pthread_cond_t finished;	/* dfkv_batch_wait */
	pthread_t thread;
	bool started, stop;
	int efd;			/* -1 until first asked for */
	struct dfkv_batch *qhead, **qtail;
	struct dfkv_batch done;		/* list heads (dnext/dprev, anext/aprev) */
	struct dfkv_batch all;
};

static bool keyed_op(uint32_t op)
{
	return op == DFKV_OP_TOUCH || op == DFKV_OP_PROBE ||
	       op == DFKV_OP_LEASE || op == DFKV_OP_RELEASE;
}

/* ---------------------------------------------------------- lifetime */

int dfkv_async_open(struct dfkv_client *c)
{
	struct dfkv_async *a = calloc(1, sizeof(*a));
	pthread_condattr_t ca;

	if (!a)
		return DFKV_E_NOMEM;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->finished, &ca);
	pthread_condattr_destroy(&ca);
	a->efd = -1;
	a->qtail = &a->qhead;
	a->done.dnext = a->done.dprev = &a->done;
	a->all.anext = a->all.aprev = &a->all;
	c->async = a;
	return 0;
}

static void batch_release(struct dfkv_batch *b)
{
	if (b->r)
		for (size_t i = 0; i < b->n; i++)
			free(b->r[i].iov);
	free(b->r);
	free(b->run);
	dfkv_keyed_free(&b->k);
	free(b->st);
	free(b->len);
	free(b);
}

/* Unlink b from the live and completed lists (lock held). */
static void batch_unlink(struct dfkv_batch *b)
{
	b->aprev->anext = b->anext;
	b->anext->aprev = b->aprev;
	if (b->listed) {
		b->dprev->dnext = b->dnext;
		b->dnext->dprev = b->dprev;
		b->listed = false;
	}
}

void dfkv_async_close(struct dfkv_client *c)
{
	struct dfkv_async *a = c->async;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	if (a->started)
		pthread_join(a->thread, NULL);	/* the queue is empty now */
	/* leases not handed over stay on the client's list: close drops them */
	while (a->all.anext != &a->all) {
		struct dfkv_batch *b = a->all.anext;

		batch_unlink(b);
		batch_release(b);
	}
	if (a->efd >= 0)
		close(a->efd);
	pthread_cond_destroy(&a->work);
	pthread_cond_destroy(&a->finished);
	pthread_mutex_destroy(&a->lock);
	free(a);
	c->async = NULL;
}

/* ------------------------------------------------------------ finish */

/* The results of a data batch: run[0..sent) ran, the rest are cancelled. */
static void finish_data(struct dfkv_batch *b)
{
	for (size_t j = 0; j < b->nrun; j++) {
		size_t i = b->run[j];
		const struct dfkv_req *r = &b->r[i];

		if (j >= b->sent) {
			b->st[i] = DFKV_E_CANCELLED;
			continue;
		}
		b->st[i] = r->status;
		if (b->op == DFKV_OP_GET && r->status == DFKV_STATUS_OK)
			b->len[i] = r->data_len;
		else if ((b->op == DFKV_OP_GET &&
			  r->status == DFKV_STATUS_TOO_LARGE) ||
			 (b->op == DFKV_OP_EXIST && r->status == DFKV_STATUS_OK))
			b->len[i] = r->stored_len;
	}
	b->status = DFKV_STATUS_OK;
	for (size_t i = 0; i < b->n && !b->status; i++)
		if (b->st[i] < 0)
			b->status = b->st[i];
	for (size_t i = 0; i < b->n; i++) {
		free(b->r[i].iov);
		b->r[i].iov = NULL;
	}
}

static void finish_keyed(struct dfkv_client *c, struct dfkv_batch *b)
{
	if (b->op == DFKV_OP_RELEASE) {
		/* sent or not, the lease is gone: what was not released
		 * goes with its connections */
		int st = dfkv_lease_release_finish(c, b->rel, &b->k);

		b->rel = NULL;
		b->status = b->keyed_sent ? st : DFKV_E_CANCELLED;
		b->st[0] = b->status;
		return;
	}
	if (!b->keyed_sent) {
		b->status = DFKV_E_CANCELLED;
	} else if (b->op == DFKV_OP_PROBE) {
		dfkv_probe_results(&b->k, b->len);
		while (b->hits < b->n && b->len[b->hits])
			b->hits++;
		b->status = dfkv_keyed_status(&b->k);
	} else if (b->op == DFKV_OP_LEASE) {
		size_t hits;

		b->status = dfkv_lease_results(c, &b->k, b->len, &hits,
					       &b->lease);
		b->hits = hits;
		if (!b->status)
			b->status = dfkv_keyed_status(&b->k);
	} else {
		b->status = dfkv_keyed_status(&b->k);
	}
	for (size_t i = 0; i < b->n; i++)
		b->st[i] = b->status;
	dfkv_keyed_free(&b->k);
}

/*
 * b is finished (lock held): to the completed list, or, when the caller
 * let go of it, onto *gone to be freed outside the lock.
 */
static void complete(struct dfkv_async *a, struct dfkv_batch *b,
		     struct dfkv_batch **gone)
{
	atomic_store_explicit(&b->done, true, memory_order_release);
	if (b->freed) {
		batch_unlink(b);
		b->next = *gone;
		*gone = b;
		return;
	}
	b->dprev = a->done.dprev;
	b->dnext = &a->done;
	a->done.dprev->dnext = b;
	a->done.dprev = b;
	b->listed = true;
	if (a->efd >= 0) {
		uint64_t one = 1;

		if (write(a->efd, &one, sizeof(one)) < 0)
			(void)0;	/* the counter is saturated: readable */
	}
}

/* ---------------------------------------------------------- the thread */

/* Requests per round: enough to fill every connection's window twice. */
static size_t round_size(const struct dfkv_client *c)
{
	size_t r = atomic_load(&c->npeers) * c->opt.conns_per_peer *
		   c->opt.batch_concurrency * 2;

	return r < ROUND_MIN ? ROUND_MIN : r > ROUND_MAX ? ROUND_MAX : r;
}

/*
 * Take the next round's requests from the queue (lock held) into
 * round[0..*nr): budget of them, or one keyed batch whole (round has
 * budget + DFKV_KEYS_MAX slots).
 */
static void round_take(struct dfkv_async *a, size_t budget,
		       struct dfkv_req **round, size_t *nr)
{
	bool leasing = false;

	*nr = 0;
	for (struct dfkv_batch *b = a->qhead; b && budget; b = b->next) {
		if (atomic_load(&b->cancel) || a->stop)
			continue;
		if (b->op == DFKV_OP_LEASE && !b->keyed_sent) {
			/*
			 * A granted lease keeps the connection it came over
			 * until its RELEASE: one LEASE batch (one request per
			 * peer) a round, so no two leases share one.
			 */
			if (leasing)
				continue;
			leasing = true;
		}
		if (b->op == DFKV_OP_RELEASE) {
			/*
			 * Its requests name the connections their lease
			 * holds, and an exec runs a peer's requests on one
			 * held connection: a round of its own.
			 */
			if (b->keyed_sent || *nr)
				continue;
			for (size_t j = 0; j < b->k.nreq; j++)
				round[(*nr)++] = b->k.rp[j];
			b->keyed_sent = true;
			return;
		}
		if (keyed_op(b->op)) {
			if (b->keyed_sent || (b->k.nreq > budget && *nr))
				continue;
			for (size_t j = 0; j < b->k.nreq; j++)
				round[(*nr)++] = b->k.rp[j];
			b->keyed_sent = true;
			budget -= b->k.nreq < budget ? b->k.nreq : budget;
			continue;
		}
		while (b->sent < b->nrun && budget) {
			round[(*nr)++] = &b->r[b->run[b->sent++]];
			budget--;
		}
	}
}

/* After a round (lock held): finish what ran to the end or was cancelled. */
static void round_sweep(struct dfkv_client *c, struct dfkv_async *a,
			struct dfkv_batch **gone)
{
	struct dfkv_batch **pp = &a->qhead, *b;

	while ((b = *pp)) {
		bool all = keyed_op(b->op) ? b->keyed_sent : b->sent == b->nrun;

		if (!all && !atomic_load(&b->cancel) && !a->stop) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		if (keyed_op(b->op))
			finish_keyed(c, b);
		else
			finish_data(b);
		complete(a, b, gone);
	}
	a->qtail = pp;
	pthread_cond_broadcast(&a->finished);
}

static void *worker(void *arg)
{
	struct dfkv_client *c = arg;
	struct dfkv_async *a = c->async;
	size_t cap = round_size(c), nr;
	/* a keyed batch goes whole (a request per peer, at most a key each) */
	struct dfkv_req **round = calloc(cap + DFKV_KEYS_MAX, sizeof(*round));

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct dfkv_batch *gone = NULL;
		bool stopping;

		while (!a->qhead && !a->stop)
			pthread_cond_wait(&a->work, &a->lock);
		if (!a->qhead)
			break;
		nr = 0;
		if (round)
			round_take(a, cap, round, &nr);
		else	/* no memory for a round: the queue fails */
			for (struct dfkv_batch *b = a->qhead; b; b = b->next)
				atomic_store(&b->cancel, true);
		pthread_mutex_unlock(&a->lock);
		if (nr)
			dfkv_execute(c, round, nr);
		pthread_mutex_lock(&a->lock);
		round_sweep(c, a, &gone);
		stopping = a->stop;
		pthread_mutex_unlock(&a->lock);
		while (gone) {
			struct dfkv_batch *b = gone;

			gone = b->next;
			/* closing: dfkv_close drops the lease with the rest */
			if (b->lease && !stopping)
				dfkv_lease_release(c, b->lease);
			batch_release(b);
		}
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	free(round);
	return NULL;
}

/* ------------------------------------------------------------ submit */

static int efd_get(struct dfkv_async *a)
{
	if (a->efd < 0) {
		a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (a->efd < 0)
			return DFKV_E_SYS;
		/* completed before anyone asked: readable from the start */
		if (a->done.dnext != &a->done) {
			uint64_t one = 1;

			if (write(a->efd, &one, sizeof(one)) < 0)
				return DFKV_E_SYS;
		}
	}
	return a->efd;
}

static int desc_check(const struct dfkv_batch_desc *d)
{
	switch (d->op) {
	case DFKV_OP_PUT:
	case DFKV_OP_GET:
		if (!d->iovs || !d->iovcnts)
			return DFKV_E_INVAL;
		/* fall through */
	case DFKV_OP_EXIST:
		if (d->n > DFKV_CLIENT_BATCH_MAX || d->flags || d->ttl_ms)
			return DFKV_E_INVAL;
		break;
	case DFKV_OP_TOUCH:
		if (d->flags & ~DFKV_TOUCH_REVERSE || d->ttl_ms)
			return DFKV_E_INVAL;
		break;
	case DFKV_OP_PROBE:
		if (d->flags || d->ttl_ms)
			return DFKV_E_INVAL;
		break;
	case DFKV_OP_LEASE:
		if (d->flags || d->ttl_ms > DFKV_LEASE_TTL_MAX_MS)
			return DFKV_E_INVAL;
		break;
	default:
		return DFKV_E_INVAL;
	}
	return d->n && d->keys && d->key_lens ? 0 : DFKV_E_INVAL;
}

/* The requests of a PUT, GET or EXIST batch; a bad key fails its slot. */
static int data_prepare(struct dfkv_client *c, struct dfkv_batch *b,
			const struct dfkv_batch_desc *d)
{
	b->r = calloc(b->n, sizeof(*b->r));
	b->run = calloc(b->n, sizeof(*b->run));
	if (!b->r || !b->run)
		return DFKV_E_NOMEM;
	for (size_t i = 0; i < b->n; i++) {
		struct dfkv_req *r = &b->r[i];
		int s;

		r->op = (uint8_t)b->op;
		s = dfkv_route(c, d->keys[i], d->key_lens[i], &r->key, &r->peer);
		if (!s && b->op == DFKV_OP_PUT)
			s = dfkv_put_sg_load(r, d->iovs[i], d->iovcnts[i]);
		else if (!s && b->op == DFKV_OP_GET)
			s = dfkv_get_sg_load(r, d->iovs[i], d->iovcnts[i]);
		if (s == DFKV_E_NOMEM)
			return s;
		b->st[i] = s ? s : DFKV_E_NOT_RUN;
		if (!s)
			b->run[b->nrun++] = i;
	}
	return 0;
}

/* A new batch of op over n results (the caller fills its requests). */
static struct dfkv_batch *batch_new(struct dfkv_client *c, uint32_t op,
				    size_t n, uint64_t user)
{
	struct dfkv_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->c = c;
	b->op = op;
	b->user = user;
	b->n = n;
	b->st = calloc(n, sizeof(*b->st));
	b->len = calloc(n, sizeof(*b->len));
	atomic_init(&b->cancel, false);
	atomic_init(&b->done, false);
	if (!b->st || !b->len) {
		batch_release(b);
		return NULL;
	}
	return b;
}

/* Queue b for the completion thread (started on the first batch). */
static int batch_queue(struct dfkv_client *c, struct dfkv_batch *b)
{
	struct dfkv_async *a = c->async;

	pthread_mutex_lock(&a->lock);
	if (!a->started) {
		if (pthread_create(&a->thread, NULL, worker, c)) {
			pthread_mutex_unlock(&a->lock);
			return DFKV_E_SYS;
		}
		a->started = true;
	}
	b->anext = &a->all;
	b->aprev = a->all.aprev;
	a->all.aprev->anext = b;
	a->all.aprev = b;
	*a->qtail = b;
	a->qtail = &b->next;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	return 0;
}

DFKV_API int dfkv_submit(struct dfkv_client *c, const struct dfkv_batch_desc *d,
			 struct dfkv_batch **out)
{
	struct dfkv_batch_desc desc;
	struct dfkv_batch *b;
	int err;

	if (out)
		*out = NULL;
	if (!c || !d || !out)
		return DFKV_E_INVAL;
	err = dfkv_copy_struct(&desc, sizeof(desc), d,
			       DFKV_BATCH_DESC_SIZE_VER0);
	if (!err)
		err = desc_check(&desc);
	if (err)
		return err;
	b = batch_new(c, desc.op, (size_t)desc.n, desc.user);
	if (!b)
		return DFKV_E_NOMEM;
	if (keyed_op(b->op)) {
		err = dfkv_keyed_prepare(c, (uint8_t)b->op, desc.keys,
					 desc.key_lens, b->n, &b->k);
		for (size_t j = 0; !err && j < b->k.nreq; j++) {
			if (b->op == DFKV_OP_LEASE)
				b->k.reqs[j].length = desc.ttl_ms;
			if (b->op == DFKV_OP_TOUCH)
				b->k.reqs[j].offset =
					desc.flags & DFKV_TOUCH_REVERSE ? 1 : 0;
		}
	} else {
		err = data_prepare(c, b, &desc);
	}
	if (!err)
		err = batch_queue(c, b);
	if (err) {
		batch_release(b);
		return err;
	}
	*out = b;
	return 0;
}

DFKV_API int dfkv_submit_release(struct dfkv_client *c, struct dfkv_lease *l,
				 uint64_t user, struct dfkv_batch **out)
{
	struct dfkv_batch *b;
	int err;

	if (out)
		*out = NULL;
	if (!c || !l || !out)
		return DFKV_E_INVAL;
	b = batch_new(c, DFKV_OP_RELEASE, 1, user);
	err = b ? dfkv_lease_release_prepare(c, l, &b->k) : DFKV_E_NOMEM;
	if (err) {
		dfkv_lease_drop(c, l);
		if (b)
			batch_release(b);
		return err;
	}
	b->rel = l;
	err = batch_queue(c, b);
	if (err) {
		dfkv_lease_release_finish(c, l, &b->k);
		batch_release(b);
		return err;
	}
	*out = b;
	return 0;
}

/* ---------------------------------------------------- reap and wait */

DFKV_API int dfkv_batch_fd(struct dfkv_client *c)
{
	int fd;

	if (!c)
		return DFKV_E_INVAL;
	pthread_mutex_lock(&c->async->lock);
	fd = efd_get(c->async);
	pthread_mutex_unlock(&c->async->lock);
	return fd;
}

DFKV_API int dfkv_reap(struct dfkv_client *c, struct dfkv_batch **out,
		       int max)
{
	struct dfkv_async *a;
	int n = 0;

	if (!c || !out || max < 0)
		return DFKV_E_INVAL;
	a = c->async;
	pthread_mutex_lock(&a->lock);
	while (n < max && a->done.dnext != &a->done) {
		struct dfkv_batch *b = a->done.dnext;

		b->dprev->dnext = b->dnext;
		b->dnext->dprev = b->dprev;
		b->listed = false;
		out[n++] = b;
	}
	/* nothing left to reap: the eventfd stops being readable */
	if (a->done.dnext == &a->done && a->efd >= 0) {
		uint64_t v;

		if (read(a->efd, &v, sizeof(v)) < 0)
			(void)0;	/* EAGAIN: it was not readable */
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}

DFKV_API int dfkv_batch_cancel(struct dfkv_batch *b)
{
	if (!b)
		return DFKV_E_INVAL;
	atomic_store(&b->cancel, true);
	return 0;
}

DFKV_API int dfkv_batch_wait(struct dfkv_batch *b, int timeout_ms)
{
	struct dfkv_async *a;
	struct timespec until;
	int err = 0;

	if (!b)
		return DFKV_E_INVAL;
	a = b->c->async;
	clock_gettime(CLOCK_MONOTONIC, &until);
	if (timeout_ms >= 0) {
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&a->lock);
	while (!atomic_load(&b->done) && !err) {
		if (timeout_ms < 0)
			pthread_cond_wait(&a->finished, &a->lock);
		else if (pthread_cond_timedwait(&a->finished, &a->lock,
						&until) == ETIMEDOUT &&
			 !atomic_load(&b->done))
			err = DFKV_E_TIMEOUT;
	}
	pthread_mutex_unlock(&a->lock);
	return err;
}

/* ----------------------------------------------------------- results */

static bool done(const struct dfkv_batch *b)
{
	return b && atomic_load_explicit(&b->done, memory_order_acquire);
}

DFKV_API int dfkv_batch_done(const struct dfkv_batch *b)
{
	return done(b);
}

DFKV_API uint64_t dfkv_batch_user(const struct dfkv_batch *b)
{
	return b ? b->user : 0;
}

DFKV_API uint32_t dfkv_batch_op(const struct dfkv_batch *b)
{
	return b ? b->op : 0;
}

DFKV_API int dfkv_batch_status(const struct dfkv_batch *b)
{
	return done(b) ? b->status : DFKV_E_INVAL;
}

DFKV_API int dfkv_batch_result(const struct dfkv_batch *b, uint64_t i,
			       int *status, uint64_t *len)
{
	if (status)
		*status = DFKV_E_NOT_RUN;
	if (len)
		*len = 0;
	if (!done(b) || !status || i >= b->n)
		return DFKV_E_INVAL;
	*status = b->st[i];
	if (len)
		*len = b->len[i];
	return 0;
}

DFKV_API uint64_t dfkv_batch_hits(const struct dfkv_batch *b)
{
	return done(b) ? b->hits : 0;
}

DFKV_API struct dfkv_lease *dfkv_batch_lease(struct dfkv_batch *b)
{
	struct dfkv_lease *l = NULL;

	if (done(b)) {
		l = b->lease;
		b->lease = NULL;
	}
	return l;
}

DFKV_API void dfkv_batch_free(struct dfkv_batch *b)
{
	struct dfkv_async *a;
	struct dfkv_lease *l;

	if (!b)
		return;
	a = b->c->async;
	pthread_mutex_lock(&a->lock);
	if (!atomic_load(&b->done)) {
		b->freed = true;	/* the thread frees it when it finishes */
		atomic_store(&b->cancel, true);
		pthread_mutex_unlock(&a->lock);
		return;
	}
	batch_unlink(b);
	if (a->done.dnext == &a->done && a->efd >= 0) {
		uint64_t v;

		if (read(a->efd, &v, sizeof(v)) < 0)
			(void)0;
	}
	pthread_mutex_unlock(&a->lock);
	l = b->lease;
	if (l)
		dfkv_lease_release(b->c, l);
	batch_release(b);
}
