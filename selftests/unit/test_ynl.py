#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The YNL spec (uapi/dfkv.yaml) and the uapi header (uapi/linux/dfkv.h)
describe one netlink family: the same commands, attributes, stats and
enum values, in the same order; and the code generated from the spec
(tools/ynl-gen/dfkv-nlgen.py: kmod/nl_gen.[ch], lib/names_gen.h,
lib/python/dfkv/names.py) is what the generator makes of it today.
TAP output."""
import os
import re
import subprocess
import sys

import yaml

from unittap import run, test

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = yaml.safe_load(open(os.path.join(REPO, "uapi", "dfkv.yaml")))
header = open(os.path.join(REPO, "uapi", "linux", "dfkv.h")).read()


def c_enum(name):
    body = re.search(r"enum %s \{(.*?)\};" % name, header, re.S).group(1)
    out, val = {}, -1
    for m in re.finditer(r"^\s*([A-Z_0-9]+)\s*(?:=\s*([^,]+))?,", body, re.M):
        ident, expr = m.group(1), m.group(2)
        if ident.startswith("__"):
            continue
        if expr is not None:
            expr = expr.strip()
            val = int(expr, 0) if re.fullmatch(r"[0-9x]+", expr) else None
        else:
            val += 1
        out[ident] = val
    return out


def spec_attrs(set_name, prefix):
    attrs = next(a for a in spec["attribute-sets"] if a["name"] == set_name)
    out, val = {}, 0
    for a in attrs["attributes"]:
        val = a.get("value", val + 1)
        out[prefix + a["name"].upper().replace("-", "_")] = val
    return out


def spec_enum(name, prefix):
    d = next(d for d in spec["definitions"] if d["name"] == name)
    out, val = {}, d.get("value-start", 0) - 1
    for e in d["entries"]:
        if isinstance(e, dict):
            val = e.get("value", val + 1)
            e = e["name"]
        else:
            val += 1
        out[prefix + e.upper().replace("-", "_")] = val
    return out


def spec_prefix(name):
    d = next(d for d in spec["definitions"] if d["name"] == name)
    return d.get("name-prefix", "dfkv-" + name + "-").upper().replace("-", "_")


def same(want, got):
    assert want == got, "want: %s\ngot: %s" % (want, got)


def check(name, want, got):
    test("YNL spec and uapi header agree: " + name)(lambda: same(want, got))


check("attributes", spec_attrs("dfkv", "DFKV_A_"),
      {k: v for k, v in c_enum("dfkv_attr").items() if k != "DFKV_A_UNSPEC"})
check("stats", spec_attrs("stats", "DFKV_STAT_"),
      {k: v for k, v in c_enum("dfkv_stat").items() if k != "DFKV_STAT_UNSPEC"})
ops, val = {}, 0
for op in spec["operations"]["list"]:
    val = op.get("value", val + 1)
    ops["DFKV_CMD_" + op["name"].upper().replace("-", "_")] = val
check("commands", ops,
      {k: v for k, v in c_enum("dfkv_cmd").items() if k != "DFKV_CMD_UNSPEC"})
check("node states", spec_enum("node-state", "DFKV_NODE_STATE_"),
      c_enum("dfkv_node_state"))
check("events", spec_enum("event", "DFKV_EVENT_"), c_enum("dfkv_event"))
check("listener kinds", spec_enum("listener-kind", "DFKV_LISTENER_"),
      c_enum("dfkv_listener_kind"))
check("auth modes", spec_enum("auth-mode", "DFKV_AUTH_"),
      c_enum("dfkv_auth_mode"))
check("multicast group", ["events"],
      [g["name"] for g in spec["mcast-groups"]["list"]])
for enum, cname in (("op", "dfkv_op"), ("status", "dfkv_status"),
                    ("disk-state", "dfkv_disk_state"),
                    ("tier-policy", "dfkv_tier_policy"),
                    ("tier-ack", "dfkv_tier_ack")):
    check("enum %s" % enum, spec_enum(enum, spec_prefix(enum)),
          c_enum(cname))
for enum in ("node-state", "listener-kind", "auth-mode"):
    check("name-prefix of %s" % enum, spec_enum(enum, spec_prefix(enum)),
          c_enum("dfkv_" + enum.replace("-", "_")))
# The header's flags are "= 1U << n": compare the bit numbers.
for enum, cname in (("node-flags", "dfkv_node_flags"),
                    ("tenant-flags", "dfkv_tenant_flags")):
    body = re.search(r"enum %s \{(.*?)\};" % cname, header, re.S).group(1)
    bits = {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^\s*([A-Z_0-9]+) = 1U << (\d+),", body, re.M)}
    check("flags %s" % enum, spec_enum(enum, spec_prefix(enum)), bits)


@test("generated files are current (make nlgen)")
def generated_current():
    gen = subprocess.run([sys.executable,
                          os.path.join(REPO, "tools", "ynl-gen",
                                       "dfkv-nlgen.py"),
                          "--check"], capture_output=True, text=True)
    same("no diff", "no diff" if gen.returncode == 0 else
         gen.stdout + gen.stderr)


sys.exit(run())
