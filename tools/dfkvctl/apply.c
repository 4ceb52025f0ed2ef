// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl apply: bring the nodes of this network namespace to what a
 * configuration file (apply_conf.c, Documentation/config.md) says, and
 * print one line per change.  Every step compares first: a node, a
 * setting, a listener, a disk or a tenant that is as the file says is left
 * alone, so a second run prints nothing.  Nothing is ever deleted, no disk
 * is formatted unless the file allows it for a blank device, and a step
 * that fails (a disk that did not come back, a refused setting) is
 * reported on stderr while the other steps still run; the exit status is
 * then EXIT_FAIL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include "token.h"
#include "apply.h"

static const char help[] =
	"NAME\n"
	"    dfkvctl apply - create or update nodes from a configuration file\n"
	"\n"
	"SYNOPSIS\n"
	"    dfkvctl apply -f FILE [--dry-run]\n"
	"\n"
	"DESCRIPTION\n"
	"    FILE (JSON, described in Documentation/config.md; the packaged\n"
	"    service reads /etc/dfkv/dfkv.conf) lists nodes with their\n"
	"    settings, listeners, disks and tenants.  apply creates what is\n"
	"    missing and changes what differs, printing one line per change on\n"
	"    stdout; what is already as the file says is left alone, so a\n"
	"    second run prints nothing.  apply never deletes a node, listener,\n"
	"    disk or tenant that the file does not list.  Per node it applies\n"
	"    the settings, then the disks, the tenants, and the listeners last:\n"
	"    a restarted node serves only once its disks are rebuilt.\n"
	"\n"
	"    A disk is attached without formatting: a clean dfkv format comes\n"
	"    back with its blocks.  A disk that does not come back (no such\n"
	"    device, a foreign or different format, a failed disk) is reported\n"
	"    on stderr with its node, name and path.  Only a disk marked\n"
	"    \"format\": \"blank\" whose device is blank (its first and last MiB\n"
	"    all zero) is formatted.  The RAM budget and NUMA placement of an\n"
	"    existing node cannot change: a difference is reported.  A\n"
	"    registered tenant's secrets are compared with the file's\n"
	"    (secret_file, and second_secret_file during a rotation) by one\n"
	"    DFKV_IOC_AUTH each (counted in the tenant's auth counters), and\n"
	"    the tenant is left holding exactly those: a missing one is added,\n"
	"    one the file does not list is dropped, a secret held already\n"
	"    keeps its connections' grants.\n"
	"\n"
	"    The whole file is checked before anything is applied; after that\n"
	"    a step that fails does not stop the others.\n"
	"\n"
	"OPTIONS\n"
	"    -f, --file FILE   the configuration file (required)\n"
	"    -n, --dry-run     print what would change, change nothing\n"
	"\n"
	"EXIT STATUS\n"
	"    0 the nodes are as the file says; 2 usage error or a bad file\n"
	"    (nothing applied); 3 a step failed (its message is on stderr; the\n"
	"    other steps were applied).\n"
	"\n"
	"EXAMPLES\n"
	"    dfkvctl apply -f /etc/dfkv/dfkv.conf\n"
	"    dfkvctl apply -f dfkv.conf --dry-run\n";

#define CMD	"apply"

struct apply {
	struct dfkv_genl g;
	bool dry_run;
	int ret;		/* EXIT_OK or EXIT_FAIL once a step failed */
};

/* A step failed: remember it, go on with the others. */
static void failed(struct apply *a, int ret)
{
	if (ret)
		a->ret = EXIT_FAIL;
}

/* Send a mutation (unless dry run); reports a refusal and returns it. */
static int mutate(struct apply *a, struct nlmsghdr *nlh, const char *what)
{
	int err;

	if (a->dry_run)
		return EXIT_OK;
	err = dfkv_genl_talk(&a->g, nlh, NULL, NULL);
	if (err)
		return nl_error_req(&a->g, err, nlh, "%s", what);
	return EXIT_OK;
}

