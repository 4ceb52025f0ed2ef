#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Every golden vector of golden-vectors.json, reproduced from Python through
libdfkv.so (the dfkv ctypes binding), printed as TAP.

The vectors are read from shared/spec/golden-vectors.json beside the
repository when it exists (and the copy in this directory must equal it),
else from the copy in this directory.
"""

import struct
import sys

import dfkv  # PYTHONPATH=lib/python, DFKV_LIB=libdfkv.so
from unittap import run, test, vectors

G = vectors("golden-vectors.json")
NS = {}


def parse_ns(b):
    """Split a canonical descriptor into its fields (test-side reader)."""
    assert b[:8] == b"DFKVNS\x00\x02"
    p, out = 8, []
    while p < len(b):
        (n,) = struct.unpack_from("<I", b, p)
        out.append(b[p + 4:p + 4 + n])
        p += 4 + n
    assert p == len(b) and len(out) == 10
    return out


for v in G["layout_fingerprint"]:
    @test(f"layout fingerprint {v['fingerprint']}")
    def _(v=v):
        assert dfkv.layout_fingerprint(v["fields"]) == \
            int(v["fingerprint"], 16)

for v in G["namespaces"]:
    raw = bytes.fromhex(v["ns_hex"])
    NS[v["name"]] = raw
    if raw.startswith(b"DFKVNS\x00\x02"):
        @test(f"namespace {v['name']} bytes from fields")
        def _(raw=raw):
            f = parse_ns(raw)
            (fp,) = struct.unpack("<Q", f[5])
            (bt,) = struct.unpack("<I", f[6])
            (nl,) = struct.unpack("<I", f[7])
            tp, pp, dp, pcp, dcp = struct.unpack("<5I", f[9])
            built = dfkv.ns_build(f[0].decode(), f[1], f[2], f[3], f[4], fp,
                                  bt, nl, f[8], tp=tp, pp=pp, dp=dp, pcp=pcp,
                                  dcp=dcp)
            assert built == raw, built.hex()

    @test(f"namespace {v['name']} tenant identity")
    def _(v=v, raw=raw):
        assert dfkv.tenant_identity(raw).hex() == v["tenant_identity_hex"]

    @test(f"namespace {v['name']} tenant hash")
    def _(v=v, raw=raw):
        assert dfkv.tenant_hash(raw) == int(v["tenant"], 16)

for i, v in enumerate(G["objects"]):
    key = bytes.fromhex(v["key_hex"])

    @test(f"object {i} ({v['ns']}) id and tenant")
    def _(v=v, key=key):
        ns = NS[v["ns"]]
        assert dfkv.object_id(ns, key).hex() == v["id"]
        tenant, oid = dfkv.block_key(ns, key)
        assert oid.hex() == v["id"]
        assert tenant == int(v["tenant"], 16)

    if v["key_text"] is not None:
        @test(f"object {i} key renders canonically from its fields")
        def _(v=v, key=key):
            assert key == v["key_text"].encode()
            f = dfkv.key_parse(key)
            assert dfkv.key_render(**f) == key
    else:
        @test(f"object {i} opaque key is not a canonical rendering")
        def _(key=key):
            try:
                dfkv.key_parse(key)
            except dfkv.DfkvError as e:
                assert e.status == dfkv.ERRORS["E_INVAL"]
            else:
                raise AssertionError("opaque key parsed")

for r in G["ketama"]:
    members = [(m["name"], m["weight"]) for m in r["members"]]
    ring = dfkv.Ring(members)
    for j, route in enumerate(r["routes"]):
        @test(f"ketama route {j}: {route['id']} -> {route['node']}")
        def _(route=route, ring=ring):
            assert ring.route(bytes.fromhex(route["id"])) == route["node"]


@test("fail closed: null/empty namespace and key")
def _():
    for args in ((b"", b"k"), (b"ns", b""), (b"ns", "")):
        try:
            dfkv.object_id(*args)
        except dfkv.DfkvError as e:
            assert e.status == dfkv.ERRORS["E_INVAL"]
        else:
            raise AssertionError(f"accepted {args!r}")


@test("fail closed: ring weight 0 and bad key fields")
def _():
    for bad in (lambda: dfkv.Ring([("a", 0)]),
                lambda: dfkv.Ring([]),
                lambda: dfkv.key_render("p|x", b"\x01", (1, 0), (1, 0),
                                        (1, 0), (1, 0), (1, 0), 0, "kv"),
                lambda: dfkv.key_render("p", b"\x01", (1, 1), (1, 0),
                                        (1, 0), (1, 0), (1, 0), 0, "kv")):
        try:
            bad()
        except dfkv.DfkvError as e:
            assert e.status == dfkv.ERRORS["E_INVAL"]
        else:
            raise AssertionError("accepted")


@test("numpy-style buffers are identity bytes")
def _():
    key = bytearray(b"raw\x00binary\xffkey")
    assert dfkv.object_id(NS["ns3"], key) == \
        dfkv.object_id(NS["ns3"], memoryview(bytes(key)))
    assert dfkv.object_id(NS["ns3"], key).hex() == G["objects"][3]["id"]


if __name__ == "__main__":
    sys.exit(run())
