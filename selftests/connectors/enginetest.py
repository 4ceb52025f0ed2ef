# SPDX-License-Identifier: GPL-2.0
"""What the engine connector tests (selftests/dfkv_connectors.sh) share:
their steps as TAP comments, the node they use (dfkvctl, killed and
brought back), the configuration the docs give, a private Hugging Face
cache whose "main" revision a test can move, and bounded polling.
Each test runs with its engine's venv python; PYTHONPATH holds
lib/python and this directory."""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.environ.get("DFKV_REPO") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
DFKVCTL = os.environ.get("DFKVCTL", os.path.join(REPO, "build/tools/dfkvctl"))
NODE = os.environ.get("DFKV_CONN_NODE", "cn")
ADDR = os.environ.get("DFKV_CONN_ADDR", "127.0.0.1:7460")
MEMBERS = "%s=%s" % (NODE, ADDR)
DOC = os.path.join(REPO, "Documentation", "connectors.md")


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


def dfkvctl(*args):
    subprocess.run([DFKVCTL] + list(args), check=True,
                   stdout=subprocess.DEVNULL)


def node_del():
    dfkvctl("node", "del", NODE)


def node_add():
    host, port = ADDR.rsplit(":", 1)
    dfkvctl("node", "add", NODE, "--ram", "96M")
    dfkvctl("listener", "add", NODE, host, "--port", port)


def node_stat(name):
    out = subprocess.run([DFKVCTL, "stats", NODE, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return int(json.loads(out)["stats"][name])


def until(what, fn, tries=600, pause=0.01):
    """fn() until it is true, at most `tries` times (the bound is a
    count, not a time limit); its last value."""
    for _ in range(tries):
        v = fn()
        if v:
            return v
        time.sleep(pause)
    raise AssertionError("never: " + what)


class HubCache:
    """A Hugging Face hub cache with one model whose refs/main names a
    revision (the weights' commit an engine would serve)."""

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


def _age():
    """Seconds since this process started (/proc/self/stat)."""
    with open("/proc/self/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return up - start / os.sysconf("SC_CLK_TCK")


def main(tests):
    """Run the named test functions in order; any failure fails the
    whole program (one TAP case of dfkv_connectors.sh)."""
    step("engine imported %.1f s after start" % _age())
    for fn in tests:
        t = time.monotonic()
        fn()
        step("ok: %s (%.1f s)" % (fn.__name__, time.monotonic() - t))
    sys.stdout.flush()
