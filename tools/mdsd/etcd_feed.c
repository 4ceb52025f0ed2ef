// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd etcd backend: the shared group watches.  One feed per group and
 * kind with long-polls or writes: a thread holding one etcd watch of the
 * group's keys and the group's listing, read once and kept by the
 * watch's events.  A change is told to the HTTP server's notify function
 * (the long-polls wait there, without a thread each) and the long-polls
 * are answered with that listing, so a change costs one new watch per
 * mdsd and no read, whatever the number of long-polls.  The writes of
 * the group (etcd.c) take an entry, its owner, lease and mod_revision
 * and the group's weight from it (feed_view) instead of reading etcd.
 * Under e->lock:
 *
 *   list	the group at revision list.epoch (valid: read once), with
 *		each entry's etcd_meta in meta; kept by the events after
 *		the read (an event at or before list.epoch is in it already)
 *   start	before the first read: the oldest epoch a long-poll asked
 *		past; the first watch starts after it, so nothing after it
 *		is missed
 *   base	min(start, the first read's epoch): the feed knows of every
 *		change after base (a long-poll asking past an older epoch is
 *		answered at once with list)
 *   changed	list.epoch after the last change the watch told (0: none
 *		since base): a change the feed saw came at or before it.  A
 *		long-poll asking past N is due when changed > N, answered
 *		with list (its epoch is at least changed)
 *   from	the revision the watch starts after: base, then the last
 *		event's (or a read's)
 *   healthy	the watch works: a long-poll's full wait is answered with
 *		list (not older than its epoch) without reading etcd, and a
 *		write may use list
 *   writes	this mdsd's writes of the group list does not hold yet (id,
 *		revision): a write of an entry uses list only once it holds
 *		this mdsd's writes of that entry, a group commit once it
 *		holds them all (this mdsd's own writes are seen by its next
 *		ones)
 *   used	when a write last used the feed (monotonic ms): a feed
 *		with no long-poll lives on while writes use it
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
	struct etcd_meta *meta;		/* parallel to list.v */
	size_t cap;			/* of list.v and meta */
	uint64_t start, base, changed, from, used;
	struct feed_write {
		char id[MDS_ID_MAX + 1];
		uint64_t rev;
	} *writes;
	size_t n_writes, cap_writes;
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

/* Forget the writes list holds now (under e->lock). */
static void feed_prune(struct feed *f)
{
	size_t i, n = 0;

	for (i = 0; i < f->n_writes; i++)
		if (f->writes[i].rev > f->list.epoch)
			f->writes[n++] = f->writes[i];
	f->n_writes = n;
}

/* Has this mdsd a write of id (""': of any entry) list does not hold? */
static bool feed_pending(const struct feed *f, const char *id)
{
	size_t i;

	if (!id[0])
		return f->n_writes;
	for (i = 0; i < f->n_writes; i++)
		if (!strcmp(f->writes[i].id, id))
			return true;
	return false;
}

/* Tell the long-polls and the writes waiting that f changed (under e->lock). */
static void feed_changed(struct etcd *e, struct feed *f)
{
	feed_prune(f);
	f->changed = f->list.epoch;
	if (e->notify.fn)
		e->notify.fn(e->notify.ctx, f->group, f->k, f->changed);
}

/*
 * The feed's read of its group: publish it and tell the long-polls of a
 * change (under e->lock).
 */
static void feed_publish(struct etcd *e, struct feed *f, struct mds_list *l,
			 struct etcd_meta *meta)
{
	mds_list_free(&f->list);
	free(f->meta);
	f->list = *l;
	f->meta = meta;
	f->cap = l->n;
	if (!f->valid) {
		f->base = f->start < l->epoch ? f->start : l->epoch;
		f->from = f->base;
	} else {
		f->from = l->epoch;
		feed_changed(e, f);
	}
	feed_prune(f);
	f->valid = f->healthy = true;
	pthread_cond_broadcast(&e->feed_cond);
}

/* Where id is in f's list, or where it would go (*found tells). */
static size_t feed_find_id(const struct feed *f, const char *id, bool *found)
{
	size_t lo = 0, hi = f->list.n;

	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(f->list.v[mid].id, id);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Apply one decoded event to f's list: 0 or -ENOMEM. */
static int feed_event(struct feed *f, const struct etcd_event *ev)
{
	bool found;
	size_t i = feed_find_id(f, ev->id, &found);

	if (!ev->put) {
		if (found) {
			f->list.n--;
			memmove(&f->list.v[i], &f->list.v[i + 1],
				(f->list.n - i) * sizeof(*f->list.v));
			memmove(&f->meta[i], &f->meta[i + 1],
				(f->list.n - i) * sizeof(*f->meta));
		}
		return 0;
	}
	if (!found) {
		if (f->list.n == f->cap) {
			size_t cap = f->cap ? 2 * f->cap : 16;
			struct mds_entry *v = realloc(f->list.v,
						      cap * sizeof(*v));
			struct etcd_meta *m;

			if (!v)
				return -ENOMEM;
			f->list.v = v;
			m = realloc(f->meta, cap * sizeof(*m));
			if (!m)
				return -ENOMEM;
			f->meta = m;
			f->cap = cap;
		}
		memmove(&f->list.v[i + 1], &f->list.v[i],
			(f->list.n - i) * sizeof(*f->list.v));
		memmove(&f->meta[i + 1], &f->meta[i],
			(f->list.n - i) * sizeof(*f->meta));
		f->list.n++;
	}
	f->list.v[i] = ev->en;
	f->meta[i] = ev->meta;
	return 0;
}

/*
 * A watch's events (a JSON array) applied to f's list (under e->lock): 0,
 * or -ENOMEM (the group must be read again).
 */
static int feed_apply(struct etcd *e, struct feed *f, struct json_object *evs)
{
	size_t n = json_object_array_length(evs);
	uint64_t applied = 0;
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++) {
		struct etcd_event ev;

		etcd_event_decode(json_object_array_get_idx(evs, i), f->prefix,
				  &ev);
		if (ev.rev > f->from)
			f->from = ev.rev;
		if (!ev.id[0] || ev.rev <= f->list.epoch)
			continue;	/* not an entry, or read already */
		ret = feed_event(f, &ev);
		if (ev.rev > applied)
			applied = ev.rev;
	}
	if (applied > f->list.epoch)
		f->list.epoch = applied;
	f->healthy = true;
	feed_changed(e, f);
	pthread_cond_broadcast(&e->feed_cond);
	return ret;
}

