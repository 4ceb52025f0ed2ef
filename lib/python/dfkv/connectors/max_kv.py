"""MAX KV connector over dfkv (Documentation/connectors.md).

Owns DfkvConnector, a max.pipelines.kv_cache.kv_connector.KVConnector with
the semantics of MAX's dKV connector (DKVConnector), and create_connector,
MAX's factory signature, which builds it for a kv_connector_config of type
"dkv" whose block_store_endpoint is "dfkv" and hands every other config to
MAX's own create_connector.  install() points MAX's paged cache manager at
that factory.

- lookup() takes one LEASE per leaf over the hashes, kept in the replica's
  prepared slot (blocking: MAX's lookup() returns the masks); load() reads
  out of it without asking again.  A later lookup on the replica
  supersedes it.
- Nothing else waits on a node.  start_lookup() submits each leaf's leased
  read and returns; lookup_masks() polls it (None until every leaf
  answered); load()/load_lookup() submit the GETs and offload() an EXIST
  (its transfer's polls then submit the PUTs of what the nodes lack), each
  returning a transfer the engine polls; leases go back (an asynchronous
  RELEASE, Lease.submit_release) once a load landed, on abandon, and for
  a handle the engine dropped at the next poll_transfers(); probe()
  waits at most probe_wait_ms for one presence batch per leaf and
  answers a degraded (all-miss) mask for what did not answer; touch()
  is fire and forget.
- take_metrics() reads and clears the transfer counters (blocks, bytes,
  latency as the polls saw it).
- The tenant is mandatory: a config without one fails model load.

Each leaf has its own namespace and client (max_layout); DP replicas share
them.  Blocks are moved with scatter-gather straight from the shard
buffers' host memory (CPU devices, or host-visible staging).
"""

import collections
import logging
import os
import select
import time
import weakref

import numpy as np

from max.nn.kv_cache.cache_params import KVConnectorType
from max.nn.kv_cache.metrics import KVCacheMetrics
from max.pipelines.kv_cache import connectors as max_connectors
from max.pipelines.kv_cache.kv_connector import (CompletedTransfer,
                                                 KVConnector, KVLoadFailed,
                                                 KVLoadRefused)

import dfkv
from dfkv.connectors import common, max_layout as L

log = logging.getLogger(__name__)

ENDPOINT = "dfkv"
TENANT_ENV = "MODULAR_DKV_TENANT_ID"
# How long probe() waits for the nodes' presence answers (probe_wait_ms):
# it prices a request on the scheduler's thread.
PROBE_WAIT_MS = 1


def settings(cfg):
    """The dfkv settings of a MAX kv_connector_config (its extra fields),
    with the tenant from TENANT_ENV when the config names none."""
    extra = dict(getattr(cfg, "model_extra", None) or {})
    if not extra.get("tenant") and os.getenv(TENANT_ENV):
        extra["tenant"] = os.environ[TENANT_ENV]
    if not extra.get("tenant"):
        raise ValueError(
            "dfkv: a tenant is required: set 'tenant' in kv_connector_config "
            f"or {TENANT_ENV}; dfkv has no default tenant, so model load "
            "fails rather than keying an unfenced shared store")
    return extra


def _host_view(buffer):
    """A writable numpy view of a CPU max.driver.Buffer's bytes."""
    a = np.from_dlpack(buffer)
    if not a.flags.writeable:
        raise ValueError("dfkv: KV buffer is not writable host memory")
    return a


class _Held:
    """What a lookup holds on the nodes: its leases (leaf -> Lease) and
    its leased reads still in flight (leaf -> _LeafRead).  Apart from the
    handle, so that a handle the engine drops can be handed back."""

    __slots__ = ("leases", "pending")

    def __init__(self):
        self.leases, self.pending = {}, {}


class _LeafRead:
    """One leaf's leased read in flight: a LEASE batch over keys (full
    leaves), or for a sliding leaf first an EXIST batch, then a LEASE of
    the keys it found (want: their positions)."""

    __slots__ = ("keys", "batch", "stage", "want")

    def __init__(self, keys, batch, stage):
        self.keys, self.batch, self.stage, self.want = keys, batch, stage, None


