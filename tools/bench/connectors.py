#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The connector bench of `make bench` (driven by tools/bench/connectors):
the store and load rate of one batch of an engine's blocks through its
dfkv connector, next to the same objects through dfkv.Client and through
libdfkv in C (dfkv-batchrate), in the same run against the same node;
and the case a user asks first, the time to load a 4,096-token prefix's
KV (the blocks of PREFIX_TOKENS in the engine's test model layout) through
the same three.

  connectors.py run ENGINE --members M --out FILE [--rounds R --warmup W
                --prefix-rounds P]
      with ENGINE's venv python (vllm, lmcache, sglang, sglang-copy,
      max): the engine set-up of its connector test (selftests/connectors:
      the connector built by the engine's own factory over host memory
      shaped like the engine's pool; PYTHONPATH holds that directory),
      then the three columns; FILE gets one JSON object of figures.
      sglang is HiCache's zero-copy interface_v1 (the documented
      configuration), sglang-copy its generic per-page path, which
      copies every page (Documentation/connectors.md).
  connectors.py report --json BENCH_JSON --tmp DIR --vm-status N ENGINE...
      with any python3: the tables of DIR/ENGINE.json, the "connectors"
      object written to build/bench-connectors.json and merged into
      BENCH_JSON when that exists.  Any failure refuses the figures (no
      JSON written, exit 1), as peers.py does.

