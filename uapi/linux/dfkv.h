/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * dfkv: distributed cache for the attention KV blocks of LLM inference.
 *
 * This header is the one ABI between dfkv.ko and userspace (libdfkv,
 * dfkvctl, mdsd, the selftests).  It holds the wire constants, the
 * /dev/dfkv ioctls and the generic netlink family "dfkv"; the YNL spec
 * uapi/dfkv.yaml describes the same family.  Everything here is only
 * ever extended at its end.
 *
 * Block keys
 * ----------
 * The node never sees namespaces or object keys, only 24-byte block keys:
 * a tenant hash (u64) and a 16-byte object id, both computed by the
 * client (SPEC.md section 1).
 *
 * /dev/dfkv
 * ---------
 * Open the device, bind the file to a node of the caller's network
 * namespace with DFKV_IOC_BIND, then issue operations.  Every argument
 * struct starts with its own size in bytes; the kernel accepts older
 * (smaller) and newer (larger, with a zero tail) versions of each struct
 * and rejects a size below the first version's.  Unknown flags are
 * rejected with -EINVAL.  An ioctl returns 0 when the operation ran (its
 * protocol result is in the struct's status field, one of enum
 * dfkv_status) and a negative errno when the arguments themselves are
 * bad (-EFAULT, -EINVAL, -ENOTCONN before BIND, -ENODEV when the bound
 * node is gone).
 *
 * Netlink
 * -------
 * DFKV_CMD_VERSION_GET
 *   Returns DFKV_A_VERSION and DFKV_A_ABI_VERSION.
 * DFKV_CMD_NODE_NEW (admin)
 *   DFKV_A_NODE_NAME (required), DFKV_A_NODE_RAM_BYTES (required),
 *   DFKV_A_NODE_MAX_VALUE, DFKV_A_NODE_FLAGS, DFKV_A_NODE_NUMA, the
 *   limits DFKV_A_NODE_FIRST_REQUEST_MS, DFKV_A_NODE_IDLE_MS,
 *   DFKV_A_NODE_MAX_CONNS, DFKV_A_NODE_FRAME_MS, DFKV_A_NODE_MIN_RATE,
 *   the RAM tier's DFKV_A_NODE_TIER_POLICY,
 *   DFKV_A_NODE_TIER_ACK, DFKV_A_NODE_DIRTY_PCT,
 *   DFKV_A_NODE_FLUSH_WORKERS, and DFKV_A_NODE_AUTH,
 *   DFKV_A_NODE_TENANT_QUOTA.  A new node starts UP: DFKV_A_NODE_STATE
 *   is refused (-EINVAL).
 * DFKV_CMD_NODE_DEL (admin)
 *   DFKV_A_NODE_NAME.
 * DFKV_CMD_NODE_SET (admin)
 *   DFKV_A_NODE_NAME plus any of DFKV_A_NODE_MAX_VALUE,
 *   DFKV_A_NODE_FLAGS, DFKV_A_NODE_STATE, the limits and the RAM tier's
 *   settings (as for NODE_NEW), DFKV_A_NODE_AUTH and
 *   DFKV_A_NODE_TENANT_QUOTA.  DFKV_A_NODE_RAM_BYTES and DFKV_A_NODE_NUMA
 *   are fixed at creation: -EOPNOTSUPP.
 * DFKV_CMD_NODE_GET
 *   doit with DFKV_A_NODE_NAME, or a dump of every node of the netns.
 *   Replies carry every DFKV_A_NODE_* attribute and DFKV_A_NODE_STATS; the
 *   counters of tenants and their authentication (DFKV_STAT_TENANTS,
 *   _AUTH_OK, _AUTH_FAILURES, _FORBIDDEN, _QUOTA_REJECTIONS) only to a
 *   caller with CAP_NET_ADMIN in the initial user namespace.
 * DFKV_CMD_TENANT_SET (admin)
 *   DFKV_A_NODE_NAME, DFKV_A_TENANT_HASH (required), DFKV_A_TENANT_SECRET,
 *   DFKV_A_TENANT_SECRET_ADD, DFKV_A_TENANT_SECRET_DROP,
 *   DFKV_A_TENANT_QUOTA: register a tenant, or change what is given of
 *   a registered one.  DFKV_A_TENANT_SECRET makes it the tenant's only
 *   secret (a secret it already holds keeps its grants, the others are
 *   revoked); DFKV_A_TENANT_SECRET_ADD adds a second one for a rotation
 *   (-ENOSPC when it holds DFKV_TENANT_SECRETS_MAX); DFKV_A_TENANT_SECRET_DROP
 *   drops the secret it names (-ENOENT if not held, -EBUSY if it is the
 *   only one) and revokes at once the grants made with it.  SECRET does
 *   not combine with ADD or DROP; DROP applies before ADD.  A tenant
 *   without its own quota has the node's DFKV_A_NODE_TENANT_QUOTA.
 * DFKV_CMD_TENANT_DEL (admin)
 *   DFKV_A_NODE_NAME, DFKV_A_TENANT_HASH: unregister (its secret is wiped,
 *   its blocks stay; connections authorized for it lose that).
 * DFKV_CMD_TENANT_GET (admin)
 *   doit with DFKV_A_NODE_NAME and DFKV_A_TENANT_HASH, or a resumable dump
 *   of the node's tenants (registered, or with blocks): DFKV_A_TENANT_HASH,
 *   DFKV_A_TENANT_FLAGS, DFKV_A_TENANT_SECRETS (how many it holds),
 *   DFKV_A_TENANT_QUOTA (the one in force) and DFKV_A_TENANT_STATS.  A
 *   secret is never sent back.
 * DFKV_CMD_NODE_EVENT, DFKV_CMD_DISK_EVENT (multicast group "events",
 *   open to every user): DFKV_A_EVENT, DFKV_A_NODE_NAME and
 *   DFKV_A_NODE_STATE; a disk's DFKV_A_DISK_NAME and DFKV_A_DISK_STATE
 *   instead of the node's state.  Nothing else (no path, no setting).
 * DFKV_CMD_LISTENER_ADD, DFKV_CMD_LISTENER_DEL (admin)
 *   DFKV_A_NODE_NAME, DFKV_A_LISTEN_ADDR, DFKV_A_LISTEN_PORT (default
 *   DFKV_PORT_TCP, or DFKV_PORT_RDMA for RDMA), DFKV_A_LISTEN_TRANSPORT
 *   (default TCP; DFKV_LISTENER_RDMA: an rdma_cm listener, wire epoch 7):
 *   a listener of the node in the node's network namespace.  Node replies
 *   list them in DFKV_A_LISTENERS.
 */
