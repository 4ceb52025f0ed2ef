"""MAX KV connector over dfkv (Documentation/connectors.md).

Owns DfkvConnector, a max.pipelines.kv_cache.kv_connector.KVConnector with
the semantics of MAX's dKV connector (DKVConnector), and create_connector,
MAX's factory signature, which builds it for a kv_connector_config of type
"dkv" whose block_store_endpoint is "dfkv" and hands every other config to
MAX's own create_connector.  install() points MAX's paged cache manager at
that factory.

- lookup() takes one LEASE per leaf over the hashes, kept in the replica's
  prepared slot; load() reads out of it without asking again and releases
  it however it exits.  A later lookup on the replica supersedes it.
- start_lookup()/load_lookup(): the handle, not the slot, carries the
  leases when the client has the asynchronous API (submit_lease); without
  it start_lookup answers through lookup() and its slot.
- abandon_lookup() hands a handle's leases back; probe() reports presence
  and pins nothing; touch() walks full-attention leaves in reverse and a
  sliding leaf forward over its window only.
- The tenant is mandatory: a config without one fails model load.

Each leaf has its own namespace and client (max_layout); DP replicas share
them.  Blocks are moved with scatter-gather straight from the shard
buffers' host memory (CPU devices, or host-visible staging).
"""

import logging
import os

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


