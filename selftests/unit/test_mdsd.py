#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# mdsd's directory (SPEC.md section 7), each case on a fresh mdsd of the
# "mdsd" fixture (mdsd_fixture.py), run once per backend, memory and
# etcd, unless it tests what only the memory backend has (snapshots, the
# config file) or only mdsd's command line: register,
# list, heartbeat, epochs, long-poll, lease expiry, clients, hostile HTTP
# inputs (413/400/404/405, slow and garbage clients), /metrics, the
# snapshot across a restart, the config file, shutdown during a
# long-poll, and --token-file: the token file's rules, 401 for writes
# without the right bearer token (the directory unchanged, GETs open,
# failures counted), and dfkvctl members|clients del with and without the
# token; the member and client tokens (403 for the client token on
# /members, its /clients entry written), no start off loopback without a
# member token unless --insecure; the bounds: long-polls capped per peer
# (429) with a disconnected one's slot free at once, heartbeats served
# whatever one peer's 256 long-polls hold, the connections reserved for
# writes (503 for reads there), 400 waiting long-polls holding no thread
# each (mdsd's thread count from /proc, 2 request threads) while a heartbeat
# is served and a change answers them all; the group weight cap (409); /clients
# ownership: the client token writes only the entry its client key
# (X-Dfkv-Client-Key) created, 400 without a key, 403 for another key's
# (counted), the member token deletes any, a deleted or lapsed entry's id
# is free again, the owner survives a snapshot restart and is never
# listed.  TAP on stdout (unittap.run: -l lists the cases, -r
# mdsd.memory.expiry runs one, -v etcd one backend's); exit status
# non-zero on any failure.  Every wait is for an event, bounded only to
# catch a hang.  test_mdsd_etcd.py has what needs two mdsd on one etcd.

import http.client
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time

from mdsd_fixture import (DFKVCTL, HANG, MDSD, REPO, MdsdFixture, abandoned,
                          expect, free_port, gauge, held, long_poll,
                          long_poll_around, metric, raw, status_of, until,
                          waiters, write_file)
from unittap import run, test_f

# The tokens of the --token-file and two-token mdsd, the client keys.
TOK = "s3cret-Token_0123456789"
MTOK, CTOK = "member-T0ken_1", "client-T0ken_2"
KEY1 = {"X-Dfkv-Client-Key": "1" * 64}
KEY2 = {"X-Dfkv-Client-Key": "2" * 64}


def BEARER(tok):
    return {"Authorization": "Bearer " + tok}


def CLIENT(key):
    """The client token's headers with the client key key."""
    return dict(BEARER(CTOK), **key)


def directory(f, long_poll_ms=3000, start=True):
    """The mdsd most cases use: 2 s leases, 3 s long-polls, 1 s for a
    request to arrive, 40 long-polls at once from one address."""
    return f.mdsd("--ttl-ms", "2000", "--long-poll-ms", str(long_poll_ms),
                  "--conn-timeout-s", "1", "--max-connections-per-peer",
                  "64", "--max-long-polls-per-peer", "40", "-v",
                  start=start)


def register_n1(m):
    """Register member n1 of group g1; the epoch it made."""
    s, d, _ = m.put("g1", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                 "host": "h1", "ttl_ms": 5000})
    expect(s == 200 and d["created"] is True, "%d %r" % (s, d))
    expect(d["epoch"] > 0)
    return d["epoch"]


def drain_n1(m):
    """Register n1, then a heartbeat setting it draining; its epoch."""
    e1 = register_n1(m)
    s, d, _ = m.put("g1", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                 "host": "h1", "ttl_ms": 5000,
                                 "state": "draining", "id": "n1"})
    expect(s == 200 and d["epoch"] > e1, d)
    expect(m.list("g1")[1]["members"][0]["state"] == "draining")
    return d["epoch"]


def tokens(f):
    """The member and client token files in the case's directory and
    their headers: (mfile, member headers, cfile, client headers)."""
    mfile = write_file(f.path("member.token"), (MTOK + "\n").encode())
    cfile = write_file(f.path("client.token"), (CTOK + "\n").encode())
    return mfile, BEARER(MTOK), cfile, BEARER(CTOK)


def auth_mdsd(f):
    """An mdsd with --token-file, member n1 and client c1 of group ga
    registered with the token."""
    au = f.mdsd("--token-file", write_file(f.path("auth.token"),
                                           (TOK + "\n").encode()),
                name="auth")
    right = BEARER(TOK)
    s, d, _ = au.req("PUT", "/v1/groups/ga/members/n1",
                     {"tcp": "10.0.0.1:7400"}, right)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    s, d, _ = au.req("PUT", "/v1/groups/ga/clients/c1", {}, right)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    return au


def two_mdsd(f):
    """An mdsd with a member and a client token."""
    mfile, _, cfile, _ = tokens(f)
    return f.mdsd("--member-token-file", mfile, "--client-token-file",
                  cfile, name="two")


def member_writes(two):
    """The member token writes /members and administers /clients: n1
    of group gt registered, a client entry made and deleted."""
    mh = BEARER(MTOK)
    for path, body in [("members/n1", {"tcp": "10.0.0.1:7400"}),
                       ("clients/admin-made", {})]:
        s, d, _ = two.req("PUT", "/v1/groups/gt/" + path, body, mh)
        expect(s == 200 and d["created"], "%s: %d %r" % (path, s, d))
    s, d, _ = two.req("DELETE", "/v1/groups/gt/clients/admin-made",
                      None, mh)
    expect(s == 200, "%d %r" % (s, d))


def forbidden(two):
    return metric(two.req("GET", "/metrics")[1], "dfkv_mds_forbidden_total")


def ctl(*args, env=None):
    """dfkvctl without DFKV_MDS_TOKEN_FILE from this environment."""
    e = dict(os.environ)
    e.pop("DFKV_MDS_TOKEN_FILE", None)
    e.update(env or {})
    return subprocess.run([DFKVCTL] + list(args), capture_output=True,
                          timeout=HANG, env=e)


def reserved_poll(a, e, i):
    # The i-th long-poll waiting, from one of four addresses.  The
    # last read mdsd allows may find the previous /metrics read's
    # connection not yet closed on mdsd's side (answered 503, and so
    # may the /metrics read itself): then, once the poll was answered,
    # it is made again.
    def waiting():
        return waiters(a) == i + 1
    for _ in range(10):
        s = long_poll(a.port, "rs", e, "127.0.0.%d" % (2 + i % 4))
        answered = []

        def settled():
            if waiting():
                return True
            if select.select([s], [], [], 0)[0]:
                answered.append(s)
            return bool(answered)
        if until(settled) and not answered:
            return s
        s.close()
    raise AssertionError("long-poll %d not waiting" % i)


# ------------------------------------------------------------------ cases


@test_f(MdsdFixture)
def up(f):
    """Mdsd starts and answers /healthz."""
    m = directory(f, start=False)
    m.start()
    expect(m.req("GET", "/healthz")[0] == 200)


@test_f(MdsdFixture)
def ready(f):
    """/readyz is 200."""
    m = directory(f)
    s, _, _ = m.req("GET", "/readyz")
    expect(s == 200, "readyz %d" % s)


