"""dfkv as an LMCache remote storage plugin.

LMCache's remote storage plugin framework (remote_storage_plugins in the
LMCache configuration) loads DfkvConnectorAdapter from this module; the
settings live in extra_config under "remote_storage_plugin.dfkv.":

    remote_storage_plugins: ["dfkv"]
    extra_config:
      remote_storage_plugin.dfkv.module_path: dfkv.connectors.lmcache
      remote_storage_plugin.dfkv.class_name: DfkvConnectorAdapter
      remote_storage_plugin.dfkv.tenant: acme
      remote_storage_plugin.dfkv.quantization: none
      remote_storage_plugin.dfkv.lora: none
      remote_storage_plugin.dfkv.members: n1=10.0.0.1:7400

DfkvConnector is LMCache's RemoteConnector over one dfkv.Client: its
coroutines await asynchronous dfkv batches on LMCache's event loop
(client.run: no thread per call), batched_contains is one PROBE and
batched_async_contains(pin=True) one LEASE whose pins the following
batched_get_non_blocking of the same lookup consumes.

Identity (SPEC 1.1/1.2) comes from LMCache's LMCacheMetadata: the model,
its KV shapes and dtypes, the chunk size and the world; one object per
(chunk hash, worker), where MLA workers (identical latent KV) share the
object of tp rank -1.  The weights' quantization and LoRA adapters,
which the metadata lacks, are required settings (common.weights_of).
Documentation/connectors.md.
"""

import hashlib
import logging
import time

import numpy as np

import dfkv
from dfkv.connectors import common

from lmcache.utils import CacheEngineKey
from lmcache.v1.storage_backend.connector import (ConnectorAdapter,
                                                  ConnectorContext,
                                                  extract_plugin_type)
from lmcache.v1.storage_backend.connector.base_connector import \
    RemoteConnector

log = logging.getLogger(__name__)

PLUGIN_TYPE = "dfkv"
# The byte layout of one object: the MemoryObj bytes of one chunk as
# LMCache serialized them, without a header (a partial chunk is told by
# its stored length).  Changing a field or the list needs a new id.
LAYOUT_ID = "lmcache/raw-v1"
LAYOUT_FIELDS = ("shapes", "dtypes", "fmt", "chunk_size", "kv_shape",
                 "use_mla", "serde", "layerwise")
POOL = "lmcache"
COMPONENT = "kv"


def settings_of(config, plugin_name):
    """The plugin's settings: extra_config keys
    "remote_storage_plugin.<plugin_name>.<setting>"."""
    pre = "remote_storage_plugin.%s." % (plugin_name or PLUGIN_TYPE)
    extra = (config.extra_config if config is not None else None) or {}
    return {k[len(pre):]: v for k, v in extra.items() if k.startswith(pre)}


def _bytes(obj):
    """A MemoryObj's bytes as a uint8 array over the same memory (its
    byte_array is a ctypes view whose "<B" format buffers refuse)."""
    return np.frombuffer(obj.byte_array, np.uint8)


def _dtype(d):
    return str(d).removeprefix("torch.")


