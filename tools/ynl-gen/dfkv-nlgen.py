#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""dfkv-nlgen: the code of the dfkv netlink family, generated from its YNL
spec (uapi/dfkv.yaml), the one source of the family's ABI.

Writes, relative to the output directory (default: the repository):

  kmod/nl_gen.h, kmod/nl_gen.c   per-operation attribute policies, the
                                 genl ops table, the multicast groups and
                                 the handler prototypes (the layout of the
                                 kernel's ynl-gen-c.py, e.g. 6.1's
                                 net/ipv4/fou_nl.c)
  lib/names_gen.h                the enum-name functions of userspace
                                 (libdfkv, dfkvctl, mdsd): dfkv_<enum>_str()
  lib/python/dfkv/names.py       the same tables for the Python binding,
                                 and ERRORS: libdfkv's own error codes,
                                 read from enum dfkv_error in lib/dfkv.h

The files are checked in and never edited by hand: edit the spec and run
`make nlgen`.  `--check` regenerates into a scratch directory and diffs
against the checked-in files (selftests/unit/test_ynl.py does so).

Only the parts of YNL the family uses are understood: definitions (enum
with name-prefix and optional explicit entry values, flags, const with an
optional header that defines it for the module), one attribute set for
requests with checks (min, max, max-len, exact-len; a check value may name
a const), and operations with do/dump request attribute lists, flags
[admin-perm] and dump pre/post callbacks.  Anything else the kernel half
needs is an error, not a guess.  Standard library plus PyYAML.
"""
import argparse
import difflib
import os
import re
import sys
import tempfile

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEC = "uapi/dfkv.yaml"
LIB_HEADER = "lib/dfkv.h"
HOWTO = [
    "To add an attribute: append it to its attribute set in " + SPEC,
    "(and to the enum in uapi/linux/dfkv.h), list it in the request of the",
    "operations that take it, give it its checks, then run `make nlgen`",
    "and commit the regenerated files (Documentation/netlink.md).",
]


class SpecError(Exception):
    pass


def c_upper(name):
    return name.upper().replace("-", "_")


def c_lower(name):
    return name.lower().replace("-", "_")


class Family:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec["name"]
        self.consts = {}
        self.enums = []
        self.flags = {}
        for d in spec.get("definitions", []):
            if d["type"] == "const":
                self.consts[d["name"]] = d
            elif d["type"] == "enum":
                self.enums.append(self.enum_entries(d))
            elif d["type"] == "flags":
                self.flags[d["name"]] = self.enum_entries(d)
        self.enum_by_name = {e["name"]: e for e in self.enums}
        self.sets = {s["name"]: s for s in spec["attribute-sets"]}
        self.attr_set = self.sets[self.name]
        self.attr_prefix = self.attr_set.get(
            "name-prefix", self.name + "-a-")
        self.attrs, val = {}, 0
        for a in self.attr_set["attributes"]:
            val = a.get("value", val + 1)
            self.attrs[a["name"]] = dict(a, value=val,
                                         c=c_upper(self.attr_prefix +
                                                   a["name"]))
        self.ops, val = [], 0
        for op in spec["operations"]["list"]:
            val = op.get("value", val + 1)
            self.ops.append(dict(op, value=val,
                                 c=c_upper(self.name + "-cmd-" + op["name"])))
        self.mcgrps = [g["name"] for g in
                       spec.get("mcast-groups", {}).get("list", [])]

    def enum_entries(self, d):
        prefix = d.get("name-prefix", self.name + "-" + d["name"] + "-")
        flags = d["type"] == "flags"
        out, val = [], d.get("value-start", 0) - 1
        for i, e in enumerate(d["entries"]):
            if isinstance(e, dict):
                name = e["name"]
                val = e.get("value", val + 1)
            else:
                name = e
                val += 1
            out.append({"name": name, "c": c_upper(prefix + name),
                        "value": (1 << val) if flags else val})
        return {"name": d["name"], "c": c_lower(self.name + "-" + d["name"]),
                "doc": d.get("doc"), "entries": out}

    def const_c(self, name):
        return c_upper(self.name + "-" + name)

    def check_value(self, v):
        """A check's C expression and its integer value."""
        if isinstance(v, int):
            return str(v), v
        if v in self.consts:
            return self.const_c(v), self.consts[v]["value"]
        raise SpecError("check value %r is neither a number nor a const" % v)

    def headers(self):
        return sorted({c["header"] for c in self.consts.values()
                       if "header" in c})


