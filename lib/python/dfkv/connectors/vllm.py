"""dfkv as a secondary tier of vLLM's OffloadingConnector.

vLLM (TieringOffloadingSpec) loads this module from the
"secondary_tiers" list of --kv-transfer-config:

    {"type": "DfkvTier", "module_path": "dfkv.connectors.vllm",
     "tenant": "acme", "quantization": "none", "lora": "none",
     "members": "n1=10.0.0.1:7400,..."}

The tier lives in the scheduler process and never blocks there: every
transfer is one asynchronous dfkv batch (client.submit_*), completed
batches are reaped without waiting in get_finished_jobs(), lookups are
answered from PROBE batches sent at the end of each scheduler step.
Blocks move between dfkv and the primary tier's host memory (the
memoryview vLLM hands over, registered once with libdfkv) by
scatter-gather: no copy in Python.

Identity (SPEC 1.1/1.2) comes from vLLM's OffloadingConfig: one
namespace per offloaded KV cache group, one object per (chunk, worker
slice) keyed by the chunk's block hash and the worker's ranks; worker
slices that vLLM itself declares identical (the replicated MLA layout)
are one object with tp rank -1.  The weights' quantization and LoRA
adapters (with revisions), which OffloadingConfig does not carry, are
required tier settings; vLLM's block hash already binds a request's
cache_salt and LoRA name and path.  Documentation/connectors.md.
"""

import hashlib
import logging
from typing import Any, ClassVar

import dfkv
from dfkv.connectors import common

from vllm.v1.kv_offload.base import (Locality, LookupResult, Medium,
                                     OffloadKey, ReqContext,
                                     RequestOffloadingContext,
                                     ScheduleEndContext,
                                     get_offload_block_hash,
                                     get_offload_group_idx)
from vllm.v1.kv_offload.tiering.base import (JobResult,
                                             SecondaryTierManager,
                                             TransferJob)

log = logging.getLogger(__name__)

# The byte layout of one object: the slice of one worker (or the single
# replicated copy) of one primary-tier chunk, LAYOUT_FIELDS fixing it.
# Changing what a field means, or the field list, needs a new id.
LAYOUT_ID = "vllm-multiwr-v4"
LAYOUT_FIELDS = ("tokens_per_hash", "blocks_per_chunk", "tokens_per_block",
                 "worker_kv_bytes_per_block", "slice_bytes", "world_size",
                 "copies", "replicated_layout", "canonical_layout",
                 "kv_cache_layout", "group_id", "layers_sha256",
                 "sliding_window_chunks")
POOL = "vllm"
COMPONENT = "kv"

# Tier settings that are not the client's (common.CLIENT_KEYS).
TIER_KEYS = ("tenant", "locality", "model_revision") + common.WEIGHTS_KEYS


