#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The Python dfkv.Client (ctypes over libdfkv.so) against small in-test
epoch-6 nodes on loopback: put/get (bytes and numpy-style buffers), ranges,
batches, probe/lease, routing, and a dead node turning reads into misses.
Prints TAP."""

import socket
import socketserver
import struct
import sys
import threading
import time
import traceback

import dfkv
from unittap import recv_exact

REQ = struct.Struct("<BB16sQQQQ")     # SPEC 2: 50-byte request prefix
RESP = struct.Struct("<BBQQ")         # 18-byte response prefix
assert REQ.size == 50 and RESP.size == 18


class Node(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.store, self.lock = {}, threading.Lock()
        self.socks = set()
        self.thread = threading.Thread(target=self.serve_forever,
                                       kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()

    def stop(self):
        """Stop like a dead host: the listener and every connection."""
        self.shutdown()
        self.server_close()
        with self.lock:
            for s in list(self.socks):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Handler(socketserver.BaseRequestHandler):
    def recv(self, n):
        return recv_exact(self.request, n)

    def reply(self, status, stored=0, data=b""):
        self.request.sendall(RESP.pack(6, status, stored, len(data)) + data)

    def handle(self):
        with self.server.lock:
            self.server.socks.add(self.request)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        st = self.server.store
        try:
            while True:
                ep, op, oid, tenant, off, ln, plen = REQ.unpack(
                    self.recv(50))
                if ep != 6 or plen > 1 << 20:
                    self.reply(4)
                    return
                payload = self.recv(plen) if plen else b""
                key = (tenant, oid)
                with self.server.lock:
                    if op == 1:
                        if not payload:
                            self.reply(4)
                            continue
                        st.setdefault(key, payload)
                        self.reply(0, len(st[key]))
                    elif op == 2:
                        v = st.get(key)
                        if v is None:
                            self.reply(1)
                        elif off > len(v):
                            self.reply(4, len(v))
                        else:
                            end = len(v) if not ln else min(len(v), off + ln)
                            self.reply(0, len(v), v[off:end])
                    elif op == 3:
                        v = st.get(key)
                        self.reply(0 if v is not None else 1,
                                   len(v) if v is not None else 0)
                    elif op == 9:
                        st.pop(key, None)
                        self.reply(0)
                    elif op in (10, 11, 12):
                        ks = [struct.unpack_from("<Q16s", payload, i)
                              for i in range(0, len(payload), 24)]
                        lens = [len(st.get(k, b"")) for k in ks]
                        if op == 10:
                            self.reply(0)
                        elif op == 11:
                            self.reply(0, 0, struct.pack(f"<{len(ks)}Q",
                                                         *lens))
                        else:
                            hits = 0
                            while hits < len(lens) and lens[hits]:
                                hits += 1
                            self.reply(0, 0, struct.pack(
                                f"<{hits + 1}Q", 7 if hits else 0,
                                *lens[:hits]))
                    elif op == 13:
                        self.reply(0)
                    else:
                        self.reply(7)
        except (EOFError, OSError):
            pass


results = []


def test(fn):
    results.append(fn)
    return fn


NS = dfkv.ns_build("acme", "m", "r", "lmcache/raw-v1", "bfloat16",
                   dfkv.layout_fingerprint(["k:1x2"]), 16, 2, "full")
NODES = [Node() for _ in range(3)]
MEMBERS = [f"n{i}=127.0.0.1:{n.server_address[1]}" for i, n in
           enumerate(NODES)]
C = dfkv.Client(MEMBERS, NS, transport="tcp", io_timeout_ms=2000,
                cooldown_ms=300)


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
def dead_node_is_a_miss():
    keys = [f"d{i}".encode() for i in range(30)]
    assert C.put_batch(keys, [b"v"] * 30) == [0] * 30
    victim = C.locate(keys[0])[0]
    NODES[int(victim[1:])].stop()
    t0 = time.monotonic()
    for k in keys:
        st, data = C.get(k, cap=8)
        if C.locate(k)[0] == victim:
            assert st == dfkv.NOT_FOUND and data is None
            assert C.put(k, b"v") == dfkv.ERRORS["E_UNAVAILABLE"]
        else:
            assert st == 0 and data == b"v"
    assert time.monotonic() - t0 < 2
    assert "dfkv_client_dropped_writes_total" in C.stats()


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
    print("TAP version 13")
    print(f"1..{len(results)}")
    failed = 0
    for n, fn in enumerate(results, 1):
        try:
            fn()
            print(f"ok {n} - {fn.__name__}")
        except Exception:  # noqa: BLE001  (report every failure as TAP)
            failed += 1
            print(f"not ok {n} - {fn.__name__}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
    C.close()
    for node in NODES:
        try:
            node.stop()
        except OSError:
            pass
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
