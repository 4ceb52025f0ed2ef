/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * libdfkv: the public C ABI of the dfkv client library.
 *
 * This header owns everything an application (an inference engine's
 * connector, dfkvctl, the Python binding) calls: identity (namespace
 * descriptor, layout fingerprint, object-key rendering, object id and
 * tenant hash; SPEC.md section 1), Ketama routing (SPEC 1.4), and the
 * client (dfkv_open_v2 and the operations of SPEC sections 2, 3 and 4
 * over TCP, RDMA or the local /dev/dfkv fast path, synchronous or as
 * asynchronous batches completed through an eventfd).  The wire constants and status
 * codes come from the one ABI header, <linux/dfkv.h>.
 *
 * Conventions
 * -----------
 * - Every function returning int returns 0 (DFKV_STATUS_OK) on success,
 *   a positive enum dfkv_status when a node answered with that protocol
 *   status, or a negative enum dfkv_error for the library's own errors.
 *   dfkv_strerror() names every one of them.  DFKV_STATUS_FORBIDDEN (the
 *   connection is not authorized for the client's tenant, SPEC.md 9) and
 *   DFKV_STATUS_QUOTA_EXCEEDED are failures of their own, never a miss.
 * - Namespaces and object keys are binary spans (pointer, length);
 *   embedded NUL bytes are identity bytes.  A null pointer or a zero
 *   length fails closed with DFKV_E_INVAL.
 * - Output parameters are initialised to a failure value (0, or the
 *   status DFKV_E_NOT_RUN in batches) before any work, so a caller never
 *   reads stale data after an error.
 * - Structs passed in by the caller that may grow start with a u32 size
 *   (set it to sizeof the struct you compiled against); the library
 *   accepts older sizes and newer sizes whose unknown tail is zero.
 * - All functions are thread-safe; one dfkv_client may be shared by any
 *   number of threads.
 */
#ifndef DFKV_LIBDFKV_H
#define DFKV_LIBDFKV_H

#include <stddef.h>
#include <stdint.h>
#include <linux/dfkv.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DFKV_API __attribute__((visibility("default")))

/* --------------------------------------------------------------- errors */

/* The library's own errors (negative; node statuses are positive). */
enum dfkv_error {
	DFKV_E_INVAL = -1,	/* bad argument: null/empty span, bad field */
	DFKV_E_NOMEM = -2,	/* allocation failed */
	DFKV_E_RANGE = -3,	/* output buffer too small for the result */
	DFKV_E_UNAVAILABLE = -4,	/* node unreachable or cooling down; a
					 * write was dropped (counted) */
	DFKV_E_TIMEOUT = -5,	/* the operation's deadline passed */
	DFKV_E_PROTO = -6,	/* the node sent a malformed reply */
	DFKV_E_NOT_RUN = -7,	/* initial value of every batch slot */
	DFKV_E_MEMBERS = -8,	/* bad members list / empty ring / mdsd's
				 * list over the group weight cap (SPEC 7) */
	DFKV_E_NODEV = -9,	/* local transport: no /dev/dfkv or no such
				 * node in this network namespace; RDMA: no
				 * active (whitelisted) RDMA device */
	DFKV_E_SYS = -10,	/* unexpected system error (see errno) */
	DFKV_E_AUTH = -11,	/* mdsd refused mds_token_file's token (HTTP
				 * 401; errno EKEYREJECTED), or that file or
				 * tenant_secret_file is unusable (errno:
				 * ENOENT, EACCES; EPERM group/other may
				 * access it; EFBIG over 4096 bytes; EINVAL
				 * empty or not printable ASCII, or a secret
				 * file not exactly 64 hex digits) */
	DFKV_E_CANCELLED = -12,	/* an asynchronous batch's operation was
				 * cancelled before it was sent */
	__DFKV_E_MIN = -13
};

/* Library version string, e.g. "0.1.0". */
DFKV_API const char *dfkv_version(void);

/*
 * Name of a status: 0 and positive values are enum dfkv_status, negative
 * values enum dfkv_error.  Never NULL; unknown codes give "unknown status".
 */
DFKV_API const char *dfkv_strerror(int status);

/* ------------------------------------------------------------- identity */

/* A read-only byte span. */
struct dfkv_span {
	const void *ptr;
	uint64_t len;
};

/* Magic that starts a canonical namespace descriptor. */
#define DFKV_NS_MAGIC		"DFKVNS\x00\x02"
#define DFKV_NS_MAGIC_LEN	8

/*
 * The fields of a canonical namespace descriptor (SPEC 1.1).  Every
 * string is a span and must be non-empty; tenant must be valid UTF-8.
 * block_tokens, num_layers and the five topology sizes must be >= 1.
 */
struct dfkv_ns_desc {
	uint32_t size;			/* sizeof(struct dfkv_ns_desc) */
	uint32_t __reserved;		/* must be 0 */
	struct dfkv_span tenant;
	struct dfkv_span model_id;
	struct dfkv_span model_revision;
	struct dfkv_span layout_id;	/* e.g. "vllm-multiwr-v4" */
	struct dfkv_span dtype;		/* e.g. "bfloat16" */
	uint64_t layout_fingerprint;	/* dfkv_layout_fingerprint() */
	uint32_t block_tokens;
	uint32_t num_layers;
	struct dfkv_span group;		/* e.g. "full", "swa" */
	uint32_t tp, pp, dp, pcp, dcp;	/* replicated topology sizes */
	uint32_t __reserved2;		/* must be 0 */
};
#define DFKV_NS_DESC_SIZE_VER0	144

/*
 * Serialise d into out (capacity cap).  *out_len receives the encoded
 * length, also when the result is DFKV_E_RANGE (cap too small), so a
 * caller may ask with cap 0 first.
 */
DFKV_API int dfkv_ns_build(const struct dfkv_ns_desc *d, void *out,
			   uint64_t cap, uint64_t *out_len);

/*
 * The tenant identity of a namespace (SPEC 1.3): *off and *len locate it
 * inside ns.  It is the first field of a canonical descriptor whose
 * length is non-zero and lies within ns, otherwise the whole namespace.
 */
DFKV_API int dfkv_ns_tenant_identity(const void *ns, uint64_t ns_len,
				     uint64_t *off, uint64_t *len);

/*
 * layout_fingerprint (SPEC 1.1): first 8 bytes, big-endian, of
 * SHA-256("DFKVLAYOUT1" || field(f1) || ...).  n >= 1; every field
 * non-empty.
 */
DFKV_API int dfkv_layout_fingerprint(const struct dfkv_span *fields, size_t n,
				     uint64_t *out);

/* A topology coordinate of an object key: size >= 1, rank in [0, size)
 * or DFKV_RANK_REPLICATED. */
#define DFKV_RANK_REPLICATED	(-1)
struct dfkv_rank {
	uint32_t size;
	int32_t rank;
};

/*
 * The fields of a canonical object key (SPEC 1.2):
 *   dfkv/pool/v2|pool=P|hash=H|dp=S:R|tp=S:R|pcp=S:R|dcp=S:R|pp=S:R|
 *   group=N|component=C[|sg=W:G]
 * pool and component match [A-Za-z0-9._-]+ (at most 128 bytes); hash is
 * the raw content hash (1..64 bytes), rendered in lower-case hex.
 * sg_width 0 means "not scatter-grouped"; otherwise sg_group < sg_width.
 */
#define DFKV_KEY_NAME_MAX	128
#define DFKV_KEY_HASH_MAX	64
struct dfkv_key_desc {
	uint32_t size;			/* sizeof(struct dfkv_key_desc) */
	uint32_t group;
	struct dfkv_span pool;
	struct dfkv_span hash;
	struct dfkv_rank dp, tp, pcp, dcp, pp;
	struct dfkv_span component;
	uint32_t sg_width;
	uint32_t sg_group;
};
#define DFKV_KEY_DESC_SIZE_VER0	104
/* Longest canonical rendering. */
#define DFKV_KEY_RENDER_MAX	640

/* Render d into out; *out_len as for dfkv_ns_build. */
DFKV_API int dfkv_key_render(const struct dfkv_key_desc *d, void *out,
			     uint64_t cap, uint64_t *out_len);

/*
 * Parse a canonical rendering back into fields.  Anything that is not
 * exactly what dfkv_key_render() would produce is DFKV_E_INVAL.  The
 * pool and component spans of *d point into key; d->hash points into
 * hash_buf (DFKV_KEY_HASH_MAX bytes).
 */
DFKV_API int dfkv_key_parse(const void *key, uint64_t key_len,
			    struct dfkv_key_desc *d,
			    uint8_t hash_buf[DFKV_KEY_HASH_MAX]);

/* object_id = SHA-256(u64le(|ns|) ns u64le(|key|) key)[0..16] (SPEC 1.3). */
DFKV_API int dfkv_object_id(const void *ns, uint64_t ns_len,
			    const void *key, uint64_t key_len,
			    uint8_t id[DFKV_OBJECT_ID_LEN]);

/* tenant_hash = be64(SHA-256("DFKVTENANT1" u64le(|I|) I)[0..8]). */
DFKV_API int dfkv_tenant_hash(const void *ns, uint64_t ns_len, uint64_t *out);

/* Both at once: the 24-byte block key the node sees. */
DFKV_API int dfkv_block_key(const void *ns, uint64_t ns_len,
			    const void *key, uint64_t key_len,
			    struct dfkv_key *out);

/* -------------------------------------------------------- authentication */

/*
 * The AUTH2 proofs of SPEC.md 9, over the transcript
 *   T = "DFKVAUTH2" || u8(name_len) || name || server_nonce ||
 *       client_nonce || u64le(tenant_hash)
 * where name is the node's (1..DFKV_AUTH2_NAME_MAX bytes), server_nonce
 * comes in its HELLO reply and client_nonce went in the HELLO:
 *   client_proof = HMAC-SHA256(secret, "C" || T)  (the AUTH payload)
 *   server_proof = HMAC-SHA256(secret, "S" || T)  (the AUTH reply's data)
 * 0, or DFKV_E_INVAL (a null pointer, a bad name length) / DFKV_E_SYS
 * (libcrypto failed).
 */
DFKV_API int dfkv_auth2_proofs(const uint8_t secret[DFKV_TENANT_SECRET_LEN],
			       const char *name, size_t name_len,
			       const uint8_t server_nonce[DFKV_AUTH_NONCE_LEN],
			       const uint8_t client_nonce[DFKV_AUTH_NONCE_LEN],
			       uint64_t tenant_hash,
			       uint8_t client_proof[DFKV_AUTH_PROOF_LEN],
			       uint8_t server_proof[DFKV_AUTH_PROOF_LEN]);

/* -------------------------------------------------------------- routing */

/* Ketama ring (SPEC 1.4).  Names are NUL-terminated, unique, non-empty,
 * shorter than DFKV_NODE_NAME_MAX; 1 <= weight <= DFKV_WEIGHT_MAX. */
#define DFKV_WEIGHT_MAX		1000
struct dfkv_ring_member {
	const char *name;
	uint32_t weight;
};

/* Probe offsets into the object id: nodes use bytes 0..4, disks 4..8. */
#define DFKV_PROBE_NODE		0
#define DFKV_PROBE_DISK		4

struct dfkv_ring;

/* Build a ring over n >= 1 members (copied). */
DFKV_API int dfkv_ring_build(const struct dfkv_ring_member *members, size_t n,
			     struct dfkv_ring **out);

/*
 * Route: the index (into the members array given to dfkv_ring_build) of
 * the member owning the first ring point >= u32le(id[probe_off..+4]),
 * wrapping.  probe_off <= DFKV_OBJECT_ID_LEN - 4.
 */
DFKV_API int dfkv_ring_route(const struct dfkv_ring *r,
			     const uint8_t id[DFKV_OBJECT_ID_LEN],
			     unsigned int probe_off, size_t *member);

/* Name of member i, or NULL when out of range. */
DFKV_API const char *dfkv_ring_member_name(const struct dfkv_ring *r, size_t i);
DFKV_API size_t dfkv_ring_size(const struct dfkv_ring *r);
DFKV_API void dfkv_ring_free(struct dfkv_ring *r);

/* --------------------------------------------------------------- client */

enum dfkv_transport {
	DFKV_TRANSPORT_AUTO = 0,	/* /dev/dfkv for members bound in this
					 * kernel's netns, TCP for the rest */
	DFKV_TRANSPORT_TCP = 1,		/* TCP only */
	DFKV_TRANSPORT_LOCAL = 2,	/* /dev/dfkv only: every member must
					 * be a node of this netns */
	DFKV_TRANSPORT_RDMA = 3,	/* RDMA only (SPEC 3, epoch 7): the
					 * members' hosts at rdma_port; open
					 * fails with DFKV_E_NODEV when no
					 * (whitelisted) device is active */
	__DFKV_TRANSPORT_MAX
};

/*
 * RDMA memory exposure (rdma_expose).  REQUEST (the default, 0): no key
 * covering a pool is ever sent; every descriptor's key covers exactly that request's
 * range with only the access it needs (remote read for a PUT's source,
 * remote write for a GET's destination) and is invalid before the request
 * is reported done (reply, error or connection teardown).  The keys are
 * type-2 memory windows bound on the connection's QP where the device has
 * them and checks their bounds (not rdma_rxe, which checks a window's
 * accesses against its MR's range only), registrations of the range
 * otherwise; REQUEST_MR always uses registrations; REQUEST_MW windows
 * wherever the device has them, rdma_rxe included (there a window limits
 * the access and the lifetime, not the range).  POOL, an explicit opt-in:
 * a registered pool is registered once per device for remote read and
 * write, and its rkey goes to every node a request is sent to; the nodes
 * can read and write the whole pool until dfkv_unregister_memory.
 * Buffers outside every pool get a request-scoped registration in every
 * mode.  (POOL used to be 0, the default; a caller that wants it now
 * says so.)
 */
enum dfkv_rdma_expose {
	DFKV_RDMA_EXPOSE_DEFAULT = 0,	/* _REQUEST */
	DFKV_RDMA_EXPOSE_REQUEST = 1,
	DFKV_RDMA_EXPOSE_REQUEST_MR = 2,
	DFKV_RDMA_EXPOSE_REQUEST_MW = 3,
	DFKV_RDMA_EXPOSE_POOL = 4,
	__DFKV_RDMA_EXPOSE_MAX
};

/*
 * Options of dfkv_open_v2.  Zero means "default" for every number.
 *
 * members: "name=host:port[@weight],..." (NUL-terminated).  name is the
 *   node name (the ring identity and the /dev/dfkv bind name), host an
 *   IPv4/IPv6 literal or a resolvable name (IPv6 in brackets), weight
 *   defaults to 1.  ":port" may be omitted (7400).
 * ns/ns_len: the namespace bytes (copied; canonical or opaque).
 * mds_endpoints (VER1): follow the members of `group` in mdsd instead of
 *   a static list (members must then be NULL); the ring follows the
 *   directory's epoch.  Draining members stay in the ring, unhealthy ones
 *   leave it; a loss of more than half of the ring is held for
 *   mds_grace_ms.  client_id registers this client (never in the ring).
 * mds_token_file (VER3): with mds_endpoints, mdsd's client token file
 *   (mdsd --client-token-file; SPEC 7); its writes (client_id's
 *   registration, heartbeats and DELETE) send "Authorization: Bearer
 *   <token>".  A member list whose weights add up to more than 8192 (the
 *   directory's cap) is refused and the ring in force kept.  Read
 *   once at open (mode 0600, at most 4096 bytes, one trailing newline
 *   stripped); an unusable file or a refused registration fails the open
 *   with DFKV_E_AUTH.
 * rdma_expose (VER4): what of the client's memory an RDMA node may touch
 *   (enum dfkv_rdma_expose; lib/README.md, "RDMA memory exposure").
 * tenant_secret, tenant_secret_file (VER5): the secret registered for the
 *   client's tenant (the tenant hash of ns) on the nodes (SPEC.md 9):
 *   DFKV_TENANT_SECRET_LEN raw bytes, or a file holding them as exactly
 *   64 hex digits (one trailing newline allowed; mode 0600 or 0400, as
 *   mds_token_file); at most one of the two.  Both are read once at open
 *   (an unusable file fails it with DFKV_E_AUTH).  Every connection then
 *   authenticates before its first request: TCP and RDMA with the AUTH2
 *   handshake (HELLO, AUTH, and the node's proof back, checked before any
 *   tenant request is sent, whatever the node's auth setting), /dev/dfkv
 *   with DFKV_IOC_AUTH.  A node whose name is not the member's, that
 *   refuses AUTH or whose proof is wrong is unavailable to the client for
 *   cooldown_ms, as an unreachable one is: its reads are misses (cause
 *   "auth" in dfkv_client_misses_total), its writes dropped, and it is
 *   counted (dfkv_client_node_auth_failures_total).  Without a secret the client
 *   still sends HELLO on TCP (none on RDMA) and checks the node's name
 *   when it answers.
 */
struct dfkv_client_options_v2 {
	uint32_t size;			/* sizeof(struct dfkv_client_options_v2) */
	uint32_t transport;		/* enum dfkv_transport */
	const char *members;
	const void *ns;
	uint64_t ns_len;
	uint32_t batch_concurrency;	/* requests in flight per connection
					 * (default 16) */
	uint32_t conns_per_peer;	/* TCP connections per node (default 2) */
	uint32_t connect_timeout_ms;	/* default 1000 */
	uint32_t io_timeout_ms;		/* per call (default 10000) */
	uint32_t cooldown_ms;		/* skip a failed node this long
					 * (default 2000) */
	uint32_t __reserved;		/* must be 0 */
	const char *local_dev;		/* NULL: "/dev/dfkv" */
	/* VER1: discovery through mdsd (SPEC 7); see lib/README.md */
	const char *mds_endpoints;	/* "http://h1:7480,http://h2:7480",
					 * tried in order; set it instead of
					 * members */
	const char *group;		/* NULL: "default" */
	const char *client_id;		/* NULL: do not register; else
					 * heartbeat clients/{client_id} */
	uint32_t mds_poll_ms;		/* long-poll wait (default 30000) */
	uint32_t mds_grace_ms;		/* hold a loss of more than half of
					 * the members (default 10000) */
	uint32_t client_ttl_ms;		/* registration lease (default 10000) */
	uint32_t __reserved2;		/* must be 0 */
	/* VER2: RDMA (transport RDMA, or AUTO with rdma_port set) */
	const char *rdma_devices;	/* NULL: any device; else a comma-
					 * separated whitelist ("mlx5_0,rxe0") */
	uint32_t rdma_port;		/* the nodes' RDMA port (0: 7401); with
					 * AUTO, non-zero turns RDMA on for
					 * remote members */
	uint32_t __reserved3;		/* must be 0 */
	/* VER3: mdsd's bearer token (SPEC 7) */
	const char *mds_token_file;	/* NULL: send no token */
	/* VER4: RDMA memory exposure */
	uint32_t rdma_expose;		/* enum dfkv_rdma_expose (0: REQUEST) */
	uint32_t __reserved4;		/* must be 0 */
	/* VER5: the tenant's secret (SPEC 9) */
	const uint8_t *tenant_secret;	/* NULL, or DFKV_TENANT_SECRET_LEN
					 * bytes (copied) */
	const char *tenant_secret_file;	/* NULL, or the secret as 64 hex
					 * digits */
};
#define DFKV_CLIENT_OPTIONS_V2_SIZE_VER0	64
#define DFKV_CLIENT_OPTIONS_V2_SIZE_VER1	104
#define DFKV_CLIENT_OPTIONS_V2_SIZE_VER2	120
#define DFKV_CLIENT_OPTIONS_V2_SIZE_VER3	128
#define DFKV_CLIENT_OPTIONS_V2_SIZE_VER4	136
#define DFKV_CLIENT_OPTIONS_V2_SIZE_VER5	152

struct dfkv_client;

/* Open a client.  *out is NULL on failure. */
DFKV_API int dfkv_open_v2(const struct dfkv_client_options_v2 *opts,
			  struct dfkv_client **out);
DFKV_API void dfkv_close(struct dfkv_client *c);

/*
 * Scalar operations.  Statuses (see the conventions above): a miss is
 * DFKV_STATUS_NOT_FOUND; a node that cannot be reached turns reads into
 * misses and writes into DFKV_E_UNAVAILABLE.
 */
DFKV_API int dfkv_put(struct dfkv_client *c, const void *key, uint64_t key_len,
		      const void *val, uint64_t val_len);

/*
 * get-auto: the whole value into buf when cap >= its stored length;
 * *len = bytes written.  A value longer than cap is DFKV_STATUS_TOO_LARGE
 * with *len = the stored length (buf contents unspecified).
 */
DFKV_API int dfkv_get(struct dfkv_client *c, const void *key, uint64_t key_len,
		      void *buf, uint64_t cap, uint64_t *len);

/*
 * Range read (SPEC 2): length 0 = the whole remainder, an oversized length
 * is clamped, offset == stored length gives 0 bytes, offset beyond it is
 * DFKV_STATUS_INVALID.  A range wider than cap is DFKV_STATUS_TOO_LARGE.
 * *len = bytes written; *stored_len (may be NULL) = full stored length.
 */
DFKV_API int dfkv_get_range(struct dfkv_client *c, const void *key,
			    uint64_t key_len, uint64_t offset, uint64_t length,
			    void *buf, uint64_t cap, uint64_t *len,
			    uint64_t *stored_len);

/*
 * Scatter-gather.  A value may live in (or land in) n buffers instead of
 * one: 1 <= n <= DFKV_IOV_MAX entries, each a (base, len) span like
 * struct iovec but with a 64-bit length on every ABI.  Entries of length
 * 0 are allowed anywhere and skipped (their base is not looked at, it
 * may be NULL); an entry with a NULL base and a non-zero length, a null
 * array, n == 0 or n > DFKV_IOV_MAX fails closed with DFKV_E_INVAL.
 * Over TCP the buffers go out in gathered sendmsg calls together with
 * the frame prefix and a GET is received straight into them; through
 * /dev/dfkv they are handed to the kernel as an iovec array
 * (DFKV_OP_F_IOV).  There is no intermediate copy on either path.
 */
#define DFKV_IOV_MAX	1024
struct dfkv_iov {
	void *base;
	uint64_t len;
};

/*
 * Store the concatenation of iov[0..n).  As dfkv_put: a value of total
 * length 0 is DFKV_STATUS_INVALID.
 */
DFKV_API int dfkv_put_sg(struct dfkv_client *c, const void *key,
			 uint64_t key_len, const struct dfkv_iov *iov, size_t n);

/*
 * Range read scattered across iov[0..n) in order, with the rules of
 * dfkv_get_range and cap = the total length of the entries: offset 0 and
 * length 0 read the whole value; a range wider than the total is
 * DFKV_STATUS_TOO_LARGE (*data_len 0, *stored_len the stored length,
 * buffer contents unspecified).  *data_len = bytes written (filling the
 * entries front to back); *stored_len may be NULL.  A total of 0 is
 * DFKV_E_INVAL.
 */
DFKV_API int dfkv_get_sg(struct dfkv_client *c, const void *key,
			 uint64_t key_len, uint64_t offset, uint64_t length,
			 const struct dfkv_iov *iov, size_t n,
			 uint64_t *data_len, uint64_t *stored_len);

/* *stored_len (may be NULL) = stored length; a miss is NOT_FOUND. */
DFKV_API int dfkv_exist(struct dfkv_client *c, const void *key,
			uint64_t key_len, uint64_t *stored_len);

/* OK also when absent. */
DFKV_API int dfkv_remove(struct dfkv_client *c, const void *key,
			 uint64_t key_len);

/*
 * Multi-key operations; keys[i]/key_lens[i], 1 <= n <= DFKV_KEYS_MAX.
 * Keys are grouped by node, keeping their order within each node.
 *
 * dfkv_touch:  marks the keys recently used in a forward walk (the last
 *              one ends most recent); dfkv_touch_walk with flags
 *              DFKV_TOUCH_REVERSE walks last to first, so the first key
 *              (the shared prefix) ends most recent (SPEC.md 6; on the
 *              wire TOUCH's offset 0 or 1).  Other flags: DFKV_E_INVAL.
 * dfkv_probe:  stored_lens[i] = stored length of key i, 0 when absent or
 *              its node is unavailable; pins nothing.
 */
DFKV_API int dfkv_touch(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n);
DFKV_API int dfkv_touch_walk(struct dfkv_client *c, const void *const *keys,
			     const uint64_t *key_lens, size_t n,
			     uint32_t flags);
DFKV_API int dfkv_probe(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n,
			uint64_t *stored_lens);

/*
 * dfkv_lease: pins the leading present keys for ttl_ms (0 = node default,
 * at most DFKV_LEASE_TTL_MAX_MS) so that following GETs cannot miss.
 * *nr_hits = length of the leading run of present keys; stored_lens[i]
 * for i < *nr_hits are their lengths (the rest 0).  *lease is a handle
 * for dfkv_release (never NULL on success, even with 0 hits).
 * dfkv_release drops the pins and frees the handle; closing the client
 * releases leases too (the node drops them with the connection/file).
 */
struct dfkv_lease;
DFKV_API int dfkv_lease(struct dfkv_client *c, const void *const *keys,
			const uint64_t *key_lens, size_t n, uint32_t ttl_ms,
			uint64_t *stored_lens, size_t *nr_hits,
			struct dfkv_lease **lease);
DFKV_API int dfkv_release(struct dfkv_client *c, struct dfkv_lease *lease);

/*
 * Batches: n independent operations (1 <= n <= DFKV_CLIENT_BATCH_MAX) fanned
 * out across nodes and connections.  statuses[i] gets each operation's
 * result (initialised to DFKV_E_NOT_RUN); the return value is the number
 * of operations that returned OK, or a negative dfkv_error when the
 * arguments are bad (then nothing ran).  get: bufs[i]/caps[i] and
 * lens[i] as dfkv_get; exist: stored_lens[i].
 */
#define DFKV_CLIENT_BATCH_MAX	65536
DFKV_API int dfkv_put_batch(struct dfkv_client *c, size_t n,
			    const void *const *keys, const uint64_t *key_lens,
			    const void *const *vals, const uint64_t *val_lens,
			    int *statuses);
DFKV_API int dfkv_get_batch(struct dfkv_client *c, size_t n,
			    const void *const *keys, const uint64_t *key_lens,
			    void *const *bufs, const uint64_t *caps,
			    uint64_t *lens, int *statuses);
DFKV_API int dfkv_exist_batch(struct dfkv_client *c, size_t n,
			      const void *const *keys, const uint64_t *key_lens,
			      uint64_t *stored_lens, int *statuses);
DFKV_API int dfkv_remove_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       int *statuses);

