# SPDX-License-Identifier: GPL-2.0
"""A client's counters in the engine's own Prometheus endpoint.

libdfkv counts what a client did (Client.stats(): `dfkv_client_*`, the
misses by cause among them; lib/README.md).  Engines already serve
/metrics with prometheus_client, often from another process than the one
that runs the KV connector: vLLM and SGLang set PROMETHEUS_MULTIPROC_DIR
and collect every process's metrics from shared files.  A collector would
reach only its own process's registry, so export() copies the client's
snapshot into prometheus_client metrics instead: a counter is increased
by what moved since the last copy, a gauge is set.  In multiprocess mode
the values land in the shared files like the engine's own (counters are
summed over processes, gauges take the live maximum).

Every client exported into one registry adds to the same series: two
clients with the same labels are summed.  Labels given to export() tell
them apart (the same label names on every export of a process).
"""

import threading

from prometheus_client import REGISTRY, Counter, Gauge
from prometheus_client.parser import text_string_to_metric_families

# (registry, sample name) -> (its prometheus_client metric, label names)
_metrics = {}
_lock = threading.Lock()


def _metric(registry, sample, family, labelnames):
    key = (id(registry), sample)
    with _lock:
        if key not in _metrics:
            if family.type == "counter":
                m = Counter(sample, family.documentation, labelnames,
                            registry=registry)
            else:
                m = Gauge(sample, family.documentation, labelnames,
                          registry=registry, multiprocess_mode="livemax")
            _metrics[key] = (m, labelnames)
        m, names = _metrics[key]
    if names != labelnames:
        raise ValueError("dfkv.prometheus: %s is exported with labels %s, "
                         "not %s" % (sample, names, labelnames))
    return m


class Exporter:
    """Copies one client's snapshot into a registry: update() once, or
    every `interval` seconds from a daemon thread (start()) until stop()
    or the client's close(), which stops it first."""

    def __init__(self, client, registry=None, **labels):
        self._client = client
        self._registry = REGISTRY if registry is None else registry
        self._labels = {k: str(v) for k, v in labels.items()}
        self._last = {}
        self._stop = threading.Event()
        self._thread = None

    def update(self):
        """Copy the client's counters now."""
        text = self._client.stats()
        for fam in text_string_to_metric_families(text):
            if fam.type not in ("counter", "gauge"):
                continue
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue
                lab = dict(s.labels, **self._labels)
                names = sorted(lab)
                m = _metric(self._registry, s.name, fam, names)
                child = m.labels(*[lab[n] for n in names])
                if fam.type == "gauge":
                    child.set(s.value)
                    continue
                key = (s.name, tuple(sorted(s.labels.items())))
                delta = s.value - self._last.get(key, 0)
                self._last[key] = s.value
                if delta > 0:
                    child.inc(delta)

    def _run(self, interval):
        while not self._stop.wait(interval):
            self.update()

    def start(self, interval):
        """Copy now, then every `interval` seconds until stop()."""
        self.update()
        self._thread = threading.Thread(target=self._run, args=(interval,),
                                        name="dfkv-prometheus", daemon=True)
        self._thread.start()
        self._client._on_close.append(self.stop)
        return self

    def stop(self):
        """Stop copying, after one last copy."""
        if self._thread is None:
            return
        self._client._on_close.remove(self.stop)
        self._stop.set()
        self._thread.join()
        self._thread = None
        self.update()


def export(client, interval=5.0, registry=None, **labels):
    """Copy client's counters into registry (prometheus_client's default
    one if None) now and every `interval` seconds, until stop() or the
    client's close(); labels are added to every series.  Returns the
    Exporter."""
    return Exporter(client, registry, **labels).start(interval)