/* -------------------------------------------------------------- settings */

/* The node's current value of setting s; false when it does not say. */
static bool node_value(const struct node_info *ni, enum conf_setting s,
		       uint64_t *v)
{
	switch (s) {
	case CS_RAM: *v = ni->ram_bytes; return ni->has_ram;
	case CS_NUMA: *v = ni->numa; return ni->has_numa;
	case CS_MAX_VALUE: *v = ni->max_value; return ni->has_max_value;
	case CS_EVICT: *v = !!(ni->flags & DFKV_NODE_F_EVICT); return ni->has_flags;
	case CS_STATE: *v = ni->state; return ni->has_state;
	case CS_FIRST_REQUEST_MS:
		*v = ni->first_request_ms;
		return ni->has_first_request_ms;
	case CS_IDLE_MS: *v = ni->idle_ms; return ni->has_idle_ms;
	case CS_MAX_CONNS: *v = ni->max_conns; return ni->has_max_conns;
	case CS_FRAME_MS: *v = ni->frame_ms; return ni->has_frame_ms;
	case CS_MIN_RATE: *v = ni->min_rate; return ni->has_min_rate;
	case CS_POLICY: *v = ni->tier_policy; return ni->has_tier_policy;
	case CS_ACK: *v = ni->tier_ack; return ni->has_tier_ack;
	case CS_DIRTY: *v = ni->dirty_pct; return ni->has_dirty_pct;
	case CS_FLUSH_WORKERS:
		*v = ni->flush_workers;
		return ni->has_flush_workers;
	case CS_AUTH: *v = ni->auth; return ni->has_auth;
	case CS_TENANT_QUOTA:
		*v = ni->tenant_quota;
		return ni->has_tenant_quota;
	case CS_COUNT:
		break;
	}
	return false;
}

/* The node's RAM budget is the file's, rounded down to whole extents. */
static bool same_ram(const struct node_info *ni, uint64_t want)
{
	uint64_t ext = ni->extent_bytes;

	return ni->ram_bytes == want || (ext && ni->ram_bytes == want - want % ext);
}

/* Put setting s with value v into a NODE_NEW or NODE_SET. */
static void put_setting(struct nlmsghdr *nlh, enum conf_setting s, uint64_t v,
			uint32_t flags)
{
	const struct conf_setting_def *d = &conf_settings[s];

	if (s == CS_EVICT)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS,
				 v ? flags | DFKV_NODE_F_EVICT :
				     flags & ~(uint32_t)DFKV_NODE_F_EVICT);
	else if (d->kind == CK_SIZE)
		mnl_attr_put_u64(nlh, d->attr, v);
	else
		mnl_attr_put_u32(nlh, d->attr, (uint32_t)v);
}

static int node_create(struct apply *a, const struct conf_node *n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], what[96], v[32];
	struct nlmsghdr *nlh;
	int s, ret;

	if (!n->has[CS_RAM]) {
		err_msg("node %s: not there, and the file gives no \"ram\" to create it with",
			n->name);
		return EXIT_FAIL;
	}
	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_NODE_NEW, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_FLAGS, DFKV_NODE_F_EVICT);
	for (s = 0; s < CS_COUNT; s++)
		if (n->has[s] && s != CS_STATE)	/* state: NODE_SET only */
			put_setting(nlh, s, n->val[s], DFKV_NODE_F_EVICT);
	/* Its disks follow: no directory agent registers it before them. */
	if (n->n_disks)
		mnl_attr_put_u32(nlh, DFKV_A_NODE_PHASE,
				 DFKV_NODE_PHASE_REBUILDING);
	snprintf(what, sizeof(what), "node %s: create", n->name);
	ret = mutate(a, nlh, what);
	if (!ret)
		printf("node %s: created (ram %s)\n", n->name,
		       conf_value_str(CS_RAM, n->val[CS_RAM], v, sizeof(v)));
	return ret;
}