class DfkvLookup:
    """What a lookup leased: per leaf, the Lease and the hashes it pins.

    masks: leaf id -> positional mask over the looked-up hashes (True:
    every TP shard's copy is pinned)."""

    def __init__(self, replica_idx, hashes):
        self.replica_idx = replica_idx
        self.hashes = list(hashes)
        self.leases = {}
        self.pinned = {}
        self.masks = {}
        self.pending = None       # async: leaf id -> dfkv.Batch
        self.done = False         # loaded from or abandoned

    def release(self):
        for lease in self.leases.values():
            try:
                lease.release()
            except dfkv.DfkvError:
                log.exception("dfkv: release failed; pins wait on the TTL")
        self.leases = {}
        self.done = True


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
        self._touch = os.getenv("MODULAR_DKV_DISABLE_G0_TOUCH", "0") in \
            ("", "0")
        dtype = getattr(params.dtype, "name", str(params.dtype))
        self._clients, self._ranks, self._views, self.ns = {}, {}, [], {}
        self._page = {}
        for leaf, g in self._leaves.items():
            unit = self._mem[0][leaf]
            shards = len(unit.buffers)
            f = L.leaf_fields(g.type, g.window_size, params,
                              unit.bytes_per_page, unit.replicated, shards)
            ns = L.namespace(self.tenant, s.get("model_id"), revision,
                             dtype, leaf, f, shards)
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
        self._touches = common.Inflight()      # fire and forget
        self._window = {leaf: g.blocks_in_window(params.page_size)
                        for leaf, g in self._leaves.items()
                        if g.is_sliding_window()}
        log.info("%s", common.describe(
            "MAX", s, self.tenant,
            [("model", s["model_id"]), ("revision", revision),
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
        return KVCacheMetrics()

    def take_metrics(self):
        return KVCacheMetrics()

    # ------------------------------------------------------------ helpers

    def _keys(self, leaf, hashes):
        """Hash-major keys of every stored copy of hashes on leaf."""
        return [L.object_key(h, tp) for h in hashes for tp in self._ranks[leaf]]

    def _mask(self, leaf, present):
        """Per hash: every copy present, from a per-key list."""
        k = len(self._ranks[leaf])
        return [all(present[i * k:(i + 1) * k])
                for i in range(len(present) // k)]

    def _lease_leaf(self, lk, leaf):
        """Lease leaf's copies of lk.hashes: full leaves their leading
        run (one LEASE), sliding leaves the copies a PROBE finds (any
        position: a window need not start at the root)."""
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
        lk.leases[leaf] = lease
        present = [False] * len(keys)
        for i in want[:lease.hits]:
            present[i] = True
        mask = self._mask(leaf, present)
        lk.masks[leaf] = mask
        lk.pinned[leaf] = {bytes(h) for h, m in zip(lk.hashes, mask) if m}

    def _lookup(self, hashes, replica_idx):
        lk = DfkvLookup(replica_idx, hashes)
        try:
            for leaf in self._leaves:
                self._lease_leaf(lk, leaf)
        except BaseException:
            lk.release()
            raise
        return lk

    # ------------------------------------------------------------- lookup

    def lookup(self, block_hashes, replica_idx=0, hint=None):
        """Which of block_hashes each leaf holds, pinned by a lease per
        leaf that load() reads out of (the replica's prepared slot)."""
        self.abandon_lookup(self._prepared.pop(replica_idx, None))
        lk = self._lookup(block_hashes, replica_idx)
        self._prepared[replica_idx] = lk
        return lk.masks

    def defers_lookup(self, replica_idx=0):
        return all(hasattr(c, "submit_lease") for c in self._clients.values())

    def start_lookup(self, block_hashes, replica_idx=0, hint=None):
        """A handle whose leases are its own; without the asynchronous
        API, the lease of a blocking lookup() in the prepared slot."""
        if not self.defers_lookup(replica_idx):
            self.lookup(block_hashes, replica_idx, hint)
            return self._prepared[replica_idx]
        # Asynchronous form: the handle carries its leases; the leaves'
        # leased reads run concurrently.  The mask of a sliding leaf needs
        # a PROBE first, so it is leased when the handle is completed.
        lk = DfkvLookup(replica_idx, block_hashes)
        lk.pending = {}
        for leaf, c in self._clients.items():
            if self._leaves[leaf].is_full() and block_hashes:
                lk.pending[leaf] = c.submit_lease(
                    self._keys(leaf, block_hashes), ttl_ms=self._lease_ttl)
        return lk

    def _complete(self, lk):
        """Finish an asynchronous handle's leases (waits for them)."""
        if lk.pending is None:
            return
        pending, lk.pending = lk.pending, None
        try:
            for leaf, b in pending.items():
                b.wait()
                self._clients[leaf].reap()
                lease = b.results
                hits = lease.hits if lease is not None else 0
                if lease is not None:
                    lk.leases[leaf] = lease
                k = len(self._keys(leaf, lk.hashes))
                present = [i < hits for i in range(k)]
                lk.masks[leaf] = self._mask(leaf, present)
                lk.pinned[leaf] = {bytes(h) for h, m in
                                   zip(lk.hashes, lk.masks[leaf]) if m}
            for leaf in self._leaves:
                if leaf not in lk.masks:
                    self._lease_leaf(lk, leaf)
        except BaseException:
            lk.release()
            raise

    def lookup_masks(self, lookup):
        """The masks of a start_lookup() handle (completing it)."""
        self._complete(lookup)
        return lookup.masks

    def abandon_lookup(self, lookup):
        """Hand back every leaf's lease in lookup; a no-op on an empty or
        already loaded handle.  A slot lease is released only while it is
        still that lookup's."""
        if lookup is None or lookup.done:
            return
        if lookup.pending is not None:
            for leaf, b in lookup.pending.items():
                b.cancel()
                b.wait()
                self._clients[leaf].reap()
                try:
                    if b.results is not None:
                        b.results.release()
                except dfkv.DfkvError:
                    pass            # cancelled or failed: nothing pinned
            lookup.pending = None
        if self._prepared.get(lookup.replica_idx) is lookup:
            del self._prepared[lookup.replica_idx]
        lookup.release()

    # --------------------------------------------------------------- load

    def _read(self, lk, block_ids, block_hashes):
        """GET each leaf's blocks into their rows, out of lk's leases."""
        if set(block_ids) != set(block_hashes):
            raise ValueError("dfkv: block_ids and block_hashes name "
                             "different leaves")
        views = self._views[lk.replica_idx]
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
            keys = self._keys(leaf, hashes)
            bufs = []
            for b in ids:
                if len(ranks) == 1 and len(views[leaf]) > 1:
                    # One replicated copy lands in every shard's row.
                    bufs.append([views[leaf][0][b]])
                else:
                    bufs.extend([views[leaf][s][b]]
                                for s in range(len(ranks)))
            try:
                res = self._clients[leaf].get_sg_batch(keys, bufs)
            except dfkv.DfkvError as e:
                raise KVLoadFailed(f"dfkv: leaf {leaf}: {e}") from e
            page = self._page[leaf]
            for (st, n), h in zip(res, [h for h in hashes
                                        for _ in ranks]):
                if st == dfkv.NOT_FOUND:
                    raise KVLoadRefused(f"dfkv: leaf {leaf}: leased block "
                                        "missing", leaf, h)
                if st != dfkv.OK or n != page:
                    raise KVLoadFailed(f"dfkv: leaf {leaf}: "
                                       f"{dfkv.strerror(st)} ({n} bytes)")
            if len(ranks) == 1 and len(views[leaf]) > 1:
                for b in ids:
                    for s in range(1, len(views[leaf])):
                        views[leaf][s][b] = views[leaf][0][b]
        return CompletedTransfer()

    def load(self, block_ids, block_hashes, replica_idx=0, hint=None):
        """Move each leaf's blocks out of the lease lookup() took; the
        lease is consumed however this exits."""
        lk = self._prepared.pop(replica_idx, None)
        if lk is None:
            raise ValueError("dfkv: load() without a lookup() on replica "
                             f"{replica_idx}")
        try:
            return self._read(lk, block_ids, block_hashes)
        finally:
            lk.release()

    def load_lookup(self, lookup, block_ids, block_hashes, replica_idx=0,
                    hint=None):
        """As load(), out of the leases start_lookup() returned; a slot
        handle a later lookup superseded loads nothing."""
        if lookup.replica_idx != replica_idx:
            raise ValueError("dfkv: lookup handle of another replica")
        if lookup.done:
            # Loaded, abandoned, or (a slot lease) superseded by a later
            # lookup on the replica, which abandoned it.
            raise KVLoadRefused("dfkv: lookup superseded, abandoned or "
                                "already loaded")
        try:
            self._complete(lookup)
            if self._prepared.get(replica_idx) is lookup:
                del self._prepared[replica_idx]
            return self._read(lookup, block_ids, block_hashes)
        finally:
            lookup.release()

    # ------------------------------------------------------------ offload

    def offload(self, block_ids, block_hashes, replica_idx=0):
        """Store each leaf's blocks under their hashes, skipping those the
        cluster already holds (one PROBE per leaf)."""
        views = self._views[replica_idx]
        taken = {}
        for leaf, hashes in block_hashes.items():
            ids = block_ids[leaf]
            ranks = self._ranks[leaf]
            keys = self._keys(leaf, hashes)
            c = self._clients[leaf]
            if not keys:
                taken[leaf] = []
                continue
            st, lens = c.probe(keys)
            have = lens if st == dfkv.OK else [0] * len(keys)
            put_k, put_b, took = [], [], []
            for i, b in enumerate(ids):
                fresh = False
                for j, (_, r) in enumerate(ranks):
                    if have[i * len(ranks) + j]:
                        continue
                    fresh = True
                    put_k.append(keys[i * len(ranks) + j])
                    put_b.append([views[leaf][max(r, 0)][b]])
                if fresh:
                    took.append(b)
            if put_k:
                res = c.put_sg_batch(put_k, put_b)
                bad = [dfkv.strerror(s) for s in res if s != dfkv.OK]
                if bad:
                    log.warning("dfkv: leaf %s: %d of %d blocks not stored "
                                "(%s)", leaf, len(bad), len(res), bad[0])
            taken[leaf] = took
        return CompletedTransfer(taken)

    # -------------------------------------------------------------- probe

    def probe(self, block_hashes, replica_idxs, hint=None):
        """Per replica, what it could load of block_hashes: presence on
        the first full-attention leaf, pinning nothing."""
        full = [lf for lf, g in self._leaves.items() if g.is_full()]
        if not full:
            return None
        leaf = full[0]
        if not block_hashes:
            return [{leaf: []} for _ in replica_idxs]
        st, lens = self._clients[leaf].probe(self._keys(leaf, block_hashes))
        present = [bool(n) for n in lens] if st == dfkv.OK else \
            [False] * len(lens)
        mask = self._mask(leaf, present)
        hits, run = [], True
        for m in mask:
            run = run and m
            hits.append(run)
        answer = {leaf: hits}
        return [answer for _ in replica_idxs]

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
                self._touches.add(c, c.submit_touch(keys, reverse=rev),
                                  None)
            except Exception:  # noqa: BLE001  (fire and forget)
                log.debug("dfkv: touch failed on leaf %s", leaf,
                          exc_info=True)

    def poll_transfers(self):
        """Reap the clients' completed batches (their handles are held
        by the lookups that submitted them; touches are dropped)."""
        self._touches.poll()
        for c in self._clients.values():
            if hasattr(c, "reap"):
                c.reap()

    def pending_touches(self):
        """Touches submitted and not reaped yet (a debug gauge)."""
        return len(self._touches)

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
