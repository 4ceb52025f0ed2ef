# SPDX-License-Identifier: GPL-2.0
"""What the Python unit tests share: registering named tests and running
them as TAP, loading a vector file of shared/spec, and exact reads from a
socket for their in-test nodes.  Not a test itself (make unit runs
test_*.py only)."""

import json
import os
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
_results = []


def test(name):
    """Decorator: register fn as the test called name."""
    def wrap(fn):
        _results.append((name, fn))
        return fn
    return wrap


def run():
    """Run the registered tests in order, print TAP; the exit status."""
    print("TAP version 13")
    print(f"1..{len(_results)}")
    failed = 0
    for n, (name, fn) in enumerate(_results, 1):
        try:
            fn()
            print(f"ok {n} - {name}")
        except Exception:  # noqa: BLE001  (report every failure as TAP)
            failed += 1
            print(f"not ok {n} - {name}")
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
    print(f"# {len(_results) - failed}/{len(_results)} passed")
    return 1 if failed else 0


def vectors(name):
    """The vector file name: shared/spec/name beside the repository when
    it exists (and the repository's one copy, in this directory or in
    selftests/ beside it, must equal it), else that copy."""
    path = os.path.join(HERE, name)
    if not os.path.exists(path):
        path = os.path.join(HERE, "..", name)
    with open(path) as f:
        copy = json.load(f)
    shared = os.path.join(HERE, "..", "..", "..", "shared", "spec", name)
    if os.path.exists(shared):
        with open(shared) as f:
            assert copy == json.load(f), \
                f"selftests/unit/{name} drifted from shared/spec/{name}"
    return copy


def recv_exact(sock, n):
    """n bytes from sock; EOFError when the peer closes first."""
    b = b""
    while len(b) < n:
        c = sock.recv(n - len(b))
        if not c:
            raise EOFError
        b += c
    return b