class Layout:
    """How the primary tier's chunks split into dfkv objects, and the
    identity of one KV cache group of an OffloadingConfig."""

    def __init__(self, spec, group, revision, weights=common.PLAIN):
        cfg = spec.config
        par = cfg.parallel
        self.group_id = group.group_id
        self.full = group.sliding_window_size_in_chunks is None
        self.world = par.world_size
        self.replicated = bool(spec.replicated_layout)
        self.copies = 1 if self.replicated else max(self.world, 1)
        self.slice_bytes = spec.cpu_page_size_per_worker
        self.tp, self.pp, self.pcp = par.tp_size, par.pp_size, par.pcp_size
        self.dcp, self.dp = par.dcp_size, par.data_parallel_size
        layers = hashlib.sha256("\0".join(group.layer_names).encode())
        self.values = {
            "tokens_per_hash": cfg.cache.tokens_per_hash,
            "blocks_per_chunk": cfg.cache.blocks_per_chunk,
            "tokens_per_block": group.tokens_per_block,
            "worker_kv_bytes_per_block": cfg.worker_kv_bytes_per_block,
            "slice_bytes": self.slice_bytes,
            "world_size": self.world,
            "copies": self.copies,
            "replicated_layout": int(self.replicated),
            "canonical_layout": int(bool(cfg.canonical_layout)),
            "kv_cache_layout": cfg.kv_cache_layout or "",
            "group_id": group.group_id,
            "layers_sha256": layers.hexdigest(),
            "sliding_window_chunks":
                "" if self.full else group.sliding_window_size_in_chunks,
        }
        self.block_tokens = group.tokens_per_block * cfg.cache.blocks_per_chunk
        self.num_layers = len(group.layer_names)
        self.group_name = "full" if self.full else "swa"
        self.model_id = common.model_id(cfg.model.name)
        self.revision = revision
        self.weights = weights
        self.dtype = cfg.model.dtype

    def namespace(self, tenant):
        return common.namespace(
            tenant, self.model_id, self.weights.revision(self.revision),
            LAYOUT_ID, self.dtype,
            common.layout_values(LAYOUT_FIELDS, self.values),
            self.block_tokens, self.num_layers, self.group_name, tp=self.tp,
            pp=self.pp, dp=self.dp, pcp=self.pcp, dcp=self.dcp)

    def ranks(self, slot):
        """Key ranks of worker slice `slot`: vLLM orders workers with TP
        fastest, then PCP, then PP; DP replicas compute the same KV and
        share it; the single replicated copy has tp rank -1."""
        if self.replicated:
            tp = (self.tp, -1)
            pcp, pp = (self.pcp, 0), (self.pp, 0)
        else:
            tp = (self.tp, slot % self.tp)
            pcp = (self.pcp, (slot // self.tp) % self.pcp)
            pp = (self.pp, slot // (self.tp * self.pcp))
        dcp = (self.dcp, tp[1] % self.dcp if tp[1] >= 0 else -1)
        return dict(dp=(self.dp, -1), tp=tp, pcp=pcp, dcp=dcp, pp=pp)

    def keys(self, block_hash):
        """The object keys of one chunk, one per worker slice."""
        return [common.render_key(POOL, block_hash, self.group_id,
                                  COMPONENT, **self.ranks(s))
                for s in range(self.copies)]


class _Transfer:
    """One store or load job: its batches (one per group) and the chunk
    keys that made it."""

    __slots__ = ("job_id", "is_load", "parts", "ok", "failed", "keys")

    def __init__(self, job_id, is_load):
        self.job_id, self.is_load = job_id, is_load
        self.parts, self.ok, self.failed, self.keys = 0, [], False, []


class _Lookup:
    """The PROBE of one request's keys of one group, sent at step end."""

    __slots__ = ("req_id", "keys")

    def __init__(self, req_id, keys):
        self.req_id, self.keys = req_id, keys


class DfkvTier(SecondaryTierManager):
    """A dfkv cluster as a vLLM secondary offloading tier."""

    medium: ClassVar[Medium] = Medium.STORAGE

    def __init__(self, offloading_spec, primary_kv_view: memoryview,
                 tier_type: str, backpressure_detector=None,
                 **settings: Any):
        super().__init__(offloading_spec, primary_kv_view, tier_type,
                         backpressure_detector)
        unknown = set(settings) - set(common.CLIENT_KEYS) - set(TIER_KEYS)
        if unknown:
            raise common.ConfigError(
                "dfkv tier: unknown setting%s %s (known: %s)" % (
                    "s" * (len(unknown) > 1), ", ".join(sorted(unknown)),
                    ", ".join(TIER_KEYS + common.CLIENT_KEYS)))
        tenant = common.tenant_of(settings)
        loc = settings.get("locality")
        try:
            self.locality = Locality(loc) if loc is not None else None
        except ValueError:
            raise common.ConfigError(
                "dfkv tier: locality %r is none of %s" % (
                    loc, ", ".join(x.value for x in Locality))) from None
        model = offloading_spec.config.model
        revision = common.resolve_revision(model.name,
                                           settings.get("model_revision"))
        # vLLM's OffloadingConfig carries neither the weights'
        # quantization nor the LoRA adapters: the entry names them.
        weights = common.weights_of(settings, model.name, revision)
        # One flat byte view: chunk c's row starts at c * block_size_bytes.
        self._flat = primary_kv_view.cast("B")
        self._layouts = {}
        self._clients = {}
        for g in offloading_spec.config.groups:
            lay = Layout(offloading_spec, g, revision, weights)
            if lay.slice_bytes * lay.copies > self.block_size_bytes:
                raise common.ConfigError(
                    "dfkv tier: %d slices of %d bytes exceed the primary "
                    "row of %d" % (lay.copies, lay.slice_bytes,
                                   self.block_size_bytes))
            c = common.open_client(settings, lay.namespace(tenant))
            c.register_memory(primary_kv_view)
            self._layouts[g.group_id] = lay
            self._clients[g.group_id] = c
        log.info("%s", common.describe(
            "vLLM tier", settings, tenant,
            [("model", common.model_id(model.name)), ("revision", revision),
             ("quantization", weights.quantization),
             ("lora", weights.lora_text()),
             ("kv_dtype", model.dtype), ("layout", LAYOUT_ID),
             ("groups", len(self._layouts)),
             ("locality", loc or "unset")]))
        self._inflight = common.Inflight()
        self._results = []
        # key -> True/False (resolved) or None (probe in flight)
        self._state = {}
        self._req_keys = {}     # req_id -> keys it looked up
        self._pending = {}      # (req_id, group) -> [keys] to probe
        self.stats = dict(lookups=0, hits=0, stores=0, store_failures=0,
                          loads=0, load_failures=0)

    # ----------------------------------------------------------- helpers

    def _slices(self, lay, chunk_id):
        base = int(chunk_id) * self.block_size_bytes
        n = lay.slice_bytes
        return [self._flat[base + s * n:base + (s + 1) * n]
                for s in range(lay.copies)]

    def _submit(self, job, is_load):
        """Put or get job's chunks, one batch per group."""
        tr = _Transfer(job.job_id, is_load)
        by_group = {}
        for key, cid in zip(job.keys, job.chunk_ids):
            by_group.setdefault(get_offload_group_idx(key), []).append(
                (key, cid))
        for gid, items in by_group.items():
            lay = self._layouts.get(gid)
            if lay is None:
                tr.failed = True
                tr.keys.extend(k for k, _ in items)
                continue
            okeys, bufs = [], []
            for key, cid in items:
                okeys.extend(lay.keys(get_offload_block_hash(key)))
                bufs.extend([b] for b in self._slices(lay, cid))
            c = self._clients[gid]
            try:
                b = (c.submit_get if is_load else c.submit_put)(okeys, bufs)
            except dfkv.DfkvError as e:
                log.warning("dfkv tier: submit failed: %s", e)
                tr.failed = True
                tr.keys.extend(k for k, _ in items)
                continue
            tr.parts += 1
            self._inflight.add(c, b, (tr, lay, [k for k, _ in items]))
        if tr.parts == 0:
            self._finish(tr)

    def _finish(self, tr):
        what = "loads" if tr.is_load else "stores"
        self.stats[what] += 1
        if not tr.failed:
            self._results.append(JobResult(tr.job_id, True))
            return
        self.stats[what[:-1] + "_failures"] += 1
        if not tr.is_load:
            self._results.append(JobResult(tr.job_id, False))
            return
        self._results.append(JobResult(tr.job_id, False,
                                       successful_keys=list(tr.ok)))
        ok = set(tr.ok)
        for k in tr.keys:
            if k not in ok and k in self._state:
                self._state[k] = False

    def _completed(self, tag, batch):
        if isinstance(tag, _Lookup):
            self._probed(tag, batch)
            return
        tr, lay, keys = tag
        n = lay.copies
        res = batch.results if batch.status == dfkv.OK else None
        for i, key in enumerate(keys):
            sts = res[i * n:(i + 1) * n] if res else None
            if sts is None:
                good = False
            elif tr.is_load:
                good = all(st == dfkv.OK and ln == lay.slice_bytes
                           for st, ln in sts)
            else:
                good = all(st == dfkv.OK for st in sts)
            if good:
                tr.ok.append(key)
            tr.failed |= not good
            tr.keys.append(key)
        tr.parts -= 1
        if tr.parts == 0:
            self._finish(tr)

    def _probed(self, look, batch):
        """Full attention needs the prefix: the leading hits of the PROBE
        are hits, the rest misses.  A sliding window group needs only
        its window: each chunk is what its own EXISTs say."""
        lay = self._layouts[get_offload_group_idx(look.keys[0])]
        n = lay.copies
        ok = batch.status == dfkv.OK
        if lay.full:
            whole = (batch.results if ok else 0) // n
            found = [i < whole for i in range(len(look.keys))]
        else:
            res = batch.results if ok else [dfkv.NOT_FOUND] * (
                n * len(look.keys))
            found = [all(st == dfkv.OK for st in res[i * n:(i + 1) * n])
                     for i in range(len(look.keys))]
        for key, hit in zip(look.keys, found):
            if self._state.get(key, False) is None:
                self._state[key] = hit
        self.stats["hits"] += sum(found)

    def _poll(self):
        for tag, batch in self._inflight.poll():
            self._completed(tag, batch)

    # ------------------------------------------------ SecondaryTierManager

    def lookup(self, key: OffloadKey, req_context: ReqContext):
        self._poll()
        st = self._state.get(key, "new")
        self._req_keys.setdefault(req_context.req_id, set()).add(key)
        if st is True:
            return LookupResult.HIT
        if st is False:
            return LookupResult.MISS
        if st == "new":
            if get_offload_group_idx(key) not in self._layouts:
                return LookupResult.MISS
            self.stats["lookups"] += 1
            self._state[key] = None
            self._pending.setdefault(
                (req_context.req_id, get_offload_group_idx(key)),
                []).append(key)
        return LookupResult.RETRY

    def on_schedule_end(self, context: ScheduleEndContext) -> None:
        pending, self._pending = self._pending, {}
        for (req_id, gid), keys in pending.items():
            lay, c = self._layouts[gid], self._clients[gid]
            okeys = [k for key in keys
                     for k in lay.keys(get_offload_block_hash(key))]
            try:
                b = (c.submit_probe if lay.full else c.submit_exist)(okeys)
            except dfkv.DfkvError as e:
                log.warning("dfkv tier: probe failed: %s", e)
                for key in keys:
                    self._state[key] = False
                continue
            self._inflight.add(c, b, _Lookup(req_id, keys))
        self._poll()

    def submit_store(self, job_metadata: TransferJob) -> None:
        self._submit(job_metadata, False)

    def submit_load(self, job_metadata: TransferJob) -> None:
        self._submit(job_metadata, True)

    def get_finished_jobs(self):
        self._poll()
        out, self._results = self._results, []
        return out

    def has_pending_work(self) -> bool:
        return bool(len(self._inflight) or self._results or self._pending)

    def touch(self, keys, req_context: ReqContext):
        """Refresh the chunks' recency on their nodes: full attention in
        reverse (the shared prefix ends most recently used), sliding
        window groups forward."""
        by_group = {}
        for key in keys:
            by_group.setdefault(get_offload_group_idx(key), []).append(key)
        for gid, ks in by_group.items():
            lay = self._layouts.get(gid)
            if lay is None:
                continue
            okeys = [k for key in ks
                     for k in lay.keys(get_offload_block_hash(key))]
            c = self._clients[gid]
            try:
                self._inflight.add(c, c.submit_touch(okeys,
                                                     reverse=lay.full), None)
            except dfkv.DfkvError as e:
                log.warning("dfkv tier: touch failed: %s", e)

    def on_new_request(self, req_context: ReqContext):
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: ReqContext) -> None:
        for key in self._req_keys.pop(req_context.req_id, ()):
            if self._state.get(key) is not None:
                self._state.pop(key, None)

    def drain_jobs(self) -> None:
        for tag, batch in self._inflight.drain():
            self._completed(tag, batch)

    def shutdown(self) -> None:
        self.drain_jobs()
        for c in self._clients.values():
            c.close()
        self._clients = {}

    def config_info(self):
        lay = next(iter(self._layouts.values()), None)
        return {"dfkv_layout": LAYOUT_ID,
                "dfkv_revision": lay.revision if lay else ""}

    @classmethod
    def config_info_keys(cls, tier_config):
        return ("dfkv_layout", "dfkv_revision")
