# SPDX-License-Identifier: GPL-2.0
"""vLLM: dfkv as a secondary tier of the OffloadingConnector's
TieringOffloadingSpec, against a dfkv.ko node in the test VM,
from the host (selftests/connectors/run).

The tier is built by vLLM itself: OffloadingSpecFactory.create_spec()
with the kv_connector_extra_config of Documentation/connectors.md (its
"secondary_tiers" entry names dfkv.connectors.vllm), get_manager() makes
the CPU primary tier and, through SecondaryTierFactory, the dfkv tier.
The test plays the scheduler (lookup, prepare/complete store,
on_schedule_end) and the GPU worker (writing chunks into the primary
tier's host memory), then a second engine loads them back.
"""

import os
import subprocess
import sys
import tempfile

from enginetest import private_hub

_tmp = private_hub("dfkv-vllm-")

import numpy as np  # noqa: E402

import dfkv  # noqa: E402
from enginetest import (MEMBERS, HubCache, doc_json, case, logged,  # noqa
                        main, node_add, node_del, step, until)
from vllm.v1.kv_offload.base import (LookupResult, ReqContext,  # noqa: E402
                                     ScheduleEndContext, make_offload_key)
from vllm.v1.kv_offload.config import (OffloadingCacheConfig,  # noqa: E402
                                       OffloadingConfig,
                                       OffloadingGroupConfig,
                                       OffloadingModelConfig,
                                       OffloadingParallelConfig)
from vllm.v1.kv_offload.factory import OffloadingSpecFactory  # noqa: E402

from dfkv.connectors import vllm as dv  # noqa: E402

MODEL = "acme/tiny-llama"
REV1, REV2 = "a1" * 20, "b2" * 20
HUB = HubCache(os.environ["HF_HUB_CACHE"], MODEL)
HUB.set_main(REV1)
TP = 2
TOKENS = 16         # tokens per block
# One worker's block: 2 layers x (K, V) x 16 tokens x 2 heads x 64 x fp16.
BLOCK = 2 * 2 * TOKENS * 2 * 64 * 2
END = ScheduleEndContext((), ())
_engines = []


def kv_transfer_config():
    """The docs' --kv-transfer-config, pointed at the test node."""
    cfg = doc_json("vllm-kv-transfer-config")
    tier = cfg["kv_connector_extra_config"]["secondary_tiers"][0]
    tier["members"] = MEMBERS
    tier["cooldown_ms"] = 50
    return cfg


def engine(name, replicated=False, blocks=64, **tier_settings):
    """A TieringOffloadingManager made by vLLM's own factory path, with
    room for `blocks` blocks in its CPU tier, and its dfkv tier
    (tier_settings added to the docs' tier entry; a None one removes
    that key)."""
    kvt = kv_transfer_config()
    extra = dict(kvt["kv_connector_extra_config"])
    tier = dict(extra["secondary_tiers"][0], **tier_settings)
    extra["secondary_tiers"] = [{k: v for k, v in tier.items()
                                 if v is not None}]
    extra["cpu_bytes_to_use"] = blocks * TP * BLOCK + 64 * 4096
    config = OffloadingConfig(
        groups=(OffloadingGroupConfig(tokens_per_block=TOKENS,
                                      layer_names=("l0", "l1"),
                                      group_id=0),),
        worker_kv_bytes_per_block=BLOCK, enable_kv_cache_events=False,
        extra_config=extra, engine_id="dfkv-test-%s-%d" % (name, os.getpid()),
        model=OffloadingModelConfig(name=MODEL, dtype="float16"),
        cache=OffloadingCacheConfig(tokens_per_hash=TOKENS,
                                    blocks_per_chunk=1),
        parallel=OffloadingParallelConfig(
            rank=0, world_size=TP, tp_size=TP, pp_size=1, pcp_size=1,
            dcp_size=1, data_parallel_index=0, data_parallel_size=1,
            data_parallel_rank_local=None, is_parallelism_agnostic=False),
        replicated_layout=replicated, kv_cache_layout="NHD")
    spec = OffloadingSpecFactory.create_spec(config)
    assert type(spec).__name__ == "TieringOffloadingSpec", spec
    mgr = spec.get_manager()
    tiers = [t for t in mgr.secondary_tiers if isinstance(t, dv.DfkvTier)]
    assert len(tiers) == 1, mgr.secondary_tiers
    _engines.append(mgr)
    return mgr, tiers[0]


