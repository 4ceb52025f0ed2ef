# SPDX-License-Identifier: GPL-2.0
"""What the engine connector tests of dfkv_connectors_b.sh share: running
named cases (one "case NAME ok|fail" line each, the failure's traceback
as "#" lines, for the shell script's TAP), and the nodes the script set
up: their members string, deleting and re-adding one (dfkvctl), and their
counters (dfkvctl stats --json)."""

import json
import os
import subprocess
import sys
import time
import traceback

DFKVCTL = os.environ["DFKVCTL"]
# "name=127.0.0.1:port,..." of the script's nodes, and their sizes.
MEMBERS = os.environ["DFKV_MEMBERS"]
NODE_RAM = os.environ.get("DFKV_NODE_RAM", "64M")
_cases = []


def case(fn):
    _cases.append(fn)
    return fn


def run():
    failed = 0
    for fn in _cases:
        try:
            fn()
            print(f"case {fn.__name__} ok", flush=True)
        except Exception:  # noqa: BLE001  (every failure is reported)
            failed += 1
            for line in traceback.format_exc().splitlines():
                print(f"# {line}")
            print(f"case {fn.__name__} fail", flush=True)
    return 1 if failed else 0


def ctl(*args):
    return subprocess.run([DFKVCTL, *args], check=True, capture_output=True,
                          text=True).stdout


def member(name):
    """(host, port) of node name in MEMBERS."""
    for m in MEMBERS.split(","):
        n, addr = m.split("=")
        if n == name:
            host, port = addr.rsplit(":", 1)
            return host, port
    raise KeyError(name)


def node_del(name):
    ctl("node", "del", name)


def node_add(name, ram=None):
    host, port = member(name)
    ctl("node", "add", name, "--ram", ram or NODE_RAM, "--max-value", "4M")
    ctl("listener", "add", name, host, "--port", port)


def stats(name):
    return json.loads(ctl("stats", name, "--json"))["stats"]


def until(pred, what, limit_s=60):
    """Poll pred until true (a bounded wait for recovery, not a timing
    assertion)."""
    end = time.monotonic() + limit_s
    while not pred():
        if time.monotonic() > end:
            raise AssertionError(f"not within {limit_s} s: {what}")
        time.sleep(0.2)


def main():
    sys.exit(run())


def client_ops(client, op):
    """Requests of op a dfkv.Client sent, over every result
    (dfkv_client_ops_total of client.stats())."""
    n = 0
    for line in client.stats().splitlines():
        if line.startswith(f'dfkv_client_ops_total{{op="{op}",'):
            n += int(line.rsplit(" ", 1)[1])
    return n
