# SPDX-License-Identifier: GPL-2.0
"""The mdsd tests' fixture and helpers (test_mdsd.py, test_mdsd_etcd.py):
an mdsd process (Mdsd) on a free loopback port, an etcd (Etcd) with a
temporary data directory, optionally with TLS (make_pki()), raw HTTP
and long-poll helpers, and MdsdFixture, whose variants are the two
backends: "memory", and "etcd" (one etcd shared by the cases of a run,
each case under its own key prefix, deleted after it).  Not a test
itself."""

import atexit
import contextlib
import http.client
import itertools
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from unittap import Fixture, Skip

# Every wait in the mdsd tests is for an event; this bound only catches
# a hang (a wait that never ends), it is no test of speed.
HANG = 60.0

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MDSD = os.environ.get("MDSD") or os.path.join(REPO, "build", "tools", "mdsd")
DFKVCTL = os.path.join(os.path.dirname(MDSD), "dfkvctl")


def ensure_built():
    """Build mdsd when it is missing (make unit does not build tools)."""
    if not os.path.exists(MDSD):
        subprocess.run(["make", "-s", "-C", os.path.join(REPO, "tools")],
                       stdout=sys.stderr, check=False)
    return os.path.exists(MDSD)


def _ephemeral():
    """The kernel's range for the local port of an outgoing connection."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999
    return range(lo, hi + 1)


_given = set()


def free_port():
    """A loopback port nobody listens on, outside the ephemeral range.

    A port from that range (what bind to port 0 gives) can be taken
    between this call and the server's bind by any connection's local
    port, including a probe of the server itself: a connect to a
    loopback port with no listener may pick that same port as its own
    and connect to itself (TCP simultaneous open), which both keeps the
    server from binding and answers the probe with its own request.
    """
    eph = _ephemeral()
    ports = [p for p in range(1024, 65536) if p not in eph and
             p not in _given]
    for p in random.sample(ports, len(ports)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                continue
        _given.add(p)
        return p
    raise RuntimeError("no free loopback port below the ephemeral range")


def expect(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


class Proc:
    """A server process the tests start (self.proc), its output in
    self.log."""

    proc = None
    log = None

    def logtail(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=HANG):
        """Stop it with sig (killed after timeout); its exit status."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None