def keys_of(seed, n):
    return [make_offload_key(bytes([seed, i]) * 16, 0) for i in range(n)]


def pattern(key, n):
    """The bytes the GPU worker would have written for key."""
    rng = np.random.default_rng(list(key))
    return rng.integers(0, 256, n, dtype=np.uint8)


def settle(mgr):
    """Step the engine until its tiers have nothing in flight."""
    def idle():
        mgr.on_schedule_end(END)
        return not mgr.has_pending_work()
    until("tier idle", idle)


def store(mgr, tier, keys, req="w"):
    ctx = ReqContext(req_id=req)
    mgr.on_new_request(ctx)
    out = mgr.prepare_store(keys, ctx)
    assert out is not None and list(out.keys_to_store) == list(keys)
    view = np.asarray(mgr.primary_tier.get_kv_memoryview()).view(np.uint8)
    for k, c in zip(keys, out.store_spec.chunk_ids):
        view[int(c)] = pattern(k, view.shape[1])
    mgr.complete_store(keys, ctx)
    mgr.on_request_finished(ctx)
    settle(mgr)


def lookup_all(mgr, keys, req):
    """The scheduler's lookups of a prompt's chunks (as
    OffloadingConnectorScheduler scans them: every chunk up to the first
    miss, again at the next step while any is pending): the final
    results in order, up to the first miss."""
    ctx = ReqContext(req_id=req)
    mgr.on_new_request(ctx)

    def scan():
        results = []
        for k in keys:
            r = mgr.lookup(k, ctx)
            results.append(r)
            if r is LookupResult.MISS:
                break
        if any(r in (LookupResult.RETRY, LookupResult.HIT_PENDING)
               for r in results):
            mgr.on_schedule_end(END)
            return None
        return results
    return ctx, until("lookups resolve", scan)


def check_loaded(mgr, tier, ctx, keys):
    spec = mgr.prepare_load(keys, ctx)
    view = np.asarray(mgr.primary_tier.get_kv_memoryview()).view(np.uint8)
    lay = tier._layouts[0]
    n = lay.slice_bytes * lay.copies
    for k, c in zip(keys, spec.chunk_ids):
        got = view[int(c)][:n]
        assert np.array_equal(got, pattern(k, view.shape[1])[:n]), \
            "chunk %s differs" % k.hex()
    mgr.complete_load(keys, ctx)
    return [int(c) for c in spec.chunk_ids]


KEYS = keys_of(1, 8)


@case
def t_store_load():
    a, ta = engine("a")
    assert ta.block_size_bytes >= TP * BLOCK
    store(a, ta, KEYS)
    assert ta.stats["stores"] >= 1 and ta.stats["store_failures"] == 0, \
        ta.stats
    step("stored %d chunks of %d bytes (%d objects)" % (
        len(KEYS), TP * BLOCK, len(KEYS) * TP))
    b, tb = engine("b")
    # Other chunks first, so the loads land in other slots.
    store(b, tb, keys_of(2, 5), req="other")
    ctx, res = lookup_all(b, KEYS, "r1")
    assert res == [LookupResult.HIT] * len(KEYS), res
    slots = check_loaded(b, tb, ctx, KEYS)
    assert tb.stats["loads"] >= 1 and tb.stats["load_failures"] == 0
    step("loaded back byte-exact into slots %s" % slots)
    b.on_request_finished(ctx)


@case
def t_leading_hits():
    """A chunk gone from the node: the tier reports the chunks before it
    as hits and everything from it on as misses."""
    c, tc = engine("c")
    for k in tc._layouts[0].keys(KEYS[5][:-4]):
        assert tc._clients[0].remove(k) == dfkv.OK
    ctx, res = lookup_all(c, KEYS, "r2")
    assert res == [LookupResult.HIT] * 5 + [LookupResult.MISS], res
    # KEYS[6:] are on the node, but behind a miss: misses too.
    assert all(tc._state.get(k) is False for k in KEYS[6:]), tc._state
    c.on_request_finished(ctx)
    ctx, res = lookup_all(c, keys_of(9, 3), "r3")
    assert res == [LookupResult.MISS], res
    c.on_request_finished(ctx)
    step("5 leading hits, then misses; unknown chunks miss")