/*
 * The node's disks are attached (or reported): end the rebuilding phase
 * its creation asked for, by this run or by one that stopped before
 * this point; a node rebuilding only for a disk add in progress stays so.
 */
static void node_release(struct apply *a, const struct conf_node *n,
			 bool created)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], what[96];
	struct nlmsghdr *nlh;
	int ret;

	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_NODE_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	mnl_attr_put_u32(nlh, DFKV_A_NODE_PHASE, DFKV_NODE_PHASE_UP);
	snprintf(what, sizeof(what), "node %s: phase up", n->name);
	ret = mutate(a, nlh, what);
	failed(a, ret);
	if (!ret && !created)
		printf("node %s: phase rebuilding -> up\n", n->name);
}

/*
 * Change the settings of node ni that differ from the file (one
 * NODE_SET); a create-only one that differs is reported.
 */
static void node_update(struct apply *a, const struct conf_node *n,
			const struct node_info *ni)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], what[96], was[32], now[32];
	struct nlmsghdr *nlh;
	bool any = false;
	uint64_t cur;
	int s;

	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_NODE_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	for (s = 0; s < CS_COUNT; s++) {
		if (!n->has[s])
			continue;
		cur = 0;
		if (node_value(ni, s, &cur) &&
		    (cur == n->val[s] || (s == CS_RAM && same_ram(ni, n->val[s]))))
			continue;
		conf_value_str(s, cur, was, sizeof(was));
		conf_value_str(s, n->val[s], now, sizeof(now));
		if (conf_settings[s].create_only) {
			err_msg("node %s: %s is %s, the file says %s: it is fixed when a node is created (delete the node and apply again to change it)",
				n->name, conf_settings[s].key, was, now);
			a->ret = EXIT_FAIL;
			continue;
		}
		put_setting(nlh, s, n->val[s], ni->flags);
		printf("node %s: %s %s -> %s\n", n->name, conf_settings[s].key,
		       was, now);
		any = true;
	}
	snprintf(what, sizeof(what), "node %s: set", n->name);
	if (any)
		failed(a, mutate(a, nlh, what));
}

/* ------------------------------------------------------------ listeners */

/* Same address: compared as addresses ("::" and "0:0::0" are one). */
static bool same_addr(const char *x, const char *y)
{
	unsigned char bx[16], by[16];
	const char *px = strchr(x, '%'), *py = strchr(y, '%');
	char sx[LISTEN_ADDR_MAX], sy[LISTEN_ADDR_MAX];
	int fam;

	if (!px != !py || (px && strcmp(px, py)))
		return false;
	snprintf(sx, sizeof(sx), "%.*s", (int)(px ? px - x : (long)strlen(x)), x);
	snprintf(sy, sizeof(sy), "%.*s", (int)(py ? py - y : (long)strlen(y)), y);
	fam = strchr(sx, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(fam, sx, bx) != 1 || inet_pton(fam, sy, by) != 1)
		return !strcmp(sx, sy);
	return !memcmp(bx, by, fam == AF_INET6 ? 16 : 4);
}

static void listeners_apply(struct apply *a, const struct conf_node *n,
			    const struct node_info *ni)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], what[160], ls[96];
	size_t i, j;

	for (i = 0; i < n->n_listeners; i++) {
		const struct conf_listener *l = &n->listeners[i];
		struct listener_info li = { .port = l->port,
					    .transport = l->transport };
		struct nlmsghdr *nlh;

		for (j = 0; j < ni->n_listeners; j++)
			if (ni->listeners[j].port == l->port &&
			    ni->listeners[j].transport == l->transport &&
			    same_addr(ni->listeners[j].addr, l->addr))
				break;
		if (j < ni->n_listeners)
			continue;
		snprintf(li.addr, sizeof(li.addr), "%s", l->addr);
		listener_str(&li, ls, sizeof(ls));
		nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_LISTENER_ADD, 0);
		mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
		mnl_attr_put_strz(nlh, DFKV_A_LISTEN_ADDR, l->addr);
		mnl_attr_put_u16(nlh, DFKV_A_LISTEN_PORT, l->port);
		mnl_attr_put_u32(nlh, DFKV_A_LISTEN_TRANSPORT, l->transport);
		snprintf(what, sizeof(what), "node %s: listener %s %s", n->name,
			 transport_name(l->transport), ls);
		if (!mutate(a, nlh, what))
			printf("node %s: listener %s %s added\n", n->name,
			       transport_name(l->transport), ls);
		else
			a->ret = EXIT_FAIL;
	}
}

