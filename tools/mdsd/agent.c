// SPDX-License-Identifier: GPL-2.0
/*
 * mdsd host agent: registers this host's dfkv.ko nodes as members of one
 * group and keeps their leases alive.
 *
 * One thread.  It lists the nodes with the DFKV_CMD_NODE_GET dump, follows
 * the "events" multicast group on a second socket (deleted node:
 * deregister at once; new node, state, phase or listeners: dump again at
 * once) and repeats the dump every ttl/3, which renews every lease and
 * repairs anything an overflowed event socket lost.  A node that is not a
 * member yet is registered only once its phase is up, not while a disk
 * attach rebuilds its index (agent_node.c): a restarted node enters the
 * ring warm, at the dump its phase event brings.  When the module goes away
 * its nodes are deregistered.  On exit nothing is deregistered: the
 * leases lapse and the nodes leave the ring within the TTL.
 *
 * A member's id is the node name, its state the node state; tcp and rdma
 * are the node's first listener of each transport (DFKV_A_LISTENERS; a
 * wildcard address becomes --advertise-host, else the host name) unless
 * --advertise / --advertise-rdma name them; weight from --weight, host
 * from --host.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_node.h"
#include "genl.h"
#include "mdsd.h"
#include "runtime.h"

#define AGENT_MAX_NODES		256
#define AGENT_RETRY_MS		1000

struct agent {
	const struct mdsd_config *cfg;
	struct backend *b;
	pthread_t thread;
	int wake[2];			/* pipe: stop */
	struct dfkv_genl req, ev;	/* dumps; events */
	bool open;
	struct agent_node known[AGENT_MAX_NODES];	/* registered */
	size_t n_known;
	bool resync;			/* an event asks for a dump */
};

static enum mds_state to_mds_state(uint32_t s)
{
	switch (s) {
	case DFKV_NODE_STATE_DRAINING:
		return MDS_DRAINING;
	case DFKV_NODE_STATE_UNHEALTHY:
		return MDS_UNHEALTHY;
	default:
		return MDS_UP;
	}
}

static const char *lookup(const struct advertise *list, size_t n,
			  const char *node)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(list[i].node, node))
			return list[i].addr;
	}
	return "";
}

static long known_find(struct agent *a, const char *name)
{
	size_t i;

	for (i = 0; i < a->n_known; i++) {
		if (!strcmp(a->known[i].name, name))
			return (long)i;
	}
	return -1;
}

static void known_drop(struct agent *a, size_t i)
{
	a->known[i] = a->known[--a->n_known];
	atomic_store(&metrics.agent_nodes, (int)a->n_known);
}

/* Register or heartbeat one node (as dumped). */
static void node_register(struct agent *a, const struct agent_node *n)
{
	const struct mdsd_config *cfg = a->cfg;
	const char *name = n->name, *adv;
	uint32_t state = n->state;
	struct mds_entry e = { 0 };
	uint64_t epoch;
	bool created;
	long i;
	int ret;

	if (!mds_id_valid(name))
		return;
	snprintf(e.id, sizeof(e.id), "%s", name);
	/* --advertise wins over the kernel's listener. */
	adv = lookup(cfg->tcp, cfg->n_tcp, name);
	snprintf(e.tcp, sizeof(e.tcp), "%s", *adv ? adv : n->tcp);
	adv = lookup(cfg->rdma, cfg->n_rdma, name);
	snprintf(e.rdma, sizeof(e.rdma), "%s", *adv ? adv : n->rdma);
	snprintf(e.host, sizeof(e.host), "%s", cfg->host);
	e.weight = cfg->weight;
	e.state = to_mds_state(state);
	e.ttl_ms = cfg->ttl_ms;
	ret = a->b->ops->put(a->b, cfg->group, MDS_MEMBERS, &e, NULL, &epoch,
			     &created);
	if (ret) {
		counter_inc(C_AGENT_ERRORS);
		logmsg(LOG_ERR, "agent: cannot register node %s: %s", name,
		       ret == -EDQUOT ?
		       "the group's weights would pass --max-group-weight" :
		       strerror(-ret));
		return;
	}
	if (created)
		logmsg(LOG_INFO, "agent: registered node %s (%s) in group %s",
		       name, mds_state_name(e.state), cfg->group);
	i = known_find(a, name);
	if (i < 0 && a->n_known < AGENT_MAX_NODES) {
		i = (long)a->n_known++;
		snprintf(a->known[i].name, sizeof(a->known[i].name), "%s", name);
		atomic_store(&metrics.agent_nodes, (int)a->n_known);
	}
	if (i >= 0)
		a->known[i].state = state;
}