#ifndef _UAPI_LINUX_DFKV_H
#define _UAPI_LINUX_DFKV_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* ------------------------------------------------------------------ wire */

#define DFKV_EPOCH_TCP		6
#define DFKV_EPOCH_RDMA		7
#define DFKV_PORT_TCP		7400
#define DFKV_PORT_RDMA		7401
#define DFKV_REQ_PREFIX_LEN	50
#define DFKV_RESP_PREFIX_LEN	18
#define DFKV_BLOCK_KEY_LEN	24
#define DFKV_OBJECT_ID_LEN	16

/*
 * RDMA (SPEC.md section 3, epoch 7).  The HELLO carried in the CM private
 * data, both ways, little-endian, DFKV_RDMA_HELLO_LEN bytes:
 *  0 u8  epoch (7)          1 u8  status (reply: enum dfkv_status)
 *  2 u16 queue depth        4 u32 inline_max
 *  8 u32 max descriptors   12 u32 reserved (0)
 * 16 u64 capabilities      24 u64 max_value_bytes (reply; 0 in the request)
 */
#define DFKV_RDMA_HELLO_LEN		32
#define DFKV_RDMA_HELLO_EPOCH		0
#define DFKV_RDMA_HELLO_STATUS		1
#define DFKV_RDMA_HELLO_DEPTH		2
#define DFKV_RDMA_HELLO_INLINE_MAX	4
#define DFKV_RDMA_HELLO_DESC_MAX	8
#define DFKV_RDMA_HELLO_CAPS		16
#define DFKV_RDMA_HELLO_MAX_VALUE	24
/*
 * A request SEND: the DFKV_REQ_PREFIX_LEN prefix, u32le descriptor count,
 * then that many descriptors (u64le addr, u32le rkey, u32le len; the
 * client's registered memory the node RDMA-READs a PUT's value from or
 * RDMA-WRITEs a GET's into), or with none the payload inline.
 */
#define DFKV_RDMA_REQ_HDR_LEN		(DFKV_REQ_PREFIX_LEN + 4)
#define DFKV_RDMA_DESC_LEN		16
#define DFKV_RDMA_DESC_ADDR		0
#define DFKV_RDMA_DESC_RKEY		8
#define DFKV_RDMA_DESC_BYTES		12
/*
 * Reply data other than GET's is always inline; a client's receive
 * buffers hold this much after the prefix (PROBE/LEASE of DFKV_KEYS_MAX).
 */
#define DFKV_RDMA_REPLY_DATA_MAX	(8 * (DFKV_KEYS_MAX + 1))

enum dfkv_op {
	DFKV_OP_PUT = 1,
	DFKV_OP_GET = 2,
	DFKV_OP_EXIST = 3,
	DFKV_OP_STATS = 4,
	DFKV_OP_REMOVE = 9,
	DFKV_OP_TOUCH = 10,
	DFKV_OP_PROBE = 11,
	DFKV_OP_LEASE = 12,
	DFKV_OP_RELEASE = 13,
	DFKV_OP_HELLO = 14,
	DFKV_OP_AUTH = 15,
	__DFKV_OP_MAX
};

enum dfkv_status {
	DFKV_STATUS_OK = 0,
	DFKV_STATUS_NOT_FOUND = 1,
	DFKV_STATUS_CACHE_FULL = 2,
	DFKV_STATUS_IO_ERROR = 3,
	DFKV_STATUS_INVALID = 4,
	DFKV_STATUS_QUOTA_EXCEEDED = 5,
	DFKV_STATUS_BUSY = 6,
	DFKV_STATUS_UNSUPPORTED = 7,
	DFKV_STATUS_TOO_LARGE = 8,
	DFKV_STATUS_LEASE_EXPIRED = 9,
	DFKV_STATUS_FORBIDDEN = 10,	/* not authorized for that tenant */
	__DFKV_STATUS_MAX
};

