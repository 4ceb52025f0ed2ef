#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The SGLang HiCache connector against dfkv.ko nodes, through SGLang's
own StorageBackendFactory with the dynamic backend config of
Documentation/connectors.md, over SGLang's real MHA host pool
(MHATokenToKVPoolHost, page_first, on CPU): pages stored from the pool
load back byte-exact into other slots, batch_exists reports the leading
hits, misses stay misses, a node deleted mid-batch turns its pages into
misses and the backend recovers when it is back, another revision's
namespace misses everything, and so does another quantization's or LoRA
revision's (a missing quantization or lora setting is refused), control
settings do not change identity,
MHA head shards do not share pages and MLA ranks do.  Run by
selftests/connectors/run with venv-sglang's python
(tools/engines/setup-venvs)."""

import hashlib
import threading

import torch
from sglang.srt.mem_cache.device_pool_info import (KVBufferLayout,
                                                   KVBuffers, MHABufferInfo,
                                                   MLABufferInfo)
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost
from sglang.srt.mem_cache.pool_host.mla import MLATokenToKVPoolHost
from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory

import enginetest
from enginetest import case

from dfkv.connectors.sglang_hicache import DfkvHiCacheStorage

LAYERS, HEADS, DIM, PAGE, DEV_TOKENS = 4, 2, 64, 16, 256
NPAGES = 24
# The extra config of Documentation/connectors.md, at the test's nodes;
# no server process publishes its --revision, so it comes as a setting.
EXTRA = dict(enginetest.doc_json("sglang-launch-server"),
             members=enginetest.MEMBERS, model_revision="rev-a")


def host_pool(layout="page_first", pages=2 * NPAGES):
    """SGLang's MHA host pool for a small CPU model (bfloat16), of
    `pages` pages."""
    cpu = torch.device("cpu")
    k = tuple(torch.zeros(DEV_TOKENS, HEADS, DIM, dtype=torch.bfloat16)
              for _ in range(LAYERS))
    v = tuple(torch.zeros(DEV_TOKENS, HEADS, DIM, dtype=torch.bfloat16)
              for _ in range(LAYERS))
    ptrs = [torch.tensor([t.data_ptr() for t in x], dtype=torch.uint64)
            for x in (k, v)]
    info = MHABufferInfo(
        buffers=KVBuffers(k=k, v=v, k_data_ptrs=ptrs[0], v_data_ptrs=ptrs[1],
                          layout=KVBufferLayout.NHD),
        page_size=PAGE, head_num=HEADS, head_dim=DIM, v_head_dim=DIM,
        dtype=torch.bfloat16, device=cpu)
    return MHATokenToKVPoolHost(info, 0, 0, PAGE, layout, pin_memory=False,
                                device="cpu",
                                device_capacity_tokens=DEV_TOKENS,
                                start_layer=0, end_layer=LAYERS,
                                host_token_capacity=pages * PAGE)


def mla_pool():
    """SGLang's MLA host pool (latent 64 + rope 16, bfloat16) on CPU."""
    rows = tuple(torch.zeros(DEV_TOKENS, 1, 80, dtype=torch.bfloat16)
                 for _ in range(LAYERS))
    info = MLABufferInfo(
        buffers=rows, data_ptrs=torch.tensor([r.data_ptr() for r in rows],
                                             dtype=torch.uint64),
        layer_indices=tuple(range(LAYERS)), device_layer_num=LAYERS,
        page_size=PAGE, kv_lora_rank=64, qk_rope_head_dim=16,
        kv_cache_dim=80, dtype=torch.bfloat16, device=torch.device("cpu"))
    return MLATokenToKVPoolHost(info, 0, 0, PAGE, "page_first",
                                pin_memory=False, device="cpu",
                                device_capacity_tokens=DEV_TOKENS,
                                start_layer=0, end_layer=LAYERS,
                                target_layer_num=LAYERS,
                                host_token_capacity=2 * NPAGES * PAGE)


def storage_config(extra=None, tp_rank=0, tp_size=1, mla=False):
    return HiCacheStorageConfig(
        tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1,
        attn_cp_rank=0, attn_cp_size=1, is_mla_model=mla,
        enable_storage_metrics=False, is_page_first_layout=True,
        model_name="org/tiny-llama", extra_config=dict(extra or EXTRA))


def backend(pool, **kw):
    """The backend as SGLang's cache controller attaches it."""
    b = StorageBackendFactory.create_backend(
        "dynamic", storage_config(**kw), pool)
    b.register_mem_pool_host(pool)
    return b


