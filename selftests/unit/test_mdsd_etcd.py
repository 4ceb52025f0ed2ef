#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# mdsd with the etcd backend, what needs two mdsd on one etcd (the
# "pair" fixture: a real etcd, Debian's etcd-server, on 127.0.0.1 shared
# by the cases, each case's two mdsd under a key prefix of its own).  Both
# answer identically; a long-poll on one wakes on a change made through
# the other; killing one leaves the other answering; an etcd lease expiry
# removes a member; a group's weight cap holds across both (409), also
# when two mdsd register members of one group at the same moment; a
# long-poll whose peer hangs up ends (its etcd watch is dropped); with a
# member and a client token, a /clients entry's owner (its client key)
# holds across both mdsd: another key is refused (403) through either,
# two keys creating one id at once through both leave one owner, the
# member token deletes it; stopping
# etcd makes /readyz fail and restarting it
# brings the membership back.  A second etcd with TLS, client certificate
# authentication and etcd auth enabled: mdsd passes --etcd-cacert,
# --etcd-cert/--etcd-key and --etcd-user/--etcd-password-file through,
# is refused without any of them, and authenticates again when etcd
# forgets its token.  Long-polls of one group share one etcd watch per
# mdsd (dfkv_mds_etcd_group_watches): a change is applied from its events
# for all of them, not read once each, and the shared watch survives an etcd
# restart; its listing sums the weight for the cap without a read, and
# registrations and heartbeats into a watched group read no group (a
# heartbeat not even its entry: one keep-alive) while the cap holds.  The
# cases that stop etcd have one of their own.
# TAP on stdout (unittap.run: -l lists the cases, -r pair.etcd.expiry
# runs one); skipped when etcd is not installed.  Every wait is for an
# event, bounded only to catch a hang.  test_mdsd.py runs the directory
# cases on the etcd backend too.

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from mdsd_fixture import (HANG, MDSD as MDSD_BIN, Etcd, Mdsd, MdsdFixture,
                          abandoned, expect, free_port, gauge, held,
                          long_poll, long_poll_around, make_pki, metric, until,
                          waiters, write_file)
from unittap import run, test_f

mtok, ctok = "member-T0ken_e", "client-T0ken_e"
mh = {"Authorization": "Bearer " + mtok}
k1 = {"Authorization": "Bearer " + ctok, "X-Dfkv-Client-Key": "1" * 64}
k2 = {"Authorization": "Bearer " + ctok, "X-Dfkv-Client-Key": "2" * 64}


class PairFixture(MdsdFixture):
    """The etcd variant of MdsdFixture, with an etcd of the case's own
    (own_etcd()) for the cases that stop it."""

    name = "pair"
    variants = {"etcd": MdsdFixture.variants["etcd"]}

    def own_etcd(self, name="etcd", pki=None):
        """An etcd in the case's directory, stopped after the case."""
        self.own = Etcd(self.tmp, name, pki)
        self.procs.append(self.own)
        return self.own.start()


def pair(f, *extra):
    """Two mdsd on one directory (options extra added), both ready; a
    long-poll waits until a change (600 s)."""
    common = ["--ttl-ms", "20000", "--long-poll-ms", "600000", "-v",
              *extra]
    a = f.mdsd(*common, name="a")
    b = f.mdsd(*common, name="b")
    expect(until(lambda: a.req("GET", "/readyz")[0] == 200 and
                 b.req("GET", "/readyz")[0] == 200), "not ready")
    return a, b


def register_n1n2(a):
    """Members n1 and n2 of group g registered through a; the epoch."""
    s, d, _ = a.put("g", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                "host": "h1"})
    expect(s == 200 and d["created"], d)
    s, d, _ = a.put("g", "n2", {"tcp": "127.0.0.1:7401"})
    expect(s == 200 and d["created"], d)
    return d["epoch"]


def owner_pair(f):
    """Two mdsd with a member and a client token."""
    toks = ["--member-token-file",
            write_file(f.path("m.token"), mtok.encode()),
            "--client-token-file",
            write_file(f.path("c.token"), ctok.encode())]
    return [f.mdsd(*toks, name=name, sub="owned") for name in ("o1", "o2")]


