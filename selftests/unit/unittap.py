# SPDX-License-Identifier: GPL-2.0
"""What the Python unit tests share: the one TAP runner (tests
registered with @test and run by run(), or run one by one as they come
with a Tap, the plan printed last), loading a vector file of
shared/spec, and exact reads from a socket for their in-test nodes.  Not
a test itself (make unit runs test_*.py only)."""

import json
import os
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
_results = []


def test(name):
    """Decorator: register fn as the test called name (@test("name")),
    or called as the function is (@test)."""
    if callable(name):
        _results.append((name.__name__, name))
        return name

    def wrap(fn):
        _results.append((name, fn))
        return fn
    return wrap


class Tap:
    """Test cases run as they come, each one's TAP line printed at once:
    for tests whose cases run in order on what the ones before left (the
    mdsd tests).  done() prints the plan, last, and gives the exit
    status."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, name, fn):
        """Run fn as the next case, called name; an exception fails it."""
        self.n += 1
        try:
            fn()
            print(f"ok {self.n} - {name}", flush=True)
        except Exception:  # noqa: BLE001  (report every failure as TAP)
            self.failed += 1
            print(f"not ok {self.n} - {name}", flush=True)
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")

    def done(self):
        print(f"1..{self.n}")
        if self.failed:
            print(f"# {self.failed} of {self.n} failed")
        return 1 if self.failed else 0


def run(*comments):
    """Run the registered tests in order, print TAP (the plan first, then
    comments as "# " lines); the exit status."""
    print("TAP version 13")
    print(f"1..{len(_results)}")
    for c in comments:
        print(f"# {c}")
    tap = Tap()
    for name, fn in _results:
        tap.check(name, fn)
    print(f"# {tap.n - tap.failed}/{tap.n} passed")
    return 1 if tap.failed else 0


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
