#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where a request's time goes: dfkv's trace events, per stage.

The module traces every stage boundary of an ack=disk PUT, of a cold GET
and of a PUT received into RAM over TCP (kmod/trace.h,
Documentation/tuning.md), each event carrying the hash
of the request's key.  This turns a tracefs capture into per-request stage
times: a request is the events of one key from its dfkv_req_start to its
dfkv_req_end, in time order (the trace clock is set to "global" so the
CPUs' events order), a stage the time between two boundaries of it.

Used by disk.py and peers.py (the bench's per-stage tables) and by
selftests/dfkv_tier.sh (the boundaries fire, in order, with ids that
join), and on its own:

  stages.py on                 enable the dfkv events, empty the buffer
  stages.py off FILE           copy the trace to FILE, disable the events
  stages.py check FILE         per op: complete and incomplete requests,
                               TCP PUTs received in more than one RAM
                               part, keys joined (a complete PUT and GET)
  stages.py table FILE         the per-stage table (and --json OUT)
"""
import argparse
import json
import os
import re
import sys

# An ack=disk PUT: (stage, the boundary it starts at, the one it ends at).
PUT_STAGES = [
    ("receive + RAM copy", "dfkv_req_start", "dfkv_flush_queue"),
    ("flush queue wait", "dfkv_flush_queue", "dfkv_flush_start"),
    ("disk slot alloc", "dfkv_flush_start", "dfkv_flush_submit"),
    ("payload write (CRC inside)", "dfkv_flush_submit", "dfkv_flush_done"),
    ("record commit", "dfkv_flush_done", "dfkv_rec_done"),
    ("wake + answer", "dfkv_rec_done", "dfkv_req_reply"),
    ("reply to caller", "dfkv_req_reply", "dfkv_req_end"),
]
# A cold GET.
GET_STAGES = [
    ("lookup + miss", "dfkv_req_start", "dfkv_load_start"),
    ("RAM alloc", "dfkv_load_start", "dfkv_cold_read_submit"),
    ("disk read", "dfkv_cold_read_submit", "dfkv_cold_read_bios"),
    ("completion to worker", "dfkv_cold_read_bios", "dfkv_cold_read_done"),
    ("CRC check", "dfkv_cold_read_done", "dfkv_cold_read_crc"),
    ("wake + answer", "dfkv_cold_read_crc", "dfkv_req_reply"),
    ("reply to caller", "dfkv_req_reply", "dfkv_req_end"),
]
# A PUT received into RAM over TCP (its value in one or more parts, each
# reserved and bound to RAM slots as the payload reaches it).
TCP_PUT_STAGES = [
    ("header to reservation", "dfkv_req_start", "dfkv_put_reserve"),
    ("entry, index, charge", "dfkv_put_reserve", "dfkv_put_charge"),
    ("RAM slot alloc", "dfkv_put_charge", "dfkv_put_alloc"),
    ("wait for payload", "dfkv_put_alloc", "dfkv_put_recv_start"),
    ("payload receive", "dfkv_put_recv_start", "dfkv_put_recv_end"),
    ("publish", "dfkv_put_recv_end", "dfkv_put_publish"),
    ("answer", "dfkv_put_publish", "dfkv_req_reply"),
    ("reply to caller", "dfkv_req_reply", "dfkv_req_end"),
]
# op: (its code, its stages, the transport it is taken on or None: any).
OPS = {"put": ("1", PUT_STAGES, None), "get": ("2", GET_STAGES, None),
       "tcp_put": ("1", TCP_PUT_STAGES, "1")}
TITLES = (("put", "ack=disk PUT"), ("get", "cold GET"),
          ("tcp_put", "TCP PUT into RAM"))
# Counts among a request's extra() parts, not times.
COUNTS = ("group updates", "RAM parts")
# Events that report an error in a field: the request is not a success.
ERR_FIELD = {"dfkv_flush_done": "err", "dfkv_flush_crc": "err",
             "dfkv_rec_done": "err", "dfkv_cold_read_bios": "info",
             "dfkv_cold_read_done": "err", "dfkv_cold_read_crc": "err",
             "dfkv_req_reply": "info", "dfkv_req_end": "status",
             "dfkv_put_charge": "info", "dfkv_put_alloc": "info"}

LINE = re.compile(r"\s(\d+\.\d+): (dfkv_\w+): (.*)$")


# ------------------------------------------------------------- tracefs

def tracefs():
    """The tracefs directory with dfkv's events (mounted if need be)."""
    for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        if os.path.isdir(os.path.join(d, "events", "dfkv")):
            return d
    os.system("mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null")
    d = "/sys/kernel/tracing"
    if os.path.isdir(os.path.join(d, "events", "dfkv")):
        return d
    raise OSError("no dfkv events in tracefs (is dfkv.ko loaded?)")


def _put(d, name, value):
    with open(os.path.join(d, name), "w") as f:
        f.write(value)


def trace_on(buffer_kb=8192):
    """Empty the buffer, the global clock, every dfkv event on."""
    d = tracefs()
    _put(d, "tracing_on", "0")
    _put(d, "buffer_size_kb", str(buffer_kb))
    _put(d, "trace_clock", "global")
    _put(d, "trace", "")
    _put(d, "events/dfkv/enable", "1")
    _put(d, "tracing_on", "1")


def trace_off(path):
    """Stop, copy the trace to path, the dfkv events off."""
    d = tracefs()
    _put(d, "tracing_on", "0")
    with open(os.path.join(d, "trace")) as f, open(path, "w") as out:
        out.write(f.read())
    _put(d, "events/dfkv/enable", "0")
    _put(d, "trace", "")


def traced(path, run, log):
    """run() with the dfkv events traced into path: (the trace's
    summary(), run()'s result), or ({"skipped": why}, None) when tracefs
    cannot be used (logged)."""
    try:
        trace_on()
    except OSError as e:
        log("stage breakdown skipped: %s" % e)
        return {"skipped": str(e)}, None
    try:
        res = run()
    finally:
        trace_off(path)
    return summary(*parse(path)), res


# ------------------------------------------------------------- parsing

def parse(path):
    """(events, lost): events as (ts_us, name, fields) in time order; lost:
    events the buffer dropped (entries-in-buffer/entries-written)."""
    events, lost = [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                m = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)",
                              line)
                if m:
                    lost = int(m.group(2)) - int(m.group(1))
                continue
            m = LINE.search(line)
            if not m:
                continue
            fields = dict(kv.split("=", 1) for kv in m.group(3).split()
                          if "=" in kv)
            events.append((float(m.group(1)) * 1e6, m.group(2), fields))
    events.sort(key=lambda e: e[0])
    return events, lost


def requests(events):
    """Every request of every key: {"op", "key", "events": [(ts, name,
    fields)], "groups": {seq: the disk's dfkv_rec_commit fields}}."""
    open_, done, groups = {}, [], {}
    for ts, name, f in events:
        if name == "dfkv_rec_commit":
            groups[(f["disk"], f["seq"])] = f
            continue
        k = f.get("key")
        if k is None:
            continue
        if name == "dfkv_req_start":
            open_[k] = {"op": f["op"], "transport": f["transport"], "key": k,
                        "events": [(ts, name, f)]}
        elif k in open_:
            open_[k]["events"].append((ts, name, f))
            if name == "dfkv_req_end":
                done.append(open_.pop(k))
    for r in done:
        r["groups"] = groups
    return done


def split(req, stages):
    """The stage times (µs) of req, or None when a boundary is missing or
    an event reports an error.  Boundaries are taken in order, each the
    first of its name after the previous one."""
    ev = req["events"]
    for _, name, f in ev:
        if f.get(ERR_FIELD.get(name, ""), "0") != "0":
            return None
    i = 0
    marks = [stages[0][1]] + [s[2] for s in stages]
    at = []
    for m in marks:
        while i < len(ev) and ev[i][1] != m:
            i += 1
        if i == len(ev):
            return None
        at.append(ev[i][0])
    times = [b - a for a, b in zip(at, at[1:])]
    return {"stages": times, "total": at[-1] - at[0], "extra": extra(req)}


def extra(req):
    """Parts measured inside a stage: the CRC's ns, the record group's
    flush and unit writes, a PUT's RAM parts and the reservation and
    slot allocation of those after the first (inside its receive)."""
    out, parts, later, reserved = {}, 0, 0.0, None
    for ts, name, f in req["events"]:
        if name == "dfkv_put_reserve":
            reserved = ts
        if name == "dfkv_put_alloc":
            parts += 1
            if parts > 1 and reserved is not None:
                later += ts - reserved
    if parts:
        out["RAM parts"] = parts
    if parts > 1:
        out["later parts: reserve + alloc"] = later
    for _, name, f in req["events"]:
        if name in ("dfkv_flush_crc", "dfkv_cold_read_crc"):
            out["crc"] = int(f["ns"]) / 1e3
        if name == "dfkv_rec_done":
            g = req["groups"].get((f["disk"], f["seq"]))
            if g:
                out["group flush"] = int(g["flush_ns"]) / 1e3
                out["group record write"] = int(g["write_ns"]) / 1e3
                out["group updates"] = int(g["updates"])
    return out


def by_op(events):
    """{op: (complete splits, incomplete count, keys of complete ones)}."""
    reqs = requests(events)
    out = {}
    for op, (code, stages, transport) in OPS.items():
        mine = [r for r in reqs if r["op"] == code and
                transport in (None, r["transport"])]
        ok = [(r["key"], split(r, stages)) for r in mine]
        good = [s for _, s in ok if s]
        out[op] = (good, len(ok) - len(good), {k for k, s in ok if s})
    return out


# --------------------------------------------------------------- table

def pctl(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1) + 0.5)] if v else 0.0