/* Default lease time-to-live when a LEASE asks for 0 ms. */
#define DFKV_LEASE_TTL_DEFAULT_MS	10000
/* Longest lease a client may ask for. */
#define DFKV_LEASE_TTL_MAX_MS		600000
/*
 * TOUCH walks (SPEC.md 2 and 6), in the request's offset: forward marks
 * the keys used first to last (the last ends most recently used: a
 * sliding window), reverse last to first (the first, the shared prefix,
 * ends most recently used: full attention).  Other values are INVALID.
 */
enum dfkv_touch_walk {
	DFKV_TOUCH_WALK_FORWARD = 0,
	DFKV_TOUCH_WALK_REVERSE = 1,
};

/* Most keys one TOUCH, PROBE or LEASE may carry. */
#define DFKV_KEYS_MAX			4096
/* Most operations one BATCH may carry. */
#define DFKV_BATCH_MAX			1024

/* ------------------------------------------------------------ /dev/dfkv */

#define DFKV_NODE_NAME_MAX	32	/* including the terminating NUL */

/* A block key as it travels through ioctls (host byte order). */
struct dfkv_key {
	__u64 tenant;
	__u8 id[DFKV_OBJECT_ID_LEN];
};

/* DFKV_IOC_BIND: bind this open file to a node of the caller's netns. */
struct dfkv_ioc_bind {
	__u32 size;
	__u32 flags;			/* none defined: must be 0 */
	char node[DFKV_NODE_NAME_MAX];	/* NUL-terminated */
};

#define DFKV_IOC_BIND_SIZE_VER0	40

/*
 * DFKV_IOC_PUT, _GET, _EXIST, _REMOVE, and each entry of DFKV_IOC_BATCH.
 *
 * PUT:    buf/length is the value (length > 0, <= node max_value_bytes).
 * GET:    offset/length is the range (length 0 = whole remainder); up to
 *         cap bytes are written to buf.  A range wider than cap is
 *         TOO_LARGE and writes nothing (stored_len tells what to ask for).
 * EXIST:  stored_len.
 * REMOVE: OK also when absent.
 * With DFKV_OP_F_IOV (scatter-gather), buf points at iovcnt struct iovec
 * (1..1024) instead of one buffer: a PUT's value is their concatenation
 * (length must equal their total), a GET's range is scattered across them
 * (cap must be 0: the capacity is their total).
 * stored_len, data_len and status are written back; everything else is
 * read only.
 */
struct dfkv_ioc_op {
	__u32 size;
	__u32 flags;		/* enum dfkv_op_flags */
	__u32 op;		/* enum dfkv_op; 0 = implied by the ioctl */
	__u32 status;		/* out: enum dfkv_status */
	struct dfkv_key key;
	__u64 offset;
	__u64 length;
	__u64 buf;		/* user pointer */
	__u64 cap;		/* GET: capacity of buf */
	__u64 stored_len;	/* out */
	__u64 data_len;		/* out */
	__u32 iovcnt;		/* DFKV_OP_F_IOV: entries at buf (VER1) */
	__u32 __reserved;	/* must be 0 */
};

#define DFKV_IOC_OP_SIZE_VER0	88
#define DFKV_IOC_OP_SIZE_VER1	96

enum dfkv_op_flags {
	DFKV_OP_F_IOV = 1U << 0,	/* buf is an iovec array (scatter-gather) */
	__DFKV_OP_F_ALL = DFKV_OP_F_IOV
};

/*
 * DFKV_IOC_TOUCH, _PROBE, _LEASE, _RELEASE.
 *
 * keys points at count struct dfkv_key (1 <= count <= DFKV_KEYS_MAX).
 * TOUCH:   marks the keys used, first to last (the last one most
 *          recent), or last to first with DFKV_TOUCH_REVERSE (the first
 *          one most recent): the walks of enum dfkv_touch_walk.
 * PROBE:   results[i] = stored length of keys[i], 0 when absent.
 * LEASE:   pins the leading present keys for ttl_ms (0 = default);
 *          results[i] = their stored lengths, nr_hits = how many;
 *          lease_id identifies the lease (0 when nr_hits is 0).
 *          Leases are dropped when the file is closed.
 * RELEASE: drops lease_id; keys/count are unused (0).
 */
struct dfkv_ioc_keys {
	__u32 size;
	__u32 flags;		/* enum dfkv_keys_flags; others: -EINVAL */
	__u32 count;
	__u32 status;		/* out: enum dfkv_status */
	__u64 keys;		/* user pointer */
	__u64 results;		/* user pointer to count __u64 */
	__u64 ttl_ms;
	__u64 lease_id;		/* LEASE: out, RELEASE: in */
	__u32 nr_hits;		/* out */
	__u32 __reserved;	/* must be 0 */
};

#define DFKV_IOC_KEYS_SIZE_VER0	56

enum dfkv_keys_flags {
	DFKV_TOUCH_REVERSE = 1U << 0,	/* TOUCH only: the reverse walk */
	__DFKV_KEYS_F_ALL = DFKV_TOUCH_REVERSE
};