@case
def t_other_revision():
    """A second engine of the model name at another revision (vLLM's
    --revision, the tier's model_revision) is another namespace: nothing
    hits.  With both revisions cached and none given the tier cannot tell
    which one vLLM serves: it refuses to start, naming the setting."""
    HUB.set_main(REV2)
    try:
        try:
            engine("d0")
            raise AssertionError("the tier guessed between two revisions")
        except Exception as e:  # noqa: BLE001  (vLLM may wrap it)
            assert "model_revision" in str(e), e
        d, td = engine("d", model_revision=REV2)
        assert td._layouts[0].revision == REV2
        ctx, res = lookup_all(d, KEYS[:1], "r4")
        assert res == [LookupResult.MISS], res
        d.on_request_finished(ctx)
        e, te = engine("d1", model_revision=REV1)
        ctx, res = lookup_all(e, KEYS[:1], "r5")
        assert res == [LookupResult.HIT], res
        e.on_request_finished(ctx)
    finally:
        HUB.drop(REV2)
        HUB.set_main(REV1)
    step("revision %s misses what %s stored; none given: refused" % (
        REV2[:8], REV1[:8]))


@case
def t_tier_keys():
    """The entry's locality is the tier's; a misspelt key is named."""
    _, t = engine("loc", locality="REMOTE")
    assert t.locality is not None and t.locality.value == "REMOTE", \
        t.locality
    for bad, word in (({"localty": "REMOTE"}, "localty"),
                      ({"locality": "FAR"}, "FAR")):
        try:
            engine("bad", **bad)
            raise AssertionError("accepted %s" % bad)
        except Exception as e:  # noqa: BLE001  (vLLM may wrap it)
            assert word in str(e), e
    step("locality REMOTE applied; a misspelt key and value refused")


def refused(name, **tier_settings):
    """The message of the error that refuses an engine with
    tier_settings."""
    try:
        engine(name, **tier_settings)
    except Exception as e:  # noqa: BLE001  (vLLM may wrap it)
        return str(e)
    raise AssertionError("the tier started with %s" % tier_settings)


@case
def t_weights():
    """The weights' quantization and LoRA adapters, which vLLM does not
    hand its tiers, are the entry's: two engines differing only in
    quantization, or only in an adapter's revision, share no block (and
    an unquantized one none of the quantized one's); an entry without
    either key is refused naming it, and a quantized checkpoint refuses
    "none".  The start-up line names both."""
    with logged(dv.__name__) as lines:
        for i, (what, one, other) in enumerate((
                ("quantization", dict(quantization="fp8"),
                 dict(quantization="awq")),
                ("a LoRA revision", dict(lora="sql@r1,chat@c1"),
                 dict(lora="chat@c1,sql@r2")))):
            keys = keys_of(6 + i, 2)
            w, tw = engine("w%d" % i, **one)
            store(w, tw, keys)
            for name, settings in (("other", other), ("plain", {})):
                x, _ = engine("w%d%s" % (i, name), **settings)
                ctx, res = lookup_all(x, keys, "w%d%s" % (i, name))
                assert res == [LookupResult.MISS], (what, name, res)
                x.on_request_finished(ctx)
            y, ty = engine("w%dsame" % i, **one)
            ctx, res = lookup_all(y, keys, "w%dsame" % i)
            assert res == [LookupResult.HIT] * 2, (what, res)
            check_loaded(y, ty, ctx, keys)
            y.on_request_finished(ctx)
            step("%s: another misses, the same hits" % what)
    assert any("quantization=fp8" in m and "lora=none" in m for m in lines)
    assert any("lora=chat@c1,sql@r1" in m for m in lines), lines
    for key in ("quantization", "lora"):
        msg = refused("w-no-" + key, **{key: None})
        assert "set '%s'" % key in msg, msg
    assert "'lora' entry" in refused("w-bad", lora="sql")
    HUB.set_main(REV1, {"model_type": "llama", "quantization_config":
                        {"quant_method": "fp8"}})
    try:
        msg = refused("w-ckpt")
        assert "'quantization'" in msg and "fp8" in msg, msg
        engine("w-ckpt-fp8", quantization="fp8")
    finally:
        HUB.set_main(REV1)
    step("a missing key, a bare adapter, none for a quantized checkpoint: "
         "refused")


