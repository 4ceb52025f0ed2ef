#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Block loads for the disk and tier selftests, straight through /dev/dfkv.

Keys and values are a pure function of (seed, index): the block key's
tenant is 0x7e57 << 48 | seed, its object id the first 16 bytes of
SHA-256("seed:index"), and the value SIZE bytes of random.Random seeded
with the same string.  So a later run (after a restart, in another
process) knows exactly which bytes each key must hold, and "wrong" means
the node returned bytes that differ from what was PUT for that key.

  put   NODE SEED FIRST COUNT SIZE   PUT keys FIRST..FIRST+COUNT-1
  check NODE SEED FIRST COUNT SIZE   GET them: counts of ok/miss/wrong/...
  rm    NODE SEED FIRST COUNT        REMOVE them
  burst NODE SEED INDEX SIZE THREADS THREADS concurrent GETs of one key
  tcpget HOST PORT SEED FIRST COUNT SIZE  GET the keys over TCP, each on
                                     its own connection, every request
                                     sent before any reply is read
  tcpput HOST PORT SEED FIRST COUNT SIZE  PUT them so
  stallget HOST PORT SEED INDEX SIZE GET one key over TCP with a 64 KiB
                                     receive buffer; after the reply's
                                     prefix print "stalled" and read
                                     nothing more until SIGUSR1
  hoard HOST PORT SEED COUNT LEN CONNS GETS  CONNS connections, each with
                                     a 64 KiB receive buffer, sending
                                     GETS GETs of keys
                                     (conn * GETS + get) % COUNT, the
                                     first whole (it fills the receive
                                     buffer: nothing after it is ever
                                     acknowledged), the others of LEN
                                     bytes (0: whole), and reading
                                     nothing; print
                                     "hoarding", hold them until SIGUSR1,
                                     close them, print "closed"
  lease NODE SEED FIRST COUNT        LEASE the keys (10 min), print
                                     "leased=N", hold them until killed
  key   SEED INDEX                   the TENANTHEX:IDHEX form (dfkvctl)
  lost  NODE SEED FIRST COUNT SIZE   GET the keys; of those that miss
                                     (lost), count how many EXIST, PROBE
                                     and LEASE report present, then PUT
                                     them again and GET them
  rec   DEV SEED INDEX               record offsets of the key on a
                                     dfkv device or image (one per line)
  payload DEV SEED INDEX SIZE        device offset of the key's payload
  onimage DEV SEED FIRST COUNT SIZE  how many of the keys have their
                                     record and payload on DEV
  stretch DEV SEED INDEX             rewrite the key's first record (a
                                     valid CRC) to claim a length of the
                                     whole data area of DEV
  tail  DEV SEED FIRST COUNT SIZE    of the keys' payloads found on DEV,
                                     how many have a non-zero byte after
                                     the value, up to its 4 KiB page end