@test_f(MdsdFixture)
def register(f):
    """PUT registers a member."""
    register_n1(directory(f))


@test_f(MdsdFixture)
def list_members(f):
    """GET lists the member with every field."""
    m = directory(f)
    e1 = register_n1(m)
    s, d, _ = m.list("g1")
    expect(s == 200, s)
    expect(d["epoch"] == e1, d)
    expect(d["members"] == [{"id": "n1", "tcp": "127.0.0.1:7400",
                             "rdma": "", "weight": 2, "host": "h1",
                             "state": "up", "ttl_ms": 5000}], d)


@test_f(MdsdFixture)
def groups(f):
    """GET /v1/groups lists the group."""
    m = directory(f)
    register_n1(m)
    s, d, _ = m.req("GET", "/v1/groups")
    expect(s == 200 and d == {"groups": ["g1"]}, d)


@test_f(MdsdFixture)
def heartbeat_same(f):
    """A heartbeat renews without moving the epoch."""
    m = directory(f)
    e1 = register_n1(m)
    s, d, _ = m.put("g1", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                 "host": "h1", "ttl_ms": 5000})
    expect(s == 200 and d["created"] is False, d)
    expect(d["epoch"] == e1, "a heartbeat moved the epoch")


@test_f(MdsdFixture)
def heartbeat_change(f):
    """A changed heartbeat moves the epoch."""
    drain_n1(directory(f))


@test_f(MdsdFixture)
def get_one(f):
    """GET one member; 404 for an unknown one."""
    m = directory(f)
    e2 = drain_n1(m)
    s, d, _ = m.req("GET", "/v1/groups/g1/members/n1")
    expect(s == 200 and d["id"] == "n1" and d["epoch"] == e2, d)
    s, d, _ = m.req("GET", "/v1/groups/g1/members/nope")
    expect(s == 404, s)


@test_f(MdsdFixture)
def clients(f):
    """Clients register, list and delete apart from members."""
    m = directory(f)
    register_n1(m)
    s, d, _ = m.put("g1", "engine-0", {"host": "h9"}, kind="clients")
    expect(s == 200 and d["created"], d)
    s, d, _ = m.list("g1", "clients")
    expect([c["id"] for c in d["clients"]] == ["engine-0"], d)
    expect(d["clients"][0]["ttl_ms"] == 2000, "default ttl")
    ids = [x["id"] for x in m.list("g1")[1]["members"]]
    expect(ids == ["n1"], "a client entered the members: %r" % ids)
    s, d, _ = m.req("DELETE", "/v1/groups/g1/clients/engine-0")
    expect(s == 200, s)
    expect(m.list("g1", "clients")[1]["clients"] == [])


@test_f(MdsdFixture)
def delete(f):
    """DELETE removes and moves the epoch; twice is 404."""
    m = directory(f)
    register_n1(m)
    m.put("g1", "n2", {})
    e = m.list("g1")[1]["epoch"]
    s, d, _ = m.req("DELETE", "/v1/groups/g1/members/n2")
    expect(s == 200 and d["epoch"] > e, d)
    s, d, _ = m.req("DELETE", "/v1/groups/g1/members/n2")
    expect(s == 404, s)
    expect([x["id"] for x in m.list("g1")[1]["members"]] == ["n1"])


@test_f(MdsdFixture)
def longpoll_wakes(f):
    """Wait_epoch returns at the next change."""
    # no answer but the change's: the wait is 600 s
    m = directory(f, long_poll_ms=600000)
    e = m.list("g1")[1]["epoch"]
    r, _, ended = long_poll_around(m, "g1", "?wait_epoch=%d" % e,
                                   lambda: m.put("g1", "n3",
                                                 {"ttl_ms": 60000}))
    s, d, _ = r
    expect(s == 200 and d["epoch"] > e, d)
    expect(ended, "the long-poll did not wake")
    expect("n3" in [x["id"] for x in d["members"]])


@test_f(MdsdFixture)
def longpoll_many(f):
    """40 concurrent long-polls all wake."""
    m = directory(f, long_poll_ms=600000)
    m.put("g1", "n3", {"ttl_ms": 60000})
    e = m.list("g1")[1]["epoch"]
    out = []

    def poll():
        out.append(m.list("g1", query="?wait_epoch=%d" % e))
    ths = [threading.Thread(target=poll) for _ in range(40)]
    for th in ths:
        th.start()
    expect(until(lambda: waiters(m) == 40), "waiters: %r" % waiters(m))
    m.req("DELETE", "/v1/groups/g1/members/n3")
    for th in ths:
        th.join(HANG)
    expect(len(out) == 40, len(out))
    expect(all(s == 200 and d["epoch"] > e for s, d, _ in out))


@test_f(MdsdFixture)
def longpoll_timeout(f):
    """Wait_epoch returns after a bounded wait."""
    m = directory(f)
    e = m.list("g1")[1]["epoch"]
    t0 = time.time()
    s, d, _ = m.list("g1", query="?wait_epoch=%d&wait_ms=400" % e)
    dt = time.time() - t0
    expect(s == 200 and d["epoch"] == e, d)
    expect(dt > 0.35, "answered after %.2fs" % dt)
    # wait_ms above --long-poll-ms is capped at it (3 s)
    t0 = time.time()
    s, d, _ = m.list("g-empty", query="?wait_epoch=0&wait_ms=600000")
    dt = time.time() - t0
    expect(s == 200 and d["members"] == [] and dt > 2.5, dt)


@test_f(MdsdFixture)
def expiry(f):
    """An expired lease removes the member and moves the epoch."""
    m = directory(f)
    s, d, _ = m.put("g2", "short", {"ttl_ms": 300})
    e = d["epoch"]
    expect(until(lambda: m.list("g2")[1]["members"] == []),
           "the lease did not lapse")
    s, d, _ = m.list("g2")
    expect(d["members"] == [] and d["epoch"] > e, d)


@test_f(MdsdFixture)
def expiry_wakes_longpoll(f):
    """An expiry wakes a long-poll."""
    # only the expiry answers: the wait is 600 s
    m = directory(f, long_poll_ms=600000)
    s, d, _ = m.put("g2", "short2", {"ttl_ms": 400})
    s, d2, _ = m.list("g2", query="?wait_epoch=%d" % d["epoch"])
    expect(d2["members"] == [] and d2["epoch"] > d["epoch"], d2)
    expect(s == 200, s)


@test_f(MdsdFixture)
def renew_keeps(f):
    """Heartbeats keep a short lease alive."""
    m = directory(f)
    # renewed ten times a lease, for two and a half leases: each
    # heartbeat finds it alive (a lapse would take a stall of 1.8 s)
    m.put("g2", "kept", {"ttl_ms": 2000})
    end = time.time() + 5
    while time.time() < end:
        time.sleep(0.2)
        s, d, _ = m.put("g2", "kept", {"ttl_ms": 2000})
        expect(s == 200 and d["created"] is False, "%d %r" % (s, d))
    expect([x["id"] for x in m.list("g2")[1]["members"]] == ["kept"])


@test_f(MdsdFixture)
def too_large_cl(f):
    """413 for a body over the limit (Content-Length)."""
    m = directory(f)
    big = '{"host":"' + "a" * 70000 + '"}'
    s, d, _ = m.req("PUT", "/v1/groups/g1/members/x", big)
    expect(s == 413, s)


