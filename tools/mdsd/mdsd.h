/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mdsd: the dfkv membership daemon (SPEC.md section 7).  One file per
 * concern: main.c (start, signals, shutdown), runtime.c (log, clocks,
 * the stop flag: runtime.h), config.c (config file and
 * command line), http.c (the HTTP/1.1 + JSON API on libmicrohttpd;
 * jobs.c its request threads: jobs.h),
 * entry.c (record lists and names; the member/client record and its
 * JSON codec are libdfkv's lib/record.c, shared with discovery and
 * dfkvctl), mem.c (the
 * embedded "memory" backend, leases, snapshot), etcd.c (the "etcd"
 * backend over the v3 JSON gateway; etcd_feed.c its shared group
 * watches, etcd.h what the two share), agent.c (the host agent registering
 * this host's kernel nodes), metrics.c (Prometheus text).  This header
 * holds what they share.
 */
#ifndef MDSD_H
#define MDSD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <json-c/json.h>

#include "record.h"

#ifndef DFKV_VERSION
#define DFKV_VERSION "0.0.0"
#endif

/* ------------------------------------------------------------- records */

enum mds_kind { MDS_MEMBERS, MDS_CLIENTS, MDS_NR_KINDS };

/* A listing: entries sorted by id, and the epoch it was taken at. */
struct mds_list {
	uint64_t epoch;
	size_t n;
	struct mds_entry *v;
};

struct mds_names {
	size_t n;
	char (*v)[MDS_ID_MAX + 1];
};

const char *mds_kind_name(enum mds_kind k);
void mds_list_free(struct mds_list *l);
void mds_names_free(struct mds_names *n);
int mds_names_add(struct mds_names *n, const char *name);	/* sorted, unique */

/*
 * The owner of a /clients entry (SPEC 7): the SHA-256 of the client key
 * (X-Dfkv-Client-Key) its first PUT carried.  Stored with the entry (the
 * snapshot, the etcd value), never listed.
 */
#define MDS_OWNER_LEN	32
struct mds_owner {
	bool set;
	unsigned char sha256[MDS_OWNER_LEN];
};

/* A write's credentials as a backend sees them (NULL: the agent's). */
struct mds_writer {
	struct mds_owner key;	/* set: the writer sent a client key */
	bool must_own;		/* the client token: an existing entry must
				 * be key's (-EPERM otherwise) */
};

/* May w write (or delete) an existing entry owned by have?  Constant time. */
bool mds_owner_allows(const struct mds_owner *have, const struct mds_writer *w);
/* The owner a new entry written by w gets. */
struct mds_owner mds_owner_of(const struct mds_writer *w);
/*
 * A stored record (snapshot entry, etcd value): the entry's canonical
 * JSON plus "owner" (hex SHA-256) when it has one.  Decoding is strict;
 * the field named skip (not NULL) is the caller's and ignored here;
 * owner may be NULL.
 */
struct json_object *mds_stored_to_json(const struct mds_entry *e,
				       const struct mds_owner *owner);
int mds_stored_from_json(struct json_object *o, const char *id,
			 const char *skip, struct mds_entry *e,
			 struct mds_owner *owner, char *err, size_t errlen);

/* ------------------------------------------------------------ backends */

struct backend;

struct backend_notify {
	void (*fn)(void *ctx, const char *group, enum mds_kind k,
		   uint64_t epoch);
	void *ctx;
};

/*
 * Every call is thread safe.  Errors: -ENOENT (no such entry), -ENOSPC
 * (a directory limit), -EDQUOT (the group's member weight would pass
 * max_group_weight: HTTP 409), -EPERM (the entry is another client key's:
 * HTTP 403), -EAGAIN (concurrent writes kept conflicting: HTTP 503),
 * -EIO / -ETIMEDOUT / -ECONNREFUSED (the backend is unavailable: HTTP
 * 503).
 */
struct backend_ops {
	const char *name;
	/*
	 * Register or heartbeat; *created tells which.  w (NULL: the
	 * agent) is checked against an existing entry's owner; a new entry
	 * takes w's key as its owner.
	 */
	int (*put)(struct backend *b, const char *group, enum mds_kind k,
		   const struct mds_entry *e, const struct mds_writer *w,
		   uint64_t *epoch, bool *created);
	int (*del)(struct backend *b, const char *group, enum mds_kind k,
		   const char *id, const struct mds_writer *w,
		   uint64_t *epoch);
	/* List a group's members or clients. */
	int (*list)(struct backend *b, const char *group, enum mds_kind k,
		    struct mds_list *out);
	/*
	 * A long-poll past epoch `after` begins; it never blocks.  0: its
	 * answer is due now (the list changed after `after`, or the backend
	 * cannot tell).  1: it waits; the backend calls the notify function
	 * (set_notify) with an epoch above `after` once group/k may have
	 * changed past it, and the caller ends the wait with wait_end.
	 */
	int (*wait_begin)(struct backend *b, const char *group,
			  enum mds_kind k, uint64_t after);
	/*
	 * A waiting long-poll's answer (before its wait_end): a listing not
	 * older than `after`, shared by the waiters where the backend has one.
	 */
	int (*wait_list)(struct backend *b, const char *group, enum mds_kind k,
			 uint64_t after, struct mds_list *out);
	/* NULL: a wait holds nothing. */
	void (*wait_end)(struct backend *b, const char *group, enum mds_kind k);
	/*
	 * The function told of changes: every long-poll of group/k past an
	 * epoch below `epoch` may be answered now.  Called with the backend's
	 * lock held: it must not call the backend.
	 */
	void (*set_notify)(struct backend *b, struct backend_notify n);
	/* Groups with at least one member or client, sorted. */
	int (*groups)(struct backend *b, struct mds_names *out);
	/* Readiness (debounced where it needs probing). */
	bool (*ready)(struct backend *b);
	/* Shutting down. */
	void (*shutdown)(struct backend *b);
	void (*destroy)(struct backend *b);
};

struct backend {
	const struct backend_ops *ops;
};

struct mdsd_config;
struct backend *mem_backend_new(const struct mdsd_config *cfg);
struct backend *etcd_backend_new(const struct mdsd_config *cfg);

/* -------------------------------------------------------------- config */

#define MDSD_MAX_ADVERTISE 64

struct advertise {
	char node[MDS_ID_MAX + 1];
	char addr[MDS_STR_MAX + 1];
};

struct mdsd_config {
	char listen[MDS_STR_MAX + 1];		/* ADDR:PORT */
	char backend[16];			/* memory | etcd */
	char etcd[1024];			/* URL[,URL...] */
	char etcd_prefix[128];
	/* etcd's own client security, passed to libcurl ("": unset) */
	char etcd_cacert[1024];			/* CA bundle for https URLs */
	char etcd_cert[1024];			/* client certificate (PEM) */
	char etcd_key[1024];			/* its private key (PEM) */
	char etcd_user[256];			/* etcd auth user name */
	char etcd_password_file[1024];		/* its password */
	/*
	 * The writers' bearer tokens (SPEC 7): the member token (cache
	 * hosts' agents, administration; --token-file is its alias) and the
	 * client token (inference instances: /clients only).  Only their
	 * SHA-256 digests are kept.
	 */
	char member_token_file[1024];
	char client_token_file[1024];
	bool member_auth, client_auth;		/* a token was read */
	unsigned char member_sha256[32], client_sha256[32];
	bool insecure;				/* open writes off loopback */
	struct sockaddr_storage listen_addr;	/* --listen, resolved */
	socklen_t listen_len;
	char group[MDS_ID_MAX + 1];		/* the agent's group */
	uint64_t ttl_ms;			/* default lease TTL */
	char snapshot[1024];
	bool agent;
	char host[MDS_STR_MAX + 1];		/* the agent's "host" field */
	char advertise_host[MDS_STR_MAX + 1];	/* for wildcard listeners */
	uint32_t weight;			/* the agent's member weight */
	struct advertise tcp[MDSD_MAX_ADVERTISE];
	size_t n_tcp;
	struct advertise rdma[MDSD_MAX_ADVERTISE];
	size_t n_rdma;
	unsigned int long_poll_ms;		/* longest wait_epoch wait */
	size_t body_limit;			/* request body bytes */
	unsigned int conn_timeout_s;		/* idle/slow connections */
	unsigned int max_conns;
	unsigned int max_conns_peer;		/* per peer address */
	unsigned int reserved_writes;		/* connections for writes */
	bool reserved_set;			/* given, not the default */
	unsigned int max_long_polls;		/* waiting at once, in all */
	unsigned int max_long_polls_peer;	/* per peer address */
	unsigned int http_threads;		/* request threads (jobs.c) */
	unsigned int max_group_weight;		/* sum of a group's weights */
	unsigned int max_entries;		/* memory backend: all groups */
	bool node_metrics;			/* host node stats in /metrics */
	int verbose;
};

/* Returns 0, or an exit status (2 on usage errors, -1 after --help). */
int mdsd_config_load(struct mdsd_config *cfg, int argc, char *argv[]);
extern const char mdsd_usage[];

/* ---------------------------------------------------------------- http */

struct http_server;
struct http_server *http_start(const struct mdsd_config *cfg,
			       struct backend *b);
void http_stop(struct http_server *s);

/* --------------------------------------------------------------- agent */

struct agent;
struct agent *agent_start(const struct mdsd_config *cfg, struct backend *b);
void agent_stop(struct agent *a);

/* ------------------------------------------------------------- metrics */

enum mdsd_counter {
	C_REGISTRATIONS,	/* new entries */
	C_RENEWALS,		/* heartbeats of existing entries */
	C_DEREGISTRATIONS,	/* DELETEs that removed an entry */
	C_LEASE_GRANTS,
	C_LEASE_EXPIRIES,
	C_EPOCH_BUMPS,
	C_BACKEND_ERRORS,
	C_LONGPOLLS,
	C_LONGPOLL_TIMEOUTS,
	C_SNAPSHOT_WRITES,
	C_SNAPSHOT_ERRORS,
	C_AGENT_SYNCS,
	C_AGENT_EVENTS,
	C_AGENT_ERRORS,
	C_AUTH_FAILURES,	/* PUTs and DELETEs refused with 401 */
	C_FORBIDDEN,		/* client-token writes of /members or of
				 * another key's /clients entry: 403 */
	C_WEIGHT_REFUSALS,	/* writes over max_group_weight: 409 */
	C_BUSY_REFUSALS,	/* reads in the writes' reserve: 503 */
	C_LONGPOLL_REFUSALS,	/* long-polls over a cap: 429 */
	C_LONGPOLL_GONE,	/* long-polls ended by their peer leaving */
	C_ETCD_WATCHES,		/* etcd watches opened */
	C_ETCD_GROUP_READS,	/* etcd ranges of a whole group */
	C_ETCD_CACHED_SUMS,	/* weight caps checked on a shared listing */
	C_ETCD_ENTRY_READS,	/* etcd ranges of one entry (writes) */
	C_NR_COUNTERS
};

struct mdsd_metrics {
	atomic_ullong c[C_NR_COUNTERS];
	atomic_int longpoll_waiters;
	atomic_int etcd_group_watches;	/* etcd feeds: groups watched now */
	atomic_int agent_nodes;
	atomic_int ready;
};

extern struct mdsd_metrics metrics;

static inline void counter_inc(enum mdsd_counter c)
{
	atomic_fetch_add_explicit(&metrics.c[c], 1, memory_order_relaxed);
}

void metrics_http(const char *method, unsigned int code);
/* The whole /metrics page (malloc()ed). */
char *metrics_render(const struct mdsd_config *cfg, struct backend *b,
		     size_t *len);

#endif /* MDSD_H */