put/check/rm/burst/tcpget/tcpput/stallget/lost print one line "ok=N miss=N wrong=N ..." (each
status by its name), tail "found=N dirty=N", and exit 0; the shell tests
assert on the counts.  With DFKV_BLK_PIDFILE set, the process writes
its pid there first.
"""
import ctypes
import fcntl
import hashlib
import os
import random
import resource
import signal
import socket
import struct
import sys
import threading

DEV = "/dev/dfkv"
STATUS = ["ok", "miss", "full", "io_error", "invalid", "quota", "busy",
          "unsupported", "too_large", "lease_expired"]
OP_FMT = "<IIIIQ16sQQQQQQII"
OP_SIZE = struct.calcsize(OP_FMT)
assert OP_SIZE == 96


def _ioc(dir_, nr, size):
    return (dir_ << 30) | (size << 16) | (0xdf << 8) | nr


IOC_BIND = _ioc(1, 1, 40)
IOC_PUT = _ioc(3, 2, OP_SIZE)
IOC_GET = _ioc(3, 3, OP_SIZE)
IOC_EXIST = _ioc(3, 4, OP_SIZE)
IOC_REMOVE = _ioc(3, 5, OP_SIZE)
KEYS_FMT = "<IIIIQQQQII"
IOC_PROBE = _ioc(3, 7, struct.calcsize(KEYS_FMT))
IOC_LEASE = _ioc(3, 8, struct.calcsize(KEYS_FMT))


def key(seed, i):
    tenant = (0x7e57 << 48) | seed
    oid = hashlib.sha256(b"%d:%d" % (seed, i)).digest()[:16]
    return tenant, oid


def value(seed, i, size):
    return random.Random("%d:%d" % (seed, i)).randbytes(size)


class Node:
    def __init__(self, name):
        self.fd = os.open(DEV, os.O_RDWR)
        b = struct.pack("<II32s", 40, 0, name.encode())
        fcntl.ioctl(self.fd, IOC_BIND, b)

    def op(self, ioc, k, buf=None, length=0, cap=0):
        addr = ctypes.addressof(buf) if buf is not None else 0
        o = bytearray(struct.pack(OP_FMT, OP_SIZE, 0, 0, 0, k[0], k[1], 0,
                                  length, addr, cap, 0, 0, 0, 0))
        fcntl.ioctl(self.fd, ioc, o, True)
        f = struct.unpack(OP_FMT, o)
        return f[3], f[10], f[11]     # status, stored_len, data_len

    def put(self, k, v):
        buf = ctypes.create_string_buffer(v, len(v))
        return self.op(IOC_PUT, k, buf, len(v))[0]

    def get(self, k, cap):
        """(status name, bytes or None)"""
        buf = ctypes.create_string_buffer(cap)
        st, stored, n = self.op(IOC_GET, k, buf, 0, cap)
        if st:
            return STATUS[st] if st < len(STATUS) else "status%d" % st, None
        return "ok", buf.raw[:n] if stored == n else b""

    def keys(self, ioc, ks, ttl_ms=0):
        """One DFKV_IOC_PROBE/_LEASE: (status, results, nr_hits)."""
        kbuf = ctypes.create_string_buffer(
            b"".join(struct.pack("<Q16s", *k) for k in ks))
        res = (ctypes.c_uint64 * len(ks))()
        o = bytearray(struct.pack(KEYS_FMT, struct.calcsize(KEYS_FMT), 0,
                                  len(ks), 0, ctypes.addressof(kbuf),
                                  ctypes.addressof(res), ttl_ms, 0, 0, 0))
        fcntl.ioctl(self.fd, ioc, o, True)
        f = struct.unpack(KEYS_FMT, o)
        return f[3], list(res), f[8]

    def close(self):
        os.close(self.fd)


def count_line(c):
    names = ["ok", "miss", "wrong"] + sorted(k for k in c if k not in
                                             ("ok", "miss", "wrong"))
    return " ".join("%s=%d" % (n, c.get(n, 0)) for n in names)


def bump(c, what):
    c[what] = c.get(what, 0) + 1


def do_put(node, seed, first, count, size):
    n, c = Node(node), {}
    for i in range(first, first + count):
        st = n.put(key(seed, i), value(seed, i, size))
        bump(c, STATUS[st] if st < len(STATUS) else "status%d" % st)
    return c


def judge(c, got, want):
    st, data = got
    if st == "too_large":       # stored longer than what was PUT
        bump(c, "wrong")
    elif st != "ok":
        bump(c, st)
    elif data == want:
        bump(c, "ok")
    else:
        bump(c, "wrong")


def do_check(node, seed, first, count, size):
    n, c = Node(node), {}
    for i in range(first, first + count):
        judge(c, n.get(key(seed, i), size + 1), value(seed, i, size))
    return c


def do_rm(node, seed, first, count):
    n, c = Node(node), {}
    for i in range(first, first + count):
        st, _, _ = n.op(IOC_REMOVE, key(seed, i))
        bump(c, STATUS[st] if st < len(STATUS) else "status%d" % st)
    return c


def do_lease(node, seed, first, count):
    """Pin the keys with one lease and hold it (and the file) open."""
    n = Node(node)
    keys = b"".join(struct.pack("<Q16s", *key(seed, i))
                    for i in range(first, first + count))
    kbuf = ctypes.create_string_buffer(keys, len(keys))
    res = (ctypes.c_uint64 * count)()
    o = bytearray(struct.pack(KEYS_FMT, struct.calcsize(KEYS_FMT), 0, count,
                              0, ctypes.addressof(kbuf),
                              ctypes.addressof(res), 600000, 0, 0, 0))
    fcntl.ioctl(n.fd, IOC_LEASE, o, True)
    f = struct.unpack(KEYS_FMT, o)
    print("leased=%d status=%d" % (f[8], f[3]), flush=True)
    while True:
        signal.pause()


def do_lost(node, seed, first, count, size):
    """Keys that miss: what EXIST, PROBE, LEASE say, then a re-PUT."""
    n, c = Node(node), {"lost": 0, "exist": 0, "probe": 0, "lease": 0}
    lost = [i for i in range(first, first + count)
            if n.get(key(seed, i), size + 1)[0] == "miss"]
    for i in lost:
        k = key(seed, i)
        bump(c, "lost")
        if n.op(IOC_EXIST, k)[0] == 0:
            bump(c, "exist")
        if n.keys(IOC_PROBE, [k])[1][0]:
            bump(c, "probe")
        if n.keys(IOC_LEASE, [k], 1000)[2]:
            bump(c, "lease")
    n.close()   # drops the leases
    n = Node(node)
    for i in lost:
        st = n.put(key(seed, i), value(seed, i, size))
        bump(c, "put_" + (STATUS[st] if st < len(STATUS) else
                          "status%d" % st))
    for i in lost:
        judge(c, n.get(key(seed, i), size + 1), value(seed, i, size))
    return c


def do_burst(node, seed, i, size, threads):
    want, k, c = value(seed, i, size), key(seed, i), {}
    nodes = [Node(node) for _ in range(threads)]
    go = threading.Barrier(threads)
    res = [None] * threads

    def run(j):
        go.wait()
        res[j] = nodes[j].get(k, size + 1)

    ts = [threading.Thread(target=run, args=(j,)) for j in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for r in res:
        judge(c, r, want)
    return c


def recv_all(s, n):
    b = b""
    while len(b) < n:
        got = s.recv(n - len(b))
        if not got:
            raise ConnectionError("the node closed the connection")
        b += got
    return b


def tcp_many(host, port, seed, first, count, frame):
    """COUNT requests in flight at once, one per connection (SPEC.md 2):
    frame(i) is key i's; yields (i, status name, stored_len, data)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for i in range(first, first + count):
        s = socket.create_connection((host, port))
        s.sendall(frame(i))
        socks.append((s, i))
    for s, i in socks:
        _, st, stored, n = struct.unpack("<BBQQ", recv_all(s, 18))
        data = recv_all(s, n)
        s.close()
        yield i, STATUS[st] if st < len(STATUS) else "status%d" % st, \
            stored, data


