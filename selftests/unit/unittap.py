# SPDX-License-Identifier: GPL-2.0
"""What the Python unit tests share: the one TAP runner (tests
registered with @test, or with @test_f on a fixture's variants, and run
by run()), loading a vector file of shared/spec, and exact reads from a
socket for their in-test nodes.  Not a test itself (make unit runs
test_*.py only).

Fixtures work as tools/testing/selftests/kselftest_harness.h's do: a
Fixture subclass lists its variants (name -> parameters); a case
registered with @test_f(Fixture) runs once per variant (or once per
variant it names), each time on a fresh fixture: setup() before it,
teardown() after it whatever happened, so every case runs alone.  Case
names are FIXTURE.VARIANT.CASE.  The command line picks cases as the
harness does: -l lists them, -r FIXTURE.VARIANT.CASE runs one, -f, -v
and -t run those of a fixture, a variant or a case name (each may be
given again); a fixture's setup() raising Skip skips the case."""

import argparse
import json
import os
import sys
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


class Skip(Exception):
    """Raised by a fixture's setup() (or a case): the case is skipped,
    the message says why."""


class Fixture:
    """What a group of cases runs on.  Subclasses set name and variants
    (variant name -> dict of parameters, self.variant in the case) and
    override setup() and teardown(); teardown() runs after a failed
    setup() too."""

    name = "fixture"
    variants = {"default": {}}
    failed = False		# set when the case failed, for teardown()

    def __init__(self, variant_name):
        self.variant_name = variant_name
        self.variant = self.variants[variant_name]

    def setup(self):
        pass

    def teardown(self):
        pass


def test_f(fixture, variants=None):
    """Decorator: register fn(f) as a case of fixture (a Fixture
    subclass), run once for each of its variants, or for those named in
    variants; the case is called as fn is."""
    def wrap(fn):
        for v in variants or fixture.variants:
            def case(fixture=fixture, v=v, fn=fn):
                f = fixture(v)
                try:
                    f.setup()
                    fn(f)
                except Skip:
                    raise
                except BaseException:
                    f.failed = True
                    raise
                finally:
                    f.teardown()
            _results.append(("%s.%s.%s" % (fixture.name, v, fn.__name__),
                             case))
        return fn
    return wrap


def _check(n, name, fn):
    """Run fn as case n, called name, and print its TAP line; False when
    it failed (an exception other than Skip)."""
    try:
        fn()
        print(f"ok {n} - {name}", flush=True)
    except Skip as e:
        print(f"ok {n} - {name} # SKIP {e}", flush=True)
    except Exception:  # noqa: BLE001  (report every failure as TAP)
        print(f"not ok {n} - {name}", flush=True)
        for line in traceback.format_exc().splitlines():
            print(f"# {line}")
        return False
    return True


def _selected(args):
    """The registered tests the command line picks (every one without
    -r, -f, -v or -t)."""
    if not (args.r or args.f or args.v or args.t):
        return list(_results)
    out = []
    for name, fn in _results:
        parts = name.split(".")
        fix, var, case = parts if len(parts) == 3 else (None, None, name)
        if (name in args.r or fix in args.f or var in args.v or
                case in args.t):
            out.append((name, fn))
    return out


def run(*comments):
    """Run the registered tests the command line picks, in order, and
    print TAP (the plan first, then comments as "# " lines); the exit
    status (2 when the command line picks none)."""
    p = argparse.ArgumentParser(description="Run this file's tests; "
                                "names are FIXTURE.VARIANT.CASE or CASE.")
    p.add_argument("-l", action="store_true", help="list the tests")
    p.add_argument("-r", action="append", default=[], metavar="NAME",
                   help="run the test called NAME")
    p.add_argument("-f", action="append", default=[], metavar="FIXTURE",
                   help="run the tests of FIXTURE")
    p.add_argument("-v", action="append", default=[], metavar="VARIANT",
                   help="run the tests of VARIANT")
    p.add_argument("-t", action="append", default=[], metavar="CASE",
                   help="run the case CASE of every fixture and variant")
    args = p.parse_args()
    tests = _selected(args)
    if args.l:
        for name, _ in tests:
            print(name)
        return 0
    if not tests:
        print("no test matches the command line", file=sys.stderr)
        return 2
    print("TAP version 13")
    print(f"1..{len(tests)}")
    for c in comments:
        print(f"# {c}")
    failed = 0
    for n, (name, fn) in enumerate(tests, 1):
        failed += not _check(n, name, fn)
    print(f"# {len(tests) - failed}/{len(tests)} passed")
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
