// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd etcd backend: the shared group watches.  One feed per group and
 * kind with long-polls: a thread holding one etcd watch of the group's
 * keys and the group's listing read at a revision.  A change is told to
 * the HTTP server's notify function (the long-polls wait there, without a
 * thread each) and the long-polls are answered with that listing, so a
 * change costs one range and one new watch per mdsd, whatever the number
 * of long-polls.  Under e->lock:
 *
 *   list	the group read at revision list.epoch (valid: read once)
 *   start	before the first read: the oldest epoch a long-poll asked
 *		past; the first watch starts after it, so nothing after it
 *		is missed
 *   base	min(start, the first read's epoch): the feed knows of every
 *		change after base (a long-poll asking past an older epoch is
 *		answered at once with list)
 *   changed	the last read after a change (0: none since base): a change
 *		the feed saw came at or before it.  A long-poll asking past
 *		N is due when changed > N, answered with list (its epoch is
 *		at least changed).  changed is the revision of the read, not
 *		of the event, as the read may hold later changes too
 *   from	the revision the watch starts after: base, then each read's
 *   healthy	the watch works: a long-poll's full wait is answered with
 *		list (not older than its epoch) without reading etcd
 *
 * A broken watch is opened again from the same revision (events missed
 * meanwhile come with it); a compacted or canceled one makes the feed
 * read the group again.  A feed with no long-poll ends after its quiet
 * watch (ETCD_FEED_WATCH_MS) or a failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd.h"
#include "runtime.h"

#define ETCD_FEED_WATCH_MS	10000
#define ETCD_FEED_BACKOFF_MS	1000

struct feed {
	struct feed *next;
	struct etcd *e;
	enum mds_kind k;
	char group[MDS_ID_MAX + 1];
	char prefix[512];
	pthread_cond_t cond;		/* CLOCK_MONOTONIC, with e->lock */
	struct mds_list list;
	uint64_t start, base, changed, from;
	bool valid, healthy;
	unsigned int waiters;
	atomic_bool stop;		/* shutdown: end the watch */
};

/* Wait on cond under e->lock until deadline (CLOCK_MONOTONIC ms). */
static int wait_until(pthread_cond_t *cond, pthread_mutex_t *lock,
		      uint64_t deadline)
{
	struct timespec ts = {
		.tv_sec = (time_t)(deadline / 1000),
		.tv_nsec = (long)(deadline % 1000) * 1000000L,
	};

	return pthread_cond_timedwait(cond, lock, &ts);
}

/*
 * The feed's read of its group: publish it and tell the long-polls of a
 * change (under e->lock).
 */
static void feed_publish(struct etcd *e, struct feed *f, struct mds_list *l)
{
	mds_list_free(&f->list);
	f->list = *l;
	if (!f->valid) {
		f->base = f->start < l->epoch ? f->start : l->epoch;
		f->from = f->base;
	} else {
		f->changed = f->from = l->epoch;
		if (e->notify.fn)
			e->notify.fn(e->notify.ctx, f->group, f->k, f->changed);
	}
	f->valid = f->healthy = true;
}

/* Unlink and free f (under e->lock, no long-poll on it). */
static void feed_end(struct etcd *e, struct feed *f)
{
	struct feed **pp;

	for (pp = &e->feeds; *pp != f; pp = &(*pp)->next)
		;
	*pp = f->next;
	mds_list_free(&f->list);
	pthread_cond_destroy(&f->cond);
	free(f);
	atomic_fetch_sub(&metrics.etcd_group_watches, 1);
	e->n_feeds--;
	if (e->stopping)
		pthread_cond_broadcast(&e->cond);	/* etcd_destroy waits */
}

static void *feed_main(void *arg)
{
	struct feed *f = arg;
	struct etcd *e = f->e;
	bool read = true;

	for (;;) {
		struct mds_list l;
		int ret;

		if (read) {
			ret = etcd_range_group(e, f->prefix, &l);
			pthread_mutex_lock(&e->lock);
			if (!ret)
				feed_publish(e, f, &l);
			pthread_mutex_unlock(&e->lock);
			read = ret != 0;
		}
		/* the watch from a read's revision: nothing missed */
		ret = read ? -EIO : etcd_watch(e, f->prefix, f->from,
					  ETCD_FEED_WATCH_MS, &f->stop);
		if (!ret)
			read = true;	/* a change (or a compaction) */
		pthread_mutex_lock(&e->lock);
		if (f->valid && ret)
			f->healthy = ret == 1;	/* quiet: still up to date */
		if (f->stop || e->stopping || (!f->waiters && ret)) {
			feed_end(e, f);
			pthread_mutex_unlock(&e->lock);
			return NULL;
		}
		if (ret < 0 && ret != -ECANCELED)
			wait_until(&f->cond, &e->lock,
				   now_mono_ms() + ETCD_FEED_BACKOFF_MS);
		pthread_mutex_unlock(&e->lock);
	}
}

/* The feed of group/k or NULL (under e->lock). */
static struct feed *feed_find(struct etcd *e, const char *group,
			      enum mds_kind k)
{
	struct feed *f;

	for (f = e->feeds; f; f = f->next)
		if (f->k == k && !strcmp(f->group, group))
			break;
	return f;
}

/*
 * The feed of group/k, started (knowing of the changes after epoch
 * after) when there is none (under e->lock).
 */
static struct feed *feed_get(struct etcd *e, const char *group,
			     enum mds_kind k, uint64_t after)
{
	pthread_condattr_t ca;
	pthread_attr_t ta;
	struct feed *f = feed_find(e, group, k);
	pthread_t t;
	int err;

	if (f)
		return f;
	if (e->stopping)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->e = e;
	f->k = k;
	f->start = after;
	snprintf(f->group, sizeof(f->group), "%s", group);
	etcd_entry_key(e, f->prefix, sizeof(f->prefix), group, k, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &ta, feed_main, f);
	pthread_attr_destroy(&ta);
	if (err) {
		logmsg(LOG_ERR, "etcd: no watch thread for %s: %s", f->prefix,
		       strerror(err));
		pthread_cond_destroy(&f->cond);
		free(f);
		return NULL;
	}
	f->next = e->feeds;
	e->feeds = f;
	e->n_feeds++;
	atomic_fetch_add(&metrics.etcd_group_watches, 1);
	return f;
}

/* A copy of l (under e->lock). */
static int list_copy(const struct mds_list *l, struct mds_list *out)
{
	*out = *l;
	out->v = NULL;
	if (!l->n)
		return 0;
	out->v = malloc(l->n * sizeof(*l->v));
	if (!out->v)
		return -ENOMEM;
	memcpy(out->v, l->v, l->n * sizeof(*l->v));
	return 0;
}

bool feed_copy(struct etcd *e, const char *group, enum mds_kind k,
	       uint64_t after, struct mds_list *out)
{
	struct feed *f;
	bool ok = false;

	pthread_mutex_lock(&e->lock);
	f = feed_find(e, group, k);
	if (f && f->valid && f->healthy && f->list.epoch >= after)
		ok = !list_copy(&f->list, out);
	pthread_mutex_unlock(&e->lock);
	return ok;
}

int feed_wait_begin(struct etcd *e, const char *group, enum mds_kind k,
		    uint64_t after)
{
	struct feed *f;
	int ret = 0;

	pthread_mutex_lock(&e->lock);
	f = feed_get(e, group, k, after);
	if (f && !f->valid) {
		if (after < f->start)
			f->start = after;
		ret = 1;
	} else if (f) {
		ret = after >= f->base && f->changed <= after;
	}
	if (ret)
		f->waiters++;
	pthread_mutex_unlock(&e->lock);
	return ret;
}

void feed_wait_end(struct etcd *e, const char *group, enum mds_kind k)
{
	struct feed *f;

	pthread_mutex_lock(&e->lock);
	f = feed_find(e, group, k);
	if (f)	/* none: it ended at shutdown */
		f->waiters--;
	pthread_mutex_unlock(&e->lock);
}

void feeds_stop(struct etcd *e)
{
	for (struct feed *f = e->feeds; f; f = f->next) {
		atomic_store(&f->stop, true);
		pthread_cond_broadcast(&f->cond);
	}
}
