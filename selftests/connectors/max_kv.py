#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The MAX connector against dfkv.ko nodes: MAX's own paged cache manager
(JengaKVCacheManager.create on the CPU device) builds it from the
kv_connector_config of Documentation/connectors.md once install() pointed
it at dfkv's factory, over the manager's own page buffers.  Offloaded
blocks load back byte-exact into other rows; lookup leases what load then
reads exactly once (node bytes_out); abandon releases the pins; a
superseded lookup loads nothing; the asynchronous handles carry their own
leases; probe pins nothing; a missing tenant fails model load; another
revision misses everything; control settings keep identity; replicated
units are one copy, sharded ones one per shard; a deleted node's blocks
are misses until it is back; and the touch walks are seen through
eviction order on an 8 MiB node (reverse for a full leaf, forward over
the window for a sliding one), and touch() returns at once on a node
that never answers.  Run by selftests/connectors/run with
venv-max's python (tools/engines/setup-venvs)."""

import hashlib
import os
import socket
import threading

import numpy as np
from max.driver import CPU, Buffer
from max.dtype import DType
from max.graph import DeviceRef
from max.nn.kv_cache import KVCacheGroupId
from max.nn.kv_cache.cache_params import KVCacheMemory, MHAKVCacheParams
from max.pipelines.kv_cache.config import KVConnectorConfig
from max.pipelines.kv_cache.kv_connector import KVLoadRefused
from max.pipelines.kv_cache.paged_kv_cache.jenga_cache_manager import \
    JengaKVCacheManager

import enginetest
from enginetest import case

import dfkv
from dfkv.connectors import max_kv

max_kv.install()
# The kv_connector_config of Documentation/connectors.md, at the test's
# nodes, its tenant (MODULAR_DKV_TENANT_ID there) in the config.
CONFIG = dict(enginetest.doc_json("max-serve"), tenant="team-a",
              members=enginetest.MEMBERS)
N = 24
SMALL = "kv-small=127.0.0.1:7533"


def params(cfg=None, **kw):
    p = dict(dtype=DType.bfloat16, head_dim=64, num_layers=2,
             devices=[DeviceRef.CPU()], n_kv_heads=2, page_size=16,
             enable_prefix_caching=True,
             kv_connector_config=KVConnectorConfig(**(cfg or CONFIG)))
    p.update(kw)
    return MHAKVCacheParams(**p)


def manager(cfg=None):
    return JengaKVCacheManager.create(params=params(cfg),
                                      available_bytes=8 << 20,
                                      max_batch_size=4, max_seq_len=1024)


def hashes(tag, n):
    return [hashlib.sha256(b"%s %d" % (tag, i)).digest() for i in range(n)]


def nodes_stat(what, names=("kv-a", "kv-b")):
    return sum(enginetest.stats(n)[what] for n in names)


M = manager()
C = M._connector
LEAF = next(iter(C.leaves))
ROWS = C._views[0][LEAF][0]             # the manager's page buffer (uint8)
PAGE = ROWS.shape[1]
H = hashes(b"seq", N)
SRC = list(range(1, N + 1))
DST = list(range(N + 1, 2 * N + 1))
rng = np.random.default_rng(5)
ROWS[SRC] = rng.integers(0, 256, (N, PAGE), dtype=np.uint8)
ROWS[DST] = 0


def rows(ids):
    return ROWS[ids].tobytes()


@case
def selected_by_the_config():
    assert type(C) is max_kv.DfkvConnector, type(C)
    assert C.name == "dfkv" and C.leaves[LEAF].is_full()
    assert M._replica_kv_memory[0][LEAF].buffers[0].shape == ROWS.shape


@case
def missing_tenant_fails_model_load():
    cfg = dict(CONFIG)
    del cfg["tenant"]
    os.environ.pop(max_kv.TENANT_ENV, None)
    try:
        manager(cfg)
    except ValueError as e:
        assert "tenant is required" in str(e), e
        return
    raise AssertionError("a config without a tenant loaded")


@case
def offload_and_load_byte_exact():
    t = C.offload({LEAF: SRC}, {LEAF: H})
    assert t.is_complete() and list(t.g0_blocks_per_leaf[LEAF]) == SRC
    # Already stored: a second offload takes nothing.
    assert list(C.offload({LEAF: SRC}, {LEAF: H}).g0_blocks_per_leaf[LEAF]) \
        == []
    assert C.lookup(H) == {LEAF: [True] * N}
    assert C.load({LEAF: DST}, {LEAF: H}).is_complete()
    assert rows(DST) == rows(SRC)


@case
def lookup_masks_and_misses():
    miss = hashes(b"missing", 1)
    assert C.lookup(H[:3] + miss + H[3:]) == {LEAF: [True] * 3 + [False] *
                                              (N - 2)}
    try:
        C.load({LEAF: DST[:4]}, {LEAF: H[:3] + miss})
    except KVLoadRefused:
        pass
    else:
        raise AssertionError("a block the lookup missed loaded")
    try:
        C.load({LEAF: DST[:1]}, {LEAF: H[:1]})
    except ValueError:
        return      # the refused load consumed the lease
    raise AssertionError("a second load ran without a lookup")