def down(f):
    """An mdsd on an etcd of the case's own, with member durable of
    group g, after that etcd stopped: 503 but alive."""
    e = f.own_etcd()
    b = f.mdsd("-v", name="b", urls=e.url)
    expect(until(lambda: b.req("GET", "/readyz")[0] == 200), "not ready")
    b.put("g", "durable", {"ttl_ms": 120000})
    e.stop()
    expect(until(lambda: b.req("GET", "/readyz")[0] == 503),
           "readyz stayed 200")
    expect(b.list("g")[0] == 503)
    expect(b.put("g", "x", {})[0] == 503)
    expect(b.req("GET", "/healthz")[0] == 200)
    return b


def secure_etcd(f):
    """An etcd of the case's own with TLS, client certificates and
    auth; the mdsd options that reach it (f.sec_args)."""
    pki = make_pki(f.path("pki"))
    e = f.own_etcd("etcd-tls", pki)
    e.ctl("user", "add", "root", "--new-user-password=root-pw")
    e.ctl("user", "grant-role", "root", "root")
    e.ctl("user", "add", "dfkv", "--new-user-password=dfkv-pw")
    e.ctl("role", "add", "dfkv")
    e.ctl("role", "grant-permission", "dfkv", "--prefix=true",
          "readwrite", "/dfkv/mds")
    e.ctl("user", "grant-role", "dfkv", "dfkv")
    e.ctl("auth", "enable")
    pw = write_file(f.path("etcd.pw"), b"dfkv-pw\n")
    f.sec_args = {"--etcd-cacert": pki["ca.pem"],
                  "--etcd-cert": pki["client.pem"],
                  "--etcd-key": pki["client.key"],
                  "--etcd-user": "dfkv", "--etcd-password-file": pw}


def secure_mdsd(f, name, drop=(), **over):
    """An mdsd (not started) on secure_etcd()'s etcd, without the
    options in drop, with those in over."""
    args = dict(f.sec_args)
    for k in drop:
        del args[k]
    args.update(over)
    flat = ["--backend", "etcd", "--etcd", f.own.url]
    for k, v in args.items():
        flat += [k, v]
    m = Mdsd(*flat, "-v", log=f.path(name + ".log"))
    f.procs.append(m)
    return m


def secure_works_c(f):
    """secure_etcd() and an mdsd with every option, member n1 of group
    gs registered through it."""
    secure_etcd(f)
    c = secure_mdsd(f, "sec").start()
    expect(until(lambda: c.req("GET", "/readyz")[0] == 200),
           "not ready: " + c.logtail())
    # a lease that outlives the cases' mdsd starts on a loaded machine
    s, d, _ = c.put("gs", "n1", {"tcp": "127.0.0.1:7400",
                                 "ttl_ms": 120000})
    expect(s == 200 and d["created"], d)
    s, d, _ = c.list("gs")
    expect(s == 200 and [m["id"] for m in d["members"]] == ["n1"], d)
    return c


# ------------------------------------------------------------------ cases

@test_f(PairFixture)
def start(f):
    """Etcd and two mdsd start."""
    pair(f)


@test_f(PairFixture)
def register(f):
    """Register through the first mdsd."""
    register_n1n2(pair(f)[0])


@test_f(PairFixture)
def identical(f):
    """Both mdsd answer identically."""
    a, b = pair(f)
    epoch = register_n1n2(a)
    ra = a.list("g")
    rb = b.list("g")
    expect(ra[0] == rb[0] == 200)
    expect(ra[1] == rb[1], "%r != %r" % (ra[1], rb[1]))
    expect([m["id"] for m in ra[1]["members"]] == ["n1", "n2"])
    expect(ra[1]["epoch"] == epoch)
    expect(a.req("GET", "/v1/groups")[1] == b.req("GET", "/v1/groups")[1]
           == {"groups": ["g"]})


