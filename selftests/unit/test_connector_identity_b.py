#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Identity of the SGLang HiCache and MAX connectors (sglang_layout,
max_layout), without the engines: each layout id is pinned to a digest of
what it binds (its field list, the namespace and object key of a reference
geometry), so a layout-bearing change without a bump fails here; every
layout field and the revision change the namespace; MLA ranks that hold
the same KV share a key, head and DCP shards do not.  Prints TAP."""

import hashlib
import sys

from unittap import run, test

import dfkv
from dfkv.connectors import max_layout as ML
from dfkv.connectors import sglang_layout as SL

# layout id -> SHA-256 of the reference identity below.  A change to the
# fields, their order, their rendering or the key rule changes the digest:
# bump the layout id (-vN) and pin the new id's digest, never re-pin an id.
PINNED = {
    "sglang-hicache/raw-v1":
        "360225b4964af8d2623c7f20e1c798cd0f306215cc45a432af6881084d7b0946",
    "max-paged/raw-v1":
        "ba0c92ee2eec45ac865be7976c0344299d3173e1750c15a46dbdb8322282ca19",
}

SG_REF = {"kind": "mha", "layout": "page_first", "page_size": 64,
          "layer_num": 32, "head_num": 8, "head_dim": 128, "v_head_dim": 128,
          "kv_lora_rank": 0, "qk_rope_head_dim": 0, "itemsize": 2,
          "regions": "4194304,4194304"}


class _DT:
    size_in_bytes = 2
    name = "bfloat16"


class _Params:
    dtype = _DT()
    head_dim = 128
    n_kv_heads_per_device = 8
    num_layers = 32
    page_size = 128
    quantized_kv_cache = False
    kvcache_quant_config = None


def sg_ns(fields=SG_REF, rev="r1", **kw):
    return SL.namespace("t1", "org/model", rev, "bfloat16", fields, **kw)


def max_fields(**over):
    f = ML.leaf_fields("full", -1, _Params(), 524288, False, 2)
    f.update(over)
    return f


def max_ns(fields=None, rev="r1"):
    return ML.namespace("t1", "org/model", rev, "bfloat16", "full",
                        fields or max_fields(), 2)


def digest(layout_id, fields, ns, key):
    h = hashlib.sha256(layout_id.encode())
    for part in (",".join(fields).encode(), ns, key):
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()


def sg_digest():
    ranks = SL.rank_fields(False, 2, 1, 1, 0, 1, 0, 1, 0)
    return digest(SL.LAYOUT_ID, SL.LAYOUT_FIELDS, sg_ns(),
                  SL.object_key("ab" * 32, ranks))


def max_digest():
    return digest(ML.LAYOUT_ID, ML.LAYOUT_FIELDS, max_ns(),
                  ML.object_key(bytes(range(8)), (2, 1)))


@test("layout ids are pinned to what they bind")
def pinned():
    got = {SL.LAYOUT_ID: sg_digest(), ML.LAYOUT_ID: max_digest()}
    for lid, d in got.items():
        assert lid in PINNED, f"new layout id {lid}: pin {d}"
        assert PINNED[lid] == d, \
            f"{lid} changed (digest {d}): bump the layout id"


@test("the namespaces name their layout ids and tenant")
def ns_fields():
    for ns, lid in ((sg_ns(), SL.LAYOUT_ID), (max_ns(), ML.LAYOUT_ID)):
        assert lid.encode() in ns
        assert dfkv.tenant_identity(ns) == b"t1"


@test("every SGLang layout field and the revision change the namespace")
def sg_fields_bind():
    base = sg_ns()
    assert sg_ns(rev="r2") != base
    for k in SL.LAYOUT_FIELDS:
        f = dict(SG_REF)
        f[k] = f"{f[k]}x" if isinstance(f[k], str) else f[k] + 1
        assert sg_ns(f) != base, k
    for kw in ({"tp_size": 2}, {"pp_size": 2}, {"cp_size": 2},
               {"dcp_size": 2}):
        assert sg_ns(**kw) != base, kw


@test("every MAX layout field and the revision change the namespace")
def max_fields_bind():
    base = max_ns()
    assert max_ns(rev="r2") != base
    for k in ML.LAYOUT_FIELDS:
        v = max_fields()[k]
        f = max_fields(**{k: f"{v}x" if isinstance(v, str) else v + 1})
        assert max_ns(f) != base, k
    assert ML.namespace("t1", "org/model", "r1", "bfloat16", "swa",
                        max_fields(), 2) != base


@test("SGLang MLA ranks share a key, MHA head shards do not")
def sg_mla():
    h = "cd" * 32
    mla = {SL.object_key(h, SL.rank_fields(True, 4, r, 1, 0, 1, 0, 1, 0))
           for r in range(4)}
    mha = {SL.object_key(h, SL.rank_fields(False, 4, r, 1, 0, 1, 0, 1, 0))
           for r in range(4)}
    assert len(mla) == 1 and len(mha) == 4
    assert dfkv.key_parse(mla.pop())["tp"] == (4, -1)
    # DCP shards of an MLA model hold distinct KV.
    dcp = {SL.object_key(h, SL.rank_fields(True, 4, r, 1, 0, 1, 0, 2, r % 2))
           for r in range(4)}
    assert len(dcp) == 2
    # Pipeline stages hold distinct layers.
    pp = {SL.object_key(h, SL.rank_fields(False, 1, 0, 2, s, 1, 0, 1, 0))
          for s in range(2)}
    assert len(pp) == 2


@test("SGLang page keys: hex digests are the hash, other strings bytes")
def sg_hash():
    assert SL.hash_bytes("0a" * 32) == b"\x0a" * 32
    assert SL.hash_bytes("page-7") == b"page-7"
    k = dfkv.key_parse(SL.object_key("0a" * 32, SL.rank_fields(
        False, 1, 0, 1, 0, 1, 0, 1, 0)))
    assert k["hash"] == b"\x0a" * 32 and k["pool"] == SL.POOL


@test("MAX replicated units are one copy, sharded units one per shard")
def max_shards():
    assert ML.shard_ranks(True, 4) == [(4, -1)]
    assert ML.shard_ranks(False, 2) == [(2, 0), (2, 1)]
    h = bytes(range(32))
    keys = {ML.object_key(h, tp) for tp in ML.shard_ranks(False, 4)}
    assert len(keys) == 4
    assert dfkv.key_parse(ML.object_key(h, (4, -1)))["hash"] == h
    try:
        ML.object_key(b"short", (1, 0))
    except ValueError:
        pass
    else:
        raise AssertionError("a 5-byte hash was accepted")


sys.exit(run())
