#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""dfkv_rails.sh's client: hammers node kvr at NODE over two RDMA rails
(RAILS, rdma_devices) with batches of PUTs and GETs, every GET checked
byte for byte, while the link of CUT (the second rail's netdev, the other
end of its veth CUT_PEER, its address CUT_ADDR) is cut and brought back.  Each phase ends on an event the client's own counters
show (Client.rails(), read after each batch), bounded by
DFKV_RAILS_BOUND_S only to fail a run that would never get there; the
batches run in a thread of their own, so the link goes down under one:

  both rails carry requests; CUT down: the second rail is quarantined
  (failures, quarantines, up 0); until the first rail took 40 batches'
  more requests the second took none; CUT up: the second rail carries
  requests again.

Exits 0 when every PUT was OK and every GET returned what was PUT (no
client error, no wrong byte, no miss, no dropped write)."""
import os
import subprocess
import sys
import threading
import time

import dfkv

NODE, RAILS, CUT, CUT_PEER, CUT_ADDR = sys.argv[1:6]
RAILS = RAILS.split(",")
BOUND_S = float(os.environ.get("DFKV_RAILS_BOUND_S", "900"))
BATCH = 8
INLINE = 4096   # what libdfkv asks to send inline
c = dfkv.Client("kvr=%s:7400" % NODE, b"rails", transport="rdma",
                rdma_devices=RAILS)
first, second = RAILS
done = {"batches": 0, "bad": 0}


def batch():
    """One batch: BATCH values PUT inline (a node READing a PUT's value
    over a link cut under it holds the key until its READ fails, and a
    retry of that PUT joins it: see Documentation), then GET into
    buffers too large to come back inline (the node WRITEs them),
    compared."""
    n = done["batches"]
    keys = [b"rail-%d-%d" % (n, i) for i in range(BATCH)]
    vals = [os.urandom(1 + (n * BATCH + i) * 541 % INLINE)
            for i in range(BATCH)]
    for i, st in enumerate(c.put_batch(keys, vals)):
        if st != dfkv.OK:
            print("PUT %r: status %d" % (keys[i], st))
            done["bad"] += 1
    outs = [bytearray(4 * INLINE) for v in vals]
    for i, (st, ln) in enumerate(c.get_batch(keys, outs)):
        if st != dfkv.OK or outs[i][:ln] != vals[i]:
            print("GET %r: status %d, %d bytes of %d, %s" %
                  (keys[i], st, ln, len(vals[i]),
                   "equal" if outs[i][:ln] == vals[i] else "wrong bytes"))
            done["bad"] += 1
    done["batches"] += 1


cv = threading.Condition()
stop = threading.Event()


def hammer():
    """Batch after batch until stop, each one announced on cv."""
    while not stop.is_set():
        batch()
        with cv:
            cv.notify_all()


def until(what, pred):
    """Wait, batch by batch, until pred(rails) holds; the rails then."""
    t0 = time.monotonic()
    with cv:
        while True:
            r = c.rails()
            if pred(r):
                print("%s: after %d batches, %s" % (what, done["batches"], r))
                return r
            if time.monotonic() - t0 > BOUND_S or not worker.is_alive():
                sys.exit("%s: not within %d s: %s" % (what, BOUND_S, r))
            cv.wait()


def mac(dev):
    with open("/sys/class/net/%s/address" % dev) as f:
        return f.read().strip()


def link(state):
    """CUT down, or up with its static neighbours back (down flushed
    them)."""
    subprocess.run(["ip", "link", "set", CUT, state], check=True)
    for addr, dev, peer in ((NODE, CUT, CUT_PEER), (CUT_ADDR, CUT_PEER, CUT)):
        if state == "up":
            subprocess.run(["ip", "neigh", "replace", addr, "lladdr",
                            mac(peer), "dev", dev, "nud", "permanent"],
                           check=True)


worker = threading.Thread(target=hammer)
worker.start()
until("both rails carry requests",
      lambda r: r[first]["requests"] > 0 and r[second]["requests"] > 0)
# mid-batch: the batch in flight loses its second rail
link("down")
r = until("%s quarantined" % second,
          lambda r: r[second]["up"] == 0 and r[second]["quarantines"] > 0
          and r[second]["failures"] > 0)
held, moved = r[second]["requests"], r[first]["requests"]
r = until("%d more requests on %s" % (40 * BATCH, first),
          lambda r: r[first]["requests"] >= moved + 40 * BATCH)
ok = r[second]["requests"] == held
link("up")
r = until("%s carries requests again" % second,
          lambda r: r[second]["requests"] > held and r[second]["up"] == 1)
stop.set()
worker.join()
misses = c.misses()
st = c.stats()
dropped = [ln for ln in st.splitlines()
           if ln.startswith("dfkv_client_dropped_writes_total ")]
print("%s carried nothing while down: %s; misses %s, %s, %d batches, "
      "%d bad" % (second, ok, misses, dropped, done["batches"], done["bad"]))
sys.exit(0 if ok and not done["bad"] and misses["unavailable"] == 0 and
         dropped == ["dfkv_client_dropped_writes_total 0"] else 1)
