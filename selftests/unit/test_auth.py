#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tenant authentication (SPEC.md 9, AUTH2) from Python through
libdfkv.so: every vector of auth2-vectors.json, dfkv.Client's
tenant_secret (bytes or a secret file path) and what it refuses, and
in-test nodes that require auth: an honest one (HELLO with both nonces
and its name, AUTH checked and proven back), which serves a client with
the right secret and answers FORBIDDEN to one with none, and dishonest
ones (another name, a wrong server proof, no AUTH2, an AUTH accepted
without proof), to which a client with the secret sends nothing of its
tenant's: their reads are misses, their writes dropped, each counted in
dfkv_client_node_auth_failures_total.  Prints TAP.

The vectors are read from shared/spec/auth2-vectors.json beside the
repository when it exists (and the repository's copy, selftests/, must
equal it), else from that copy.
"""

import os
import pathlib
import socketserver
import struct
import sys
import tempfile
import threading

import dfkv  # PYTHONPATH=lib/python, DFKV_LIB=libdfkv.so
from unittap import recv_exact, run, test, vectors

V = vectors("auth2-vectors.json")["auth2"]
SECRET = bytes(range(32))
NS = b"tenant-a"
TENANT = dfkv.tenant_hash(NS)

for _v in V:
    @test(f"auth2 vector {_v['name']}")
    def _(v=_v):
        secret, sn, cn = (bytes.fromhex(v[k]) for k in (
            "secret_hex", "server_nonce_hex", "client_nonce_hex"))
        tenant = int(v["tenant"], 16)
        name = v["node_name"].encode()
        t = (b"DFKVAUTH2" + bytes([len(name)]) + name + sn + cn +
             struct.pack("<Q", tenant))
        assert t.hex() == v["transcript_hex"]
        assert dfkv.auth2_proofs(secret, v["node_name"], sn, cn, tenant) == \
            (bytes.fromhex(v["client_proof_hex"]),
             bytes.fromhex(v["server_proof_hex"]))


class AuthNode(socketserver.ThreadingTCPServer):
    """A node named name with auth=required and one registered tenant:
    HELLO, AUTH, PUT, GET and EXIST (any other request is UNSUPPORTED).
    lie is how it cheats: "" (it does not), "name" (HELLO tells another
    name), "proof" (AUTH answers a wrong server proof), "caps" (HELLO
    does not offer AUTH2), "blind" (AUTH accepted without a proof back)."""
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, name="n0", lie=""):
        super().__init__(("127.0.0.1", 0), AuthConn)
        self.name, self.lie = name, lie
        self.store, self.lock = {}, threading.Lock()
        self.auth = {"ok": 0, "failed": 0}
        self.tenant_reqs = 0
        threading.Thread(target=self.serve_forever,
                         kwargs={"poll_interval": 0.02}, daemon=True).start()


class AuthConn(socketserver.BaseRequestHandler):
    def answer(self, status, stored=0, data=b""):
        self.request.sendall(struct.pack("<BBQQ", 6, status, stored,
                                         len(data)) + data)

    def handle(self):
        srv = self.server
        sn, cn, granted = None, None, False
        try:
            while True:
                _, op, oid, tenant, _, _, plen = struct.unpack(
                    "<BB16sQQQQ", recv_exact(self.request, 50))
                payload = recv_exact(self.request, plen) if plen else b""
                if op == 14:
                    caps = struct.unpack_from("<Q", payload)[0] \
                        if len(payload) >= 8 else 0
                    sn = os.urandom(32)
                    cn = payload[8:40] if caps & 4 and plen >= 40 else None
                    name = (srv.name + "x" if srv.lie == "name"
                            else srv.name).encode()
                    mine = 3 if srv.lie == "caps" else 7
                    self.answer(0, 0, struct.pack("<QQ", mine, 1 << 20) + sn
                                + bytes([len(name)]) + name)
                elif op == 15:
                    cp, sp = dfkv.auth2_proofs(SECRET, srv.name, sn,
                                               cn or bytes(32), tenant)
                    ok = cn is not None and tenant == TENANT and payload == cp
                    granted |= ok
                    srv.auth["ok" if ok else "failed"] += 1
                    if srv.lie == "proof":
                        sp = bytes(32)
                    self.answer(0 if ok else 10, 0,
                                b"" if not ok or srv.lie == "blind" else sp)
                else:
                    with srv.lock:
                        srv.tenant_reqs += 1
                    if not granted or tenant != TENANT:
                        self.answer(10)
                    elif op == 1:
                        with srv.lock:
                            srv.store.setdefault(oid, payload)
                        self.answer(0, plen)
                    elif op in (2, 3):     # GET, EXIST
                        v = srv.store.get(oid)
                        if v is None:
                            self.answer(1)
                        else:
                            self.answer(0, len(v), v if op == 2 else b"")
                    else:
                        self.answer(7)
        except (EOFError, OSError):
            pass


NODE = AuthNode()
MEMBERS = f"n0=127.0.0.1:{NODE.server_address[1]}"


def client(secret):
    return dfkv.Client(MEMBERS, NS, transport="tcp", io_timeout_ms=2000,
                       tenant_secret=secret)


def secret_file(content, mode=0o600):
    fd, path = tempfile.mkstemp(prefix="dfkv-secret-")
    os.write(fd, content)
    os.fchmod(fd, mode)
    os.close(fd)
    return path


def refused(fn, status):
    try:
        fn()
    except dfkv.DfkvError as e:
        assert e.status == status, e
    else:
        raise AssertionError("accepted")


@test("tenant_secret as bytes: authenticated, served")
def _():
    with client(SECRET) as c:
        assert c.put(b"k", b"value") == dfkv.OK
        assert c.get(b"k") == (dfkv.OK, b"value")
    assert NODE.auth["ok"] >= 1


@test("tenant_secret as a file path (str and os.PathLike)")
def _():
    path = secret_file(SECRET.hex().encode() + b"\n")
    try:
        for p in (path, pathlib.Path(path)):
            with client(p) as c:
                assert c.get(b"k") == (dfkv.OK, b"value")
    finally:
        os.unlink(path)


@test("no secret: FORBIDDEN from a node that requires auth, never a miss")
def _():
    with client(None) as c:
        assert c.get(b"k") == (dfkv.FORBIDDEN, None)
        assert c.get(b"absent") == (dfkv.FORBIDDEN, None)
        assert c.put(b"k2", b"v") == dfkv.FORBIDDEN
    assert dfkv.STATUS["FORBIDDEN"] == dfkv.FORBIDDEN == 10
    assert "not authorized" in dfkv.strerror(dfkv.FORBIDDEN)


def auth_failures(c, name):
    for line in c.stats().splitlines():
        if line.startswith('dfkv_client_node_auth_failures_total{node="%s"}'
                           % name):
            return int(line.split()[-1])
    raise AssertionError("no auth failure counter for " + name)


@test("a wrong secret: the node is failed, its reads miss, writes drop")
def _():
    failed = NODE.auth["failed"]
    with client(bytes(32)) as c:
        assert c.get(b"k") == (dfkv.NOT_FOUND, None)
        assert c.put(b"k2", b"v") == dfkv.ERRORS["E_UNAVAILABLE"]
        assert auth_failures(c, "n0") == 1
    assert NODE.auth["failed"] > failed


for _lie in ("name", "proof", "caps", "blind"):
    @test(f"a node that lies ({_lie}) gets no tenant request, no block")
    def _(lie=_lie):
        rogue = AuthNode(lie=lie)
        members = f"n0=127.0.0.1:{rogue.server_address[1]}"
        try:
            with dfkv.Client(members, NS, transport="tcp",
                             io_timeout_ms=2000, cooldown_ms=60000,
                             tenant_secret=SECRET) as c:
                assert c.put(b"k", b"value") == dfkv.ERRORS["E_UNAVAILABLE"]
                assert c.get(b"k") == (dfkv.NOT_FOUND, None)
                assert auth_failures(c, "n0") == 1
                assert 'dfkv_client_dropped_writes_total 1' in c.stats()
            assert rogue.tenant_reqs == 0 and not rogue.store
        finally:
            rogue.shutdown()
            rogue.server_close()


@test("tenant_secret refused: wrong length, bad or open file")
def _():
    refused(lambda: client(bytes(31)), dfkv.ERRORS["E_INVAL"])
    refused(lambda: client("/nonexistent/secret"), dfkv.ERRORS["E_AUTH"])
    for content, mode in ((SECRET.hex()[1:].encode(), 0o600),
                          (SECRET.hex().encode() + b"0", 0o600),
                          (b"z" + SECRET.hex()[1:].encode(), 0o600),
                          (SECRET.hex().encode(), 0o644)):
        path = secret_file(content, mode)
        try:
            refused(lambda: client(path), dfkv.ERRORS["E_AUTH"])
        finally:
            os.unlink(path)


@test("auth2_proofs refuses short inputs and bad names")
def _():
    for args in ((bytes(31), "n", bytes(32), bytes(32)),
                 (bytes(32), "n", bytes(33), bytes(32)),
                 (bytes(32), "n", bytes(32), bytes(31)),
                 (bytes(32), "", bytes(32), bytes(32)),
                 (bytes(32), "n" * 64, bytes(32), bytes(32))):
        refused(lambda: dfkv.auth2_proofs(*args, 0), dfkv.ERRORS["E_INVAL"])


if __name__ == "__main__":
    code = run()
    NODE.shutdown()
    sys.exit(code)
