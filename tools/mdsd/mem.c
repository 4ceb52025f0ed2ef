// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd "memory" backend: the directory of one host, in this process.
 *
 * Groups hold two sorted arrays (members, clients).  A global revision
 * counter, like etcd's, is bumped by every change; each group remembers the
 * revision of its last members change and of its last clients change, which
 * is the epoch a listing returns, so an epoch never goes backwards (group
 * records are kept once created).  Leases run on the monotonic clock; a
 * reaper thread drops expired entries.  Every change tells the HTTP server's
 * notify function (the long-polls of the group wait there, without a
 * thread).  A put that would make a group's member weights add up to more
 * than --max-group-weight is refused.  A /clients entry keeps its owner (the
 * SHA-256 of the client key that created it): a client-token write of
 * someone else's entry is refused.  With a snapshot path the directory is
 * written (atomically: temporary file + rename) shortly after every change
 * and at exit, and read back at start: lease deadlines are stored as
 * wall-clock times, entries whose deadline passed while mdsd was down are
 * dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mdsd.h"
#include "runtime.h"

#define MEM_MAX_GROUPS		4096
#define SNAPSHOT_LAZY_MS	5000	/* heartbeat-only changes */
#define REAP_INTERVAL_MS	50

struct mem_entry {
	struct mds_entry e;
	struct mds_owner owner;
	uint64_t expires;	/* monotonic ms */
};

struct mem_group {
	char name[MDS_ID_MAX + 1];
	uint64_t epoch[MDS_NR_KINDS];
	struct mem_entry *v[MDS_NR_KINDS];
	size_t n[MDS_NR_KINDS], cap[MDS_NR_KINDS];
};

struct mem {
	struct backend b;
	pthread_mutex_t lock;
	pthread_cond_t reaper_wake;	/* CLOCK_MONOTONIC */
	struct backend_notify notify;
	uint64_t rev;
	struct mem_group **groups;	/* sorted by name */
	size_t n_groups;
	size_t n_entries;
	size_t max_entries;
	uint64_t max_group_weight;
	bool stopping;
	/* snapshot */
	char snapshot[1024];
	bool dirty, dirty_urgent;
	uint64_t dirty_since;
	pthread_t reaper;
	bool reaper_started;
};

#define to_mem(bp) ((struct mem *)(bp))

/* Caller holds the lock. */
static struct mem_group *group_find(struct mem *m, const char *name,
				    bool create)
{
	size_t lo = 0, hi = m->n_groups, mid;
	struct mem_group *g;
	void *p;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(m->groups[mid]->name, name);
		if (!c)
			return m->groups[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!create || m->n_groups >= MEM_MAX_GROUPS)
		return NULL;
	g = calloc(1, sizeof(*g));
	p = realloc(m->groups, (m->n_groups + 1) * sizeof(*m->groups));
	if (!g || !p) {
		free(g);
		if (p)
			m->groups = p;
		return NULL;
	}
	m->groups = p;
	snprintf(g->name, sizeof(g->name), "%s", name);
	memmove(&m->groups[lo + 1], &m->groups[lo],
		(m->n_groups - lo) * sizeof(*m->groups));
	m->groups[lo] = g;
	m->n_groups++;
	return g;
}

