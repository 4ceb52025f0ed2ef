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
	bool stopping;
	struct feed *feeds;		/* the shared group watches */
	struct backend_notify notify;	/* the long-polls' (set_notify) */
	unsigned int n_feeds;
	atomic_bool ready;
};

struct feed;

/* Keys: PREFIX/GROUP/KIND/ID (id NULL: the group's prefix). */
void etcd_entry_key(struct etcd *e, char *buf, size_t cap,
		    const char *group, enum mds_kind k, const char *id);
/* Read a group's entries under prefix (one etcd range) into out. */
int etcd_range_group(struct etcd *e, const char *prefix,
		     struct mds_list *out);
/*
 * Watch the keys under prefix from revision after + 1, at most wait_ms
 * (stop: NULL, or set to end it within about a second).  0: a change
 * (or etcd canceled the watch, or compacted past after); 1: nothing
 * changed in wait_ms; -ECANCELED: stop or shutdown; another error: no
 * watch (after a pause).
 */
int etcd_watch(struct etcd *e, const char *prefix, uint64_t after,
	       unsigned int wait_ms, const atomic_bool *stop);

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
/* End the feeds (under e->lock): shutdown. */
void feeds_stop(struct etcd *e);

#endif /* MDSD_ETCD_H */
