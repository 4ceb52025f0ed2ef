#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""prom_eval.py TARGET...: what an operator's Prometheus and Grafana make
of dfkv's exporters after a workload, inside the test VM
(dfkv_metrics.sh).

Debian's prometheus scrapes each TARGET (host:port of an mdsd's
/metrics: a host agent's node metrics, the directory's own) with
tools/monitoring/dfkv-alerts.yml loaded; then every dashboard query,
variable and rule expression (selftests/unit/test_monitoring.py's list)
is evaluated through its HTTP API.  None may error, and each dashboard
query and recording rule whose metrics the targets export must return
series (within a bounded wait: a rate needs two scrapes; the line
"# scraping" says when a change the caller makes is seen).  Alert
expressions are evaluated without asserting that they fire: a healthy
workload fires none (promtool's tests fire each one).  Prints what it
evaluated; exits non-zero on any failure.
"""

import os
import re
import shutil
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "unit"))
from test_monitoring import Prometheus, expressions, metric_names  # noqa

WAIT_S = 120    # a bound on the wait for series, not a timing assertion


def exported(target):
    """The sample names target's /metrics has now."""
    with urllib.request.urlopen("http://%s/metrics" % target,
                                timeout=30) as r:
        text = r.read().decode()
    return set(re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", text, re.M))


def main(targets):
    if not shutil.which("prometheus"):
        print("prometheus missing (make deps)")
        return 1
    have = set().union(*(exported(t) for t in targets))
    tmp = tempfile.mkdtemp(prefix="prom-eval-")
    prom = Prometheus(tmp, *targets)
    try:
        prom.until('count(up{job="dfkv"} == 1) == %d' % len(targets),
                   "every target scraped", WAIT_S)
        # the caller may now change what is scraped (the epoch-age panel
        # needs a membership change inside the scraped window)
        print("# scraping", flush=True)
        exprs = expressions()
        errors, empty, n_series = {}, [], 0
        end = time.time() + WAIT_S
        for where, e, series in exprs:
            want = series and metric_names(e) <= have
            while True:
                r = prom.query(e)
                if r.get("status") != "success":
                    errors[where] = r.get("error")
                    break
                if not want or r["data"]["result"]:
                    n_series += want
                    break
                if time.time() > end:
                    empty.append(where)
                    break
                time.sleep(0.5)
        print("# %d expressions evaluated, %d with series required and "
              "found, %d metric names exported" % (len(exprs), n_series,
                                                   len(have)))
        for where, err in errors.items():
            print("# error: %s: %s" % (where, err))
        for where in empty:
            print("# no series: %s" % where)
        return 1 if errors or empty or not n_series else 0
    finally:
        prom.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: prom_eval.py HOST:PORT...")
    sys.exit(main(sys.argv[1:]))