# ----------------------------------------------------------------- kernel

def policy_entry(fam, a):
    """The nla_policy initializer of attribute a, and a range struct."""
    t, checks = a["type"], a.get("checks", {})
    nla = {"u8": "NLA_U8", "u16": "NLA_U16", "u32": "NLA_U32",
           "u64": "NLA_U64", "s32": "NLA_S32", "s64": "NLA_S64",
           "flag": "NLA_FLAG", "string": "NLA_NUL_STRING"}
    if t == "string":
        if "max-len" in checks:
            expr, _ = fam.check_value(checks["max-len"])
            return "{ .type = NLA_NUL_STRING, .len = %s, }" % expr, None
        return "{ .type = NLA_NUL_STRING, }", None
    if t == "binary":
        if "exact-len" in checks:
            expr, _ = fam.check_value(checks["exact-len"])
            return "NLA_POLICY_EXACT_LEN(%s)" % expr, None
        if "max-len" in checks:
            expr, _ = fam.check_value(checks["max-len"])
            return "{ .type = NLA_BINARY, .len = %s, }" % expr, None
        return "{ .type = NLA_BINARY, }", None
    if t == "flag":
        return "{ .type = NLA_FLAG, }", None
    if t not in nla:
        raise SpecError("%s: type %s cannot be in a request" % (a["name"], t))
    ntype = nla[t]
    if "enum" in a and a.get("enum-as-flags"):
        mask = 0
        for e in fam.flags[a["enum"]]["entries"]:
            mask |= e["value"]
        return "NLA_POLICY_MASK(%s, 0x%x)" % (ntype, mask), None
    lo = hi = None
    if "enum" in a:
        ents = fam.enum_by_name[a["enum"]]["entries"]
        lo = (ents[0]["c"], ents[0]["value"])
        hi = (ents[-1]["c"], ents[-1]["value"])
        if [e["value"] for e in ents] != list(range(lo[1], hi[1] + 1)):
            raise SpecError("%s: enum %s has holes" % (a["name"], a["enum"]))
    if "min" in checks:
        lo = fam.check_value(checks["min"])
    if "max" in checks:
        hi = fam.check_value(checks["max"])
    if lo is None and hi is None:
        return "{ .type = %s, }" % ntype, None
    small = all(v is None or -32768 <= v[1] <= 32767 for v in (lo, hi))
    if small:
        if lo is not None and hi is not None:
            return ("NLA_POLICY_RANGE(%s, %s, %s)" %
                    (ntype, lo[0], hi[0])), None
        if lo is not None:
            return "NLA_POLICY_MIN(%s, %s)" % (ntype, lo[0]), None
        return "NLA_POLICY_MAX(%s, %s)" % (ntype, hi[0]), None
    name = "%s_range" % c_lower(fam.attr_prefix + a["name"])
    tmax = {"NLA_U8": "U8_MAX", "NLA_U16": "U16_MAX", "NLA_U32": "U32_MAX",
            "NLA_U64": "U64_MAX"}
    rng = (name, lo[0] if lo else "0", hi[0] if hi else tmax[ntype])
    return "NLA_POLICY_FULL_RANGE(%s, &%s)" % (ntype, name), rng


def op_request(op):
    """The attributes an op's requests (do and dump) may carry, in order."""
    names = []
    for mode in ("do", "dump"):
        for n in op.get(mode, {}).get("request", {}).get("attributes", []):
            if n not in names:
                names.append(n)
    return names


