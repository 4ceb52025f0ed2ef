#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tenant authentication (SPEC.md 9) from Python through libdfkv.so: every
proof vector of auth-vectors.json, dfkv.Client's tenant_secret (bytes or a
secret file path) and what it refuses, and one in-test node that requires
auth (HELLO with a nonce, AUTH checked with the vectors' proof), which
serves a client with the right secret and answers FORBIDDEN, never a
miss, to one with a wrong or no secret.  Prints TAP.

The vectors are read from shared/spec/auth-vectors.json beside the
repository when it exists (and the copy in this directory must equal it),
else from the copy in this directory.
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

V = vectors("auth-vectors.json")["auth"]
SECRET = bytes(range(32))
NS = b"tenant-a"
TENANT = dfkv.tenant_hash(NS)

for _v in V:
    @test(f"auth vector {_v['name']}")
    def _(v=_v):
        secret, nonce = (bytes.fromhex(v[k]) for k in ("secret_hex",
                                                        "nonce_hex"))
        tenant = int(v["tenant"], 16)
        msg = b"DFKVAUTH1" + nonce + struct.pack("<Q", tenant)
        assert msg.hex() == v["message_hex"]
        assert dfkv.auth_proof(secret, nonce, tenant).hex() == v["proof_hex"]


class AuthNode(socketserver.ThreadingTCPServer):
    """A node with auth=required and one registered tenant: HELLO, AUTH,
    PUT, GET and EXIST (any other request is UNSUPPORTED)."""
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), AuthConn)
        self.store, self.lock = {}, threading.Lock()
        self.auth = {"ok": 0, "failed": 0}
        threading.Thread(target=self.serve_forever,
                         kwargs={"poll_interval": 0.02}, daemon=True).start()


class AuthConn(socketserver.BaseRequestHandler):
    def answer(self, status, stored=0, data=b""):
        self.request.sendall(struct.pack("<BBQQ", 6, status, stored,
                                         len(data)) + data)

    def handle(self):
        nonce, granted = None, False
        try:
            while True:
                _, op, oid, tenant, _, _, plen = struct.unpack(
                    "<BB16sQQQQ", recv_exact(self.request, 50))
                payload = recv_exact(self.request, plen) if plen else b""
                if op == 14:
                    nonce = os.urandom(32)
                    self.answer(0, 0, struct.pack("<QQ", 3, 1 << 20) + nonce)
                elif op == 15:
                    ok = (nonce is not None and tenant == TENANT and payload
                          == dfkv.auth_proof(SECRET, nonce, tenant))
                    granted |= ok
                    self.server.auth["ok" if ok else "failed"] += 1
                    self.answer(0 if ok else 10)
                elif not granted or tenant != TENANT:
                    self.answer(10)
                elif op == 1:
                    with self.server.lock:
                        self.server.store.setdefault(oid, payload)
                    self.answer(0, plen)
                elif op in (2, 3):     # GET, EXIST
                    v = self.server.store.get(oid)
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


@test("a wrong or no secret: FORBIDDEN, never a miss")
def _():
    failed = NODE.auth["failed"]
    for secret in (bytes(32), None):
        with client(secret) as c:
            assert c.get(b"k") == (dfkv.FORBIDDEN, None)
            assert c.get(b"absent") == (dfkv.FORBIDDEN, None)
            assert c.put(b"k2", b"v") == dfkv.FORBIDDEN
    assert NODE.auth["failed"] > failed
    assert dfkv.STATUS["FORBIDDEN"] == dfkv.FORBIDDEN == 10
    assert "not authorized" in dfkv.strerror(dfkv.FORBIDDEN)


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


@test("auth_proof refuses short inputs")
def _():
    refused(lambda: dfkv.auth_proof(bytes(31), bytes(32), 0),
            dfkv.ERRORS["E_INVAL"])
    refused(lambda: dfkv.auth_proof(bytes(32), bytes(33), 0),
            dfkv.ERRORS["E_INVAL"])


if __name__ == "__main__":
    code = run()
    NODE.shutdown()
    sys.exit(code)
