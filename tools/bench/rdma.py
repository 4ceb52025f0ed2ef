#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""RDMA part of `make bench`: dfkv over Soft-RoCE next to perftest and TCP.

Run by tools/bench/run in the test VM, after the disk part and before the
TCP part.  Steps:

  1. A veth pair (dfkvb0, dfkvb1) in this namespace, --addr on dfkvb0 and
     an rdma_rxe device (rxe_bench) on it.  Every connection below goes
     to that one address, client and server on the same rxe device: the
     6.1 kernel's rxe carries no RDMA between network namespaces (see
     selftests/dfkv_rdma.sh), but loops back to its own address.  When
     this cannot be set up, or outside the test VM, the part says why and
     is skipped: no figures, and the rest of `make bench` goes on.
  2. For every value size, one right after the other so that all of them
     see the same load of the host:
     a. ib_read_bw, then ib_write_bw (perftest: rdma_cm, one RC QP,
        server and client on rxe_bench): what the device moves;
     b. dfkv-tcpbench --transport rdma: libdfkv's RDMA transport with
        registered buffers against an in-kernel node with an RDMA
        listener on --addr: a PUT is the node RDMA-READing the value (next
        to ib_read_bw), a GET the node RDMA-WRITING it (ib_write_bw);
        once per --expose mode (libdfkv's rdma_expose: request, the
        default, a key per request covering its range only: a
        registration of the range on rxe, request-mw a memory window, pool
        the registered buffer's own key, the opt-in);
     c. dfkv-tcpbench --transport tcp: the same, over TCP to --addr.
  3. The rxe device and the veth pair are removed (also on errors).

Then prints the table and writes the JSON (--out), which peers.py merges
into the bench's document.  Exit status 1 if any operation failed (the
figures are then not a result), 0 otherwise, skipped included.  rxe under
software emulation moves a few MB/s, so every phase is short (--wset,
--duration, --ib-mib).  No timing threshold decides anything here.
"""
import argparse
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# pylint: disable=wrong-import-position
from disk import (ints, part_done, part_parser, part_skip,  # noqa: E402
                  pct, ratio)  # (the other parts' helpers)
import peers  # noqa: E402

NETDEV, PEER, RXE = "dfkvb0", "dfkvb1", "rxe_bench"
PORT_DFKV = 7452
PORT_PERFTEST = 18600
# perftest's BW columns are MiB/s (its --help: "MiB=2^20 byte").
PERFTEST_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def log(msg):
    print("bench/rdma: " + msg, file=sys.stderr, flush=True)


def sh(*argv):
    """Run a setup command: None, or why it failed."""
    try:
        cp = subprocess.run(argv, capture_output=True, text=True)
    except OSError as e:
        return "%s: %s" % (argv[0], e)
    if cp.returncode:
        return "'%s' failed: %s" % (" ".join(argv), (cp.stderr or cp.stdout)
                                     .strip()[:200])
    return None


def rxe_up(addr):
    """veth pair, address, rxe device, port active: None, or why not."""
    if not shutil.which("rdma"):
        return "no rdma tool (iproute2)"
    for argv in (["modprobe", "-a", "rdma_rxe", "rdma_ucm", "ib_uverbs",
                  "veth"],
                 ["ip", "link", "add", NETDEV, "type", "veth", "peer", "name",
                  PEER],
                 ["ip", "addr", "add", addr + "/30", "dev", NETDEV],
                 ["ip", "link", "set", NETDEV, "up"],
                 ["ip", "link", "set", PEER, "up"],
                 ["rdma", "link", "add", RXE, "type", "rxe", "netdev",
                  NETDEV]):
        why = sh(*argv)
        if why:
            return why
    end = time.monotonic() + 15
    while time.monotonic() < end:
        cp = subprocess.run(["rdma", "link", "show", RXE + "/1"],
                            capture_output=True, text=True)
        if "state ACTIVE" in cp.stdout:
            return None
        time.sleep(0.2)
    return "%s/1 did not become ACTIVE in 15 s" % RXE


def rxe_down():
    sh("rdma", "link", "del", RXE)
    sh("ip", "link", "del", NETDEV)


def perftest_once(tool, size, iters, port, a, tag):
    """One perftest run, server and client on rxe_bench: (MiB/s peak,
    MiB/s average, client wall seconds), or a string: why not."""
    common = [tool, "-d", RXE, "-R", "-F", "-s", str(size), "-n", str(iters),
              "-p", str(port)]
    logs = os.path.join(a.tmp, "%s-%d-%s" % (tool, size, tag))
    # Line-buffered, so that its "Waiting for client" line shows at once.
    srv = peers.start(["stdbuf", "-oL"] + common, port, logs + "-server.log",
                      "Waiting for client")
    if srv is None:
        return "server did not start"
    t0 = time.monotonic()
    try:
        with open(logs + "-client.log", "w+") as f:
            rc = subprocess.run(common + [a.addr], stdout=f,
                                stderr=subprocess.STDOUT,
                                timeout=a.ib_timeout).returncode
            f.seek(0)
            out = f.read()
    except subprocess.TimeoutExpired:
        rc, out = "timeout", ""
    wall = time.monotonic() - t0
    try:
        srv.wait(10)    # it ends by itself after its report
    except subprocess.TimeoutExpired:
        pass
    peers.stop(srv)
    rows = [m for m in map(PERFTEST_ROW.match, out.splitlines()) if m]
    if rc or not rows or int(rows[-1].group(1)) != size:
        return "exit %s, %d result line(s)" % (rc, len(rows))
    peak, avg = float(rows[-1].group(3)), float(rows[-1].group(4))
    # perftest times with the TSC at a rate it calibrates against
    # gettimeofday; under emulation on a busy host that can fail (it then
    # reports 0.00) or go wrong.  The bytes over the client's whole run
    # (connection setup included) are a floor no true figure is below.
    if avg * 2**20 * wall < size * iters:
        return ("its clock: %.2f MiB/s reported, but the %d bytes took "
                "%.1f s in all" % (avg, size * iters, wall))
    return peak, avg, wall


def run_perftest(tool, size, iters, ports, a):
    """perftest's figure, from the first of --ib-tries runs that has one."""
    res = {"tool": tool, "value_bytes": size, "iterations": iters,
           "gb_per_s": 0.0, "failures": 0, "tries": []}
    log("%s %s x %d" % (tool, peers.size_str(size), iters))
    for i in range(a.ib_tries):
        # A fresh rdma_cm port for every server.
        got = perftest_once(tool, size, iters, next(ports), a, "try%d" % i)
        if not isinstance(got, str):
            peak, avg, wall = got
            res.update(bw_peak_mib_s=peak, bw_avg_mib_s=avg,
                       wall_seconds=wall, gb_per_s=avg * 2**20 / 1e9)
            return res
        res["tries"].append(got)
        log("%s %d, try %d: %s" % (tool, size, i + 1, got))
    res.update(failures=1, error="no figure in %d tries: %s"
               % (a.ib_tries, "; ".join(res["tries"])))
    return res


