// SPDX-License-Identifier: GPL-2.0
/*
 * The listener and connection bookkeeping the TCP and RDMA transports share
 * (see listener.h): a node's listeners of one transport, looked up by
 * address under the set's lock, their netlink dump, and the admission and
 * removal of accepted connections against the node's limit, and the peer
 * addresses they come from (listed while they have connections, under
 * the same lock, taken on accept and release only).  Shutdown sets
 * `closing` under the lock, so nothing is listed after it; it closes the
 * listeners before killing the connections, so none is accepted while it
 * waits for them.  Each connection's deadline work (conn_deadline()
 * under the node's limits, with the transport telling what the connection
 * is doing) is here too, so neither transport spells it out.
 */
#include <linux/inet.h>
#include <linux/jhash.h>
#include <linux/slab.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/lockdep.h>
#include <linux/jiffies.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <net/genetlink.h>

#include "listener.h"
#include "node.h"

static int parse_addr(struct dfkv_node *node, const char *addr, u16 port,
		      struct sockaddr_storage *ss)
{
	char p[8];

	snprintf(p, sizeof(p), "%u", port);
	return inet_pton_with_scope(node->net, AF_UNSPEC, addr, p, ss);
}

static bool addr_equal(const struct sockaddr_storage *a,
		       const struct sockaddr_storage *b)
{
	size_t len = a->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
		sizeof(struct sockaddr_in6);

	return a->ss_family == b->ss_family && !memcmp(a, b, len);
}

static struct dfkv_listener *listener_find(struct dfkv_listeners *ls,
					   const struct sockaddr_storage *ss)
{
	struct dfkv_listener *l;

	lockdep_assert_held(&ls->lock);
	list_for_each_entry(l, &ls->listeners, list)
		if (addr_equal(&l->addr, ss))
			return l;
	return NULL;
}

int dfkv_listener_init(struct dfkv_listeners *ls, struct dfkv_listener *l,
		       struct dfkv_node *node, const char *addr, u16 port,
		       struct netlink_ext_ack *extack)
{
	int err;

	l->node = node;
	err = parse_addr(node, addr, port, &l->addr);
	if (err) {
		NL_SET_ERR_MSG(extack, "the listen address is not an IPv4 or IPv6 address");
		return err;
	}
	mutex_lock(&ls->lock);
	if (listener_find(ls, &l->addr)) {
		NL_SET_ERR_MSG(extack, "the node already listens there");
		err = -EEXIST;
	}
	mutex_unlock(&ls->lock);
	return err;
}

int dfkv_listeners_add(struct dfkv_listeners *ls, struct dfkv_listener *l,
		       struct netlink_ext_ack *extack)
{
	int err = 0;

	mutex_lock(&ls->lock);
	if (listener_find(ls, &l->addr)) {
		NL_SET_ERR_MSG(extack, "the node already listens there");
		err = -EEXIST;
	} else if (ls->closing) {
		err = -ENODEV;
	} else {
		if (ls->ops->listener_start)
			ls->ops->listener_start(l);
		list_add_tail(&l->list, &ls->listeners);
	}
	mutex_unlock(&ls->lock);
	return err;
}

int dfkv_listeners_del(struct dfkv_listeners *ls, struct dfkv_node *node,
		       const char *addr, u16 port,
		       struct netlink_ext_ack *extack)
{
	struct sockaddr_storage ss;
	struct dfkv_listener *l;

	if (parse_addr(node, addr, port, &ss)) {
		NL_SET_ERR_MSG(extack, "the listen address is not an IPv4 or IPv6 address");
		return -EINVAL;
	}
	mutex_lock(&ls->lock);
	l = listener_find(ls, &ss);
	if (l)
		list_del(&l->list);
	mutex_unlock(&ls->lock);
	if (!l)
		return -ENOENT;
	ls->ops->listener_free(l);
	return 0;
}

int dfkv_listeners_fill(struct sk_buff *skb, struct dfkv_listeners *ls)
{
	char addr[INET6_ADDRSTRLEN + 1];
	struct dfkv_listener *l;
	struct nlattr *one;
	int err = 0;

	mutex_lock(&ls->lock);
	list_for_each_entry(l, &ls->listeners, list) {
		u16 port;

		if (l->addr.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&l->addr;

			snprintf(addr, sizeof(addr), "%pI4", &in->sin_addr);
			port = ntohs(in->sin_port);
		} else {
			struct sockaddr_in6 *in6 =
				(struct sockaddr_in6 *)&l->addr;

			snprintf(addr, sizeof(addr), "%pI6c", &in6->sin6_addr);
			port = ntohs(in6->sin6_port);
		}
		one = nla_nest_start(skb, DFKV_A_LISTENER);
		if (!one || nla_put_string(skb, DFKV_A_LISTEN_ADDR, addr) ||
		    nla_put_u16(skb, DFKV_A_LISTEN_PORT, port) ||
		    nla_put_u32(skb, DFKV_A_LISTEN_TRANSPORT, ls->ops->kind)) {
			err = -EMSGSIZE;
			break;
		}
		nla_nest_end(skb, one);
	}
	mutex_unlock(&ls->lock);
	return err;
}

