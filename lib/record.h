/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The mdsd directory record (SPEC.md 7): one member (cache node) or client
 * (inference instance) of a group, its validation and its one JSON codec,
 * shared by mdsd (HTTP API, snapshot file, etcd values: strict decoding),
 * libdfkv's discovery and dfkvctl's directory commands (lenient decoding
 * of what mdsd lists: unknown fields ignored, for forward compatibility).
 * Internal to libdfkv; the tools link it from libdfkv.a.
 */
#ifndef DFKV_LIB_RECORD_H
#define DFKV_LIB_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#define MDS_ID_MAX	64	/* group and entry ids: [A-Za-z0-9._-]{1,64} */
#define MDS_STR_MAX	255	/* tcp, rdma, host */
#define MDS_WEIGHT_MAX	1000
/*
 * The most a group's member weights may add up to (SPEC 7; 160 ring
 * points per unit): mdsd refuses a write beyond its --max-group-weight
 * (at most this), libdfkv a member list beyond this.
 */
#define MDS_GROUP_WEIGHT_MAX	8192
#define MDS_TTL_MIN_MS	100
#define MDS_TTL_MAX_MS	86400000ULL

enum mds_state { MDS_UP, MDS_DRAINING, MDS_UNHEALTHY, MDS_NR_STATES };

/* One member (cache node) or client (inference instance) of a group. */
struct mds_entry {
	char id[MDS_ID_MAX + 1];
	char tcp[MDS_STR_MAX + 1];	/* "host:port" or "" */
	char rdma[MDS_STR_MAX + 1];	/* "host:port" or "" */
	char host[MDS_STR_MAX + 1];	/* host name or "" */
	uint32_t weight;		/* 1..MDS_WEIGHT_MAX */
	enum mds_state state;
	uint64_t ttl_ms;		/* lease time-to-live */
};

const char *mds_state_name(enum mds_state s);
int mds_state_parse(const char *s, enum mds_state *out);
bool mds_id_valid(const char *s);
bool mds_addr_valid(const char *s);
bool mds_host_valid(const char *s);

/*
 * Decode a PUT body (or a stored record).  id is the id from the path; a
 * body "id" must equal it.  Missing ttl_ms takes default_ttl_ms.  Returns
 * 0, or -EINVAL with a reason in err.
 */
int mds_entry_from_json(struct json_object *o, const char *id,
			uint64_t default_ttl_ms, struct mds_entry *e,
			char *err, size_t errlen);
/*
 * The same, except that with lenient an unknown field is ignored instead
 * of refused (a reader of what a newer mdsd lists).
 */
int mds_entry_decode(struct json_object *o, const char *id,
		     uint64_t default_ttl_ms, bool lenient,
		     struct mds_entry *e, char *err, size_t errlen);
/* Parse a whole buffer as one JSON object, strictly. */
struct json_object *mds_json_parse(const char *buf, size_t len,
				   char *err, size_t errlen);
/* The record as JSON (fixed key order: renders identically everywhere). */
struct json_object *mds_entry_to_json(const struct mds_entry *e);
bool mds_entry_equal(const struct mds_entry *a, const struct mds_entry *b);

#endif /* DFKV_LIB_RECORD_H */