@test_f(PairFixture)
def heartbeat_other(f):
    """A heartbeat through the other keeps the revision."""
    a, b = pair(f)
    epoch = register_n1n2(a)
    s, d, _ = b.put("g", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                "host": "h1"})
    expect(s == 200 and d["created"] is False, d)
    expect(b.list("g")[1]["epoch"] == epoch,
           "a heartbeat moved the revision")


@test_f(PairFixture)
def change_moves(f):
    """A change moves the epoch for both."""
    a, b = pair(f)
    epoch = register_n1n2(a)
    s, d, _ = b.put("g", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                "host": "h1", "state": "draining"})
    expect(s == 200 and d["epoch"] > epoch, d)
    expect(a.req("GET", "/v1/groups/g/members/n1")[1]["state"] ==
           "draining")


@test_f(PairFixture)
def longpoll_cross(f):
    """A long-poll on one wakes on a change through the other."""
    a, b = pair(f)
    e = b.list("g")[1]["epoch"]
    r, _, ended = long_poll_around(b, "g", "?wait_epoch=%d" % e,
                                   lambda: a.put("g", "n3", {}))
    s, d, _ = r
    expect(s == 200 and d["epoch"] > e, d)
    expect("n3" in [m["id"] for m in d["members"]], d)
    expect(ended, "the long-poll did not wake")


@test_f(PairFixture)
def longpoll_quiet(f):
    """Writes to another group do not wake a long-poll."""
    a, b = pair(f)
    # Writes in another group do not wake a long-poll of this one: it
    # is answered at its wait_ms, 1.5 s, not before.
    e = b.list("g")[1]["epoch"]
    r, dt, _ = long_poll_around(b, "g", "?wait_epoch=%d&wait_ms=1500" % e,
                                lambda: a.put("other", "x", {}))
    expect(r[0] == 200 and dt > 1.3, "woke after %.2fs" % dt)


@test_f(PairFixture)
def delete(f):
    """DELETE through one is seen by the other."""
    a, b = pair(f)
    a.put("g", "n3", {})
    s, d, _ = b.req("DELETE", "/v1/groups/g/members/n3")
    expect(s == 200, s)
    expect(a.req("DELETE", "/v1/groups/g/members/n3")[0] == 404)
    expect("n3" not in [m["id"] for m in a.list("g")[1]["members"]])


@test_f(PairFixture)
def clients(f):
    """Clients are kept apart from members."""
    a, b = pair(f)
    s, d, _ = a.put("g", "eng0", {"host": "h5"}, kind="clients")
    expect(s == 200 and d["created"], d)
    expect([c["id"] for c in b.list("g", "clients")[1]["clients"]] ==
           ["eng0"])
    expect("eng0" not in [m["id"] for m in b.list("g")[1]["members"]])


@test_f(PairFixture)
def owner_start(f):
    """Two mdsd with a member and a client token."""
    owner_pair(f)


@test_f(PairFixture)
def owner_across(f):
    """A client entry's owner holds across both mdsd; the member token deletes
    it."""
    o1, o2 = owner_pair(f)
    path = "/v1/groups/go/clients/engine"
    one = {"ttl_ms": 60000, "host": "one"}
    s, d, _ = o1.req("PUT", path, one, k1)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    for o in (o1, o2):
        for method, body in [("PUT", one),
                             ("PUT", {"ttl_ms": 60000, "host": "two"}),
                             ("DELETE", None)]:
            s, d, _ = o.req(method, path, body, k2)
            expect(s == 403, "%s %r: %d %r" % (method, body, s, d))
    s, d, _ = o2.req("GET", path)
    expect(s == 200 and d["host"] == "one" and "owner" not in d, d)
    s, d, _ = o2.req("PUT", path, {"ttl_ms": 60000, "host": "one-b"}, k1)
    expect(s == 200 and not d["created"], "%d %r" % (s, d))
    expect(o2.req("PUT", path, one, {"Authorization":
                                     k1["Authorization"]})[0] == 400)
    # the member token deletes it; the id is free for the other key
    expect(o2.req("DELETE", path, None, mh)[0] == 200)
    s, d, _ = o1.req("PUT", path, one, k2)
    expect(s == 200 and d["created"], "%d %r" % (s, d))
    expect(o2.req("DELETE", path, None, k1)[0] == 403)
    expect(o2.req("DELETE", path, None, k2)[0] == 200)