class DfkvLookup:
    """What a lookup leased: per leaf, the Lease and the hashes it pins.

    masks: leaf id -> positional mask over the looked-up hashes (True:
    every TP shard's copy is pinned), complete once answered.  A handle
    of start_lookup() the engine drops without loading or abandoning it
    hands its leases back at the connector's next poll_transfers()."""

    def __init__(self, replica_idx, hashes, dropped=None):
        self.replica_idx = replica_idx
        self.hashes = list(hashes)
        self.held = _Held()
        self.pinned = {}
        self.masks = {}
        self.done = False         # loaded from or abandoned
        self.t0 = time.monotonic()
        self._fin = None
        if dropped is not None:
            self._fin = weakref.finalize(self, dropped.append, self.held)
            self._fin.atexit = False

    @property
    def leases(self):
        return self.held.leases

    @property
    def answered(self):
        return not self.held.pending

    def consumed(self):
        self.done = True
        if self._fin is not None:
            self._fin.detach()


class _LoadPart:
    """One leaf's GETs of a load() into the destination rows."""

    def __init__(self, conn, replica_idx, leaf, ids, hashes, batch):
        self.conn, self.leaf, self.ids, self.hashes = conn, leaf, ids, hashes
        self.replica_idx = replica_idx
        self.batch, self.done, self.failure = batch, False, None
        self.blocks = self.bytes = 0

    def advance(self):
        if self.done or not self.batch.done:
            return
        self.done = True
        c, leaf = self.conn, self.leaf
        try:
            res = self.batch.results
        except dfkv.DfkvError as e:
            self.failure = f"dfkv: leaf {leaf}: {e}"
            return
        page = c._page[leaf]
        ranks = c._ranks[leaf]
        for (st, n), h in zip(res, [h for h in self.hashes for _ in ranks]):
            if st != dfkv.OK or n != page:
                self.failure = (f"dfkv: leaf {leaf}: leased block read "
                                f"{dfkv.strerror(st)} ({n} bytes)")
                return
            self.bytes += n
        self.blocks = len(res)      # stored copies read (page rows)
        views = c._views_of(self)
        if len(ranks) == 1 and len(views) > 1:
            # One replicated copy landed in shard 0's row: every shard's.
            for b in self.ids:
                for s in range(1, len(views)):
                    views[s][b] = views[0][b]

    def wait(self):
        self.batch.wait()


class _OffloadPart:
    """One leaf's offload: an EXIST of its keys, then PUTs of those the
    nodes do not hold."""

    def __init__(self, conn, leaf, client, keys, srcs):
        self.conn, self.leaf, self.client = conn, leaf, client
        self.keys, self.srcs = keys, srcs
        self.batch = client.submit_exist(keys)
        self.stage, self.done, self.failure = "exist", False, None
        self.blocks = self.bytes = 0

    def advance(self):
        if self.done or not self.batch.done:
            return
        if self.stage == "exist":
            try:
                sts = self.batch.results
            except dfkv.DfkvError:
                sts = []
            sts = list(sts) + [None] * (len(self.keys) - len(sts))
            self.put = [i for i, st in enumerate(sts) if st != dfkv.OK]
            if not self.put:
                self.done = True
                return
            try:
                self.batch = self.client.submit_put(
                    [self.keys[i] for i in self.put],
                    [self.srcs[i] for i in self.put])
                self.stage = "put"
            except dfkv.DfkvError as e:
                log.warning("dfkv: leaf %s: offload not stored (%s)",
                            self.leaf, e)
                self.done = True
            return
        self.done = True
        try:
            res = self.batch.results
        except dfkv.DfkvError as e:
            res = [e.status] * len(self.put)
        bad = [dfkv.strerror(s) for s in res if s != dfkv.OK]
        if bad:
            log.warning("dfkv: leaf %s: %d of %d blocks not stored (%s)",
                        self.leaf, len(bad), len(res), bad[0])
        page = self.conn._page[self.leaf]
        stored = sum(1 for s in res if s == dfkv.OK)
        self.blocks, self.bytes = stored, stored * page

    def wait(self):
        while not self.done:
            self.batch.wait()
            self.advance()