/*
 * Scatter-gather batches, with the rules of dfkv_put_batch and
 * dfkv_get_batch: operation i uses iovs[i][0..iovcnts[i]) (checked as for
 * dfkv_put_sg/dfkv_get_sg; a bad array fails that slot only).  get reads
 * whole values (get-auto): lens[i] = bytes written, or the stored length
 * when statuses[i] is DFKV_STATUS_TOO_LARGE.
 */
DFKV_API int dfkv_put_sg_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       const struct dfkv_iov *const *iovs,
			       const size_t *iovcnts, int *statuses);
DFKV_API int dfkv_get_sg_batch(struct dfkv_client *c, size_t n,
			       const void *const *keys, const uint64_t *key_lens,
			       const struct dfkv_iov *const *iovs,
			       const size_t *iovcnts, uint64_t *lens,
			       int *statuses);

/*
 * Asynchronous batches.  dfkv_submit() routes a batch and queues it
 * without waiting on the network; the client's completion thread (one
 * per client, started by the first submit) runs the queued operations on
 * the same connections and pipelines as the synchronous batches
 * (batch_concurrency requests in flight per connection, conns_per_peer
 * connections per node), a bounded slice at a time in submission order,
 * so batches submitted together share the wire.  A finished batch is
 * put on the client's completed list and the client's eventfd
 * (dfkv_batch_fd) becomes readable; dfkv_reap() takes completed batches
 * without blocking.  Peer health applies as for the synchronous calls: a
 * dead node's reads complete as misses and its writes as
 * DFKV_E_UNAVAILABLE within io_timeout_ms, never a hang.
 *
 * op is DFKV_OP_PUT, _GET (scatter-gather: iovs[i][0..iovcnts[i]) as for
 * dfkv_put_sg/dfkv_get_sg; GET reads whole values), _EXIST (n <=
 * DFKV_CLIENT_BATCH_MAX), or the keyed _PROBE, _LEASE (ttl_ms) and
 * _TOUCH (flags DFKV_TOUCH_REVERSE) over n <= DFKV_KEYS_MAX keys.  The
 * keys and the iov arrays are read during dfkv_submit only; the buffers
 * they point at must stay valid until the batch completed.
 */
