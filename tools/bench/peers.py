#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""TCP half of `make bench`: dfkv over TCP next to iperf3, Redis, memcached.

Run by tools/bench/run after the ioctl bench, in the same VM boot.  Steps,
all on 127.0.0.1:

  1. iperf3 single stream (server started here, stopped after the test).
  2. dfkv-tcpbench --backend dfkv: libdfkv PUT/GET against the in-kernel
     node (the bench creates the node and its listener over netlink).
  3. memcached (-I 8m, started here) measured by dfkv-tcpbench --backend
     memcached: the same harness, sizes, threads, batches and checks.
  4. redis-server (started here) measured by its own redis-benchmark
     (SET/GET, -d SIZE, -c threads, -P batch, keys pre-stored so every GET
     hits; a miss or an error reply is a failure) and by dfkv-tcpbench
     --backend redis (same harness as dfkv).

  5. The stage breakdown of dfkv's TCP PUT (issue #23), for every
     --stages-sizes size: a short dfkv-tcpbench run (one thread, batch 1,
     --stages-calls calls per phase) with the module's trace events on
     (tracefs), then per stage of a PUT received into RAM over TCP the
     mean, p50, p99 and share of the request's time (stages.py).  Apart
     from the timed runs, so that tracing weighs on none of the figures
     compared with the peers.

