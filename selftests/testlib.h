/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The helper library of dfkv's C selftests (testlib.c, linked into each
 * of them; not a test itself): load the module, create and delete nodes
 * over netlink, open /dev/dfkv bound to a node, and build ioctl argument
 * structs.
 */
#ifndef DFKV_TESTLIB_H
#define DFKV_TESTLIB_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dfkv.h>

#include "genl.h"

/*
 * kselftest_harness.h stops a test after 30 s unless it names its own
 * bound: a wall-clock limit that a busy host under software emulation and
 * the debug kernel (KASAN, lockdep) pass without any bug.  Here the
 * harness's timeout only catches a hang, so every test gets ten minutes
 * (those that need more say so with TEST_F_TIMEOUT).  Included after the
 * harness, before the tests.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 600
#endif

/* insmod dfkv.ko unless it is loaded; 0 on success. */
int dfkv_test_load(void);

/* Create a node: 0 or -errno; errmsg (if any) into g->errmsg. */
int dfkv_test_node_add(struct dfkv_genl *g, const char *name, uint64_t ram,
		       uint64_t max_value, int evict);
/* The same, a disk-only node (DFKV_NODE_F_DISK_ONLY), evicting. */
int dfkv_test_node_add_disk_only(struct dfkv_genl *g, const char *name,
				 uint64_t ram, uint64_t max_value);
int dfkv_test_node_del(struct dfkv_genl *g, const char *name);

/* Open /dev/dfkv and bind it; fd or -errno. */
int dfkv_test_open(const char *node);

/* A block key derived from a number (tenant t, id from n). */
struct dfkv_key dfkv_test_key(uint64_t t, uint64_t n);

/* PUT/GET/EXIST/REMOVE through the single ioctls; ioctl's return value. */
int dfkv_test_put(int fd, const struct dfkv_key *k, const void *buf,
		  uint64_t len, struct dfkv_ioc_op *out);
int dfkv_test_get(int fd, const struct dfkv_key *k, void *buf, uint64_t cap,
		  uint64_t off, uint64_t len, struct dfkv_ioc_op *out);
int dfkv_test_simple(int fd, unsigned long cmd, const struct dfkv_key *k,
		     struct dfkv_ioc_op *out);
/* TOUCH/PROBE/LEASE/RELEASE of n keys (results in res, lease TTL ttl ms). */
int dfkv_test_keys(int fd, unsigned long cmd, struct dfkv_key *keys,
		   uint32_t n, uint64_t *res, uint64_t ttl,
		   struct dfkv_ioc_keys *out);

/* Fill buf with bytes derived from (key, seed) and check them. */
void dfkv_test_fill(void *buf, size_t len, const struct dfkv_key *k,
		    uint32_t seed);
int dfkv_test_verify(const void *buf, size_t len, const struct dfkv_key *k,
		     uint32_t seed);

/* A node stat (DFKV_STAT_*) read over netlink; -1 on error. */
int64_t dfkv_test_stat(struct dfkv_genl *g, const char *node, int stat);
/*
 * Poll a node stat until it is want (or, with ge, at least want): 60 s
 * at most; 1 when it got there.  For what the node does after a reply
 * went out, such as giving back the pages a TCP GET lent to the socket
 * once the peer acknowledged them (the pins gauge).
 */
int dfkv_test_wait_stat(struct dfkv_genl *g, const char *node, int stat,
			int64_t want, int ge);

/* Add (add != 0) or delete a TCP listener; 0 or -errno. */
int dfkv_test_listen(struct dfkv_genl *g, const char *node, const char *addr,
		     uint16_t port, int add);
/* The same of a listener of kind (enum dfkv_listener_kind). */
int dfkv_test_listener(struct dfkv_genl *g, const char *node,
		       const char *addr, uint16_t port, uint32_t kind, int add);
/* NODE_SET of one u32 attribute. */
int dfkv_test_node_set_u32(struct dfkv_genl *g, const char *node, int attr,
			   uint32_t val);