struct dfkv_batch_desc {
	uint32_t size;			/* sizeof(struct dfkv_batch_desc) */
	uint32_t op;			/* enum dfkv_op, see above */
	uint64_t n;			/* keys */
	const void *const *keys;
	const uint64_t *key_lens;
	const struct dfkv_iov *const *iovs;	/* PUT, GET: per key */
	const size_t *iovcnts;
	uint32_t ttl_ms;		/* LEASE, as dfkv_lease */
	uint32_t flags;			/* TOUCH: DFKV_TOUCH_REVERSE */
	uint64_t user;			/* the caller's, see dfkv_batch_user */
};
#define DFKV_BATCH_DESC_SIZE_VER0	64

struct dfkv_batch;

/*
 * Queue a batch; *out is its handle (NULL on failure).  Bad arguments
 * fail the call (DFKV_E_INVAL, nothing queued); a key that cannot be
 * routed fails its own slot.  Never waits on the network.
 */
DFKV_API int dfkv_submit(struct dfkv_client *c, const struct dfkv_batch_desc *d,
			 struct dfkv_batch **out);
/*
 * Queue the RELEASE of a lease (from dfkv_lease or dfkv_batch_lease) as a
 * batch of one result: dfkv_release without waiting on the network, its
 * requests run by the completion thread in submission order with the
 * other batches.  The handle is consumed whatever this returns (but
 * DFKV_E_INVAL for a NULL argument): when the batch completes, or when
 * the call fails, connections the transport did not take back are closed
 * so that the nodes drop the lease with them.  The batch's status is what
 * dfkv_release returns, or DFKV_E_CANCELLED when it was not sent.
 */