@case
def lease_then_load_reads_once():
    ROWS[DST] = 0
    out = nodes_stat("bytes_out")
    grants = nodes_stat("lease_grants")
    C.lookup(H)
    assert nodes_stat("bytes_out") == out      # the lease read nothing
    assert nodes_stat("lease_grants") > grants
    C.load({LEAF: DST}, {LEAF: H})
    assert nodes_stat("bytes_out") - out == N * PAGE
    assert rows(DST) == rows(SRC)
    assert nodes_stat("leases") == 0 and nodes_stat("pins") == 0


@case
def abandon_releases_pins():
    lk = C.start_lookup(H)
    assert C.lookup_masks(lk) == {LEAF: [True] * N}
    assert nodes_stat("pins") == N
    C.abandon_lookup(lk)
    assert nodes_stat("pins") == 0 and nodes_stat("leases") == 0
    C.abandon_lookup(lk)                        # a no-op now
    C.abandon_lookup(None)


@case
def superseded_lookup_loads_nothing():
    ROWS[DST] = 0
    C.lookup(H[:4])
    C.lookup(H[4:8])            # supersedes the first lease
    out = nodes_stat("bytes_out")
    try:
        C.load({LEAF: DST[:4]}, {LEAF: H[:4]})
    except KVLoadRefused:
        pass
    else:
        raise AssertionError("a superseded lookup loaded")
    assert nodes_stat("bytes_out") == out and not ROWS[DST].any()
    assert nodes_stat("pins") == 0


@case
def async_lookup_handles():
    assert C.defers_lookup()
    a, b = C.start_lookup(H[:12]), C.start_lookup(H[12:])
    C.lookup(H[:2])             # the slot lease leaves handles alone
    C.abandon_lookup(C._prepared.get(0))
    C.load_lookup(b, {LEAF: DST[12:]}, {LEAF: H[12:]})
    C.load_lookup(a, {LEAF: DST[:12]}, {LEAF: H[:12]})
    assert rows(DST) == rows(SRC)
    try:
        C.load_lookup(a, {LEAF: DST[:12]}, {LEAF: H[:12]})
    except KVLoadRefused:
        pass
    else:
        raise AssertionError("a handle loaded twice")
    assert nodes_stat("pins") == 0


@case
def probe_pins_nothing():
    miss = hashes(b"missing", 1)
    grants = nodes_stat("lease_grants")
    assert C.probe(H[:5] + miss + H[5:], [0, 1]) == \
        [{LEAF: [True] * 5 + [False] * (N - 4)}] * 2
    assert nodes_stat("lease_grants") == grants and nodes_stat("pins") == 0


@case
def another_revision_misses_everything():
    other = manager(dict(CONFIG, model_revision="rev-b"))._connector
    assert other.ns[LEAF] != C.ns[LEAF]
    assert other.lookup(H) == {LEAF: [False] * N}
    other.shutdown()


@case
def control_settings_keep_identity():
    same = manager(dict(CONFIG, transport="auto", io_timeout_ms=9000,
                        conns_per_peer=2))._connector
    assert same.ns == C.ns
    assert same.probe(H, [0]) == [{LEAF: [True] * N}]
    same.shutdown()


def direct(replicated, shards=2, members=None, group=None, pages=64,
           page_bytes=4096, settings=None, **kw):
    """A DfkvConnector over CPU buffers shaped like MAX's KVCacheMemory;
    settings are added to the kv_connector_config, kw to the params."""
    bufs = [Buffer.zeros(shape=(pages, page_bytes), dtype=DType.uint8,
                         device=CPU()) for _ in range(shards)]
    mem = KVCacheMemory(replicated=replicated, buffers=bufs)
    g = group or KVCacheGroupId("full")
    p = params(**kw)
    cfg = KVConnectorConfig(**dict(CONFIG, **(settings or {}),
                                   members=members or enginetest.MEMBERS))
    return max_kv.DfkvConnector({"leaf": g}, [{"leaf": mem}], p, cfg)


@case
def replicated_and_sharded_units():
    hs = hashes(b"units", 4)
    for replicated, copies in ((True, 1), (False, 2)):
        c = direct(replicated)
        v = c._views[0]["leaf"]
        v[0][:4] = rng.integers(0, 256, (4, 4096), dtype=np.uint8)
        v[1][:4] = v[0][:4] if replicated else \
            rng.integers(0, 256, (4, 4096), dtype=np.uint8)
        objects = nodes_stat("objects")
        c.offload({"leaf": [0, 1, 2, 3]}, {"leaf": hs})
        assert nodes_stat("objects") - objects == 4 * copies
        assert c.lookup(hs) == {"leaf": [True] * 4}
        c.load({"leaf": [10, 11, 12, 13]}, {"leaf": hs})
        for s in range(2):
            assert v[s][10:14].tobytes() == v[s][:4].tobytes(), s
        c.shutdown()
        hs = hashes(b"units sharded", 4)