@test_f(PairFixture)
def owner_race(f):
    """Two keys creating one client id through both mdsd at once: one owner."""
    o1, o2 = owner_pair(f)
    for i in range(10):
        path = "/v1/groups/go/clients/race-%d" % i
        go = threading.Barrier(2)
        res = {}

        def put(name, o, h):
            go.wait()
            res[name] = o.req("PUT", path, {"ttl_ms": 60000}, h)[0]
        ths = [threading.Thread(target=put, args=("1", o1, k1)),
               threading.Thread(target=put, args=("2", o2, k2))]
        for th in ths:
            th.start()
        for th in ths:
            th.join(HANG)
        expect(sorted(res.values()) == [200, 403], "%d: %r" % (i, res))
        # the winner owns it through either mdsd, the loser does not
        win = k1 if res["1"] == 200 else k2
        lose = k2 if win is k1 else k1
        expect(o2.req("PUT", path, {"ttl_ms": 60000}, win)[0] == 200)
        expect(o1.req("PUT", path, {"ttl_ms": 60000}, lose)[0] == 403)


@test_f(PairFixture)
def validation(f):
    """Validation errors with the etcd backend."""
    a, b = pair(f)
    expect(a.req("PUT", "/v1/groups/g/members/x", "{bad")[0] == 400)
    expect(a.req("PUT", "/v1/groups/g/members/x", {"zz": 1})[0] == 400)
    expect(a.req("GET", "/v1/groups/g/nodes")[0] == 404)
    expect(a.req("POST", "/v1/groups/g/members/x", "{}")[0] == 405)


@test_f(PairFixture)
def weight_cap(f):
    """The group weight cap across two mdsd: 409."""
    a, b = pair(f)
    for i in range(4):
        s, d, _ = (a, b)[i % 2].put("gw", "w%d" % i, {"weight": 1000})
        expect(s == 200, "%d %r" % (s, d))
    for i in range(4, 8):
        expect(a.put("gw", "w%d" % i, {"weight": 1000})[0] == 200)
    expect(b.put("gw", "w8", {"weight": 192})[0] == 200)
    s, d, _ = b.put("gw", "w9", {"weight": 1})
    expect(s == 409 and "8192" in d["error"], "%d %r" % (s, d))
    expect(a.put("gw", "w8", {"weight": 193})[0] == 409)
    # a heartbeat, a lighter member, then room again
    expect(a.put("gw", "w0", {"weight": 1000})[0] == 200)
    expect(a.put("gw", "w0", {"weight": 999})[0] == 200)
    expect(b.put("gw", "w9", {"weight": 1})[0] == 200)
    expect(len(a.list("gw")[1]["members"]) == 10)


@test_f(PairFixture)
def weight_cap_race(f):
    """Two mdsd registering at once cannot pass the weight cap together."""
    # cap 10, two members of weight 6 registered at once through two
    # mdsd: one is refused whatever the interleaving
    rs = [f.mdsd("--max-group-weight", "10", name="race%d" % i,
                 sub="race") for i in range(2)]
    try:
        for i in range(20):
            group = "race%d" % i
            go = threading.Barrier(2)
            res = {}

            def put(j):
                go.wait()
                res[j] = rs[j].put(group, "m%d" % j, {"weight": 6})[0]
            ths = [threading.Thread(target=put, args=(j,))
                   for j in range(2)]
            for th in ths:
                th.start()
            for th in ths:
                th.join(HANG)
            expect(sorted(res.values()) == [200, 409],
                   "%s: %r" % (group, res))
            ms = rs[0].list(group)[1]["members"]
            expect(sum(m["weight"] for m in ms) == 6, ms)
    finally:
        for m in rs:
            m.stop()