@test_f(MdsdFixture)
def too_large_chunked(f):
    """413 for a chunked body over the limit."""
    m = directory(f)
    body = b"a" * 70000
    req = (b"PUT /v1/groups/g1/members/x HTTP/1.1\r\nHost: t\r\n"
           b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
           (b"%x\r\n" % len(body)) + body + b"\r\n0\r\n\r\n")
    expect(status_of(raw(m.port, req)) == 413)


@test_f(MdsdFixture)
def endless_body(f):
    """413 at once for a huge declared body."""
    m = directory(f)
    # A huge declared body is refused at once, without reading it.
    req = (b"PUT /v1/groups/g1/members/x HTTP/1.1\r\nHost: t\r\n"
           b"Content-Length: 99999999999\r\n\r\n")
    expect(status_of(raw(m.port, req, shut=False)) == 413)
    # answered before any of the body was sent, and counted
    expect(metric(m.req("GET", "/metrics")[1],
                  'dfkv_mds_http_requests_total{method="PUT",code="413"}')
           == 1)


@test_f(MdsdFixture)
def bad_json(f):
    """400 for bad JSON."""
    m = directory(f)
    for body in ['{bad', '', '[1,2]', '"str"', '{"host":"a"} x',
                 '{"host":"a\\u0000b"}', "{\"host\":'a'}",
                 '{"host": "a"}\x00']:
        s, d, _ = m.req("PUT", "/v1/groups/g1/members/x", body)
        expect(s == 400, "%r -> %d" % (body, s))
        expect(isinstance(d, dict) and "error" in d, d)


@test_f(MdsdFixture)
def bad_fields(f):
    """400 for unknown fields, bad types and ranges."""
    m = directory(f)
    for body in [{"bogus": 1}, {"weight": "2"}, {"weight": 0},
                 {"weight": 1001}, {"weight": 1.5}, {"ttl_ms": 10},
                 {"ttl_ms": 10 ** 12}, {"ttl_ms": -1}, {"state": "zombie"},
                 {"tcp": "nohost"}, {"tcp": "a:0"}, {"tcp": "a:99999"},
                 {"tcp": "a b:1"}, {"rdma": 5}, {"host": "x" * 300},
                 {"host": None}, {"id": "other"}, {"id": 7},
                 {"weight": 2 ** 70}]:
        s, d, _ = m.req("PUT", "/v1/groups/g1/members/x", body)
        expect(s == 400, "%r -> %d %r" % (body, s, d))
    expect(m.req("GET", "/v1/groups/g1/members/x")[0] == 404)


@test_f(MdsdFixture)
def fuzz_bodies(f):
    """300 mutated bodies: 200 or 400, never a crash."""
    m = directory(f)
    import random
    rnd = random.Random(7)
    seeds = [b'{"tcp":"a:1","weight":2}', b'{"host":"h","ttl_ms":500}',
             b'{"state":"up","id":"x"}']
    for i in range(300):
        b = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 6)):
            op = rnd.randint(0, 2)
            pos = rnd.randrange(len(b) + 1)
            if op == 0:
                b[pos:pos] = bytes([rnd.randrange(256)])
            elif op == 1 and pos < len(b):
                del b[pos]
            elif pos < len(b):
                b[pos] = rnd.randrange(256)
        s = m.req("PUT", "/v1/groups/fz/members/x", bytes(b))[0]
        expect(s in (200, 400), "%r -> %d" % (bytes(b), s))
    expect(m.req("GET", "/healthz")[0] == 200)
    m.req("DELETE", "/v1/groups/fz/members/x")


@test_f(MdsdFixture)
def bad_ids(f):
    """400 for bad group and entry ids."""
    m = directory(f)
    for path in ["/v1/groups/" + "a" * 65 + "/members",
                 "/v1/groups/a%20b/members", "/v1/groups/a*b/members",
                 "/v1/groups/g1/members/" + "b" * 65,
                 "/v1/groups/g1/members/%C3%A9"]:
        s = m.req("GET", path)[0]
        expect(s == 400, "%s -> %d" % (path, s))
    s = m.req("PUT", "/v1/groups/g1/members/a$b", {})[0]
    expect(s == 400, s)


@test_f(MdsdFixture)
def bad_query(f):
    """400 for bad or unknown query parameters."""
    m = directory(f)
    for q in ["?x=1", "?wait_epoch=abc", "?wait_epoch=-1",
              "?wait_epoch=99999999999999999999999", "?wait_ms=5",
              "?wait_epoch=1&wait_ms=x"]:
        s = m.list("g1", query=q)[0]
        expect(s == 400, "%s -> %d" % (q, s))
    expect(m.req("PUT", "/v1/groups/g1/members/q?x=1", {})[0] == 400)


@test_f(MdsdFixture)
def not_found(f):
    """404 for unknown paths."""
    m = directory(f)
    for path in ["/", "/v1", "/v1/", "/v2/groups", "/v1/groups/",
                 "/v1/groups/g1", "/v1/groups/g1/", "/v1/groups/g1/nodes",
                 "/v1/groups/g1/members/n1/x", "/v1/groups//members",
                 "/metrics/x", "/v1/groups/g1/members/n1/"]:
        s = m.req("GET", path)[0]
        expect(s == 404, "%s -> %d" % (path, s))


@test_f(MdsdFixture)
def wrong_method(f):
    """405 with Allow for wrong methods."""
    m = directory(f)
    for meth, path, allow in [
            ("POST", "/v1/groups/g1/members/n1", "PUT"),
            ("PUT", "/v1/groups/g1/members", "GET"),
            ("DELETE", "/v1/groups", "GET"),
            ("POST", "/metrics", "GET"),
            ("PATCH", "/v1/groups/g1/clients/c", "DELETE"),
            ("PUT", "/readyz", "GET")]:
        s, _, h = m.req(meth, path, "{}")
        expect(s == 405, "%s %s -> %d" % (meth, path, s))
        expect(allow in h.get("allow", ""), h)


@test_f(MdsdFixture)
def slow_client(f):
    """A slow client times out, others are served."""
    m = directory(f)
    s = socket.create_connection(("127.0.0.1", m.port), timeout=HANG)
    s.sendall(b"GET /v1/groups HTTP/1.1\r\nHo")
    # the server answers others meanwhile
    expect(m.req("GET", "/healthz")[0] == 200)
    data = s.recv(100)
    rest = s.recv(100) if data else b""
    s.close()
    expect(data == b"" or b"408" in data or b"400" in data, data)
    # mdsd dropped it after --conn-timeout-s (1 s): the reads ended
    expect(rest == b"", rest)


@test_f(MdsdFixture)
def garbage(f):
    """Garbage requests do not hurt mdsd."""
    m = directory(f)
    for junk in [b"\x00\xff\xfe garbage\r\n\r\n", b"GET\r\n\r\n",
                 b"GET / HTTP/9.9\r\n\r\n",
                 b"GET /v1/groups HTTP/1.1\r\nHost: a\r\n" +
                 b"X: " + b"y" * 100000 + b"\r\n\r\n",
                 b"PUT /v1/groups/g1/members/z HTTP/1.1\r\nHost: a\r\n"
                 b"Content-Length: -5\r\n\r\n"]:
        try:
            raw(m.port, junk)
        except OSError:
            pass
    expect(m.req("GET", "/healthz")[0] == 200, "mdsd died")
    expect(m.proc.poll() is None)


