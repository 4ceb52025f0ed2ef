# SPDX-License-Identifier: GPL-2.0
"""The in-test epoch-6 nodes of the Python client tests (test_client.py,
test_client_sg.py), the Python twin of fake_node.c: a threaded TCP server
on loopback that stores values and answers PUT, GET, EXIST, REMOVE,
TOUCH, PROBE, LEASE and RELEASE (SPEC.md 2); a node can be stopped like a
dead host, or held (its gate cleared: requests wait).  cluster() starts
three behind a client.  Not a test itself."""

import socket
import socketserver
import struct
import threading

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
        self.touches = []       # TOUCH: the walk (offset) of each
        self.gate = threading.Event()   # cleared: requests wait
        self.gate.set()
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
                self.server.gate.wait()
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
                            self.server.touches.append(off)
                            self.reply(0 if off in (0, 1) else 4)
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


NS = dfkv.ns_build("acme", "m", "r", "lmcache/raw-v1", "bfloat16",
                   dfkv.layout_fingerprint(["k:1x2"]), 16, 2, "full")


def cluster():
    """Three nodes and a TCP client of them: (nodes, members, client)."""
    nodes = [Node() for _ in range(3)]
    members = [f"n{i}=127.0.0.1:{n.server_address[1]}" for i, n in
               enumerate(nodes)]
    return nodes, members, dfkv.Client(members, NS, transport="tcp",
                                       io_timeout_ms=2000, cooldown_ms=300)


def stop(nodes, client):
    """Close the client, then stop every node."""
    client.close()
    for node in nodes:
        try:
            node.stop()
        except OSError:
            pass
