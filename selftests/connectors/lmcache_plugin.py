# SPDX-License-Identifier: GPL-2.0
"""LMCache: dfkv as a remote storage plugin, against a dfkv.ko node in the
test VM, from the host (selftests/connectors/run).

LMCache builds everything: LMCacheEngineConfig.from_file() reads the
docs' configuration (Documentation/connectors.md, its members pointed at
the test node and its CPU buffer shrunk for the VM), CreateStorageBackends()
makes the LocalCPUBackend and, through the plugin framework
(remote_storage_plugins), the RemoteBackend whose connector is
dfkv.connectors.lmcache's.  The test drives that RemoteBackend as
LMCache's storage manager does: puts of MemoryObjs from the CPU buffer,
batched_contains, batched_async_contains(pin=...), batched gets.
"""

import asyncio
import json
import subprocess
import sys
import os
import re
import threading

from enginetest import private_hub

_tmp = private_hub("dfkv-lmcache-")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import dfkv  # noqa: E402
from enginetest import (LISTEN_HOST, MEMBERS, REPO, HubCache, case,  # noqa
                        ctl, doc_block, logged, main, node_add, node_del,
                        step, until)
from lmcache.utils import CacheEngineKey  # noqa: E402
from lmcache.v1.config import LMCacheEngineConfig  # noqa: E402
from lmcache.v1.metadata import LMCacheMetadata  # noqa: E402
from lmcache.v1.storage_backend import CreateStorageBackends  # noqa: E402

from dfkv.connectors import lmcache as dl  # noqa: E402

MODEL = "acme/tiny-llama"
REV1, REV2 = "e5" * 20, "f6" * 20
HUB = HubCache(os.environ["HF_HUB_CACHE"], MODEL)
HUB.set_main(REV1)
CHUNK = 32
# (layers, K/V, chunk tokens, kv heads, head size): 64 KiB per fp16 chunk.
KV_SHAPE = (2, 2, CHUNK, 4, 32)
_stacks = []


def config_file(members=None, secret=None, revision=None, lease_ttl_ms=0,
                settings=None):
    """The docs' LMCache configuration, at the test node (or members),
    64 MiB of CPU buffer; with secret, the tenant's secret file; with
    revision, the model_revision setting; with lease_ttl_ms, that;
    settings (plugin setting: value) replace the docs' values, None
    removing one."""
    text = doc_block("lmcache-config")
    for k, v in (settings or {}).items():
        text = re.sub(r"\n *remote_storage_plugin\.dfkv\.%s:.*" % k, "", text)
        if v is not None:
            text += "\n  remote_storage_plugin.dfkv.%s: %s" % (k, v)
    text = re.sub(r"(remote_storage_plugin\.dfkv\.members:).*",
                  r"\1 " + (members or MEMBERS), text)
    if secret:
        text += "\n  remote_storage_plugin.dfkv.tenant_secret_file: " + secret
    if revision:
        text += "\n  remote_storage_plugin.dfkv.model_revision: " + revision
    if lease_ttl_ms:
        text += "\n  remote_storage_plugin.dfkv.lease_ttl_ms: %d" % \
            lease_ttl_ms
    text = re.sub(r"max_local_cpu_size:.*", "max_local_cpu_size: 0.0625",
                  text)
    path = os.path.join(_tmp, "lmcache-%d.yaml" % len(_stacks))
    with open(path, "w") as f:
        # extra_config closes the block: a short cooldown for the
        # node restart test.
        f.write(text + "\n  remote_storage_plugin.dfkv.cooldown_ms: 50\n")
    return path


def create_backends(worker=0, use_mla=False, **conf):
    """What LMCache's CreateStorageBackends makes for one worker, its
    metadata, its event loop and the loop's thread; conf goes to
    config_file()."""
    cfg = LMCacheEngineConfig.from_file(config_file(**conf))
    shape = (KV_SHAPE[0], 1, CHUNK, 1, 128) if use_mla else KV_SHAPE
    md = LMCacheMetadata(model_name=MODEL, world_size=2, local_world_size=2,
                         worker_id=worker, local_worker_id=worker,
                         kv_dtype=torch.float16, kv_shape=shape,
                         use_mla=use_mla, role="worker", chunk_size=CHUNK)
    loop = asyncio.new_event_loop()
    th = threading.Thread(target=loop.run_forever, daemon=True)
    th.start()
    return CreateStorageBackends(cfg, md, loop, dst_device="cpu"), md, loop, th


