/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dfkvctl apply: the node configuration file (Documentation/config.md) as
 * apply_conf.c reads it and apply.c brings the kernel to it.  The node
 * settings are one table (enum conf_setting) so reading, comparing and
 * sending them is one loop each.
 */
#ifndef DFKVCTL_APPLY_H
#define DFKVCTL_APPLY_H

#include <limits.h>

#include "dfkvctl.h"

/* The node settings of the file, in the order they are reported. */
enum conf_setting {
	CS_RAM,			/* create only */
	CS_NUMA,		/* create only */
	CS_MAX_VALUE,
	CS_EVICT,		/* a bit of DFKV_A_NODE_FLAGS */
	CS_STATE,		/* set after create */
	CS_FIRST_REQUEST_MS,
	CS_IDLE_MS,
	CS_MAX_CONNS,
	CS_FRAME_MS,
	CS_MIN_RATE,
	CS_POLICY,
	CS_ACK,
	CS_DIRTY,
	CS_FLUSH_WORKERS,
	CS_AUTH,
	CS_TENANT_QUOTA,
	CS_COUNT
};

/* How a setting is written in the file and printed. */
enum conf_kind {
	CK_SIZE,	/* bytes: a number or "64M" */
	CK_U32,		/* a number */
	CK_BOOL,	/* true or false */
	CK_NUMA,	/* a NUMA node id or "interleave" */
	CK_STATE,	/* "up", "draining", "unhealthy" */
	CK_POLICY,	/* "writeback", "writearound" */
	CK_ACK,		/* "ram", "disk" */
	CK_AUTH,	/* "off", "required" */
};

struct conf_setting_def {
	const char *key;	/* in the file and in the report */
	enum conf_kind kind;
	uint16_t attr;		/* DFKV_A_NODE_*; 0 for CS_EVICT (FLAGS) */
	bool create_only;
};

extern const struct conf_setting_def conf_settings[CS_COUNT];

/* When a disk without a dfkv format may be formatted. */
enum conf_format {
	FORMAT_NEVER,	/* default: report it, write nothing */
	FORMAT_BLANK,	/* only when its first and last MiB are all zero */
};

struct conf_listener {
	char addr[LISTEN_ADDR_MAX];
	uint16_t port;
	uint32_t transport;	/* enum dfkv_listener_kind */
};

struct conf_disk {
	char path[DFKV_DISK_PATH_MAX];
	char name[DFKV_DISK_NAME_MAX];	/* default: basename of path */
	uint64_t extent;
	bool has_extent;
	enum conf_format format;
};

struct conf_tenant {
	uint64_t hash;
	char label[96];			/* "ns acme" or the hex hash */
	/* secret_file, second_secret_file (a rotation): "" for none */
	char secret_file[DFKV_TENANT_SECRETS_MAX][PATH_MAX];
	uint64_t quota;
	bool has_quota;
};

struct conf_node {
	char name[DFKV_NODE_NAME_MAX];
	uint64_t val[CS_COUNT];
	bool has[CS_COUNT];
	struct conf_listener *listeners;
	size_t n_listeners;
	struct conf_disk *disks;
	size_t n_disks;
	struct conf_tenant *tenants;
	size_t n_tenants;
};

struct conf {
	struct conf_node *nodes;
	size_t n_nodes;
};

/*
 * Read and check the whole file; on error print "FILE: what" and return
 * EXIT_USAGE (nothing is applied from a file with an error).
 */
int conf_load(const char *path, struct conf *c);
void conf_free(struct conf *c);

/* A setting's value as the report prints it. */
const char *conf_value_str(enum conf_setting s, uint64_t v, char *buf,
			   size_t len);

#endif /* DFKVCTL_APPLY_H */
