"""SGLang HiCache storage backend over dfkv (Documentation/connectors.md).

Owns DfkvHiCacheStorage, the HiCacheStorage subclass SGLang loads with

    --hicache-storage-backend dynamic
    --hicache-storage-backend-extra-config '{"backend_name": "dfkv",
        "module_path": "dfkv.connectors.sglang_hicache",
        "class_name": "DfkvHiCacheStorage", "tenant": ..., "members": ...}'

Pages move zero-copy between SGLang's host pool (registered once with the
client) and the nodes: batch_set_v1/batch_get_v1 hand libdfkv the pool
regions get_page_buffer_meta() names, one scatter-gather object per page.
batch_exists answers the leading hits with one PROBE.  Identity comes from
sglang_layout and the server's arguments, the weights' quantization and
LoRA adapters from the required settings (common.weights_of, checked
against the server's); the rest of the extra config only says how to
reach the cluster (common.CONTROL_KEYS) and never changes it.
"""

import ctypes
import logging

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage

import dfkv
from dfkv.connectors import common, sglang_layout as L

log = logging.getLogger(__name__)

# Keys of the extra config SGLang itself reads (its backend factory, and
# its cache controller: interface_v1 selects the zero-copy calls).
_FACTORY_KEYS = ("backend_name", "module_path", "class_name", "interface_v1")


def _server_args():
    """The arguments of the running SGLang server, when they are
    published in this process (the scheduler), else None."""
    try:
        from sglang.srt.runtime_context import get_server_args
        return get_server_args()
    except Exception:  # noqa: BLE001  (no published server args)
        return None


def _region(ptr, size):
    """A writable buffer over size bytes at ptr (host pool memory)."""
    return (ctypes.c_char * size).from_address(ptr)


