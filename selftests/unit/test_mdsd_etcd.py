#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# mdsd with the etcd backend: a real etcd (Debian's etcd-server) on
# 127.0.0.1 with a temporary data directory, two mdsd sharing it.  Both
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
# forgets its token.  TAP on stdout; skipped when etcd is not installed.
# Every wait is bounded.

import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mdsd import (MDSD as MDSD_BIN, Mdsd, ensure_built,  # noqa: E402
                       expect, free_port, gauge, held, long_poll, until,
                       write_file)
from unittap import Tap  # noqa: E402


class Etcd:
    """One etcd; with pki (make_pki()), https with client certificates."""

    def __init__(self, tmp, name="etcd", pki=None):
        self.dir = os.path.join(tmp, name)
        self.client = free_port()
        self.peer = free_port()
        self.pki = pki
        self.url = "%s://127.0.0.1:%d" % ("https" if pki else "http",
                                          self.client)
        self.log = os.path.join(tmp, name + ".log")
        self.proc = None

    def start(self):
        peer = "http://127.0.0.1:%d" % self.peer
        tls, ctx = [], None
        if self.pki:
            tls = ["--cert-file", self.pki["server.pem"],
                   "--key-file", self.pki["server.key"],
                   "--trusted-ca-file", self.pki["ca.pem"],
                   "--client-cert-auth"]
            ctx = ssl.create_default_context(cafile=self.pki["ca.pem"])
            ctx.load_cert_chain(self.pki["client.pem"],
                                self.pki["client.key"])
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(
                ["etcd", "--name", "t", "--data-dir", self.dir,
                 "--listen-client-urls", self.url,
                 "--advertise-client-urls", self.url,
                 "--listen-peer-urls", peer,
                 "--initial-advertise-peer-urls", peer,
                 "--initial-cluster", "t=" + peer,
                 "--listen-metrics-urls", ""] + tls,
                stdout=f, stderr=subprocess.STDOUT)
        end = time.time() + 20
        import urllib.request
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("etcd exited")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1,
                                            context=ctx) as r:
                    if b"true" in r.read():
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("etcd did not come up")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


    def ctl(self, *args):
        tls = []
        if self.pki:
            tls = ["--cacert", self.pki["ca.pem"],
                   "--cert", self.pki["client.pem"],
                   "--key", self.pki["client.key"]]
        r = subprocess.run(["etcdctl", "--endpoints", self.url] + tls +
                           list(args), capture_output=True, timeout=20)
        expect(r.returncode == 0, "etcdctl %r: %r" % (args, r))


def make_pki(dir_):
    """A CA, a server certificate for 127.0.0.1 and a client one (EC).

    The client certificate has no CommonName: with etcd auth enabled,
    etcd refuses a gateway request whose certificate names one.
    """
    os.makedirs(dir_, exist_ok=True)
    f = {n: os.path.join(dir_, n) for n in
         ("ca.pem", "ca.key", "server.pem", "server.key", "client.pem",
          "client.key", "ext")}

    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True,
                       capture_output=True, timeout=30)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]
    run("req", "-x509", *ec, "-keyout", f["ca.key"], "-out", f["ca.pem"],
        "-days", "2", "-subj", "/CN=dfkv test CA")
    # etcd's gateway reaches its own gRPC server with the server
    # certificate: it needs clientAuth too
    for who, usage in (("server", "serverAuth,clientAuth"),
                       ("client", "clientAuth")):
        with open(f["ext"], "w") as e:
            e.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n" %
                    usage)
        csr = os.path.join(dir_, who + ".csr")
        run("req", *ec, "-keyout", f[who + ".key"], "-out", csr,
            "-subj", "/CN=127.0.0.1" if who == "server" else "/O=dfkv")
        run("x509", "-req", "-in", csr, "-CA", f["ca.pem"], "-CAkey",
            f["ca.key"], "-CAcreateserial", "-out", f[who + ".pem"],
            "-days", "2", "-extfile", f["ext"])
    for k in ("ca.key", "server.key", "client.key"):
        os.chmod(f[k], 0o600)
    return f


