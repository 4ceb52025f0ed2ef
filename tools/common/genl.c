// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink helpers for the dfkv family (see genl.h), on libmnl.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/netlink.h>

#include "genl.h"

/* What one request's callbacks see: the socket and the caller's handler. */
struct talk_ctx {
	struct dfkv_genl *g;
	mnl_cb_t cb;
	void *data;
};

static int family_grp_cb(const struct nlattr *attr, void *data)
{
	struct dfkv_genl *g = data;
	const struct nlattr *tb[CTRL_ATTR_MCAST_GRP_MAX + 1] = { 0 };
	const struct nlattr *a;

	mnl_attr_for_each_nested(a, attr) {
		int type = mnl_attr_get_type(a);

		if (type <= CTRL_ATTR_MCAST_GRP_MAX)
			tb[type] = a;
	}
	if (tb[CTRL_ATTR_MCAST_GRP_NAME] && tb[CTRL_ATTR_MCAST_GRP_ID] &&
	    !strcmp(mnl_attr_get_str(tb[CTRL_ATTR_MCAST_GRP_NAME]),
		    DFKV_MCGRP_EVENTS))
		g->events_group = mnl_attr_get_u32(tb[CTRL_ATTR_MCAST_GRP_ID]);
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dfkv_genl *g = data;
	const struct nlattr *a;

	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		switch (mnl_attr_get_type(a)) {
		case CTRL_ATTR_FAMILY_ID:
			g->family = mnl_attr_get_u16(a);
			break;
		case CTRL_ATTR_MCAST_GROUPS: {
			const struct nlattr *grp;

			mnl_attr_for_each_nested(grp, a)
				family_grp_cb(grp, g);
			break;
		}
		}
	}
	return MNL_CB_OK;
}

static struct nlmsghdr *msg_start(struct dfkv_genl *g, void *buf,
				  uint16_t type, uint8_t cmd, uint8_t version,
				  uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *gh;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = ++g->seq;
	gh = mnl_nlmsg_put_extra_header(nlh, sizeof(*gh));
	gh->cmd = cmd;
	gh->version = version;
	return nlh;
}

int dfkv_genl_open(struct dfkv_genl *g)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	int one = 1, err;

	memset(g, 0, sizeof(*g));
	g->seq = (uint32_t)time(NULL);
	g->nl = mnl_socket_open(NETLINK_GENERIC);
	if (!g->nl)
		return -errno;
	if (mnl_socket_bind(g->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		mnl_socket_close(g->nl);
		g->nl = NULL;
		return err;
	}
	mnl_socket_setsockopt(g->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(g->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	nlh = msg_start(g, buf, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, 0);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, DFKV_GENL_NAME);
	err = dfkv_genl_talk(g, nlh, family_cb, g);
	if (err) {
		dfkv_genl_close(g);
		return err;
	}
	return 0;
}

void dfkv_genl_close(struct dfkv_genl *g)
{
	if (g->nl)
		mnl_socket_close(g->nl);
	g->nl = NULL;
}

struct nlmsghdr *dfkv_genl_msg(struct dfkv_genl *g, void *buf, uint8_t cmd,
			       uint16_t flags)
{
	return msg_start(g, buf, g->family, cmd, DFKV_GENL_VERSION, flags);
}

/* Pull the extended-ack message out of an error reply. */
static int error_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dfkv_genl *g = ((struct talk_ctx *)data)->g;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;
	unsigned int off;

	if (nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*e)))
		return MNL_CB_ERROR;
	if (e->error && (nlh->nlmsg_flags & NLM_F_ACK_TLVS)) {
		off = sizeof(*e);
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(e->msg);
		mnl_attr_for_each(a, nlh, off) {
			if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
			    mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0)
				snprintf(g->errmsg, sizeof(g->errmsg), "%s",
					 mnl_attr_get_str(a));
			if (mnl_attr_get_type(a) == NLMSGERR_ATTR_OFFS &&
			    mnl_attr_validate(a, MNL_TYPE_U32) == 0)
				g->erroff = mnl_attr_get_u32(a);
		}
	}
	errno = -e->error;
	return e->error ? MNL_CB_ERROR : MNL_CB_STOP;
}

/* End of a dump; the kernel may put the dump's error in it. */
static int done_cb(const struct nlmsghdr *nlh, void *data)
{
	const int *err = mnl_nlmsg_get_payload(nlh);

	(void)data;
	if (nlh->nlmsg_len >= mnl_nlmsg_size(sizeof(*err)) && *err < 0) {
		errno = -*err;
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

static int data_cb(const struct nlmsghdr *nlh, void *data)
{
	struct talk_ctx *ctx = data;

	return ctx->cb ? ctx->cb(nlh, ctx->data) : MNL_CB_OK;
}

int dfkv_genl_talk(struct dfkv_genl *g, struct nlmsghdr *nlh,
		   mnl_cb_t cb, void *data)
{
	struct talk_ctx ctx = { .g = g, .cb = cb, .data = data };
	char buf[32768];	/* a dump batch of the kernel fits */
	mnl_cb_t ctl[NLMSG_MIN_TYPE] = { 0 };
	uint32_t portid = mnl_socket_get_portid(g->nl);
	uint32_t seq = nlh->nlmsg_seq;
	ssize_t n;
	int ret;

	g->errmsg[0] = '\0';
	g->erroff = 0;
	/* With a control array, libmnl applies no defaults: name them all. */
	ctl[NLMSG_ERROR] = error_cb;
	ctl[NLMSG_DONE] = done_cb;
	if (mnl_socket_sendto(g->nl, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	for (;;) {
		n = mnl_socket_recvfrom(g->nl, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		errno = 0;
		ret = mnl_cb_run2(buf, n, seq, portid, data_cb, &ctx, ctl,
				  NLMSG_MIN_TYPE);
		if (ret == MNL_CB_ERROR)
			return errno ? -errno : -EPROTO;
		if (ret == MNL_CB_STOP)
			return 0;
	}
}

int dfkv_genl_subscribe(struct dfkv_genl *g)
{
	int grp = (int)g->events_group;

	if (!grp)
		return -ENOENT;
	if (mnl_socket_setsockopt(g->nl, NETLINK_ADD_MEMBERSHIP, &grp,
				  sizeof(grp)) < 0)
		return -errno;
	return 0;
}

int dfkv_genl_parse(const struct nlmsghdr *nlh, const struct nlattr **tb)
{
	const struct nlattr *a;

	memset(tb, 0, sizeof(*tb) * (DFKV_A_MAX + 1));
	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		int type = mnl_attr_get_type(a);

		if (type <= DFKV_A_MAX)
			tb[type] = a;
	}
	return 0;
}

int dfkv_genl_parse_stats(const struct nlattr *nest, const struct nlattr **tb)
{
	const struct nlattr *a;

	memset(tb, 0, sizeof(*tb) * (DFKV_STAT_MAX + 1));
	mnl_attr_for_each_nested(a, nest) {
		int type = mnl_attr_get_type(a);

		if (type <= DFKV_STAT_MAX)
			tb[type] = a;
	}
	return 0;
}

int dfkv_genl_dump(struct dfkv_genl *g, struct nlmsghdr *nlh, mnl_cb_t cb,
		   void *data, void (*reset)(void *data))
{
	int tries = 0, err;

	for (;;) {
		err = dfkv_genl_talk(g, nlh, cb, data);
		if (err != -EINTR || ++tries == 5)
			return err;
		reset(data);
		dfkv_genl_close(g);
		err = dfkv_genl_open(g);
		if (err)
			return err;
	}
}