class DfkvHiCacheStorage(HiCacheStorage):
    """HiCache L3 storage in a dfkv cluster.

    Built by SGLang's StorageBackendFactory as cls(storage_config, kwargs);
    the namespace is fixed when the host pool is registered, since the
    pool's geometry is part of it.
    """

    def __init__(self, storage_config, kwargs=None):
        cfg = dict(storage_config.extra_config or {})
        if not cfg.get("interface_v1"):
            log.warning("dfkv: set \"interface_v1\": 1 in the HiCache "
                        "storage extra config, or SGLang copies every page "
                        "through its generic path")
        for k in _FACTORY_KEYS:
            cfg.pop(k, None)
        self.cfg = cfg
        self.sc = storage_config
        self.tenant = common.tenant_of(cfg)
        common.control_settings(cfg)        # fail early on bad settings
        if storage_config.should_split_heads:
            raise NotImplementedError("dfkv: page_head split-head storage "
                                      "(tp_lcm_size) is not supported")
        server = _server_args()
        self.revision = common.resolve_revision(
            storage_config.model_name, getattr(server, "revision", None),
            cfg.get("model_revision"))
        # --quantization and LoRA, checked against the settings when the
        # server publishes them.
        lora = None if server is None else bool(
            getattr(server, "enable_lora", None) or
            getattr(server, "lora_paths", None))
        self.weights = common.weights_of(
            cfg, storage_config.model_name, self.revision,
            getattr(server, "quantization", None), lora)
        self.ranks = L.rank_fields(
            storage_config.is_mla_model, storage_config.tp_size,
            storage_config.tp_rank, storage_config.pp_size,
            storage_config.pp_rank, storage_config.attn_cp_size,
            storage_config.attn_cp_rank, storage_config.dcp_size,
            storage_config.dcp_rank)
        self.client = None
        self.mem_pool_host = None
        self.ns = None

    # -------------------------------------------------------------- setup

    def register_mem_pool_host(self, mem_pool_host):
        """Bind the host pool: its geometry fixes the namespace, its
        buffer is registered once with the client for zero-copy I/O."""
        if mem_pool_host.layout not in L.PAGE_LAYOUTS:
            raise NotImplementedError(
                f"dfkv: host pool layout {mem_pool_host.layout!r}; use "
                f"--hicache-mem-layout {' or '.join(L.PAGE_LAYOUTS)}")
        super().register_mem_pool_host(mem_pool_host)
        ps = mem_pool_host.page_size
        import torch
        _, sizes = mem_pool_host.get_page_buffer_meta(
            torch.arange(ps, dtype=torch.int64))
        self.regions_per_page = len(sizes)
        self.fields = L.pool_fields(mem_pool_host, sizes)
        dtype = str(mem_pool_host.dtype).removeprefix("torch.")
        self.ns = L.namespace(self.tenant, self.sc.model_name,
                              self.weights.revision(self.revision), dtype,
                              self.fields, tp_size=self.sc.tp_size,
                              pp_size=self.sc.pp_size,
                              cp_size=self.sc.attn_cp_size,
                              dcp_size=self.sc.dcp_size)
        if self.client is not None:
            self.client.close()
        self.client = common.open_client(self.cfg, self.ns)
        buf = mem_pool_host.kv_buffer
        self._base = buf.data_ptr()
        self._len = buf.numel() * buf.element_size()
        common.register_pool(self.client, _region(self._base, self._len))
        log.info("%s", common.describe(
            "SGLang HiCache", self.cfg, self.tenant,
            [("model", self.sc.model_name), ("revision", self.revision),
             ("quantization", self.weights.quantization),
             ("lora", self.weights.lora_text()),
             ("kv_dtype", dtype), ("layout", L.LAYOUT_ID),
             ("page_bytes", sum(sizes))]))

    def _need_pool(self):
        if self.client is None:
            raise RuntimeError("dfkv: no host pool registered")

    def key(self, page_key):
        """The object key of one of SGLang's page keys on this rank."""
        return L.object_key(page_key, self.ranks)

    def _page_buffers(self, host_indices, n):
        """Per page, the list of host pool regions that make it up."""
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        k = self.regions_per_page
        if len(ptrs) != n * k:
            raise ValueError(f"dfkv: {n} keys but {len(ptrs)} regions")
        for p, s in zip(ptrs, sizes):
            if p < self._base or p + s > self._base + self._len:
                raise ValueError("dfkv: page region outside the host pool")
        return [[_region(ptrs[i * k + j], sizes[i * k + j])
                 for j in range(k)] for i in range(n)]

    # ------------------------------------------------- zero-copy page path

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        self._need_pool()
        if not keys:
            return []
        bufs = self._page_buffers(host_indices, len(keys))
        st = self.client.put_sg_batch([self.key(k) for k in keys], bufs)
        return [s == dfkv.OK for s in st]

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        self._need_pool()
        if not keys:
            return []
        bufs = self._page_buffers(host_indices, len(keys))
        want = sum(memoryview(b).nbytes for b in bufs[0])
        res = self.client.get_sg_batch([self.key(k) for k in keys], bufs)
        return [s == dfkv.OK and n == want for s, n in res]

    def batch_exists(self, keys, extra_info=None):
        """The number of leading keys stored: one PROBE, pinning nothing."""
        self._need_pool()
        if not keys:
            return 0
        st, lens = self.client.probe([self.key(k) for k in keys])
        if st != dfkv.OK:
            return 0
        hits = 0
        for n in lens:
            if not n:
                break
            hits += 1
        return hits

    # --------------------------------- the tensor API (one page per call)

    def exists(self, key):
        self._need_pool()
        return self.client.exist(self.key(key))[0] == dfkv.OK

    def _flat(self, t):
        if t.device.type != "cpu" or not t.is_contiguous():
            raise NotImplementedError("dfkv: tensors must be contiguous "
                                      "host memory")
        return _region(t.data_ptr(), t.numel() * t.element_size())

    def set(self, key, value=None, target_location=None, target_sizes=None):
        self._need_pool()
        if value is None:
            raise NotImplementedError("dfkv: set() without a value tensor")
        return self.client.put(self.key(key), self._flat(value)) == dfkv.OK

    def batch_set(self, keys, values=None, target_locations=None,
                  target_sizes=None):
        if values is None:
            raise NotImplementedError("dfkv: batch_set() without values")
        return all([self.set(k, v) for k, v in zip(keys, values)])

    def get(self, key, target_location=None, target_sizes=None):
        """target_location (a host tensor) filled, or None on a miss."""
        self._need_pool()
        if target_location is None:
            raise NotImplementedError("dfkv: get() without a target tensor")
        out = self._flat(target_location)
        st, n = self.client.get(self.key(key), out)
        return target_location if st == dfkv.OK and n == len(out) else None

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        if target_locations is None:
            raise NotImplementedError("dfkv: batch_get() without targets")
        return [self.get(k, t) for k, t in zip(keys, target_locations)]

    # ------------------------------------------------------ not supported

    def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
        raise NotImplementedError("dfkv: hybrid pools (batch_exists_v2)")

    def batch_get_v2(self, transfers, extra_info=None):
        raise NotImplementedError("dfkv: hybrid pools (batch_get_v2)")

    def batch_set_v2(self, transfers, extra_info=None):
        raise NotImplementedError("dfkv: hybrid pools (batch_set_v2)")

    def clear(self):
        # Pages are shared with other instances of the deployment and age
        # out by the nodes' LRU; clearing one engine's view removes nothing.
        return None

    def get_stats(self):
        # SGLang's storage metrics are its own; the client's counters are
        # read with dfkv.Client.stats() (Documentation/connectors.md).
        return None

    def close(self):
        if self.client is not None:
            self.client.close()
            self.client = None