@test_f(PairFixture)
def longpoll_gone(f):
    """A long-poll whose peer hangs up ends."""
    c = f.mdsd("--long-poll-ms", "600000", name="c")
    with held(c) as socks:
        e = c.list("g")[1]["epoch"]
        socks.append(long_poll(c.port, "g", e, "127.0.0.2"))
        expect(until(lambda: waiters(c) == 1),
               "not waiting")
        socks.pop().close()
        # the wait is 600 s: its watch ends when the peer left
        expect(until(lambda: waiters(c) == 0),
               "still waiting")
        expect(until(lambda: abandoned(c) == 1), abandoned(c))


def feed_epoch(m, socks):
    """Hold a long-poll on m's group g that no change answers (past a far
    epoch), so that g's shared watch lives; an epoch it knows back to."""
    socks.append(long_poll(m.port, "g", 10 ** 15, "127.0.0.2"))
    # its watch is opened after its first read of the group
    expect(until(lambda: (gauge(m, "dfkv_mds_etcd_watches_total") or 0)
                 >= 1), "no shared watch")
    return m.list("g")[1]["epoch"]


def answer(sock):
    """The status and JSON body of the request sent on sock."""
    r = http.client.HTTPResponse(sock)
    r.begin()
    return r.status, json.loads(r.read())


def polls(m, epoch, n, socks):
    """n long-polls past epoch on m (one source address each), waiting."""
    base = waiters(m)
    for i in range(n):
        socks.append(long_poll(m.port, "g", epoch, "127.0.0.%d" % (3 + i)))
    expect(until(lambda: waiters(m) == base + n), "not all waiting")
    return socks[-n:]


def woken(socks, epoch, member):
    """Every long-poll on socks answered past epoch, with member."""
    for s in socks:
        st, d = answer(s)
        expect(st == 200 and d["epoch"] > epoch, d)
        expect(member in [x["id"] for x in d["members"]], d)


@test_f(PairFixture)
def shared_watch(f):
    """Long-polls of a group share one etcd watch, a change no read."""
    a, b = pair(f)
    register_n1n2(a)
    n = 12
    with held(b) as socks:
        epoch = feed_epoch(b, socks)
        ps = polls(b, epoch, n, socks)
        expect(gauge(b, "dfkv_mds_etcd_group_watches") == 1)
        reads = gauge(b, "dfkv_mds_etcd_group_reads_total")
        watches = gauge(b, "dfkv_mds_etcd_watches_total")
        expect(a.put("g", "n3", {})[0] == 200)
        woken(ps, epoch, "n3")
        # no read (and one watch) for the change, not one per long-poll
        expect(gauge(b, "dfkv_mds_etcd_group_reads_total") - reads < n)
        expect(gauge(b, "dfkv_mds_etcd_watches_total") - watches < n)


@test_f(PairFixture)
def shared_watch_restart(f):
    """The shared watch comes back after an etcd restart: its long-polls
    get the change made after it."""
    e = f.own_etcd()
    b = f.mdsd("--long-poll-ms", "600000", name="b", urls=e.url)
    expect(until(lambda: b.req("GET", "/readyz")[0] == 200), "not ready")
    with held(b) as socks:
        epoch = feed_epoch(b, socks)
        ps = polls(b, epoch, 3, socks)
        e.stop()
        expect(until(lambda: b.req("GET", "/readyz")[0] == 503),
               "readyz stayed 200")
        e.start()
        expect(until(lambda: b.req("GET", "/readyz")[0] == 200),
               "readyz did not come back")
        expect(b.put("g", "after", {})[0] == 200)
        woken(ps, epoch, "after")


@test_f(PairFixture)
def weight_cap_cached(f):
    """A watched group's weight is summed from its shared listing; the
    cap still holds (409)."""
    a, b = pair(f)
    with held(b) as socks:
        feed_epoch(b, socks)
        expect(b.put("g", "c0", {"weight": 1000})[0] == 200)
        expect(gauge(b, "dfkv_mds_etcd_cached_weight_sums_total") == 1)
        # whether its listing has the last ones yet or not (the compare
        # refuses one that is behind)
        for i in range(1, 8):
            expect(b.put("g", "c%d" % i, {"weight": 1000})[0] == 200)
        expect(b.put("g", "c8", {"weight": 192})[0] == 200)
        s, d, _ = b.put("g", "c9", {"weight": 1})
        expect(s == 409 and "8192" in d["error"], "%d %r" % (s, d))
        expect(len(a.list("g")[1]["members"]) == 9)