DFKV_API int dfkv_submit_release(struct dfkv_client *c, struct dfkv_lease *l,
				 uint64_t user, struct dfkv_batch **out);
/*
 * The client's eventfd (EFD_NONBLOCK | EFD_CLOEXEC, owned by the client):
 * readable while completed batches wait to be reaped.  Poll it, do not
 * read it; a negative dfkv_error when it cannot be made.
 */
DFKV_API int dfkv_batch_fd(struct dfkv_client *c);
/*
 * Up to max batches completed since the last reap, oldest first, into
 * out; how many.  Never blocks.  Each batch is reaped once.
 */
DFKV_API int dfkv_reap(struct dfkv_client *c, struct dfkv_batch **out,
		       int max);
/*
 * Cancel what of the batch has not been sent: those operations complete
 * with DFKV_E_CANCELLED (reads as nothing read, keyed batches as a
 * whole), the ones on the wire complete as they come.  The batch still
 * completes and is still reaped once.  0, or DFKV_E_INVAL.
 */
DFKV_API int dfkv_batch_cancel(struct dfkv_batch *b);
/* Wait for completion: 0, or DFKV_E_TIMEOUT after timeout_ms (< 0:
 * forever).  Does not reap. */
DFKV_API int dfkv_batch_wait(struct dfkv_batch *b, int timeout_ms);
/* Non-zero once the batch completed (its results are readable). */
DFKV_API int dfkv_batch_done(const struct dfkv_batch *b);
DFKV_API uint64_t dfkv_batch_user(const struct dfkv_batch *b);
DFKV_API uint32_t dfkv_batch_op(const struct dfkv_batch *b);
/*
 * Results, once done.  dfkv_batch_status: the batch as a whole; OK, or
 * for PUT/GET/EXIST the first library error of an operation
 * (DFKV_E_CANCELLED, DFKV_E_UNAVAILABLE for a dropped write, ...), for
 * the keyed ops what dfkv_probe/dfkv_lease/dfkv_touch return.
 * dfkv_batch_result, key i < n: *status its status (PUT/GET/EXIST; keyed
 * ops: the batch status) and *len (may be NULL) GET: bytes read, or the
 * stored length with DFKV_STATUS_TOO_LARGE; EXIST, PROBE: the stored
 * length (0 when absent); LEASE: the stored length of a leading hit.
 * dfkv_batch_hits: PROBE the leading present keys, LEASE the leading
 * hits pinned.  DFKV_E_INVAL before the batch is done or for i >= n.
 */