def stack(worker=0, use_mla=False, **conf):
    """LMCache's backends for one worker: (RemoteBackend, LocalCPUBackend,
    metadata, loop); conf goes to config_file()."""
    backends, md, loop, th = create_backends(worker, use_mla, **conf)
    remote = backends.get("RemoteBackend-dfkv")
    assert remote is not None and remote.connection is not None, backends
    conn = getattr(remote.connection, "_connector", remote.connection)
    assert isinstance(conn, dl.DfkvConnector), conn
    s = (remote, backends["LocalCPUBackend"], md, loop, conn)
    _stacks.append((s, th))
    return s


def keys_of(md, seed, n):
    return [CacheEngineKey(MODEL, md.world_size, md.worker_id,
                           (seed << 32) + i, torch.float16)
            for i in range(n)]


def fill(obj, key):
    g = torch.Generator().manual_seed(key.chunk_hash & 0x7fffffff)
    t = torch.randint(0, 256, (len(obj.byte_array),), dtype=torch.uint8,
                      generator=g)
    np.frombuffer(obj.byte_array, np.uint8)[:] = t.numpy()
    return bytes(obj.byte_array)


def submit(s, keys, objs, meanwhile=None):
    """LMCache's batched put of objs, waited for through its per-key
    completion callback (a batched put keeps no put_tasks); meanwhile()
    runs while it is in flight."""
    remote = s[0]
    done = set()
    remote.batched_submit_put_task(keys, objs, on_complete_callback=done.add)
    if meanwhile:
        meanwhile()
    for o in objs:
        o.ref_count_down()
    until("puts done", lambda: len(done) == len(keys))


def put(s, keys):
    _, cpu, md, _, _ = s
    objs, want = [], []
    for k in keys:
        o = cpu.allocate(md.get_shapes(), md.get_dtypes())
        assert o is not None, "CPU buffer full"
        want.append(fill(o, k))
        objs.append(o)
    submit(s, keys, objs)
    return want


def run(loop, coro):
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


@case
def t_store_load():
    s = stack()
    remote, cpu, md, loop, conn = s
    keys = keys_of(md, 1, 8)
    want = put(s, keys)
    assert remote.batched_contains(keys) == 8
    got = remote.batched_get_blocking(keys)
    assert [bytes(o.byte_array) for o in got] == want
    for o in got:
        o.ref_count_down()
    step("8 chunks of %d bytes stored and read back byte-exact" %
         len(want[0]))
    assert run(loop, remote.batched_async_contains("L1", keys, True)) == 8
    assert "L1" in conn._leases and conn._leases["L1"][0].hits == 8
    assert conn.held_leases() == 1
    got = run(loop, remote.batched_get_non_blocking("L1", keys))
    assert [bytes(o.byte_array) for o in got] == want
    assert "L1" not in conn._leases
    for o in got:
        o.ref_count_down()
    assert run(loop, remote.batched_async_contains("L2", keys, False)) == 8
    assert "L2" not in conn._leases
    assert conn.held_leases() == 0
    step("leased lookup then non-blocking get; unpinned lookup")


@case
def t_pinned_misses_hold_nothing():
    """Pinned lookups of absent chunks hold no handle; the handle of a
    hit that is never loaded goes at its TTL."""
    s = stack(lease_ttl_ms=300)
    remote, cpu, md, loop, conn = s
    absent = keys_of(md, 77, 4)
    for i in range(200):
        assert run(loop, remote.batched_async_contains(
            "miss-%d" % i, absent, True)) == 0
    assert conn.held_leases() == 0, conn.held_leases()
    keys = keys_of(md, 78, 2)
    put(s, keys)
    assert run(loop, remote.batched_async_contains("hit", keys, True)) == 2
    assert conn.held_leases() == 1
    until("the unread hit's handle goes at its TTL",
          lambda: conn.held_leases() == 0)
    step("200 pinned misses held nothing; an unread hit went at its TTL")