READS = "dfkv_mds_etcd_group_reads_total"
ENTRY = "dfkv_mds_etcd_entry_reads_total"
SUMS = "dfkv_mds_etcd_cached_weight_sums_total"


def scrape(m, *names):
    """One /metrics read of m: the values of names."""
    status, body = m.req("GET", "/metrics")[:2]
    expect(status == 200, status)
    return [metric(body, n) for n in names]


def reads_since(m, last, per):
    """m's group reads since scrape last (its values: READS first), less
    the one scrape's own since (per: /metrics lists every group); the
    values of this scrape."""
    now = scrape(m, READS, ENTRY, SUMS)
    return now[0] - last[0] - per, now


@test_f(PairFixture)
def writes_read_no_group(f):
    """Registrations and heartbeats into a watched group read no group
    (their weight and entry from its shared listing), a heartbeat not
    even its entry; the weight cap still holds (409)."""
    a, b = pair(f, "--max-group-weight", "44")
    with held(b) as socks:
        feed_epoch(b, socks)
        # a group to list: each /metrics read costs the same reads
        expect(b.put("g", "seed", {})[0] == 200)
        first = scrape(b, READS)
        last = scrape(b, READS, ENTRY, SUMS)
        per = last[0] - first[0]
        n = 40
        for i in range(n):
            s, d, _ = b.put("g", "r%d" % i, {})
            expect(s == 200 and d["created"], d)
        # the listing holds the last one: a long-poll past the one
        # before is answered from it
        s, d = b.list("g", query="?wait_epoch=%d" % (d["epoch"] - 1))[:2]
        expect(s == 200 and len(d["members"]) == n + 1, d)
        reads, last = reads_since(b, last, per)
        expect(reads == 0, "%d registrations read the group" % reads)
        for i in range(n):
            s, d, _ = b.put("g", "r%d" % i, {})
            expect(s == 200 and not d["created"], d)
        reads, now = reads_since(b, last, per)
        expect(reads == 0 and now[1] == last[1],
               "heartbeats read %d groups, %d entries" %
               (reads, now[1] - last[1]))
        s, d, _ = b.put("g", "big", {"weight": 5})
        expect(s == 409 and "44" in d["error"], "%d %r" % (s, d))
        expect(b.put("g", "fits", {"weight": 3})[0] == 200)
        expect(b.put("g", "r0", {"weight": 2})[0] == 409)
        expect(b.put("g", "more", {})[0] == 409)
        reads, last = reads_since(b, now, per)
        expect(reads == 0, "the cap read the group %d times" % reads)
        expect(last[2] - now[2] == 4, last[2] - now[2])
        # the other mdsd's first write starts its listing (one read)
        first = scrape(a, READS)
        last = scrape(a, READS, ENTRY, SUMS)
        per = last[0] - first[0]
        expect(a.put("g", "more", {})[0] == 409)
        for i in range(n):
            expect(a.put("g", "r%d" % i, {})[0] == 200)
        reads = reads_since(a, last, per)[0]
        expect(reads <= 1, "%d reads" % reads)


def etcd_leases(f):
    """The IDs of the leases the case's etcd holds."""
    req = urllib.request.Request(f.etcd.url + "/v3/lease/leases", b"{}",
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=HANG) as r:
        return {x["ID"] for x in json.load(r).get("leases", [])}