/* NODE_NEW with DFKV_A_NODE_AUTH and DFKV_A_NODE_TENANT_QUOTA as well. */
int dfkv_test_node_add_auth(struct dfkv_genl *g, const char *name,
			    uint64_t ram, int evict, uint32_t auth,
			    uint64_t tenant_quota);
/* NODE_SET of one u64 attribute. */
int dfkv_test_node_set_u64(struct dfkv_genl *g, const char *node, int attr,
			   uint64_t val);

/*
 * TENANT_SET: secret (DFKV_TENANT_SECRET_LEN bytes) and quota are left
 * out when NULL; secret_len lets a test send a wrong length.
 */
int dfkv_test_tenant_set(struct dfkv_genl *g, const char *node,
			 uint64_t tenant, const void *secret, size_t secret_len,
			 const uint64_t *quota);
/* TENANT_SET with one secret attribute of type attr (ADD or DROP). */
int dfkv_test_tenant_secret(struct dfkv_genl *g, const char *node,
			    uint64_t tenant, int attr, const void *secret);
int dfkv_test_tenant_del(struct dfkv_genl *g, const char *node,
			 uint64_t tenant);

/* What TENANT_GET tells of one tenant. */
struct dfkv_test_tenant {
	uint32_t flags;			/* enum dfkv_tenant_flags */
	uint32_t secrets;		/* how many it holds */
	uint64_t quota;			/* in force */
	int64_t stat[DFKV_STAT_MAX + 1];	/* -1: absent */
};

/* TENANT_GET doit; 0 or -errno. */
int dfkv_test_tenant_get(struct dfkv_genl *g, const char *node,
			 uint64_t tenant, struct dfkv_test_tenant *out);

/* A loop device over a fresh 64 MiB sparse file img; its path in dev. */
int dfkv_test_new_loop(const char *img, char *dev, size_t len);
/* DISK_ADD of dev (named name unless NULL), formatting it if format. */
int dfkv_test_disk_add(struct dfkv_genl *g, const char *node, const char *dev,
		       const char *name, int format);
int dfkv_test_disk_del(struct dfkv_genl *g, const char *node,
		       const char *name);

/* Drop capability cap from every set of this process; 0 or -errno. */
int dfkv_test_drop_cap(int cap);

/* ------------------------------------------- raw TCP client (wire epoch 6) */

struct dfkv_test_resp {
	int status;
	uint64_t stored_len;
	uint64_t data_len;
};

void dfkv_test_le64(uint8_t *p, uint64_t v);
uint64_t dfkv_test_rd64(const uint8_t *p);
/* A block key as the wire carries it (24 bytes) into p. */
void dfkv_test_wire_key(uint8_t *p, const struct dfkv_key *k);

/* Connect to 127.0.0.1:port (TCP_NODELAY); fd or -1. */
int dfkv_test_tcp_connect(uint16_t port);
/* One request: a 50-byte prefix naming k (if any) and its payload. */
int dfkv_test_tcp_send(int fd, int op, const struct dfkv_key *k,
		       uint64_t off, uint64_t len, const void *payload,
		       uint64_t plen);
/* The next reply; its data into buf (cap bytes at most); 0 or -1. */
int dfkv_test_tcp_recv(int fd, struct dfkv_test_resp *r, void *buf,
		       size_t cap);
/* Both in one: the reply's status, or -1. */
int dfkv_test_tcp_call(int fd, int op, const struct dfkv_key *k,
		       uint64_t off, uint64_t len, const void *payload,
		       uint64_t plen, struct dfkv_test_resp *r, void *buf,
		       size_t cap);
/*
 * How long a test waits for what must happen (a reply, a close, a
 * stream's next bytes) before it fails: a bound for a broken module, not
 * a measure; a debug kernel on a loaded host can take seconds.
 */
#define DFKV_TEST_WAIT_MS 60000

/* The peer closed the connection (EOF or reset within DFKV_TEST_WAIT_MS). */
int dfkv_test_peer_closed(int fd);

#endif /* DFKV_TESTLIB_H */
