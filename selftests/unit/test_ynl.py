#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The YNL spec (uapi/dfkv.yaml) and the uapi header (uapi/linux/dfkv.h)
describe one netlink family: the same commands, attributes, stats and
enum values, in the same order.  TAP output."""
import os
import re
import sys

import yaml

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
    start = d.get("value-start", 0)
    return {prefix + e.upper().replace("-", "_"): start + i
            for i, e in enumerate(d["entries"])}


checks = []


def check(name, want, got):
    checks.append((name, want == got, want, got))


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

print("1..%d" % len(checks))
failed = 0
for i, (name, ok, want, got) in enumerate(checks, 1):
    if not ok:
        failed += 1
        print("# spec: %s\n# header: %s" % (want, got))
    print("%sok %d - YNL spec and uapi header agree: %s" % ("" if ok else "not ", i, name))
sys.exit(1 if failed else 0)