@test_f(PairFixture)
def weight_cap_storm(f):
    """Many registrations at once through two mdsd (group commits): the
    cap admits exactly what fits, the others 409, no group read; a
    refused registration's lease is revoked, not left to its TTL."""
    # a TTL the case outlives: every lease still there is one not revoked
    a, b = pair(f, "--max-group-weight", "30", "--ttl-ms", "600000")
    with held(b) as socks:
        feed_epoch(b, socks)
        expect(a.put("g", "seed", {})[0] == 200)
        before = [scrape(m, READS)[0] for m in (a, b)]
        leases = etcd_leases(f)
        n = 48
        go = threading.Barrier(n)
        res = {}

        def put(j):
            go.wait()
            res[j] = (a, b)[j % 2].put("g", "s%d" % j, {})[0]
        ths = [threading.Thread(target=put, args=(j,)) for j in range(n)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(HANG)
        # 503: a registration that lost 8 times (the agent tries again)
        ok = [j for j, st in res.items() if st == 200]
        expect(len(ok) + list(res.values()).count(409) +
               list(res.values()).count(503) == n, res)
        ms = a.list("g")[1]["members"]
        expect(len(ms) == len(ok) + 1 and len(ms) <= 30, ms)
        expect(list(res.values()).count(409) == n + 1 - 30 or
               503 in res.values(), res)
        after = [scrape(m, READS)[0] for m in (a, b)]
        # each scrape lists group g (members and clients) once
        expect(all(x - y <= 4 for x, y in zip(after, before)),
               (before, after))
        # one lease per member admitted
        new = etcd_leases(f) - leases
        expect(len(new) == len(ok), (len(new), len(ok)))


@test_f(PairFixture)
def kill_one(f):
    """Kill one mdsd: the other keeps answering."""
    a, b = pair(f)
    epoch = register_n1n2(a)
    a.stop(signal.SIGKILL)
    s, d, _ = b.list("g")
    expect(s == 200 and "n1" in [m["id"] for m in d["members"]], d)
    s, d, _ = b.put("g", "n4", {})
    expect(s == 200 and d["created"], d)


@test_f(PairFixture)
def expiry(f):
    """An etcd lease expiry removes the member."""
    a, b = pair(f)
    s, d, _ = b.put("g", "short", {"ttl_ms": 1000})
    expect(s == 200, s)
    e = d["epoch"]
    gone = until(lambda: "short" not in
                 [m["id"] for m in b.list("g")[1]["members"]])
    expect(gone, "lease did not expire")
    expect(b.req("GET", "/v1/groups/g/members/short")[0] == 404)
    expect(b.list("g")[1]["epoch"] > e)


@test_f(PairFixture)
def expiry_wakes(f):
    """A lease expiry wakes a long-poll."""
    a, b = pair(f)
    s, d, _ = b.put("g", "short2", {"ttl_ms": 1000})
    # only the expiry answers: the wait is 600 s
    s, d2, _ = b.list("g", query="?wait_epoch=%d" % d["epoch"])
    expect("short2" not in [m["id"] for m in d2["members"]], d2)
    expect(d2["epoch"] > d["epoch"], d2)


@test_f(PairFixture)
def renew_keeps(f):
    """Heartbeats keep a 1 s lease alive."""
    a, b = pair(f)
    # renewed every 0.4 s for over three leases
    b.put("g", "kept", {"ttl_ms": 1000})
    end = time.time() + 3.2
    while time.time() < end:
        time.sleep(0.4)
        s, d, _ = b.put("g", "kept", {"ttl_ms": 1000})
        expect(s == 200, s)
    expect("kept" in [m["id"] for m in b.list("g")[1]["members"]])


@test_f(PairFixture)
def failover_url(f):
    """An unreachable first URL fails over to the next."""
    register_n1n2(pair(f)[0])
    c = f.mdsd(name="c", urls="http://127.0.0.1:1," + f.etcd.url)
    try:
        s, d, _ = c.list("g")
        expect(s == 200 and "n1" in [m["id"] for m in d["members"]], d)
    finally:
        c.stop()


@test_f(PairFixture)
def prefix_isolation(f):
    """Another prefix is another directory."""
    register_n1n2(pair(f)[0])
    c = f.mdsd(name="c", sub="elsewhere")
    try:
        expect(c.req("GET", "/v1/groups")[1] == {"groups": []})
    finally:
        c.stop()


@test_f(PairFixture)
def etcd_down(f):
    """Etcd stopped: /readyz and requests are 503."""
    down(f)


@test_f(PairFixture)
def etcd_back(f):
    """Etcd restarted: ready again, membership back."""
    b, etcd = down(f), f.own
    etcd.start()
    expect(until(lambda: b.req("GET", "/readyz")[0] == 200),
           "readyz did not come back")
    s, d, _ = b.list("g")
    expect(s == 200 and "durable" in [m["id"] for m in d["members"]], d)


@test_f(PairFixture)
def metrics(f):
    """/metrics with the etcd backend."""
    a, b = pair(f)
    epoch = register_n1n2(a)
    s, text, _ = b.req("GET", "/metrics")
    expect(s == 200)
    for want in ['dfkv_mds_epoch{group="g",kind="members"} ',
                 'dfkv_mds_members{group="g",state="up"} ',
                 'dfkv_mds_ready 1', 'dfkv_mds_lease_grants_total ']:
        expect(want in text, "missing %r" % want)


@test_f(PairFixture)
def secure_start(f):
    """An etcd with TLS, client certificates and auth."""
    secure_etcd(f)


@test_f(PairFixture)
def secure_works(f):
    """Mdsd with --etcd-cacert, --etcd-cert/--etcd-key, --etcd-user/--etcd-
    password-file works."""
    secure_works_c(f)


@test_f(PairFixture)
def secure_refused(f):
    """Without the CA, the client certificate or the user, or with a wrong
    password: 503."""
    c0 = secure_works_c(f)
    bad = write_file(f.path("bad.pw"), b"not-the-password\n")
    for name, drop, over, why in [
            ("no-ca", ("--etcd-cacert",), {}, ""),
            ("no-cert", ("--etcd-cert", "--etcd-key"), {}, ""),
            ("no-user", ("--etcd-user", "--etcd-password-file"), {}, ""),
            ("bad-pw", (), {"--etcd-password-file": bad},
             "authentication as 'dfkv' failed")]:
        c = secure_mdsd(f, name, drop, **over).start()
        try:
            # the requests reach etcd and fail; /readyz, asked after
            # them, has not come up either
            expect(c.put("gs", "rogue", {})[0] == 503, name)
            expect(c.list("gs")[0] == 503, name)
            expect(c.req("GET", "/readyz")[0] == 503, name)
            expect(until(lambda: why in c.logtail()),
                   "%s: %s" % (name, c.logtail()))
        finally:
            c.stop()
    expect([m["id"] for m in c0.list("gs")[1]["members"]] ==
           ["n1"])


@test_f(PairFixture)
def secure_reauth(f):
    """A token etcd forgot: mdsd authenticates again."""
    c = secure_works_c(f)
    # etcd keeps its simple tokens in memory: after a restart the old
    # one is refused (401) and mdsd authenticates again
    f.own.stop()
    f.own.start()
    expect(until(lambda: c.put("gs", "n2", {})[0] == 200), c.logtail())
    expect([m["id"] for m in c.list("gs")[1]["members"]] ==
           ["n1", "n2"])


@test_f(PairFixture)
def secure_config(f):
    """Etcd security options go in pairs; a loose password file."""
    for args in [["--etcd-cert", "/x"], ["--etcd-key", "/x"],
                 ["--etcd-user", "u"], ["--etcd-password-file", "/x"]]:
        r = subprocess.run([MDSD_BIN, "--backend", "etcd"] + args,
                           capture_output=True, timeout=HANG)
        expect(r.returncode == 2 and b"go together" in r.stderr, r)
    loose = write_file(f.path("loose.pw"), b"pw\n", 0o644)
    r = subprocess.run([MDSD_BIN, "--backend", "etcd", "--listen",
                        "127.0.0.1:%d" % free_port(), "--etcd-user",
                        "u", "--etcd-password-file", loose],
                       capture_output=True, timeout=HANG)
    expect(r.returncode == 1 and b"chmod 600" in r.stderr, r)


@test_f(PairFixture)
def sigterm(f):
    """Mdsd exits 0 on SIGTERM."""
    rc = pair(f)[1].stop()
    expect(rc == 0, rc)


if __name__ == "__main__":
    sys.exit(run())