/* ---------------------------------------------------------------- disks */

/* The first and the last MiB of path are all zero (no label of anything). */
static bool dev_blank(const char *path)
{
	static unsigned char blk[1 << 20];
	uint64_t size = 0;
	off_t offs[2];
	bool blank = true;
	int fd, i;
	ssize_t r;
	size_t k;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (ioctl(fd, BLKGETSIZE64, &size) || size < sizeof(blk)) {
		close(fd);
		return false;
	}
	offs[0] = 0;
	offs[1] = (off_t)(size - sizeof(blk));
	for (i = 0; i < 2 && blank; i++) {
		r = pread(fd, blk, sizeof(blk), offs[i]);
		if (r != (ssize_t)sizeof(blk)) {
			blank = false;
			break;
		}
		for (k = 0; k < sizeof(blk) && blank; k++)
			blank = !blk[k];
	}
	close(fd);
	return blank;
}

/* DISK_ADD of d to node, formatting it when format; 0 or -errno. */
static int disk_add(struct apply *a, const char *node,
		    const struct conf_disk *d, bool format)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	if (a->dry_run)
		return 0;
	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_DISK_ADD, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_strz(nlh, DFKV_A_DISK_PATH, d->path);
	mnl_attr_put_strz(nlh, DFKV_A_DISK_NAME, d->name);
	if (format)
		mnl_attr_put(nlh, DFKV_A_DISK_FORMAT, 0, NULL);
	if (d->has_extent)
		mnl_attr_put_u64(nlh, DFKV_A_DISK_EXTENT_BYTES, d->extent);
	return dfkv_genl_talk(&a->g, nlh, NULL, NULL);
}

/* The disks of node (a DISK_GET dump); NULL v on failure (reported). */
static int disks_fetch(struct apply *a, const char *node, struct info_list *l)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	int err;

	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_DISK_GET, NLM_F_DUMP);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	err = info_list_dump(&a->g, nlh, l);
	if (l->oom) {
		err_msg("out of memory");
		return EXIT_FAIL;
	}
	if (err)
		return nl_error(&a->g, err, "node %s: disks", node);
	return EXIT_OK;
}

static const struct node_info *disk_find(const struct info_list *l,
					 const char *name)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].disk.name, name))
			return &l->v[i];
	return NULL;
}

/* What came back of a disk just attached: "151 blocks back". */
static void disk_added(struct apply *a, const char *node,
		       const struct conf_disk *d, const char *how)
{
	struct info_list l = { 0 };
	const struct node_info *di = NULL;

	if (!a->dry_run && !disks_fetch(a, node, &l))
		di = disk_find(&l, d->name);
	if (di)
		printf("node %s: disk %s (%s) %s: %llu blocks back\n", node,
		       d->name, d->path, how,
		       (unsigned long long)di->stat[DFKV_STAT_OBJECTS]);
	else
		printf("node %s: disk %s (%s) %s\n", node, d->name, d->path,
		       how);
	free(l.v);
}