@case
def t_leading_hits():
    s = stack()
    remote, cpu, md, loop, _ = s
    keys = keys_of(md, 1, 8)
    assert remote.remove(keys[3])
    assert remote.batched_contains(keys) == 3
    assert run(loop, remote.batched_async_contains("L3", keys, True)) == 3
    got = run(loop, remote.batched_get_non_blocking("L3", keys))
    assert len(got) == 3
    for o in got:
        o.ref_count_down()
    assert remote.batched_contains(keys_of(md, 7, 4)) == 0
    assert remote.batched_get_blocking(keys_of(md, 7, 1)) == [None]
    step("3 leading hits before a removed chunk; unknown chunks miss")


@case
def t_other_revision():
    """Two revisions of the model cached (two engines on one host): the
    one given is served, and it misses what the other stored."""
    HUB.set_main(REV2)
    try:
        remote, cpu, md, loop, conn = stack(revision=REV2)
        assert conn.ident.revision == REV2
        assert remote.batched_contains(keys_of(md, 1, 3)) == 0
    finally:
        HUB.drop(REV2)
        HUB.set_main(REV1)
    step("revision %s misses what %s stored" % (REV2[:8], REV1[:8]))


@case
def t_weights():
    """LMCache's metadata names neither the weights' quantization nor the
    LoRA adapters: the settings do.  Workers differing only in
    quantization, or only in an adapter's revision, share no chunk;
    without either key the connector is refused (LMCache then runs
    without its remote backend, and its warning names the key)."""
    one = dict(quantization="fp8", lora="sql@r1")
    with logged(dl.__name__) as lines:
        w = stack(settings=one)
        put(w, keys_of(w[2], 11, 2))
        for other in (dict(one, quantization="awq"), dict(one, lora="sql@r2"),
                      {}):
            o = stack(settings=other)
            assert o[0].batched_contains(keys_of(o[2], 11, 2)) == 0, other
        same = stack(settings=one)
        assert same[0].batched_contains(keys_of(same[2], 11, 2)) == 2
    assert any("quantization=fp8" in m and "lora=sql@r1" in m
               for m in lines), lines
    step("another quantization, adapter revision or none: misses")
    for key in ("quantization", "lora"):
        with logged("lmcache.v1.storage_backend.remote_backend") as lines:
            made, _, loop, th = create_backends(settings={key: None})
        remote = made["RemoteBackend-dfkv"]
        try:
            assert remote.connection is None, key
            assert any("set '%s'" % key in m for m in lines), lines
        finally:
            remote.close()
            loop.call_soon_threadsafe(loop.stop)
            th.join()
    step("without quantization or lora: refused, naming the key")


@case
def t_mla():
    """MLA workers hold the same latent: what worker 0 stores, worker 1
    finds under the same (tp rank -1) key."""
    w0 = stack(0, use_mla=True)
    w1 = stack(1, use_mla=True)
    keys0 = keys_of(w0[2], 2, 4)
    want = put(w0, keys0)
    keys1 = keys_of(w1[2], 2, 4)
    assert dfkv.key_parse(w1[4].ident.key(keys1[0]))["tp"] == (2, -1)
    assert w1[0].batched_contains(keys1) == 4
    got = w1[0].batched_get_blocking(keys1)
    assert [bytes(o.byte_array) for o in got] == want
    for o in got:
        o.ref_count_down()
    # Non-MLA: distinct shards, distinct keys.
    a, b = stack(0), stack(1)
    ka, kb = keys_of(a[2], 1, 1)[0], keys_of(b[2], 1, 1)[0]
    assert a[4].ident.key(ka) != b[4].ident.key(kb)
    assert b[0].batched_contains([kb]) == 0
    step("MLA: worker 1 reads worker 0's chunks; TP shards stay apart")