def stat(v, total_mean):
    mean = sum(v) / len(v) if v else 0.0
    return {"mean_us": mean, "p50_us": pctl(v, 0.5), "p99_us": pctl(v, 0.99),
            "share": mean / total_mean if total_mean else None}


def mean_of(good, name):
    """The mean of a count among the requests' extra() parts, or None."""
    v = [g["extra"][name] for g in good if name in g["extra"]]
    return sum(v) / len(v) if v else None


def summary(events, lost=0):
    """Per op: requests, incomplete, and per stage mean/p50/p99/share."""
    doc = {"lost_events": lost}
    for op, (good, bad, _) in by_op(events).items():
        stages = OPS[op][1]
        tot = [g["total"] for g in good]
        tmean = sum(tot) / len(tot) if tot else 0.0
        rows = [dict(stage=name, **stat([g["stages"][i] for g in good], tmean))
                for i, (name, _, _) in enumerate(stages)]
        names = sorted({k for g in good for k in g["extra"]
                        if k not in COUNTS})
        inner = [dict(stage=n, **stat([g["extra"][n] for g in good
                                       if n in g["extra"]], tmean))
                 for n in names]
        doc[op] = {"requests": len(good), "incomplete": bad,
                   "total": stat(tot, tmean), "stages": rows, "inside": inner,
                   "updates_per_group": mean_of(good, "group updates"),
                   "ram_parts": mean_of(good, "RAM parts")}
    return doc