/* Attach one disk that is not attached; reports one that does not come. */
static int disk_attach(struct apply *a, const char *node,
		       const struct conf_disk *d)
{
	char what[DFKV_DISK_PATH_MAX + 160];
	struct stat st;
	bool blank;
	int err;

	snprintf(what, sizeof(what), "node %s: disk %s (%s) did not come back",
		 node, d->name, d->path);
	if (stat(d->path, &st)) {
		err_msg("%s: %s: %s", what, d->path, strerror(errno));
		return EXIT_FAIL;
	}
	if (!S_ISBLK(st.st_mode)) {
		err_msg("%s: %s is not a block device", what, d->path);
		return EXIT_FAIL;
	}
	err = disk_add(a, node, d, false);
	if (!err) {
		disk_added(a, node, d, a->dry_run ? "would be attached" :
			   "attached");
		return EXIT_OK;
	}
	blank = d->format == FORMAT_BLANK && dev_blank(d->path);
	if (blank) {
		err = disk_add(a, node, d, true);
		if (!err) {
			printf("node %s: disk %s (%s) formatted (the device was blank)\n",
			       node, d->name, d->path);
			return EXIT_OK;
		}
	}
	return nl_error(&a->g, err, "%s%s", what,
			blank ? " (blank, formatting failed)" :
			d->format == FORMAT_BLANK ?
			" (not blank: not formatted)" : "");
}

/* exists: the node is there (false only in a dry run that creates it). */
static void disks_apply(struct apply *a, const struct conf_node *n,
			bool exists)
{
	struct info_list l = { 0 };
	size_t i;

	if (!n->n_disks)
		return;
	if (exists && disks_fetch(a, n->name, &l)) {
		a->ret = EXIT_FAIL;
		return;
	}
	for (i = 0; i < n->n_disks; i++) {
		const struct conf_disk *d = &n->disks[i];
		const struct node_info *di = disk_find(&l, d->name);

		if (!di) {
			failed(a, disk_attach(a, n->name, d));
		} else if (di->disk.state == DFKV_DISK_STATE_FAILED) {
			err_msg("node %s: disk %s (%s) failed: %s (delete it and apply again: it is cold-reset)",
				n->name, d->name, di->disk.path,
				di->disk.reason[0] ? di->disk.reason : "no reason given");
			a->ret = EXIT_FAIL;
		}
	}
	free(l.v);
}

/* -------------------------------------------------------------- tenants */

/*
 * The node holds secret for tenant hash: one DFKV_IOC_AUTH on a file
 * bound to node (-EACCES: another secret).  1 same, 0 other, -1 error.
 */
static int secret_same(const char *node, uint64_t hash,
		       const uint8_t secret[DFKV_TENANT_SECRET_LEN])
{
	struct dfkv_ioc_auth au = { .size = sizeof(au), .tenant_hash = hash };
	int fd = dev_bind(node), rc, e;

	if (fd < 0)
		return -1;
	memcpy(au.secret, secret, sizeof(au.secret));
	rc = ioctl(fd, DFKV_IOC_AUTH, &au);
	e = errno;
	explicit_bzero(au.secret, sizeof(au.secret));
	close(fd);
	if (!rc)
		return 1;
	if (e == EACCES)
		return 0;
	err_msg("node %s: tenant %016llx: checking the secret: %s", node,
		(unsigned long long)hash, strerror(e));
	return -1;
}

/*
 * What apply does to a tenant's secrets: make the secret of file only the
 * tenant's only one (DFKV_A_TENANT_SECRET: it keeps its grants, every
 * other secret goes with its grants), then add those marked add
 * (DFKV_A_TENANT_SECRET_ADD).  So the node ends up holding exactly the
 * file's secrets, and a secret it holds already keeps its connections.
 */
struct secret_plan {
	int only;			/* a file index, or -1: none */
	bool replaced;			/* the node held none of the file's */
	bool add[DFKV_TENANT_SECRETS_MAX];
};

static int secrets_plan(const char *node, const struct conf_tenant *t,
			const struct node_info *ti, bool reg, unsigned int n,
			uint8_t secret[][DFKV_TENANT_SECRET_LEN],
			struct secret_plan *p)
{
	bool same[DFKV_TENANT_SECRETS_MAX] = { false };
	unsigned int i, held, matched = 0;
	int first = -1;