@test_f(MdsdFixture)
def metrics(f):
    """/metrics: Prometheus text with directory and counters."""
    m = directory(f)
    register_n1(m)
    # what the counters below count: a 413 and two lapsed leases
    expect(m.req("PUT", "/v1/groups/g1/members/x",
                 '{"host":"' + "a" * 70000 + '"}')[0] == 413)
    for i in range(2):
        m.put("g2", "lapse%d" % i, {"ttl_ms": 300})
    expect(until(lambda: m.list("g2")[1]["members"] == []),
           "the leases did not lapse")
    m.put("g1", "n1", {"state": "draining"})
    s, text, h = m.req("GET", "/metrics")
    expect(s == 200 and h["content-type"].startswith("text/plain"))
    for want in ['dfkv_mds_epoch{group="g1",kind="members"} ',
                 'dfkv_mds_members{group="g1",state="draining"} 1',
                 'dfkv_mds_clients{group="g1"} 0',
                 'dfkv_mds_http_requests_total{method="PUT",code="413"}',
                 'dfkv_mds_lease_expiries_total ',
                 'dfkv_mds_registrations_total ', 'dfkv_mds_ready 1']:
        expect(want in text, "missing %r" % want)
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, val = line.rsplit(" ", 1)
            float(val)
            expect(name.startswith("dfkv_"), line)
    exp = [ln for ln in text.splitlines()
           if ln.startswith("dfkv_mds_lease_expiries_total ")]
    # the memory backend counts the two; etcd expires leases itself
    n = int(exp[0].split()[1])
    expect(n >= 2 if f.variant["counts_expiries"] else n == 0, exp)


@test_f(MdsdFixture, ("memory",))
def snapshot(f):
    """The snapshot keeps the directory across a restart."""
    snap = f.path("dir.json")
    a = f.mdsd("--snapshot", snap, "--ttl-ms", "30000", name="snap")
    try:
        a.put("gs", "n1", {"tcp": "10.0.0.1:7400", "weight": 3})
        a.put("gs", "n2", {"ttl_ms": 300})
        a.put("gs", "c1", {}, kind="clients")
        before = a.list("gs")[1]
        expect(a.stop() == 0, "exit status")
    finally:
        a.stop()
    expect(os.path.exists(snap), "no snapshot file")
    time.sleep(0.4)        # n2's lease lapses while mdsd is down
    b = f.mdsd("--snapshot", snap, port=a.port, name="snap")
    try:
        after = b.list("gs")[1]
        ids = [x["id"] for x in after["members"]]
        expect(ids == ["n1"], ids)
        expect(after["members"][0] == before["members"][0])
        expect(after["epoch"] > before["epoch"], "epoch went back")
        expect([c["id"] for c in b.list("gs", "clients")[1]["clients"]]
               == ["c1"])
    finally:
        b.stop()


@test_f(MdsdFixture, ("memory",))
def snapshot_corrupt(f):
    """A corrupt snapshot is set aside."""
    snap = f.path("bad.json")
    with open(snap, "w") as fh:
        fh.write('{"version": 1, "revision": ')
    a = f.mdsd("--snapshot", snap, name="bad")
    try:
        expect(a.list("gx")[1]["members"] == [])
        expect(os.path.exists(snap + ".corrupt"))
    finally:
        a.stop()


@test_f(MdsdFixture, ("memory",))
def config_file(f):
    """Config file and bad settings."""
    conf = f.path("mdsd.conf")
    port = free_port()
    with open(conf, "w") as fh:
        fh.write("# sample\nlisten = 127.0.0.1:%d\nbackend = memory\n"
                "ttl-ms = 4321\n\nlong-poll-ms=1000\n" % port)
    a = f.mdsd("--config", conf, port=port, name="conf", start=False)
    a.args = ["--config", conf]
    a.start()
    try:
        a.put("gc", "n", {})
        expect(a.list("gc")[1]["members"][0]["ttl_ms"] == 4321)
    finally:
        a.stop()
    with open(conf, "w") as fh:
        fh.write("listen = 127.0.0.1:1\nbogus = 1\n")
    r = subprocess.run([MDSD, "--config", conf], capture_output=True,
                       timeout=HANG)
    expect(r.returncode == 2, r)
    for bad in [["--backend", "zk"], ["--ttl-ms", "x"], ["--nope"],
                ["--group", "a/b"], ["--advertise", "n1"],
                ["--listen", "nowhere"]]:
        r = subprocess.run([MDSD] + bad, capture_output=True, timeout=HANG)
        expect(r.returncode != 0, "%r accepted" % bad)


@test_f(MdsdFixture, ("memory",))
def sample_config(f):
    """The sample config tools/systemd/mdsd.conf."""
    mfile, _, cfile, _ = tokens(f)
    mh, ch = BEARER(MTOK), BEARER(CTOK)
    # tools/systemd/mdsd.conf is valid; the command line overrides it.
    conf = os.path.join(REPO, "tools", "systemd", "mdsd.conf")
    a = f.mdsd(name="sample", start=False)
    a.args = ["--config", conf, "--listen", "127.0.0.1:%d" % a.port,
              "--snapshot", f.path("sample.json"),
              "--member-token-file", mfile, "--client-token-file",
              cfile]
    a.start()
    try:
        s, d, _ = a.req("PUT", "/v1/groups/default/members/n", {}, mh)
        expect(s == 200 and d["ttl_ms"] == 10000, d)
        expect(a.req("PUT", "/v1/groups/default/members/x", {},
                     ch)[0] == 403)
    finally:
        expect(a.stop() == 0)
    # as shipped it listens off loopback: its token files are needed
    r = subprocess.run([MDSD, "--config", conf, "--snapshot",
                        f.path("sample2.json")],
                       capture_output=True, timeout=HANG)
    expect(r.returncode == 2 and b"member-token" in r.stderr, r)


@test_f(MdsdFixture)
def stop_during_longpoll(f):
    """SIGTERM during a long-poll stops at once."""
    # the wait is 600 s: only the stop ends it
    a = f.mdsd("--long-poll-ms", "600000", name="stop")
    res = {}

    def poll():
        try:
            res["r"] = a.list("gz", query="?wait_epoch=%d" %
                              a.list("gz")[1]["epoch"])
        except OSError as e:
            res["r"] = e
    th = threading.Thread(target=poll)
    th.start()
    expect(until(lambda: waiters(a) == 1), "the long-poll is not waiting")
    rc = a.stop()
    th.join(HANG)
    expect(rc == 0, rc)
    expect(not th.is_alive(), "the long-poll outlived the stop")