Warm-up rounds, then timed rounds, the three columns interleaved in each;
every round stores fresh keys and loads them back (whole values,
checked); a rate is the median round's.  Loads exclude the engine's
lookup (done untimed first where the connector needs one).  No timing
threshold decides anything.
"""

import argparse
import hashlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BATCHRATE = os.path.join(REPO, "build", "bench", "dfkv-batchrate")
ENGINES = ("vllm", "lmcache", "sglang", "sglang-copy", "max")


def timed(fn, *args):
    """(seconds, result) of fn(*args)."""
    t = time.perf_counter()
    v = fn(*args)
    return time.perf_counter() - t, v


def checked(want, fn, *args):
    """Seconds of fn(*args), whose result must be want (checked after
    the clock stopped)."""
    s, v = timed(fn, *args)
    assert v == want, v
    return s


# ------------------------------------------------- engine set-ups
#
# Each returns a dict: tokens (per engine block), batch (the blocks of
# the batch case), case(n, tag) (a dict for n fresh blocks per round:
# blocks, page (bytes of one engine block), objects and object_bytes
# (what the connector writes for them), store(r) and load(r), timed
# calls for round r; tag, in the keys, keeps the cases apart) and
# close().  A set-up has room for the batch and for PREFIX_TOKENS'
# blocks.

PREFIX_TOKENS = 4096


def blocks_of(tokens):
    """Blocks of an engine of `tokens` tokens per block that hold a
    PREFIX_TOKENS prefix."""
    return -(-PREFIX_TOKENS // tokens)


def vllm_tier():
    import numpy as np
    import vllm_tier as t
    from vllm.v1.kv_offload.base import ReqContext, make_offload_key
    from vllm.v1.kv_offload.tiering.base import TransferJob
    most = blocks_of(t.TOKENS)
    # stored from chunks 0..n-1, loaded into most..most+n-1
    mgr, tier = t.engine("bench", blocks=2 * most)
    lay = tier._layouts[0]
    view = np.asarray(mgr.primary_tier.get_kv_memoryview()).view(np.uint8)
    view[:most] = np.random.default_rng(1).integers(
        0, 256, view[:most].shape, dtype=np.uint8)
    ctx = ReqContext(req_id="bench")
    jobs = itertools.count()
    m = lay.slice_bytes * lay.copies

    def case(n, tag):
        def move(r, load):
            keys = [make_offload_key(hashlib.sha256(
                b"bench %d %d %d" % (tag, r, i)).digest(), 0)
                for i in range(n)]
            job = TransferJob(next(jobs), keys,
                              np.arange(most, most + n) if load else
                              np.arange(n), load, ctx)
            (tier.submit_load if load else tier.submit_store)(job)
            tier.drain_jobs()
            done = tier.get_finished_jobs()
            assert [j.success for j in done] == [True], done

        def load(r):
            view[most:most + n] = 0
            s = timed(move, r, True)[0]
            assert np.array_equal(view[most:most + n, :m], view[:n, :m])
            return s
        return dict(blocks=n, page=m, objects=n * lay.copies,
                    object_bytes=lay.slice_bytes,
                    store=lambda r: timed(move, r, False)[0], load=load)
    return dict(tokens=t.TOKENS, batch=32, case=case, close=t._shutdown)


def lmcache_plugin():
    import numpy as np
    import lmcache_plugin as t
    _, cpu, md, loop, conn = t.stack()
    most = blocks_of(t.CHUNK)
    objs = [cpu.allocate(md.get_shapes(), md.get_dtypes())
            for _ in range(most)]
    rng = np.random.default_rng(1)
    for o in objs:
        b = np.frombuffer(o.byte_array, np.uint8)
        b[:] = rng.integers(0, 256, len(b), dtype=np.uint8)
    size = len(objs[0].byte_array)

    def case(n, tag):
        def store(r):
            keys = t.keys_of(md, (tag << 16) + r, n)
            s = timed(t.run, loop, conn.batched_put(keys, objs[:n]))[0]
            assert conn.batched_contains(keys) == n
            return s

        def load(r):
            s, got = timed(t.run, loop,
                           conn.batched_get(t.keys_of(md, (tag << 16) + r,
                                                      n)))
            assert [bytes(o.byte_array) for o in got] == \
                [bytes(o.byte_array) for o in objs[:n]]
            for o in got:
                o.ref_count_down()
            return s
        return dict(blocks=n, page=size, objects=n, object_bytes=size,
                    store=store, load=load)

    def close():
        for o in objs:
            o.ref_count_down()
        t.close_all()
    return dict(tokens=t.CHUNK, batch=32, case=case, close=close)


def sglang_hicache(copying=False):
    """Zero-copy: HiCache's interface_v1 (batch_set_v1/batch_get_v1 on
    the host pool's pages); copying: its generic per-page path, as
    SGLang's cache controller runs it without interface_v1
    (_generic_page_set: get_data_page, a copy of each page, then
    batch_set; _generic_page_get: a flat page per key, batch_get, then
    set_from_flat_data_page copying each into the pool)."""
    import sglang_hicache as t
    import torch
    most = blocks_of(t.PAGE)
    pool = t.host_pool(pages=2 * most)
    b = t.backend(pool)
    raw = pool.kv_buffer.view(torch.uint8)
    src = torch.arange(0, most * t.PAGE)
    dst = src + most * t.PAGE
    raw[:, src] = torch.randint(0, 256, raw[:, src].shape,
                                dtype=torch.uint8)
    page = sum(int(x) for x in b.fields["regions"].split(","))

    def copy_set(keys, idx):
        return b.batch_set(keys, [pool.get_data_page(idx[i * t.PAGE])
                                  for i in range(len(keys))])

    def copy_get(keys, idx):
        got = b.batch_get(keys, [pool.get_dummy_flat_data_page()
                                 for _ in keys])
        for i, d in enumerate(got):
            if d is None:
                break
            pool.set_from_flat_data_page(idx[i * t.PAGE], d)
        return [d is not None for d in got]

    def case(n, tag):
        tok = n * t.PAGE

        def keys(r):
            return [hashlib.sha256(b"bench %d %d %d %d" % (
                copying, tag, r, i)).hexdigest() for i in range(n)]

        def store(r):
            if copying:
                return checked(True, copy_set, keys(r), src[:tok])
            return checked([True] * n, b.batch_set_v1, keys(r), src[:tok])

        def load(r):
            raw[:, dst[:tok]] = 0
            s = checked([True] * n, copy_get if copying else b.batch_get_v1,
                        keys(r), dst[:tok])
            assert torch.equal(raw[:, dst[:tok]], raw[:, src[:tok]])
            return s
        return dict(blocks=n, page=page, objects=n, object_bytes=page,
                    store=store, load=load)

    def close():
        b.close()
        t.B.close()
    return dict(tokens=t.PAGE, batch=t.NPAGES, case=case, close=close)


def max_kv():
    import numpy as np
    import max_kv as t
    most = blocks_of(t.params().page_size)
    # The manager's page rows: stored from rows 1..n, loaded into the
    # rows after the prefix's (row 0 is the manager's null page).
    m = t.manager(available_bytes=(2 * most + 2) * t.PAGE)
    c = m._connector
    leaf = next(iter(c.leaves))
    rows = c._views[0][leaf][0]
    assert rows.shape[0] > 2 * most, rows.shape
    copies = len(c._ranks[leaf])
    rows[1:most + 1] = np.random.default_rng(1).integers(
        0, 256, (most, t.PAGE), dtype=np.uint8)

    def landed(transfer):
        """The call's transfer, waited for until it completed (what is
        timed is submission to completion)."""
        transfer.synchronize()
        return transfer

    def case(n, tag):
        src = list(range(1, n + 1))
        dst = list(range(most + 1, most + n + 1))

        def store(r):
            h = t.hashes(b"bench %d %d" % (tag, r), n)
            s, done = timed(lambda: landed(c.offload({leaf: src},
                                                     {leaf: h})))
            assert list(done.g0_blocks_per_leaf[leaf]) == src
            return s

        def load(r):
            h = t.hashes(b"bench %d %d" % (tag, r), n)
            assert c.lookup(h) == {leaf: [True] * n}   # the lease, untimed
            rows[dst] = 0
            s = timed(lambda: landed(c.load({leaf: dst}, {leaf: h})))[0]
            assert rows[dst].tobytes() == rows[src].tobytes()
            return s
        return dict(blocks=n, page=t.PAGE * copies, objects=n * copies,
                    object_bytes=t.PAGE, store=store, load=load)

    def close():
        c.shutdown()
        t.C.shutdown()
    return dict(tokens=t.params().page_size, batch=t.N, case=case,
                close=close)


SETUPS = {"vllm": vllm_tier, "lmcache": lmcache_plugin,
          "sglang": sglang_hicache,
          "sglang-copy": lambda: sglang_hicache(copying=True),
          "max": max_kv}


# ------------------------------------------------------- library columns

def client_column(members, count, size, tag):
    """dfkv.Client put_batch/get_batch of count values of size bytes:
    store(r), load(r) as the engines' (tag: the case's, in the keys)."""
    import numpy as np
    import dfkv
    c = dfkv.Client(members, b"dfkv-bench-client", transport="tcp")
    src = np.random.default_rng(2).integers(0, 256, (count, size),
                                            dtype=np.uint8)
    dst = np.zeros_like(src)
    vals, outs = list(src), list(dst)

    def keys(r):
        return [b"bc:%d:%d:%d:%d" % (os.getpid(), tag, r, i)
                for i in range(count)]

    def load(r):
        dst[:] = 0
        s = checked([(dfkv.OK, size)] * count, c.get_batch, keys(r), outs)
        assert np.array_equal(src, dst)
        return s
    return dict(store=lambda r: checked([dfkv.OK] * count, c.put_batch,
                                        keys(r), vals),
                load=load, close=c.close)


def c_column(members, count, size):
    """dfkv-batchrate, one process a round (its own warm-up round first,
    then the timed one): round(r) as the other columns'."""
    def round_(r):
        cp = subprocess.run([BATCHRATE, "--members", members, "--size",
                             str(size), "--count", str(count), "--rounds",
                             "1", "--warmup", "1"], capture_output=True,
                            text=True)
        if cp.returncode:
            raise RuntimeError("dfkv-batchrate exited %d: %s %s" % (
                cp.returncode, cp.stdout.strip(), cp.stderr.strip()))
        j = json.loads(cp.stdout)
        return j["store_s"][0], j["load_s"][0]
    return dict(round=round_, close=lambda: None)