/*
 * DFKV_IOC_BATCH: ops points at count entries of op_size bytes each
 * (op_size >= DFKV_IOC_OP_SIZE_VER0); each entry names its op (PUT, GET,
 * EXIST or REMOVE) and gets its own status.  nr_done counts the entries
 * that ran; a bad entry stops the batch with -EINVAL/-EFAULT and nr_done
 * tells which.
 */
struct dfkv_ioc_batch {
	__u32 size;
	__u32 flags;		/* none defined: must be 0 */
	__u32 count;
	__u32 op_size;
	__u64 ops;		/* user pointer */
	__u32 nr_done;		/* out */
	__u32 __reserved;	/* must be 0 */
};

#define DFKV_IOC_BATCH_SIZE_VER0	32

/*
 * DFKV_IOC_AUTH: authorize this bound file for tenant_hash, whose secret
 * registered on the node (DFKV_CMD_TENANT_SET) is secret.  -EACCES for an
 * unknown tenant or a wrong secret (counted), -ENOSPC past
 * DFKV_AUTH_TENANTS_MAX tenants.  A process with CAP_NET_ADMIN in the
 * initial user namespace acts for every tenant without it.
 */
struct dfkv_ioc_auth {
	__u32 size;
	__u32 flags;		/* none defined: must be 0 */
	__u64 tenant_hash;
	__u8 secret[32];	/* DFKV_TENANT_SECRET_LEN */
};

#define DFKV_IOC_AUTH_SIZE_VER0	48

#define DFKV_IOC_MAGIC		0xdf
#define DFKV_IOC_BIND		_IOW(DFKV_IOC_MAGIC, 1, struct dfkv_ioc_bind)
#define DFKV_IOC_PUT		_IOWR(DFKV_IOC_MAGIC, 2, struct dfkv_ioc_op)
#define DFKV_IOC_GET		_IOWR(DFKV_IOC_MAGIC, 3, struct dfkv_ioc_op)
#define DFKV_IOC_EXIST		_IOWR(DFKV_IOC_MAGIC, 4, struct dfkv_ioc_op)
#define DFKV_IOC_REMOVE		_IOWR(DFKV_IOC_MAGIC, 5, struct dfkv_ioc_op)
#define DFKV_IOC_TOUCH		_IOWR(DFKV_IOC_MAGIC, 6, struct dfkv_ioc_keys)
#define DFKV_IOC_PROBE		_IOWR(DFKV_IOC_MAGIC, 7, struct dfkv_ioc_keys)
#define DFKV_IOC_LEASE		_IOWR(DFKV_IOC_MAGIC, 8, struct dfkv_ioc_keys)
#define DFKV_IOC_RELEASE	_IOWR(DFKV_IOC_MAGIC, 9, struct dfkv_ioc_keys)
#define DFKV_IOC_BATCH		_IOWR(DFKV_IOC_MAGIC, 10, struct dfkv_ioc_batch)
#define DFKV_IOC_AUTH		_IOW(DFKV_IOC_MAGIC, 11, struct dfkv_ioc_auth)

/* -------------------------------------------------------------- netlink */

#define DFKV_GENL_NAME		"dfkv"
#define DFKV_GENL_VERSION	1
#define DFKV_MCGRP_EVENTS	"events"
#define DFKV_ABI_VERSION	1

enum dfkv_cmd {
	DFKV_CMD_UNSPEC,
	DFKV_CMD_VERSION_GET,
	DFKV_CMD_NODE_NEW,
	DFKV_CMD_NODE_DEL,
	DFKV_CMD_NODE_SET,
	DFKV_CMD_NODE_GET,
	DFKV_CMD_TENANT_GET,
	DFKV_CMD_NODE_EVENT,
	DFKV_CMD_LISTENER_ADD,
	DFKV_CMD_LISTENER_DEL,
	DFKV_CMD_DISK_ADD,
	DFKV_CMD_DISK_DEL,
	DFKV_CMD_DISK_GET,
	DFKV_CMD_DISK_EVENT,
	DFKV_CMD_TENANT_SET,
	DFKV_CMD_TENANT_DEL,
	__DFKV_CMD_MAX
};

#define DFKV_CMD_MAX (__DFKV_CMD_MAX - 1)

enum dfkv_node_state {
	DFKV_NODE_STATE_UP = 1,
	DFKV_NODE_STATE_DRAINING = 2,
	DFKV_NODE_STATE_UNHEALTHY = 3,
	__DFKV_NODE_STATE_MAX
};

/*
 * REBUILDING while a disk attach of the node (its open and index rebuild)
 * is in progress, or from a NODE_NEW that gave REBUILDING (its disks
 * follow) until a NODE_SET gives UP; UP otherwise.
 */
enum dfkv_node_phase {
	DFKV_NODE_PHASE_UP = 1,
	DFKV_NODE_PHASE_REBUILDING = 2,
	__DFKV_NODE_PHASE_MAX
};