@test_f(MdsdFixture, ("memory",))
def token_file_rules(f):
    """--token-file: bad files refused, a 4096-byte token works."""
    # refused with exit status 2 and the reason; nothing listens
    for name, data, mode, why in [
            ("mode 0644", b"tok\n", 0o644, "group or other"),
            ("mode 0640", b"tok\n", 0o640, "group or other"),
            ("empty", b"", 0o600, "empty"),
            ("only a newline", b"\n", 0o600, "empty"),
            ("4097 bytes", b"a" * 4097, 0o600, "larger than 4096"),
            ("4096 bytes and a newline", b"a" * 4096 + b"\n", 0o600,
             "larger than 4096"),
            ("a space", b"to ken\n", 0o600, "printable"),
            ("two newlines", b"tok\n\n", 0o600, "printable"),
            ("a NUL", b"to\0ken", 0o600, "printable")]:
        path = write_file(f.path("bad.token"), data, mode)
        r = subprocess.run([MDSD, "--listen", "127.0.0.1:%d" % free_port(),
                            "--token-file", path],
                           capture_output=True, timeout=HANG)
        expect(r.returncode == 2 and why.encode() in r.stderr,
               "%s: %d %r" % (name, r.returncode, r.stderr))
    r = subprocess.run([MDSD, "--token-file", f.path("none")],
                       capture_output=True, timeout=HANG)
    expect(r.returncode == 2 and b"No such file" in r.stderr, r)
    # the largest token: 4096 bytes without a newline
    big = write_file(f.path("big.token"), b"b" * 4096)
    a = f.mdsd("--token-file", big, name="big")
    try:
        hdr = {"Authorization": "Bearer " + "b" * 4096}
        expect(a.put("gb", "n", {})[0] == 401, "no token accepted")
        s, d, _ = a.req("PUT", "/v1/groups/gb/members/n", {}, hdr)
        expect(s == 200 and d["created"], "%d %r" % (s, d))
    finally:
        expect(a.stop() == 0)


@test_f(MdsdFixture)
def auth_start(f):
    """--token-file: writes with the token register."""
    auth_mdsd(f)


@test_f(MdsdFixture)
def auth_refused(f):
    """--token-file: PUT/DELETE without, with a wrong, a prefix or a longer
    token: 401, directory unchanged, counted."""
    au = auth_mdsd(f)
    tok = TOK
    before = (au.list("ga")[1], au.list("ga", "clients")[1])
    s, text, _ = au.req("GET", "/metrics")
    fail0 = metric(text, "dfkv_mds_auth_failures_total")
    expect(fail0 == 0, "failures before: %r" % fail0)
    bad = [None,
           {"Authorization": "Bearer wrong"},
           {"Authorization": "Bearer " + tok[:-1]},	# a prefix
           {"Authorization": "Bearer " + tok[:1]},
           {"Authorization": "Bearer " + tok + "9"},	# longer
           {"Authorization": "Bearer " + tok.upper()},
           {"Authorization": "Bearer "},
           {"Authorization": "Bearer"},
           {"Authorization": tok},
           {"Authorization": "Basic czNjcmV0OnRva2Vu"},
           {"X-Token": tok}]
    writes = [("PUT", "/v1/groups/ga/members/n1", {"tcp": "10.6.6.6:7400"}),
              ("PUT", "/v1/groups/ga/members/rogue",
               {"tcp": "10.6.6.6:7400", "weight": 1000}),
              ("DELETE", "/v1/groups/ga/members/n1", None),
              ("PUT", "/v1/groups/ga/clients/c2", {}),
              ("DELETE", "/v1/groups/ga/clients/c1", None),
              ("PUT", "/v1/groups/other/members/x", {})]
    n = 0
    for h in bad:
        for method, path, body in writes:
            s, d, hd = au.req(method, path, body, h)
            n += 1
            expect(s == 401, "%s %s %r: %d" % (method, path, h, s))
            expect(isinstance(d, dict) and d.get("error"), d)
            www = hd.get("www-authenticate", "")
            expect(www.startswith("Bearer realm=\"mdsd\""), www)
            presented = h and h.get("Authorization", "").startswith(
                "Bearer ")
            expect(("invalid_token" in www) == bool(presented),
                   "%r: %s" % (h, www))
    # a refused write's body is not read: one over --body-limit is
    # 401, not 413
    s, d, _ = au.req("PUT", "/v1/groups/ga/members/n1",
                     "x" * (1 << 17), {"Authorization": "Bearer no"})
    expect(s == 401, s)
    n += 1
    after = (au.list("ga")[1], au.list("ga", "clients")[1])
    expect(after == before, "the directory changed: %r -> %r" %
           (before, after))
    expect(au.req("GET", "/v1/groups")[1] == {"groups": ["ga"]})
    s, text, _ = au.req("GET", "/metrics")
    expect(metric(text, "dfkv_mds_auth_failures_total") == n,
           "%r != %d" % (metric(text, "dfkv_mds_auth_failures_total"), n))
    req = 'dfkv_mds_http_requests_total{method="%s",code="401"}'
    puts, dels = metric(text, req % "PUT"), metric(text, req % "DELETE")
    expect(puts is not None and dels is not None and puts + dels == n,
           "%r + %r != %d" % (puts, dels, n))


@test_f(MdsdFixture)
def auth_gets_open(f):
    """--token-file: GETs stay open."""
    au = auth_mdsd(f)
    for path in ["/v1/groups", "/v1/groups/ga/members",
                 "/v1/groups/ga/members/n1", "/v1/groups/ga/clients",
                 "/v1/groups/ga/clients/c1", "/healthz", "/readyz",
                 "/metrics"]:
        expect(au.req("GET", path)[0] == 200, path)
    expect(au.req("HEAD", "/v1/groups/ga/members")[0] == 200)


@test_f(MdsdFixture)
def auth_right_token(f):
    """--token-file: the right token writes."""
    au = auth_mdsd(f)
    tok, right = TOK, BEARER(TOK)
    e = au.list("ga")[1]["epoch"]
    s, d, _ = au.req("PUT", "/v1/groups/ga/members/n2",
                     {"tcp": "10.0.0.2:7400"}, right)
    expect(s == 200 and d["created"] and d["epoch"] > e, d)
    # the scheme is case-insensitive (RFC 7235), spaces may repeat
    s, d, _ = au.req("DELETE", "/v1/groups/ga/members/n2", None,
                     {"Authorization": "bearer   " + tok})
    expect(s == 200, "%d %r" % (s, d))
    expect([x["id"] for x in au.list("ga")[1]["members"]] == ["n1"])
    # the usual answers once authorized: 400, 404
    expect(au.req("PUT", "/v1/groups/ga/members/n3", "{", right)[0] == 400)
    expect(au.req("DELETE", "/v1/groups/ga/members/n3", None,
                  right)[0] == 404)