	memset(p, 0, sizeof(*p));
	p->only = -1;
	if (!n)
		return 0;
	if (!reg || !(ti->tenant_flags & DFKV_TENANT_F_SECRET)) {
		p->only = 0;
		for (i = 1; i < n; i++)
			p->add[i] = true;
		return 0;
	}
	for (i = 0; i < n; i++) {
		int rc = secret_same(node, t->hash, secret[i]);

		if (rc < 0)
			return -1;
		same[i] = rc;
		if (rc && first < 0)
			first = (int)i;
		matched += rc;
	}
	held = ti->has_tenant_secrets ? ti->tenant_secrets : 1;
	if (!matched) {
		p->only = 0;
		p->replaced = true;
	} else if (held > matched) {
		p->only = first;	/* the secret the file does not list goes */
	}
	for (i = 0; i < n; i++)
		p->add[i] = !same[i] && (int)i != p->only;
	return 0;
}

/* A TENANT_SET of node's tenant t with secret as attribute type (or none). */
static int tenant_set(struct apply *a, const char *node,
		      const struct conf_tenant *t, int type,
		      const uint8_t *secret, bool quota, const char *what)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	int ret;

	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_TENANT_SET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_u64(nlh, DFKV_A_TENANT_HASH, t->hash);
	if (secret)
		mnl_attr_put(nlh, type, DFKV_TENANT_SECRET_LEN, secret);
	if (quota)
		mnl_attr_put_u64(nlh, DFKV_A_TENANT_QUOTA, t->quota);
	ret = mutate(a, nlh, what);
	explicit_bzero(buf, sizeof(buf));
	return ret;
}

static int tenant_apply(struct apply *a, const char *node,
			const struct conf_tenant *t)
{
	uint8_t secret[DFKV_TENANT_SECRETS_MAX][DFKV_TENANT_SECRET_LEN];
	char buf[MNL_SOCKET_BUFFER_SIZE], why[512], what[192], q[32];
	struct node_info ti = { 0 };
	struct secret_plan p;
	bool reg, set_quota = false;
	struct nlmsghdr *nlh;
	unsigned int i, n = 0;
	int err, ret = EXIT_OK;

	snprintf(what, sizeof(what), "node %s: tenant %s", node, t->label);
	for (; n < DFKV_TENANT_SECRETS_MAX && t->secret_file[n][0]; n++) {
		if (dfkv_secret_read(t->secret_file[n], secret[n], why,
				     sizeof(why))) {
			err_msg("%s: %s", what, why);
			ret = EXIT_FAIL;
			goto out;
		}
	}
	if (n == 2 && !memcmp(secret[0], secret[1], sizeof(secret[0]))) {
		err_msg("%s: %s and %s hold the same secret", what,
			t->secret_file[0], t->secret_file[1]);
		ret = EXIT_FAIL;
		goto out;
	}
	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_TENANT_GET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, node);
	mnl_attr_put_u64(nlh, DFKV_A_TENANT_HASH, t->hash);
	err = dfkv_genl_talk(&a->g, nlh, info_one_cb, &ti);
	if (err && err != -ENOENT) {
		ret = nl_error(&a->g, err, "%s", what);
		goto out;
	}
	reg = !err && (ti.tenant_flags & DFKV_TENANT_F_REGISTERED);
	if (secrets_plan(node, t, &ti, reg, n, secret, &p)) {
		ret = EXIT_FAIL;
		goto out;
	}
	if (t->has_quota)
		set_quota = !reg || !(ti.tenant_flags & DFKV_TENANT_F_QUOTA) ||
			    ti.quota != t->quota;
	if (!reg || p.only >= 0 || set_quota)
		ret = tenant_set(a, node, t, DFKV_A_TENANT_SECRET,
				 p.only >= 0 ? secret[p.only] : NULL,
				 set_quota, what);
	for (i = 0; !ret && i < n; i++)
		if (p.add[i])
			ret = tenant_set(a, node, t, DFKV_A_TENANT_SECRET_ADD,
					 secret[i], false, what);
	if (ret)
		goto out;
	fmt_quota(t->quota, false, q, sizeof(q));
	if (!reg)
		printf("%s: registered (%s%s%s%s%s%s%s)\n", what,
		       n ? "secret from " : "no secret",
		       n ? t->secret_file[0] : "",
		       n > 1 ? ", second secret from " : "",
		       n > 1 ? t->secret_file[1] : "",
		       set_quota ? ", quota " : "", set_quota ? q : "",
		       a->dry_run ? "; dry run" : "");
	if (reg && p.only >= 0)
		printf(p.replaced ? "%s: secret replaced from %s\n" :
		       "%s: secret from %s kept, the one the file does not list dropped\n",
		       what, t->secret_file[p.only]);
	for (i = 0; reg && i < n; i++)
		if (p.add[i])
			printf("%s: secret added from %s\n", what,
			       t->secret_file[i]);
	if (reg && set_quota) {
		char was[32];

		printf("%s: quota %s -> %s\n", what,
		       ti.tenant_flags & DFKV_TENANT_F_QUOTA ?
		       fmt_quota(ti.quota, false, was, sizeof(was)) :
		       "the node's default", q);
	}
