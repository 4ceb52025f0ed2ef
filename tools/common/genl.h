/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal generic netlink client for the "dfkv" family on top of libmnl:
 * resolve the family, send a request, walk the replies, and surface the
 * kernel's extended-ack message on errors.  Shared by dfkvctl, mdsd and
 * the selftests.
 */
#ifndef DFKV_GENL_H
#define DFKV_GENL_H

#include <stdint.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/dfkv.h>

struct dfkv_genl {
	struct mnl_socket *nl;
	uint16_t family;
	uint32_t events_group;	/* multicast group id of "events" */
	uint32_t seq;
	char errmsg[256];	/* extended ack text of the last error */
	uint32_t erroff;	/* offset of the attribute it names in the
				 * request (0: none) */
};

/* Open a socket and resolve the family; -errno (ENOENT: module absent). */
int dfkv_genl_open(struct dfkv_genl *g);
void dfkv_genl_close(struct dfkv_genl *g);

/* Start a request message for cmd in buf (MNL_SOCKET_BUFFER_SIZE bytes). */
struct nlmsghdr *dfkv_genl_msg(struct dfkv_genl *g, void *buf, uint8_t cmd,
			       uint16_t flags);

/*
 * Send nlh and run cb on every reply message until the ack or the end of a
 * dump.  Returns 0 or -errno; on error g->errmsg holds the kernel's text.
 */
int dfkv_genl_talk(struct dfkv_genl *g, struct nlmsghdr *nlh,
		   mnl_cb_t cb, void *data);
/*
 * A dump (nlh built with NLM_F_DUMP) through dfkv_genl_talk(), started
 * over when the objects changed while it ran (NLM_F_DUMP_INTR, -EINTR):
 * on a fresh socket, since the rest of that dump is still queued on the
 * old one, after reset(data) forgot what it had given; at most five
 * tries, then -EINTR.
 */
int dfkv_genl_dump(struct dfkv_genl *g, struct nlmsghdr *nlh, mnl_cb_t cb,
		   void *data, void (*reset)(void *data));

/* Join the "events" multicast group. */
int dfkv_genl_subscribe(struct dfkv_genl *g);

/* Parse the top-level attributes of a dfkv message into tb[DFKV_A_MAX+1]. */
int dfkv_genl_parse(const struct nlmsghdr *nlh, const struct nlattr **tb);
/* Parse a stats nest into tb[DFKV_STAT_MAX+1]. */
int dfkv_genl_parse_stats(const struct nlattr *nest, const struct nlattr **tb);

#endif /* DFKV_GENL_H */
