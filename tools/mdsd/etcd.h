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

/* How a long-poll on a feed ended. */
enum poll_end { POLL_CHANGED, POLL_TIMEOUT, POLL_ENDED, POLL_OWN };

/*
 * A long-poll past epoch after, on the group's feed: *out from its
 * listing (0), or 1 when the caller reads etcd itself.  POLL_OWN: the
 * feed does not know back to after (or there is none); the caller
 * watches on its own, until deadline.
 */
int feed_wait(struct etcd *e, const char *group, enum mds_kind k,
	      uint64_t after, uint64_t deadline, const atomic_bool *gone,
	      enum poll_end *end, struct mds_list *out);
/* A copy of group/k's shared listing, when its watch works. */
bool feed_copy(struct etcd *e, const char *group, enum mds_kind k,
	       struct mds_list *out);
/* Wake every feed's long-polls (under e->lock); stop: end the feeds. */
void feeds_wake(struct etcd *e, bool stop);

#endif /* MDSD_ETCD_H */