def wait_for(fn, timeout, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return fn()


def main():
    print("TAP version 13")
    if not shutil.which("etcd"):
        print("1..0 # SKIP etcd not installed (apt-get install etcd-server)")
        return 0
    if not ensure_built():
        print("1..0 # SKIP mdsd not built")
        return 0
    t = Tap()
    tmp = tempfile.mkdtemp(prefix="mdsd-etcd-")
    etcd = Etcd(tmp)
    a = b = None
    st = {}

    def start():
        nonlocal a, b
        etcd.start()
        common = ["--backend", "etcd", "--etcd", etcd.url, "--ttl-ms",
                  "20000", "--long-poll-ms", "5000", "-v"]
        a = Mdsd(*common, log=os.path.join(tmp, "a.log")).start()
        b = Mdsd(*common, log=os.path.join(tmp, "b.log")).start()
        expect(wait_for(lambda: a.req("GET", "/readyz")[0] == 200 and
                        b.req("GET", "/readyz")[0] == 200, 10),
               "not ready")

    def register():
        s, d, _ = a.put("g", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                    "host": "h1"})
        expect(s == 200 and d["created"], d)
        s, d, _ = a.put("g", "n2", {"tcp": "127.0.0.1:7401"})
        expect(s == 200 and d["created"], d)
        st["epoch"] = d["epoch"]

    def identical():
        ra = a.list("g")
        rb = b.list("g")
        expect(ra[0] == rb[0] == 200)
        expect(ra[1] == rb[1], "%r != %r" % (ra[1], rb[1]))
        expect([m["id"] for m in ra[1]["members"]] == ["n1", "n2"])
        expect(ra[1]["epoch"] == st["epoch"])
        expect(a.req("GET", "/v1/groups")[1] == b.req("GET", "/v1/groups")[1]
               == {"groups": ["g"]})

    def heartbeat_other():
        s, d, _ = b.put("g", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                    "host": "h1"})
        expect(s == 200 and d["created"] is False, d)
        expect(b.list("g")[1]["epoch"] == st["epoch"],
               "a heartbeat moved the revision")

    def change_moves():
        s, d, _ = b.put("g", "n1", {"tcp": "127.0.0.1:7400", "weight": 2,
                                    "host": "h1", "state": "draining"})
        expect(s == 200 and d["epoch"] > st["epoch"], d)
        st["epoch"] = d["epoch"]
        expect(a.req("GET", "/v1/groups/g/members/n1")[1]["state"] ==
               "draining")

    def longpoll_cross():
        e = b.list("g")[1]["epoch"]
        res = {}

        def poll():
            t0 = time.time()
            res["r"] = b.list("g", query="?wait_epoch=%d" % e)
            res["dt"] = time.time() - t0
        th = threading.Thread(target=poll)
        th.start()
        time.sleep(0.5)
        a.put("g", "n3", {})
        th.join(15)
        s, d, _ = res["r"]
        expect(s == 200 and d["epoch"] > e, d)
        expect("n3" in [m["id"] for m in d["members"]], d)
        expect(res["dt"] < 4, "took %.1fs" % res["dt"])

    def longpoll_quiet():
        # Writes in another group do not wake a long-poll of this one.
        e = b.list("g")[1]["epoch"]
        res = {}

        def poll():
            t0 = time.time()
            res["r"] = b.list("g", query="?wait_epoch=%d&wait_ms=1500" % e)
            res["dt"] = time.time() - t0
        th = threading.Thread(target=poll)
        th.start()
        time.sleep(0.3)
        a.put("other", "x", {})
        th.join(15)
        s, d, _ = res["r"]
        expect(s == 200 and res["dt"] > 1.3, "woke after %.2fs" % res["dt"])

    def delete():
        s, d, _ = b.req("DELETE", "/v1/groups/g/members/n3")
        expect(s == 200, s)
        expect(a.req("DELETE", "/v1/groups/g/members/n3")[0] == 404)
        expect("n3" not in [m["id"] for m in a.list("g")[1]["members"]])

    def clients():
        s, d, _ = a.put("g", "eng0", {"host": "h5"}, kind="clients")
        expect(s == 200 and d["created"], d)
        expect([c["id"] for c in b.list("g", "clients")[1]["clients"]] ==
               ["eng0"])
        expect("eng0" not in [m["id"] for m in b.list("g")[1]["members"]])

    mtok, ctok = "member-T0ken_e", "client-T0ken_e"
    mh = {"Authorization": "Bearer " + mtok}
    k1 = {"Authorization": "Bearer " + ctok, "X-Dfkv-Client-Key": "1" * 64}
    k2 = {"Authorization": "Bearer " + ctok, "X-Dfkv-Client-Key": "2" * 64}
    own = {}

    def owner_start():
        toks = ["--member-token-file",
                write_file(os.path.join(tmp, "m.token"), mtok.encode()),
                "--client-token-file",
                write_file(os.path.join(tmp, "c.token"), ctok.encode())]
        for name in ("o1", "o2"):
            own[name] = Mdsd("--backend", "etcd", "--etcd", etcd.url,
                             "--etcd-prefix", "/dfkv/owned", *toks,
                             log=os.path.join(tmp, name + ".log")).start()

    def owner_across():
        o1, o2 = own["o1"], own["o2"]
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

    def owner_race():
        o1, o2 = own["o1"], own["o2"]
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
                th.join(20)
            expect(sorted(res.values()) == [200, 403], "%d: %r" % (i, res))
            # the winner owns it through either mdsd, the loser does not
            win = k1 if res["1"] == 200 else k2
            lose = k2 if win is k1 else k1
            expect(o2.req("PUT", path, {"ttl_ms": 60000}, win)[0] == 200)
            expect(o1.req("PUT", path, {"ttl_ms": 60000}, lose)[0] == 403)

    def weight_cap():
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

    def weight_cap_race():
        # cap 10, two members of weight 6 registered at once through two
        # mdsd: one is refused whatever the interleaving
        rs = [Mdsd("--backend", "etcd", "--etcd", etcd.url, "--etcd-prefix",
                   "/dfkv/race", "--max-group-weight", "10",
                   log=os.path.join(tmp, "race%d.log" % i)).start()
              for i in range(2)]
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
                    th.join(20)
                expect(sorted(res.values()) == [200, 409],
                       "%s: %r" % (group, res))
                ms = rs[0].list(group)[1]["members"]
                expect(sum(m["weight"] for m in ms) == 6, ms)
        finally:
            for m in rs:
                m.stop()

    def longpoll_gone():
        c = Mdsd("--backend", "etcd", "--etcd", etcd.url, "--long-poll-ms",
                 "600000", log=os.path.join(tmp, "c.log")).start()
        with held(c) as socks:
            e = c.list("g")[1]["epoch"]
            socks.append(long_poll(c.port, "g", e, "127.0.0.2"))
            expect(until(lambda: gauge(c, "dfkv_mds_long_poll_waiters") == 1),
                   "not waiting")
            socks.pop().close()
            # the wait is 600 s: its watch ends when the peer left
            expect(until(lambda: gauge(c, "dfkv_mds_long_poll_waiters") == 0),
                   "still waiting")
            expect(gauge(c, "dfkv_mds_long_polls_abandoned_total") == 1)

    def validation():
        expect(a.req("PUT", "/v1/groups/g/members/x", "{bad")[0] == 400)
        expect(a.req("PUT", "/v1/groups/g/members/x", {"zz": 1})[0] == 400)
        expect(a.req("GET", "/v1/groups/g/nodes")[0] == 404)
        expect(a.req("POST", "/v1/groups/g/members/x", "{}")[0] == 405)

    def kill_one():
        a.stop(signal.SIGKILL)
        s, d, _ = b.list("g")
        expect(s == 200 and "n1" in [m["id"] for m in d["members"]], d)
        s, d, _ = b.put("g", "n4", {})
        expect(s == 200 and d["created"], d)

    def expiry():
        s, d, _ = b.put("g", "short", {"ttl_ms": 1000})
        expect(s == 200, s)
        e = d["epoch"]
        t0 = time.time()
        gone = wait_for(lambda: "short" not in
                        [m["id"] for m in b.list("g")[1]["members"]], 10)
        expect(gone, "lease did not expire")
        dt = time.time() - t0
        expect(dt < 6, "expiry took %.1fs" % dt)
        expect(b.list("g")[1]["epoch"] > e)

    def expiry_wakes():
        s, d, _ = b.put("g", "short2", {"ttl_ms": 1000})
        t0 = time.time()
        s, d2, _ = b.list("g", query="?wait_epoch=%d&wait_ms=5000" %
                          d["epoch"])
        expect("short2" not in [m["id"] for m in d2["members"]], d2)
        expect(time.time() - t0 < 5)

    def renew_keeps():
        b.put("g", "kept", {"ttl_ms": 1000})
        for _ in range(8):
            time.sleep(0.4)
            s, d, _ = b.put("g", "kept", {"ttl_ms": 1000})
            expect(s == 200, s)
        expect("kept" in [m["id"] for m in b.list("g")[1]["members"]])

    def failover_url():
        c = Mdsd("--backend", "etcd", "--etcd",
                 "http://127.0.0.1:1," + etcd.url,
                 log=os.path.join(tmp, "c.log")).start()
        try:
            s, d, _ = c.list("g")
            expect(s == 200 and "n1" in [m["id"] for m in d["members"]], d)
        finally:
            c.stop()

    def prefix_isolation():
        c = Mdsd("--backend", "etcd", "--etcd", etcd.url, "--etcd-prefix",
                 "/elsewhere", log=os.path.join(tmp, "c.log")).start()
        try:
            expect(c.req("GET", "/v1/groups")[1] == {"groups": []})
        finally:
            c.stop()

    def etcd_down():
        b.put("g", "durable", {"ttl_ms": 120000})
        etcd.stop()
        expect(wait_for(lambda: b.req("GET", "/readyz")[0] == 503, 10),
               "readyz stayed 200")
        expect(b.list("g")[0] == 503)
        expect(b.put("g", "x", {})[0] == 503)
        expect(b.req("GET", "/healthz")[0] == 200)

    def etcd_back():
        etcd.start()
        expect(wait_for(lambda: b.req("GET", "/readyz")[0] == 200, 15),
               "readyz did not come back")
        s, d, _ = b.list("g")
        expect(s == 200 and "durable" in [m["id"] for m in d["members"]], d)

    def metrics():
        s, text, _ = b.req("GET", "/metrics")
        expect(s == 200)
        for want in ['dfkv_mds_epoch{group="g",kind="members"} ',
                     'dfkv_mds_members{group="g",state="up"} ',
                     'dfkv_mds_ready 1', 'dfkv_mds_lease_grants_total ']:
            expect(want in text, "missing %r" % want)

    sec = {}

    def secure_start():
        pki = make_pki(os.path.join(tmp, "pki"))
        e = Etcd(tmp, "etcd-tls", pki)
        sec["etcd"] = e
        e.start()
        e.ctl("user", "add", "root", "--new-user-password=root-pw")
        e.ctl("user", "grant-role", "root", "root")
        e.ctl("user", "add", "dfkv", "--new-user-password=dfkv-pw")
        e.ctl("role", "add", "dfkv")
        e.ctl("role", "grant-permission", "dfkv", "--prefix=true",
              "readwrite", "/dfkv/mds")
        e.ctl("user", "grant-role", "dfkv", "dfkv")
        e.ctl("auth", "enable")
        pw = write_file(os.path.join(tmp, "etcd.pw"), b"dfkv-pw\n")
        sec["args"] = {"--etcd-cacert": pki["ca.pem"],
                       "--etcd-cert": pki["client.pem"],
                       "--etcd-key": pki["client.key"],
                       "--etcd-user": "dfkv", "--etcd-password-file": pw}

    def secure_mdsd(name, drop=(), **over):
        args = dict(sec["args"])
        for k in drop:
            del args[k]
        args.update(over)
        flat = ["--backend", "etcd", "--etcd", sec["etcd"].url]
        for k, v in args.items():
            flat += [k, v]
        return Mdsd(*flat, "-v", log=os.path.join(tmp, name + ".log"))

    def secure_works():
        c = secure_mdsd("sec").start()
        sec["c"] = c
        expect(wait_for(lambda: c.req("GET", "/readyz")[0] == 200, 10),
               "not ready: " + c.logtail())
        s, d, _ = c.put("gs", "n1", {"tcp": "127.0.0.1:7400"})
        expect(s == 200 and d["created"], d)
        s, d, _ = c.list("gs")
        expect(s == 200 and [m["id"] for m in d["members"]] == ["n1"], d)

    def secure_refused():
        bad = write_file(os.path.join(tmp, "bad.pw"), b"not-the-password\n")
        for name, drop, over, why in [
                ("no-ca", ("--etcd-cacert",), {}, ""),
                ("no-cert", ("--etcd-cert", "--etcd-key"), {}, ""),
                ("no-user", ("--etcd-user", "--etcd-password-file"), {}, ""),
                ("bad-pw", (), {"--etcd-password-file": bad},
                 "authentication as 'dfkv' failed")]:
            c = secure_mdsd(name, drop, **over).start()
            try:
                time.sleep(1.5)
                expect(c.req("GET", "/readyz")[0] == 503, name)
                expect(c.put("gs", "rogue", {})[0] == 503, name)
                expect(c.list("gs")[0] == 503, name)
                expect(why in c.logtail(), "%s: %s" % (name, c.logtail()))
            finally:
                c.stop()
        expect([m["id"] for m in sec["c"].list("gs")[1]["members"]] ==
               ["n1"])

    def secure_reauth():
        # etcd keeps its simple tokens in memory: after a restart the old
        # one is refused (401) and mdsd authenticates again
        c = sec["c"]
        sec["etcd"].stop()
        sec["etcd"].start()
        expect(wait_for(lambda: c.put("gs", "n2", {})[0] == 200, 15),
               c.logtail())
        expect([m["id"] for m in c.list("gs")[1]["members"]] ==
               ["n1", "n2"])

    def secure_config():
        for args in [["--etcd-cert", "/x"], ["--etcd-key", "/x"],
                     ["--etcd-user", "u"], ["--etcd-password-file", "/x"]]:
            r = subprocess.run([MDSD_BIN, "--backend", "etcd"] + args,
                               capture_output=True, timeout=10)
            expect(r.returncode == 2 and b"go together" in r.stderr, r)
        loose = write_file(os.path.join(tmp, "loose.pw"), b"pw\n", 0o644)
        r = subprocess.run([MDSD_BIN, "--backend", "etcd", "--listen",
                            "127.0.0.1:%d" % free_port(), "--etcd-user",
                            "u", "--etcd-password-file", loose],
                           capture_output=True, timeout=10)
        expect(r.returncode == 1 and b"chmod 600" in r.stderr, r)

    try:
        t.check("etcd and two mdsd start", start)
        t.check("register through the first mdsd", register)
        t.check("both mdsd answer identically", identical)
        t.check("a heartbeat through the other keeps the revision",
                heartbeat_other)
        t.check("a change moves the epoch for both", change_moves)
        t.check("a long-poll on one wakes on a change through the other",
                longpoll_cross)
        t.check("writes to another group do not wake a long-poll",
                longpoll_quiet)
        t.check("DELETE through one is seen by the other", delete)
        t.check("clients are kept apart from members", clients)
        t.check("two mdsd with a member and a client token", owner_start)
        t.check("a client entry's owner holds across both mdsd; the member "
                "token deletes it", owner_across)
        t.check("two keys creating one client id through both mdsd at once: "
                "one owner", owner_race)
        t.check("validation errors with the etcd backend", validation)
        t.check("the group weight cap across two mdsd: 409", weight_cap)
        t.check("two mdsd registering at once cannot pass the weight cap "
                "together", weight_cap_race)
        t.check("a long-poll whose peer hangs up ends", longpoll_gone)
        t.check("kill one mdsd: the other keeps answering", kill_one)
        t.check("an etcd lease expiry removes the member", expiry)
        t.check("a lease expiry wakes a long-poll", expiry_wakes)
        t.check("heartbeats keep a 1 s lease alive", renew_keeps)
        t.check("an unreachable first URL fails over to the next",
                failover_url)
        t.check("another prefix is another directory", prefix_isolation)
        t.check("etcd stopped: /readyz and requests are 503", etcd_down)
        t.check("etcd restarted: ready again, membership back", etcd_back)
        t.check("/metrics with the etcd backend", metrics)
        t.check("an etcd with TLS, client certificates and auth", secure_start)
        t.check("mdsd with --etcd-cacert, --etcd-cert/--etcd-key, "
                "--etcd-user/--etcd-password-file works", secure_works)
        t.check("without the CA, the client certificate or the user, or "
                "with a wrong password: 503", secure_refused)
        t.check("a token etcd forgot: mdsd authenticates again",
                secure_reauth)
        t.check("etcd security options go in pairs; a loose password file",
                secure_config)
    finally:
        rcs = []
        for m in (a, b):
            if m:
                rcs.append(m.stop())
        if sec.get("c"):
            sec["c"].stop()
        for m in own.values():
            m.stop()
        etcd.stop()
        if sec.get("etcd"):
            sec["etcd"].stop()
    t.check("mdsd exits 0 on SIGTERM", lambda: expect(rcs[-1] == 0, rcs))
    if t.failed:
        for name in ("b.log", "etcd.log"):
            print("# %s:" % name)
            try:
                with open(os.path.join(tmp, name), errors="replace") as f:
                    for line in f.read().splitlines()[-15:]:
                        print("#   " + line[:200])
            except OSError:
                pass
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.done()


if __name__ == "__main__":
    sys.exit(main())