class _Transfer:
    """One load()'s or offload()'s batches, polled as one: MAX's
    KVConnectorTransfer.  is_complete() never blocks: it advances each
    leaf's batches (an offload's EXIST, then the PUTs of what the nodes
    lack) and settles the transfer once the last one landed: the leases
    a load read under are released (asynchronously) and the counters
    are counted.  A failed read is KVLoadFailed, raised only once every
    leaf's batch completed (nothing lands in the rows after it) and to
    every later poll; a failed write is logged, not raised."""

    def __init__(self, conn, parts, write, held=None, g0=None,
                 failure=None):
        self._conn, self._parts, self._write = conn, parts, write
        self._held, self._g0 = held, g0 or {}
        self._failure, self._settled = failure, False
        self._t0 = time.monotonic()

    @property
    def g0_blocks_per_leaf(self):
        return self._g0

    def is_complete(self):
        if not self._settled:
            for p in self._parts:
                p.advance()
            if not all(p.done for p in self._parts):
                return False
            self._settle()
        if self._failure is not None:
            raise KVLoadFailed(self._failure)
        return True

    def _settle(self):
        self._settled = True
        if self._held is not None:
            self._conn._hand_back(self._held)
        ms = (time.monotonic() - self._t0) * 1000.0
        fail = [p.failure for p in self._parts if p.failure]
        if fail and self._failure is None:
            self._failure = fail[0]
        if self._write:
            self._conn._count(write_blocks=sum(p.blocks for p in self._parts),
                              write_bytes=sum(p.bytes for p in self._parts),
                              write_ms=ms)
        elif self._failure is None:
            self._conn._count(read_blocks=sum(p.blocks for p in self._parts),
                              read_bytes=sum(p.bytes for p in self._parts),
                              read_ms=ms)

    def synchronize(self):
        """Wait until every leaf's batches landed (drain and teardown)."""
        while not self.is_complete():
            for p in self._parts:
                if not p.done:
                    p.wait()


_COUNTERS = ("read_blocks", "read_bytes", "read_ms", "read_n", "read_max",
             "write_blocks", "write_bytes", "write_ms", "write_n",
             "acquire_ms", "acquire_n")