def merge(docs):
    """One dfkv-tcpbench document of the per-size runs."""
    if not docs:
        return {"results": [], "error": "not run"}
    doc = dict(docs[0], results=[r for d in docs for r in d["results"]])
    doc["exit_status"] = max(d["exit_status"] for d in docs)
    errors = [d["error"] for d in docs if d.get("error")]
    if errors:
        doc["error"] = "; ".join(errors)
    return doc


def table(a, perf, rdma, tcp):
    """Print the table; its rows.  rdma: a document per exposure mode."""
    print("\nRDMA over Soft-RoCE (rdma_rxe %s on veth %s, %s), accel %s; one "
          "client thread, batch 1; GB/s = 1e9 value bytes/s; p50/p99 in us"
          % (RXE, NETDEV, a.addr, a.accel))
    print("dfkv PUT: the node RDMA-READs the value from the client's "
          "registered buffer (next to ib_read_bw); dfkv GET: it RDMA-WRITEs "
          "it (next to ib_write_bw)")
    print("perftest: one RC QP, up to 128 messages in flight; dfkv: one "
          "request at a time; dfkv TCP: the same bench over TCP to %s"
          % a.addr)
    print("exposure (rdma_expose): request (libdfkv's default) = a key per "
          "request covering its range only, dead when it completes (on rxe "
          "a registration of the range); request-mw = a memory window per "
          "request; pool (opt-in) = the registered buffer's own key in "
          "every request (lib/README.md)\n")
    hdr = "%-7s %-3s %-10s | %-39s | %-24s | %-23s | %5s %5s %5s" % (
        "", "", "", "dfkv over RDMA (libdfkv)", "perftest, same device",
        "dfkv over TCP", "RDMA/", "RDMA/", "RDMA/")
    print(hdr)
    print("%-7s %-3s %-10s | %8s %8s %8s %8s %4s | %-11s %7s %4s | %8s %8s "
          "%4s | %5s %5s %5s" % ("size", "op", "expose", "GB/s", "ops/s",
                                 "p50", "p99", "fail", "tool", "GB/s", "fail",
                                 "GB/s", "p50", "fail", "perf", "TCP",
                                 "pool"))
    print("-" * len(hdr))
    r_by = {(mode, r["value_bytes"]): r for mode, doc in rdma.items()
            for r in doc["results"]}
    t_by = {r["value_bytes"]: r for r in tcp["results"]}
    rows = []
    for size, (op, tool), mode in itertools.product(
            sorted(set(p["value_bytes"] for p in perf)),
            (("put", "ib_read_bw"), ("get", "ib_write_bw")), rdma):
        p = next((x for x in perf if x["tool"] == tool and
                  x["value_bytes"] == size), None)
        r, t = r_by.get((mode, size)), t_by.get(size)
        pg = p["gb_per_s"] if p and not p["failures"] else None
        rg = r[op]["gb_per_s"] if r else 0
        row = {"value_bytes": size, "op": op, "rdma_expose": mode,
               "dfkv_rdma_gb_per_s": rg, "perftest_tool": tool,
               "perftest_gb_per_s": pg,
               "dfkv_tcp_gb_per_s": t[op]["gb_per_s"] if t else 0}
        row["rdma_vs_perftest"] = ratio(rg, pg or 0)
        row["rdma_vs_tcp"] = ratio(rg, row["dfkv_tcp_gb_per_s"])
        pr = r_by.get(("pool", size))
        row["rdma_vs_pool"] = ratio(rg, pr[op]["gb_per_s"] if pr else 0)
        rows.append(row)
        dcell = ("%8.4f %8.1f %8.0f %8.0f %4d" % (
            rg, r[op]["ops_per_s"], r[op]["p50_us"], r[op]["p99_us"],
            r[op]["failures"]) if r else "%8s %8s %8s %8s %4s" % (
                "-", "-", "-", "-", "-"))
        pcell = "%-11s %7s %4d" % (tool, "-" if pg is None else
                                   "%.4f" % pg, p["failures"] if p else 1)
        tcell = ("%8.4f %8.0f %4d" % (t[op]["gb_per_s"], t[op]["p50_us"],
                                      t[op]["failures"]) if t else
                 "%8s %8s %4s" % ("-", "-", "-"))
        print("%-7s %-3s %-10s | %s | %s | %s | %s %s %s" % (
            peers.size_str(size), op.upper(), mode, dcell, pcell, tcell,
            pct(row["rdma_vs_perftest"]), pct(row["rdma_vs_tcp"]),
            pct(row["rdma_vs_pool"])))
    return rows