@case
def t_node_killed():
    s = stack()
    remote, cpu, md, loop, _ = s
    keys = keys_of(md, 3, 32)
    objs = []
    for k in keys:
        o = cpu.allocate(md.get_shapes(), md.get_dtypes())
        fill(o, k)
        objs.append(o)
    submit(s, keys, objs, meanwhile=lambda: node_del("cn"))
    assert remote.batched_contains(keys_of(md, 1, 2)) == 0
    assert remote.batched_get_blocking(keys_of(md, 1, 1)) == [None]
    step("node gone mid-batch: the puts end, lookups and gets miss")
    node_add("cn")
    again = keys_of(md, 4, 4)

    def back():
        want = put(s, again)
        return remote.batched_contains(again) == 4 and want
    want = until("stores after the node is back", back)
    got = remote.batched_get_blocking(again)
    assert [bytes(o.byte_array) for o in got] == want
    for o in got:
        o.ref_count_down()
    step("node back: stores and loads again")


@case
def t_tenant_secret():
    """On a node that requires authentication, the plugin with the docs'
    tenant and its secret file (tenant_secret_file) stores and loads; the
    same configuration without the secret is refused (FORBIDDEN, counted
    by the node), which LMCache sees as misses."""
    name, port = "ca", "7533"
    secret = os.path.join(REPO, "build", "connectors", "acme.secret")
    os.makedirs(os.path.dirname(secret), exist_ok=True)
    if os.path.exists(secret):
        os.unlink(secret)
    ctl("node", "add", name, "--ram", "32M", "--auth", "required")
    try:
        ctl("listener", "add", name, LISTEN_HOST or "127.0.0.1",
            "--port", port)
        # The guest writes the secret into the repository, the same path
        # on both sides.
        ctl("tenant", "add", name, "--ns", "acme", "--generate-secret",
            secret)
        members = "%s=127.0.0.1:%s" % (name, port)
        s = stack(members=members, secret=secret)
        keys = keys_of(s[2], 9, 4)
        want = put(s, keys)
        assert s[0].batched_contains(keys) == 4
        got = s[0].batched_get_blocking(keys)
        assert [bytes(o.byte_array) for o in got] == want
        for o in got:
            o.ref_count_down()
        step("with the tenant's secret: 4 chunks stored and loaded")
        other = stack(members=members)
        put(other, keys_of(other[2], 10, 2))
        assert other[0].batched_contains(keys) == 0
        assert other[0].batched_get_blocking(keys[:1]) == [None]
        acme = json.loads(ctl("tenant", "list", name, "--json"))["tenants"]
        forbidden = sum(t["forbidden"] for t in acme)
        assert forbidden > 0, acme
        step("without it: refused (%d FORBIDDEN on the node), misses to "
             "LMCache" % forbidden)
    finally:
        ctl("node", "del", name)


@case
def t_lmcache_basic_check():
    """LMCache's own check tool (lmcache.v1.basic_check --mode
    test_remote) against the plugin: exists on unknown keys, puts, exists,
    gets compared with what was put."""
    path = config_file()
    with open(path, "a") as f:
        f.write('remote_url: "plugin://dfkv"\n')
    out = subprocess.run(
        [sys.executable, "-m", "lmcache.v1.basic_check", "--mode",
         "test_remote", "--num-keys", "8", "--model", MODEL],
        env=dict(os.environ, LMCACHE_CONFIG_FILE=path), capture_output=True,
        text=True, timeout=600).stdout
    rows = re.findall(r"^\| (EXISTS \(non-exist\)|PUT|EXISTS \(exist\)|GET) "
                      r".*\| +(\d+)/(\d+) \|", out, re.M)
    assert len(rows) == 4 and all(a == b == "8" for _, a, b in rows), out
    assert "Validation (content correct): 8/8 passed" in out, out
    step("LMCache's check tool: %s" % ", ".join(
        "%s %s/%s" % r for r in rows))


def close_all():
    for (remote, cpu, md, loop, conn), th in _stacks:
        remote.close()
        loop.call_soon_threadsafe(loop.stop)
        th.join()


if __name__ == "__main__":
    main(close_all)