/* The peer of address ss, listed or new, with one more connection. */
static struct dfkv_peer *peer_get(struct dfkv_listeners *ls,
				  const struct sockaddr_storage *ss)
{
	struct dfkv_peer *p;
	u8 addr[16] = {};
	u32 key;

	lockdep_assert_held(&ls->lock);
	if (ss->ss_family == AF_INET)
		memcpy(addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	else
		memcpy(addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	key = jhash(addr, sizeof(addr), ss->ss_family);
	hash_for_each_possible(ls->peers, p, node, key)
		if (p->family == ss->ss_family &&
		    !memcmp(p->addr, addr, sizeof(addr)))
			goto found;
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p)
		return NULL;
	memcpy(p->addr, addr, sizeof(addr));
	p->family = ss->ss_family;
	atomic64_set(&p->recv_reserved, 0);
	atomic64_set(&p->staged, 0);
	hash_add(ls->peers, &p->node, key);
found:
	p->conns++;
	return p;
}

static void peer_put(struct dfkv_listeners *ls, struct dfkv_peer *p)
{
	lockdep_assert_held(&ls->lock);
	if (!p || --p->conns)
		return;
	WARN_ON_ONCE(atomic64_read(&p->recv_reserved));
	WARN_ON_ONCE(atomic64_read(&p->staged));
	hash_del(&p->node);
	kfree(p);
}

/* Count one more connection against max. */
static int conn_admit(struct dfkv_listeners *ls, u32 max)
{
	lockdep_assert_held(&ls->lock);
	if (ls->closing)
		return -ESHUTDOWN;
	if (ls->nr_conns >= max)
		return -EBUSY;
	WRITE_ONCE(ls->nr_conns, ls->nr_conns + 1);
	return 0;
}

static void conn_list(struct dfkv_listeners *ls, struct dfkv_conn_core *cc,
		      struct dfkv_node *node)
{
	lockdep_assert_held(&ls->lock);
	kref_get(&node->ref);
	list_add_tail(&cc->list, &ls->conns);
}

int dfkv_listeners_conn_add(struct dfkv_listeners *ls,
			    struct dfkv_conn_core *cc, struct dfkv_node *node,
			    u32 max, const struct sockaddr_storage *peer)
{
	int err = conn_admit(ls, max);

	if (err)
		return err;
	cc->peer = peer_get(ls, peer);
	if (!cc->peer) {
		/* no shutdown waits: closing was false under this lock */
		WRITE_ONCE(ls->nr_conns, ls->nr_conns - 1);
		return -ENOMEM;
	}
	conn_list(ls, cc, node);
	return 0;
}

int dfkv_listeners_conn_reserve(struct dfkv_listeners *ls, u32 max)
{
	int err;

	mutex_lock(&ls->lock);
	err = conn_admit(ls, max);
	mutex_unlock(&ls->lock);
	return err;
}

void dfkv_listeners_conn_unreserve(struct dfkv_listeners *ls)
{
	mutex_lock(&ls->lock);
	WRITE_ONCE(ls->nr_conns, ls->nr_conns - 1);
	mutex_unlock(&ls->lock);
	wake_up(&ls->conns_gone);
}

int dfkv_listeners_conn_add_reserved(struct dfkv_listeners *ls,
				     struct dfkv_conn_core *cc,
				     struct dfkv_node *node,
				     const struct sockaddr_storage *peer)
{
	int err = 0;

	mutex_lock(&ls->lock);
	if (ls->closing) {
		err = -ESHUTDOWN;
	} else {
		cc->peer = peer_get(ls, peer);
		if (cc->peer)
			conn_list(ls, cc, node);
		else
			err = -ENOMEM;
	}
	mutex_unlock(&ls->lock);
	return err;
}

void dfkv_listeners_conn_del(struct dfkv_listeners *ls,
			     struct dfkv_conn_core *cc)
{
	mutex_lock(&ls->lock);
	list_del(&cc->list);
	peer_put(ls, cc->peer);
	WRITE_ONCE(ls->nr_conns, ls->nr_conns - 1);
	mutex_unlock(&ls->lock);
	wake_up(&ls->conns_gone);
}

/* Bring *due forward to t if t comes first. */
static void due_by(unsigned long *due, unsigned long t)
{
	if (time_before(t, *due))
		*due = t;
}

/*
 * A frame being received or a reply being sent must move min_rate bytes a
 * second over each grace period (from the first check that saw one in
 * progress); one that ends meanwhile leaves the window running, counting
 * the next one's bytes.
 */
static bool rate_too_low(const struct dfkv_conn_limits *lim,
			 struct dfkv_conn_clock *ck, unsigned long now)
{
	u64 rate = READ_ONCE(lim->min_rate), got = READ_ONCE(ck->bytes);

	if (!rate) {
		ck->win_open = false;
		return false;
	}
	if (ck->win_open && time_before(now, ck->win_start +
					msecs_to_jiffies(DFKV_MIN_RATE_GRACE_MS)))
		return false;
	if (ck->win_open &&
	    got - ck->win_bytes < div_u64(rate * DFKV_MIN_RATE_GRACE_MS, 1000))
		return true;
	ck->win_open = true;
	ck->win_start = now;
	ck->win_bytes = got;
	return false;
}

/*
 * The deadlines of SPEC.md section 2 under the node's limits, from the
 * connection's deadline work: the first request within first_request_ms
 * of accept, nothing idle past idle_ms, a started frame whole within
 * frame_ms of its first byte, a reply never stalled for frame_ms, and
 * either moving at min_rate over each grace period.  True: drop the
 * connection now (the caller counts it); else *delay is when to look
 * again (at most 1 s).
 */
static bool conn_deadline(const struct dfkv_conn_limits *lim,
			  struct dfkv_conn_clock *ck, enum dfkv_conn_phase phase,
			  unsigned long *delay)
{
	unsigned long first = msecs_to_jiffies(READ_ONCE(lim->first_request_ms));
	unsigned long idle = msecs_to_jiffies(READ_ONCE(lim->idle_ms));
	unsigned long frame = msecs_to_jiffies(max_t(u32, DFKV_FRAME_MS_MIN,
						     READ_ONCE(lim->frame_ms)));
	unsigned long last = READ_ONCE(ck->last_active);
	unsigned long now = jiffies, due = now + HZ;

	if (first && !READ_ONCE(ck->got_request))
		due_by(&due, ck->accepted + first);
	if (idle)
		due_by(&due, last + idle);
	if (phase == DFKV_CONN_RX)
		due_by(&due, READ_ONCE(ck->frame_start) + frame);
	else if (phase == DFKV_CONN_TX)
		due_by(&due, last + frame);
	if (time_after_eq(now, due))
		return true;
	if (phase == DFKV_CONN_WAIT)
		ck->win_open = false;
	else if (rate_too_low(lim, ck, now))
		return true;
	*delay = max(due - now, 1UL);
	return false;
}

void dfkv_conn_deadline_work(struct work_struct *work)
{
	struct dfkv_conn_core *cc = container_of(to_delayed_work(work),
						 struct dfkv_conn_core,
						 deadline_work);
	unsigned long delay;

	if (conn_deadline(cc->limits, &cc->clk, cc->phase(cc), &delay)) {
		if (dfkv_conn_kill(cc))
			atomic64_inc(&cc->limits->deadline_drops[cc->kind]);
		return;
	}
	queue_delayed_work(cc->deadline_wq, &cc->deadline_work, delay);
}

void dfkv_conn_deadline_start(struct dfkv_conn_core *cc,
			      struct workqueue_struct *wq,
			      struct dfkv_conn_limits *limits, u8 kind,
			      enum dfkv_conn_phase (*phase)(struct dfkv_conn_core *))
{
	cc->deadline_wq = wq;
	cc->limits = limits;
	cc->kind = kind;
	cc->phase = phase;
	queue_delayed_work(wq, &cc->deadline_work, HZ);
}

void dfkv_listeners_init(struct dfkv_listeners *ls,
			 const struct dfkv_transport_ops *ops)
{
	ls->ops = ops;
	mutex_init(&ls->lock);
	INIT_LIST_HEAD(&ls->listeners);
	INIT_LIST_HEAD(&ls->conns);
	hash_init(ls->peers);
	ls->nr_conns = 0;
	init_waitqueue_head(&ls->conns_gone);
}

void dfkv_listeners_shutdown(struct dfkv_listeners *ls)
{
	struct dfkv_listener *l, *tmp;
	struct dfkv_conn_core *cc;
	LIST_HEAD(listeners);

	mutex_lock(&ls->lock);
	ls->closing = true;
	list_splice_init(&ls->listeners, &listeners);
	mutex_unlock(&ls->lock);
	list_for_each_entry_safe(l, tmp, &listeners, list)
		ls->ops->listener_free(l);

	mutex_lock(&ls->lock);
	list_for_each_entry(cc, &ls->conns, list)
		dfkv_conn_kill(cc);
	mutex_unlock(&ls->lock);
	/*
	 * Release works (queued above or earlier) unlink themselves; wait for
	 * this node's only, not for the whole workqueue.
	 */
	wait_event(ls->conns_gone, !READ_ONCE(ls->nr_conns));
}