def main():
    ap = part_parser(__doc__)
    ap.add_argument("--sizes", default="64,1024,4096", help="KiB")
    ap.add_argument("--wset", type=int, default=8,
                    help="MiB of keys per dfkv run (at least one key)")
    ap.add_argument("--duration", type=float, default=1.0,
                    help="s of timed work per dfkv phase (at least a round)")
    ap.add_argument("--ram", type=int, default=64, help="MiB, dfkv node")
    ap.add_argument("--ib-mib", type=int, default=8,
                    help="MiB per perftest run (at least 5 messages)")
    ap.add_argument("--ib-timeout", type=int, default=300,
                    help="s, a perftest client that takes longer fails")
    ap.add_argument("--ib-tries", type=int, default=3,
                    help="perftest runs per figure at most (its clock "
                    "calibration can fail under emulation)")
    ap.add_argument("--expose", default="pool,request,request-mw",
                    help="libdfkv rdma_expose modes, each a dfkv run per "
                    "size: pool, request, request-mr, request-mw")
    ap.add_argument("--addr", default="192.0.2.97",
                    help="IPv4 address of the veth end with the rxe device")
    ap.add_argument("--force", action="store_true",
                    help="set up the veth pair and rxe outside the test VM")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    t_start = time.monotonic()

    if not a.force and socket.gethostname() != "dfkv-vm":
        why = ("not in the test VM (hostname dfkv-vm): it would add a veth "
               "pair and an rxe device to this host (--force)")
    else:
        why = rxe_up(a.addr)
        if why:
            rxe_down()
    if why:
        return part_skip(a, "RDMA", why)

    modes = a.expose.split(",")
    perf, tcp = [], []
    rdma = {mode: [] for mode in modes}
    ports = itertools.count(PORT_PERFTEST)
    try:
        have_perftest = all(shutil.which(t) for t in ("ib_read_bw",
                                                      "ib_write_bw"))
        if not have_perftest:
            log("perftest not installed (tools/install-deps)")
        for kib in ints(a.sizes):
            size = kib * 1024
            iters = max(5, a.ib_mib * 2**20 // size)
            for tool in ("ib_read_bw", "ib_write_bw"):
                if have_perftest:
                    perf.append(run_perftest(tool, size, iters, ports, a))
                else:
                    perf.append({"tool": tool, "value_bytes": size,
                                 "gb_per_s": 0.0, "failures": 1,
                                 "error": "perftest not installed"})
            run = argparse.Namespace(wset=a.wset, duration=a.duration,
                                     sizes=str(kib), threads="1", batches="1")
            node = ["--addr", a.addr, "--ram", str(a.ram)]
            for mode in modes:
                rdma[mode].append(peers.run_tcpbench(
                    "dfkv", PORT_DFKV, a.tmp, run,
                    ["--transport", "rdma", "--rdma-expose", mode] + node,
                    tag="rdma-%s-%d" % (mode, kib)))
            tcp.append(peers.run_tcpbench(
                "dfkv", PORT_DFKV, a.tmp, run, ["--transport", "tcp"] + node,
                tag="tcp-%d" % kib))
    finally:
        peers.stop_all()
        rxe_down()
    rdma = {mode: merge(docs) for mode, docs in rdma.items()}
    tcp = merge(tcp)

    rows = table(a, perf, rdma, tcp)
    failures = {"perftest": sum(p["failures"] for p in perf),
                "dfkv_rdma": sum(map(peers.fails_of, rdma.values())),
                "dfkv_tcp": peers.fails_of(tcp)}
    total = sum(failures.values())
    print("rdma failures: " + ", ".join("%s %d" % kv for kv in failures.items()))
    secs = time.monotonic() - t_start
    log("RDMA part took %.0f s" % secs)
    doc = {"device": RXE, "netdev": NETDEV, "addr": a.addr, "accel": a.accel,
           "seconds": secs,
           "params": {k: v for k, v in vars(a).items()
                      if k not in ("out", "tmp", "force")},
           "perftest": perf, "dfkv_rdma": rdma.get("request"),
           "dfkv_rdma_expose": rdma, "dfkv_tcp": tcp,
           "rows": rows,
           "failures": failures}
    return part_done(a, "RDMA", doc, total)


if __name__ == "__main__":
    sys.exit(main())