POOL = host_pool()
# Page keys as SGLang chains them: hex SHA-256 of the page's tokens and
# the previous page's key.
KEYS, prev = [], b""
for i in range(NPAGES):
    prev = hashlib.sha256(prev + b"tokens of page %d" % i).digest()
    KEYS.append(prev.hex())
MISSING = hashlib.sha256(b"never stored").hexdigest()
SRC = torch.arange(0, NPAGES * PAGE)            # slots of pages 0..N-1
DST = torch.arange(NPAGES * PAGE, 2 * NPAGES * PAGE)


def page_bytes(tokens):
    """The bytes of the pool's K and V at tokens (page_first)."""
    kv = POOL.kv_buffer
    return kv[:, tokens].contiguous().view(torch.uint8).flatten().tolist()


def fill():
    g = torch.Generator().manual_seed(7)
    raw = POOL.kv_buffer.view(torch.uint8)
    raw[:, SRC] = torch.randint(0, 256, raw[:, SRC].shape, dtype=torch.uint8,
                                generator=g)
    raw[:, DST] = 0


fill()
B = backend(POOL)


@case
def loaded_by_the_factory():
    assert type(B) is DfkvHiCacheStorage, type(B)
    # The docs' extra config selects the cache controller's zero-copy
    # calls (batch_get_v1 / batch_set_v1), the ones these cases use.
    assert B.sc.extra_config.get("interface_v1"), B.sc.extra_config
    assert B.fields["layout"] == "page_first" and \
        B.fields["regions"] == f"{LAYERS * PAGE * HEADS * DIM * 2}," \
        f"{LAYERS * PAGE * HEADS * DIM * 2}", B.fields


@case
def store_and_load_byte_exact():
    assert B.batch_set_v1(KEYS, SRC) == [True] * NPAGES
    assert B.batch_get_v1(KEYS, DST) == [True] * NPAGES
    assert page_bytes(DST) == page_bytes(SRC)


@case
def leading_hits():
    assert B.batch_exists(KEYS) == NPAGES
    assert B.batch_exists(KEYS[:5] + [MISSING] + KEYS[5:]) == 5
    assert B.batch_exists([MISSING] + KEYS) == 0
    assert B.batch_exists([]) == 0


@case
def leading_hits_are_one_probe():
    before = {op: enginetest.client_ops(B.client, op)
              for op in ("exist", "get", "probe", "lease")}
    assert B.batch_exists(KEYS) == NPAGES
    after = {op: enginetest.client_ops(B.client, op) for op in before}
    assert after["exist"] == before["exist"], after
    assert after["get"] == before["get"], after
    assert after["lease"] == before["lease"], after
    # One PROBE per node holding some of the pages, not one per page.
    assert 1 <= after["probe"] - before["probe"] <= 2, (before, after)


@case
def misses():
    POOL.kv_buffer.view(torch.uint8)[:, DST[:PAGE]] = 0
    assert B.batch_get_v1([MISSING], DST[:PAGE]) == [False]
    assert set(page_bytes(DST[:PAGE])) == {0}
    assert not B.exists(MISSING) and B.exists(KEYS[0])


@case
def another_revision_misses_everything():
    extra = dict(EXTRA, model_revision="rev-b")
    other = backend(POOL, extra=extra)
    assert other.ns != B.ns
    assert other.batch_exists(KEYS) == 0
    assert other.batch_get_v1(KEYS[:4], DST[:4 * PAGE]) == [False] * 4
    other.close()


@case
def quantization_and_lora_revision_are_namespaces():
    """The weights' quantization and LoRA adapters are settings (a server
    also publishes --quantization and --enable-lora, checked against
    them): backends differing only in quantization, or only in an
    adapter's revision, share no page, nor does one with neither; the
    start-up line names both; without either key the backend is
    refused, naming it."""
    one = dict(EXTRA, quantization="fp8", lora="sql@r1")
    keys = [hashlib.sha256(b"weights page %d" % i).hexdigest()
            for i in range(2)]
    with enginetest.logged(DfkvHiCacheStorage.__module__) as lines:
        w = backend(POOL, extra=one)
        assert w.batch_set_v1(keys, SRC[:2 * PAGE]) == [True, True]
        for other in (dict(one, quantization="awq"),
                      dict(one, lora="sql@r2"), EXTRA):
            o = backend(POOL, extra=other)
            assert o.ns != w.ns and o.batch_exists(keys) == 0, other
            o.close()
        same = backend(POOL, extra=one)
        assert same.batch_exists(keys) == 2
        same.close()
        w.close()
    assert any("quantization=fp8" in m and "lora=sql@r1" in m
               for m in lines), lines
    for key in ("quantization", "lora"):
        try:
            backend(POOL, extra={k: v for k, v in EXTRA.items() if k != key})
        except Exception as e:  # noqa: BLE001  (SGLang may wrap it)
            assert "set '%s'" % key in str(e), e
        else:
            raise AssertionError("a backend without %s" % key)