def handlers(fam, op):
    base = "%s_nl_%s" % (c_lower(fam.name), c_lower(op["name"]))
    out = []
    if "do" in op:
        out.append((".doit", base + "_doit", "doit"))
    if "dump" in op:
        dump = op["dump"]
        if "pre" in dump:
            out.append((".start", c_lower(dump["pre"]), "start"))
        out.append((".dumpit", base + "_dumpit", "dumpit"))
        if "post" in dump:
            out.append((".done", c_lower(dump["post"]), "done"))
    return out


PROTOS = {
    "doit": "int %s(struct sk_buff *skb, struct genl_info *info);",
    "dumpit": "int %s(struct sk_buff *skb, struct netlink_callback *cb);",
    "start": "int %s(struct netlink_callback *cb);",
    "done": "int %s(struct netlink_callback *cb);",
}


def banner(comment_open, kind, also=()):
    lines = ["Do not edit directly, auto-generated from: " + SPEC] + \
        ["and " + x for x in also] + \
        ["by tools/ynl-gen/dfkv-nlgen.py (" + kind + ")."] + HOWTO
    if comment_open == "#":
        return ["# " + x for x in lines]
    return ["/*"] + [" * " + x for x in lines] + [" */"]


def width(line):
    return len(line.expandtabs(8))


