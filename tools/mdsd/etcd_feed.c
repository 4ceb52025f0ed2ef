// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd etcd backend: the shared group watches.  One feed per group and
 * kind with long-polls: a thread holding one etcd watch of the group's
 * keys and the group's listing read at a revision.
 * The long-polls wait on its condition variable and are answered with
 * that listing, so a change costs one range and one new watch per mdsd,
 * whatever the number of long-polls.  Under e->lock:
 *
 *   list	the group read at revision list.epoch (valid: read once)
 *   base	list.epoch of the first read: the feed knows of every change
 *		after base (a long-poll asking past an older epoch watches
 *		on its own, as every long-poll did before the feeds)
 *   changed	the last read after a change (0: none since base): a change
 *		the feed saw came at or before it.  A long-poll asking past
 *		N wakes when changed > N, answered with list (its epoch is at
 *		least changed).  changed is the revision of the read, not
 *		of the event, as the read may hold later changes too
 *   healthy	the watch works: a long-poll's full wait is answered with
 *		list (not older than its epoch) without reading etcd
 *
 * A broken watch is opened again from list.epoch + 1 (events missed
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
	uint64_t base, changed;
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

/* The feed's read of its group: publish it (under e->lock). */
static void feed_publish(struct feed *f, struct mds_list *l)
{
	mds_list_free(&f->list);
	f->list = *l;
	if (!f->valid)
		f->base = l->epoch;
	else
		f->changed = l->epoch;
	f->valid = f->healthy = true;
	pthread_cond_broadcast(&f->cond);
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
				feed_publish(f, &l);
			pthread_mutex_unlock(&e->lock);
			read = ret != 0;
		}
		/* the watch from the listing's revision: nothing missed */
		ret = read ? -EIO : etcd_watch(e, f->prefix, f->list.epoch,
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

/* The feed of group/k, started when there is none (under e->lock). */
static struct feed *feed_get(struct etcd *e, const char *group,
			     enum mds_kind k)
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
	       struct mds_list *out)
{
	struct feed *f;
	bool ok = false;

	pthread_mutex_lock(&e->lock);
	f = feed_find(e, group, k);
	if (f && f->valid && f->healthy)
		ok = !list_copy(&f->list, out);
	pthread_mutex_unlock(&e->lock);
	return ok;
}

int feed_wait(struct etcd *e, const char *group, enum mds_kind k,
	      uint64_t after, uint64_t deadline, const atomic_bool *gone,
	      enum poll_end *end, struct mds_list *out)
{
	struct feed *f;
	int ret = 1;

	pthread_mutex_lock(&e->lock);
	f = feed_get(e, group, k);
	*end = POLL_OWN;
	if (!f) {
		pthread_mutex_unlock(&e->lock);
		return 1;
	}
	f->waiters++;
	for (;;) {
		if (e->stopping || (gone && atomic_load(gone))) {
			*end = POLL_ENDED;
			break;
		}
		if (f->valid && after < f->base)
			break;	/* POLL_OWN */
		if (f->valid && f->changed > after) {
			*end = POLL_CHANGED;
			break;
		}
		if (wait_until(&f->cond, &e->lock, deadline) == ETIMEDOUT) {
			*end = POLL_TIMEOUT;
			break;
		}
	}
	if (*end == POLL_CHANGED ||
	    (*end != POLL_OWN && f->valid && f->healthy &&
	     f->list.epoch >= after))
		ret = list_copy(&f->list, out);
	f->waiters--;
	pthread_mutex_unlock(&e->lock);
	return ret;
}

void feeds_wake(struct etcd *e, bool stop)
{
	for (struct feed *f = e->feeds; f; f = f->next) {
		if (stop)
			atomic_store(&f->stop, true);
		pthread_cond_broadcast(&f->cond);
	}
}