enum dfkv_node_flags {
	DFKV_NODE_F_EVICT = 1U << 0,	/* evict by recency when full */
	/*
	 * No RAM tier: values live on the node's disks only, the RAM budget
	 * bounds the values in flight to and from them.  Set at NODE_NEW.
	 */
	DFKV_NODE_F_DISK_ONLY = 1U << 1,
	__DFKV_NODE_F_ALL = DFKV_NODE_F_EVICT | DFKV_NODE_F_DISK_ONLY
};

enum dfkv_listener_kind {
	DFKV_LISTENER_TCP = 1,
	DFKV_LISTENER_RDMA = 2,
	__DFKV_LISTENER_MAX
};

/*
 * HELLO and AUTH: the AUTH2 handshake of SPEC.md section 9, mutual and
 * bound to the node's name.
 *
 * HELLO: the request payload is the client's capabilities (u64le,
 * DFKV_CAP_AUTH2 for AUTH2) and, with DFKV_CAP_AUTH2, a fresh client nonce
 * of DFKV_AUTH_NONCE_LEN bytes (up to DFKV_HELLO_MAX bytes in all, unknown
 * bits and bytes ignored).  The reply data is the server's capabilities
 * (u64le, enum dfkv_caps), the node's max_value_bytes (u64le), a fresh
 * server nonce of DFKV_AUTH_NONCE_LEN bytes, then u8 name_len and the
 * node's name (DFKV_HELLO_REPLY_MIN + name_len bytes).  A HELLO replaces
 * both nonces of the connection; one without a client nonce makes every
 * AUTH after it FORBIDDEN.
 */
#define DFKV_HELLO_MAX		64
#define DFKV_HELLO_REQ_LEN	(8 + DFKV_AUTH_NONCE_LEN)
#define DFKV_HELLO_REPLY_MIN	(16 + DFKV_AUTH_NONCE_LEN + 1)
/* A name in HELLO and the transcript: 1..63 bytes (dfkv's own: < 32). */
#define DFKV_AUTH2_NAME_MAX	63
#define DFKV_HELLO_REPLY_MAX	(DFKV_HELLO_REPLY_MIN + DFKV_AUTH2_NAME_MAX)

enum dfkv_caps {
	DFKV_CAP_AUTH = 1U << 0,		/* the node verifies AUTH */
	DFKV_CAP_AUTH_REQUIRED = 1U << 1,	/* and requires it */
	DFKV_CAP_AUTH2 = 1U << 2,		/* AUTH2 (client and node) */
};

/*
 * AUTH (op 15): tenant_hash names the tenant, the payload is the client
 * proof HMAC-SHA256(secret, "C" || T), with the transcript
 *   T = DFKV_AUTH2_DOMAIN || u8(name_len) || name || server nonce ||
 *       client nonce || u64le(tenant_hash).
 * OK authorizes the connection for that tenant (up to
 * DFKV_AUTH_TENANTS_MAX), and its data is the server proof
 * HMAC-SHA256(secret, "S" || T) with the secret that matched; FORBIDDEN
 * (no data) otherwise, and the DFKV_AUTH_FAILURES_MAX-th failure closes
 * the connection.
 */
#define DFKV_AUTH2_DOMAIN	"DFKVAUTH2"
#define DFKV_AUTH2_DOMAIN_LEN	9
#define DFKV_AUTH_NONCE_LEN	32
#define DFKV_AUTH_PROOF_LEN	32
#define DFKV_AUTH2_TRANSCRIPT_MAX	(DFKV_AUTH2_DOMAIN_LEN + 1 + \
					 DFKV_AUTH2_NAME_MAX + \
					 2 * DFKV_AUTH_NONCE_LEN + 8)
#define DFKV_AUTH_TENANTS_MAX	16
#define DFKV_AUTH_FAILURES_MAX	3
/* Secrets a tenant may hold at once: two during a rotation. */
#define DFKV_TENANT_SECRETS_MAX	2
#define DFKV_TENANT_SECRET_LEN	32

/* DFKV_A_NODE_AUTH */
enum dfkv_auth_mode {
	DFKV_AUTH_OFF = 1,	/* every tenant claim is believed */
	DFKV_AUTH_REQUIRED = 2,	/* keys of unauthorized tenants: FORBIDDEN */
	__DFKV_AUTH_MAX
};

/* DFKV_A_TENANT_FLAGS (read only) */
enum dfkv_tenant_flags {
	DFKV_TENANT_F_REGISTERED = 1U << 0,	/* by DFKV_CMD_TENANT_SET */
	DFKV_TENANT_F_SECRET = 1U << 1,		/* has a secret */
	DFKV_TENANT_F_QUOTA = 1U << 2,		/* own quota, not the default */
};

enum dfkv_event {
	DFKV_EVENT_NODE_NEW = 1,
	DFKV_EVENT_NODE_DEL = 2,
	DFKV_EVENT_NODE_STATE = 3,
	DFKV_EVENT_DISK_ADD = 4,
	DFKV_EVENT_DISK_DEL = 5,
	DFKV_EVENT_DISK_STATE = 6,
	DFKV_EVENT_NODE_LISTENERS = 7,	/* a listener added or removed */
	DFKV_EVENT_NODE_PHASE = 8,	/* enum dfkv_node_phase changed */
	__DFKV_EVENT_MAX
};