class Identity:
    """Namespace and object keys of one LMCache worker."""

    def __init__(self, config, metadata, revision=None,
                 weights=common.PLAIN):
        shapes = metadata.get_shapes()
        self.use_mla = bool(metadata.use_mla)
        self.world = max(int(metadata.world_size), 1)
        self.worker = int(metadata.worker_id)
        self.values = {
            "shapes": ";".join(",".join(str(d) for d in s) for s in shapes),
            "dtypes": ",".join(_dtype(d) for d in metadata.get_dtypes()),
            "fmt": "KV_MLA_FMT" if self.use_mla else "KV_2LTD",
            "chunk_size": metadata.chunk_size,
            "kv_shape": ",".join(str(d) for d in metadata.kv_shape),
            "use_mla": int(self.use_mla),
            "serde": config.remote_serde or "naive",
            "layerwise": int(bool(config.use_layerwise)),
        }
        self.model_id = common.model_id(metadata.model_name)
        self.revision = common.resolve_revision(metadata.model_name,
                                                revision)
        self.weights = weights
        self.dtype = _dtype(metadata.kv_dtype)
        self.chunk_size = metadata.chunk_size
        self.num_layers = metadata.kv_shape[0]

    def namespace(self, tenant):
        return common.namespace(
            tenant, self.model_id, self.weights.revision(self.revision),
            LAYOUT_ID, self.dtype,
            common.layout_values(LAYOUT_FIELDS, self.values),
            self.chunk_size, self.num_layers, "full", tp=self.world)

    def key(self, key: CacheEngineKey):
        """The object key of an LMCache key: its chunk hash (and tags),
        its worker as tp rank, -1 for MLA."""
        h = key.chunk_hash
        if isinstance(h, int):
            h = h.to_bytes((h.bit_length() + 8) // 8, "big", signed=True)
        if key.tags:
            h += hashlib.sha256(repr(key.tags).encode()).digest()[:16]
        tp = (self.world, -1 if self.use_mla else key.worker_id)
        layer = getattr(key, "layer_id", None)
        comp = COMPONENT if layer is None else "%s.l%d" % (COMPONENT, layer)
        return common.render_key(POOL, h, 0, comp, tp=tp)


class DfkvConnector(RemoteConnector):
    """LMCache RemoteConnector over dfkv."""

    def __init__(self, loop, local_cpu_backend, config, metadata,
                 settings):
        super().__init__(config, metadata)
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend
        tenant = common.tenant_of(settings)
        unknown = set(settings) - set(common.CLIENT_KEYS) - {
            "tenant", "module_path", "class_name", "lease_ttl_ms",
            "model_revision", *common.WEIGHTS_KEYS}
        if unknown:
            raise common.ConfigError("dfkv plugin: unknown settings %s" %
                                     sorted(unknown))
        revision = common.resolve_revision(metadata.model_name,
                                           settings.get("model_revision"))
        # LMCache's metadata names neither the weights' quantization nor
        # the LoRA adapters: the settings do.
        self.ident = Identity(config, metadata, revision, common.weights_of(
            settings, metadata.model_name, revision))
        self.lease_ttl_ms = int(settings.get("lease_ttl_ms", 0))
        self.client = common.open_client(settings,
                                         self.ident.namespace(tenant))
        # lookup_id -> (dfkv.Lease, monotonic expiry): the pins of a
        # lookup that hit, until its get or its TTL
        self._leases = {}
        log.info("%s", common.describe(
            "LMCache", settings, tenant,
            [("model", self.ident.model_id), ("revision", self.ident.revision),
             ("quantization", self.ident.weights.quantization),
             ("lora", self.ident.weights.lora_text()),
             ("kv_dtype", self.ident.dtype), ("layout", LAYOUT_ID),
             ("worker", self.ident.worker)]))
        pool = self._host_pool()
        if pool is not None:
            self.client.register_memory(pool)

    def _host_pool(self):
        """The LocalCPUBackend's host buffer (numpy view), to register
        once, or None when the allocator does not expose one."""
        alloc = getattr(self.local_cpu_backend, "memory_allocator", None)
        for attr in ("pin_allocator", "cpu_allocator"):
            sub = getattr(alloc, attr, None)
            buf = getattr(sub, "buffer", None)
            if buf is not None and getattr(buf, "device", None) is not None \
                    and buf.device.type == "cpu":
                return buf.view(-1).numpy().view("uint8")
        return None

    def _alloc(self):
        return self.local_cpu_backend.allocate(self.meta_shapes,
                                               self.meta_dtypes,
                                               self.meta_fmt)

    async def _run(self, batch):
        return await self.client.run(batch)

    # ------------------------------------------------------ presence

    async def exists(self, key: CacheEngineKey) -> bool:
        b = await self._run(self.client.submit_exist([self.ident.key(key)]))
        return b.status == dfkv.OK and b.results[0] == dfkv.OK

    def exists_sync(self, key: CacheEngineKey) -> bool:
        return self.client.exist(self.ident.key(key))[0] == dfkv.OK

    def support_batched_contains(self) -> bool:
        return True

    def batched_contains(self, keys):
        """Leading hits of keys: one PROBE."""
        st, lens = self.client.probe([self.ident.key(k) for k in keys])
        if st != dfkv.OK:
            return 0
        n = 0
        while n < len(lens) and lens[n]:
            n += 1
        return n

    def support_batched_async_contains(self) -> bool:
        return True

    async def batched_async_contains(self, lookup_id, keys, pin=False):
        """Leading hits of keys: a PROBE, or with pin a LEASE whose pins
        last until the lookup's batched_get_non_blocking (or close)."""
        okeys = [self.ident.key(k) for k in keys]
        if not pin:
            b = await self._run(self.client.submit_probe(okeys))
            return b.results if b.status == dfkv.OK else 0
        self._expire_leases()
        b = await self._run(self.client.submit_lease(okeys,
                                                     self.lease_ttl_ms))
        self._drop_lease(lookup_id)
        if b.status != dfkv.OK:
            return 0
        lease = b.results
        if not lease.hits:      # a miss pins nothing and holds nothing
            lease.release()
            return 0
        ttl = self.lease_ttl_ms or dfkv.LEASE_TTL_DEFAULT_MS
        self._leases[lookup_id] = (lease, time.monotonic() + ttl / 1000)
        return lease.hits

    def _drop_lease(self, lookup_id):
        held = self._leases.pop(lookup_id, None)
        if held is not None:
            held[0].release()

    def _expire_leases(self):
        """Let go of the handles of lookups that hit but whose chunks were
        never read: their pins lapsed on the nodes at the TTL."""
        now = time.monotonic()
        for lid in [lid for lid, (_, t) in self._leases.items() if t <= now]:
            self._drop_lease(lid)

    def held_leases(self):
        """How many lookups' pins this connector holds (a debug gauge)."""
        self._expire_leases()
        return len(self._leases)

    # ----------------------------------------------------------- data

    async def _get_many(self, keys):
        """MemoryObjs of keys, None where missing (one GET batch)."""
        objs = [self._alloc() for _ in keys]
        want = [(k, o) for k, o in zip(keys, objs) if o is not None]
        out = [None] * len(keys)
        if not want:
            return out
        b = await self._run(self.client.submit_get(
            [self.ident.key(k) for k, _ in want],
            [[_bytes(o)] for _, o in want]))
        res = b.results if b.status == dfkv.OK else [(b.status, 0)] * \
            len(want)
        j = 0
        for i, o in enumerate(objs):
            if o is None:
                continue
            st, n = res[j]
            j += 1
            if st == dfkv.OK and n:
                try:
                    out[i] = self.reshape_partial_chunk(o, n)
                    continue
                except ValueError as e:
                    log.warning("dfkv plugin: %s", e)
            o.ref_count_down()
        return out

    async def get(self, key: CacheEngineKey):
        return (await self._get_many([key]))[0]

    def support_batched_get(self) -> bool:
        return True

    async def batched_get(self, keys):
        return await self._get_many(keys)

    def support_batched_get_non_blocking(self) -> bool:
        return True

    async def batched_get_non_blocking(self, lookup_id, keys):
        """The leading present chunks of keys; the lookup's lease (from
        batched_async_contains with pin) is released after the reads."""
        try:
            objs = await self._get_many(keys)
        finally:
            self._drop_lease(lookup_id)
        out = []
        for o in objs:
            if o is None:
                break
            out.append(o)
        for o in objs[len(out):]:
            if o is not None:
                o.ref_count_down()
        return out

    async def put(self, key: CacheEngineKey, memory_obj):
        await self.batched_put([key], [memory_obj])

    def support_batched_put(self) -> bool:
        return True

    async def batched_put(self, keys, memory_objs):
        b = await self._run(self.client.submit_put(
            [self.ident.key(k) for k in keys],
            [[_bytes(o)] for o in memory_objs]))
        if b.status != dfkv.OK:
            raise dfkv.DfkvError(b.status, "dfkv plugin: put")
        bad = [s for s in b.results if s != dfkv.OK]
        if bad:
            log.warning("dfkv plugin: %d of %d puts failed (%s)", len(bad),
                        len(keys), dfkv.strerror(bad[0]))

    def remove_sync(self, key: CacheEngineKey) -> bool:
        return self.client.remove(self.ident.key(key)) == dfkv.OK

    async def list(self):
        """dfkv nodes hold block keys (hashes), not LMCache's key
        strings: there is nothing to list."""
        raise NotImplementedError("dfkv cannot list keys: nodes see only "
                                  "block key hashes")

    async def close(self):
        for lid in list(self._leases):
            self._drop_lease(lid)
        self.client.close()


class DfkvConnectorAdapter(ConnectorAdapter):
    """The adapter LMCache's remote storage plugin framework loads:
    creates a DfkvConnector for "plugin://dfkv[.<instance>]"."""

    def __init__(self) -> None:
        super().__init__("plugin://%s" % PLUGIN_TYPE)

    def can_parse(self, url: str) -> bool:
        if not url.startswith("plugin://"):
            return False
        return extract_plugin_type(url[len("plugin://"):]) == PLUGIN_TYPE

    def create_connector(self, context: ConnectorContext):
        if context.metadata is None:
            raise common.ConfigError("dfkv plugin: LMCache gave no model "
                                     "metadata")
        return DfkvConnector(context.loop, context.local_cpu_backend,
                             context.config, context.metadata,
                             settings_of(context.config,
                                         context.plugin_name))