@case
def t_node_killed():
    """The node goes away with a store batch in flight: the job ends
    (failed or not), lookups miss, no call raises; a node brought back
    serves the next stores and loads."""
    e, te = engine("e")
    keys = keys_of(3, 32)
    ctx = ReqContext(req_id="k")
    e.on_new_request(ctx)
    out = e.prepare_store(keys, ctx)
    e.complete_store(keys, ctx)     # the tier's batch is submitted here
    node_del("cn")
    settle(e)
    e.on_request_finished(ctx)
    step("store batch with the node gone: %s" % te.stats)
    ctx, res = lookup_all(e, keys_of(1, 2), "k2")
    assert res == [LookupResult.MISS], res
    e.on_request_finished(ctx)
    node_add("cn")
    f, tf = engine("f")

    def stored():
        store(f, tf, keys_of(4, 4), req="again%d" % tf.stats["stores"])
        return tf.stats["store_failures"] < tf.stats["stores"]
    until("a store after the node is back", stored)
    g, tg = engine("g")
    ctx, res = lookup_all(g, keys_of(4, 4), "k3")
    assert res == [LookupResult.HIT] * 4, res
    check_loaded(g, tg, ctx, keys_of(4, 4))
    g.on_request_finished(ctx)
    assert out is not None
    step("node back: stores and loads again")


@case
def t_replicated():
    """vLLM's replicated (MLA) layout: one object per chunk, tp rank -1."""
    h, th = engine("h", replicated=True)
    lay = th._layouts[0]
    assert lay.copies == 1
    key = dfkv.key_parse(lay.keys(b"\x07" * 32)[0])
    assert key["tp"] == (TP, -1), key
    store(h, th, keys_of(5, 2))
    i, ti = engine("i", replicated=True)
    ctx, res = lookup_all(i, keys_of(5, 2), "m")
    assert res == [LookupResult.HIT] * 2, res
    check_loaded(i, ti, ctx, keys_of(5, 2))
    i.on_request_finished(ctx)
    step("replicated layout stored and loaded as one object per chunk")


@case
def t_prometheus():
    """prometheus_interval_s: the tier's client counters reach the
    engine's prometheus_client registry, under its prometheus_labels:
    the misses of a lookup of chunks never stored, exactly as the client
    counted them; and in multiprocess mode (PROMETHEUS_MULTIPROC_DIR, as
    vLLM's API server collects its processes) a client's misses of a
    node that is not there."""
    from prometheus_client import REGISTRY, CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector
    e, te = engine("p", prometheus_interval_s=3600,
                   prometheus_labels={"engine": "vllm-p"})
    ctx, res = lookup_all(e, keys_of(9, 3), "p")
    assert res == [LookupResult.MISS], res
    e.on_request_finished(ctx)
    absent = sum(c.misses()["absent"] for c in te._clients.values())
    assert absent > 0
    _engines.remove(e)
    e.shutdown()        # the client's close copies its counters last
    got = REGISTRY.get_sample_value("dfkv_client_misses_total",
                                    {"cause": "absent", "engine": "vllm-p"})
    assert got == absent, (got, absent)
    step("%d absent misses in the engine's registry" % absent)
    with tempfile.TemporaryDirectory() as mp:
        child = (
            "import dfkv, dfkv.prometheus as p\n"
            "c = dfkv.Client('gone=127.0.0.1:1', b'\\x01' * 32, "
            "transport='tcp', connect_timeout_ms=1000)\n"
            "p.export(c, 3600, rank='0')\n"
            "assert c.get(b'k') == (dfkv.NOT_FOUND, None)\n"
            "c.close()\n")
        subprocess.run([sys.executable, "-c", child], check=True,
                       env=dict(os.environ, PROMETHEUS_MULTIPROC_DIR=mp),
                       timeout=120)
        reg = CollectorRegistry()
        MultiProcessCollector(reg, path=mp)
        got = reg.get_sample_value("dfkv_client_misses_total",
                                   {"cause": "unavailable", "rank": "0"})
    assert got == 1, got
    step("another process's unavailable miss through the multiprocess "
         "files")


def _shutdown():
    for m in _engines:
        m.shutdown()


if __name__ == "__main__":
    main(_shutdown)
