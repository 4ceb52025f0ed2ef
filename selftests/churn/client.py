# SPDX-License-Identifier: GPL-2.0
"""One client of selftests/dfkv_churn.sh: a mixed PUT/GET/LEASE workload
through mdsd discovery, every GET checked, until a stop file appears.

client.py run ID KIND TENANT SECRET ENDPOINTS GROUP NKEYS DIR
client.py tenant-hex TENANT
client.py seed|recheck TENANT SECRET ENDPOINTS GROUP NODE MEMBERS FILE

KIND names how the client is opened and how its keys are named: "lib"
(dfkv.Client and plain keys), "sglang" and "max" (the engine-free halves
of the connectors, dfkv.connectors.sglang_layout / max_layout with
common.open_client: the connectors themselves import their engines at
module level, and the VM has no engine packages).

Values are a function of the key (a KV block's key names its content),
so a GET that succeeds must return exactly value(key); a miss makes the
client PUT the key again, as an engine recomputes a block.

run writes DIR/c<ID>.log, JSON lines: one per second with the counters
of that second ("s"), and one per ring change ("ring": the epoch, the
members, the names its keys route to, the share of them that moved and
the ideal share, |members changed| / max(members)); and DIR/c<ID>.state,
one line "EPOCH MEMBERS OPS ERRORS WRONG NAMES" (NAMES: those its keys
route to, sorted, comma-separated), replaced every 0.2 s.  It stops when
DIR/stop exists.

seed PUTs keys of its own and writes to FILE those that route to NODE
once the ring has MEMBERS members; recheck (ring at MEMBERS again) GETs
them: "HITS MISSES WRONG", exit 1 on a wrong byte or an error.
"""
import hashlib
import json
import os
import random
import sys
import time

import dfkv
from dfkv.connectors import common, max_layout, sglang_layout

# PUT statuses that are a write dropped, not an error: the node is away,
# refuses for now, or does not know the tenant yet (re-created, its
# tenants being registered again).
DROPPED = {dfkv.STATUS[s] for s in ("CACHE_FULL", "BUSY", "FORBIDDEN")} | \
    {dfkv.ERRORS[e] for e in ("E_UNAVAILABLE", "E_TIMEOUT", "E_AUTH")}
MODEL, REVISION, DTYPE = "churn-model", "rev-1", "bfloat16"


def value(k):
    """The bytes of key k: 2..10 KiB from its digest."""
    d = hashlib.sha256(k).digest()
    return (d * 320)[:2048 + (d[0] << 5)]


def lib_ns(tenant):
    return dfkv.ns_build(tenant, "m", "r", "churn-v1", DTYPE, 1, 16, 2,
                         "full", (1, 1, 1, 1, 1))


def sglang_ns(tenant):
    fields = {"kind": "mha", "layout": "page_first", "page_size": 16,
              "layer_num": 2, "head_num": 1, "head_dim": 64,
              "v_head_dim": 64, "kv_lora_rank": 0, "qk_rope_head_dim": 0,
              "itemsize": 2, "regions": "4096,4096"}
    return sglang_layout.namespace(tenant, MODEL, REVISION, DTYPE, fields)


def max_ns(tenant):
    fields = {"group": "full", "window_size": 0, "dtype_bytes": 2,
              "head_dim": 64, "n_kv_heads_per_device": 1, "num_layers": 2,
              "page_size": 16, "bytes_per_page": 8192, "replicated": 1,
              "shards": 1, "quant": "none"}
    return max_layout.namespace(tenant, MODEL, REVISION, DTYPE, "leaf0",
                                fields, 1)


def keys_of(kind, tag, n):
    if kind == "sglang":
        ranks = sglang_layout.rank_fields(False, 1, 0, 1, 0, 1, 0, 1, 0)
        return [sglang_layout.object_key(
            hashlib.sha256(b"%s-%d" % (tag, i)).hexdigest(), ranks)
            for i in range(n)]
    if kind == "max":
        return [max_layout.object_key(
            hashlib.sha256(b"%s-%d" % (tag, i)).digest(), (1, -1))
            for i in range(n)]
    return [b"%s-%06d" % (tag, i) for i in range(n)]


NAMESPACES = {"lib": lib_ns, "sglang": sglang_ns, "max": max_ns}


def open_client(kind, tenant, secret, endpoints, group, cid):
    cfg = {"tenant": tenant, "mds_endpoints": endpoints, "group": group,
           "client_id": cid, "tenant_secret_file": secret,
           "connect_timeout_ms": "2000", "io_timeout_ms": "5000"}
    ns = NAMESPACES[kind](common.tenant_of(cfg))
    return common.open_client(cfg, ns)


def stat(c, name):
    for line in c.stats().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[-1]))
    return 0


class Second:
    """The counters of one second of the workload."""
    NAMES = ("put", "dropped", "get", "hit", "miss", "err", "wrong",
             "lease", "lease_hit")

    def __init__(self):
        self.n = dict.fromkeys(self.NAMES, 0)

    def add(self, name, k=1):
        self.n[name] += k