def tcp_prefix(op, seed, i, payload_len):
    t, oid = key(seed, i)
    return struct.pack("<BB16sQQQQ", 6, op, oid, t, 0, 0, payload_len)


def do_tcpget(host, port, seed, first, count, size):
    c = {}
    for i, st, stored, data in tcp_many(host, port, seed, first, count,
                                        lambda i: tcp_prefix(2, seed, i, 0)):
        judge(c, (st, data if stored == len(data) else b""),
              value(seed, i, size))
    return c


def do_tcpput(host, port, seed, first, count, size):
    c = {}
    for _, st, _, _ in tcp_many(host, port, seed, first, count,
                                lambda i: tcp_prefix(1, seed, i, size) +
                                value(seed, i, size)):
        bump(c, st)
    return c


def do_stallget(host, port, seed, i, size):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.connect((host, port))
    s.sendall(tcp_prefix(2, seed, i, 0))
    _, st, stored, n = struct.unpack("<BBQQ", recv_all(s, 18))
    print("stalled", flush=True)
    signal.sigwait([signal.SIGUSR1])
    data = bytearray(n)
    view, got = memoryview(data), 0
    while got < n:
        r = s.recv_into(view[got:])
        if not r:
            raise ConnectionError("the node closed the connection")
        got += r
    s.close()
    c = {}
    st = STATUS[st] if st < len(STATUS) else "status%d" % st
    judge(c, (st, bytes(data) if stored == n else b""), value(seed, i, size))
    return c