def print_table(title, doc):
    """One table per op of a summary()."""
    for op, what in TITLES:
        d = doc.get(op)
        if not d or not d["requests"]:
            continue
        print("\n%s, %s: %d requests (%d incomplete, %d events lost)"
              % (title, what, d["requests"], d["incomplete"],
                 doc.get("lost_events", 0)))
        print("  %-30s %10s %10s %10s %7s" % ("stage", "mean us", "p50 us",
                                              "p99 us", "share"))
        rows = d["stages"] + [dict(d["total"], stage="total")]
        for r in rows + [dict(r, stage="  inside: " + r["stage"])
                         for r in d["inside"]]:
            print("  %-30s %10.1f %10.1f %10.1f %6.1f%%"
                  % (r["stage"], r["mean_us"], r["p50_us"], r["p99_us"],
                     100 * (r["share"] or 0)))
        if d["updates_per_group"] is not None:
            print("  record updates per group commit: %.2f"
                  % d["updates_per_group"])
        if op == "tcp_put" and d["ram_parts"] is not None:
            print("  RAM parts per value: %.2f" % d["ram_parts"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=("on", "off", "check", "table"))
    ap.add_argument("file", nargs="?")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.cmd == "on":
        trace_on()
        return 0
    if not a.file:
        ap.error(a.cmd + " needs FILE")
    if a.cmd == "off":
        trace_off(a.file)
        return 0
    events, lost = parse(a.file)
    if a.cmd == "check":
        ops = by_op(events)
        for op, (good, bad, _) in ops.items():
            print("%s complete=%d incomplete=%d" % (op, len(good), bad))
        print("tcp_put multipart=%d" % sum(
            g["extra"].get("RAM parts", 0) > 1 for g in ops["tcp_put"][0]))
        print("joined=%d lost=%d" % (len(ops["put"][2] & ops["get"][2]), lost))
        return 0
    doc = summary(events, lost)
    print_table(a.file, doc)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