def measure(cols, warmup, n, nbytes):
    """Warm-up rounds, then n timed ones, the columns interleaved in
    every round (so that the drift of an emulated machine hits them
    alike); per column its seconds and median GB/s (1e9 bytes/s)."""
    out = {name: {"store_s": [], "load_s": []} for name in cols}
    for r in range(warmup + n):
        for name, col in cols.items():
            st, ld = col["round"](r) if "round" in col else \
                (col["store"](r), col["load"](r))
            if r >= warmup:
                out[name]["store_s"].append(st)
                out[name]["load_s"].append(ld)
    for fig in out.values():
        for op in ("store", "load"):
            fig[op + "_gbps"] = nbytes / statistics.median(
                fig[op + "_s"]) / 1e9
    return out


def columns(a, e, tag):
    """The three columns of a case e (a set-up's case()): libdfkv in C,
    dfkv.Client, the connector, over the same objects."""
    count, size = e["objects"], e["object_bytes"]
    return {"libdfkv": c_column(a.members, count, size),
            "client": client_column(a.members, count, size, tag),
            "connector": e}


def run(a):
    setup = SETUPS[a.engine]()
    e = setup["case"](setup["batch"], 0)
    p = setup["case"](blocks_of(setup["tokens"]), 1)
    count, size = e["objects"], e["object_bytes"]
    out = {"engine": a.engine, "page_bytes": e["page"],
           "blocks": e["blocks"], "objects": count, "object_bytes": size,
           "warmup": a.warmup, "rounds": a.rounds}
    cols = [columns(a, e, 0), columns(a, p, 1)]
    try:
        out.update(measure(cols[0], a.warmup, a.rounds, count * size))
        fig = measure(cols[1], a.warmup, a.prefix_rounds,
                      p["objects"] * p["object_bytes"])
    finally:
        for col in cols:
            for name in ("libdfkv", "client"):
                col[name]["close"]()
        setup["close"]()
    for op in ("store", "load"):
        for lib in ("client", "libdfkv"):
            out["%s_ratio_%s" % (op, lib)] = (
                out["connector"][op + "_gbps"] / out[lib][op + "_gbps"])
    # The prefix case: the time to load a PREFIX_TOKENS prefix's KV
    # (median round, milliseconds) through each column.
    out["prefix"] = {"tokens": PREFIX_TOKENS, "block_tokens":
                     setup["tokens"], "blocks": p["blocks"],
                     "objects": p["objects"],
                     "object_bytes": p["object_bytes"],
                     "rounds": a.prefix_rounds}
    for name, f in fig.items():
        f["load_ms"] = statistics.median(f["load_s"]) * 1e3
        out["prefix"][name] = f
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