def run(cid, kind, tenant, secret, endpoints, group, nkeys, d):
    c = open_client(kind, tenant, secret, endpoints, group,
                    "churn-%s" % cid)
    keys = keys_of(kind, b"churn-%s" % cid.encode(), int(nkeys))
    rng = random.Random(int(cid))
    stored = []         # keys once PUT, in the order first stored
    known = set()
    log = open(os.path.join(d, "c%s.log" % cid), "w", buffering=1)
    state = os.path.join(d, "c%s.state" % cid)
    stop = os.path.join(d, "stop")
    total = Second()
    sec, sec_t = Second(), int(time.time())
    epoch, members = -1, -1
    routes, names = None, ""
    check_t = 0.0

    def count(name, k=1):
        sec.add(name, k)
        total.add(name, k)

    def put(k):
        st = c.put(k, value(k))
        count("put")
        if st == dfkv.OK:
            if k not in known:
                known.add(k)
                stored.append(k)
        elif st in DROPPED:
            count("dropped")
        else:
            count("err")
            log.write(json.dumps({"t": time.time(), "error": "put",
                                  "status": st}) + "\n")

    def get(k):
        st, v = c.get(k, cap=16384)
        count("get")
        if st == dfkv.OK:
            if v == value(k):
                count("hit")
            else:
                count("wrong")
        elif st == dfkv.NOT_FOUND:
            count("miss")
            put(k)
        else:
            count("err")
            log.write(json.dumps({"t": time.time(), "error": "get",
                                  "status": st}) + "\n")

    def lease(ks):
        count("lease")
        try:
            ls = c.lease(ks)
        except dfkv.DfkvError as e:
            count("err")
            log.write(json.dumps({"t": time.time(), "error": "lease",
                                  "status": e.status}) + "\n")
            return
        with ls:
            count("lease_hit", ls.hits)
            if any(ln != len(value(k))
                   for k, ln in zip(ks, ls.stored_lens)):
                count("wrong")

    while not os.path.exists(stop):
        now = time.time()
        if now >= check_t:
            check_t = now + 0.2
            e, m = stat(c, "dfkv_client_mds_epoch"), \
                stat(c, "dfkv_client_ring_members")
            if (e, m) != (epoch, members):
                moved = ideal = None
                new = [c.locate(k)[0] for k in keys]
                if routes is not None and m != members:
                    moved = sum(a != b for a, b in zip(routes, new)) / \
                        len(keys)
                    ideal = abs(m - members) / max(m, members)
                names = ",".join(sorted(set(new)))
                log.write(json.dumps({"t": now, "ring": e, "members": m,
                                      "names": names, "moved": moved,
                                      "ideal": ideal}) + "\n")
                epoch, members, routes = e, m, new
            tmp = state + ".tmp"
            with open(tmp, "w") as f:
                f.write("%d %d %d %d %d %s\n" % (
                    epoch, members, total.n["get"] + total.n["put"],
                    total.n["err"], total.n["wrong"], names))
            os.replace(tmp, state)
        if int(now) != sec_t:
            log.write(json.dumps({"t": sec_t, "s": sec.n}) + "\n")
            sec, sec_t = Second(), int(now)
        r = rng.random()
        if r < 0.3 or len(stored) < 8:
            put(rng.choice(keys))
        elif r < 0.9:
            get(rng.choice(stored))
        else:
            lease(rng.sample(stored, 4))
    log.write(json.dumps({"t": sec_t, "s": sec.n}) + "\n")
    log.write(json.dumps({"t": time.time(), "total": total.n}) + "\n")
    c.close()
    return 1 if total.n["err"] or total.n["wrong"] else 0


def wait_ring(c, members):
    """Until the client's ring has MEMBERS members (a hang guard)."""
    for _ in range(1200):
        if stat(c, "dfkv_client_ring_members") == members:
            return
        time.sleep(0.1)
    raise SystemExit("ring never had %d members" % members)


def seed(tenant, secret, endpoints, group, node, members, path):
    c = open_client("lib", tenant, secret, endpoints, group, "churn-seed")
    wait_ring(c, int(members))
    mine = []
    for k in keys_of("lib", b"warm", 400):
        if c.locate(k)[0] == node and c.put(k, value(k)) == dfkv.OK:
            mine.append(k.decode())
    c.close()
    with open(path, "w") as f:
        f.write("\n".join(mine) + "\n")
    print(len(mine))
    return 0 if mine else 1


def recheck(tenant, secret, endpoints, group, node, members, path):
    c = open_client("lib", tenant, secret, endpoints, group, "churn-seed")
    wait_ring(c, int(members))
    hits = misses = wrong = errors = 0
    with open(path) as f:
        for k in (line.strip().encode() for line in f if line.strip()):
            if c.locate(k)[0] != node:
                errors += 1
                continue
            st, v = c.get(k, cap=16384)
            if st == dfkv.OK:
                hits += v == value(k)
                wrong += v != value(k)
            elif st == dfkv.NOT_FOUND:
                misses += 1
            else:
                errors += 1
    c.close()
    print("%d %d %d %d" % (hits, misses, wrong, errors))
    return 1 if wrong or errors else 0


def tenant_hex(tenant):
    print("%016x" % dfkv.tenant_hash(lib_ns(tenant)))
    return 0


MODES = {"run": run, "seed": seed, "recheck": recheck,
         "tenant-hex": tenant_hex}

if __name__ == "__main__":
    sys.exit(MODES[sys.argv[1]](*sys.argv[2:]))