@case
def node_deleted_then_recovery():
    victim = "kv-b"
    on_victim = [C._clients[LEAF].locate(k)[0] == victim
                 for k in C._keys(LEAF, H)]
    assert any(on_victim) and not all(on_victim)
    lead = on_victim.index(True)
    enginetest.node_del(victim)
    assert C.lookup(H) == {LEAF: [i < lead for i in range(N)]}
    ROWS[DST] = 0
    C.load({LEAF: DST[:lead]}, {LEAF: H[:lead]})
    assert rows(DST[:lead]) == rows(SRC[:lead])
    enginetest.node_add(victim)

    def back():
        C.offload({LEAF: SRC}, {LEAF: H})
        return C.lookup(H) == {LEAF: [True] * N}
    enginetest.until("every block stored again", back)
    C.load({LEAF: DST}, {LEAF: H})
    assert rows(DST) == rows(SRC)


WALK, WALK_LEN = 32, 256 << 10


def small_node_connector(group):
    """A connector on a fresh 8 MiB node: 16 extents of 512 KiB, two
    256 KiB blocks each, so it holds exactly WALK blocks (as
    dfkv_ioctl's touch walk tests)."""
    try:
        enginetest.node_del("kv-small")
    except Exception:  # noqa: BLE001  (not there yet)
        pass
    enginetest.MEMBERS += "," + SMALL if SMALL not in enginetest.MEMBERS else ""
    enginetest.node_add("kv-small", ram="8M")
    # 2 layers x K,V x 16 tokens x 2 heads x 1024 x bfloat16 = 256 KiB.
    return direct(False, shards=1, members=SMALL, group=group, pages=80,
                  page_bytes=WALK_LEN, head_dim=1024)


def survivors(c, hs):
    st, lens = c._clients["leaf"].probe(c._keys("leaf", hs))
    assert st == dfkv.OK
    return [i for i, n in enumerate(lens) if n]


def touched(c, hs):
    """touch(hs), then poll until the walk is done (touch itself returns
    at once)."""
    c.touch(hs)

    def done():
        c.poll_transfers()
        return c.pending_touches() == 0
    enginetest.until("the touch walk done", done)


@case
def touch_returns_at_once_on_a_hung_node():
    """A node that accepts connections and never answers: touch() (and
    poll_transfers) return at once, though the client's timeout is long;
    shutdown cancels the walk that never ends."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    held = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                held.append(ls.accept()[0])
            except OSError:
                return
    threading.Thread(target=accept, daemon=True).start()
    c = direct(False, shards=1, settings={"io_timeout_ms": 30000},
               members="hung=127.0.0.1:%d" % ls.getsockname()[1])
    returned = threading.Event()

    def calls():
        c.touch(hashes(b"hung", 8))
        c.poll_transfers()
        returned.set()
    threading.Thread(target=calls, daemon=True).start()
    assert returned.wait(10), "touch() waited on the hung node"
    assert c.pending_touches() == 1
    c.shutdown()
    stop.set()
    ls.close()
    for s in held:
        s.close()
    enginetest.step("touch and poll_transfers returned; the walk was cancelled")


@case
def touch_order_through_eviction():
    # Full attention: the whole sequence walked in reverse, so its first
    # block (the shared prefix) ends most recently used and the last goes.
    c = small_node_connector(KVCacheGroupId("full"))
    hs = hashes(b"walk full", WALK + 1)
    c.offload({"leaf": list(range(WALK))}, {"leaf": hs[:WALK]})
    assert enginetest.stats("kv-small")["evictions"] == 0
    touched(c, hs[:WALK])
    c.offload({"leaf": [WALK]}, {"leaf": hs[WALK:]})
    assert enginetest.stats("kv-small")["evictions"] == 1
    assert survivors(c, hs[:WALK]) == list(range(WALK - 1))
    c.shutdown()
    # A sliding window of 8 blocks: touch() is handed the sequence up to
    # block 23 and refreshes blocks 16..23 only, walked forward.  25 more
    # blocks then evict the 16 before the window, the 8 after it (never
    # touched, in PUT order), and the window's first block.
    window = KVCacheGroupId("sliding_window", 8 * 16 + 1)
    c = small_node_connector(window)
    hs = hashes(b"walk swa", WALK + 25)
    c.offload({"leaf": list(range(WALK))}, {"leaf": hs[:WALK]})
    touched(c, hs[:24])
    c.offload({"leaf": list(range(WALK, WALK + 25))}, {"leaf": hs[WALK:]})
    assert survivors(c, hs[:WALK]) == list(range(17, 24)), \
        survivors(c, hs[:WALK])
    c.shutdown()
    enginetest.node_del("kv-small")


if __name__ == "__main__":
    enginetest.main()