# ---------------------------------------------------------------- report

def result_of(tmp, engine):
    """DIR/ENGINE.json, or {"engine": .., "error": ..} from its run's
    status (ENGINE.rc) and the last line of its output (ENGINE.err)."""
    def text(ext):
        p = os.path.join(tmp, engine + ext)
        if not os.path.exists(p):
            return ""
        with open(p) as f:
            return f.read()
    rc = text(".rc").strip() or "not run"
    if rc == "0" and text(".json"):
        return json.loads(text(".json"))
    lines = [ln for ln in text(".err").splitlines() if ln.strip()]
    return {"engine": engine, "error": "exit %s%s" % (
        rc, ": " + lines[-1] if lines else "")}


def table(res, accel):
    print("Connectors, accel %s: one batch of an engine's blocks through "
          "its connector (conn), dfkv.Client (py) and libdfkv in C (C), "
          "interleaved rounds, medians; GB/s = 1e9 bytes/s; ratios: "
          "conn/py, conn/C" % accel)
    half = "%6s %6s %6s %7s %6s"
    head = ("%-11s %7s %6s | " + half + " | " + half) % (
        "engine", "page B", "blocks", "conn", "py", "C", "conn/py",
        "conn/C", "conn", "py", "C", "conn/py", "conn/C")
    print("%-26s | %-35s | %s" % ("", "store", "load"))
    print(head)
    print("-" * len(head))
    for r in res:
        if "error" in r:
            print("%-11s FAILED: %s" % (r["engine"], r["error"]))
            continue
        cols = []
        for op in ("store", "load"):
            g = [r[c][op + "_gbps"] for c in ("connector", "client",
                                              "libdfkv")]
            cols.append("%6.3f %6.3f %6.3f %6.0f%% %5.0f%%" % (
                *g, 100 * r[op + "_ratio_client"],
                100 * r[op + "_ratio_libdfkv"]))
        print("%-11s %7d %6d | %s | %s" % (r["engine"], r["page_bytes"],
                                          r["blocks"], cols[0], cols[1]))
    print()
    print("Time to load a %d-token prefix's KV (ms, median round) through "
          "the connector (conn), dfkv.Client (py) and libdfkv in C (C), "
          "each engine's test model layout" % PREFIX_TOKENS)
    head = "%-11s %6s %6s %8s %8s | %8s %8s %8s" % (
        "engine", "tok/bl", "blocks", "objects", "obj B", "conn", "py", "C")
    print(head)
    print("-" * len(head))
    for r in res:
        if "error" in r:
            continue
        p = r["prefix"]
        print("%-11s %6d %6d %8d %8d | %8.2f %8.2f %8.2f" % (
            r["engine"], p["block_tokens"], p["blocks"], p["objects"],
            p["object_bytes"], *[p[c]["load_ms"] for c in
                                 ("connector", "client", "libdfkv")]))


