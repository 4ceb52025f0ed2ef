# SPDX-License-Identifier: GPL-2.0
"""A long-lived discovery client for selftests/mdsd_cluster.sh.

driver.py CMD_FIFO OUT_FIFO ENDPOINTS GROUP POLL_MS GRACE_MS NKEYS

Reads one command a line from CMD_FIFO, answers one line on OUT_FIFO:
"ok ..." or "fail ...".  Every command runs under an alarm that kills the
process (the shell's read then sees EOF), so nothing can hang the test.

  ring N SECS [E]  wait until the ring has N members (client stats), the
                   keys route to N distinct names and the client has
                   seen directory epoch E or later; "ok MS name..."
  snap NAME        remember where every key routes
  moved NAME NEW   keys routed differently from snapshot NAME: the
                   fraction in permille; fail if one moved elsewhere
  put              store every key (value derived from the key)
  check NAME GONE  get every key: those snapshot NAME routed to GONE
                   miss, every other is byte-exact; no other status
  ops              a put/get/miss round trip on fresh keys
  stat NAME        one client counter
"""
import os
import signal
import sys
import time

cmd_in = open(sys.argv[1], "r")
out = open(sys.argv[2], "w", buffering=1)
signal.signal(signal.SIGALRM, signal.SIG_DFL)

import dfkv  # noqa: E402  (after the FIFOs: the shell waits on them)

ENDPOINTS, GROUP = sys.argv[3], sys.argv[4]
POLL_MS, GRACE_MS, NKEYS = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
KEYS = [b"mc-key-%06d" % i for i in range(NKEYS)]
NS = dfkv.ns_build("acme", "m", "r", "vllm-multiwr-v4", "bfloat16", 1, 16,
                   2, "full", (1, 1, 1, 1, 1))
snaps = {}
c = None


def value(k):
    return b"v:" + k * 3


def stat(name):
    for line in c.stats().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return int(float(line.split()[-1]))
    return None


def routes():
    return [c.locate(k)[0] for k in KEYS]


def cmd_open():
    global c
    c = dfkv.Client(None, NS, mds_endpoints=ENDPOINTS, group=GROUP,
                    mds_poll_ms=POLL_MS, mds_grace_ms=GRACE_MS,
                    connect_timeout_ms=2000, io_timeout_ms=5000)
    return "epoch %s" % stat("dfkv_client_mds_epoch")


def cmd_ring(n, secs, epoch=0):
    n, t0, epoch = int(n), time.monotonic(), int(epoch)
    deadline = t0 + float(secs)
    while True:
        m = stat("dfkv_client_ring_members")
        e = stat("dfkv_client_mds_epoch")
        names = sorted(set(routes())) if m == n and e >= epoch else []
        if len(names) == n:
            return "%d %s epoch %s" % ((time.monotonic() - t0) * 1000,
                                       " ".join(names),
                                       stat("dfkv_client_mds_epoch"))
        if time.monotonic() > deadline:
            raise Exception("ring has %s members (want %d), keys on %s"
                            % (m, n, sorted(set(routes()))))
        time.sleep(0.05)


def cmd_snap(name):
    snaps[name] = routes()
    return "%d keys" % len(KEYS)


def cmd_moved(name, new):
    before, now = snaps[name], routes()
    moved = [(b, a) for b, a in zip(before, now) if b != a]
    wrong = [m for m in moved if m[1] != new]
    if wrong:
        raise Exception("%d keys moved elsewhere than %s: %s"
                        % (len(wrong), new, wrong[:5]))
    return "%d" % (len(moved) * 1000 // len(KEYS))


def cmd_put():
    bad = {}
    for k in KEYS:
        st = c.put(k, value(k))
        if st != dfkv.OK:
            bad[st] = bad.get(st, 0) + 1
    if bad:
        raise Exception("put statuses %s" % bad)
    return "%d" % len(KEYS)


def cmd_check(name, gone):
    hit = miss = 0
    for k, owner in zip(KEYS, snaps[name]):
        st, v = c.get(k)
        if owner == gone:
            if st != dfkv.NOT_FOUND:
                raise Exception("%r (was on %s): status %s" % (k, gone, st))
            miss += 1
        else:
            if st != dfkv.OK or v != value(k):
                raise Exception("%r on %s: status %s, %r"
                                % (k, owner, st, v[:20] if v else v))
            hit += 1
    if miss == 0 or hit == 0:
        raise Exception("%d hits, %d misses" % (hit, miss))
    return "%d hits %d misses" % (hit, miss)


def failed(what, k, st):
    """A failed request, with its owner and the client's error counters."""
    def telling(line):
        if line.startswith("#"):
            return False
        if "result=" in line:
            return not ('result="ok"' in line or 'result="not_found"' in line)
        return any(w in line for w in ("fail", "down", "unhealthy"))
    bad = " ".join(filter(telling, c.stats().splitlines()))
    return Exception("%s %r on %s: status %s; %s"
                     % (what, k, c.locate(k)[0], st, bad))


def cmd_ops():
    tag = b"ops-%f-" % time.monotonic()
    for i in range(50):
        k = tag + b"%d" % i
        st = c.put(k, value(k))
        if st != dfkv.OK:
            raise failed("put", k, st)
        st, v = c.get(k)
        if st != dfkv.OK or v != value(k):
            raise failed("get", k, st)
        if c.get(k + b"-absent")[0] != dfkv.NOT_FOUND:
            raise Exception("absent %r not a miss" % k)
    return "50 round trips"


def cmd_stat(name):
    return "%s" % stat(name)


CMDS = {"open": cmd_open, "ring": cmd_ring, "snap": cmd_snap,
        "moved": cmd_moved, "put": cmd_put, "check": cmd_check,
        "ops": cmd_ops, "stat": cmd_stat}

for line in cmd_in:
    words = line.split()
    if not words:
        continue
    if words[0] == "quit":
        break
    signal.alarm(120)
    try:
        res = "ok " + CMDS[words[0]](*words[1:])
    except Exception as e:  # noqa: BLE001  (reported to the shell)
        res = "fail %s: %s" % (type(e).__name__, str(e).replace("\n", " "))
    signal.alarm(0)
    out.write(res + "\n")
out.write("ok bye\n")
if c is not None:
    c.close()
os._exit(0)
