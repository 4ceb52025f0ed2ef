/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mdsd's etcd backend inside: struct etcd and what etcd.c (transport,
 * keys, the backend's ops) and etcd_feed.c (the shared group watches)
 * call of each other.
 */
#ifndef MDSD_ETCD_H
#define MDSD_ETCD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mdsd.h"
#include "token.h"

#define ETCD_MAX_URLS		16

struct etcd {
	struct backend b;
	char *urls[ETCD_MAX_URLS];
	size_t n_urls;
	atomic_size_t cur;		/* the URL that answered last */
	char prefix[128];
	const struct mdsd_config *cfg;	/* TLS files, user */
	char password[DFKV_TOKEN_MAX + 1];	/* --etcd-password-file */
	pthread_mutex_t auth_lock;
	char auth[1200];		/* "Authorization: <token>" or "" */
	pthread_t prober;
	bool prober_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* CLOCK_MONOTONIC */
	pthread_cond_t feed_cond;	/* a feed moved on or ended */
	pthread_cond_t commit_cond;	/* a group commit ended */
	struct commit *commits;		/* member writes waiting to commit */
	bool committing;		/* a group commit is running */
	bool stopping;
	struct feed *feeds;		/* the shared group watches */
	struct backend_notify notify;	/* the long-polls' (set_notify) */
	unsigned int n_feeds;
	atomic_bool ready;
};

struct feed;
struct commit;

/* What a write needs of a stored entry besides the entry itself. */
struct etcd_meta {
	struct mds_owner owner;
	int64_t lease, mod;		/* its lease, its mod_revision */
};

/* One watch event of the keys under a group's prefix, decoded. */
struct etcd_event {
	uint64_t rev;			/* the event's revision */
	char id[MDS_ID_MAX + 1];	/* "": not an entry's key */
	bool put;			/* a valid entry put (en, meta); else
					 * the id's removal */
	struct mds_entry en;
	struct etcd_meta meta;
};

/* Keys: PREFIX/GROUP/KIND/ID (id NULL: the group's prefix). */
void etcd_entry_key(struct etcd *e, char *buf, size_t cap,
		    const char *group, enum mds_kind k, const char *id);
/*
 * Read a group's entries under prefix (one etcd range) into out and,
 * meta not NULL, their etcd_meta into *meta (parallel to out->v).
 */
int etcd_range_group(struct etcd *e, const char *prefix,
		     struct mds_list *out, struct etcd_meta **meta);
/*
 * Watch the keys under prefix from revision after + 1, at most wait_ms
 * (stop: NULL, or set to end it within about a second).  0: a change,
 * its events in *events (a new reference; NULL when etcd canceled the
 * watch or compacted past after: read the keys again); 1: nothing
 * changed in wait_ms; -ECANCELED: stop or shutdown; another error: no
 * watch (after a pause).
 */
int etcd_watch(struct etcd *e, const char *prefix, uint64_t after,
	       unsigned int wait_ms, const atomic_bool *stop,
	       struct json_object **events);
/* The weight of l's members but id, plus add. */
uint64_t etcd_weight_sum(const struct mds_list *l, const char *id,
			 uint64_t add);
/* Decode one event of a watch of the keys under prefix. */
void etcd_event_decode(struct json_object *ev, const char *prefix,
		       struct etcd_event *out);

/* ------------------------------------- the shared watches: etcd_feed.c */

/*
 * The backend's wait_begin, wait_end (mdsd.h) on the group's feed, started
 * when there is none.  wait_begin: 1 while the long-poll waits (its
 * wait_end then follows), 0 when its answer is due now.
 */
int feed_wait_begin(struct etcd *e, const char *group, enum mds_kind k,
		    uint64_t after);
void feed_wait_end(struct etcd *e, const char *group, enum mds_kind k);
/*
 * A copy of group/k's shared listing, when its watch works and the
 * listing is not older than epoch after.
 */
bool feed_copy(struct etcd *e, const char *group, enum mds_kind k,
	       uint64_t after, struct mds_list *out);

/* What a write of one entry reads from its group's shared listing. */
struct feed_view {
	uint64_t rev;			/* the listing's epoch */
	bool have;			/* the entry is listed: en, meta */
	struct mds_entry en;
	struct etcd_meta meta;
	uint64_t others;		/* members: the others' weight */
};

/*
 * The view of entry id ("": none, the group's weight only) from
 * group/k's shared listing, its feed started when there is none (kept
 * while writes use it).  1: its watch works and the listing is at least
 * at epoch need and holds this mdsd's writes of id (id "": all of them
 * to the group), waiting up to wait_ms (0: not at all) for that; 0: the
 * listing is not there yet (behind, or being read); -1: no working
 * watch (read etcd).
 */
int feed_view(struct etcd *e, const char *group, enum mds_kind k,
	      const char *id, uint64_t need, unsigned int wait_ms,
	      struct feed_view *out);
/* This mdsd wrote entry id of group/k at revision rev: views wait for it. */
void feed_wrote(struct etcd *e, const char *group, enum mds_kind k,
		const char *id, uint64_t rev);
/* End the feeds (under e->lock): shutdown. */
void feeds_stop(struct etcd *e);

#endif /* MDSD_ETCD_H */