/* Unlink and free f (under e->lock, no long-poll on it). */
static void feed_end(struct etcd *e, struct feed *f)
{
	struct feed **pp;

	for (pp = &e->feeds; *pp != f; pp = &(*pp)->next)
		;
	*pp = f->next;
	mds_list_free(&f->list);
	free(f->meta);
	free(f->writes);
	pthread_cond_destroy(&f->cond);
	free(f);
	atomic_fetch_sub(&metrics.etcd_group_watches, 1);
	e->n_feeds--;
	pthread_cond_broadcast(&e->feed_cond);	/* feed_view waits */
	if (e->stopping)
		pthread_cond_broadcast(&e->cond);	/* etcd_destroy waits */
}

static void *feed_main(void *arg)
{
	struct feed *f = arg;
	struct etcd *e = f->e;
	bool read = true;

	for (;;) {
		struct json_object *evs = NULL;
		struct etcd_meta *meta;
		struct mds_list l;
		int ret;

		if (read) {
			ret = etcd_range_group(e, f->prefix, &l, &meta);
			pthread_mutex_lock(&e->lock);
			if (!ret)
				feed_publish(e, f, &l, meta);
			pthread_mutex_unlock(&e->lock);
			read = ret != 0;
		}
		/* the watch from the last revision seen: nothing missed */
		ret = read ? -EIO : etcd_watch(e, f->prefix, f->from,
					  ETCD_FEED_WATCH_MS, &f->stop, &evs);
		pthread_mutex_lock(&e->lock);
		if (!ret)	/* none: a compaction or a cancel */
			read = !evs || feed_apply(e, f, evs);
		json_object_put(evs);
		if (f->valid && ret)
			f->healthy = ret == 1;	/* quiet: still up to date */
		if (f->stop || e->stopping ||
		    (!f->waiters && ret &&
		     now_mono_ms() - f->used >= ETCD_FEED_WATCH_MS)) {
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

int feed_view(struct etcd *e, const char *group, enum mds_kind k,
	      const char *id, uint64_t need, unsigned int wait_ms,
	      struct feed_view *out)
{
	uint64_t deadline = now_mono_ms() + wait_ms;
	struct feed *f;
	bool found;
	size_t i;
	int ok = -1;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		/* again after each wait: it may have ended meanwhile */
		f = feed_get(e, group, k, UINT64_MAX);
		if (!f || (f->valid && !f->healthy)) {
			ok = -1;	/* no watch: the caller reads etcd */
			break;
		}
		f->used = now_mono_ms();
		ok = f->valid && f->list.epoch >= need &&
		     !feed_pending(f, id);
		if (ok || f->used >= deadline)
			break;
		wait_until(&e->feed_cond, &e->lock, deadline);
	}
	if (ok > 0) {
		memset(out, 0, sizeof(*out));
		out->rev = f->list.epoch;
		i = feed_find_id(f, id, &found);
		if (found) {
			out->have = true;
			out->en = f->list.v[i];
			out->meta = f->meta[i];
		}
		if (k == MDS_MEMBERS)
			out->others = etcd_weight_sum(&f->list, id, 0);
	}
	pthread_mutex_unlock(&e->lock);
	return ok;
}

void feed_wrote(struct etcd *e, const char *group, enum mds_kind k,
		const char *id, uint64_t rev)
{
	struct feed_write *w;
	struct feed *f;
	size_t i;

	pthread_mutex_lock(&e->lock);
	f = feed_find(e, group, k);
	if (!f || (f->valid && rev <= f->list.epoch))
		goto out;	/* none, or seen already */
	for (i = 0; i < f->n_writes && strcmp(f->writes[i].id, id); i++)
		;
	if (i == f->n_writes) {
		if (f->n_writes == f->cap_writes) {
			size_t cap = f->cap_writes ? 2 * f->cap_writes : 16;

			w = realloc(f->writes, cap * sizeof(*w));
			if (!w) {
				/* writes read etcd until the next change */
				f->healthy = false;
				goto out;
			}
			f->writes = w;
			f->cap_writes = cap;
		}
		snprintf(f->writes[i].id, sizeof(f->writes[i].id), "%s", id);
		f->writes[i].rev = 0;
		f->n_writes++;
	}
	if (rev > f->writes[i].rev)
		f->writes[i].rev = rev;
out:
	pthread_mutex_unlock(&e->lock);
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