enum dfkv_disk_state {
	DFKV_DISK_STATE_UP = 1,
	DFKV_DISK_STATE_FAILED = 2,	/* closed: its blocks are misses */
	__DFKV_DISK_STATE_MAX
};

/* RAM tier write policy of a node with disks. */
enum dfkv_tier_policy {
	DFKV_TIER_WRITEBACK = 1,	/* RAM first, flushed by workers */
	DFKV_TIER_WRITEAROUND = 2,	/* acked on disk, then out of RAM */
	__DFKV_TIER_MAX
};

/* When a write-back PUT is acknowledged. */
enum dfkv_tier_ack {
	DFKV_ACK_RAM = 1,		/* after RAM admission */
	DFKV_ACK_DISK = 2,		/* after the disk commit */
	__DFKV_ACK_MAX
};

/* DFKV_A_NODE_NUMA: interleave the RAM arena over all NUMA nodes. */
#define DFKV_NUMA_INTERLEAVE	0xffffffffU
/* Disk names and block device paths. */
#define DFKV_DISK_NAME_MAX	64
#define DFKV_DISK_PATH_MAX	256

enum dfkv_attr {
	DFKV_A_UNSPEC,
	DFKV_A_PAD,
	DFKV_A_VERSION,			/* string: module version */
	DFKV_A_ABI_VERSION,		/* u32 */
	DFKV_A_NODE_NAME,		/* string, < DFKV_NODE_NAME_MAX */
	DFKV_A_NODE_RAM_BYTES,		/* u64: RAM budget */
	DFKV_A_NODE_MAX_VALUE,		/* u64: max_value_bytes */
	DFKV_A_NODE_FLAGS,		/* u32: enum dfkv_node_flags */
	DFKV_A_NODE_STATE,		/* u32: enum dfkv_node_state */
	DFKV_A_NODE_CTIME,		/* u64: creation, ns since the epoch */
	DFKV_A_NODE_STATS,		/* nest: enum dfkv_stat */
	DFKV_A_TENANT_HASH,		/* u64 */
	DFKV_A_TENANT_STATS,		/* nest: enum dfkv_stat */
	DFKV_A_EVENT,			/* u32: enum dfkv_event */
	DFKV_A_NODE_EXTENT_BYTES,	/* u64: slab extent size (read only) */
	DFKV_A_LISTEN_ADDR,		/* string: IPv4 or IPv6 address */
	DFKV_A_LISTEN_PORT,		/* u16 */
	DFKV_A_LISTEN_TRANSPORT,	/* u32: enum dfkv_listener_kind */
	DFKV_A_LISTENERS,		/* nest of DFKV_A_LISTENER */
	DFKV_A_LISTENER,		/* nest: ADDR, PORT, TRANSPORT */
	DFKV_A_NODE_FIRST_REQUEST_MS,	/* u32: first frame; 0 = none */
	DFKV_A_NODE_IDLE_MS,		/* u32: 0 = no idle timeout */
	DFKV_A_NODE_MAX_CONNS,		/* u32: network connections */
	DFKV_A_DISK_PATH,		/* string: block device path */
	DFKV_A_DISK_NAME,		/* string, < DFKV_DISK_NAME_MAX */
	DFKV_A_DISK_FORMAT,		/* flag: (re)format the device */
	DFKV_A_DISK_EXTENT_BYTES,	/* u64: extent size */
	DFKV_A_DISK_STATE,		/* u32: enum dfkv_disk_state */
	DFKV_A_DISK_DEV_BYTES,		/* u64: device size */
	DFKV_A_DISK_EPOCH,		/* u64: running epoch */
	DFKV_A_DISK_REASON,		/* string: why it failed */
	DFKV_A_DISK_STATS,		/* nest: enum dfkv_stat */
	DFKV_A_NODE_TIER_POLICY,	/* u32: enum dfkv_tier_policy */
	DFKV_A_NODE_TIER_ACK,		/* u32: enum dfkv_tier_ack */
	DFKV_A_NODE_DIRTY_PCT,		/* u32: dirty watermark, % of RAM */
	DFKV_A_NODE_FLUSH_WORKERS,	/* u32: flush workers, 1..16 */
	DFKV_A_NODE_NUMA,		/* u32: NUMA node or INTERLEAVE */
	DFKV_A_NODE_AUTH,		/* u32: enum dfkv_auth_mode */
	DFKV_A_NODE_TENANT_QUOTA,	/* u64: default quota, 0 = unlimited */
	DFKV_A_TENANT_SECRET,		/* binary, 32 bytes: write only */
	DFKV_A_TENANT_QUOTA,		/* u64: bytes, 0 = unlimited */
	DFKV_A_TENANT_FLAGS,		/* u32: enum dfkv_tenant_flags */
	DFKV_A_TENANT_SECRET_ADD,	/* binary, 32 bytes: write only */
	DFKV_A_TENANT_SECRET_DROP,	/* binary, 32 bytes: write only */
	DFKV_A_TENANT_SECRETS,		/* u32: secrets held (read only) */
	DFKV_A_NODE_FRAME_MS,		/* u32: whole-frame deadline, >= 1000 */
	DFKV_A_NODE_MIN_RATE,		/* u32: bytes/s floor, 0 = off */
	DFKV_A_NODE_PHASE,		/* u32: enum dfkv_node_phase */
	__DFKV_A_MAX
};

