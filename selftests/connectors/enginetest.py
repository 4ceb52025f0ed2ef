# SPDX-License-Identifier: GPL-2.0
"""What the engine connector tests share: their cases as TAP (run by
selftests/connectors/run, each with its engine's venv python; PYTHONPATH
holds lib/python and this directory), the nodes the runner set up
(dfkvctl: deleted, added back, their counters), the configuration the
docs give, a private Hugging Face cache whose "main" revision a test can
move, and bounded polling."""

import contextlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

REPO = os.environ.get("DFKV_REPO") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
DFKVCTL = os.environ.get("DFKVCTL", os.path.join(REPO, "build/tools/dfkvctl"))
# "name=host:port,..." of the nodes selftests/connectors/run set up, the
# address their listeners bind (the guest's side of the forwarded ports)
# and their sizes.
MEMBERS = os.environ.get("DFKV_MEMBERS", "cn=127.0.0.1:7460")
LISTEN_HOST = os.environ.get("DFKV_LISTEN_HOST")
NODE_RAM = os.environ.get("DFKV_NODE_RAM", "64M")
DOC = os.path.join(REPO, "Documentation", "connectors.md")
_cases = []


def private_hub(prefix):
    """A private temporary directory with an offline Hugging Face hub
    cache in it ($HF_HUB_CACHE, set before the engine is imported)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    os.environ["HF_HUB_CACHE"] = os.path.join(tmp, "hub")
    os.environ["HF_HUB_OFFLINE"] = "1"
    return tmp


def check_pin(layout_id, fields, pinned):
    """A connector's layout id is pinned with the digest of its field
    list (pinned: {layout id: digest})."""
    from dfkv.connectors import common
    assert layout_id in pinned, "new layout id %s: pin it" % layout_id
    got = common.fields_digest(layout_id, fields)
    assert got == pinned[layout_id], (
        "LAYOUT_FIELDS of %s changed (digest %s): a layout change needs a "
        "new LAYOUT_ID" % (layout_id, got))


def distinct(base, variants):
    """Every namespace of variants ({what: namespace}) differs from base
    and from the others."""
    seen = {base}
    for what, n in variants.items():
        assert n != base, "%s does not change the namespace" % what
        assert n not in seen, "%s gives another change's namespace" % what
        seen.add(n)


def step(msg):
    print("# " + msg, flush=True)


def doc_block(marker):
    """The code block after the line `<!-- marker -->` of
    Documentation/connectors.md (the docs' configuration is the test's)."""
    text = open(DOC).read()
    m = re.search(r"<!-- %s -->\s*\n```[a-z]*\n(.*?)\n```" %
                  re.escape(marker), text, re.S)
    if not m:
        raise AssertionError("no block <!-- %s --> in %s" % (marker, DOC))
    return m.group(1)


def doc_json(marker):
    """The JSON of a docs block: the block itself, or the single-quoted
    argument of the option named in the marker's last word."""
    block = doc_block(marker)
    m = re.search(r"'(\{.*\})'", block, re.S)
    return json.loads(m.group(1) if m else block)


@contextlib.contextmanager
def logged(name):
    """The messages logger `name` logs at INFO and above while the block
    runs (a list, filled as they come)."""
    lines = []
    handler = logging.Handler()
    handler.emit = lambda r: lines.append(r.getMessage())
    logger = logging.getLogger(name)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def ctl(*args):
    """dfkvctl ARGS (the guest's, through tools/vm/guest-ctl); its output."""
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
    ctl("listener", "add", name, LISTEN_HOST or host, "--port", port)


def stats(name):
    return json.loads(ctl("stats", name, "--json"))["stats"]


def until(what, fn, tries=1500, pause=0.04):
    """fn() until it is true, at most `tries` times (a bound on a wait
    for recovery, not a timing assertion); its last value."""
    for _ in range(tries):
        v = fn()
        if v:
            return v
        time.sleep(pause)
    raise AssertionError("never: " + what)


def client_ops(client, op):
    """Requests of op a dfkv.Client sent, over every result
    (dfkv_client_ops_total of client.stats())."""
    n = 0
    for line in client.stats().splitlines():
        if line.startswith(f'dfkv_client_ops_total{{op="{op}",'):
            n += int(line.rsplit(" ", 1)[1])
    return n


class HubCache:
    """A Hugging Face hub cache with one model whose refs/main names a
    revision (the weights' commit an engine would serve); drop() takes a
    revision's snapshot out again."""

    def __init__(self, root, repo_id):
        self.dir = os.path.join(root, "models--" + repo_id.replace("/",
                                                                   "--"))
        self.repo_id = repo_id
        os.makedirs(os.path.join(self.dir, "refs"), exist_ok=True)

    def set_main(self, rev, config=None):
        snap = os.path.join(self.dir, "snapshots", rev)
        os.makedirs(snap, exist_ok=True)
        with open(os.path.join(snap, "config.json"), "w") as f:
            json.dump(config or {"model_type": "llama"}, f)
        with open(os.path.join(self.dir, "refs", "main"), "w") as f:
            f.write(rev)

    def drop(self, rev):
        shutil.rmtree(os.path.join(self.dir, "snapshots", rev))


def _age():
    """Seconds since this process started (/proc/self/stat)."""
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return up - start / os.sysconf("SC_CLK_TCK")


def case(fn):
    """Register fn as a test case; cases run in definition order."""
    _cases.append(fn)
    return fn


def main(cleanup=None):
    """Run the registered cases as TAP (a failure's traceback as "#"
    lines, the next case still runs), then cleanup(); exit 1 if any
    failed.  The tests call it under `if __name__ == "__main__"`:
    imported (tools/bench/connectors.py takes their engine set-up), they
    run nothing."""
    print("1..%d" % len(_cases))
    step("engine imported %.1f s after start" % _age())
    failed = 0
    try:
        for i, fn in enumerate(_cases, 1):
            t = time.monotonic()
            try:
                fn()
                print("ok %d %s (%.1f s)" % (i, fn.__name__,
                                             time.monotonic() - t))
            except Exception:  # noqa: BLE001  (every failure is reported)
                failed += 1
                for line in traceback.format_exc().splitlines():
                    print("# " + line)
                print("not ok %d %s" % (i, fn.__name__))
            sys.stdout.flush()
    finally:
        if cleanup:
            cleanup()
    sys.exit(1 if failed else 0)