/* Index of id in g's kind array, or -(insertion point) - 1. */
static long entry_find(struct mem_group *g, enum mds_kind k, const char *id)
{
	size_t lo = 0, hi = g->n[k], mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(g->v[k][mid].e.id, id);
		if (!c)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

static void mark_dirty(struct mem *m, bool urgent)
{
	if (!m->snapshot[0])
		return;
	if (!m->dirty)
		m->dirty_since = now_mono_ms();
	m->dirty = true;
	if (urgent) {
		m->dirty_urgent = true;
		pthread_cond_signal(&m->reaper_wake);
	}
}

/* A change of g's kind list: new epoch, wake the long-polls. */
static void bump(struct mem *m, struct mem_group *g, enum mds_kind k)
{
	g->epoch[k] = ++m->rev;
	counter_inc(C_EPOCH_BUMPS);
	if (m->notify.fn)
		m->notify.fn(m->notify.ctx, g->name, k, g->epoch[k]);
	mark_dirty(m, true);
}

static void entry_remove(struct mem *m, struct mem_group *g, enum mds_kind k,
			 size_t i)
{
	memmove(&g->v[k][i], &g->v[k][i + 1],
		(g->n[k] - i - 1) * sizeof(g->v[k][0]));
	g->n[k]--;
	m->n_entries--;
}

/* Caller holds the lock: add e (absent from g), its owner and its lease
 * deadline. */
static int entry_insert(struct mem *m, struct mem_group *g, enum mds_kind k,
			const struct mds_entry *e, struct mds_owner owner,
			uint64_t expires)
{
	long i = entry_find(g, k, e->id);
	size_t at;

	if (i >= 0)
		return -EEXIST;
	at = (size_t)(-i - 1);
	if (m->n_entries >= m->max_entries)
		return -ENOSPC;
	if (g->n[k] == g->cap[k]) {
		size_t cap = g->cap[k] ? g->cap[k] * 2 : 8;
		void *p = realloc(g->v[k], cap * sizeof(g->v[k][0]));

		if (!p)
			return -ENOMEM;
		g->v[k] = p;
		g->cap[k] = cap;
	}
	memmove(&g->v[k][at + 1], &g->v[k][at],
		(g->n[k] - at) * sizeof(g->v[k][0]));
	g->v[k][at].e = *e;
	g->v[k][at].owner = owner;
	g->v[k][at].expires = expires;
	g->n[k]++;
	m->n_entries++;
	return 0;
}

/*
 * Caller holds the lock: would e (replacing entry i, if >= 0) raise the
 * group's member weight past the cap?  (A write that adds nothing, e.g.
 * a heartbeat after the cap was lowered, passes.)
 */
static bool over_weight(const struct mem *m, const struct mem_group *g,
			enum mds_kind k, long i, const struct mds_entry *e)
{
	uint64_t sum = e->weight;

	if (k != MDS_MEMBERS || (i >= 0 && e->weight <= g->v[k][i].e.weight))
		return false;
	for (size_t j = 0; j < g->n[k]; j++)
		if ((long)j != i)
			sum += g->v[k][j].e.weight;
	return sum > m->max_group_weight;
}

static int mem_put(struct backend *b, const char *group, enum mds_kind k,
		   const struct mds_entry *e, const struct mds_writer *w,
		   uint64_t *epoch, bool *created)
{
	struct mem *m = to_mem(b);
	struct mem_group *g;
	long i;
	int ret = 0;

	pthread_mutex_lock(&m->lock);
	g = group_find(m, group, true);
	if (!g) {
		ret = -ENOSPC;
		goto out;
	}
	i = entry_find(g, k, e->id);
	if (i >= 0 && !mds_owner_allows(&g->v[k][i].owner, w)) {
		ret = -EPERM;
		goto out;
	}
	if (over_weight(m, g, k, i, e)) {
		ret = -EDQUOT;
		goto out;
	}
	if (i >= 0) {
		struct mem_entry *me = &g->v[k][i];

		*created = false;
		me->expires = now_mono_ms() + e->ttl_ms;
		counter_inc(C_RENEWALS);
		if (!mds_entry_equal(&me->e, e)) {
			me->e = *e;
			bump(m, g, k);
		} else {
			mark_dirty(m, false);
		}
	} else {
		ret = entry_insert(m, g, k, e, mds_owner_of(w),
				   now_mono_ms() + e->ttl_ms);
		if (ret)
			goto out;
		*created = true;
		counter_inc(C_REGISTRATIONS);
		counter_inc(C_LEASE_GRANTS);
		bump(m, g, k);
	}
	*epoch = g->epoch[k];
out:
	pthread_mutex_unlock(&m->lock);
	return ret;
}

static int mem_del(struct backend *b, const char *group, enum mds_kind k,
		   const char *id, const struct mds_writer *w, uint64_t *epoch)
{
	struct mem *m = to_mem(b);
	struct mem_group *g;
	long i;
	int ret = -ENOENT;

	pthread_mutex_lock(&m->lock);
	g = group_find(m, group, false);
	if (g) {
		i = entry_find(g, k, id);
		if (i >= 0 && !mds_owner_allows(&g->v[k][i].owner, w)) {
			ret = -EPERM;
		} else if (i >= 0) {
			entry_remove(m, g, k, (size_t)i);
			counter_inc(C_DEREGISTRATIONS);
			bump(m, g, k);
			ret = 0;
		}
		*epoch = g->epoch[k];
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

static int mem_list(struct backend *b, const char *group, enum mds_kind k,
		    struct mds_list *out)
{
	struct mem *m = to_mem(b);
	struct mem_group *g;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&m->lock);
	g = group_find(m, group, false);
	if (g) {
		out->epoch = g->epoch[k];
		if (g->n[k]) {
			size_t i;

			out->v = malloc(g->n[k] * sizeof(*out->v));
			if (!out->v) {
				ret = -ENOMEM;
				goto unlock;
			}
			for (i = 0; i < g->n[k]; i++)
				out->v[i] = g->v[k][i].e;
			out->n = g->n[k];
		}
	}
unlock:
	pthread_mutex_unlock(&m->lock);
	return ret;
}

static int mem_wait_begin(struct backend *b, const char *group,
			  enum mds_kind k, uint64_t after)
{
	struct mem *m = to_mem(b);
	struct mem_group *g;
	int ret;

	pthread_mutex_lock(&m->lock);
	g = group_find(m, group, false);
	ret = !(g && g->epoch[k] > after) && !m->stopping;
	pthread_mutex_unlock(&m->lock);
	return ret;
}

/* A long-poll's answer is the listing of the moment: nothing is shared. */
static int mem_wait_list(struct backend *b, const char *group,
			 enum mds_kind k, uint64_t after, struct mds_list *out)
{
	(void)after;
	return mem_list(b, group, k, out);
}

static void mem_set_notify(struct backend *b, struct backend_notify n)
{
	struct mem *m = to_mem(b);

	pthread_mutex_lock(&m->lock);
	m->notify = n;
	pthread_mutex_unlock(&m->lock);
}

static int mem_groups(struct backend *b, struct mds_names *out)
{
	struct mem *m = to_mem(b);
	size_t i;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->n_groups && !ret; i++) {
		struct mem_group *g = m->groups[i];

		if (g->n[MDS_MEMBERS] || g->n[MDS_CLIENTS])
			ret = mds_names_add(out, g->name);
	}
	pthread_mutex_unlock(&m->lock);
	return ret;
}

static bool mem_ready(struct backend *b)
{
	(void)b;
	return true;
}

/* ------------------------------------------------------------ snapshot */

/* Caller holds the lock: the directory as JSON. */
static struct json_object *snapshot_json(struct mem *m)
{
	struct json_object *root = json_object_new_object();
	struct json_object *groups = json_object_new_array();
	uint64_t mono = now_mono_ms(), wall = now_wall_ms();
	size_t i, j;
	int k;

	json_object_object_add(root, "version", json_object_new_int(1));
	json_object_object_add(root, "revision",
			       json_object_new_int64((int64_t)m->rev));
	for (i = 0; i < m->n_groups; i++) {
		struct mem_group *g = m->groups[i];
		struct json_object *go = json_object_new_object();

		json_object_object_add(go, "name",
				       json_object_new_string(g->name));
		for (k = 0; k < MDS_NR_KINDS; k++) {
			struct json_object *arr = json_object_new_array();
			char key[32];

			snprintf(key, sizeof(key), "%s_epoch", mds_kind_name(k));
			json_object_object_add(go, key,
					       json_object_new_int64((int64_t)g->epoch[k]));
			for (j = 0; j < g->n[k]; j++) {
				struct mem_entry *me = &g->v[k][j];
				struct json_object *eo =
					mds_stored_to_json(&me->e, &me->owner);
				uint64_t left = me->expires > mono ?
						me->expires - mono : 0;

				json_object_object_add(eo, "expires_at_ms",
						       json_object_new_int64((int64_t)(wall + left)));
				json_object_array_add(arr, eo);
			}
			json_object_object_add(go, mds_kind_name(k), arr);
		}
		json_object_array_add(groups, go);
	}
	json_object_object_add(root, "groups", groups);
	return root;
}

static int snapshot_write(struct mem *m, const char *text)
{
	char tmp[1100];
	size_t len = strlen(text);
	int fd, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", m->snapshot);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (len) {
		ssize_t w = write(fd, text, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		text += w;
		len -= (size_t)w;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, m->snapshot))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

/* Write the snapshot if it is due (or always with force). */
static void snapshot_maybe(struct mem *m, bool force)
{
	struct json_object *root;
	char *text;
	int ret;

	pthread_mutex_lock(&m->lock);
	if (!m->snapshot[0] || !m->dirty ||
	    (!force && !m->dirty_urgent &&
	     now_mono_ms() - m->dirty_since < SNAPSHOT_LAZY_MS)) {
		pthread_mutex_unlock(&m->lock);
		return;
	}
	root = snapshot_json(m);
	m->dirty = m->dirty_urgent = false;
	pthread_mutex_unlock(&m->lock);
	text = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
	json_object_put(root);
	if (!text)
		return;
	ret = snapshot_write(m, text);
	free(text);
	if (ret) {
		counter_inc(C_SNAPSHOT_ERRORS);
		logmsg(LOG_ERR, "snapshot %s: %s", m->snapshot, strerror(-ret));
		pthread_mutex_lock(&m->lock);
		mark_dirty(m, false);
		pthread_mutex_unlock(&m->lock);
	} else {
		counter_inc(C_SNAPSHOT_WRITES);
	}
}

static int u64_field(struct json_object *o, const char *key, uint64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return -EINVAL;
	*out = (uint64_t)json_object_get_int64(v);
	return 0;
}

/* Load the snapshot into the empty directory; called before threads run. */
static int snapshot_load(struct mem *m)
{
	struct json_object *root, *groups;
	uint64_t mono = now_mono_ms(), wall = now_wall_ms(), ver, rev;
	char err[128];
	size_t i, j, cap = 1 << 16, len = 0, dropped = 0, kept = 0;
	char *buf;
	FILE *f;
	int k;

	f = fopen(m->snapshot, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	buf = malloc(cap);
	while (buf) {
		size_t r = fread(buf + len, 1, cap - len, f);

		len += r;
		if (r == 0)
			break;
		if (len == cap) {
			char *p = realloc(buf, cap * 2);

			if (!p) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = p;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf)
		return -ENOMEM;
	root = mds_json_parse(buf, len, err, sizeof(err));
	free(buf);
	if (!root || u64_field(root, "version", &ver) || ver != 1 ||
	    u64_field(root, "revision", &rev) ||
	    !json_object_object_get_ex(root, "groups", &groups) ||
	    !json_object_is_type(groups, json_type_array)) {
		json_object_put(root);
		return -EINVAL;
	}
	if (rev > m->rev)
		m->rev = rev;
	for (i = 0; i < json_object_array_length(groups); i++) {
		struct json_object *go = json_object_array_get_idx(groups, i);
		struct json_object *name, *arr;
		struct mem_group *g;

		if (!json_object_object_get_ex(go, "name", &name) ||
		    !json_object_is_type(name, json_type_string) ||
		    !mds_id_valid(json_object_get_string(name)))
			goto bad;
		g = group_find(m, json_object_get_string(name), true);
		if (!g)
			goto bad;
		for (k = 0; k < MDS_NR_KINDS; k++) {
			char key[32];
			bool lost = false;

			snprintf(key, sizeof(key), "%s_epoch", mds_kind_name(k));
			if (u64_field(go, key, &g->epoch[k]) ||
			    g->epoch[k] > m->rev ||
			    !json_object_object_get_ex(go, mds_kind_name(k), &arr) ||
			    !json_object_is_type(arr, json_type_array))
				goto bad;
			for (j = 0; j < json_object_array_length(arr); j++) {
				struct json_object *eo = json_object_array_get_idx(arr, j);
				struct mds_owner owner;
				struct mds_entry e;
				uint64_t at;

				if (u64_field(eo, "expires_at_ms", &at) ||
				    mds_stored_from_json(eo, NULL, "expires_at_ms",
							 &e, &owner, err,
							 sizeof(err)))
					goto bad;
				if (at <= wall) {
					dropped++;
					lost = true;
					continue;
				}
				if (entry_insert(m, g, k, &e, owner,
						 mono + (at - wall)))
					goto bad;
				kept++;
			}
			if (lost)
				g->epoch[k] = ++m->rev;
		}
	}
	json_object_put(root);
	m->dirty = m->dirty_urgent = false;
	logmsg(LOG_INFO, "snapshot %s: %zu entries restored, %zu expired",
	       m->snapshot, kept, dropped);
	if (dropped)
		mark_dirty(m, true);
	return 0;
bad:
	json_object_put(root);
	return -EINVAL;
}

/* -------------------------------------------------------------- reaper */

static void *reaper_main(void *arg)
{
	struct mem *m = arg;
	struct timespec ts;
	uint64_t now, deadline;
	size_t i, j;
	int k;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		now = now_mono_ms();
		for (i = 0; i < m->n_groups; i++) {
			struct mem_group *g = m->groups[i];

			for (k = 0; k < MDS_NR_KINDS; k++) {
				bool changed = false;

				for (j = 0; j < g->n[k];) {
					if (g->v[k][j].expires <= now) {
						logmsg(LOG_VERBOSE,
						       "lease expired: %s/%s/%s",
						       g->name, mds_kind_name(k),
						       g->v[k][j].e.id);
						entry_remove(m, g, k, j);
						counter_inc(C_LEASE_EXPIRIES);
						changed = true;
					} else {
						j++;
					}
				}
				if (changed)
					bump(m, g, k);
			}
		}
		if (m->dirty) {
			pthread_mutex_unlock(&m->lock);
			snapshot_maybe(m, false);
			pthread_mutex_lock(&m->lock);
		}
		deadline = now_mono_ms() + REAP_INTERVAL_MS;
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000L;
		if (!m->stopping && !m->dirty_urgent)
			pthread_cond_timedwait(&m->reaper_wake, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static void mem_shutdown(struct backend *b)
{
	struct mem *m = to_mem(b);

	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->reaper_wake);
	pthread_mutex_unlock(&m->lock);
}

static void mem_destroy(struct backend *b)
{
	struct mem *m = to_mem(b);
	size_t i;
	int k;

	mem_shutdown(b);
	if (m->reaper_started)
		pthread_join(m->reaper, NULL);
	snapshot_maybe(m, true);
	for (i = 0; i < m->n_groups; i++) {
		for (k = 0; k < MDS_NR_KINDS; k++)
			free(m->groups[i]->v[k]);
		free(m->groups[i]);
	}
	free(m->groups);
	pthread_cond_destroy(&m->reaper_wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static const struct backend_ops mem_ops = {
	.name = "memory",
	.put = mem_put,
	.del = mem_del,
	.list = mem_list,
	.wait_begin = mem_wait_begin,
	.wait_list = mem_wait_list,
	.set_notify = mem_set_notify,
	.groups = mem_groups,
	.ready = mem_ready,
	.shutdown = mem_shutdown,
	.destroy = mem_destroy,
};

struct backend *mem_backend_new(const struct mdsd_config *cfg)
{
	struct mem *m = calloc(1, sizeof(*m));
	pthread_condattr_t ca;
	int ret;

	if (!m)
		return NULL;
	m->b.ops = &mem_ops;
	m->max_entries = cfg->max_entries;
	m->max_group_weight = cfg->max_group_weight;
	snprintf(m->snapshot, sizeof(m->snapshot), "%s", cfg->snapshot);
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->reaper_wake, &ca);
	pthread_condattr_destroy(&ca);
	/*
	 * Epochs start at the wall clock in milliseconds, so that they keep
	 * growing across a restart even without a snapshot.
	 */
	m->rev = now_wall_ms();
	if (m->snapshot[0]) {
		ret = snapshot_load(m);
		if (ret) {
			char aside[1100];

			snprintf(aside, sizeof(aside), "%s.corrupt", m->snapshot);
			logmsg(LOG_ERR, "snapshot %s unreadable (%s): moved to %s, starting empty",
			       m->snapshot, strerror(-ret), aside);
			rename(m->snapshot, aside);
			/* Start from a clean directory. */
			m->b.ops = &mem_ops;
			for (size_t i = 0; i < m->n_groups; i++) {
				free(m->groups[i]->v[0]);
				free(m->groups[i]->v[1]);
				free(m->groups[i]);
			}
			free(m->groups);
			m->groups = NULL;
			m->n_groups = m->n_entries = 0;
			m->dirty = m->dirty_urgent = false;
		}
	}
	if (pthread_create(&m->reaper, NULL, reaper_main, m)) {
		mem_destroy(&m->b);
		return NULL;
	}
	m->reaper_started = true;
	return &m->b;
}