#define DFKV_A_MAX (__DFKV_A_MAX - 1)

/*
 * Counters and gauges, all u64, inside DFKV_A_NODE_STATS and
 * DFKV_A_TENANT_STATS (a tenant carries the per-op and object/byte ones).
 * Per-op counters: DFKV_STAT_OPS is a nest of DFKV_STAT_OP entries, each a
 * nest of DFKV_STAT_OP_CODE (enum dfkv_op), DFKV_STAT_OP_STATUS (enum
 * dfkv_status) and DFKV_STAT_OP_COUNT, present for non-zero counts only.
 */
enum dfkv_stat {
	DFKV_STAT_UNSPEC,
	DFKV_STAT_PAD,
	DFKV_STAT_OPS,			/* nest */
	DFKV_STAT_OP,			/* nest inside DFKV_STAT_OPS */
	DFKV_STAT_OP_CODE,		/* u32 */
	DFKV_STAT_OP_STATUS,		/* u32 */
	DFKV_STAT_OP_COUNT,		/* u64 */
	DFKV_STAT_BYTES_IN,		/* payload bytes stored */
	DFKV_STAT_BYTES_OUT,		/* payload bytes served */
	DFKV_STAT_HITS,
	DFKV_STAT_MISSES,
	DFKV_STAT_OBJECTS,		/* gauge */
	DFKV_STAT_USED_BYTES,		/* gauge: payload bytes committed */
	DFKV_STAT_SLOT_BYTES,		/* gauge: bytes of slots in use */
	DFKV_STAT_CAPACITY_BYTES,	/* gauge: RAM budget */
	DFKV_STAT_EVICTIONS,
	DFKV_STAT_PINS,			/* gauge: pinned entries */
	DFKV_STAT_LEASES,		/* gauge: live leases */
	DFKV_STAT_LEASE_GRANTS,
	DFKV_STAT_LEASE_EXPIRIES,
	DFKV_STAT_TENANTS,		/* gauge */
	DFKV_STAT_EXTENTS_BOUND,	/* gauge */
	DFKV_STAT_EXTENTS_TOTAL,	/* gauge */
	DFKV_STAT_CONNS,		/* gauge: open network connections */
	DFKV_STAT_ACCEPTS,
	DFKV_STAT_CONNS_REFUSED,	/* over the connection limit */
	DFKV_STAT_DEADLINE_DROPS,	/* first-request or idle deadline */
	DFKV_STAT_PROTO_ERRORS,		/* malformed frames */
	/* RAM tier of a node with disks */
	DFKV_STAT_RAM_HITS,		/* GETs served from RAM */
	DFKV_STAT_RAM_MISSES,		/* GETs that had to read a disk */
	DFKV_STAT_RAM_PUTS,		/* PUTs admitted to RAM */
	DFKV_STAT_RAM_BYPASSES,		/* PUTs written straight to disk */
	DFKV_STAT_RAM_EVICTIONS,	/* durable blocks dropped from RAM */
	DFKV_STAT_FLUSHED,		/* blocks made durable */
	DFKV_STAT_FLUSH_RETRIES,
	DFKV_STAT_FLUSH_DROPS,		/* gave up: the block stays RAM-only */
	DFKV_STAT_PROMOTED,		/* cold reads into RAM */
	DFKV_STAT_COALESCED,		/* GETs that waited for a cold read */
	DFKV_STAT_DIRTY_BYTES,		/* gauge: RAM bytes not yet durable */
	DFKV_STAT_FLUSH_BACKLOG,	/* gauge: blocks queued for flush */
	DFKV_STAT_DISKS,		/* gauge */
	DFKV_STAT_DISKS_FAILED,		/* gauge */
	/* one disk (DFKV_A_DISK_STATS) */
	DFKV_STAT_DISK_READS,		/* bios */
	DFKV_STAT_DISK_WRITES,		/* bios */
	DFKV_STAT_DISK_READ_BYTES,
	DFKV_STAT_DISK_WRITE_BYTES,
	DFKV_STAT_DISK_IO_ERRORS,
	DFKV_STAT_DISK_RECORD_WRITES,	/* record blocks written */
	DFKV_STAT_REBUILD_RECORDS,	/* valid records at attach */
	DFKV_STAT_REBUILD_REJECTED,	/* records cleared at attach */
	DFKV_STAT_REBUILD_MS,
	/* RDMA transport */
	DFKV_STAT_RDMA_CONNS,		/* gauge */
	DFKV_STAT_RDMA_ACCEPTS,
	DFKV_STAT_RDMA_READS,		/* RDMA READs posted */
	DFKV_STAT_RDMA_WRITES,		/* RDMA WRITEs posted */
	DFKV_STAT_RDMA_READ_BYTES,
	DFKV_STAT_RDMA_WRITE_BYTES,
	DFKV_STAT_RDMA_CQ_ERRORS,	/* failed work completions */
	/* RAM arena placement: where the pages bound so far really are */
	DFKV_STAT_NUMA_PAGES,		/* nest of DFKV_STAT_NUMA */
	DFKV_STAT_NUMA,			/* nest inside DFKV_STAT_NUMA_PAGES */
	DFKV_STAT_NUMA_NODE,		/* u32: NUMA node id */
	DFKV_STAT_NUMA_NR_PAGES,	/* u64: arena pages on that node */
	/* PUTs still receiving their payload from a peer (SPEC.md 2) */
	DFKV_STAT_RECV_RESERVED,	/* gauge: RAM they hold */
	DFKV_STAT_RECV_BUSY,		/* answered BUSY: that RAM was at its cap */
	DFKV_STAT_LEASE_SCANS,		/* leases visited to end them (all ended) */
	/* tenants (SPEC.md sections 6 and 9); node and tenant */
	DFKV_STAT_AUTH_OK,		/* AUTHs (and DFKV_IOC_AUTHs) accepted */
	DFKV_STAT_AUTH_FAILURES,	/* refused */
	DFKV_STAT_FORBIDDEN,		/* requests answered FORBIDDEN */
	DFKV_STAT_QUOTA_REJECTIONS,	/* PUTs answered QUOTA_EXCEEDED */
	DFKV_STAT_CHARGED_BYTES,	/* gauge: quota usage (incl. PUTs filling) */
	DFKV_STAT_LEASE_READS,		/* cold reads into RAM a LEASE started */
	/* latency histograms (DFKV_A_NODE_STATS), see enum dfkv_hist_op */
	DFKV_STAT_LATENCY,		/* nest of DFKV_STAT_HIST */
	DFKV_STAT_HIST,			/* nest inside DFKV_STAT_LATENCY */
	DFKV_STAT_HIST_OP,		/* u32: enum dfkv_hist_op */
	DFKV_STAT_HIST_TRANSPORT,	/* u32: enum dfkv_hist_transport */
	DFKV_STAT_HIST_COUNT,		/* u64: samples */
	DFKV_STAT_HIST_SUM_NS,		/* u64: their total, ns */
	DFKV_STAT_HIST_BUCKETS,		/* binary: u64 counts, host order */
	DFKV_STAT_DISK_HITS,		/* GETs served after a cold read */
	DFKV_STAT_TCP_DEADLINE_DROPS,	/* DFKV_STAT_DEADLINE_DROPS of TCP */
	DFKV_STAT_RDMA_DEADLINE_DROPS,	/* and of RDMA */
	DFKV_STAT_RAM_OBJECTS,		/* gauge: committed blocks in RAM */
	DFKV_STAT_RAM_USED_BYTES,	/* gauge: their payload bytes */
	DFKV_STAT_TCP_ZC_REPLIES,	/* GET replies lent to the socket */
	DFKV_STAT_TCP_ZC_COPIED,	/* of those, copied by the stack */
	DFKV_STAT_TCP_ZC_LENT_BYTES,	/* gauge: entry bytes they pin now */
	DFKV_STAT_TCP_ZC_CAPPED,	/* sent by copy: a lend over its bound */
	DFKV_STAT_STAGE_BUSY,		/* BUSY: the peer held its stage share */
	DFKV_STAT_REBUILD_READ_BYTES,	/* record area the attach's scan read */
	/* GET misses (DFKV_STAT_MISSES) by cause, best-effort (store.md) */
	DFKV_STAT_MISS_NEVER_STORED,	/* no trace of the key */
	DFKV_STAT_MISS_EVICTED,		/* dropped by capacity (RAM or disk) */
	DFKV_STAT_MISS_REMOVED,		/* REMOVEd by a client */
	__DFKV_STAT_MAX
};