out:
	explicit_bzero(secret, sizeof(secret));
	return ret;
}

/* ----------------------------------------------------------------- node */

static void node_apply(struct apply *a, const struct conf_node *n)
{
	struct node_info ni;
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	bool created = false;
	size_t i;
	int err;

	nlh = dfkv_genl_msg(&a->g, buf, DFKV_CMD_NODE_GET, 0);
	mnl_attr_put_strz(nlh, DFKV_A_NODE_NAME, n->name);
	memset(&ni, 0, sizeof(ni));
	err = dfkv_genl_talk(&a->g, nlh, info_one_cb, &ni);
	if (err == -ENOENT) {
		if (node_create(a, n)) {
			a->ret = EXIT_FAIL;
			return;
		}
		created = true;
		if (a->dry_run) {
			/* Nothing to compare with: the rest would be added. */
			memset(&ni, 0, sizeof(ni));
		} else if (node_fetch(&a->g, n->name, &ni)) {
			a->ret = EXIT_FAIL;
			return;
		}
	} else if (err) {
		failed(a, nl_error(&a->g, err, "node %s", n->name));
		return;
	}
	if (!created || !a->dry_run)
		node_update(a, n, &ni);
	/*
	 * Listeners last: a restarted node serves, and its directory agent
	 * registers it (Documentation/mdsd.md), only once its disks are
	 * rebuilt and its tenants are back, so it rejoins warm.
	 */
	disks_apply(a, n, !(created && a->dry_run));
	for (i = 0; i < n->n_tenants; i++)
		failed(a, tenant_apply(a, n->name, &n->tenants[i]));
	if (n->n_disks &&
	    (created || (ni.has_phase && ni.phase == DFKV_NODE_PHASE_REBUILDING)))
		node_release(a, n, created);
	listeners_apply(a, n, &ni);
}

int apply_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct apply a = { .ret = EXIT_OK };
	const char *file = NULL;
	struct conf c;
	size_t i;
	int ch, ret;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":f:nh", opts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			file = optarg;
			break;
		case 'n':
			a.dry_run = true;
			break;
		case 'h':
			return print_help(help);
		default:
			return opt_error(CMD, ch, argv);
		}
	}
	if (optind < argc)
		return usage_error(CMD, "unexpected argument '%s'", argv[optind]);
	if (!file)
		return usage_error(CMD, "missing -f FILE");
	ret = conf_load(file, &c);
	if (ret)
		return ret;
	ret = ctl_open(&a.g);
	if (ret) {
		conf_free(&c);
		return ret;
	}
	for (i = 0; i < c.n_nodes; i++)
		node_apply(&a, &c.nodes[i]);
	fflush(stdout);
	dfkv_genl_close(&a.g);
	conf_free(&c);
	return a.ret;
}
