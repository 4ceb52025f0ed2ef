# SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT
# Do not edit directly, auto-generated from: uapi/dfkv.yaml
# and lib/dfkv.h (enum dfkv_error)
# by tools/ynl-gen/dfkv-nlgen.py (YNL-GEN python names).
# To add an attribute: append it to its attribute set in uapi/dfkv.yaml
# (and to the enum in uapi/linux/dfkv.h), list it in the request of the
# operations that take it, give it its checks, then run `make nlgen`
# and commit the regenerated files (Documentation/netlink.md).
"""Values of the enums of uapi/linux/dfkv.h by name (upper case,
as the header spells them without its prefix), one dict per enum;
ERRORS: libdfkv's own error codes (enum dfkv_error of lib/dfkv.h)
by name without the DFKV_ prefix ("E_INVAL").
"""

OP = {
    "PUT": 1,
    "GET": 2,
    "EXIST": 3,
    "STATS": 4,
    "REMOVE": 9,
    "TOUCH": 10,
    "PROBE": 11,
    "LEASE": 12,
    "RELEASE": 13,
    "HELLO": 14,
    "AUTH": 15,
}
STATUS = {
    "OK": 0,
    "NOT_FOUND": 1,
    "CACHE_FULL": 2,
    "IO_ERROR": 3,
    "INVALID": 4,
    "QUOTA_EXCEEDED": 5,
    "BUSY": 6,
    "UNSUPPORTED": 7,
    "TOO_LARGE": 8,
    "LEASE_EXPIRED": 9,
    "FORBIDDEN": 10,
}
NODE_STATE = {
    "UP": 1,
    "DRAINING": 2,
    "UNHEALTHY": 3,
}
NODE_PHASE = {
    "UP": 1,
    "REBUILDING": 2,
}
LISTENER_KIND = {
    "TCP": 1,
    "RDMA": 2,
}
EVENT = {
    "NODE_NEW": 1,
    "NODE_DEL": 2,
    "NODE_STATE": 3,
    "DISK_ADD": 4,
    "DISK_DEL": 5,
    "DISK_STATE": 6,
    "NODE_LISTENERS": 7,
    "NODE_PHASE": 8,
}
DISK_STATE = {
    "UP": 1,
    "FAILED": 2,
}
TIER_POLICY = {
    "WRITEBACK": 1,
    "WRITEAROUND": 2,
}
TIER_ACK = {
    "RAM": 1,
    "DISK": 2,
}
AUTH_MODE = {
    "OFF": 1,
    "REQUIRED": 2,
}
HIST_OP = {
    "GET": 1,
    "PUT": 2,
    "COLD_READ": 3,
    "FLUSH": 4,
}
HIST_TRANSPORT = {
    "DEV": 0,
    "TCP": 1,
    "RDMA": 2,
}
ERRORS = {
    "E_INVAL": -1,
    "E_NOMEM": -2,
    "E_RANGE": -3,
    "E_UNAVAILABLE": -4,
    "E_TIMEOUT": -5,
    "E_PROTO": -6,
    "E_NOT_RUN": -7,
    "E_MEMBERS": -8,
    "E_NODEV": -9,
    "E_SYS": -10,
    "E_AUTH": -11,
    "E_CANCELLED": -12,
}
