#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Scatter-gather in the Python dfkv.Client (put_sg, get_sg and their
batches) against the in-test epoch-6 nodes of fake_node.py on loopback:
values gathered from and scattered into lists of buffers (numpy arrays
when numpy is installed, array.array and bytearray otherwise), empty
buffers, the ranges and TOO_LARGE of sg-ranges.json (the table the C sg
tests check), misses and bad arguments.  Prints TAP."""

import array
import json
import os
import sys

import dfkv
from fake_node import cluster, stop
from unittap import run, test

try:
    import numpy as np
except ImportError:
    np = None

NODES, _, C = cluster()
SG_RANGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "sg-ranges.json")


def pattern(n, seed):
    return bytes((seed * 31 + i * 7 + (i >> 8)) & 0xff for i in range(n))


def u32_buffers(sizes):
    """Writable buffers of 4-byte items (numpy arrays when available)."""
    if np is not None:
        return [np.zeros(s, dtype=np.uint32) for s in sizes]
    return [array.array("I", bytes(4 * s)) for s in sizes]


def raw(buf):
    return bytes(memoryview(buf).cast("B"))


@test
def put_sg_stores_the_concatenation():
    v = pattern(20000, 1)
    parts = [v[:1], bytearray(v[1:5000]), b"", memoryview(v[5000:5003]),
             bytearray(), v[5003:]]
    if np is not None:
        parts[3] = np.frombuffer(v[5000:5003], dtype=np.uint8).copy()
    assert C.put_sg(b"sg-a", parts) == dfkv.OK
    assert C.get(b"sg-a") == (dfkv.OK, v)
    assert C.exist(b"sg-a") == (dfkv.OK, 20000)


@test
def get_sg_scatters_into_buffers():
    v = pattern(40000, 2)
    assert C.put(b"sg-b", v) == dfkv.OK
    outs = u32_buffers([1000, 0, 1, 8999])      # 40000 bytes, one empty
    assert C.get_sg(b"sg-b", outs) == (dfkv.OK, 40000)
    assert b"".join(raw(o) for o in outs) == v
    # spare room: the value fills the front, the rest stays untouched
    outs = [bytearray(30000), bytearray(b"\xee" * 20000)]
    assert C.get_sg(b"sg-b", outs) == (dfkv.OK, 40000)
    assert bytes(outs[0]) + bytes(outs[1][:10000]) == v
    assert bytes(outs[1][10000:]) == b"\xee" * 10000


@test
def get_sg_ranges_and_too_large():
    """Every case of ../sg-ranges.json, the table the C sg tests check."""
    with open(SG_RANGES) as f:
        table = json.load(f)
    v = pattern(table["value_len"], 3)
    assert C.put(b"sg-c", v) == dfkv.OK
    for i, t in enumerate(table["cases"]):
        outs = [bytearray(n) for n in table["buffer_sizes"][:t["buffers"]]]
        status = dfkv.STATUS[t["status"].upper()]
        got = C.get_sg(b"sg-c", outs, t["offset"], t["length"])
        # the length is the bytes written, or with TOO_LARGE the stored one
        want = len(v) if status == dfkv.TOO_LARGE else t["data_len"]
        assert got == (status, want), (i, t, got)
        if status == dfkv.OK:
            assert b"".join(outs)[:want] == \
                v[t["offset"]:t["offset"] + want], (i, t)
    outs = [bytearray(3000), bytearray(1)]
    assert C.get_sg(b"sg-missing", outs) == (dfkv.NOT_FOUND, 0)


@test
def many_small_buffers_roundtrip():
    v = pattern(4096, 4)
    parts = [v[i:i + 4] for i in range(0, 4096, 4)]          # 1024 parts
    assert len(parts) == 1024
    assert C.put_sg(b"sg-d", parts) == dfkv.OK
    outs = [bytearray(4) for _ in range(1024)]
    assert C.get_sg(b"sg-d", outs) == (dfkv.OK, 4096)
    assert b"".join(bytes(o) for o in outs) == v
    # one more is over DFKV_IOV_MAX
    assert C.put_sg(b"sg-e", parts + [b"x"]) == dfkv.ERRORS["E_INVAL"]
    assert C.get_sg(b"sg-d", outs + [bytearray(1)])[0] == \
        dfkv.ERRORS["E_INVAL"]


@test
def bad_arguments_fail_closed():
    E = dfkv.ERRORS["E_INVAL"]
    assert C.put_sg(b"sg-f", []) == E
    assert C.put_sg(b"sg-f", [b"", bytearray()]) == dfkv.STATUS["INVALID"]
    assert C.put_sg(b"", [b"x"]) == E
    assert C.get_sg(b"sg-a", []) == (E, 0)
    assert C.get_sg(b"sg-a", [bytearray()]) == (E, 0)
    assert C.exist(b"sg-f")[0] == dfkv.NOT_FOUND
    try:
        C.get_sg(b"sg-a", [bytearray(4), b"read-only"])
    except ValueError:
        pass
    else:
        raise AssertionError("read-only destination accepted")


@test
def sg_batches():
    keys = [f"sgb{i}".encode() for i in range(50)]
    vals = [pattern(100 + 37 * i, i) for i in range(50)]
    lists = [[v[:7], b"", v[7:]] for v in vals]
    lists[5] = []                                   # a bad slot only
    st = C.put_sg_batch(keys, lists)
    assert st[5] == dfkv.ERRORS["E_INVAL"]
    assert st[:5] + st[6:] == [0] * 49
    outs = [u32_buffers([10, 1000]) for _ in keys]
    outs[9] = [bytearray(10)]                       # too small
    res = C.get_sg_batch(keys, outs)
    for i, (s, n) in enumerate(res):
        if i == 5:
            assert (s, n) == (dfkv.NOT_FOUND, 0)
        elif i == 9:
            assert (s, n) == (dfkv.TOO_LARGE, len(vals[9]))
        else:
            assert (s, n) == (0, len(vals[i])), (i, s, n)
            assert b"".join(raw(o) for o in outs[i])[:n] == vals[i]


def main():
    rc = run(f"numpy: {'yes' if np is not None else 'no (array.array)'}")
    stop(NODES, C)
    return rc


if __name__ == "__main__":
    sys.exit(main())