class Mdsd(Proc):
    """One mdsd process on 127.0.0.1:<free port>."""

    def __init__(self, *args, port=None, log=None):
        self.auto_port = port is None
        self.port = port or free_port()
        self.args = ["--listen", "127.0.0.1:%d" % self.port] + list(args)
        self.log = log or tempfile.NamedTemporaryFile(
            prefix="mdsd-", suffix=".log", delete=False).name
        self.proc = None

    def start(self, wait=True):
        for attempt in range(5):
            with open(self.log, "ab") as f:
                self.proc = subprocess.Popen([MDSD] + self.args, stdout=f,
                                             stderr=subprocess.STDOUT)
            if not wait:
                return self
            try:
                self.wait_up()
                return self
            except RuntimeError as e:
                # A port found free when this object was made can be
                # taken by another listener before mdsd binds it:
                # another one, on the address the listen option names.
                old = ":%d" % self.port
                if (not self.auto_port or attempt == 4 or
                        not any(a.endswith(old) for a in self.args) or
                        "Address already in use" not in str(e)):
                    raise
                self.port = free_port()
                self.args = [a[:-len(old)] + ":%d" % self.port
                             if a.endswith(old) else a for a in self.args]
        return self

    def wait_up(self, timeout=HANG):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("mdsd exited %d: %s" %
                                   (self.proc.returncode, self.logtail()))
            try:
                if self.req("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("mdsd did not come up: " + self.logtail())

    def req(self, method, path, body=None, headers=None, timeout=HANG,
            source="127.0.0.1"):
        c = http.client.HTTPConnection("127.0.0.1", self.port,
                                       timeout=timeout,
                                       source_address=(source, 0))
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            data = r.read()
            hdrs = dict((k.lower(), v) for k, v in r.getheaders())
            try:
                doc = json.loads(data) if data else None
            except ValueError:
                doc = data.decode(errors="replace")
            return r.status, doc, hdrs
        finally:
            c.close()

    def put(self, group, id_, body, kind="members"):
        return self.req("PUT", "/v1/groups/%s/%s/%s" % (group, kind, id_),
                        body)

    def list(self, group, kind="members", query=""):
        return self.req("GET", "/v1/groups/%s/%s%s" % (group, kind, query),
                        timeout=HANG)


def raw(port, data, timeout=HANG, shut=True):
    """Send raw bytes; return what came back before the server closed."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
        return out
    finally:
        s.close()


def write_file(path, data, mode=0o600):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    return path


def metric(text, name):
    """The value of one sample line of /metrics (None when absent)."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[-1]))
    return None


def until(fn, timeout=HANG):
    """Wait for fn() to hold; False when it did not within timeout."""
    end = time.time() + timeout
    while time.time() < end:
        if fn():
            return True
        time.sleep(0.05)
    return bool(fn())


def gauge(mdsd, name):
    """One sample of mdsd's /metrics; None when the read was refused (a
    503 while every read connection is taken, see reserved_writes)."""
    status, body = mdsd.req("GET", "/metrics")[:2]
    return metric(body, name) if status == 200 else None


@contextlib.contextmanager
def held(mdsd):
    """A list for the sockets held against mdsd: closed, then mdsd
    stopped (exit status 0 expected), on the way out."""
    socks = []
    try:
        yield socks
    finally:
        for s in socks:
            s.close()
        expect(mdsd.stop() == 0)


def long_poll(port, group, epoch, source):
    """A wait_epoch request from source whose answer is never read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=HANG,
                                 source_address=(source, 0))
    s.sendall(b"GET /v1/groups/%s/members?wait_epoch=%d HTTP/1.1\r\n"
              b"Host: mdsd\r\n\r\n" % (group.encode(), epoch))
    return s


def waiters(m):
    """The long-polls waiting in m (None when /metrics was refused)."""
    return gauge(m, "dfkv_mds_long_poll_waiters")


def abandoned(m):
    """The long-polls m counted as abandoned by their peer; counted
    when the slot is freed, just after the waiter left."""
    return gauge(m, "dfkv_mds_long_polls_abandoned_total")


def long_poll_around(m, group, query, change):
    """GET group's members with query (a wait_epoch long-poll) from
    another thread, and change() once that long-poll waits on m; the
    answer (status, body, headers), the seconds it took and whether it
    ended (within HANG)."""
    res = {}

    def poll():
        t0 = time.time()
        res["r"] = m.list(group, query=query)
        res["dt"] = time.time() - t0
    th = threading.Thread(target=poll)
    th.start()
    expect(until(lambda: waiters(m) == 1), "the long-poll is not waiting")
    change()
    th.join(HANG)
    return res.get("r"), res.get("dt"), not th.is_alive()


def status_of(resp):
    line = resp.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 else 0


class Etcd(Proc):
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
        end = time.time() + HANG
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("etcd exited: " + self.logtail())
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1,
                                            context=ctx) as r:
                    if b"true" in r.read():
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("etcd did not come up: " + self.logtail())

    def ctl(self, *args):
        tls = []
        if self.pki:
            tls = ["--cacert", self.pki["ca.pem"],
                   "--cert", self.pki["client.pem"],
                   "--key", self.pki["client.key"]]
        r = subprocess.run(["etcdctl", "--endpoints", self.url] + tls +
                           list(args), capture_output=True, timeout=HANG)
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
                       capture_output=True, timeout=HANG)
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



_etcd = {}
_prefixes = itertools.count(1)


def shared_etcd():
    """The etcd the "etcd" variants' cases share, started at the first
    use and stopped at exit."""
    if "e" not in _etcd:
        tmp = tempfile.mkdtemp(prefix="mdsd-etcd-")
        _etcd["e"] = Etcd(tmp)
        atexit.register(shutil.rmtree, tmp, True)
        atexit.register(_etcd["e"].stop)
        _etcd["e"].start()
    return _etcd["e"]


class MdsdFixture(Fixture):
    """Each case's temporary directory and the mdsd it starts (stopped
    after it, their logs printed when it failed); the variant is the
    backend those mdsd use."""

    name = "mdsd"
    # counts_expiries: dfkv_mds_lease_expiries_total counts lapsed
    # leases (Documentation/mdsd.md: etcd expires leases itself)
    variants = {"memory": {"backend": "memory", "counts_expiries": True},
                "etcd": {"backend": "etcd", "counts_expiries": False}}

    def setup(self):
        if not ensure_built():
            raise Skip("mdsd not built")
        self.procs = []
        self.etcd = None
        if self.variant["backend"] == "etcd":
            if not shutil.which("etcd"):
                raise Skip("etcd not installed (apt-get install "
                           "etcd-server)")
            self.etcd = shared_etcd()
            self.prefix = "/dfkv/c%d" % next(_prefixes)
        self.tmp = tempfile.mkdtemp(prefix="mdsd-test-")

    def backend(self, sub="mds", urls=None):
        """The backend options of this variant; sub names a directory
        of its own under the case's etcd prefix, urls replaces the
        shared etcd's URL."""
        if not self.etcd:
            return []
        return ["--backend", "etcd", "--etcd", urls or self.etcd.url,
                "--etcd-prefix", "%s/%s" % (self.prefix, sub)]

    def path(self, name):
        return os.path.join(self.tmp, name)

    def mdsd(self, *args, name="mdsd", start=True, sub="mds", urls=None,
             **kw):
        """An mdsd with this variant's backend and args, its log in the
        case's directory; started unless start is False."""
        m = Mdsd(*(self.backend(sub, urls) + list(args)),
                 log=self.path(name + ".log"), **kw)
        self.procs.append(m)
        return m.start() if start else m

    def teardown(self):
        for m in getattr(self, "procs", []):
            m.stop()
        if getattr(self, "etcd", None):
            # An epoch with etcd is the revision of the whole store: no
            # key of this case may lapse later, under another case.
            self.etcd.ctl("del", "--prefix", self.prefix + "/")
        if self.failed:
            for m in getattr(self, "procs", []):
                print("# %s:" % os.path.basename(m.log))
                for line in m.logtail().splitlines()[-30:]:
                    print("#   " + line[:200])
        shutil.rmtree(getattr(self, "tmp", ""), ignore_errors=True)