@test_f(MdsdFixture)
def dfkvctl_del(f):
    """Dfkvctl members|clients del with and without the token."""
    au = auth_mdsd(f)
    tok = TOK
    expect(os.path.exists(DFKVCTL), "no " + DFKVCTL)
    url = "http://127.0.0.1:%d" % au.port
    wrong = write_file(f.path("wrong.token"), b"wrong\n")
    loose = write_file(f.path("loose.token"),
                       (tok + "\n").encode(), 0o644)
    good = f.path("auth.token")
    ids = lambda kind="members": [x["id"] for x in  # noqa: E731
                                  au.list("ga", kind)[1][kind]]
    # reads need no token
    r = ctl("members", "--mds", url, "--group", "ga")
    expect(r.returncode == 0 and b"n1" in r.stdout, r)
    r = ctl("members", "del", "n1", "--mds", url, "--group", "ga")
    expect(r.returncode == 3 and b"HTTP 401" in r.stderr and
           b"--token-file" in r.stderr, r)
    r = ctl("members", "del", "n1", "--mds", url, "--group", "ga",
            "--token-file", wrong)
    expect(r.returncode == 3 and b"wrong bearer token" in r.stderr, r)
    r = ctl("members", "del", "n1", "--mds", url, "--group", "ga",
            "--token-file", loose)
    expect(r.returncode == 2 and b"chmod 600" in r.stderr, r)
    expect(ids() == ["n1"], ids())
    r = ctl("members", "del", "n1", "--mds", url, "--group", "ga",
            "--token-file", good)
    expect(r.returncode == 0 and b"deleted n1 from ga" in r.stdout, r)
    expect(ids() == [], ids())
    r = ctl("members", "del", "n1", "--mds", url, "--group", "ga",
            "--token-file", good)
    expect(r.returncode == 3 and b"HTTP 404" in r.stderr, r)
    # clients, the token from the environment, JSON
    r = ctl("clients", "--mds", url, "--group", "ga", "del", "c1",
            "--json", env={"DFKV_MDS_TOKEN_FILE": good})
    expect(r.returncode == 0 and json.loads(r.stdout)["id"] == "c1", r)
    expect(ids("clients") == [], ids("clients"))
    r = ctl("members", "del", "--mds", url)
    expect(r.returncode == 2, r)


@test_f(MdsdFixture)
def two_tokens_member(f):
    """Member token: /members and /clients."""
    member_writes(two_mdsd(f))


@test_f(MdsdFixture)
def two_tokens_client(f):
    """Client token: 403 on /members, its /clients entry written."""
    two = two_mdsd(f)
    member_writes(two)
    ch = BEARER(CTOK)
    c1 = dict(ch, **KEY1)
    before = two.list("gt")[1]
    for method, path, body in [
            ("PUT", "/v1/groups/gt/members/rogue",
             {"tcp": "10.6.6.6:7400", "weight": 1000}),
            ("PUT", "/v1/groups/gt/members/n1", {"tcp": "10.6.6.6:7400"}),
            ("DELETE", "/v1/groups/gt/members/n1", None),
            ("PUT", "/v1/groups/other/members/x", {})]:
        s, d, _ = two.req(method, path, body, ch)
        expect(s == 403 and isinstance(d, dict) and d.get("error"),
               "%s %s: %d %r" % (method, path, s, d))
    expect(two.list("gt")[1] == before, "the members changed")
    expect(two.req("GET", "/v1/groups")[1] == {"groups": ["gt"]})
    # its own /clients entry: registered, renewed, deleted
    s, d, _ = two.req("PUT", "/v1/groups/gt/clients/engine-1",
                      {"ttl_ms": 60000}, c1)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    s, d, _ = two.req("PUT", "/v1/groups/gt/clients/engine-1",
                      {"ttl_ms": 60000}, c1)
    expect(s == 200 and not d["created"], "%d %r" % (s, d))
    ids = [x["id"] for x in two.list("gt", "clients")[1]["clients"]]
    expect(ids == ["engine-1"], ids)
    s, d, _ = two.req("DELETE", "/v1/groups/gt/clients/engine-1", None,
                      c1)
    expect(s == 200, "%d %r" % (s, d))
    s, text, _ = two.req("GET", "/metrics")
    expect(metric(text, "dfkv_mds_forbidden_total") == 4, text[-300:])


@test_f(MdsdFixture)
def two_tokens_refused(f):
    """Two tokens: none, a wrong or a mixed one is 401."""
    two = two_mdsd(f)
    member_writes(two)
    ctok, mtok = CTOK, MTOK
    for h in [None, {"Authorization": "Bearer wrong"},
              {"Authorization": "Bearer " + ctok + mtok},
              {"Authorization": "Bearer " + ctok[:-1]},
              {"Authorization": "Bearer " + mtok[:-1]}]:
        for path in ["/v1/groups/gt/members/n2",
                     "/v1/groups/gt/clients/engine-2"]:
            for method in ["PUT", "DELETE"]:
                s, d, _ = two.req(method, path,
                                  {} if method == "PUT" else None, h)
                expect(s == 401, "%s %s %r: %d" % (method, path, h, s))
    expect([x["id"] for x in two.list("gt")[1]["members"]] == ["n1"])
    expect(two.list("gt", "clients")[1]["clients"] == [])


@test_f(MdsdFixture)
def owner_keys(f):
    """Client token: another key cannot renew, change or delete an entry (403,
    counted), its owner can."""
    two = two_mdsd(f)
    c1, c2 = CLIENT(KEY1), CLIENT(KEY2)
    path = "/v1/groups/go/clients/engine"
    one = {"ttl_ms": 60000, "host": "one"}
    f0 = forbidden(two)
    s, d, _ = two.req("PUT", path, one, c1)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    # the same token, another key: no renewal, change or delete
    for method, body in [("PUT", one),
                         ("PUT", {"ttl_ms": 60000, "host": "two"}),
                         ("PUT", {"ttl_ms": 100}),
                         ("DELETE", None)]:
        s, d, _ = two.req(method, path, body, c2)
        expect(s == 403 and "another client key" in d["error"],
               "%s %r: %d %r" % (method, body, s, d))
    expect(forbidden(two) == f0 + 4, "%r != %r + 4" % (forbidden(two), f0))
    s, d, _ = two.req("GET", path)
    expect(s == 200 and d["host"] == "one" and d["ttl_ms"] == 60000,
           d)
    # never listed
    expect("owner" not in d, d)
    expect(all("owner" not in x for x in
               two.list("go", "clients")[1]["clients"]))
    # the owner still renews and changes it
    s, d, _ = two.req("PUT", path, one, c1)
    expect(s == 200 and not d["created"], "%d %r" % (s, d))
    s, d, _ = two.req("PUT", path, {"ttl_ms": 60000, "host": "one-b"},
                      c1)
    expect(s == 200 and two.req("GET", path)[1]["host"] == "one-b", d)


@test_f(MdsdFixture)
def owner_key_needed(f):
    """Client token: a /clients write needs a well-formed key (400)."""
    two = two_mdsd(f)
    ch = BEARER(CTOK)
    s, d, _ = two.req("PUT", "/v1/groups/go/clients/engine",
                      {"ttl_ms": 60000}, CLIENT(KEY1))
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    path = "/v1/groups/go/clients/engine"
    before = two.list("go", "clients")[1]
    for key in [None, "x" * 31, "x" * 257, "x" * 20 + " " + "x" * 20]:
        h = dict(ch, **({"X-Dfkv-Client-Key": key} if key else {}))
        for method, body in [("PUT", {}), ("DELETE", None)]:
            s, d, _ = two.req(method, path, body, h)
            expect(s == 400 and "X-Dfkv-Client-Key" in d["error"],
                   "%s %r: %d %r" % (method, key, s, d))
    # a fresh id too: nothing is created without a key
    s, d, _ = two.req("PUT", "/v1/groups/go/clients/keyless", {}, ch)
    expect(s == 400, "%d %r" % (s, d))
    expect(two.list("go", "clients")[1] == before, "the clients changed")