def wrap(line):
    """Break a line of a call wider than 80 columns after the commas of its
    first parenthesis, aligning the rest with it (kernel style)."""
    if width(line) <= 80 or "(" not in line:
        return [line]
    open_at = line.index("(")
    depth, cuts = 0, []
    for i in range(open_at, len(line)):
        if line[i] == "(":
            depth += 1
        elif line[i] == ")":
            depth -= 1
            if not depth:
                break
        elif line[i] == "," and depth == 1:
            cuts.append(i + 1)
    if not cuts:
        return [line]
    col = width(line[:open_at + 1])
    indent = "\t" * (col // 8) + " " * (col % 8)
    out, start = [], 0
    cur = line[:cuts[0]]
    for a, b in zip(cuts, cuts[1:] + [len(line)]):
        piece = line[a:b].lstrip()
        if width(cur + " " + piece) <= 80:
            cur += " " + piece
        else:
            out.append(cur)
            cur = indent + piece
    out.append(cur)
    return out


def kernel_ops(fam):
    return [op for op in fam.ops if "do" in op or "dump" in op]


def gen_kernel_h(fam):
    ops = kernel_ops(fam)
    guard = "_DFKV_NL_GEN_H"
    o = ["/* SPDX-License-Identifier: GPL-2.0 */"] + \
        banner("/*", "YNL-GEN kernel header") + [
        "#ifndef " + guard, "#define " + guard, "",
        "#include <net/netlink.h>", "#include <net/genetlink.h>", "",
        "#include <linux/dfkv.h>", "",
        "/* Ops table for %s */" % fam.name,
        "extern const struct genl_ops %s_nl_ops[%d];" % (c_lower(fam.name),
                                                        len(ops)), ""]
    for op in ops:
        for _, fn, kind in handlers(fam, op):
            o.append(PROTOS[kind] % fn)
    if fam.mcgrps:
        o += ["", "enum {"]
        o += ["\t%s_NLGRP_%s," % (c_upper(fam.name), c_upper(g))
              for g in fam.mcgrps]
        o += ["};", "",
              "extern const struct genl_multicast_group %s_nl_mcgrps[%d];" %
              (c_lower(fam.name), len(fam.mcgrps))]
    o += ["", "#endif /* %s */" % guard]
    return "\n".join(o) + "\n"


def gen_kernel_c(fam):
    ops = kernel_ops(fam)
    lname = c_lower(fam.name)
    o = ["// SPDX-License-Identifier: GPL-2.0"] + \
        banner("/*", "YNL-GEN kernel source") + [
        "#include <net/netlink.h>", "#include <net/genetlink.h>", "",
        '#include "nl_gen.h"']
    o += ['#include "%s"' % h for h in fam.headers()]
    o.append("")
    # The module's own limits are the spec's values, or the build fails.
    asserts = [c for c in fam.consts.values() if "header" in c]
    if asserts:
        o.append("/* Limits the module defines, as the spec states them */")
        for c in asserts:
            o += wrap("static_assert(%s == %d);" % (fam.const_c(c["name"]),
                                                    c["value"]))
        o.append("")
    ranges, used = [], {}
    for op in ops:
        for n in op_request(op):
            if n not in fam.attrs:
                raise SpecError("%s: no attribute %s" % (op["name"], n))
            if n not in used:
                used[n] = policy_entry(fam, fam.attrs[n])
                if used[n][1]:
                    ranges.append(used[n][1])
    for name, lo, hi in ranges:
        # Not const: 6.1's nla_policy points at a mutable range.
        o += ["static struct netlink_range_validation %s __ro_after_init = {"
              % name,
              "\t.min\t= %s," % lo, "\t.max\t= %s," % hi, "};", ""]
    # Operations taking the same attributes share one policy, named after
    # the first of them.
    users, policy_of = {}, {}
    for op in ops:
        req = tuple(sorted(op_request(op),
                           key=lambda n: fam.attrs[n]["value"]))
        if req:
            users.setdefault(req, []).append(op)
            policy_of[op["name"]] = users[req][0]["name"]
    for req, group in users.items():
        name = group[0]["name"]
        last = fam.attrs[req[-1]]["c"]
        o.append("/* %s */" % ", ".join(
            "%s - %s" % (op["c"], "/".join(m for m in ("do", "dump")
                                            if m in op)) for op in group))
        o.append("static const struct nla_policy %s_%s_nl_policy[%s + 1] = {"
                 % (lname, c_lower(name), last))
        for n in req:
            o += wrap("\t[%s] = %s," % (fam.attrs[n]["c"], used[n][0]))
        o += ["};", ""]
    o.append("/* Ops table for %s */" % fam.name)
    o.append("const struct genl_ops %s_nl_ops[%d] = {" % (lname, len(ops)))
    for op in ops:
        o += ["\t{", "\t\t.cmd\t\t= %s," % op["c"]]
        for field, fn, _ in handlers(fam, op):
            o.append("\t\t%s\t%s= %s," % (field, "\t" if len(field) < 8
                                           else "", fn))
        req = sorted(op_request(op), key=lambda n: fam.attrs[n]["value"])
        if req:
            o.append("\t\t.policy\t\t= %s_%s_nl_policy," %
                     (lname, c_lower(policy_of[op["name"]])))
            o.append("\t\t.maxattr\t= %s," % fam.attrs[req[-1]]["c"])
        flags = op.get("flags", [])
        for f in flags:
            if f != "admin-perm":
                raise SpecError("%s: flag %s" % (op["name"], f))
        if flags:
            o.append("\t\t.flags\t\t= GENL_ADMIN_PERM,")
        o.append("\t},")
    o += ["};"]
    if fam.mcgrps:
        o += ["", "const struct genl_multicast_group %s_nl_mcgrps[%d] = {" %
              (lname, len(fam.mcgrps))]
        for g in fam.mcgrps:
            o.append('\t[%s_NLGRP_%s] = { .name = "%s", },' %
                     (c_upper(fam.name), c_upper(g), g))
        o.append("};")
    return "\n".join(o) + "\n"


# --------------------------------------------------------------- userspace

def table_name(name):
    """A value's name in tables, metrics and JSON: the spec's, '_' for '-'."""
    return name.replace("-", "_")


def gen_names_h(fam):
    guard = "DFKV_NAMES_GEN_H"
    o = ["/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */"] + \
        banner("/*", "YNL-GEN user names") + [
        "/*",
        " * dfkv_<enum>_str(value) is the name of a value of enum dfkv_<enum>",
        " * (the spec's name with '_' for '-'), NULL for a value without one.",
        " */",
        "#ifndef " + guard, "#define " + guard, "",
        "#include <stdint.h>", "", "#include <linux/dfkv.h>"]
    for e in fam.enums:
        o += ["", "static inline const char *%s_str(uint32_t value)" % e["c"],
              "{", "\tstatic const char *const names[] = {"]
        for ent in e["entries"]:
            o.append('\t\t[%s] = "%s",' % (ent["c"],
                                           table_name(ent["name"])))
        o += ["\t};", "",
              "\tif (value >= sizeof(names) / sizeof(names[0]))",
              "\t\treturn NULL;",
              "\treturn names[value];", "}"]
    o += ["", "#endif /* %s */" % guard]
    return "\n".join(o) + "\n"


def lib_errors(header):
    """enum dfkv_error of libdfkv's header: [(name without DFKV_, value)].
    Every entry spells its value; the __DFKV_E_MIN bound is left out."""
    m = re.search(r"^enum dfkv_error \{(.*?)^\};", header, re.S | re.M)
    if not m:
        raise SpecError("%s has no enum dfkv_error" % LIB_HEADER)
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    out = []
    for item in filter(None, (x.strip() for x in body.split(","))):
        e = re.fullmatch(r"(_*)DFKV_(E_[A-Z0-9_]+) = (-[0-9]+)", item)
        if not e:
            raise SpecError("%s: enum dfkv_error entry %r is not "
                            "DFKV_E_NAME = -N" % (LIB_HEADER, item))
        if not e.group(1):
            out.append((e.group(2), int(e.group(3))))
    return out


def gen_names_py(fam):
    o = ["# SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT"]
    o += banner("#", "YNL-GEN python names",
                [LIB_HEADER + " (enum dfkv_error)"])
    o += ['"""Values of the enums of uapi/linux/dfkv.h by name (upper case,',
          "as the header spells them without its prefix), one dict per enum;",
          "ERRORS: libdfkv's own error codes (enum dfkv_error of lib/dfkv.h)",
          'by name without the DFKV_ prefix ("E_INVAL").',
          '"""', ""]
    for e in fam.enums:
        o.append("%s = {" % c_upper(e["name"]))
        for ent in e["entries"]:
            o.append('    "%s": %d,' % (c_upper(ent["name"]), ent["value"]))
        o.append("}")
    o.append("ERRORS = {")
    for name, value in fam.errors:
        o.append('    "%s": %d,' % (name, value))
    o.append("}")
    return "\n".join(o) + "\n"


OUTPUTS = [
    ("kmod/nl_gen.h", gen_kernel_h),
    ("kmod/nl_gen.c", gen_kernel_c),
    ("lib/names_gen.h", gen_names_h),
    ("lib/python/dfkv/names.py", gen_names_py),
]


def generate(spec_path, header_path, outdir):
    with open(spec_path) as f:
        fam = Family(yaml.safe_load(f))
    with open(header_path) as f:
        fam.errors = lib_errors(f.read())
    for rel, fn in OUTPUTS:
        path = os.path.join(outdir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        text = fn(fam)
        with open(path, "w") as f:
            f.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default=os.path.join(REPO, SPEC))
    ap.add_argument("--lib-header", default=os.path.join(REPO, LIB_HEADER),
                    help="libdfkv's header (enum dfkv_error)")
    ap.add_argument("--out", default=REPO, help="output directory")
    ap.add_argument("--check", action="store_true",
                    help="diff a fresh generation against --out")
    args = ap.parse_args()
    try:
        if not args.check:
            generate(args.spec, args.lib_header, args.out)
            return 0
        with tempfile.TemporaryDirectory() as tmp:
            generate(args.spec, args.lib_header, tmp)
            bad = 0
            for rel, _ in OUTPUTS:
                new = open(os.path.join(tmp, rel)).read().splitlines(True)
                try:
                    old = open(os.path.join(args.out, rel)).read()
                except FileNotFoundError:
                    old = ""
                diff = list(difflib.unified_diff(
                    old.splitlines(True), new, "a/" + rel, "b/" + rel))
                if diff:
                    bad += 1
                    sys.stdout.writelines(diff)
            return 1 if bad else 0
    except (SpecError, KeyError) as e:
        print("dfkv-nlgen: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
