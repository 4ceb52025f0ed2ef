#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# tools/monitoring: the Prometheus rules and the Grafana dashboard.
# `promtool check rules` accepts dfkv-alerts.yml and `promtool test rules`
# passes dfkv-alerts.test.yml, which fires every alert of the file; every
# metric the rules and the dashboard name is one tools/mdsd/metrics.c
# (or, dfkv_client_*, lib/client.c) writes; then Debian's prometheus
# server on loopback scrapes a real mdsd (memory backend, a member and a
# client registered) with the rules loaded, and every dashboard query and every rule expression is
# evaluated through its HTTP API: none errors, and those over mdsd's own
# dfkv_mds_* metrics return series (the node metrics need dfkv.ko, which
# only the VM has: those are evaluated, empty).  TAP; skipped without
# promtool or prometheus.  Every wait is bounded.

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mdsd_fixture import Mdsd, ensure_built, expect, free_port  # noqa: E402
from unittap import Fixture, Skip, run, test, test_f  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MON = os.path.join(REPO, "tools", "monitoring")
RULES = os.path.join(MON, "dfkv-alerts.yml")
TESTS = os.path.join(MON, "dfkv-alerts.test.yml")
DASH = os.path.join(MON, "dfkv-dashboard.json")
# Grafana's variables as the dashboard's "All" sets them
GRAFANA_VARS = {"$__rate_interval": "1m", "$node": ".*", "$tenant": ".*"}
FUNCS = {"sum", "max", "min", "rate", "increase", "changes", "time",
         "timestamp", "histogram_quantile", "max_over_time", "by", "on",
         "offset", "and", "or", "unless", "group_left", "group_right"}


def promtool(*args):
    r = subprocess.run(["promtool"] + list(args), capture_output=True,
                       text=True, timeout=120)
    expect(r.returncode == 0, "promtool %s: %s%s" % (" ".join(args),
                                                     r.stdout, r.stderr))
    return r.stdout


def rule_file():
    """Every rule of dfkv-alerts.yml: {"alert"|"record": name, "expr"}."""
    with open(RULES) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


def dashboard_queries():
    with open(DASH) as f:
        d = json.load(f)
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            e = t["expr"]
            for k, v in GRAFANA_VARS.items():
                e = e.replace(k, v)
            out.append((p["title"], e))
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            m = re.match(r"label_values\((\w+), \w+\)", v["query"]["query"])
            expect(m, "variable %s: %r" % (v["name"], v["query"]))
            out.append(("variable " + v["name"], m.group(1)))
    return out


def exported_names():
    """Every metric name tools/mdsd/metrics.c writes (histograms with
    their _bucket, _sum and _count series), and every one of a client's
    (lib/client.c, which engines export with dfkv.prometheus)."""
    with open(os.path.join(REPO, "tools", "mdsd", "metrics.c")) as f:
        src = f.read()
    names = set(re.findall(r'"(dfkv_[a-z0-9_]+)', src))
    with open(os.path.join(REPO, "lib", "client.c")) as f:
        src = f.read()
    names |= set(re.findall(r"\b(dfkv_client_[a-z0-9_]+)", src))
    names |= {"dfkv_client_" + n for n in
              re.findall(r'counter\(&b, "([a-z0-9_]+)"', src)}
    for n in list(names):
        names |= {n + "_bucket", n + "_sum", n + "_count"}
    return names