def do_hoard(host, port, seed, count, length, conns, gets):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    socks = []
    for j in range(conns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.connect((host, port))
        for g in range(gets):
            t, oid = key(seed, (j * gets + g) % count)
            s.sendall(struct.pack("<BB16sQQQQ", 6, 2, oid, t, 0,
                                  length if g else 0, 0))
        socks.append(s)
    print("hoarding", flush=True)
    signal.sigwait([signal.SIGUSR1])
    for s in socks:
        s.close()       # unread data: a reset
    print("closed", flush=True)


def crc32c(data, crc=0):
    """CRC-32C as the format uses it (ondisk.md): init and final xor ~0."""
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
    return crc ^ 0xffffffff


def superblock(f):
    f.seek(0)
    sb = f.read(512)
    if sb[:8] != b"DFKVDISK":
        sys.exit("not a dfkv device")
    ext, nr, roff, rbytes, doff = struct.unpack_from("<QQQQQ", sb, 0x20)
    return ext, nr, roff, rbytes, doff


def find_records(path, seed, i):
    """[(device offset, extent, slot, part)] of the key's records."""
    tenant, oid = key(seed, i)
    pat = struct.pack("<Q", tenant) + oid
    out = []
    with open(path, "rb") as f:
        ext, nr, roff, rbytes, doff = superblock(f)
        # in chunks of whole records: the record area may be large
        for at in range(0, rbytes, 1 << 22):
            f.seek(roff + at)
            area = f.read(min(1 << 22, rbytes - at))
            pos = area.find(pat)
            while pos >= 0:
                r = pos - 8
                if r % 64 == 0 and area[r:r + 4] == b"DFKR":
                    e, s, p = struct.unpack_from("<III", area, r + 0x30)
                    out.append((roff + at + r, e, s, p))
                pos = area.find(pat, pos + 1)
    return out


def stretch(path, seed, i):
    """Make the key's part-0 record claim nr_extents * extent bytes."""
    assert crc32c(b"123456789") == 0xe3069283
    recs = [r for r in find_records(path, seed, i) if r[3] == 0]
    if not recs:
        return 1
    fd = os.open(path, os.O_RDWR)
    sb = os.pread(fd, 512, 0)
    ext, nr = struct.unpack_from("<QQ", sb, 0x20)
    uuid = sb[0x58:0x68]
    rec = bytearray(os.pread(fd, 64, recs[0][0]))
    struct.pack_into("<Q", rec, 0x20, ext * nr)
    struct.pack_into("<I", rec, 0x3c, crc32c(uuid + rec[:0x3c]))
    os.pwrite(fd, bytes(rec), recs[0][0])
    os.fsync(fd)
    os.close(fd)
    return 0


def tails(path, seed, first, count, size):
    """Payloads found, and those with a non-zero byte past the value."""
    end = (size + 4095) // 4096 * 4096
    c = {"found": 0, "dirty": 0}
    with open(path, "rb") as f:
        for i in range(first, first + count):
            off = find_payload(path, seed, i, size)
            if off is None:
                continue
            bump(c, "found")
            f.seek(off + size)
            if f.read(end - size).strip(b"\0"):
                bump(c, "dirty")
    return c


def find_payload(path, seed, i, size):
    """Device offset of the first byte of the key's value (part 0)."""
    want = value(seed, i, size)[:4096]
    with open(path, "rb") as f:
        ext, nr, roff, rbytes, doff = superblock(f)
        for off, e, s, p in find_records(path, seed, i):
            if p:
                continue
            f.seek(doff + e * ext)
            data = f.read(ext)
            at = data.find(want)
            if at >= 0:
                return doff + e * ext + at
    return None


def main(argv):
    cmd, a = argv[1], argv[2:]
    if os.environ.get("DFKV_BLK_PIDFILE"):
        with open(os.environ["DFKV_BLK_PIDFILE"], "w") as f:
            f.write("%d\n" % os.getpid())
    if cmd == "put":
        print(count_line(do_put(a[0], *map(int, a[1:5]))))
    elif cmd == "check":
        print(count_line(do_check(a[0], *map(int, a[1:5]))))
    elif cmd == "rm":
        print(count_line(do_rm(a[0], *map(int, a[1:4]))))
    elif cmd == "lease":
        do_lease(a[0], *map(int, a[1:4]))
    elif cmd == "lost":
        print(count_line(do_lost(a[0], *map(int, a[1:5]))))
    elif cmd == "burst":
        print(count_line(do_burst(a[0], *map(int, a[1:5]))))
    elif cmd == "tcpget":
        print(count_line(do_tcpget(a[0], *map(int, a[1:6]))))
    elif cmd == "tcpput":
        print(count_line(do_tcpput(a[0], *map(int, a[1:6]))))
    elif cmd == "stallget":
        print(count_line(do_stallget(a[0], *map(int, a[1:5]))))
    elif cmd == "hoard":
        do_hoard(a[0], *map(int, a[1:7]))
    elif cmd == "key":
        t, o = key(int(a[0]), int(a[1]))
        print("%016x:%s" % (t, o.hex()))
    elif cmd == "rec":
        recs = find_records(a[0], int(a[1]), int(a[2]))
        for r in recs:
            print(r[0])
        return 0 if recs else 1
    elif cmd == "onimage":
        seed, first, count, size = map(int, a[1:5])
        n = sum(1 for i in range(first, first + count)
                if find_records(a[0], seed, i) and
                find_payload(a[0], seed, i, size) is not None)
        print(n)
    elif cmd == "stretch":
        return stretch(a[0], int(a[1]), int(a[2]))
    elif cmd == "tail":
        c = tails(a[0], *map(int, a[1:5]))
        print("found=%d dirty=%d" % (c["found"], c["dirty"]))
    elif cmd == "payload":
        off = find_payload(a[0], int(a[1]), int(a[2]), int(a[3]))
        if off is None:
            return 1
        print(off)
    else:
        sys.exit("unknown command " + cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
