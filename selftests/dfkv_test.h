/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared fixtures of dfkv's C selftests: load the module, create and
 * delete nodes over netlink, open /dev/dfkv bound to a node, and build
 * ioctl argument structs.
 */
#ifndef DFKV_TEST_H
#define DFKV_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dfkv.h>

#include "genl.h"

/* insmod dfkv.ko unless it is loaded; 0 on success. */
int dfkv_test_load(void);

/* Create a node: 0 or -errno; errmsg (if any) into g->errmsg. */
int dfkv_test_node_add(struct dfkv_genl *g, const char *name, uint64_t ram,
		       uint64_t max_value, int evict);
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

/* Fill buf with bytes derived from (key, seed) and check them. */
void dfkv_test_fill(void *buf, size_t len, const struct dfkv_key *k,
		    uint32_t seed);
int dfkv_test_verify(const void *buf, size_t len, const struct dfkv_key *k,
		     uint32_t seed);

/* A node stat (DFKV_STAT_*) read over netlink; -1 on error. */
int64_t dfkv_test_stat(struct dfkv_genl *g, const char *node, int stat);

/* Add (add != 0) or delete a TCP listener; 0 or -errno. */
int dfkv_test_listen(struct dfkv_genl *g, const char *node, const char *addr,
		     uint16_t port, int add);
/* NODE_SET of one u32 attribute. */
int dfkv_test_node_set_u32(struct dfkv_genl *g, const char *node, int attr,
			   uint32_t val);

#endif /* DFKV_TEST_H */