DFKV_API int dfkv_batch_status(const struct dfkv_batch *b);
DFKV_API int dfkv_batch_result(const struct dfkv_batch *b, uint64_t i,
			       int *status, uint64_t *len);
DFKV_API uint64_t dfkv_batch_hits(const struct dfkv_batch *b);
/*
 * A LEASE batch's lease, handed over once (the caller releases it with
 * dfkv_release); NULL for other batches, before completion, or when the
 * batch failed without one.
 */
DFKV_API struct dfkv_lease *dfkv_batch_lease(struct dfkv_batch *b);
/*
 * Let go of a handle.  A batch not done yet is cancelled and freed when
 * it completes (it is then never reaped); a lease not handed over is
 * released.  dfkv_close completes every batch (cancelling what was not
 * sent, waiting at most io_timeout_ms for the rest) and frees every
 * handle, reaped or not: none may be used after it.
 */
DFKV_API void dfkv_batch_free(struct dfkv_batch *b);

/*
 * RDMA memory registration.  dfkv_register_memory records [base, base +
 * len) as a pool: buffers inside it are used by RDMA requests with the
 * pool's registration (made once per device, on first use), so a value
 * moves without a per-request registration.  A range containing pools
 * replaces them (an engine's host pool re-declared larger); any other
 * overlap with a pool, a range inside one included, is DFKV_E_INVAL
 * (the Python binding treats a range inside a pool as registered).
 * Buffers outside every pool still work: each request registers them
 * for its own duration only.  dfkv_unregister_memory(base) waits for the
 * requests in flight and drops the pool; the memory must stay valid
 * until then.  DFKV_E_NODEV when the client has no RDMA transport.
 * What the nodes may touch of a pool follows rdma_expose (above).
 */
DFKV_API int dfkv_register_memory(struct dfkv_client *c, void *base,
				  uint64_t len);
DFKV_API int dfkv_unregister_memory(struct dfkv_client *c, void *base);

/*
 * Route a key: the name of the member it belongs to (pointer valid until
 * dfkv_close) and, when block is not NULL, its block key.
 */
DFKV_API int dfkv_locate(struct dfkv_client *c, const void *key,
			 uint64_t key_len, const char **member,
			 struct dfkv_key *block);

/*
 * The client's counters in Prometheus text exposition format (names
 * prefixed dfkv_client_).  *len as for dfkv_ns_build.
 * dfkv_client_misses_total{cause} counts the keys reads did not find:
 * "unavailable" (member unreachable, cooling down, or without a
 * transport), "auth" (member failed the handshake), "absent" (the node
 * answered that it does not hold it); lib/README.md.
 */
DFKV_API int dfkv_stats_snapshot(struct dfkv_client *c, char *buf,
				 uint64_t cap, uint64_t *len);

#ifdef __cplusplus
}
#endif

#endif /* DFKV_LIBDFKV_H */