class DfkvConnector(KVConnector):
    """KVConnector keeping MAX's evicted blocks in a dfkv cluster."""

    def __init__(self, leaves, replica_kv_memory, params, cfg):
        s = settings(cfg)
        self.tenant = common.tenant_of(s)
        common.control_settings(s)
        if not s.get("model_id"):
            raise common.ConfigError("dfkv: set 'model_id' (and "
                                     "'model_revision') in "
                                     "kv_connector_config")
        revision = common.resolve_revision(s["model_id"],
                                           s.get("model_revision"))
        # MAX hands a connector neither its model nor its quantization
        # encoding or LoRA adapters: the settings name them.
        weights = common.weights_of(s, s["model_id"], revision)
        if not leaves:
            raise ValueError("dfkv: no KV cache leaves")
        for leaf, g in leaves.items():
            if not (g.is_full() or g.is_sliding_window()):
                raise ValueError(f"dfkv: leaf {leaf} is {g.type}; only "
                                 "full and sliding-window leaves")
        self._leaves = dict(leaves)
        self._params = params
        self._mem = [dict(m) for m in replica_kv_memory]
        self._lease_ttl = int(s.get("lease_ttl_ms", 10000))
        self._probe_wait = float(s.get("probe_wait_ms", PROBE_WAIT_MS)) / 1e3
        lw = s.get("lookup_wait_ms")
        self._lookup_wait = None if lw in (None, "") else float(lw) / 1e3
        self._touch = os.getenv("MODULAR_DKV_DISABLE_G0_TOUCH", "0") in \
            ("", "0")
        dtype = getattr(params.dtype, "name", str(params.dtype))
        self._clients, self._ranks, self._views, self.ns = {}, {}, [], {}
        self._page = {}
        self._releases = []         # RELEASE batches in flight
        self._dropped = collections.deque()  # _Held of dropped handles
        self._orphans = []          # LEASE batches no handle waits for
        self._touches = []          # TOUCH batches (fire and forget)
        self._m = dict.fromkeys(_COUNTERS, 0)
        for leaf, g in self._leaves.items():
            unit = self._mem[0][leaf]
            shards = len(unit.buffers)
            f = L.leaf_fields(g.type, g.window_size, params,
                              unit.bytes_per_page, unit.replicated, shards)
            ns = L.namespace(self.tenant, s.get("model_id"),
                             weights.revision(revision), dtype, leaf, f,
                             shards)
            self.ns[leaf] = ns
            self._clients[leaf] = common.open_client(s, ns)
            self._ranks[leaf] = L.shard_ranks(unit.replicated, shards)
            self._page[leaf] = unit.bytes_per_page
        # Per replica, per leaf, per shard: the page rows' host view,
        # registered once with the leaf's client.
        for mem in self._mem:
            views = {}
            for leaf in self._leaves:
                views[leaf] = [_host_view(b) for b in mem[leaf].buffers]
                for v in views[leaf]:
                    common.register_pool(self._clients[leaf], v)
            self._views.append(views)
        self._prepared = {}
        self._window = {leaf: g.blocks_in_window(params.page_size)
                        for leaf, g in self._leaves.items()
                        if g.is_sliding_window()}
        log.info("%s", common.describe(
            "MAX", s, self.tenant,
            [("model", s["model_id"]), ("revision", revision),
             ("quantization", weights.quantization),
             ("lora", weights.lora_text()),
             ("kv_dtype", dtype), ("layout", L.LAYOUT_ID),
             ("leaves", ",".join(str(lf) for lf in self._leaves))]))

    # --------------------------------------------------------- properties

    @property
    def leaves(self):
        return self._leaves

    @property
    def name(self):
        return "dfkv"

    @property
    def metrics(self):
        """The transfer counters since the last take_metrics()."""
        m = self._m
        return KVCacheMetrics(
            nixl_read_blocks=m["read_blocks"],
            nixl_read_bytes=m["read_bytes"],
            nixl_read_latency_total_ms=float(m["read_ms"]),
            nixl_read_latency_count=m["read_n"],
            nixl_read_latency_max_ms=float(m["read_max"]),
            nixl_write_blocks=m["write_blocks"],
            nixl_write_bytes=m["write_bytes"],
            nixl_write_latency_total_ms=float(m["write_ms"]),
            nixl_write_latency_count=m["write_n"],
            rpc_acquire_latency_total_ms=float(m["acquire_ms"]),
            rpc_acquire_latency_count=m["acquire_n"])

    def take_metrics(self):
        """Read and clear the per-batch transfer counters."""
        out = self.metrics
        self._m = dict.fromkeys(_COUNTERS, 0)
        return out

    def _count(self, read_blocks=0, read_bytes=0, read_ms=None,
               write_blocks=0, write_bytes=0, write_ms=None,
               acquire_ms=None):
        m = self._m
        m["read_blocks"] += read_blocks
        m["read_bytes"] += read_bytes
        m["write_blocks"] += write_blocks
        m["write_bytes"] += write_bytes
        if read_ms is not None:
            m["read_ms"] += read_ms
            m["read_n"] += 1
            m["read_max"] = max(m["read_max"], read_ms)
        if write_ms is not None:
            m["write_ms"] += write_ms
            m["write_n"] += 1
        if acquire_ms is not None:
            m["acquire_ms"] += acquire_ms
            m["acquire_n"] += 1

    # ------------------------------------------------------------ helpers

    def _keys(self, leaf, hashes):
        """Hash-major keys of every stored copy of hashes on leaf."""
        return [L.object_key(h, tp) for h in hashes for tp in self._ranks[leaf]]

    def _mask(self, leaf, present):
        """Per hash: every copy present, from a per-key list."""
        k = len(self._ranks[leaf])
        return [all(present[i * k:(i + 1) * k])
                for i in range(len(present) // k)]

    def _views_of(self, part):
        return self._views[part.replica_idx][part.leaf]

    def _reap(self):
        """Let libdfkv go of every completed batch (their owners keep
        the results); never blocks."""
        for c in self._clients.values():
            c.reap()

    def _hand_back(self, held):
        """Release held's leases (asynchronous RELEASEs) and cancel its
        reads in flight (their leases go once they land)."""
        leases, held.leases = held.leases, {}
        for lease in leases.values():
            self._release(lease)
        for r in held.pending.values():
            r.batch.cancel()
            self._orphans.append(r.batch)
        held.pending.clear()

    def _release(self, lease):
        """Queue lease's RELEASE (Lease.submit_release: never waits on a
        node; the batch is reaped by poll_transfers)."""
        try:
            self._releases.append(lease.submit_release())
        except dfkv.DfkvError as e:
            # the lease went with its connections: the nodes dropped it
            log.debug("dfkv: release not queued (%s)", e)

    def _settle_orphans(self):
        while self._dropped:
            self._hand_back(self._dropped.popleft())
        keep = []
        for b in self._orphans:
            if not b.done:
                keep.append(b)
                continue
            try:
                res = b.results
            except dfkv.DfkvError:
                continue            # failed: nothing pinned
            if isinstance(res, dfkv.Lease):
                self._release(res)
        self._orphans = keep

    def _answer(self, lk, leaf, keys, want, hits):
        present = [False] * len(keys)
        for i in list(want)[:hits]:
            present[i] = True
        mask = self._mask(leaf, present)
        lk.masks[leaf] = mask
        lk.pinned[leaf] = {bytes(h) for h, m in zip(lk.hashes, mask) if m}

    def _miss(self, lk):
        """Answer lk as a miss on every leaf, handing back what it took."""
        self._hand_back(lk.held)
        for leaf in self._leaves:
            lk.masks[leaf] = [False] * len(lk.hashes)
            lk.pinned[leaf] = set()

    def _lease_leaf(self, lk, leaf):
        """Lease leaf's copies of lk.hashes: full leaves their leading
        run (one LEASE), sliding leaves the copies a PROBE finds (any
        position: a window need not start at the root).  Blocking."""
        c = self._clients[leaf]
        keys = self._keys(leaf, lk.hashes)
        if not keys:
            lk.masks[leaf], lk.pinned[leaf] = [], set()
            return
        if self._leaves[leaf].is_full():
            want = list(range(len(keys)))
        else:
            st, lens = c.probe(keys)
            want = [i for i, n in enumerate(lens) if n] if st == dfkv.OK \
                else []
        lease = c.lease([keys[i] for i in want], ttl_ms=self._lease_ttl)
        lk.held.leases[leaf] = lease
        self._answer(lk, leaf, keys, want, lease.hits)

    # ------------------------------------------------------------- lookup

    def lookup(self, block_hashes, replica_idx=0, hint=None):
        """Which of block_hashes each leaf holds, pinned by a lease per
        leaf that load() reads out of (the replica's prepared slot).
        Blocking, as MAX's lookup() returns the masks: until the nodes
        answered (io_timeout_ms at most), or with lookup_wait_ms set
        that long at most, what has not answered by then a miss (its
        leases are handed back once they land)."""
        self.abandon_lookup(self._prepared.pop(replica_idx, None))
        if self._lookup_wait is not None and self.defers_lookup():
            # lookup_wait_ms: the asynchronous reads, waited for that long
            # at most; what has not answered by then is a miss.
            deadline = time.monotonic() + self._lookup_wait
            lk = self._start(block_hashes, replica_idx, None)
            if not self._wait_lookup(lk, deadline):
                log.debug("dfkv: lookup not answered in lookup_wait_ms; "
                          "a miss")
                self._miss(lk)
            self._prepared[replica_idx] = lk
            return lk.masks
        lk = DfkvLookup(replica_idx, block_hashes)
        try:
            for leaf in self._leaves:
                self._lease_leaf(lk, leaf)
        except BaseException:
            self._hand_back(lk.held)
            raise
        self._count(acquire_ms=(time.monotonic() - lk.t0) * 1000.0)
        self._prepared[replica_idx] = lk
        return lk.masks

    def _wait_lookup(self, lk, deadline):
        """Poll lk until it answered or deadline (time.monotonic()), on
        the clients' eventfds; whether it answered."""
        fds = [c.fileno() for c in self._clients.values()]
        while not self._advance(lk):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._reap()        # the eventfds then wake on new ones only
            if self._advance(lk):
                return True
            select.select(fds, [], [], left)
        return True

    def defers_lookup(self, replica_idx=0):
        return all(hasattr(c, "submit_lease") for c in self._clients.values())

    def start_lookup(self, block_hashes, replica_idx=0, hint=None):
        """A handle whose leases are its own, submitted without waiting
        (full leaves: a LEASE; sliding leaves: an EXIST, then a LEASE of
        what it found, submitted by a later poll); lookup_masks() polls
        it.  A leaf whose read fails to start hands back the reads
        already started and the handle answers a miss.  Without the
        asynchronous API, the lease of a blocking lookup() in the
        prepared slot."""
        if not self.defers_lookup(replica_idx):
            self.lookup(block_hashes, replica_idx, hint)
            return self._prepared[replica_idx]
        return self._start(block_hashes, replica_idx, self._dropped)

    def _start(self, block_hashes, replica_idx, dropped):
        """Submit a lookup's reads (start_lookup(), or lookup() with
        lookup_wait_ms): a handle; dropped is where a dropped handle's
        holdings go (None: the prepared slot owns it)."""
        lk = DfkvLookup(replica_idx, block_hashes, dropped)
        keys = {leaf: self._keys(leaf, lk.hashes) for leaf in self._leaves}
        try:
            for leaf, c in self._clients.items():
                if not keys[leaf]:
                    lk.masks[leaf], lk.pinned[leaf] = [], set()
                elif self._leaves[leaf].is_full():
                    lk.held.pending[leaf] = _LeafRead(
                        keys[leaf], c.submit_lease(keys[leaf],
                                                   ttl_ms=self._lease_ttl),
                        "lease")
                else:
                    lk.held.pending[leaf] = _LeafRead(
                        keys[leaf], c.submit_exist(keys[leaf]), "exist")
        except dfkv.DfkvError as e:
            log.warning("dfkv: a lookup's read failed to start (%s); "
                        "answered as a miss", e)
            self._miss(lk)
        return lk

    def _advance(self, lk):
        """Take what lk's reads answered so far, submitting a sliding
        leaf's LEASE once its EXIST is back; whether lk is answered.
        Never waits."""
        pend = lk.held.pending
        if not pend:
            return True
        try:
            for leaf, r in list(pend.items()):
                if not r.batch.done:
                    continue
                if r.stage == "exist":
                    try:
                        sts = r.batch.results
                    except dfkv.DfkvError:
                        sts = []
                    r.want = [i for i, st in enumerate(sts)
                              if st == dfkv.OK]
                    if r.want:
                        r.batch = self._clients[leaf].submit_lease(
                            [r.keys[i] for i in r.want],
                            ttl_ms=self._lease_ttl)
                        r.stage = "lease"
                        continue
                    del pend[leaf]
                    self._answer(lk, leaf, r.keys, [], 0)
                    continue
                del pend[leaf]
                try:
                    lease = r.batch.results
                except dfkv.DfkvError:
                    lease = None            # failed: nothing pinned
                if lease is not None:
                    lk.held.leases[leaf] = lease
                self._answer(lk, leaf, r.keys,
                             r.want if r.want is not None else
                             range(len(r.keys)),
                             lease.hits if lease is not None else 0)
        except dfkv.DfkvError as e:
            log.warning("dfkv: a lookup's lease failed to start (%s); "
                        "answered as a miss", e)
            self._miss(lk)
        if not pend:
            self._count(acquire_ms=(time.monotonic() - lk.t0) * 1000.0)
        return not pend

    def lookup_masks(self, lookup):
        """The masks of a start_lookup() handle once every leaf answered,
        None while one is in flight.  Never waits: the engine polls it."""
        if self._advance(lookup):
            return lookup.masks
        return None

    def abandon_lookup(self, lookup):
        """Hand back every leaf's lease in lookup without waiting (reads
        still in flight are cancelled and their leases released once
        they land, by poll_transfers); a no-op on an empty or already
        loaded handle.  A slot lease is released only while it is still
        that lookup's."""
        if lookup is None or lookup.done:
            return
        if self._prepared.get(lookup.replica_idx) is lookup:
            del self._prepared[lookup.replica_idx]
        self._hand_back(lookup.held)
        lookup.consumed()

    # --------------------------------------------------------------- load

    def _plan(self, lk, block_ids, block_hashes):
        """Per leaf (leaf, ids, hashes, keys, buffer lists) of a load out
        of lk's leases; raises before anything is read."""
        if set(block_ids) != set(block_hashes):
            raise ValueError("dfkv: block_ids and block_hashes name "
                             "different leaves")
        views = self._views[lk.replica_idx]
        plan = []
        for leaf, hashes in block_hashes.items():
            ids = block_ids[leaf]
            if len(ids) != len(hashes):
                raise ValueError(f"dfkv: leaf {leaf}: {len(ids)} blocks for "
                                 f"{len(hashes)} hashes")
            pinned = lk.pinned.get(leaf, set())
            for h in hashes:
                if bytes(h) not in pinned:
                    raise KVLoadRefused(f"dfkv: leaf {leaf}: block not in "
                                        "the lookup's lease", leaf, h)
            if not hashes:
                continue
            ranks = self._ranks[leaf]
            bufs = []
            for b in ids:
                if len(ranks) == 1 and len(views[leaf]) > 1:
                    # One replicated copy lands in every shard's row.
                    bufs.append([views[leaf][0][b]])
                else:
                    bufs.extend([views[leaf][s][b]]
                                for s in range(len(ranks)))
            plan.append((leaf, list(ids), list(hashes),
                         self._keys(leaf, hashes), bufs))
        return plan

    def _load(self, lk, block_ids, block_hashes):
        """Submit lk's GETs into the rows; a _Transfer the engine polls.
        lk's leases are consumed however this exits: released once the
        reads landed, or at once when nothing is read."""
        lk.consumed()
        try:
            plan = self._plan(lk, block_ids, block_hashes)
        except BaseException:
            self._hand_back(lk.held)
            raise
        if not plan:
            self._hand_back(lk.held)
            return CompletedTransfer()
        parts, failure = [], None
        for leaf, ids, hashes, keys, bufs in plan:
            try:
                b = self._clients[leaf].submit_get(keys, bufs)
            except dfkv.DfkvError as e:
                # What was posted may still land in the rows: the
                # transfer raises this once it has.
                failure = f"dfkv: leaf {leaf}: {e}"
                break
            parts.append(_LoadPart(self, lk.replica_idx, leaf, ids, hashes,
                                   b))
        if failure is not None:
            for p in parts:
                p.batch.cancel()
            if not parts:
                self._hand_back(lk.held)
                raise KVLoadFailed(failure)
        return _Transfer(self, parts, False, held=lk.held, failure=failure)

    def load(self, block_ids, block_hashes, replica_idx=0, hint=None):
        """Move each leaf's blocks out of the lease lookup() took: the
        GETs are submitted and a transfer returned that the engine polls
        (is_complete() once every leaf's blocks landed).  The lease is
        consumed however this exits."""
        lk = self._prepared.pop(replica_idx, None)
        if lk is None:
            raise ValueError("dfkv: load() without a lookup() on replica "
                             f"{replica_idx}")
        return self._load(lk, block_ids, block_hashes)

    def load_lookup(self, lookup, block_ids, block_hashes, replica_idx=0,
                    hint=None):
        """As load(), out of the leases start_lookup() returned; a slot
        handle a later lookup superseded, or a handle not answered yet,
        loads nothing (KVLoadRefused, its leases handed back)."""
        if lookup.replica_idx != replica_idx:
            raise ValueError("dfkv: lookup handle of another replica")
        if lookup.done:
            # Loaded, abandoned, or (a slot lease) superseded by a later
            # lookup on the replica, which abandoned it.
            raise KVLoadRefused("dfkv: lookup superseded, abandoned or "
                                "already loaded")
        if not self._advance(lookup):
            self.abandon_lookup(lookup)
            raise KVLoadRefused("dfkv: lookup not answered yet")
        if self._prepared.get(replica_idx) is lookup:
            del self._prepared[replica_idx]
        return self._load(lookup, block_ids, block_hashes)

    # ------------------------------------------------------------ offload

    def offload(self, block_ids, block_hashes, replica_idx=0):
        """Store each leaf's blocks under their hashes: per leaf an EXIST
        is submitted, and polling the transfer submits the PUTs of what
        the nodes lack; returned at once, reporting every block handed
        over as pinned until the transfer completed."""
        views = self._views[replica_idx]
        parts, g0 = [], {}
        for leaf, hashes in block_hashes.items():
            ids = list(block_ids[leaf])
            if len(ids) != len(hashes):
                raise ValueError(f"dfkv: leaf {leaf}: {len(ids)} blocks for "
                                 f"{len(hashes)} hashes")
            keys = self._keys(leaf, hashes)
            if not keys:
                continue
            ranks = self._ranks[leaf]
            srcs = [[views[leaf][max(r, 0)][b]] for b in ids
                    for _, r in ranks]
            try:
                parts.append(_OffloadPart(self, leaf, self._clients[leaf],
                                          keys, srcs))
            except dfkv.DfkvError as e:
                log.warning("dfkv: leaf %s: offload not submitted (%s)",
                            leaf, e)
                continue
            g0[leaf] = ids
        if not parts:
            return CompletedTransfer({leaf: [] for leaf in block_hashes})
        return _Transfer(self, parts, True, g0=g0)

    # -------------------------------------------------------------- probe

    def _wait(self, batches, deadline):
        """Wait for batches until deadline (time.monotonic(); the clients'
        eventfds under select); whether all completed."""
        fds = [c.fileno() for c in self._clients.values()]
        while True:
            if all(b.done for b in batches):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._reap()        # the eventfds then wake on new ones only
            if all(b.done for b in batches):
                return True
            select.select(fds, [], [], left)

    def probe(self, block_hashes, replica_idxs, hint=None):
        """Per replica, what it could load of block_hashes, pinning
        nothing: one presence batch per leaf (each leaf is a layout of
        its own: a PROBE's leading run for a full leaf, an EXIST per
        block for a sliding one), waited for at most probe_wait_ms.
        When a leaf's nodes have not answered by then, or failed, the
        replicas cannot load (a degraded client) and answer all misses.
        Replicas that can load share one masks mapping, those that
        cannot another."""
        deadline = time.monotonic() + self._probe_wait
        n = len(block_hashes)
        misses = {leaf: [False] * n for leaf in self._leaves}
        able = {r for r in replica_idxs if 0 <= r < len(self._mem)}
        if not n or not able:
            return [misses for _ in replica_idxs]
        keys = {leaf: self._keys(leaf, block_hashes) for leaf in self._leaves}
        batches = {}
        try:
            for leaf, c in self._clients.items():
                batches[leaf] = (c.submit_probe if self._leaves[leaf].is_full()
                                 else c.submit_exist)(keys[leaf])
        except dfkv.DfkvError as e:
            log.warning("dfkv: probe not submitted (%s)", e)
            able = set()
        if able and not self._wait(list(batches.values()), deadline):
            able = set()
        resident = {}
        for leaf, b in batches.items():
            if not able:
                b.cancel()
                continue
            if b.status != dfkv.OK:
                able = set()
                continue
            k = len(self._ranks[leaf])
            if self._leaves[leaf].is_full():
                hits = b.results
                resident[leaf] = [(i + 1) * k <= hits for i in range(n)]
            else:
                resident[leaf] = self._mask(
                    leaf, [st == dfkv.OK for st in b.results])
        return [resident if r in able else misses for r in replica_idxs]

    # -------------------------------------------------------------- touch

    def touch(self, block_hashes, replica_idx=0):
        """Refresh recency of blocks served from device: full leaves take
        the whole root-anchored sequence, walked in reverse (the shared
        prefix ends most recently used); sliding leaves only their window,
        walked forward.  Fire and forget (the seed's contract): one
        asynchronous TOUCH per leaf, queued behind what the connection
        carries already and reaped by poll_transfers(); the call returns
        at once whatever the nodes do, and never raises (a lost touch
        costs a later refetch at most)."""
        if not self._touch or not block_hashes:
            return
        for leaf, c in self._clients.items():
            try:
                if self._leaves[leaf].is_full():
                    keys, rev = self._keys(leaf, block_hashes), True
                else:
                    w = self._window[leaf]
                    keys, rev = self._keys(leaf, block_hashes[-w:]), False
                self._touches.append(c.submit_touch(keys, reverse=rev))
            except Exception:  # noqa: BLE001  (fire and forget)
                log.debug("dfkv: touch failed on leaf %s", leaf,
                          exc_info=True)

    def poll_transfers(self):
        """Reap the clients' completed batches (their results stay with
        the lookups and transfers that submitted them), hand back the
        leases of dropped handles and of reads abandoned in flight, and
        forget finished touches.  Never waits, never raises."""
        try:
            self._reap()
            self._settle_orphans()
            self._touches = [b for b in self._touches if not b.done]
            self._releases = [b for b in self._releases if not b.done]
        except Exception:  # noqa: BLE001  (never into the scheduler)
            log.exception("dfkv: poll_transfers")

    def pending_touches(self):
        """Touches submitted and not completed yet (a debug gauge)."""
        return sum(1 for b in self._touches if not b.done)

    def held_leases(self):
        """Leases whose RELEASE is in flight, abandoned reads whose lease
        is not back yet and dropped handles not handed back yet (a debug
        gauge)."""
        return sum(1 for b in self._releases if not b.done) + \
            len(self._orphans) + len(self._dropped)

    def shutdown(self):
        for lk in list(self._prepared.values()):
            self.abandon_lookup(lk)
        for c in self._clients.values():
            c.close()
        self._clients = {}


def create_connector(leaves, devices, replica_kv_memory, params,
                     device_memory_bytes):
    """MAX's create_connector, building a DfkvConnector for a
    kv_connector_config of type "dkv" with block_store_endpoint "dfkv"."""
    cfg = params.kv_connector_config
    if cfg.type == KVConnectorType.dkv and \
            cfg.block_store_endpoint == ENDPOINT:
        return DfkvConnector(leaves, replica_kv_memory, params, cfg)
    return _max_create_connector(leaves, devices, replica_kv_memory, params,
                                 device_memory_bytes)


_max_create_connector = max_connectors.create_connector


def install():
    """Make MAX's cache managers build connectors through
    create_connector above (they bind the name at import)."""
    from max.pipelines.kv_cache.paged_kv_cache import jenga_cache_manager
    jenga_cache_manager.create_connector = create_connector
    max_connectors.create_connector = create_connector