def report(a):
    out = os.path.join(REPO, "build", "bench-connectors.json")
    if os.path.exists(out):
        os.unlink(out)          # a stale one would pass for this run's
    res = [result_of(a.tmp, e) for e in a.engines]
    accel_file = os.path.join(REPO, "build", "vm", "accel")
    accel = open(accel_file).read().strip() if os.path.exists(accel_file) \
        else "unknown"
    table(res, accel)
    failed = [r["engine"] for r in res if "error" in r]
    if a.vm_status:
        print("bench/connectors: the VM's run failed (vm-run exit %d, "
              "kernel log or teardown)" % a.vm_status)
    if failed or a.vm_status:
        print("bench/connectors: REFUSED (%s), no JSON written" %
              ", ".join(failed or ["vm"]))
        return 1
    doc = {"accel": accel, "where": "engines on the host, dfkv.ko node in "
           "the VM over a forwarded TCP port", "engines": res}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    if os.path.exists(a.json):
        with open(a.json) as f:
            bench = json.load(f)
        bench["connectors"] = doc
        with open(a.json + ".tmp", "w") as f:
            json.dump(bench, f, indent=1)
        os.replace(a.json + ".tmp", a.json)
        print("bench/connectors: figures in %s and %s" % (out, a.json))
    else:
        print("bench/connectors: figures in %s (no %s to merge into)" %
              (out, a.json))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("engine", choices=ENGINES)
    r.add_argument("--members", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--rounds", type=int, default=25)
    r.add_argument("--warmup", type=int, default=2)
    r.add_argument("--prefix-rounds", type=int, default=7)
    p = sub.add_parser("report")
    p.add_argument("--json", required=True)
    p.add_argument("--tmp", required=True)
    p.add_argument("--vm-status", type=int, default=0)
    p.add_argument("engines", nargs="+")
    a = ap.parse_args()
    if a.cmd == "run":
        run(a)
        return 0
    return report(a)


if __name__ == "__main__":
    sys.exit(main())