#define DFKV_STAT_MAX (__DFKV_STAT_MAX - 1)

/*
 * Latency histograms (DFKV_STAT_LATENCY): one DFKV_STAT_HIST per kind,
 * each with DFKV_STAT_HIST_OP, DFKV_STAT_HIST_TRANSPORT (GET and PUT
 * only), DFKV_STAT_HIST_COUNT, DFKV_STAT_HIST_SUM_NS and
 * DFKV_STAT_HIST_BUCKETS.  Bucket i < DFKV_HIST_BUCKETS - 1 counts the
 * samples below 2^(DFKV_HIST_MIN_SHIFT + i) ns not counted by a lower
 * bucket; the last one the rest.  GET and PUT run from the request's
 * header to its reply sent; a cold read and a flush are the payload's
 * disk I/O.  Userspace takes the number of buckets from the attribute's
 * length.
 */
#define DFKV_HIST_MIN_SHIFT	10
#define DFKV_HIST_BUCKETS	28

enum dfkv_hist_op {
	DFKV_HIST_GET = 1,
	DFKV_HIST_PUT = 2,
	DFKV_HIST_COLD_READ = 3,	/* a block read into RAM from a disk */
	DFKV_HIST_FLUSH = 4,		/* a block's payload written to a disk */
	__DFKV_HIST_OP_MAX
};

enum dfkv_hist_transport {
	DFKV_HIST_DEV = 0,		/* /dev/dfkv */
	DFKV_HIST_TCP = DFKV_LISTENER_TCP,
	DFKV_HIST_RDMA = DFKV_LISTENER_RDMA,
	__DFKV_HIST_TRANSPORT_MAX
};

#endif /* _UAPI_LINUX_DFKV_H */
