#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Replay a dm-log-writes log, for dfkv_logwrites.sh.

dm-log-writes records every write that reached a device, in the order
the device made it durable (writes are logged at the flush that covers
them; a FUA write as it completes), flushes and marks included
(the kernel's Documentation/admin-guide/device-mapper/log-writes.rst).
The log device holds a superblock in its first block, then one entry
per logged I/O: a header block (struct log_write_entry, little-endian
u64 sector, nr_sectors, flags, data_len, in units of the log's sector
size; a mark's name follows in the same block) and, for a write, its
nr_sectors blocks of data.  Replaying the first N entries onto a copy of
the device as it was when logging began gives the device as a crash
after entry N could have left it.

  points LOG MAX         entry counts worth replaying to, one per line:
                         none, every superblock write (sector 0) and
                         mark, those that end in a flush or a FUA write
                         (evenly thinned to at most MAX), as many points
                         between them, and the whole log
  replay LOG IMG FROM TO apply entries FROM..TO-1 (0-based) to IMG
  sb IMG                 the dfkv superblock's state and epoch:
                         "clean E" or "dirty E"
"""
import struct
import sys

MAGIC = 0x6A736677736872
FLUSH, FUA, DISCARD, MARK = 1, 2, 4, 8
SUPER = struct.Struct("<QQQI")
ENTRY = struct.Struct("<QQQQ")


def entries(path):
    """(index, sector, nr_sectors, flags, data offset, sector size)."""
    with open(path, "rb") as f:
        magic, version, nr, ss = SUPER.unpack(f.read(SUPER.size))
        if magic != MAGIC or version != 1:
            sys.exit("logwrites: %s is not a dm-log-writes log" % path)
        pos = ss
        for i in range(nr):
            f.seek(pos)
            sector, nsec, flags, _ = ENTRY.unpack(f.read(ENTRY.size))
            yield i, sector, nsec, flags, pos + ss, ss
            pos += ss
            if not flags & (DISCARD | MARK):
                pos += nsec * ss


def thin(xs, most):
    if len(xs) <= most:
        return xs
    step = len(xs) / most
    return [xs[int(k * step)] for k in range(most)]


def points(log, most):
    must, ends, others = [0], [], []
    n = 0
    for i, sector, nsec, flags, _, _ in entries(log):
        n = i + 1
        if flags & MARK or (sector == 0 and nsec and not flags & DISCARD):
            must.append(n)
        elif flags & (FLUSH | FUA):
            ends.append(n)
        else:
            others.append(n)
    chosen = set(must) | set(thin(ends, most)) | set(thin(others, most))
    for p in sorted(chosen | {n}):
        print(p)


def replay(log, img, first, last):
    with open(log, "rb") as src, open(img, "r+b") as dst:
        for i, sector, nsec, flags, data, ss in entries(log):
            if i >= last:
                break
            if i < first or flags & MARK or not nsec:
                continue
            dst.seek(sector * ss)
            if flags & DISCARD:
                dst.write(bytes(nsec * ss))
            else:
                src.seek(data)
                dst.write(src.read(nsec * ss))


def superblock(img):
    with open(img, "rb") as f:
        b = f.read(512)
    if b[:8] != b"DFKVDISK":
        sys.exit("logwrites: %s has no dfkv superblock" % img)
    state = struct.unpack_from("<I", b, 0x14)[0]
    epoch = struct.unpack_from("<Q", b, 0x48)[0]
    print("%s %d" % ("clean" if state == 1 else "dirty", epoch))


def main():
    a = sys.argv[1:]
    if len(a) == 3 and a[0] == "points":
        points(a[1], int(a[2]))
    elif len(a) == 5 and a[0] == "replay":
        replay(a[1], a[2], int(a[3]), int(a[4]))
    elif len(a) == 2 and a[0] == "sb":
        superblock(a[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