static void node_deregister(struct agent *a, const char *name)
{
	uint64_t epoch;
	long i = known_find(a, name);
	int ret;

	ret = a->b->ops->del(a->b, a->cfg->group, MDS_MEMBERS, name, NULL,
			     &epoch);
	if (ret && ret != -ENOENT) {
		counter_inc(C_AGENT_ERRORS);
		logmsg(LOG_ERR, "agent: cannot deregister node %s: %s", name,
		       strerror(-ret));
		return;		/* retried at the next sync */
	}
	logmsg(LOG_INFO, "agent: node %s left group %s", name, a->cfg->group);
	if (i >= 0)
		known_drop(a, (size_t)i);
}

/* ------------------------------------------------------------ netlink */

struct dump {
	const struct mdsd_config *cfg;
	struct agent_node n[AGENT_MAX_NODES];
	size_t count;
};

static int dump_cb(const struct nlmsghdr *nlh, void *data)
{
	struct dump *d = data;

	if (d->count < AGENT_MAX_NODES &&
	    agent_node_parse(nlh, d->cfg, &d->n[d->count]))
		d->count++;
	return MNL_CB_OK;
}

static void nl_close(struct agent *a)
{
	if (!a->open)
		return;
	dfkv_genl_close(&a->req);
	dfkv_genl_close(&a->ev);
	a->open = false;
}

static int nl_open(struct agent *a)
{
	int ret;

	ret = dfkv_genl_open(&a->req);
	if (ret)
		return ret;
	ret = dfkv_genl_open(&a->ev);
	if (ret) {
		dfkv_genl_close(&a->req);
		return ret;
	}
	ret = dfkv_genl_subscribe(&a->ev);
	if (ret) {
		dfkv_genl_close(&a->req);
		dfkv_genl_close(&a->ev);
		return ret;
	}
	a->open = true;
	logmsg(LOG_VERBOSE, "agent: following the dfkv netlink family");
	return 0;
}

/* Dump the nodes, register them all, deregister the vanished ones. */
static int sync_nodes(struct agent *a)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct dump *d;
	size_t i, j;
	int ret;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = a->cfg;
	nlh = dfkv_genl_msg(&a->req, buf, DFKV_CMD_NODE_GET, NLM_F_DUMP);
	ret = dfkv_genl_talk(&a->req, nlh, dump_cb, d);
	if (ret) {
		free(d);
		return ret;
	}
	counter_inc(C_AGENT_SYNCS);
	for (i = 0; i < d->count; i++) {
		if (agent_node_admit(&d->n[i], known_find(a, d->n[i].name) >= 0))
			node_register(a, &d->n[i]);
		else
			logmsg(LOG_VERBOSE, "agent: node %s is rebuilding: not registered yet",
			       d->n[i].name);
	}
	for (i = 0; i < a->n_known;) {
		for (j = 0; j < d->count; j++) {
			if (!strcmp(d->n[j].name, a->known[i].name))
				break;
		}
		if (j == d->count) {
			size_t before = a->n_known;

			node_deregister(a, a->known[i].name);
			if (a->n_known < before)
				continue;	/* slot i holds another now */
		}
		i++;
	}
	free(d);
	return 0;
}

/*
 * Events: a deleted node leaves at once; a new node, a state or phase
 * change or a listener added or removed asks for a dump (events do not
 * carry the listeners).
 */
static int event_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct genlmsghdr *gh = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *tb[DFKV_A_MAX + 1];
	struct agent *a = data;
	const char *name;
	uint32_t ev;

	if (nlh->nlmsg_type != a->ev.family ||
	    nlh->nlmsg_len < mnl_nlmsg_size(sizeof(*gh)) ||
	    gh->cmd != DFKV_CMD_NODE_EVENT)
		return MNL_CB_OK;
	dfkv_genl_parse(nlh, tb);
	if (!tb[DFKV_A_EVENT] || !tb[DFKV_A_NODE_NAME] ||
	    mnl_attr_get_payload_len(tb[DFKV_A_EVENT]) != 4 ||
	    mnl_attr_validate(tb[DFKV_A_NODE_NAME], MNL_TYPE_NUL_STRING))
		return MNL_CB_OK;
	counter_inc(C_AGENT_EVENTS);
	ev = mnl_attr_get_u32(tb[DFKV_A_EVENT]);
	name = mnl_attr_get_str(tb[DFKV_A_NODE_NAME]);
	logmsg(LOG_VERBOSE, "agent: event %u node %s", ev, name);
	if (ev == DFKV_EVENT_NODE_DEL)
		node_deregister(a, name);
	else
		a->resync = true;
	return MNL_CB_OK;
}