@test_f(MdsdFixture)
def owner_admin_and_free(f):
    """The member token deletes any client entry; a deleted or lapsed one's id
    is free again."""
    two = two_mdsd(f)
    mh, c1, c2 = BEARER(MTOK), CLIENT(KEY1), CLIENT(KEY2)
    s, d, _ = two.req("PUT", "/v1/groups/go/clients/engine",
                      {"ttl_ms": 60000}, c1)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    path = "/v1/groups/go/clients/engine"
    # the member token deletes any entry
    s, d, _ = two.req("DELETE", path, None, mh)
    expect(s == 200, "%d %r" % (s, d))
    # the id is free: the other key takes it, the first is refused now
    s, d, _ = two.req("PUT", path, {"ttl_ms": 60000}, c2)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    expect(two.req("PUT", path, {"ttl_ms": 60000}, c1)[0] == 403)
    expect(two.req("DELETE", path, None, c2)[0] == 200)
    # a lapsed lease frees the id as well
    s, d, _ = two.req("PUT", "/v1/groups/go/clients/brief",
                      {"ttl_ms": 300}, c1)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    expect(until(lambda: two.req("GET", "/v1/groups/go/clients/brief")
                 [0] == 404), "the lease did not lapse")
    s, d, _ = two.req("PUT", "/v1/groups/go/clients/brief",
                      {"ttl_ms": 60000}, c2)
    expect(s == 200 and d["created"], "%d %r" % (s, d))


@test_f(MdsdFixture, ("memory",))
def owner_snapshot(f):
    """A client entry's owner survives a snapshot restart."""
    mfile, _, cfile, _ = tokens(f)
    c1, c2 = CLIENT(KEY1), CLIENT(KEY2)
    snap = f.path("owner.json")
    args = ("--member-token-file", mfile, "--client-token-file", cfile,
            "--snapshot", snap)
    a = f.mdsd(*args, name="owner")
    try:
        s, d, _ = a.req("PUT", "/v1/groups/gs/clients/e",
                        {"ttl_ms": 600000}, c1)
        expect(s == 200 and d["created"], "%d %r" % (s, d))
    finally:
        expect(a.stop() == 0)
    with open(snap) as fh:
        expect('"owner"' in fh.read(), "no owner in the snapshot")
    a = f.mdsd(*args, port=a.port, name="owner")
    try:
        expect(a.req("PUT", "/v1/groups/gs/clients/e",
                     {"ttl_ms": 600000}, c2)[0] == 403)
        s, d, _ = a.req("PUT", "/v1/groups/gs/clients/e",
                        {"ttl_ms": 600000}, c1)
        expect(s == 200 and not d["created"], "%d %r" % (s, d))
        expect("owner" not in a.req("GET", "/v1/groups/gs/clients/e")[1])
    finally:
        expect(a.stop() == 0)


@test_f(MdsdFixture, ("memory",))
def two_tokens_rules(f):
    """--client-token-file needs another --member-token-file."""
    mfile, _, cfile, _ = tokens(f)
    port = "127.0.0.1:%d" % free_port()
    r = subprocess.run([MDSD, "--listen", port, "--client-token-file",
                        cfile], capture_output=True, timeout=HANG)
    expect(r.returncode == 2 and b"needs --member-token-file" in
           r.stderr, r)
    r = subprocess.run([MDSD, "--listen", port, "--member-token-file",
                        mfile, "--client-token-file", mfile],
                       capture_output=True, timeout=HANG)
    expect(r.returncode == 2 and b"the same token" in r.stderr, r)
    r = subprocess.run([MDSD, "--help"], capture_output=True, timeout=HANG)
    for opt in [b"--member-token-file", b"--client-token-file",
                b"--token-file", b"--insecure",
                b"--max-connections-per-peer",
                b"--reserved-write-connections", b"--max-long-polls",
                b"--max-long-polls-per-peer", b"--max-group-weight"]:
        expect(opt in r.stdout, opt)


@test_f(MdsdFixture, ("memory",))
def insecure(f):
    """Off loopback: no start without a member token or --insecure."""
    mfile = tokens(f)[0]
    port = free_port()
    for listen in ["0.0.0.0:%d" % port, "[::]:%d" % port]:
        r = subprocess.run([MDSD, "--listen", listen],
                           capture_output=True, timeout=HANG)
        expect(r.returncode == 2 and b"--insecure" in r.stderr, r)
    for extra in [["--insecure"], ["--member-token-file", mfile]]:
        a = f.mdsd(name="insecure", start=False)
        a.args = ["--listen", "0.0.0.0:%d" % a.port] + extra
        a.start()
        expect(a.stop() == 0)


@test_f(MdsdFixture)
def longpoll_per_peer(f):
    """Long-polls per peer: 429 beyond, a closed one's slot free at once."""
    mfile, mh = tokens(f)[:2]
    a = f.mdsd("--member-token-file", mfile, "--long-poll-ms", "600000",
               "--max-long-polls-per-peer", "4", name="lp")
    with held(a) as socks:
        e = a.list("lp")[1]["epoch"]
        for i in range(4):
            socks.append(long_poll(a.port, "lp", e, "127.0.0.2"))
            expect(until(lambda: waiters(a) == i + 1),
                   "long-poll %d not waiting" % i)
        # a fifth from that address: 429 at once
        s = long_poll(a.port, "lp", e, "127.0.0.2")
        socks.append(s)
        head = s.recv(4096)
        expect(status_of(head) == 429 and b"Retry-After" in head, head)
        # another address has its own
        socks.append(long_poll(a.port, "lp", e, "127.0.0.3"))
        expect(until(lambda: waiters(a) == 5))
        # a disconnected long-poll's slot is free at once (the wait
        # is 600 s): another one from that address is admitted
        socks.pop(0).close()
        expect(until(lambda: waiters(a) == 4),
               "the closed long-poll still waits")
        expect(until(lambda: abandoned(a) == 1), abandoned(a))
        socks.append(long_poll(a.port, "lp", e, "127.0.0.2"))
        expect(until(lambda: waiters(a) == 5))
        expect(gauge(a, "dfkv_mds_long_poll_refusals_total") == 1)
        # a change still answers the waiting ones
        expect(a.req("PUT", "/v1/groups/lp/members/n", {}, mh)[0] == 200)
        expect(until(lambda: waiters(a) == 0))


@test_f(MdsdFixture)
def longpoll_flood(f):
    """256 long-polls from one peer: heartbeats served, slots freed at its
    disconnect."""
    mfile, mh = tokens(f)[:2]
    # 256 long-polls from one address held every connection: the
    # heartbeats failed and the members expired
    a = f.mdsd("--member-token-file", mfile, "--long-poll-ms", "600000",
               name="flood")
    with held(a) as socks:
        expect(a.req("PUT", "/v1/groups/fl/members/n1",
                     {"ttl_ms": 600000}, mh)[0] == 200)
        e = a.list("fl")[1]["epoch"]
        for _ in range(256):
            try:
                socks.append(long_poll(a.port, "fl", e, "127.0.0.2"))
            except OSError:
                pass
        expect(until(lambda: waiters(a) == 8), "waiters: %r" % waiters(a))
        for i in range(20):
            s, d, _ = a.req("PUT", "/v1/groups/fl/members/n1",
                            {"ttl_ms": 600000}, mh)
            expect(s == 200, "heartbeat %d: %d %r" % (i, s, d))
        expect(a.list("fl")[0] == 200)
        expect(waiters(a) == 8)
        while socks:
            socks.pop().close()
        # every slot is free at once, not after the 600 s wait
        expect(until(lambda: waiters(a) == 0), "waiters: %r" % waiters(a))
        expect(until(lambda: abandoned(a) == 8), abandoned(a))


