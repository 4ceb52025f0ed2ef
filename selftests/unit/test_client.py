#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The Python dfkv.Client (ctypes over libdfkv.so) against the in-test
epoch-6 nodes of fake_node.py on loopback: put/get (bytes and numpy-style
buffers), ranges, batches, probe/lease, TOUCH walks on the wire, routing,
the asynchronous batches (submit, reap on the eventfd, cancel, asyncio's
run, close with work outstanding), host pools, a dead node turning
reads into misses (synchronous and asynchronous), and no RDMA rail
counters without RDMA.  Prints TAP."""

import asyncio
import select
import sys
import threading

import dfkv
from fake_node import NS, cluster, stop
from unittap import run, test

NODES, MEMBERS, C = cluster()


@test
def put_get_bytes_and_buffers():
    assert C.put(b"k1", b"hello") == dfkv.OK
    assert C.get(b"k1") == (dfkv.OK, b"hello")
    out = bytearray(16)
    assert C.get(b"k1", out) == (dfkv.OK, 5) and out[:5] == b"hello"
    assert C.get(b"k1", bytearray(4)) == (dfkv.TOO_LARGE, 5)
    assert C.get(b"missing") == (dfkv.NOT_FOUND, None)
    assert C.put(b"k2", memoryview(bytearray(b"\x00\x01" * 1000))) == 0
    assert C.exist(b"k2") == (0, 2000)
    assert C.put(b"k3", b"") == dfkv.STATUS["INVALID"]


@test
def empty_key_fails_closed():
    assert C.put(b"", b"x") == dfkv.ERRORS["E_INVAL"]
    assert C.exist(b"")[0] == dfkv.ERRORS["E_INVAL"]


@test
def numpy_like_destination():
    try:
        import numpy as np
    except ImportError:
        arr = bytearray(64)
        view = memoryview(arr)
    else:
        arr = np.zeros(16, dtype=np.uint32)
        view = arr
    assert C.put(b"np", bytes(range(64))) == 0
    assert C.get(b"np", view) == (0, 64)
    assert bytes(memoryview(arr).cast("B")) == bytes(range(64))


@test
def ranges():
    C.put(b"r", bytes(range(100)))
    out = bytearray(100)
    assert C.get_range(b"r", 10, 5, out) == (0, 5, 100)
    assert out[:5] == bytes(range(10, 15))
    assert C.get_range(b"r", 100, 0, out) == (0, 0, 100)
    assert C.get_range(b"r", 101, 0, out)[0] == dfkv.STATUS["INVALID"]


@test
def batches():
    keys = [f"b{i}".encode() for i in range(200)]
    vals = [bytes([i % 256]) * (i + 1) for i in range(200)]
    assert C.put_batch(keys, vals) == [0] * 200
    outs = [bytearray(256) for _ in keys]
    res = C.get_batch(keys, outs)
    for i, (st, n) in enumerate(res):
        assert st == 0 and n == i + 1 and outs[i][:n] == vals[i]
    assert C.exist_batch(keys[:3]) == [(0, 1), (0, 2), (0, 3)]
    assert C.remove_batch(keys) == [0] * 200
    assert C.exist_batch(keys[:1]) == [(dfkv.NOT_FOUND, 0)]


@test
def probe_and_lease():
    for k in (b"p0", b"p1", b"p3"):
        C.put(k, k * 3)
    keys = [b"p0", b"p1", b"p2", b"p3"]
    assert C.probe(keys) == (0, [6, 6, 0, 6])
    assert C.touch(keys) == 0
    with C.lease(keys, ttl_ms=1000) as lease:
        assert lease.hits == 2 and lease.stored_lens == [6, 6]


@test
def routing_matches_ring():
    ring = dfkv.Ring([m.split("=")[0] for m in MEMBERS])
    for i in range(50):
        key = f"route-{i}".encode()
        name, tenant, oid = C.locate(key)
        assert oid == dfkv.object_id(NS, key)
        assert tenant == dfkv.tenant_hash(NS)
        assert ring.route(oid) == name


@test
def touch_walks_on_the_wire():
    for n in NODES:
        n.touches.clear()
    keys = [f"t{i}".encode() for i in range(12)]
    assert C.touch(keys) == 0
    fwd = sum(len(n.touches) for n in NODES)
    assert fwd >= 1 and all(t == 0 for n in NODES for t in n.touches)
    assert C.touch(keys, reverse=True) == 0
    walks = [t for n in NODES for t in n.touches]
    assert walks.count(1) == fwd and walks.count(0) == fwd
    b = C.submit_touch(keys, reverse=True)
    assert b.wait(5) and b.results == dfkv.OK
    assert [t for n in NODES for t in n.touches].count(1) == 2 * fwd
    assert C.reap() == [b]


@test
def async_put_get_exist_probe_lease():
    keys = [f"a{i}".encode() for i in range(500)]
    vals = [bytes([i % 251]) * (i % 37 + 1) for i in range(500)]
    # a single buffer, or a list of buffers (scatter-gather) per key
    bufs = [v if i % 2 else [v[:1], memoryview(v)[1:]]
            for i, v in enumerate(vals)]
    put = C.submit_put(keys, bufs)
    assert put.wait(10) and put.status == dfkv.OK
    assert put.results == [dfkv.OK] * 500
    outs = [bytearray(40) for _ in keys]
    get = C.submit_get(keys + [b"a-missing"], outs + [bytearray(8)])
    ex = C.submit_exist([keys[3], b"a-missing"])
    pr = C.submit_probe([keys[0], keys[1], b"a-missing", keys[2]])
    ls = C.submit_lease([keys[0], keys[1], b"a-missing"], ttl_ms=1000)
    got = []
    fd = C.fileno()
    while len(got) < 5:     # put is still to be reaped as well
        select.select([fd], [], [], 5)
        got += C.reap()
    assert {id(b) for b in got} == {id(b) for b in (put, get, ex, pr, ls)}
    assert C.reap() == []
    assert select.select([fd], [], [], 0)[0] == []
    res = get.results
    for i, v in enumerate(vals):
        assert res[i] == (dfkv.OK, len(v)) and outs[i][:len(v)] == v
    assert res[500] == (dfkv.NOT_FOUND, 0)
    assert ex.results == [dfkv.OK, dfkv.NOT_FOUND]
    assert pr.results == 2
    lease = ls.results
    assert lease.hits == 2 and lease.stored_lens == [len(vals[0]),
                                                     len(vals[1])]
    assert lease.release() == dfkv.OK


def refused(status, fn):
    """fn() raises DfkvError with status."""
    try:
        fn()
    except dfkv.DfkvError as e:
        assert e.status == status, e
        return
    raise AssertionError("accepted")


@test
def async_argument_errors_raise():
    inval = dfkv.ERRORS["E_INVAL"]
    refused(inval, lambda: C.submit_put([b"x"], []))
    refused(inval, lambda: C.submit_probe([]))
    refused(inval, lambda: C.submit_lease([b"x"], ttl_ms=1 << 31))
    b = C.submit_put([b"", b"ok-key"], [b"v", b"v"])
    assert b.wait(5) and b.results == [dfkv.ERRORS["E_INVAL"], dfkv.OK]
    assert C.reap() == [b]


@test
def async_cancel_what_was_not_sent():
    # the node holds every request; the first batch is longer than a
    # round of the completion thread (3 nodes x 2 connections x 16 in
    # flight, twice), so the later one is not taken before the cancel
    NODES[0].gate.clear()
    try:
        mine = [k for k in (f"c{i}".encode() for i in range(1500))
                if C.locate(k)[0] == "n0"]
        assert len(mine) > 300
        first = C.submit_exist(mine[:250])
        later = C.submit_put(mine[250:], [b"v"] * len(mine[250:]))
        later.cancel()
        assert not first.done
    finally:
        NODES[0].gate.set()
    assert later.wait(10) and first.wait(10)
    assert later.status == dfkv.CANCELLED
    assert set(later.results) == {dfkv.CANCELLED}
    assert set(first.results) == {dfkv.NOT_FOUND}
    assert sorted(map(id, C.reap())) == sorted((id(first), id(later)))
    assert C.exist(mine[260]) == (dfkv.NOT_FOUND, 0)


def releases_sent():
    """RELEASE requests C completed (dfkv_client_ops_total)."""
    return sum(int(line.rsplit(" ", 1)[1]) for line in C.stats().splitlines()
               if line.startswith('dfkv_client_ops_total{op="release",'))


@test
def async_release_returns_before_the_node_answers():
    # the node holds every request: submit_release returns with its
    # batch in flight and the handle let go of; once the node answers,
    # the RELEASE completes OK
    mine = [k for k in (f"rl{i}".encode() for i in range(200))
            if C.locate(k)[0] == "n0"][:3]
    for k in mine:
        assert C.put(k, b"v") == dfkv.OK
    lease = C.lease(mine)
    assert lease.hits == 3
    sent = releases_sent()
    NODES[0].gate.clear()
    try:
        b = lease.submit_release()
        assert not b.done and releases_sent() == sent
        assert lease.submit_release() is None and lease.release() == dfkv.OK
    finally:
        NODES[0].gate.set()
    assert b.wait(10) and b.status == dfkv.OK and b.results == dfkv.OK
    assert C.reap() == [b] and releases_sent() == sent + 1


@test
def async_run_from_asyncio():
    keys = [f"io{i}".encode() for i in range(64)]

    async def main():
        puts = [C.submit_put([k], [k * 4]) for k in keys]
        done = await asyncio.gather(*(C.run(b) for b in puts))
        assert [b.results for b in done] == [[dfkv.OK]] * len(keys)
        outs = [bytearray(16) for _ in keys]
        get = await C.run(C.submit_get(keys, outs))
        assert all(r == (dfkv.OK, len(k) * 4)
                   for r, k in zip(get.results, keys))
        assert outs[5][:12] == keys[5] * 4
        pr = await C.submit_probe(keys[:8])     # a Batch is awaitable
        return pr.results

    assert asyncio.run(main()) == 8
    assert C.reap() == []       # run() reaped what it awaited

    async def again():          # another loop: run() follows it
        return (await C.run(C.submit_exist(keys[:2]))).results

    assert asyncio.run(again()) == [dfkv.OK, dfkv.OK]
    assert C.reap() == []


@test
def host_pool_registration():
    pool = bytearray(1 << 20)
    C.register_memory(memoryview(pool)[:4096])
    C.register_memory(memoryview(pool)[100:200])    # inside: no-op
    C.register_memory(pool)                         # re-declared larger
    assert len(C._pools) == 1
    view = memoryview(pool)
    view[:5] = b"hello"
    assert C.put(b"pool-k", view[:5]) == dfkv.OK
    b = C.submit_get([b"pool-k"], [view[4096:4200]])
    assert b.wait(5) and b.results == [(dfkv.OK, 5)]
    assert pool[4096:4101] == b"hello"
    assert C.reap() == [b]
    C.unregister_memory(memoryview(pool)[100:200])  # inside: nothing
    C.unregister_memory(pool)
    assert not C._pools


@test
def async_close_with_work_outstanding():
    c = dfkv.Client(MEMBERS, NS, transport="tcp", io_timeout_ms=2000)
    for n in NODES:
        n.gate.clear()
    try:
        batches = [c.submit_exist([f"w{i}-{j}".encode() for j in range(50)])
                   for i in range(40)]
        threading.Timer(0.2, lambda: [n.gate.set() for n in NODES]).start()
        c.close()
    finally:
        for n in NODES:
            n.gate.set()
    for b in batches:
        assert b.done
        assert all(s in (dfkv.NOT_FOUND, dfkv.CANCELLED) for s in b.results)
    assert any(b.status == dfkv.CANCELLED for b in batches)


def peer_skips(c):
    """Requests c did not send because their member was cooling down."""
    for line in c.stats().splitlines():
        if line.startswith("dfkv_client_peer_skips_total "):
            return int(line.split()[1])
    raise AssertionError("no dfkv_client_peer_skips_total")


@test
def dead_node_is_a_miss():
    keys = [f"d{i}".encode() for i in range(30)]
    assert C.put_batch(keys, [b"v"] * 30) == [0] * 30
    victim = C.locate(keys[0])[0]
    mine = sum(C.locate(k)[0] == victim for k in keys)
    never = next(k for k in (f"nw{i}".encode() for i in range(100))
                 if C.locate(k)[0] != victim)
    before = C.misses()
    assert set(before) == {"unavailable", "auth", "absent"}
    assert C.get(never) == (dfkv.NOT_FOUND, None)
    assert C.misses()["absent"] == before["absent"] + 1
    NODES[int(victim[1:])].stop()
    skips = peer_skips(C)
    for k in keys:
        st, data = C.get(k, cap=8)
        if C.locate(k)[0] == victim:
            assert st == dfkv.NOT_FOUND and data is None
            assert C.put(k, b"v") == dfkv.ERRORS["E_UNAVAILABLE"]
        else:
            assert st == 0 and data == b"v"
    # the first request found the node gone and the requests right after
    # it were not sent (its cooldown): no request waits on a dead node
    assert peer_skips(C) > skips
    assert "dfkv_client_dropped_writes_total" in C.stats()
    # each GET routed to the dead node one miss of its cause
    after = C.misses()
    assert after["unavailable"] - before["unavailable"] == mine
    assert after["auth"] == before["auth"]
    assert after["absent"] == before["absent"] + 1
    # asynchronously: misses and dropped writes, never a hang
    outs = [bytearray(8) for _ in keys]
    get = C.submit_get(keys, outs)
    put = C.submit_put(keys, [b"w"] * len(keys))
    assert get.wait(10) and put.wait(10)
    for k, (st, n), ps in zip(keys, get.results, put.results):
        if C.locate(k)[0] == victim:
            assert st == dfkv.NOT_FOUND and n == 0
            assert ps == dfkv.ERRORS["E_UNAVAILABLE"]
        else:
            assert st == dfkv.OK and ps == dfkv.OK
    assert put.status == dfkv.ERRORS["E_UNAVAILABLE"]
    assert sorted(map(id, C.reap())) == sorted((id(get), id(put)))


@test
def no_rails_without_rdma():
    # the RDMA rail counters (Client.rails()) exist with RDMA only
    assert C.rails() == {}
    assert "rdma_rail" not in C.stats()


@test
def bad_members_raise():
    for bad in ("", "a=127.0.0.1:0", "a=1.2.3.4:1@0"):
        try:
            dfkv.Client(bad, NS, transport="tcp")
        except dfkv.DfkvError as e:
            assert e.status == dfkv.ERRORS["E_MEMBERS"]
        else:
            raise AssertionError(bad)


def main():
    rc = run()
    stop(NODES, C)
    return rc


if __name__ == "__main__":
    sys.exit(main())