def metric_names(expr):
    """The metric names an expression reads: identifiers outside label
    matchers and strings, not functions, keywords or label names."""
    e = re.sub(r'"[^"]*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\b(by|on|without|ignoring)\s*\([^)]*\)", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\boffset\s+\w+", "", e)
    ids = re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", e)
    return {i for i in ids if i not in FUNCS and not i.startswith("node:")
            and not i.startswith("group:") and not re.match(r"\d", i)}


class Prometheus:
    """Debian's prometheus on a free loopback port, scraping targets
    (host:port) every second with dfkv-alerts.yml loaded."""

    def __init__(self, tmp, *targets):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: dfkv\n"
                    "    static_configs:\n      - targets: [%s]\n" %
                    (RULES, ", ".join("'%s'" % t for t in targets)))
        self.log = os.path.join(tmp, "prometheus.log")
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(
                ["prometheus", "--config.file", cfg,
                 "--storage.tsdb.path", os.path.join(tmp, "tsdb"),
                 "--web.listen-address", "127.0.0.1:%d" % self.port],
                stdout=f, stderr=subprocess.STDOUT)

    def query(self, expr):
        url = "%s/api/v1/query?%s" % (self.url, urllib.parse.urlencode(
            {"query": expr}))
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return json.loads(body)
            except ValueError:      # not ready yet: a plain-text 503
                return {"status": "error", "error": body.decode()}

    def until(self, expr, what, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            expect(self.proc.poll() is None, "prometheus exited")
            try:
                if self.query(expr).get("data", {}).get("result"):
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("prometheus: no %s in %d s" % (what, timeout))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def need_tools():
    if not shutil.which("promtool") or not shutil.which("prometheus"):
        raise Skip("promtool or prometheus missing (make deps)")


def expressions():
    """(where, expression, whether it must return series once mdsd is
    scraped: the dashboard's and the recording rules' over dfkv_mds_*;
    an alert's is empty while it does not fire)"""
    return [("rule " + r.get("alert", r.get("record")), r["expr"],
             "record" in r) for r in rule_file()] + \
        [(w, e, True) for w, e in dashboard_queries()]


@test("promtool check rules accepts dfkv-alerts.yml")
def check_rules():
    need_tools()
    promtool("check", "rules", RULES)


@test("promtool test rules: every alert's test passes")
def test_rules():
    need_tools()
    promtool("test", "rules", TESTS)


@test("every alert has a test case that fires it")
def every_alert_fires():
    with open(TESTS) as f:
        text = f.read()
    fired = {c["alertname"] for t in yaml.safe_load(text)["tests"]
             for c in t["alert_rule_test"] if c["exp_alerts"]}
    alerts = {r["alert"] for r in rule_file() if "alert" in r}
    expect(alerts and alerts <= fired,
           "alerts no test fires: %s" % sorted(alerts - fired))


@test("every metric the rules and the dashboard read is one mdsd exports")
def names_exported():
    known = exported_names() | {"up"}
    exprs = expressions()
    bad = {}
    for where, e, _ in exprs:
        unknown = metric_names(e) - known
        if unknown:
            bad[where] = sorted(unknown)
    expect(len(exprs) > 30 and not bad,
           "metrics not exported by mdsd: %r" % bad)


class Scraping(Fixture):
    """A real mdsd (memory backend) and Debian's prometheus scraping it
    with the rules loaded."""

    name = "monitoring"
    variants = {"mdsd": {}}

    def setup(self):
        need_tools()
        expect(ensure_built(), "mdsd not built")
        self.tmp = tempfile.mkdtemp(prefix="monitoring-test-")
        self.prom = None
        self.m = Mdsd(log=os.path.join(self.tmp, "mdsd.log"))
        self.m.start()
        self.prom = Prometheus(self.tmp, "127.0.0.1:%d" % self.m.port)

    def teardown(self):
        if getattr(self, "prom", None):
            self.prom.stop()
        if getattr(self, "m", None):
            self.m.stop()
        if getattr(self, "tmp", None):
            shutil.rmtree(self.tmp, ignore_errors=True)


def populate(f):
    """A member and a client (for longer than the test), then a second
    member once the group's series are scraped: a change of the epoch
    the epoch-age panel sees."""
    m, prom = f.m, f.prom
    prom.until('up{job="dfkv"} == 1', "scrape of mdsd")
    prom.until("dfkv_mds_ready == 1", "dfkv_mds_ready")
    long = {"tcp": "127.0.0.1:7400", "ttl_ms": 600000}
    expect(m.req("PUT", "/v1/groups/g/members/kv0", long)[0] == 200)
    expect(m.req("PUT", "/v1/groups/g/clients/c0",
                 {"ttl_ms": 600000})[0] == 200)
    prom.until('dfkv_mds_members{group="g",state="up"} == 1',
               "the member's series")
    prom.until('dfkv_mds_clients{group="g"} == 1', "the client's series")
    expect(m.req("PUT", "/v1/groups/g/members/kv1", long)[0] == 200)
    # the epoch-age panel's subquery has a step after the change
    age = [e for w, e in dashboard_queries() if w.startswith("Epoch age")]
    expect(len(age) == 1, "no epoch-age panel")
    prom.until(age[0], "the epoch change")


@test_f(Scraping)
def scrapes_mdsd_with_the_rules_loaded(f):
    populate(f)


@test_f(Scraping)
def every_query_and_rule_evaluates(f):
    """Every dashboard query and rule expression evaluates, the mdsd ones
    with series."""
    populate(f)
    errors, empty = {}, []
    for where, e, series in expressions():
        r = f.prom.query(e)
        if r.get("status") != "success":
            errors[where] = r.get("error")
        elif (series and not r["data"]["result"] and
              all(n.startswith("dfkv_mds_") for n in metric_names(e))):
            empty.append(where)
    expect(not errors, "queries that error: %r" % errors)
    expect(not empty, "mdsd queries without series: %r" % empty)


if __name__ == "__main__":
    sys.exit(run())