@case
def control_settings_keep_identity():
    extra = dict(EXTRA, transport="auto", io_timeout_ms=9000,
                 conns_per_peer=2, connect_timeout_ms=500)
    same = backend(POOL, extra=extra)
    assert same.ns == B.ns
    assert same.batch_exists(KEYS) == NPAGES
    same.close()


@case
def head_shards_do_not_share_mla_ranks_do():
    r1 = backend(POOL, tp_rank=1, tp_size=2)
    r0 = backend(POOL, tp_rank=0, tp_size=2)
    assert r1.batch_set_v1(KEYS[:2], SRC[:2 * PAGE]) == [True, True]
    assert r0.batch_exists(KEYS[:2]) == 0
    m0 = backend(POOL, tp_rank=0, tp_size=2, mla=True)
    m1 = backend(POOL, tp_rank=1, tp_size=2, mla=True)
    assert m0.batch_set_v1(KEYS[:2], SRC[:2 * PAGE]) == [True, True]
    assert m1.batch_exists(KEYS[:2]) == 2
    for b in (r0, r1, m0, m1):
        b.close()


@case
def mla_pool_ranks_share_pages():
    pool = mla_pool()
    raw = pool.kv_buffer.view(torch.uint8)
    raw[SRC] = torch.randint(0, 256, raw[SRC].shape, dtype=torch.uint8)
    raw[DST] = 0
    writer = backend(pool, tp_rank=0, tp_size=2, mla=True)
    reader = backend(pool, tp_rank=1, tp_size=2, mla=True)
    assert writer.fields["kind"] == "mla" and writer.ns == reader.ns
    assert writer.ns != B.ns
    hs = [hashlib.sha256(b"mla %d" % i).hexdigest() for i in range(8)]
    assert writer.batch_set_v1(hs, SRC[:8 * PAGE]) == [True] * 8
    assert reader.batch_exists(hs) == 8
    assert reader.batch_get_v1(hs, DST[:8 * PAGE]) == [True] * 8
    assert torch.equal(raw[DST[:8 * PAGE]], raw[SRC[:8 * PAGE]])
    writer.close()
    reader.close()


@case
def unsupported_paths_raise():
    for call in (lambda: B.batch_get_v2([]), lambda: B.batch_set_v2([]),
                 lambda: B.batch_exists_v2(KEYS)):
        try:
            call()
        except NotImplementedError:
            continue
        raise AssertionError("an unsupported path returned")
    lf = host_pool("layer_first")
    try:
        backend(lf)
    except NotImplementedError:
        return
    raise AssertionError("a layer_first pool was accepted")


@case
def node_deleted_mid_batch_then_recovery():
    victim = "kv-b"
    on_victim = [B.client.locate(B.key(k))[0] == victim for k in KEYS]
    assert any(on_victim) and not all(on_victim), on_victim
    first, stop, rounds, errors = threading.Event(), threading.Event(), [], []

    def reader():
        try:
            while not stop.is_set():
                rounds.append(B.batch_get_v1(KEYS, DST))
                first.set()
        except Exception as e:  # noqa: BLE001  (the test reports it)
            errors.append(e)
            first.set()
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        first.wait(60)
        enginetest.node_del(victim)
        n = len(rounds)
        enginetest.until("reads after the delete",
                         lambda: len(rounds) >= n + 2 or errors)
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors
    # Whatever a round loaded is the stored bytes; after the delete the
    # victim's pages are misses and the others still load.
    assert rounds[-1] == [not v for v in on_victim], rounds[-1]
    assert page_bytes(DST[:PAGE]) == page_bytes(SRC[:PAGE]) or on_victim[0]
    enginetest.node_add(victim)

    def recovered():
        return all(B.batch_set_v1(KEYS, SRC)) and \
            B.batch_get_v1(KEYS, DST) == [True] * NPAGES
    enginetest.until("stores and loads after the node is back", recovered)
    assert page_bytes(DST) == page_bytes(SRC)
    assert B.batch_exists(KEYS) == NPAGES


if __name__ == "__main__":
    enginetest.main()