Then prints one table with the ratios, the stage tables, merges the JSON of the ioctl bench,
the disk part (disk.py) and the RDMA part (rdma.py) and writes everything
to the output JSON.  Any failure anywhere (including the
ioctl bench's) refuses the run: the table is printed with the failures,
REFUSED, no JSON is written (a stale one is deleted) and the exit is 1.
No timing threshold decides anything here; the targets are reported.
"""
import argparse
import csv
import io
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import time

import stages

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TCPBENCH = os.path.join(REPO, "build", "bench", "dfkv-tcpbench")

PORT_DFKV = 7450
PORT_IPERF = 5299
PORT_MC = 11290
PORT_REDIS = 6390

procs = []


def log(msg):
    print("bench/peers: " + msg, file=sys.stderr, flush=True)


def wait_port(port, proc, secs=30.0):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def wait_log(path, text, proc, secs=30.0):
    end = time.monotonic() + secs
    while time.monotonic() < end and proc.poll() is None:
        with open(path) as f:
            if text in f.read():
                return True
        time.sleep(0.1)
    return False


def start(argv, port, logpath, ready_text=None):
    """Start a server; ready when ready_text shows in its log, or (None)
    when its port accepts a connection."""
    lf = open(logpath, "w")
    p = subprocess.Popen(argv, stdout=lf, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    procs.append(p)
    if not (wait_log(logpath, ready_text, p) if ready_text
            else wait_port(port, p)):
        log("%s did not come up on port %d (log: %s)" % (argv[0], port, logpath))
        return None
    return p


def stop(p):
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def stop_all():
    for p in procs:
        stop(p)


# ------------------------------------------------------------- iperf3

def run_iperf3(secs, tmp):
    res = {"tool": "iperf3", "streams": 1, "seconds_requested": secs,
           "failures": 0, "gb_per_s": 0.0}
    if not shutil.which("iperf3"):
        log("iperf3 not installed (tools/install-deps)")
        res["failures"] = 1
        res["error"] = "iperf3 not installed"
        return res
    # Ready by its log line: a probe connection would keep the (one test
    # at a time) server busy when the client comes.
    srv = start(["iperf3", "-s", "--forceflush", "-B", "127.0.0.1", "-p",
                 str(PORT_IPERF)],
                PORT_IPERF, os.path.join(tmp, "iperf3-server.log"),
                "Server listening")
    if srv is None:
        res["failures"] = 1
        res["error"] = "server did not start"
        return res
    cp = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(PORT_IPERF),
                         "-t", str(secs), "-J"], capture_output=True, text=True)
    stop(srv)
    try:
        j = json.loads(cp.stdout)
    except ValueError:
        j = {"error": "no JSON from iperf3: " + cp.stderr.strip()[:200]}
    if cp.returncode or "error" in j:
        res["failures"] = 1
        res["error"] = j.get("error", "exit %d" % cp.returncode)
        log("iperf3 failed: %s" % res["error"])
        return res
    rcv = j["end"]["sum_received"]
    res.update(bytes=rcv["bytes"], seconds=rcv["seconds"],
               gb_per_s=rcv["bytes"] / rcv["seconds"] / 1e9,
               retransmits=j["end"]["sum_sent"].get("retransmits", 0))
    return res


# ------------------------------------------------------ dfkv-tcpbench

def run_tcpbench(backend, port, tmp, a, extra=(), tag=None):
    """dfkv-tcpbench with a's sizes, threads, batches, working set and
    duration, and the options extra; its document (tcp-TAG.json)."""
    out = os.path.join(tmp, "tcp-%s.json" % (tag or backend))
    argv = [TCPBENCH, "--backend", backend, "--port", str(port),
            "--wset", str(a.wset), "--duration", str(a.duration),
            "--sizes", a.sizes, "--threads", a.threads,
            "--batches", a.batches] + list(extra) + [out]
    if os.path.exists(out):
        os.unlink(out)
    log("dfkv-tcpbench --backend %s%s" % (backend, "".join(" " + x for x in extra)))
    cp = subprocess.run(argv)
    try:
        with open(out) as f:
            j = json.load(f)
    except (OSError, ValueError):
        j = {"backend": backend, "results": [], "error":
             "dfkv-tcpbench exited %d without JSON" % cp.returncode}
    j["exit_status"] = cp.returncode
    if cp.returncode and not j.get("error"):
        if cp.returncode != 1:
            j["error"] = "dfkv-tcpbench exited %d" % cp.returncode
    return j


def stages_run(a, kib):
    """The stage breakdown of dfkv's TCP PUT at one size: (summary of
    stages.py, or {"skipped": why} without tracefs; failures of the
    traced dfkv-tcpbench run)."""
    b = argparse.Namespace(**vars(a))
    b.sizes, b.threads, b.batches = str(kib), "1", "1"
    trace = os.path.join(a.tmp, "stages-tcp-%d.trace" % kib)
    summ, tb = stages.traced(
        trace, lambda: run_tcpbench("dfkv", PORT_DFKV, a.tmp, b,
                                    ["--max-calls", str(a.stages_calls)],
                                    "dfkv-stages-%d" % kib), log)
    return summ, fails_of(tb) if tb is not None else 0


# -------------------------------------------------------------- redis

def redis_cmd(*args):
    cp = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(PORT_REDIS)]
                        + list(args), capture_output=True, text=True)
    return cp.returncode, cp.stdout


def redis_stats():
    rc, out = redis_cmd("INFO", "stats")
    st = {}
    for line in out.splitlines():
        if ":" in line:
            k, v = line.strip().split(":", 1)
            st[k] = v
    return rc, st


def run_redis_benchmark(a, tmp):
    """redis-benchmark SET/GET for every size, client count and pipeline."""
    rows = []
    for kib in [int(x) for x in a.sizes.split(",")]:
        size = kib * 1024
        for thr in [int(x) for x in a.threads.split(",")]:
            for batch in [int(x) for x in a.batches.split(",")]:
                # The harness's key count: wset split over threads, at
                # least one batch per thread.
                per = max(batch, (a.wset * 2**20 // thr // size) // batch * batch)
                keys = per * thr
                n = max(2 * thr * batch, (a.redis_bytes * 2**20) // size)
                n = int(math.ceil(n / float(thr * batch))) * thr * batch
                row = {"value_bytes": size, "threads": thr, "batch": batch,
                       "keys": keys, "requests": n, "failures": 0}
                fails = 0
                redis_cmd("FLUSHALL")
                fill = subprocess.run([TCPBENCH, "--backend", "redis", "--port",
                                       str(PORT_REDIS), "--fill",
                                       "%d,%d" % (size, keys)])
                if fill.returncode:
                    fails += keys
                rc0, st0 = redis_stats()
                argv = ["redis-benchmark", "-h", "127.0.0.1", "-p",
                        str(PORT_REDIS), "-t", "set,get", "-d", str(size),
                        "-c", str(thr), "-P", str(batch), "-n", str(n),
                        "-r", str(keys), "--csv"]
                if thr > 1:
                    argv += ["--threads", str(thr)]
                log("redis-benchmark %d KiB -c %d -P %d -n %d -r %d"
                    % (kib, thr, batch, n, keys))
                t0 = time.monotonic()
                cp = subprocess.run(argv, capture_output=True, text=True)
                row["wall_seconds"] = time.monotonic() - t0
                rc1, st1 = redis_stats()
                if cp.returncode or rc0 or rc1:
                    fails += 1
                    row["error"] = ("redis-benchmark exit %d: %s"
                                    % (cp.returncode, cp.stderr.strip()[:200]))
                errs = [l for l in (cp.stdout + cp.stderr).splitlines()
                        if "rror" in l and not l.startswith('"')]
                fails += len(errs)
                if errs:
                    row["error"] = errs[0][:200]

                def delta(k):
                    try:
                        return int(st1.get(k, 0)) - int(st0.get(k, 0))
                    except ValueError:
                        return 1
                misses = delta("keyspace_misses")
                err_replies = delta("total_error_replies")
                row["get_misses"] = misses
                row["error_replies"] = err_replies
                ops = {}
                for rec in csv.DictReader(io.StringIO(cp.stdout)):
                    t = rec.get("test", "").upper()
                    if t in ("SET", "GET"):
                        rps = float(rec["rps"])
                        ops[t.lower()] = {
                            "ops_per_s": rps, "gb_per_s": rps * size / 1e9,
                            "p50_us": float(rec["p50_latency_ms"]) * 1e3,
                            "p99_us": float(rec["p99_latency_ms"]) * 1e3,
                            "avg_us": float(rec["avg_latency_ms"]) * 1e3,
                            "failures": 0}
                for op in ("set", "get"):
                    if op not in ops:
                        ops[op] = {"ops_per_s": 0, "gb_per_s": 0, "p50_us": 0,
                                   "p99_us": 0, "failures": 1}
                        row.setdefault("error", "no %s line in the CSV" % op)
                ops["set"]["failures"] += fails + err_replies
                ops["get"]["failures"] += misses
                row["put"] = ops["set"]
                row["get"] = ops["get"]
                row["failures"] = ops["set"]["failures"] + ops["get"]["failures"]
                if row["failures"]:
                    log("redis-benchmark %d KiB c%d P%d: %d failure(s) %s"
                        % (kib, thr, batch, row["failures"],
                           row.get("error", "(%d GET misses)" % misses)))
                rows.append(row)
    redis_cmd("FLUSHALL")
    return rows


# ------------------------------------------------------------- report

def key(r):
    return (r["value_bytes"], r["threads"], r["batch"])


def size_str(s):
    return "%d MiB" % (s >> 20) if s >= 2**20 else "%d KiB" % (s >> 10)


def copies_per_byte(get):
    """Send-side copies per value byte of a dfkv GET phase, from the node's
    zero-copy counters around it: a reply not lent to the socket (sent by
    copy: over a lend bound, or no lend) and a lent reply the stack copied
    anyway (zerocopy_success false, as loopback delivery does) each count
    as one copy of its bytes; a row's replies all have one size.  0 when
    every reply went zero-copy; None without counters."""
    t, ops = get.get("tier"), get.get("ops", 0)
    if not t or not ops:
        return None
    return (ops - t["tcp_zc_replies"] + t["tcp_zc_copied"]) / ops


def fails_of(tb):
    n = sum(r["put"]["failures"] + r["get"]["failures"] for r in tb["results"])
    if tb.get("error") or (tb.get("exit_status") and not n):
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--accel", default="unknown")
    ap.add_argument("--ioctl-json")
    ap.add_argument("--ioctl-status", type=int, default=0)
    ap.add_argument("--disk-json", help="the disk part's document (disk.py)")
    ap.add_argument("--disk-status", type=int, default=0)
    ap.add_argument("--rdma-json", help="the RDMA part's document (rdma.py)")
    ap.add_argument("--rdma-status", type=int, default=0)
    ap.add_argument("--wset", type=int, default=32, help="MiB")
    ap.add_argument("--duration", type=float, default=0.5)
    ap.add_argument("--sizes", default="64,1024,4096")
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--iperf-seconds", type=int, default=3)
    ap.add_argument("--redis-bytes", type=int, default=64,
                    help="MiB moved per redis-benchmark test (at least)")
    ap.add_argument("--stages-sizes", default="64,1024,4096",
                    help="KiB, the traced TCP PUT breakdown runs (empty: none)")
    ap.add_argument("--stages-calls", type=int, default=32,
                    help="calls per phase of each traced run")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    t_start = time.monotonic()

    try:
        log("iperf3 single stream, %d s" % a.iperf_seconds)
        iperf = run_iperf3(a.iperf_seconds, a.tmp)
        dfkv = run_tcpbench("dfkv", PORT_DFKV, a.tmp, a)
        breakdown, fails_st = {}, 0
        for kib in [int(x) for x in a.stages_sizes.split(",") if x]:
            doc, n = stages_run(a, kib)
            breakdown[str(kib * 1024)] = doc
            fails_st += n

        mc = {"backend": "memcached", "results": [], "error": "not run"}
        if shutil.which("memcached"):
            p = start(["memcached", "-u", "root", "-l", "127.0.0.1", "-p",
                       str(PORT_MC), "-U", "0", "-I", "8m", "-m", "1024"],
                      PORT_MC, os.path.join(a.tmp, "memcached.log"))
            if p is not None:
                mc = run_tcpbench("memcached", PORT_MC, a.tmp, a)
                mc["server"] = "memcached -I 8m -m 1024 (default 4 threads)"
            stop(p)
        else:
            log("memcached not installed (tools/install-deps)")

        redis_h = {"backend": "redis", "results": [], "error": "not run"}
        rbench = []
        if shutil.which("redis-server") and shutil.which("redis-benchmark"):
            p = start(["redis-server", "--port", str(PORT_REDIS), "--bind",
                       "127.0.0.1", "--save", "", "--appendonly", "no",
                       "--daemonize", "no", "--protected-mode", "no",
                       "--dir", a.tmp], PORT_REDIS,
                      os.path.join(a.tmp, "redis.log"))
            if p is not None:
                rbench = run_redis_benchmark(a, a.tmp)
                redis_h = run_tcpbench("redis", PORT_REDIS, a.tmp, a)
                redis_h["server"] = "redis-server 7 defaults, no persistence"
            stop(p)
        else:
            log("redis-server/redis-benchmark not installed (tools/install-deps)")
    finally:
        stop_all()

    # ---------------------------------------------------------- table
    ioctl = None
    if a.ioctl_json and os.path.exists(a.ioctl_json):
        with open(a.ioctl_json) as f:
            ioctl = json.load(f)
    mc_by = {key(r): r for r in mc["results"]}
    rh_by = {key(r): r for r in redis_h["results"]}
    rb_by = {key(r): r for r in rbench}
    ig = iperf.get("gb_per_s", 0)

    def ratio(x, y):
        return x / y if y else None

    def pct(v):
        return "    -" if v is None else "%4.0f%%" % (100 * v)

    def cell(r, op):
        if r is None:
            return "%7s %8s %8s %4s" % ("-", "-", "-", "-")
        x = r[op]
        return "%7.3f %8.0f %8.0f %4d" % (x["gb_per_s"], x["p50_us"],
                                          x["p99_us"], x["failures"])

    print("\nTCP over loopback, %s; iperf3 single stream %.3f GB/s (%d fail); "
          "GB/s = 1e9 value bytes/s; p50/p99 in us per call (a call is one "
          "batch)" % ("accel " + a.accel, ig, iperf["failures"]))
    print("dfkv = libdfkv -> in-kernel node; mc = memcached, rh = redis, both "
          "through dfkv-tcpbench's own client (same harness); rb = "
          "redis-benchmark\n")
    print("cp/B = dfkv's send-side copies per GET byte, from the node's "
          "zero-copy counters (0: every reply went zero-copy)\n")
    hdr = "%-7s %3s %3s %-3s | %-43s | %-29s | %-29s | %-29s | %5s %5s %5s %5s" % (
        "", "", "", "", "dfkv (libdfkv, TCP)", "memcached (harness)",
        "redis (harness)", "redis-benchmark", "dfkv/", "dfkv/", "dfkv/", "dfkv/")
    print(hdr)
    print("%-7s %3s %3s %-3s | %7s %8s %8s %8s %4s %4s | %7s %8s %8s %4s | %7s "
          "%8s %8s %4s | %7s %8s %8s %4s | %5s %5s %5s %5s" % (
              "size", "thr", "bat", "op", "GB/s", "ops/s", "p50", "p99",
              "fail", "cp/B", "GB/s", "p50", "p99", "fail", "GB/s", "p50",
              "p99", "fail", "GB/s", "p50", "p99", "fail", "iperf", "mc", "rh",
              "rb"))
    print("-" * len(hdr))
    ratios = []
    dk_by = {key(r): r for r in dfkv["results"]}
    for k in sorted(set(dk_by) | set(mc_by) | set(rh_by) | set(rb_by)):
        for op, name in (("put", "PUT"), ("get", "GET")):
            r, m, rh, rb = dk_by.get(k), mc_by.get(k), rh_by.get(k), rb_by.get(k)
            dg = r[op]["gb_per_s"] if r else 0
            rr = {"value_bytes": k[0], "threads": k[1], "batch": k[2], "op": op,
                  "dfkv_vs_iperf3": ratio(dg, ig) if r else None,
                  "dfkv_vs_memcached": ratio(dg, m[op]["gb_per_s"]) if r and m else None,
                  "dfkv_vs_redis_harness": ratio(dg, rh[op]["gb_per_s"]) if r and rh else None,
                  "dfkv_vs_redis_benchmark": ratio(dg, rb[op]["gb_per_s"]) if r and rb else None,
                  "dfkv_copies_per_byte": copies_per_byte(r[op]) if r and op == "get" else None}
            ratios.append(rr)
            if r:
                d, cp = r[op], rr["dfkv_copies_per_byte"]
                dcell = "%7.3f %8.0f %8.0f %8.0f %4d %4s" % (
                    d["gb_per_s"], d["ops_per_s"], d["p50_us"], d["p99_us"],
                    d["failures"], "-" if cp is None else "%.2f" % cp)
            else:
                dcell = "%7s %8s %8s %8s %4s %4s" % ("-", "-", "-", "-", "-", "-")
            print("%-7s %3d %3d %-3s | %s | %s | %s | %s | %s %s %s %s" % (
                size_str(k[0]), k[1], k[2], name, dcell,
                cell(m, op), cell(rh, op), cell(rb, op),
                pct(rr["dfkv_vs_iperf3"]), pct(rr["dfkv_vs_memcached"]),
                pct(rr["dfkv_vs_redis_harness"]),
                pct(rr["dfkv_vs_redis_benchmark"])))

    if breakdown:
        print("\nStage breakdown of dfkv's TCP PUT (issue #23), accel %s: one "
              "thread, batch 1, at most %d calls per phase, from the module's "
              "trace events; share = of the request's mean time; 'inside' "
              "parts overlap the stage they are in" % (a.accel, a.stages_calls))
    for size, doc in breakdown.items():
        title = "dfkv TCP, %s" % size_str(int(size))
        if "skipped" in doc:
            print("%s: skipped (%s)" % (title, doc["skipped"]))
        else:
            stages.print_table(title, doc)

    # ------------------------------------------------------- targets
    t1 = {}
    for r in ratios:
        if r["value_bytes"] == 2**20 and r["threads"] == 1 and r["op"] == "get":
            t1["batch_%d" % r["batch"]] = r["dfkv_vs_iperf3"]
    best = max([v for v in t1.values() if v is not None], default=0)
    target1 = {"what": "1 MiB GET (1 thread = 1 connection) >= 80% of iperf3 "
               "single stream", "ratios": t1, "best": best, "met": best >= 0.8}
    per_size = {}
    for r in ratios:
        s = per_size.setdefault(size_str(r["value_bytes"]),
                                {"rows": 0, "ahead_of_memcached": 0,
                                 "ahead_of_redis_harness": 0,
                                 "ahead_of_redis_benchmark": 0})
        s["rows"] += 1
        for peer in ("memcached", "redis_harness", "redis_benchmark"):
            v = r["dfkv_vs_" + peer]
            if v is not None and v > 1:
                s["ahead_of_" + peer] += 1
    met2 = all(s["rows"] == s["ahead_of_memcached"] == s["ahead_of_redis_harness"]
               == s["ahead_of_redis_benchmark"] for s in per_size.values())
    target2 = {"what": "dfkv ahead of Redis and memcached on every size "
               "(every row: size x threads x batch x op)",
               "per_size": per_size, "met": bool(per_size) and met2}

    disk = rdma = None
    if a.disk_json and os.path.exists(a.disk_json):
        with open(a.disk_json) as f:
            disk = json.load(f)
    if a.rdma_json and os.path.exists(a.rdma_json):
        with open(a.rdma_json) as f:
            rdma = json.load(f)
    failures = {
        "ioctl": a.ioctl_status,
        "disk": a.disk_status,
        "rdma": a.rdma_status,
        "iperf3": iperf["failures"],
        "dfkv_tcp": fails_of(dfkv),
        "dfkv_tcp_stages": fails_st,
        "memcached": fails_of(mc),
        "redis_harness": fails_of(redis_h),
        "redis_benchmark": sum(r["failures"] for r in rbench) + (0 if rbench else 1),
    }
    total = sum(failures.values())
    print()
    print("target: %s: %s -> %s" % (
        target1["what"], ", ".join("%s %s" % (k, pct(v).strip())
                                   for k, v in sorted(t1.items())),
        "MET" if target1["met"] else "NOT MET"))
    for s, v in per_size.items():
        print("target: ahead on %-7s rows ahead / %d: memcached %d, redis "
              "(harness) %d, redis-benchmark %d" % (
                  s + ":", v["rows"], v["ahead_of_memcached"],
                  v["ahead_of_redis_harness"], v["ahead_of_redis_benchmark"]))
    print("target: ahead of Redis and memcached on every size -> %s"
          % ("MET" if target2["met"] else "NOT MET"))
    print("failures: " + ", ".join("%s %d" % kv for kv in failures.items()))
    log("TCP part took %.0f s" % (time.monotonic() - t_start))

    if total:
        print("\nREFUSED: %d failure(s) (see the fail columns and the messages "
              "above); these figures are not a result and %s was not written."
              % (total, a.out))
        if os.path.exists(a.out):
            os.unlink(a.out)
        return 1

    doc = {
        "bench": "make bench",
        "date": ioctl["date"] if ioctl else time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                          time.gmtime()),
        "machine": ioctl["machine"] if ioctl else {
            "kernel": platform.release(), "cpus": os.cpu_count(),
            "accel": a.accel},
        "ioctl": ioctl,
        "disk": disk,
        "rdma": rdma,
        "tcp": {
            "params": {"working_set_mib": a.wset, "duration_s": a.duration,
                       "sizes_kib": a.sizes, "threads": a.threads,
                       "batches": a.batches, "redis_benchmark_min_mib": a.redis_bytes},
            "iperf3": iperf,
            "dfkv": dfkv,
            "memcached": mc,
            "redis": redis_h,
            "redis_benchmark": rbench,
            "ratios": ratios,
            "stages": breakdown,
        },
        "failures": failures,
        "targets": {"ioctl": ioctl.get("target") if ioctl else None,
                    "get_1mib_vs_iperf3": target1,
                    "ahead_of_redis_and_memcached": target2,
                    "disk": disk.get("targets") if disk else None},
    }
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.rename(tmp, a.out)
    print("JSON: %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