/* Read pending events; false when the socket must be reopened. */
static bool read_events(struct agent *a, bool *resync)
{
	char buf[32768];
	ssize_t n;

	for (;;) {
		n = recv(mnl_socket_get_fd(a->ev.nl), buf, sizeof(buf),
			 MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return true;
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				/* Events were lost: list everything again. */
				*resync = true;
				continue;
			}
			return false;
		}
		if (mnl_cb_run(buf, (size_t)n, 0, 0, event_cb, a) == MNL_CB_ERROR)
			*resync = true;
		if (a->resync) {
			a->resync = false;
			*resync = true;
		}
	}
}

static bool sleep_or_stop(struct agent *a, int ms)
{
	struct pollfd p = { .fd = a->wake[0], .events = POLLIN };

	return poll(&p, 1, ms) > 0 || atomic_load(&mdsd_stopping);
}

static void *agent_main(void *arg)
{
	struct agent *a = arg;
	uint64_t interval = a->cfg->ttl_ms / 3, next_sync = 0, now;
	bool warned = false;
	int ret;

	if (interval < 50)
		interval = 50;
	while (!atomic_load(&mdsd_stopping)) {
		struct pollfd p[2];
		bool resync = false;

		if (!a->open) {
			ret = nl_open(a);
			if (ret) {
				if (!warned)
					logmsg(LOG_INFO, "agent: dfkv netlink family unavailable (%s); retrying",
					       ret == -ENOENT ? "module not loaded" :
					       strerror(-ret));
				warned = true;
				/* The module is gone, and its nodes with it. */
				while (a->n_known) {
					size_t before = a->n_known;

					node_deregister(a, a->known[0].name);
					if (a->n_known == before)
						break;
				}
				if (sleep_or_stop(a, AGENT_RETRY_MS))
					break;
				continue;
			}
			warned = false;
			next_sync = 0;
		}
		now = now_mono_ms();
		if (now >= next_sync) {
			ret = sync_nodes(a);
			if (ret) {
				counter_inc(C_AGENT_ERRORS);
				logmsg(LOG_VERBOSE, "agent: node dump failed: %s",
				       strerror(-ret));
				nl_close(a);
				continue;
			}
			next_sync = now_mono_ms() + interval;
		}
		p[0].fd = mnl_socket_get_fd(a->ev.nl);
		p[0].events = POLLIN;
		p[1].fd = a->wake[0];
		p[1].events = POLLIN;
		now = now_mono_ms();
		ret = poll(p, 2, next_sync > now ? (int)(next_sync - now) : 0);
		if (ret < 0 && errno != EINTR)
			break;
		if (p[1].revents || atomic_load(&mdsd_stopping))
			break;
		if (ret > 0 && p[0].revents) {
			if (!read_events(a, &resync)) {
				counter_inc(C_AGENT_ERRORS);
				nl_close(a);
				continue;
			}
			if (resync)
				next_sync = 0;
		}
	}
	nl_close(a);
	return NULL;
}

struct agent *agent_start(const struct mdsd_config *cfg, struct backend *b)
{
	struct agent *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->cfg = cfg;
	a->b = b;
	if (pipe2(a->wake, O_CLOEXEC | O_NONBLOCK)) {
		free(a);
		return NULL;
	}
	if (pthread_create(&a->thread, NULL, agent_main, a)) {
		close(a->wake[0]);
		close(a->wake[1]);
		free(a);
		return NULL;
	}
	logmsg(LOG_INFO, "agent: registering this host's nodes in group %s (ttl %llu ms)",
	       cfg->group, (unsigned long long)cfg->ttl_ms);
	return a;
}

void agent_stop(struct agent *a)
{
	if (!a)
		return;
	if (write(a->wake[1], "x", 1) < 0)
		logmsg(LOG_DEBUG, "agent: wake: %s", strerror(errno));
	pthread_join(a->thread, NULL);
	close(a->wake[0]);
	close(a->wake[1]);
	free(a);
}
