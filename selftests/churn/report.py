# SPDX-License-Identifier: GPL-2.0
"""The figures of a churn run (selftests/dfkv_churn.sh), per event.

report.py DIR JSON

DIR holds the clients' logs (c<ID>.log, client.py) and "events", one
JSON line per event: {"name", "t0" (when it was done), "epoch" (the
directory's epoch once it showed the event's membership) and "members"
(that membership, comma-separated), both null when membership does not
change}.  Prints one table line per event and writes JSON: keys
moved over ideal (mean over the clients of moved share / ideal share),
seconds until every client's ring had the event's membership (an etcd
epoch also moves with writes that change no member, and a client's ring
takes a new epoch only with a change of members or a long-poll's end:
members, not epochs, say when a ring caught up), the hit rate
per second from the event on, its level before (the 5 s before the
event), its lowest, the seconds from the event until it was back within
0.02 of that level after its lowest, client errors, wrong bytes, writes
dropped.  Times are measurements, never checked here; exit 1 when a
client saw an error or a wrong byte, or an event's membership never reached
every client's ring.
"""
import glob
import json
import sys

BEFORE = 5      # seconds of hit rate that make the level before an event
NEAR = 0.02     # "back to its level": within this of it


def load(d):
    seconds, rings, totals = {}, [], []
    for path in sorted(glob.glob(d + "/c*.log")):
        cl = []
        for line in open(path):
            r = json.loads(line)
            if "s" in r:
                acc = seconds.setdefault(r["t"], {})
                for k, v in r["s"].items():
                    acc[k] = acc.get(k, 0) + v
            elif "ring" in r:
                cl.append(r)
            elif "total" in r:
                totals.append(r["total"])
        rings.append(cl)
    events = [json.loads(line) for line in open(d + "/events")]
    return seconds, rings, totals, events


def rate(s):
    n = s.get("hit", 0) + s.get("miss", 0)
    return s["hit"] / n if n else None


def figures(ev, end, seconds, rings):
    t0 = ev["t0"]
    win = [t for t in sorted(seconds) if t0 <= t < end]
    pre = [seconds[t] for t in sorted(seconds) if t0 - BEFORE <= t < t0]
    level = rate({"hit": sum(s["hit"] for s in pre),
                  "miss": sum(s["miss"] for s in pre)})
    series = [rate(seconds[t]) for t in win]
    out = {"event": ev["name"], "t0": t0, "epoch": ev.get("epoch"),
           "members": ev.get("members"),
           "hit_before": level,
           "hit_per_s": [None if r is None else round(r, 3)
                         for r in series]}
    sums = {k: sum(seconds[t].get(k, 0) for t in win)
            for k in ("err", "wrong", "dropped", "get", "put", "lease")}
    out.update(errors=sums["err"], wrong=sums["wrong"],
               writes_dropped=sums["dropped"], gets=sums["get"],
               puts=sums["put"], leases=sums["lease"])
    valid = [(t, r) for t, r in zip(win, series) if r is not None]
    low = min(valid, key=lambda x: x[1]) if valid else None
    out["hit_lowest"] = low[1] if low else None
    back = None
    if low and level is not None:
        if low[1] >= level - NEAR:
            back = 0
        else:
            back = next((t - int(t0) for t, r in valid
                         if t > low[0] and r >= level - NEAR), None)
    out["hit_back_after_s"] = back
    moved = [r["moved"] / r["ideal"] for cl in rings for r in cl
             if t0 <= r["t"] < end and r["moved"] is not None
             and r["ideal"]]
    out["moved_over_ideal"] = round(sum(moved) / len(moved), 3) \
        if moved else None
    conv = None
    if ev.get("members") is not None:
        seen = [next((r["t"] for r in cl if r["t"] >= t0
                      and r["names"] == ev["members"]), None)
                for cl in rings]
        if None not in seen:
            conv = round(max(max(seen) - t0, 0), 2)
    out["ring_converged_s"] = conv
    return out


def cell(v, fmt):
    return "-" if v is None else fmt % v


def main(d, path):
    seconds, rings, totals, events = load(d)
    ends = [e["t0"] for e in events[1:]] + [max(seconds) + 1]
    rows = [figures(e, end, seconds, rings) for e, end in zip(events, ends)]
    print("# %-16s %11s %9s %7s %7s %7s %6s %5s %7s" % (
        "event", "moved/ideal", "ring s", "hit pre", "lowest", "back s",
        "errors", "wrong", "dropped"))
    for r in rows:
        print("# %-16s %11s %9s %7s %7s %7s %6d %5d %7d" % (
            r["event"], cell(r["moved_over_ideal"], "%.2f"),
            cell(r["ring_converged_s"], "%.2f"),
            cell(r["hit_before"], "%.3f"), cell(r["hit_lowest"], "%.3f"),
            cell(r["hit_back_after_s"], "%d"), r["errors"], r["wrong"],
            r["writes_dropped"]))
    for r in rows:
        print("# %s: hit rate per second %s" % (r["event"], " ".join(
            cell(x, "%.2f") for x in r["hit_per_s"][:40])))
    total = {k: sum(t.get(k, 0) for t in totals)
             for k in ("get", "hit", "miss", "put", "dropped", "lease",
                       "err", "wrong")}
    print("# totals over %d clients: %s" % (len(totals), json.dumps(total)))
    with open(path, "w") as f:
        json.dump({"events": rows, "totals": total,
                   "clients": len(totals)}, f, indent=1)
    lost = [r["event"] for r in rows
            if r["members"] is not None and r["ring_converged_s"] is None]
    if lost:
        print("# never reached every client's ring: %s" % ", ".join(lost))
    return 1 if total["err"] or total["wrong"] or lost or \
        len(totals) != len(rings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