def threads(m):
    """m's thread count (/proc/PID/task)."""
    return len(os.listdir("/proc/%d/task" % m.proc.pid))


def answer(sock):
    """The status and JSON body of the answer sock's request gets."""
    r = http.client.HTTPResponse(sock, method="GET")
    r.begin()
    return r.status, json.loads(r.read())


@test_f(MdsdFixture)
def longpoll_no_thread(f):
    """400 waiting long-polls on 2 request threads hold no thread each: a
    heartbeat is served among them, a change answers them all."""
    n, peers = 400, 8
    a = f.mdsd("--long-poll-ms", "600000", "--http-threads", "2",
               "--max-connections", "1024", "--max-connections-per-peer",
               "1024", "--max-long-polls", str(n),
               "--max-long-polls-per-peer", str(n // peers), name="nothr")
    with held(a) as socks:
        expect(a.put("nt", "n1", {"ttl_ms": 600000})[0] == 200)
        e = a.list("nt")[1]["epoch"]
        socks.append(long_poll(a.port, "nt", e, "127.0.0.2"))
        expect(until(lambda: waiters(a) == 1), "waiters: %r" % waiters(a))
        one = threads(a)
        for i in range(1, n):
            socks.append(long_poll(a.port, "nt", e,
                                   "127.0.0.%d" % (2 + i % peers)))
        expect(until(lambda: waiters(a) == n), "waiters: %r" % waiters(a))
        # One thread per long-poll would be n - 1 more; the backend's own
        # threads (an etcd read's) may come and go meanwhile.
        many = threads(a)
        expect(many < one + 8, "threads: %d with 1 long-poll, %d with %d"
               % (one, many, n))
        # a heartbeat (an unchanged entry) is served and wakes nobody
        for i in range(5):
            s, d, _ = a.put("nt", "n1", {"ttl_ms": 600000})
            expect(s == 200, "heartbeat %d: %d %r" % (i, s, d))
        expect(waiters(a) == n, "waiters: %r" % waiters(a))
        # a change answers every long-poll with the new listing
        s, d, _ = a.put("nt", "n2", {"ttl_ms": 600000})
        expect(s == 200, "%d %r" % (s, d))
        for sock in socks:
            s, d = answer(sock)
            expect(s == 200 and d["epoch"] > e and
                   [m["id"] for m in d["members"]] == ["n1", "n2"],
                   "%d %r" % (s, d))
        expect(until(lambda: waiters(a) == 0), "waiters: %r" % waiters(a))


@test_f(MdsdFixture)
def reserved_writes(f):
    """The last connections serve writes: reads 503 there."""
    mfile, mh = tokens(f)[:2]
    # 16 connections, the last 4 for writes: reads while at most 12
    # are open.  Long-polls from several addresses, one at a time.
    a = f.mdsd("--member-token-file", mfile, "--long-poll-ms", "600000",
               "--max-connections", "16", "--reserved-write-connections",
               "4", "--max-long-polls", "16", "--max-long-polls-per-peer",
               "16", name="reserve")
    with held(a) as socks:
        e = a.list("rs")[1]["epoch"]
        for i in range(11):
            socks.append(reserved_poll(a, e, i))
        # a 12th connection, idle: a read would be the 13th
        socks.append(socket.create_connection(("127.0.0.1", a.port)))
        s, d, h = a.req("GET", "/v1/groups/rs/members")
        expect(s == 503 and h.get("connection") == "close" and
               h.get("retry-after") == "1", "%d %r %r" % (s, d, h))
        head = long_poll(a.port, "rs", e, "127.0.0.7").recv(4096)
        expect(status_of(head) == 503, head)
        # heartbeats have their connections
        for i in range(20):
            s, d, _ = a.req("PUT", "/v1/groups/rs/members/n1",
                            {"ttl_ms": 600000}, mh)
            expect(s == 200, "heartbeat %d: %d %r" % (i, s, d))
        # a write without the token is refused as ever
        s, d, _ = a.req("PUT", "/v1/groups/rs/members/n2", {})
        expect(s == 401, s)


@test_f(MdsdFixture)
def weight_cap(f):
    """Group weight cap: 409 beyond it."""
    # two directories: a backend's own each
    a = f.mdsd(name="weight", sub="a")
    b = f.mdsd("--max-group-weight", "2500", name="weight2", sub="b")
    try:
        # the default: 8192 units
        for i in range(8):
            expect(a.put("gw", "w%d" % i, {"weight": 1000})[0] == 200)
        expect(a.put("gw", "w8", {"weight": 192})[0] == 200)
        s, d, _ = a.put("gw", "w9", {"weight": 1})
        expect(s == 409 and "8192" in d["error"], "%d %r" % (s, d))
        s, d, _ = a.put("gw", "w8", {"weight": 193})
        expect(s == 409, "%d %r" % (s, d))
        expect(len(a.list("gw")[1]["members"]) == 9)
        # a heartbeat and a lighter member pass; clients do not count
        expect(a.put("gw", "w0", {"weight": 1000})[0] == 200)
        expect(a.put("gw", "w0", {"weight": 999})[0] == 200)
        expect(a.put("gw", "w9", {"weight": 1})[0] == 200)
        expect(a.put("gw", "c0", {"weight": 1000}, "clients")[0] == 200)
        # another group has its own cap
        expect(a.put("gw2", "w0", {"weight": 1000})[0] == 200)
        s, text, _ = a.req("GET", "/metrics")
        expect(metric(text, "dfkv_mds_weight_refusals_total") == 2)
        expect('code="409"' in text)
        # --max-group-weight lowers it
        expect(b.put("gw", "a", {"weight": 1000})[0] == 200)
        expect(b.put("gw", "b", {"weight": 1000})[0] == 200)
        expect(b.put("gw", "c", {"weight": 501})[0] == 409)
        expect(b.put("gw", "c", {"weight": 500})[0] == 200)
        expect(b.put("gw", "b", {"weight": 1})[0] == 200)
        expect(b.put("gw", "c", {"weight": 1000})[0] == 200)
    finally:
        expect(a.stop() == 0)
        expect(b.stop() == 0)
    for bad in ["0", "8193", "x"]:
        r = subprocess.run([MDSD, "--max-group-weight", bad],
                           capture_output=True, timeout=HANG)
        expect(r.returncode == 2, "%s: %r" % (bad, r))


@test_f(MdsdFixture)
def sigterm(f):
    """Mdsd exits 0 on SIGTERM."""
    m = directory(f)
    register_n1(m)
    rc = m.stop()
    expect(rc == 0, rc)


if __name__ == "__main__":
    sys.exit(run())
